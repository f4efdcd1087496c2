"""Turnstile Private-Frobenius-LRF (``lowrank.streaming.TurnstileLRF``): update throughput and memory.

    .venv/bin/python benchmarks/bench_turnstile.py [--shape 10000 1000] [--rank 10] [--alpha 0.25]
                                                   [--stream 20000000] [--repeats 3] [--threads 1]
                                                   [--out results.json]

A 10^4 x 10^3 matrix (kept as its 10^3 x 10^4 transpose internally), rank 10, alpha 0.25 (default sketch sizes
t = 40, v = 160), epsilon = 1, delta = 1e-6. Measures, in one process pinned to ``--threads`` BLAS threads
(the entry updates themselves are one sequential compiled loop):

* ``update_many`` throughput on batches of 10^5 and 10^6 uniformly random entries (indices and N(0, 1)
  values generated before the clock starts; median over ``--repeats`` batches), and the rate of single
  ``update`` calls (Python call overhead);
* the peak resident set ``VmHWM`` (/proc/self/status) during a long stream (``--stream`` updates in
  batches of 10^6, each batch generated just before it is applied): VmHWM is reset
  (``echo 5 > /proc/self/clear_refs``) once the state exists and the kernel is compiled, then read after
  1, 2, 5, 10, ... batches; it must stay flat: the state is O(m t + n v), whatever the stream length;
* ``release`` time (median over ``--repeats``), and ``save`` / ``load`` time and file size.

The first call of the compiled update loop compiles it (numba, ``cache=True``: only the first run on a
machine pays); that one-off is reported as ``warmup_s``. The 1-minute load average is recorded at the start
and the end (a second process on a 2-core machine slows everything). Prints a Markdown table and JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

if "--threads" in sys.argv:
    _threads = sys.argv[sys.argv.index("--threads") + 1]
else:
    _threads = "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)

import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_covariance import machine  # noqa: E402

from dpspectral.lowrank._streaming import TurnstileLRF  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
TARGET = 1e6  # entry updates per second, one core


def proc_status(field: str) -> float:
    """A ``Vm*`` field of /proc/self/status in MiB (NaN where there is no /proc)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def load_avg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def batch(rng: np.random.Generator, size: int, shape: tuple[int, int]
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rng.integers(0, shape[0], size), rng.integers(0, shape[1], size), rng.standard_normal(size)


def run(shape: tuple[int, int], rank: int, alpha: float, stream: int, repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"machine": machine(), "shape": list(shape), "rank": rank, "alpha": alpha,
                           "threads": _threads, "load_start": load_avg()}
    rss0 = proc_status("VmRSS")
    t0 = time.perf_counter()
    st = TurnstileLRF(shape, rank, epsilon=EPSILON, delta=DELTA, alpha=alpha, random_state=1)
    out["init_s"] = time.perf_counter() - t0
    out["t"], out["v"], out["transposed"] = st.sizes.t, st.sizes.v, st.transposed
    state_bytes = st._Y.nbytes + st._ZT.nbytes + st._Phi.nbytes + st._S.nbytes  # no publication
    out["state_mib"] = state_bytes / 2**20
    t0 = time.perf_counter()
    st.update_many(*batch(rng, 1000, shape))  # compiles (or loads) the update loop
    out["warmup_s"] = time.perf_counter() - t0

    for size in (10**5, 10**6):
        rates = []
        for _ in range(repeats):
            rows, cols, vals = batch(rng, size, shape)
            t0 = time.perf_counter()
            st.update_many(rows, cols, vals)
            rates.append(size / (time.perf_counter() - t0))
        out[f"updates_per_s_{size}"] = float(np.median(rates))

    rows, cols, vals = batch(rng, 20_000, shape)
    items = list(zip(rows.tolist(), cols.tolist(), vals.tolist(), strict=True))
    t0 = time.perf_counter()
    for i, j, d in items:
        st.update(i, j, d)
    out["single_updates_per_s"] = len(items) / (time.perf_counter() - t0)

    # long stream: peak memory must not grow with the number of updates
    del rows, cols, vals, items
    peak_ok = reset_peak()
    out["rss_before_stream_mib"] = proc_status("VmRSS")
    n_batches = max(1, stream // 10**6)
    marks = {1, 2, 5, 10, 20, 50, 100, n_batches}
    peaks: dict[int, float] = {}
    busy = 0.0
    t_stream = time.perf_counter()
    for b in range(1, n_batches + 1):
        rows, cols, vals = batch(rng, 10**6, shape)
        t0 = time.perf_counter()
        st.update_many(rows, cols, vals)
        busy += time.perf_counter() - t0
        del rows, cols, vals
        if b in marks:
            peaks[b * 10**6] = proc_status("VmHWM")
    out["stream_updates"] = n_batches * 10**6
    out["stream_wall_s"] = time.perf_counter() - t_stream
    out["stream_updates_per_s"] = out["stream_updates"] / busy
    out["peak_reset"] = peak_ok
    out["vmhwm_mib_after"] = peaks
    out["rss_baseline_mib"] = rss0

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = st.release()
        times.append(time.perf_counter() - t0)
    out["release_s"] = float(np.median(times))
    out["release_rank"] = res.rank
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.npz"
        t0 = time.perf_counter()
        st.save(path)
        out["save_s"] = time.perf_counter() - t0
        out["file_mib"] = path.stat().st_size / 2**20
        t0 = time.perf_counter()
        back = TurnstileLRF.load(path, expect=st)
        out["load_s"] = time.perf_counter() - t0
        assert np.array_equal(back._Y, st._Y) and np.array_equal(back._ZT, st._ZT)
    # counted here: the state keeps no count of its updates (a data-derived number)
    out["n_updates"] = 1000 + repeats * (10**5 + 10**6) + 20_000 + n_batches * 10**6
    out["peak_rss_mib"] = proc_status("VmHWM")
    out["load_end"] = load_avg()
    return out


def table(r: dict[str, Any]) -> str:
    m, n = r["shape"]
    lines = [
        f"TurnstileLRF, {m} x {n}, rank {r['rank']}, alpha {r['alpha']} (t = {r['t']}, v = {r['v']}, "
        f"transposed = {r['transposed']}), {r['threads']} BLAS thread(s); "
        f"load average {r['load_start']:.2f} -> {r['load_end']:.2f}",
        "",
        "| measure | value |",
        "|---|---|",
        f"| init (noise, sketches) | {r['init_s']:.3f} s |",
        f"| warm-up (first batch, kernel compile/load) | {r['warmup_s']:.3f} s |",
        f"| update_many, batches of 1e5 | {r['updates_per_s_100000'] / 1e6:.2f} M updates/s |",
        f"| update_many, batches of 1e6 | {r['updates_per_s_1000000'] / 1e6:.2f} M updates/s |",
        f"| update (single calls) | {r['single_updates_per_s'] / 1e3:.1f} k updates/s |",
        f"| long stream, {r['stream_updates']:.2g} updates in 1e6 batches | "
        f"{r['stream_updates_per_s'] / 1e6:.2f} M updates/s "
        f"(wall {r['stream_wall_s']:.1f} s incl. generation) |",
        f"| state (Y_c, Z, Phi, S) | {r['state_mib']:.1f} MiB |",
        f"| RSS after imports / before the stream | {r['rss_baseline_mib']:.0f} / "
        f"{r['rss_before_stream_mib']:.0f} MiB |",
    ]
    for count, peak in r["vmhwm_mib_after"].items():
        lines.append(f"| VmHWM after {int(count):.2e} stream updates | {peak:.0f} MiB |")
    lines += [
        f"| release (rank {r['release_rank']}) | {r['release_s'] * 1e3:.1f} ms |",
        f"| save / load ({r['file_mib']:.1f} MiB file) | "
        f"{r['save_s'] * 1e3:.0f} / {r['load_s'] * 1e3:.0f} ms |",
        f"| total updates applied | {r['n_updates']:,} |",
    ]
    ok = r["updates_per_s_1000000"] >= TARGET and r["updates_per_s_100000"] >= TARGET
    lines.append("")
    lines.append(f"Target >= {TARGET:.0e} updates/s on one core: {'met' if ok else 'NOT met'}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=2, default=(10_000, 1_000))
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.25)
    p.add_argument("--stream", type=int, default=20_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", default="1")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    r = run(tuple(args.shape), args.rank, args.alpha, args.stream, args.repeats)
    print(table(r))
    print(json.dumps(r, indent=1, default=str))
    if args.out:
        args.out.write_text(json.dumps(r, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
