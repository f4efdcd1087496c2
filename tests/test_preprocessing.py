"""DPStandardScaler: the release (scale, sensitivity, events), the zero-noise limit, refusals, transform.

The scikit-learn estimator checks run in tests/test_sklearn_checks.py (both relations). The references
here are independent of the library's formulas: the analytic Gaussian multiplier by root finding
(tests/_pinned.py), the budget split by hand, the clipped sums written from their definition.
Deterministic (fixed data and seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from _neighbours import assert_message_is_data_free, observe
from _pinned import bw_multiplier
from scipy import stats
from sklearn.base import clone
from sklearn.preprocessing import StandardScaler

from dpspectral import Accountant, BudgetExceededError, DPStandardScaler
from dpspectral.preprocessing import clipped_sums, scaler_plan
from dpspectral.privacy import compose
from dpspectral.privacy._rounding import MAX_WIDENING

LOWER = np.array([-2.0, 0.0, 10.0, -1.0])
UPPER = np.array([2.0, 1.0, 30.0, 3.0])
H = (UPPER - LOWER) / 2


def _data(n: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(loc=(LOWER + UPPER) / 2, scale=H / 1.5, size=(n, LOWER.size))
    X[:5] = [[-9.0, 4.0, 50.0, -7.0]] * 5  # beyond the bounds: clipped
    return X


def _by_hand(X: np.ndarray, lower: np.ndarray = LOWER,
             upper: np.ndarray = UPPER) -> tuple[np.ndarray, np.ndarray]:
    """(sum of z, sum of z^2), z = clip(x) - midpoint, from the definition."""
    Z = np.minimum(np.maximum(X, lower), upper) - (lower + upper) / 2
    return Z.sum(axis=0), (Z**2).sum(axis=0)


def _expected_std(epsilon: float, delta: float, relation: str, lower: np.ndarray,
                  upper: np.ndarray) -> dict[str, float]:
    """Each release's noise std from an independent calibration and split (shares of 1/s^2)."""
    s = bw_multiplier(epsilon, delta)
    h = (upper - lower) / 2
    if relation == "replace_one":
        shares = {"sum": 0.5, "sum_of_squares": 0.5}
        sens = {"sum": float(np.linalg.norm(upper - lower)), "sum_of_squares": float(np.linalg.norm(h**2))}
    else:
        shares = {"sum": 0.495, "sum_of_squares": 0.495, "count": 0.01}
        sens = {"sum": float(np.linalg.norm(h)), "sum_of_squares": float(np.linalg.norm(h**2)), "count": 1.0}
    return {name: s / math.sqrt(w) * sens[name] for name, w in shares.items()}


# --- the noise drawn is the planned noise ---------------------------------------------------------


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_noise_drawn_matches_the_planned_scale(relation):
    """The planned scale equals the independent one, and the noise actually drawn has that law.

    80 seeded fits on 50 features: 4000 draws per vector release (80 of the count), divided by the
    independent std. Two tests on the pooled draws, each at a false-positive rate of 1e-4:
    Kolmogorov-Smirnov against N(0, 1), and the chi-square test of the variance (two-sided, 5e-5 a side).
    A noise scale off by 10 % fails the variance test (negative control).
    """
    lower, upper = np.resize(LOWER, 50), np.resize(UPPER, 50)
    X = np.random.default_rng(1).uniform(lower - 1, upper + 1, size=(300, 50))
    exact_sum, exact_sq = _by_hand(X, lower, upper)
    want = _expected_std(1.0, 1e-6, relation, lower, upper)
    draws: dict[str, list[np.ndarray]] = {name: [] for name in want}
    for seed in range(80):
        est = DPStandardScaler(bounds=(lower, upper), epsilon=1.0, delta=1e-6, relation=relation,
                               random_state=seed).fit(X)
        rel = est.release_
        for name in want:
            # widened for the rounding of the sums: at these 300 rows (replace-one) below 1e-6; under
            # add/remove at the public rows of the grouped path, at most MAX_WIDENING (the exact factor:
            # tests/privacy/test_public_rows.py)
            widening = rel.noise_std[name] / want[name] - 1.0
            assert 0.0 <= widening <= (1e-6 if relation == "replace_one" else MAX_WIDENING), name
        planned = rel.noise_std  # the draws against the planned scale
        draws["sum"].append((rel.sum - exact_sum) / planned["sum"])
        draws["sum_of_squares"].append((rel.sum_of_squares - exact_sq) / planned["sum_of_squares"])
        if "count" in want:
            draws["count"].append(np.array([(rel.count - 300) / planned["count"]]))
    for name, parts in draws.items():
        z = np.concatenate(parts)
        assert stats.kstest(z, "norm").pvalue > 1e-4, name
        if z.size > 100:
            chi = float(np.sum(z**2))
            assert stats.chi2.sf(chi, z.size) > 5e-5 and stats.chi2.cdf(chi, z.size) > 5e-5, name
    # negative control: the same draws against a scale 10 % too small are refused by the variance test
    z = np.concatenate(draws["sum"]) * 1.1
    assert stats.chi2.sf(float(np.sum(z**2)), z.size) < 5e-5


# --- sensitivities: reached by a worst-case pair, never exceeded ------------------------------------


def _pair_change(X0: np.ndarray, X1: np.ndarray) -> tuple[float, float]:
    a, b = clipped_sums(X0, LOWER, UPPER), clipped_sums(X1, LOWER, UPPER)
    h0 = _by_hand(X0)
    np.testing.assert_allclose(a[1], h0[0], atol=1e-9)  # the library's sums are the definition's
    np.testing.assert_allclose(a[2], h0[1], atol=1e-9)
    return float(np.linalg.norm(a[1] - b[1])), float(np.linalg.norm(a[2] - b[2]))


def test_sensitivities_are_reached_by_worst_case_neighbours_and_never_exceeded():
    base = _data(50)
    mid = (LOWER + UPPER) / 2
    plan_r = {r.name: r.sensitivity for r in scaler_plan(LOWER, UPPER, epsilon=1.0, delta=1e-6).releases}
    plan_a = {r.name: r.sensitivity for r in scaler_plan(LOWER, UPPER, epsilon=1.0, delta=1e-6,
                                                         relation="add_remove").releases}
    assert plan_r["sum"] == pytest.approx(np.linalg.norm(UPPER - LOWER), rel=1e-9)
    assert plan_r["sum_of_squares"] == pytest.approx(np.linalg.norm(H**2), rel=1e-9)
    assert plan_a["sum"] == pytest.approx(np.linalg.norm(H), rel=1e-9)
    assert plan_a["sum_of_squares"] == pytest.approx(np.linalg.norm(H**2), rel=1e-9)
    assert plan_a["count"] == 1.0
    # replace-one, sums: a row at the lower bound (beyond it, clipped) becomes a row at the upper bound
    X0, X1 = np.vstack([base, LOWER - 3]), np.vstack([base, UPPER + 3])
    d_sum, _ = _pair_change(X0, X1)
    assert d_sum == pytest.approx(plan_r["sum"], rel=1e-9) and d_sum <= plan_r["sum"]
    # replace-one, squares: a row at the midpoints becomes a row at a bound
    X0, X1 = np.vstack([base, mid]), np.vstack([base, UPPER])
    _, d_sq = _pair_change(X0, X1)
    assert d_sq == pytest.approx(plan_r["sum_of_squares"], rel=1e-9) and d_sq <= plan_r["sum_of_squares"]
    # add/remove: one row at a bound added
    d_sum, d_sq = _pair_change(base, np.vstack([base, LOWER]))
    assert d_sum == pytest.approx(plan_a["sum"], rel=1e-9) and d_sum <= plan_a["sum"]
    assert d_sq == pytest.approx(plan_a["sum_of_squares"], rel=1e-9) and d_sq <= plan_a["sum_of_squares"]
    # random neighbours (values far beyond the bounds too) never exceed the planned sensitivities
    rng = np.random.default_rng(3)
    for _ in range(300):
        x, y = rng.uniform(LOWER - 5 * H, UPPER + 5 * H, size=(2, LOWER.size))
        d_sum, d_sq = _pair_change(np.vstack([base, x]), np.vstack([base, y]))
        assert d_sum <= plan_r["sum"] and d_sq <= plan_r["sum_of_squares"]
        d_sum, d_sq = _pair_change(base, np.vstack([base, x]))
        assert d_sum <= plan_a["sum"] and d_sq <= plan_a["sum_of_squares"]


def test_centring_at_the_midpoint_is_what_keeps_the_squares_sensitivity_small():
    """Uncentred, the squares of [0, 1] would move by 1 per row; centred by (1/2)^2 = 1/4."""
    plan = scaler_plan(np.array([0.0]), np.array([1.0]), epsilon=1.0, delta=1e-6)
    assert plan["sum_of_squares"].sensitivity == pytest.approx(0.25, rel=1e-9)


# --- the zero-noise limit is scikit-learn's StandardScaler on the clipped data ------------------------


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
@pytest.mark.filterwarnings("ignore::dpspectral.PrivacyParameterWarning")
def test_zero_noise_limit_is_sklearn_on_clipped_data(relation):
    X = _data(2000)
    # the noise multiplier falls like epsilon^-1/2: at 1e9 the sum of squares' noise moves var_ by a
    # relative ~2e-5 (one std), so rtol=1e-4 is 5 std (false-failure rate below 1e-6 per value; seeded)
    est = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1e9, delta=1e-5, relation=relation,
                           random_state=0).fit(X)
    ref = StandardScaler().fit(np.clip(X, LOWER, UPPER))
    np.testing.assert_allclose(est.mean_, ref.mean_, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(est.var_, ref.var_, rtol=1e-4)
    np.testing.assert_allclose(est.scale_, ref.scale_, rtol=1e-4)
    np.testing.assert_allclose(est.transform(X), ref.transform(X), rtol=1e-4, atol=1e-4)
    assert est.n_samples_seen_ == pytest.approx(2000, abs=0.5)
    assert est.privacy_.certified and est.privacy_.relation.value == relation


# --- refusals charge nothing ------------------------------------------------------------------------


def _fit(X, **over):
    def call(acc):
        kw = dict(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
        kw.update(over)
        return DPStandardScaler(**kw).fit(X)
    return call


def _with_nan(rows):
    X = _data()
    for r in rows:
        X[r, 2] = np.nan if r % 2 else np.inf
    return X


REFUSALS = {
    "negative epsilon": (_data, {"epsilon": -1.0}, "'epsilon'"),
    "epsilon missing": (_data, {"epsilon": None}, "'epsilon'"),
    "delta 0": (_data, {"delta": 0.0}, "delta"),
    "bounds missing": (_data, {"bounds": None}, "'bounds' parameter of DPStandardScaler is required"),
    "bounds reversed": (_data, {"bounds": (UPPER, LOWER)}, "'bounds'"),
    "bounds infinite": (_data, {"bounds": (-np.inf, 1.0)}, "'bounds'"),
    "bounds not a pair": (_data, {"bounds": 3.0}, "'bounds'"),
    "bounds of another width": (_data, {"bounds": (LOWER[:3], UPPER[:3])}, "n_features"),
    "relation local": (_data, {"relation": "local"}, "'relation'"),
    "unknown relation": (_data, {"relation": "rows"}, "relation"),
    "bad random_state": (_data, {"random_state": "urandom"}, "'random_state'"),
    "with_mean not a bool": (_data, {"with_mean": "yes"}, "'with_mean'"),
    "1-D data": (lambda: _data()[:, 0], {}, "2-D"),
    "sparse data": (lambda: sp.csr_matrix(_data()), {}, "sparse"),
    "text data": (lambda: np.array([["a", "b", "c", "d"]] * 10), {}, "numeric"),
    "empty data": (lambda: np.zeros((0, 4)), {}, "0 sample"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_charge_nothing(case):
    make, over, words = REFUSALS[case]
    out = observe(_fit(make(), **over))
    assert isinstance(out.exception, (TypeError, ValueError)), out.error
    assert words in out.error[1], out.error[1]
    assert out.ledger == ()


def test_nan_and_inf_are_refused_before_the_charge_with_a_data_free_message():
    outcomes = [observe(_fit(_with_nan(rows))) for rows in ((37,), (101, 203, 307, 311))]
    for out in outcomes:
        assert isinstance(out.exception, ValueError) and "NaN or infinity" in out.error[1]
        assert out.ledger == ()
        assert_message_is_data_free(out.error[1], forbidden_numbers={37, 101, 203, 307, 311})
    assert outcomes[0].error == outcomes[1].error


def test_over_the_ceiling_is_refused_before_any_draw():
    acc = Accountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, accountant=acc).fit(_data())
    assert acc.entries == ()


# --- the accountant is charged exactly the planned events -------------------------------------------


@pytest.mark.parametrize("relation, with_mean, with_std, names", [
    ("replace_one", True, True, ("sum", "sum_of_squares")),
    ("replace_one", True, False, ("sum",)),
    ("replace_one", False, True, ("sum", "sum_of_squares")),
    ("add_remove", True, True, ("sum", "sum_of_squares", "count")),
    ("add_remove", False, False, ("count",)),
])
def test_the_accountant_is_charged_exactly_the_planned_events(relation, with_mean, with_std, names):
    acc = Accountant()
    est = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=0.7, delta=1e-6, relation=relation,
                           with_mean=with_mean, with_std=with_std, accountant=acc,
                           random_state=0).fit(_data())
    plan = scaler_plan(LOWER, UPPER, epsilon=0.7, delta=1e-6, relation=relation, with_mean=with_mean,
                       with_std=with_std)
    assert tuple(r.name for r in plan.releases) == names
    assert len(acc.entries) == 1 and acc.entries[0].event == compose(plan.events)
    assert acc.entries[0].label == "standard_scaler" and acc.entries[0].status == "released"
    assert est.privacy_.events == plan.events and est.privacy_.certified
    # the events are one analytic Gaussian budget, split: independent multipliers
    s = bw_multiplier(0.7, 1e-6)
    count = relation == "add_remove"
    for name, event in zip(names, plan.events, strict=True):
        share = 0.01 if name == "count" and len(names) > 1 else (1.0 if name == "count" else
                                                                  (1 - 0.01 * count) / (len(names) - count))
        assert event.noise_multiplier == pytest.approx(s / math.sqrt(share), rel=1e-6)
    assert acc.epsilon_spent() == pytest.approx(0.7, rel=1e-6)
    assert (est.var_ is None) == (not with_std) and (est.mean_ is None) == (not (with_mean or with_std))


def test_nothing_released_is_nothing_charged():
    acc = Accountant()
    est = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, with_mean=False, with_std=False,
                           accountant=acc).fit(_data())
    assert acc.entries == () and est.privacy_.events == () and est.n_samples_seen_ == 400
    np.testing.assert_array_equal(est.transform(_data()), _data())


def test_clones_share_the_accountant():
    acc = Accountant()
    est = DPStandardScaler(bounds=(-1.0, 1.0), epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
    clone(est).fit(_data())
    clone(est).fit(_data())
    assert len(acc.entries) == 2 and clone(est).accountant is acc


# --- the transformer ---------------------------------------------------------------------------------


def test_fitted_state_transform_and_inverse():
    X = _data()
    before = X.copy()
    est = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=2.0, delta=1e-6, random_state=0).fit(X)
    np.testing.assert_array_equal(X, before)  # the caller's data are not touched
    assert np.all((est.mean_ >= LOWER) & (est.mean_ <= UPPER))
    assert np.all((est.var_ >= 0) & (est.var_ <= H**2))
    assert est.n_samples_seen_ == 400 and est.n_features_in_ == 4
    Z = est.transform(X)
    np.testing.assert_allclose(Z, (X - est.mean_) / est.scale_)
    np.testing.assert_allclose(est.inverse_transform(Z), X)
    np.testing.assert_array_equal(X, before)
    assert list(est.get_feature_names_out()) == ["x0", "x1", "x2", "x3"]
    # copy=False scales a float array in place, as scikit-learn's
    Y = X.copy()
    assert est.transform(Y, copy=False) is Y and np.allclose(Y, Z)


def test_scalar_bounds_apply_to_every_feature_and_names_are_kept():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(np.random.default_rng(0).uniform(-1, 1, size=(300, 3)), columns=["a", "b", "c"])
    est = DPStandardScaler(bounds=(-1, 1), epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert list(est.feature_names_in_) == ["a", "b", "c"]
    assert est.release_.half_range.tolist() == [1.0, 1.0, 1.0]
    assert list(est.get_feature_names_out()) == ["a", "b", "c"]


def test_add_remove_takes_n_from_a_noisy_count_and_accepts_no_rows():
    est = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, relation="add_remove",
                           random_state=0).fit(_data())
    assert est.release_.n_samples is None and est.release_.count is not None
    assert est.n_samples_seen_ == max(est.release_.count, 1.0) and est.n_samples_seen_ != 400
    empty = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, relation="add_remove",
                             random_state=0).fit(np.zeros((0, 4)))
    assert np.all(np.isfinite(empty.mean_)) and np.all(np.isfinite(empty.scale_))


def test_secure_noise():
    a = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, random_state="secure").fit(_data())
    b = DPStandardScaler(bounds=(LOWER, UPPER), epsilon=1.0, delta=1e-6, random_state="secure").fit(_data())
    assert a.privacy_.noise_source == "secure" and not np.array_equal(a.release_.sum, b.release_.sum)
