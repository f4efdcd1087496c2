"""The top-k eigenpairs of a released (noisy) matrix by Lanczos iteration: the same subspace and values
as LAPACK's ``evr`` to machine precision, from the upper triangle alone, in either memory order, and
LAPACK where the iteration does not converge."""

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.linalg

import dpspectral._linalg as linalg
from dpspectral._linalg import LANCZOS_MIN_D, top_k_eigh


def _released(d, signal, seed):
    """A low-rank scatter of ``signal`` strength plus symmetric Gaussian noise, its lower triangle
    overwritten with garbage (only the upper triangle is to be read)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 12)) * np.linspace(3.0, 1.0, 12)
    E = rng.standard_normal((d, d))
    M = signal * (B @ B.T) + np.triu(E) + np.triu(E, 1).T
    return np.triu(M) + np.tril(np.full((d, d), 1e6), -1)


@pytest.mark.parametrize("d, k", [(256, 10), (300, 5), (784, 10), (512, 32)])
@pytest.mark.parametrize("signal", [0.0, 1.0, 100.0])
@pytest.mark.parametrize("fortran", [False, True])
def test_lanczos_matches_lapack(d, k, signal, fortran):
    M = _released(d, signal, seed=d + k)
    M = np.asfortranarray(M) if fortran else np.ascontiguousarray(M)
    values, vectors = top_k_eigh(M, k, noisy=True)
    exact_values, exact_vectors = top_k_eigh(M, k)  # evr
    scale = np.abs(exact_values).max()
    np.testing.assert_allclose(values, exact_values, rtol=0, atol=1e-11 * scale)
    P, Q = vectors @ vectors.T, exact_vectors @ exact_vectors.T
    gap = exact_values[-1] - scipy.linalg.eigh(np.triu(M) + np.triu(M, 1).T, eigvals_only=True,
                                               subset_by_index=[d - k - 1, d - k - 1])[0]
    assert np.linalg.norm(P - Q) <= 1e-9 * scale / gap  # the subspace, to the precision its gap allows
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(k), atol=1e-12)
    assert np.all(np.abs(vectors).max(axis=0) == vectors.max(axis=0))  # signs fixed


def test_lanczos_used_only_for_noisy_wide_matrices(monkeypatch):
    calls = []
    monkeypatch.setattr(linalg, "_lanczos_top_k",
                        lambda M, k: calls.append((M.shape[0], k)) or None)  # falls back to evr
    M = _released(LANCZOS_MIN_D, 1.0, seed=1)
    top_k_eigh(M, 10)
    top_k_eigh(M, LANCZOS_MIN_D // 16 + 1, noisy=True)
    top_k_eigh(M[:-1, :-1], 5, noisy=True)
    assert calls == []
    values, _ = top_k_eigh(M, 10, noisy=True)
    assert calls == [(LANCZOS_MIN_D, 10)]
    np.testing.assert_allclose(values, top_k_eigh(M, 10)[0], rtol=0, atol=0)


def test_no_convergence_falls_back_to_lapack(monkeypatch):
    def fail(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackNoConvergence("no convergence", np.empty(0), np.empty((0, 0)))

    M = _released(300, 1.0, seed=2)
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", fail)
    values, vectors = top_k_eigh(M, 8, noisy=True)
    exact_values, exact_vectors = top_k_eigh(M, 8)
    assert np.array_equal(values, exact_values) and np.array_equal(vectors, exact_vectors)


def test_inaccurate_pairs_fall_back_to_lapack(monkeypatch):
    """Pairs that are not eigenpairs (here: ARPACK's answer perturbed) are refused."""
    real = scipy.sparse.linalg.eigsh

    def off(*args, **kwargs):
        values, vectors = real(*args, **kwargs)
        return values * (1 + 1e-6), vectors

    M = _released(300, 1.0, seed=3)
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", off)
    assert linalg._lanczos_top_k(M, 8) is None
    np.testing.assert_array_equal(top_k_eigh(M, 8, noisy=True)[0], top_k_eigh(M, 8)[0])


def test_the_start_is_public_and_fixed():
    a, b = linalg._lanczos_start(300), linalg._lanczos_start(300)
    assert a is b and not a.flags.writeable
    M = _released(300, 1.0, seed=4)
    first = top_k_eigh(M, 6, noisy=True)
    again = top_k_eigh(M.copy(), 6, noisy=True)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
