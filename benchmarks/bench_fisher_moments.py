"""Fisher discriminant and LDA from one release of the moments: accuracy vs epsilon.

For each data set (MNIST, a9a, RT-IoT2022 from ``dpspectral_reproduce.chen2025.load_chen_dataset``,
unit rows as in the paper's reproduction, and scikit-learn's bundled ``digits``, unit rows, seeded
stratified 70/30 split):

* ``moments + LR``: the private Fisher directions of ``method="moments"`` (``n_classes - 1`` of them,
  at most 10), then a logistic regression on the standardised projections (test accuracy);
* ``DP-LDA``: :class:`dpspectral.DPLinearDiscriminantAnalysis`, the classifier built from the same kind
  of release (test accuracy);
* references: non-private LDA (scikit-learn, ``solver="lsqr"``), the non-private Fisher projection + LR,
  and a random projection of the same dimension + LR.

The ridge is post-processing, so ``--ridges`` evaluates several on ONE release per (epsilon, seed).
delta = 1e-6 throughout; ``row_norm = 1`` (unit rows). Run small on a shared machine::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_fisher_moments.py --datasets digits --eps 1 \
        --seeds 2 --ridges 0.01 0.1

Prints Markdown tables; ``--timing`` adds the fit time against scikit-learn's LDA on MNIST.

``--scaling unit max 4x`` measures adaptive clipping instead: the moments release with
``adaptive_clip=False`` (rows clipped at ``row_norm``) and with the default adaptive clip, in three
scalings of each data set (as ``bench_adaptive_clip.py``'s ``_raw``): ``unit`` (rows scaled to unit norm,
``row_norm = 1``), ``max`` (the raw rows divided by the largest raw training norm, ``row_norm = 1``;
RT-IoT2022 standardised per column with the training statistics first) and ``4x`` (the same rows,
``row_norm = 4``: a loose public bound). Columns: moments + LR, DP-LDA (test rows as given) and DP-LDA
with the test rows clipped at the released clip (public), each off / on, the mean released clip; the
non-private LDA (scikit-learn, ``solver="svd"``) and a random projection + LR on the same rows. Each
setting has its own release per (epsilon, seed)::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_fisher_moments.py --datasets mnist a9a rt-iot2022 \
        --eps 0.25 1 --seeds 2 --scaling unit max 4x
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from dpspectral.gep._moments import DEFAULT_SHARES, fisher_from_moments, lda_from_moments, release_moments

DELTA = 1e-6
EPS_GRID = [1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16]


def load(name: str, data: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test), unit rows."""
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        X, y = load_digits(return_X_y=True)
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        return Xtr, ytr, Xte, yte
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    p = load_chen_dataset(name, data)
    return (np.asarray(p.X_train, dtype=float), np.asarray(p.y_train), np.asarray(p.X_test, dtype=float),
            np.asarray(p.y_test))


def lr_accuracy(V: np.ndarray, Xtr, ytr, Xte, yte) -> float:
    """Logistic regression on the standardised projections ``X V`` (test accuracy)."""
    Ztr, Zte = np.asarray(Xtr @ V), np.asarray(Xte @ V)
    scaler = StandardScaler().fit(Ztr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(max_iter=300).fit(scaler.transform(Ztr), ytr)
    return float(clf.score(scaler.transform(Zte), yte))


def lda_accuracy(moments, ridge: float, Xte, yte) -> float:
    lda = lda_from_moments(moments, ridge=ridge)
    scores = np.asarray(Xte @ lda.coef.T) + lda.intercept
    return float(np.mean(moments.classes[np.argmax(scores, axis=1)] == yte))


def references(Xtr, ytr, Xte, yte, k: int, classes) -> dict[str, float]:
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(Xtr, ytr)
    out = {"LDA (non-private)": float(lda.score(Xte, yte))}
    m = release_moments(Xtr, ytr, epsilon=1e12, delta=DELTA, row_norm=1.0, classes=classes, random_state=0,
                        adaptive_clip=False)
    out["Fisher (non-private) + LR"] = lr_accuracy(fisher_from_moments(m, k, ridge=1.0).vectors, Xtr, ytr,
                                                   Xte, yte)
    rng = np.random.default_rng(0)
    out["random projection + LR"] = lr_accuracy(rng.standard_normal((Xtr.shape[1], k)), Xtr, ytr, Xte, yte)
    return out


def run(name: str, data: str, eps_list, ridges, seeds: int, shares=DEFAULT_SHARES,
        adaptive: bool = True) -> list[str]:
    Xtr, ytr, Xte, yte = load(name, data)
    classes = np.unique(ytr)  # the public label list of the data set (documented with the set)
    k = min(len(classes) - 1, 10)
    lines = [f"### {name} (n = {Xtr.shape[0]}, d = {Xtr.shape[1]}, {len(classes)} classes, k = {k})", ""]
    ref = references(Xtr, ytr, Xte, yte, k, classes)
    lines += [f"- {key}: {val:.3f}" for key, val in ref.items()] + [""]
    head = "| epsilon | " + " | ".join(f"moments+LR r={r:g} | DP-LDA r={r:g}" for r in ridges) + " |"
    lines += [head, "|---" * (1 + 2 * len(ridges)) + "|"]
    for eps in eps_list:
        acc = np.zeros((seeds, len(ridges), 2))
        for s in range(seeds):
            m = release_moments(Xtr, ytr, epsilon=eps, delta=DELTA, row_norm=1.0, classes=classes,
                                budget_shares=shares, random_state=1000 + s, adaptive_clip=adaptive)
            for j, r in enumerate(ridges):
                acc[s, j, 0] = lr_accuracy(fisher_from_moments(m, k, ridge=r).vectors, Xtr, ytr, Xte, yte)
                acc[s, j, 1] = lda_accuracy(m, r, Xte, yte)
        mean = acc.mean(axis=0)
        cells = " | ".join(f"{mean[j, 0]:.3f} | {mean[j, 1]:.3f}" for j in range(len(ridges)))
        lines.append(f"| {eps:g} | {cells} |")
        print(lines[-1], flush=True)
    return lines


def load_raw(name: str, data: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) of the raw rows divided by the largest raw training norm.

    MNIST pixels and a9a indicators as loaded; RT-IoT2022 (the split of ``load_chen_dataset``)
    standardised per column with the training mean and standard deviation. Non-private preprocessing of
    the benchmark (the scaling stands for a user's public bound).
    """
    from pathlib import Path

    from dpspectral.datasets import load, load_idx, load_libsvm
    from dpspectral_reproduce.chen2025 import _RT_IOT_CATEGORIES, _drop_unnamed, _split

    root = Path(data)
    if name == "mnist":
        Xtr, ytr = load_idx(root / "mnist" / "train-images-idx3-ubyte.gz",
                            root / "mnist" / "train-labels-idx1-ubyte.gz")
        Xte, yte = load_idx(root / "mnist" / "t10k-images-idx3-ubyte.gz",
                            root / "mnist" / "t10k-labels-idx1-ubyte.gz")
    elif name == "a9a":
        Xtr, ytr = load_libsvm(root / "a9a" / "a9a.gz", n_features=123)
        Xte, yte = load_libsvm(root / "a9a" / "a9a.t.gz", n_features=123)
    else:
        ds = load(root / "rt-iot2022" / "RT_IOT2022.csv.gz", label_column="Attack_type",
                  categories=_RT_IOT_CATEGORIES)
        X, _ = _drop_unnamed(np.asarray(ds.X), ds.feature_names)
        Xtr, Xte, ytr, yte = _split(name, np.asarray(X, dtype=float), np.asarray(ds.y), 0)
        mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
        Xtr, Xte = (Xtr - mu) / np.where(sd > 0, sd, 1.0), (Xte - mu) / np.where(sd > 0, sd, 1.0)
    Xtr, Xte = (np.asarray(A.toarray() if hasattr(A, "toarray") else A, dtype=float) for A in (Xtr, Xte))
    top = float(np.linalg.norm(Xtr, axis=1).max())
    return Xtr / top, np.asarray(ytr), Xte / top, np.asarray(yte)


def _scaled(name: str, data: str, scaling: str) -> tuple[tuple[np.ndarray, ...], float]:
    """The rows of one scaling and their public bound (module docstring)."""
    if scaling == "unit":
        return load(name, data), 1.0
    return load_raw(name, data), (4.0 if scaling == "4x" else 1.0)


def _clipped(X: np.ndarray, r: float) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.minimum(1.0, r / np.maximum(norms, 1e-300))


def _adaptive_cells(split, C: float, eps: float, seeds: int, k: int, classes) -> tuple[np.ndarray, float]:
    """Mean over seeds of (moments+LR, DP-LDA, DP-LDA on clipped test rows) x (off, on), and the clip."""
    Xtr, ytr, Xte, yte = split
    acc, clips = np.zeros((seeds, 3, 2)), []
    for s in range(seeds):
        for j, adaptive in enumerate((False, True)):
            m = release_moments(Xtr, ytr, epsilon=eps, delta=DELTA, row_norm=C, classes=classes,
                                adaptive_clip=adaptive, random_state=1000 + s)
            acc[s, 0, j] = lr_accuracy(fisher_from_moments(m, k).vectors, Xtr, ytr, Xte, yte)
            acc[s, 1, j] = lda_accuracy(m, 1.0, Xte, yte)
            acc[s, 2, j] = lda_accuracy(m, 1.0, _clipped(Xte, m.radius), yte)
            if adaptive:
                clips.append(m.radius)
    return acc.mean(axis=0), float(np.mean(clips))


def run_adaptive(name: str, data: str, eps_list, seeds: int, scalings) -> list[str]:
    """Adaptive clipping off / on, per scaling and epsilon (module docstring)."""
    lines = [f"### {name}: adaptive clipping (delta = {DELTA:g}, {seeds} seeds)", "",
             "| scaling | row_norm | epsilon | moments+LR off / on | DP-LDA off / on | DP-LDA, test rows "
             "clipped at r: off / on | clip r | LDA (non-private) | random proj. + LR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for scaling in scalings:
        split, C = _scaled(name, data, scaling)
        Xtr, ytr, Xte, yte = split
        classes = np.unique(ytr)
        k = min(len(classes) - 1, 10)
        # the svd solver: lsqr fails on a9a's raw one-hot groups (a singular within-class covariance)
        lda = float(LinearDiscriminantAnalysis(solver="svd").fit(Xtr, ytr).score(Xte, yte))
        rand = lr_accuracy(np.random.default_rng(0).standard_normal((Xtr.shape[1], k)), Xtr, ytr, Xte, yte)
        for eps in eps_list:
            mean, clip = _adaptive_cells(split, C, eps, seeds, k, classes)
            cells = " | ".join(f"{mean[i, 0]:.3f} / {mean[i, 1]:.3f}" for i in range(3))
            lines.append(f"| {scaling} | {C:g} | {eps:g} | {cells} | {clip:.3g} | {lda:.3f} | {rand:.3f} |")
            print(lines[-1], flush=True)
    return lines


def timing(data: str) -> list[str]:
    from dpspectral import DPLinearDiscriminantAnalysis

    Xtr, ytr, _, _ = load("mnist", data)
    t0 = time.perf_counter()
    LinearDiscriminantAnalysis().fit(Xtr, ytr)
    t_svd = time.perf_counter() - t0
    t0 = time.perf_counter()
    LinearDiscriminantAnalysis(solver="lsqr").fit(Xtr, ytr)
    t_lsqr = time.perf_counter() - t0
    t0 = time.perf_counter()
    DPLinearDiscriminantAnalysis(epsilon=1.0, delta=DELTA, row_norm=1.0, classes=np.arange(10),
                                 random_state=0).fit(Xtr, ytr)
    t_dp = time.perf_counter() - t0
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    return [f"MNIST fit time (OMP_NUM_THREADS={threads}): scikit-learn LDA svd {t_svd:.2f} s, lsqr "
            f"{t_lsqr:.2f} s; DPLinearDiscriminantAnalysis {t_dp:.2f} s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["mnist", "a9a", "rt-iot2022", "digits"])
    ap.add_argument("--data", default=os.environ.get("DPSPECTRAL_DATA", "../shared/data"))
    ap.add_argument("--eps", nargs="+", type=float, default=EPS_GRID)
    ap.add_argument("--ridges", nargs="+", type=float, default=[0.01])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--shares", nargs=3, type=float, default=list(DEFAULT_SHARES),
                    help="budget shares of (second moment, class sums, class counts)")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--scaling", nargs="+", choices=["unit", "max", "4x"], default=None,
                    help="measure adaptive clipping off / on in these scalings (module docstring)")
    ap.add_argument("--no-adaptive", action="store_true",
                    help="the ridge/epsilon sweep with adaptive_clip=False")
    args = ap.parse_args()
    if args.scaling:
        lines: list[str] = []
        for name in args.datasets:
            lines += run_adaptive(name, args.data, args.eps, args.seeds, args.scaling) + [""]
        print("\n".join(lines))
        return
    out: list[str] = [f"delta = {DELTA:g}, row_norm = 1 (unit rows), {args.seeds} seeds, budget shares "
                      f"{tuple(args.shares)}; accuracy on the test set", ""]
    for name in args.datasets:
        out += run(name, args.data, args.eps, args.ridges, args.seeds, tuple(args.shares),
                   not args.no_adaptive) + [""]
    if args.timing:
        out += timing(args.data)
    print("\n".join(out))


if __name__ == "__main__":
    main()
