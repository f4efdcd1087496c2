"""DPPCA's scikit-learn PCA interface, from released quantities only.

In the low-noise limit (a huge epsilon, no adaptive clip, a centre equal to the true mean or a private
one, every row within ``row_norm`` so nothing is clipped) each attribute and method matches
scikit-learn's ``PCA`` to a tolerance: ``singular_values_``, ``noise_variance_``, ``get_covariance``,
``get_precision``, ``score_samples``/``score``, ``whiten`` and ``n_components`` as a fraction of the
variance. Also: float32 in, float32 out; a Dask array in, a lazy Dask array out; the refusals (before
anything is charged) for methods that release no eigenvalues.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA

from dpspectral import DPPCA, Accountant

SCALES = np.array([0.5, 0.3, 0.2, 0.1, 0.05, 0.02])
LOW_NOISE = dict(epsilon=1e6, delta=1e-5, row_norm=10.0, adaptive_clip=False, random_state=0)


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    X = rng.normal(size=(5000, 6)) * SCALES + 0.2
    assert np.linalg.norm(X - X.mean(0), axis=1).max() < LOW_NOISE["row_norm"]  # nothing is clipped
    return X


def _fit(X: np.ndarray, n_components, centering, **kw) -> DPPCA:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the epsilon above 10 warning: the point of the low-noise limit
        return DPPCA(n_components, centering=centering, **{**LOW_NOISE, **kw}).fit(X)


def _centre(X: np.ndarray, kind: str):
    return X.mean(0) if kind == "public" else "private"


@pytest.mark.parametrize("centering", ["public", "private"])
@pytest.mark.parametrize("whiten", [False, True])
def test_attributes_and_model_match_sklearn_in_the_low_noise_limit(data, centering, whiten):
    est = _fit(data, 2, _centre(data, centering), whiten=whiten)
    ref = PCA(2, whiten=whiten).fit(data)
    assert np.allclose(est.singular_values_, ref.singular_values_, rtol=1e-3)
    # singular values are those of the centred scatter: explained_variance_ * (n - 1)
    assert np.allclose(est.singular_values_ ** 2, est.explained_variance_ * (est.n_samples_ - 1))
    # the released scatter's noise moves each eigenvalue by at most its spectral norm (Weyl), which the
    # public noise_edge bounds: noise_variance_ (the mean of the d - k smallest, over n - 1) lies within
    # noise_edge / (n - 1), here 5e-3 relative (over 200 seeds the error's std is 8e-4, its max 2.6e-3)
    edge = est.result_.diagnostics["noise_edge"] / (est.n_samples_ - 1)
    assert edge < 1e-2 * ref.noise_variance_  # the low-noise limit: a tolerance that still has teeth
    assert est.noise_variance_ == pytest.approx(ref.noise_variance_, abs=edge)
    assert np.allclose(est.get_covariance(), ref.get_covariance(), atol=1e-4)
    # the precision is about 1 / noise_variance_ across the d - k smallest: the same relative error
    precision = ref.get_precision()
    rel = max(1e-3, edge / ref.noise_variance_)
    assert np.allclose(est.get_precision(), precision, atol=rel * np.abs(precision).max())
    assert np.allclose(est.get_precision() @ est.get_covariance(), np.eye(6), atol=1e-8)
    # a row's log-likelihood moves with the precision: by about rel (d + its Mahalanobis norm) / 2
    centred = data - ref.mean_
    mahalanobis = np.einsum("ij,jk,ik->i", centred, precision, centred)
    assert np.allclose(est.score_samples(data), ref.score_samples(data), atol=rel * (6 + mahalanobis) / 2)
    assert est.score(data) == pytest.approx(ref.score(data), abs=2e-3)
    Z, Zr = est.transform(data), ref.transform(data)
    assert np.allclose(np.abs(Z), np.abs(Zr), atol=2e-3)
    assert np.allclose(est.inverse_transform(Z), ref.inverse_transform(Zr), atol=1e-3)


def test_whiten_gives_unit_variance_and_round_trips(data):
    est = _fit(data, 3, data.mean(0), whiten=True)
    Z = est.transform(data)
    assert np.allclose(Z.var(axis=0, ddof=1), 1.0, atol=1e-3)
    plain = _fit(data, 3, data.mean(0))
    assert np.allclose(Z * np.sqrt(est.explained_variance_), plain.transform(data))
    # the round trip of the projection: inverse_transform undoes the whitening
    assert np.allclose(est.inverse_transform(Z), plain.inverse_transform(plain.transform(data)))
    assert np.allclose(est.transform(est.inverse_transform(Z)), Z)


def test_all_components_kept_noise_variance_zero_and_precision_inverse(data):
    est = _fit(data, None, data.mean(0))
    assert est.noise_variance_ == 0.0
    assert np.allclose(est.get_precision(), np.linalg.inv(est.get_covariance()))


@pytest.mark.parametrize("fraction", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_fraction_of_variance_chooses_from_the_released_ratios(data, fraction):
    est = _fit(data, fraction, data.mean(0))
    ref = PCA(fraction).fit(data)
    assert est.n_components_ == ref.n_components_
    assert est.components_.shape == (est.n_components_, 6)
    assert est.explained_variance_.shape == (est.n_components_,)
    assert est.transform(data).shape == (5000, est.n_components_)
    cumulative = np.cumsum(est.explained_variance_ratio_)
    assert cumulative[-1] > fraction and (est.n_components_ == 1 or cumulative[-2] <= fraction)
    assert est.noise_variance_ == pytest.approx(ref.noise_variance_, rel=1e-2)


def test_fraction_costs_the_same_as_one_fit():
    X = np.random.default_rng(1).normal(size=(500, 5)) / 5
    spent = []
    for n_components in (0.9, 2):
        acc = Accountant()
        DPPCA(n_components, epsilon=1.0, delta=1e-6, row_norm=1.0, method="analyze_gauss",
              adaptive_clip=False, accountant=acc, random_state=0).fit(X)
        spent.append((acc.events, acc.spent()))
    assert spent[0] == spent[1]


def test_fraction_chosen_from_noisy_ratios_at_a_small_epsilon(data):
    est = DPPCA(0.9, epsilon=0.5, delta=1e-6, row_norm=2.0, method="analyze_gauss", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(data)
    released = est.explained_variance_ratio_
    assert 1 <= est.n_components_ <= 6 and released.shape == (est.n_components_,)
    assert np.cumsum(released)[-1] > 0.9 or est.n_components_ == 6


@pytest.mark.parametrize("method", ["noisy_power", "ppca", "exponential"])
def test_fraction_refused_where_the_release_has_no_full_spectrum(data, method):
    acc = Accountant()
    delta = 0.0 if method in ("ppca", "exponential") else 1e-6
    est = DPPCA(0.9, epsilon=1.0, delta=delta, row_norm=2.0, method=method, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="'n_components' parameter of DPPCA must be an int or None for "
                       f"method='{method}'.*Nothing was charged"):
        est.fit(data)
    assert not acc.events


def test_fraction_refused_for_a_stream_and_out_of_range(data):
    blocks = [data[:2500], data[2500:]]
    with pytest.raises(ValueError, match="must be an int when the data are a stream"):
        DPPCA(0.9, epsilon=1.0, delta=1e-6, row_norm=2.0, method="analyze_gauss").fit(iter(blocks))
    for bad in (1.5, 0.0, -0.2):
        with pytest.raises(ValueError, match=r"'n_components' parameter of DPPCA must be an int in "
                           r"\[1, inf\), a float in \(0, 1\) or None"):
            DPPCA(bad, epsilon=1.0, delta=1e-6, row_norm=2.0).fit(data)


@pytest.mark.parametrize("method", ["noisy_power", "dp_spca"])
def test_whiten_and_the_model_refused_without_released_eigenvalues(data, method):
    acc = Accountant()
    est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=2.0, method=method, whiten=True, accountant=acc,
                random_state=0)
    with pytest.raises(ValueError, match=f"'whiten' parameter of DPPCA must be False for method='{method}'"
                       ".*no eigenvalues.*Nothing was charged"):
        est.fit(data)
    assert not acc.events
    est.set_params(whiten=False, accountant=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(data)
    for name in ("singular_values_", "noise_variance_"):
        with pytest.raises(AttributeError, match="releases no eigenvalues"):
            getattr(est, name)
    for name in ("get_covariance", "get_precision", "score_samples", "score"):
        assert not hasattr(est, name)  # scikit-learn's available_if: these need noise_variance_


def test_whiten_refused_for_ppca_with_one_component(data):
    with pytest.raises(ValueError, match="'whiten' parameter of DPPCA must be False for method='ppca'"):
        DPPCA(1, epsilon=1.0, delta=0.0, row_norm=2.0, method="ppca", whiten=True).fit(data)


@pytest.mark.parametrize("whiten", [False, True])
def test_float32_in_float32_out(data, whiten):
    X32 = data.astype(np.float32)
    est = _fit(X32, 2, "private", whiten=whiten)
    for name in ("components_", "mean_", "explained_variance_", "explained_variance_ratio_",
                 "singular_values_"):
        assert getattr(est, name).dtype == np.float32, name
    Z = est.transform(X32)
    assert Z.dtype == np.float32 and Z.shape == (5000, 2)
    assert est.fit_transform(X32).dtype == np.float32
    assert est.inverse_transform(Z).dtype == np.float32
    assert est.get_covariance().dtype == np.float32 and est.get_precision().dtype == np.float32
    assert est.score_samples(X32).dtype == np.float32
    assert est.transform(data).dtype == np.float64  # float64 data: float64, as scikit-learn
    ref = _fit(data, 2, "private", whiten=whiten)
    assert np.allclose(Z, ref.transform(data), atol=1e-4)
    assert "float32" in est.__sklearn_tags__().transformer_tags.preserves_dtype


def test_float64_shapes(data):
    est = _fit(data, 3, None)
    assert est.components_.dtype == np.float64
    assert est.singular_values_.shape == (3,) and isinstance(est.noise_variance_, float)
    assert est.get_covariance().shape == (6, 6) and est.get_precision().shape == (6, 6)
    assert est.score_samples(data).shape == (5000,) and isinstance(est.score(data), float)


@pytest.mark.parametrize("whiten", [False, True])
def test_dask_transform_is_a_lazy_dask_array(data, whiten):
    da = pytest.importorskip("dask.array")
    est = _fit(data, 2, data.mean(0), whiten=whiten)
    calls = []

    def counted(block):
        if block.size:  # not dask's inference of the output type on an empty block
            calls.append(1)
        return block

    X = da.from_array(data, chunks=(1000, 3)).map_blocks(counted, dtype=data.dtype)
    Z = est.transform(X)
    assert isinstance(Z, da.Array) and Z.shape == (5000, 2) and Z.dtype == np.float64
    assert not calls  # nothing computed
    assert np.allclose(Z.compute(), est.transform(data))
    back = est.inverse_transform(Z)
    assert isinstance(back, da.Array)
    assert np.allclose(back.compute(), est.inverse_transform(est.transform(data)))
    Z32 = est.transform(da.from_array(data.astype(np.float32), chunks=1000))
    assert Z32.dtype == np.float64  # a float64 model: float64 out, as for NumPy
    with pytest.raises(ValueError, match="expects shape"):
        est.transform(da.from_array(data[:, :4], chunks=1000))
