"""How DPPCA on a Dask array and DPdisPCA on Dask scale with the number of workers.

Usage (from the project root; needs as many free cores as the largest worker count):

    .venv/bin/python benchmarks/bench_dask_scaling.py dppca  [--n 8000000] [--d 100] [--workers 1 2 4 8 16]
    .venv/bin/python benchmarks/bench_dask_scaling.py dispca [--n 8000000] [--d 100] [--workers 1 2 4 8 16]
    .venv/bin/python benchmarks/bench_dask_scaling.py model  [--d 100] [--rows-per-block 250000]

``dppca``: for each worker count, a ``LocalCluster`` (one process and one thread per worker) and its
client, made the active client; an ``n x d`` float64 Dask array (row blocks of ``--rows-per-block`` rows,
rows scaled to norm <= 1) generated and persisted on the workers (not timed), then the median of
``--repeats`` ``DPPCA(k=10, epsilon=1, delta=1e-6, row_norm=1)`` fits (which use that client) and of the
bare ``(X.T @ X).compute()`` on the same array (the limit: one pass, no clipping). ``dispca``: the same
array's row blocks as DPdisPCA's sites (``DistributedDPPCA(engine="dask")``, also on the active client).
Prints one JSON line per measurement, with the speed-up over one worker. ``model``: the per-block
constants of the cost model in docs/algorithms/distributed.md (one block's partial, single thread, on
this machine) and the model's estimate at 10^10 rows on 1,000 workers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from typing import Any

import numpy as np


def machine() -> dict[str, object]:
    import dask

    return {"python": platform.python_version(), "numpy": np.__version__, "dask": dask.__version__,
            "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0]}


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def _data(n: int, d: int, rows_per_block: int) -> Any:
    """An n x d array of rows of norm <= 1, generated on the workers (a spiked spectrum)."""
    import dask.array as da

    X = da.random.default_rng(0).standard_normal((n, d), chunks=(rows_per_block, d))
    X = X * np.linspace(3.0, 0.5, d)
    return X / (3.0 * math.sqrt(d) * 1.5)  # norms concentrate near 0.5; the few above 1 are clipped


def _median_seconds(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _measure(what: str, X: Any, repeats: int) -> tuple[float, float]:
    """Median seconds of the fit on the active client, and of the bare ``X^T X`` on the same array."""
    from dpspectral import DPPCA
    from dpspectral.distributed import DistributedDPPCA

    def fit() -> None:
        if what == "dppca":
            DPPCA(10, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
        else:
            DistributedDPPCA(10, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)

    return _median_seconds(fit, repeats), _median_seconds(lambda: (X.T @ X).compute(), repeats)


def bench_workers(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster, wait

    base: dict[str, float] = {}
    for w in args.workers:
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
                Client(cl) as client:
            client.wait_for_workers(w)
            X = _data(args.n, args.d, args.rows_per_block).persist()
            wait(X)
            seconds, bare = _measure(args.what, X, args.repeats)
            del X
        base.setdefault("fit", seconds)
        base.setdefault("bare", bare)
        emit({"what": args.what, "n": args.n, "d": args.d, "workers": w, "seconds": round(seconds, 3),
              "speedup": round(base["fit"] / seconds, 2), "bare_XtX_seconds": round(bare, 3),
              "bare_speedup": round(base["bare"] / bare, 2), "machine": machine()})


def bench_model(args: argparse.Namespace) -> None:
    from dpspectral._moments import _block_partial, _partial_width

    d, r = args.d, args.rows_per_block
    block = np.random.default_rng(0).standard_normal((r, d)) / (2.0 * math.sqrt(d))
    seconds = _median_seconds(lambda: _block_partial(block, None, 1.0, True, True), args.repeats)
    partial_bytes = 8 * _partial_width(d, True, True)
    n, workers, split_every = 1e10, 1000, 4
    blocks = math.ceil(n / r)
    depth = math.ceil(math.log(blocks, split_every))
    emit({"what": "model", "d": d, "rows_per_block": r, "block_seconds": round(seconds, 4),
          "rows_per_second_per_core": round(r / seconds), "partial_bytes": partial_bytes,
          "blocks_at_1e10": blocks, "tree_depth_split_every_4": depth,
          "compute_seconds_per_worker_at_1e10_on_1000": round(blocks / workers * seconds, 1),
          "machine": machine()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("dppca", "dispca", "model"))
    parser.add_argument("--n", type=int, default=8_000_000)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--rows-per-block", type=int, default=250_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.what == "model":
        bench_model(args)
    else:
        bench_workers(args)


if __name__ == "__main__":
    main()
