"""
Private LDA next to scikit-learn's
==================================

:class:`~dpspectral.DPLinearDiscriminantAnalysis` is a whole classifier fitted from one private
release of the data's moments (second moment, class sums, class counts); its predictions are
post-processing of that release, so, unlike a pipeline that ends in a non-private classifier, the
fitted model is differentially private. :class:`~dpspectral.DPFisherDiscriminant` uses the same kind
of release for a supervised projection (Fisher's discriminant directions), the private counterpart
of ``LinearDiscriminantAnalysis.transform``.

**What is private.** The labelled training rows of scikit-learn's digits, under ``replace_one``
neighbours (one image and its label replaced); each fit is ``(epsilon, 1e-6)``-DP. The list of
classes (0 to 9) is public and given, so it is not learnt from the data; ``row_norm = 6`` is a public
bound on the rows (pixels scaled by the public 1/16). The figures show the test accuracy against
epsilon next to scikit-learn's non-private LDA, and the rows projected on the first two private
discriminant directions.
"""

# %%
# Accuracy against epsilon
# ------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import train_test_split

from dpspectral import DPFisherDiscriminant, DPLinearDiscriminantAnalysis

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
EPSILONS = [0.5, 5.0] if QUICK else [0.1, 0.3, 1.0, 3.0, 10.0]
REPEATS = 1 if QUICK else 5
CLASSES = list(range(10))

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)

baseline = LinearDiscriminantAnalysis().fit(X_train, y_train).score(X_test, y_test)
scores = []
for eps in EPSILONS:
    runs = [DPLinearDiscriminantAnalysis(epsilon=eps, delta=1e-6, row_norm=6.0, classes=CLASSES,
                                         random_state=seed).fit(X_train, y_train).score(X_test, y_test)
            for seed in range(REPEATS)]
    scores.append(runs)
    print(f"epsilon {eps:5.1f}: private LDA accuracy {np.mean(runs):.3f} +- {np.std(runs):.3f}")
print(f"scikit-learn LDA (non-private): {baseline:.3f}; chance: 0.1")

scores = np.array(scores)
fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(EPSILONS, scores.mean(axis=1), yerr=scores.std(axis=1), fmt="o-", capsize=3,
            label="DPLinearDiscriminantAnalysis")
ax.axhline(baseline, color="k", ls="--", label="LinearDiscriminantAnalysis (non-private)")
ax.axhline(0.1, color="gray", ls=":", label="chance (10 classes)")
ax.set_xscale("log")
ax.set_ylim(0, 1)
ax.set_xlabel("epsilon (delta = 1e-6)")
ax.set_ylabel("test accuracy")
ax.set_title("Digits: private LDA")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# Two discriminant directions
# ---------------------------
# The test rows projected on the first two Fisher directions: scikit-learn's (non-private) and
# ``DPFisherDiscriminant``'s at epsilon = 1 and 5. Only the directions are released; the projected
# test rows are drawn here for the reader.
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
panels = [("LinearDiscriminantAnalysis (non-private)",
           LinearDiscriminantAnalysis(n_components=2).fit(X_train, y_train))]
for eps in (1.0, 5.0):
    fda = DPFisherDiscriminant(2, epsilon=eps, delta=1e-6, row_norm=6.0, classes=CLASSES, random_state=0)
    panels.append((f"DPFisherDiscriminant, epsilon = {eps:g}", fda.fit(X_train, y_train)))
for ax, (title, model) in zip(axes, panels, strict=True):
    Z = model.transform(X_test)
    points = ax.scatter(Z[:, 0], Z[:, 1], c=y_test, cmap="tab10", s=6)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
fig.colorbar(points, ax=axes, label="digit", ticks=CLASSES)
plt.show()
