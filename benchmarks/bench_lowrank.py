"""Utility of every low-rank method: reconstruction and subspace error against the best rank k.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lowrank.py [--data mnist a9a rt-iot2022 uniform535
        uniform2000] [--rows 20000] [--k 10] [--eps 0.1 0.25 0.5 1 2 4 8] [--seeds 1] [--methods ...]
        [--out results.json] [--plot lowrank.png]

For each data set, epsilon and method (delta = 1e-6, or 1/m on the paper's synthetic matrices):

* ``recon`` = ``||A - U diag(S) V^T||_F / ||A - [A]_k||_F`` for a released factorization (``-`` where the
  method releases no U: ``hardt_roth``'s subspace-only default, ``covariance_lrf``'s factorization of
  ``A^T A``), and
* ``subspace`` = ``||A - A V V^T||_F / ||A - [A]_k||_F`` (the left subspace U for
  ``private_local_lrf_sketch``, the paper's protocol, which releases no V: ``||A - U U^T A||_F``),

next to the zero matrix (``||A||_F / best``), a random k-dimensional V and Analyze Gauss's V (row-level
replace-one, same epsilon and delta, rows clipped to the row bound). Real data: the first ``--rows`` training
rows scaled to unit norm (``dpspectral_reproduce.chen2025.load_chen_dataset``; row bound 1). Synthetic:
Upadhyay's uniform entries on [0, 4800) (535 x 50 and 2000 x 200; Priv1/Priv2 bound 1, the paper's; row
bound ``4800 sqrt(n)`` for the row-level methods). Needs ``$DPSPECTRAL_DATA`` (or ``--data-dir``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from dpspectral.local._lowrank import private_local_lrf  # noqa: E402
from dpspectral.lowrank import (  # noqa: E402
    continual_lrf,
    covariance_lrf,
    hardt_roth,
    optimal_space_lrf,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    turnstile_lrf,
)
from dpspectral.pca._covariance import analyze_gauss  # noqa: E402

METHODS = ("private_frobenius_lrf", "private_space_optimal_lrf", "turnstile_lrf",
           "turnstile_space_optimal_lrf", "continual_lrf", "continual_space_optimal_lrf", "covariance_lrf",
           "hardt_roth", "hardt_roth_range_finder", "private_local_lrf", "private_local_lrf_sketch",
           "optimal_space_lrf")


def load(name: str, rows: int, data_dir: str) -> tuple[np.ndarray, float, float]:
    """The matrix, its public row bound and delta."""
    if name.startswith("uniform"):
        m = int(name[len("uniform"):])
        n = {535: 50, 2000: 200}[m]
        A = np.random.default_rng(0).uniform(0.0, 4800.0, size=(m, n))
        return A, 4800.0 * math.sqrt(n), 1.0 / m
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    X = np.asarray(load_chen_dataset(name, data_dir).X_train[:rows], dtype=float)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    return X, 1.0, 1e-6


def run(method: str, A: np.ndarray, k: int, eps: float, delta: float, C: float, seed: int) -> Any:
    """One release with the method's defaults (row-level methods get the public row bound C)."""
    priv = dict(epsilon=eps, delta=delta, random_state=seed)
    if method == "private_frobenius_lrf":
        return private_frobenius_lrf(A, k, **priv)
    if method == "private_space_optimal_lrf":
        return private_space_optimal_lrf(A, k, **priv)
    if method == "turnstile_lrf":
        return turnstile_lrf(A, k, **priv)
    if method == "turnstile_space_optimal_lrf":  # Figure 5's turnstile Priv1 state
        from dpspectral.lowrank._turnstile_space_optimal import turnstile_space_optimal_lrf

        return turnstile_space_optimal_lrf(A, k, **priv)
    if method == "continual_lrf":
        return continual_lrf(A, k, **priv)
    if method == "continual_space_optimal_lrf":  # Theorem 51's tree over Figure 5
        from dpspectral.lowrank._continual_space_optimal import continual_space_optimal_lrf

        return continual_space_optimal_lrf(A, k, **priv)
    if method == "covariance_lrf":
        return covariance_lrf(A, k, row_norm=C, **priv)
    if method == "hardt_roth":
        return hardt_roth(A, k, row_norm=C, **priv)
    if method == "hardt_roth_range_finder":
        return hardt_roth(A, k, row_norm=C, algorithm="range_finder", **priv)
    if method == "private_local_lrf":  # default protocol="gram": V and S
        return private_local_lrf(A, k, row_norm=C, simulate_sum=True, **priv)
    if method == "private_local_lrf_sketch":  # the paper's Fig. 9 protocol: U only
        return private_local_lrf(A, k, row_norm=C, simulate_sum=True, protocol="sketch", **priv)
    if method == "optimal_space_lrf":
        return optimal_space_lrf(A, k, random_state=seed)
    raise ValueError(f"unknown method {method!r}")


def errors(A: np.ndarray, res: Any, best: float) -> tuple[float | None, float]:
    """(recon, subspace) over the best rank-k error."""
    if res.V is None:  # a left subspace only
        U = res.U
        return None, float(np.linalg.norm(A - U @ (U.T @ A)) / best)
    V = res.V
    sub = float(np.linalg.norm(A - (A @ V) @ V.T) / best)
    if getattr(res, "needs_data", False):
        return None, sub
    return float(np.linalg.norm(A - res.reconstruct()) / best), sub


def references(A: np.ndarray, k: int, eps: float, delta: float, C: float, seed: int,
               best: float) -> dict[str, float]:
    n = A.shape[1]
    V = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, k)))[0]
    ag = analyze_gauss(A, k, epsilon=eps, delta=delta, row_norm=C, adaptive_clip=False, random_state=seed)
    W = ag.components
    return {"zero": float(np.linalg.norm(A) / best),
            "random_V": float(np.linalg.norm(A - (A @ V) @ V.T) / best),
            "analyze_gauss_V": float(np.linalg.norm(A - (A @ W) @ W.T) / best)}


def bench(data: list[str], methods: list[str], eps_list: list[float], k: int, rows: int, seeds: int,
          data_dir: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in data:
        A, C, delta = load(name, rows, data_dir)
        s = np.linalg.svd(A, compute_uv=False)
        best = float(np.sqrt(np.sum(s[k:] ** 2)))
        for eps in eps_list:
            for seed in range(seeds):
                ref = references(A, k, eps, delta, C, seed, best)
                for method in methods:
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = run(method, A, k, eps, delta, C, seed)
                    rec, sub = errors(A, res, best)
                    row = {"data": name, "shape": list(A.shape), "eps": eps, "seed": seed, "method": method,
                           "recon": rec, "subspace": sub, "seconds": time.perf_counter() - t0, **ref}
                    out.append(row)
                    print(json.dumps(row), flush=True)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per (data, method), subspace (recon) per epsilon, seed-averaged."""
    eps_list = sorted({r["eps"] for r in rows})
    lines = []
    for name in dict.fromkeys(r["data"] for r in rows):
        sel = [r for r in rows if r["data"] == name]
        lines.append(f"\n**{name}** {tuple(sel[0]['shape'])}, k = {K}: subspace error (reconstruction error) "
                     "over the best rank-k\n")
        lines.append("| method | " + " | ".join(f"eps {e:g}" for e in eps_list) + " |")
        lines.append("|---" * (len(eps_list) + 1) + "|")

        def cell(vals: list[dict[str, Any]], key: str) -> str:
            v = [r[key] for r in vals if r[key] is not None]
            return f"{np.mean(v):.3f}" if v else "-"

        for method in dict.fromkeys(r["method"] for r in sel):
            cells = []
            for e in eps_list:
                vals = [r for r in sel if r["method"] == method and r["eps"] == e]
                cells.append(f"{cell(vals, 'subspace')} ({cell(vals, 'recon')})" if vals else "")
            lines.append(f"| `{method}` | " + " | ".join(cells) + " |")
        for ref in ("analyze_gauss_V", "random_V", "zero"):
            cells = [cell([r for r in sel if r["eps"] == e][:1] * 1, ref) for e in eps_list]
            lines.append(f"| {ref.replace('_', ' ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["data"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        sel = [r for r in rows if r["data"] == name]
        eps = sorted({r["eps"] for r in sel})
        for method in dict.fromkeys(r["method"] for r in sel):
            y = [np.mean([r["subspace"] for r in sel if r["method"] == method and r["eps"] == e])
                 for e in eps]
            ax.plot(eps, y, marker="o", label=method)
        for ref, style in (("analyze_gauss_V", "k--"), ("random_V", "k:"), ("zero", "k-.")):
            ax.plot(eps, [np.mean([r[ref] for r in sel if r["eps"] == e]) for e in eps], style, label=ref)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("||A - A V V^T|| / best")
        ax.set_title(name)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


K = 10


def main() -> None:
    global K
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["mnist", "a9a", "rt-iot2022", "uniform535", "uniform2000"])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--eps", nargs="+", type=float, default=[0.1, 0.25, 0.5, 1, 2, 4, 8])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--data-dir", default=os.environ.get("DPSPECTRAL_DATA", ""))
    ap.add_argument("--out")
    ap.add_argument("--plot")
    args = ap.parse_args()
    K = args.k
    rows = bench(args.data, args.methods, args.eps, args.k, args.rows, args.seeds, args.data_dir)
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    sys.exit(main())
