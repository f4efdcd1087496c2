"""DPPCA's private covariance: speed on MNIST, bounded memory on a large memmap, utility on MNIST.

Usage (from the project root, after `make install-dev`):

    .venv/bin/python benchmarks/bench_covariance.py speed   [--data ../shared/data] [--repeats 5]
    .venv/bin/python benchmarks/bench_covariance.py memory  [--rows 10000000] [--cols 100] [--dir /tmp]
    .venv/bin/python benchmarks/bench_covariance.py utility [--data ../shared/data] [--repeats 5]
    .venv/bin/python benchmarks/bench_covariance.py after-blas [--data ../shared/data] [--repeats 7]

Each prints a JSON line with the measurements and the machine; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def machine() -> dict[str, object]:
    import sklearn

    info: dict[str, object] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def load_mnist_unit_rows(data: Path) -> tuple[np.ndarray, np.ndarray]:
    from dpspectral.datasets import load_idx

    X, y = load_idx(data / "mnist" / "train-images-idx3-ubyte.gz",
                    data / "mnist" / "train-labels-idx1-ubyte.gz")
    # Per-row scaling to unit norm (a per-record map, as in the papers).
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(X), y


def bench_speed(args: argparse.Namespace) -> dict[str, object]:
    """The default ``DPPCA`` (private centring, adaptive clipping) against the bare ``X^T X`` + top-k
    ``eigh`` and scikit-learn's covariance PCA, interleaved (each repeat runs the three in turn), so a
    load that changes during the run changes all three; the per-repeat ratios are reported."""
    import scipy.linalg
    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    from dpspectral import DPPCA

    X, _ = load_mnist_unit_rows(Path(args.data))
    k, d = 10, X.shape[1]

    def bare() -> None:
        scipy.linalg.eigh(X.T @ X, subset_by_index=[d - k, d - 1])

    def bare_serial_eigh() -> None:  # the same, the eigh on one BLAS thread (as DPPCA runs it)
        S = X.T @ X
        with threadpool_limits(1, user_api="blas"):
            scipy.linalg.eigh(S, subset_by_index=[d - k, d - 1])

    runs = {
        "bare": bare,
        "bare_serial_eigh": bare_serial_eigh,
        "sklearn": lambda: PCA(k, svd_solver="covariance_eigh").fit(X),
        "dppca": lambda: DPPCA(k, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X),
    }
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    loads = [os.getloadavg()[0]]
    for fn in runs.values():  # warm-up: imports, first-touch pages
        fn()
    for _ in range(args.repeats):
        for name, fn in runs.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
        loads.append(os.getloadavg()[0])
    med = statistics.median

    def ratios(a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(wall[a], wall[b], strict=True)]

    return {
        "benchmark": "speed_mnist_default_dppca",
        "shape": list(X.shape),
        "k": k,
        "repeats": args.repeats,
        "median_wall_s": {name: med(v) for name, v in wall.items()},
        "min_wall_s": {name: min(v) for name, v in wall.items()},
        "median_cpu_s": {name: med(v) for name, v in cpu.items()},
        "median_ratio_dppca_to_bare": med(ratios("dppca", "bare")),
        "median_ratio_dppca_to_sklearn": med(ratios("dppca", "sklearn")),
        "median_ratio_dppca_to_bare_serial_eigh": med(ratios("dppca", "bare_serial_eigh")),
        "ratios_dppca_to_bare": ratios("dppca", "bare"),
        "ratios_dppca_to_sklearn": ratios("dppca", "sklearn"),
        "load_avg_1min": loads,
        "machine": machine(),
    }


def bench_after_blas(args: argparse.Namespace) -> dict[str, object]:
    """The scatter of the rows centred and clipped (DPPCA's last pass over the data, on the process's
    cores, each thread on one BLAS thread) right after a matrix-vector product ``X @ mu`` on all of
    BLAS's threads, on one BLAS thread, or after a pause: a multi-threaded BLAS call leaves its threads
    spinning for a while after it returns, and threads that start then share the cores with them.
    Interleaved, on MNIST's rows scaled to unit norm, about a tenth of them within the clip."""
    from threadpoolctl import threadpool_limits

    from dpspectral._moments import accumulate, centred_norm_hint

    X, _ = load_mnist_unit_rows(Path(args.data))
    mu = X.mean(axis=0)
    hint = centred_norm_hint(X, np.sqrt(np.einsum("ij,ij->i", X, X)), mu)
    clip = float(np.quantile(np.sqrt(np.maximum(hint.approx, 0.0)), 0.1))

    def one_thread() -> None:
        with threadpool_limits(1, user_api="blas"):
            X @ mu

    before = {"all_blas_threads": lambda: X @ mu, "one_blas_thread": one_thread,
              "pause": lambda: time.sleep(0.3)}
    wall: dict[str, list[float]] = {name: [] for name in before}
    for _ in range(args.repeats):
        for name, first in before.items():
            first()
            t = time.perf_counter()
            accumulate(X, row_norm=clip, center=mu, want_sum=False, want_second=True, norm_hint=hint)
            wall[name].append(time.perf_counter() - t)
    med = statistics.median
    return {
        "benchmark": "scatter_after_blas_call",
        "shape": list(X.shape),
        "repeats": args.repeats,
        "median_wall_s": {name: med(v) for name, v in wall.items()},
        "machine": machine(),
    }


def _memory_child(path: str, rows: int, cols: int) -> None:
    """Runs in a fresh process: chunked DP covariance over the memmap, prints peak RSS."""
    from dpspectral import DPPCA

    X = np.memmap(path, dtype=np.float64, mode="r", shape=(rows, cols))
    t = time.perf_counter()
    est = DPPCA(10, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    seconds = time.perf_counter() - t
    # VmHWM (peak resident set of this process image; unlike ru_maxrss it is not inherited from
    # the parent across fork + exec).
    with open("/proc/self/status") as fh:
        peak_kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    print(json.dumps({"fit_s": seconds, "peak_rss_mib": peak_kib / 1024,
                      "components_shape": list(est.components_.shape)}))


def bench_memory(args: argparse.Namespace) -> dict[str, object]:
    rows, cols = args.rows, args.cols
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "big.f64")
        t = time.perf_counter()
        out = np.memmap(path, dtype=np.float64, mode="w+", shape=(rows, cols))
        rng = np.random.default_rng(0)
        block = 250_000
        scales = 1.0 / np.sqrt(np.arange(1, cols + 1))
        for a in range(0, rows, block):
            b = min(rows, a + block)
            chunk = rng.standard_normal((b - a, cols)) * scales
            chunk /= np.linalg.norm(chunk, axis=1, keepdims=True).clip(min=1.0)
            out[a:b] = chunk
        out.flush()
        del out
        write_s = time.perf_counter() - t
        proc = subprocess.run(
            [sys.executable, __file__, "_memory_child", path, str(rows), str(cols)],
            check=True, capture_output=True, text=True,
        )
        child = json.loads(proc.stdout.strip().splitlines()[-1])
        size_gb = os.path.getsize(path) / 1e9
    return {
        "benchmark": "memory_memmap_chunked_covariance",
        "shape": [rows, cols],
        "file_gb": size_gb,
        "write_s": write_s,
        **child,
        "machine": machine(),
    }


def bench_utility(args: argparse.Namespace) -> dict[str, object]:
    from dpspectral import DPPCA
    from dpspectral.metrics import captured_energy

    X, _ = load_mnist_unit_rows(Path(args.data))
    A = X.T @ X  # evaluation only (non-private reference)
    k = 10
    out: dict[str, object] = {"benchmark": "utility_mnist_analyze_gauss", "k": k, "delta": 1e-6,
                              "relation": "replace_one", "repeats": args.repeats}
    for eps in (0.1, 0.5, 1.0, 2.0):
        vals = []
        for r in range(args.repeats):
            est = DPPCA(k, epsilon=eps, delta=1e-6, row_norm=1.0, random_state=r).fit(X)
            vals.append(captured_energy(est.components_.T, A))
        out[f"captured_energy_eps_{eps}"] = {"mean": float(np.mean(vals)), "min": float(np.min(vals)),
                                             "max": float(np.max(vals))}
    out["machine"] = machine()
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_memory_child":
        _memory_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="which", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--repeats", type=int, default=5)
    p = sub.add_parser("memory")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--cols", type=int, default=100)
    p.add_argument("--dir", default=None)
    p = sub.add_parser("utility")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--repeats", type=int, default=5)
    p = sub.add_parser("after-blas")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    fn = {"speed": bench_speed, "memory": bench_memory, "utility": bench_utility,
          "after-blas": bench_after_blas}[args.which]
    print(json.dumps(fn(args), indent=2))


if __name__ == "__main__":
    main()
