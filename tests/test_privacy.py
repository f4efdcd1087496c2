"""The privacy core: budgets, relations, Gaussian calibration, accounting, ledger, clipping."""

from __future__ import annotations

import copy
import math
import pickle

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dpspectral.privacy import (
    Accountant,
    BudgetExceededError,
    GaussianDpAccountant,
    PrivacyBudget,
    Relation,
    analytic_noise_multiplier,
    as_relation,
    calibrate,
    check_row_norm,
    classic_noise_multiplier,
    clip_rows,
    epsilon_of,
    gaussian_epsilon,
    split_noise_multiplier,
    symmetric_gaussian,
)

G = dp_accounting.GaussianDpEvent


# -- budgets and relations ---------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0, -1, math.inf, math.nan, "1", True, None])
def test_budget_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="'epsilon'"):
        PrivacyBudget(eps, 1e-6)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, math.nan, None])
def test_budget_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="'delta'"):
        PrivacyBudget(1.0, delta)


def test_budget_require_delta():
    PrivacyBudget(1.0, 1e-6).require_delta("x")
    with pytest.raises(ValueError, match="pure epsilon-DP"):
        PrivacyBudget(1.0, 0.0).require_delta("x")


def test_relation_parsing():
    assert as_relation("replace_one") is Relation.REPLACE_ONE
    assert as_relation("add-remove") is Relation.ADD_REMOVE
    assert as_relation(Relation.ADD_REMOVE) is Relation.ADD_REMOVE
    assert Relation.REPLACE_ONE.n_is_public and not Relation.ADD_REMOVE.n_is_public
    assert Relation.REPLACE_ONE.dp_accounting is dp_accounting.NeighboringRelation.REPLACE_ONE
    with pytest.raises(ValueError, match="'relation'.*'swap'"):
        as_relation("swap")


# -- Gaussian calibration ----------------------------------------------------------------------
def test_classic_formula_value():
    assert classic_noise_multiplier(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-6), (2.0, 1e-5), (8.0, 1e-9)])
def test_analytic_multiplier_is_tight_and_sound(eps, delta):
    s = analytic_noise_multiplier(eps, delta)
    assert gaussian_epsilon(s, delta) <= eps  # never falls short
    assert gaussian_epsilon(s * (1 - 1e-4), delta) > eps  # and is (nearly) the smallest such s


def test_analytic_beats_classic_where_classic_is_valid():
    for eps in (0.1, 0.5, 0.9):
        assert analytic_noise_multiplier(eps, 1e-6) < classic_noise_multiplier(eps, 1e-6)
        # the classic formula is valid for eps < 1
        assert gaussian_epsilon(classic_noise_multiplier(eps, 1e-6), 1e-6) <= eps


def test_classic_formula_fails_for_large_epsilon():
    # Known failure of the classic bound outside eps < 1 (Balle and Wang 2018, Fig. 1).
    s = classic_noise_multiplier(10.0, 0.1)
    assert gaussian_epsilon(s, 0.1) > 10.0


def test_gdp_delta_known_value():
    # mu = 1 Gaussian DP at eps = 1: delta = Phi(-1/2) - e Phi(-3/2) (Balle & Wang Thm 8)
    acc = GaussianDpAccountant().compose(G(1.0))
    expected = stats.norm.cdf(-0.5) - math.e * stats.norm.cdf(-1.5)
    assert acc.get_delta(1.0) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(0.12693, abs=1e-5)
    # get_epsilon inverts get_delta
    assert acc.get_epsilon(expected) == pytest.approx(1.0, rel=1e-6)


def test_gaussian_accountant_matches_pld_for_compositions():
    event = dp_accounting.ComposedDpEvent(
        [G(3.0), dp_accounting.SelfComposedDpEvent(G(5.0), 4), G(2.0)]
    )
    exact = epsilon_of(event, 1e-6, accounting="gaussian")
    pld = epsilon_of(event, 1e-6, accounting="pld")
    rdp = epsilon_of(event, 1e-6, accounting="rdp")
    assert exact <= pld <= exact * 1.01  # PLD is a pessimistic discretisation of the exact value
    assert exact < rdp  # RDP's conversion is loose
    # the composition equals one Gaussian with the GDP-combined multiplier
    mu2 = 1 / 9 + 4 / 25 + 1 / 4
    assert exact == pytest.approx(gaussian_epsilon(1 / math.sqrt(mu2), 1e-6), rel=1e-9)


def test_auto_accounting_falls_back_to_pld_for_other_events():
    lap = dp_accounting.LaplaceDpEvent(1.0)
    assert epsilon_of(lap, 0.0, relation="add_remove") == pytest.approx(1.0, abs=1e-3)
    assert epsilon_of(dp_accounting.NonPrivateDpEvent(), 1e-6) == math.inf


def test_split_noise_multiplier_spends_exactly_the_budget():
    s = analytic_noise_multiplier(1.0, 1e-6)
    parts = split_noise_multiplier(s, [0.7, 0.29, 0.01])
    composed = epsilon_of([G(p) for p in parts], 1e-6)
    assert composed == pytest.approx(1.0, rel=1e-6)
    with pytest.raises(ValueError, match="sum to 1"):
        split_noise_multiplier(s, [0.5, 0.4])


@pytest.mark.parametrize("accounting", ["pld", "rdp", "gaussian"])
def test_calibrate_compositions(accounting):
    def make(s):
        return dp_accounting.SelfComposedDpEvent(G(s), 10)

    s = calibrate(make, 1.0, 1e-5, relation="add_remove", accounting=accounting)
    assert epsilon_of(make(s), 1e-5, relation="add_remove", accounting=accounting) <= 1.0
    assert epsilon_of(make(s * 0.98), 1e-5, relation="add_remove", accounting=accounting) > 1.0


# -- noise matrices ----------------------------------------------------------------------------
def test_symmetric_gaussian_is_symmetric_with_right_variance():
    # Statistical check, seeded: chi-square interval at a two-sided 1e-6 false-positive rate.
    rng = np.random.default_rng(7)
    sigma, d, reps = 2.5, 30, 40
    upper_sq = 0.0
    diag_sq = 0.0
    for _ in range(reps):
        E = symmetric_gaussian(d, sigma, rng)
        assert np.array_equal(E, E.T)
        upper_sq += np.sum(np.triu(E, 1) ** 2)
        diag_sq += np.sum(np.diag(E) ** 2)
    m_off = reps * d * (d - 1) // 2
    m_diag = reps * d
    for total, m in ((upper_sq, m_off), (diag_sq, m_diag)):
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], m)
        assert lo <= total / sigma**2 <= hi


# -- clipping ----------------------------------------------------------------------------------
def test_clip_rows_dense_and_sparse():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    before = X.copy()
    out, n = clip_rows(X, 1.0)
    assert n == 1
    assert np.allclose(out[0], [0.6, 0.8]) and np.array_equal(out[1:], X[1:])
    assert np.array_equal(X, before)  # caller's data untouched
    out_sp, n_sp = clip_rows(sp.csr_matrix(X), 1.0)
    assert n_sp == 1 and np.allclose(out_sp.toarray(), out)
    with pytest.raises(ValueError, match="some row has Euclidean norm above row_norm=1"):
        clip_rows(X, 1.0, on_norm_violation="raise")


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan])
def test_row_norm_validation(bad):
    with pytest.raises(ValueError, match="'row_norm'"):
        check_row_norm(bad, "f")
    with pytest.raises(ValueError, match="required"):
        check_row_norm(None, "f")
    with pytest.raises(TypeError, match="'row_norm'"):
        check_row_norm("1", "f")


# -- the ledger --------------------------------------------------------------------------------
def test_accountant_spends_and_refuses_before_exceeding():
    acc = Accountant(1.8, 1e-6)
    s1 = analytic_noise_multiplier(1.0, 1e-6)
    acc.spend(G(s1), "replace_one", label="first")
    acc.spend(G(s1), "replace_one", label="second")  # GDP: two eps=1 releases cost < 2
    assert 1.0 < acc.epsilon_spent() < 1.8
    before = acc.entries
    with pytest.raises(BudgetExceededError, match="Nothing was released"):
        acc.spend(G(s1), "replace_one")
    assert acc.entries == before  # a refused spend leaves no trace
    assert [e.label for e in acc.entries] == ["first", "second"]


def test_accountant_relation_is_fixed():
    acc = Accountant(10.0, 1e-6)
    acc.spend(G(5.0), "add_remove")
    assert acc.relation is Relation.ADD_REMOVE
    with pytest.raises(ValueError, match="cannot be composed"):
        acc.spend(G(5.0), "replace_one")


def test_accountant_refuses_non_private_events():
    acc = Accountant(100.0, 1e-6)
    with pytest.raises(BudgetExceededError):
        acc.spend(dp_accounting.NonPrivateDpEvent(), "replace_one")
    assert Accountant().spend(dp_accounting.NonPrivateDpEvent(), "replace_one") == math.inf


def test_accountant_is_shared_by_reference_and_frozen_when_pickled():
    acc = Accountant(1.0, 1e-6)
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    acc.spend(G(10.0), "replace_one")
    clone = pickle.loads(pickle.dumps(acc))
    assert clone is not acc and clone.frozen and not acc.frozen
    assert clone.epsilon_spent() == pytest.approx(acc.epsilon_spent())
    with pytest.raises(BudgetExceededError, match="pickled copy"):
        clone.spend(G(10.0), "replace_one")


def test_accountant_pure_epsilon_ceiling():
    acc = Accountant(1.0)  # delta = 0: only pure-DP events fit
    with pytest.raises(BudgetExceededError):
        acc.spend(G(100.0), "add_remove")
    acc.spend(dp_accounting.LaplaceDpEvent(2.0), "add_remove")
    assert acc.epsilon_spent() == pytest.approx(0.5, abs=1e-3)


def test_budget_accepts_numpy_scalars():
    b = PrivacyBudget(np.float32(0.5), np.float64(1e-6))
    assert isinstance(b.epsilon, float) and b.epsilon == 0.5


def test_event_summary_names_every_noise_parameter():
    from dp_accounting import dp_event as e

    from dpspectral.privacy._accounting import _event_summary

    assert _event_summary(e.LaplaceDpEvent(2.0))["noise_multiplier"] == 2.0
    dl = _event_summary(e.DiscreteLaplaceDpEvent(noise_parameter=0.5, sensitivity=1))
    assert dl["noise_parameter"] == 0.5
    rr = _event_summary(e.RandomizedResponseDpEvent(noise_parameter=0.3, num_buckets=4))
    assert rr["noise_parameter"] == 0.3 and rr["num_buckets"] == 4
