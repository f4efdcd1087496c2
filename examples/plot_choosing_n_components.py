"""
Choosing n_components from the released spectrum
================================================

How many components to keep is usually read from the explained-variance ratios. Computed from the
private data, that choice would leak; computed from the **release**, it is free. The covariance
methods of :class:`~dpspectral.DPPCA` (Analyze Gauss, the default) release the whole noisy spectrum
in one release, so ``explained_variance_ratio_`` and ``DPPCA(n_components=0.8)`` (keep the fewest
components reaching 80% of the variance) read only released values and cost nothing beyond the fit.

**What is private.** The rows of scikit-learn's digits (scaled by the public 1/16), under
``replace_one`` neighbours; each fit is ``(epsilon, 1e-6)``-DP, with the public ``row_norm = 6``,
centred around a private mean. The figure compares the released ratios with scikit-learn's
(non-private) ones, and shows the noise floor: a released eigenvalue within the noise is not resolved
and counts as 0 (an ``UnresolvedVarianceWarning`` says how many).
"""

# %%
# Released ratios against the non-private ones
# --------------------------------------------
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from dpspectral import DPPCA, UnresolvedVarianceWarning

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
EPSILONS = [0.3, 3.0] if QUICK else [0.1, 0.3, 1.0, 3.0]
K = 20

X, _ = load_digits(return_X_y=True)
X = X / 16.0
reference = PCA(K).fit(X).explained_variance_ratio_

released = {}
for eps in EPSILONS:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnresolvedVarianceWarning)
        model = DPPCA(K, epsilon=eps, delta=1e-6, row_norm=6.0, random_state=0).fit(X)
    released[eps] = model.explained_variance_ratio_
    unresolved = [str(w.message) for w in caught if issubclass(w.category, UnresolvedVarianceWarning)]
    resolved = int(np.count_nonzero(model.explained_variance_ratio_))
    print(f"epsilon {eps:<4g}: {resolved} of {K} components resolved; first ratios "
          f"{np.round(model.explained_variance_ratio_[:3], 3)}")
    for message in unresolved:
        print("   ", message)
print("scikit-learn PCA (non-private):", np.round(reference[:3], 3))

# %%
# Keeping 80% of the variance
# ---------------------------
# With a fraction, ``n_components_`` is chosen from the released ratios. At small epsilon the noise
# hides the small components, so the fraction may not be reached by the resolved ones, and every
# component is kept.
chosen = {}
for eps in EPSILONS:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedVarianceWarning)
        chosen[eps] = DPPCA(0.8, epsilon=eps, delta=1e-6, row_norm=6.0, random_state=0).fit(X).n_components_
    print(f"epsilon {eps:<4g}: n_components_ = {chosen[eps]}")
print("scikit-learn PCA(0.8):", PCA(0.8).fit(X).n_components_)

# %%
# The figure. Left: the explained-variance ratio of each component, released at several epsilons,
# and scikit-learn's; a released ratio of 0 is a component below the noise floor. Right: the
# cumulative ratios and the 80% line where ``n_components=0.8`` stops.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
idx = np.arange(1, K + 1)
left.plot(idx, reference, "k.-", label="scikit-learn PCA (non-private)")
right.plot(idx, np.cumsum(reference), "k.-", label="scikit-learn PCA (non-private)")
for eps, ratios in released.items():
    left.plot(idx, ratios, "o-", ms=3, label=f"DPPCA, epsilon = {eps:g}")
    right.plot(idx, np.cumsum(ratios), "o-", ms=3, label=f"DPPCA, epsilon = {eps:g} (keeps {chosen[eps]})")
right.axhline(0.8, color="gray", ls=":")
left.set_xlabel("component")
left.set_ylabel("explained variance ratio")
right.set_xlabel("number of components")
right.set_ylabel("cumulative ratio")
left.legend(fontsize=8)
right.legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()
