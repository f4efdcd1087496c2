"""Rows and blocks of user data: conversion, data-free refusals, and reading row sources block by block.

The lowest layer of the library: it imports nothing else from :mod:`dpspectral` but the progress bar, so
every other module (the clipping, the moments, the release pipeline, the mechanisms) can use it.

* **conversion** (:func:`as_numeric_array`, :func:`as_label_array`, :func:`check_numeric_layout`): the
  caller's data as numeric arrays, refused with messages that quote nothing from the data;
* **errors about the data** (:class:`NonPrivateDataError`, :func:`not_finite_error`,
  :func:`norm_violation_error`): they name the kind of problem, never a row or a value;
* **row sources** (:func:`is_one_shot`, :func:`is_dask_array`, :func:`n_features_of`, and the block
  iteration the moments and the streaming methods share): an array, a memmap, a sparse or Dask array,
  or an iterable of row blocks, read in blocks of bounded size.
"""

from __future__ import annotations

import mmap
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._progress import progress

__all__ = ["NonPrivateDataError", "as_label_array", "as_numeric_2d", "as_numeric_array", "check_dask_columns",
           "check_numeric_dtype", "check_numeric_layout", "is_dask_array", "is_one_shot", "n_features_of",
           "norm_violation_error", "not_finite_error", "rows_at", "unknown_columns_error"]


# --- user data: converted here, refused with messages that quote nothing from the data --------------

_NUMERIC_KINDS = "biuf"


_CONVERSION_ERRORS = (TypeError, ValueError, OverflowError)


def as_numeric_array(
    X: Any,
    owner: str,
    *,
    name: str | None = None,
    ndim: int | None = 2,
    convert_object: bool = True,
    accept_sparse: bool = False,
) -> Any:
    """User data as a real numeric NumPy array, or a refusal that quotes nothing from the data.

    The one place where the functions and estimators turn the caller's data (an array, a list of rows,
    a pandas or polars DataFrame, a memmap; a scipy.sparse matrix with ``accept_sparse``) into a
    numeric array. A numeric input comes back as it is (no copy). An object array (a DataFrame with
    mixed column types reads as one) is converted to float64 with ``convert_object``; a cell that is
    not a number is refused naming its column (position, and the DataFrame's column name, which is
    public schema), never the cell. Missing cells (None, ``pd.NA``) read as NaN, which the callers'
    finiteness checks refuse.

    The messages name the problem (text, complex values, the number of dimensions) and at most the
    column: no value, no row, no shape (the number of rows is private). NumPy's and pandas' own
    messages quote the offending cell (``could not convert string to float: '...'``), so they are
    neither shown nor chained: every refusal is raised ``from None``.

    Raises
    ------
    TypeError
        The data are not numbers (text, dates, a cell that is not a number; an object array when
        ``convert_object`` is False) or a sparse matrix where none is accepted.
    ValueError
        Complex values (scikit-learn's "Complex data not supported"); data that cannot be read as an
        array (rows of different lengths), or do not have ``ndim`` dimensions.
    """
    subject = owner if name is None else f"The '{name}' parameter of {owner}"
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(f"{subject} does not take a sparse matrix; pass a dense array.")
        _check_dtype_kind(X.dtype, subject, what="a sparse matrix")
        if ndim is not None and X.ndim != ndim:
            raise ValueError(_ndim_message(subject, X.ndim, ndim))
        return X
    columns = _column_names(X)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. a ComplexWarning: the check below refuses complex
            arr = np.asarray(X)
    except _CONVERSION_ERRORS:
        arr = None
    if arr is None:
        raise ValueError(
            f"{subject} could not be read as an array of numbers (rows of different lengths, or cells "
            "that are not numbers)."
        ) from None
    if arr.dtype.kind == "O":
        if not convert_object:
            bad = _bad_column(arr, columns)
            raise TypeError(
                f"{subject} needs numeric data; {bad or 'got an array of dtype object'} (convert or "
                "encode the columns first)."
            ) from None
        arr = _object_to_float(arr, subject, columns)
    else:
        _check_dtype_kind(arr.dtype, subject, what="an array")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(_ndim_message(subject, arr.ndim, ndim)) from None
    return arr


def check_numeric_layout(X: Any, owner: str, *, ndim: int | None = 2, what: str = "an array") -> None:
    """The checks of :func:`as_numeric_array` on an array that is not read here (a memmap, an HDF5 or
    Dask array, a stream's block): its ``dtype`` and number of dimensions, with the same messages."""
    check_numeric_dtype(X.dtype, owner, what=what)
    if ndim is not None and len(X.shape) != ndim:
        raise ValueError(_ndim_message(owner, len(X.shape), ndim))


def check_numeric_dtype(dtype: Any, owner: str, *, what: str = "an array") -> None:
    """Refuse a dtype that is not a real number (text, complex, dates...), naming the kind of problem;
    a text dtype is not shown (its width is the length of the longest cell)."""
    _check_dtype_kind(np.dtype(dtype), owner, what=what)


def _check_dtype_kind(dtype: np.dtype, subject: str, *, what: str) -> None:
    kind = dtype.kind
    if kind in _NUMERIC_KINDS:
        return
    if kind == "c":  # a ValueError with scikit-learn's wording, as its estimator checks expect
        raise ValueError(
            f"{subject} needs real numbers; got {what} of complex values. Complex data not supported "
            "(take the real part or the modulus first)."
        ) from None
    if kind in "US":  # not the dtype itself: its width is the length of the longest text cell
        raise TypeError(
            f"{subject} needs numeric data; got {what} of text (convert or encode the columns first)."
        ) from None
    raise TypeError(
        f"{subject} needs numeric data; got {what} of dtype {dtype} (convert or encode the columns "
        "first)."
    ) from None


def _ndim_message(subject: str, got: int, want: int) -> str:
    shown = "a scalar" if got == 0 else f"a {got}-D array"
    if want == 2:
        hint = (" Reshape your data: X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a "
                "single row." if got == 1 else "")
        return (f"{subject} expects 2-D data of shape (n_samples, n_features); got {shown}.{hint}")
    return f"{subject} expects a {want}-D array; got {shown}."


def _column_names(X: Any) -> list[Any] | None:
    """The public column names of a DataFrame (pandas, polars), or None."""
    columns = getattr(X, "columns", None)
    if columns is None or sp.issparse(X) or isinstance(X, np.ndarray):
        return None
    try:
        return list(columns)
    except TypeError:
        return None


def _column_label(j: int, columns: list[Any] | None) -> str:
    if columns is not None and j < len(columns):
        return f"column {columns[j]!r} (position {j})"
    return f"column {j}"


def _is_missing(value: Any) -> bool:
    """None or a pandas/polars missing marker (pd.NA, pd.NaT), without importing pandas."""
    return value is None or type(value).__name__ in ("NAType", "NaTType")


def _cells_to_float(cells: np.ndarray) -> np.ndarray:
    """An object array as float64 (missing cells as NaN); raises NumPy's error (quoting the cell)."""
    try:
        return cells.astype(np.float64)
    except _CONVERSION_ERRORS:
        missing = np.frompyfunc(_is_missing, 1, 1)(cells).astype(bool)
        if not missing.any():
            raise
        filled = cells.copy()
        filled[missing] = np.nan
        return filled.astype(np.float64)


def _why_not_numeric(exc: BaseException) -> str:
    """What kind of cell broke a conversion, from the kind of NumPy's error (never its text)."""
    if isinstance(exc, OverflowError):
        return "holds a number too large for float64"
    if isinstance(exc, TypeError):  # neither a number nor a string (a dict, a list...): NumPy's wording
        return "is not numeric: float() argument must be a string or a real number"
    return "holds text that is not a number"


def _bad_column(arr: np.ndarray, columns: list[Any] | None) -> str:
    """``"column ... is not numeric ..."`` for the first column of a 2-D object array with a cell that
    is not a number (``""`` when there is none, or the array is not 2-D)."""
    if arr.ndim != 2:
        return ""
    why = None
    for j in range(arr.shape[1]):
        try:
            _cells_to_float(arr[:, j])
        except _CONVERSION_ERRORS as exc:
            why = _why_not_numeric(exc)  # only its kind is kept: NumPy's text quotes the cell
        if why is not None:
            return f"{_column_label(j, columns)} {why}"
    return ""


def _object_to_float(arr: np.ndarray, subject: str, columns: list[Any] | None) -> np.ndarray:
    try:
        return _cells_to_float(arr)
    except _CONVERSION_ERRORS:
        pass
    what = _bad_column(arr, columns) or "a cell is not a number"
    raise TypeError(f"{subject} needs numeric data; {what} (convert or encode the columns first).") from None


def as_label_array(y: Any, owner: str, *, name: str = "y", n_rows: int | None = None) -> np.ndarray:
    """Labels as a 1-D NumPy array (a column vector is accepted), or a refusal that quotes no label.

    Labels may be integers, real numbers or text; complex values, an array of another shape and a
    length different from ``n_rows`` (the rows of X) are refused without quoting a label or a count.
    """
    subject = f"The '{name}' parameter of {owner}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(y)
    except _CONVERSION_ERRORS:
        arr = None
    if arr is None:
        raise ValueError(f"{subject} could not be read as an array of labels.") from None
    if arr.dtype.kind == "c":
        raise ValueError(
            f"{subject} holds complex values. Complex data not supported (labels must be integers, real "
            "numbers or text)."
        ) from None
    flat = arr.ravel() if arr.ndim == 2 and arr.shape[1] == 1 else arr
    if flat.ndim != 1:
        shown = "a scalar" if flat.ndim == 0 else f"a {flat.ndim}-D array"
        raise ValueError(f"{subject} must be a 1-D array of labels; got {shown}.") from None
    if n_rows is not None and flat.shape[0] != n_rows:
        raise ValueError(
            f"{subject} must hold one label per row of X: X and y have inconsistent numbers of samples "
            "(neither is reported: the number of rows is private)."
        ) from None
    return flat


# --- errors about the data: the kind of problem, never a row or a value -------------------------


class NonPrivateDataError(ValueError):
    """The data break a stated bound or contain NaN/inf. The message names no row and no value."""


def not_finite_error(owner: str) -> NonPrivateDataError:
    """The error for data with NaN or infinity (no position, no count: they are private)."""
    return NonPrivateDataError(
        f"{owner}: the data contain NaN or infinity. Remove or impute them before fitting (which rows "
        "is not reported: it is a fact about the private data)."
    )


def norm_violation_error(owner: str, row_norm: float) -> NonPrivateDataError:
    """The error for ``on_norm_violation="raise"`` (no row, norm or count: they are private)."""
    return NonPrivateDataError(
        f"{owner}: some row has Euclidean norm above row_norm={row_norm:g} and "
        "on_norm_violation='raise'. Scale the rows, raise row_norm, or use on_norm_violation='clip' "
        "(which rows, and how many, is not reported: it is a fact about the private data). The "
        "refusal itself says that some row broke the bound (docs/privacy-caveats.md)."
    )


def as_numeric_2d(X: Any, owner: str) -> np.ndarray:
    """``X`` as a 2-D numeric NumPy array (no copy when it is one), or a clear error naming ``owner``.

    The shared conversion (:func:`as_numeric_array`): the message names the
    problem (text, complex values, the number of dimensions) and at most a column, never a value or the
    number of rows. An object array is refused (the mechanisms read the caller's array again later),
    naming the first column with a cell that is not a number.
    """
    return as_numeric_array(X, owner, ndim=2, convert_object=False)


def is_one_shot(X: Any) -> bool:
    """Whether ``X`` is a one-shot stream: an iterator of row blocks (a generator, ``iter(blocks)``) or a
    stream that says it cannot be re-read (``stream_reiterable=False``).

    Such a source cannot be validated before the charge: every mechanism charges it before its rows are
    read, and a failure decided by the data after that stays charged (the note on streams of
    :mod:`dpspectral.privacy._pipeline`).
    """
    return isinstance(X, Iterator) or getattr(X, "stream_reiterable", True) is False


# --- row sources, read block by block ---------------------------------------------------------

_BLOCK_ELEMENTS = 1 << 24  # ~128 MB of float64 per block
#: ... of an array already in memory, whose blocks are views: the size sets only how often a progress bar
#: moves and how many rows the threads of a pass share at once (one block at MNIST's size)
_IN_MEMORY_BLOCK_ELEMENTS = 1 << 26


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "dask") and hasattr(X, "chunks")


def _is_block_source(X: Any) -> bool:
    if callable(X) and not hasattr(X, "shape"):
        return True
    if isinstance(X, Iterator):
        return True
    if isinstance(X, (list, tuple)) and X and all(
        (hasattr(b, "ndim") and b.ndim == 2) or sp.issparse(b) for b in X
    ):
        return True
    return False


def _as_float_block(block: Any, first_row: int, d: int | None, owner: str) -> Any:
    """A float64 view (no copy when already float64) or sparse copy of one block, validated.

    The caller's memory is never written through the returned array (clipping copies).
    """
    if sp.issparse(block):
        block = sp.csr_matrix(block, dtype=np.float64)
        values = block.data
    else:
        block = as_numeric_2d(block, owner).astype(np.float64, copy=False)
        values = None
    if d is not None and block.shape[1] != d:
        raise ValueError(
            f"{owner}: a block has {block.shape[1]} features, earlier blocks had {d}."
        )
    if values is not None and not np.isfinite(values).all():
        _raise_not_finite(block, first_row, owner)
    return block


def _raise_not_finite(block: Any, first_row: int, owner: str) -> None:
    raise not_finite_error(owner)


def _blocks_of_array(X: Any, owner: str, show_progress: bool | None) -> Iterator[tuple[int, Any]]:
    n, d = X.shape
    in_memory = type(X) is np.ndarray  # its blocks are views: no memory of their own
    rows = max(1, (_IN_MEMORY_BLOCK_ELEMENTS if in_memory else _BLOCK_ELEMENTS) // max(d, 1))
    starts = range(0, n, rows)
    release = _page_releaser(X)
    for a in progress(starts, total=len(starts), desc=owner, enabled=show_progress, min_total=16):
        b = min(n, a + rows)
        yield a, X[a:b]
        if release is not None:
            release(a, b)


def _page_releaser(X: Any) -> Callable[[int, int], None] | None:
    """For a top-level C-ordered ``np.memmap``: drop the pages of rows [a, b) from memory.

    None for anything else, and for a copy-on-write map (``mode="c"``), whose dropped pages would
    discard the caller's in-memory changes.
    """
    if not isinstance(X, np.memmap) or not isinstance(X.base, mmap.mmap) or getattr(X, "mode", None) == "c":
        return None
    if not X.flags.c_contiguous or not hasattr(X.base, "madvise"):
        return None
    mm = X.base
    start_in_map = int(X.offset) % mmap.ALLOCATIONGRANULARITY
    row_bytes = X.strides[0]
    page = mmap.PAGESIZE

    def release(a: int, b: int) -> None:
        lo = start_in_map + a * row_bytes
        hi = start_in_map + b * row_bytes
        lo -= lo % page
        try:
            mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError):  # advice is best-effort
            pass

    return release


def rows_at(X: Any, indices: np.ndarray, rows_per_block: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, X[indices[start:start + rows_per_block]])``: the rows of an array or memmap at
    ``indices`` (in that order), copied block by block; never more than one block of rows is held.

    A memmap's rows are read in ascending row order within each block (then put back in the order of
    ``indices`` in memory), and the pages of the rows the block spans are released after it is copied
    (:func:`_page_releaser`), so neither a permutation nor a sample of the rows maps the whole file in.
    Each block is a fresh array (the caller may write to it) of ``X``'s dtype. Another array with random
    row access (HDF5, zarr) is indexed block by block (``X[idx]``), never converted whole.
    """
    if not isinstance(X, np.ndarray):
        for a in range(0, indices.shape[0], rows_per_block):
            yield a, np.array(X[indices[a : a + rows_per_block]])
        return
    base = np.asarray(X)  # a memmap: a plain view of its pages (take then returns an ndarray)
    release = _page_releaser(X)
    for a in range(0, indices.shape[0], rows_per_block):
        idx = indices[a : a + rows_per_block]
        if release is None or idx.shape[0] == 0:
            yield a, base.take(idx, axis=0)
            continue
        if idx.shape[0] > 1 and bool(np.any(idx[1:] < idx[:-1])):  # e.g. a block of a permutation
            order = np.argsort(idx, kind="stable")
            rows = np.empty((idx.shape[0], *base.shape[1:]), dtype=base.dtype)
            rows[order] = base.take(idx[order], axis=0)
            lo, hi = idx[order[0]], idx[order[-1]]
        else:  # ascending already (a sorted sample)
            rows = base.take(idx, axis=0)
            lo, hi = idx[0], idx[-1]
        release(int(lo), int(hi) + 1)
        yield a, rows


def _iter_blocks(X: Any, owner: str, show_progress: bool | None) -> Iterator[tuple[int, Any]]:
    if _is_block_source(X):
        source: Iterable[Any] = X() if callable(X) else X
        row = 0
        for block in source:
            yield row, block
            row += block.shape[0] if hasattr(block, "shape") else len(block)
        return
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        yield from _blocks_of_array(X, owner, show_progress)
        return
    if not hasattr(X, "shape") or not hasattr(X, "__getitem__"):
        X = as_numeric_array(X, owner, convert_object=False)  # lists of rows: refusals quote no cell
    elif len(X.shape) != 2:
        raise ValueError(f"{owner} expects 2-D data of shape (n_samples, n_features); got a "
                         f"{len(X.shape)}-D array.")
    yield from _blocks_of_array(X, owner, show_progress)


def n_features_of(X: Any) -> int | None:
    """Number of columns when it is known without reading the data (a Dask array of unknown width:
    :func:`unknown_columns_error`)."""
    check_dask_columns(X)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[1])
    return None


def unknown_columns_error(X: Any) -> ValueError:
    """The error for a Dask array whose number of columns is unknown (its column chunks are NaN)."""
    return ValueError(
        f"A Dask array with unknown chunk sizes along its columns (shape {X.shape}, column chunks "
        f"{X.chunks[1]}) cannot be fitted: the number of features must be known before anything is "
        "released. Call X = X.compute_chunk_sizes() first (one pass over the data, nothing is released "
        "or charged), or build it with known sizes (ddf.to_dask_array(lengths=True) for a Dask "
        "DataFrame). Unknown row counts (NaN row chunks, e.g. after boolean row selection) are fine. "
        "Nothing was charged."
    )


def check_dask_columns(X: Any) -> None:
    """Raise :func:`unknown_columns_error` when ``X`` is a Dask array of unknown width."""
    if is_dask_array(X) and len(X.shape) == 2 and _is_nan(X.shape[1]):
        raise unknown_columns_error(X)


def _is_nan(size: Any) -> bool:
    return isinstance(size, float) and size != size
