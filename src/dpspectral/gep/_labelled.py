"""What the two estimators of labelled rows share in ``fit``: the rows read, and the moments released.

:class:`~dpspectral.DPFisherDiscriminant` (``method="moments"``) and
:class:`~dpspectral.DPLinearDiscriminantAnalysis` validate the rows and labels the same way, project them
onto a public basis the same way, and release the moments either with the public ``classes`` or after a
private release of the label set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .._public_basis import project_for_fit
from .._validation import validated_data
from ..privacy._budget import Relation
from ._moments import ReleasedMoments

__all__ = ["_LabelledFit"]


class _LabelledFit:
    """``fit``'s shared steps for an estimator with ``epsilon``, ``delta``, ``accountant``,
    ``random_state``, ``public_basis`` and an ``_n_components(n_classes, n_features, released=False)``
    check (``n_components`` against the number of classes)."""

    epsilon: Any
    delta: Any
    accountant: Any
    random_state: Any
    public_basis: Any

    def _n_components(self, n_classes: int | None, n_features: int | None, released: bool = False) -> int:
        raise NotImplementedError

    def _labelled_rows(self, X: Any, y: Any, relation: Any, owner: str, *,
                       classification: bool = False) -> tuple[Any, Any]:
        """The rows and labels checked, then projected onto ``public_basis`` (kept in ``_basis``).

        Under add/remove an empty data set is a neighbour like any other: released, not refused.
        ``classification``: a continuous target is refused too (it is outside the labels' domain).
        """
        empty_ok = relation is Relation.ADD_REMOVE
        X, y = validated_data(self, X, y, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                              reset=True, ensure_min_samples=0 if empty_ok else 1)
        if classification:
            check_classification_targets(y)
        self._basis, X = project_for_fit(self.public_basis, X, epsilon=self.epsilon, delta=self.delta,
                                         relation=relation, k=1, owner=owner)
        return X, y

    def _release_moments(self, prepared: Any, public: np.ndarray | None,
                         d: int) -> tuple[ReleasedMoments, int]:
        """The one release of the prepared moments, and the number of components.

        With the public ``classes`` the number of components is checked before the charge; with
        ``classes=None``, once the label set is released (that release stays charged if it fails).
        """
        if public is not None:
            k = self._n_components(int(public.size), d)
            return prepared.release(self.accountant, self.random_state), k
        found: dict[str, int] = {}

        def on_classes(classes: Any, d: int, released: bool) -> None:  # after the label release
            if released:
                found["k"] = self._n_components(int(classes.size), d, released=True)

        moments = prepared.release(self.accountant, self.random_state, on_classes)
        return moments, found["k"]
