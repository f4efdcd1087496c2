"""Peak memory of every method whose documented memory does not grow with the rows, on a memmap.

Usage::

    python benchmarks/bench_memory.py                 # 2e5 x 100 and 8e5 x 100 (a few minutes on 2 cores)
    python benchmarks/bench_memory.py --large         # adds 4e6 x 100 (a 3.2 GB file)
    python benchmarks/bench_memory.py --methods dp_spca,minibatch_oja --sizes 200000,800000

What it measures. The registry's ``memory`` entry states each method's working memory in the data's
dimensions. For every entry in which the number of rows (``n`` for the PCA and Fisher methods, whose
rows are samples; ``m`` for the low-rank methods, whose matrix is m x n) appears in no term but a plain
``O(n)`` (row indices, a class index per row), the script
writes a float64 ``np.memmap`` of each size in a temporary directory and runs the method on it in a
child process of its own (one per method and size), with epsilon = 1, delta = 1e-6, row_norm = 1, k = 5,
``random_state=0``.

The child imports the library, calls the method once on a small in-memory array (loading the compiled
kernels and the accountant's caches), opens the memmap, and waits. The parent then polls the child's
``/proc/<pid>/status`` every 2 ms while the call runs and reports:

* **anonymous peak**: the largest ``RssAnon`` seen during the call, minus its value before the call
  (memory the method allocated: copies, buffers, its state). This is what a memmap must not make grow
  with n;
* **resident peak**: ``VmHWM`` (reset before the call through ``/proc/self/clear_refs``) minus the
  resident set before the call. It also counts the file's pages the method has mapped in; those are
  backed by the file and reclaimable by the kernel under memory pressure, so a large figure here is a
  cost in page cache, not a risk of running out of memory;
* **file kept**: the file's pages still mapped by the child after the call (``RssFile`` after minus
  before): what a method leaves resident once it is done (a method that releases the pages of the rows
  it has read keeps none).

Each child runs with ``OPENBLAS_NUM_THREADS=1`` (timings robust to a busy machine; the memory is the
same).

Check. Between the two sizes the anonymous peak may grow by at most ``GROWTH_LIMIT`` (10 %) of the
growth of the data itself (``(n_2 - n_1) d 8`` bytes, i.e. 80 bytes per added row at d = 100) plus
``SLACK_MIB``: an O(n d) copy grows by 800 bytes a row, an O(n) index array (a secret permutation) by 8.
The table shows the growth per added row. Both sizes must hold more rows than the largest block a
method reads at a time (up to 2^24 values, 128 MB): below one block, the memory a method holds grows
with n until the block is full (e.g. ``dp_spca`` between 2e4 and 4e4 rows at d = 100). A method over
the limit is reported as ``FAIL`` and the script
exits with status 1.

Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

D, K, EPSILON, DELTA, SEED = 100, 5, 1.0, 1e-6, 0
SIZES = (200_000, 800_000)
LARGE = 4_000_000
GROWTH_LIMIT = 0.10  # of the data's own growth between the two sizes
SLACK_MIB = 16.0
POLL_SECONDS = 0.002
TIMEOUT = 300.0

#: The symbol for the number of rows in each task's memory entries.
ROW_SYMBOL = {"pca": "n", "gep": "n", "distributed": "n", "lowrank": "m"}


def sublinear_in_rows(method: Any) -> bool:
    """Whether the entry's ``memory`` grows with the rows by no more than an ``O(n)`` term (indices, a
    label per row: the task's row symbol appears in no other term)."""
    if not method.memory:
        return False
    symbol = ROW_SYMBOL[method.task]
    rest = method.memory.replace(f"O({symbol})", "")
    return re.search(rf"\b{symbol}\b", rest) is None


def selected_methods(names: list[str] | None = None) -> list[Any]:
    from dpspectral import get_method, methods

    if names:
        return [get_method(n) for n in names]
    return [m for m in methods() if sublinear_in_rows(m)]


# -- the data ----------------------------------------------------------------------------------


def write_memmap(path: Path, n: int, d: int, seed: int = 1) -> None:
    """A float64 file of n rows, written by blocks: a spiked Gaussian, rows clipped to norm 1, and
    two labels (the Fisher methods' classes: the sign of the first coordinate)."""
    rng = np.random.default_rng(seed)
    scale = np.r_[np.linspace(3.0, 1.5, K), np.full(d - K, 0.3)] / np.sqrt(d)
    X = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, d))
    step = 100_000
    for a in range(0, n, step):
        b = min(n, a + step)
        block = rng.standard_normal((b - a, d)) * scale
        X[a:b] = block / np.maximum(1.0, np.linalg.norm(block, axis=1, keepdims=True))
    X.flush()
    labels = np.empty(n, dtype=np.int8)
    for a in range(0, n, step):
        labels[a : a + step] = X[a : a + step, 0] > 0
    np.save(labels_path(path), labels)
    del X


def labels_path(path: Path | str) -> Path:
    return Path(str(path) + ".labels.npy")


# -- the child: one method on one memmap ----------------------------------------------------------


def _status_kib(field: str, pid: int | str = "self") -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def call(method: Any, X: Any, y: np.ndarray) -> Any:
    """``method`` on X with the benchmark's settings (a Fisher method gets the labels y)."""
    kwargs: dict[str, Any] = {"random_state": SEED}
    if method.private:
        kwargs["epsilon"] = EPSILON
    if method.private and method.needs_delta:
        kwargs["delta"] = DELTA
    if method.task != "lowrank" or "row_norm" in method.options:
        kwargs["row_norm"] = 1.0
    if "show_progress" in method.options:
        kwargs["show_progress"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.task == "gep":
            if method.sparse:
                kwargs["sparsity"] = max(1, int(X.shape[1]) // 10)
            return method.function(X, y, 1, **kwargs)
        return method.function(X, K, **kwargs)


def child(name: str, path: str, n: int, d: int) -> None:
    from dpspectral import get_method

    method = get_method(name)
    try:
        small = np.random.default_rng(2).standard_normal((4000, d)) / np.sqrt(d) / 2
        call(method, small, (small[:, 0] > 0).astype(np.int8))
    except Exception as exc:  # noqa: BLE001 - reported in the table
        print(json.dumps({"event": "ready", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}), flush=True)
        return
    X = np.memmap(path, dtype=np.float64, mode="r", shape=(n, d))
    y = np.load(labels_path(path))  # in memory before the call: one byte a row
    import gc

    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current resident set
    except OSError:
        pass
    before = {"anon_kib": _status_kib("RssAnon"), "rss_kib": _status_kib("VmRSS"),
              "file_kib": _status_kib("RssFile")}
    print(json.dumps({"event": "ready", **before}), flush=True)
    sys.stdin.readline()  # the parent's poller is running
    t0 = time.perf_counter()
    error = None
    try:
        call(method, X, y)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.perf_counter() - t0
    print(json.dumps({"event": "done", "seconds": seconds, "hwm_kib": _status_kib("VmHWM"),
                      "file_kib": _status_kib("RssFile"), "error": error}), flush=True)


# -- the parent ------------------------------------------------------------------------------------


def measure(name: str, path: Path, n: int, d: int, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Run ``name`` on the memmap at ``path`` in a child process; its memory during the call (MiB)."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OPENBLAS_NUM_THREADS"] = "1"  # timings robust to a busy machine (memory is the same)
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", name, str(path), str(n), str(d)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    out: dict[str, Any] = {"method": name, "rows": n, "cols": d}
    try:
        ready = json.loads(proc.stdout.readline() or "{}")
        if ready.get("event") != "ready":
            why = (proc.stderr.read() if proc.stderr else "")[-400:]
            raise RuntimeError(f"the child did not start: {why}")
        if ready.get("error"):
            out["error"] = ready["error"]
            return out
        peak = [ready["anon_kib"] or 0]
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                anon = _status_kib("RssAnon", proc.pid)
                if anon is not None:
                    peak[0] = max(peak[0], anon)
                time.sleep(POLL_SECONDS)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            line = proc.stdout.readline()
        finally:
            timer.cancel()
            stop.set()
            poller.join()
        if not line:
            out["error"] = f"timeout after {timeout:.0f} s" if proc.poll() is not None else "no result"
            return out
        done = json.loads(line)
        out.update(seconds=done["seconds"], error=done["error"],
                   anon_peak_mib=(peak[0] - (ready["anon_kib"] or 0)) / 1024.0,
                   rss_peak_mib=((done["hwm_kib"] or 0) - (ready["rss_kib"] or 0)) / 1024.0,
                   anon_before_mib=(ready["anon_kib"] or 0) / 1024.0,
                   file_kept_mib=((done["file_kib"] or 0) - (ready["file_kib"] or 0)) / 1024.0)
        return out
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def check(small: dict[str, Any], large: dict[str, Any]) -> tuple[str, float]:
    """(verdict, the anonymous peak's growth per added row, in bytes)."""
    if any(r.get("error") or "anon_peak_mib" not in r for r in (small, large)):
        return "error", float("nan")
    added = large["rows"] - small["rows"]
    growth = (large["anon_peak_mib"] - small["anon_peak_mib"]) * 2**20
    limit = GROWTH_LIMIT * added * large["cols"] * 8 + SLACK_MIB * 2**20
    return ("ok" if growth <= limit else "FAIL"), growth / added


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem = None
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem / 2**20:.0f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}" if mem else platform.platform())


def table(rows: list[dict[str, Any]], sizes: list[int]) -> str:
    lines = ["| method | memory (registry) | " + " | ".join(
        f"{n:,} x {D}: anon peak / resident peak / file kept (MiB) | time (s)" for n in sizes)
        + " | anon growth per added row (bytes) | check |",
        "|---|---|" + "---|---|" * len(sizes) + "---|---|"]
    by_method: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_method.setdefault(r["method"], {})[r["rows"]] = r
    from dpspectral import get_method

    for name, per in by_method.items():
        cells = []
        for n in sizes:
            r = per.get(n, {})
            if r.get("error") or "anon_peak_mib" not in r:
                cells += [r.get("error", "not run")[:60], ""]
            else:
                cells += [f"{r['anon_peak_mib']:.0f} / {r['rss_peak_mib']:.0f} / {r['file_kept_mib']:.0f}",
                          f"{r['seconds']:.1f}"]
        verdict, per_row = check(per.get(sizes[0], {}), per.get(sizes[1], {}))
        shown = "" if per_row != per_row else f"{per_row:.0f}"
        lines.append(f"| `{name}` | {get_method(name).memory} | " + " | ".join(cells)
                     + f" | {shown} | {verdict} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="row counts, comma-separated (the first two are checked)")
    parser.add_argument("--large", action="store_true", help=f"add {LARGE:,} rows (a 3.2 GB file)")
    parser.add_argument("--methods", default="", help="registry names, comma-separated (default: all "
                        "whose memory does not grow with the rows)")
    parser.add_argument("--dir", default=None, help="where to write the memmaps (default: a temporary "
                        "directory, removed afterwards)")
    parser.add_argument("--json", default=None, help="also write the measurements here")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per call")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    if args.large:
        sizes.append(LARGE)
    chosen = selected_methods([s for s in args.methods.split(",") if s] or None)
    print(f"# {machine()}\n# {' '.join([Path(sys.executable).name, *sys.argv])}", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in sizes:
            path = Path(tmp) / f"X_{n}x{D}.f64"
            write_memmap(path, n, D)
            for m in chosen:
                r = measure(m.name, path, n, D, args.timeout)
                rows.append(r)
                print(json.dumps(r), flush=True)
            path.unlink()
            labels_path(path).unlink()
    print()
    print(table(rows, sizes))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    fails = [m.name for m in chosen
             if check(*[next((r for r in rows if r["method"] == m.name and r["rows"] == n), {})
                        for n in sizes[:2]])[0] == "FAIL"]
    if fails:
        print(f"\nanonymous memory grows with the rows: {', '.join(fails)}")
    return 1 if fails else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
