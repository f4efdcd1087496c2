"""Adaptive row clipping of DP-SPCA and DP-VRPCA: off vs on, in three scalings.

Usage (from the project root, after `make install-dev`; the data from `../shared/data` or --data):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_adaptive_clip_stochastic.py
        [--methods dp_spca dp_vrpca] [--epsilons 0.25 1] [--seeds 2] [--k 10] [--rows 60000]

MNIST's training rows in the scalings of ``bench_adaptive_clip.py --uncentred`` (``_raw``): ``unit`` (rows
scaled to unit norm, ``row_norm = 1``), ``max`` (the raw rows divided by the largest raw norm,
``row_norm = 1``) and ``4x`` (the same rows, ``row_norm = 4``: a loose public bound). Each method with its
defaults (delta = 1e-6, replace-one), ``adaptive_clip=False`` (rows clipped at ``row_norm``) and the
default (adaptive). The score is the captured energy of the true, unclipped ``X^T X`` of the rows as
given, ``tr(V^T A V) / (sum of its top-k eigenvalues)``, averaged over seeds; also the released clip and
the seconds per fit. The scalings by the data's largest norm are non-private preprocessing of the
benchmark (they stand for a user's public bound). ``--rows`` takes the first rows (a subsample, public
choice). Prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from dpspectral import dp_spca, dp_vrpca, noisy_power

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_adaptive_clip import _raw  # noqa: E402

METHODS = {"noisy_power": noisy_power, "dp_spca": dp_spca, "dp_vrpca": dp_vrpca}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rows", type=int, default=None, help="the first ROWS training rows")
    parser.add_argument("--scalings", nargs="+", default=["unit", "max", "4x"])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "DPSPECTRAL_DATA", ROOT.parent / "shared" / "data")))
    args = parser.parse_args()
    raw = _raw("mnist", args.data)[: args.rows]
    norms = np.linalg.norm(raw, axis=1)
    unit = raw / np.where(norms > 0, norms, 1.0)[:, None]
    for scaling, X, C in [("unit", unit, 1.0), ("max", raw, 1.0), ("4x", raw, 4.0)]:
        if scaling not in args.scalings:
            continue
        A = X.T @ X
        top = float(np.sort(np.linalg.eigvalsh(A))[::-1][: args.k].sum())
        for name in args.methods:
            for eps in args.epsilons:
                for label, kw in [("off", {"adaptive_clip": False}), ("adaptive", {})]:
                    values, clips, seconds = [], [], []
                    for seed in range(args.seeds):
                        t0 = time.perf_counter()
                        res = METHODS[name](X, args.k, epsilon=eps, delta=1e-6, row_norm=C,
                                            random_state=seed, **kw)
                        seconds.append(time.perf_counter() - t0)
                        V = res.components
                        values.append(float(np.trace(V.T @ A @ V)) / top)
                        clips.append(res.diagnostics.get("clip", C))
                    print(json.dumps({"method": name, "scaling": scaling, "row_norm": C, "epsilon": eps,
                                      "setting": label, "captured": round(statistics.mean(values), 4),
                                      "captured_sd": round(statistics.pstdev(values), 4),
                                      "clip": round(statistics.mean(clips), 4),
                                      "seconds": round(statistics.median(seconds), 2)}), flush=True)
    print(json.dumps({"n": int(raw.shape[0]), "d": int(raw.shape[1]), "k": args.k,
                      "norm_quantiles_over_max": {str(q): round(float(np.quantile(norms, q)), 3)
                                                  for q in (0.1, 0.5, 0.9, 0.99)},
                      "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()}}),
          flush=True)


if __name__ == "__main__":
    main()
