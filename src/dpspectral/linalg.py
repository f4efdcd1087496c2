"""Linear algebra shared by all mechanisms: top-k eigenpairs, sign fixing, orthonormalisation."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

__all__ = ["fix_signs", "orthonormalize", "top_k_eigh"]


def fix_signs(V: np.ndarray) -> np.ndarray:
    """Flip each column so that its entry of largest magnitude is positive (deterministic output)."""
    if _on_device(V):
        return _fix_signs_xp(V)
    V = np.asarray(V)
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1
    return V * signs


def top_k_eigh(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` eigenpairs of a symmetric matrix, eigenvalues descending, signs fixed.

    Only the upper triangle of ``M`` is read.

    Returns
    -------
    values : ndarray of shape (k,)
    vectors : ndarray of shape (d, k), orthonormal columns
    """
    d = M.shape[0]
    if _on_device(M):  # array API dispatch: the namespace's eigh, on M's device
        xp = _namespace(M)
        values, vectors = xp.linalg.eigh(M)  # ascending
        return xp.flip(values[d - k:], axis=0), _fix_signs_xp(xp.flip(vectors[:, d - k:], axis=1))
    values, vectors = scipy.linalg.eigh(
        M, subset_by_index=[d - k, d - 1], lower=False, check_finite=False, driver="evr"
    )
    order = np.argsort(values)[::-1]
    return values[order], fix_signs(vectors[:, order])


def orthonormalize(V: np.ndarray, method: str = "qr") -> np.ndarray:
    """Orthonormal basis of the column span of ``V`` (d x k).

    ``"qr"``: thin QR with the signs of R's diagonal made positive (so the result depends only on V);
    ``"polar"``: the polar factor ``V (V^T V)^{-1/2}`` (the nearest orthonormal matrix).
    """
    if method == "qr" and _on_device(V):
        xp = _namespace(V)
        Q, R = xp.linalg.qr(V)
        s = xp.sign(xp.linalg.diagonal(R))
        return Q * xp.where(s == 0, xp.ones_like(s), s)
    if method == "qr":
        Q, R = np.linalg.qr(V)
        s = np.sign(np.diag(R))
        s[s == 0] = 1
        return Q * s
    if method == "polar":
        # V (V^T V)^{-1/2} through the k x k Gram matrix (cheap for tall V); SVD when it is
        # ill-conditioned. In V's own namespace (NumPy, or a device array's).
        xp = _namespace(V) if _on_device(V) else np
        w, U = xp.linalg.eigh(V.T @ V)
        if float(w[0]) > 1e-8 * float(w[-1]) > 0:
            return V @ ((U / xp.sqrt(w)) @ U.T)
        U, _, Wt = xp.linalg.svd(V, full_matrices=False)
        return U @ Wt
    raise ValueError(f"The 'method' parameter must be 'qr' or 'polar'. Got {method!r} instead.")


def _on_device(a: Any) -> bool:
    """A non-NumPy array (array API dispatch): computed in its own namespace."""
    from ._array_api import is_device_array

    return not isinstance(a, np.ndarray) and is_device_array(a)


def _namespace(a: Any) -> Any:
    import array_api_compat

    return array_api_compat.array_namespace(a)


def _fix_signs_xp(V: Any) -> Any:
    """:func:`fix_signs` in ``V``'s namespace: the first entry of largest magnitude made positive."""
    import array_api_compat

    xp = _namespace(V)
    d = V.shape[0]
    idx = xp.argmax(xp.abs(V), axis=0)
    rows = xp.arange(d, device=array_api_compat.device(V))[:, None] == idx[None, :]
    signs = xp.sign(xp.sum(xp.where(rows, V, xp.zeros_like(V)), axis=0))
    return V * xp.where(signs == 0, xp.ones_like(signs), signs)
