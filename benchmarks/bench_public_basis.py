"""Private PCA with and without a public basis: captured top-10 energy against n and epsilon on MNIST.

Rows of MNIST train (seeded subsets, scaled to unit norm), k = 10, delta = 1e-6, replace-one neighbours.
Methods: Analyze Gauss ("goe") with and without the 2-D DCT basis (d' by the documented rule), ppca
(pure epsilon) with and without the basis (d' = 64), a random k-dimensional subspace; and one data set
where the basis hurts: the same rows under a fixed random rotation of the pixels, whose energy the
low-frequency DCT atoms miss. The captured energy is ``tr(V^T X^T X V) / tr(V*^T X^T X V*)`` on the rows
fitted. Usage::

    PYTHONPATH=src python benchmarks/bench_public_basis.py [--data /path/to/shared/data] [--seeds 1]

``--pure`` measures the pure-epsilon table instead: ``ppca`` and ``exponential_pca`` inside 32 to 150 DCT
atoms at epsilon 1 and 4 on all 60,000 rows (and on seeded subsets of 1,000 to 20,000 rows with ppca),
with the non-private top-10 of the rows inside each basis (what the basis allows) and ppca without a
basis::

    PYTHONPATH=src python benchmarks/bench_public_basis.py --pure --seeds 2
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

from dpspectral import PublicBasis, analyze_gauss, with_public_basis
from dpspectral.datasets import get_data_home, load_idx
from dpspectral.metrics import captured_energy
from dpspectral.pca import ppca

K, DELTA = 10, 1e-6
SETTINGS = [(500, 0.5), (500, 1.0), (1000, 0.5), (1000, 1.0), (2000, 0.5), (2000, 1.0), (20000, 0.5),
            (20000, 1.0)]


def _methods(basis: PublicBasis):
    kw = dict(row_norm=1.0, random_state=None)
    return {
        "analyze_gauss (goe)": lambda A, eps, s: analyze_gauss(
            A, K, epsilon=eps, delta=DELTA, noise_shape="goe", **{**kw, "random_state": s}),
        "analyze_gauss + DCT": lambda A, eps, s: with_public_basis("analyze_gauss", basis)(
            A, K, epsilon=eps, delta=DELTA, noise_shape="goe", **{**kw, "random_state": s}),
        "ppca (pure eps)": lambda A, eps, s: ppca(A, K, epsilon=eps, **{**kw, "random_state": s}),
        "ppca + DCT (pure eps)": lambda A, eps, s: with_public_basis("ppca", basis)(
            A, K, epsilon=eps, **{**kw, "random_state": s}),
    }


def run(data_home: Path, seeds: int, ppca_max_n: int) -> list[tuple]:
    X, _ = load_idx(data_home / "mnist" / "train-images-idx3-ubyte.gz")
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    rotation = np.linalg.qr(np.random.default_rng(99).normal(size=(784, 784)))[0]
    basis = PublicBasis.dct2((28, 28))
    rows = []
    for n, eps in SETTINGS:
        A = X[np.random.default_rng(n).choice(len(X), n, replace=False)]
        for data_name, data in (("MNIST", A), ("MNIST rotated", A @ rotation)):
            for name, fit in _methods(basis).items():
                if name.startswith("ppca") and (n > ppca_max_n or data_name != "MNIST"):
                    continue
                if data_name != "MNIST" and not name.startswith("analyze_gauss"):
                    continue
                t = time.perf_counter()
                scores = [captured_energy(fit(data, eps, s).components, X=data) for s in range(seeds)]
                rows.append((data_name, n, eps, name, float(np.mean(scores)), time.perf_counter() - t))
            Q = np.linalg.qr(np.random.default_rng(0).normal(size=(784, K)))[0]
            rows.append((data_name, n, eps, "random subspace", captured_energy(Q, X=data), 0.0))
    return rows


def run_pure(data_home: Path, seeds: int) -> list[tuple]:
    """Pure epsilon inside the DCT basis: (rows, atoms, epsilon, method, captured energy, seconds)."""
    X, _ = load_idx(data_home / "mnist" / "train-images-idx3-ubyte.gz")
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    rows = []
    for n, atom_list, methods in ((len(X), (32, 50, 64, 80, 100, 150), ("ppca", "exponential")),
                                  (1000, (12, 24, 32, 50, 64), ("ppca",)),
                                  (5000, (12, 24, 32, 50, 64), ("ppca",)),
                                  (20000, (12, 24, 32, 50, 64), ("ppca",))):
        A = X if n == len(X) else X[np.random.default_rng(n).choice(len(X), n, replace=False)]
        for atoms in atom_list:
            B = PublicBasis.dct2((28, 28), n_atoms=atoms)
            M = B.resolve(n_features=784, epsilon=1.0, delta=0.0, k=K, n_samples=None).matrix
            _, V = np.linalg.eigh((A @ M).T @ (A @ M))
            rows.append((n, atoms, None, "top-10 inside the basis (not private)",
                         captured_energy(M @ V[:, -K:], X=A), 0.0))
            for eps in (1.0, 4.0):
                for name in methods:
                    t = time.perf_counter()
                    fit = with_public_basis(name, B)
                    scores = [captured_energy(fit(A, K, epsilon=eps, row_norm=1.0, random_state=s).components,
                                              X=A) for s in range(seeds)]
                    rows.append((n, atoms, eps, name, float(np.mean(scores)), time.perf_counter() - t))
        if n == len(X):
            for eps in (1.0, 4.0):
                t = time.perf_counter()
                score = captured_energy(ppca(A, K, epsilon=eps, row_norm=1.0, random_state=0).components, X=A)
                rows.append((n, 784, eps, "ppca, no basis (seed 0)", score, time.perf_counter() - t))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="data home (default: get_data_home())")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--ppca-max-n", type=int, default=2000, help="largest n for the pure-epsilon rows")
    parser.add_argument("--pure", action="store_true", help="the pure-epsilon table inside 32-150 atoms")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.pure:
        print(f"machine: {platform.machine()} {platform.processor() or ''}, {platform.python_version()}; "
              f"seeds {args.seeds}; k = {K}")
        print("| rows | atoms | epsilon | method | captured energy | seconds |")
        print("|---|---|---|---|---|---|")
        for n, atoms, eps, name, score, secs in run_pure(Path(get_data_home(args.data)), args.seeds):
            e = "-" if eps is None else f"{eps:g}"
            print(f"| {n:,} | {atoms} | {e} | {name} | {score:.3f} | {secs:.1f} |")
        print(f"total {time.perf_counter() - start:.0f} s")
        return
    rows = run(Path(get_data_home(args.data)), args.seeds, args.ppca_max_n)
    print(f"machine: {platform.machine()} {platform.processor() or ''}, {platform.python_version()}; "
          f"seeds {args.seeds}; k = {K}, delta = {DELTA:g}")
    print("| data | n | epsilon | method | captured energy | seconds |")
    print("|---|---|---|---|---|---|")
    for data, n, eps, name, score, secs in rows:
        print(f"| {data} | {n:,} | {eps:g} | {name} | {score:.3f} | {secs:.1f} |")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
