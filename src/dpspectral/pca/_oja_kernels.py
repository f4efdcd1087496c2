"""Compiled inner loops of the row-by-row Oja updates (numba; the loop is sequential by nature).

The noise of :func:`~dpspectral.pca._oja.private_oja` (the planned release ``"step"``) is drawn by the
caller and passed in, so results depend only on the noise source, never on the compiler. A secure (or
any non-seeded) source draws it through the release pipeline. For the seeded source, whose release is
``std`` times i.i.d. standard normals, :func:`standard_normals` draws those standard normals by blocks
at about 2 ns each (NumPy's own ``Generator.standard_normal`` costs 10-12 ns on the benchmark machine,
which made Private Oja draw-bound): NumPy's ziggurat (the same algorithm and the same tables, taken
from numba's copy of NumPy's), fed by SFC64 (NumPy's ``SFC64`` algorithm, Doty-Humphrey's small fast
chaotic generator) compiled inline, its state seeded from the run's seeded generator
(:func:`sfc64_state`). Every draw is N(0, 1), NumPy's law; the stream differs from NumPy's.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import uint64 as _u64
from numba.np.random._constants import fi_double as _FI
from numba.np.random._constants import ki_double as _KI
from numba.np.random._constants import wi_double as _WI
from numba.np.random._constants import ziggurat_nor_inv_r as _INV_R
from numba.np.random._constants import ziggurat_nor_r as _R

_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53: (uint64 >> 11) * 2^-53 is a double in [0, 1), as NumPy's

__all__ = ["oja_rows", "sfc64_state", "standard_normals"]


@numba.njit(cache=True, fastmath=False, nogil=True)
def oja_rows(W, X, etas, Z, zetas, beta, F):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sequential Oja steps over the rows of ``X``, updating the orthonormal ``W`` (d x k) in place.

    Step t: ``W <- orth(W + eta_t clip_beta(x_t x_t^T W) + zeta_t Z_t)`` where ``clip_beta`` scales the
    rank-one gradient to Frobenius norm at most ``beta`` (``beta <= 0``: no clipping), ``Z`` of shape
    (m, d, k) (or (0, d, k) for none) is the caller's noise and ``zetas`` its factor per step (``eta_t``
    for noise already at its std, ``eta_t std`` for standard normals). ``F`` (d x j, j >= 0)
    holds components found earlier (deflation): the update is projected orthogonally to them before
    orthonormalisation. ``orth`` is normalisation for k = 1 and modified Gram-Schmidt otherwise.
    """
    m, d = X.shape
    k = W.shape[1]
    j = F.shape[1]
    noisy = Z.shape[0] > 0
    if k == 1 and j == 0:
        return _oja_vector(W, X, etas, Z, zetas, beta, noisy)
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
        eta = zetas[t] if noisy else 0.0
        for a in range(d):
            xa = scale * x[a]
            for c in range(k):
                W[a, c] += xa * p[c]
                if noisy:
                    W[a, c] += eta * Z[t, a, c]
        # deflation: remove the directions already found
        for f in range(j):
            for c in range(k):
                _remove_direction(W, c, F, f)
        # modified Gram-Schmidt
        for c in range(k):
            for e in range(c):
                _remove_direction(W, c, W, e)
            nrm = 0.0
            for a in range(d):
                nrm += W[a, c] * W[a, c]
            nrm = np.sqrt(nrm)
            if nrm > 0.0:
                for a in range(d):
                    W[a, c] /= nrm
    return W


@numba.njit(cache=True, fastmath=False, nogil=True)
def _remove_direction(W, c, U, f):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``W[:, c] -= (U[:, f] . W[:, c]) U[:, f]`` in place, the dot product summed in row order (``U`` may
    be ``W`` itself, with ``f != c``)."""
    s = 0.0
    for a in range(W.shape[0]):
        s += U[a, f] * W[a, c]
    for a in range(W.shape[0]):
        W[a, c] -= s * U[a, f]


@numba.njit(cache=True, fastmath=False, nogil=True)
def _oja_vector(W, X, etas, Z, zetas, beta, noisy):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """:func:`oja_rows` for k = 1 without deflation: the same operations in the same order (the same
    results to the bit), with the loops fused (both dot products in one pass, the norm accumulated
    with the update), so that their sequential sums overlap."""
    m, d = X.shape
    w = W[:, 0]
    for t in range(m):
        x = X[t]
        xn2 = 0.0
        s = 0.0
        for a in range(d):
            xn2 += x[a] * x[a]
            s += x[a] * w[a]
        scale = etas[t]
        if beta > 0.0:
            gn = np.sqrt(xn2 * (s * s))
            if gn > beta:
                scale = scale * beta / gn
        eta = zetas[t] if noisy else 0.0
        nrm = 0.0
        for a in range(d):
            v = w[a] + (scale * x[a]) * s
            if noisy:
                v += eta * Z[t, a, 0]
            w[a] = v
            nrm += v * v
        nrm = np.sqrt(nrm)
        if nrm > 0.0:
            for a in range(d):
                w[a] /= nrm
    return W


def sfc64_state(words: np.ndarray) -> np.ndarray:
    """A fresh SFC64 state ``[a, b, c, counter]`` seeded by three uint64 ``words`` (a charged releaser's
    :meth:`~dpspectral.privacy._pipeline.Releaser.words`): the counter at 1, then 12 outputs
    discarded, as NumPy's ``SFC64`` seeds itself."""
    state = np.empty(4, dtype=np.uint64)
    state[:3] = np.asarray(words, dtype=np.uint64)[:3]
    state[3] = 1
    standard_normals(state, np.empty(0), 12)
    return state


@numba.njit(cache=True, fastmath=False, nogil=True)
def standard_normals(state, out, skip=0):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Fill the 1-D ``out`` with i.i.d. N(0, 1) draws; ``state`` (SFC64, advanced in place).

    NumPy's ziggurat (``random_standard_normal``: 256 layers, 52-bit mantissa, the exact tail and wedge
    tests) on SFC64 words. ``skip``: first discard that many words (seeding).
    """
    a, b, c, cnt = state[0], state[1], state[2], state[3]
    for _ in range(skip):
        tmp = a + b + cnt
        cnt += _u64(1)
        a, b, c = b ^ (b >> _u64(11)), c + (c << _u64(3)), ((c << _u64(24)) | (c >> _u64(40))) + tmp
    i = 0
    while i < out.size:
        tmp = a + b + cnt
        cnt += _u64(1)
        a, b, c = b ^ (b >> _u64(11)), c + (c << _u64(3)), ((c << _u64(24)) | (c >> _u64(40))) + tmp
        idx = np.intp(tmp & _u64(0xFF))
        r = tmp >> _u64(8)
        rabs = (r >> _u64(1)) & _u64(0x000FFFFFFFFFFFFF)
        x = np.float64(rabs) * _WI[idx]
        if r & _u64(1):
            x = -x
        if rabs < _KI[idx]:  # the rectangle of layer idx (about 98.8% of draws)
            out[i] = x
            i += 1
            continue
        while True:
            tmp = a + b + cnt
            cnt += _u64(1)
            a, b, c = b ^ (b >> _u64(11)), c + (c << _u64(3)), ((c << _u64(24)) | (c >> _u64(40))) + tmp
            u1 = np.float64(tmp >> _u64(11)) * _TO_UNIT
            if idx != 0:  # the wedge: accept, or start over with a fresh word
                if (_FI[idx - 1] - _FI[idx]) * u1 + _FI[idx] < np.exp(-0.5 * x * x):
                    out[i] = x
                    i += 1
                break
            tmp = a + b + cnt  # the tail beyond R (Marsaglia's method), repeated until accepted
            cnt += _u64(1)
            a, b, c = b ^ (b >> _u64(11)), c + (c << _u64(3)), ((c << _u64(24)) | (c >> _u64(40))) + tmp
            u2 = np.float64(tmp >> _u64(11)) * _TO_UNIT
            xx = -_INV_R * np.log1p(-u1)
            yy = -np.log1p(-u2)
            if yy + yy > xx * xx:
                out[i] = -(_R + xx) if (rabs >> _u64(8)) & _u64(1) else _R + xx
                i += 1
                break
    state[0], state[1], state[2], state[3] = a, b, c, cnt
