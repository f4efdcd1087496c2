"""The worker side of the peer-benchmark protocol (stdlib and NumPy only: it runs in the peer venvs).

A worker is started as ``python WORKER.py '<json arguments>'``. It reads the data from the ``.npy``
file named by ``args["data"]`` (written by the parent), fits once, and prints exactly one result line
on stdout::

    @@DPSPECTRAL-PEER-RESULT@@ {"components": [[...], ...], "fit_seconds": ..., ...}

Anything else the library prints is ignored by the parent. A worker that fails raises: the parent sees
a non-zero exit status and reports the last line of stderr.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

import numpy as np

RESULT_MARKER = "@@DPSPECTRAL-PEER-RESULT@@"


def read_args(argv: list[str] | None = None) -> dict[str, Any]:
    """The JSON object passed as the only command-line argument."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: WORKER.py '<json arguments>'")
    args = json.loads(argv[0])
    if not isinstance(args, dict):
        raise SystemExit("the argument must be a JSON object")
    return args


def load_data(args: dict[str, Any]) -> np.ndarray:
    """The (n, d) float64 data matrix written by the parent."""
    return np.ascontiguousarray(np.load(args["data"]), dtype=np.float64)


def versions(dists: Iterable[str]) -> dict[str, str]:
    """Installed versions of the named distributions (``"missing"`` when not installed)."""
    out = {"python": sys.version.split()[0]}
    for name in dists:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def peak_memory_mib() -> dict[str, float | None]:
    """Peak resident memory of this process, in MiB.

    ``vmhwm_mib``: ``VmHWM`` from ``/proc/self/status`` (the high-water mark of this process image;
    reset by ``exec``). ``ru_maxrss_mib``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which on
    Linux can carry over the parent's resident set across fork + exec, so it is recorded but
    ``vmhwm_mib`` is the one reported (where ``/proc`` exists).
    """
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    hwm: float | None = None
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024.0
                    break
    except OSError:
        pass
    return {"vmhwm_mib": hwm, "ru_maxrss_mib": ru}


def timed(fit: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    """Run ``fit`` once; returns its (k, d) components and the wall time in seconds."""
    t0 = time.perf_counter()
    components = fit()
    return np.asarray(components, dtype=np.float64), time.perf_counter() - t0


def emit(components: np.ndarray, fit_seconds: float, **extra: Any) -> None:
    """Print the result line (components as rows, k x d)."""
    C = np.asarray(components, dtype=np.float64)
    if C.ndim != 2:
        raise ValueError(f"components must be a 2-D (k, d) array, got shape {C.shape}")
    payload = {
        "components": C.tolist(),
        "fit_seconds": float(fit_seconds),
        **peak_memory_mib(),
        **extra,
    }
    sys.stdout.write(RESULT_MARKER + " " + json.dumps(payload) + "\n")
    sys.stdout.flush()
