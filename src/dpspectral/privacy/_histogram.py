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
:func:`gaussian_stable_histogram`
    Its Gaussian variant, drawn inside a charged release (the private label set of the Fisher
    discriminant with ``classes=None``): Gaussian noise on the non-empty bins and a threshold that a bin
    of count 1 passes with probability at most ``delta / 2`` (replace-one; ``delta`` add/remove). Its
    noise is one ``GaussianDpEvent`` that composes exactly with the run's other Gaussian releases; the
    threshold's failure is ``EpsilonDeltaDpEvent(0, delta)``, composed by basic composition
    (:func:`gaussian_stable_histogram_events`; Privacy below).

Privacy (both)
--------------
Replace-one: one value moves from one bin to another, so two counts change by 1 (L1 shift 2).
Add/remove: one count changes by 1 (L1 shift 1). The Laplace scale is ``shift / epsilon``.
The thresholded histogram additionally fails only when a bin that is empty in one data set but not in
the other passes the threshold: with threshold ``1 + shift * ln(2 / delta) / epsilon`` a count of 1
passes with probability ``delta / 4`` (``P(Lap(b) > b ln(2/delta)) = delta / 4``); there are at most
two such bins (replace-one; one under add/remove), so the failure probability is at most ``delta / 2``,
within delta.

The Gaussian variant (:func:`gaussian_stable_histogram`), inside a run of later releases that read the
kept bins: let ``U`` be the bins occupied in D or D', and P* the same run with every bin of ``U``
noised (count 0 where empty). P*(D) and P*(D') differ by a Gaussian mechanism on counts of L2
sensitivity ``sqrt(2)`` (replace-one: one unit moved between two bins) or 1 (add/remove), composed
with the rest: (epsilon, delta_G(epsilon)) for every epsilon, delta_G the privacy profile of all the
Gaussian releases. A bin occupied on one side only has count exactly 1 there. The run on D equals P*(D)
unless a bin empty in D passes (probability ``p0 = P(Z > t)``), and P*(D') restricted to outputs
without the bin that D' lacks is P(D') times ``1 - p0`` (that bin's noise is independent, and while it
is not kept the run is the same). Splitting the outputs of D on whether they hold its one-sided bin
(probability ``q = P(1 + Z > t)``):
``P(D)(S) <= q + p0 + P*(D)(S') <= q + p0 + e^eps P*(D')(S') + delta_G <= e^eps P(D')(S) + delta_G +
q + p0`` (``S'``: the outputs of S without that bin). So the run is (epsilon, delta_G(epsilon) + q + p0)-DP
for every epsilon, with ``q + p0 <= 2 q`` (replace-one) and ``q`` (add/remove; one side only has a
one-sided bin): no ``e^eps`` factor, so the failure composes with the ledger's other events as an
``EpsilonDeltaDpEvent(0, delta)`` when ``q <= delta / 2`` (replace-one) or ``q <= delta`` (add/remove).
The threshold is ``1 + sigma z`` with ``z = Phi^-1(1 - q)`` for the seeded (continuous) Gaussian, and
``z = sqrt(2 ln(1 / q))`` with sigma widened by the grid for any other source (the exact discrete
Gaussian is sub-Gaussian: ``P(Z >= t) <= exp(-t^2 / (2 sigma^2))``).

Noise source
------------
Both take ``random_state``: a NumPy generator (seeded, exactly the draws of before), a
:class:`~dpspectral.privacy._noise.NoiseSource`, or the :class:`~dpspectral.privacy._pipeline.Releaser` of
the caller's release block (its noise source; drawing after the block ends is refused). With
:class:`~dpspectral.privacy._noise.SecureNoise` every bin's noise is an exact discrete Laplace draw,
one bin at a time, so its (grid-widened) scale is the same for every bin and does not depend on how many
bins are occupied. :func:`laplace_histogram_mode` then enumerates *every* bin of the public range (the
O(1) maximum over the empty bins is a floating-point inverse CDF, which the secure source does not
offer): the range is limited to :data:`MAX_SECURE_BINS` bins (a public fact), and its rare exact ties
(about ``2^-30`` per pair of bins) are broken uniformly at random. The secure source needs the L1
sensitivity of the counts (:func:`histogram_shift`).
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np

from .._constraints import EPSILON, NONE, Interval, check_params
from ._accounting import EpsilonDeltaDpEvent
from ._budget import Relation, as_relation
from ._draws import below, word_source
from ._noise import SeededNoise, grid, seeded_source
from ._noise_base import NoiseSource
from ._pipeline import Releaser

__all__ = [
    "MAX_SECURE_BINS",
    "gaussian_stable_histogram",
    "gaussian_stable_histogram_events",
    "gaussian_stable_threshold",
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


#: The largest public range :func:`laplace_histogram_mode` enumerates with a secure noise source.
MAX_SECURE_BINS = 1 << 16

_MODE_CONSTRAINTS: dict[str, Any] = {
    "low": Interval(None, None, integer=True),
    "high": Interval(None, None, integer=True),
    "scale": Interval(0, None, "neither"),
    "sensitivity": [Interval(0, None, "neither"), NONE],
}
_STABLE_CONSTRAINTS: dict[str, Any] = {"epsilon": EPSILON, "delta": Interval(0, 1, "neither")}


def _noise_of(random_state: Any, owner: str) -> NoiseSource:
    """The noise source behind ``random_state`` (a Generator is wrapped: it draws as it would unwrapped)."""
    if isinstance(random_state, Releaser):
        random_state.generator  # noqa: B018 - refuses a draw after the release block ended
        return random_state.noise
    if isinstance(random_state, NoiseSource):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return seeded_source(random_state)
    raise TypeError(f"The 'random_state' parameter of {owner} must be a numpy Generator, a NoiseSource or "
                    f"a Releaser. Got {random_state!r} instead.")


def _noisy_counts(noise: NoiseSource, counts: np.ndarray, scale: float,
                  sensitivity: float | None) -> np.ndarray:
    """``counts + Lap(scale)`` per bin: one vector draw (seeded), or one exact draw per bin (any other
    source: a per-bin grid widening that does not depend on the number of bins)."""
    if isinstance(noise, SeededNoise):
        return np.asarray(noise.add_laplace(counts, scale, sensitivity))
    if hasattr(noise, "add_laplace_each"):  # the exact sources: the per-bin releases in one call
        return np.asarray(noise.add_laplace_each(counts, scale, sensitivity), dtype=float)
    return np.array([noise.add_laplace(float(c), scale, sensitivity) for c in counts], dtype=float)


def laplace_histogram_mode(
    bins: Any,
    low: int,
    high: int,
    *,
    scale: float,
    random_state: Any,
    sensitivity: float | None = None,
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
    random_state : numpy Generator, NoiseSource or Releaser
        Where the noise comes from (module docstring: Noise source).
    sensitivity : float, optional
        The L1 sensitivity of the counts (:func:`histogram_shift`); required by the secure source.

    Returns
    -------
    (index, noisy_count) of the winning bin.

    Privacy
    -------
    Report-noisy-max over every bin of the public range: ``Lap(scale)`` on each count, so pure
    ``epsilon = sensitivity / scale`` (:func:`laplace_histogram_event`). Only the winner (and its noisy
    count) is returned. The error for a bin outside the range names the public range only.
    """
    owner = "laplace_histogram_mode"
    check_params(_MODE_CONSTRAINTS, {"low": low, "high": high, "scale": scale, "sensitivity": sensitivity},
                 owner)
    if high < low:
        raise ValueError(f"{owner}: the range [{low}, {high}] is empty (low must be <= high).")
    noise = _noise_of(random_state, owner)
    ids, counts = _counts(bins)
    if ids.size and (ids[0] < low or ids[-1] > high):
        # the public range only: the offending values are private
        raise ValueError(f"bin indices must lie in the public range [{low}, {high}]; some do not.")
    if isinstance(noise, SeededNoise):
        return _mode_over_occupied(ids, counts, low, high, scale, sensitivity, noise)
    return _mode_over_every_bin(ids, counts, low, high, scale, sensitivity, noise)


def _mode_over_occupied(ids: np.ndarray, counts: np.ndarray, low: int, high: int, scale: float,
                        sensitivity: float | None, noise: NoiseSource) -> tuple[int, float]:
    """Noise on the occupied bins, and the O(1) maximum of the empty bins' noise (module docstring)."""
    rng = noise.generator
    noisy = _noisy_counts(noise, counts, scale, sensitivity)
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


def _mode_over_every_bin(ids: np.ndarray, counts: np.ndarray, low: int, high: int, scale: float,
                         sensitivity: float | None, noise: NoiseSource) -> tuple[int, float]:
    """Exact noise on every bin of the range (a source without the O(1) maximum), ties uniform."""
    width = high - low + 1
    if width > MAX_SECURE_BINS:
        raise ValueError(
            f"laplace_histogram_mode: with a {type(noise).__name__} source every bin of the public range is "
            f"noised one by one, and the range [{low}, {high}] has {width} bins (at most {MAX_SECURE_BINS}); "
            "narrow the range, or draw float noise (dpspectral.config_context(noise='float'))."
        )
    full = np.zeros(width)
    full[ids - low] = counts
    noisy = _noisy_counts(noise, full, scale, sensitivity)
    top = np.flatnonzero(noisy == noisy.max())
    src = word_source(noise)  # a tie broken uniformly: from the source's integer words when exact
    j = int(top[0]) if top.size == 1 else int(top[below(src, [top.size])[0]] if src is not None
                                              else noise.generator.choice(top))
    return low + j, float(noisy[j])


def stable_threshold(epsilon: float, delta: float, relation: Relation | str) -> float:
    """The count a noisy bin must reach to be kept."""
    return 1.0 + histogram_shift(relation) * math.log(2.0 / delta) / epsilon


def stable_histogram(
    bins: Any,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = Relation.REPLACE_ONE,
    random_state: Any,
) -> dict[int, float]:
    """Stability-based histogram: ``{bin: noisy count}`` of the non-empty bins that pass the threshold.

    ``Lap(shift / epsilon)`` on each non-empty bin; bins below ``1 + shift ln(2/delta) / epsilon`` are
    reported as 0 (left out). ``random_state``: a numpy Generator, a NoiseSource or a Releaser.

    Privacy
    -------
    (epsilon, delta)-DP for the stated relation (module docstring): the L1 shift of the counts is
    :func:`histogram_shift`, and a bin occupied on one side only passes the threshold with probability
    at most ``delta / 4`` (the secure source's per-bin grid widening, below ``2^-29`` relative, stays
    within the ``delta / 2`` left unused).
    """
    owner = "stable_histogram"
    check_params(_STABLE_CONSTRAINTS, {"epsilon": epsilon, "delta": delta}, owner)
    noise = _noise_of(random_state, owner)
    ids, counts = _counts(bins)
    shift = histogram_shift(relation)
    noisy = _noisy_counts(noise, counts, shift / epsilon, shift)
    keep = noisy >= stable_threshold(epsilon, delta, relation)
    return {int(i): float(c) for i, c in zip(ids[keep], noisy[keep], strict=True)}


def stable_histogram_mode(
    bins: Any, *, epsilon: float, delta: float, relation: Relation | str = Relation.REPLACE_ONE,
    random_state: Any,
) -> int | None:
    """The heaviest bin kept by :func:`stable_histogram`, or None when every bin was suppressed.

    Privacy
    -------
    That of :func:`stable_histogram` (the mode is post-processing of its release).
    """
    kept = stable_histogram(bins, epsilon=epsilon, delta=delta, relation=relation,
                            random_state=random_state)
    if not kept:
        return None
    return max(kept, key=kept.__getitem__)


def stable_histogram_event(epsilon: float, delta: float) -> dp_accounting.DpEvent:
    """The (epsilon, delta) event of one stability-based histogram."""
    return EpsilonDeltaDpEvent(float(epsilon), float(delta))


def _one_sided_bins(relation: Relation | str) -> int:
    """Bins that one record can fill or empty: two under replace-one (its old and its new bin), one under
    add/remove."""
    return 2 if as_relation(relation) is Relation.REPLACE_ONE else 1


def gaussian_stable_threshold(std: float, delta: float, relation: Relation | str, *,
                              exact: bool = True) -> float:
    """The noisy count a bin must exceed: a bin of count <= 1 passes with probability at most
    ``delta / 2`` (replace-one) or ``delta`` (add/remove) (module docstring: Privacy).

    ``exact``: the continuous Gaussian's tail (``Phi^-1``, the seeded source); else the sub-Gaussian
    bound ``sqrt(2 ln(1 / q))`` (any Gaussian-like source, e.g. the exact discrete Gaussian), with
    ``std`` the source's (widened) standard deviation.
    """
    from scipy.stats import norm

    q = float(delta) / _one_sided_bins(relation)
    z = float(norm.isf(q)) if exact else math.sqrt(2.0 * math.log(1.0 / q))
    return 1.0 + float(std) * z


def gaussian_stable_histogram_events(noise_multiplier: float,
                                     delta: float) -> tuple[dp_accounting.DpEvent, dp_accounting.DpEvent]:
    """The events of one Gaussian stability histogram: ``GaussianDpEvent(multiplier)`` (the noise, the
    multiplier over the counts' L2 sensitivity) and ``EpsilonDeltaDpEvent(0, delta)`` (the threshold)."""
    return dp_accounting.GaussianDpEvent(float(noise_multiplier)), EpsilonDeltaDpEvent(0.0, float(delta))


def gaussian_stable_histogram(counts: Any, *, releaser: Releaser, name: str, delta: float,
                              relation: Relation | str) -> tuple[np.ndarray, float]:
    """The bins of ``counts`` (all occupied: counts >= 1) kept by the Gaussian stability histogram.

    Noise: the planned Gaussian release ``name`` of the charged ``releaser`` (one vector draw from the
    seeded source; one exact draw per bin from any other, so its grid widening does not depend on the
    number of bins). Returns ``(kept, threshold)``: a boolean mask over the bins and the public
    threshold (:func:`gaussian_stable_threshold`). Only the mask is meant to be released; the noisy
    counts stay inside.

    Privacy
    -------
    Module docstring: with ``releaser``'s plan charging :func:`gaussian_stable_histogram_events` at the
    release's multiplier and ``delta``, (epsilon, delta_G(epsilon) + delta) composed with the run.
    """
    spec = releaser.plan[name]
    if spec.kind != "gaussian" or spec.sensitivity is None or not spec.sensitivity > 0:
        raise ValueError(f"{releaser.plan.label}: release {name!r} must be Gaussian with a positive "
                         "sensitivity (the counts' L2 sensitivity).")
    values = np.asarray(counts, dtype=np.float64).ravel()
    seeded = isinstance(releaser.noise, SeededNoise)
    if seeded:
        noisy = np.asarray(releaser.add(name, values), dtype=np.float64)
        std = spec.scale
    else:
        noisy = np.array([releaser.add(name, float(c)) for c in values], dtype=np.float64)
        std = spec.scale * (spec.sensitivity + grid(spec.scale)) / spec.sensitivity
    threshold = gaussian_stable_threshold(std, delta, relation, exact=seeded)
    return noisy > threshold, threshold
