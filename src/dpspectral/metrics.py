"""Utility metrics: subspace distances, captured energy, factorization errors, downstream accuracy.

Conventions
-----------
A k-dimensional subspace of R^d is given by a basis matrix with **orthonormal columns**, shape
``(d, k)`` (``layout="columns"``, the default, as in ``SubspaceResult.components``). Users of
scikit-learn, whose ``components_`` have shape ``(k, d)``, pass ``layout="rows"`` (or
``components_.T``). A 1-D array of shape ``(d,)`` is read as a single direction, ``(d, 1)``.
Orthonormality is checked (tolerance ``sqrt(eps)`` of the dtype); a non-orthonormal basis raises
``ValueError`` -- orthonormalise it first (``dpspectral._linalg.orthonormalize``).

No function forms a ``d x d`` matrix: every subspace metric is computed from ``d x k`` products.

The metrics read only their arguments; to keep a private pipeline private, evaluate on data the
mechanism did not see or treat the printed numbers as non-private diagnostics (DESIGN.md §3.5).

Metrics
-------
projection_distance
    ``||V V^T - W W^T||_F`` (DESIGN.md §6; the "subspace distance" of Dwork et al. 2014, Wang and
    Xu 2020, quoted in paper 000 §4.3).
sin_theta, principal_angles, max_sin_theta
    Angles between directions and between subspaces.
captured_energy, captured_variance
    ``tr(V^T A V) / tr(V*^T A V*)`` and ``tr(V^T A V)``.
aligned_distance
    Paper 000's ``||V_k - V_hat_k||_F^2``, after an orthogonal (or sign) alignment.
total_error, additive_error, best_rank_k_error
    Errors of a low-rank factorization ``A ~ U S V^T`` (paper 002, Upadhyay 2018).
downstream_accuracy
    Test accuracy of a linear classifier trained on projected data (paper 000 §5.3).
"""

from __future__ import annotations

import numbers
from typing import Any, Literal

import numpy as np
import scipy.linalg
import scipy.sparse

from ._rows import as_numeric_array

__all__ = [
    "additive_error",
    "aligned_distance",
    "best_rank_k_error",
    "captured_energy",
    "captured_variance",
    "downstream_accuracy",
    "max_sin_theta",
    "principal_angles",
    "projection_distance",
    "sin_theta",
    "total_error",
]

Layout = Literal["columns", "rows"]
NormOrd = Literal["fro", "spectral"] | int

_LAYOUTS = ("columns", "rows")


# ----------------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------------


def _check_finite(a: np.ndarray, name: str, owner: str) -> None:
    if not np.all(np.isfinite(a)):
        raise ValueError(
            f"The '{name}' parameter of {owner} must contain only finite values (no NaN or inf)."
        )


def _as_float_array(x: Any, name: str, owner: str) -> np.ndarray:
    """A dense floating array (float32 kept, everything else float64); sparse is refused."""
    if scipy.sparse.issparse(x):
        raise TypeError(
            f"The '{name}' parameter of {owner} must be a dense array. Got a sparse "
            f"{type(x).__name__} instead."
        )
    a = as_numeric_array(x, owner, name=name, ndim=None, convert_object=False)  # quotes no value
    if a.dtype != np.float32:
        a = a.astype(np.float64, copy=False)
    return a


def _check_layout(layout: Any, owner: str) -> str:
    if not isinstance(layout, str) or layout not in _LAYOUTS:
        raise ValueError(
            f"The 'layout' parameter of {owner} must be one of 'columns', 'rows'. "
            f"Got {layout!r} instead."
        )
    return layout


def _as_basis(
    V: Any, name: str, owner: str, layout: str = "columns", *, check_orthonormal: bool = True
) -> np.ndarray:
    """Validate a subspace basis and return it as a float64 ``(d, k)`` matrix."""
    layout = _check_layout(layout, owner)
    a = _as_float_array(V, name, owner)
    tol = float(np.sqrt(np.finfo(a.dtype).eps))
    if a.ndim == 1:
        a = a[:, None] if layout == "columns" else a[None, :]
    if a.ndim != 2:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a 1-D or 2-D array. Got an array of "
            f"shape {a.shape} instead."
        )
    if layout == "rows":
        a = a.T
    d, k = a.shape
    if d == 0 or k == 0:
        raise ValueError(
            f"The '{name}' parameter of {owner} must have at least one row and one column. "
            f"Got shape {a.shape} (as d x k) instead."
        )
    if k > d:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a basis of shape (d, k) with k <= d "
            f"(layout={layout!r}). Got shape {a.shape} (as d x k) instead; pass "
            "layout='rows' for (k, d) arrays such as scikit-learn's components_."
        )
    _check_finite(a, name, owner)
    a = a.astype(np.float64, copy=False)
    if check_orthonormal:
        err = float(np.max(np.abs(a.T @ a - np.eye(k))))
        if err > tol:
            raise ValueError(
                f"The '{name}' parameter of {owner} must have orthonormal columns "
                f"(max |V^T V - I| <= {tol:.1e}). Got max |V^T V - I| = {err:.3e} instead; "
                "orthonormalise it first (dpspectral._linalg.orthonormalize)."
            )
    return a


def _check_same_d(V: np.ndarray, W: np.ndarray, names: tuple[str, str], owner: str) -> None:
    if V.shape[0] != W.shape[0]:
        raise ValueError(
            f"The '{names[0]}' and '{names[1]}' parameters of {owner} must span subspaces of the "
            f"same ambient dimension d. Got d={V.shape[0]} and d={W.shape[0]} instead."
        )


def _check_same_k(V: np.ndarray, W: np.ndarray, names: tuple[str, str], owner: str) -> None:
    if V.shape[1] != W.shape[1]:
        raise ValueError(
            f"The '{names[0]}' and '{names[1]}' parameters of {owner} must have the same number "
            f"of components k. Got k={V.shape[1]} and k={W.shape[1]} instead."
        )


def _check_ord(ord: Any, owner: str) -> str:
    """Normalise a norm name: 'fro' (Frobenius) or 'spectral' (also accepted: 2)."""
    if isinstance(ord, str) and ord in ("fro", "spectral"):
        return ord
    if isinstance(ord, numbers.Integral) and not isinstance(ord, bool) and int(ord) == 2:
        return "spectral"
    raise ValueError(
        f"The 'ord' parameter of {owner} must be one of 'fro', 'spectral' (or 2). "
        f"Got {ord!r} instead."
    )


def _check_rank(k: Any, upper: int, owner: str, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(
            f"The '{name}' parameter of {owner} must be an int in [0, {upper}]. Got {k!r} instead."
        )
    if not 0 <= int(k) <= upper:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in [0, min(n, d)={upper}]. "
            f"Got {k!r} instead."
        )
    return int(k)


# ----------------------------------------------------------------------------------------------
# subspace distances and angles
# ----------------------------------------------------------------------------------------------


def projection_distance(V: Any, W: Any, *, layout: Layout = "columns") -> float:
    """Frobenius distance between the orthogonal projections onto two subspaces.

    ``||V V^T - W W^T||_F``, the "subspace distance" of DESIGN.md §6 (paper 000 §4.3 quotes it as
    the measure of Dwork et al. 2014, Jiang et al. 2015 and Wang and Xu 2020). It depends only on
    the spans: ``V -> V Q`` for any orthogonal ``Q`` leaves it unchanged.

    Parameters
    ----------
    V : array-like of shape (d, k_V), or (k_V, d) with ``layout="rows"``
        Orthonormal basis of the first subspace; a 1-D array of shape (d,) is one direction.
    W : array-like of shape (d, k_W), or (k_W, d) with ``layout="rows"``
        Orthonormal basis of the second subspace. ``k_W`` may differ from ``k_V``.
    layout : {"columns", "rows"}, default="columns"
        ``"rows"`` for (k, d) arrays such as scikit-learn's ``components_``.

    Returns
    -------
    float
        In ``[0, sqrt(k_V + k_W)]``: 0 for the same subspace, ``sqrt(2 k)`` for orthogonal
        subspaces of equal dimension ``k``.

    Notes
    -----
    No ``d x d`` matrix is formed. With orthonormal bases,
    ``||V V^T - W W^T||_F^2 = k_V + k_W - 2 ||V^T W||_F^2
    = ||V - W (W^T V)||_F^2 + ||W - V (V^T W)||_F^2``.
    The second form (two residuals, ``O(d k_V k_W)``) is used: it is the same number in exact
    arithmetic but does not lose the small distances of nearly equal subspaces to cancellation.
    """
    owner = "projection_distance"
    V = _as_basis(V, "V", owner, layout)
    W = _as_basis(W, "W", owner, layout)
    _check_same_d(V, W, ("V", "W"), owner)
    M = V.T @ W  # (k_V, k_W)
    r_v = V - W @ M.T
    r_w = W - V @ M
    sq = float(np.sum(r_v * r_v) + np.sum(r_w * r_w))
    return float(np.sqrt(max(sq, 0.0)))


def sin_theta(v: Any, w: Any) -> float:
    """Sine of the angle between two directions (k = 1).

    ``sin(theta) = sqrt(1 - (v . w)^2 / (|v|^2 |w|^2))``; the sign of either vector does not
    matter. For unit vectors it equals ``||v v^T - w w^T||_F / sqrt(2)``.

    Parameters
    ----------
    v : array-like of shape (d,) or (d, 1) or (1, d)
        A non-zero vector (need not be normalised).
    w : array-like of shape (d,) or (d, 1) or (1, d)
        A non-zero vector of the same length.

    Returns
    -------
    float
        In ``[0, 1]``.

    Notes
    -----
    Computed as the norm of the component of ``v/|v|`` orthogonal to ``w/|w|`` (accurate for small
    angles), clipped to ``[0, 1]``.
    """
    owner = "sin_theta"
    vecs = []
    for name, x in (("v", v), ("w", w)):
        a = _as_float_array(x, name, owner)
        if a.ndim == 2 and 1 in a.shape:
            a = a.ravel()
        if a.ndim != 1 or a.size == 0:
            raise ValueError(
                f"The '{name}' parameter of {owner} must be a non-empty vector of shape (d,). "
                f"Got an array of shape {np.shape(x)} instead; use max_sin_theta for subspaces."
            )
        _check_finite(a, name, owner)
        a = a.astype(np.float64, copy=False)
        nrm = float(np.linalg.norm(a))
        if nrm == 0.0:
            raise ValueError(f"The '{name}' parameter of {owner} must be a non-zero vector.")
        vecs.append(a / nrm)
    a, b = vecs
    if a.shape != b.shape:
        raise ValueError(
            f"The 'v' and 'w' parameters of {owner} must have the same length. Got {a.size} and "
            f"{b.size} instead."
        )
    resid = a - float(a @ b) * b
    return float(min(1.0, max(0.0, float(np.linalg.norm(resid)))))


def principal_angles(V: Any, W: Any, *, layout: Layout = "columns") -> np.ndarray:
    """Principal angles between two subspaces, in ascending order.

    Parameters
    ----------
    V : array-like of shape (d, k_V), or (k_V, d) with ``layout="rows"``
        Orthonormal basis.
    W : array-like of shape (d, k_W), or (k_W, d) with ``layout="rows"``
        Orthonormal basis.
    layout : {"columns", "rows"}, default="columns"

    Returns
    -------
    ndarray of shape (min(k_V, k_W),)
        Angles in radians, ``0 <= theta_1 <= ... <= pi/2``. Their cosines are the singular values
        of ``V^T W``.

    Notes
    -----
    Uses :func:`scipy.linalg.subspace_angles` (accurate for small angles), which returns the
    angles in descending order; they are reversed here.
    """
    owner = "principal_angles"
    V = _as_basis(V, "V", owner, layout)
    W = _as_basis(W, "W", owner, layout)
    _check_same_d(V, W, ("V", "W"), owner)
    angles = scipy.linalg.subspace_angles(V, W)
    return np.clip(np.sort(angles), 0.0, np.pi / 2)


def max_sin_theta(V: Any, W: Any, *, layout: Layout = "columns") -> float:
    """Sine of the largest principal angle between two subspaces.

    For subspaces of equal dimension this is the spectral norm ``||V V^T - W W^T||_2`` (the
    ``sin(Theta)`` distance of Davis-Kahan); for ``k = 1`` it equals :func:`sin_theta`.

    Parameters
    ----------
    V : array-like of shape (d, k_V), or (k_V, d) with ``layout="rows"``
        Orthonormal basis.
    W : array-like of shape (d, k_W), or (k_W, d) with ``layout="rows"``
        Orthonormal basis. If ``k_V != k_W`` the largest of the ``min(k_V, k_W)`` principal angles
        is used (the spectral norm of the projection difference is then 1).
    layout : {"columns", "rows"}, default="columns"

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    angles = principal_angles(V, W, layout=layout)
    return float(np.clip(np.sin(angles[-1]), 0.0, 1.0))


def aligned_distance(
    V: Any,
    V_star: Any,
    *,
    alignment: Literal["procrustes", "sign", "none"] = "procrustes",
    squared: bool = True,
    layout: Layout = "columns",
) -> float:
    """Paper 000's subspace error ``||V_k - V_hat_k||_F^2``, after aligning the bases.

    Paper 000 (DP-SPCA / DP-VRPCA), §5.1, "Performances Metrics": *"The performance indicator is
    measured by the subspace distance ||V_k - V_hat_k||_F^2, where V_hat_k is the optimal solution
    without perturbation and V_k is the result obtained by different algorithms."* Lemma 2 states
    it is "of the same order as the general subspace criterion ||V_k V_k^T - V_hat_k
    V_hat_k^T||_F". The paper does not say how the bases are aligned; read literally the quantity
    depends on the arbitrary signs (and, for k > 1, rotations) of the eigenvector bases, and
    Lemma 2 can only hold after an alignment. This function therefore computes, by default,

    ``min_{Q orthogonal} ||V Q - V*||_F^2 = 2 sum_i (1 - cos theta_i)``

    (orthogonal Procrustes; ``theta_i`` are the principal angles), which for ``k = 1`` is the
    minimum over the sign, ``min(|v - v*|^2, |v + v*|^2) = 2 (1 - |v . v*|)``. Since
    ``2 (1 - cos t) <= 2 sin^2 t``, this is at most ``projection_distance(V, V_star)**2``.

    Parameters
    ----------
    V : array-like of shape (d, k), or (k, d) with ``layout="rows"``
        Orthonormal basis of the estimate.
    V_star : array-like of shape (d, k), or (k, d) with ``layout="rows"``
        Orthonormal basis of the reference (non-private) subspace.
    alignment : {"procrustes", "sign", "none"}, default="procrustes"
        ``"procrustes"``: minimum over orthogonal ``Q`` (depends only on the two spans).
        ``"sign"``: minimum over per-column sign flips, columns matched by index (a diagonal
        ``Q`` of +-1; sensitive to the order of the components). ``"none"``: the literal
        ``||V - V*||_F^2``.
    squared : bool, default=True
        Return the squared distance, as in the paper; ``False`` returns its square root.
    layout : {"columns", "rows"}, default="columns"

    Returns
    -------
    float
        With ``alignment="procrustes"``, in ``[0, 2k]``; 0 iff the spans coincide.
    """
    owner = "aligned_distance"
    if not isinstance(alignment, str) or alignment not in ("procrustes", "sign", "none"):
        raise ValueError(
            f"The 'alignment' parameter of {owner} must be one of 'procrustes', 'sign', 'none'. "
            f"Got {alignment!r} instead."
        )
    if not isinstance(squared, bool | np.bool_):
        raise TypeError(f"The 'squared' parameter of {owner} must be a bool. Got {squared!r}.")
    V = _as_basis(V, "V", owner, layout)
    S = _as_basis(V_star, "V_star", owner, layout)
    _check_same_d(V, S, ("V", "V_star"), owner)
    _check_same_k(V, S, ("V", "V_star"), owner)
    if alignment == "procrustes":
        Q, _ = scipy.linalg.orthogonal_procrustes(V, S)
        R = V @ Q - S
    elif alignment == "sign":
        signs = np.where(np.sum(V * S, axis=0) < 0, -1.0, 1.0)
        R = V * signs - S
    else:
        R = V - S
    sq = float(np.sum(R * R))
    return sq if squared else float(np.sqrt(sq))


# ----------------------------------------------------------------------------------------------
# captured energy / variance
# ----------------------------------------------------------------------------------------------


def _matrix_or_data(A: Any, X: Any, d: int, owner: str) -> tuple[Any, Any]:
    """Validate that exactly one of ``A`` (d x d) and ``X`` (n x d) is given."""
    if (A is None) == (X is None):
        raise ValueError(
            f"{owner} needs exactly one of the 'A' (a d x d second-moment/covariance matrix) and "
            "'X' (an n x d data matrix) parameters. Got "
            f"{'both' if A is not None else 'neither'}."
        )
    if A is not None:
        if scipy.sparse.issparse(A):
            A_m = scipy.sparse.csr_array(A, dtype=np.float64)
            shape = A_m.shape
            _check_finite(A_m.data, "A", owner)
        else:
            A_m = _as_float_array(A, "A", owner).astype(np.float64, copy=False)
            shape = A_m.shape
            if A_m.ndim == 2:
                _check_finite(A_m, "A", owner)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(
                f"The 'A' parameter of {owner} must be a square (d, d) matrix. Got shape "
                f"{shape} instead."
            )
        if shape[0] != d:
            raise ValueError(
                f"The 'A' parameter of {owner} must have shape (d, d) = ({d}, {d}) to match the "
                f"basis. Got shape {shape} instead."
            )
        asym = abs(A_m - A_m.T)
        asym_max = float(asym.max()) if asym.size else 0.0
        scale = float(abs(A_m).max()) if A_m.size else 0.0
        if asym_max > 1e-8 * max(scale, 1e-300):
            raise ValueError(
                f"The 'A' parameter of {owner} must be symmetric. Got max |A - A^T| = "
                f"{asym_max:.3e} instead."
            )
        return A_m, None
    if scipy.sparse.issparse(X):
        X_m = scipy.sparse.csr_array(X, dtype=np.float64)
        _check_finite(X_m.data, "X", owner)
    else:
        X_m = _as_float_array(X, "X", owner).astype(np.float64, copy=False)
        if X_m.ndim == 2:
            _check_finite(X_m, "X", owner)
    if X_m.ndim != 2:
        raise ValueError(
            f"The 'X' parameter of {owner} must be a 2-D (n, d) array. Got shape {X_m.shape} "
            "instead."
        )
    if X_m.shape[1] != d:
        raise ValueError(
            f"The 'X' parameter of {owner} must have d={d} columns to match the basis. Got shape "
            f"{X_m.shape} instead."
        )
    return None, X_m


def _energy(V: np.ndarray, A_m: Any, X_m: Any) -> float:
    """``tr(V^T A V)``, or ``||X V||_F^2`` (no X^T X formed)."""
    if A_m is not None:
        AV = np.asarray(A_m @ V)
        return float(np.sum(V * AV))
    XV = np.asarray(X_m @ V)
    return float(np.sum(XV * XV))


def _top_k_energy(k: int, A_m: Any, X_m: Any) -> float:
    """Sum of the k largest eigenvalues of A (or of X^T X, through the smaller Gram matrix)."""
    if A_m is not None:
        G = A_m.toarray() if scipy.sparse.issparse(A_m) else A_m
    else:
        n, d = X_m.shape
        G = X_m.T @ X_m if n >= d else X_m @ X_m.T
        G = G.toarray() if scipy.sparse.issparse(G) else np.asarray(G)
    m = G.shape[0]
    kk = min(k, m)
    vals = scipy.linalg.eigh(
        G, eigvals_only=True, subset_by_index=[m - kk, m - 1], check_finite=False
    )
    return float(np.sum(vals))


def captured_variance(
    V: Any, A: Any = None, *, X: Any = None, layout: Layout = "columns"
) -> float:
    """Unnormalised captured variance ``tr(V^T A V)`` (or ``||X V||_F^2`` from data).

    Parameters
    ----------
    V : array-like of shape (d, k), or (k, d) with ``layout="rows"``
        Orthonormal basis.
    A : array-like or sparse matrix of shape (d, d), optional
        Symmetric second-moment or covariance matrix.
    X : array-like or sparse matrix of shape (n, d), optional
        Data; then ``A = X^T X`` is implied and ``||X V||_F^2`` is returned without forming it.
        Exactly one of ``A`` and ``X`` is given.
    layout : {"columns", "rows"}, default="columns"

    Returns
    -------
    float
    """
    owner = "captured_variance"
    Vb = _as_basis(V, "V", owner, layout)
    A_m, X_m = _matrix_or_data(A, X, Vb.shape[0], owner)
    return _energy(Vb, A_m, X_m)


def captured_energy(
    V: Any,
    A: Any = None,
    *,
    X: Any = None,
    V_star: Any = None,
    layout: Layout = "columns",
) -> float:
    """Fraction of the optimal rank-k energy captured by a subspace.

    ``tr(V^T A V) / tr(V*^T A V*)`` (DESIGN.md §6), with ``V*`` the top-k eigenvectors of ``A``.
    For a positive semi-definite ``A`` it lies in ``[0, 1]`` and equals 1 exactly when ``V``
    spans a top-k eigenspace (Ky Fan). Paper 000 §4.3 calls the unnormalised difference
    ``||X V_hat||_F^2 - ||X V||_F^2`` the "variance" measure of Hardt-Roth and Chaudhuri et al.

    Parameters
    ----------
    V : array-like of shape (d, k), or (k, d) with ``layout="rows"``
        Orthonormal basis of the estimate.
    A : array-like or sparse matrix of shape (d, d), optional
        Symmetric positive semi-definite matrix (second moment ``X^T X`` or a covariance).
    X : array-like or sparse matrix of shape (n, d), optional
        Data instead of ``A`` (``A = X^T X``; center ``X`` first for a covariance). The numerator
        is ``||X V||_F^2``, computed without forming ``X^T X``. Exactly one of ``A`` and ``X``.
    V_star : array-like of shape (d, k), optional
        Orthonormal reference basis (same k as ``V``). If omitted, the denominator is the sum of
        the k largest eigenvalues of ``A`` (of ``X^T X``, through the smaller of ``X^T X`` and
        ``X X^T``), which equals ``tr(V*^T A V*)`` for the top-k eigenvectors.
    layout : {"columns", "rows"}, default="columns"
        Applies to ``V`` and ``V_star``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the denominator is not positive (e.g. ``A = 0``), or on invalid shapes.
    """
    owner = "captured_energy"
    Vb = _as_basis(V, "V", owner, layout)
    A_m, X_m = _matrix_or_data(A, X, Vb.shape[0], owner)
    num = _energy(Vb, A_m, X_m)
    if V_star is not None:
        Sb = _as_basis(V_star, "V_star", owner, layout)
        _check_same_d(Vb, Sb, ("V", "V_star"), owner)
        _check_same_k(Vb, Sb, ("V", "V_star"), owner)
        den = _energy(Sb, A_m, X_m)
    else:
        den = _top_k_energy(Vb.shape[1], A_m, X_m)
    if not den > 0:
        raise ValueError(
            f"{owner} is undefined: the reference energy tr(V*^T A V*) must be > 0. Got {den!r} "
            "(is A or X zero?)."
        )
    return num / den


# ----------------------------------------------------------------------------------------------
# low-rank factorization errors (paper 002)
# ----------------------------------------------------------------------------------------------


def _matrix_norm(M: np.ndarray, ord: str) -> float:
    if M.size == 0:
        return 0.0
    if ord == "fro":
        return float(np.linalg.norm(M, "fro"))
    return float(np.linalg.norm(M, 2))


def _as_data_matrix(A: Any, owner: str) -> np.ndarray:
    a = _as_float_array(A, "A", owner).astype(np.float64, copy=False)
    if a.ndim != 2:
        raise ValueError(
            f"The 'A' parameter of {owner} must be a 2-D (n, d) matrix. Got shape {a.shape} "
            "instead."
        )
    _check_finite(a, "A", owner)
    return a


def _reconstruct(
    A: np.ndarray, U: Any, S: Any, V: Any, layout: str, owner: str
) -> tuple[np.ndarray, int]:
    """``U S V^T`` with shapes checked; returns it and ``min(k_U, k_V)``."""
    layout = _check_layout(layout, owner)
    n, d = A.shape
    Um = _as_float_array(U, "U", owner).astype(np.float64, copy=False)
    if Um.ndim == 1:
        Um = Um[:, None]
    if Um.ndim != 2 or Um.shape[0] != n:
        raise ValueError(
            f"The 'U' parameter of {owner} must have shape (n, k) with n={n} (rows of A). Got "
            f"shape {np.shape(U)} instead."
        )
    Vm = _as_float_array(V, "V", owner).astype(np.float64, copy=False)
    if Vm.ndim == 1:
        Vm = Vm[:, None] if layout == "columns" else Vm[None, :]
    if Vm.ndim != 2:
        raise ValueError(
            f"The 'V' parameter of {owner} must be a 2-D array. Got shape {np.shape(V)} instead."
        )
    if layout == "rows":
        Vm = Vm.T
    if Vm.shape[0] != d:
        raise ValueError(
            f"The 'V' parameter of {owner} must have shape (d, k) with d={d} (columns of A), or "
            f"(k, d) with layout='rows'. Got shape {np.shape(V)} (layout={layout!r}) instead."
        )
    Sm = _as_float_array(S, "S", owner).astype(np.float64, copy=False)
    ku, kv = Um.shape[1], Vm.shape[1]
    if Sm.ndim == 0:
        Sm = Sm.reshape(1)
    if Sm.ndim == 1:
        if not (Sm.shape[0] == ku == kv):
            raise ValueError(
                f"The 'S' parameter of {owner}, given as a vector of singular values, must have "
                f"length k = U.shape[1] = V's k. Got length {Sm.shape[0]} with U of shape "
                f"{Um.shape} and V of shape {Vm.shape} (as d x k) instead."
            )
        left = Um * Sm
    elif Sm.ndim == 2:
        if Sm.shape != (ku, kv):
            raise ValueError(
                f"The 'S' parameter of {owner}, given as a matrix, must have shape "
                f"(U.shape[1], k_V) = ({ku}, {kv}). Got shape {Sm.shape} instead."
            )
        left = Um @ Sm
    else:
        raise ValueError(
            f"The 'S' parameter of {owner} must be a vector (k,) or a matrix (k_U, k_V). Got "
            f"shape {Sm.shape} instead."
        )
    for name, m in (("U", Um), ("S", Sm), ("V", Vm)):
        _check_finite(m, name, owner)
    return left @ Vm.T, min(ku, kv)


def _residual(
    A: Any, U: Any, S: Any, V: Any, ord: NormOrd, layout: str, owner: str
) -> tuple[str, np.ndarray, np.ndarray, int]:
    """The checked norm order, ``A`` as a matrix, ``A - U S V^T`` and ``min(k_U, k_V)``."""
    o = _check_ord(ord, owner)
    Am = _as_data_matrix(A, owner)
    R, rank = _reconstruct(Am, U, S, V, layout, owner)
    return o, Am, Am - R, rank


def total_error(
    A: Any,
    U: Any,
    S: Any,
    V: Any,
    ord: NormOrd = "fro",
    *,
    layout: Layout = "columns",
) -> float:
    """Total error ``||A - U S V^T||`` of a low-rank factorization (paper 002).

    Parameters
    ----------
    A : array-like of shape (n, d)
        The matrix that was factorized.
    U : array-like of shape (n, k_U)
        Left factor (orthonormal columns in paper 002, not required here).
    S : array-like of shape (k,) or (k_U, k_V)
        Singular values (a diagonal ``Sigma``; then ``k_U = k_V = k``) or a full middle matrix.
    V : array-like of shape (d, k_V), or (k_V, d) with ``layout="rows"``
        Right factor. ``numpy.linalg.svd`` returns ``Vh`` of shape (k, d): pass ``layout="rows"``.
    ord : {"fro", "spectral"} or 2, default="fro"
        Frobenius or spectral (operator 2-) norm.
    layout : {"columns", "rows"}, default="columns"
        Layout of ``V`` only.

    Returns
    -------
    float
    """
    o, _, residual, _ = _residual(A, U, S, V, ord, layout, "total_error")
    return _matrix_norm(residual, o)


def best_rank_k_error(A: Any, k: int, ord: NormOrd = "fro") -> float:
    """Error of the best rank-k approximation, ``||A - [A]_k||`` (Eckart-Young-Mirsky).

    Parameters
    ----------
    A : array-like of shape (n, d)
    k : int in [0, min(n, d)]
    ord : {"fro", "spectral"} or 2, default="fro"

    Returns
    -------
    float
        ``sqrt(sum_{i > k} sigma_i^2)`` for ``"fro"``, ``sigma_{k+1}`` (0 if ``k = min(n, d)``)
        for ``"spectral"``, with ``sigma`` the singular values of ``A`` in descending order.
    """
    owner = "best_rank_k_error"
    o = _check_ord(ord, owner)
    Am = _as_data_matrix(A, owner)
    k = _check_rank(k, min(Am.shape), owner)
    return _tail_error(Am, k, o)


def _tail_error(Am: np.ndarray, k: int, o: str) -> float:
    """``||A - [A]_k||`` in norm ``o`` for a validated dense ``A`` and ``k``."""
    if Am.size == 0:
        return 0.0
    s = scipy.linalg.svdvals(Am, check_finite=False)  # descending
    tail = s[k:]
    if tail.size == 0:
        return 0.0
    if o == "fro":
        return float(np.sqrt(np.sum(tail * tail)))
    return float(tail[0])


def additive_error(
    A: Any,
    U: Any,
    S: Any,
    V: Any,
    k: int | None = None,
    ord: NormOrd = "fro",
    *,
    layout: Layout = "columns",
) -> float:
    """Additive error ``||A - U S V^T|| - ||A - [A]_k||`` of a factorization (paper 002).

    Upadhyay (2018) calls ``gamma`` in ``||A - U S V^T|| <= (1 + alpha) ||A - [A]_k|| + gamma``
    the additive error; experimentally it is reported as total error minus the optimal error.

    Parameters
    ----------
    A, U, S, V
        As in :func:`total_error`.
    k : int, optional
        Target rank of the comparison ``[A]_k``. Default ``min(k_U, k_V, n, d)``, an upper bound
        on the rank of ``U S V^T``, so that the default error is >= 0 up to rounding. An explicit
        ``k`` smaller than the factorization's rank can make it negative.
    ord, layout
        As in :func:`total_error`.

    Returns
    -------
    float
    """
    owner = "additive_error"
    o, Am, residual, rank = _residual(A, U, S, V, ord, layout, owner)
    kk = min(rank, min(Am.shape)) if k is None else _check_rank(k, min(Am.shape), owner)
    return _matrix_norm(residual, o) - _tail_error(Am, kk, o)


# ----------------------------------------------------------------------------------------------
# downstream classification
# ----------------------------------------------------------------------------------------------


def downstream_accuracy(
    Z_train: Any,
    y_train: Any,
    Z_test: Any,
    y_test: Any,
    *,
    classifier: Literal["logistic", "linear_svm"] = "logistic",
    random_state: int | None = 0,
) -> float:
    """Test accuracy of a linear classifier trained on projected data.

    Paper 000 §5.3 projects the data onto the private subspace (``Z = X V``) and reports the test
    accuracy of a linear SVM. Fits
    ``LogisticRegression(max_iter=1000)`` or ``LinearSVC(dual="auto", max_iter=5000)`` from
    scikit-learn with default regularisation; no scaling, no tuning.

    Parameters
    ----------
    Z_train : array-like of shape (n_train, k)
        Projected training data, e.g. ``X_train @ V``.
    y_train : array-like of shape (n_train,)
        Labels, at least two classes.
    Z_test : array-like of shape (n_test, k)
    y_test : array-like of shape (n_test,)
    classifier : {"logistic", "linear_svm"}, default="logistic"
    random_state : int or None, default=0
        Passed to the classifier (only ``LinearSVC``'s dual solver uses it).

    Returns
    -------
    float
        Accuracy on the test set, in ``[0, 1]``.
    """
    owner = "downstream_accuracy"
    if not isinstance(classifier, str) or classifier not in ("logistic", "linear_svm"):
        raise ValueError(
            f"The 'classifier' parameter of {owner} must be one of 'logistic', 'linear_svm'. "
            f"Got {classifier!r} instead."
        )
    if random_state is not None and (
        isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral)
    ):
        raise TypeError(
            f"The 'random_state' parameter of {owner} must be an int or None. Got "
            f"{random_state!r} instead."
        )
    Ztr = _as_float_array(Z_train, "Z_train", owner)
    Zte = _as_float_array(Z_test, "Z_test", owner)
    for name, Z in (("Z_train", Ztr), ("Z_test", Zte)):
        if Z.ndim != 2 or Z.shape[0] == 0 or Z.shape[1] == 0:
            raise ValueError(
                f"The '{name}' parameter of {owner} must be a non-empty 2-D (n, k) array. Got "
                f"shape {Z.shape} instead."
            )
        _check_finite(Z, name, owner)
    if Ztr.shape[1] != Zte.shape[1]:
        raise ValueError(
            f"The 'Z_train' and 'Z_test' parameters of {owner} must have the same number of "
            f"columns. Got {Ztr.shape[1]} and {Zte.shape[1]} instead."
        )
    ytr = np.asarray(y_train)
    yte = np.asarray(y_test)
    for name, y, Z in (("y_train", ytr, Ztr), ("y_test", yte, Zte)):
        if y.ndim != 1 or y.shape[0] != Z.shape[0]:
            raise ValueError(
                f"The '{name}' parameter of {owner} must be a 1-D array with one label per row "
                f"({Z.shape[0]}). Got shape {y.shape} instead."
            )
    if np.unique(ytr).size < 2:
        raise ValueError(
            f"The 'y_train' parameter of {owner} must contain at least two classes. Got "
            f"{np.unique(ytr).tolist()!r}."
        )
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    clf: Any
    if classifier == "logistic":
        clf = LogisticRegression(max_iter=1000, random_state=random_state)
    else:
        clf = LinearSVC(dual="auto", max_iter=5000, random_state=random_state)
    clf.fit(Ztr, ytr)
    return float(np.mean(clf.predict(Zte) == yte))
