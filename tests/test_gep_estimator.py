"""DPFisherDiscriminant: scikit-learn's checks, the estimator contract, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.neighbors import NearestCentroid
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpspectral import Accountant, BudgetExceededError, UncertifiedPrivacyWarning
from dpspectral.gep import DPFisherDiscriminant

EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _instances():
    # a large epsilon: the checks' small data (tens of rows per class) pass the private label release's
    # threshold (classes=None); the checks test the scikit-learn contract, not the privacy/utility trade-off
    return [
        DPFisherDiscriminant(1, epsilon=1e4, delta=1e-5, row_norm=100.0, random_state=0),
        DPFisherDiscriminant(1, epsilon=1e4, delta=1e-5, row_norm=100.0, method="sr_dp",
                             random_state=0),
    ]


@parametrize_with_checks(_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(n=3000, d=5, K=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) / 4 + np.eye(K, d)[y] / 2
    return X, y


def test_fit_transform_and_fitted_state():
    X, y = _data()
    X_before = X.copy()
    est = DPFisherDiscriminant(epsilon=1.0, delta=1e-6, row_norm=1.5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X_before)
    assert est.n_components_ == 2  # min(n_classes - 1, n_features), as sklearn's LDA
    assert est.scalings_.shape == (5, 2) and est.components_.shape == (2, 5)
    np.testing.assert_allclose(est.transform(X), X @ est.scalings_)
    assert list(est.classes_) == [0, 1, 2]
    assert est.privacy_.certified and est.privacy_.relation.value == "replace_one"
    assert list(est.get_feature_names_out()) == ["dpfisherdiscriminant0", "dpfisherdiscriminant1"]
    # sparse input gives the same fit
    dense = DPFisherDiscriminant(2, epsilon=1.0, delta=1e-6, row_norm=1.5, random_state=0).fit(X, y)
    sparse = DPFisherDiscriminant(2, epsilon=1.0, delta=1e-6, row_norm=1.5, random_state=0).fit(
        sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.scalings_, dense.scalings_, atol=1e-10)


def test_private_directions_classify_well_at_moderate_epsilon():
    X, y = _data(n=20000, seed=1)
    Xt, yt = _data(n=5000, seed=2)
    for method in ("dpsr", "sr_dp", "dp_rayleigh_flow"):
        est = DPFisherDiscriminant(2, epsilon=2.0, delta=1e-6, row_norm=1.5, method=method,
                                   random_state=0, classes=[0, 1, 2]).fit(X, y)
        clf = NearestCentroid().fit(est.transform(X), y)
        assert clf.score(est.transform(Xt), yt) > 0.8, method


def test_nonprivate_reference_is_labelled():
    X, y = _data()
    with pytest.warns(UncertifiedPrivacyWarning, match="NON-PRIVATE"):
        est = DPFisherDiscriminant(2, row_norm=1.5, method="sr").fit(X, y)
    assert not est.privacy_.certified and est.privacy_.epsilon == float("inf")


def test_clone_shares_the_accountant():
    acc = Accountant(1.0, 1e-6)
    est = DPFisherDiscriminant(2, epsilon=0.7, delta=1e-6, row_norm=1.5, accountant=acc, classes=[0, 1, 2])
    assert clone(est).accountant is acc
    X, y = _data(n=500)
    clone(est).fit(X, y)
    with pytest.raises(BudgetExceededError):
        clone(est).fit(X, y)
    assert len(acc.entries) == 2  # the first fit's two stages (norm histogram, moments); none of the second


@pytest.mark.parametrize("params,y_kind,match", [
    ({"n_components": 3, "classes": [0, 1, 2]}, None, "'n_components'.*n_classes - 1"),
    ({"classes": [0, 1]}, None, "not in the public 'classes' \\[0, 1\\]"),
    ({"regularization": 0.0}, None, "'regularization'.*\\(0, inf\\)"),
    ({"regularization": -1.0}, None, "'regularization'"),
    ({"method": "dpsrs"}, None, "'sparsity'.*required"),
    ({"method": "dpsrs", "sparsity": 0}, None, "'sparsity'"),
    ({"method": "dpsrs", "sparsity": 6}, None, "'sparsity'.*\\[1, 5\\]"),
    ({"sparsity": 2}, None, "'sparsity'.*must be None"),
    ({"method": "lda"}, None, "'method'"),
    ({"epsilon": None}, None, "'epsilon'.*required"),
    ({"delta": 0.0}, None, "'delta'"),
    ({"row_norm": None}, None, "'row_norm'"),
    ({"n_components": 6}, None, "'n_components'"),
    ({"n_iter": 0}, None, "'n_iter'"),
    ({"calibration": "loose"}, None, "'calibration'"),
    # the parameter table
    ({"n_components": 0}, None, "'n_components' parameter of DPFisherDiscriminant must be an int"),
    ({"n_iter": 2.5}, None, "'n_iter' parameter of DPFisherDiscriminant must be an int in \\[1, inf\\)"),
    ({"accountant": "mine"}, None, "'accountant' parameter of DPFisherDiscriminant must be a dpspectral"),
    ({"method_params": 3}, None, "'method_params'.*must be a dict or None"),
    ({"random_state": -1}, None, "'random_state'"),
    ({"on_norm_violation": "drop"}, None, "'on_norm_violation'"),
    ({"delta": None}, None, "The 'delta' parameter of DPFisherDiscriminant is required \\(a public"),
])
def test_bad_input(params, y_kind, match):
    X, y = _data(n=200)
    if y_kind == "one_class":
        y = np.zeros_like(y)
    acc = Accountant(10.0, 1e-6)
    kwargs = {"epsilon": 1.0, "delta": 1e-6, "row_norm": 1.5, "accountant": acc, **params}
    with pytest.raises(ValueError, match=match):
        DPFisherDiscriminant(**kwargs).fit(X, y)
    assert acc.entries == ()


def test_secure_noise_source():
    X, y = _data(n=3000)  # classes of ~1000 rows: above the label release's threshold (classes=None)
    a = DPFisherDiscriminant(2, epsilon=1.0, delta=1e-6, row_norm=1.5, random_state="secure").fit(X, y)
    b = DPFisherDiscriminant(2, epsilon=1.0, delta=1e-6, row_norm=1.5, random_state="secure").fit(X, y)
    assert a.privacy_.noise_source == "secure" and a.privacy_.certified
    assert not np.array_equal(a.scalings_, b.scalings_)
    # the non-private reference draws nothing; its report gives the source asked for
    with pytest.warns(UncertifiedPrivacyWarning):
        ref = DPFisherDiscriminant(2, row_norm=1.5, method="sr", random_state="secure").fit(X, y)
    assert ref.privacy_.noise_source == "secure" and not ref.privacy_.certified


def test_regularization_is_named_as_in_private_fda_and_xi_still_works_with_a_warning():
    from dpspectral import DPFisherDiscriminant

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.repeat([0, 1, 2], 100)
    kw = dict(epsilon=1.0, delta=1e-5, row_norm=5.0, method="dpsr", classes=[0, 1, 2], random_state=3)
    new = DPFisherDiscriminant(2, regularization=0.05, **kw).fit(X, y)
    with pytest.warns(FutureWarning, match="'xi' parameter of DPFisherDiscriminant is now called"):
        old = DPFisherDiscriminant(2, xi=0.05, **kw).fit(X, y)
    np.testing.assert_array_equal(new.scalings_, old.scalings_)
    other = DPFisherDiscriminant(2, regularization=0.5, **kw).fit(X, y)
    assert not np.array_equal(new.scalings_, other.scalings_)
