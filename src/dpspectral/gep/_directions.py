"""The released discriminant directions as a transformer: what the Fisher and LDA estimators share."""

from __future__ import annotations

from typing import Any

from .._projection import Projection, _ReleasedProjection

__all__ = ["_ReleasedDirections"]


class _ReleasedDirections(_ReleasedProjection):
    """``transform`` of an estimator whose released directions are ``scalings_`` (labelled rows, sparse
    input accepted): :class:`~dpspectral.DPFisherDiscriminant` and
    :class:`~dpspectral.DPLinearDiscriminantAnalysis`."""

    _fitted_attribute = "scalings_"

    def _projection(self) -> Projection:
        """``X @ scalings_``."""
        return Projection(self.scalings_)  # type: ignore[attr-defined]

    def transform(self, X: Any) -> Any:
        """Project ``X`` on the released directions: ``X @ scalings_``.

        A Dask array gives a Dask array (lazy: the projection of each block of rows). Post-processing of
        the released model: it costs nothing.
        """
        return super().transform(X)

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
