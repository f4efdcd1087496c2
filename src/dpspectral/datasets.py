"""Data: loaders for the standard formats, per-row clipping and synthetic generators.

Loaders
-------
Each loader takes a path chosen by the user (``str`` or ``os.PathLike``; a file ending in ``.gz`` is
decompressed transparently) and returns ``(X, y)``: ``X`` a float64 array of shape (n, d) (a
scipy.sparse CSR matrix for LIBSVM files with ``dense=False``, or the stored array as an
``np.memmap`` for ``load_npy(..., mmap_mode=...)``) and ``y`` a 1-D array of n labels or None.
:func:`load` picks the loader from the file name and returns a :class:`Dataset` (which also unpacks
as ``X, y = load(path)``).

CSV and Parquet parsing is strict and schema-driven: a text (categorical) column must have its public
categories declared (``categories={"proto": ["tcp", "udp"]}``) and is encoded over exactly those; a
non-numeric cell anywhere else is an error that names the column, never the value or the row. A CSV
file's header is declared (``header=``, default: expected), not guessed. So the width and the feature
names of X come from public inputs only.

A relative path that does not exist as given is also looked up under the folder named by the
environment variable ``DPSPECTRAL_DATA`` (see :func:`data_home`). The library never reads data from
anywhere else.

The papers' reproductions (``dpspectral reproduce``) find their data sets in scikit-learn's
convention, :func:`get_data_home`: the ``data_home`` argument (``--data DIR``), else
``$DPSPECTRAL_DATA``, else ``~/dpspectral_data``; never the working directory.

Privacy
-------
Loading is not a release. The only data-dependent map that may precede a private release is the
per-row clipping ``x -> x * min(1, C / ||x||)`` with a public bound C: :func:`clip_rows`, re-exported
from :mod:`dpspectral.privacy._clipping`. :func:`normalize_rows_nonprivate` (division by the largest
row norm of the data set) is **not** private and exists only to reproduce papers that use it.

Synthetic data
--------------
:func:`gaussian_data`, :func:`spiked_covariance` and :func:`decaying_spectrum` draw Gaussian rows
with a known population covariance (and so a known true subspace), from ``random_state`` only (never
the global NumPy state).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import inspect
import io
import itertools
import math
import numbers
import os
import struct
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import scipy.sparse as sp

from ._constraints import NONE, Interval, Options, Types, check_params, validated
from ._linalg import orthonormalize
from ._rows import as_numeric_array
from ._validation import as_generator
from .privacy._clipping import clip_rows, row_norms

__all__ = [
    "DATA_HOME_ENV",
    "Dataset",
    "DatasetFormatError",
    "clip_rows",
    "data_home",
    "data_home_sources",
    "find_data_home",
    "get_data_home",
    "decaying_spectrum",
    "gaussian_data",
    "guess_format",
    "load",
    "load_csv",
    "load_idx",
    "load_libsvm",
    "load_npy",
    "load_parquet",
    "normalize_rows_nonprivate",
    "random_orthonormal",
    "resolve_path",
    "row_norms",
    "spiked_covariance",
]

PathLike = str | os.PathLike[str]
ColumnSpec = int | str
Format = Literal["libsvm", "idx", "csv", "npy", "parquet"]

#: Environment variable naming the folder where relative data paths are also looked up.
DATA_HOME_ENV = "DPSPECTRAL_DATA"
#: The per-user data folder when neither a ``data_home`` argument nor ``$DPSPECTRAL_DATA`` is given.
DEFAULT_DATA_HOME = "~/dpspectral_data"

_FORMATS: tuple[str, ...] = ("libsvm", "idx", "csv", "npy", "parquet")
_IDX_IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
_IDX_LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension
_CSV_SNIFF_ROWS = 200
_CSV_CHUNK_ROWS = 16384
_DEFAULT_NA_VALUES: tuple[str, ...] = ("", "?", "NA", "N/A")
#: ``categorical``: "declared" (default) encodes only declared columns and refuses any other text;
#: "raise" is its former name; "from_data" reads categories from the data (NOT private).
_CATEGORICAL: tuple[str, ...] = ("declared", "raise", "from_data")


class DatasetFormatError(ValueError):
    """A data file's content does not match its format (bad magic number, ragged rows, ...)."""


# --------------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------------


def data_home() -> Path | None:
    """The folder named by the environment variable ``DPSPECTRAL_DATA``, or None when unset.

    Loaders look a relative path up there when it does not exist relative to the working directory.
    The library has no built-in data location.

    Returns
    -------
    path : pathlib.Path or None
        The folder (``~`` expanded).

    Raises
    ------
    ValueError
        If the variable is set but does not name an existing folder.
    """
    value = os.environ.get(DATA_HOME_ENV)
    if value is None or value == "":
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ValueError(
            f"The environment variable {DATA_HOME_ENV} must name an existing folder. Got {value!r} instead."
        )
    return path



def get_data_home(data_home: PathLike | None = None) -> Path:
    """The folder of dpspectral's data sets, in scikit-learn's convention (``get_data_home``).

    In order: the ``data_home`` argument (``--data DIR`` on the command line), else the environment
    variable ``DPSPECTRAL_DATA``, else ``~/dpspectral_data``. Never the current directory. Nothing is
    created or checked here: a reader checks that the folder exists (:func:`find_data_home`), a writer
    creates it when it writes.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        An explicit folder (``~`` expanded).

    Returns
    -------
    pathlib.Path
        The folder (it may not exist).
    """
    if data_home is not None and not isinstance(data_home, (str, os.PathLike)):
        raise TypeError(
            f"The 'data_home' parameter must be a str or os.PathLike folder. Got {data_home!r} instead."
        )
    if data_home is None or str(data_home) == "":
        data_home = os.environ.get(DATA_HOME_ENV) or DEFAULT_DATA_HOME
    return Path(data_home).expanduser()


def data_home_sources(data_home: PathLike | None = None) -> str:
    """Where :func:`get_data_home` looked and how to change it, in words (for error messages)."""
    if data_home is not None and str(data_home) != "":
        where = f"the folder given ({str(Path(data_home).expanduser())!r})"
    elif os.environ.get(DATA_HOME_ENV):
        where = f"{DATA_HOME_ENV}={os.environ[DATA_HOME_ENV]!r}"
    else:
        where = f"{DATA_HOME_ENV} (unset) and the per-user default {DEFAULT_DATA_HOME}"
    return (f"looked in {where}; pass --data DIR (data_home= in Python) or set the environment variable "
            f"{DATA_HOME_ENV} to the folder holding the data sets")


def find_data_home(data_home: PathLike | None = None) -> Path | None:
    """:func:`get_data_home` if it is an existing folder; None if the per-user default is absent.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        An explicit folder.

    Returns
    -------
    pathlib.Path or None
        None only when neither ``data_home`` nor ``$DPSPECTRAL_DATA`` is given and
        ``~/dpspectral_data`` does not exist (a caller may then skip its real data).

    Raises
    ------
    FileNotFoundError
        If a folder named explicitly (the argument or ``$DPSPECTRAL_DATA``) does not exist; the message
        says where it looked and how to set the location.
    """
    path = get_data_home(data_home)
    if path.is_dir():
        return path
    explicit = (data_home is not None and str(data_home) != "") or bool(os.environ.get(DATA_HOME_ENV))
    if explicit:
        raise FileNotFoundError(
            f"The data folder {str(path)!r} does not exist: {data_home_sources(data_home)}."
        )
    return None


def resolve_path(path: Any, name: str = "path") -> Path:
    """An existing file from a user path, looked up under :func:`data_home` when relative."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"The '{name}' parameter must be a str or os.PathLike file path. Got {path!r} instead."
        )
    p = Path(path).expanduser()
    if p.is_file():
        return p
    home = data_home()
    if not p.is_absolute() and home is not None and (home / p).is_file():
        return home / p
    where = (
        f" (also looked in {DATA_HOME_ENV}={str(home)!r})" if home is not None and not p.is_absolute() else ""
    )
    raise FileNotFoundError(
        f"The '{name}' parameter must name an existing file. Got {str(path)!r}, which does not exist{where}."
    )


def _is_gzip(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def _open_binary(path: Path) -> IO[bytes]:
    if _is_gzip(path):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]  # a BinaryIO in practice
    return open(path, "rb")


def _open_text(path: Path, encoding: str) -> IO[str]:
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # also drops a byte-order mark
    if _is_gzip(path):
        return gzip.open(path, "rt", encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def _strip_gz(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


# --------------------------------------------------------------------------------------------------
# Shared conversions
# --------------------------------------------------------------------------------------------------


def _numeric_labels(y: np.ndarray) -> np.ndarray:
    """int64 labels when every value is a finite integer, float64 otherwise."""
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y)) and np.all(np.abs(y) < 2**53):
        return y.astype(np.int64)
    return y


#: Constraint tables entries shared by the loaders and the generators (see :mod:`dpspectral._constraints`).
_POSITIVE_INT = Interval(1, None, "left", integer=True)
_NONNEGATIVE = Interval(0, None, "left")
#: The parameters CSV and Parquet loading share: how text columns are treated.
_TABLE_PARAMETERS = {"categorical": Options(_CATEGORICAL), "max_categories": _POSITIVE_INT}


def _one_hot_from_data(
    values: Sequence[str], name: str, max_categories: int, source: str
) -> tuple[np.ndarray, list[str]]:
    """One-hot columns over the values found in the data (sorted), named ``'name=value'``.

    NOT private: the categories, their number and so the width of X are read from the data. Only
    reached with ``categorical="from_data"``.
    """
    arr = np.array([v.strip() for v in values], dtype=str)
    cats, inverse = np.unique(arr, return_inverse=True)
    if cats.size > max_categories:
        raise ValueError(
            f"Column {name!r} of {source} has more than max_categories={max_categories} distinct "
            "values; one-hot encoding it would add that many columns. Drop it with drop_columns, "
            "declare its categories, or raise max_categories."
        )
    block = np.zeros((arr.size, cats.size), dtype=np.float64)
    block[np.arange(arr.size), inverse.ravel()] = 1.0
    return block, [f"{name}={c}" for c in cats.tolist()]


def _indicators(values: Sequence[str], name: str, cats: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """One 0/1 column per declared category, in the declared order, named ``'name=category'``.

    The width and the names come from the declaration only. A cell (whitespace stripped) that is not a
    declared category gets an all-zero indicator row: it is never added as a category.
    """
    index = {c: i for i, c in enumerate(cats)}
    block = np.zeros((len(values), len(cats)), dtype=np.float64)
    for r, v in enumerate(values):
        i = index.get(v.strip())
        if i is not None:
            block[r, i] = 1.0
    return block, [f"{name}={c}" for c in cats]


def _assemble(
    columns: Sequence[tuple[str, np.ndarray | list[str], tuple[str, ...] | None]],
    n: int,
    max_categories: int,
    source: str,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Stack numeric columns and the indicator blocks of categorical columns, in column order.

    Each entry is ``(name, column, declared categories or None)``. A text column without declared
    categories reaches this point only with ``categorical="from_data"`` (the callers refuse it
    otherwise) and is one-hot encoded over the values found in the data.
    """
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for name, col, cats in columns:
        if cats is not None:
            values = [str(v) for v in col] if isinstance(col, np.ndarray) else col
            block, block_names = _indicators(values, name, cats)
        elif isinstance(col, np.ndarray):
            blocks.append(col.reshape(n, 1))
            names.append(name)
            continue
        else:
            block, block_names = _one_hot_from_data(col, name, max_categories, source)
        blocks.append(block)
        names.extend(block_names)
    width = sum(b.shape[1] for b in blocks)
    X = np.empty((n, width), dtype=np.float64)
    at = 0
    for b in blocks:
        X[:, at : at + b.shape[1]] = b
        at += b.shape[1]
    return X, tuple(names)


def _column_label(j: int, names: Sequence[str] | None) -> str:
    """How messages name column ``j``: its header name and position, or its position."""
    return f"column {names[j]!r} (position {j})" if names is not None else f"column at position {j}"


def _not_numeric_error(
    j: int,
    names: Sequence[str] | None,
    source: str,
    why: str = "some cell is neither a number nor a missing-value marker (na_values)",
) -> ValueError:
    """The data-independent refusal of a non-numeric cell in a column not declared categorical.

    It names the column (a public part of the schema), never the cell's value nor its row: both are
    private. The same message serves a text column and one stray cell in a numeric column.
    """
    key = repr(names[j]) if names is not None else str(j)
    cli_key = names[j] if names is not None else str(j)
    return ValueError(
        f"The {_column_label(j, names)} of {source} is not numeric: {why}. If the column is "
        "categorical, declare its public "
        f"categories: categories={{{key}: [...]}} in Python, or --categories {cli_key}=A,B,C (or a "
        "--schema file) on the command line; otherwise fix the file or drop the column. "
        + ("If the file's first record is a header, pass header=True (--header). " if names is None else "")
        + "(The value and its row are not shown: they are private data.)"
    )


def _check_categories(categories: Any, owner: str) -> dict[ColumnSpec, tuple[str, ...]]:
    """The declared categories as ``{column spec: tuple of stripped str}``, checked."""
    if categories is None:
        return {}
    if not isinstance(categories, Mapping):
        raise TypeError(
            f"The 'categories' parameter of {owner} must be a dict mapping column names or positions "
            f"to lists of str, or None. Got {type(categories).__name__} instead."
        )
    out: dict[ColumnSpec, tuple[str, ...]] = {}
    for key, values in categories.items():
        if isinstance(key, bool) or not isinstance(key, (numbers.Integral, str)):
            raise TypeError(
                f"The 'categories' parameter of {owner} must have column names (str) or positions "
                f"(int) as keys. Got {key!r} instead."
            )
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise TypeError(
                f"The 'categories' parameter of {owner} must map {key!r} to a list of str. "
                f"Got {values!r} instead."
            )
        cats = list(values)
        if not all(isinstance(c, str) for c in cats):
            raise TypeError(
                f"The 'categories' parameter of {owner} must map {key!r} to a list of str. "
                f"Got {cats!r} instead."
            )
        stripped = tuple(c.strip() for c in cats)
        if not stripped:
            raise ValueError(
                f"The 'categories' parameter of {owner} declares no category for {key!r}; "
                "give at least one."
            )
        if len(set(stripped)) != len(stripped):
            raise ValueError(
                f"The 'categories' parameter of {owner} declares a category twice for {key!r}: "
                f"{list(stripped)!r}."
            )
        out[key if isinstance(key, str) else int(key)] = stripped
    return out


def _resolve_categories(
    declared: Mapping[ColumnSpec, tuple[str, ...]],
    n_cols: int,
    names: Sequence[str] | None,
    source: str,
    label: int | None,
    excluded: Collection[int],
) -> dict[int, tuple[str, ...]]:
    """Declared categories by column position; the label and excluded columns cannot be declared."""
    out: dict[int, tuple[str, ...]] = {}
    for key, cats in declared.items():
        j = _resolve_column(key, "categories", n_cols, names, source)
        if j in out:
            raise ValueError(f"The 'categories' parameter declares the {_column_label(j, names)} twice.")
        if j == label:
            raise ValueError(
                f"The 'categories' parameter declares {key!r}, which is the label column; categories "
                "apply to feature columns."
            )
        if j in excluded:
            raise ValueError(
                f"The 'categories' parameter declares {key!r}, which is not a feature column (it is "
                "dropped or not selected)."
            )
        out[j] = cats
    return out


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _parse_float_column(cells: Sequence[str], na: frozenset[str]) -> np.ndarray | None:
    """float64 values of a column of strings (cells in ``na`` -> NaN), or None if one is text."""
    try:
        return np.array(cells, dtype=np.float64)
    except ValueError:
        pass
    out = np.empty(len(cells), dtype=np.float64)
    for i, cell in enumerate(cells):
        s = cell.strip()
        if s in na:
            out[i] = np.nan
            continue
        try:
            out[i] = float(s)
        except ValueError:
            return None
    return out


def _resolve_column(spec: Any, name: str, n_cols: int, names: Sequence[str] | None, source: str) -> int:
    """Column position from an int (negative counts from the end) or a header name."""
    if isinstance(spec, bool) or not isinstance(spec, (numbers.Integral, str)):
        raise TypeError(
            f"The '{name}' parameter must hold column names (str) or positions (int). Got {spec!r} instead."
        )
    if isinstance(spec, str):
        if names is None:
            raise ValueError(
                f"The '{name}' parameter names the column {spec!r}, but {source} has no header "
                "row; refer to columns by integer position (e.g. -1 for the last)."
            )
        matches = [j for j, c in enumerate(names) if c == spec]
        if not matches:
            # The names are not listed: when a first record is wrongly taken as a header, they are data.
            raise ValueError(
                f"The '{name}' parameter names the column {spec!r}, which is not in {source} (header "
                "names are matched exactly, after stripping whitespace; or use a position)."
            )
        if len(matches) > 1:
            raise ValueError(
                f"The '{name}' parameter names the column {spec!r}, which appears {len(matches)} "
                f"times in {source} (positions {matches}); use an integer position."
            )
        return matches[0]
    j = int(spec)
    if not -n_cols <= j < n_cols:
        raise ValueError(
            f"The '{name}' parameter must be a column position in [{-n_cols}, {n_cols - 1}] "
            f"({source} has {n_cols} columns). Got {spec!r} instead."
        )
    return j % n_cols


def _as_column_specs(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, numbers.Integral)) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, Iterable):
        raise TypeError(
            f"The '{name}' parameter must be a column name or position, or a collection of them. "
            f"Got {value!r} instead."
        )
    return list(value)


@dataclass(frozen=True)
class _Layout:
    """Which columns of a file become the labels and the features, decided from public inputs only.

    ``names`` are the header's or the schema's column names (None for a CSV file without a header);
    ``declared`` maps the position of a categorical feature column to its declared categories.
    """

    names: Sequence[str] | None
    label: int | None
    features: list[int]
    declared: dict[int, tuple[str, ...]]

    @property
    def used(self) -> list[int]:
        """The positions read from the file, the features' and the label's, in file order."""
        return sorted([*self.features, *([self.label] if self.label is not None else [])])

    def name(self, j: int) -> str:
        """The name of column ``j``: the header's, or ``x<j>`` without a header."""
        return self.names[j] if self.names is not None else f"x{j}"


def _resolve_label(label_column: Any, n_cols: int, names: Sequence[str] | None, source: str) -> int | None:
    """The label column's position, or None when there is no label column."""
    if label_column is None:
        return None
    return _resolve_column(label_column, "label_column", n_cols, names, source)


def _labels_and_features(
    layout: _Layout,
    columns: Mapping[int, np.ndarray | list[str]],
    n: int,
    max_categories: int,
    source: str,
    strip_labels: bool,
) -> tuple[np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """``(X, y, feature names)`` from the columns read: y as numbers or str, X assembled.

    Text labels are kept as str (whitespace stripped when ``strip_labels``); numeric labels are int64
    when all are integers, float64 otherwise.
    """
    y: np.ndarray | None = None
    if layout.label is not None:
        col = columns[layout.label]
        if isinstance(col, np.ndarray):
            y = _numeric_labels(col)
        else:
            y = np.array([v.strip() for v in col] if strip_labels else col, dtype=str)
    X, feature_names = _assemble(
        [(layout.name(j), columns[j], layout.declared.get(j)) for j in layout.features],
        n,
        max_categories,
        source,
    )
    return X, y, feature_names


# --------------------------------------------------------------------------------------------------
# LIBSVM
# --------------------------------------------------------------------------------------------------


@validated({"n_features": [NONE, _POSITIVE_INT], "dense": None})
def load_libsvm(
    path: PathLike, *, n_features: int | None = None, dense: bool = True
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """Load a LIBSVM / svmlight text file (``label index:value ...``), gzip or plain.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``*.gz`` is decompressed).
    n_features : int or None, default=None
        Number of columns d. None takes the largest index in the file -- a width decided by the
        data, so not private (pass the public width for private data) -- and a test file that misses
        the last features comes out narrower than its training file: pass the training width
        (e.g. ``n_features=123`` for LIBSVM ``a9a.t``, which uses only 122 distinct indices). An index
        above ``n_features`` is a :class:`DatasetFormatError` that does not quote it.
    dense : bool, default=True
        Return a dense array; False returns the scipy.sparse CSR matrix.

    Returns
    -------
    X : ndarray of shape (n, d), float64, or scipy.sparse.csr_matrix of shape (n, d)
    y : ndarray of shape (n,)
        The labels, int64 when all are integers (e.g. -1/+1), float64 otherwise.
    """
    from sklearn.datasets import load_svmlight_file

    p = resolve_path(path)
    if n_features is not None:
        n_features = int(n_features)
    try:
        X, y = load_svmlight_file(str(p), n_features=n_features, dtype=np.float64)
    except ValueError as exc:
        if n_features is None or "n_features" not in str(exc):
            raise
        # scikit-learn's message quotes the largest index in the file: private, not shown.
        raise DatasetFormatError(
            f"A feature index of {str(p)!r} is larger than n_features={n_features}. (The index is not "
            "shown: it is private data.)"
        ) from None
    X = sp.csr_matrix(X)
    return (X.toarray() if dense else X), _numeric_labels(y)


# --------------------------------------------------------------------------------------------------
# IDX (MNIST)
# --------------------------------------------------------------------------------------------------


def _read_idx(path: Path, magic: int, param: str) -> np.ndarray:
    """The uint8 array stored in an IDX file whose magic number must be ``magic``."""
    with _open_binary(path) as f:
        data = f.read()
    kind = "images (magic 2051)" if magic == _IDX_IMAGES_MAGIC else "labels (magic 2049)"
    if len(data) < 4:
        raise DatasetFormatError(
            f"The '{param}' file {str(path)!r} is not an IDX {kind} file: it has only {len(data)} bytes."
        )
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise DatasetFormatError(
            f"The '{param}' file {str(path)!r} is not an IDX {kind} file: its magic number is "
            f"{found} (0x{found:08x}), expected {magic} (0x{magic:08x}). Is it compressed without "
            "a .gz suffix, or are the images and labels files swapped?"
        )
    ndim = data[3]
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise DatasetFormatError(f"The '{param}' file {str(path)!r} is truncated: its header is incomplete.")
    dims = struct.unpack(f">{ndim}I", data[4:offset])
    expected = offset + math.prod(dims)
    if len(data) != expected:
        raise DatasetFormatError(
            f"The '{param}' file {str(path)!r} has {len(data)} bytes, but its header (dimensions "
            f"{dims}) implies {expected}: the file is truncated or corrupt."
        )
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def load_idx(
    images_path: PathLike, labels_path: PathLike | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Load MNIST-style IDX files: unsigned-byte images and, optionally, their labels.

    The format: a big-endian header (magic number 2051 = 0x00000803 for 3-D unsigned-byte images,
    2049 = 0x00000801 for 1-D unsigned-byte labels, then one 32-bit size per dimension) followed by
    the raw bytes in row-major order.

    Parameters
    ----------
    images_path : str or os.PathLike
        The images file, e.g. ``train-images-idx3-ubyte.gz`` (``*.gz`` is decompressed).
    labels_path : str or os.PathLike or None, default=None
        The matching labels file, e.g. ``train-labels-idx1-ubyte.gz``.

    Returns
    -------
    X : ndarray of shape (n, rows * cols), float64
        One flattened image per row, raw pixel values in [0, 255] (not rescaled).
    y : ndarray of shape (n,), int64, or None
        The labels, or None when ``labels_path`` is None.

    Raises
    ------
    DatasetFormatError
        A wrong magic number, a truncated file, or labels whose count differs from the images'.
    """
    images = _read_idx(resolve_path(images_path, "images_path"), _IDX_IMAGES_MAGIC, "images_path")
    X = images.reshape(images.shape[0], -1).astype(np.float64)
    if labels_path is None:
        return X, None
    labels = _read_idx(resolve_path(labels_path, "labels_path"), _IDX_LABELS_MAGIC, "labels_path")
    if labels.shape[0] != X.shape[0]:
        raise DatasetFormatError(
            f"The 'labels_path' file holds {labels.shape[0]} labels but the 'images_path' file "
            f"holds {X.shape[0]} images."
        )
    return X, labels.astype(np.int64)


# --------------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------------

#: :func:`load_csv`'s parameters that are a plain option or range (the structured ones are checked in
#: :func:`_read_csv`).
_CSV_PARAMETERS = {
    "header": Types((type(None), bool), "None (the default: a header is expected), True or False"),
    **_TABLE_PARAMETERS,
}


def _data_rows(reader: Iterator[list[str]], skip_header: bool) -> Iterator[list[str]]:
    """Non-blank records, without the header record."""
    skipped = not skip_header
    for row in reader:
        if not row:
            continue
        if not skipped:
            skipped = True
            continue
        yield row


def _ragged(source: str, n_cols: int) -> DatasetFormatError:
    # No record number and no field count: which record is malformed is a fact about private data.
    return DatasetFormatError(
        f"A data record of {source} has a different number of fields than its first record "
        f"({n_cols}); every record must have the same number of fields. (The record is not named: "
        "its position is private.)"
    )


@dataclass(frozen=True)
class _CsvFile:
    """How a CSV file is read (path, syntax, declared header) and its width: public facts only."""

    path: Path
    source: str
    delimiter: str
    encoding: str
    has_header: bool
    n_cols: int
    #: Physical lines up to the end of the header record (0 without a header): NumPy's ``skiprows``.
    header_lines: int

    def records(self) -> Generator[list[str], None, None]:
        """The data records (non-blank, header skipped), each checked to have ``n_cols`` fields."""
        with _open_text(self.path, self.encoding) as f:
            for row in _data_rows(csv.reader(f, delimiter=self.delimiter), self.has_header):
                if len(row) != self.n_cols:
                    raise _ragged(self.source, self.n_cols)
                yield row


def _check_csv_syntax(delimiter: Any, na_values: Any, owner: str) -> frozenset[str]:
    """The missing-value markers (stripped), after checking the delimiter and ``na_values``."""
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ValueError(
            f"The 'delimiter' parameter of {owner} must be a one-character str. Got {delimiter!r} instead."
        )
    if isinstance(na_values, str) or not all(isinstance(v, str) for v in na_values):
        raise TypeError(
            f"The 'na_values' parameter of {owner} must be a collection of str. Got {na_values!r} instead."
        )
    return frozenset(v.strip() for v in na_values)


def _read_csv_head(
    path: Path, source: str, has_header: bool, delimiter: str, encoding: str
) -> tuple[_CsvFile, list[str] | None, list[list[str]]]:
    """The first records: the file's width, its header names (when declared) and a data sample.

    Whether the first record is a header is the caller's declaration (``has_header``), never inferred.
    """
    sample: list[list[str]] = []
    header_lines = 0
    with _open_text(path, encoding) as f:
        reader = csv.reader(f, delimiter=delimiter)
        for row in reader:
            if not row:
                continue
            sample.append(row)
            if len(sample) == 1:
                header_lines = reader.line_num
            if len(sample) >= _CSV_SNIFF_ROWS:
                break
    if not sample:
        raise DatasetFormatError(f"The CSV file {source} holds no records.")
    n_cols = len(sample[0])
    names = [c.strip() for c in sample[0]] if has_header else None
    data_sample = sample[1:] if has_header else sample
    if not data_sample:
        raise DatasetFormatError(f"The CSV file {source} holds a header row but no data rows.")
    for row in data_sample:
        if len(row) != n_cols:
            raise _ragged(source, n_cols)
    skip = header_lines if has_header else 0
    return _CsvFile(path, source, delimiter, encoding, has_header, n_cols, skip), names, data_sample


def _refuse_data_like_header(
    names: Sequence[str], declared_specs: Mapping[ColumnSpec, tuple[str, ...]], source: str
) -> None:
    """The default (``header=None``) declares a header; refuse a first record that looks like data.

    Such a record is refused rather than turned into column names (which are saved, printed and listed
    in messages as public). Called before any column is looked up by name, whose errors list the names.
    """
    all_declared = {c for cats in declared_specs.values() for c in cats}
    if any(_is_number(c) or c in all_declared for c in names):
        raise ValueError(
            f"The first record of {source} is read as a header of column names (the default), but "
            "a field of it is a number or a declared category, so it looks like data. Pass "
            "header=False (--no-header) if the file has no header, or header=True (--header) to "
            "use that record as column names anyway."
        )


def _csv_layout(
    file: _CsvFile,
    names: Sequence[str] | None,
    label_column: ColumnSpec | None,
    drop_columns: Any,
    declared_specs: Mapping[ColumnSpec, tuple[str, ...]],
) -> _Layout:
    """The label, the feature columns (all but the label and the dropped ones) and their categories."""
    source, n_cols = file.source, file.n_cols
    label = _resolve_label(label_column, n_cols, names, source)
    drop = {
        _resolve_column(c, "drop_columns", n_cols, names, source)
        for c in _as_column_specs(drop_columns, "drop_columns")
    }
    if label is not None and label in drop:
        raise ValueError(
            f"The 'label_column' parameter ({label_column!r}) names a column that 'drop_columns' "
            f"({drop_columns!r}) drops."
        )
    features = [j for j in range(n_cols) if j not in drop and j != label]
    if not features:
        raise ValueError(
            f"No feature column of {source} is left after removing label_column={label_column!r} "
            f"and drop_columns={drop_columns!r}."
        )
    declared = _resolve_categories(declared_specs, n_cols, names, source, label, drop)
    return _Layout(names, label, features, declared)


def _check_sample(
    layout: _Layout, data_sample: Sequence[list[str]], na: frozenset[str], strict: bool, source: str
) -> tuple[dict[int, bool], list[int]]:
    """Which undeclared columns the sample finds numeric, and the feature columns that must be.

    With ``strict`` (not ``categorical="from_data"``) an undeclared feature column must be numeric:
    a text cell in the sample is refused here, by column only.
    """
    sample_numeric = {
        j: _parse_float_column([row[j] for row in data_sample], na) is not None
        for j in layout.used
        if j not in layout.declared
    }
    numeric_only = [j for j in layout.features if j not in layout.declared] if strict else []
    for j in numeric_only:
        if not sample_numeric[j]:
            raise _not_numeric_error(j, layout.names, source)
    return sample_numeric, numeric_only


def _collect_text_columns(file: _CsvFile, cols: Sequence[int]) -> dict[int, list[str]]:
    """The raw cells of the columns ``cols`` (one pass, row length checked)."""
    out: dict[int, list[str]] = {j: [] for j in cols}
    appenders = [(j, out[j].append) for j in cols]
    for row in file.records():
        for j, append in appenders:
            append(row[j])
    return out


def _read_csv_fast(
    file: _CsvFile, numeric: Sequence[int], text: Sequence[int]
) -> dict[int, np.ndarray | list[str]] | None:
    """NumPy's C parser for the ``numeric`` columns, the csv module for the ``text`` ones.

    None on any surprise (a text or missing cell after the sample, ragged rows seen by NumPy): the
    caller then falls back to the chunked parser, which handles them. A ragged record found by the
    csv module is an error here already.
    """
    columns: dict[int, np.ndarray | list[str]] = {}
    try:
        n_numeric: int | None = None
        if numeric:
            with _open_text(file.path, file.encoding) as f:
                A = np.loadtxt(
                    f,
                    delimiter=file.delimiter,
                    skiprows=file.header_lines,
                    usecols=numeric,
                    comments=None,
                    quotechar='"',
                    dtype=np.float64,
                    ndmin=2,
                )
            n_numeric = A.shape[0]
            columns.update({j: A[:, i] for i, j in enumerate(numeric)})
        if text:
            texts = _collect_text_columns(file, text)
            if n_numeric is not None and len(texts[text[0]]) != n_numeric:
                return None
            columns.update(texts)
    except DatasetFormatError:
        raise
    except ValueError:
        return None
    return columns


def _read_columns_slow(
    file: _CsvFile,
    cols: Sequence[int],
    na: frozenset[str],
    text_cols: Collection[int] = (),
    numeric_only: Collection[int] = (),
    names: Sequence[str] | None = None,
) -> dict[int, np.ndarray | list[str]]:
    """Every column parsed chunk by chunk: numeric (``na`` cells -> NaN) or text.

    Columns in ``text_cols`` are kept as text. A column in ``numeric_only`` with a non-numeric cell
    raises :func:`_not_numeric_error` (no value, no row). Other columns are numeric while they parse
    and text from the first cell that does not.
    """
    parts: dict[int, list[Any]] = {j: [] for j in cols}
    text: set[int] = set(text_cols)
    late_text: set[int] = set()  # turned out text after some chunks were stored as numbers
    with contextlib.closing(file.records()) as rows:
        while chunk := list(itertools.islice(rows, _CSV_CHUNK_ROWS)):
            for j in cols:
                cells = [row[j] for row in chunk]
                if j not in text:
                    values = _parse_float_column(cells, na)
                    if values is not None:
                        parts[j].append(values)
                        continue
                    if j in numeric_only:
                        raise _not_numeric_error(j, names, file.source)
                    text.add(j)
                    if parts[j]:
                        late_text.add(j)
                parts[j].append(cells)
            if len(chunk) < _CSV_CHUNK_ROWS:
                break
    out: dict[int, np.ndarray | list[str]] = {}
    if late_text:
        out.update(_collect_text_columns(file, sorted(late_text)))
    for j in cols:
        if j in late_text:
            continue
        if j in text:
            out[j] = [c for part in parts[j] for c in part]
        else:
            out[j] = np.concatenate(parts[j]) if parts[j] else np.empty(0)
    return out


def _read_csv_columns(
    file: _CsvFile,
    layout: _Layout,
    sample_numeric: Mapping[int, bool],
    numeric_only: Collection[int],
    na: frozenset[str],
) -> dict[int, np.ndarray | list[str]]:
    """The used columns: the fast path when the sample held no surprise, else the chunked parser.

    The chunked parser refuses a non-numeric cell in a column that must be numeric (``numeric_only``).
    """
    used = layout.used
    numeric = [j for j in used if j not in layout.declared and sample_numeric[j]]
    text = [j for j in used if j in layout.declared or not sample_numeric[j]]
    columns = _read_csv_fast(file, numeric, text)
    if columns is None:
        columns = _read_columns_slow(
            file, used, na, text_cols=layout.declared, numeric_only=numeric_only, names=layout.names
        )
    return columns


def _read_csv(
    path: PathLike,
    *,
    label_column: ColumnSpec | None,
    header: bool | None,
    drop_columns: ColumnSpec | Collection[ColumnSpec],
    categories: Mapping[ColumnSpec, Sequence[str]] | None,
    categorical: str,
    delimiter: str,
    na_values: Collection[str],
    max_categories: int,
    encoding: str,
) -> tuple[np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """``(X, y, feature names)`` of a CSV file: header -> columns -> categories -> assemble.

    The parameters are :func:`load_csv`'s, already checked against its table; the structured ones
    (``categories``, ``delimiter``, ``na_values``) are checked here, before the file is opened.
    """
    owner = "load_csv"
    p = resolve_path(path)
    source = repr(str(p))
    declared_specs = _check_categories(categories, owner)
    na = _check_csv_syntax(delimiter, na_values, owner)
    file, names, data_sample = _read_csv_head(p, source, header is not False, delimiter, encoding)
    if header is None and names is not None:
        _refuse_data_like_header(names, declared_specs, source)
    layout = _csv_layout(file, names, label_column, drop_columns, declared_specs)
    sample_numeric, numeric_only = _check_sample(
        layout, data_sample, na, strict=categorical != "from_data", source=source
    )
    columns = _read_csv_columns(file, layout, sample_numeric, numeric_only, na)
    n = len(columns[layout.used[0]])
    return _labels_and_features(layout, columns, n, max_categories, source, strip_labels=True)


@validated(_CSV_PARAMETERS)
def load_csv(
    path: PathLike,
    *,
    label_column: ColumnSpec | None = None,
    header: bool | None = None,
    drop_columns: ColumnSpec | Collection[ColumnSpec] = (),
    categories: Mapping[ColumnSpec, Sequence[str]] | None = None,
    categorical: Literal["declared", "raise", "from_data"] = "declared",
    delimiter: str = ",",
    na_values: Collection[str] = _DEFAULT_NA_VALUES,
    max_categories: int = 1000,
    encoding: str = "utf-8",
) -> tuple[np.ndarray, np.ndarray | None]:
    """Load a delimited text file (CSV), gzip or plain, with NumPy and the csv module.

    Parsing is strict and the shape of X comes from public inputs only: the columns of the file
    (its header or first record), the caller's ``label_column`` / ``drop_columns`` and the declared
    ``categories`` -- never from the values in the cells.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``*.gz`` is decompressed).
    label_column : int or str or None, default=None
        The label column: a position (negative counts from the end, e.g. -1 for the last) or a
        header name. None: no labels, every kept column is a feature.
    header : bool or None, default=None
        Whether the first record is a header of column names; it is never guessed from the data.
        None (the default) expects a header, and refuses one that looks like data (a field that is a
        number, or one of its column's declared categories) rather than publishing a record as
        column names. True: the first record is a header, whatever it holds. False: there is no
        header; columns are then referred to by position only (and named ``x0, x1, ...``).
    drop_columns : int or str or collection of them, default=()
        Columns that are neither features nor labels, e.g. an unnamed row-index column (its header
        name is ``""``; position 0 works too).
    categories : dict or None, default=None
        The public categories of the categorical feature columns: ``{column: [category, ...]}``
        with header names or positions as keys, e.g. ``{"proto": ["tcp", "udp", "icmp"]}``. Each
        declared column becomes one 0/1 indicator column per category, in the declared order, named
        ``"<column>=<category>"``, placed where the column was. Cells are compared after stripping
        whitespace. A cell that is not a declared category (a typo, a category unknown when the list
        was written) gets an all-zero indicator row: it is neither an error nor a new column, so the
        width and names of X never depend on the data. Choose the categories without looking at the
        private data (from a data dictionary, a standard, the collection form).
    categorical : {"declared", "raise", "from_data"}, default="declared"
        ``"declared"``: every feature column not in ``categories`` must be numeric; a cell that is
        neither a number nor in ``na_values`` raises a ValueError that names the column but neither
        the cell's value nor its row. ``"raise"``: the same (its former name). ``"from_data"``: an
        undeclared text column is one-hot encoded over the values found in the data (sorted) --
        **not private**: the categories become feature names and the number of columns depends on
        the data; for public data or for reproducing a paper only.
    delimiter : str, default=","
        The one-character field separator.
    na_values : collection of str, default=("", "?", "NA", "N/A")
        Cells that mark a missing number: in a numeric column they become NaN (which the private
        algorithms reject: impute or drop first). In a categorical column they are compared with the
        declared categories like any other cell.
    max_categories : int, default=1000
        ``categorical="from_data"`` only: the largest number of distinct values a column may have.
    encoding : str, default="utf-8"
        The text encoding (a UTF-8 byte-order mark is skipped).

    Returns
    -------
    X : ndarray of shape (n, d), float64
        Numeric feature columns as read, declared categorical columns as indicator blocks.
    y : ndarray of shape (n,) or None
        The labels as given: int64 if they are all integers, float64 if they are all numbers,
        otherwise str (surrounding whitespace stripped). None if ``label_column`` is None.

    Raises
    ------
    ValueError
        Unknown column names or positions, a non-numeric cell in a column not declared categorical,
        bad ``categories``, a default header that looks like data; :class:`DatasetFormatError` (a
        ValueError) for ragged rows or an empty file. No message quotes a cell or names a data row.

    Notes
    -----
    Use :func:`load` to also get the produced feature names (including the indicator columns').
    Loading is not a release; the privacy of what is computed from X is the algorithm's.
    """
    X, y, _ = _read_csv(**locals())  # every parameter as given: the reader takes the same ones
    return X, y


# --------------------------------------------------------------------------------------------------
# NPY / NPZ
# --------------------------------------------------------------------------------------------------


def _as_feature_matrix(A: np.ndarray, what: str, convert: bool) -> np.ndarray:
    if A.ndim < 2:
        raise DatasetFormatError(
            f"The array {what} must have at least 2 dimensions (rows x features). Got shape "
            f"{A.shape} instead."
        )
    if A.ndim > 2:
        A = A.reshape(A.shape[0], -1)
    if not convert:
        return A
    if not (np.issubdtype(A.dtype, np.number) or A.dtype == np.bool_):
        raise DatasetFormatError(f"The array {what} must be numeric. Got dtype {A.dtype} instead.")
    return np.asarray(A, dtype=np.float64)


@validated({"mmap_mode": [NONE, Options(("r", "r+", "c"))]})
def load_npy(
    path: PathLike,
    *,
    key: str | None = None,
    label_key: str | None = None,
    mmap_mode: Literal["r", "r+", "c"] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Load a NumPy ``.npy`` array or ``.npz`` archive (gzip or plain; never unpickles objects).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` or ``.npz`` file, optionally ``.gz`` compressed.
    key : str or None, default=None
        ``.npz`` only: the array holding X. None picks ``"X"`` if present, else the only array.
    label_key : str or None, default=None
        ``.npz`` only: the array holding y. None picks ``"y"`` if present, else no labels.
    mmap_mode : {None, "r", "r+", "c"}, default=None
        Passed to :func:`numpy.load` for an uncompressed ``.npy`` file: X is then returned as the
        ``np.memmap`` itself, in its stored dtype, so that it can be processed out of core.

    Returns
    -------
    X : ndarray of shape (n, d)
        float64 (an array with more than 2 dimensions is flattened to (n, -1)); with
        ``mmap_mode``, an ``np.memmap`` in the stored dtype.
    y : ndarray of shape (n,) or None
        ``.npz`` labels (int64 if all integers, float64 if numeric, else as stored); None for a
        ``.npy`` file.
    """
    owner = "load_npy"
    p = resolve_path(path)
    inner = _strip_gz(p.name).lower()
    is_npz = inner.endswith(".npz")
    if mmap_mode is not None and (is_npz or _is_gzip(p)):
        raise ValueError(
            f"The 'mmap_mode' parameter of {owner} works only for an uncompressed .npy file. "
            f"Got mmap_mode={mmap_mode!r} for {str(p)!r}."
        )
    if not is_npz:
        for pname, pval in (("key", key), ("label_key", label_key)):
            if pval is not None:
                raise ValueError(
                    f"The '{pname}' parameter of {owner} applies to .npz archives only. Got "
                    f"{pval!r} for {str(p)!r}."
                )
        if _is_gzip(p):
            with _open_binary(p) as f:
                A = np.load(io.BytesIO(f.read()), allow_pickle=False)
        else:
            A = np.load(p, mmap_mode=mmap_mode, allow_pickle=False)
        return _as_feature_matrix(A, repr(str(p)), convert=mmap_mode is None), None

    with _open_binary(p) as f:
        payload = io.BytesIO(f.read()) if _is_gzip(p) else None
    with np.load(payload if payload is not None else p, allow_pickle=False) as archive:
        files = list(archive.files)
        if key is None:
            if "X" in files:
                key = "X"
            elif len(files) == 1:
                key = files[0]
            else:
                raise ValueError(
                    f"The 'key' parameter of {owner} is required for {str(p)!r}, which holds "
                    f"the arrays {files} and none named 'X'."
                )
        for pname, pval in (("key", key), ("label_key", label_key)):
            if pval is not None and pval not in files:
                raise ValueError(
                    f"The '{pname}' parameter of {owner} must name an array of {str(p)!r} "
                    f"({files}). Got {pval!r} instead."
                )
        if label_key is None and "y" in files and key != "y":
            label_key = "y"
        X = _as_feature_matrix(archive[key], f"{key!r} of {str(p)!r}", convert=True)
        y = None
        if label_key is not None:
            raw = np.asarray(archive[label_key]).ravel()
            y = _numeric_labels(raw) if np.issubdtype(raw.dtype, np.number) else raw
            if y.shape[0] != X.shape[0]:
                raise DatasetFormatError(
                    f"The labels {label_key!r} of {str(p)!r} have {y.shape[0]} entries but X "
                    f"({key!r}) has {X.shape[0]} rows."
                )
    return X, y


# --------------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------------


def _import_pyarrow() -> tuple[Any, Any, Any]:
    """``pyarrow``, ``pyarrow.compute`` and ``pyarrow.parquet`` (an optional dependency)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_parquet needs the optional dependency pyarrow: pip install 'dpspectral[parquet]'"
        ) from exc
    return pa, pc, pq


def _parquet_layout(
    names: Sequence[str],
    label_column: ColumnSpec | None,
    columns: Sequence[ColumnSpec] | None,
    declared_specs: Mapping[ColumnSpec, tuple[str, ...]],
    source: str,
) -> _Layout:
    """The label, the feature columns (``columns``, or all but the label) and their categories."""
    n_cols = len(names)
    label = _resolve_label(label_column, n_cols, names, source)
    if columns is None:
        features = [j for j in range(n_cols) if j != label]
    else:
        features = [
            _resolve_column(c, "columns", n_cols, names, source) for c in _as_column_specs(columns, "columns")
        ]
        features = [j for j in dict.fromkeys(features) if j != label]
    if not features:
        raise ValueError(
            f"No feature column of {source} is left (label_column={label_column!r}, columns={columns!r})."
        )
    declared = _resolve_categories(
        declared_specs, n_cols, names, source, label, [j for j in range(n_cols) if j not in features]
    )
    return _Layout(names, label, features, declared)


def _check_arrow_schema(schema: Any, layout: _Layout, categorical: str, source: str, pa: Any) -> None:
    """Refuse a type mismatch from the Arrow schema (public), before any value is read.

    A declared column must be a string column; an undeclared string feature column is refused unless
    ``categorical="from_data"``.
    """
    names = layout.names
    assert names is not None  # a Parquet schema names every column
    for j in layout.used:
        t = schema.field(names[j]).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        is_text = pa.types.is_string(t) or pa.types.is_large_string(t)
        if j in layout.declared and not is_text:
            raise TypeError(
                f"The 'categories' parameter declares the {_column_label(j, names)} of {source}, whose "
                f"Arrow type is {t}; categories apply to string columns."
            )
        if is_text and j != layout.label and j not in layout.declared and categorical != "from_data":
            raise _not_numeric_error(j, names, source, why="it is a string column")


def _arrow_column(table: Any, name: str, source: str, pa: Any, pc: Any) -> np.ndarray | list[str]:
    """A column of an Arrow table as float64 (numbers, booleans; nulls -> NaN) or str (nulls -> "")."""
    col = table.column(name)
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t):
        return np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ["" if v is None else v for v in col.to_pylist()]
    raise TypeError(
        f"Column {name!r} of {source} has the Arrow type {t}, which is neither numeric "
        "nor a string; drop it (columns=...)."
    )


def _read_parquet(
    path: PathLike,
    *,
    label_column: ColumnSpec | None,
    columns: Sequence[ColumnSpec] | None,
    categories: Mapping[ColumnSpec, Sequence[str]] | None,
    categorical: str,
    max_categories: int,
) -> tuple[np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """``(X, y, feature names)`` of a Parquet file: schema -> columns -> categories -> assemble.

    The parameters are :func:`load_parquet`'s, already checked against its table; ``categories`` is
    checked here. Types are checked on the schema before any value is read.
    """
    pa, pc, pq = _import_pyarrow()
    declared_specs = _check_categories(categories, "load_parquet")
    p = resolve_path(path)
    source = repr(str(p))
    payload: Any = p
    if _is_gzip(p):
        with _open_binary(p) as f:
            payload = pa.BufferReader(f.read())
    pfile = pq.ParquetFile(payload)
    names = list(pfile.schema_arrow.names)
    layout = _parquet_layout(names, label_column, columns, declared_specs, source)
    _check_arrow_schema(pfile.schema_arrow, layout, categorical, source, pa)
    table = pfile.read(columns=[names[j] for j in layout.used])
    order = ([layout.label] if layout.label is not None else []) + layout.features  # label first
    read = {j: _arrow_column(table, names[j], source, pa, pc) for j in order}
    return _labels_and_features(layout, read, table.num_rows, max_categories, source, strip_labels=False)


@validated(_TABLE_PARAMETERS)
def load_parquet(
    path: PathLike,
    *,
    label_column: ColumnSpec | None = None,
    columns: Sequence[ColumnSpec] | None = None,
    categories: Mapping[ColumnSpec, Sequence[str]] | None = None,
    categorical: Literal["declared", "raise", "from_data"] = "declared",
    max_categories: int = 1000,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Load a Parquet file with pyarrow (optional dependency: ``pip install dpspectral[parquet]``).

    Parameters
    ----------
    path : str or os.PathLike
        The file (``*.gz`` is decompressed in memory).
    label_column : int or str or None, default=None
        The label column, by name or position (negative counts from the end); None for no labels.
    columns : sequence of str or int, or None, default=None
        The feature columns, in this order; None takes every column but the label.
    categories : dict or None, default=None
        The public categories of string feature columns, ``{column: [category, ...]}``, encoded as
        in :func:`load_csv` (declared order; a value outside them, or a null, gives an all-zero
        indicator row unless ``""`` is declared). A declared column must have a string type.
    categorical : {"declared", "raise", "from_data"}, default="declared"
        ``"declared"`` (or its former name ``"raise"``): an undeclared string feature column is
        refused (decided from the file's schema, before any value is read). ``"from_data"``: it is
        one-hot encoded over the values found in the data -- **not private** (see :func:`load_csv`).
    max_categories : int, default=1000
        ``categorical="from_data"`` only: the largest number of distinct values a column may have.

    Returns
    -------
    X : ndarray of shape (n, d), float64
        Numeric and boolean columns as float64 (nulls become NaN); declared string columns as
        indicator blocks.
    y : ndarray of shape (n,) or None
        int64 if all labels are integers, float64 if numeric, str otherwise.

    Raises
    ------
    ImportError
        When pyarrow is not installed.
    """
    X, y, _ = _read_parquet(**locals())  # every parameter as given: the reader takes the same ones
    return X, y


# --------------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set. Unpacks as ``X, y = dataset``.

    Attributes
    ----------
    X : ndarray of shape (n, d), scipy.sparse.csr_matrix or np.memmap
        The features.
    y : ndarray of shape (n,) or None
        The labels.
    feature_names : tuple of str or None
        The column names (CSV: the header's, or ``x0, x1, ...`` without one; Parquet: the schema's),
        including the ``"<column>=<category>"`` names of the declared categorical columns.
    name : str
        The file name without its format and ``.gz`` suffixes.
    source : str
        The path the data were read from.
    """

    X: Any
    y: np.ndarray | None
    feature_names: tuple[str, ...] | None
    name: str
    source: str

    def __iter__(self) -> Iterator[Any]:
        yield self.X
        yield self.y

    def __repr__(self) -> str:
        y = "None" if self.y is None else f"array of shape {self.y.shape}"
        return (
            f"Dataset(name={self.name!r}, X={type(self.X).__name__} of shape {self.X.shape}, "
            f"y={y}, source={self.source!r})"
        )


def guess_format(path: Path) -> str:
    """The loader a file name implies: "csv", "npy", "parquet", "idx" or "libsvm" (after ".gz")."""
    inner = _strip_gz(path.name).lower()
    if inner.endswith(".csv"):
        return "csv"
    if inner.endswith((".npy", ".npz")):
        return "npy"
    if inner.endswith((".parquet", ".pq")):
        return "parquet"
    if "idx3-ubyte" in inner:
        return "idx"
    return "libsvm"


def _dataset_name(path: Path) -> str:
    inner = _strip_gz(path.name)
    for suffix in (".csv", ".npy", ".npz", ".parquet", ".pq", ".libsvm", ".svm"):
        if inner.lower().endswith(suffix):
            return inner[: -len(suffix)]
    return inner


def _read_table(path: Path, fmt: str, options: dict[str, Any]) -> tuple[Any, Any, tuple[str, ...]]:
    """CSV or Parquet through :func:`load`: the loader's options, its defaults and its table, checked.

    The public loader's signature is the one list of options and defaults; its constraint table checks
    them as if the loader itself were called.
    """
    loader: Callable[..., Any]
    reader: Callable[..., tuple[Any, Any, tuple[str, ...]]]
    table: Mapping[str, Any]
    if fmt == "csv":
        loader, reader, table = load_csv, _read_csv, _CSV_PARAMETERS
    else:
        loader, reader, table = load_parquet, _read_parquet, _TABLE_PARAMETERS
    parameters = inspect.signature(loader).parameters
    given = {name: options.pop(name, p.default) for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    if options:
        raise TypeError(f"load(format={fmt!r}) got unexpected keyword arguments {sorted(options)}.")
    check_params(table, given, loader.__name__)
    return reader(path, **given)


@validated({"format": [NONE, Options(_FORMATS)]})
def load(path: PathLike, *, format: Format | None = None, **kwargs: Any) -> Dataset:
    """Load a data file with the loader for its format.

    The format comes from the file name after removing ``.gz``: ``.csv`` -> :func:`load_csv`,
    ``.npy`` / ``.npz`` -> :func:`load_npy`, ``.parquet`` / ``.pq`` -> :func:`load_parquet`, a name
    containing ``idx3-ubyte`` -> :func:`load_idx`, anything else -> :func:`load_libsvm`.

    Parameters
    ----------
    path : str or os.PathLike
        The file (for IDX, the images file).
    format : {"libsvm", "idx", "csv", "npy", "parquet"} or None, default=None
        Override the guess from the file name.
    **kwargs
        Passed to the loader. For IDX, ``labels_path`` defaults to the sibling file whose name
        has ``labels-idx1`` in place of ``images-idx3`` when it exists.

    Returns
    -------
    Dataset
        ``X``, ``y``, ``feature_names`` (CSV/Parquet only), ``name`` and ``source``; unpacks as
        ``X, y``.
    """
    p = resolve_path(path)
    fmt = guess_format(p) if format is None else format
    names: tuple[str, ...] | None = None
    if fmt in ("csv", "parquet"):
        X, y, names = _read_table(p, fmt, kwargs)
    elif fmt == "npy":
        X, y = load_npy(p, **kwargs)
    elif fmt == "idx":
        labels = kwargs.pop("labels_path", None)
        if labels is None and "images-idx3" in p.name:
            sibling = p.with_name(p.name.replace("images-idx3", "labels-idx1"))
            labels = sibling if sibling.is_file() else None
        X, y = load_idx(p, labels, **kwargs)
    else:
        X, y = load_libsvm(p, **kwargs)
    return Dataset(X=X, y=y, feature_names=names, name=_dataset_name(p), source=str(p))


# --------------------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------------------


def normalize_rows_nonprivate(X: np.ndarray | sp.spmatrix | sp.sparray) -> Any:
    """Divide every row by the largest row norm of the data set. **NOT differentially private.**

    .. warning::
       The scale ``max_i ||x_i||`` is computed from the data: changing one row can change every
       output row, and the scale itself leaks information about the largest record. No
       sensitivity computed for rows of norm <= 1 holds *for the original data* after this map.
       It exists only to reproduce papers that normalise this way; any result obtained after it
       must be reported with "rows divided by the data set's maximum row norm (non-private
       preprocessing)". For a private pipeline use :func:`clip_rows` with a public ``row_norm``.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, d)
        Not modified.

    Returns
    -------
    X_scaled : same kind as X, shape (n, d), float64
        A copy whose largest row norm is 1 (an all-zero X is returned unchanged as a copy).
    """
    if sp.issparse(X):
        Xc = sp.csr_matrix(X, dtype=np.float64, copy=True)
    else:
        # numeric and 2-D, or a refusal that quotes no cell; then a float64 copy
        Xc = np.array(as_numeric_array(X, "normalize_rows_nonprivate", name="X"), dtype=np.float64, copy=True)
    norms = row_norms(Xc)
    if not np.all(np.isfinite(norms)):
        raise ValueError(
            "The 'X' parameter of normalize_rows_nonprivate must hold finite values. Got NaN or inf instead."
        )
    scale = float(norms.max()) if norms.size else 0.0
    if scale == 0.0:
        return Xc
    return Xc / scale if sp.issparse(Xc) else np.divide(Xc, scale, out=Xc)


# --------------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------------


def _check_at_most(d: int, k: int, owner: str) -> tuple[int, int]:
    """``(d, k)`` after checking ``k <= d`` (a relation between two parameters, so not in the tables)."""
    if k > d:
        raise ValueError(f"The 'k' parameter of {owner} must be an int in [1, d={d}]. Got {k!r} instead.")
    return d, k


@validated({"d": _POSITIVE_INT, "k": _POSITIVE_INT})
def random_orthonormal(d: int, k: int, *, random_state: Any = None) -> np.ndarray:
    """A uniformly (Haar) distributed d x k matrix with orthonormal columns.

    Parameters
    ----------
    d, k : int
        Shape, with 1 <= k <= d.
    random_state : None, int, numpy SeedSequence or Generator
        Source of randomness (the global NumPy state is never used).

    Returns
    -------
    V : ndarray of shape (d, k)
        ``V.T @ V == I_k`` up to rounding.
    """
    d, k = _check_at_most(int(d), int(k), "random_orthonormal")
    rng = as_generator(random_state)
    # QR of a Gaussian matrix with R's diagonal made positive is Haar distributed.
    return orthonormalize(rng.standard_normal((d, k)), "qr")


@validated({"n": _POSITIVE_INT, "d": _POSITIVE_INT, "noise": _NONNEGATIVE})
def gaussian_data(
    n: int,
    d: int,
    *,
    eigenvalues: Sequence[float] | np.ndarray,
    basis: np.ndarray | None = None,
    noise: float = 0.0,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Zero-mean Gaussian rows with covariance ``V diag(eigenvalues) V^T + noise^2 I``.

    Each row is ``x = V diag(sqrt(eigenvalues)) z + noise * g`` with z ~ N(0, I_m), g ~ N(0, I_d).

    Parameters
    ----------
    n, d : int
        Number of rows and of features.
    eigenvalues : array-like of shape (m,), m <= d
        Non-negative variances along the columns of V (in that order).
    basis : ndarray of shape (d, m) or None, default=None
        The orthonormal directions V; None draws a Haar-random one (before the rows).
    noise : float, default=0.0
        Standard deviation of the isotropic noise added to every coordinate.
    random_state : None, int, numpy SeedSequence or Generator
        Source of randomness (the global NumPy state is never used).

    Returns
    -------
    X : ndarray of shape (n, d), float64
    V : ndarray of shape (d, m)
        The basis used (the one given, or the one drawn).
    """
    owner = "gaussian_data"
    n, d = int(n), int(d)
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.ndim != 1 or not 1 <= lam.size <= d:
        raise ValueError(
            f"The 'eigenvalues' parameter of {owner} must be a 1-D array of 1 to d={d} values. "
            f"Got shape {lam.shape} instead."
        )
    if not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError(
            f"The 'eigenvalues' parameter of {owner} must hold finite values >= 0. Got {lam!r} instead."
        )
    noise = float(noise)
    rng = as_generator(random_state)
    if basis is None:
        V = random_orthonormal(d, lam.size, random_state=rng)
    else:
        V = np.asarray(basis, dtype=np.float64)
        if V.shape != (d, lam.size):
            raise ValueError(
                f"The 'basis' parameter of {owner} must have shape (d, m) = ({d}, {lam.size}). "
                f"Got shape {V.shape} instead."
            )
        if not np.allclose(V.T @ V, np.eye(lam.size), atol=1e-8):
            raise ValueError(f"The 'basis' parameter of {owner} must have orthonormal columns.")
    Z = rng.standard_normal((n, lam.size))
    X = (Z * np.sqrt(lam)) @ V.T
    if noise > 0:
        X += noise * rng.standard_normal((n, d))
    return X, V


@validated({"n": _POSITIVE_INT, "d": _POSITIVE_INT, "k": _POSITIVE_INT, "noise": _NONNEGATIVE})
def spiked_covariance(
    n: int,
    d: int,
    k: int,
    *,
    spike: float | Sequence[float] | np.ndarray = 10.0,
    noise: float = 1.0,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows from the spiked covariance model ``x = V diag(sqrt(spike)) z + noise * g``.

    The population covariance is ``V diag(spike) V^T + noise^2 I_d``: its top-k eigenvectors span
    the columns of V, with eigenvalues ``spike + noise^2``; the other d - k eigenvalues are
    ``noise^2``.

    Parameters
    ----------
    n, d : int
        Number of rows and of features.
    k : int
        Number of spikes, 1 <= k <= d.
    spike : float or array-like of shape (k,), default=10.0
        The spike strengths (> 0); a float gives k equal spikes (then only span(V) is identified).
        Column i of V carries ``spike[i]``.
    noise : float, default=1.0
        Standard deviation of the isotropic noise.
    random_state : None, int, numpy SeedSequence or Generator
        Source of randomness (the global NumPy state is never used).

    Returns
    -------
    X : ndarray of shape (n, d), float64
    V : ndarray of shape (d, k)
        The true orthonormal basis (Haar-random).
    """
    owner = "spiked_covariance"
    d, k = _check_at_most(int(d), int(k), owner)
    spikes = (
        np.broadcast_to(np.asarray(spike, dtype=np.float64), (k,))
        if np.ndim(spike) == 0
        else np.asarray(spike, dtype=np.float64)
    )
    if spikes.shape != (k,) or not np.all(np.isfinite(spikes)) or np.any(spikes <= 0):
        raise ValueError(
            f"The 'spike' parameter of {owner} must be a float > 0 or k={k} floats > 0. Got "
            f"{spike!r} instead."
        )
    return gaussian_data(n, d, eigenvalues=spikes, noise=noise, random_state=random_state)


@validated({"n": _POSITIVE_INT, "d": _POSITIVE_INT, "decay": _NONNEGATIVE})
def decaying_spectrum(
    n: int, d: int, *, decay: float = 0.5, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose feature standard deviations are ``j^-decay`` (j = 1..d) in a random basis.

    ``x = V diag(j^-decay) z`` with z ~ N(0, I_d) and V a Haar-random orthogonal matrix, so the
    population covariance is ``V diag(j^(-2 decay)) V^T``. The default decay 1/2 gives standard
    deviations ``1/sqrt(j)`` (eigenvalues 1/j).

    Parameters
    ----------
    n, d : int
        Number of rows and of features.
    decay : float, default=0.5
        Exponent (>= 0) of the standard deviations.
    random_state : None, int, numpy SeedSequence or Generator
        Source of randomness (the global NumPy state is never used).

    Returns
    -------
    X : ndarray of shape (n, d), float64
    V : ndarray of shape (d, d)
        The orthogonal basis: column j is the population eigenvector of eigenvalue ``eigenvalues[j]``.
    eigenvalues : ndarray of shape (d,)
        The population covariance eigenvalues ``j^(-2 decay)``, descending.
    """
    d, decay = int(d), float(decay)
    eigenvalues = np.arange(1, d + 1, dtype=np.float64) ** (-2.0 * decay)
    X, V = gaussian_data(n, d, eigenvalues=eigenvalues, random_state=random_state)
    return X, V, eigenvalues
