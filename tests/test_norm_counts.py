"""The norm histogram of adaptive clipping counted in the validation pass.

``accumulate(..., norm_edges=edges)`` counts the row norms in the histogram's public bins while it
validates the rows; ``DPPCA``'s uncentred adaptive path releases those counts instead of reading the data
a third time. Checked: the counts equal :func:`norm_histogram`'s and a direct count, on every source
(NumPy, sparse, a list of blocks, Dask with unknown row counts and an empty block, array-api-strict),
with and without a centre; the Dask histogram is one task per block and refuses NaN/inf as before; an
adaptive ``DPPCA`` fit reads a re-iterable source exactly twice (validation+counts, scatter). All
deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral import DPPCA
from dpspectral._moments import accumulate
from dpspectral.privacy._pipeline import NonPrivateDataError
from dpspectral.privacy._quantile import norm_edges, norm_histogram

N, D = 1200, 6


def _rows(seed: int = 0) -> np.ndarray:
    """Rows whose norms spread over many octaves below 1 (a few above: clipped, counted on top)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.geomspace(1e-3, 1.2, N)[:, None]


def _direct(X: np.ndarray, edges: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    norms = np.linalg.norm(X - (0.0 if center is None else center), axis=1)
    lower = np.concatenate(([-np.inf], edges))
    upper = np.concatenate((edges, [np.inf]))
    return np.array([np.sum((norms >= a) & (norms < b)) for a, b in zip(lower, upper, strict=True)], float)


@pytest.mark.parametrize("center", [None, np.full(D, 0.002)])
def test_counts_of_the_validation_pass_equal_the_histogram(center: np.ndarray | None) -> None:
    X = _rows()
    edges = norm_edges(1.0)
    truth = _direct(X, edges, center)
    assert np.count_nonzero(truth) > 40  # many bins reached: the comparison is not trivial
    np.testing.assert_array_equal(norm_histogram(X, edges, center=center, owner="t"), truth)
    sources = {"dense": X, "blocks": [X[:500], X[500:]]}
    if center is None:
        sources["sparse"] = sp.csr_matrix(X)
    for name, source in sources.items():
        for want_second in (False, True):
            got = accumulate(source, row_norm=1.0, center=center, want_second=want_second,
                             norm_edges=edges)
            assert got.norm_counts is not None, name
            np.testing.assert_array_equal(got.norm_counts, truth, err_msg=name)
    assert accumulate(X, row_norm=1.0).norm_counts is None  # only when asked


def test_dask_counts_one_task_per_block_and_nan_refused() -> None:
    da = pytest.importorskip("dask.array")
    X = _rows(1)
    edges = norm_edges(1.0)
    center = np.full(D, -0.02)
    A = da.from_array(X, chunks=(128, 4))
    A = A[da.from_array(np.ones(N, bool), chunks=128)]  # unknown row counts
    A = da.concatenate([A, da.zeros((0, D), chunks=(0, D))])  # and an empty block
    truth = _direct(X, edges, center)
    np.testing.assert_array_equal(norm_histogram(A, edges, center=center, owner="t"), truth)
    for want_second in (False, True):
        got = accumulate(A, row_norm=1.0, center=center, want_second=want_second, norm_edges=edges)
        np.testing.assert_array_equal(got.norm_counts, truth)
        ref = accumulate(X, row_norm=1.0, center=center, want_second=want_second)
        assert (got.n, got.n_clipped) == (ref.n, ref.n_clipped)
        if want_second:
            np.testing.assert_allclose(got.second, ref.second, atol=1e-12)
    bad = X.copy()
    bad[900, 1] = np.nan
    with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
        norm_histogram(da.from_array(bad, chunks=(128, D)), edges, center=None, owner="t")


def test_device_counts_equal_the_host_counts() -> None:
    xps = pytest.importorskip("array_api_strict")
    from dpspectral._array_api import config_context

    X = _rows(2)
    edges = norm_edges(1.0)
    truth = _direct(X, edges, None)
    with config_context(array_api_dispatch=True):
        Xd = xps.asarray(X)
        for want_second in (False, True):
            got = accumulate(Xd, row_norm=1.0, want_second=want_second, norm_edges=edges, xp=xps)
            # the device rule for norms may differ from NumPy's in the last bit: at most a row per edge
            assert got.norm_counts is not None
            assert np.abs(got.norm_counts - truth).sum() <= 2 * edges.size
            assert got.norm_counts.sum() == N


class _CountingSource:
    """A re-iterable row source (a callable returning a fresh iterator) that counts its passes."""

    def __init__(self, X: np.ndarray) -> None:
        self.X, self.passes = X, 0

    def __call__(self) -> Iterator[np.ndarray]:
        self.passes += 1
        return iter([self.X[:400], self.X[400:800], self.X[800:]])


def test_adaptive_dppca_reads_the_data_twice() -> None:
    X = _rows(3)
    source = _CountingSource(X)
    fitted = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, centering=None, random_state=0).fit(source)
    assert source.passes == 2  # validation + counts, then the scatter at the released clip
    same = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, centering=None, random_state=0).fit(X)
    np.testing.assert_allclose(fitted.components_, same.components_, atol=1e-10)
    assert any(note.startswith("Adaptive clipping") for note in fitted.privacy_.notes)


def test_clipped_moments_in_pieces_equal_the_direct_ones() -> None:
    """The clipped rows are added in pieces of at least 1024 rows (a shared buffer): with d = 300 a
    block of 2,600 rows is three pieces, rows above the bound in each; the sum and X^T X equal the
    direct clipped ones, in memory and on Dask (one block and several)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2600, 300)) / 15.0  # norms about 1.15: most rows above the bound 1, some not
    X[::7] *= 0.5
    factors = np.minimum(1.0, 1.0 / np.linalg.norm(X, axis=1))
    assert 0.2 < np.mean(factors < 1.0) < 0.95
    Y = X * factors[:, None]
    sources: dict[str, object] = {"dense": X, "blocks": [X[:1500], X[1500:]]}
    da = pytest.importorskip("dask.array")
    sources["dask one block"] = da.from_array(X, chunks=(2600, 300))
    sources["dask blocks"] = da.from_array(X, chunks=(1100, 300))
    for name, source in sources.items():
        got = accumulate(source, row_norm=1.0, want_sum=True, want_second=True)
        assert got.sum is not None and got.second is not None
        np.testing.assert_allclose(got.sum, Y.sum(axis=0), atol=1e-9, err_msg=name)
        np.testing.assert_allclose(got.second, Y.T @ Y, atol=1e-9, err_msg=name)


def test_adaptive_noisy_power_reads_the_data_twice() -> None:
    from dpspectral import noisy_power

    X = _rows(6)
    source = _CountingSource(X)
    got = noisy_power(source, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    assert source.passes == 2  # validation + counts, then the scatter at the released clip
    same = noisy_power(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    np.testing.assert_allclose(got.components, same.components, atol=1e-10)
    assert len(got.privacy.events) == 2  # the histogram and the iterations, as before
