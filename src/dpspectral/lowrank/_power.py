"""Row-level private right subspace by noisy subspace iteration on ``A^T A`` (Hardt and Roth, STOC 2013).

The default algorithm of :func:`~dpspectral.lowrank._hardt_roth.hardt_roth` (``algorithm="power"``).
Why not the STOC 2012 range finder on real data: its stage 1 ``A Omega + N1`` puts noise of per-entry
scale ~ ``2 C sqrt(q_ell) s`` on an m x ell matrix, whose spectral norm ``~ sigma sqrt(m)`` (about 1,700 on
20,000 unit MNIST rows at epsilon = 1) buries every singular value of A (the largest is 91): the
subspace it finds is random. Under the same relation the Gram matrix ``A^T A`` has signal ``sigma_i^2``
at sensitivity ``sqrt(2) C^2``, independent of m: iterating ``Y_j = A^T (A X_j) + N_j`` on an n x p
block finds V at Analyze Gauss's level.

The release is the right subspace V (n x k) and singular-value estimates S; **U is not released**.
Under row-level privacy each row of U is one person's coefficients, so no noisy U is useful when
m is large: the data owner computes ``A V`` (and ``A V V^T``) locally from V
(:meth:`RowSubspaceResult.reconstruct` with ``A``).
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np
import scipy.sparse as sp

from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import widen_projection
from ._shrink import signal_singular_values
from ._sketches import orth_columns, svd_top_k
from ._subspace import RowSubspaceResult

__all__ = ["RowSubspaceResult", "default_block", "default_shares", "power_plan", "power_iterate"]


def default_block(k: int, n: int) -> int:
    """p = min(n, 10 k): an oversampled block (free in privacy: the sensitivity does not grow with p)."""
    return int(min(n, 10 * k))


def default_shares(iterations: int) -> tuple[float, ...]:
    """Budget shares of ``1/s^2`` per iteration: 1:2:6 for three (the last iterate decides V), else
    doubling (1:2:4:...)."""
    raw = (1.0, 2.0, 6.0) if iterations == 3 else tuple(2.0**j for j in range(iterations))
    total = sum(raw)
    return tuple(w / total for w in raw)


def power_plan(budget: PrivacyBudget, relation: Relation, row_norm: float, shares: tuple[float, ...],
               label: str, notes: tuple[str, ...], *, shape: tuple[int, int], block: int) -> ReleasePlan:
    """One Gaussian release per iteration, ``"iteration_j"``, sensitivity ``sqrt(2) C^2``.

    The whole Gaussian budget is one analytic multiplier s for (epsilon, delta), split exactly by
    :func:`split_noise_multiplier` (Gaussian DP composes adaptively: ``sum s_j^-2 = s^-2``). Each
    release is widened for the rounding of the computed ``A^T (A X_j)`` (``shape`` ``(m, n)``, public
    under replace-one; ``X_j`` ``n x block`` orthonormal): a sum over the ``m`` rows of ``x x^T X_j``,
    each term through the ``n`` roundings of ``x^T X_j`` as well, of norm at most ``C^2 sqrt(block)``
    (:func:`~dpspectral.privacy._rounding.widen_projection`, ``h = m + n`` plus the products). The
    events are unchanged.
    """
    C = sensitivity_norm(float(row_norm))  # C with the clipping's rounding slack
    sens = math.sqrt(2.0) * C**2
    s = analytic_noise_multiplier(budget.epsilon, budget.delta)
    mults = split_noise_multiplier(s, list(shares))
    rows, features = shape
    releases = tuple(widen_projection(NoisyRelease(f"iteration_{j}", "gaussian", mult * sens, sens), n=rows,
                                      relation=relation, row_norm=C, d=features, columns=block)
                     for j, mult in enumerate(mults))
    events = tuple(dp_accounting.GaussianDpEvent(m) for m in mults)
    return ReleasePlan(label, relation, events, releases, notes=notes)


def power_iterate(A_c: Any, k: int, p: int, plan: ReleasePlan,
                  releaser: Releaser) -> tuple[np.ndarray, np.ndarray, float]:
    """Inside the release block: ``X_0`` random orthonormal (n x p, data-independent), then for each
    planned iteration ``Y_j = A^T (A X_j) + N_j``, ``X_{j+1} = orth(Y_j)``.

    Returns V (the top-k left singular vectors of the last released Y), its top-k singular values
    and the last iteration's noise scale (for :func:`signal_singular_values`).
    """
    n = int(A_c.shape[1])
    X = orth_columns(releaser.standard_normal((n, p)))
    Y = X
    for r in plan.releases:
        AX = A_c @ X
        G = A_c.T @ AX
        Y = releaser.add(r.name, np.asarray(G.toarray() if sp.issparse(G) else G))
        X = orth_columns(Y)
    V, y, _ = svd_top_k(Y, k)
    return V, y, float(plan.releases[-1].scale)


def power_result(V: np.ndarray, y: np.ndarray, sigma: float, p: int, report: Any,
                 diagnostics: dict[str, Any]) -> RowSubspaceResult:
    """Post-processing: S from the released singular values of the last Y (n x p, noise sigma):
    ``S_i = sqrt(lambda_i)`` with ``lambda_i`` the spiked-model estimate (0 below the noise edge)."""
    n = int(V.shape[0])
    lam = signal_singular_values(y, sigma, n, p)
    S = np.sqrt(lam)
    order = np.argsort(-S, kind="stable")
    return RowSubspaceResult(U=None, S=S[order], V=V[:, order], privacy=report,
                             diagnostics=diagnostics)
