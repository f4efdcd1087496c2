"""The PCA methods' option groups: AdaptiveClip and dp_pca's RangeEstimation.

The groups' defaults reproduce the keywords they replace (seeded results identical), the old keywords
still work for one release with a FutureWarning, bad fields are refused when the group is made, and a
field a method cannot use is refused before anything is charged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpspectral import DPPCA, Accountant, AdaptiveClip, EpsilonSplit, RangeEstimation, WarmupSchedule
from dpspectral.gep._moments import moments_fda
from dpspectral.pca import (
    analyze_gauss,
    dp_pca,
    exponential_pca,
    minibatch_oja,
    mod_sulq,
    noisy_power,
    ppca,
    private_oja,
)
from dpspectral.pca._oja import planned_events

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=3)


def _rows(n: int = 2000, d: int = 6, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1.0, 0.2, d)
    return X / np.linalg.norm(X, axis=1, keepdims=True).max()


def _same_without_warning(call, new: dict, old: dict) -> None:
    """``call(**old)`` warns (FutureWarning) and gives what ``call(**new)`` gives without warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        expected = call(**new)
    with pytest.warns(FutureWarning, match="moved into"):
        got = call(**old)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("field", [{"quantile": 1.5}, {"quantile": 0.0}, {"share": 1.0}, {"share": "x"}])
def test_adaptive_clip_refuses_bad_fields_when_made(field):
    with pytest.raises(ValueError, match="parameter of AdaptiveClip must be"):
        AdaptiveClip(**field)


@pytest.mark.parametrize("field", [{"half_width_mult": 0.0}, {"histogram": "gauss"}, {"n_groups": 0},
                                   {"truncation": "never"}, {"range_fraction": 1.0}])
def test_range_estimation_refuses_bad_fields_when_made(field):
    with pytest.raises(ValueError, match="parameter of RangeEstimation must be"):
        RangeEstimation(**field)


@pytest.mark.parametrize("method", [analyze_gauss, mod_sulq])
def test_covariance_old_clip_keywords_warn_and_give_the_same_release(method):
    X = _rows()
    _same_without_warning(
        lambda **clip: method(X, 2, **KW, **clip).components,
        {"adaptive_clip": AdaptiveClip(quantile=0.6, share=0.1)}, {"clip_quantile": 0.6, "clip_share": 0.1})


@pytest.mark.parametrize("method", [noisy_power, minibatch_oja, private_oja, dp_pca])
def test_balance_rule_methods_take_the_share_and_refuse_a_quantile(method, monkeypatch):
    # dp_pca clips adaptively where Algorithms 4 and 5 cannot act (forced here, as at MNIST's size)
    monkeypatch.setattr("dpspectral.pca._oja._TRUNCATION_MAX_VALUES", 0)
    X = _rows(n=4000)
    _same_without_warning(lambda **clip: method(X, 1, **KW, **clip).components,
                          {"adaptive_clip": AdaptiveClip(share=0.1)}, {"clip_share": 0.1})
    # the share is used: a different share is a different histogram event
    events = [method(X, 1, **KW, adaptive_clip=AdaptiveClip(share=s)).privacy.events[0] for s in (0.1, 0.2)]
    assert events[0] != events[1]
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(ValueError, match="not at a quantile"):
        method(X, 1, **KW, accountant=acc, adaptive_clip=AdaptiveClip(quantile=0.5))
    assert acc.entries == ()


def test_moments_fda_old_clip_share_warns_and_gives_the_same_release():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 900)
    X = rng.standard_normal((900, 4)) * 0.2 + y[:, None] * 0.1
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    _same_without_warning(lambda **clip: moments_fda(X, y, 2, classes=[0, 1, 2], **KW, **clip).vectors,
                          {"adaptive_clip": AdaptiveClip(share=0.05)}, {"clip_share": 0.05})


def test_dp_pca_old_range_keywords_warn_and_give_the_same_release():
    X = _rows(n=4000)
    kw = dict(KW, batch_size=500, schedule="paper")
    new = {"range_estimation": RangeEstimation(histogram="stable", half_width_mult=3.0, tail_scale=2.0,
                                               tail_exponent=0.7, n_groups=4, histogram_share=0.4)}
    old = {"histogram": "stable", "half_width_mult": 3.0, "K": 2.0, "a": 0.7, "n_groups": 4,
           "histogram_share": 0.4}
    _same_without_warning(lambda **options: dp_pca(X, 1, **kw, **options).components, new, old)
    # the defaults are RangeEstimation's: the same run
    np.testing.assert_array_equal(dp_pca(X, 1, **kw).components,
                                  dp_pca(X, 1, **kw, range_estimation=RangeEstimation()).components)


def test_dppca_keeps_the_group_as_one_parameter():
    with pytest.warns(FutureWarning, match="'clip_quantile', 'clip_share' of DPPCA moved into"):
        est = DPPCA(2, clip_quantile=0.5, clip_share=0.1, **KW)
    assert est.get_params()["adaptive_clip"] == AdaptiveClip(quantile=0.5, share=0.1)
    assert "clip_share" not in est.get_params()


@pytest.mark.parametrize("method", ["private_oja", "dp_pca"])
def test_planned_events_are_the_events_a_run_charges(method):
    X = _rows(n=3000)
    run = {"private_oja": private_oja, "dp_pca": dp_pca}[method]
    acc = Accountant(10.0, 1e-3)
    charged = run(X, 1, **KW, accountant=acc).privacy.events
    planned = planned_events(method, X, 1, **{k: v for k, v in KW.items() if k != "random_state"})
    assert list(charged) == planned
    with pytest.raises(ValueError, match="'epsilon' parameter of " + method):
        planned_events(method, X, 1, epsilon=-1.0, delta=1e-6, row_norm=1.0)


@pytest.mark.parametrize("method", [ppca, exponential_pca])
def test_exponential_old_split_keywords_warn_and_give_the_same_release(method):
    X = _rows(n=400, d=4)
    _same_without_warning(
        lambda **split: method(X, 2, epsilon=1.0, row_norm=1.0, random_state=3, **split).components,
        {"epsilon_split": EpsilonSplit(eigenvalue_share=0.2, allocation="equal", coordinate_share=0.0)},
        {"eigenvalue_share": 0.2, "allocation": "equal", "coordinate_share": 0.0})
    # the split is used: another split is another budget per direction
    split = [method(X, 2, epsilon=1.0, row_norm=1.0, random_state=3, epsilon_split=EpsilonSplit(
        eigenvalue_share=s)).diagnostics["directions_epsilon"] for s in (0.2, 0.4)]
    assert split[0] > split[1]


def test_ppca_refuses_vector_shares_before_anything_is_charged():
    acc = Accountant(10.0, 0.0)
    with pytest.raises(ValueError, match="vector_shares=...\\) is for exponential_pca"):
        ppca(_rows(n=200, d=4), 2, epsilon=1.0, row_norm=1.0, accountant=acc,
             epsilon_split=EpsilonSplit(vector_shares=[1.0, 2.0]))
    assert acc.entries == ()


def test_dppca_auto_still_takes_a_folded_keyword_in_method_params():
    X = _rows(n=400, d=4)
    with pytest.warns(FutureWarning, match="moved into 'epsilon_split'"):
        est = DPPCA(2, epsilon=1.0, delta=0.0, row_norm=1.0, random_state=0,
                    method_params={"eigenvalue_share": 0.2}).fit(X)
    assert est.method_ == "ppca"


def test_minibatch_oja_old_schedule_keywords_warn_and_give_the_same_release():
    X = _rows(n=3000)
    _same_without_warning(lambda **batches: minibatch_oja(X, 1, **KW, **batches).components,
                          {"schedule": WarmupSchedule(n_batches=3, warmup_fraction=0.1)},
                          {"n_batches": 3, "warmup_fraction": 0.1})
    sizes = minibatch_oja(X, 1, **KW, schedule=WarmupSchedule(3, 0.1)).diagnostics["batch_sizes"]
    assert sizes == (300, 300, 2400)
    with pytest.raises(ValueError, match="'warmup_fraction' parameter of WarmupSchedule must be"):
        WarmupSchedule(warmup_fraction=1.5)
