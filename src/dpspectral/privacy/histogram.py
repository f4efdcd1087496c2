"""Private histograms over integer bins: the mode of a set of values.

Two learners, both releasing (for our uses) only the index of the heaviest bin:

:func:`laplace_histogram_mode`
    Laplace noise on *every* bin of a finite, data-independent range ``[low, high]`` (pure
    epsilon-DP), then the argmax. Empty bins are not enumerated: the largest of ``M`` i.i.d. Laplace
    draws is sampled directly (inverse CDF of ``U^{1/M}``), and the winning empty bin is uniform
    among the empty ones, which has exactly the law of the argmax over the full noisy histogram.
    Cost O(number of non-empty bins), whatever the range.
:func:`stable_histogram`
    The stability-based histogram (Karwa and Vadhan 2018, Lemma 2.3; spec-pca-gep.md §A.3): Laplace
    noise on the non-empty bins only and a threshold, for countably many bins; (epsilon, delta)-DP.

Privacy (both)
--------------
Replace-one: one value moves from one bin to another, so two counts change by 1 (L1 shift 2).
Add/remove: one count changes by 1 (L1 shift 1). The Laplace scale is ``shift / epsilon``.
The thresholded histogram additionally fails only when a bin that is empty in one data set but not in
the other passes the threshold: with threshold ``1 + shift * ln(2 / delta) / epsilon`` a count of 1
passes with probability ``delta / 4`` (``P(Lap(b) > b ln(2/delta)) = delta / 4``); there are at most
two such bins (replace-one; one under add/remove), so the failure probability is at most ``delta / 2``,
within delta.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np

from .accounting import EpsilonDeltaDpEvent
from .budget import Relation, as_relation

__all__ = [
    "histogram_shift",
    "laplace_histogram_event",
    "laplace_histogram_mode",
    "stable_histogram",
    "stable_histogram_event",
    "stable_histogram_mode",
]


def histogram_shift(relation: Relation | str) -> float:
    """L1 distance between the count vectors of neighbouring data sets."""
    return 2.0 if as_relation(relation) is Relation.REPLACE_ONE else 1.0


def laplace_histogram_event(scale: float, relation: Relation | str) -> dp_accounting.DpEvent:
    """The event of one Laplace histogram with noise ``scale`` (multiplier = scale / L1 shift)."""
    return dp_accounting.LaplaceDpEvent(scale / histogram_shift(relation))


def _laplace_max(m: int, scale: float, rng: np.random.Generator) -> float:
    """The largest of ``m`` i.i.d. Laplace(0, scale) draws, sampled in O(1)."""
    log_u = math.log(rng.random()) / m  # log of U^(1/m), the CDF value of the maximum
    u = math.exp(log_u)
    if u > 0.5:
        return -scale * math.log(2.0 * -math.expm1(log_u))
    return scale * math.log(2.0 * u)


def _counts(bins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bins = np.asarray(bins, dtype=np.int64).ravel()
    if bins.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo = int(bins.min())
    span = int(bins.max()) - lo + 1
    if span <= 4 * bins.size + 1024:
        counts = np.bincount(bins - lo, minlength=span)
        nz = np.flatnonzero(counts)
        return nz + lo, counts[nz]
    ids, counts = np.unique(bins, return_counts=True)
    return ids, counts


def laplace_histogram_mode(
    bins: Any,
    low: int,
    high: int,
    *,
    scale: float,
    random_state: np.random.Generator,
) -> tuple[int, float]:
    """Index of the heaviest bin of a Laplace-noised histogram over ``[low, high]``.

    Parameters
    ----------
    bins : array of int
        The bin of every value; all must lie in ``[low, high]`` (a data-independent range).
    low, high : int
        The bin range (inclusive); the noise covers every bin in it.
    scale : float
        Laplace scale, ``L1 shift / epsilon`` for epsilon-DP (see :func:`histogram_shift`).
    random_state : numpy Generator

    Returns
    -------
    (index, noisy_count) of the winning bin.
    """
    rng = random_state
    ids, counts = _counts(bins)
    if ids.size and (ids[0] < low or ids[-1] > high):
        # the public range only: the offending values are private
        raise ValueError(f"bin indices must lie in the public range [{low}, {high}]; some do not.")
    noisy = counts + rng.laplace(0.0, scale, size=counts.size)
    best = int(np.argmax(noisy)) if noisy.size else -1
    best_value = float(noisy[best]) if noisy.size else -math.inf
    n_empty = (high - low + 1) - ids.size
    if n_empty > 0:
        empty_max = _laplace_max(n_empty, scale, rng)
        if empty_max > best_value:
            occupied = set(ids.tolist())
            while True:  # a uniform empty bin (the occupied ones are a vanishing fraction or few)
                j = int(rng.integers(low, high + 1))
                if j not in occupied:
                    return j, empty_max
    return int(ids[best]), best_value


def stable_threshold(epsilon: float, delta: float, relation: Relation | str) -> float:
    """The count a noisy bin must reach to be kept."""
    return 1.0 + histogram_shift(relation) * math.log(2.0 / delta) / epsilon


def stable_histogram(
    bins: Any,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = Relation.REPLACE_ONE,
    random_state: np.random.Generator,
) -> dict[int, float]:
    """Stability-based histogram: ``{bin: noisy count}`` of the non-empty bins that pass the threshold.

    ``Lap(shift / epsilon)`` on each non-empty bin; bins below ``1 + shift ln(2/delta) / epsilon`` are
    reported as 0 (left out). (epsilon, delta)-DP for the stated relation (module docstring).
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"stable_histogram needs epsilon > 0 and delta in (0, 1); got {epsilon}, {delta}.")
    ids, counts = _counts(bins)
    scale = histogram_shift(relation) / epsilon
    noisy = counts + random_state.laplace(0.0, scale, size=counts.size)
    keep = noisy >= stable_threshold(epsilon, delta, relation)
    return {int(i): float(c) for i, c in zip(ids[keep], noisy[keep], strict=True)}


def stable_histogram_mode(
    bins: Any, *, epsilon: float, delta: float, relation: Relation | str = Relation.REPLACE_ONE,
    random_state: np.random.Generator,
) -> int | None:
    """The heaviest bin kept by :func:`stable_histogram`, or None when every bin was suppressed."""
    kept = stable_histogram(bins, epsilon=epsilon, delta=delta, relation=relation,
                            random_state=random_state)
    if not kept:
        return None
    return max(kept, key=kept.__getitem__)


def stable_histogram_event(epsilon: float, delta: float) -> dp_accounting.DpEvent:
    """The (epsilon, delta) event of one stability-based histogram."""
    return EpsilonDeltaDpEvent(float(epsilon), float(delta))
