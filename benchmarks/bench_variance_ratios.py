"""Explained-variance ratios of DPPCA next to scikit-learn's PCA on digits (X / 16), against epsilon.

The ratios are post-processing of released quantities (released eigenvalues debiased at the noise's
public spectral norm, over the larger of the released trace and their sum). Printed per epsilon: the
mean over seeds of the largest absolute difference from scikit-learn's ratios over the first k
components, for the privately centred estimator, and whether every ratio lies in [0, 1] with a sum of
at most 1.

Run: ``.venv/bin/python benchmarks/bench_variance_ratios.py [--seeds 5] [--k 5]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from dpspectral import DPPCA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    X = load_digits().data / 16.0
    reference = PCA(args.k).fit(X).explained_variance_ratio_
    print(f"scikit-learn PCA ratios: {np.round(reference, 3)}")
    print("| epsilon | max abs difference (mean over seeds) | valid (in [0, 1], sum <= 1) |")
    print("|---|---|---|")
    for epsilon in (0.001, 0.01, 0.1, 0.5, 1.0, 4.0):
        gaps, valid = [], True
        for seed in range(args.seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pca = DPPCA(args.k, epsilon=epsilon, delta=1e-6, row_norm=8.0, centering="private",
                            random_state=seed).fit(X)
            ratios = pca.explained_variance_ratio_
            valid &= bool(np.isfinite(ratios).all() and (ratios >= 0).all() and ratios.sum() <= 1 + 1e-12)
            gaps.append(float(np.max(np.abs(ratios - reference))))
        print(f"| {epsilon:g} | {np.mean(gaps):.3f} | {valid} |")


if __name__ == "__main__":
    main()
