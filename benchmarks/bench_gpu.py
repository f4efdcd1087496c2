"""DPPCA on a GPU next to the device limit (bare ``X^T X`` + ``eigh``) and scikit-learn.

Usage (from the project root; a machine with a CUDA GPU and PyTorch built for it):

    .venv/bin/python benchmarks/bench_gpu.py --out /tmp/bench_gpu.md [--json /tmp/bench_gpu.jsonl]
        [--device cuda] [--dtypes float32 float64] [--repeats 3] [--data ../shared/data]
        [--budget-s 420] [--no-cpu] [--quick]

Cases (each in float32 and float64): MNIST train (60,000 x 784, unit rows; skipped when the IDX files
are not under ``--data``/mnist), synthetic 1e6 x 100, 1e7 x 100 and 2e6 x 1000 generated on the device
(rows scaled into the unit ball, a public bound ``row_norm = 1``), and 1e7 x 100 streamed from a host
``np.memmap`` through the device in blocks (``device=``: out-of-core; also used for a resident case that
does not fit in the device's free memory). For each case and dtype, the median of ``--repeats`` timed
runs after one untimed warm-up, with ``torch.cuda.synchronize()`` before and after each:

* ``dppca``: ``DPPCA(10, epsilon=1, delta=1e-6, row_norm=1, random_state=0)`` with the default method
  (Analyze Gauss with the adaptive clip: a validation pass, the norm histogram, the scatter), on the
  device (``dpspectral.config_context(array_api_dispatch=True)``; a streamed case: ``device=``);
* ``limit``: the bare device ``X^T X`` + ``torch.linalg.eigh`` (one read, no clipping, no noise);
* ``sklearn``: ``sklearn.decomposition.PCA(10)`` on the same device with
  ``sklearn.config_context(array_api_dispatch=True)`` (``SCIPY_ARRAY_API=1`` is set before SciPy is
  imported); a ``skipped`` line with the reason where scikit-learn cannot;
* ``cpu_dppca`` (2e6 x 1000 float64 only, 2e4 x 300 with ``--quick``; one run, not with ``--no-cpu``):
  the NumPy DPPCA fit on this machine's cores, for the "20x the CPU" target;
* ``host_to_device`` (MNIST): the copy of the host array to the device;
* ``dppca_float_noise``: the same fit with the device's own floating-point noise
  (``config_context(noise="float")``), next to the default's exact noise, which is drawn on the host
  (the released statistic copied there and back): ``exact_noise_cost_s`` and ``exact_noise_share`` say
  what drawing the exact noise on the host costs on this device, the measurement that decides whether
  an exact sampler in the device's namespace is worth having;
* ``dppca_secure``: the same fit with ``random_state="secure"`` (OS entropy, the host's exact samplers,
  the released statistic copied there and back).

Each line also has ``energy_ratio``: the energy of X^T X captured by DPPCA's 10 components over the
top-10 eigenvalues' sum (a check that the private result is not random). Prints one JSON line per
measurement and writes a markdown table (``--out``) with the device's name. ``--quick``: small sizes
(MNIST's first 5,000 rows, 2e4 x 100, 1e5 x 100 streamed, 2e4 x 300), runs on PyTorch's CPU device when
no GPU is present (a test of the script, not a measurement). ``--budget-s``: cases not started by then
are skipped (a line says so), so that the whole run stays within its time slot.
"""

from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's array API dispatch needs it before SciPy

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

K, EPS, DELTA = 10, 1.0, 1e-6
FULL_CASES = [("mnist", 0, 784), ("synthetic", 1_000_000, 100), ("synthetic", 10_000_000, 100),
              ("synthetic", 2_000_000, 1000), ("memmap", 10_000_000, 100)]
QUICK_CASES = [("mnist", 5_000, 784), ("synthetic", 20_000, 100), ("memmap", 100_000, 100),
               ("synthetic", 20_000, 300)]
#: (n, d) of the NumPy CPU comparison (float64, one run): full, --quick
CPU_CASE = {False: (2_000_000, 1000), True: (20_000, 300)}


def _sync(device: Any) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _timed(fn: Callable[[], Any], repeats: int, device: Any) -> tuple[float, list[float], Any]:
    """Median of ``repeats`` runs after one warm-up, synchronised; and the last run's value."""
    out = fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        t = time.perf_counter()
        out = fn()
        _sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, out


def _device_rows(n: int, d: int, dtype: Any, device: Any, seed: int = 0) -> Any:
    """Synthetic rows on the device, a decaying spectrum, scaled into the unit ball (chunked)."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    X = torch.empty((n, d), dtype=dtype, device=device)
    scale = torch.linspace(1.0, 0.1, d, dtype=dtype, device=device)
    rows = max(1, (1 << 26) // d)
    top = torch.zeros((), dtype=dtype, device=device)
    for a in range(0, n, rows):
        part = torch.randn((min(n, a + rows) - a, d), generator=gen, dtype=dtype, device=device) * scale
        X[a:a + part.shape[0]] = part
        top = torch.maximum(top, torch.linalg.vector_norm(part, dim=1).max())
    X /= top * (1 + 1e-6)
    return X


def _memmap_rows(n: int, d: int, dtype: Any, folder: str, seed: int = 0) -> np.memmap:
    """Synthetic rows in a host memmap (written in blocks), scaled into the unit ball."""
    path = Path(folder) / f"rows_{n}x{d}_{np.dtype(dtype).name}.dat"
    rng = np.random.default_rng(seed)
    scale = np.linspace(1.0, 0.1, d).astype(dtype)
    mm = np.memmap(path, dtype=dtype, mode="w+", shape=(n, d))
    rows = max(1, (1 << 24) // d)
    bound = 8.0 * float(np.linalg.norm(scale))  # entries clipped to [-8, 8]: norms within the bound
    for a in range(0, n, rows):
        part = rng.standard_normal((min(n, a + rows) - a, d), dtype=np.float32).astype(dtype) * scale
        mm[a:a + part.shape[0]] = np.clip(part, -8.0, 8.0) / bound
    mm.flush()
    del mm
    return np.memmap(path, dtype=dtype, mode="r", shape=(n, d))


def _limit(X: Any, device: Any, dtype: Any) -> tuple[Any, Any]:
    """The bare device ``X^T X`` (blocks copied over for a host memmap) and its ``eigh``."""
    import torch

    if isinstance(X, np.ndarray):
        d = X.shape[1]
        S = torch.zeros((d, d), dtype=dtype, device=device)
        rows = max(1, (1 << 24) // d)
        for a in range(0, X.shape[0], rows):
            B = torch.as_tensor(np.ascontiguousarray(X[a:a + rows]), device=device)
            S += B.T @ B
    else:
        S = X.T @ X
    return S, torch.linalg.eigh(S)


def _energy_ratio(components: Any, S: Any, eigenvalues: Any) -> float:
    """trace(V^T S V) / (sum of the top-k eigenvalues), V the fitted components (k x d)."""
    import torch

    V = torch.as_tensor(components, device=S.device, dtype=S.dtype)
    captured = float(torch.sum((V @ S) * V))
    return captured / float(torch.sum(eigenvalues[-K:]))


def _sklearn_fit(X: Any) -> Callable[[], Any] | str:
    """A callable fitting scikit-learn's PCA on the device, or why it cannot."""
    try:
        import sklearn
        from sklearn.decomposition import PCA
    except ImportError as exc:
        return f"scikit-learn not importable: {exc}"
    if isinstance(X, np.ndarray):
        return "no out-of-core device path in scikit-learn (IncrementalPCA runs on the host)"

    def fit() -> Any:
        with sklearn.config_context(array_api_dispatch=True):
            return PCA(n_components=K).fit(X)

    try:
        fit()
    except Exception as exc:  # noqa: BLE001 - any refusal is reported, the run goes on
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return fit


def _case_data(case: str, n: int, d: int, dtype_name: str, device: Any, args: Any,
               tmp: str) -> tuple[Any, dict[str, Any]] | str:
    """The case's data (a device tensor, or a host memmap to stream) and facts, or why it is skipped."""
    import torch

    dtype = getattr(torch, dtype_name)
    extra: dict[str, Any] = {}
    if case == "mnist":
        root = _data_dir(args.data)
        if root is None:
            return "MNIST IDX files not found (pass --data DIR with DIR/mnist/train-images-idx3-ubyte.gz)"
        from dpspectral_reproduce.chen2025 import load_chen_dataset

        Xh = np.ascontiguousarray(load_chen_dataset("mnist", root).X_train[: n or None], dtype=dtype_name)
        _sync(device)
        t = time.perf_counter()
        X = torch.as_tensor(Xh, device=device)
        _sync(device)
        extra["host_to_device_s"] = time.perf_counter() - t
        return X, extra
    itemsize = torch.empty((), dtype=dtype).element_size()
    fits = _free_bytes(device) > 3 * n * d * itemsize  # X, a centred copy (scikit-learn), blocks
    if case == "memmap" or not fits:
        extra["streamed"] = True
        return _memmap_rows(n, d, np.dtype(dtype_name), tmp), extra
    return _device_rows(n, d, dtype, device), extra


def _free_bytes(device: Any) -> int:
    import torch

    if torch.device(device).type == "cuda":
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    return 1 << 62  # host memory: the case sizes of --quick fit


def _data_dir(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("DPSPECTRAL_DATA"), "../shared/data", "shared/data"):
        if candidate and (Path(candidate) / "mnist" / "train-images-idx3-ubyte.gz").exists():
            return candidate
    return None


def _run_case(case: str, n: int, d: int, dtype_name: str, device: Any, args: Any, tmp: str,
              emit: Callable[[dict[str, Any]], None]) -> None:
    """Every measurement of one case and dtype (``emit`` prints and keeps each JSON line)."""
    import torch

    import dpspectral
    from dpspectral import DPPCA

    got = _case_data(case, n, d, dtype_name, device, args, tmp)
    base: dict[str, Any] = {"case": case, "dtype": dtype_name, "device": str(device)}
    if isinstance(got, str):
        emit({**base, "n": n, "d": d, "what": "skipped", "reason": got})
        return
    X, extra = got
    n, d = (int(s) for s in X.shape)
    base.update(n=n, d=d, streamed=bool(extra.get("streamed", False)))
    dtype = getattr(torch, dtype_name)
    if "host_to_device_s" in extra:
        emit({**base, "what": "host_to_device", "median_s": extra["host_to_device_s"]})
    limit_s, limit_times, (S, (w, _)) = _timed(lambda: _limit(X, device, dtype), args.repeats, device)
    emit({**base, "what": "limit", "median_s": limit_s, "times": limit_times})

    def fit(noise: str = "exact", random_state: Any = 0) -> Any:
        params: dict[str, Any] = dict(epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=random_state)
        with dpspectral.config_context(noise=noise):
            if base["streamed"]:
                return DPPCA(K, device=device, **params).fit(X)
            with dpspectral.config_context(array_api_dispatch=True):
                return DPPCA(K, **params).fit(X)

    fit_s, fit_times, est = _timed(fit, args.repeats, device)
    emit({**base, "what": "dppca", "method": est.method_, "median_s": fit_s, "times": fit_times,
          "ratio_to_limit": fit_s / limit_s, "energy_ratio": _energy_ratio(est.components_, S, w)})
    # the same fit with the device's own float noise: what the exact noise (drawn on the host, the
    # released statistic copied there and back) costs on this device, for choosing where to draw it
    float_s, float_times, _ = _timed(lambda: fit("float"), args.repeats, device)
    emit({**base, "what": "dppca_float_noise", "median_s": float_s, "times": float_times,
          "exact_noise_cost_s": fit_s - float_s, "exact_noise_share": (fit_s - float_s) / fit_s})
    secure_s, secure_times, secure = _timed(lambda: fit(random_state="secure"), args.repeats, device)
    emit({**base, "what": "dppca_secure", "median_s": secure_s, "times": secure_times,
          "noise_source": secure.privacy_.noise_source, "ratio_to_default": secure_s / fit_s})
    sk = _sklearn_fit(X)
    if isinstance(sk, str):
        emit({**base, "what": "sklearn", "skipped": sk})
    else:
        sk_s, sk_times, pca = _timed(sk, args.repeats, device)
        emit({**base, "what": "sklearn", "median_s": sk_s, "times": sk_times,
              "solver": getattr(pca, "_fit_svd_solver", None), "ratio_to_limit": sk_s / limit_s})
    if not args.no_cpu and (n, d) == CPU_CASE[args.quick] and dtype_name == "float64":
        Xh = X if isinstance(X, np.ndarray) else X.cpu().numpy()
        t = time.perf_counter()
        DPPCA(K, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=0).fit(Xh)
        cpu_s = time.perf_counter() - t
        emit({**base, "what": "cpu_dppca", "median_s": cpu_s, "cores": os.cpu_count(),
              "device_speedup": cpu_s / fit_s})
        del Xh


def _table(lines: list[dict[str, Any]], device_name: str) -> str:
    """The markdown table: one row per case and dtype."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for line in lines:
        key = (line["case"], line.get("n"), line.get("d"), line["dtype"])
        rows.setdefault(key, {})[line["what"]] = line
    out = [f"Device: {device_name}. Medians of the timed runs (after a warm-up), seconds.", "",
           "| data | n x d | dtype | DPPCA | limit (X^T X + eigh) | DPPCA / limit | energy ratio | "
           "DPPCA, device float noise | DPPCA, secure | scikit-learn PCA | CPU DPPCA |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (case, n, d, dtype), m in rows.items():
        if "skipped" in m:
            out.append(f"| {case} | {n} x {d} | {dtype} | skipped: {m['skipped']['reason']} | | | | | | | |")
            continue
        fit, lim, sk, cpu = m.get("dppca", {}), m.get("limit", {}), m.get("sklearn", {}), m.get("cpu_dppca")
        flt, sec = m.get("dppca_float_noise", {}), m.get("dppca_secure", {})
        nan = float("nan")
        streamed = " (streamed)" if lim.get("streamed") else ""
        sk_text = f"{sk['median_s']:.3f}" if "median_s" in sk else f"n/a ({sk.get('skipped', '')[:80]})"
        cpu_text = f"{cpu['median_s']:.2f} ({cpu['device_speedup']:.1f}x)" if cpu else ""
        out.append(f"| {case}{streamed} | {n:,} x {d} | {dtype} | {fit.get('median_s', nan):.3f} | "
                   f"{lim.get('median_s', nan):.3f} | {fit.get('ratio_to_limit', nan):.2f} | "
                   f"{fit.get('energy_ratio', nan):.3f} | {flt.get('median_s', nan):.3f} | "
                   f"{sec.get('median_s', nan):.3f} | {sk_text} | "
                   f"{cpu_text} |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None,
                        help="a torch device (default: cuda if available, else cpu)")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", default=None, help="the data folder holding mnist/ (IDX files)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="start no case after this many seconds")
    parser.add_argument("--no-cpu", action="store_true", help="skip the NumPy CPU fit at 2e6 x 1000")
    parser.add_argument("--quick", action="store_true", help="small sizes: a test of the script")
    parser.add_argument("--out", default=None, help="write the markdown table here")
    parser.add_argument("--json", default=None, help="also write the JSON lines here")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # scikit-learn's solver notes, read-only memmap blocks
    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    device_name = (torch.cuda.get_device_name(device) if device.type == "cuda"
                   else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    lines: list[dict[str, Any]] = []

    def emit(line: dict[str, Any]) -> None:
        line = {**line, "device_name": device_name}
        lines.append(line)
        print(json.dumps(line), flush=True)

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as tmp:
        for case, n, d in QUICK_CASES if args.quick else FULL_CASES:
            for dtype_name in args.dtypes:
                if time.perf_counter() - start > args.budget_s:
                    emit({"case": case, "n": n, "d": d, "dtype": dtype_name, "device": str(device),
                          "what": "skipped", "reason": f"time budget of {args.budget_s:g} s spent"})
                    continue
                _run_case(case, n, d, dtype_name, device, args, tmp, emit)
                if device.type == "cuda":  # the case's arrays are gone: give their memory back
                    torch.cuda.empty_cache()
    text = _table(lines, device_name)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main()
