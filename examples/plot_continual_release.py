"""
Continual release: a factorization after every update
=====================================================

A matrix that grows one row at a time (one row a day, say), with a private rank-``k`` factorization
published after **every** row. Releasing each prefix separately would spend the budget ``T`` times;
:class:`dpspectral.lowrank.ContinualLRF` (Upadhyay 2018, Figure 8) uses the binary tree mechanism
instead: every row enters about ``log2 T`` noisy sketches (tree nodes), and the release at time ``t``
sums the few nodes that cover ``[1, t]``. The whole sequence of ``T`` releases costs one
``(epsilon, delta)``, charged when the state is created, before any row arrives.

**What is private.** The stream, under ``priv2`` at the event level: two streams are neighbours when
they differ in one step's update by a matrix of Frobenius norm at most ``bound = 1``. The whole
sequence of releases is ``(epsilon, 1e-6)``-DP. The figure shows the error of each release over time,
next to the best (non-private) rank-``k`` error of the same prefix, and the noise level of each
release, which depends only on public facts (the number of tree nodes summed).
"""

# %%
# A stream of rows
# ----------------
import os

import matplotlib.pyplot as plt
import numpy as np

from dpspectral.datasets import random_orthonormal
from dpspectral.lowrank import ContinualLRF

QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
T = 64 if QUICK else 256  # the horizon: one row per step, so the matrix is T x N at the end
N, K = 40, 3
EPSILON = 2.0

rng = np.random.default_rng(0)
basis = random_orthonormal(N, K, random_state=1)
A = 20 * ((rng.standard_normal((T, K)) * [8.0, 5.0, 3.0]) @ basis.T + 0.3 * rng.standard_normal((T, N)))

# %%
# Step and release
# ----------------
# ``step(rows, cols, values)`` adds one batch of entries (here the whole row ``t``); ``release()``
# returns the factorization of the prefix matrix (post-processing of the summed nodes). The budget
# was charged when ``state`` was created.
state = ContinualLRF((T, N), K, T, epsilon=EPSILON, delta=1e-6, random_state=0)
print(state.privacy)

prefix = np.zeros_like(A)
rel_error, best_error, noise_std = [], [], []
cols = np.arange(N)
for t in range(T):
    state.step(np.full(N, t), cols, A[t])
    prefix[t] = A[t]
    release = state.release()
    approx = release.U @ np.diag(release.S) @ release.V.T
    norm = np.linalg.norm(prefix)
    rel_error.append(np.linalg.norm(prefix - approx) / norm)
    s = np.linalg.svd(prefix, compute_uv=False)
    best_error.append(np.sqrt(np.sum(s[K:] ** 2)) / norm)
    noise_std.append(release.diagnostics["noise_std"])
print(f"tree levels: {state.levels}; after {T} steps: relative error {rel_error[-1]:.3f} "
      f"(best rank-{K}: {best_error[-1]:.3f})")

# %%
# The figure. Top: ``||A_t - U_t S_t V_t^T||_F / ||A_t||_F`` for the release after step ``t`` (1 is
# the error of publishing the zero matrix), and the best rank-3 error of the same prefix. The error
# is large for the first rows (little signal, the same noise) and falls as rows accumulate. Bottom:
# the standard deviation of the noise in each release, ``sqrt(nodes) sigma``: it jumps with the
# number of tree nodes summed (the number of 1 bits of ``t``), never above ``sqrt(levels) sigma``.
steps = np.arange(1, T + 1)
fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 5.5), sharex=True, height_ratios=[2, 1])
top.plot(steps, rel_error, label=f"ContinualLRF release (epsilon = {EPSILON:g} for all {T})")
top.plot(steps, best_error, "k--", label=f"best rank-{K} of the prefix (non-private)")
top.axhline(1.0, color="gray", ls=":", label="the zero matrix")
top.set_ylim(0, 1.2)
top.set_ylabel("relative error")
top.legend(fontsize=8)
bottom.step(steps, noise_std, where="post", color="tab:purple")
bottom.set_ylabel("noise std")
bottom.set_xlabel("time step t (rows received)")
fig.tight_layout()
plt.show()
