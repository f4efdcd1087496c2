"""The measurements behind method="auto" (docs/choosing-a-method.md): MNIST, k = 10, captured energy.

Usage (from the project root; data from $DPSPECTRAL_DATA or ../shared/data):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_auto.py [--seeds 2] [--epsilons 0.25 1]

Rows scaled to unit norm, replace-one, delta = 1e-6 for the (epsilon, delta) methods and 0 for the pure
ones; each method called through the registry with its defaults. Prints one JSON line per (method,
epsilon): the mean captured energy ``tr(V^T X^T X V) / (top-10 energy)`` and the seconds per fit, and
one line for a random 10-dimensional subspace.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from dpspectral._registry import get_method
from dpspectral_reproduce.chen2025 import load_chen_dataset

DATA = Path(os.environ.get("DPSPECTRAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
METHODS = (("analyze_gauss", 1e-6), ("noisy_power", 1e-6), ("ppca", 0.0), ("exponential", 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 1.0])
    args = parser.parse_args()
    X = load_chen_dataset("mnist", DATA).X_train
    S = X.T @ X
    top = float(np.sort(np.linalg.eigvalsh(S))[::-1][:10].sum())
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(X.shape[1], 10)))[0]
    print(json.dumps({"method": "random", "captured": round(float(np.trace(Q.T @ S @ Q)) / top, 4)}))
    for name, delta in METHODS:
        for eps in args.epsilons:
            values, t0 = [], time.perf_counter()
            for seed in range(args.seeds):
                res = get_method(name).function(X, 10, epsilon=eps, delta=delta, row_norm=1.0,
                                                random_state=seed)
                V = res.components
                values.append(float(np.trace(V.T @ S @ V)) / top)
            seconds = (time.perf_counter() - t0) / args.seeds
            print(json.dumps({"method": name, "epsilon": eps, "captured": round(float(np.mean(values)), 4),
                              "seconds": round(seconds, 1)}), flush=True)


if __name__ == "__main__":
    main()
