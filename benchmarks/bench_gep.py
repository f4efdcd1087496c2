"""Private generalized eigenproblems (paper 003): speed and utility on MNIST, accuracy against epsilon.

Usage (from the project root):

    .venv/bin/python benchmarks/bench_gep.py speed   [--data ../shared/data] [--repeats 3]
    .venv/bin/python benchmarks/bench_gep.py utility [--data ../shared/data] [--repeats 2]
    .venv/bin/python benchmarks/bench_gep.py sweep [--datasets mnist a9a rt-iot2022 digits] [--repeats 2]
        [--methods NAME ...] [--rows 20000] [--plot accuracy_vs_epsilon.png]

``speed``: wall time of ``DPFisherDiscriminant(9, classes=range(10), ...).fit`` on the 60,000 x 784
training set for every method (9 = n_classes - 1, the most the estimator accepts; the times in
docs/algorithms/gep.md were measured with 10 directions, as it says), next to scikit-learn's
(non-private) ``LinearDiscriminantAnalysis``.
Times are measured around the call (``time.perf_counter``): results carry no timing.
``utility``: test accuracy (10,000 test images) of a linear SVM (standardised features) trained on
the 10-dimensional projection, against epsilon in {16, 4, 1, 1/2, ..., 2^-10}, delta = n^-1.1,
xi = 0.01, m = 15 (the paper's setting), for DPSR, SR+DP, DP-Rayleigh-Flow from a random start and
from the non-private optimum (the paper's comparison; labelled NON-PRIVATE), the non-private SR and
scikit-learn's LDA. Rows are scaled to unit norm (a per-record map). The classifier is trained on the
private projection of the training rows without further privacy (as in the paper): only the
projection is differentially private.

``sweep``: test accuracy of a logistic regression on the standardised k-dimensional
projection (k = min(classes - 1, 9)) against epsilon in {1/16, ..., 16}, delta = n^-1.1, for every
private GEP entry of the registry (``methods(task="gep")``: the paper's methods with their default,
noise-scaled ridge and with the paper's xi = 0.01, and any other entry such as ``"moments"``), the
private LDA classifier's own accuracy (``DPLinearDiscriminantAnalysis``, when the library has it), the
non-private scikit-learn LDA and random projections (5 seeds), on MNIST, a9a, RT-IoT2022 (chen2025's
loaders, unit rows) and scikit-learn's digits (unit rows, seeded 70/30 split).

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


SWEEP_EPSILONS = [2.0**j for j in range(-4, 5)]  # 1/16 ... 16
SWEEP_DATASETS = ("mnist", "a9a", "rt-iot2022", "digits")
PAPER_XI = 0.01
PAPER_SOLVERS = ("dpsr", "dpsrs", "sr_dp", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow")


def load_sweep_dataset(name: str, data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unit-row train/test split: chen2025's loaders (MNIST, a9a, RT-IoT2022) or scikit-learn's digits
    (1,797 x 64, a seeded stratified 70/30 split)."""
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        X, y = load_digits(return_X_y=True)
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # per-record map
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        return Xtr, ytr, Xte, yte
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    d = load_chen_dataset(name, data)
    return d.X_train, d.y_train, d.X_test, d.y_test


def sweep_variants() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(label, registry name, options, private) of every GEP method: each private registry entry with
    its defaults, the paper's methods also with the paper's xi = 0.01 (labelled ``[xi=0.01]``)."""
    from dpspectral._registry import methods

    out: list[tuple[str, str, dict[str, Any], bool]] = []
    for m in methods(task="gep"):
        if not m.private:
            continue
        if m.name in PAPER_SOLVERS:  # the solvers' default ridge (solve_pair's own default is 0.01)
            out.append((m.name, m.name, {"regularization": "noise"}, True))
            out.append((f"{m.name} [xi=0.01]", m.name, {"regularization": PAPER_XI}, True))
        else:
            out.append((m.name, m.name, {}, True))
    return out


def _logreg_accuracy(Z: np.ndarray, y: np.ndarray, Zt: np.ndarray, yt: np.ndarray, rows: int) -> float:
    """Logistic regression on standardised projections (at most ``rows`` seeded training rows)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if not (np.isfinite(Z).all() and np.isfinite(Zt).all()):
        return float("nan")
    idx = np.random.default_rng(0).permutation(Z.shape[0])[:rows]
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(Z[idx], y[idx])
    return float(clf.score(Zt, yt))


def _sweep_fit(name: str, pair: Any, X: np.ndarray, y: np.ndarray, k: int, classes: np.ndarray,
               eps: float, delta: float, seed: int, extra: dict[str, Any]) -> np.ndarray:
    """The k directions of one private fit: the paper's solvers on the pair built once, other registry
    entries (``"moments"``) through their registry callable."""
    from dpspectral._registry import get_method
    from dpspectral.gep import solve_pair

    opts = dict(extra)
    entry = get_method(name)
    if entry.sparse:
        opts["sparsity"] = max(k, X.shape[1] // 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in PAPER_SOLVERS:
            return solve_pair(pair, k, method=name, epsilon=eps, delta=delta, random_state=seed,
                              **opts).vectors
        return entry.function(X, y, k, epsilon=eps, delta=delta, row_norm=1.0, classes=classes,
                              random_state=seed, **opts).vectors


def bench_sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Accuracy vs epsilon of every GEP method, a private LDA classifier, LDA and a random projection."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from dpspectral.gep import fda_pair

    out: list[dict[str, Any]] = []

    def record(row: dict[str, Any]) -> None:
        out.append(row)
        print(json.dumps(row), flush=True)

    variants = [v for v in sweep_variants() if not args.methods or v[0].split(" ")[0] in args.methods]
    for ds in args.datasets:
        X, y, Xt, yt = load_sweep_dataset(ds, Path(args.data))
        classes = np.unique(y)
        n, d = X.shape
        k, delta = min(len(classes) - 1, 9), n ** -1.1
        base = {"bench": "sweep", "dataset": ds, "n": n, "d": d, "k": k, "delta": delta}
        pair = fda_pair(X, y, row_norm=1.0, classes=classes)
        lda = LinearDiscriminantAnalysis(n_components=k).fit(X, y)
        record({**base, "method": "lda (non-private)", "epsilon": None,
                "accuracy": [_logreg_accuracy(lda.transform(X), y, lda.transform(Xt), yt, args.rows)],
                "lda_own_accuracy": float(lda.score(Xt, yt))})
        bases = (np.linalg.qr(np.random.default_rng(s).standard_normal((d, k)))[0] for s in range(5))
        rand = [_logreg_accuracy(X @ Q, y, Xt @ Q, yt, args.rows) for Q in bases]
        record({**base, "method": "random projection", "epsilon": None, "accuracy": rand})
        for eps in args.epsilons:
            for label, name, extra, _ in variants:
                accs, secs = [], []
                for r in range(args.repeats):
                    t = time.perf_counter()
                    V = _sweep_fit(name, pair, X, y, k, classes, eps, delta, 1000 * r + 7, extra)
                    secs.append(time.perf_counter() - t)
                    accs.append(_logreg_accuracy(X @ V, y, Xt @ V, yt, args.rows))
                record({**base, "method": label, "epsilon": eps, "accuracy": accs,
                        "seconds": statistics.median(secs)})
            _sweep_private_lda(args, base, X, y, Xt, yt, classes, eps, delta, record)
    return out


def _sweep_private_lda(args: argparse.Namespace, base: dict[str, Any], X: np.ndarray, y: np.ndarray,
                       Xt: np.ndarray, yt: np.ndarray, classes: np.ndarray, eps: float, delta: float,
                       record: Any) -> None:
    """DPLinearDiscriminantAnalysis's own test accuracy, when the library has it."""
    try:
        from dpspectral import DPLinearDiscriminantAnalysis
    except ImportError:
        return
    accs = []
    for r in range(args.repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = DPLinearDiscriminantAnalysis(epsilon=eps, delta=delta, row_norm=1.0, classes=classes,
                                               random_state=1000 * r + 7).fit(X, y)
        accs.append(float(clf.score(Xt, yt)))
    record({**base, "method": "DPLinearDiscriminantAnalysis (own classifier)", "epsilon": eps,
            "accuracy": accs})


def plot_sweep(rows: list[dict[str, Any]], path: Path) -> None:
    """One panel per data set: mean accuracy vs epsilon (log scale), references as dashed lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    bases = list(dict.fromkeys(r["method"].split(" [")[0] for r in rows if r["epsilon"] is not None))
    colour = {b: plt.get_cmap("tab10")(i % 10) for i, b in enumerate(bases)}
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        sub = [r for r in rows if r["dataset"] == ds]
        for method in dict.fromkeys(r["method"] for r in sub):
            pts = sorted((r["epsilon"], float(np.nanmean(r["accuracy"]))) for r in sub
                         if r["method"] == method and r["epsilon"] is not None)
            if pts:  # the paper's xi dashed, in its method's colour
                style = "--" if "xi=0.01" in method else "-"
                ax.plot(*zip(*pts, strict=True), style, marker="o", ms=3, label=method,
                        color=colour[method.split(" [")[0]], lw=2.2 if method == "moments" else 1.2)
            else:
                ref = [float(np.nanmean(r["accuracy"])) for r in sub if r["method"] == method][0]
                ax.axhline(ref, ls=":", color="k" if "lda" in method else "grey", label=method)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{ds} (n={sub[0]['n']}, d={sub[0]['d']}, k={sub[0]['k']})")
        ax.set_xlabel("epsilon (delta = n^-1.1)")
        ax.set_ylabel("test accuracy (logistic regression on the projection)")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=("speed", "utility", "sweep"))
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--epsilons", type=float, nargs="*", default=None)
    parser.add_argument("--datasets", nargs="*", default=list(SWEEP_DATASETS))
    parser.add_argument("--methods", nargs="*", default=None, help="sweep: registry names to run")
    parser.add_argument("--rows", type=int, default=20000, help="sweep: classifier training rows")
    parser.add_argument("--plot", default=None, help="sweep: write the accuracy-vs-epsilon plot here")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.bench == "speed" else 2
    if args.epsilons is None:
        args.epsilons = SWEEP_EPSILONS if args.bench == "sweep" else EPSILONS
    print(json.dumps({"machine": machine()}), flush=True)
    runner = {"speed": bench_speed, "utility": bench_utility, "sweep": bench_sweep}[args.bench]
    rows = runner(args)
    if args.bench == "sweep" and args.plot:
        plot_sweep(rows, Path(args.plot))
    print(json.dumps({"done": len(rows), "loadavg_after": os.getloadavg()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
