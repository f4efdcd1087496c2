"""DPPCA centres by default (a private mean in the same release); the functions keep the second moment.

``centering="private"`` (the estimator's default) centres with the covariance methods; a method that
cannot centre runs uncentred with an UncentredWarning and a report note; a public centre given to such
a method is refused before anything is charged. Deterministic (fixed seeds); a few seconds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

import dpspectral
from dpspectral import DPPCA, Accountant, UncentredWarning, analyze_gauss

PRIVACY = dict(epsilon=1.0, delta=1e-6, row_norm=8.0)


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return load_digits().data / 16.0


def test_default_is_private_centering_and_survives_clone():
    est = DPPCA(3, **PRIVACY)
    assert est.get_params()["centering"] == "private"
    assert clone(est).get_params()["centering"] == "private"
    assert issubclass(UncentredWarning, UserWarning)
    assert "UncentredWarning" in dpspectral.__all__


def test_default_fit_is_centred_like_sklearn(digits):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncentredWarning)
        est = DPPCA(3, random_state=0, **PRIVACY).fit(digits)
    assert est.method_ == "analyze_gauss"
    assert np.linalg.norm(est.mean_) > 1.0  # a released mean, not the zeros of an uncentred release
    mean = digits.mean(axis=0)
    # the released mean's relative error is about 0.28 +- 0.02 at this budget (12 seeds, either noise
    # source): below 0.5 (a false failure needs a 9-std deviation); the zeros of no release give 1
    assert np.linalg.norm(est.mean_ - mean) < 0.5 * np.linalg.norm(mean)
    ref = PCA(3).fit(digits).explained_variance_ratio_
    np.testing.assert_allclose(est.explained_variance_ratio_, ref, atol=0.06)
    # the mean is one of the releases of the same report (charged together)
    assert len(est.privacy_.events) >= 3


def test_centering_none_is_the_functions_uncentred_release(digits):
    est = DPPCA(3, centering=None, random_state=0, **PRIVACY).fit(digits)
    res = analyze_gauss(digits, 3, random_state=0, **PRIVACY)
    np.testing.assert_array_equal(est.components_, res.components.T)
    assert not np.any(est.mean_)
    assert est.explained_variance_ratio_[0] > 0.5  # the second moment's first axis is the mean


@pytest.mark.parametrize("method", ["noisy_power", "dp_spca"])
def test_a_method_that_cannot_centre_runs_uncentred_and_says_so(method, digits):
    with pytest.warns(UncentredWarning, match="centering=None"):
        est = DPPCA(2, method=method, random_state=0, **PRIVACY).fit(digits)
    assert not np.any(est.mean_)
    assert any("uncentred" in note for note in est.privacy_.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncentredWarning)
        plain = DPPCA(2, method=method, centering=None, random_state=0, **PRIVACY).fit(digits)
    np.testing.assert_array_equal(est.components_, plain.components_)
    assert not any("uncentred" in note for note in plain.privacy_.notes)


def test_auto_under_pure_epsilon_warns(digits):
    with pytest.warns(UncentredWarning):
        est = DPPCA(2, epsilon=1.0, delta=0.0, row_norm=8.0, random_state=0).fit(digits)
    assert est.method_ == "ppca"


@pytest.mark.parametrize("method", ["noisy_power", "auto"])
def test_a_public_centre_is_refused_before_the_charge(method, digits):
    ledger = Accountant()
    est = DPPCA(2, epsilon=1.0, delta=0.0 if method == "auto" else 1e-6, row_norm=8.0, method=method,
                centering=np.zeros(digits.shape[1]), accountant=ledger)
    with pytest.raises(ValueError, match="centering"):
        est.fit(digits)
    assert not ledger.entries
