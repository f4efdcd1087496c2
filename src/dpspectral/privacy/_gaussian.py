"""Gaussian mechanism: noise multipliers for one release and symmetric noise matrices.

A *noise multiplier* ``s`` is the noise standard deviation divided by the L2 sensitivity of the
released quantity under the stated neighbouring relation; ``GaussianDpEvent(s)`` is the event.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import dp_accounting
import numpy as np

from ._accounting import calibrate

__all__ = [
    "analytic_noise_multiplier",
    "classic_noise_multiplier",
    "gaussian_epsilon",
    "split_noise_multiplier",
    "symmetric_gaussian",
]


def classic_noise_multiplier(epsilon: float, delta: float) -> float:
    """``sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork and Roth 2014, Theorem A.1).

    The classic formula certifies (epsilon, delta)-DP only for ``epsilon < 1``; for larger epsilon it
    may or may not, and :func:`gaussian_epsilon` tells what it does certify.
    """
    from .._constraints import EPSILON, check_params

    check_params({"epsilon": EPSILON}, {"epsilon": epsilon}, "classic_noise_multiplier")
    if not (0 < delta < 1):
        raise ValueError(f"The 'delta' parameter must be in (0, 1). Got {delta!r} instead.")
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@functools.lru_cache(maxsize=1024)
def analytic_noise_multiplier(epsilon: float, delta: float) -> float:
    """Smallest noise multiplier giving (epsilon, delta)-DP for one Gaussian release, any epsilon.

    The analytic Gaussian mechanism (Balle and Wang 2018), found by root finding on the exact
    Gaussian accountant (``dp_accounting.calibrate_dp_mechanism``), so the result never falls short.
    """
    if delta <= 0:
        raise ValueError(
            f"The 'delta' parameter must be in (0, 1) for the Gaussian mechanism. Got {delta!r}."
        )
    return calibrate(dp_accounting.GaussianDpEvent, epsilon, delta, accounting="gaussian")


def gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """Exact epsilon at ``delta`` of one Gaussian release with this noise multiplier."""
    if noise_multiplier <= 0 or delta <= 0:
        return math.inf
    return float(dp_accounting.get_epsilon_gaussian(noise_multiplier, delta))


def split_noise_multiplier(noise_multiplier: float, shares: Sequence[float]) -> list[float]:
    """Split one Gaussian release's budget into several Gaussian releases, exactly.

    Gaussian releases with multipliers ``s_i`` compose (adaptively) to exactly one Gaussian release
    with ``s = (sum s_i^-2)^-1/2`` (Gaussian DP). Giving release ``i`` the share ``w_i`` of
    ``s^-2`` (``s_i = s / sqrt(w_i)``, shares summing to 1) therefore spends exactly the budget of
    the single release. The multipliers are raised by a relative 1e-12 so that rounding in
    ``s / sqrt(w_i)`` and in the accountant's composition never makes the parts certify an epsilon
    above the single release's (it did by 5e-14 relative, e.g. at epsilon = 2^-7 with two halves).
    """
    w = np.asarray(shares, dtype=float)
    if w.ndim != 1 or np.any(w <= 0) or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(f"Budget shares must be positive and sum to 1. Got {list(shares)!r}.")
    return [noise_multiplier * (1.0 + _SPLIT_MARGIN) / math.sqrt(float(x)) for x in w]


#: Relative safety margin of :func:`split_noise_multiplier` against floating-point rounding.
_SPLIT_MARGIN = 1e-12


def symmetric_gaussian(
    d: int, sigma: float, rng: np.random.Generator, dtype: np.dtype | type = np.float64
) -> np.ndarray:
    """A d x d symmetric matrix with i.i.d. N(0, sigma^2) entries on and above the diagonal.

    The released quantity is the upper triangle (with the diagonal); the lower triangle is its mirror,
    so the noise is exactly a Gaussian mechanism on ``d (d + 1) / 2`` coordinates.
    """
    # (Z + Z^T) / sqrt(2) has i.i.d. N(0, 1) entries above the diagonal (each pair of independent
    # normals is summed once); the diagonal is then set to Z's own independent N(0, 1) entries.
    Z = rng.standard_normal((d, d))
    noise = Z + Z.T
    noise *= sigma / math.sqrt(2.0)
    np.fill_diagonal(noise, sigma * np.diagonal(Z))
    return noise.astype(dtype, copy=False)
