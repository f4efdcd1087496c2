"""The result of a (private) generalized eigenproblem solver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._rows import as_numeric_array
from ..privacy._accounting import PrivacyReport

__all__ = ["GEPResult"]


@dataclass(frozen=True)
class GEPResult:
    """Top-k generalized eigenvectors of a symmetric-definite pair, from released quantities only.

    Attributes
    ----------
    vectors : ndarray of shape (n_features, k)
        Generalized eigenvectors, ordered by decreasing ``values``, signs fixed, normalised so that
        ``vectors.T @ B_released @ vectors`` is the identity (on the diagonal for sparse and flow
        methods), where ``B_released`` is the regularised B the method released (``B + xi I`` for the
        non-private solver). Projecting data: ``X @ vectors``.
    values : ndarray of shape (k,) or None
        Released estimates of the generalized eigenvalues (post-processing of noisy releases).
    privacy : PrivacyReport or None
        None only for the non-private solver (:func:`~dpspectral.gep.simultaneous_reduction`).
    whitening : ndarray of shape (n_features, k1) or None
        The released reduction ``Phi_B (Lambda_B + xi I)^{-1/2}`` of the first phase (simultaneous
        reduction methods), whose columns span the space the answer lives in.
    method : str
        The solver's name.
    diagnostics : dict
        Public facts about the run (noise scales, multipliers, iterations, timings).
    """

    vectors: np.ndarray
    values: np.ndarray | None
    privacy: PrivacyReport | None
    method: str
    whitening: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def n_components(self) -> int:
        """k, the number of vectors."""
        return int(self.vectors.shape[1])

    def transform(self, X: Any) -> np.ndarray:
        """``X @ vectors`` (no centring)."""
        X = as_numeric_array(X, "GEPResult.transform", name="X", ndim=None, accept_sparse=True)
        return np.asarray(X @ self.vectors)
