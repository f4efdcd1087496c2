"""Local Gaussian (Wang and Xu 2020): user reports, server aggregation, the simulated protocol."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dpspectral import Accountant, BudgetExceededError, Relation, UncertifiedPrivacyWarning
from dpspectral.datasets import spiked_covariance
from dpspectral.local import local_gaussian, local_gaussian_aggregate, local_gaussian_report
from dpspectral.privacy import (
    analytic_noise_multiplier,
    classic_noise_multiplier,
    epsilon_of,
    gaussian_epsilon,
)
from dpspectral.privacy._audit import (
    gaussian_audit,
    run_pair,
    threshold_epsilon_lower_bound,
)
from dpspectral.privacy._clipping import sensitivity_norm

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
ALPHA = 1e-3  # false-positive rate of each audit bound (see dpspectral.privacy._audit)


def upper(M: np.ndarray) -> np.ndarray:
    return M[np.triu_indices(M.shape[0])]


def proj_dist(V: np.ndarray, W: np.ndarray) -> float:
    return float(np.linalg.norm(V @ V.T - W @ W.T))


def exact_top(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    w, V = np.linalg.eigh(X.T @ X)
    return w[::-1][:k], V[:, ::-1][:, :k]


@pytest.fixture(scope="module")
def spiked() -> np.ndarray:
    X, _ = spiked_covariance(400, 8, 2, spike=[30.0, 15.0], random_state=0)
    return X / np.linalg.norm(X, axis=1).max()


def expected_std(epsilon: float, delta: float, row_norm: float, calibration: str) -> float:
    s = (analytic_noise_multiplier if calibration == "tight" else classic_noise_multiplier)(
        epsilon, delta
    )
    return s * math.sqrt(2) * sensitivity_norm(row_norm) ** 2


def goe_weights(d: int) -> np.ndarray:
    """1 on the diagonal, sqrt(2) above it: ``w * upper(M)`` has the norm ``||M||_F``. With the default
    ``noise_shape="goe"`` the noise of ``w * report`` is i.i.d. ``N(0, sigma^2)``."""
    i, j = np.triu_indices(d)
    return np.where(i == j, 1.0, math.sqrt(2.0))


# -- one user's report ---------------------------------------------------------------------------
@pytest.mark.parametrize("calibration,epsilon,row_norm", [("tight", 1.0, 1.0), ("paper", 0.5, 2.0)])
def test_report_has_the_claimed_noise_variance(calibration, epsilon, row_norm):
    # Chi-square test of the noise variance, two-sided false-positive rate 1e-6, seeded; and the
    # report's mean is upper(c(x) c(x)^T) of the clipped record.
    d, reps, delta = 6, 300, 1e-6
    x = np.arange(1.0, d + 1)  # norm ~ 9.5: clipped to row_norm by the user
    before = x.copy()
    c = x * row_norm / np.linalg.norm(x)
    target = upper(np.outer(c, c))
    R = np.array([
        local_gaussian_report(x, epsilon=epsilon, delta=delta, row_norm=row_norm,
                              calibration=calibration, random_state=seed)
        for seed in range(reps)
    ])
    assert np.array_equal(x, before)
    assert R.shape == (reps, d * (d + 1) // 2)
    std = expected_std(epsilon, delta, row_norm, calibration)
    # "tight" defaults to the GOE shape (off-diagonal std sigma / sqrt 2); "paper" to i.i.d. sigma
    E = (R - target) * (goe_weights(d) if calibration == "tight" else 1.0)
    lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], E.size)
    assert lo <= float(np.sum(E**2)) / std**2 <= hi
    # mean: every entry's average within 5.5 standard errors (two-sided rate ~4e-8 per entry)
    assert np.all(np.abs(E.mean(axis=0)) <= 5.5 * std / math.sqrt(reps))


def test_report_is_seeded_and_validated():
    x = np.array([0.6, 0.8, 0.0])
    a = local_gaussian_report(x, random_state=5, **KW)
    b = local_gaussian_report(x, random_state=5, **KW)
    c = local_gaussian_report(x, random_state=6, **KW)
    assert np.array_equal(a, b) and not np.allclose(a, c)
    with pytest.raises(ValueError, match="'x'.*1-D"):
        local_gaussian_report(np.ones((2, 3)), **KW)
    with pytest.raises(ValueError, match="'x'.*NaN"):
        local_gaussian_report(np.array([np.nan, 1.0]), **KW)
    with pytest.raises(ValueError, match="'delta'.*pure"):
        local_gaussian_report(x, epsilon=1.0, delta=0.0, row_norm=1.0)
    with pytest.raises(ValueError, match="'calibration'"):
        local_gaussian_report(x, calibration="loose", **KW)
    with pytest.raises(ValueError, match="norm"):
        local_gaussian_report(2 * x, on_norm_violation="raise", **KW)


# -- the server ----------------------------------------------------------------------------------
def test_aggregate_of_reports_is_exact_when_noise_vanishes(spiked):
    X = spiked * 2.0  # rows above the bound are clipped by their users
    n, d = X.shape
    Xc = X * np.minimum(1.0, 1.0 / np.linalg.norm(X, axis=1))[:, None]
    seeds = np.random.SeedSequence(7).spawn(n)
    reports = np.array([
        local_gaussian_report(x, epsilon=1e9, delta=0.5, row_norm=1.0, random_state=np.random.default_rng(s))
        for x, s in zip(X, seeds, strict=True)
    ])
    V, w = local_gaussian_aggregate(reports, d, 2)
    w_exact, V_exact = exact_top(Xc, 2)
    assert proj_dist(V, V_exact) < 1e-3
    assert np.allclose(w, w_exact / n, rtol=1e-3)
    assert np.allclose(V.T @ V, np.eye(2), atol=1e-10)
    # and with real noise the same reports aggregate to something else
    noisy = np.array([local_gaussian_report(x, random_state=i, **KW) for i, x in enumerate(X)])
    assert proj_dist(local_gaussian_aggregate(noisy, d, 2)[0], V_exact) > 0.1


def test_aggregate_validates_its_input():
    with pytest.raises(ValueError, match="'reports'.*= 6"):
        local_gaussian_aggregate(np.zeros((4, 5)), 3, 1)
    with pytest.raises(ValueError, match="'k'.*Got 4"):
        local_gaussian_aggregate(np.zeros((4, 6)), 3, 4)
    with pytest.raises(ValueError, match="'reports'.*NaN"):
        local_gaussian_aggregate(np.full((4, 6), np.nan), 3, 1)
    with pytest.raises(ValueError, match="'n_features'"):
        local_gaussian_aggregate(np.zeros((4, 6)), 0, 1)


# -- the simulated protocol ----------------------------------------------------------------------
@pytest.mark.parametrize("simulate_sum", [True, False])
def test_zero_noise_limit_is_exact(simulate_sum, spiked):
    res = local_gaussian(spiked, 2, epsilon=1e9, delta=0.5, row_norm=1.0, random_state=0,
                         simulate_sum=simulate_sum)
    w, V = exact_top(spiked, 2)
    assert proj_dist(res.components, V) < 1e-3
    assert np.allclose(res.values, w, rtol=1e-3)  # on the scale of sum_i x_i x_i^T
    assert res.n_samples == spiked.shape[0]


def test_simulate_sum_true_and_false_agree_in_law():
    # The released average minus the true average is the aggregated noise; in both modes its
    # upper-triangle entries, times goe_weights (the default GOE shape), must be i.i.d.
    # N(0, (sigma / sqrt(n))^2). Per mode: chi-square test of
    # the variance and a z-test of the mean (two-sided rates 1e-6); across modes: an F-test of equal
    # variances (two-sided rate 1e-6). Recovered from k = d eigenpairs.
    n, d, reps = 60, 3, 250
    X = np.random.default_rng(0).normal(size=(n, d)) * 0.4
    Xc = X * np.minimum(1.0, 1.0 / np.linalg.norm(X, axis=1))[:, None]
    truth = upper(Xc.T @ Xc / n)
    noise = {}
    for mode in (True, False):
        E, std = [], None
        for seed in range(reps):
            r = local_gaussian(X, d, random_state=seed, simulate_sum=mode, **KW)
            M = (r.components * (r.values / n)) @ r.components.T
            E.append((upper(M) - truth) * goe_weights(d))
            std = r.diagnostics["aggregate_noise_std"]
            assert r.diagnostics["simulate_sum"] is mode
        E = np.array(E)
        assert std == pytest.approx(expected_std(1.0, 1e-6, 1.0, "tight") / math.sqrt(n))
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], E.size)
        assert lo <= float(np.sum(E**2)) / std**2 <= hi, mode
        assert abs(E.mean()) <= stats.norm.ppf(1 - 5e-7) * std / math.sqrt(E.size), mode
        noise[mode] = E
    dof = noise[True].size
    ratio = float(np.sum(noise[True] ** 2) / np.sum(noise[False] ** 2))
    lo, hi = stats.f.ppf([5e-7, 1 - 5e-7], dof, dof)
    assert lo <= ratio <= hi


def test_privacy_report_and_diagnostics(spiked):
    n, d = spiked.shape
    for mode in (True, False):
        res = local_gaussian(spiked, 2, epsilon=0.8, delta=1e-5, row_norm=2.0, random_state=0,
                             simulate_sum=mode)
        p = res.privacy
        s = analytic_noise_multiplier(0.8, 1e-5)
        assert p.relation is Relation.LOCAL and p.certified
        assert p.events == (dp_accounting.GaussianDpEvent(s),)  # one user's release
        direct = epsilon_of(p.events, 1e-5, relation="local")
        assert direct <= 0.8 and direct == pytest.approx(0.8, rel=1e-6)
        assert p.epsilon == pytest.approx(direct)
        assert res.diagnostics["communication_floats_per_user"] == d * (d + 1) // 2
        assert res.diagnostics["noise_std"] == pytest.approx(s * math.sqrt(2) * 4.0)
        assert res.diagnostics["aggregate_noise_std"] == pytest.approx(
            res.diagnostics["noise_std"] / math.sqrt(n)
        )


def test_paper_calibration_certified_and_flagged(spiked):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = local_gaussian(spiked, 2, epsilon=0.5, delta=1e-6, row_norm=1.0,
                            calibration="paper", random_state=0)
    assert ok.privacy.certified and ok.privacy.epsilon < 0.5
    assert ok.diagnostics["noise_multiplier"] == pytest.approx(classic_noise_multiplier(0.5, 1e-6))
    with pytest.warns(UncertifiedPrivacyWarning, match="does not certify"):
        bad = local_gaussian(spiked, 2, epsilon=10.0, delta=0.1, row_norm=1.0,
                             calibration="paper", random_state=0)
    assert not bad.privacy.certified and bad.privacy.epsilon > 10.0
    assert bad.privacy.epsilon == pytest.approx(epsilon_of(bad.privacy.events, 0.1))


@pytest.mark.parametrize("simulate_sum", [True, False])
def test_seed_determinism_and_caller_data_untouched(simulate_sum, spiked):
    X = spiked * 3
    before = X.copy()
    a = local_gaussian(X, 2, random_state=3, simulate_sum=simulate_sum, **KW)
    b = local_gaussian(X, 2, random_state=3, simulate_sum=simulate_sum, **KW)
    c = local_gaussian(X, 2, random_state=4, simulate_sum=simulate_sum, **KW)
    assert np.array_equal(X, before)
    assert np.array_equal(a.components, b.components)
    assert not np.allclose(a.components, c.components)
    blocks = local_gaussian([X[:150], X[150:]], 2, random_state=3, simulate_sum=simulate_sum, **KW)
    assert np.allclose(blocks.components, a.components, atol=1e-8)


@pytest.mark.parametrize("simulate_sum", [True, False])
def test_accountant_spends_one_event_and_refuses_before_noise(simulate_sum, spiked):
    acc = Accountant(1.2, 1e-6)
    local_gaussian(spiked, 2, accountant=acc, random_state=0, simulate_sum=simulate_sum, **KW)
    assert len(acc.entries) == 1 and acc.relation is Relation.LOCAL
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        local_gaussian(spiked, 2, accountant=acc, random_state=rng, simulate_sum=simulate_sum, **KW)
    assert len(acc.entries) == 1 and rng.bit_generator.state == state


@pytest.mark.parametrize("X,k,kw,err,match", [
    (np.full((5, 3), 0.1), 1, {"relation": "replace_one"}, ValueError, "'relation'.*'local'"),
    (np.full((5, 3), 0.1), 1, {"delta": 0.0}, ValueError, "'delta'.*pure"),
    (np.full((5, 3), 0.1), 1, {"simulate_sum": "yes"}, TypeError, "'simulate_sum'"),
    (np.full((5, 3), 0.1), 4, {}, ValueError, "'k'.*Got 4"),
    (np.full((5, 3), 0.1), 1, {"calibration": "loose"}, ValueError, "'calibration'"),
    (np.array([[np.nan, 0.1]]), 1, {"simulate_sum": False}, ValueError, "NaN or infinity"),
    (np.ones((4, 3)), 1, {"on_norm_violation": "raise", "simulate_sum": False}, ValueError,
     "some row has Euclidean norm above"),
    # a one-shot stream is read after the charge, but its width (public) is looked at before it
    (iter([np.full((4, 3), 0.1)]), 4, {"simulate_sum": False}, ValueError, "'k'.*Got 4"),
])
def test_bad_input(X, k, kw, err, match):
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(err, match=match):
        local_gaussian(X, k, **{**KW, "accountant": acc, "random_state": 0, **kw})
    assert acc.entries == ()


# -- statistical audit of one user's report ------------------------------------------------------
def _report_mechanism(epsilon: float):
    def run(x, seed):
        return local_gaussian_report(x[0], epsilon=epsilon, delta=DELTA, row_norm=1.0,
                                     random_state=seed), None

    return run


DELTA = 1e-6
# Worst-case pair of inputs: e1 versus e2 (||e1 e1^T - e2 e2^T||_F = sqrt(2), the maximum);
# the statistic is the report projected on the direction of the difference of the clean reports
# (the likelihood-ratio statistic of the Gaussian mechanism).
_X0, _X1 = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
_DIR = upper(np.diag([1.0, -1.0])) / math.sqrt(2)


def _audit(epsilon_run: float, epsilon_claim: float, n_runs: int = 1500, seed: int = 2024):
    t0, t1 = run_pair(_report_mechanism(epsilon_run), _X0, _X1, lambda r, _: float(r @ _DIR),
                      n_runs, seed)
    return t0, t1, gaussian_audit(t0, t1, epsilon_claim, DELTA, ALPHA)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_report_passes_its_audit(epsilon):
    t0, t1, result = _audit(epsilon, epsilon)
    assert not result.violated, result
    s = analytic_noise_multiplier(epsilon, DELTA)
    threshold = 1 / math.sqrt(2) + 1.0 * s * math.sqrt(2)  # fixed from the claim, not the data
    assert threshold_epsilon_lower_bound(t0, t1, threshold, DELTA, ALPHA) <= epsilon


def test_audit_catches_half_the_noise():
    claim = 1.0
    half_noise_eps = gaussian_epsilon(analytic_noise_multiplier(claim, DELTA) / 2, DELTA)
    _, _, result = _audit(half_noise_eps, claim)
    assert result.violated, result


def test_parameters_are_declared_in_a_constraint_table() -> None:
    """The parameters are stated once, in a table (``parameter_constraints``); a value outside it gets
    the generated message and charges nothing."""
    assert {"epsilon", "delta", "row_norm", "calibration", "random_state", "simulate_sum"} <= set(
        local_gaussian.parameter_constraints)
    assert "simulate_sum" not in local_gaussian_report.parameter_constraints
    assert set(local_gaussian_aggregate.parameter_constraints) == {"n_features"}
    acc = Accountant(10.0, 1e-3, relation="local")
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of local_gaussian must be a float in "
                                         r"\(0, inf\)\. Got -1\.0 instead\."):
        local_gaussian(np.full((5, 3), 0.1), 1, **{**KW, "epsilon": -1.0}, accountant=acc)
    with pytest.raises(ValueError, match=r"The 'n_features' parameter of local_gaussian_aggregate must be an "
                                         r"int in \[1, inf\)\. Got 0 instead\."):
        local_gaussian_aggregate(np.zeros((2, 1)), 0, 1)
    assert acc.entries == ()
