"""Minibatch clipped Oja (``minibatch_oja``): batch schedules across n, next to Analyze Gauss.

Usage::

    python benchmarks/bench_minibatch_oja.py [--large] [--mnist] [--seeds 3] [--time-limit 900]

Spiked set: d = 40, population covariance diag(17, 1, ..., 1) scaled by 1 / (1.5 sqrt(56)) and rows
clipped to norm 1 (so lambda1 / lambda2 ~ 17 before clipping), k = 1, epsilon = 1, delta = 1e-6,
replace-one. Error: sin of the angle to the population top eigenvector e_1 (mean over seeds).
Schedules: ``(n_batches, warmup_fraction, block_size)``; ``warmup_fraction = 1 / n_batches`` is equal
batches; the default is (4, 0.05, min(d, 20 k) = 20).
n = 2e4 and 3.2e5 always; 1.28e6 with ``--large`` (skipped once ``--time-limit`` seconds are spent).

``--mnist``: MNIST train (60,000 x 784), unit rows, k = 10, epsilon 0.25 and 1: captured energy
``tr(V^T X^T X V) / (sum of the top-10 eigenvalues)`` of minibatch_oja (schedules above), Analyze
Gauss, and a random orthonormal frame.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpspectral.pca import WarmupSchedule, analyze_gauss
from dpspectral.pca._minibatch import minibatch_oja

#: (n_batches, warmup_fraction, block_size)
SCHEDULES = [(4, 0.05, 20), (3, 1 / 3, 1), (4, 0.25, 1), (4, 0.05, 1), (3, 0.1, 1), (4, 0.1, 1),
             (4, 0.1, 20), (5, 0.05, 20), (3, 0.05, 20)]
#: MNIST (k = 10): the default (4, 0.05, p = min(d, 20 k) = 200) and variants
MNIST = [(4, 0.05, 200), (4, 0.05, 10), (4, 0.05, 100), (4, 0.1, 200), (3, 0.15, 200)]
D, EPS, DELTA = 40, 1.0, 1e-6


def spiked(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lam = np.ones(D)
    lam[0] = 17.0
    X = rng.standard_normal((n, D)) * np.sqrt(lam) / (1.5 * np.sqrt(lam.sum()))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def sin_theta(v: np.ndarray) -> float:
    v = np.ravel(v) / np.linalg.norm(v)
    return float(np.sqrt(max(0.0, 1.0 - v[0] ** 2)))


def spiked_table(ns: list[int], seeds: int, time_limit: float, start: float) -> None:
    print("| n | " + " | ".join(f"T={t}, f={f:.3g}, p={p}" for t, f, p in SCHEDULES)
          + " | analyze_gauss | non-private | random |")
    print("|---" * (len(SCHEDULES) + 4) + "|")
    for n in ns:
        if time.time() - start > time_limit:
            print(f"| {n} | skipped (time limit) |")
            continue
        cells: dict[str, list[float]] = {}
        for s in range(seeds):
            X = spiked(n, 1000 + s)
            for t, f, p in SCHEDULES:
                r = minibatch_oja(X, 1, epsilon=EPS, delta=DELTA, row_norm=1.0, schedule=WarmupSchedule(t, f),
                                  block_size=p, random_state=s)
                cells.setdefault(f"{t},{f},{p}", []).append(sin_theta(r.components))
            r = analyze_gauss(X, 1, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=s)
            cells.setdefault("ag", []).append(sin_theta(r.components))
            cells.setdefault("np", []).append(sin_theta(np.linalg.eigh(X.T @ X)[1][:, -1]))
            cells.setdefault("rand", []).append(sin_theta(np.random.default_rng(s).standard_normal(D)))
        row = [np.mean(v) for v in cells.values()]
        print(f"| {n} | " + " | ".join(f"{x:.4f}" for x in row) + " |", flush=True)


def mnist_table(seeds: int) -> None:
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    X = np.asarray(load_chen_dataset("mnist", "/work/shared/data").X_train, dtype=float)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    S = X.T @ X
    w, _ = np.linalg.eigh(S)
    best = float(w[-10:].sum())

    def captured(V: np.ndarray) -> float:
        return float(np.trace(V.T @ S @ V)) / best

    print("| epsilon | " + " | ".join(f"minibatch_oja T={t}, f={f:.3g}, p={p}" for t, f, p in MNIST)
          + " | analyze_gauss | random |")
    print("|---" * (len(MNIST) + 3) + "|")
    for eps in (0.25, 1.0):
        vals: dict[str, list[float]] = {}
        for s in range(seeds):
            for t, f, p in MNIST:
                r = minibatch_oja(X, 10, epsilon=eps, delta=1e-6, row_norm=1.0, schedule=WarmupSchedule(t, f),
                                  block_size=p, random_state=s)
                vals.setdefault(f"{t},{f},{p}", []).append(captured(r.components))
            r = analyze_gauss(X, 10, epsilon=eps, delta=1e-6, row_norm=1.0, random_state=s)
            vals.setdefault("ag", []).append(captured(r.components))
            Q, _ = np.linalg.qr(np.random.default_rng(s).standard_normal((X.shape[1], 10)))
            vals.setdefault("rand", []).append(captured(Q))
        print(f"| {eps:g} | " + " | ".join(f"{np.mean(v):.4f}" for v in vals.values()) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--mnist", action="store_true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=900.0)
    args = ap.parse_args()
    start = time.time()
    ns = [20_000, 320_000] + ([1_280_000] if args.large else [])
    spiked_table(ns, args.seeds, args.time_limit, start)
    if args.mnist:
        mnist_table(args.seeds)
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
