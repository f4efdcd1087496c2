"""The transformers share one released projection: ``transform`` of dense, sparse and Dask input.

``DPPCA``, ``DistributedDPPCA``, ``DPFisherDiscriminant`` and ``DPLinearDiscriminantAnalysis`` each
define only their released map; the input checks, the sparse path and the lazy Dask path are common.
Deterministic checks (no statistical tolerance): the paths agree to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral import DPPCA
from dpspectral.distributed import DistributedDPPCA
from dpspectral.gep import DPFisherDiscriminant, DPLinearDiscriminantAnalysis


def _data(n: int = 600, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) * 0.2 + np.eye(d)[y] * 0.5
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, y


def _fitted() -> list:
    X, y = _data()
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    return [
        DPPCA(2, **kw).fit(X),
        DistributedDPPCA(2, engine="inprocess", **kw).fit([X[:300], X[300:]]),
        DPFisherDiscriminant(2, classes=[0, 1, 2], **kw).fit(X, y),  # public classes: no label release
        DPLinearDiscriminantAnalysis(2, classes=[0, 1, 2], **kw).fit(X, y),
    ]


@pytest.fixture(scope="module")
def fitted() -> list:
    return _fitted()


def test_sparse_and_dense_agree_and_names_follow_the_class(fitted) -> None:
    X, _ = _data(seed=1)
    for est in fitted:
        Z = est.transform(X)
        assert Z.shape == (len(X), 2)
        assert np.allclose(est.transform(sp.csr_matrix(X)), Z, atol=1e-12)
        prefix = type(est).__name__.lower()
        assert list(est.get_feature_names_out()) == [f"{prefix}0", f"{prefix}1"]


def test_dask_input_gives_a_lazy_dask_array(fitted) -> None:
    da = pytest.importorskip("dask.array")
    X, _ = _data(seed=2)
    for est in fitted:
        calls = []

        def counted(block, calls=calls):
            if block.size:
                calls.append(1)
            return block

        Xd = da.from_array(X, chunks=(100, 5)).map_blocks(counted, dtype=X.dtype)
        Z = est.transform(Xd)
        assert isinstance(Z, da.Array) and Z.shape == (len(X), 2) and not calls
        assert np.allclose(Z.compute(), est.transform(X), atol=1e-12)
        with pytest.raises(ValueError, match="expects shape"):
            est.transform(da.from_array(X[:, :3], chunks=100))


def test_distributed_pca_inverse_transform_maps_back_onto_the_subspace(fitted) -> None:
    est = fitted[1]
    X, _ = _data(seed=3)
    back = est.inverse_transform(est.transform(X))
    C = est.components_
    assert np.allclose(back, X @ C.T @ C, atol=1e-12)
    # the released components are orthonormal: projecting the lifted rows gives the same coordinates
    assert np.allclose(est.transform(back), est.transform(X), atol=1e-10)
    with pytest.raises(ValueError, match="expects shape"):
        est.inverse_transform(X)


def test_discriminants_have_no_inverse_transform(fitted) -> None:
    for est in fitted[2:]:
        assert not hasattr(est, "inverse_transform")


def test_float32_kept_where_the_estimator_declares_it() -> None:
    X, _ = _data()
    est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X.astype(np.float32))
    assert est.transform(X.astype(np.float32)).dtype == np.float32
    assert est.transform(sp.csr_matrix(X.astype(np.float32))).dtype == np.float32
