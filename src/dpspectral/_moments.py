"""Chunked first and second moments of clipped rows, over any row source, with memory independent of n.

Sources: a NumPy array (also a ``np.memmap``: its pages are released after each block, so resident
memory stays bounded), a scipy.sparse matrix, a Dask array (per-block ``X^T X`` summed by Dask, on
whatever scheduler is active: the same code runs on a cluster), or an iterable of row blocks (a
list of 2-D blocks, a generator, or a callable returning a fresh iterator, for two-pass uses).

Each block is validated (finite, numeric, 2-D, consistent width), optionally centred by a *public* or
*released* centre, clipped per row to the public ``row_norm``, and accumulated. Nothing here is
private by itself: the callers add noise to what is returned.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._array_api import clip_rows_xp, from_numpy, get_config, isfinite_all, row_norms_xp, to_numpy, work_dtype
from ._array_api import get_namespace_and_device as _where
from ._device_stream import device_blocks
from ._linalg import blas_threads
from ._rows import (
    NonPrivateDataError,
    _as_float_block,
    _iter_blocks,
    _raise_not_finite,
    check_dask_columns,
    check_numeric_layout,
    is_dask_array,
    is_one_shot,
    n_features_of,
    norm_violation_error,
    not_finite_error,
    unknown_columns_error,
)
from .privacy._centred_norms import centred_row_norms
from .privacy._clipping import (
    ROUNDING_SLACK,
    NormViolation,
    clip_rows,
    clip_threshold,
    norm_scale,
    scaled_row_norms,
)
from .privacy._quantile import bin_counts, count_at_or_above_xp, counts_from_at_or_above
from .privacy._rounding import Summation, gamma, unit_roundoff

__all__ = ["Moments", "NormHint", "accumulate", "accumulation_dtype", "centred_norm_hint",
           "chained_summation", "check_dask_columns", "device_summation", "exact_norm_hint",
           "grouped_summation", "is_dask_array", "n_features_of", "needs_two_passes_ok", "sum_in_groups",
           "summation_of", "unknown_columns_error"]


_U = unit_roundoff(np.float64)


@dataclass(frozen=True)
class Moments:
    """Sums over rows of the clipped (and centred) data. Not private: callers add noise."""

    n: int
    d: int
    sum: np.ndarray | None
    second: np.ndarray | None
    n_clipped: int
    #: With ``norm_edges``: the counts of the row norms (centred, before clipping) in the bins of
    #: :func:`~dpspectral.privacy._quantile.norm_histogram`, counted in the same pass.
    norm_counts: np.ndarray | None = None
    #: With ``keep_norms`` (dense rows whose bound needs no rescaling): the norms of the rows as the
    #: pass computed and compared them (centred by ``center``), for a later pass to reuse. Private.
    row_norms: np.ndarray | None = None


@dataclass(frozen=True)
class NormHint:
    """What a later pass knows of the squared norms of the centred rows before it reads them.

    ``approx[i]`` is within ``margin[i]`` of ``||x_i - center||^2`` (the squared norm of the row as
    :func:`~dpspectral.privacy._centred_norms.centred_row_norms` computes it, up to its own rounding): a
    row with ``approx + margin <= clip^2`` is within the clip and is added as it is, a row certainly
    above the clip with a small enough margin is scaled by ``clip / sqrt(approx)``, without their norms
    computed again; the norms of the other rows are computed as in an ordinary pass. Private (per row).
    """

    approx: np.ndarray
    margin: np.ndarray


def exact_norm_hint(norms: np.ndarray) -> NormHint:
    """A hint from norms computed exactly as a clipping pass computes them (no margin)."""
    return NormHint(np.square(norms), np.zeros_like(norms))


def centred_norm_hint(X: np.ndarray, row_norms: np.ndarray, center: np.ndarray) -> NormHint:
    """The squared norms of the rows of ``X - center`` from the norms of the rows of ``X``, without a
    centred copy: ``||x||^2 - 2 x . center + ||center||^2`` (one matrix-vector product), with a bound
    on its rounding.

    Each of the three terms is a sum of at most ``d`` products computed in float64, so its error is at
    most ``gamma_{d+2}`` times its sum of absolute values (Higham, Lemma 3.1; the norm ``r`` of the row
    carries its own ``gamma_{d+1}``, squared), and the two additions one unit roundoff each of a partial
    sum below ``(r + m)^2`` (``m = ||center||``): in all at most ``(gamma_{d+2} + 2 u)(r + m)^2`` with
    ``r`` and ``m`` the exact norms. The margin is twice ``gamma_{d+4}`` times ``(r (1 + 2 gamma_{d+1}) +
    m (1 + gamma_{d+1}))^2`` from the computed ``r`` and ``m``: above that bound.
    """
    d = X.shape[1]
    g = gamma(d + 1, _U)
    with blas_threads(1):  # one thread: a multi-threaded BLAS call leaves its threads spinning for a
        # while after it returns, and the scatter's threads that follow would share the cores with them
        # (the scatter 8-12 % slower at MNIST's size); this product is limited by the memory, not the cores
        dots = X @ center  # each dot a sum of d products in some order: the same bound
    mu = float(np.sqrt(center @ center))
    approx = np.square(row_norms) - 2.0 * dots + mu * mu
    margin = 2.0 * gamma(d + 4, _U) * np.square(row_norms * (1.0 + 2.0 * g) + mu * (1.0 + g))
    return NormHint(approx, margin)


def accumulation_dtype(X: Any, xp: Any) -> Any:
    """The dtype a device path clips and sums the rows in: float64 by default, whatever ``X``'s dtype.

    In float32 the rounding of a sum of ``n`` rows grows like ``n * 2**-24`` times the sum of the terms
    (:mod:`dpspectral.privacy._rounding`), which the noise would have to cover: hundreds of times the
    noise at 60,000 rows. In float64 it is ``2**29`` times smaller. Only with float noise
    (``config_context(noise="float")``, for comparisons) is the work done in ``X``'s own dtype.
    """
    return work_dtype(X, xp) if get_config()["noise"] == "float" else xp.float64


def summation_of(X: Any, xp: Any = None) -> Summation:
    """How :func:`accumulate` sums the rows of ``X`` (public: the input's kind and width, never its values).

    On the CPU every row, dense or sparse, in memory or streamed, is summed in groups
    (:class:`_Groups`: at most :func:`gram_block_rows` rows each, closed at ``_SUMMED_APART``); a stream
    whose width is not known before it is read at the most rows a group can hold at any width (one
    feature). A Dask array's row chunks are each summed so, to a partial, and the partials added in a
    tree of combines of at most ``_SPLIT_EVERY`` (:func:`_accumulate_dask`). A device path (``xp``) sums
    in groups too, in :func:`accumulation_dtype` (:func:`device_summation`).
    """
    if xp is not None:
        return device_summation(_dtype_name(accumulation_dtype(X, xp)))
    d = n_features_of(X)
    if d is None and isinstance(X, (list, tuple)) and X and len(getattr(X[0], "shape", ())) == 2:
        d = int(X[0].shape[1])  # a list of blocks: its width is the first block's
    grouped = grouped_summation(d)
    if is_dask_array(X):
        return dataclasses.replace(grouped, partials=int(X.numblocks[0]), tree=_SPLIT_EVERY)
    return grouped


def grouped_summation(d: int | None) -> Summation:
    """The path of rows of width ``d`` summed in groups on the CPU (:class:`_GroupedSums`: at most
    :func:`gram_block_rows` rows each, closed at ``_SUMMED_APART``); ``d`` None (not known before the
    rows are read) at the most rows a group can hold at any width (one feature)."""
    return Summation(block_rows=gram_block_rows(1 if d is None else d), group_rows=_SUMMED_APART)


def device_summation(dtype: str = "float64") -> Summation:
    """The device path of :func:`accumulate` (:func:`_add_device_pieces`): every block cut into pieces of
    at most ``s = _SUMMED_APART`` rows, each piece's products added to its group's buffer, a group added
    to the total once it holds ``s`` rows or more, so fewer than ``2 s`` (``block_rows``). The piece and
    group sizes are constants, the same for every data set and device. In float32 (float noise, opt-in)
    the ungrouped bound is kept (``h <= n + 1``, at the small public rows whatever the grouping).
    """
    if dtype != "float64":
        return Summation(dtype=dtype)
    return Summation(dtype=dtype, block_rows=2 * _SUMMED_APART, group_rows=_SUMMED_APART)


def chained_summation(X: Any, xp: Any) -> Summation:
    """A path that adds each block's product to one running total, with no groups apart (the mini-batch
    and stochastic methods' sums): ``h <= n + 1``, in float64 on the CPU (``xp`` None) and in
    :func:`accumulation_dtype` on a device."""
    return Summation() if xp is None else Summation(dtype=_dtype_name(accumulation_dtype(X, xp)))


def _dtype_name(dtype: Any) -> str:
    """``"float64"`` of ``torch.float64``, ``np.float64``, an array API dtype..."""
    return str(dtype).rsplit(".", 1)[-1]


def needs_two_passes_ok(X: Any) -> bool:
    """Whether ``X`` can be read twice: anything but a one-shot stream
    (:func:`~dpspectral.privacy._pipeline.is_one_shot`)."""
    return not is_one_shot(X)


def _dense_row_norms(block: np.ndarray, first_row: int, owner: str, scale: float = 1.0,
                     center: np.ndarray | None = None) -> np.ndarray:
    """Row norms of a dense block (centred by ``center`` if given: without a centred copy) scaled by
    ``scale`` (the public power of two :func:`~dpspectral.privacy._clipping.norm_scale` of the bound:
    compare them with ``row_norm * scale``); also the finiteness check (a NaN/inf makes its row's norm
    so)."""
    if scale == 1.0:
        norms = centred_row_norms(block, center)
        if np.isfinite(norms).all():
            return norms
    if center is not None:
        block = block - center
    if not np.isfinite(block).all():
        _raise_not_finite(block, first_row, owner)
    # rows scaled piece by piece, and finite rows whose squares overflow rescaled by their largest entry
    return scaled_row_norms(block, scale)


def accumulate(
    X: Any,
    *,
    row_norm: float,
    center: np.ndarray | None = None,
    on_norm_violation: NormViolation = "clip",
    want_sum: bool = False,
    want_second: bool = True,
    owner: str = "dpspectral",
    show_progress: bool | None = None,
    xp: Any = None,
    norm_edges: np.ndarray | None = None,
    keep_norms: bool = False,
    norm_hint: NormHint | None = None,
) -> Moments:
    """Sum and/or ``X^T X`` of the rows ``clip(x - center)``, in one pass over ``X``.

    Parameters
    ----------
    X : array-like, np.memmap, sparse matrix, Dask array, or iterable of row blocks
    row_norm : float
        Public clipping bound C (applied after centring).
    center : ndarray of shape (d,), optional
        Public or previously released centre.
    on_norm_violation : {"clip", "raise"}
    want_sum, want_second : bool
        Which moments to compute.
    xp : array namespace, optional
        For a non-NumPy array ``X`` with array API dispatch on (``dpspectral._array_api``): the
        moments are computed in that namespace, on ``X``'s device, and returned as its arrays.
    norm_edges : ndarray, optional
        Public bin edges (:func:`~dpspectral.privacy._quantile.norm_edges`): the same pass also counts
        the norms ``||x - center||`` in those bins (``Moments.norm_counts``, the exact counts of
        :func:`~dpspectral.privacy._quantile.norm_histogram`; not private: the caller releases them), so
        a validation pass doubles as the histogram pass of adaptive clipping.
    keep_norms : bool
        Keep the norms the pass computed (``Moments.row_norms``) where every block is dense and the
        bound needs no rescaling; None otherwise.
    norm_hint : NormHint, optional
        For rows already validated (a later pass inside the charge): the squared norms of the centred
        rows known up to a margin, so that only the rows that may exceed ``row_norm`` have their norms
        computed. The rows added are the same as without it.

    Returns
    -------
    Moments
        ``second`` is the full symmetric d x d matrix.
    """
    if xp is not None:
        return _accumulate_xp(X, xp, row_norm, center, on_norm_violation, want_sum, want_second, owner,
                              show_progress, norm_edges)
    if is_dask_array(X):
        return _accumulate_dask(X, row_norm, center, on_norm_violation, want_sum, want_second, owner,
                                norm_edges)
    n = 0
    counts = np.zeros(0 if norm_edges is None else norm_edges.size + 1)
    scale = norm_scale(row_norm)  # norms compared on rows scaled by a public power of two (1 for most C)
    d: int | None = None
    sums: _Groups | None = None
    n_clipped = 0
    kept: list[np.ndarray] | None = [] if keep_norms and scale == 1.0 else None
    for first_row, raw in _iter_blocks(X, owner, show_progress):
        block = _as_float_block(raw, first_row, d, owner)
        if d is None:
            d = block.shape[1]
            if center is not None and center.shape != (d,):
                raise ValueError(
                    f"{owner}: the centre has shape {center.shape}, expected ({d},)."
                )
            sums = _Groups(d, want_sum, want_second)
        if block.shape[0] == 0:
            continue
        shift = None  # the centre of a dense block, subtracted piece by piece (no centred copy)
        if center is not None and sp.issparse(block):
            block = block.toarray() - center
        elif center is not None:
            shift = center
        n += block.shape[0]
        if sp.issparse(block):
            kept = None
            if norm_edges is not None:
                counts += bin_counts(scaled_row_norms(block, scale) / scale, norm_edges)
            block, clipped = clip_rows(block, row_norm, on_norm_violation=on_norm_violation,
                                       copy=True, first_row=first_row, owner=owner)
            n_clipped += clipped
            assert sums is not None
            _add_sparse(sp.csr_matrix(block), sums)
            continue
        norms = _block_norms(block, first_row, owner, scale, shift, row_norm, norm_hint)
        if kept is not None:
            kept.append(norms)
        if norm_edges is not None:
            counts += bin_counts(norms if scale == 1.0 else norms / scale, norm_edges)
        over = norms > clip_threshold(row_norm * scale)
        n_clipped += int(np.count_nonzero(over))
        if on_norm_violation == "raise" and over.any():
            raise norm_violation_error(owner, row_norm)
        if not (want_sum or want_second):  # a validation pass (finite, within the bound): nothing to add
            continue
        assert sums is not None
        _add_clipped(block, norms, over, row_norm * scale, sums, center=shift)
    if d is None or n == 0 or sums is None:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is required.")
    total, upper = sums.result()
    full = None
    if upper is not None:  # dsyrk fills the upper triangle only (sparse updates fill both): mirror it
        full = np.ascontiguousarray(np.triu(upper) + np.triu(upper, 1).T)
    return Moments(
        n=n, d=d, sum=total, second=full,
        n_clipped=n_clipped, norm_counts=None if norm_edges is None else counts,
        row_norms=None if not kept else np.concatenate(kept),
    )


def _block_norms(block: np.ndarray, first_row: int, owner: str, scale: float, center: np.ndarray | None,
                 row_norm: float, hint: NormHint | None) -> np.ndarray:
    """The norms of a dense block's centred rows, scaled by ``scale``, as clipping at ``row_norm``
    needs them: from ``hint`` where one is given (and no rescaling is needed), else computed."""
    if hint is not None and scale == 1.0:
        return _hinted_norms(block, first_row, hint, row_norm, center)
    return _dense_row_norms(block, first_row, owner, scale, center)


def _hinted_norms(block: np.ndarray, first_row: int, hint: NormHint, row_norm: float,
                  center: np.ndarray | None) -> np.ndarray:
    """The norms of a block's centred rows as far as clipping at ``row_norm`` needs them.

    0 for a row certainly within ``row_norm``; ``sqrt(approx)`` for a row certainly above the clipping
    threshold whose margin is below ``ROUNDING_SLACK / 2`` of ``approx`` (scaled by ``row_norm /
    sqrt(approx)``, its true norm is then at most ``row_norm (1 + ROUNDING_SLACK / 4)`` plus the
    product's rounding); the others computed as :func:`_dense_row_norms` computes them.
    """
    rows = slice(first_row, first_row + block.shape[0])
    approx, margin = hint.approx[rows], hint.margin[rows]
    threshold = clip_threshold(row_norm)
    within = approx + margin <= row_norm * row_norm  # NaN or inf: not known
    above = (approx - margin > threshold * threshold) & (margin <= 0.5 * ROUNDING_SLACK * approx)
    norms = np.zeros(block.shape[0])
    norms[above] = np.maximum(np.sqrt(approx[above]), np.nextafter(threshold, np.inf))
    rest = np.flatnonzero(~(within | above))
    if rest.size:  # the rows were validated in an earlier pass: no refusal here
        norms[rest] = _dense_row_norms(block[rest], first_row, "dpspectral", 1.0, center)
    return norms


def _accumulate_dask(
    X: Any,
    row_norm: float,
    center: np.ndarray | None,
    on_norm_violation: NormViolation,
    want_sum: bool,
    want_second: bool,
    owner: str,
    norm_edges: np.ndarray | None = None,
) -> Moments:
    """The moments of a Dask array: one task per row block computes the block's packed partial
    (counts, sum, upper triangle of ``X^T X`` of its clipped rows, the norm counts with
    ``norm_edges``), and Dask sums the partials in a tree (``split_every=4``: each combine adds at most 4
    partials). It runs on the active scheduler (an active ``distributed.Client``, else Dask's default);
    what moves between workers is one partial of ``3 + d + d (d + 1) / 2`` floats per
    block. Row blocks of unknown size (NaN row chunks) are fine; an unknown width is refused."""
    check_numeric_layout(X, owner, what="a Dask array")  # numeric, 2-D (no shape quoted: n is private)
    check_dask_columns(X)
    d = int(X.shape[1])
    if center is not None and center.shape != (d,):
        raise ValueError(f"{owner}: the centre has shape {center.shape}, expected ({d},).")
    X = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X
    n_bins = 0 if norm_edges is None else norm_edges.size + 1
    width = _partial_width(d, want_sum, want_second) + n_bins
    partials = X.map_blocks(
        _block_partial, center, float(row_norm), want_sum, want_second, norm_edges,
        chunks=((1,) * X.numblocks[0], (width,)), dtype=np.float64, meta=np.empty((0, 0)),
    )
    # in a tree of combines of at most _SPLIT_EVERY partials, whatever Dask's configuration (the rounding
    # bound counts its height: dpspectral.privacy._rounding.Summation, ``tree``)
    total = np.asarray(partials.sum(axis=0, split_every=_SPLIT_EVERY).compute())
    n, n_over, n_bad = (int(round(v)) for v in total[:3])
    if n_bad:
        raise not_finite_error(owner)
    if n == 0:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is required.")
    if on_norm_violation == "raise" and n_over:
        raise norm_violation_error(owner, row_norm)
    s = total[3:3 + d] if want_sum else None
    second = None
    if want_second:
        second = np.zeros((d, d))
        second[np.triu_indices(d)] = total[3 + (d if want_sum else 0):width - n_bins]
        second = second + np.triu(second, 1).T
    return Moments(n=n, d=d, sum=s, second=second, n_clipped=n_over,
                   norm_counts=None if norm_edges is None else total[width - n_bins:])


def _partial_width(d: int, want_sum: bool, want_second: bool) -> int:
    """Length of a block's packed partial: n, n_over, n_not_finite, [sum (d)], [upper X^T X]."""
    return 3 + (d if want_sum else 0) + (d * (d + 1) // 2 if want_second else 0)


def _block_partial(block: Any, center: np.ndarray | None, row_norm: float, want_sum: bool,
                   want_second: bool, norm_edges: np.ndarray | None = None) -> np.ndarray:
    """One row block's packed partial (runs on a Dask worker; see :func:`_accumulate_dask`).

    A block with NaN or infinity is only flagged (the caller refuses the data when any is found); the
    clipping is :func:`accumulate`'s: every row scaled by its factor, 1 within the bound."""
    if sp.issparse(block):
        block = block.toarray()
    block = np.asarray(block, dtype=np.float64)
    d = block.shape[1]
    if center is not None:
        block = block - center
    width = _partial_width(d, want_sum, want_second)
    out = np.zeros((1, width + (0 if norm_edges is None else norm_edges.size + 1)))
    out[0, 0] = block.shape[0]
    if block.shape[0] == 0:
        return out
    scale = norm_scale(row_norm)  # the rows' norms scaled by a public power of two (1 for most C)
    try:
        norms = _dense_row_norms(block, 0, "dpspectral", scale)
    except NonPrivateDataError:  # NaN or infinity in the block: flagged, refused by the caller
        out[0, 2] = 1
        return out
    over = norms > clip_threshold(row_norm * scale)
    out[0, 1] = np.count_nonzero(over)
    if norm_edges is not None:
        out[0, width:] = bin_counts(norms if scale == 1.0 else norms / scale, norm_edges)
    if not (want_sum or want_second):  # a validation pass: nothing to scale or add
        return out
    sums = _Groups(d, want_sum, want_second)
    _add_clipped(block, norms, over, row_norm * scale, sums, parallel=False)  # a Dask task: one thread
    total, second = sums.result()
    if total is not None:
        out[0, 3:3 + d] = total
    if second is not None:
        out[0, 3 + (d if want_sum else 0):width] = second[np.triu_indices(d)]
    return out


#: A Dask array's partials are added in a tree of combines of at most this many (Dask's ``split_every``,
#: set whatever Dask's configuration: the rounding bound counts the tree's height).
_SPLIT_EVERY = 4

#: :func:`_add_clipped` scales and adds the rows in pieces of about this many entries (2 MB of float64,
#: cache-sized; at least 1024 rows): at d <= 200 1.3-1.6x faster than one scaled copy of a whole
#: 128 MB block, at d >= 500 within 5 % (docs/benchmarks/scaling.md).
_PIECE_ELEMENTS = 1 << 18

#: The rows (their sum and outer products) of about this many rows are summed apart, from zero, before
#: they are added to the totals (:class:`_Groups`): the rounding of the sums then grows with ``R + n / R``
#: rather than ``n`` (:mod:`dpspectral.privacy._rounding`), for one ``d x d`` addition per ``R`` rows.
_SUMMED_APART = 1 << 14


def _piece_rows(d: int) -> int:
    """The rows of each piece :func:`_add_clipped` scales and adds at once."""
    return max(1024, _PIECE_ELEMENTS // max(d, 1))


def gram_block_rows(d: int) -> int:
    """The most rows :class:`_Groups` sums apart (a group closes once it has
    ``_SUMMED_APART`` rows, so it holds less than that plus one piece)."""
    return _SUMMED_APART + _piece_rows(d)


class _GroupedSums:
    """Sums of pieces of rows (arrays of fixed shapes, one per total), summed in groups of rows.

    Each group's pieces go into buffers that start from zero; a group of ``_SUMMED_APART`` rows or more
    is then added to the totals (the first group is summed in the totals themselves, so a data set of
    one group needs no second buffer). With pieces of at most :func:`_piece_rows` rows a group so holds
    fewer than :func:`gram_block_rows` rows: the path :func:`grouped_summation` describes. NumPy arrays,
    added in place (the totals given are written).
    """

    def __init__(self, *totals: Any) -> None:
        self.totals = list(totals)
        self.parts: list[Any] | None = None  # None: the first group
        self.rows = 0

    def _plus(self, target: Any, value: Any) -> Any:
        target += value
        return target

    def _zeros(self, like: Any, fresh: bool) -> Any:
        """A zero buffer of ``like``'s shape: a new one (``fresh``) or ``like`` itself cleared."""
        if fresh:
            return np.zeros_like(like, order="K")
        like[...] = 0.0
        return like

    def add(self, values: tuple[Any, ...], rows: int) -> None:
        """Add the sums of a piece of ``rows`` rows, one per total (None: not wanted)."""
        targets = self.totals if self.parts is None else self.parts
        for i, value in enumerate(values):
            if targets[i] is not None and value is not None:
                targets[i] = self._plus(targets[i], value)
        self._count(rows)

    def _count(self, rows: int) -> None:
        self.rows += rows
        if self.rows >= _SUMMED_APART:
            self._close_group()

    def _close_group(self) -> None:
        if self.parts is None:  # the first group is in the totals: buffers for the next ones
            self.parts = [None if total is None else self._zeros(total, True) for total in self.totals]
        else:
            self._add_parts()
        self.rows = 0

    def _add_parts(self) -> None:
        assert self.parts is not None
        for i, part in enumerate(self.parts):
            if self.totals[i] is not None and part is not None:
                self.totals[i] = self._plus(self.totals[i], part)
                self.parts[i] = self._zeros(part, False)

    def result(self) -> tuple[Any, ...]:
        """The totals once every piece is added."""
        if self.parts is not None and self.rows:
            self._add_parts()
            self.rows = 0
        return tuple(self.totals)


class _DeviceGroupedSums(_GroupedSums):
    """:class:`_GroupedSums` of arrays of an array API namespace (the device path): the same groups, each
    addition a new array (no in-place writes, which not every namespace allows)."""

    def __init__(self, xp: Any, *totals: Any) -> None:
        super().__init__(*totals)
        self.xp = xp

    def _plus(self, target: Any, value: Any) -> Any:
        return target + value

    def _zeros(self, like: Any, fresh: bool) -> Any:
        return self.xp.zeros_like(like)


class _Groups(_GroupedSums):
    """The sum of the clipped rows and the upper triangle of their ``X^T X`` (Fortran-ordered), summed in
    groups of rows (:class:`_GroupedSums`); the pieces are dense, of at most :func:`_piece_rows` rows,
    or sparse, up to the group's end."""

    def __init__(self, d: int, want_sum: bool, want_second: bool) -> None:
        super().__init__(np.zeros(d) if want_sum else None,
                         np.zeros((d, d), order="F") if want_second else None)

    @property
    def sum(self) -> np.ndarray | None:
        return self.totals[0]

    @property
    def second(self) -> np.ndarray | None:
        return self.totals[1]

    def add_piece(self, piece_sum: np.ndarray | None, product: np.ndarray | None, rows: int) -> None:
        """Add the sum and the whole ``B^T B`` of a sparse piece of ``rows`` clipped rows."""
        self.add((piece_sum, product), rows)

    def result(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(sum, second)`` once every row is added (``second``: ``X^T X`` in the upper triangle; the
        sparse products fill both)."""
        total, second = super().result()
        return total, second


def sum_in_groups(n: int, d: int, piece_sums: Callable[[int, int], tuple[np.ndarray, ...]],
                  *totals: np.ndarray) -> tuple[np.ndarray, ...]:
    """``totals`` plus the sums ``piece_sums(a, b)`` of the rows ``a:b`` of ``n`` rows of width ``d``,
    cut into pieces of :func:`_piece_rows` rows and summed in groups (:class:`_GroupedSums`): the path
    :func:`grouped_summation` ``(d)`` describes, whatever the sums are (of the rows, of their squares,
    per class). ``totals`` are written."""
    groups = _GroupedSums(*totals)
    step = _piece_rows(d)
    for a in range(0, n, step):
        b = min(a + step, n)
        groups.add(piece_sums(a, b), b - a)
    return tuple(t for t in groups.result() if t is not None)


def _add_sparse(block: sp.csr_matrix, sums: _Groups) -> None:
    """Add the clipped rows of a sparse block to ``sums`` in groups, as the dense rows are: the block cut
    where its group closes (at ``_SUMMED_APART`` rows, so a group holds no more), each piece's sum and
    ``B^T B`` (both triangles, made dense once per piece) into its group."""
    a, m = 0, block.shape[0]
    while a < m:
        piece = block[a:a + min(m - a, _SUMMED_APART - sums.rows)]  # the rows left in this group, at most
        sums.add_piece(np.asarray(piece.sum(axis=0)).ravel() if sums.sum is not None else None,
                       (piece.T @ piece).toarray() if sums.second is not None else None, piece.shape[0])
        a += piece.shape[0]


def _add_clipped(block: np.ndarray, norms: np.ndarray, over: np.ndarray, row_norm: float,
                 sums: _Groups, center: np.ndarray | None = None, parallel: bool = True) -> None:
    """Add the clipped rows ``(x - center) * factor`` of a dense block to ``sums`` (their sum and their
    ``X^T X``: :class:`_Groups`). ``norms`` (of the centred rows) and ``row_norm`` are both of the rows
    scaled by the bound's public power of two
    (:func:`~dpspectral.privacy._clipping.norm_scale`): their ratio is the factor of the unscaled row.

    Every piece is centred into a buffer (or, uncentred, added as it is) and its rows above the bound
    scaled, a cache-sized part at a time (all the part's rows by their factors, 1 within the bound,
    where more than an eighth are above): the time taken depends on the number of rows above it (no
    result or report states a time). The pieces (a whole run where its buffer stays within
    ``_RUN_ELEMENTS``) are summed in runs (:func:`_runs`), each from zero; with ``parallel`` the runs
    of the block are computed on up to :func:`_worker_count` threads, each on one BLAS thread, and
    added to their groups in order, so the sums are the same floats whatever the number of threads.
    The caller's array is never written."""
    factors = np.where(over, row_norm / np.where(over, norms, 1.0), 1.0)
    d = block.shape[1]
    buffers = threading.local()  # each thread's piece and product buffers, reused from run to run

    def run_sums(bounds: tuple[int, int]) -> tuple[tuple[np.ndarray | None, np.ndarray | None], int]:
        start, stop = bounds
        total = np.zeros(d) if sums.sum is not None else None
        second: np.ndarray | None = None
        step = stop - start if (stop - start) * d <= _RUN_ELEMENTS else _piece_rows(d)
        for a in range(start, stop, step):
            b = min(a + step, stop)
            piece = _clipped_piece(block, a, b, over, factors, center, buffers)
            if total is not None:
                total += piece.sum(axis=0)
            if sums.second is not None:
                second = _add_product(piece, second, buffers)
        return (total, second), stop - start

    runs = _runs(block.shape[0], d, sums.rows)
    workers = _worker_count(len(runs), d) if parallel else 1
    if workers == 1:
        for bounds in runs:
            sums.add(*run_sums(bounds))
        return
    with blas_threads(1):  # each thread its own products: BLAS threads of their own would compete
        for values, rows in _in_order(_thread_pool(), run_sums, runs, ahead=workers):
            sums.add(values, rows)


def _in_order(pool: ThreadPoolExecutor, work: Callable[[Any], Any], items: list[Any],
              ahead: int) -> Iterator[Any]:
    """``work(item)`` for each item, computed on ``pool``, yielded in the items' order, with at most
    ``ahead`` items submitted and not yet yielded: at most ``ahead`` of the pool's threads busy, and
    the memory held (each result a ``d x d`` matrix) bounded. Items not started are cancelled if one
    fails."""
    pending: collections.deque[Future[Any]] = collections.deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _clipped_piece(block: np.ndarray, a: int, b: int, over: np.ndarray, factors: np.ndarray,
                   center: np.ndarray | None, buffers: threading.local) -> np.ndarray:
    """Rows ``a:b`` of ``block``, centred and scaled by their factors: the block's own rows where
    nothing is to change, else in this thread's buffer."""
    scaled = np.flatnonzero(over[a:b])
    if center is None and scaled.size == 0:
        return block[a:b]
    buffer = getattr(buffers, "piece", None)
    if buffer is None or buffer.shape[0] < b - a:
        # one buffer per thread: no allocation per piece (a Dask worker's malloc returns freed memory
        # to the system at once, MALLOC_TRIM_THRESHOLD_, and a fresh 2 MB piece each time halved the
        # speed)
        buffer = buffers.piece = np.empty((max(b - a, _piece_rows(block.shape[1])), block.shape[1]))
    piece = buffer[:b - a]
    step = max(1, _CACHED_ELEMENTS // block.shape[1])
    for c in range(0, b - a, step):  # centred and scaled in cache-sized parts: read once from memory
        part, rows = piece[c:c + step], slice(a + c, min(a + c + step, b))
        if center is None:
            np.copyto(part, block[rows])
        else:
            np.subtract(block[rows], center, out=part)
        lo, hi = np.searchsorted(scaled, (c, c + step))  # the part's rows to scale (sorted)
        mine = scaled[lo:hi] - c
        if 8 * mine.size > part.shape[0]:  # many rows to scale: every row times its factor
            np.multiply(part, factors[rows, None], out=part)
        elif mine.size:
            part[mine] *= factors[a + c + mine, None]
    return piece


#: :func:`_clipped_piece` centres and scales the rows of a piece in parts of about this many elements
#: (1 MB), each part's scaling done while it is in the core's cache: 3-5% faster for a whole fit at
#: d = 784 than the piece's rows centred, then scaled (docs/benchmarks/speed.md).
_CACHED_ELEMENTS = 1 << 17


def _add_product(piece: np.ndarray, total: np.ndarray | None, buffers: threading.local) -> np.ndarray:
    """``total + piece^T piece`` (the run's first piece: its product alone), in ``total``.

    NumPy computes ``piece^T piece`` by a rank-k update (SYRK, half the flops of a GEMM) from zero and
    mirrors it; on a busy 2-core machine 1.2-1.4x faster than many calls to SciPy's dsyrk, whose
    OpenBLAS build synchronises its threads worse on small updates (docs/benchmarks/speed.md). A term
    passes through at most the piece's rows of additions in the product, then one per later piece of
    its run, one into its group and one per later run of the group: fewer than the group's rows."""
    d = piece.shape[1]
    if total is None:
        return np.matmul(piece.T, piece, out=np.empty((d, d), order="F"))
    product = getattr(buffers, "product", None)
    if product is None:
        product = buffers.product = np.empty((d, d), order="F")
    np.matmul(piece.T, piece, out=product)
    total += product
    return total


#: :func:`_add_clipped` sums consecutive pieces from zero in runs of about this many rows (at least one
#: piece), each run then added to its group: the unit of work its threads share.
_RUN_ROWS = 1 << 12

#: A run of at most this many elements is centred, scaled and multiplied at once (one product of its
#: rows); a longer one piece by piece. One product per run is 5-7% faster than a product per piece added
#: into the run's sum, and each term still passes through fewer additions than its group has rows. Each
#: thread's buffer so holds at most 32 MB, as a piece of 1,024 rows does at d = 4,096 (8 threads: 256
#: MB besides their ``d x d`` matrices).
_RUN_ELEMENTS = 1 << 22


def _runs(m: int, d: int, group_rows: int) -> list[tuple[int, int]]:
    """The runs of pieces of a block of ``m`` rows of width ``d`` whose first piece goes into a group
    that already holds ``group_rows`` rows: at most ``_RUN_ROWS`` rows of pieces each, and a run ends
    where its group closes (at ``_SUMMED_APART`` rows), so the groups hold the same pieces as when the
    pieces are added one by one. Public: sizes only."""
    step = _piece_rows(d)
    per_run = max(1, _RUN_ROWS // step)
    runs: list[tuple[int, int]] = []
    start, pieces = 0, 0
    for a in range(0, m, step):
        b = min(a + step, m)
        group_rows += b - a
        pieces += 1
        if group_rows >= _SUMMED_APART or pieces == per_run or b == m:
            runs.append((start, b))
            start, pieces = b, 0
            if group_rows >= _SUMMED_APART:
                group_rows = 0
    return runs


#: The most threads :func:`_add_clipped` uses.
_MAX_THREADS = 8

#: The memory :func:`_add_clipped`'s threads may hold in ``d x d`` float64 matrices (each thread a
#: product and a run's sum, and a run waiting to be added): above it fewer threads, one above
#: d = 2364 (whose single products keep BLAS's own threads busy).
_THREAD_MATRIX_BYTES = 1 << 28


def _worker_count(tasks: int, d: int) -> int:
    """The threads :func:`_add_clipped` uses for ``tasks`` runs of width ``d``: the cores this process
    may use (at most 8), no more than the runs, and no more than ``_THREAD_MATRIX_BYTES`` allows."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_THREADS, tasks, _THREAD_MATRIX_BYTES // (3 * 8 * d * d)))


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool_in_child() -> None:
    """In a forked child: the copied pool has no threads and the lock may be held by a thread that
    was not copied; start afresh."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _thread_pool() -> ThreadPoolExecutor:
    """One pool of threads for the process (as many as :func:`_worker_count` ever asks for), kept from
    call to call (starting threads for every block cost 3 % of a fit at MNIST's size); each call uses at
    most its own number of them (:func:`_in_order`'s ``ahead``). A forked child makes its own
    (:func:`_forget_pool_in_child`)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_MAX_THREADS, thread_name_prefix="dpspectral")
        return _POOL


def _accumulate_xp(X: Any, xp: Any, row_norm: float, center: Any, on_norm_violation: NormViolation,
                   want_sum: bool, want_second: bool, owner: str,
                   show_progress: bool | None = None, norm_edges: np.ndarray | None = None) -> Moments:
    """The array API branch of :func:`accumulate`: every block clipped and summed on ``X``'s device.

    ``X`` is a device array (sliced there) or host rows streamed to a device block by block
    (:class:`~dpspectral._device_stream.DeviceStream`, ``device=``): the device holds one block and the
    ``d x d`` sum. The same clipping as the NumPy path (every row scaled by its factor, 1 within the
    bound; finite check; ``"raise"`` refuses); ``X^T X`` by a matrix product, symmetrised exactly.
    Returns arrays of ``xp`` (``n`` and the count of clipped rows as ints).
    """
    dtype, device = accumulation_dtype(X, xp), _where(X, owner)[1]
    n, n_clipped, d = 0, 0, None
    sums: _DeviceGroupedSums | None = None
    edges_x = None if norm_edges is None else from_numpy(np.asarray(norm_edges, float), xp, device, dtype)
    at_or_above = None if norm_edges is None else xp.zeros((norm_edges.size,), dtype=xp.int64, device=device)
    for _, raw in device_blocks(X, xp, owner, show_progress):
        block = xp.astype(raw, dtype, copy=False)
        if d is None:
            d = int(block.shape[1])
            if center is not None:
                if tuple(center.shape) != (d,):
                    raise ValueError(f"{owner}: the centre has shape {tuple(center.shape)}, expected ({d},).")
                center = from_numpy(center, xp, device, dtype)
            sums = _DeviceGroupedSums(xp, xp.zeros((d,), dtype=dtype, device=device) if want_sum else None,
                                      xp.zeros((d, d), dtype=dtype, device=device) if want_second else None)
        if block.shape[0] == 0:
            continue
        n += int(block.shape[0])
        if center is not None:
            block = block - center
        if not (want_sum or want_second):  # a validation pass: the norms only, nothing scaled or added
            norms, n_over = _check_rows_xp(block, row_norm, on_norm_violation, owner, xp)
            n_clipped += n_over
            if at_or_above is not None:
                at_or_above = at_or_above + count_at_or_above_xp(norms, edges_x, xp, device)
            continue
        clipped, norms, n_over = clip_rows_xp(block, row_norm, xp)
        if not isfinite_all(norms, xp):  # a NaN or inf entry makes its row's norm so
            raise not_finite_error(owner)
        if at_or_above is not None:
            at_or_above = at_or_above + count_at_or_above_xp(norms, edges_x, xp, device)
        n_clipped += n_over
        if on_norm_violation == "raise" and n_over:
            raise norm_violation_error(owner, row_norm)
        assert sums is not None
        _add_device_pieces(clipped, sums, want_sum, want_second, xp)
    if d is None or n == 0 or sums is None:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is required.")
    total, second = sums.result()
    if second is not None:
        second = (second + second.T) * 0.5  # exactly symmetric: both triangles the same floats
    counts = None if at_or_above is None else counts_from_at_or_above(to_numpy(at_or_above), n)
    return Moments(n=n, d=d, sum=total, second=second, n_clipped=n_clipped, norm_counts=counts)


def _add_device_pieces(clipped: Any, sums: _DeviceGroupedSums, want_sum: bool, want_second: bool,
                       xp: Any) -> None:
    """Add a device block of clipped rows to ``sums`` in pieces of at most ``_SUMMED_APART`` rows (views
    of the block), each piece's sum and ``B^T B`` (a matrix product from zero, in any order inside it)
    into its group: the path :func:`device_summation` describes, whatever the block's size."""
    m = int(clipped.shape[0])
    for a in range(0, m, _SUMMED_APART):
        piece = clipped[a:min(m, a + _SUMMED_APART), ...]
        sums.add((xp.sum(piece, axis=0) if want_sum else None, piece.T @ piece if want_second else None),
                 int(piece.shape[0]))


def _check_rows_xp(block: Any, row_norm: float, on_norm_violation: NormViolation, owner: str,
                   xp: Any) -> tuple[Any, int]:
    """A validation pass's check of one device block, by the rule of the device clip
    (:func:`~dpspectral._array_api.row_norms_xp`), without scaling the rows: finite, and the rows above
    the bound counted (or refused with ``"raise"``). Returns the norms and that count."""
    _, _, n_over, _, norms = row_norms_xp(block, row_norm, xp)
    if not isfinite_all(norms, xp):  # a NaN or inf entry makes its row's norm so
        raise not_finite_error(owner)
    if on_norm_violation == "raise" and n_over:
        raise norm_violation_error(owner, row_norm)
    return norms, n_over
