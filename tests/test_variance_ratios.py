"""Explained variances post-processed from released quantities: valid at every epsilon, never NaN."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from dpspectral import DPPCA, UnresolvedVarianceWarning
from dpspectral._linalg import released_variances


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return load_digits().data / 16.0


def test_an_eigenvalue_above_the_edge_is_debiased_exactly_and_one_below_is_unresolved():
    edge = 10.0
    true = np.array([40.0, 12.0, 6.0])  # spikes above edge / 2 = 5 appear at lam + edge^2 / (4 lam)
    released = true + edge**2 / (4 * true)
    out = released_variances(np.append(released, [9.0, -3.0]), total=200.0, noise_edge=edge)
    np.testing.assert_allclose(out.values[:3], true, rtol=1e-12)
    assert out.values[3] == 0 and out.values[4] == 0
    assert out.resolved.tolist() == [True, True, True, False, False]
    np.testing.assert_allclose(out.ratios, out.values / 200.0)


@pytest.mark.parametrize("total", [None, -5.0, 0.0, 1.0, float("nan")])
def test_ratios_lie_in_the_unit_interval_and_sum_to_at_most_one(total):
    out = released_variances(np.array([3.0, 2.0, -1.0]), total)
    assert np.isfinite(out.ratios).all() and (out.ratios >= 0).all() and (out.ratios <= 1).all()
    assert out.ratios.sum() <= 1 + 1e-12
    nothing = released_variances(np.array([-1.0, -2.0]), total, noise_edge=1.0)
    assert nothing.ratios.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("centering", [None, "private"])
@pytest.mark.parametrize("epsilon", [1e-3, 1e-2, 0.05, 0.3, 1.0, 4.0])
def test_dppca_ratios_are_valid_at_every_epsilon(digits, epsilon, centering):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedVarianceWarning)
        pca = DPPCA(8, epsilon=epsilon, delta=1e-6, row_norm=8.0, centering=centering,
                    random_state=0).fit(digits)
    for ratios in (pca.explained_variance_ratio_,):
        assert np.isfinite(ratios).all() and (ratios >= 0).all() and (ratios <= 1).all()
        assert ratios.sum() <= 1 + 1e-12
    assert np.isfinite(pca.explained_variance_).all() and (pca.explained_variance_ >= 0).all()


def test_an_unresolved_release_warns_and_reports_zero(digits):
    with pytest.warns(UnresolvedVarianceWarning, match="does not resolve the variance of 8 of the 8"):
        pca = DPPCA(8, epsilon=1e-3, delta=1e-6, row_norm=8.0, random_state=0).fit(digits)
    assert pca.explained_variance_ratio_.tolist() == [0.0] * 8


def test_privately_centred_ratios_approach_scikit_learns(digits):
    """In the low-noise limit the released ratios are scikit-learn's (the benchmark measures epsilon 1)."""
    reference = PCA(5).fit(digits).explained_variance_ratio_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the weak-guarantee warning of a huge epsilon
        pca = DPPCA(5, epsilon=1e5, delta=1e-6, row_norm=8.0, centering="private", adaptive_clip=False,
                    random_state=0).fit(digits)
    np.testing.assert_allclose(pca.explained_variance_ratio_, reference, atol=0.01)


def test_a_method_that_releases_no_eigenvalues_says_so(digits):
    pca = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=8.0, method="noisy_power", random_state=0).fit(digits)
    assert not hasattr(pca, "explained_variance_ratio_")
    with pytest.raises(AttributeError, match="method='noisy_power'.*releases no eigenvalues"):
        pca.explained_variance_  # noqa: B018
