"""Linear algebra shared by all mechanisms: top-k eigenpairs, sign fixing, orthonormalisation."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse.linalg
from threadpoolctl import ThreadpoolController

__all__ = ["ReleasedVariances", "UnresolvedVarianceWarning", "blas_threads", "fix_signs", "orthonormalize",
           "released_variances", "top_k_eigh"]


def fix_signs(V: np.ndarray) -> np.ndarray:
    """Flip each column so that its entry of largest magnitude is positive (deterministic output)."""
    if _on_device(V):
        return _fix_signs_xp(V)
    V = np.asarray(V)
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1
    return V * signs


@functools.cache
def _blas_controller() -> ThreadpoolController:
    return ThreadpoolController()  # reads the loaded libraries once (a few ms each time otherwise)


_ONE_THREAD_LOCK = threading.Lock()
_ONE_THREAD: list[Any] = []  # the limiter in force while any call is inside blas_threads(1)
_ONE_THREAD_USERS = 0


def _reset_in_child() -> None:
    """In a forked child: a lock held by a thread that was not copied would never be released."""
    global _ONE_THREAD_LOCK
    _ONE_THREAD_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while any caller is inside; the setting before the first caller entered is
    restored when the last one leaves (calls from several threads at once: a limit restored by the first
    to leave would free the others' BLAS, and one restored by the last would keep the process on one
    thread)."""
    global _ONE_THREAD_USERS
    with _ONE_THREAD_LOCK:
        if _ONE_THREAD_USERS == 0:
            _ONE_THREAD.append(_blas_controller().limit(limits=1, user_api="blas"))
        _ONE_THREAD_USERS += 1
    try:
        yield
    finally:
        with _ONE_THREAD_LOCK:
            _ONE_THREAD_USERS -= 1
            if _ONE_THREAD_USERS == 0:
                _ONE_THREAD.pop().restore_original_limits()


def blas_threads(limit: Literal[1] | None) -> contextlib.AbstractContextManager[Any]:
    """A context in which BLAS runs on one thread (``limit=1``; None: as it is), for the whole process;
    the previous setting is restored when the last of the callers inside it leaves."""
    if limit is None:
        return contextlib.nullcontext()
    return _one_blas_thread()


#: Up to this d, :func:`top_k_eigh` runs LAPACK on one BLAS thread: its tridiagonal reduction is
#: thousands of small matrix-vector products, and threads that must meet after each one are slow when
#: the cores are shared (at d = 784 on a busy 2-core machine, 0.1 s on one thread against 6-10 s on two;
#: docs/benchmarks/speed.md).
SERIAL_EIGH_MAX_D = 2048


#: From this d, :func:`top_k_eigh` of a noisy matrix (``noisy=True``) finds ``k <= d / 16`` eigenpairs
#: by Lanczos iteration instead of a full tridiagonal reduction: at d = 784, k = 10, about 0.004 s
#: against 0.022 s for the released scatter of MNIST (docs/benchmarks/speed.md).
LANCZOS_MIN_D = 256


def top_k_eigh(M: np.ndarray, k: int, *, noisy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` eigenpairs of a symmetric matrix, eigenvalues descending, signs fixed.

    Only the upper triangle of ``M`` is read. ``noisy``: ``M`` is a released matrix whose noise is
    spread over all its entries, so that two of its eigenvalues coincide with probability zero (or, for
    noise on a grid much finer than its scale, negligibly more); then, for ``d >= LANCZOS_MIN_D`` and
    ``k <= d / 16``, the pairs are found by implicitly restarted Lanczos iteration (ARPACK, to machine
    precision) from a fixed public start, falling back to LAPACK's ``evr`` where it does not converge.
    A single-vector Krylov method finds only one vector of a repeated eigenvalue, so exact matrices
    (which may have them) always take ``evr``.

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
    with blas_threads(1 if d <= SERIAL_EIGH_MAX_D else None):
        found = _lanczos_top_k(M, k) if noisy and d >= LANCZOS_MIN_D and 16 * k <= d else None
        if found is None:
            found = scipy.linalg.eigh(
                M, subset_by_index=[d - k, d - 1], lower=False, check_finite=False, driver="evr"
            )
    values, vectors = found
    order = np.argsort(values)[::-1]
    return values[order], fix_signs(vectors[:, order])


def _lanczos_top_k(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``k`` largest eigenpairs of the symmetric matrix whose upper triangle is ``M``, by ARPACK's
    Lanczos iteration (``tol=0``: machine precision) with BLAS's ``dsymv`` as the product; None where it
    does not converge or its pairs are not accurate and orthonormal to 1e-10 (relative)."""
    d = M.shape[0]
    A, lower = (M, 0) if np.isfortran(M) else (np.ascontiguousarray(M).T, 1)  # M's upper triangle
    A = np.asarray(A, dtype=np.float64)
    symv = scipy.linalg.blas.dsymv

    def product(x: np.ndarray) -> np.ndarray:
        return np.asarray(symv(1.0, A, np.ravel(x), lower=lower))

    operator = scipy.sparse.linalg.LinearOperator((d, d), matvec=product, dtype=np.float64)
    try:
        values, vectors = scipy.sparse.linalg.eigsh(operator, k=k, which="LA", v0=_lanczos_start(d),
                                                    tol=0)
    except scipy.sparse.linalg.ArpackError:
        return None
    scale = max(float(np.max(np.abs(values))), np.finfo(np.float64).tiny)
    residual = np.column_stack([product(vectors[:, j]) for j in range(k)]) - vectors * values
    if not (np.all(np.isfinite(values)) and np.abs(residual).max() <= 1e-10 * scale
            and np.abs(vectors.T @ vectors - np.eye(k)).max() <= 1e-10):
        return None
    return values, vectors


@functools.cache
def _lanczos_start(d: int) -> np.ndarray:
    """The Lanczos iteration's start: a fixed Gaussian vector (public; the same for every matrix of
    width ``d``), so that a result depends only on the matrix."""
    start: np.ndarray = np.random.default_rng(0x5EED).standard_normal(d)
    start.flags.writeable = False
    return start


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


class UnresolvedVarianceWarning(UserWarning):
    """A release does not resolve the variance of some components.

    Their released eigenvalues lie within the noise's spectral norm, so their explained variance is
    reported as 0.
    """


class ReleasedVariances(NamedTuple):
    """Variances post-processed from released eigenvalues (:func:`released_variances`)."""

    values: np.ndarray  #: the k eigenvalues, debiased at the noise edge, 0 where not resolved
    ratios: np.ndarray  #: in [0, 1], summing to at most 1
    resolved: np.ndarray  #: boolean, True where the released eigenvalue stands above the noise edge


def released_variances(values: np.ndarray, total: float | None,
                       noise_edge: float | None = None) -> ReleasedVariances:
    """Eigenvalues and their ratios to the total, from released quantities only (post-processing).

    ``values`` are the top eigenvalues of a released symmetric matrix ``S + E`` and ``total`` its
    trace; ``noise_edge`` is the public spectral norm of the noise ``E`` (``R = 2 sigma_off sqrt(d)``
    for a symmetric Gaussian matrix of off-diagonal std ``sigma_off``), None when unknown. An eigenvalue
    ``lambda`` of ``S`` above ``R / 2`` appears at about ``lambda + R^2 / (4 lambda)`` (the spiked model's
    outlier); so a released eigenvalue ``l`` above ``R`` is mapped back to
    ``lambda = (l + sqrt(l^2 - R^2)) / 2``, and one at or below ``R`` is not resolved by the release
    (reported as 0). Without an edge, negative values are set to 0. The ratios divide by
    ``max(total, sum of the values)``: they lie in [0, 1], sum to at most 1, and are 0 (never NaN)
    when nothing is resolved.
    """
    lam = np.asarray(values, dtype=np.float64)
    if noise_edge is not None and noise_edge > 0:
        resolved = lam > noise_edge
        debiased = np.where(resolved, (lam + np.sqrt(np.maximum(lam * lam - noise_edge**2, 0.0))) / 2, 0.0)
    else:
        resolved = lam > 0
        debiased = np.maximum(lam, 0.0)
    denominator = max(float(total) if total is not None and np.isfinite(total) else 0.0,
                      float(debiased.sum()))
    ratios = debiased / denominator if denominator > 0 else np.zeros_like(debiased)
    return ReleasedVariances(debiased, np.clip(ratios, 0.0, 1.0), resolved)
