"""A private quantile of row norms, for clipping at a bound the data actually reach (adaptive clipping).

A public bound ``C`` on the row norms is chosen before looking at the data, so it is usually loose: on
MNIST with unit rows the *centred* rows have median norm 0.77 and none reaches 1. Noise calibrated to
``C`` is then larger than needed. Adaptive clipping spends a small share of the budget on a private
estimate ``r`` of a quantile of the norms and clips at ``r`` instead: the second release's sensitivity
(and its noise) shrinks by ``(r / C)^2`` for a scatter matrix. For PCA, clipping a row shortens it
without turning it, so clipping below the median costs little: on MNIST the captured energy of the
centred covariance at epsilon = 0.1 is 0.42 with the clip at C and 0.66 at the released 10 % quantile
(``docs/algorithms/covariance.md``, "Centred PCA with adaptive clipping").

The mechanism (Gaussian noisy histogram; Andrew et al. 2021 and Amin et al. 2019 use the same idea)
-------------------------------------------------------------------------------------------------
The norms ``||x_i - m||`` (``m`` a public or previously released centre) are counted in public bins
with geometric edges ``C 2^(-j/BINS_PER_OCTAVE)``, ``j = 0, ..., BINS_PER_OCTAVE * OCTAVES`` (below
``C 2^-OCTAVES`` one bin, above ``C`` one bin): scale-free in ``C``, 9 % steps. The count vector gets
Gaussian noise (one Gaussian release). The clip is post-processing: walking down from the top, the
lower edge of the first bin at which the noisy number of rows at or above it reaches ``(1 - q) N``
(``N``: the public n under replace-one, a released count under add/remove), at most ``C``. Walking
from the top sums the noise of the bins above the quantile only: for the low quantiles used here the
target ``(1 - q) N`` is large, so the noise of many empty bins far below the norms cannot reach it
early. A clip that comes out too low costs little for PCA (rows are shortened, not turned).

Privacy
-------
Relation: replace-one or add/remove (the histogram's own). Changing one row moves one unit of count
from one bin to another (L2 sensitivity ``sqrt(2)``) under replace-one, adds or removes one (``1``)
under add/remove. Event: ``GaussianDpEvent(sigma / sensitivity)``. The edges depend only on ``C``; the
centre must be public or released earlier (then the histogram is planned from a released value: a
staged release, :class:`~dpspectral.privacy._pipeline.StagedRelease`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._array_api import (
    dispatch_enabled,
    from_numpy,
    get_namespace_and_device,
    is_device_array,
    isfinite_all,
    to_numpy,
    work_dtype,
)
from .._device_stream import device_blocks
from .._rows import _as_float_block, _iter_blocks, check_dask_columns, is_dask_array, not_finite_error
from ._budget import Relation
from ._centred_norms import centred_row_norms

__all__ = ["BALANCE_FACTOR", "BALANCE_Z", "BINS_PER_OCTAVE", "EDGE_SLACK", "OCTAVES", "balanced_clip",
           "bin_counts", "bound_edges", "clip_from_histogram", "histogram_sensitivity", "norm_edges",
           "norm_histogram"]

#: The bins cover ``[C 2^-OCTAVES, C]`` (plus one bin below and one above) ...
OCTAVES = 8
#: ... in steps of ``2^(1/BINS_PER_OCTAVE)`` (9 %).
BINS_PER_OCTAVE = 8
#: The balance rule (:func:`balanced_clip`): about ``BALANCE_FACTOR sqrt(d) nu`` rows above the clip
#: (``nu``: the noise's spectral norm per unit ``r^2``), plus ``BALANCE_Z`` standard deviations of the
#: noisy count walked (measured in docs/algorithms/covariance.md).
BALANCE_FACTOR = 0.5
BALANCE_Z = 3.0


#: Norms within this relative distance below the public bound count as at the bound (rows scaled to
#: unit norm have computed norms 1 - 1e-16): :func:`bound_edges`.
EDGE_SLACK = 1e-9


def norm_edges(row_norm: float) -> np.ndarray:
    """The public bin edges ``C 2^(-j/BINS_PER_OCTAVE)``, ``j = BINS_PER_OCTAVE OCTAVES, ..., 0``."""
    j = np.arange(BINS_PER_OCTAVE * OCTAVES, -1, -1, dtype=float)
    return float(row_norm) * np.exp2(-j / BINS_PER_OCTAVE)


def bound_edges(row_norm: float) -> np.ndarray:
    """The edges for a clip at most the public bound: ``norm_edges(C (1 - EDGE_SLACK))``, so rows at
    the bound (up to rounding) fall in the top bin, the bin of the bound itself."""
    return norm_edges(float(row_norm) * (1.0 - EDGE_SLACK))


def histogram_sensitivity(relation: Relation) -> float:
    """L2 sensitivity of the count vector: ``sqrt(2)`` (replace-one), ``1`` (add/remove)."""
    return math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0


def norm_histogram(X: Any, edges: np.ndarray, *, center: np.ndarray | None, owner: str,
                   show_progress: bool | None = None) -> np.ndarray:
    """Counts of ``||x_i - center||`` in the bins ``(-inf, e_0), [e_0, e_1), ..., [e_B, inf)``.

    Not private by itself: the caller releases it with noise inside a charged plan. One pass over
    ``X`` (array, memmap, sparse, Dask, or re-iterable blocks), the same code path for every row. A
    PyTorch/CuPy array with array API dispatch on: the norms on its device, the counts (NumPy) here.
    """
    if hasattr(X, "device_target") or (is_device_array(X) and dispatch_enabled()):
        # the norms on X's device (a device array, or host rows streamed there: device=), the counts back
        return _norm_histogram_xp(X, *get_namespace_and_device(X, owner), edges, center, owner,
                                  show_progress)
    counts = np.zeros(edges.size + 1, dtype=np.float64)
    if is_dask_array(X):
        return _norm_histogram_dask(X, edges, center, owner)
    d: int | None = None
    for first_row, raw in _iter_blocks(X, owner, show_progress):
        block = _as_float_block(raw, first_row, d, owner)
        d = block.shape[1]
        if block.shape[0] == 0:
            continue
        dense = block.toarray() if sp.issparse(block) else np.asarray(block)
        if not np.isfinite(dense).all():  # a re-read stream with a bad block: the same refusal
            raise not_finite_error(owner)
        counts += bin_counts(centred_row_norms(dense, center), edges)  # no centred copy of the block
    return counts


def bin_counts(norms: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The counts of ``norms`` in the bins of :func:`norm_histogram` (float64, ``edges.size + 1``
    of them): bin 0 below ``edges[0]``, bin ``i`` in ``[edges[i-1], edges[i])``, the last at or above
    ``edges[-1]`` (an infinite norm, from a finite row whose square overflows, too)."""
    return np.bincount(np.searchsorted(edges, norms, side="right"),
                       minlength=edges.size + 1).astype(np.float64)


def _norm_histogram_dask(X: Any, edges: np.ndarray, center: np.ndarray | None, owner: str) -> np.ndarray:
    """The Dask branch of :func:`norm_histogram`: one task per row block counts its norms (and flags
    NaN/inf), Dask sums the short count vectors in a tree; nothing of size n moves to the caller."""
    check_dask_columns(X)
    X = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X
    partials = X.map_blocks(_block_counts, edges, center, chunks=((1,) * X.numblocks[0], (edges.size + 2,)),
                            dtype=np.float64, meta=np.empty((0, 0)))
    total = np.asarray(partials.sum(axis=0).compute())
    if total[0]:
        raise not_finite_error(owner)
    return total[1:]


def _block_counts(block: Any, edges: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """One Dask block's ``[has NaN/inf, counts...]`` (runs on a worker)."""
    dense = np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)
    out = np.zeros((1, edges.size + 2))
    if not np.isfinite(dense).all():
        out[0, 0] = 1.0
        return out
    if center is not None:
        dense = dense - center
    with np.errstate(over="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", dense, dense))
    out[0, 1:] = bin_counts(norms, edges)
    return out


def _norm_histogram_xp(X: Any, xp: Any, device: Any, edges: np.ndarray, center: Any,
                       owner: str, show_progress: bool | None = None) -> np.ndarray:
    """The array API branch of :func:`norm_histogram` (the same bins, the same refusal of NaN/inf).

    On the device: ``#{i: ||x_i - center|| >= e_j}`` for every edge; only that short vector comes back.
    ``X`` is a device array or host rows streamed there block by block (``device=``); each block is
    compared with the edges in pieces of at most ``2^24`` entries.
    """
    dtype = work_dtype(X, xp)
    edges_x = from_numpy(np.asarray(edges, dtype=np.float64), xp, device, dtype)
    center_x = None if center is None else from_numpy(center, xp, device, dtype)
    at_or_above = xp.zeros((edges.size,), dtype=xp.int64, device=device)
    n = 0
    for _, block in device_blocks(X, xp, owner, show_progress):
        raw = xp.astype(block, dtype, copy=False)
        n += int(raw.shape[0])
        if raw.shape[0] == 0:
            continue
        m, rows = int(raw.shape[0]), max(1, (1 << 24) // max(int(raw.shape[1]), edges.size, 1))
        for a in range(0, m, rows):
            part = raw[a:min(m, a + rows), ...]
            shifted = part if center_x is None else part - center_x
            norms = xp.linalg.vector_norm(shifted, axis=1)  # an overflow gives inf: the top bin, as on NumPy
            if not isfinite_all(norms, xp) and not isfinite_all(part, xp):  # NaN/inf in the data: refused
                raise not_finite_error(owner)
            at_or_above = at_or_above + count_at_or_above_xp(norms, edges_x, xp, device)
    return counts_from_at_or_above(to_numpy(at_or_above), n)


def count_at_or_above_xp(norms: Any, edges_x: Any, xp: Any, device: Any) -> Any:
    """``#{i: norms_i >= e_j}`` for every edge, on the norms' device (an int64 vector of ``xp``), the
    norms compared with the edges in pieces of at most ``2^24`` comparisons."""
    m = int(norms.shape[0])
    rows = max(1, (1 << 24) // max(int(edges_x.shape[0]), 1))
    at_or_above = xp.zeros(edges_x.shape, dtype=xp.int64, device=device)
    for a in range(0, m, rows):
        piece = norms[a:min(m, a + rows)]
        # counted in float32 (exact: a piece has fewer than 2^24 rows), then added as integers
        counts = xp.sum(xp.astype(piece[:, None] >= edges_x[None, :], xp.float32), axis=0)
        at_or_above = at_or_above + xp.astype(counts, xp.int64)
    return at_or_above


def counts_from_at_or_above(at_or_above: np.ndarray, n: int) -> np.ndarray:
    """The bin counts of :func:`bin_counts` from ``#{i: norm_i >= e_j}`` and the number of rows."""
    ge = np.asarray(at_or_above, dtype=np.float64)
    # bin 0: below edges[0]; bin i: [edges[i-1], edges[i]); the last: at or above edges[-1]
    return np.concatenate(([n - ge[0]], ge[:-1] - ge[1:], ge[-1:]))


def clip_from_histogram(noisy_counts: np.ndarray, edges: np.ndarray, quantile: float,
                        n_rows: float) -> float:
    """The clip for the ``quantile`` of the norms, from released counts (post-processing).

    Bin ``i`` holds the norms in ``[edges[i-1], edges[i])`` (bin 0 those below ``edges[0]``, the last
    those at or above ``edges[-1]``). Walking down from the top, the first bin ``i`` at which the
    noisy number of rows in bins ``i, i+1, ...`` reaches ``(1 - quantile) n_rows`` holds the quantile:
    the clip is its lower edge ``edges[i-1]`` (at most 9 % below the quantile: for PCA a lower clip
    costs less than a higher one), at most the public bound ``edges[-1]``, at least ``edges[0]``.
    """
    target = (1.0 - quantile) * max(float(n_rows), 1.0)
    at_or_above = np.cumsum(noisy_counts[::-1])[::-1]  # at_or_above[i]: rows in bins i, i+1, ...
    reached = np.flatnonzero(at_or_above >= target)
    if reached.size == 0:
        return float(edges[0])
    return float(edges[min(max(int(reached[-1]) - 1, 0), edges.size - 1)])


def balanced_clip(noisy_counts: np.ndarray, edges: np.ndarray, kappa: float, hist_std: float,
                  C: float, *, floor_rows: float | None = None) -> float:
    """The clip of the balance rule, from the released counts (post-processing).

    Clipping the rows at ``r`` moves ``X^T X`` by ``B(r) = sum_i (1 - r^2/||x_i||^2)_+ x_i x_i^T``, of
    trace ``sum_i (||x_i||^2 - r^2)_+``; the noise's spectral norm is ``nu r^2`` (``nu``:
    :func:`~dpspectral.pca._covariance._noise_norm_per_clip2` for a scatter matrix). Their sum is least
    where (derivative in ``r^2``) ``#{i: ||x_i|| > r} = nu``. The trace overstates what clipping costs
    the top eigenvectors (it counts every direction of ``B``; measured, a clip with ``sqrt(d) / 2``
    times more rows above it does better on MNIST and RT-IoT2022), so the caller passes
    ``kappa = BALANCE_FACTOR sqrt(d) nu``; the target adds
    ``BALANCE_Z`` standard deviations of the noisy count walked so far (so that the noise of the empty
    bins above cannot fire the rule early). Walking down from the top, the first bin at which the noisy
    number of rows at or above it reaches the target: the clip is its *upper* edge (at most ``C``), so
    that as the noise vanishes no row is clipped (the exact eigensolver in the limit).

    ``floor_rows`` (optional; public or released): the target never exceeds it (less ``BALANCE_Z``
    standard deviations of the noisy count walked, so that a noisy histogram cannot walk past the floor
    into the empty bins below the norms), so that a noise so large that ``kappa`` exceeds the number of
    rows clips at the norm ``floor_rows`` rows reach (a low quantile) instead of falling back to ``C``
    (the iterative methods: signal and noise both scale with ``r^2`` once every row is clipped, so the
    clip need not go lower).
    """
    at_or_above = np.cumsum(noisy_counts[::-1])[::-1]  # at_or_above[i]: rows in bins i, i+1, ...
    walked = np.arange(at_or_above.size, 0, -1, dtype=float)  # bins summed into at_or_above[i]
    target = np.maximum(kappa + BALANCE_Z * hist_std * np.sqrt(walked), 0.5)
    if floor_rows is not None:  # less the same noise allowance: a noisy walk must not pass the floor
        floor = np.maximum(float(floor_rows) - BALANCE_Z * hist_std * np.sqrt(walked), 0.5)
        target = np.minimum(target, floor)
    reached = np.flatnonzero(at_or_above >= target)
    if reached.size == 0:  # too few rows to tell anything from the noise: the public bound
        return float(C)
    i = int(reached[-1])  # bin i holds [edges[i-1], edges[i]); the last bin [edges[-1], inf)
    return float(C) if i >= edges.size - 1 else float(edges[i])
