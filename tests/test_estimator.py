"""The DPPCA estimator: fitting, fitted state, sklearn integration, shared budgets, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from dpspectral import DPPCA, Accountant, AdaptiveClip, BudgetExceededError, Relation

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)


def test_fit_transform_inverse(lowrank_data):
    est = DPPCA(3, random_state=0, **KW)
    Z = est.fit_transform(lowrank_data)
    assert Z.shape == (2000, 3)
    assert est.components_.shape == (3, 12)
    assert np.allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-10)
    assert np.allclose(Z, DPPCA(3, random_state=0, **KW).fit(lowrank_data).transform(lowrank_data))
    back = est.inverse_transform(Z)
    assert back.shape == lowrank_data.shape
    assert est.privacy_.certified and est.privacy_.relation is Relation.REPLACE_ONE
    assert est.privacy_.epsilon == pytest.approx(1.0) and est.privacy_.delta == 1e-6
    assert len(est.privacy_.events) == 3  # the private mean, the centred norms' histogram, the scatter
    assert est.n_samples_ == 2000  # public under replace-one
    assert list(est.get_feature_names_out()) == ["dppca0", "dppca1", "dppca2"]


def test_matches_sklearn_pca_in_the_low_noise_limit(rng):
    X = rng.normal(size=(5000, 6)) * [0.5, 0.3, 0.2, 0.1, 0.05, 0.02] + 0.2
    mean = X.mean(0)  # a public centre in this test
    est = DPPCA(2, epsilon=1e7, delta=0.5, row_norm=10.0, centering=mean, random_state=0).fit(X)
    ref = PCA(2).fit(X)
    assert np.allclose(np.abs(est.components_), np.abs(ref.components_), atol=5e-4)
    assert np.allclose(est.explained_variance_, ref.explained_variance_, rtol=1e-3)
    Z, Zr = est.transform(X), ref.transform(X)
    assert np.allclose(np.abs(Z), np.abs(Zr), atol=1e-3)


def test_private_centering_and_add_remove(rng):
    X = rng.normal(size=(20000, 4)) * [0.2, 0.1, 0.05, 0.02] + 0.3
    est = DPPCA(2, epsilon=2.0, delta=1e-6, row_norm=1.0, centering="private",
                relation="add_remove", random_state=0).fit(X)
    assert np.linalg.norm(est.mean_ - X.mean(0)) < 0.02
    # the released noisy count: not n itself, within 5.3 declared standard deviations of it
    # (two-sided, false-positive rate 1e-7; its scale is pinned in tests/test_pinned_releases.py)
    std = est.result_.diagnostics["count_noise_std"]
    assert est.n_samples_ != 20000 and abs(est.n_samples_ - 20000) < 5.3 * std
    assert est.privacy_.relation is Relation.ADD_REMOVE
    assert len(est.privacy_.events) == 4 and est.privacy_.certified  # mean, count, histogram, scatter
    assert est.privacy_.epsilon <= 2.0


def test_add_remove_releases_count_and_spends_it(lowrank_data):
    est = DPPCA(2, relation="add_remove", random_state=0, **KW).fit(lowrank_data)
    # private mean, count, norm histogram (adaptive clipping), scatter: within the one budget
    assert len(est.privacy_.events) == 4
    assert est.privacy_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert np.isfinite(est.explained_variance_).all()


def test_streams_memmaps_and_dask(tmp_path, lowrank_data):
    da = pytest.importorskip("dask.array")
    path = tmp_path / "x.npy"
    np.save(path, lowrank_data)
    mm = np.load(path, mmap_mode="r")
    ref = DPPCA(2, random_state=1, **KW).fit(lowrank_data).components_
    for src in (mm, da.from_array(lowrank_data, chunks=(500, 12)),
                [lowrank_data[:700], lowrank_data[700:]]):
        est = DPPCA(2, random_state=1, **KW).fit(src)
        assert np.allclose(est.components_, ref, atol=1e-8)
        assert est.n_features_in_ == 12


def test_required_privacy_parameters():
    X = np.ones((5, 3))
    for missing in ("epsilon", "delta", "row_norm"):
        params = {**KW, missing: None}
        with pytest.raises(ValueError, match=f"'{missing}'.*required"):
            DPPCA(1, **params).fit(X)
    # the message says why there is no default (a public parameter, never read from the data)
    with pytest.raises(ValueError, match="The 'epsilon' parameter of DPPCA is required \\(a public privacy "
                                         "parameter\\). Got None instead."):
        DPPCA(1, **{**KW, "epsilon": None}).fit(X)
    with pytest.raises(ValueError, match="'row_norm' parameter of DPPCA is required.*without looking"):
        DPPCA(1, **{**KW, "row_norm": None}).fit(X)


def test_secure_noise_source(lowrank_data):
    # random_state="secure": OS entropy, exact discrete samplers; the report says so, runs differ
    a = DPPCA(2, random_state="secure", **KW).fit(lowrank_data)
    b = DPPCA(2, random_state="secure", **KW).fit(lowrank_data)
    assert a.privacy_.noise_source == "secure" and a.privacy_.certified
    assert not np.array_equal(a.components_, b.components_)
    assert DPPCA(2, random_state=0, **KW).fit(lowrank_data).privacy_.noise_source == "exact"


@pytest.mark.parametrize("params,err,match", [
    ({"n_components": 0}, ValueError, "'n_components'.*Got 0"),
    ({"n_components": 4}, ValueError, "'n_components'.*Got 4"),
    ({"epsilon": -1.0}, ValueError, "'epsilon' parameter of DPPCA.*Got -1.0"),
    ({"epsilon": "big"}, TypeError, "'epsilon'"),
    ({"delta": 1.5}, ValueError, "'delta' parameter of DPPCA"),
    ({"delta": 0.0, "method": "analyze_gauss"}, ValueError, "'delta'.*pure"),
    ({"row_norm": -2.0}, ValueError, "'row_norm' parameter of DPPCA"),
    ({"method": "magic"}, ValueError, "'method' parameter of DPPCA.*'magic'"),
    ({"relation": "swap"}, ValueError, "'relation' parameter of DPPCA"),
    ({"method": "mod_sulq", "relation": "add_remove"}, ValueError, "'relation'.*mod_sulq"),
    ({"method": "wishart", "calibration": "tight"}, ValueError, "'calibration'.*'paper'"),
    ({"accountant": "mine"}, TypeError, "'accountant'"),
    # the parameter table: every parameter checked before the data are read
    ({"n_components": 1.5}, TypeError, "'n_components' parameter of DPPCA must be an int in \\[1, inf\\)"),
    ({"copy": "yes"}, TypeError, "'copy' parameter of DPPCA must be a bool"),
    ({"mean_share": 1.5}, ValueError, "'mean_share' parameter of DPPCA must be a float in \\(0, 1\\)"),
    ({"random_state": "urandom"}, ValueError, "'random_state' parameter of DPPCA.*'secure'"),
    ({"method_params": ["x"]}, TypeError, "'method_params' parameter of DPPCA must be a dict or None"),
    ({"on_norm_violation": "ignore"}, ValueError, "'on_norm_violation'.*'clip', 'raise'"),
    ({"method": "private_frobenius_lrf"}, ValueError, "PCA method.*use DPLowRank"),
    ({"method": "noisy_power", "centering": [0.0, 0.0, 0.0]}, ValueError,
     "'centering'.*must be None or 'private'.*noisy_power"),
    # adaptive clipping and the noise's shape: estimator parameters, in the table
    ({"adaptive_clip": "yes"}, TypeError, "'adaptive_clip' parameter of DPPCA must be"),
    ({"adaptive_clip": 0.5}, TypeError,
     "'adaptive_clip' parameter of DPPCA must be None or a bool or an AdaptiveClip"),
    ({"noise_shape": "wide"}, ValueError, "'noise_shape' parameter of DPPCA must be"),
    ({"method": "noisy_power", "adaptive_clip": AdaptiveClip(quantile=0.1)}, ValueError,
     "noisy_power picks its clip.*not at a quantile"),
    ({"method": "wishart", "calibration": "paper", "adaptive_clip": AdaptiveClip(share=0.1)}, ValueError,
     "'adaptive_clip'.*must be None.*wishart"),
    ({"delta": 0.0, "adaptive_clip": True}, ValueError, "chose 'ppca'.*adaptive_clip=True"),
    ({"method": "analyze_gauss", "adaptive_clip": AdaptiveClip(quantile=0.5),
      "method_params": {"adaptive_clip": AdaptiveClip(quantile=0.5)}},
     ValueError, "both as parameters and in method_params"),
])
def test_bad_parameters(params, err, match):
    acc = Accountant(10.0, 1e-3)
    kw = {**KW, "accountant": acc, "n_components": 1, **params}
    if kw["accountant"] == "mine":
        acc = Accountant(10.0, 1e-3)
    X = np.random.default_rng(0).normal(size=(20, 3)) * 0.1
    before = X.copy()
    with pytest.raises(err, match=match):
        DPPCA(**kw).fit(X)
    assert acc.entries == ()
    assert np.array_equal(X, before)


def test_nan_input_names_the_problem():
    X = np.ones((5, 3))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPPCA(1, **KW).fit(X)


def test_clone_shares_the_accountant(lowrank_data):
    acc = Accountant(3.0, 1e-6)
    est = DPPCA(2, accountant=acc, **KW)
    twin = clone(est)
    assert twin.accountant is acc
    twin.fit(lowrank_data)
    assert len(acc.entries) == 3  # one fit: private mean, norm histogram and scatter


def test_grid_search_spends_against_the_real_budget(lowrank_data):
    y = (lowrank_data[:, 0] > 0).astype(int)
    # 2 candidates x 2 folds + 1 refit = 5 fits of eps = 1 each (GDP composition: sqrt(5) mu), each of
    # three ledger entries (the private mean, the norm histogram, then the scatter).
    acc = Accountant(3.0, 1e-6)
    pipe = make_pipeline(DPPCA(accountant=acc, random_state=0, **KW), LogisticRegression())
    search = GridSearchCV(pipe, {"dppca__n_components": [1, 2]}, cv=2, error_score="raise")
    search.fit(lowrank_data, y)
    assert len(acc.entries) == 15
    assert 1.0 < acc.epsilon_spent() <= 3.0
    # A second search takes the ledger past its ceiling: the fit that would cross it is refused.
    with pytest.raises(BudgetExceededError):
        search.fit(lowrank_data, y)
    assert 15 < len(acc.entries) < 30 and len(acc.entries) % 3 == 0  # whole fits only
    assert acc.epsilon_spent() <= 3.0


def test_parallel_workers_cannot_spend_a_copy(lowrank_data):
    acc = Accountant(10.0, 1e-6)
    y = (lowrank_data[:, 0] > 0).astype(int)
    pipe = make_pipeline(DPPCA(accountant=acc, random_state=0, **KW), LogisticRegression())
    search = GridSearchCV(pipe, {"dppca__n_components": [1, 2]}, cv=2, n_jobs=2,
                          error_score="raise")
    with pytest.raises(BudgetExceededError, match="pickled copy"):
        search.fit(lowrank_data, y)


def test_fit_on_a_dask_cluster(lowrank_data):
    # The same DPPCA on a real (local) Dask cluster: per-block X^T X run on the workers.
    distributed = pytest.importorskip("dask.distributed")
    da = pytest.importorskip("dask.array")
    ref = DPPCA(2, random_state=3, **KW).fit(lowrank_data)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        X = da.from_array(lowrank_data, chunks=(400, 12))
        est = DPPCA(2, random_state=3, **KW).fit(X)
    assert np.allclose(est.components_, ref.components_, atol=1e-8)
    assert est.privacy_.certified


@pytest.mark.parametrize("method", ["ppca", "exponential"])
def test_pure_epsilon_methods_report_delta_zero(method, lowrank_data):
    # A delta given to the estimator is not passed to a pure epsilon-DP method: a warning says so at
    # fit, and the report says what the method guarantees (delta = 0), with a note on the unused delta.
    from dpspectral import PureEpsilonWarning

    acc = Accountant(5.0, 1e-5)
    with pytest.warns(PureEpsilonWarning, match=rf"method='{method}' is pure epsilon-DP.*delta = 0"):
        est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method=method, accountant=acc,
                    random_state=0).fit(lowrank_data)
    assert est.privacy_.delta == 0.0 and est.privacy_.certified
    assert est.privacy_.requested_delta == 0.0
    assert any("delta=1e-06 given was not used" in note for note in est.privacy_.notes)
    assert est.privacy_.epsilon == pytest.approx(1.0, rel=1e-9)
    assert acc.epsilon_spent() == pytest.approx(1.0, rel=1e-6)


def test_a_method_with_one_calibration_uses_it_by_default(rng):
    """DPPCA(method="wishart") works with the estimator's default calibration="tight"."""
    import warnings

    from dpspectral import UncertifiedPrivacyWarning

    X = rng.normal(size=(300, 4)) * 0.3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="wishart", random_state=0).fit(X)
    assert est.calibration_ == "paper" and not est.privacy_.certified
    assert any(issubclass(w.category, UncertifiedPrivacyWarning) for w in caught)
    assert DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X).calibration_ == "tight"
    with pytest.raises(ValueError, match="must be 'paper' for method='wishart'"):
        DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="wishart", calibration="tight").fit(X)


# -- adaptive clipping through the estimator ------------------------------------
def test_adaptive_clip_parameters_reach_the_method(lowrank_data):
    from dpspectral.pca import analyze_gauss

    for params in ({"adaptive_clip": False, "noise_shape": "iid"},
                   {"adaptive_clip": AdaptiveClip(quantile=0.5, share=0.1)}):
        est = DPPCA(2, method="analyze_gauss", centering=None, random_state=5, **params,
                    **KW).fit(lowrank_data)
        res = analyze_gauss(lowrank_data, 2, random_state=5, **params, **KW)
        np.testing.assert_allclose(est.components_, res.components.T, rtol=0, atol=1e-12)
    assert "clip" not in DPPCA(2, adaptive_clip=False, centering=None, random_state=0, **KW).fit(
        lowrank_data).result_.diagnostics  # the one-release mechanism: one event, no clip
    est = DPPCA(2, adaptive_clip=False, centering=None, random_state=0, **KW).fit(lowrank_data)
    assert len(est.privacy_.events) == 1


def test_adaptive_clip_helps_under_a_loose_bound(lowrank_data):
    """row_norm 4x the largest norm: the released clip comes down to the data's norms and the subspace
    beats the clip at row_norm (seeded; measured margin about 4x the one asserted)."""
    def captured(est):
        V = est.components_.T
        A = lowrank_data.T @ lowrank_data
        return np.trace(V.T @ A @ V) / np.sort(np.linalg.eigvalsh(A))[::-1][:2].sum()

    kw = dict(epsilon=0.3, delta=1e-6, row_norm=4.0, random_state=0)
    loose = DPPCA(2, adaptive_clip=False, **kw).fit(lowrank_data)
    adaptive = DPPCA(2, **kw).fit(lowrank_data)
    assert adaptive.result_.diagnostics["clip"] <= 1.1  # the largest norm is 1
    assert captured(adaptive) > captured(loose) + 0.05
