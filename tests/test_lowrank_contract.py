"""Contract tests over every registered low-rank method, and the DPLowRank estimator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

import dpspectral
from dpspectral import DPPCA, Accountant, BudgetExceededError, DPLowRank, methods
from dpspectral.lowrank import Sketch
from dpspectral.privacy import epsilon_of

LOWRANK = methods(task="lowrank")
IDS = [m.name for m in LOWRANK]


@pytest.fixture
def matrix() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.uniform(0.0, 1.0, size=(60, 25))


def _run(method, A, k, seed, **kw):
    params: dict = {"random_state": seed}
    if "sketch" in method.options and method.needs_delta:  # public randomness: reproducible when declared
        params["sketch"] = Sketch(seed=seed)
    if "row_norm" in method.options:
        params["row_norm"] = 2.0
    if method.private:
        params.update(
            epsilon=1.0, delta=1e-6, relation=method.relations[0], calibration=method.default_calibration
        )
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        return method.function(A, k, **params)


def test_lowrank_methods_are_registered():
    names = set(IDS)
    assert {
        "private_frobenius_lrf",
        "private_space_optimal_lrf",
        "optimal_space_lrf",
        "hardt_roth",
        "private_local_lrf",
        "turnstile_lrf",
        "continual_lrf",
        "covariance_lrf",
    } <= names
    for m in LOWRANK:
        assert m.family == "lowrank" and m.paper and m.summary
        assert bool(m.relations) == m.private  # a non-private reference protects no relation


@pytest.mark.parametrize("method", LOWRANK, ids=IDS)
def test_shapes_orthonormality_determinism(method, matrix):
    a = _run(method, matrix, 3, seed=5)
    b = _run(method, matrix, 3, seed=5)
    m, n = (25, 25) if method.name == "covariance_lrf" else (60, 25)  # it factorizes A^T A
    assert a.U is not None or a.V is not None  # a subspace-only release (hardt_roth's default) has no U
    if a.U is not None:
        assert a.U.shape == (m, 3) and np.allclose(a.U.T @ a.U, np.eye(3), atol=1e-8)
        assert np.array_equal(a.U, b.U)
    assert a.S.shape == (3,) and a.rank == 3
    if a.V is not None:
        assert a.V.shape == (n, 3) and np.allclose(a.V.T @ a.V, np.eye(3), atol=1e-8)
        assert np.array_equal(a.V, b.V)
    assert np.all(np.diff(a.S) <= 1e-12) and np.all(a.S >= 0)
    assert np.array_equal(a.S, b.S)


@pytest.mark.parametrize(
    "method", [m for m in LOWRANK if m.private], ids=[m.name for m in LOWRANK if m.private]
)
def test_events_consistent_with_claim(method, matrix):
    p = _run(method, matrix, 2, seed=0).privacy
    assert p.events
    assert p.epsilon == pytest.approx(epsilon_of(list(p.events), p.delta, relation=p.relation))
    assert p.relation in method.relations
    assert p.certified == method.certified and (not p.certified or p.epsilon <= p.requested_epsilon)


@pytest.mark.parametrize("method", LOWRANK, ids=IDS)
def test_caller_data_untouched(method, matrix):
    before = matrix.copy()
    _run(method, matrix, 2, seed=0)
    assert np.array_equal(matrix, before)


@pytest.mark.parametrize("method", LOWRANK, ids=IDS)
def test_usable_through_the_estimator(method, matrix):
    est = DPLowRank(2, epsilon=1.0, delta=1e-6, method=method.name, random_state=0, row_norm=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        est.fit(matrix)
    if est.U_ is None:  # subspace-only: the data owner reconstructs A V V^T locally
        assert est.V_.shape == (25, 2)
        with pytest.raises(ValueError, match="needs the matrix A"):
            est.reconstruct()
        assert np.allclose(est.reconstruct(matrix), matrix @ est.V_ @ est.V_.T)
    else:
        assert est.U_.shape == ((25, 2) if method.name == "covariance_lrf" else (60, 2))
    if getattr(est.result_, "needs_data", False):  # V only, or a factorization of A^T A: A V V^T locally
        with pytest.raises(ValueError, match="needs the matrix A"):
            est.reconstruct()
        assert np.allclose(est.reconstruct(matrix), matrix @ est.V_ @ est.V_.T)
    elif est.V_ is not None:
        assert est.reconstruct().shape == matrix.shape
    else:  # a left subspace only (private_local_lrf): the error names what is missing
        with pytest.raises(ValueError, match="needs A"):
            est.reconstruct()
    assert (est.privacy_ is None) == (not method.private)


def test_estimator_shares_the_budget_across_clone(matrix):
    ledger = Accountant(epsilon=1.2, delta=1e-6)
    est = DPLowRank(2, epsilon=1.0, delta=1e-6, accountant=ledger, random_state=0)
    clone(est).fit(matrix)
    with pytest.raises(BudgetExceededError):
        clone(est).fit(matrix)
    assert len(ledger.entries) == 1


def test_estimator_errors(matrix):
    with pytest.raises(ValueError, match="'epsilon'"):
        DPLowRank(2, delta=1e-6).fit(matrix)
    with pytest.raises(ValueError, match="low-rank method"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, method="analyze_gauss").fit(matrix)
    with pytest.raises(ValueError, match="PCA method"):
        DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_frobenius_lrf").fit(matrix)
    with pytest.raises(ValueError, match="relation"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, method="private_space_optimal_lrf", relation="priv2").fit(
            matrix
        )
    with pytest.raises(ValueError, match="'k'"):
        DPLowRank(26, epsilon=1.0, delta=1e-6).fit(matrix)
    with pytest.raises(ValueError, match="method"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, method="nope").fit(matrix)
    with pytest.raises(ValueError, match="row_norm"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, method="hardt_roth").fit(matrix)


def test_one_call_stream_wrappers_match_their_one_shot_counterparts(matrix):
    from dpspectral.lowrank import private_frobenius_lrf, turnstile_lrf

    a = turnstile_lrf(matrix, 3, epsilon=1.0, delta=1e-6, random_state=4, sketch_seed=8)
    b = private_frobenius_lrf(matrix, 3, epsilon=1.0, delta=1e-6, random_state=4, sketch_seed=8)
    assert np.allclose(a.reconstruct(), b.reconstruct(), atol=1e-8)


def test_continual_and_covariance_wrappers_at_huge_epsilon(matrix):
    from dpspectral.lowrank import continual_lrf, covariance_lrf

    k = 3
    s = np.linalg.svd(matrix, compute_uv=False)
    res = continual_lrf(matrix, k, epsilon=1e9, delta=0.5, random_state=0, sketch_seed=1)  # a fixed sketch
    assert np.linalg.norm(matrix - res.reconstruct()) <= 1.25 * np.sqrt(np.sum(s[k:] ** 2))
    C = matrix.T @ matrix
    cov = covariance_lrf(matrix, k, epsilon=1e9, delta=0.5, row_norm=10.0, random_state=0, sketch_seed=1)
    w = np.linalg.eigvalsh(C)[::-1]
    assert np.linalg.norm(C - cov.gram()) <= 1.25 * np.sqrt(np.sum(w[k:] ** 2))
