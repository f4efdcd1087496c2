"""One-shot low-rank factorizations (Upadhyay 2018): solves, zero-noise accuracy, privacy, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from dpspectral import Accountant, BudgetExceededError, UncertifiedPrivacyWarning
from dpspectral.lowrank import (
    chi2_factor,
    optimal_space_lrf,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    rank_k_between,
    rank_k_left,
    sketch_sizes,
)
from dpspectral.lowrank._factorization import frobenius_noise, frobenius_sketch, frobenius_sketches
from dpspectral.privacy import epsilon_of
from dpspectral.privacy._audit import clopper_pearson, threshold_epsilon_lower_bound
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._noise import noise_source
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, release


def _opt(A: np.ndarray, k: int) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.sqrt(np.sum(s[k:] ** 2)))


def _brute_force(objective, shape_a: tuple[int, int], shape_b: tuple[int, int], seed: int) -> float:
    """Best value of ``objective(a @ b.T)`` over rank-k products, by local optimisation from 30 starts."""
    rng = np.random.default_rng(seed)
    na, nb = shape_a[0] * shape_a[1], shape_b[0] * shape_b[1]

    def f(z: np.ndarray) -> float:
        return objective(z[:na].reshape(shape_a) @ z[na:].reshape(shape_b).T)

    return min(minimize(f, rng.standard_normal(na + nb), method="BFGS").fun for _ in range(30))


@pytest.mark.parametrize("k", [1, 2])
def test_rank_k_between_equals_brute_force(k):
    rng = np.random.default_rng(k)
    C, F, R = rng.standard_normal((5, 3)), rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    X = rank_k_between(C, F, R, k)
    assert np.linalg.matrix_rank(X, tol=1e-10) <= k
    ours = np.linalg.norm(F - C @ X @ R) ** 2
    brute = _brute_force(lambda Y: np.linalg.norm(F - C @ Y @ R) ** 2, (3, k), (3, k), seed=k)
    assert ours <= brute + 1e-8
    assert ours == pytest.approx(brute, rel=1e-5)


@pytest.mark.parametrize("k", [1, 2])
def test_rank_k_left_equals_brute_force(k):
    rng = np.random.default_rng(10 + k)
    C, F = rng.standard_normal((6, 3)), rng.standard_normal((6, 5))
    X = rank_k_left(C, F, k)
    ours = np.linalg.norm(F - C @ X) ** 2
    brute = _brute_force(lambda Y: np.linalg.norm(F - C @ Y) ** 2, (3, k), (5, k), seed=k)
    assert ours <= brute + 1e-8
    assert ours == pytest.approx(brute, rel=1e-5)


def test_a_wrong_solve_is_worse_than_the_closed_form():
    # the test above can fail: the unweighted truncation [C^+ F R^+]_k is not optimal in general
    rng = np.random.default_rng(3)
    C, F, R = rng.standard_normal((5, 3)), rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    U, s, Vt = np.linalg.svd(np.linalg.pinv(C) @ F @ np.linalg.pinv(R))
    naive = (U[:, :1] * s[:1]) @ Vt[:1]
    best = rank_k_between(C, F, R, 1)
    assert np.linalg.norm(F - C @ best @ R) < np.linalg.norm(F - C @ naive @ R) - 1e-6


def test_chi2_factor_is_a_valid_tail_bound():
    # P[chi2_d / d > c_d(delta_s)] <= delta_s, checked against the exact chi-square tail
    from scipy import stats

    for d in (5, 40, 400):
        for ds in (1e-2, 1e-6):
            assert stats.chi2.sf(d * chi2_factor(d, ds), d) <= ds
    with pytest.raises(ValueError, match="delta_s"):
        chi2_factor(5, 0.0)


def test_sketch_sizes_defaults_and_caps():
    assert sketch_sizes(10, 0.25, 100, 1000) == sketch_sizes(10, 0.25, 100, 1000, subspace_sketch_size=40,
                                                          affine_sketch_size=160)
    small = sketch_sizes(10, 0.1, 50, 60)
    assert small.t == 50 and small.v == 60
    with pytest.raises(ValueError, match="alpha"):
        sketch_sizes(10, 1.5, 100, 100)
    with pytest.raises(ValueError, match="'subspace_sketch_size'"):
        sketch_sizes(10, 0.25, 100, 100, subspace_sketch_size=5)


def _uniform(m: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 100.0, size=(m, n))


@pytest.mark.parametrize("shape", [(60, 200), (200, 60)])
def test_optimal_space_lrf_is_one_plus_alpha_optimal(shape):
    A, k, alpha = _uniform(*shape, seed=1), 5, 0.25
    ratios = [
        np.linalg.norm(A - optimal_space_lrf(A, k, alpha=alpha, random_state=s).reconstruct()) / _opt(A, k)
        for s in range(5)
    ]
    assert max(ratios) <= 1 + alpha
    res = optimal_space_lrf(A, k, random_state=0)
    assert res.U.shape == (shape[0], k) and res.V is not None and res.V.shape == (shape[1], k)
    assert np.allclose(res.U.T @ res.U, np.eye(k)) and np.allclose(res.V.T @ res.V, np.eye(k))
    assert np.all(np.diff(res.S) <= 0) and res.privacy is None


def test_optimal_space_lrf_sparse_sketches_and_sparse_input():
    import scipy.sparse as sp

    A = _uniform(80, 300, seed=2)
    for kind in ("srht", "countsketch"):
        r = optimal_space_lrf(A, 3, alpha=0.2, sketch=kind, random_state=0)
        assert np.linalg.norm(A - r.reconstruct()) / _opt(A, 3) < 3.0
    dense = optimal_space_lrf(A, 3, random_state=4)
    sparse = optimal_space_lrf(sp.csr_matrix(A), 3, random_state=4)
    assert np.allclose(dense.reconstruct(), sparse.reconstruct())


@pytest.mark.parametrize("fn", [private_frobenius_lrf, private_space_optimal_lrf])
@pytest.mark.parametrize("shape", [(40, 120), (120, 40)])
def test_zero_noise_limit_is_one_plus_alpha_optimal(fn, shape):
    A, k, alpha = _uniform(*shape, seed=3), 4, 0.25
    res = fn(A, k, epsilon=1e9, delta=0.5, alpha=alpha, random_state=0, sketch_seed=0)  # a fixed sketch
    assert np.linalg.norm(A - res.reconstruct()) <= (1 + alpha) * _opt(A, k)
    assert res.U.shape == (shape[0], k) and res.V.shape == (shape[1], k)
    assert np.allclose(res.U.T @ res.U, np.eye(k), atol=1e-8)


@pytest.mark.parametrize("fn", [private_frobenius_lrf, private_space_optimal_lrf])
def test_private_runs_are_certified_deterministic_and_leave_the_data(fn):
    A = _uniform(30, 50, seed=4)
    before = A.copy()
    # reproducible when both the secret random_state and the public sketch seed are given
    a = fn(A, 3, epsilon=1.0, delta=1e-6, random_state=7, sketch_seed=3)
    b = fn(A, 3, epsilon=1.0, delta=1e-6, random_state=7, sketch_seed=3)
    assert np.array_equal(a.U, b.U) and np.array_equal(a.S, b.S)
    assert np.array_equal(A, before)
    p = a.privacy
    assert p.certified and p.epsilon <= 1.0 and p.epsilon > 0.99
    assert p.epsilon == pytest.approx(epsilon_of(list(p.events), 1e-6, relation=p.relation))


def test_error_grows_as_epsilon_shrinks():
    A = _uniform(50, 80, seed=5)
    errs = [
        np.mean(
            [
                np.linalg.norm(
                    A - private_frobenius_lrf(
                        A, 3, epsilon=e, delta=1e-6, random_state=s, sketch_seed=s
                    ).reconstruct()
                )
                for s in range(3)
            ]
        )
        for e in (0.05, 1.0, 100.0)
    ]
    assert errs[0] > errs[1] > errs[2]


def test_accountant_spends_and_refuses_before_noise():
    A = _uniform(20, 30, seed=6)
    ledger = Accountant(epsilon=1.2, delta=1e-6)
    private_frobenius_lrf(A, 2, epsilon=1.0, delta=1e-6, accountant=ledger, random_state=0)
    assert len(ledger.entries) == 1 and ledger.relation.value == "priv2"
    with pytest.raises(BudgetExceededError):
        private_frobenius_lrf(A, 2, epsilon=1.0, delta=1e-6, accountant=ledger, random_state=0)
    assert len(ledger.entries) == 1


def test_paper_calibrations_are_reported_honestly():
    A = _uniform(20, 40, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertifiedPrivacyWarning)
        try:
            r = private_frobenius_lrf(A, 2, epsilon=1.0, delta=1e-6, calibration="paper", random_state=0)
            certified = r.privacy.certified
        except UncertifiedPrivacyWarning:
            certified = False
    # rho_1 = sqrt((1+alpha) ln(1/delta))/epsilon is below the analytic Gaussian noise for our sensitivity
    assert not certified
    with pytest.warns(UncertifiedPrivacyWarning):
        r = private_frobenius_lrf(A, 2, epsilon=1.0, delta=1e-6, calibration="paper", random_state=0)
    assert r.privacy.epsilon > 1.0 and not r.privacy.certified


def test_bad_input():
    A = _uniform(10, 12, seed=8)
    with pytest.raises(ValueError, match="'k'"):
        private_frobenius_lrf(A, 11, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        private_frobenius_lrf(np.where(A > 50, np.nan, A), 2, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="2-D"):
        private_frobenius_lrf(A[0], 1, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="epsilon"):
        private_frobenius_lrf(A, 2, epsilon=-1.0, delta=1e-6)
    with pytest.raises(ValueError, match="delta"):
        private_frobenius_lrf(A, 2, epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="relation"):
        private_space_optimal_lrf(A, 2, epsilon=1.0, delta=1e-6, relation="priv2")
    with pytest.raises(ValueError, match="bound"):
        private_frobenius_lrf(A, 2, epsilon=1.0, delta=1e-6, bound=0.0)
    with pytest.raises(ValueError, match="sketch"):
        optimal_space_lrf(A, 2, sketch="fourier")


# -- statistical audit of the Priv2 sketches ---------------------------------------------------------------


_AUDIT_M, _AUDIT_N = 30, 30
_AUDIT_SIZES = sketch_sizes(1, 0.5, 30, 30, subspace_sketch_size=20, affine_sketch_size=30)


def _audit_statistics(sigma: float, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The likelihood-ratio statistic of (Y_c, Z) on A0 = 0 and A1 = e_1 e_1^T (||A1 - A0||_F = 1).

    Fresh public sketches every run (the guarantee is over their randomness): the statistic projects the
    release on the shift (E Phi, S E) of that run's sketches, normalised to unit noise.
    """
    m, n, sizes = _AUDIT_M, _AUDIT_N, _AUDIT_SIZES
    E = np.zeros((m, n))
    E[0, 0] = 1.0
    seeds = np.random.SeedSequence(seed).generate_state(2 * runs)
    out = []
    # the sketch pair's noise, drawn through the release pipeline (nothing charged: no accountant)
    plan = ReleasePlan("audit", Relation.PRIV2, (), (NoisyRelease("sketches", "gaussian", sigma, 1.0),))
    for j, A in enumerate((np.zeros((m, n)), E)):
        stats_ = []
        for s in seeds[j * runs : (j + 1) * runs]:
            rng = np.random.default_rng(int(s))
            Phi, S = frobenius_sketches(m, n, sizes, int(rng.integers(2**62)))
            with release(plan, None, noise_source(rng)) as releaser:
                Y_c, Z = frobenius_sketch(A, Phi, S, releaser)
            shift = np.concatenate([(E @ Phi).ravel(), (S @ E).ravel()])
            stats_.append(np.concatenate([Y_c.ravel(), Z.ravel()]) @ shift / (np.linalg.norm(shift) * sigma))
        out.append(np.array(stats_))
    return out[0], out[1]


@pytest.mark.parametrize(("noise_factor", "flagged"), [(1.0, False), (0.1, True)])
def test_priv2_sketch_audit(noise_factor, flagged):
    # Claimed (1, 1e-6). The statistic is N(0, 1) on A0 and N(shift / sigma, 1) on A1 (shift ~ sqrt(2));
    # the threshold (2 noise sds) is fixed in advance. The negative control runs with a tenth of the
    # calibrated noise and must be flagged. False-positive rate of the lower bound: alpha = 1e-3.
    sigma = frobenius_noise(1.0, 1e-6, _AUDIT_SIZES).sigma * noise_factor
    t0, t1 = _audit_statistics(sigma, runs=6000, seed=11)
    lb = threshold_epsilon_lower_bound(t0, t1, threshold=2.0, delta=1e-6, alpha=1e-3)
    assert (lb > 1.0) is flagged
    # a sanity check on the sample itself: the A0 statistic is standard normal
    lo, hi = clopper_pearson(int(np.sum(t0 > 1.0)), t0.size, 1e-3)
    assert lo <= 0.1587 <= hi


def test_priv2_sensitivity_bound_is_tight_in_the_mean():
    # E ||E Phi||^2 + ||S E||^2 = 2 ||E||_F^2: the calibrated Delta^2 = c_t + c_v exceeds it
    sizes = sketch_sizes(1, 0.5, 50, 50, subspace_sketch_size=20, affine_sketch_size=30)
    noise = frobenius_noise(1.0, 1e-6, sizes)
    assert noise.sensitivity**2 > 2.0
    assert noise.sensitivity == pytest.approx(math.sqrt(chi2_factor(20, 5e-8) + chi2_factor(30, 5e-8)))
