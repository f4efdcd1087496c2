"""The clipped moments computed piece by piece (centred without a centred copy of the block) equal the
direct computation on the centred, clipped rows."""

import numpy as np
import pytest

from dpspectral._moments import accumulate
from dpspectral._rows import NonPrivateDataError
from dpspectral.privacy._centred_norms import centred_row_norms
from dpspectral.privacy._quantile import norm_edges, norm_histogram


def _data(seed=0, n=5000, d=30):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.1, 0.5, size=(n, 1))  # norms around 1 to 3
    return X, rng.standard_normal(d) * 0.1


def _direct(X, center, C):
    Y = X - center
    norms = np.linalg.norm(Y, axis=1)
    Y = Y * np.minimum(1.0, C / norms)[:, None]
    return Y.sum(axis=0), Y.T @ Y, int(np.count_nonzero(norms > C))


@pytest.mark.parametrize("center", [False, True])
def test_centred_pieces_match_direct(center):
    X, mu = _data()
    mu = mu if center else None
    m = accumulate(X, row_norm=1.5, center=mu, want_sum=True, want_second=True)
    total, second, n_over = _direct(X, 0.0 if mu is None else mu, 1.5)
    assert 0 < m.n_clipped == n_over < X.shape[0]  # some rows clipped, some not
    np.testing.assert_allclose(m.sum, total, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(m.second, second, rtol=1e-12, atol=1e-9)
    assert np.array_equal(m.second, m.second.T)  # exactly symmetric
    X_before = X.copy()
    accumulate(X, row_norm=1.5, center=mu, want_second=True)
    assert np.array_equal(X, X_before)  # the caller's array is never written


def test_centred_norms_and_histogram_match_direct():
    X, mu = _data(1)
    direct = np.linalg.norm(X - mu, axis=1)
    np.testing.assert_allclose(centred_row_norms(X, mu), direct, rtol=1e-14)
    np.testing.assert_allclose(centred_row_norms(X, None), np.linalg.norm(X, axis=1), rtol=1e-14)
    edges = norm_edges(3.0)
    counts = norm_histogram(X, edges, center=mu, owner="test")
    expected = np.bincount(np.searchsorted(edges, direct, side="right"), minlength=edges.size + 1)
    assert np.array_equal(counts, expected)


def test_centred_non_finite_refused():
    X, mu = _data(2, n=2000)
    X[1500, 3] = np.nan
    with pytest.raises(NonPrivateDataError):
        accumulate(X, row_norm=1.0, center=mu, want_second=True)
    X[1500, 3] = 1e308  # finite, but its centred value overflows: refused as before
    mu[3] = -1e308
    with pytest.raises(NonPrivateDataError):
        accumulate(X, row_norm=1.0, center=mu, want_second=True)
    assert np.isinf(centred_row_norms(X, mu)[1500])


def test_top_k_eigh_serial_blas_for_small_d(monkeypatch):
    """The top-k eigh runs on one BLAS thread up to SERIAL_EIGH_MAX_D (threads that must meet after each
    small product are slow on shared cores) and gives the top eigenpairs."""
    import scipy.linalg
    from threadpoolctl import threadpool_info

    import dpspectral._linalg as linalg

    limits = []
    eigh = scipy.linalg.eigh

    def record(*args, **kwargs):  # the BLAS threads while LAPACK runs
        limits.append(sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}))
        return eigh(*args, **kwargs)

    monkeypatch.setattr(scipy.linalg, "eigh", record)
    A = np.random.default_rng(3).standard_normal((200, 40))
    S = A.T @ A
    values, vectors = linalg.top_k_eigh(S, 3)
    assert limits == [[1]]
    expected = np.linalg.eigvalsh(S)[::-1][:3]
    np.testing.assert_allclose(values, expected, rtol=1e-10)
    np.testing.assert_allclose(S @ vectors, vectors * values, atol=1e-8)
