"""Per-row clipping: the only data-dependent map applied before a release.

``x -> x * min(1, C / ||x||)`` touches one record at a time, so neighbouring data sets stay
neighbouring after it and every sensitivity computed for rows of norm <= C holds.

Supported bounds. A norm ``sqrt(sum x_j^2)`` computed in floating point is off by a small *relative*
error only while the squares are normal numbers: for rows near a bound C far from 1 they are subnormal
(C below about 1e-154 in float64, 1e-19 in float32) or overflow (C above about 1e154, 1e19), and a row
above C could pass as within it. So every comparison of a norm with C (:func:`clip_rows`, the covariance
path's accumulation, the validation pass, the device clip) is made on rows scaled by the public power of
two :func:`norm_scale` (exact: it changes no digit), where the bound is in [1, 2). What remains: the
clipped rows themselves must be representable, i.e. C from about ``sqrt(d)`` times the dtype's smallest
normal number (float64 ``2.2e-308``, float32 ``1.2e-38``) up to its largest number; below that the
clipped entries are subnormal and their rounding is no longer relative. A row whose norm exceeds C by
more than the dtype's range (above ``1e308 C`` in float64) has a clip factor that underflows and is
mapped to zero: still a per-row map within the bound. A release of ``X^T X`` also needs ``C^2`` in range
(float64: roughly ``1e-154 < C < 1e154``).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from .._rows import norm_violation_error

__all__ = [
    "ROUNDING_SLACK",
    "NormViolation",
    "check_row_norm",
    "clip_rows",
    "clip_threshold",
    "norm_scale",
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


def norm_scale(row_norm: float, dtype: Any = np.float64) -> float:
    """The public power of two ``s`` by which rows are scaled before their norms are compared with
    ``row_norm``: 1.0 for an ordinary bound (``2^-k < C < 2^k``, ``k`` a quarter of the dtype's exponent
    range: 256 for float64, 32 for float32, where the squares of the rows near C are normal numbers),
    else ``C s`` is in [1, 2). Scaling by it is exact (see the module's note on supported bounds)."""
    info = np.finfo(dtype)
    k = int(info.maxexp) >> 2  # a quarter of the exponent range: 256 (float64), 32 (float32)
    if 2.0 ** -k < row_norm < 2.0 ** k:
        return 1.0
    exponent = 1 - math.frexp(row_norm)[1]
    return math.ldexp(1.0, min(max(exponent, int(info.minexp)), int(info.maxexp) - 1))


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
        norms: np.ndarray = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
        return norms
    dense: np.ndarray = np.sqrt(np.einsum("ij,ij->i", X, X))
    return dense


#: :func:`scaled_row_norms` scales rows in pieces of about this many entries (2 MB of float64).
_PIECE_ELEMENTS = 1 << 18


def scaled_row_norms(X: np.ndarray | sp.spmatrix | sp.sparray, scale: float = 1.0) -> np.ndarray:
    """The float64 norms of the rows of ``X * scale`` (``scale`` a power of two, :func:`norm_scale`),
    without a scaled copy of ``X`` (dense rows are scaled piece by piece). A finite row whose squares
    overflow is computed again from the row divided by its largest entry; a row with NaN or infinity has
    a NaN or infinite norm."""
    with np.errstate(over="ignore"):  # a scaled entry or a square that overflows: handled below
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            Xs: Any = X * scale
            norms: np.ndarray = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
        elif scale == 1.0 and X.dtype == np.float64:
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        else:
            m, d = X.shape
            rows = max(1024, _PIECE_ELEMENTS // max(d, 1))
            norms = np.empty(m)
            buffer = np.empty((min(rows, m), d))
            for a in range(0, m, rows):
                piece = buffer[:min(rows, m - a)]
                np.multiply(X[a:a + rows], scale, out=piece, dtype=np.float64)  # 2^600: inf in float32
                np.einsum("ij,ij->i", piece, piece, out=norms[a:a + rows])
            np.sqrt(norms, out=norms)
        bad = ~np.isfinite(norms)
        if bad.any():  # finite rows whose squares overflow: divided by their largest entry first
            idx = np.flatnonzero(bad)
            part: Any = X[idx]
            rows_bad = part.toarray() if sp.issparse(part) else np.asarray(part, dtype=np.float64)
            finite = np.isfinite(rows_bad).all(axis=1)  # a row with NaN or infinity keeps its norm
            top = np.max(np.abs(rows_bad[finite]), axis=1)
            norms[idx[finite]] = (top * scale) * np.linalg.norm(rows_bad[finite] / top[:, None], axis=1)
    return norms


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

    The norms are computed in float64 on rows scaled by :func:`norm_scale` (exact), so the comparison
    holds at any supported bound. A float32 (or narrower) dense ``X`` is scaled to ``row_norm (1 - 4
    eps)`` instead, so that its rows, rounded to its dtype, stay within ``row_norm``.

    Parameters
    ----------
    X : array or sparse matrix of shape (n, d)
    row_norm : float
        Public bound C (supported range: the module's note; for float64 rows, C from about
        ``sqrt(d) * 2.2e-308`` up to the largest float).
    on_norm_violation : {"clip", "raise"}
        ``"raise"`` rejects data with a row above the bound instead of clipping it.
    copy : bool
        True (default): ``X`` is never modified; a copy is made only when some row must be scaled
        (otherwise ``X`` itself is returned). False: a writeable float ``X`` is clipped in place.
    first_row : int
        Index of the first row of ``X`` in the whole data set (kept for callers; error messages name
        no row: which rows break the bound is private).
    norms : ndarray of shape (n,), optional
        The rows' float64 Euclidean norms, when the caller has them already (used only when
        :func:`norm_scale` is 1 and ``X`` is float64 or sparse; otherwise computed on scaled rows).
    owner : str
        What the user called, for the error message.

    Returns
    -------
    X_clipped : same type as X
    n_clipped : int
        How many rows were scaled. Data-dependent: for the caller's diagnostics only, never released.
    """
    s = norm_scale(row_norm)  # norms compared at the scaled bound row_norm * s (exact; 1 for most C)
    narrow = not sp.issparse(X) and X.dtype.kind == "f" and X.dtype != np.float64  # float32, float16
    if norms is None or s != 1.0 or narrow:
        norms = scaled_row_norms(X, s)  # float64 norms, also of float32 rows
    bound = row_norm * s
    over = norms > clip_threshold(bound)
    n_over = int(np.count_nonzero(over))
    if n_over == 0:
        return X, 0
    if on_norm_violation == "raise":
        raise norm_violation_error(owner, row_norm)
    # a float32 (or narrower) row is rounded when scaled: aimed a little inside, its stored norm is <= C
    target = bound * (1.0 - 4.0 * float(np.finfo(X.dtype).eps)) if narrow else bound
    scale = np.ones_like(norms)
    scale[over] = target / norms[over]
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale) @ X), n_over
    out = X.copy() if copy else X
    out[over] *= scale[over, None]
    return out, n_over
