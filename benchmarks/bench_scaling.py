"""How DPPCA scales — time against n and d, next to the limit (bare ``X^T X`` + ``eigh``).

Usage (from the project root, after ``make install-dev``; an idle machine, the timings are wall clock):

    OMP_NUM_THREADS=<cores> .venv/bin/python benchmarks/bench_scaling.py [--ns 1e4 1e5 1e6 4e6]
        [--ds 50 100 200 500 1000] [--dask-workers 1 2] [--torch] [--repeats 3]
        [--out docs/images/bench_scaling.png] [--json /tmp/bench_scaling.json]

Two sweeps, each on synthetic float64 rows scaled into the unit ball (a public bound ``row_norm = 1``):
time against n at d = 100, and time against d at n = 10^5. For every point: the best of ``--repeats``
``DPPCA(10, epsilon=1, delta=1e-6, row_norm=1)`` fits with the defaults (Analyze Gauss with the
adaptive clip: two reads of the data, the validation pass counting the norms) and the bare
``X^T X`` + ``eigh`` (one read, no clipping, no noise: the limit on this hardware). ``--dask-workers``:
the n sweep also on a Dask array (row blocks
of 250,000 rows, persisted on a ``LocalCluster`` of that many single-thread workers, made the active
client) with its own limit ``(X.T @ X).compute()`` + ``eigh``. ``--torch``: the n sweep also through
the array API on PyTorch's CPU device (``dpspectral.config_context(array_api_dispatch=True)``), when
PyTorch and the array API path are installed. A GPU line is drawn only where one was measured
(``--torch`` on a machine with CUDA uses it); ``docs/benchmarks.md`` says which lines were measured on
which machine.
Prints one JSON line per measurement and draws a two-panel log-log plot.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpspectral import DPPCA

K, EPS, DELTA = 10, 1.0, 1e-6


def _rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1.0, 0.1, d)
    X /= np.linalg.norm(X, axis=1).max()
    return X


def _best_time(fn: Callable[[], Any], repeats: int) -> float:
    """The shortest of ``repeats`` runs (after one warm-up): on a shared machine the least disturbed."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _numpy_point(n: int, d: int, repeats: int) -> dict[str, float]:
    X = _rows(n, d)
    fit = _best_time(lambda: DPPCA(K, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=0).fit(X),
                       repeats)
    bare = _best_time(lambda: np.linalg.eigh(X.T @ X), repeats)
    return {"dppca_s": fit, "limit_s": bare}


def _torch_point(n: int, d: int, repeats: int) -> dict[str, float] | None:
    try:
        import torch
    except ImportError:
        return None
    from dpspectral import config_context
    device = "cuda" if torch.cuda.is_available() else "cpu"
    X = torch.asarray(_rows(n, d), device=device)

    def fit() -> None:
        with config_context(array_api_dispatch=True):
            DPPCA(K, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=0).fit(X)
        if device == "cuda":
            torch.cuda.synchronize()

    def bare() -> None:
        torch.linalg.eigh(X.T @ X)
        if device == "cuda":
            torch.cuda.synchronize()

    try:
        fit()
    except (TypeError, ValueError) as exc:  # the array API path is not installed in this checkout
        print(json.dumps({"torch": f"skipped: {exc}"}))
        return None
    return {"dppca_s": _best_time(fit, repeats), "limit_s": _best_time(bare, repeats), "device": device}


def _dask_point(n: int, d: int, workers: int, repeats: int) -> dict[str, float]:
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        block = min(250_000, n)
        X = da.random.default_rng(0).standard_normal((n, d), chunks=(block, d)) / (3.0 * np.sqrt(d))
        X = da.clip(X, -1.0 / np.sqrt(d), 1.0 / np.sqrt(d)).persist()  # rows within the unit ball
        client.wait_for_workers(workers)
        fit = _best_time(lambda: DPPCA(K, epsilon=EPS, delta=DELTA, row_norm=1.0,
                                         random_state=0).fit(X), repeats)
        bare = _best_time(lambda: np.linalg.eigh((X.T @ X).compute()), repeats)
    return {"dppca_s": fit, "limit_s": bare}


def _plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, sweep, x in ((axes[0], "n", "n"), (axes[1], "d", "d")):
        for backend in sorted({r["backend"] for r in rows if r["sweep"] == sweep}):
            pts = sorted((r for r in rows if r["sweep"] == sweep and r["backend"] == backend),
                         key=lambda r: r[x])
            xs = [p[x] for p in pts]
            line, = ax.plot(xs, [p["dppca_s"] for p in pts], "o-", label=f"DPPCA, {backend}")
            ax.plot(xs, [p["limit_s"] for p in pts], "--", color=line.get_color(),
                    label=f"limit (X^T X + eigh), {backend}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel("seconds")
        ax.set_title("time against n (d = 100)" if sweep == "n" else "time against d (n = 1e5)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"DPPCA (k = 10, eps = 1) vs the hardware limit; {platform.node()}, "
                 f"{os.cpu_count()} CPUs", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", type=float, nargs="+", default=[1e4, 1e5, 1e6, 4e6])
    ap.add_argument("--ds", type=int, nargs="+", default=[50, 100, 200, 500, 1000])
    ap.add_argument("--dask-workers", type=int, nargs="*", default=[])
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("docs/images/bench_scaling.png"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    print(json.dumps({"machine": {"python": platform.python_version(), "numpy": np.__version__,
                                  "cpus": os.cpu_count(), "omp": os.environ.get("OMP_NUM_THREADS"),
                                  "load_avg_1min": os.getloadavg()[0]}}), flush=True)
    rows: list[dict[str, Any]] = []

    def record(sweep: str, backend: str, n: int, d: int, point: dict[str, Any] | None) -> None:
        if point is None:
            return
        row = {"sweep": sweep, "backend": backend, "n": n, "d": d, **point,
               "ratio": round(point["dppca_s"] / point["limit_s"], 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    for n in map(int, args.ns):
        record("n", "numpy", n, 100, _numpy_point(n, 100, args.repeats))
        if args.torch:
            tp = _torch_point(n, 100, args.repeats)
            record("n", f"torch-{tp.pop('device')}" if tp else "torch", n, 100, tp)
        for w in args.dask_workers:
            record("n", f"dask-{w}w", n, 100, _dask_point(n, 100, w, args.repeats))
    for d in args.ds:
        record("d", "numpy", 100_000, d, _numpy_point(100_000, d, args.repeats))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    _plot(rows, args.out)
    print(json.dumps({"plot": str(args.out)}))


if __name__ == "__main__":
    main()
