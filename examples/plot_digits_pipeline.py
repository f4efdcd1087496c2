"""
Private PCA before a classifier
===============================

A scikit-learn ``Pipeline`` of :class:`~dpspectral.DPStandardScaler`, :class:`~dpspectral.DPPCA`
and a ``LogisticRegression`` on scikit-learn's handwritten digits, with the test accuracy against
epsilon, next to the same pipeline with scikit-learn's non-private ``StandardScaler`` and ``PCA``
and next to a random projection (a map chosen without looking at the data).

**What is private.** The scaler releases the per-pixel means and variances, and the PCA the principal
axes, each with Gaussian noise, under ``replace_one`` neighbours (two training sets that differ in one
image). Both charge one shared :class:`~dpspectral.Accountant`, which composes them. The classifier
is **not** private: ``LogisticRegression`` is fitted on the projected private rows without noise, so
the fitted pipeline as a whole is not differentially private (see the *Private LDA* example for a
classifier that is). What this example measures is the price of privatising the two preprocessing
steps.
"""

# %%
# Data and public inputs
# ----------------------
# The pixels take values 0 to 16: that range is public (it is how the images are stored), so it is
# the scaler's ``bounds``. After standardisation a row of 64 features has a squared norm of about 64
# on average; ``row_norm=10`` is a public bound a little above ``sqrt(64)``; rows above it are
# scaled down to it before the PCA's release. Setting ``DPSPECTRAL_GALLERY_QUICK=1`` runs fewer
# epsilons and repeats.
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.random_projection import GaussianRandomProjection

from dpspectral import DPPCA, Accountant, DPStandardScaler, UnresolvedVarianceWarning, pipeline_cost

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
EPSILONS = [0.3, 3.0] if QUICK else [0.1, 0.3, 1.0, 3.0, 10.0]
REPEATS = 1 if QUICK else 5
K = 10

# At small epsilon the released spectrum does not resolve most components' variances; DPPCA says so
# with an UnresolvedVarianceWarning. This example uses only the released axes, so it is silenced.
warnings.filterwarnings("ignore", category=UnresolvedVarianceWarning)

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)


def private_pipeline(epsilon, seed):
    """A quarter of epsilon for the scaler, the rest for the PCA, on one shared ledger."""
    ledger = Accountant(epsilon=epsilon, delta=1e-5)
    pipe = make_pipeline(
        DPStandardScaler(bounds=(0.0, 16.0), epsilon=epsilon / 4, delta=1e-6, accountant=ledger,
                         random_state=seed),
        DPPCA(K, epsilon=3 * epsilon / 4, delta=1e-6, row_norm=10.0, accountant=ledger,
              random_state=seed),
        LogisticRegression(max_iter=2000),
    )
    return pipe, ledger


# %%
# What the private steps cost, before anything is fitted
# ------------------------------------------------------
# :func:`~dpspectral.pipeline_cost` plans every step from its public parameters: it reads no data and
# draws no noise. It marks the classifier as not private, as it is.
print(pipeline_cost(private_pipeline(1.0, 0)[0], n_features=X.shape[1]))

# %%
# Accuracy against epsilon
# ------------------------
# ``epsilon`` on the x axis is the total charged by the two private steps, at the ledger's
# ``delta = 1e-5``, as the accountant reports it after the fit (a little less than the sum of the
# two steps' epsilons: the accountant composes the Gaussian releases exactly).
nonprivate = make_pipeline(StandardScaler(), PCA(K), LogisticRegression(max_iter=2000))
acc_nonprivate = nonprivate.fit(X_train, y_train).score(X_test, y_test)

acc_random = []
for seed in range(REPEATS):
    # The random projection is drawn without looking at the data; the scaler before it is private.
    ledger = Accountant(epsilon=1.0, delta=1e-5)
    rp = make_pipeline(
        DPStandardScaler(bounds=(0.0, 16.0), epsilon=0.25, delta=1e-6, accountant=ledger, random_state=seed),
        GaussianRandomProjection(K, random_state=seed),
        LogisticRegression(max_iter=2000),
    )
    acc_random.append(rp.fit(X_train, y_train).score(X_test, y_test))

spent, acc_private = [], []
for eps in EPSILONS:
    scores, charged = [], []
    for seed in range(REPEATS):
        pipe, ledger = private_pipeline(eps, seed)
        scores.append(pipe.fit(X_train, y_train).score(X_test, y_test))
        charged.append(ledger.epsilon_spent())
    spent.append(np.mean(charged))
    acc_private.append(scores)
    print(f"epsilon {eps:5.1f} (charged {np.mean(charged):.3f} at delta 1e-5): "
          f"accuracy {np.mean(scores):.3f} +- {np.std(scores):.3f}")
print(f"non-private StandardScaler + PCA: {acc_nonprivate:.3f}; "
      f"private scaler + random projection: {np.mean(acc_random):.3f}")

# %%
# The figure: the private pipeline's mean test accuracy (the band is one standard deviation over
# the repeats, each with fresh noise) against the epsilon charged. The dashed line is the non-private
# pipeline (the ceiling), the dotted one a random 10-dimensional projection (what PCA must beat to
# be worth its budget).
acc_private = np.array(acc_private)
fig, ax = plt.subplots(figsize=(6, 4))
mean, sd = acc_private.mean(axis=1), acc_private.std(axis=1)
ax.plot(spent, mean, "o-", label="DPStandardScaler + DPPCA (private)")
ax.fill_between(spent, mean - sd, mean + sd, alpha=0.2)
ax.axhline(acc_nonprivate, ls="--", color="k", label="StandardScaler + PCA (non-private)")
ax.axhline(np.mean(acc_random), ls=":", color="gray", label="private scaler + random projection")
ax.set_xscale("log")
ax.set_xlabel("epsilon charged (delta = 1e-5)")
ax.set_ylabel("test accuracy (LogisticRegression)")
ax.set_title(f"Digits, {K} components")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
