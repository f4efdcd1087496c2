"""
PCA of a file larger than memory
================================

Private PCA of rows stored on disk, read block by block from an ``np.memmap`` so that memory does not
grow with the number of rows. Two ways: :class:`~dpspectral.DPPCA` (Analyze Gauss: the ``d x d``
covariance is summed over blocks, then released once with Gaussian noise) and
:func:`dpspectral.pca.minibatch_oja` (one pass of noisy block-power steps on disjoint minibatches;
``O(d k)`` memory besides the block being read, for a ``d`` too large for a ``d x d`` matrix).

**What is private.** The rows of the file, under ``replace_one`` neighbours (n is public); each fit
is ``(epsilon, 1e-7)``-DP. ``row_norm = 1`` is a public bound: rows above it are scaled down to it.
The figure shows the captured energy of each method's subspace against epsilon, next to a random
subspace. The rows are synthetic, drawn from a known distribution, so the captured energy is measured
against that distribution's covariance: the evaluation does not read the private file at all.
"""

# %%
# Write a file of rows
# --------------------
# The file lives in a temporary directory removed at the end. Its rows have three strong directions
# (standard deviations 4, 3 and 2 along an orthonormal ``V``) plus unit noise in every direction,
# divided by the public constant 12 so that almost every row has norm below 1.
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from dpspectral import DPPCA
from dpspectral.datasets import random_orthonormal
from dpspectral.metrics import captured_energy
from dpspectral.pca import minibatch_oja

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
N_ROWS = 50_000 if QUICK else 400_000
D, K = 50, 3
EPSILONS = [0.1, 1.0] if QUICK else [0.03, 0.1, 0.3, 1.0, 3.0]
SCALE = 12.0

rng = np.random.default_rng(0)
V = random_orthonormal(D, K, random_state=0)
population = (V * np.array([4.0, 3.0, 2.0]) ** 2) @ V.T + np.eye(D)  # covariance before scaling

tmp = tempfile.TemporaryDirectory()
path = os.path.join(tmp.name, "rows.f64")
rows = np.memmap(path, dtype=np.float64, mode="w+", shape=(N_ROWS, D))
for start in range(0, N_ROWS, 50_000):
    m = min(50_000, N_ROWS - start)
    block = rng.standard_normal((m, D)) + (rng.standard_normal((m, K)) * [4.0, 3.0, 2.0]) @ V.T
    rows[start:start + m] = block / SCALE
rows.flush()
del rows
print(f"{N_ROWS:,} rows x {D} columns: {os.path.getsize(path) / 2**20:.0f} MiB on disk")

# %%
# Fit from the memory map
# -----------------------
# Opened read-only, the file is never loaded whole: both methods read it in blocks. ``centering=None``
# asks ``DPPCA`` for the axes of the second moment, which here (mean zero) are the principal axes.
X = np.memmap(path, dtype=np.float64, mode="r", shape=(N_ROWS, D))

results = {"DPPCA (Analyze Gauss)": [], "minibatch_oja (one pass, O(dk))": []}
for eps in EPSILONS:
    pca = DPPCA(K, epsilon=eps, delta=1e-7, row_norm=1.0, centering=None, random_state=0).fit(X)
    results["DPPCA (Analyze Gauss)"].append(captured_energy(pca.components_.T, population))
    res = minibatch_oja(X, K, epsilon=eps, delta=1e-7, row_norm=1.0, random_state=0)
    results["minibatch_oja (one pass, O(dk))"].append(captured_energy(res.components, population))
    print(f"epsilon {eps}: captured energy {results['DPPCA (Analyze Gauss)'][-1]:.3f}; {pca.privacy_}")
    print(f"    minibatch Oja: {results['minibatch_oja (one pass, O(dk))'][-1]:.3f}; {res.privacy}")

random_energy = np.mean([captured_energy(random_orthonormal(D, K, random_state=s), population)
                         for s in range(20)])
del X
tmp.cleanup()

# %%
# The figure: the fraction of the best rank-3 energy of the population covariance that each
# released subspace captures (1 is the best possible), against epsilon. A random 3-dimensional
# subspace captures about ``k / d`` of the total energy: what a release must beat to be useful.
fig, ax = plt.subplots(figsize=(6, 4))
for label, values in results.items():
    ax.plot(EPSILONS, values, "o-", label=label)
ax.axhline(random_energy, color="gray", ls=":", label="random subspace")
ax.set_xscale("log")
ax.set_ylim(0, 1.05)
ax.set_xlabel("epsilon (delta = 1e-7)")
ax.set_ylabel("captured energy (population covariance)")
ax.set_title(f"PCA from an np.memmap: {N_ROWS:,} x {D}, k = {K}")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# Memory: on a 10^7 x 100 file (8 GB), ``DPPCA`` fits with a peak resident memory of about 270 MiB;
# see the *Benchmarks* page for the measurement, the machine and the command.
