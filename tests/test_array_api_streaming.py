"""Array API support for the streaming methods: ``minibatch_oja`` on the device.

``minibatch_oja`` (noisy block-power steps on disjoint minibatches, after the adaptive clip's norm
histogram) computes in the input's namespace, on its device; ``private_oja``, ``dp_pca`` and ``oja``
(row by row, numba kernels on the host) refuse device arrays before anything is charged
(docs/array-api.md says why). With array-api-strict (any non-standard call fails; its second device
refuses mixing devices) and PyTorch's CPU device, so CI needs no GPU. What is checked:

* the zero-noise limit (huge epsilon): the NumPy and array-API paths give the same components and the
  same privacy report (events, epsilon, delta, the released clip, the noise scale);
* the results are arrays of the input's namespace, on its device, in its dtype; DPPCA too;
* seeded reproducibility on the device; the noise drawn in the run has the planned std;
* bad input refused before anything is charged (an Accountant's entries stay empty).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpspectral import DPPCA, Accountant, WarmupSchedule, to_numpy
from dpspectral._array_api import config_context
from dpspectral.pca import _minibatch as minibatch_module
from dpspectral.pca._minibatch import minibatch_oja
from dpspectral.pca._oja import dp_pca, oja, private_oja
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._gaussian import analytic_noise_multiplier

xps = pytest.importorskip("array_api_strict")

N, D, K = 1501, 10, 3
HUGE_EPSILON = 1e8  # noise multiplier ~7e-5: the zero-noise limit at these data's eigen-gaps
NAMESPACES = ["array_api_strict", "torch"]


def _torch():
    return pytest.importorskip("torch")


def _convert(X: np.ndarray, namespace: str, dtype: str = "float64"):
    if namespace == "torch":
        torch = _torch()
        return torch.asarray(X, dtype=getattr(torch, dtype))
    return xps.asarray(X, dtype=getattr(xps, dtype))


def _module(a) -> str:
    return type(a).__module__.split(".")[0]


def _spiked(seed: int = 0) -> np.ndarray:
    """Rows of norm <= 1 with well separated top eigenvalues (public, synthetic)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) * np.geomspace(4.0, 0.3, D)
    return X / np.linalg.norm(X, axis=1).max()


def _axes(seed: int = 0) -> np.ndarray:
    """Rows ``+- s_j q_j`` along D orthonormal directions, ``s_j^2`` halving with j: the top-k
    eigenvectors of every batch are ``q_1, ..., q_k`` in this order, whatever the permutation (with the
    adaptive clip the device path's frame and permutation are not the NumPy path's: the histogram's
    noise is drawn on the device, so the host generator is not advanced by it)."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    j = rng.integers(0, D, size=N)
    signs = rng.choice([-1.0, 1.0], size=N)
    return (signs * 2.0 ** (-j / 2.0))[:, None] * Q[j]


def _same_subspace(V0: np.ndarray, V1: np.ndarray, tol: float) -> None:
    assert V0.shape == V1.shape
    gap = np.linalg.norm(V0 @ V0.T - V1 @ V1.T, 2)
    assert gap < tol, gap
    assert np.abs(V0 - V1).max() < 10 * tol  # same order and signs (fix_signs on both paths)


CASES = [
    ("spiked", {"adaptive_clip": False}),  # one release at C: the same frame and permutation
    ("spiked", {"adaptive_clip": False, "row_norm": 0.4}),  # rows above the bound: clipped on the device
    ("spiked", {"adaptive_clip": False, "schedule": WarmupSchedule(2, 0.3), "block_size": K}),
    ("axes", {}),  # the default: adaptive clip, three warm-up batches
    ("spiked", {"schedule": WarmupSchedule(1), "block_size": D}),  # adaptive clip, one step over every row
    ("spiked", {"schedule": WarmupSchedule(1), "block_size": D, "row_norm": 0.4}),
]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("data", "options"), CASES)
def test_zero_noise_limit_same_components_and_report(namespace, data, options):
    X = _spiked() if data == "spiked" else _axes()
    kwargs = {**dict(epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=3), **options}
    acc_np, acc_dev = Accountant(epsilon=1e9, delta=0.5), Accountant(epsilon=1e9, delta=0.5)
    ref = minibatch_oja(X, K, accountant=acc_np, **kwargs)
    Xd = _convert(X, namespace)
    with config_context(array_api_dispatch=True):
        out = minibatch_oja(Xd, K, accountant=acc_dev, **kwargs)
    assert _module(out.components) == _module(Xd) and tuple(out.components.shape) == (D, K)
    _same_subspace(ref.components, to_numpy(out.components), tol=2e-3)
    assert out.privacy.events == ref.privacy.events
    assert out.privacy.epsilon == pytest.approx(ref.privacy.epsilon, rel=1e-12)
    assert out.privacy.delta == ref.privacy.delta
    assert out.privacy.noise_source == "exact" and ref.privacy.noise_source == "exact"
    assert [e.event for e in acc_dev.entries] == [e.event for e in acc_np.entries]
    assert len(acc_dev.entries) == (1 if options.get("adaptive_clip") is False else 2)
    assert out.diagnostics.get("clip") == ref.diagnostics.get("clip")  # the same released clip
    for name in ("noise_std", "noise_multiplier", "sensitivity"):
        assert out.diagnostics[name] == pytest.approx(ref.diagnostics[name], rel=1e-12), name
    for name in ("batch_sizes", "n_batches", "block_size"):
        assert out.diagnostics[name] == ref.diagnostics[name], name
    assert out.n_samples == ref.n_samples == N


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_float32_input_computes_in_float32(namespace):
    X = _spiked()
    kwargs = dict(epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=0, adaptive_clip=False)
    ref = minibatch_oja(X, K, **kwargs)
    Xd = _convert(X, namespace, "float32")
    with config_context(array_api_dispatch=True):
        out = minibatch_oja(Xd, K, **kwargs)
    assert out.components.dtype == Xd.dtype
    _same_subspace(ref.components, to_numpy(out.components).astype(np.float64), tol=5e-3)


def test_integer_input_computes_in_float64():
    X = np.rint(_spiked() * 20.0).astype(np.int64)  # rows of norm <= 20
    with config_context(array_api_dispatch=True):
        out = minibatch_oja(xps.asarray(X), K, epsilon=1.0, delta=1e-5, row_norm=20.0, random_state=0)
    assert out.components.dtype == xps.float64


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_seeded_reproducible_on_the_device(namespace):
    Xd = _convert(_spiked(), namespace)
    kwargs = dict(epsilon=0.5, delta=1e-5, row_norm=1.0)
    with config_context(array_api_dispatch=True):
        a = minibatch_oja(Xd, K, random_state=11, **kwargs)
        b = minibatch_oja(Xd, K, random_state=11, **kwargs)
        c = minibatch_oja(Xd, K, random_state=12, **kwargs)
    np.testing.assert_array_equal(to_numpy(a.components), to_numpy(b.components))
    assert a.diagnostics["clip"] == b.diagnostics["clip"]
    assert np.abs(to_numpy(a.components) - to_numpy(c.components)).max() > 1e-6  # other noise


def test_results_stay_on_array_api_strict_second_device():
    """array-api-strict's second device stands for a second GPU: every array the run makes must be
    there (mixing devices raises in array-api-strict)."""
    device1 = xps.Device("device1")
    X = _spiked()
    with config_context(array_api_dispatch=True):
        for options in ({}, {"adaptive_clip": False, "row_norm": 0.4}):
            out = minibatch_oja(xps.asarray(X, device=device1), K, epsilon=1.0, delta=1e-5,
                                random_state=0, **{"row_norm": 1.0, **options})
            assert out.components.device == device1
        est = DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, method="minibatch_oja",
                    random_state=0).fit(xps.asarray(X, device=device1))
        assert est.components_.device == device1
        assert est.transform(xps.asarray(X, device=device1)).device == device1
        with pytest.raises(ValueError, match="namespace and device of the data passed to fit"):
            est.transform(xps.asarray(X))  # the default device


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_dppca_minibatch_oja_attributes_in_the_input_namespace(namespace):
    X = _axes()
    params = dict(n_components=K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, method="minibatch_oja",
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
    assert est.privacy_.events == ref.privacy_.events
    _same_subspace(ref.components_.T, to_numpy(est.components_).T, tol=2e-3)
    np.testing.assert_allclose(to_numpy(Z), ref.transform(X), atol=5e-3)
    assert _module(back) == _module(Xd) and tuple(back.shape) == (N, D)


def test_sklearn_switch_is_honoured(monkeypatch):
    torch = _torch()
    sklearn = pytest.importorskip("sklearn")
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # scikit-learn's own requirement for its switch
    with sklearn.config_context(array_api_dispatch=True):
        out = minibatch_oja(torch.asarray(_spiked()), K, epsilon=1.0, delta=1e-5, row_norm=1.0,
                            random_state=0)
    assert isinstance(out.components, torch.Tensor)


# --- bad input: refused before anything is charged -------------------------------------------------


def _ledger() -> Accountant:
    return Accountant(epsilon=100.0, delta=1e-3)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_device_array_with_dispatch_off_is_refused(namespace):
    acc = _ledger()
    with pytest.raises(TypeError, match="array_api_dispatch") as info:
        minibatch_oja(_convert(_spiked(), namespace), K, epsilon=1.0, delta=1e-5, row_norm=1.0,
                      accountant=acc)
    assert "to_numpy" in str(info.value) and "Nothing was charged" in str(info.value)
    with pytest.raises(TypeError, match="array_api_dispatch"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, method="minibatch_oja", accountant=acc).fit(
            _convert(_spiked(), namespace))
    assert acc.entries == ()


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_bad_input_on_the_device_is_refused_before_the_charge(namespace):
    from dpspectral.privacy._pipeline import NonPrivateDataError

    acc = _ledger()
    X = _spiked()
    bad = X.copy()
    bad[7, 2] = np.inf
    kwargs = dict(epsilon=1.0, delta=1e-5, accountant=acc, random_state=0)
    with config_context(array_api_dispatch=True):
        for adaptive in (True, False):
            with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
                minibatch_oja(_convert(bad, namespace), K, row_norm=1.0, adaptive_clip=adaptive, **kwargs)
            with pytest.raises(NonPrivateDataError, match="on_norm_violation='raise'"):
                minibatch_oja(_convert(X, namespace), K, row_norm=0.5, on_norm_violation="raise",
                              adaptive_clip=adaptive, **kwargs)
        with pytest.raises(ValueError, match="n_samples=7"):
            minibatch_oja(_convert(X, namespace), K, row_norm=1.0, n_samples=7, **kwargs)
        with pytest.raises(ValueError, match="too few"):
            minibatch_oja(_convert(X[:5], namespace), K, row_norm=1.0, **kwargs)
    assert acc.entries == ()


def test_float16_is_refused():
    torch = _torch()
    acc = _ledger()
    X = torch.asarray(_spiked(), dtype=torch.float16)
    with config_context(array_api_dispatch=True):
        with pytest.raises(TypeError, match="float16.*rounds"):
            minibatch_oja(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc)
        with pytest.raises(TypeError, match="float16"):
            DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, method="minibatch_oja", accountant=acc).fit(X)
    assert acc.entries == ()


ROW_BY_ROW = [
    (private_oja, dict(epsilon=1.0, delta=1e-5, row_norm=1.0)),
    (dp_pca, dict(epsilon=1.0, delta=1e-5, row_norm=1.0)),
    (oja, dict(row_norm=1.0)),
]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("switch", [True, False])
@pytest.mark.parametrize(("method", "kwargs"), ROW_BY_ROW, ids=lambda c: getattr(c, "__name__", ""))
def test_row_by_row_methods_refuse_device_arrays(namespace, switch, method, kwargs):
    acc = _ledger()
    options = {**kwargs, "accountant": acc} if method is not oja else kwargs
    with config_context(array_api_dispatch=switch), pytest.raises(TypeError) as info:
        method(_convert(_spiked(), namespace), K, **options)
    message = str(info.value)
    assert "does not run on device arrays" in message and "minibatch_oja" in message
    assert "to_numpy" in message and "Nothing was charged" in message
    assert acc.entries == ()


@pytest.mark.parametrize("method", ["private_oja", "dp_pca", "oja"])
def test_dppca_names_minibatch_oja_among_the_covered_methods(method):
    acc = _ledger()
    with config_context(array_api_dispatch=True), pytest.raises(ValueError, match="minibatch_oja"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, method=method, accountant=acc).fit(
            xps.asarray(_spiked()))
    assert acc.entries == ()


def test_host_input_of_row_by_row_methods_is_unchanged():
    """Positive control of the refusals: NumPy input still runs, and charges."""
    acc = _ledger()
    private_oja(_spiked(), 1, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, random_state=0)
    assert len(acc.entries) >= 1


# --- the noise drawn in the run has the planned law ------------------------------------------------


def _within(sample: np.ndarray, std: float, z: float = 5.0) -> None:
    """The sample variance of m i.i.d. N(0, std^2) is std^2 (1 +- z sqrt(2/m)) but with probability
    about 6e-7 (z = 5, normal approximation of chi^2_m / m; each call's false-positive rate)."""
    m = sample.size
    ratio = float(np.mean(sample**2)) / std**2
    assert abs(ratio - 1.0) < z * math.sqrt(2.0 / m), (ratio, m)
    assert abs(float(np.mean(sample))) < z * std / math.sqrt(m)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_device_noise_of_the_run_has_the_planned_std(monkeypatch, namespace):
    """On all-zero rows every released batch sum is noise alone: recorded as each step's QR input.

    Seeded; each of the 8 checks fails with probability ~6e-7 for a correct sampler (< 1e-5 in all)."""
    recorded = []
    original = minibatch_module.orthonormalize

    def record(V, method="qr"):
        if not isinstance(V, np.ndarray):  # the released G_t (the start W_0 is drawn on the host)
            recorded.append(to_numpy(V))
        return original(V, method)

    monkeypatch.setattr(minibatch_module, "orthonormalize", record)
    n, d, C, eps, delta = 400, 60, 2.0, 1.0, 1e-5
    with config_context(array_api_dispatch=True):
        out = minibatch_oja(_convert(np.zeros((n, d)), namespace), K, epsilon=eps, delta=delta, row_norm=C,
                            adaptive_clip=False, random_state=2026)
    planned = analytic_noise_multiplier(eps, delta) * math.sqrt(2.0) * sensitivity_norm(C) ** 2
    # widened for the rounding of the batch sums (docs/noise.md, "Rounding in the statistic")
    assert 1 - 1e-12 <= out.diagnostics["noise_std"] / planned <= 1 + 1e-5
    assert len(recorded) == out.diagnostics["n_batches"] == 4
    for G in recorded:
        assert G.shape == (d, min(d, 20 * K))
        _within(G, planned)
    _within(np.concatenate([G.ravel() for G in recorded]), planned)


def test_device_run_beats_a_random_subspace():
    """Utility on the device (the default adaptive clip, eps = 0.3, n = 3000, d = 30, k = 3): the mean
    captured share of the top-3 energy of X^T X over 6 seeds beats a random 3-dim subspace (~0.26) by
    0.4 (measured: 0.88 on average over 30 seeds, as the NumPy path's 0.875; seeded, deterministic)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 30)) * np.geomspace(4.0, 0.3, 30)
    X /= np.linalg.norm(X, axis=1).max()
    A = X.T @ X
    top = float(np.sort(np.linalg.eigvalsh(A))[::-1][:3].sum())

    def energy(V: np.ndarray) -> float:
        return float(np.trace(V.T @ A @ V)) / top

    with config_context(array_api_dispatch=True):
        got = [energy(to_numpy(minibatch_oja(xps.asarray(X), 3, epsilon=0.3, delta=1e-5, row_norm=1.0,
                                             random_state=seed).components)) for seed in range(6)]
    random = float(np.mean([energy(np.linalg.qr(rng.normal(size=(30, 3)))[0]) for _ in range(50)]))
    assert np.mean(got) > random + 0.4, (got, random)
