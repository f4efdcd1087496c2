"""The released projection that the transformers share: ``transform``, ``inverse_transform``, feature names.

A fitted transformer of the library (``DPPCA``, ``DistributedDPPCA``, ``DPFisherDiscriminant``,
``DPLinearDiscriminantAnalysis``) maps rows through a released linear map: ``Z = (X - offset) @ matrix``,
divided by a released ``scale`` when whitened. Each one says what its map is with one hook,
``_projection()``; the validation of the input (dense or sparse, float32 kept where the estimator
declares it, a Dask array projected lazily block by block) is written once, here. Everything here is
post-processing of released quantities: it costs no privacy.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._rows import as_numeric_array, is_dask_array
from ._validation import validated_data


@dataclasses.dataclass(frozen=True)
class Projection:
    """A released linear map: ``Z = (X - offset) @ matrix``, then ``Z / scale`` when ``scale`` is set.

    ``matrix`` is d x k, ``offset`` (d,) or None (no centring), ``scale`` (k,) or None.
    """

    matrix: Any
    offset: Any = None
    scale: Any = None


def project_rows(X: Any, matrix: Any, offset: Any = None, scale: Any = None, dtype: Any = None) -> Any:
    """``(X - offset) @ matrix``, divided by ``scale`` when whitened (dense rows, or one block of them)."""
    Z = (X if offset is None else X - offset) @ matrix
    Z = Z if scale is None else Z / scale
    return Z if dtype is None else Z.astype(dtype, copy=False)


def lift_rows(Z: Any, back: Any, offset: Any = None, dtype: Any = None) -> Any:
    """``Z @ back + offset``: the inverse of :func:`project_rows` (dense rows, or one block of them)."""
    X = Z @ back
    X = X if offset is None else X + offset
    return X if dtype is None else X.astype(dtype, copy=False)


class _ReleasedProjection(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    """``transform`` and the output feature names of a transformer with a released linear map.

    A subclass defines ``_projection()`` (the :class:`Projection` of the fitted model), sets
    ``_fitted_attribute`` (the attribute that a fitted model has) and has ``n_components_``.
    """

    _fitted_attribute: ClassVar[str] = "components_"

    def _projection(self) -> Projection:
        raise NotImplementedError

    @property
    def _n_features_out(self) -> int:
        return int(self.n_components_)  # type: ignore[attr-defined]

    def transform(self, X: Any) -> Any:
        """Project ``X`` on the released directions (post-processing: it costs nothing)."""
        check_is_fitted(self, self._fitted_attribute)
        if is_dask_array(X):
            return self._dask_map(X, inverse=False)
        X = validated_data(self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                           reset=False)
        p = self._projection()
        if sp.issparse(X):
            Z = np.asarray(X @ p.matrix)
            Z = Z if p.offset is None else Z - p.offset @ p.matrix
            return Z if p.scale is None else Z / p.scale
        return np.asarray(project_rows(X, p.matrix, p.offset, p.scale))

    def _dask_map(self, X: Any, inverse: bool) -> Any:
        """``transform`` or ``inverse_transform`` of a Dask array, block by block of rows (lazy)."""
        method = "inverse_transform" if inverse else "transform"
        owner = f"{type(self).__name__}.{method}"
        n_in, n_out = int(self.n_features_in_), int(self.n_components_)  # type: ignore[attr-defined]
        width, out = (n_out, n_in) if inverse else (n_in, n_out)
        if X.ndim != 2 or X.shape[1] != width:
            raise ValueError(f"{owner} expects shape (n_samples, {width}); got {X.ndim} dimensions "
                             f"and {X.shape[-1] if X.ndim else 0} columns.")
        if X.dtype.kind not in "fiub":
            raise TypeError(f"{owner} expects a numeric Dask array; got dtype {X.dtype}.")
        p = self._projection()
        dtype = np.result_type(X.dtype if X.dtype.kind == "f" else np.float64, p.matrix.dtype)
        if inverse:
            block = functools.partial(lift_rows, back=self._inverse_rows(), offset=p.offset, dtype=dtype)
        else:
            block = functools.partial(project_rows, matrix=p.matrix, offset=p.offset, scale=p.scale,
                                      dtype=dtype)
        X = X.rechunk({1: -1})
        return X.map_blocks(block, dtype=dtype, chunks=(X.chunks[0], (out,)), meta=np.empty((0, 0), dtype))

    def _inverse_rows(self) -> Any:
        """The k x d rows that :meth:`_ReleasedSubspace.inverse_transform` maps back with."""
        return self._projection().matrix.T


class _ReleasedSubspace(_ReleasedProjection):
    """A released projection on orthonormal directions (PCA-like), which ``inverse_transform`` undoes."""

    def inverse_transform(self, X: Any) -> Any:
        """Map projected data back: ``X @ components_ + offset`` (post-processing: it costs nothing)."""
        check_is_fitted(self, self._fitted_attribute)
        if is_dask_array(X):
            return self._dask_map(X, inverse=True)
        owner = f"{type(self).__name__}.inverse_transform"
        Z = as_numeric_array(X, owner, name="X")
        Z = np.asarray(Z, dtype=Z.dtype if Z.dtype in (np.float32, np.float64) else np.float64)
        k = int(self.n_components_)  # type: ignore[attr-defined]
        if Z.shape[1] != k:
            raise ValueError(f"{owner} expects shape (n_samples, {k}); got {Z.shape[1]} columns.")
        return lift_rows(Z, self._inverse_rows(), self._projection().offset)
