"""Fisher discriminant and LDA from one release of the moments (issue 17): accuracy vs epsilon.

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

from dpspectral.gep.moments import DEFAULT_SHARES, fisher_from_moments, lda_from_moments, release_moments

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
    m = release_moments(Xtr, ytr, epsilon=1e12, delta=DELTA, row_norm=1.0, classes=classes, random_state=0)
    out["Fisher (non-private) + LR"] = lr_accuracy(fisher_from_moments(m, k, ridge=1.0).vectors, Xtr, ytr,
                                                   Xte, yte)
    rng = np.random.default_rng(0)
    out["random projection + LR"] = lr_accuracy(rng.standard_normal((Xtr.shape[1], k)), Xtr, ytr, Xte, yte)
    return out


def run(name: str, data: str, eps_list, ridges, seeds: int, shares=DEFAULT_SHARES) -> list[str]:
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
                                budget_shares=shares, random_state=1000 + s)
            for j, r in enumerate(ridges):
                acc[s, j, 0] = lr_accuracy(fisher_from_moments(m, k, ridge=r).vectors, Xtr, ytr, Xte, yte)
                acc[s, j, 1] = lda_accuracy(m, r, Xte, yte)
        mean = acc.mean(axis=0)
        cells = " | ".join(f"{mean[j, 0]:.3f} | {mean[j, 1]:.3f}" for j in range(len(ridges)))
        lines.append(f"| {eps:g} | {cells} |")
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
    args = ap.parse_args()
    out: list[str] = [f"delta = {DELTA:g}, row_norm = 1 (unit rows), {args.seeds} seeds, budget shares "
                      f"{tuple(args.shares)}; accuracy on the test set", ""]
    for name in args.datasets:
        out += run(name, args.data, args.eps, args.ridges, args.seeds, tuple(args.shares)) + [""]
    if args.timing:
        out += timing(args.data)
    print("\n".join(out))


if __name__ == "__main__":
    main()
