"""DP-VRPCA / DP-SPCA / Local Gaussian utility next to Analyze Gauss and a random subspace.

    .venv/bin/python benchmarks/bench_stochastic.py mnist  [--data ../shared/data] [--seeds 2]
        [--epsilons 0.1 0.25 0.5 1 2] [--rows N] [--methods dp_vrpca dp_spca ...]
    .venv/bin/python benchmarks/bench_stochastic.py spiked [--n 40000] [--d 20] [--seeds 3]

``mnist``: the MNIST training set (60,000 x 784, rows scaled to unit norm; ``--rows`` subsamples), k = 10,
delta = 1e-6, replace-one (local for ``local_gaussian``), library defaults; the captured share of the
top-10 energy of ``X^T X`` per method and epsilon (mean over seeds), and each method's epsilon_90 (the
smallest epsilon at which it captures 90%, linear interpolation on the grid, or "not reached").
``dp_vrpca_paper_steps`` is DP-VRPCA with the paper's step schedule (T = n steps of one row on average
per epoch, eta = 1 / n, 5 epochs, k columns, tight noise): slow (about a minute per run on MNIST).
``spiked``: ``spiked_covariance(n, d, 1, spike=10)`` with unit rows, k = 1, epsilon = 1: sin theta.
One JSON line per measurement, then a summary with the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_covariance import DEFAULT_DATA, load_mnist_unit_rows, machine  # noqa: E402

DELTA = 1e-6


def _methods(n: int) -> dict[str, Callable[..., Any]]:
    from dpspectral import analyze_gauss, dp_spca, dp_vrpca, local_gaussian

    return {
        "analyze_gauss": analyze_gauss,
        "dp_vrpca": dp_vrpca,
        "dp_vrpca_paper_steps": lambda X, k, **kw: dp_vrpca(
            X, k, n_steps=n, sampling_rate=1.0 / n, learning_rate=1.0 / n, n_epochs=5, block_size=k,
            adaptive_noise=False, **kw),
        "dp_spca": dp_spca,
        "local_gaussian": local_gaussian,
        "local_gaussian_iid": lambda X, k, **kw: local_gaussian(X, k, noise_shape="iid", **kw),
    }


def _random_subspace(d: int, k: int, seed: int) -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((d, k)))[0]


def epsilon_90(grid: list[float], values: list[float], level: float = 0.9) -> float | None:
    """The smallest epsilon of the (sorted) grid's linear interpolation at which ``values`` reach level."""
    pts = list(zip(grid, values, strict=True))
    for (e0, v0), (e1, v1) in zip(pts, pts[1:], strict=False):
        if v0 >= level:
            return e0
        if v1 >= level:
            return e0 + (e1 - e0) * (level - v0) / (v1 - v0)
    return grid[-1] if values and values[-1] >= level else None


def bench_mnist(args: argparse.Namespace) -> dict[str, object]:
    X, _ = load_mnist_unit_rows(Path(args.data))
    if args.rows:
        X = X[np.random.default_rng(0).choice(X.shape[0], args.rows, replace=False)]
    n, d = X.shape
    k = 10
    w, U = np.linalg.eigh(X.T @ X)  # evaluation only
    w, U = w[::-1], U[:, ::-1]

    def captured(V: np.ndarray) -> float:
        return float((w[:, None] * (U.T @ V) ** 2).sum() / w[:k].sum())

    methods = _methods(n)
    table: dict[str, list[float]] = {}
    grid = sorted(args.epsilons)
    for name in args.methods:
        table[name] = []
        for eps in grid:
            values, seconds = [], 0.0
            for seed in range(args.seeds):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = methods[name](X, k, epsilon=eps, delta=DELTA, row_norm=1.0, random_state=seed)
                seconds += time.perf_counter() - t
                values.append(captured(res.components))
            table[name].append(float(np.mean(values)))
            print(json.dumps({"data": "mnist", "n": n, "method": name, "epsilon": eps,
                              "captured": values, "mean": table[name][-1],
                              "seconds_per_run": seconds / args.seeds}), flush=True)
    rand = float(np.mean([captured(_random_subspace(d, k, s)) for s in range(20)]))
    return {"data": "mnist", "n": n, "d": d, "k": k, "delta": DELTA, "epsilons": grid, "captured": table,
            "random_subspace": rand,
            "epsilon_90": {m: epsilon_90(grid, v) for m, v in table.items()}}


def bench_spiked(args: argparse.Namespace) -> dict[str, object]:
    from dpspectral.datasets import spiked_covariance

    X, _ = spiked_covariance(args.n, args.d, 1, spike=10.0, random_state=0)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    top = np.linalg.eigh(X.T @ X)[1][:, -1:]

    def sin(V: np.ndarray) -> float:
        return float(np.sqrt(max(0.0, 1.0 - float(np.linalg.norm(top.T @ V)) ** 2)))

    methods = _methods(args.n)
    out: dict[str, float] = {}
    for name in args.methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = [sin(methods[name](X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=s)
                          .components) for s in range(args.seeds)]
        out[name] = float(np.mean(values))
        print(json.dumps({"data": "spiked", "n": args.n, "d": args.d, "method": name, "sin_theta": values}),
              flush=True)
    out["random_subspace"] = float(np.mean([sin(_random_subspace(args.d, 1, s)) for s in range(200)]))
    return {"data": "spiked", "n": args.n, "d": args.d, "k": 1, "epsilon": 1.0, "sin_theta": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("what", choices=["mnist", "spiked"])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.25, 0.5, 1.0, 2.0])
    parser.add_argument("--rows", type=int, default=0, help="subsample MNIST (0: all rows)")
    parser.add_argument("--n", type=int, default=40_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--methods", nargs="+",
                        default=["analyze_gauss", "dp_vrpca", "dp_spca", "local_gaussian",
                                 "local_gaussian_iid"])
    args = parser.parse_args()
    out = bench_mnist(args) if args.what == "mnist" else bench_spiked(args)
    out["machine"] = machine()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
