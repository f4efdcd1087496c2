"""What exact noise costs: the default (exact discrete) source against bare computations and float noise.

Usage (from the project root, after `make install-dev`):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_exact_noise.py [--rows 60000] [--repeats 3] \
        [--samplers]

* ``DPPCA(n_components=10)`` fit on MNIST (the training images, pixels scaled to [0, 1], so every row
  norm is at most 28, a public bound) against the bare ``X.T @ X`` + ``scipy.linalg.eigh`` top-10 and
  scikit-learn's ``PCA(10, svd_solver="covariance_eigh")``;
* ``analyze_gauss`` on 64 rows at d = 2048 (k = 2) with the exact default, with float noise
  (``config_context(noise="float")``) and with ``random_state="secure"``, against the bare product +
  NumPy float noise of the same shape + top-k ``eigh``;
* with ``--samplers``: draws per second (CPU time, best of ``--repeats`` interleaved rounds) of the
  discrete Gaussian and Laplace at widths 1, 3 and 50 and at the release scale (``2**30`` grid
  steps), seeded, and OS bits at the release scale; run it with ``OMP_NUM_THREADS=1``. With
  ``--baseline FILE`` the same for another version of the sampler module, interleaved (for example
  ``git show <commit>:src/dpspectral/privacy/_discrete.py > /tmp/old.py``); ``--samplers-only``
  skips the rest.

The variants run interleaved, ``--repeats`` rounds, and the median seconds of each is reported (one
JSON line); docs/benchmarks/speed.md records the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg

from dpspectral import config_context
from dpspectral._estimators import DPPCA
from dpspectral.datasets import find_data_home, load_idx
from dpspectral.pca import analyze_gauss


def _mnist(rows: int) -> np.ndarray:
    home = find_data_home() or Path("/work/shared/data")
    X, _ = load_idx(home / "mnist" / "train-images-idx3-ubyte.gz")
    return X[:rows] / 255.0


def _top(C: np.ndarray, k: int) -> np.ndarray:
    d = C.shape[0]
    return scipy.linalg.eigh(C, subset_by_index=[d - k, d - 1])[1]


def _interleaved(variants: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _dppca(rows: int, repeats: int) -> dict[str, float]:
    from sklearn.decomposition import PCA

    X = _mnist(rows)
    variants = {
        "dppca_default": lambda: DPPCA(n_components=10, epsilon=1.0, delta=1e-6, row_norm=28.0,
                                       random_state=0).fit(X),
        "bare_product_eigh": lambda: _top(X.T @ X, 10),
        "sklearn_covariance_eigh": lambda: PCA(10, svd_solver="covariance_eigh").fit(X),
    }
    return _interleaved(variants, repeats)


def _analyze_gauss(repeats: int, d: int = 2048, n: int = 64, k: int = 2) -> dict[str, float]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)

    def bare() -> None:
        C = X.T @ X
        E = rng.normal(size=(d, d))
        _top(C + np.triu(E) + np.triu(E, 1).T, k)

    def with_noise(kind: str, state: object = 0) -> Callable[[], object]:
        def run() -> object:
            with config_context(noise=kind):
                return analyze_gauss(X, k, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=state)
        return run

    variants = {"bare_product_float_noise_eigh": bare, "analyze_gauss_exact": with_noise("exact"),
                "analyze_gauss_float": with_noise("float"),
                "analyze_gauss_secure": with_noise("exact", "secure")}
    return _interleaved(variants, repeats)


def _load(path: str) -> Any:
    """The sampler module at ``path`` (another version of ``dpspectral/privacy/_discrete.py``)."""
    spec = importlib.util.spec_from_file_location("baseline_discrete", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _samplers(n: int, repeats: int, baseline: str | None) -> dict[str, float]:
    """Draws per second (CPU time, best of ``repeats`` interleaved rounds) of each sampler variant."""
    from dpspectral.privacy import _discrete

    versions = {"": _discrete} | ({"baseline_": _load(baseline)} if baseline else {})
    release = 2**30 + 12345
    variants: dict[str, Callable[[], object]] = {}
    for tag, mod in versions.items():
        for kind in ("gaussian", "laplace"):
            draw = getattr(mod, f"discrete_{kind}_array")
            for width in (1, 3, 50, release):
                name = f"{tag}{kind}_seeded_{'release' if width == release else width}"
                src = mod.GeneratorWords(np.random.default_rng(0))
                variants[name] = lambda d=draw, w=width, s=src: d(w, n, s)
            variants[f"{tag}{kind}_os_release"] = lambda d=draw, m=mod: d(release, n, m.SystemWords())
    for run in variants.values():  # compile and warm up
        run()
    best = dict.fromkeys(variants, np.inf)
    for _ in range(repeats):
        for name, run in variants.items():
            t = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - t)
    return {f"{name}_per_s": n / t for name, t in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samplers", action="store_true")
    parser.add_argument("--draws", type=int, default=1_000_000, help="draws per sampler run")
    parser.add_argument("--baseline", help="another _discrete.py to time against (--samplers)")
    parser.add_argument("--samplers-only", action="store_true")
    parser.add_argument("--skip-mnist", action="store_true")
    args = parser.parse_args()
    result: dict[str, object] = {"machine": f"{platform.machine()} {os.cpu_count()} cores",
                                 "numpy": np.__version__, "repeats": args.repeats}
    if args.samplers:
        result["samplers"] = _samplers(args.draws, args.repeats, args.baseline)
    if args.samplers_only:
        print(json.dumps(result))
        return
    ag = _analyze_gauss(args.repeats)
    base = ag["bare_product_float_noise_eigh"]
    ratios = {f"ratio_{key[len('analyze_gauss_'):]}": v / base for key, v in ag.items()
              if key.startswith("analyze_gauss_")}
    result["analyze_gauss_d2048_n64_k2"] = {**ag, **ratios}
    if not args.skip_mnist:
        dp = _dppca(args.rows, args.repeats)
        result["dppca_mnist"] = {**dp, "rows": args.rows,
                                 "ratio_to_bare": dp["dppca_default"] / dp["bare_product_eigh"],
                                 "ratio_to_sklearn": dp["dppca_default"] / dp["sklearn_covariance_eigh"]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
