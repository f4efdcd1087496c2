"""Result objects of the private algorithms: small frozen dataclasses of released quantities."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .privacy.accounting import PrivacyReport

__all__ = ["SubspaceResult"]


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
