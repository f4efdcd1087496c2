"""DP-SPCA's full-batch event: the Gaussian event over the replace-one shift against a Poisson-sampled one.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_spca_event.py [spca_new spca_old vrpca]

Full MNIST (60,000 unit rows, ``load_chen_dataset("mnist", ...)``), k = 10, delta = 1e-6, epsilon in
{0.25, 0.5, 1}, seeds 0 and 1, library defaults (adaptive clipping on); captured share of the top-10
energy of ``X^T X``. ``spca_new``: ``dp_spca`` as given (full batches, one Gaussian event per step over
the replace-one shift ``2 sqrt(2) C^2``). ``spca_old``: the same full batches accounted as a Poisson
sample: ``sampling_rate = 1 - 1e-9`` (every row in every step but for a 1e-9 chance each) keeps
``PoissonSampledDpEvent(q, .)`` over one row's ``2 C^2``, with a block of 100 columns. ``vrpca``:
``dp_vrpca`` as given. One JSON line per method and epsilon.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

from dpspectral import dp_spca, dp_vrpca
from dpspectral_reproduce.chen2025 import load_chen_dataset

DATA = "/work/shared/data"


def main(which: list[str]) -> None:
    X = np.ascontiguousarray(load_chen_dataset("mnist", DATA).X_train, dtype=np.float64)
    A = X.T @ X
    k = 10
    top = float(np.linalg.eigvalsh(A)[::-1][:k].sum())
    for eps in (0.25, 0.5, 1.0):
        for name in which:
            vals, t0 = [], time.time()
            for seed in (0, 1):
                kw = {"epsilon": eps, "delta": 1e-6, "row_norm": 1.0, "random_state": seed}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if name == "spca_new":
                        r = dp_spca(X, k, **kw)
                    elif name == "spca_old":
                        r = dp_spca(X, k, sampling_rate=1 - 1e-9, block_size=100, **kw)
                    else:
                        r = dp_vrpca(X, k, **kw)
                V = r.components
                vals.append(float(np.trace(V.T @ A @ V)) / top)
            print(json.dumps({"method": name, "eps": eps, "captured": round(float(np.mean(vals)), 4),
                              "per_seed": [round(v, 4) for v in vals],
                              "noise_std": r.diagnostics["noise_std"],
                              "noise_multiplier": r.diagnostics["noise_multiplier"],
                              "clip": r.diagnostics.get("clip"), "certified_eps": r.privacy.epsilon,
                              "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["spca_new", "spca_old", "vrpca"])
