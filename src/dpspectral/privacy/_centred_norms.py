"""Row norms of centred dense rows, without a centred copy of the rows."""

from __future__ import annotations

import numpy as np

from ._clipping import _PIECE_ELEMENTS

__all__ = ["centred_row_norms"]


def centred_row_norms(X: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """The float64 norms of the rows of ``X - center`` (``X`` dense float64), centred piece by piece
    into one cache-sized buffer instead of a centred copy of ``X`` (the same work for every row).

    A row with NaN or infinity, or whose centred entries or squares overflow, has a NaN or infinite
    norm: the caller refuses it, or computes it again with :func:`scaled_row_norms`.
    """
    if center is None:
        with np.errstate(over="ignore"):
            plain: np.ndarray = np.sqrt(np.einsum("ij,ij->i", X, X))
        return plain
    m, d = X.shape
    rows = max(1024, _PIECE_ELEMENTS // max(d, 1))
    norms = np.empty(m)
    buffer = np.empty((min(rows, m), d))
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, m, rows):
            piece = buffer[:min(rows, m - a)]
            np.subtract(X[a:a + rows], center, out=piece)
            np.einsum("ij,ij->i", piece, piece, out=norms[a:a + rows])
        np.sqrt(norms, out=norms)
    return norms
