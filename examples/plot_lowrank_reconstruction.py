"""
A private low-rank factorization and its reconstruction
=======================================================

Upadhyay's Private-Frobenius-LRF (:func:`~dpspectral.private_frobenius_lrf`, also
:class:`~dpspectral.DPLowRank`) releases a rank-``k`` factorization ``A ~ U diag(S) V^T`` of one
private matrix from two noisy random sketches of it. Here ``A`` is a 400 x 80 table of scores (say,
users by items) with a rank-5 structure plus noise.

**What is private.** The entries of ``A``, under the ``priv2`` relation: two matrices are neighbours
when they differ by a matrix of Frobenius norm at most 1 (any change of the entries whose squares sum
to at most 1: one score moved by 1, or several by less). Each release is ``(epsilon, 1e-6)``-DP for it.
The unit is what matters: the larger the entries relative to that unit, the less the noise costs.
The figures show the reconstruction error against epsilon, relative to the best rank-5 error
(1 is the best possible), next to the noiseless sketching algorithm and a random subspace, and the
reconstructions themselves.
"""

# %%
# The matrix and the errors
# -------------------------
import os

import matplotlib.pyplot as plt
import numpy as np

from dpspectral import DPLowRank, optimal_space_lrf, private_frobenius_lrf
from dpspectral.datasets import random_orthonormal
from dpspectral.metrics import best_rank_k_error, total_error

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
EPSILONS = [0.1, 1.0, 10.0] if QUICK else [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
REPEATS = 1 if QUICK else 5
M, N, K = 400, 80, 5

rng = np.random.default_rng(0)
factors = rng.standard_normal((M, K)) * [8.0, 6.0, 5.0, 4.0, 3.0]
A = 20 * (factors @ random_orthonormal(N, K, random_state=1).T + 0.3 * rng.standard_normal((M, N)))
best = best_rank_k_error(A, K)  # ||A - A_k||_F, the error of the exact (non-private) truncated SVD

private = []
for eps in EPSILONS:
    errs = []
    for seed in range(REPEATS):
        res = private_frobenius_lrf(A, K, epsilon=eps, delta=1e-6, random_state=seed)
        errs.append(total_error(A, res.U, res.S, res.V) / best)
    private.append(errs)
    print(f"epsilon {eps:5g}: ||A - U S V^T||_F / ||A - A_k||_F = {np.mean(errs):.3f}")
print(res.privacy)

reference = np.mean([(lambda r: total_error(A, r.U, r.S, r.V))(optimal_space_lrf(A, K, random_state=s)) / best
                     for s in range(REPEATS)])
random_v = np.mean([np.linalg.norm(A - A @ V @ V.T) / best
                    for V in (random_orthonormal(N, K, random_state=s) for s in range(20))])
zero = np.linalg.norm(A) / best
print(f"noiseless sketching: {reference:.3f}; random subspace: {random_v:.3f}; the zero matrix: {zero:.3f}")

# %%
# The figure: mean error ratio over the repeats. At small epsilon the noise hides the matrix and the
# release shrinks to the zero matrix (never worse than it: released singular values below the noise's
# edge are set to 0); from epsilon about 1 it is near the noiseless sketching algorithm.
private = np.array(private)
fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(EPSILONS, private.mean(axis=1), yerr=private.std(axis=1), fmt="o-", capsize=3,
            label="private_frobenius_lrf (priv2)")
ax.axhline(reference, color="k", ls="--", label="same sketches, no noise (non-private)")
ax.axhline(random_v, color="gray", ls=":", label="random rank-5 subspace")
ax.axhline(zero, color="tab:red", ls="-.", lw=1, label="the zero matrix")
ax.axhline(1.0, color="k", lw=0.5)
ax.set_xscale("log")
ax.set_xlabel("epsilon (delta = 1e-6)")
ax.set_ylabel("error / best rank-5 error")
ax.set_title(f"{M} x {N} matrix, rank {K}")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The reconstructions
# -------------------
# ``DPLowRank`` is the estimator form; ``reconstruct()`` is ``U diag(S) V^T``, computed from the
# release only. The first 60 rows of ``A`` and of its private reconstructions at two epsilons.
panels = [("A (private)", A)]
for eps in (0.3, 3.0):
    model = DPLowRank(K, epsilon=eps, delta=1e-6, random_state=0).fit(A)
    panels.append((f"DPLowRank, epsilon = {eps:g}", model.reconstruct()))
lim = np.abs(A[:60]).max()
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
for ax, (title, M_) in zip(axes, panels, strict=True):
    image = ax.imshow(M_[:60], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("column")
axes[0].set_ylabel("row")
fig.colorbar(image, ax=axes)
plt.show()
