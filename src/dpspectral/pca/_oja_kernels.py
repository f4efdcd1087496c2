"""Compiled inner loops of the row-by-row Oja updates (numba; the loop is sequential by nature).

The noise is drawn by the caller through the release pipeline (the planned release ``"step"`` of
:func:`~dpspectral.pca.oja.private_oja`, from its noise source, seeded or secure) and passed in, so
results depend only on the noise source, never on the compiler.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["oja_rows"]


@numba.njit(cache=True, fastmath=False)
def oja_rows(W, X, etas, Z, beta, F):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sequential Oja steps over the rows of ``X``, updating the orthonormal ``W`` (d x k) in place.

    Step t: ``W <- orth(W + eta_t (clip_beta(x_t x_t^T W) + Z_t))`` where ``clip_beta`` scales the
    rank-one gradient to Frobenius norm at most ``beta`` (``beta <= 0``: no clipping) and ``Z_t`` is the
    caller's (already scaled) noise, ``Z`` of shape (m, d, k) or (0, d, k) for none. ``F`` (d x j, j >= 0)
    holds components found earlier (deflation): the update is projected orthogonally to them before
    orthonormalisation. ``orth`` is normalisation for k = 1 and modified Gram-Schmidt otherwise.
    """
    m, d = X.shape
    k = W.shape[1]
    j = F.shape[1]
    noisy = Z.shape[0] > 0
    p = np.empty(k)
    for t in range(m):
        x = X[t]
        xn2 = 0.0
        for a in range(d):
            xn2 += x[a] * x[a]
        pn2 = 0.0
        for c in range(k):
            s = 0.0
            for a in range(d):
                s += x[a] * W[a, c]
            p[c] = s
            pn2 += s * s
        scale = etas[t]
        if beta > 0.0:
            gn = np.sqrt(xn2 * pn2)
            if gn > beta:
                scale = scale * beta / gn
        eta = etas[t]
        for a in range(d):
            xa = scale * x[a]
            for c in range(k):
                W[a, c] += xa * p[c]
                if noisy:
                    W[a, c] += eta * Z[t, a, c]
        # deflation: remove the directions already found
        for f in range(j):
            for c in range(k):
                s = 0.0
                for a in range(d):
                    s += F[a, f] * W[a, c]
                for a in range(d):
                    W[a, c] -= s * F[a, f]
        # modified Gram-Schmidt
        for c in range(k):
            for e in range(c):
                s = 0.0
                for a in range(d):
                    s += W[a, e] * W[a, c]
                for a in range(d):
                    W[a, c] -= s * W[a, e]
            nrm = 0.0
            for a in range(d):
                nrm += W[a, c] * W[a, c]
            nrm = np.sqrt(nrm)
            if nrm > 0.0:
                for a in range(d):
                    W[a, c] /= nrm
    return W
