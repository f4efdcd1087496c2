"""Per-row clipping: the only data-dependent map applied before a release.

``x -> x * min(1, C / ||x||)`` touches one record at a time, so neighbouring data sets stay
neighbouring after it and every sensitivity computed for rows of norm <= C holds.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from .pipeline import norm_violation_error

__all__ = [
    "ROUNDING_SLACK",
    "NormViolation",
    "check_row_norm",
    "clip_rows",
    "clip_threshold",
    "row_norms",
    "sensitivity_norm",
]

NormViolation = Literal["clip", "raise"]

#: Relative slack for rounding in computed row norms. A row whose computed norm is within
#: ``C (1 + ROUNDING_SLACK)`` is left as it is (a norm computed in floating point is off by up to
#: about ``d * 2^-53`` relative, so rows scaled to unit norm often compute as 1 + 1e-16), and every
#: sensitivity is computed for the bound ``C (1 + ROUNDING_SLACK)`` instead of ``C``: the guarantee
#: holds for the rows actually used, at a cost of 2e-10 relative extra noise.
ROUNDING_SLACK = 1e-10


def clip_threshold(row_norm: float) -> float:
    """Rows whose computed norm exceeds this are scaled down to ``row_norm``."""
    return row_norm * (1.0 + ROUNDING_SLACK)


def sensitivity_norm(row_norm: float) -> float:
    """The row-norm bound that sensitivities must use (see :data:`ROUNDING_SLACK`)."""
    return row_norm * (1.0 + ROUNDING_SLACK)


def check_row_norm(row_norm: object, owner: str = "this function") -> float:
    """Validate a public row-norm bound (a positive finite float); never derived from data."""
    if row_norm is None:
        raise ValueError(
            f"The 'row_norm' parameter of {owner} is required: a public bound on the Euclidean norm "
            "of each row, chosen without looking at the data. Got None instead."
        )
    if isinstance(row_norm, bool) or not isinstance(row_norm, (int, float, np.floating, np.integer)):
        raise TypeError(
            f"The 'row_norm' parameter of {owner} must be a float in (0, inf). Got {row_norm!r} "
            "instead."
        )
    value = float(row_norm)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"The 'row_norm' parameter of {owner} must be a float in (0, inf). Got {row_norm!r} "
            "instead."
        )
    return value


def row_norms(X: np.ndarray | sp.spmatrix | sp.sparray) -> np.ndarray:
    """Euclidean norm of each row (dense or sparse)."""
    if sp.issparse(X):
        Xs: Any = X
        return np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def clip_rows(
    X: np.ndarray | sp.spmatrix | sp.sparray,
    row_norm: float,
    *,
    on_norm_violation: NormViolation = "clip",
    copy: bool = True,
    first_row: int = 0,
    norms: np.ndarray | None = None,
    owner: str = "dpspectral",
) -> tuple[np.ndarray | sp.spmatrix | sp.sparray, int]:
    """Scale every row of norm above ``row_norm`` down to ``row_norm``.

    Parameters
    ----------
    X : array or sparse matrix of shape (n, d)
    row_norm : float
        Public bound C.
    on_norm_violation : {"clip", "raise"}
        ``"raise"`` rejects data with a row above the bound instead of clipping it.
    copy : bool
        True (default): ``X`` is never modified; a copy is made only when some row must be scaled
        (otherwise ``X`` itself is returned). False: a writeable float ``X`` is clipped in place.
    first_row : int
        Index of the first row of ``X`` in the whole data set (kept for callers; error messages name
        no row: which rows break the bound is private).
    norms : ndarray of shape (n,), optional
        The rows' Euclidean norms, when the caller has them already.
    owner : str
        What the user called, for the error message.

    Returns
    -------
    X_clipped : same type as X
    n_clipped : int
        How many rows were scaled. Data-dependent: for the caller's diagnostics only, never released.
    """
    if norms is None:
        norms = row_norms(X)
    over = norms > clip_threshold(row_norm)
    n_over = int(np.count_nonzero(over))
    if n_over == 0:
        return X, 0
    if on_norm_violation == "raise":
        raise norm_violation_error(owner, row_norm)
    scale = np.ones_like(norms)
    scale[over] = row_norm / norms[over]
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale) @ X), n_over
    out = X.copy() if copy else X
    out[over] *= scale[over, None]
    return out, n_over
