"""
Private PCA of the digits in five lines
=======================================

:class:`dpspectral.DPPCA` fits principal components under (epsilon, delta)-differential privacy and
charges the fit to a shared :class:`dpspectral.Accountant`. The pixels are scaled by a public constant
(they lie in 0..16), so the row-norm bound ``row_norm`` is chosen without looking at the data.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from dpspectral import DPPCA, Accountant

X, y = load_digits(return_X_y=True)
X = X / 16.0

ledger = Accountant(epsilon=3.0, delta=1e-5)
pca = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=6.0, accountant=ledger, random_state=0)
Z = pca.fit_transform(X)
print(pca.privacy_)
print("spent:", ledger.spent())

# %%
# The private projection next to scikit-learn's non-private one: the classes separate alike.
Z_ref = PCA(2).fit_transform(X)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, data, title in ((axes[0], Z_ref, "PCA (not private)"), (axes[1], Z, "DPPCA, epsilon = 1")):
    ax.scatter(data[:, 0], data[:, 1], c=y, s=4, cmap="tab10")
    ax.set_title(title)
fig.tight_layout()
plt.show()
