"""Results that need the data owner's matrix to reconstruct: a subspace-only release and a factorization
of the Gram matrix ``A^T A``.

Both release V (n x k, the right subspace of A) and singular values, and no usable left factor of A.
``reconstruct()`` alone raises and names what is missing; ``reconstruct(A)`` is the data owner's local
``A V V^T`` (computed outside the release: it carries no guarantee and must stay with whoever holds A).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._results import LowRankResult
from .._rows import as_numeric_array

__all__ = ["GramResult", "RowSubspaceResult", "project_rows"]


def project_rows(A: Any, V: np.ndarray) -> np.ndarray:
    """``A V V^T`` for the data owner's A (m x n), with a clear error for a wrong shape."""
    n = int(V.shape[0])
    A = as_numeric_array(A, "reconstruct", name="A", ndim=None, accept_sparse=True)  # quotes no cell
    if len(A.shape) != 2 or int(A.shape[1]) != n:
        raise ValueError(f"reconstruct(A) needs a 2-D A with {n} columns (the length of V's columns).")
    return np.asarray((A @ V) @ V.T)


@dataclass(frozen=True)
class RowSubspaceResult(LowRankResult):
    """A subspace-only release: ``V`` (n x k) and ``S`` (k,), no ``U`` (``U`` is None).

    Privacy meaning: V and S are released under the method's relation; ``A V`` is computed by whoever
    holds A (the data owner), outside the release, so it carries no guarantee and must stay with them.
    ``reconstruct(A)`` is that local computation, ``A V V^T``.
    """

    needs_data: ClassVar[bool] = True

    @property
    def rank(self) -> int:
        return int(np.asarray(self.S).shape[0])

    @property
    def shape(self) -> tuple[int, int] | None:
        return None

    def reconstruct(self, A: Any = None) -> np.ndarray:  # type: ignore[override]
        """``A V V^T`` for the data owner's matrix A (m x n); the release alone cannot reconstruct."""
        if self.V is None:  # pragma: no cover - always set
            raise ValueError("This result has no V.")
        if A is None:
            raise ValueError(
                "This result releases only the right subspace V and the singular values S (no U: under "
                "row-level privacy each row of U is one person's data). reconstruct(A) needs the matrix "
                "A: the data owner computes A @ V @ V.T locally."
            )
        return project_rows(A, self.V)




@dataclass(frozen=True)
class GramResult(LowRankResult):
    """A rank-k factorization ``A^T A ~ U diag(S) V^T`` of the n x n Gram matrix (``covariance_lrf``).

    U and V are n x k (the right subspace of A, up to noise); S approximates the eigenvalues of
    ``A^T A`` (the squared singular values of A). :meth:`gram` is the n x n approximation;
    ``reconstruct(A)`` is the data owner's ``A V V^T`` (m x n); ``reconstruct()`` alone raises.
    """

    needs_data: ClassVar[bool] = True

    def gram(self) -> np.ndarray:
        """The released rank-k approximation ``U diag(S) V^T`` of ``A^T A`` (n x n)."""
        assert self.V is not None
        return (self.U * self.S) @ self.V.T

    def reconstruct(self, A: Any = None) -> np.ndarray:  # type: ignore[override]
        """``A V V^T`` for the data owner's A (m x n). Without A it raises: this result factorizes
        ``A^T A`` (n x n), not A; use :meth:`gram` for that."""
        assert self.V is not None
        if A is None:
            n = int(self.V.shape[0])
            raise ValueError(
                f"This result factorizes A^T A ({n} x {n}), not A: gram() gives U diag(S) V^T, its rank-k "
                "approximation; reconstruct(A) needs the matrix A and gives A @ V @ V.T, computed locally "
                "by the data owner."
            )
        return project_rows(A, self.V)
