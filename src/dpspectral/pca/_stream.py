"""The streaming code shared by the row-by-row methods (:mod:`dpspectral.pca._oja`) and minibatch Oja
(:mod:`dpspectral.pca._minibatch`): the rows of an input re-cut into clipped float64 blocks, the checks made
before the charge, and the public batch schedule of the minibatch steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._array_api import refuse_device
from .._moments import accumulate
from .._rows import (
    _is_block_source,
    _iter_blocks,
    _page_releaser,
    as_numeric_array,
    is_dask_array,
    is_one_shot,
    not_finite_error,
    rows_at,
)
from .._validation import check_n_components
from ..privacy._adaptive import RowClipPlan, release_row_clip
from ..privacy._clipping import NormViolation, clip_rows
from ..privacy._pipeline import StagedRelease

__all__ = ["BLOCK_FACTOR", "DEFAULT_N_BATCHES", "DEFAULT_WARMUP_FRACTION", "batch_sizes",
           "default_block_size", "minibatch_sensitivity", "noise_per_clip2", "smallest_n"]

_MINIBATCH_OWNER = "minibatch_oja"


# ---------------------------------------------------------------------------------------------
# input handling (the row-by-row methods and minibatch Oja)


_MEMMAP_BLOCK_ELEMENTS = 1 << 20  # values per block read from a memmap (8 MB of float64)


def _n_rows(X: Any, n_samples: int | None, owner: str) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and not callable(X):
        if n_samples is not None and int(n_samples) != int(shape[0]):
            raise ValueError(f"{owner}: n_samples={n_samples} but the data have {shape[0]} rows.")
        return int(shape[0])
    if isinstance(X, (list, tuple)) and X and np.ndim(X[0]) == 1:
        return len(X)
    return None if n_samples is None else int(n_samples)  # checked by the constraint table


def _as_source(X: Any) -> Any:
    """A list of 1-D rows is an array; anything else with ``shape`` or an iterable of blocks as is."""
    if isinstance(X, (list, tuple)) and X and np.ndim(X[0]) == 1:
        return np.asarray(X)
    return X


def _memmap_blocks(X: np.memmap) -> Iterator[tuple[int, np.ndarray]]:
    """(start, rows) blocks of ~8 MB of a memmap (views: the data are read when ``take`` copies them)."""
    n, d = X.shape
    step = max(1, _MEMMAP_BLOCK_ELEMENTS // max(d, 1))
    for a in range(0, n, step):
        yield a, X[a : min(n, a + step)]


def _indexable(X: Any) -> Any:
    """An in-memory input as one object with ``shape`` and row indexing (lists of blocks stacked)."""
    X = _as_source(X)
    if isinstance(X, (list, tuple)):
        blocks = list(X)
        if any(sp.issparse(b) for b in blocks):
            return sp.csr_matrix(sp.vstack([sp.csr_matrix(b) for b in blocks]))
        return np.vstack([np.asarray(b) for b in blocks])
    if sp.issparse(X):
        return sp.csr_matrix(X)
    if is_dask_array(X) or hasattr(X, "shape"):
        return X
    return np.asarray(X)


def _permuted_blocks(X: Any, order: np.ndarray) -> Iterator[tuple[int, Any]]:
    """(start, rows) blocks of ``X`` read in the order ``order`` (a permutation of its rows)."""
    n, d = X.shape
    step = max(1, _MEMMAP_BLOCK_ELEMENTS // max(d, 1))
    if isinstance(X, np.ndarray):  # an array or memmap: take is a copy, faster than X[idx]; a memmap
        yield from rows_at(X, order, step)  # is read in row order within a block, its pages released
        return
    for a in range(0, n, step):
        idx = order[a : a + step]
        if is_dask_array(X):
            yield a, np.asarray(X[idx].compute())
        else:
            yield a, X[idx]  # fancy indexing: a copy, in the permuted order


class _Rows:
    """The rows of an array or a stream of row blocks, re-cut into float64 blocks of fixed sizes.

    Every block is checked for finite values and clipped to the row norm C (a copy: the caller's data
    are never modified). ``take(m)`` returns the next ``m`` rows (fewer at the end of the data).
    ``order``: read the rows of an in-memory input in this order (a secret permutation).
    """

    def __init__(self, X: Any, C: float, mode: NormViolation, owner: str,
                 show_progress: bool | None = None, order: np.ndarray | None = None) -> None:
        self.C, self.mode, self.owner = C, mode, owner
        src = _as_source(X) if order is None else _indexable(X)
        # A memmap is read by small blocks and the pages of the rows already copied are dropped after
        # every take (the generic path's 128 MB blocks stayed resident until done, and pages of a
        # block's tail, re-read after the block's release, stayed for good: ~70 MB at 1e6 x 100).
        # Not for a copy-on-write map, where dropping pages would discard the caller's changes.
        self._release: Callable[[int, int], None] | None = None
        self._released = 0  # the pages of rows [0, _released) have been released
        self._blocks: Iterator[tuple[int, Any]]
        if order is not None:
            self._blocks = _permuted_blocks(src, order)
        elif isinstance(src, np.memmap) and src.ndim == 2:
            if getattr(src, "mode", None) != "c":
                self._release = _page_releaser(src)
            self._blocks = _memmap_blocks(src)
        else:
            self._blocks = _iter_blocks(src, owner, show_progress)
        self._owned = order is not None  # the blocks are fresh copies (read in the secret order)
        self._buffer: list[np.ndarray] = []
        self._buffered = 0
        self.row = 0  # rows handed out so far
        self.d: int | None = None

    def _pull(self) -> bool:
        try:
            _, block = next(self._blocks)
        except StopIteration:
            return False
        if sp.issparse(block):
            block = block.toarray()
        block = as_numeric_array(block, self.owner, ndim=None, convert_object=False)  # quotes no cell
        if block.ndim == 1:
            block = block[None, :]
        if block.ndim != 2:
            raise ValueError(f"{self.owner}: every block of a stream must be 2-D; got a {block.ndim}-D "
                             "block.")
        if self.d is None:
            self.d = int(block.shape[1])
        elif block.shape[1] != self.d:
            raise ValueError(
                f"{self.owner}: the blocks of the data do not all have the same number of columns "
                f"(the first had {self.d})."
            )
        if block.shape[0]:
            self._buffer.append(block)
            self._buffered += block.shape[0]
        return True

    def peek_features(self) -> int:
        while self.d is None:
            if not self._pull():
                raise ValueError(f"{self.owner}: the data are empty (0 rows); at least one row is needed.")
        return self.d

    def take(self, m: int) -> np.ndarray:
        while self._buffered < m and self._pull():
            pass
        if not self._buffer:
            return np.empty((0, self.d or 0))
        # Cut the first m rows off the buffered blocks, copying only those rows: concatenating whole
        # blocks (up to 128 MB each from an array or memmap) at every block boundary dominated the
        # time and doubled the resident memory.
        pieces: list[np.ndarray] = []
        got = 0
        while self._buffer and got < m:
            head = self._buffer[0]
            if head.shape[0] <= m - got:
                pieces.append(head)
                self._buffer.pop(0)
            else:
                pieces.append(head[: m - got])
                self._buffer[0] = head[m - got :]
            got += pieces[-1].shape[0]
        self._buffered -= got
        if len(pieces) == 1 and self._owned and pieces[0].dtype == np.float64 and pieces[0].flags.writeable:
            out = pieces[0]  # rows of a block copied by the permuted read: already private
        elif len(pieces) == 1:
            out = np.array(pieces[0], dtype=np.float64)  # a private copy
        else:
            out = np.concatenate(pieces).astype(np.float64, copy=False)  # a fresh array
        if self._release is not None:
            self._release(self._released, self.row + got)
            self._released = self.row + got
        if not np.isfinite(out).all():  # every row read, used in a step or not
            raise not_finite_error(self.owner)
        out, _ = clip_rows(out, self.C, on_norm_violation=self.mode, copy=False, first_row=self.row,
                           owner=self.owner)
        self.row += out.shape[0]
        return np.asarray(out)


def _parts(n: int | None, k: int, rank_method: str, owner: str) -> list[int | None]:
    """Rows per part: one part for block updates, k consecutive parts for deflation."""
    if rank_method == "block" or k == 1:
        return [None]
    if n is None:
        raise ValueError(
            f"{owner}: rank_method='deflation' on a stream needs n_samples (public under replace-one) "
            "to split the rows into k parts."
        )
    base = n // k
    return [base] * (k - 1) + [None]  # the last part takes the rest


@dataclass
class _Source:
    """The rows a run reads and the public facts about them (sizes and options, never values)."""

    data: Any  # the validated in-memory input, or the stream
    rows: _Rows | None  # a stream's reader (opened to learn d); None for an in-memory input
    n: int | None
    in_memory: bool
    d: int
    k: int
    parts: list[int | None]
    row_norm: float
    mode: NormViolation
    owner: str
    block_progress: bool | None

    def reader(self, secret: Any) -> _Rows:
        """The rows in the order the run uses them: an in-memory input is read in a uniformly random
        order drawn now by ``secret.permutation`` (a charged releaser's named draw; a stream is read in
        its arrival order)."""
        if not self.in_memory:
            assert self.rows is not None
            return self.rows
        assert self.n is not None
        return _Rows(self.data, self.row_norm, self.mode, self.owner, show_progress=self.block_progress,
                     order=secret.permutation(self.n))

    def at_clip(self, r: float) -> _Source:
        """The source re-opened at a released clip ``r``: rows clipped at r, never refused (they were
        checked at the bound before the charge)."""
        rows = None if self.in_memory else _Rows(self.data, r, "clip", self.owner,
                                                 show_progress=self.block_progress)
        return dataclasses.replace(self, rows=rows, row_norm=r, mode="clip")

    def public_n(self) -> int | None:
        """The number of rows, public under replace-one: given, or counted when a re-readable stream
        was read and checked before the charge."""
        if self.n is not None or self.in_memory:
            return self.n
        return self.data.n_rows if isinstance(self.data, _CheckedStream) else None


def _open_source(src: Any, n: int | None, in_memory: bool, k: Any, rank_method: str, C: float,
                 mode: NormViolation, owner: str, block_progress: bool | None) -> _Source:
    """The number of features (a stream's first block is read for it) and the checks that need it."""
    rows = None if in_memory else _Rows(src, C, mode, owner, show_progress=block_progress)
    d = int(src.shape[1]) if in_memory else rows.peek_features()  # type: ignore[union-attr]
    k = _check_k(k, d, n, owner)
    return _Source(src, rows, n, in_memory, d, k, _parts(n, k, rank_method, owner), C, mode, owner,
                   block_progress)


def _check_k(k: Any, d: int, n: int | None, owner: str) -> int:
    k = check_n_components(k, d, owner, name="k")
    if n is not None and k > n:
        raise ValueError(f"The 'k' parameter of {owner} must be at most the number of rows ({n}). "
                         f"Got {k} instead.")
    return k


def _validate_stream(source: _Source) -> int | None:
    """A re-readable stream read once at the bound before any charge: finite, and within the bound with
    ``on_norm_violation="raise"`` (a one-shot stream is checked block by block after the charge instead).
    Returns its row count (public under replace-one) when no n was given; None for in-memory data."""
    if source.in_memory:
        return None
    if isinstance(source.data, _CheckedStream):  # read and checked when the source was prepared
        return source.data.n_rows
    moments = accumulate(source.data, row_norm=source.row_norm, on_norm_violation=source.mode,
                         want_sum=False, want_second=False, owner=source.owner,
                         show_progress=source.block_progress)
    return int(moments.n)


def _adaptive_clip_stage(source: _Source, clip: RowClipPlan, staged: StagedRelease, noise: Any,
                         nu_of_n: Callable[[int], float]) -> tuple[_Source, float]:
    """Validation pass (a stream), the released norm histogram and clip r (stage one), and the source
    re-opened at r (rows clipped at r, never refused: they were checked at the bound).

    ``nu_of_n(n)``: the method's balance-rule ``nu`` for n rows (public under replace-one).
    """
    counted = _validate_stream(source)
    n = source.n if source.n is not None else counted
    assert n is not None
    r = release_row_clip(source.data, clip, staged, noise, noise_per_clip2=nu_of_n(n), d=source.d,
                         n_public=n, owner=source.owner, show_progress=source.block_progress)
    return source.at_clip(r), r


def _order_note(in_memory: bool, what: str) -> str:
    if in_memory:
        return (f"Rows permuted uniformly at random with the secret generator before use; {what}.")
    return (f"Stream: rows used in their arrival order, {what}. ASSUMPTION: that order does not depend "
            "on the data (a stream sorted by a label, a value or a time that depends on the rows "
            "breaks parallel composition; shuffle it with secret randomness first).")


class _CheckedStream:
    """A re-iterable stream (a callable returning a fresh iterator of row blocks) read once before the
    charge: every block checked (finite; within the bound with ``on_norm_violation="raise"``), so its
    refusal costs nothing (the pipeline's rule: only a one-shot stream is read after the charge).
    ``n_rows``: the rows counted (public under replace-one)."""

    def __init__(self, source: Callable[[], Any], n_rows: int) -> None:
        self.source = source
        self.n_rows = n_rows

    def __call__(self) -> Any:
        return self.source()

    @classmethod
    def of(cls, source: Any, C: float, on_norm_violation: str, owner: str) -> _CheckedStream:
        checked = accumulate(source, row_norm=C, on_norm_violation=on_norm_violation,  # type: ignore[arg-type]
                             want_sum=False, want_second=False, owner=owner)
        return cls(source, int(checked.n))


def _is_stream(X: Any) -> bool:
    """An iterator of row blocks or a callable returning one (read as it comes), not an in-memory input."""
    return _is_block_source(X) and not is_dask_array(X) and not isinstance(X, (list, tuple))


def _prepare_source(X: Any, n_samples: int | None, C: float, on_norm_violation: str,
                    owner: str) -> tuple[Any, int | None, bool]:
    """(source, n, in_memory): an in-memory input is validated whole here, before any charge."""
    refuse_device(X, owner)  # host only (docs/array-api.md: why the row-by-row methods are not covered)
    src = _as_source(X)
    if _is_stream(src):
        if not is_one_shot(src):  # re-iterable (a callable): validated before the charge, as in memory
            src = _CheckedStream.of(src, C, on_norm_violation, owner)
        return src, _n_rows(X, n_samples, owner), False
    # every row checked (finite; within the bound with "raise") before anything is charged
    accumulate(src, row_norm=C, on_norm_violation=on_norm_violation,  # type: ignore[arg-type]
               want_sum=False, want_second=False, owner=owner)
    src = _indexable(src)
    n = _n_rows(src, n_samples, owner)
    if not n:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is needed.")
    return src, n, True


# ---------------------------------------------------------------------------------------------
# minibatch Oja's public schedule and batch statistic (also DP-PCA's)


_CHUNK_ELEMENTS = 1 << 20  # values per chunk of rows read at a time (8 MB of float64)

#: Defaults (measured in docs/algorithms/oja.md, "Minibatch Oja"): three warm-up batches of 5% of the
#: rows, then one batch of the remaining 85%.
DEFAULT_N_BATCHES = 4
DEFAULT_WARMUP_FRACTION = 0.05


#: The iterate has ``min(d, BLOCK_FACTOR k)`` columns (oversampling; see default_block_size).
BLOCK_FACTOR = 20


def minibatch_sensitivity(k: int, row_norm: float) -> float:
    """L2 (Frobenius) sensitivity of one batch sum ``sum_x x (x^T W)`` under replace-one.

    ``min(sqrt(k), sqrt(2)) C^2`` for a d x k iterate: C^2 for k = 1 (the half-ball argument),
    sqrt(2) C^2 for k >= 2 (derived in
    :func:`~dpspectral.pca._minibatch.minibatch_oja`'s Privacy section). ``row_norm`` is the
    bound the clipped rows satisfy (pass it through
    :func:`~dpspectral.privacy._clipping.sensitivity_norm` first).
    """
    return min(math.sqrt(k), math.sqrt(2.0)) * row_norm**2


def smallest_n(n_batches: int, warmup_fraction: float) -> int:
    """The smallest n for which every batch of the schedule has at least one row."""
    if n_batches == 1:
        return 1
    n = max(n_batches, math.ceil(1.0 / warmup_fraction) - 1)
    while math.floor(warmup_fraction * n) < 1 or n - (n_batches - 1) * math.floor(warmup_fraction * n) < 1:
        n += 1
        if n > 10**12:  # (n_batches - 1) * warmup_fraction >= 1: no n fits
            raise ValueError(
                f"{_MINIBATCH_OWNER}: {n_batches - 1} warm-up batches of warmup_fraction={warmup_fraction:g} "
                "leave no rows for the last batch; lower n_batches or warmup_fraction.")
    return n


def batch_sizes(n: int, n_batches: int = DEFAULT_N_BATCHES,
                warmup_fraction: float = DEFAULT_WARMUP_FRACTION) -> list[int]:
    """The batch sizes for n rows (public): ``n_batches - 1`` warm-up batches, then the rest.

    Raises ValueError naming the smallest n that works when a batch would be empty.
    """
    if (n_batches - 1) * warmup_fraction >= 1.0:
        raise ValueError(
            f"{_MINIBATCH_OWNER}: {n_batches - 1} warm-up batches of warmup_fraction={warmup_fraction:g} "
            "leave no rows for the last batch; lower n_batches or warmup_fraction.")
    need = smallest_n(n_batches, warmup_fraction)
    if n < need:
        raise ValueError(
            f"{_MINIBATCH_OWNER}: n={n} rows is too few for n_batches={n_batches} with "
            f"warmup_fraction={warmup_fraction:g} (every batch needs a row); the smallest n that works "
            f"is {need}. Lower n_batches or raise warmup_fraction.")
    warm = math.floor(warmup_fraction * n) if n_batches > 1 else 0
    return [warm] * (n_batches - 1) + [n - warm * (n_batches - 1)]


def default_block_size(n_features: int, k: int) -> int:
    """p, the columns of the iterate, from public inputs: ``min(d, BLOCK_FACTOR k)``.

    Extra columns cost nothing in sensitivity beyond p = 2 (``min(sqrt(p), sqrt(2))``), make the few
    power steps converge and the short warm-up batches robust (measured in docs/algorithms/oja.md);
    memory O(d p) = O(d k).
    """
    return min(n_features, max(k, BLOCK_FACTOR * k))


def noise_per_clip2(multiplier: float, d: int, block: int, sizes: list[int]) -> float:
    """The balance rule's ``nu`` (:func:`~dpspectral.privacy._adaptive.release_row_clip`), public.

    One batch's noise ``Z_t`` (d x p, std ``m min(sqrt(p), sqrt 2) r^2``) has spectral norm about
    ``nu_1 r^2 = m min(sqrt(p), sqrt 2) (sqrt(d) + sqrt(p)) r^2`` and competes with the signal of that
    batch's rows only (a share ``|B_t| / n`` of the rows, by the secret permutation). Every step is a
    power step that must make progress, so the batch with the least signal decides: ``#{rows of the
    smallest batch above r} = nu_1``, i.e. ``nu = nu_1 n / min_t |B_t|`` over the whole data. With T
    equal batches this is the sum of the T batches' ``nu_1`` (each row is seen once); with the default
    schedule (three 5 % warm-up batches) ``20 nu_1``. Measured against ``nu_1 n / |B_T|`` (the last batch
    alone), ``T nu_1`` and the floor in docs/algorithms/oja.md, "Adaptive clipping".
    """
    per_batch = multiplier * minibatch_sensitivity(block, 1.0) * (math.sqrt(d) + math.sqrt(block))
    return per_batch * sum(sizes) / min(sizes)


def _chunk_sum(chunk: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``sum_x x (x^T W)`` over some (clipped) rows: d x p, never a d x d matrix."""
    return chunk.T @ (chunk @ W)


def _batch_sum(rows: _Rows, size: int, W: np.ndarray, to_end: bool) -> np.ndarray:
    """The batch statistic over the next ``size`` rows (every remaining row with ``to_end``: a
    stream's last batch), read in chunks of ~8 MB so that a batch is never held whole."""
    S = np.zeros_like(W)
    chunk_rows = max(1, _CHUNK_ELEMENTS // max(W.shape[0], 1))
    remaining = size
    while to_end or remaining > 0:
        chunk = rows.take(chunk_rows if to_end else min(chunk_rows, remaining))
        if not chunk.shape[0]:
            break
        S += _chunk_sum(chunk, W)
        remaining -= chunk.shape[0]
    return S
