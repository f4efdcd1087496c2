"""Array API support: the covered methods compute in the input's namespace, on CPU.

With array-api-strict (a strict, NumPy-backed namespace: any call outside the standard fails) and with
PyTorch's CPU device (``pytest.importorskip("torch")``), so CI needs no GPU. What is checked:

* the NumPy and array-API paths give the same components in the zero-noise limit (huge epsilon) and the
  same privacy report (events, epsilon); the results are arrays of the input's namespace;
* seeded reproducibility on the device; the noise drawn has the planned law (std per entry);
* ``random_state="secure"``: the host's secure noise, copied to the device, every released value on its
  grid;
* bad input, refused before anything is charged (an Accountant's entries stay empty): a device array
  with dispatch off, float16, mixed namespaces between fit and transform, a method that is not covered.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpspectral
from dpspectral import DPPCA, Accountant, analyze_gauss, mod_sulq, noisy_power, to_numpy, wishart
from dpspectral._array_api import config_context
from dpspectral.privacy._device_noise import DeviceNoise
from dpspectral.privacy._rounding import MAX_WIDENING

xps = pytest.importorskip("array_api_strict")

N, D, K = 1501, 10, 3  # (1 - 0.1) N not an integer: no tie at the quantile walk
HUGE_EPSILON = 1e8  # noise multiplier ~7e-5: the zero-noise limit at this data's eigen-gaps


def _spiked(seed: int = 0) -> np.ndarray:
    """Rows of norm <= 1 with well separated top eigenvalues (public, synthetic)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) * np.geomspace(4.0, 0.3, D)
    return X / np.linalg.norm(X, axis=1).max()


def _torch():
    return pytest.importorskip("torch")


NAMESPACES = ["array_api_strict", "torch"]


def _convert(X: np.ndarray, namespace: str, dtype: str = "float64"):
    if namespace == "torch":
        torch = _torch()
        return torch.asarray(X, dtype=getattr(torch, dtype))
    return xps.asarray(X, dtype=getattr(xps, dtype))


def _module(a) -> str:
    return type(a).__module__.split(".")[0]


def _same_subspace(V0: np.ndarray, V1: np.ndarray, tol: float) -> None:
    assert V0.shape == V1.shape
    gap = np.linalg.norm(V0 @ V0.T - V1 @ V1.T, 2)
    assert gap < tol, gap
    assert np.abs(V0 - V1).max() < 10 * tol  # same order and signs (fix_signs on both paths)


CASES = [
    (analyze_gauss, {}),
    (analyze_gauss, {"centering": "private"}),
    (analyze_gauss, {"adaptive_clip": False}),
    (analyze_gauss, {"relation": "add_remove", "release_count": True}),
    (mod_sulq, {}),
    (noisy_power, {}),
    (noisy_power, {"adaptive_clip": False}),
    (analyze_gauss, {"row_norm": 0.4, "adaptive_clip": False}),  # rows above the bound: clipped
    (noisy_power, {"row_norm": 0.4}),
    (analyze_gauss, {"row_norm": 0.4, "centering": "private"}),
]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("method", "options"), CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_zero_noise_limit_same_components_and_report(namespace, method, options):
    X = _spiked()
    kwargs = {**dict(epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=3), **options}
    ref = method(X, K, **kwargs)
    Xd = _convert(X, namespace)
    with config_context(array_api_dispatch=True):
        out = method(Xd, K, **kwargs)
    assert _module(out.components) == _module(Xd)
    if out.values is not None:
        assert _module(out.values) == _module(Xd)
    if options.get("centering") == "private":
        assert _module(out.mean) == _module(Xd)
    _same_subspace(ref.components, to_numpy(out.components), tol=2e-3)
    assert out.privacy.events == ref.privacy.events
    assert out.privacy.epsilon == pytest.approx(ref.privacy.epsilon, rel=1e-12)
    assert out.privacy.delta == ref.privacy.delta
    assert out.privacy.noise_source == "exact" and ref.privacy.noise_source == "exact"
    assert out.diagnostics.get("clip") == ref.diagnostics.get("clip")  # the same released clip
    # the same multiplier; the scale differs only by each path's rounding widening (docs/noise.md: under
    # add/remove the CPU path's, summed in groups, at up to 2**28 public rows, within 0.5 %)
    widening = MAX_WIDENING if options.get("relation") == "add_remove" else 1e-6
    assert out.diagnostics["noise_std"] == pytest.approx(ref.diagnostics["noise_std"], rel=widening)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_float32_input_gives_float32_results(namespace):
    """The moments are summed in float64 (their rounding would otherwise dominate the noise:
    docs/noise.md, "Rounding in the statistic"); the released results come back in X's float32."""
    X = _spiked()
    ref = analyze_gauss(X, K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=0)
    Xd = _convert(X, namespace, "float32")
    with config_context(array_api_dispatch=True):
        out = analyze_gauss(Xd, K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=0)
    assert out.components.dtype == Xd.dtype
    _same_subspace(ref.components, to_numpy(out.components).astype(np.float64), tol=5e-3)


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("method", [analyze_gauss, noisy_power])
def test_seeded_reproducible_on_the_device(namespace, method):
    Xd = _convert(_spiked(), namespace)
    kwargs = dict(epsilon=0.5, delta=1e-5, row_norm=1.0)
    with config_context(array_api_dispatch=True):
        a = to_numpy(method(Xd, K, random_state=11, **kwargs).components)
        b = to_numpy(method(Xd, K, random_state=11, **kwargs).components)
        c = to_numpy(method(Xd, K, random_state=12, **kwargs).components)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-6  # another seed, other noise


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("method", ["analyze_gauss", "noisy_power"])
def test_dppca_attributes_in_the_input_namespace(namespace, method):
    X = _spiked()
    params = dict(n_components=K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, method=method,
                  random_state=0)
    ref = DPPCA(**params).fit(X)
    Xd = _convert(X, namespace)
    with config_context(array_api_dispatch=True):
        est = DPPCA(**params).fit(Xd)
        Z = est.transform(Xd)
        back = est.inverse_transform(Z)
    for name in ("components_", "mean_", "explained_variance_", "explained_variance_ratio_"):
        if hasattr(ref, name):  # the variances only where the method releases eigenvalues
            assert _module(getattr(est, name)) == _module(Xd), name
        else:
            assert not hasattr(est, name), name
    assert est.n_features_in_ == D and est.n_components_ == K
    assert est.privacy_.epsilon == pytest.approx(ref.privacy_.epsilon, rel=1e-12)
    _same_subspace(ref.components_.T, to_numpy(est.components_).T, tol=2e-3)
    np.testing.assert_allclose(to_numpy(Z), ref.transform(X), atol=5e-3)
    assert _module(back) == _module(Xd) and tuple(back.shape) == (N, D)


def test_sklearn_switch_is_honoured(monkeypatch):
    torch = _torch()
    sklearn = pytest.importorskip("sklearn")
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # scikit-learn's own requirement for its switch
    X = torch.asarray(_spiked())
    with sklearn.config_context(array_api_dispatch=True):
        out = analyze_gauss(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    assert isinstance(out.components, torch.Tensor)


def test_to_numpy_gives_numpy_back():
    torch = _torch()
    t = torch.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(to_numpy(t), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(to_numpy(xps.asarray([1.0, 2.0])), [1.0, 2.0])
    a = np.ones(3)
    assert to_numpy(a) is a and to_numpy(None) is None


# --- bad input: refused before anything is charged -------------------------------------------------


def _ledger() -> Accountant:
    return Accountant(epsilon=100.0, delta=1e-3)


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("method", [analyze_gauss, mod_sulq, noisy_power])
def test_device_array_with_dispatch_off_is_refused(namespace, method):
    acc = _ledger()
    with pytest.raises(TypeError, match="array_api_dispatch") as info:
        method(_convert(_spiked(), namespace), K, epsilon=1.0, delta=1e-5, row_norm=1.0,
               accountant=acc)
    assert "to_numpy" in str(info.value) and "Nothing was charged" in str(info.value)
    assert acc.entries == ()
    with pytest.raises(TypeError, match="array_api_dispatch"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc).fit(_convert(_spiked(), namespace))
    assert acc.entries == ()


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_bad_rows_on_the_device_are_refused_before_the_charge(namespace):
    from dpspectral.privacy._pipeline import NonPrivateDataError

    acc = _ledger()
    X = _spiked()
    bad = X.copy()
    bad[7, 2] = np.nan
    with config_context(array_api_dispatch=True):
        for method in (analyze_gauss, noisy_power):
            with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
                method(_convert(bad, namespace), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc)
            with pytest.raises(NonPrivateDataError, match="on_norm_violation='raise'"):
                method(_convert(X, namespace), K, epsilon=1.0, delta=1e-5, row_norm=0.5, accountant=acc,
                       on_norm_violation="raise")
    assert acc.entries == ()


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_norm_histogram_on_the_device_counts_as_on_the_host(namespace):
    from dpspectral.privacy._quantile import norm_edges, norm_histogram

    X = _spiked() * np.linspace(0.01, 1.0, N)[:, None]  # norms over many octaves
    center = np.full(D, 0.01)
    edges = norm_edges(1.0)
    ref = norm_histogram(X, edges, center=center, owner="test")
    with config_context(array_api_dispatch=True):
        out = norm_histogram(_convert(X, namespace), edges, center=center, owner="test")
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, ref)
    assert out.sum() == N


def test_float16_is_refused():
    torch = _torch()
    acc = _ledger()
    X = torch.asarray(_spiked(), dtype=torch.float16)
    with config_context(array_api_dispatch=True):
        for method in (analyze_gauss, noisy_power):
            with pytest.raises(TypeError, match="float16.*precision|float16.*rounds"):
                method(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc)
        with pytest.raises(TypeError, match="float16"):
            DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc).fit(X)
    assert acc.entries == ()


def test_mixed_namespaces_between_fit_and_transform_are_refused():
    torch = _torch()
    X = _spiked()
    with config_context(array_api_dispatch=True):
        est = DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0).fit(torch.asarray(X))
        with pytest.raises(ValueError, match="namespace and device of the data passed to fit"):
            est.transform(X)
        with pytest.raises(ValueError, match="namespace and device of the data passed to fit"):
            est.transform(xps.asarray(X))
        with pytest.raises(ValueError, match="namespace and device of the data passed to fit"):
            est.inverse_transform(np.zeros((2, K)))
        numpy_fit = DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0).fit(X)
        with pytest.raises(ValueError, match="fitted on NumPy data"):
            numpy_fit.transform(torch.asarray(X))
    with pytest.raises(TypeError, match="array_api_dispatch"):  # the switch off: the usual refusal
        est.transform(torch.asarray(X))


def test_another_device_between_fit_and_transform_is_refused():
    """array-api-strict's second device stands for a second GPU: fit there, computed there."""
    X = _spiked()
    device1 = xps.Device("device1")
    with config_context(array_api_dispatch=True):
        est = DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0).fit(
            xps.asarray(X, device=device1))
        assert est.components_.device == device1 and est.mean_.device == device1
        assert est.transform(xps.asarray(X, device=device1)).device == device1
        with pytest.raises(ValueError, match="namespace and device of the data passed to fit"):
            est.transform(xps.asarray(X))  # the default device


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("method", [analyze_gauss, noisy_power])
def test_secure_noise_on_a_device(namespace, method):
    """OS entropy on device data: the host's secure source draws the noise, the release is copied back
    to the device, and the report names it; in the zero-noise limit the NumPy path's components."""
    X = _spiked()
    kwargs = dict(epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0)
    ref = method(X, K, random_state=3, **kwargs)
    Xd, acc = _convert(X, namespace), Accountant(epsilon=2 * HUGE_EPSILON, delta=1e-3)
    with config_context(array_api_dispatch=True):
        out = method(Xd, K, random_state="secure", accountant=acc, **kwargs)
    assert _module(out.components) == _module(Xd)
    assert out.privacy.noise_source == "secure" and ref.privacy.noise_source == "exact"
    assert out.privacy.events == ref.privacy.events
    assert sorted(map(repr, out.privacy.events)) == sorted(repr(e.event) for e in acc.entries)
    _same_subspace(ref.components, to_numpy(out.components), tol=2e-3)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_secure_device_release_lies_on_its_grid(namespace):
    """Every value of a secure release of device data is a multiple of its grid step, on the device; a
    release that declares no sensitivity is refused (the secure source widens for the grid's rounding)."""
    from dpspectral.privacy._noise import grid, noise_source

    std = 0.37
    x = _convert(np.linspace(-1.0, 1.0, 2000).reshape(40, 50), namespace)
    with config_context(array_api_dispatch=True):
        source = noise_source("secure", like=x)
        assert isinstance(source, DeviceNoise) and source.name == "secure"
        out = source.add_gaussian(x, std, 1.0)
        assert _module(out) == _module(x)
        steps = to_numpy(out) / grid(std)
        assert np.array_equal(steps, np.rint(steps)) and np.unique(steps).size > 100
        with pytest.raises(ValueError, match="sensitivity"):
            source.add_gaussian(x, std)


@pytest.mark.parametrize("options", [{}, {"sampling_rate": 0.2, "n_steps": 2}], ids=["oja", "spca"])
def test_secure_permutation_and_samples_on_a_device(options):
    """The secret permutation of the rows (mini-batch Oja) and the Poisson samples (DP-SPCA at
    ``sampling_rate < 1``) take the secure source's own words on device data too."""
    torch = _torch()
    from dpspectral.pca import dp_spca, minibatch_oja

    method = dp_spca if options else minibatch_oja
    X = torch.asarray(_spiked(), dtype=torch.float64)
    with config_context(array_api_dispatch=True):
        out = method(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state="secure", **options)
    assert out.privacy.noise_source == "secure" and _module(out.components) == "torch"


@pytest.mark.parametrize("method", ["dp_pca", "private_oja", "local_gaussian"])
def test_methods_not_covered_are_named(method):
    acc = _ledger()
    with config_context(array_api_dispatch=True), pytest.raises(ValueError, match="analyze_gauss, mod_sulq"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, method=method, accountant=acc).fit(
            xps.asarray(_spiked()))
    with config_context(array_api_dispatch=True), pytest.raises(ValueError, match="analyze_gauss, mod_sulq"):
        wishart(xps.asarray(_spiked()), K, epsilon=1.0, row_norm=1.0, accountant=acc)
    assert acc.entries == ()


def test_a_covered_fit_is_charged_once_per_stage():
    """Positive control of the ledger checks above: a device fit charges as the NumPy fit does."""
    acc_np, acc_dev = _ledger(), _ledger()
    X = _spiked()
    analyze_gauss(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc_np, random_state=0)
    with config_context(array_api_dispatch=True):
        analyze_gauss(xps.asarray(X), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc_dev,
                      random_state=0)
    assert len(acc_dev.entries) == len(acc_np.entries) == 2  # norm histogram, then the scatter
    assert [e.event for e in acc_dev.entries] == [e.event for e in acc_np.entries]


# --- the noise drawn on the device has the planned law ---------------------------------------------


def _device_noise(namespace: str, seed: int) -> DeviceNoise:
    x = _convert(np.zeros((1, 1)), namespace)
    with config_context(array_api_dispatch=True):
        source = dpspectral.privacy._noise.noise_source(seed, like=x)
    assert isinstance(source, DeviceNoise)
    return source


def _within(sample: np.ndarray, std: float, z: float = 5.0) -> None:
    """The sample variance of m i.i.d. N(0, std^2) is std^2 (1 +- z sqrt(2/m)) but with probability
    about 6e-7 (z = 5, normal approximation of chi^2_m / m; each call's false-positive rate)."""
    m = sample.size
    ratio = float(np.mean(sample**2)) / std**2
    assert abs(ratio - 1.0) < z * math.sqrt(2.0 / m), (ratio, m)
    assert abs(float(np.mean(sample))) < z * std / math.sqrt(m)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_device_noise_has_the_planned_std(namespace):
    """Seeded; each check below fails with probability ~6e-7 for a correct sampler (8 checks: < 1e-5)."""
    source = _device_noise(namespace, 2026)
    d, std = 300, 2.5
    zeros = _convert(np.zeros((d, d)), namespace)
    upper = np.triu_indices(d, 1)
    goe = to_numpy(source.add_symmetric_gaussian(zeros, std, shape="goe"))
    np.testing.assert_array_equal(goe, goe.T)
    _within(np.diag(goe), std)
    _within(goe[upper], std / math.sqrt(2.0))  # GOE: off-diagonal std / sqrt(2)
    iid = to_numpy(source.add_symmetric_gaussian(zeros, std, shape="iid"))
    np.testing.assert_array_equal(iid, iid.T)
    _within(np.diag(iid), std)
    _within(iid[upper], std)
    vector = to_numpy(source.add_gaussian(_convert(np.zeros((20000, 1)), namespace), std))
    _within(vector, std)
    host = source.add_gaussian(np.zeros(20000), std)  # a host statistic (the norm histogram)
    assert isinstance(host, np.ndarray)
    _within(host, std)
    laplace = to_numpy(source.add_laplace(_convert(np.zeros((40000, 1)), namespace), 1.5))
    _within(laplace, 1.5 * math.sqrt(2.0))  # Laplace(b): variance 2 b^2
    count = source.add_gaussian(7.0, std)
    assert isinstance(count, float)


def test_device_noise_through_the_pipeline_draws_the_planned_scale():
    """The plan's release drawn by the releaser on the device: planned scale, planned shape."""
    from dpspectral.pca._covariance import covariance_plan
    from dpspectral.privacy._budget import PrivacyBudget, Relation
    from dpspectral.privacy._pipeline import release

    plan = covariance_plan("analyze_gauss", budget=PrivacyBudget(1.0, 1e-5), relation=Relation.REPLACE_ONE,
                           calibration="tight", row_norm=1.0, n=None, d=None, private_mean=False,
                           release_count=False, mean_share=0.1)
    source = _device_noise("array_api_strict", 7)
    d = 250
    acc = _ledger()
    with release(plan, acc, source) as r:
        E = to_numpy(r.add_symmetric("scatter", xps.zeros((d, d), dtype=xps.float64), shape="goe"))
    _within(np.diag(E), plan["scatter"].scale)
    _within(E[np.triu_indices(d, 1)], plan["scatter"].scale / math.sqrt(2.0))
    assert len(acc.entries) == 1


def test_device_stream_leaves_the_host_generator_as_the_numpy_path():
    """The device seed comes from a spawned child: the host generator (the power method's start) is
    the NumPy path's, draw for draw."""
    source = _device_noise("array_api_strict", 5)
    np.testing.assert_array_equal(source.generator.standard_normal(4),
                                  np.random.default_rng(5).standard_normal(4))


def test_switch_is_scoped():
    assert not dpspectral.get_config()["array_api_dispatch"]
    with dpspectral.config_context(array_api_dispatch=True):
        assert dpspectral.get_config()["array_api_dispatch"]
        with dpspectral.config_context(array_api_dispatch=False):
            assert not dpspectral.get_config()["array_api_dispatch"]
        assert dpspectral.get_config()["array_api_dispatch"]
    assert not dpspectral.get_config()["array_api_dispatch"]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_device_clip_keeps_rounded_rows_within_the_bound(dtype_name):
    """float32 norms are off by up to ~1e-7 d relative: the shared device clip scales every float32 row
    whose computed norm is within that error of the bound a little inside it, so every stored row is
    within the bound (checked exactly in float64); rows at the bound up to rounding are not refused."""
    xps = pytest.importorskip("array_api_strict")
    from dpspectral._array_api import clip_rows_xp, to_numpy

    rng = np.random.default_rng(0)
    d = 2000
    X = rng.normal(size=(400, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= (1.0 + rng.uniform(-3e-7, 3e-7, size=400))[:, None]  # rows straddling the bound 1
    Xd = xps.asarray(X.astype(dtype_name))
    clipped, _, n_over = clip_rows_xp(Xd, 1.0, xps)
    out = to_numpy(clipped).astype(np.float64)
    given = X.astype(dtype_name).astype(np.float64)
    assert (np.abs(out - given).max(axis=1) > 0).sum() > 0  # rows at the bound were scaled
    if dtype_name == "float32":
        assert n_over == 0  # ... but none is refused: they are at the bound up to float32 rounding
    assert np.linalg.norm(out, axis=1).max() <= 1.0 + 1e-10  # clip_threshold's slack only
