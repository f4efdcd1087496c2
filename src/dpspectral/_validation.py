"""Parameter validation shared by the functions and estimators (messages name the parameter)."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Collection
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["as_generator", "as_label_array", "as_numeric_array", "check_choice", "check_n_components",
           "check_numeric_dtype", "check_numeric_layout", "check_share", "validated_data"]


def check_choice(value: Any, name: str, allowed: Collection[str], owner: str) -> str:
    """``value`` must be one of ``allowed`` (strings): a one-entry constraint table."""
    from .constraints import check_choice as _check

    return _check(value, name, allowed, owner)


def check_n_components(k: Any, n_features: int, owner: str, name: str = "n_components") -> int:
    """An integer in [1, n_features]."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(
            f"The '{name}' parameter of {owner} must be an int in [1, {n_features}]. Got {k!r} "
            "instead."
        )
    if not 1 <= int(k) <= n_features:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in [1, n_features={n_features}]. "
            f"Got {k!r} instead."
        )
    return int(k)


def check_share(value: Any, name: str, owner: str) -> float:
    """A budget share in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a float in (0, 1). Got {value!r} instead."
        )
    return float(value)


def as_generator(random_state: Any) -> np.random.Generator:
    """A ``np.random.Generator`` from None, an int, a SeedSequence or a Generator.

    The global NumPy state is never used. A Generator passed in is used (and advanced) as is.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(
                f"The 'random_state' parameter must be a non-negative int. Got {random_state!r}."
            )
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        # Legacy generator: derive a Generator from it (deterministic given its state).
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    raise TypeError(
        "The 'random_state' parameter must be None, an int, a numpy SeedSequence or Generator. "
        f"Got {random_state!r} instead."
    )


def check_mechanism_inputs(
    *,
    epsilon: Any,
    delta: Any,
    row_norm: Any,
    relation: Any,
    calibration: Any,
    on_norm_violation: Any,
    owner: str,
    allowed_relations: Collection[Any],
    needs_delta: bool = True,
) -> tuple[Any, Any, float]:
    """The public inputs every mechanism takes: ``(PrivacyBudget, Relation, row_norm)``.

    Raises a ValueError/TypeError naming the parameter for a bad epsilon, delta (and delta = 0 when
    ``needs_delta``), row_norm, relation outside ``allowed_relations``, calibration or
    on_norm_violation.
    """
    from .constraints import CALIBRATION, DELTA, EPSILON, ON_NORM_VIOLATION, check_params
    from .privacy.budget import PrivacyBudget, as_relation
    from .privacy.clipping import check_row_norm

    check_params(
        {"epsilon": EPSILON, "delta": DELTA},
        {"epsilon": epsilon, "delta": delta}, owner,
    )
    budget = PrivacyBudget(epsilon, delta)
    rel = as_relation(relation, owner=owner)
    if rel not in allowed_relations:
        allowed = ", ".join(repr(r.value) for r in allowed_relations)
        raise ValueError(
            f"The 'relation' parameter of {owner} must be one of {allowed}. Got {rel.value!r} instead."
        )
    check_params({"calibration": CALIBRATION, "on_norm_violation": ON_NORM_VIOLATION},
                 {"calibration": calibration, "on_norm_violation": on_norm_violation}, owner)
    C = check_row_norm(row_norm, owner)
    if needs_delta:
        budget.require_delta(owner)
    return budget, rel, C


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


def validated_data(estimator: Any, X: Any, y: Any = "no_validation", **check_params: Any) -> Any:
    """scikit-learn's ``validate_data`` for an estimator's ``fit``/``transform``/``predict`` input,
    after the conversions that could quote the data have been made here (:func:`as_numeric_array`
    for X, :func:`as_label_array` for y), with data-free refusals.

    scikit-learn's own messages quote the data (``Expected 2D array, got 1D array instead:
    array=[...]``, ``Complex data not supported`` followed by the array, NumPy's ``could not convert
    string to float: '...'``). A DataFrame goes on to scikit-learn as it is (so that ``feature_names_in_``
    is recorded and checked) once every cell has been read as a number; other input goes on converted.
    """
    from sklearn.utils.validation import validate_data

    owner = type(estimator).__name__
    sparse_ok = bool(check_params.get("accept_sparse", False))
    checked = as_numeric_array(X, owner, name="X", ndim=2, accept_sparse=sparse_ok)
    data = X if _column_names(X) is not None else checked
    if isinstance(y, str) and y == "no_validation":
        return validate_data(estimator, data, **check_params)
    if y is not None:
        as_label_array(y, owner, n_rows=int(checked.shape[0]))
    return validate_data(estimator, data, y, **check_params)
