"""What exact noise costs: the default (exact discrete) source against bare computations and float noise.

Usage (from the project root, after `make install-dev`):

    .venv/bin/python benchmarks/bench_exact_noise.py [--rows 60000] [--repeats 3] [--samplers]

* ``DPPCA(n_components=10)`` fit on MNIST (the training images, pixels scaled to [0, 1], so every row
  norm is at most 28, a public bound) against the bare ``X.T @ X`` + ``scipy.linalg.eigh`` top-10 and
  scikit-learn's ``PCA(10, svd_solver="covariance_eigh")``;
* ``analyze_gauss`` on 64 rows at d = 2048 (k = 2) with the exact default, with float noise
  (``config_context(noise="float")``) and with ``random_state="secure"``, against the bare product +
  NumPy float noise of the same shape + top-k ``eigh``;
* with ``--samplers``: draws per second of the discrete Gaussian and Laplace at the release scale
  (``2**30`` grid steps), seeded and OS bits, one core.

The variants run interleaved, ``--repeats`` rounds, and the median seconds of each is reported (one
JSON line); docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.linalg

from dpspectral import config_context
from dpspectral.datasets import find_data_home, load_idx
from dpspectral._estimators import DPPCA
from dpspectral.pca import analyze_gauss
from dpspectral.privacy._discrete import (
    GeneratorWords,
    SystemWords,
    discrete_gaussian_array,
    discrete_laplace_array,
)


def _mnist(rows: int) -> np.ndarray:
    home = find_data_home() or Path("/work/shared/data")
    X, _ = load_idx(home / "mnist" / "train-images-idx3-ubyte.gz")
    return X[:rows] / 255.0


def _top(C: np.ndarray, k: int) -> np.ndarray:
    d = C.shape[0]
    return scipy.linalg.eigh(C, subset_by_index=[d - k, d - 1])[1]


def _interleaved(variants: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _dppca(rows: int, repeats: int) -> dict[str, float]:
    from sklearn.decomposition import PCA

    X = _mnist(rows)
    variants = {
        "dppca_default": lambda: DPPCA(n_components=10, epsilon=1.0, delta=1e-6, row_norm=28.0,
                                       random_state=0).fit(X),
        "bare_product_eigh": lambda: _top(X.T @ X, 10),
        "sklearn_covariance_eigh": lambda: PCA(10, svd_solver="covariance_eigh").fit(X),
    }
    return _interleaved(variants, repeats)


def _analyze_gauss(repeats: int, d: int = 2048, n: int = 64, k: int = 2) -> dict[str, float]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)

    def bare() -> None:
        C = X.T @ X
        E = rng.normal(size=(d, d))
        _top(C + np.triu(E) + np.triu(E, 1).T, k)

    def with_noise(kind: str, state: object = 0) -> Callable[[], object]:
        def run() -> object:
            with config_context(noise=kind):
                return analyze_gauss(X, k, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=state)
        return run

    variants = {"bare_product_float_noise_eigh": bare, "analyze_gauss_exact": with_noise("exact"),
                "analyze_gauss_float": with_noise("float"),
                "analyze_gauss_secure": with_noise("exact", "secure")}
    return _interleaved(variants, repeats)


def _samplers(n: int = 2_000_000) -> dict[str, float]:
    out = {}
    width = 2**30 + 12345
    for bits_name, src in (("seeded", GeneratorWords(np.random.default_rng(0))), ("os", SystemWords())):
        for name, draw in (("gaussian", discrete_gaussian_array), ("laplace", discrete_laplace_array)):
            best = np.inf
            for _ in range(3):
                t = time.process_time()
                draw(width, n, src)
                best = min(best, time.process_time() - t)
            out[f"{name}_{bits_name}_per_s"] = n / best
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samplers", action="store_true")
    parser.add_argument("--skip-mnist", action="store_true")
    args = parser.parse_args()
    result: dict[str, object] = {"machine": f"{platform.machine()} {os.cpu_count()} cores",
                                 "numpy": np.__version__, "repeats": args.repeats}
    if args.samplers:
        result["samplers"] = _samplers()
    ag = _analyze_gauss(args.repeats)
    base = ag["bare_product_float_noise_eigh"]
    ratios = {f"ratio_{key[len('analyze_gauss_'):]}": v / base for key, v in ag.items()
              if key.startswith("analyze_gauss_")}
    result["analyze_gauss_d2048_n64_k2"] = {**ag, **ratios}
    if not args.skip_mnist:
        dp = _dppca(args.rows, args.repeats)
        result["dppca_mnist"] = {**dp, "rows": args.rows,
                                 "ratio_to_bare": dp["dppca_default"] / dp["bare_product_eigh"],
                                 "ratio_to_sklearn": dp["dppca_default"] / dp["sklearn_covariance_eigh"]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
