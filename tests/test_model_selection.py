"""Private model selection: the exponential mechanism over public candidates, charged to the ledger.

Statistical tests are seeded; each states its false-positive rate: the chi-square goodness-of-fit
tests of the selection law use a p-value threshold of 1e-4.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpspectral import DPPCA, Accountant, BudgetExceededError
from dpspectral.model_selection import private_select, select_subspace

P_MIN = 1e-4


def _law_ok(picks: np.ndarray, probs: np.ndarray) -> float:
    counts = np.bincount(picks, minlength=len(probs))
    return float(stats.chisquare(counts, probs * len(picks)).pvalue)


@pytest.mark.parametrize("monotone", [False, True])
def test_private_select_has_the_exponential_mechanisms_law(monotone):
    scores = np.array([0.0, 1.0, 2.5])
    eps, sens = 1.2, 1.5
    rng = np.random.default_rng(0)
    picks = np.array([private_select(list(range(3)), lambda c: scores[c], epsilon=eps,
                                     sensitivity=sens, monotone=monotone, random_state=rng).index
                      for _ in range(3000)])
    # exp(eps u / (2 Delta)), or exp(eps u / Delta) when monotone: derived here, not read from the code
    logits = eps * scores / ((1.0 if monotone else 2.0) * sens)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    assert _law_ok(picks, probs) > P_MIN
    # power: the law of a mechanism twice as sharp is rejected by the same test
    sharp = np.exp(2 * logits - 2 * logits.max())
    assert _law_ok(picks, sharp / sharp.sum()) < 1e-6


def test_private_select_charges_the_ledger_and_reports():
    acc = Accountant(1.0, 1e-6)
    res = private_select(["a", "b"], lambda c: float(c == "b"), epsilon=0.4, sensitivity=1.0,
                         accountant=acc, random_state=0)
    assert res.candidate in ("a", "b") and res.index in (0, 1)
    assert [e.label for e in acc.entries] == ["private_select"]
    assert acc.epsilon_spent() == pytest.approx(0.4, rel=1e-9)
    assert res.privacy.epsilon == pytest.approx(0.4) and res.privacy.delta == 0.0
    assert res.privacy.certified
    assert not hasattr(res, "scores")  # no score is released


def test_budget_refused_before_any_score_is_computed():
    acc = Accountant(0.5, 1e-6)
    calls = []

    def score(c):
        calls.append(c)
        return 0.0

    with pytest.raises(BudgetExceededError):
        private_select([1, 2], score, epsilon=1.0, sensitivity=1.0, accountant=acc)
    assert calls == [] and acc.entries == ()


def test_a_failing_score_is_a_failed_release_that_stays_charged():
    acc = Accountant(5.0, 1e-6)
    with pytest.raises(ValueError, match="one finite float per candidate") as info:
        private_select([1, 2, 3], lambda c: math.nan if c == 2 else 1.0, epsilon=1.0, sensitivity=1.0,
                       accountant=acc, random_state=0)
    assert "2" not in str(info.value).replace("per candidate", "")
    assert len(acc.entries) == 1 and len(acc.failures) == 1


@pytest.mark.parametrize("kw,err,match", [
    ({"candidates": []}, ValueError, "'candidates'.*empty"),
    ({"candidates": "abc"}, TypeError, "'candidates'"),
    ({"sensitivity": 0.0}, ValueError, "'sensitivity'"),
    ({"sensitivity": math.inf}, ValueError, "'sensitivity'"),
    ({"epsilon": 0.0}, ValueError, "'epsilon'"),
    ({"relation": "local"}, ValueError, "'relation'"),
    ({"score_fn": 3}, TypeError, "'score_fn'"),
])
def test_private_select_bad_input(kw, err, match):
    params = dict(candidates=[1, 2], score_fn=lambda c: 0.0, epsilon=1.0, sensitivity=1.0)
    params.update(kw)
    acc = Accountant(10.0, 1e-6)
    with pytest.raises(err, match=match):
        private_select(params.pop("candidates"), params.pop("score_fn"), accountant=acc, **params)
    assert acc.entries == ()


# -- select_subspace: derived sensitivity ---------------------------------------------------------
def _clip(X):
    n = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, 1.0 / np.where(n > 0, n, 1.0))[:, None]


def _energy(X, V):
    Y = _clip(X) @ V
    return float(np.sum(Y * Y))


def test_select_subspace_sensitivity_derived_from_neighbours():
    """|u(V; D) - u(V; D')| <= C^2 over neighbours and subspaces; monotone under add/remove."""
    rng = np.random.default_rng(1)
    worst_r1, worst_ar, monotone = 0.0, 0.0, True
    for _ in range(300):
        B = rng.normal(size=(5, 4)) * 3
        x, y = rng.normal(size=4) * 5, rng.normal(size=4) * 5
        V = np.linalg.qr(rng.normal(size=(4, 2)))[0]
        base = _energy(B, V)
        worst_r1 = max(worst_r1, abs(_energy(np.vstack([B, x]), V) - _energy(np.vstack([B, y]), V)))
        diff = _energy(np.vstack([B, x]), V) - base
        worst_ar = max(worst_ar, abs(diff))
        monotone &= diff >= 0
    # the constructed pair x = 10 e_1, y = 10 e_3 and V = [e_1, e_2] attains C^2 = 1
    V = np.eye(4)[:, :2]
    built = abs(_energy(10 * np.eye(4)[[0]], V) - _energy(10 * np.eye(4)[[2]], V))
    assert built == pytest.approx(1.0)
    assert worst_r1 <= built and worst_ar <= built and monotone


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_select_subspace_law_on_clipped_rows(relation):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3)) * [0.5, 0.3, 0.1]
    X[0] = [0.0, 0.0, 10.0]  # norm 10: counts as norm 1
    cands = [np.eye(3)[:, [0]], np.eye(3)[:, [1]], np.eye(3)[:, [2]]]
    eps = 2.0
    gen = np.random.default_rng(3)
    picks = np.array([select_subspace(cands, X, epsilon=eps, row_norm=1.0, relation=relation,
                                      random_state=gen).index for _ in range(3000)])
    u = np.array([_energy(X, V) for V in cands])
    logits = eps * u / (2.0 if relation == "replace_one" else 1.0)  # Delta = C^2 = 1 (derived above)
    probs = np.exp(logits - logits.max())
    assert _law_ok(picks, probs / probs.sum()) > P_MIN


def test_accounted_grid_search_workflow(lowrank_data):
    """Fits (each charged) and the private choice among them (charged too): the ledger sees all."""
    acc = Accountant(4.0, 1e-5)
    fits = [DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method=m, centering=None, accountant=acc,
                  random_state=0).fit(lowrank_data) for m in ("analyze_gauss", "noisy_power")]
    res = select_subspace(fits, lowrank_data, epsilon=0.5, row_norm=1.0, accountant=acc,
                          random_state=0)
    assert res.candidate is fits[res.index]
    # analyze_gauss's and noisy_power's defaults are staged (norm histogram, then the release at the
    # released clip)
    assert [e.label for e in acc.entries] == ["analyze_gauss", "analyze_gauss", "noisy_power", "noisy_power",
                                              "select_subspace"]
    assert res.privacy.epsilon == pytest.approx(0.5) and res.privacy.certified


@pytest.mark.parametrize("bad", ["nan", "over_bound"])
def test_select_subspace_refuses_bad_data_before_the_charge(bad):
    X = np.random.default_rng(0).normal(size=(30, 3)) * 0.1
    X[7] = [np.nan, 0, 0] if bad == "nan" else [5.0, 0, 0]
    acc = Accountant(10.0, 1e-6)
    with pytest.raises(ValueError):
        select_subspace([np.eye(3)[:, :1]], X, epsilon=1.0, row_norm=1.0, accountant=acc,
                        on_norm_violation="raise")
    assert acc.entries == ()


def test_select_subspace_refuses_bad_candidates():
    X = np.zeros((5, 3))
    with pytest.raises(ValueError, match="orthonormal"):
        select_subspace([np.ones((3, 1))], X, epsilon=1.0, row_norm=1.0)
    with pytest.raises(ValueError, match="n_features"):
        select_subspace([np.eye(4)[:, :1]], X, epsilon=1.0, row_norm=1.0)


def test_parameters_are_declared_in_a_constraint_table() -> None:
    """The parameters are stated once, in a table (``parameter_constraints``); a value outside it gets
    the generated message and charges nothing."""
    assert {"epsilon", "sensitivity", "monotone", "random_state"} <= set(private_select.parameter_constraints)
    assert {"epsilon", "row_norm", "on_norm_violation", "random_state"} <= set(
        select_subspace.parameter_constraints)
    acc = Accountant(10.0, 1e-6)
    with pytest.raises(ValueError, match=r"The 'sensitivity' parameter of private_select must be a "
                                         r"float in \(0, inf\)\. Got -1\.0 instead\."):
        private_select([1, 2], lambda c: 0.0, epsilon=1.0, sensitivity=-1.0, accountant=acc)
    with pytest.raises(ValueError, match=r"The 'on_norm_violation' parameter of select_subspace must "
                                         r"be one of 'clip', 'raise'\. Got 'ignore' instead\."):
        select_subspace([np.eye(3)[:, :1]], np.eye(3), epsilon=1.0, row_norm=1.0,
                        on_norm_violation="ignore", accountant=acc)
    assert acc.entries == ()
