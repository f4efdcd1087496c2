"""DPLinearDiscriminantAnalysis: scikit-learn's LDA in the zero-noise limit, one release charged,
bad input refused before the charge, utility on a seeded set."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from dpspectral import Accountant, DPLinearDiscriminantAnalysis

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)


def _data(n=600, d=6, K=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) / 4 + np.eye(K, d)[y] / 2
    return X / np.linalg.norm(X, axis=1).max(), y  # inside the unit ball: clipping changes nothing


@pytest.mark.parametrize("K", [2, 3, 4])
def test_zero_noise_limit_is_sklearn_lda(K):
    X, y = _data(K=K)
    clf = DPLinearDiscriminantAnalysis(epsilon=1e12, delta=1e-6, row_norm=1.0, classes=list(range(K)),
                                       random_state=0).fit(X, y)
    ref = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), ref.predict(X))
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-5)
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(clf.means_, ref.means_, atol=1e-6)
    np.testing.assert_allclose(clf.priors_, ref.priors_, atol=1e-8)
    np.testing.assert_allclose(clf.covariance_, ref.covariance_, atol=1e-8)
    assert clf.score(X, y) == ref.score(X, y)
    Z = clf.transform(X)
    assert Z.shape == (len(X), K - 1) and clf.get_feature_names_out()[0].startswith("dplineardiscriminant")
    # the projection spans the same space as sklearn's eigen solver
    eig = LinearDiscriminantAnalysis(solver="eigen").fit(X, y).scalings_[:, : K - 1]
    P = np.linalg.qr(clf.scalings_)[0]
    np.testing.assert_allclose(np.linalg.svd(P.T @ np.linalg.qr(eig)[0])[1], 1.0, atol=1e-6)


def test_one_release_is_charged_and_reported():
    X, y = _data()
    acc = Accountant()
    clf = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], accountant=acc, random_state=0, **KW).fit(X, y)
    # adaptive clipping (default): two stages, the norm histogram and the moments at the released clip
    assert len(acc.entries) == 2 and clf.privacy_.certified and clf.privacy_.epsilon <= 1.0
    assert len(clf.privacy_.events) == 2 and clf.privacy_.relation.value == "replace_one"
    one = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], random_state=0, adaptive_clip=False, **KW).fit(X, y)
    assert len(one.privacy_.events) == 1 and one.moments_.clip is None  # the one release at the bound
    ar = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], relation="add_remove", random_state=0, **KW)
    ar.fit(X, y)
    assert ar.privacy_.relation.value == "add_remove" and ar.moments_.n_samples is None


def test_accuracy_close_to_non_private_lda_on_a_seeded_set():
    # 3 classes, d = 20, n = 40,000 (+ 4,000 to test), epsilon = 1: within 0.03 of LDA (2 seeds)
    rng = np.random.default_rng(2)
    n, d = 44000, 20
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) / 6 + np.eye(3, d)[y] / 4
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    Xtr, ytr, Xte, yte = X[:40000], y[:40000], X[40000:], y[40000:]
    ref = LinearDiscriminantAnalysis(solver="lsqr").fit(Xtr, ytr).score(Xte, yte)
    fits = [DPLinearDiscriminantAnalysis(classes=[0, 1, 2], random_state=s, **KW).fit(Xtr, ytr)
            for s in range(2)]
    acc = [f.score(Xte, yte) for f in fits]
    assert np.mean(acc) > ref - 0.03, (acc, ref)
    assert np.mean(acc) > 0.5  # three classes: chance is 1/3


def test_unseen_public_class_follows_the_documented_rule():
    X, y = _data()
    clf = DPLinearDiscriminantAnalysis(classes=[0, 1, 2, 3], random_state=0, **KW).fit(X, y)
    floor = clf.moments_.count_floor()
    assert clf.priors_.shape == (4,) and clf.priors_[3] * np.sum(np.maximum(clf.moments_.counts, floor)) \
        == pytest.approx(max(clf.moments_.counts[3], floor))
    assert np.linalg.norm(clf.means_[3]) <= 1.0 + 1e-9  # projected onto the row-norm ball
    assert clf.predict_proba(X).shape == (len(X), 4)


@pytest.mark.parametrize("kwargs,fit,match", [
    (dict(classes=[0, 1, 2]), dict(y=np.r_[np.zeros(599, int), 5]), "not in the public 'classes'"),
    (dict(), dict(y=np.zeros(10, int)), "inconsistent numbers of samples"),
    (dict(), dict(X=np.full((600, 6), np.nan)), "NaN"),
    (dict(), dict(y=np.r_[np.zeros(599), np.nan]), "NaN|continuous"),
    (dict(n_components=3, classes=[0, 1, 2]), dict(), "n_components"),
    (dict(n_components=7), dict(), "n_components"),  # classes=None: > n_features, before the charge
    (dict(priors=[0.2, 0.3, 0.5]), dict(), "'priors' parameter.*'classes'"),  # priors need public classes
    (dict(ridge=0.0), dict(), "'ridge' parameter"),
    (dict(ridge=-2.0), dict(), "'ridge' parameter"),
    (dict(priors=[0.5, 0.6, -0.1]), dict(), "'priors' parameter"),
    (dict(relation="local"), dict(), "'relation' parameter"),
    (dict(epsilon=None), dict(), "'epsilon' parameter"),
])
def test_bad_input_is_refused_before_anything_is_charged(kwargs, fit, match):
    X, y = _data()
    acc = Accountant()
    args = {**KW, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        DPLinearDiscriminantAnalysis(accountant=acc, **args).fit(fit.get("X", X), fit.get("y", y))
    assert acc.entries == ()


def test_a_single_label_is_refused_after_the_label_release():
    """classes=None and one label in y: the label set is released (one label), then the fit refuses
    with a data-free message; the label stage stays charged (a decision on a released value)."""
    X, _ = _data()
    acc = Accountant()
    with pytest.raises(ValueError, match="fewer than 2 labels") as err:
        DPLinearDiscriminantAnalysis(accountant=acc, **KW).fit(X, np.zeros(600, int))
    assert "600" not in str(err.value) and len(acc.entries) == 1


def test_public_priors_replace_the_released_ones():
    X, y = _data()
    clf = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], priors=[0.2, 0.3, 0.5], random_state=0, **KW)
    clf.fit(X, y)
    np.testing.assert_allclose(clf.priors_, [0.2, 0.3, 0.5])


def test_secure_noise_and_a_shared_budget():
    from sklearn.base import clone

    from dpspectral import BudgetExceededError

    X, y = _data()
    a = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], random_state="secure", **KW).fit(X, y)
    b = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], random_state="secure", **KW).fit(X, y)
    assert a.privacy_.noise_source == "secure" and a.privacy_.certified
    assert not np.array_equal(a.coef_, b.coef_) and np.isfinite(a.coef_).all()
    acc = Accountant(1.2, 1e-6)  # two fits at epsilon = 1 compose to about 1.45 (Gaussian DP)
    est = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], accountant=acc, **KW)
    assert clone(est).accountant is acc
    clone(est).fit(X, y)
    with pytest.raises(BudgetExceededError):
        clone(est).fit(X, y)
    assert len(acc.entries) == 2  # the first fit's two stages; the second was refused before its first


def test_add_remove_fits_an_empty_data_set():
    # under add/remove the empty data set is a neighbour of a one-row one: it is released, not refused
    from dpspectral import DPFisherDiscriminant

    X, y = np.zeros((0, 4)), np.zeros(0, int)
    clf = DPLinearDiscriminantAnalysis(classes=[0, 1, 2], relation="add-remove", random_state=0, **KW)
    clf.fit(X, y)
    assert clf.coef_.shape == (3, 4) and np.isfinite(clf.coef_).all()
    fda = DPFisherDiscriminant(classes=[0, 1, 2], relation="add_remove", random_state=0, **KW).fit(X, y)
    assert fda.scalings_.shape == (4, 2)
    with pytest.raises(ValueError, match="0 sample"):  # replace-one: n is public and at least 1
        DPLinearDiscriminantAnalysis(classes=[0, 1, 2], random_state=0, **KW).fit(X, y)
