"""Tests of dpspectral.metrics against brute-force definitions on small problems."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.stats import ortho_group

from dpspectral.metrics import (
    additive_error,
    aligned_distance,
    best_rank_k_error,
    captured_energy,
    captured_variance,
    downstream_accuracy,
    max_sin_theta,
    principal_angles,
    projection_distance,
    sin_theta,
    total_error,
)

# ------------------------------------------------------------------------------------------------
# helpers (brute force: explicit d x d projections, full decompositions)
# ------------------------------------------------------------------------------------------------


def _basis(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    Q, _ = np.linalg.qr(rng.standard_normal((d, k)))
    return Q


def _orth(rng: np.random.Generator, k: int) -> np.ndarray:
    return ortho_group.rvs(k, random_state=rng) if k > 1 else np.array([[-1.0]])


def _proj(V: np.ndarray) -> np.ndarray:
    return V @ V.T


def _psd(rng: np.random.Generator, d: int) -> np.ndarray:
    """A PSD matrix with a clear spectral gap everywhere."""
    Q = _basis(rng, d, d)
    vals = np.linspace(10.0, 0.5, d)
    return (Q * vals) @ Q.T


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


# ------------------------------------------------------------------------------------------------
# projection distance
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "kv", "kw"), [(6, 1, 1), (8, 3, 3), (10, 2, 4), (7, 7, 7)])
def test_projection_distance_matches_explicit_projections(rng, d, kv, kw):
    V, W = _basis(rng, d, kv), _basis(rng, d, kw)
    expected = np.linalg.norm(_proj(V) - _proj(W), "fro")
    assert projection_distance(V, W) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert projection_distance(W, V) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_projection_distance_identity_formula(rng):
    V, W = _basis(rng, 12, 3), _basis(rng, 12, 5)
    sq = 3 + 5 - 2 * np.linalg.norm(V.T @ W, "fro") ** 2
    assert projection_distance(V, W) ** 2 == pytest.approx(sq, rel=1e-12)


def test_projection_distance_invariant_to_basis_rotation(rng):
    V, W = _basis(rng, 9, 3), _basis(rng, 9, 3)
    base = projection_distance(V, W)
    assert base > 0.1
    Q1, Q2 = _orth(rng, 3), _orth(rng, 3)
    assert projection_distance(V @ Q1, W @ Q2) == pytest.approx(base, rel=1e-12)
    assert projection_distance(V @ Q1, V) == pytest.approx(0.0, abs=1e-12)


def test_projection_distance_orthogonal_subspaces(rng):
    Q = _basis(rng, 10, 8)
    for k in (1, 2, 4):
        assert projection_distance(Q[:, :k], Q[:, k : 2 * k]) == pytest.approx(np.sqrt(2 * k))


def test_projection_distance_small_distances_are_accurate(rng):
    V = _basis(rng, 20, 2)
    t = 1e-9
    # rotate the first column by t towards a direction orthogonal to span(V)
    u = rng.standard_normal(20)
    u -= V @ (V.T @ u)
    u /= np.linalg.norm(u)
    W = V.copy()
    W[:, 0] = np.cos(t) * V[:, 0] + np.sin(t) * u
    # ||P_V - P_W||_F = sqrt(2) sin(t)
    assert projection_distance(V, W) == pytest.approx(np.sqrt(2) * np.sin(t), rel=1e-5)


def test_projection_distance_rows_layout_and_1d(rng):
    V, W = _basis(rng, 7, 2), _basis(rng, 7, 2)
    assert projection_distance(V.T, W.T, layout="rows") == pytest.approx(
        projection_distance(V, W), rel=1e-14
    )
    v, w = V[:, 0], W[:, 0]
    assert projection_distance(v, w) == pytest.approx(
        np.linalg.norm(np.outer(v, v) - np.outer(w, w)), rel=1e-12
    )


def test_projection_distance_errors(rng):
    V = _basis(rng, 6, 2)
    with pytest.raises(ValueError, match="same ambient dimension"):
        projection_distance(V, _basis(rng, 5, 2))
    with pytest.raises(ValueError, match="'V'.*orthonormal"):
        projection_distance(2 * V, V)
    with pytest.raises(ValueError, match="'W'.*finite"):
        W = V.copy()
        W[0, 0] = np.nan
        projection_distance(V, W)
    with pytest.raises(ValueError, match="'layout'.*'cols'"):
        projection_distance(V, V, layout="cols")
    with pytest.raises(ValueError, match="k <= d"):
        projection_distance(V.T, V.T)  # (2, 6) read as d=2, k=6
    with pytest.raises(ValueError, match="1-D or 2-D"):
        projection_distance(np.zeros((2, 2, 2)), V)
    with pytest.raises(TypeError, match="dense"):
        projection_distance(scipy.sparse.csr_array(V), V)


def test_float32_basis_accepted(rng):
    V, W = _basis(rng, 8, 2), _basis(rng, 8, 2)
    got = projection_distance(V.astype(np.float32), W.astype(np.float32))
    assert got == pytest.approx(projection_distance(V, W), rel=1e-5)


# ------------------------------------------------------------------------------------------------
# angles
# ------------------------------------------------------------------------------------------------


def test_sin_theta_matches_definition(rng):
    v, w = rng.standard_normal(9), rng.standard_normal(9)
    expected = np.sqrt(1 - (v @ w) ** 2 / ((v @ v) * (w @ w)))
    assert sin_theta(v, w) == pytest.approx(expected, rel=1e-12)
    assert sin_theta(3 * v, -w) == pytest.approx(expected, rel=1e-12)  # scale and sign
    assert sin_theta(v, v) == pytest.approx(0.0, abs=1e-15)
    e = np.eye(9)
    assert sin_theta(e[0], e[3]) == 1.0
    # for unit vectors it is the projection distance / sqrt(2)
    vu, wu = v / np.linalg.norm(v), w / np.linalg.norm(w)
    assert sin_theta(vu, wu) == pytest.approx(projection_distance(vu, wu) / np.sqrt(2), rel=1e-12)
    assert sin_theta(v[:, None], w[None, :]) == pytest.approx(expected, rel=1e-12)


def test_sin_theta_errors(rng):
    v = rng.standard_normal(4)
    with pytest.raises(ValueError, match="'w'.*non-zero"):
        sin_theta(v, np.zeros(4))
    with pytest.raises(ValueError, match="same length"):
        sin_theta(v, np.ones(5))
    with pytest.raises(ValueError, match="'v'.*shape"):
        sin_theta(np.ones((4, 2)), v)


def test_principal_angles_against_svd(rng):
    V, W = _basis(rng, 10, 3), _basis(rng, 10, 4)
    angles = principal_angles(V, W)
    assert angles.shape == (3,)
    assert np.all(np.diff(angles) >= 0)
    cosines = np.linalg.svd(V.T @ W, compute_uv=False)  # descending -> ascending angles
    np.testing.assert_allclose(np.cos(angles), cosines, rtol=1e-10, atol=1e-12)
    # projection distance from the angles (equal k)
    W3 = _basis(rng, 10, 3)
    a = principal_angles(V, W3)
    assert projection_distance(V, W3) == pytest.approx(np.sqrt(2 * np.sum(np.sin(a) ** 2)))


def test_max_sin_theta_is_spectral_norm_of_projection_difference(rng):
    for k in (1, 2, 4):
        V, W = _basis(rng, 9, k), _basis(rng, 9, k)
        expected = np.linalg.norm(_proj(V) - _proj(W), 2)
        assert max_sin_theta(V, W) == pytest.approx(expected, rel=1e-10)
    v, w = rng.standard_normal(9), rng.standard_normal(9)
    v, w = v / np.linalg.norm(v), w / np.linalg.norm(w)
    assert max_sin_theta(v, w) == pytest.approx(sin_theta(v, w), rel=1e-10)
    V = _basis(rng, 9, 3)
    assert max_sin_theta(V, V @ _orth(rng, 3)) == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(ValueError, match="same ambient dimension"):
        max_sin_theta(V, _basis(rng, 8, 3))


# ------------------------------------------------------------------------------------------------
# aligned distance (paper 000)
# ------------------------------------------------------------------------------------------------


def test_aligned_distance_zero_under_rotation_and_sign(rng):
    V = _basis(rng, 12, 4)
    Q = _orth(rng, 4)
    assert aligned_distance(V @ Q, V) == pytest.approx(0.0, abs=1e-12)
    # the literal (unaligned) quantity is not zero
    assert aligned_distance(V @ Q, V, alignment="none") > 0.1
    flips = np.array([1.0, -1.0, -1.0, 1.0])
    assert aligned_distance(V * flips, V, alignment="sign") == pytest.approx(0.0, abs=1e-12)
    assert aligned_distance(V * flips, V, alignment="none") == pytest.approx(8.0)
    v = V[:, 0]
    assert aligned_distance(-v, v) == pytest.approx(0.0, abs=1e-12)


def test_aligned_distance_matches_brute_force(rng):
    d, k = 8, 3
    V, S = _basis(rng, d, k), _basis(rng, d, k)
    # brute force: the Procrustes minimiser from the SVD of V^T S, and the principal-angle form
    Uo, _, Wt = np.linalg.svd(V.T @ S)
    Q = Uo @ Wt
    expected = np.linalg.norm(V @ Q - S, "fro") ** 2
    got = aligned_distance(V, S)
    assert got == pytest.approx(expected, rel=1e-10)
    angles = principal_angles(V, S)
    assert got == pytest.approx(2 * np.sum(1 - np.cos(angles)), rel=1e-10)
    # no orthogonal Q does better than the minimiser
    for _ in range(20):
        assert np.linalg.norm(V @ _orth(rng, k) - S, "fro") ** 2 >= got - 1e-12
    # bounded by the squared projection distance (Lemma 2 direction) and by 2k
    assert got <= projection_distance(V, S) ** 2 + 1e-12
    assert got <= 2 * k
    assert aligned_distance(V, S, squared=False) == pytest.approx(np.sqrt(got))
    # k = 1: minimum over the sign
    v, s = V[:, 0], S[:, 0]
    k1 = min(np.sum((v - s) ** 2), np.sum((v + s) ** 2))
    assert aligned_distance(v, s) == pytest.approx(k1, rel=1e-12)
    assert aligned_distance(v, s, alignment="sign") == pytest.approx(k1, rel=1e-12)
    # sign alignment is a restriction of Procrustes, so never smaller
    assert aligned_distance(V, S, alignment="sign") >= got - 1e-12


def test_aligned_distance_errors(rng):
    V = _basis(rng, 6, 2)
    with pytest.raises(ValueError, match="same number of components"):
        aligned_distance(V, _basis(rng, 6, 3))
    with pytest.raises(ValueError, match="same ambient dimension"):
        aligned_distance(V, _basis(rng, 7, 2))
    with pytest.raises(ValueError, match="'alignment'.*'rotate'"):
        aligned_distance(V, V, alignment="rotate")
    with pytest.raises(TypeError, match="'squared'"):
        aligned_distance(V, V, squared="yes")


# ------------------------------------------------------------------------------------------------
# captured energy / variance
# ------------------------------------------------------------------------------------------------


def test_captured_energy_top_eigenvectors_is_one(rng):
    A = _psd(rng, 10)
    vals, vecs = np.linalg.eigh(A)
    top = vecs[:, ::-1][:, :3]
    assert captured_energy(top, A) == pytest.approx(1.0, rel=1e-12)
    assert captured_energy(top @ _orth(rng, 3), A) == pytest.approx(1.0, rel=1e-12)
    assert captured_energy(top, A, V_star=top) == pytest.approx(1.0, rel=1e-12)


def test_captured_energy_below_one_otherwise(rng):
    A = _psd(rng, 10)
    vals, vecs = np.linalg.eigh(A)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    for _ in range(5):
        V = _basis(rng, 10, 3)
        e = captured_energy(V, A)
        expected = np.trace(V.T @ A @ V) / np.sum(vals[:3])
        assert e == pytest.approx(expected, rel=1e-12)
        assert 0 < e < 1
    # the next eigenvectors capture exactly their eigenvalues' share
    bottom = vecs[:, 3:6]
    assert captured_energy(bottom, A) == pytest.approx(np.sum(vals[3:6]) / np.sum(vals[:3]))


def test_captured_energy_from_data_matches_matrix(rng):
    X = rng.standard_normal((50, 8)) * np.linspace(3, 0.2, 8)
    A = X.T @ X
    V = _basis(rng, 8, 2)
    e = captured_energy(V, A)
    assert captured_energy(V, X=X) == pytest.approx(e, rel=1e-12)
    assert captured_energy(V, X=scipy.sparse.csr_array(X)) == pytest.approx(e, rel=1e-12)
    assert captured_energy(V, scipy.sparse.csr_array(A)) == pytest.approx(e, rel=1e-12)
    # wide X (n < d): denominator through X X^T
    Xw = rng.standard_normal((5, 8))
    Aw = Xw.T @ Xw
    assert captured_energy(V, X=Xw) == pytest.approx(captured_energy(V, Aw), rel=1e-10)
    assert captured_variance(V, A) == pytest.approx(np.trace(V.T @ A @ V), rel=1e-12)
    assert captured_variance(V, X=X) == pytest.approx(np.linalg.norm(X @ V) ** 2, rel=1e-12)
    assert captured_variance(V.T, A, layout="rows") == pytest.approx(captured_variance(V, A))


def test_captured_energy_with_given_reference(rng):
    A = _psd(rng, 8)
    V, R = _basis(rng, 8, 2), _basis(rng, 8, 2)
    expected = np.trace(V.T @ A @ V) / np.trace(R.T @ A @ R)
    assert captured_energy(V, A, V_star=R) == pytest.approx(expected, rel=1e-12)


def test_captured_energy_errors(rng):
    A = _psd(rng, 6)
    V = _basis(rng, 6, 2)
    with pytest.raises(ValueError, match="exactly one of"):
        captured_energy(V)
    with pytest.raises(ValueError, match="exactly one of"):
        captured_energy(V, A, X=rng.standard_normal((4, 6)))
    with pytest.raises(ValueError, match="'A'.*shape"):
        captured_energy(V, _psd(rng, 5))
    with pytest.raises(ValueError, match="'A'.*square"):
        captured_energy(V, np.ones((6, 5)))
    with pytest.raises(ValueError, match="'A'.*symmetric"):
        captured_energy(V, A + np.triu(np.ones((6, 6)), 1))
    with pytest.raises(ValueError, match="'X'.*columns"):
        captured_energy(V, X=rng.standard_normal((4, 5)))
    with pytest.raises(ValueError, match="same number of components"):
        captured_energy(V, A, V_star=_basis(rng, 6, 3))
    with pytest.raises(ValueError, match="undefined"):
        captured_energy(V, np.zeros((6, 6)))
    with pytest.raises(ValueError, match="'A'.*finite"):
        B = A.copy()
        B[0, 0] = np.inf
        captured_variance(V, B)


# ------------------------------------------------------------------------------------------------
# factorization errors (paper 002)
# ------------------------------------------------------------------------------------------------


def test_best_rank_k_error_against_truncated_svd(rng):
    A = rng.standard_normal((9, 6))
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    for k in range(0, 7):
        Ak = (U[:, :k] * s[:k]) @ Vt[:k]
        assert best_rank_k_error(A, k) == pytest.approx(np.linalg.norm(A - Ak, "fro"), abs=1e-12)
        assert best_rank_k_error(A, k, "spectral") == pytest.approx(
            np.linalg.norm(A - Ak, 2), abs=1e-12
        )
        assert best_rank_k_error(A, k, 2) == best_rank_k_error(A, k, "spectral")


def test_total_and_additive_error(rng):
    A = rng.standard_normal((10, 7))
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    k = 3
    Uk, sk, Vk = U[:, :k], s[:k], Vt[:k].T
    # the truncated SVD is optimal: additive error 0, total error = optimal error
    for ord_ in ("fro", "spectral"):
        assert additive_error(A, Uk, sk, Vk, ord=ord_) == pytest.approx(0.0, abs=1e-12)
        assert total_error(A, Uk, sk, Vk, ord_) == pytest.approx(
            best_rank_k_error(A, k, ord_), rel=1e-12
        )
    # S as a matrix and V in rows layout give the same numbers
    assert total_error(A, Uk, np.diag(sk), Vt[:k], layout="rows") == pytest.approx(
        total_error(A, Uk, sk, Vk), rel=1e-14
    )
    # a perturbed factorization: brute force reconstruction, positive additive error
    Up = Uk + 0.1 * rng.standard_normal(Uk.shape)
    M = rng.standard_normal((k, k))
    recon = Up @ M @ Vk.T
    expected_total = np.linalg.norm(A - recon, "fro")
    assert total_error(A, Up, M, Vk) == pytest.approx(expected_total, rel=1e-12)
    add = additive_error(A, Up, M, Vk)
    assert add == pytest.approx(expected_total - best_rank_k_error(A, k), rel=1e-12)
    assert add > 0
    assert additive_error(A, Up, M, Vk, k=1) == pytest.approx(
        expected_total - best_rank_k_error(A, 1), rel=1e-12
    )
    sp = np.linalg.norm(A - recon, 2) - np.linalg.norm(A - (Uk * sk) @ Vk.T, 2)
    assert additive_error(A, Up, M, Vk, ord=2) == pytest.approx(sp, rel=1e-12)


def test_additive_error_rank_k_input_equals_total_error(rng):
    # paper 002's J.1 inputs have rank exactly k: additive error = total error
    A = rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6))
    U, S, V = _basis(rng, 8, 3), rng.standard_normal(3), _basis(rng, 6, 3)
    assert additive_error(A, U, S, V) == pytest.approx(total_error(A, U, S, V), rel=1e-9)


def test_factorization_errors_bad_input(rng):
    A = rng.standard_normal((6, 5))
    U, S, V = rng.standard_normal((6, 2)), np.ones(2), rng.standard_normal((5, 2))
    with pytest.raises(ValueError, match="'U'.*n=6"):
        total_error(A, U[:5], S, V)
    with pytest.raises(ValueError, match="'V'.*d=5"):
        total_error(A, U, S, V[:4])
    with pytest.raises(ValueError, match="'S'.*length"):
        total_error(A, U, np.ones(3), V)
    with pytest.raises(ValueError, match=r"'S'.*\(2, 2\)"):
        total_error(A, U, np.ones((2, 3)), V)
    with pytest.raises(ValueError, match="'ord'.*'nuc'"):
        total_error(A, U, S, V, "nuc")
    with pytest.raises(ValueError, match="'k'.*7"):
        best_rank_k_error(A, 7)
    with pytest.raises(ValueError, match="'k'.*-1"):
        additive_error(A, U, S, V, k=-1)
    with pytest.raises(TypeError, match="'k'"):
        best_rank_k_error(A, 1.5)
    with pytest.raises(ValueError, match="'A'.*2-D"):
        best_rank_k_error(np.ones(4), 1)
    with pytest.raises(ValueError, match="'A'.*finite"):
        B = A.copy()
        B[1, 1] = np.nan
        total_error(B, U, S, V)


# ------------------------------------------------------------------------------------------------
# downstream accuracy
# ------------------------------------------------------------------------------------------------


def _two_blobs(rng, n, d):
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, d))
    X[:, 0] += 4.0 * (2 * y - 1)
    return X, y


@pytest.mark.parametrize("classifier", ["logistic", "linear_svm"])
def test_downstream_accuracy_separable_vs_noise_direction(rng, classifier):
    X, y = _two_blobs(rng, 300, 5)
    Xt, yt = _two_blobs(rng, 200, 5)
    good = np.eye(5)[:, :1]  # the separating direction
    bad = np.eye(5)[:, 1:2]  # pure noise
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no convergence warnings on this easy problem
        acc_good = downstream_accuracy(X @ good, y, Xt @ good, yt, classifier=classifier)
        acc_bad = downstream_accuracy(X @ bad, y, Xt @ bad, yt, classifier=classifier)
    assert acc_good > 0.97
    assert acc_bad < 0.7
    # deterministic
    assert acc_good == downstream_accuracy(X @ good, y, Xt @ good, yt, classifier=classifier)
    # brute force: accuracy is the fraction of matching predictions of the same classifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    clf = (
        LogisticRegression(max_iter=1000, random_state=0)
        if classifier == "logistic"
        else LinearSVC(dual="auto", max_iter=5000, random_state=0)
    )
    pred = clf.fit(X @ good, y).predict(Xt @ good)
    assert acc_good == pytest.approx(np.mean(pred == yt))


def test_downstream_accuracy_errors(rng):
    Z, y = rng.standard_normal((20, 3)), rng.integers(0, 2, 20)
    with pytest.raises(ValueError, match="'classifier'.*'rbf'"):
        downstream_accuracy(Z, y, Z, y, classifier="rbf")
    with pytest.raises(ValueError, match="same number of columns"):
        downstream_accuracy(Z, y, Z[:, :2], y)
    with pytest.raises(ValueError, match="'y_test'.*one label per row"):
        downstream_accuracy(Z, y, Z, y[:10])
    with pytest.raises(ValueError, match="two classes"):
        downstream_accuracy(Z, np.zeros(20), Z, y)
    with pytest.raises(ValueError, match="'Z_train'.*2-D"):
        downstream_accuracy(Z[:, 0], y, Z, y)
    with pytest.raises(TypeError, match="'random_state'"):
        downstream_accuracy(Z, y, Z, y, random_state=1.5)
