"""Benchmarks of issue 6 (private generalized eigenproblems, paper 003) on MNIST.

Usage (from the project root):

    .venv/bin/python benchmarks/bench_gep.py speed   [--data ../shared/data] [--repeats 3]
    .venv/bin/python benchmarks/bench_gep.py utility [--data ../shared/data] [--repeats 2]

``speed``: wall time of ``DPFisherDiscriminant(9, classes=range(10), ...).fit`` on the 60,000 x 784
training set for every method (9 = n_classes - 1, the most the estimator accepts since issue 15; the
runs recorded before that used 10), next to scikit-learn's (non-private) ``LinearDiscriminantAnalysis``.
Times are measured around the call (``time.perf_counter``): results carry no timing.
``utility``: test accuracy (10,000 test images) of a linear SVM (standardised features) trained on
the 10-dimensional projection, against epsilon in {16, 4, 1, 1/2, ..., 2^-10}, delta = n^-1.1,
xi = 0.01, m = 15 (the paper's setting), for DPSR, SR+DP, DP-Rayleigh-Flow from a random start and
from the non-private optimum (the paper's comparison; labelled NON-PRIVATE), the non-private SR and
scikit-learn's LDA. Rows are scaled to unit norm (a per-record map). The classifier is trained on the
private projection of the training rows without further privacy (as in the paper): only the
projection is differentially private.

Each prints JSON lines with the measurements and the machine; docs/algorithms/gep.md records them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
EPSILONS = [16.0, 4.0] + [2.0**-j for j in range(0, 11)]


def machine() -> dict[str, object]:
    import sklearn

    info: dict[str, object] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
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


def load_mnist(data: Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    from dpspectral.datasets import load_idx

    prefix = "train" if split == "train" else "t10k"
    X, y = load_idx(data / "mnist" / f"{prefix}-images-idx3-ubyte.gz",
                    data / "mnist" / f"{prefix}-labels-idx1-ubyte.gz")
    assert y is not None
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # per-record map
    return np.ascontiguousarray(X), y


def bench_speed(args: argparse.Namespace) -> list[dict[str, Any]]:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from dpspectral.gep import DPFisherDiscriminant

    X, y = load_mnist(Path(args.data))
    n = X.shape[0]
    delta = n ** -1.1
    out = []
    settings: list[tuple[str, dict[str, Any]]] = [
        ("dpsr", {}), ("sr_dp", {}), ("dp_rayleigh_flow", {}), ("dpsrs", {"sparsity": 200}),
        ("sr", {}),
    ]
    for method, extra in settings:
        times = []
        for r in range(args.repeats):
            est = DPFisherDiscriminant(9, epsilon=1.0, delta=delta, row_norm=1.0, method=method,
                                       classes=list(range(10)), random_state=r, **extra)
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            times.append(time.perf_counter() - t)
        out.append({"bench": "speed", "method": method, "seconds_median": statistics.median(times),
                    "seconds": times})
        print(json.dumps(out[-1]), flush=True)
    for solver in ("svd",):  # "eigen" fails on MNIST (the within-class scatter is singular)
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            LinearDiscriminantAnalysis(n_components=9, solver=solver).fit(X, y)
            times.append(time.perf_counter() - t)
        out.append({"bench": "speed", "method": f"sklearn_lda_{solver}",
                    "seconds_median": statistics.median(times), "seconds": times})
        print(json.dumps(out[-1]), flush=True)
    return out


def _svm_accuracy(Z: np.ndarray, y: np.ndarray, Zt: np.ndarray, yt: np.ndarray) -> float:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    clf = make_pipeline(StandardScaler(), LinearSVC(dual=False, C=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(Z, y)
    return float(clf.score(Zt, yt))


def bench_utility(args: argparse.Namespace) -> list[dict[str, Any]]:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from dpspectral.gep import fda_pair, solve_pair

    X, y = load_mnist(Path(args.data))
    Xt, yt = load_mnist(Path(args.data), "test")
    n = X.shape[0]
    delta = n ** -1.1
    # built once, with the public label list; every solver below reads only this pair
    pair = fda_pair(X, y, row_norm=1.0, classes=np.arange(10))
    out: list[dict[str, Any]] = []

    def record(row: dict[str, Any]) -> None:
        out.append(row)
        print(json.dumps(row), flush=True)

    lda = LinearDiscriminantAnalysis(n_components=9).fit(X, y)
    record({"bench": "utility", "method": "sklearn_lda", "epsilon": None, "private": False,
            "svm_accuracy": _svm_accuracy(lda.transform(X), y, lda.transform(Xt), yt),
            "lda_own_accuracy": float(lda.score(Xt, yt))})
    sr = solve_pair(pair, 10, method="sr", regularization=0.01)
    record({"bench": "utility", "method": "sr", "epsilon": None, "private": False,
            "svm_accuracy": _svm_accuracy(X @ sr.vectors, y, Xt @ sr.vectors, yt)})
    methods: list[tuple[str, str, dict[str, Any], bool]] = [
        ("dpsr", "dpsr", {}, True),
        ("sr_dp", "sr_dp", {}, True),
        ("dprf_random_init", "dp_rayleigh_flow", {}, True),
        ("dprf_nonprivate_init", "dp_rayleigh_flow", {"init": "nonprivate_optimum"}, False),
    ]
    for eps in args.epsilons:
        for label, method, extra, private in methods:
            accs, secs = [], []
            for r in range(args.repeats):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = solve_pair(pair, 10, method=method, epsilon=eps, delta=delta,
                                     regularization=0.01, random_state=1000 * r + 7, **extra)
                secs.append(time.perf_counter() - t)
                accs.append(_svm_accuracy(X @ res.vectors, y, Xt @ res.vectors, yt))
            record({"bench": "utility", "method": label, "epsilon": eps, "delta": delta,
                    "private": private, "svm_accuracy_mean": statistics.mean(accs),
                    "svm_accuracy": accs, "solver_seconds": statistics.median(secs)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=("speed", "utility"))
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--epsilons", type=float, nargs="*", default=EPSILONS)
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.bench == "speed" else 2
    print(json.dumps({"machine": machine()}), flush=True)
    rows = bench_speed(args) if args.bench == "speed" else bench_utility(args)
    print(json.dumps({"done": len(rows), "loadavg_after": os.getloadavg()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
