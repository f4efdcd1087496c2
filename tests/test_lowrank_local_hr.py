"""Private-Local-LRF (local model, spec §8) and the Hardt–Roth 2012 baseline (spec §9)."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dpspectral import Accountant, BudgetExceededError, Relation, UncertifiedPrivacyWarning
from dpspectral.local._lowrank import (
    LocalLrfNoise,
    LocalLrfReport,
    _protocol_plan,
    _simulate_reports,
    local_lrf_aggregate,
    local_lrf_noise,
    local_lrf_report,
    local_lrf_setup,
    private_local_lrf,
)
from dpspectral.lowrank import RangeFinder, Sketch
from dpspectral.lowrank._hardt_roth import hardt_roth, hardt_roth_noise
from dpspectral.lowrank._sketches import chi2_factor, chi2_quantile_factor
from dpspectral.privacy import analytic_noise_multiplier, epsilon_of, gaussian_epsilon
from dpspectral.privacy._accounting import EpsilonDeltaDpEvent
from dpspectral.privacy._audit import gaussian_audit, run_pair, threshold_epsilon_lower_bound
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._noise import SeededNoise
from dpspectral.privacy._pipeline import release

ALPHA = 1e-3  # false-positive rate of every audit bound (see dpspectral.privacy._audit)
HUGE = dict(epsilon=1e12, delta=0.5)  # zero-noise limit: noise multiplier ~7e-7


def low_rank(m: int, n: int, k: int, seed: int, noise: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, k)) @ rng.normal(size=(k, n)) + noise * rng.normal(size=(m, n))
    return A / np.linalg.norm(A, axis=1).max()  # every row within row_norm = 1


def tail(A: np.ndarray, k: int) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.sqrt(np.sum(s[k:] ** 2)))


def proj_error(A: np.ndarray, U: np.ndarray) -> float:
    return float(np.linalg.norm(A - U @ (U.T @ A)))


def proj_dist(U: np.ndarray, W: np.ndarray) -> float:
    return float(np.linalg.norm(U @ U.T - W @ W.T))


# ================================================================================================
# Private-Local-LRF
# ================================================================================================
def test_setup_is_seeded_public_and_read_only():
    a = local_lrf_setup(50, 30, 3, seed=11)
    b = local_lrf_setup(50, 30, 3, seed=11)
    c = local_lrf_setup(50, 30, 3, seed=12)
    assert (a.t, a.v) == (12, 30)  # t = ceil(k/alpha); v = ceil(k/alpha^2) = 48 capped at min(m, n)
    assert a.Phi.shape == (30, 12) and a.S.shape == (30, 50) and a.T.shape == (30, 30)
    assert all(np.array_equal(x, y) for x, y in ((a.Phi, b.Phi), (a.S, b.S), (a.T, b.T)))
    assert not np.allclose(a.S, c.S)
    with pytest.raises(ValueError, match="read-only"):
        a.S[0, 0] = 1.0
    # N(0, 1/rows) entries: variance test of all the entries at once (two-sided rate 1e-6)
    big = local_lrf_setup(400, 300, 10, subspace_sketch_size=100, affine_sketch_size=200, seed=3)
    for M, rows in ((big.Phi.T, 100), (big.S, 200), (big.T, 200)):
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], M.size)
        assert lo <= float(np.sum(M**2)) * rows <= hi
    with pytest.raises(ValueError, match="'k'"):
        local_lrf_setup(5, 3, 4)
    with pytest.raises(ValueError, match="'subspace_sketch_size'"):
        local_lrf_setup(50, 30, 3, subspace_sketch_size=31)
    with pytest.raises(ValueError, match="'seed'"):
        local_lrf_setup(50, 30, 3, seed=-1)


def test_sensitivities_and_chi_square_factors():
    t, v, delta = 12, 30, 1e-6
    nz = local_lrf_noise(1.0, delta, t, v, row_norm=2.0)
    delta_s = 0.1 * delta / 3
    q_t, q_v = chi2_quantile_factor(t, delta_s), chi2_quantile_factor(v, delta_s)
    b = 2 * sensitivity_norm(2.0)
    assert nz.sensitivity_y == pytest.approx(b * math.sqrt(q_t))
    assert nz.sensitivity_z == pytest.approx(b * q_v)
    assert nz.sensitivity == pytest.approx(b * math.sqrt(q_t + q_v**2))
    assert nz.sketch_delta == pytest.approx(0.1 * delta)
    # the exact quantile is below Laurent-Massart, and is the exact chi^2_d / d tail
    for d in (1, 2, 5, 30, 200):
        assert chi2_quantile_factor(d, 1e-7) <= chi2_factor(d, 1e-7)
        assert stats.chi2.sf(d * chi2_quantile_factor(d, 1e-7), d) == pytest.approx(1e-7, rel=1e-6)
    # Monte Carlo: ||Phi^T x||^2 / ||x||^2 is chi^2_t / t for a fixed x (KS test, rate 1e-6)
    rng = np.random.default_rng(0)
    x = rng.normal(size=7)
    r = np.array([np.sum(((rng.normal(size=(t, 7)) / math.sqrt(t)) @ x) ** 2) for _ in range(2000)])
    r = r * t / float(x @ x)
    assert stats.kstest(r, stats.chi2(t).cdf).pvalue > 1e-6


def test_report_shapes_communication_and_noise_law():
    # chi-square test of the noise variance of y and Z (two-sided rates 1e-6), mean test of the
    # clean part (4e-8 per entry), on a row above row_norm that the user clips; seeded.
    setup = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    x = np.arange(1.0, 7.0)
    before = x.copy()
    c = x * 1.5 / np.linalg.norm(x)
    y_clean, Z_clean = c @ setup.Phi, np.outer(setup.S[:, 3], setup.T @ c)
    nz = local_lrf_noise(1.0, 1e-6, 3, 4, row_norm=1.5)
    reps = 400
    R = [local_lrf_report(x, 3, setup, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=s) for s in range(reps)]
    assert np.array_equal(x, before)
    r0 = R[0]
    assert isinstance(r0, LocalLrfReport) and r0.i == 3
    assert r0.y.shape == (3,) and r0.Z.shape == (4, 4)
    assert r0.as_vector().size == setup.communication_floats == 3 + 16
    assert setup.communication_bytes == 8 * 19
    Ey = np.array([r.y for r in R]) - y_clean
    EZ = np.array([r.Z for r in R]) - Z_clean
    for E, sigma in ((Ey, nz.sigma_y), (EZ, nz.sigma_z)):
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], E.size)
        assert lo <= float(np.sum(E**2)) / sigma**2 <= hi
        assert np.all(np.abs(E.mean(axis=0)) <= 5.5 * sigma / math.sqrt(reps))
    assert nz.sigma_y == nz.sigma_z == pytest.approx(
        analytic_noise_multiplier(1.0, 1e-6 * 0.9) * nz.sensitivity)
    # seeded
    a = local_lrf_report(x, 3, setup, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=9)
    b = local_lrf_report(x, 3, setup, epsilon=1.0, delta=1e-6, row_norm=1.5, rng=9)
    assert np.array_equal(a.as_vector(), b.as_vector())


def test_report_validation():
    setup = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
    ok = np.full(6, 0.1)
    with pytest.raises(ValueError, match="'row'.*length n=6"):
        local_lrf_report(np.zeros(5), 0, setup, **kw)
    with pytest.raises(ValueError, match="'row'.*length n=6"):
        local_lrf_report(np.zeros((1, 6)), 0, setup, **kw)
    with pytest.raises(ValueError, match="NaN or infinity"):
        local_lrf_report(np.r_[np.nan, ok[1:]], 0, setup, **kw)
    with pytest.raises(TypeError, match="'row'.*numeric"):
        local_lrf_report(np.array(["a"] * 6), 0, setup, **kw)
    with pytest.raises(ValueError, match="'user_index'"):
        local_lrf_report(ok, 8, setup, **kw)
    with pytest.raises(TypeError, match="'setup'"):
        local_lrf_report(ok, 0, None, **kw)
    with pytest.raises(ValueError, match="some row has Euclidean norm above"):
        local_lrf_report(np.ones(6), 0, setup, on_norm_violation="raise", **kw)
    with pytest.raises(ValueError, match="'epsilon'"):
        local_lrf_report(ok, 0, setup, epsilon=0.0, delta=1e-6, row_norm=1.0)
    with pytest.raises(ValueError, match="'delta'"):
        local_lrf_report(ok, 0, setup, epsilon=1.0, delta=0.0, row_norm=1.0)


@pytest.mark.parametrize("simulate_sum", [False, True])
def test_zero_noise_recovers_a_rank_k_subspace(simulate_sum):
    A = low_rank(200, 30, 3, seed=1)
    res = private_local_lrf(A, 3, random_state=0, simulate_sum=simulate_sum, sketch_seed=0, **HUGE)
    assert res.U.shape == (200, 3) and res.V is None and res.S.shape == (3,)
    assert np.allclose(res.U.T @ res.U, np.eye(3), atol=1e-10)
    assert np.all(np.diff(res.S) <= 0)
    assert proj_error(A, res.U) <= 1e-3 * np.linalg.norm(A)
    with pytest.raises(ValueError, match="left subspace"):
        res.reconstruct()


def test_zero_noise_general_matrix_is_near_optimal():
    A = low_rank(200, 30, 3, seed=2, noise=0.05)
    res = private_local_lrf(A, 3, random_state=0, alpha=0.25, sketch_seed=0, **HUGE)  # a fixed sketch
    assert proj_error(A, res.U) <= (1 + 2 * 0.25) * tail(A, 3)  # (1 + O(alpha))-optimal


def test_reports_then_aggregate_is_the_protocol():
    A = low_rank(40, 12, 2, seed=3)
    m, n = A.shape
    setup = local_lrf_setup(m, n, 2, seed=77)
    seeds = np.random.SeedSequence(1).spawn(m)
    reports = [local_lrf_report(A[i], i, setup, row_norm=1.0, rng=np.random.default_rng(seeds[i]), **HUGE)
               for i in range(m)]
    res = local_lrf_aggregate(reversed(reports), setup, 2)  # order does not matter
    assert res.V is None and res.privacy is None and res.diagnostics["n_reports"] == m
    whole = private_local_lrf(A, 2, sketch_seed=77, random_state=0, **HUGE)
    assert whole.diagnostics["sketch_seed"] == 77
    assert proj_error(A, res.U) <= 1e-3 * np.linalg.norm(A)
    assert proj_dist(res.U, whole.U) < 1e-3
    assert np.allclose(res.S, whole.S, rtol=1e-3)
    # with real noise, the same reports aggregate to something else
    noisy = [local_lrf_report(A[i], i, setup, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=i) for i in range(m)]
    assert proj_dist(local_lrf_aggregate(noisy, setup, 2).U, whole.U) > 0.1


def test_aggregate_validates_its_input():
    setup = local_lrf_setup(4, 3, 1, subspace_sketch_size=2, affine_sketch_size=2, seed=0)
    good = [LocalLrfReport(i, np.zeros(2), np.zeros((2, 2))) for i in range(4)]
    with pytest.raises(ValueError, match="1 are missing"):
        local_lrf_aggregate(good[:3], setup, 1)
    with pytest.raises(ValueError, match="out of range or repeated"):
        local_lrf_aggregate([*good, good[0]], setup, 1)
    with pytest.raises(ValueError, match="out of range or repeated"):
        local_lrf_aggregate([*good[:3], LocalLrfReport(4, np.zeros(2), np.zeros((2, 2)))], setup, 1)
    with pytest.raises(ValueError, match="expects"):
        local_lrf_aggregate([*good[:3], LocalLrfReport(3, np.zeros(3), np.zeros((2, 2)))], setup, 1)
    with pytest.raises(ValueError, match="NaN"):
        local_lrf_aggregate([*good[:3], LocalLrfReport(3, np.zeros(2), np.full((2, 2), np.nan))], setup, 1)
    with pytest.raises(TypeError, match="LocalLrfReport"):
        local_lrf_aggregate([(np.zeros(2), np.zeros((2, 2)))] * 4, setup, 1)
    with pytest.raises(ValueError, match="'k'"):
        local_lrf_aggregate(good, setup, 4)
    assert local_lrf_aggregate(good, setup, 1).U.shape == (4, 1)


def _simulate(A, setup, sigma_y, sigma_z, rng, simulate_sum):
    """The users' reports as the server receives them, through the protocol's release plan."""
    noise = LocalLrfNoise(sigma_y=sigma_y, sigma_z=sigma_z, sensitivity_y=1.0, sensitivity_z=1.0,
                          sketch_delta=0.0, events=())
    plan = _protocol_plan(Relation.LOCAL, noise, m=setup.m, simulate_sum=simulate_sum, notes=[])
    with release(plan, None, SeededNoise(rng)) as releaser:
        return _simulate_reports(A, setup, releaser, simulate_sum)


def test_simulate_sum_draws_the_same_law():
    # The server's Z minus S A T^T is the sum of the m users' noises: i.i.d. N(0, m sigma_z^2) in both
    # modes (chi-square tests of the variance, two-sided rate 1e-6; F-test between the modes, 1e-6);
    # Y_c's noise is N(0, sigma_y^2) per entry.
    m, n, reps = 50, 6, 150
    setup = local_lrf_setup(m, n, 2, subspace_sketch_size=3, affine_sketch_size=5, seed=4)
    A = low_rank(m, n, 2, seed=4)
    clean_Z = setup.S @ A @ setup.T.T
    sigma_y, sigma_z = 0.7, 0.3
    sums = {}
    for mode in (False, True):
        rng = np.random.default_rng(10 + int(mode))
        EZ, EY = [], []
        for _ in range(reps):
            Y_c, Z = _simulate(A, setup, sigma_y, sigma_z, rng, mode)
            EZ.append(Z - clean_Z)
            EY.append(Y_c - A @ setup.Phi)
        for E, var in ((np.array(EZ), m * sigma_z**2), (np.array(EY), sigma_y**2)):
            lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], E.size)
            assert lo <= float(np.sum(E**2)) / var <= hi, mode
        sums[mode] = float(np.sum(np.array(EZ) ** 2))
    dof = reps * setup.v**2
    lo, hi = stats.f.ppf([5e-7, 1 - 5e-7], dof, dof)
    assert lo <= sums[True] / sums[False] <= hi


def test_privacy_report_events_and_communication():
    A = low_rank(60, 20, 2, seed=5)
    res = private_local_lrf(A, 2, epsilon=0.8, delta=1e-5, row_norm=2.0, random_state=0, protocol="sketch")
    p, d = res.privacy, res.diagnostics
    s = analytic_noise_multiplier(0.8, 1e-5 * 0.9)
    assert p.relation is Relation.LOCAL and p.certified and p.calibration == "tight"
    assert len(p.events) == 2 and p.events[0] == dp_accounting.GaussianDpEvent(s)
    assert isinstance(p.events[1], EpsilonDeltaDpEvent) and p.events[1].epsilon == 0.0
    assert p.events[1].delta == pytest.approx(1e-6)  # 3 delta_s: the three sketch bounds
    direct = epsilon_of(p.events, 1e-5, relation="local")
    assert direct <= 0.8 and direct == pytest.approx(0.8, rel=1e-6) and p.epsilon == pytest.approx(direct)
    nz = local_lrf_noise(0.8, 1e-5, d["t"], d["v"], row_norm=2.0)
    assert d["sigma_y"] == d["sigma_z"] == pytest.approx(s * nz.sensitivity)
    assert d["noise_multiplier"] == pytest.approx(s)
    assert d["aggregate_noise_std_z"] == pytest.approx(d["sigma_z"] * math.sqrt(60))
    assert (d["t"], d["v"]) == (8, 20)
    assert d["communication_floats_per_user"] == 8 + 20**2
    assert d["communication_bytes_per_user"] == 8 * (8 + 20**2)
    # independent of n: twice the features, same communication
    wide = private_local_lrf(np.hstack([A, A]) / math.sqrt(2), 2, epsilon=0.8, delta=1e-5, row_norm=2.0,
                             random_state=0, affine_sketch_size=20)
    assert wide.diagnostics["communication_floats_per_user"] == d["communication_floats_per_user"]


def test_paper_calibration_is_flagged_when_not_certified():
    A = low_rank(60, 20, 2, seed=6)
    with pytest.warns(UncertifiedPrivacyWarning, match="does not certify"):
        res = private_local_lrf(A, 2, epsilon=1.0, delta=1e-6, calibration="paper", random_state=0)
    p, d = res.privacy, res.diagnostics
    assert not p.certified and p.epsilon > 1.0 and p.calibration == "paper"
    assert p.epsilon == pytest.approx(epsilon_of(p.events, 1e-6, relation="local"))
    b, log_inv = 2 * sensitivity_norm(1.0), math.log(1e6)
    assert d["sigma_y"] == pytest.approx(b * math.sqrt(1.25 * log_inv))
    assert d["sigma_z"] == pytest.approx(b * 1.25 * math.sqrt(log_inv))
    assert len(p.events) == 3 and any("rho_1" in note for note in p.notes)


def test_accountant_spends_one_event_and_refuses_before_noise():
    A = low_rank(40, 10, 2, seed=7)
    acc = Accountant(1.2, 1e-6)
    private_local_lrf(A, 2, epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
    assert len(acc.entries) == 1 and acc.relation is Relation.LOCAL
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        private_local_lrf(A, 2, epsilon=1.0, delta=1e-6, accountant=acc, random_state=rng)
    assert len(acc.entries) == 1
    # nothing was drawn from the secret generator before the refusal (the public seed is OS entropy)
    assert rng.bit_generator.state == state


_OK = np.full((6, 4), 0.2)


@pytest.mark.parametrize("A,k,kw,err,match", [
    (_OK, 5, {}, ValueError, "'k'.*min\\(m, n\\) = 4"),
    (_OK, 0, {}, ValueError, "'k'"),
    (np.r_[_OK[:5], [[np.nan, 0, 0, 0]]], 1, {}, ValueError, "NaN or infinity"),
    (np.zeros(4), 1, {}, ValueError, "2-D"),
    (np.ones((6, 4)), 1, {"on_norm_violation": "raise"}, ValueError, "some row has Euclidean norm above"),
    (_OK, 1, {"epsilon": 0.0}, ValueError, "'epsilon'"),
    (_OK, 1, {"epsilon": -1.0}, ValueError, "'epsilon'"),
    (_OK, 1, {"delta": 0.0}, ValueError, "'delta'.*pure"),
    (_OK, 1, {"relation": "replace_one"}, ValueError, "'relation'.*'local'"),
    (_OK, 1, {"calibration": "loose"}, ValueError, "'calibration'"),
    (_OK, 1, {"simulate_sum": "yes"}, TypeError, "'simulate_sum'"),
    (_OK, 1, {"sketch": Sketch(subspace_size=5)}, ValueError, "'subspace_sketch_size'"),
    (_OK, 1, {"row_norm": 0.0}, ValueError, "'row_norm'"),
    (_OK, 1, {"sketch": Sketch(seed=-3)}, ValueError, "'sketch.seed'"),
])
def test_local_bad_input(A, k, kw, err, match):
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(err, match=match):
        private_local_lrf(A, k, **{"epsilon": 1.0, "delta": 1e-6, "accountant": acc, "random_state": 0, **kw})
    assert acc.entries == ()


@pytest.mark.parametrize("simulate_sum", [False, True])
def test_local_caller_data_untouched_and_seeded(simulate_sum):
    A = low_rank(50, 8, 2, seed=8) * 3  # rows above the bound: clipped by their users, on a copy
    before = A.copy()
    kw = dict(epsilon=1.0, delta=1e-6, simulate_sum=simulate_sum)
    a = private_local_lrf(A, 2, random_state=3, sketch_seed=1, **kw)
    b = private_local_lrf(A, 2, random_state=3, sketch_seed=1, **kw)
    c = private_local_lrf(A, 2, random_state=4, sketch_seed=1, **kw)
    assert np.array_equal(A, before)
    assert np.array_equal(a.U, b.U) and not np.allclose(a.U, c.U)
    s = private_local_lrf(sp.csr_matrix(A), 2, random_state=3, sketch_seed=1, **kw)
    assert np.allclose(s.U, a.U, atol=1e-8)


# -- statistical audit of one user's report ------------------------------------------------------
# The adversary knows the public sketches (seed 2018) and picks the worst pair of rows for user 0:
# a = C u, a' = -C u (||a - a'|| = 2C, the largest LDP distance) with u the top eigenvector of
# Phi Phi^T + ||S[:, 0]||^2 T^T T, which maximises the realised sensitivity ||c(a) - c(a')|| of the
# clean report c. The statistic is the report projected on c(a) - c(a') (the likelihood-ratio
# statistic of a Gaussian mechanism). Claims are checked at the conditional delta_g = delta - 3 delta_s
# (the guarantee given the sketches, valid for this pair because its realised sensitivity is within
# the bound, asserted below). Every bound has false-positive rate ALPHA = 1e-3.
AUDIT_DELTA, AUDIT_RUNS, AUDIT_USER = 1e-6, 3000, 0
_SETUP = local_lrf_setup(20, 20, 1, subspace_sketch_size=20, affine_sketch_size=20, seed=2018)


def _worst_pair():
    s_i = _SETUP.S[:, AUDIT_USER]
    M = _SETUP.Phi @ _SETUP.Phi.T + float(s_i @ s_i) * (_SETUP.T.T @ _SETUP.T)
    u = np.linalg.eigh(M)[1][:, -1]
    clean = np.concatenate([u @ _SETUP.Phi, np.outer(s_i, _SETUP.T @ u).ravel()])
    return u, clean


def _audit(epsilon_run: float, epsilon_claim: float):
    u, clean = _worst_pair()
    nz = local_lrf_noise(epsilon_claim, AUDIT_DELTA, _SETUP.t, _SETUP.v, row_norm=1.0)
    realised = 2 * float(np.linalg.norm(clean))  # ||c(a) - c(a')|| with a' = -a
    assert realised <= nz.sensitivity  # this seed is in the good event, even for the worst pair
    direction = clean / np.linalg.norm(clean)

    def mechanism(X, seed):
        return local_lrf_report(X[0], AUDIT_USER, _SETUP, epsilon=epsilon_run, delta=AUDIT_DELTA,
                                row_norm=1.0, rng=seed).as_vector(), None

    t0, t1 = run_pair(mechanism, u[None, :], -u[None, :], lambda r, _: float(r @ direction),
                      AUDIT_RUNS, seed=57)
    delta_g = AUDIT_DELTA - nz.sketch_delta
    gauss = gaussian_audit(t0, t1, epsilon_claim, delta_g, ALPHA)
    # threshold fixed in advance from public facts: the clean statistic of a plus half the gap
    thr = threshold_epsilon_lower_bound(t0, t1, realised, delta_g, ALPHA)
    return gauss, thr


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_local_report_passes_its_audit(epsilon):
    gauss, thr = _audit(epsilon, epsilon)
    assert not gauss.violated, gauss
    assert thr <= epsilon


def test_local_audit_catches_a_tenth_of_the_noise():
    claim = 1.0
    delta_g = AUDIT_DELTA * 0.9
    s = analytic_noise_multiplier(claim, delta_g)
    gauss, thr = _audit(gaussian_epsilon(s / 10, delta_g), claim)  # the run adds s/10 of the noise
    assert gauss.violated, gauss
    assert thr > claim


# ================================================================================================
# Hardt–Roth 2012
# ================================================================================================
def test_hr_zero_noise_is_near_optimal():
    A = low_rank(300, 40, 3, seed=9)
    # a seed whose sketch prunes no row (seed 0's exact draws put one row of Q over tau: a pruned row is
    # not reconstructed exactly, whatever the noise)
    res = hardt_roth(A, 3, algorithm="range_finder", random_state=1, **HUGE)
    assert res.diagnostics["rows_pruned"] == 0
    assert res.U.shape == (300, 3) and res.V.shape == (40, 3) and res.S.shape == (3,)
    assert np.allclose(res.U.T @ res.U, np.eye(3), atol=1e-10)
    assert np.allclose(res.V.T @ res.V, np.eye(3), atol=1e-10)
    assert np.linalg.norm(A - res.reconstruct()) <= 1e-4 * np.linalg.norm(A)  # exact rank k
    B = low_rank(300, 40, 3, seed=9, noise=0.01)
    p = 20
    res = hardt_roth(B, 3, oversampling=p, algorithm="range_finder", random_state=0, **HUGE)
    assert res.diagnostics["rows_pruned"] == 0 and res.diagnostics["ell"] == 23
    # within HMT's multiplicative factor sqrt(1 + k / (p - 1)) of the optimal rank-k error
    assert np.linalg.norm(B - res.reconstruct()) <= math.sqrt(1 + 3 / (p - 1)) * tail(B, 3)


def test_hr_events_certified_and_sensitivities():
    A = low_rank(200, 30, 3, seed=10)
    res = hardt_roth(A, 3, epsilon=1.0, delta=1e-6, row_norm=1.5, algorithm="range_finder", random_state=0)
    p, d = res.privacy, res.diagnostics
    assert p.relation is Relation.REPLACE_ONE and p.certified and p.calibration == "tight"
    g1, g2, sk = p.events
    s = analytic_noise_multiplier(1.0, 0.9e-6)
    assert g1.noise_multiplier ** -2 + g2.noise_multiplier ** -2 == pytest.approx(s**-2)
    assert g1.noise_multiplier == pytest.approx(g2.noise_multiplier)  # stage_share = 0.5
    assert isinstance(sk, EpsilonDeltaDpEvent) and sk.epsilon == 0.0 and sk.delta == pytest.approx(1e-7)
    direct = epsilon_of(p.events, 1e-6, relation="replace_one")
    assert direct <= 1.0 and direct == pytest.approx(1.0, rel=1e-6)
    b = 2 * sensitivity_norm(1.5)
    assert d["ell"] == 6 and d["oversampling"] == 3
    assert d["tau"] == pytest.approx(2 * math.sqrt(6 / 200))
    assert d["sensitivity1"] == pytest.approx(b * math.sqrt(chi2_quantile_factor(6, 1e-7)))
    assert d["sensitivity2"] == pytest.approx(b * d["tau"])
    assert d["sigma1"] == pytest.approx(g1.noise_multiplier * d["sensitivity1"])
    assert d["sigma2"] == pytest.approx(g2.noise_multiplier * d["sensitivity2"])


def test_hr_paper_calibration_certified_or_flagged():
    A = low_rank(200, 30, 3, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertifiedPrivacyWarning)
        ok = hardt_roth(A, 3, epsilon=1.0, delta=1e-6, calibration="paper", random_state=0)
    assert ok.privacy.certified and ok.privacy.epsilon < 1.0
    nz = hardt_roth_noise(1.0, 1e-6, 6, 200, calibration="paper")
    factor = math.sqrt(2 * math.log(2.5e6)) / 0.5
    assert nz.sigma1 == pytest.approx(2 * sensitivity_norm(1.0) * math.sqrt(chi2_factor(6, 1e-7)) * factor)
    assert nz.sigma2 == pytest.approx(nz.sensitivity2 * factor)
    with pytest.warns(UncertifiedPrivacyWarning, match="does not certify"):
        bad = hardt_roth(A, 3, epsilon=40.0, delta=1e-3, calibration="paper", random_state=0)
    assert not bad.privacy.certified and bad.privacy.epsilon > 40.0
    assert bad.privacy.epsilon == pytest.approx(epsilon_of(bad.privacy.events, 1e-3))


def test_hr_pruning_on_a_coherent_matrix():
    A = low_rank(200, 30, 2, seed=12) * 0.05
    A[7] = np.linspace(1.0, 2.0, 30) / np.linalg.norm(np.linspace(1.0, 2.0, 30))  # one dominant row
    res = hardt_roth(A, 2, **HUGE, algorithm="range_finder", random_state=0)
    d = res.diagnostics
    assert d["tau"] == pytest.approx(2 * math.sqrt(4 / 200)) and d["rows_pruned"] >= 1
    loose = hardt_roth(A, 2, **HUGE, prune=100.0, algorithm="range_finder", random_state=0)
    assert loose.diagnostics["tau"] == 1.0 and loose.diagnostics["rows_pruned"] == 0
    assert np.linalg.norm(A - loose.reconstruct()) <= 1.01 * tail(A, 2) + 1e-6


def test_hr_accountant_caller_data_sparse_and_cap():
    A = low_rank(80, 12, 2, seed=13) * 2  # rows above the bound are clipped on a copy
    before = A.copy()
    acc = Accountant(1.2, 1e-6)
    a = hardt_roth(A, 2, epsilon=1.0, delta=1e-6, accountant=acc, algorithm="range_finder", random_state=3)
    assert np.array_equal(A, before) and len(acc.entries) == 1 and acc.relation is Relation.REPLACE_ONE
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        hardt_roth(A, 2, epsilon=1.0, delta=1e-6, accountant=acc, algorithm="range_finder", random_state=rng)
    assert rng.bit_generator.state == state and len(acc.entries) == 1
    b = hardt_roth(A, 2, epsilon=1.0, delta=1e-6, algorithm="range_finder", random_state=3)
    s = hardt_roth(sp.csr_matrix(A), 2, epsilon=1.0, delta=1e-6, algorithm="range_finder", random_state=3)
    assert np.array_equal(a.U, b.U)
    assert np.allclose(s.U, a.U, atol=1e-8) and np.allclose(s.V, a.V, atol=1e-8)
    capped = hardt_roth(A, 10, oversampling=10, epsilon=1.0, delta=1e-6,
                        algorithm="range_finder", random_state=0)
    assert capped.diagnostics["ell"] == 12 and capped.diagnostics["oversampling"] == 2


_HR_OK = np.full((6, 4), 0.2)


@pytest.mark.parametrize("A,k,kw,err,match", [
    (_HR_OK, 5, {}, ValueError, "'k'.*min\\(m, n\\) = 4"),
    (np.r_[_HR_OK[:5], [[np.inf, 0, 0, 0]]], 1, {}, ValueError, "NaN or infinity"),
    (np.ones((6, 4)), 1, {"on_norm_violation": "raise"}, ValueError, "some row has Euclidean norm above"),
    (_HR_OK, 1, {"epsilon": 0.0}, ValueError, "'epsilon'"),
    (_HR_OK, 1, {"delta": 0.0}, ValueError, "'delta'.*pure"),
    (_HR_OK, 1, {"relation": "priv1"}, ValueError, "'replace_one'.*not Priv1"),
    (_HR_OK, 1, {"relation": "priv2"}, ValueError, "'replace_one'"),
    (_HR_OK, 1, {"relation": "local"}, ValueError, "'replace_one'"),
    (_HR_OK, 1, {"range_finder": RangeFinder(oversampling=-1)}, ValueError, "'range_finder.oversampling'"),
    (_HR_OK, 1, {"prune": 0.0}, ValueError, "'range_finder.prune'"),
    (_HR_OK, 1, {"range_finder": RangeFinder(stage_share=1.0)}, ValueError, "'range_finder.stage_share'"),
    (_HR_OK, 1, {"calibration": "loose"}, ValueError, "'calibration'"),
])
def test_hr_bad_input(A, k, kw, err, match):
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(err, match=match):
        hardt_roth(A, k, **{"epsilon": 1.0, "delta": 1e-6, "accountant": acc, "random_state": 0, **kw})
    assert acc.entries == ()


def test_row_change_equals_the_clipped_call_at_twice_the_row_norm() -> None:
    """row_change = 2 C on rows of norm <= C is the default call with row_norm = C (same noise plan)."""
    rng = np.random.default_rng(1)
    A = rng.uniform(0.0, 3.0, size=(120, 20))
    C = float(np.linalg.norm(A, axis=1).max()) * 1.01
    a = hardt_roth(A, 4, epsilon=1.0, delta=1e-3, row_change=2 * C, random_state=5)
    b = hardt_roth(A, 4, epsilon=1.0, delta=1e-3, row_norm=C, algorithm="range_finder", random_state=5)
    np.testing.assert_allclose(a.reconstruct(), b.reconstruct(), rtol=1e-12, atol=1e-12)
    assert a.privacy is not None and a.privacy.certified and a.privacy.relation is Relation.ROW_CHANGE
    la = private_local_lrf(A, 4, epsilon=1.0, delta=1e-3, row_change=2 * C, alpha=0.5, simulate_sum=True,
                           random_state=6, sketch_seed=2)
    lb = private_local_lrf(A, 4, epsilon=1.0, delta=1e-3, row_norm=C, alpha=0.5, simulate_sum=True,
                           random_state=6, sketch_seed=2)
    np.testing.assert_allclose(la.U, lb.U, rtol=1e-12, atol=1e-12)
    # a unit row change needs far less noise than the rows' bound, and rows are then not clipped
    unit = hardt_roth(A, 4, epsilon=1.0, delta=1e-3, row_change=1.0, random_state=5)
    assert unit.diagnostics["sigma1"] < a.diagnostics["sigma1"] / C
    with pytest.raises(ValueError, match="row_change"):
        hardt_roth(A, 4, epsilon=1.0, delta=1e-3, row_change=0.0)


def test_noise_plan_old_size_names_warn_and_give_the_same_plan():
    # local_lrf_noise is public in dpspectral.local._lowrank only (not in the package's __all__, which
    # tests/test_parameter_names.py enumerates): its paper names t, v still work, with a FutureWarning
    new = local_lrf_noise(1.0, 1e-6, subspace_sketch_size=3, affine_sketch_size=4, row_norm=1.5)
    with pytest.warns(FutureWarning, match="'t' parameter of local_lrf_noise was renamed 'subspace_sketch"):
        old = local_lrf_noise(1.0, 1e-6, t=3, v=4, row_norm=1.5)
    assert old == new
    with pytest.raises(TypeError, match="both"):
        local_lrf_noise(1.0, 1e-6, t=3, affine_sketch_size=4, subspace_sketch_size=3, row_norm=1.5)
