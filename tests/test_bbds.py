"""Tests of the exact accountant of the input-perturbation (BBDS) sketch, dpspectral.privacy._bbds."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import linalg, stats

from dpspectral.privacy import EpsilonDeltaDpEvent, epsilon_of
from dpspectral.privacy._bbds import (
    _covariance_delta,
    _spec_relaxed_delta,
    bbds_delta,
    bbds_event,
    covariance_delta,
    min_sigma_min,
    paper_sigma_min,
    worst_case_eigenvalues,
)

# spec-lowrank.md §1: minimal sigma_min at delta = 1e-6, (t, epsilon) -> sigma_min. The spec maximises
# over (s, r, theta) as if they were free; its numbers are reproduced by _spec_relaxed_delta.
SPEC_TABLE = {(10, 1.0): 32.3, (10, 0.5): 60.0, (50, 1.0): 55.2, (50, 0.5): 103.7,
              (200, 1.0): 97.2, (200, 0.5): 183.8}
# The exact worst case over Priv1 neighbours (module docstring): 1.6-1.9 times smaller.
EXACT_TABLE = {(10, 1.0): 17.165, (10, 0.5): 32.190, (50, 1.0): 32.096, (50, 0.5): 60.850,
               (200, 1.0): 60.959, (200, 0.5): 116.052}


def _pad(A: np.ndarray, sigma_min: float) -> np.ndarray:
    return np.hstack([A, sigma_min * np.eye(A.shape[0])])


def _neighbour_covariances(
    A: np.ndarray, u: np.ndarray, v: np.ndarray, sigma_min: float
) -> tuple[np.ndarray, np.ndarray]:
    Ahat, Ahat_prime = _pad(A, sigma_min), _pad(A + np.outer(u, v), sigma_min)
    return Ahat @ Ahat.T, Ahat_prime @ Ahat_prime.T


def _unit(rng: np.random.Generator, d: int) -> np.ndarray:
    x = rng.normal(size=d)
    return x / np.linalg.norm(x)


# ---------------------------------------------------------------------------------------------
# 1. the spec's table
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "epsilon"), sorted(SPEC_TABLE))
def test_spec_table_reproduced_by_its_relaxation(t: int, epsilon: float) -> None:
    """The spec's numbers are the root of its (relaxed) calibration, to within 2%."""
    sigma = SPEC_TABLE[(t, epsilon)]
    assert _spec_relaxed_delta(epsilon, 0.98 * sigma, t, n_theta=9) > 1e-6
    assert _spec_relaxed_delta(epsilon, 1.02 * sigma, t, n_theta=9) <= 1e-6


@pytest.mark.parametrize(("t", "epsilon"), sorted(EXACT_TABLE))
def test_exact_minimal_sigma_min(t: int, epsilon: float) -> None:
    sigma = min_sigma_min(epsilon, 1e-6, t)
    assert sigma == pytest.approx(EXACT_TABLE[(t, epsilon)], rel=2e-3)
    # Smaller than the spec's relaxed value, and larger than the paper's closed form is not needed.
    assert 1.5 < SPEC_TABLE[(t, epsilon)] / sigma < 2.0
    assert paper_sigma_min(epsilon, 1e-6, t, 0.25) > 50 * sigma


def test_spec_maximiser_is_not_reachable() -> None:
    """The spec's worst point (theta = pi, mu = ((1 - 1/sigma)^2, 1)) lies outside the reachable box."""
    sigma = 30.0
    mu_plus, mu_minus = worst_case_eigenvalues(sigma)
    assert (1 - 1 / sigma) ** 2 < mu_minus
    assert (1 + 1 / sigma) ** 2 > mu_plus
    assert _spec_relaxed_delta(1.0, sigma, 10) > 1e4 * bbds_delta(1.0, sigma, 10)


# ---------------------------------------------------------------------------------------------
# 2. the privacy-loss formula, by Monte Carlo of the actual Gaussian likelihood ratio
# ---------------------------------------------------------------------------------------------


def _mc_hockey_stick(
    rng: np.random.Generator, cov_p: np.ndarray, cov_q: np.ndarray, t: int, epsilon: float, n: int
) -> tuple[float, float]:
    """Mean and standard error of (1 - e^{epsilon - L})_+ with Y ~ P, L = ln dP/dQ (t columns)."""
    m = cov_p.shape[0]
    cols = rng.multivariate_normal(np.zeros(m), cov_p, size=n * t)
    log_ratio = (stats.multivariate_normal(np.zeros(m), cov_p).logpdf(cols)
                 - stats.multivariate_normal(np.zeros(m), cov_q).logpdf(cols))
    L = log_ratio.reshape(n, t).sum(axis=1)
    h = np.maximum(0.0, -np.expm1(epsilon - L))
    return float(h.mean()), float(h.std(ddof=1) / math.sqrt(n))


@pytest.mark.parametrize("case", ["random", "near_worst"])
def test_privacy_loss_formula_monte_carlo(case: str) -> None:
    """Closed form vs Monte Carlo of the Gaussian likelihood ratio, both directions.

    Each comparison allows 5 Monte Carlo standard errors: by the CLT (200,000 bounded draws), the
    false-positive rate is about 6e-7 per comparison, 2.3e-6 for the four comparisons.
    """
    rng = np.random.default_rng(20240611)
    m, n, sigma_min, t, epsilon = 3, 4, 2.0, 5, 0.3
    if case == "random":
        A = 1.5 * rng.normal(size=(m, n))
        u, v = _unit(rng, m), _unit(rng, n)
    else:  # A = lambda p_2 v^T, u = p_1: eigenvalues close to the worst case (mu_+, mu_-)
        basis = np.linalg.qr(rng.normal(size=(m, m)))[0]
        v = _unit(rng, n)
        A = 300.0 * np.outer(basis[:, 1], v)
        u = basis[:, 0]
    cov, cov_prime = _neighbour_covariances(A, u, v, sigma_min)
    mu = linalg.eigh(cov_prime, cov, eigvals_only=True)
    differ = mu[np.abs(mu - 1) > 1e-9]
    assert len(differ) == 2 and differ[0] < 1 < differ[1]  # at most two, on both sides of 1
    mu_plus, mu_minus = worst_case_eigenvalues(sigma_min)
    assert mu_minus <= differ[0] and differ[1] <= mu_plus
    for cov_p, cov_q, mus in ((cov, cov_prime, differ), (cov_prime, cov, 1 / differ)):
        exact = covariance_delta(epsilon, list(mus), t)
        mean, se = _mc_hockey_stick(rng, cov_p, cov_q, t, epsilon, 200_000)
        assert exact > 1e-3  # the comparison is informative
        assert abs(mean - exact) <= 5 * se, (case, mean, exact, se)
        assert exact <= bbds_delta(epsilon, sigma_min, t)


def test_quadrature_agrees_with_swapped_roles() -> None:
    """Integrating over either coordinate (different incomplete-gamma branches) gives the same delta."""
    for epsilon, sigma, t in [(1.0, 17.0, 10), (0.5, 60.0, 50), (1.0, 3.0, 1), (2.0, 5.0, 3),
                              (0.1, 500.0, 200), (5.0, 0.3, 4)]:
        a, b = worst_case_eigenvalues(sigma)
        x, y = _covariance_delta(epsilon, a, b, t), _covariance_delta(epsilon, b, a, t)
        assert x == pytest.approx(y, rel=1e-8)
    # generic eigenvalues, both above or both below 1
    for mus in [(2.0, 1.5), (0.7, 0.5), (1.3, 0.6)]:
        x, y = _covariance_delta(0.4, mus[0], mus[1], 3), _covariance_delta(0.4, mus[1], mus[0], 3)
        assert x == pytest.approx(y, rel=1e-8)


def test_single_eigenvalue_bounded_loss_is_exactly_zero() -> None:
    """Variance increase by mu in one coordinate: L <= (t/2) ln mu, so delta = 0 when that is <= eps."""
    assert covariance_delta(1.0, [1.2], 10) < 1e-30  # (10/2) ln 1.2 = 0.91 < 1
    assert covariance_delta(1.0, [1.0, 1.0], 10) < 1e-30
    assert covariance_delta(0.5, [1.2], 10) > 1e-3


# ---------------------------------------------------------------------------------------------
# the worst case over neighbours (the reachable box and its corner)
# ---------------------------------------------------------------------------------------------


def test_random_neighbours_stay_in_the_box() -> None:
    """Deterministic: 3,000 seeded random neighbouring pairs never leave [mu_-, mu_+]."""
    rng = np.random.default_rng(7)
    for sigma_min in (0.5, 2.0, 10.0):
        mu_plus, mu_minus = worst_case_eigenvalues(sigma_min)
        hi, lo = 1.0, 1.0
        for _ in range(1000):
            m, n = int(rng.integers(1, 5)), int(rng.integers(1, 6))
            A = rng.normal(size=(m, n)) * sigma_min * math.exp(rng.uniform(-3, 3))
            cov, cov_prime = _neighbour_covariances(A, _unit(rng, m), _unit(rng, n), sigma_min)
            mu = linalg.eigh(cov_prime, cov, eigvals_only=True)
            hi, lo = max(hi, mu[-1]), min(lo, mu[0])
        assert hi <= mu_plus * (1 + 1e-9) and lo >= mu_minus * (1 - 1e-9)
        assert hi > 1 + 0.5 * (mu_plus - 1)  # the search gets reasonably close to the bound


def test_worst_case_is_approached() -> None:
    """A = lambda p_2 v^T, u = p_1: the eigenvalues tend to (mu_+, mu_-) as lambda grows."""
    sigma_min, t = 2.0, 5
    mu_plus, mu_minus = worst_case_eigenvalues(sigma_min)
    assert mu_plus * mu_minus == pytest.approx(1.0)
    s = 1 / sigma_min  # the spec's matrix at theta = pi/2
    assert np.linalg.eigvalsh([[1 + s * s, s], [s, 1]]) == pytest.approx([mu_minus, mu_plus])
    m, n = 3, 4
    u, p2, v = np.eye(m)[0], np.eye(m)[1], np.eye(n)[2]
    A = 1e5 * np.outer(p2, v)
    cov, cov_prime = _neighbour_covariances(A, u, v, sigma_min)
    mu = linalg.eigh(cov_prime, cov, eigvals_only=True)
    assert mu[-1] == pytest.approx(mu_plus, rel=1e-6) and mu[0] == pytest.approx(mu_minus, rel=1e-6)
    got = covariance_delta(0.3, [mu[-1], mu[0]], t)
    assert got <= bbds_delta(0.3, sigma_min, t)
    assert got == pytest.approx(bbds_delta(0.3, sigma_min, t), rel=1e-4)


# ---------------------------------------------------------------------------------------------
# 3. monotonicity and calibration
# ---------------------------------------------------------------------------------------------


def test_bbds_delta_monotone() -> None:
    sigmas = [5.0, 10.0, 20.0, 40.0]
    deltas = [bbds_delta(1.0, s, 10) for s in sigmas]
    assert all(a > b for a, b in zip(deltas, deltas[1:], strict=False))
    epsilons = [0.25, 0.5, 1.0, 2.0]
    deltas = [bbds_delta(e, 20.0, 10) for e in epsilons]
    assert all(a > b for a, b in zip(deltas, deltas[1:], strict=False))
    ts = [1, 5, 20, 100]
    deltas = [bbds_delta(1.0, 20.0, t) for t in ts]
    assert all(a < b for a, b in zip(deltas, deltas[1:], strict=False))
    assert 0.0 < bbds_delta(1e6, 10.0, 10) < 1e-30
    assert bbds_delta(1.0, 1e-3, 10) == pytest.approx(1.0, abs=1e-3)


def test_min_sigma_min_monotone_and_certified() -> None:
    delta = 1e-6
    by_t = [min_sigma_min(1.0, delta, t) for t in (1, 10, 50, 200)]
    assert all(a < b for a, b in zip(by_t, by_t[1:], strict=False))
    by_eps = [min_sigma_min(e, delta, 10) for e in (0.25, 0.5, 1.0, 4.0)]
    assert all(a > b for a, b in zip(by_eps, by_eps[1:], strict=False))
    for epsilon, dlt, t in [(1.0, 1e-6, 10), (0.5, 1e-6, 200), (0.1, 1e-3, 1), (4.0, 1e-12, 30)]:
        sigma = min_sigma_min(epsilon, dlt, t)
        assert bbds_delta(epsilon, sigma, t) <= dlt
        assert bbds_delta(epsilon, 0.99 * sigma, t) > dlt
        assert bbds_delta(epsilon, sigma, t) > 0.999 * dlt  # tight (rounded up by ~1e-7 only)


def test_min_sigma_min_is_cached() -> None:
    a = min_sigma_min(0.7, 1e-5, 12)
    assert min_sigma_min(0.7, 1e-5, 12) == a
    from dpspectral.privacy import _bbds as bbds

    assert bbds._min_sigma_min.cache_info().hits >= 1


def test_paper_sigma_min_closed_form() -> None:
    eps, delta, t, alpha = 1.0, 1e-6, 10, 0.25
    kappa = (1 + alpha) / (1 - alpha)
    expected = 16 * math.log(1 / delta) * math.sqrt(t * kappa * math.log(1 / delta)) / eps
    assert paper_sigma_min(eps, delta, t, alpha) == pytest.approx(expected)
    assert paper_sigma_min(eps, delta, t, alpha) == pytest.approx(3354.24, rel=1e-5)


def test_bbds_event_composes() -> None:
    event = bbds_event(0.5, 1e-7)
    assert isinstance(event, EpsilonDeltaDpEvent)
    assert (event.epsilon, event.delta) == (0.5, 1e-7)
    assert epsilon_of([event], 1e-6, relation="priv1") == pytest.approx(0.5)
    assert bbds_event(math.inf, 0.0).epsilon == math.inf


# ---------------------------------------------------------------------------------------------
# 4. bad inputs
# ---------------------------------------------------------------------------------------------


def test_error_message_format() -> None:
    msg = "The 'epsilon' parameter of bbds_delta must be a float in (0, inf). Got -1 instead."
    with pytest.raises(ValueError, match=re.escape(msg)):
        bbds_delta(-1, 10.0, 10)


@pytest.mark.parametrize(
    ("func", "kwargs", "name"),
    [
        (bbds_delta, {"epsilon": 0.0, "sigma_min": 10.0, "t": 10}, "epsilon"),
        (bbds_delta, {"epsilon": math.inf, "sigma_min": 10.0, "t": 10}, "epsilon"),
        (bbds_delta, {"epsilon": math.nan, "sigma_min": 10.0, "t": 10}, "epsilon"),
        (bbds_delta, {"epsilon": True, "sigma_min": 10.0, "t": 10}, "epsilon"),
        (bbds_delta, {"epsilon": "1", "sigma_min": 10.0, "t": 10}, "epsilon"),
        (bbds_delta, {"epsilon": 1.0, "sigma_min": 0.0, "t": 10}, "sigma_min"),
        (bbds_delta, {"epsilon": 1.0, "sigma_min": -3.0, "t": 10}, "sigma_min"),
        (bbds_delta, {"epsilon": 1.0, "sigma_min": 10.0, "t": 0}, "t"),
        (bbds_delta, {"epsilon": 1.0, "sigma_min": 10.0, "t": 2.5}, "t"),
        (bbds_delta, {"epsilon": 1.0, "sigma_min": 10.0, "t": True}, "t"),
        (min_sigma_min, {"epsilon": -1.0, "delta": 1e-6, "t": 10}, "epsilon"),
        (min_sigma_min, {"epsilon": 1.0, "delta": 0.0, "t": 10}, "delta"),
        (min_sigma_min, {"epsilon": 1.0, "delta": 1.0, "t": 10}, "delta"),
        (min_sigma_min, {"epsilon": 1.0, "delta": 1e-6, "t": -2}, "t"),
        (min_sigma_min, {"epsilon": 1.0, "delta": [1e-6], "t": 10}, "delta"),
        (paper_sigma_min, {"epsilon": 1.0, "delta": 1e-6, "t": 10, "alpha": 1.0}, "alpha"),
        (paper_sigma_min, {"epsilon": 1.0, "delta": 1e-6, "t": 10, "alpha": 0.0}, "alpha"),
        (paper_sigma_min, {"epsilon": 1.0, "delta": 2.0, "t": 10, "alpha": 0.5}, "delta"),
        (paper_sigma_min, {"epsilon": 0, "delta": 1e-6, "t": 10, "alpha": 0.5}, "epsilon"),
        (bbds_event, {"epsilon": -0.1, "delta": 1e-6}, "epsilon"),
        (bbds_event, {"epsilon": 1.0, "delta": 1.0}, "delta"),
        (covariance_delta, {"epsilon": 1.0, "mu": [1.0, 2.0, 3.0], "t": 3}, "mu"),
        (covariance_delta, {"epsilon": 1.0, "mu": [0.0], "t": 3}, "mu"),
        (covariance_delta, {"epsilon": 1.0, "mu": 2.0, "t": 3}, "mu"),
        (covariance_delta, {"epsilon": -1.0, "mu": [2.0], "t": 3}, "epsilon"),
        (worst_case_eigenvalues, {"sigma_min": 0.0}, "sigma_min"),
    ],
)
def test_bad_inputs(func, kwargs, name) -> None:  # type: ignore[no-untyped-def]
    owner = func.__name__
    with pytest.raises(ValueError, match=rf"The '{name}' parameter of {owner} must be"):
        func(**kwargs)
