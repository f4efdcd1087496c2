"""Streaming Oja / Private Oja / DP-PCA (paper 001) from disk, a rank-k study and their utility.

Throughput and memory (default mode):

    .venv/bin/python benchmarks/bench_oja.py [--rows 1000000] [--dim 100] [--dir DIR] [--repeats 3]
                                             [--block-rows 10000] [--cold] [--blas-threads N]
                                             [--methods oja,private_oja,dp_pca,minibatch_oja]
                                             [--ks 1,5] [--sources memmap,generator]
                                             [--src DIR] [--out results.json|.csv]

``--src DIR`` runs the measured processes against another copy of the package (``DIR/dpspectral``, e.g.
the previous version: ``git show HEAD:...`` or a copy made before a change), for a before/after
comparison in the same window. Besides wall time (``run_s``) every measurement records the process's
CPU time during the call (``cpu_s``, ``rows_per_cpu_s``), which other processes' load barely moves.

writes (once; reused when it exists in --dir) a rows x dim float64 .npy file of a spiked-covariance
Gaussian with rows clipped to norm <= 1, then measures ``oja``, ``private_oja`` and ``dp_pca`` (k = 1
and a k = 5 block iterate; epsilon = 1, delta = 1e-6, row_norm = 1) reading the file either as
``np.load(path, mmap_mode="r")`` or as a generator of row blocks read with ``np.fromfile``. Every
measurement runs in a fresh subprocess that

* imports numpy + dpspectral, then makes one warm-up call of the same function on a 2,000-row array
  (loads the numba kernel of ``_oja_kernels.py``, compiled with ``cache=True`` so only the first run
  on a machine compiles it; for ``dp_pca`` it fills the cache of the PLD calibration of the mean's
  noise, which depends only on epsilon, delta and d k). That one-off time is reported as ``warm_s``
  and is excluded from the throughput;
* times the call on the whole file (``run_s``; throughput = rows / run_s);
* reads its peak resident set ``VmHWM`` (/proc/self/status) after the warm-up (``setup_peak_mib``:
  imports, the numba kernel, dp_pca's calibration), resets it (``echo 5 > /proc/self/clear_refs``),
  reads ``VmRSS`` before the timed call and ``VmHWM`` after it (``run_peak_mib``: the peak during the
  streaming call; ``increment_mib`` = run_peak - RSS before). ``peak_rss_mib`` is the process's
  lifetime peak (the larger of the two). ``ru_maxrss`` is recorded too, but Linux carries it over
  from the parent across fork + exec, so it can show the parent's peak. A separate process that
  only imports numpy + dpspectral gives the baseline.

Each measurement records the machine's 1-minute load average when it started: on a small shared
machine another process's load slows everything, most of all with 2 OpenBLAS threads, whose busy-
waiting worker competes for the second core (``--blas-threads 1`` avoids that). Pages of the data
file stay in the OS page cache between runs (a "warm" disk) unless ``--cold``, which
evicts the file's pages (``posix_fadvise(DONTNEED)``) before each timed call.

Rank-k study (``--rank-study``): block vs deflation for ``oja``, ``private_oja`` and ``dp_pca`` on a
spiked Gaussian (d = 50, k = 5), n in {2e5, 1e6}, epsilon in {1, 4}, 3 seeds, a small grid of learning
rates (c1, c2) per method; metrics against the population covariance: captured-variance ratio
``tr(W^T S W) / (sum of the top-k eigenvalues of S)`` and the sine of the largest principal angle to
the true top-k subspace. Runs on 2 worker processes.

Utility (``--utility [--large] [--mnist] [--seeds 3]``): the defaults against the paper's
settings, Analyze Gauss, minibatch_oja and a random direction. Spiked set: d = 40, covariance
diag(17, 1, ..., 1) / (2.25 * 56), rows clipped to norm 1 (lambda1 / lambda2 ~ 17), k = 1, epsilon = 1,
delta = 1e-6; n = 2e4, 8e4, 3.2e5 (and 1.28e6 with ``--large``); sin of the angle to e_1, mean over
seeds; Private Oja's predicted rate ``sqrt(c1^2 alpha^2 (d - 1) / ((2 c1 gap - 1) n))`` next to it (gap of
the data, non-private, for the comparison only). ``--mnist``: MNIST train (unit rows), k = 10,
delta = 1e-6, captured energy over an epsilon grid and eps90 (the smallest epsilon capturing 90% of
the top-10 energy, interpolated in log epsilon) for dp_pca (default and paper) and Analyze Gauss.

``--quick`` shrinks both modes (2e5 rows, 1 repeat; study: n = 2e5 only, 2 seeds) for a smoke test.
Prints JSON; ``--out`` also writes it (``.json``) or a flat table (``.csv``). docs/benchmarks.md
records the results.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_covariance import machine  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
THROUGHPUT_TARGET = 1e6  # rows/s, k = 1
MEMORY_TARGET_MB = 200.0  # peak resident set, 10^6 bytes


# ---------------------------------------------------------------------------------------------
# data


def spiked_spectrum(d: int, k: int = 5) -> np.ndarray:
    """Eigenvalues: a decaying top-k spike (1, 0.9, ..., 0.6) over a geometric tail (0.02 x 0.9^i)."""
    top = np.linspace(1.0, 0.6, k)
    tail = 0.02 * 0.9 ** np.arange(d - k)
    return np.concatenate([top, tail])


def spiked_rows(rng: np.random.Generator, m: int, U: np.ndarray, lam: np.ndarray, scale: float) -> np.ndarray:
    """m rows of N(0, scale^2 U diag(lam) U^T), clipped to Euclidean norm <= 1."""
    X = (rng.standard_normal((m, lam.size)) * np.sqrt(lam)) @ U.T
    X *= scale
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X


def population(d: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(U, eigenvalues, row scale): a random eigenbasis; E||x||^2 = 1 / 1.5^2 before clipping."""
    U, _ = np.linalg.qr(np.random.default_rng(10_000 + seed).standard_normal((d, d)))
    lam = spiked_spectrum(d)
    return U, lam, 1.0 / (1.5 * np.sqrt(lam.sum()))


def write_data(path: Path, rows: int, dim: int, seed: int = 0) -> float:
    """Write the .npy file by blocks (never the whole array in memory); returns seconds."""
    t = time.perf_counter()
    U, lam, scale = population(dim, seed)
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp.npy")
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float64, shape=(rows, dim))
    for a in range(0, rows, 100_000):
        b = min(rows, a + 100_000)
        out[a:b] = spiked_rows(rng, b - a, U, lam, scale)
    out.flush()
    del out
    os.replace(tmp, path)
    return time.perf_counter() - t


def ensure_data(directory: Path, rows: int, dim: int) -> tuple[Path, float | None]:
    path = directory / f"oja_spiked_{rows}x{dim}.npy"
    if path.exists():
        X = np.load(path, mmap_mode="r")
        if X.shape == (rows, dim) and X.dtype == np.float64:
            return path, None
    return path, write_data(path, rows, dim)


def file_blocks(path: str, block_rows: int) -> Iterator[np.ndarray]:
    """The rows of a .npy file as fresh arrays of block_rows rows, read with np.fromfile (no mmap)."""
    with open(path, "rb") as fh:
        major, _ = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if major == 1
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(fh)
        assert not fortran and len(shape) == 2
        d = shape[1]
        while True:
            block = np.fromfile(fh, dtype=dtype, count=block_rows * d)
            if block.size == 0:
                return
            yield block.reshape(-1, d)


# ---------------------------------------------------------------------------------------------
# throughput / memory: one measurement per fresh process


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))


def _evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _call(method: str, X: Any, k: int, **kw: Any) -> Any:
    from dpspectral.pca._minibatch import minibatch_oja
    from dpspectral.pca._oja import dp_pca, oja, private_oja

    if method == "oja":
        return oja(X, k, random_state=0, **kw)
    if method == "minibatch_oja":
        return minibatch_oja(X, k, epsilon=EPSILON, delta=DELTA, row_norm=1.0, random_state=0, **kw)
    if method == "private_oja":
        return private_oja(X, k, epsilon=EPSILON, delta=DELTA, row_norm=1.0, random_state=0, **kw)
    return dp_pca(X, k, epsilon=EPSILON, delta=DELTA, row_norm=1.0, random_state=0, **kw)


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    t = time.perf_counter()
    import dpspectral  # noqa: F401
    import dpspectral.pca._oja  # noqa: F401

    out: dict[str, Any] = {"import_s": time.perf_counter() - t}
    if spec["method"] == "baseline":
        out["peak_rss_mib"] = _status_kib("VmHWM") / 1024
        return out
    warnings.simplefilter("ignore")  # dp_pca's AnalysisRangeWarning at epsilon >= 0.9
    method, k, dim = spec["method"], spec["k"], spec["dim"]
    tiny = np.random.default_rng(1).standard_normal((2000, dim)) / (2 * np.sqrt(dim))
    t = time.perf_counter()
    _call(method, tiny, k, **({"batch_size": 1000} if method == "dp_pca" else {}))
    out["warm_s"] = time.perf_counter() - t
    if spec["cold"]:
        _evict(spec["path"])
    if spec["source"] == "memmap":
        X: Any = np.load(spec["path"], mmap_mode="r")
        kw: dict[str, Any] = {}
    else:
        X = file_blocks(spec["path"], spec["block_rows"])
        kw = {"n_samples": spec["rows"]}  # public; sets dp_pca's batch size as for the memmap
    out["setup_peak_mib"] = _status_kib("VmHWM") / 1024  # imports + warm-up (+ calibration)
    try:  # reset the high-water mark, so that VmHWM below is the peak during the timed call
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        out["hwm_reset"] = True
    except OSError:
        out["hwm_reset"] = False
    out["rss_before_run_mib"] = _status_kib("VmRSS") / 1024
    t, cpu = time.perf_counter(), time.process_time()
    res = _call(method, X, k, **kw)
    out["run_s"] = time.perf_counter() - t
    out["cpu_s"] = time.process_time() - cpu  # CPU time of the process: robust to other processes' load
    out["run_peak_mib"] = _status_kib("VmHWM") / 1024
    out["peak_rss_mib"] = max(out["setup_peak_mib"], out["run_peak_mib"])  # of the whole process
    out["ru_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["rows_used"] = res.n_samples
    out["components_sum"] = float(np.abs(res.components).sum())  # memmap vs generator: same rows
    out["batch_size"] = res.diagnostics.get("batch_size")
    return out


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    if spec.get("src"):  # another copy of the package (e.g. the previous version, for a baseline)
        env["PYTHONPATH"] = os.pathsep.join([spec["src"], env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if spec.get("blas_threads"):
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(spec["blas_threads"])
    load = os.getloadavg()[0]  # other processes on the machine distort the timings: record them
    proc = subprocess.run([sys.executable, __file__, "_child", json.dumps(spec)], check=True,
                          capture_output=True, text=True, env=env)
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "loadavg_1min": load}


def bench_throughput(args: argparse.Namespace) -> dict[str, Any]:
    rows, dim = args.rows, args.dim
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(args.dir) if args.dir else Path(tmp)
        path, write_s = ensure_data(directory, rows, dim)
        base = {"path": str(path), "rows": rows, "dim": dim, "block_rows": args.block_rows,
                "cold": args.cold, "blas_threads": args.blas_threads, "src": args.src}
        # compile (or load) the numba kernel once, so that no measured process compiles it
        first = _run_child({**base, "method": "oja", "k": 1, "source": "memmap"})
        baseline = [_run_child({**base, "method": "baseline"}) for _ in range(args.repeats)]
        configs = [(m, k, s) for m in args.methods.split(",") for k in map(int, args.ks.split(","))
                   for s in args.sources.split(",")]
        runs: dict[tuple[str, int, str], list[dict[str, Any]]] = {c: [] for c in configs}
        for _ in range(args.repeats):  # interleaved repeats
            for m, k, s in configs:
                r = _run_child({**base, "method": m, "k": k, "source": s})
                runs[(m, k, s)].append(r)
                print(json.dumps({"method": m, "k": k, "source": s, **r}), file=sys.stderr, flush=True)
    base_mib = float(np.median([b["peak_rss_mib"] for b in baseline]))
    table = []
    for (m, k, s), rs in runs.items():
        run_s = float(np.median([r["run_s"] for r in rs]))
        peak = float(max(r["peak_rss_mib"] for r in rs))
        run_peak = float(max(r["run_peak_mib"] for r in rs))
        before = float(min(r["rss_before_run_mib"] for r in rs))
        row = {
            "method": m, "k": k, "source": s, "run_s": run_s,
            "run_s_min": float(min(r["run_s"] for r in rs)), "run_s_max": float(max(r["run_s"] for r in rs)),
            "rows_per_s": rows / run_s, "warm_s": float(np.median([r["warm_s"] for r in rs])),
            "cpu_s": float(np.median([r["cpu_s"] for r in rs])),
            "rows_per_cpu_s": rows / float(np.median([r["cpu_s"] for r in rs])),
            "peak_rss_mib": peak, "setup_peak_mib": float(max(r["setup_peak_mib"] for r in rs)),
            "rss_before_run_mib": before, "run_peak_mib": run_peak, "increment_mib": run_peak - before,
            "peak_over_baseline_mib": peak - base_mib, "hwm_reset": all(r["hwm_reset"] for r in rs),
            "loadavg_1min_max": float(max(r["loadavg_1min"] for r in rs)),
            "batch_size": rs[0]["batch_size"], "components_sum": rs[0]["components_sum"],
            "meets_memory_target": peak * 1.048576 < MEMORY_TARGET_MB,
            "increment_meets_memory_target": (run_peak - before) * 1.048576 < MEMORY_TARGET_MB,
        }
        if k == 1:
            row["meets_throughput_target"] = rows / run_s >= THROUGHPUT_TARGET
        table.append(row)
    for row in table:  # the same rows in the same order must give the same result
        other = next(r for r in table if r["method"] == row["method"] and r["k"] == row["k"])
        row["same_result_as_memmap"] = row["components_sum"] == other["components_sum"]
    return {
        "benchmark": "oja_streaming_throughput_memory",
        "shape": [rows, dim], "file_gb": rows * dim * 8 / 1e9, "write_s": write_s,
        "epsilon": EPSILON, "delta": DELTA, "row_norm": 1.0, "block_rows": args.block_rows,
        "cold_page_cache": args.cold, "repeats": args.repeats, "blas_threads": args.blas_threads,
        "package": args.src or "installed",
        "first_process_warm_s": first["warm_s"],
        "baseline_import_rss_mib": base_mib,
        "targets": {"rows_per_s_k1": THROUGHPUT_TARGET, "peak_rss_mb": MEMORY_TARGET_MB},
        "runs": table, "machine": machine(),
    }


# ---------------------------------------------------------------------------------------------
# rank-k study

STUDY_D, STUDY_K, STUDY_DELTA = 50, 5, 1e-6
# (c1, c2) per method: the library default first, then the alternatives tried
LEARNING_RATES: dict[str, list[tuple[float, float]]] = {
    "oja": [(10.0, 10.0), (3.0, 10.0), (30.0, 10.0), (100.0, 10.0)],
    "private_oja": [(10.0, 10.0), (1.0, 10.0), (3.0, 10.0), (30.0, 10.0), (100.0, 10.0)],
    "dp_pca": [(100.0, 1.0), (3.0, 1.0), (10.0, 1.0), (30.0, 1.0), (300.0, 1.0)],
}


@lru_cache(maxsize=1)
def _study_data(seed: int, n: int) -> np.ndarray:
    U, lam, scale = population(STUDY_D, seed)
    return spiked_rows(np.random.default_rng(seed), n, U, lam, scale)


def _study_task(task: tuple[str, str, float, float, float | None, int, int, int]) -> dict[str, Any]:
    from dpspectral.metrics import captured_energy, max_sin_theta, projection_distance

    method, rank_method, c1, c2, eps, n, seed, n_max = task
    warnings.simplefilter("ignore")
    X = _study_data(seed, n_max)[:n]
    U, lam, scale = population(STUDY_D, seed)
    S = (U * (lam * scale**2)) @ U.T  # population second moment (before clipping: same eigenvectors)
    from dpspectral.pca._oja import dp_pca, oja, private_oja

    kw: dict[str, Any] = {"c1": c1, "c2": c2, "rank_method": rank_method, "random_state": seed}
    t = time.perf_counter()
    if method == "oja":
        res = oja(X, STUDY_K, **kw)
    elif method == "private_oja":
        res = private_oja(X, STUDY_K, epsilon=eps, delta=STUDY_DELTA, row_norm=1.0, **kw)
    else:
        res = dp_pca(X, STUDY_K, epsilon=eps, delta=STUDY_DELTA, row_norm=1.0, **kw)
    W = res.components
    top = U[:, :STUDY_K]
    return {
        "method": method, "rank_method": rank_method, "c1": c1, "c2": c2, "epsilon": eps, "n": n,
        "seed": seed, "seconds": time.perf_counter() - t,
        "captured": captured_energy(W, S),
        "max_sin_theta": max_sin_theta(W, top),
        "projection_distance": projection_distance(W, top),
        "skipped_steps": res.diagnostics.get("skipped_steps"),
    }


def rank_study(args: argparse.Namespace) -> dict[str, Any]:
    ns = [200_000] if args.quick else [200_000, 1_000_000]
    seeds = [0, 1] if args.quick else [0, 1, 2]
    epsilons = [1.0, 4.0]
    n_max = max(ns)
    tasks = []
    for seed in seeds:  # grouped by seed: each worker keeps one data set at a time
        for n in ns:
            for method, grid in LEARNING_RATES.items():
                for rank_method in ("block", "deflation"):
                    for c1, c2 in grid:
                        for eps in ([None] if method == "oja" else epsilons):
                            tasks.append((method, rank_method, c1, c2, eps, n, seed, n_max))
    # the expensive runs first, so the two workers finish together
    tasks.sort(key=lambda t: (t[6], -t[5]))
    t0 = time.perf_counter()
    env_threads = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # one BLAS thread per (spawned) worker process
    try:
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=get_context("spawn")) as pool:
            results = list(pool.map(_study_task, tasks))
    finally:
        if env_threads is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = env_threads
    wall = time.perf_counter() - t0
    summary = []
    keys = sorted({(r["method"], r["rank_method"], r["epsilon"] or 0.0, r["n"], r["c1"], r["c2"])
                   for r in results})
    for method, rank_method, eps, n, c1, c2 in keys:
        rs = [r for r in results if (r["method"], r["rank_method"], r["epsilon"] or 0.0, r["n"], r["c1"],
                                     r["c2"]) == (method, rank_method, eps, n, c1, c2)]
        cap = np.array([r["captured"] for r in rs])
        sin = np.array([r["max_sin_theta"] for r in rs])
        summary.append({
            "method": method, "rank_method": rank_method, "epsilon": eps or None, "n": n, "c1": c1, "c2": c2,
            "captured_mean": float(cap.mean()), "captured_min": float(cap.min()),
            "captured_max": float(cap.max()), "max_sin_theta_mean": float(sin.mean()),
            "seconds_mean": float(np.mean([r["seconds"] for r in rs])), "seeds": len(rs),
        })
    best = []
    for key in sorted({(s["method"], s["rank_method"], s["epsilon"] or 0.0, s["n"]) for s in summary}):
        cands = [s for s in summary if (s["method"], s["rank_method"], s["epsilon"] or 0.0, s["n"]) == key]
        best.append(max(cands, key=lambda s: s["captured_mean"]))
    return {
        "benchmark": "oja_rank_method_study", "d": STUDY_D, "k": STUDY_K, "delta": STUDY_DELTA,
        "spectrum": spiked_spectrum(STUDY_D).tolist(), "ns": ns, "seeds": seeds, "epsilons": epsilons,
        "learning_rates": {m: [list(p) for p in g] for m, g in LEARNING_RATES.items()},
        "wall_s": wall, "best": best, "summary": summary, "runs": results, "machine": machine(),
    }


# ---------------------------------------------------------------------------------------------


def _write(out: dict[str, Any], path: str) -> None:
    if path.endswith(".csv"):
        table = out.get("runs", []) if out["benchmark"].endswith("memory") else out["summary"]
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    else:
        with open(path, "w") as fh:
            json.dump(out, fh, indent=2)


def _spiked_unit(n: int, seed: int, d: int = 40) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    lam = np.ones(d)
    lam[0] = 17.0
    X = rng.standard_normal((n, d)) * np.sqrt(lam) / (1.5 * np.sqrt(lam.sum()))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def _sin_e1(W: Any) -> float:
    import numpy as np

    w = W[:, 0] / np.linalg.norm(W[:, 0])
    return float(np.sqrt(max(0.0, 1.0 - w[0] ** 2)))


def _utility_methods() -> dict[str, Any]:
    from dpspectral.pca import analyze_gauss
    from dpspectral.pca._minibatch import minibatch_oja
    from dpspectral.pca._oja import dp_pca, private_oja

    return {
        "dp_pca (default)": lambda X, k, e, s: dp_pca(X, k, epsilon=e, delta=1e-6, row_norm=1.0,
                                                      random_state=s),
        "dp_pca (paper: schedule='paper')": lambda X, k, e, s: dp_pca(
            X, k, epsilon=e, delta=1e-6, row_norm=1.0, schedule="paper", random_state=s),
        "private_oja (default)": lambda X, k, e, s: private_oja(X, k, epsilon=e, delta=1e-6, row_norm=1.0,
                                                                random_state=s),
        "minibatch_oja": lambda X, k, e, s: minibatch_oja(X, k, epsilon=e, delta=1e-6, row_norm=1.0,
                                                          random_state=s),
        "analyze_gauss": lambda X, k, e, s: analyze_gauss(X, k, epsilon=e, delta=1e-6, row_norm=1.0,
                                                          random_state=s),
    }


def utility_spiked(ns: list[int], seeds: int) -> list[dict[str, Any]]:
    """Mean sin theta per method and n (spiked set, k = 1, epsilon = 1), with private Oja's prediction."""
    import numpy as np

    from dpspectral.privacy import analytic_noise_multiplier

    alpha = analytic_noise_multiplier(1.0, 1e-6)
    rows = []
    for n in ns:
        cells: dict[str, list[float]] = {}
        gaps = []
        for s in range(seeds):
            X = _spiked_unit(n, 1000 + s)
            ev = np.linalg.eigvalsh(X.T @ X / n)
            gaps.append(float(ev[-1] - ev[-2]))
            for name, fn in _utility_methods().items():
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        cells.setdefault(name, []).append(_sin_e1(fn(X, 1, 1.0, s).components))
                    except ValueError as exc:
                        cells.setdefault(name, []).append(float("nan"))
                        print(f"{name} n={n}: {exc}", file=sys.stderr)
                cells.setdefault(name + " seconds", []).append(time.perf_counter() - t)
            cells.setdefault("random", []).append(_sin_e1(np.random.default_rng(s).standard_normal((40, 1))))
        gap = float(np.mean(gaps))
        row = {"n": n, **{k: float(np.mean(v)) for k, v in cells.items()},
               "private_oja predicted": math.sqrt(100 * alpha**2 * 39 / ((20 * gap - 1) * n))}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _eps90(grid: list[float], captured: list[float]) -> float:
    """The smallest epsilon with captured >= 0.9, interpolated in log epsilon (inf if not reached)."""
    for i, c in enumerate(captured):
        if c >= 0.9:
            if i == 0:
                return grid[0]
            a, b = math.log(grid[i - 1]), math.log(grid[i])
            f = (0.9 - captured[i - 1]) / (c - captured[i - 1])
            return math.exp(a + f * (b - a))
    return math.inf


def utility_mnist(seeds: int) -> dict[str, Any]:
    """Captured energy of dp_pca (default, paper) and Analyze Gauss on MNIST, k = 10, and eps90."""
    import numpy as np

    from dpspectral_reproduce.chen2025 import load_chen_dataset

    X = np.asarray(load_chen_dataset("mnist", "/work/shared/data").X_train, dtype=float)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    S = X.T @ X
    best = float(np.linalg.eigvalsh(S)[-10:].sum())
    grids = {"analyze_gauss": [0.05, 0.1, 0.15, 0.2, 0.25, 0.5],
             "dp_pca (default)": [0.1, 0.25, 0.35, 0.5, 0.75, 1.0, 2.0],
             "dp_pca (paper: schedule='paper')": [1.0, 2.0, 4.0]}
    methods = _utility_methods()
    out: dict[str, Any] = {}
    for name, grid in grids.items():
        caps = []
        for e in grid:
            vals = []
            for s in range(seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    V = methods[name](X, 10, e, s).components
                vals.append(float(np.trace(V.T @ S @ V)) / best)
            caps.append(float(np.mean(vals)))
            print(json.dumps({"method": name, "epsilon": e, "captured": caps[-1]}), flush=True)
        out[name] = {"grid": grid, "captured": caps, "eps90": _eps90(grid, caps)}
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((X.shape[1], 10)))[0]
    out["random"] = float(np.trace(Q.T @ S @ Q)) / best
    print(json.dumps({k: v["eps90"] for k, v in out.items() if isinstance(v, dict)}), flush=True)
    return out


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_child":
        print(json.dumps(_child(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--rows", type=int, default=None, help="default 1000000 (200000 with --quick)")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--dir", default=None, help="where the data file is written / reused "
                        "(default: a temporary directory, removed at the end)")
    parser.add_argument("--block-rows", type=int, default=10_000, help="rows per generator block")
    parser.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    parser.add_argument("--cold", action="store_true", help="evict the file from the page cache first")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="OPENBLAS/OMP/MKL_NUM_THREADS of the measured processes (default: unset)")
    parser.add_argument("--methods", default="oja,private_oja,dp_pca",
                        help="comma-separated, of oja, private_oja, dp_pca, minibatch_oja")
    parser.add_argument("--ks", default="1,5", help="comma-separated ranks k")
    parser.add_argument("--sources", default="memmap,generator", help="memmap and/or generator")
    parser.add_argument("--src", default=None, help="a directory holding another copy of the package "
                        "(dpspectral/), imported by the measured processes instead of the installed "
                        "one: the baseline of a before/after comparison")
    parser.add_argument("--rank-study", action="store_true")
    parser.add_argument("--workers", type=int, default=2, help="processes for --rank-study")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None, help="write the results (.json or .csv)")
    parser.add_argument("--utility", action="store_true",
                        help="utility tables: the defaults against the paper's settings")
    parser.add_argument("--large", action="store_true", help="--utility: also n = 1.28e6")
    parser.add_argument("--mnist", action="store_true", help="--utility: also MNIST, k = 10")
    parser.add_argument("--seeds", type=int, default=3, help="--utility: seeds per cell")
    args = parser.parse_args()
    if args.utility:
        ns = [20_000, 80_000, 320_000] + ([1_280_000] if args.large else [])
        result: dict[str, Any] = {"spiked": utility_spiked(ns, args.seeds)}
        if args.mnist:
            result["mnist"] = utility_mnist(max(1, args.seeds - 1))
        print(json.dumps(result, indent=2))
        return
    if args.rows is None:
        args.rows = 200_000 if args.quick else 1_000_000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    out = rank_study(args) if args.rank_study else bench_throughput(args)
    if args.out:
        _write(out, args.out)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
