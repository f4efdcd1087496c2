"""Result objects of the private algorithms: small frozen dataclasses of released quantities."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .privacy._accounting import PrivacyReport

__all__ = ["LowRankResult", "SubspaceResult"]


@dataclass(frozen=True)
class SubspaceResult:
    """A private estimate of a k-dimensional principal subspace.

    Every field is a released quantity or a public input.

    Attributes
    ----------
    components : ndarray of shape (n_features, k)
        Orthonormal columns, ordered by decreasing ``values``, signs fixed.
    values : ndarray of shape (k,) or None
        Eigenvalues of the released (noisy) matrix along ``components``, on the scale of the
        unnormalised scatter ``sum_i x_i x_i^T`` of clipped rows.
    total : float or None
        Trace of the released matrix (same scale as ``values``).
    mean : ndarray of shape (n_features,) or None
        The centre that was subtracted: public, or released with noise.
    n_samples : float or None
        The number of rows when it is public (replace-one neighbours) or a released noisy count;
        None when neither.
    privacy : PrivacyReport
    diagnostics : dict
        Public facts about the run (noise scales, timings); never a data-dependent count.
    """

    components: np.ndarray
    values: np.ndarray | None
    privacy: PrivacyReport
    total: float | None = None
    mean: np.ndarray | None = None
    n_samples: float | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def n_components(self) -> int:
        return int(self.components.shape[1])


@dataclass(frozen=True)
class LowRankResult:
    """A (private) rank-k factorization ``A ~ U diag(S) V^T`` of an m x n matrix.

    Every field is a released quantity (post-processing of noisy sketches) or a public input.

    Attributes
    ----------
    U : ndarray of shape (m, k)
        Orthonormal columns (left factors), ordered by decreasing ``S``, signs fixed.
    S : ndarray of shape (k,)
        Non-negative, descending.
    V : ndarray of shape (n, k) or None
        Orthonormal columns (right factors); None for protocols that release only a left subspace
        (Private-Local-LRF), whose approximation is ``U U^T A``.
    privacy : PrivacyReport or None
        None only for the non-private reference algorithm.
    diagnostics : dict
        Public facts about the run (sketch sizes, noise scales, timings).
    """

    U: np.ndarray | None
    S: np.ndarray
    V: np.ndarray | None
    privacy: PrivacyReport | None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return int(np.asarray(self.S).shape[0])

    @property
    def shape(self) -> tuple[int, int] | None:
        """(m, n) of the factorized matrix, when both factors are released."""
        if self.V is None or self.U is None:
            return None
        return int(self.U.shape[0]), int(self.V.shape[0])

    def reconstruct(self) -> np.ndarray:
        """The rank-k matrix ``U diag(S) V^T`` (m x n). Needs ``V``."""
        if self.V is None:
            raise ValueError(
                "This result releases only a left subspace U (no V): the approximation of a matrix A "
                "is U @ (U.T @ A), which needs A."
            )
        return (self.U * self.S) @ self.V.T
