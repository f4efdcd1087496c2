"""What the secure noise source costs: seeded vs ``random_state="secure"``.

Usage (from the project root, after `make install-dev`):

    .venv/bin/python benchmarks/bench_secure_noise.py [--dims 20 50 100 200] [--rows 5000] [--repeats 3]

For each dimension d: Analyze Gauss on ``rows x d`` unit-norm rows (one d(d+1)/2-coordinate Gaussian
release), median seconds of the seeded and the secure source, the secure cost per coordinate, and the
sin theta of the top-5 subspace against the truth for both (the secure source must not lose utility).
Prints one JSON line; docs/benchmarks.md records it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

from dpspectral.pca import analyze_gauss


def _data(rows: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, 5)))[0]
    X = rng.normal(size=(rows, 5)) * np.array([5.0, 4.0, 3.0, 2.5, 2.0]) @ basis.T
    X += 0.3 * rng.normal(size=(rows, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, basis


def _sin_theta(V: np.ndarray, U: np.ndarray) -> float:
    return float(np.linalg.norm(V - U @ (U.T @ V), 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=int, nargs="+", default=[20, 50, 100, 200])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for d in args.dims:
        X, truth = _data(args.rows, d)
        timing: dict[str, list[float]] = {"seeded": [], "secure": []}
        utility: dict[str, list[float]] = {"seeded": [], "secure": []}
        for r in range(args.repeats):
            for source, state in (("seeded", r), ("secure", "secure")):
                t0 = time.perf_counter()
                res = analyze_gauss(X, 5, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=state)
                timing[source].append(time.perf_counter() - t0)
                utility[source].append(_sin_theta(res.components, truth))
        coords = d * (d + 1) // 2
        secure_extra = statistics.median(timing["secure"]) - statistics.median(timing["seeded"])
        rows.append({
            "d": d, "coordinates": coords,
            "seeded_s": round(statistics.median(timing["seeded"]), 4),
            "secure_s": round(statistics.median(timing["secure"]), 4),
            "secure_us_per_coordinate": round(1e6 * secure_extra / coords, 1),
            "sin_theta_seeded": round(statistics.mean(utility["seeded"]), 4),
            "sin_theta_secure": round(statistics.mean(utility["secure"]), 4),
        })
    print(json.dumps({"benchmark": "secure_noise", "rows": args.rows, "repeats": args.repeats,
                      "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                                  "python": platform.python_version()},
                      "results": rows}))


if __name__ == "__main__":
    main()
