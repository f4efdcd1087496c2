"""Out-of-core on a device: host rows streamed through the device in blocks (``device=``).

On PyTorch's CPU device (so CI needs no GPU) and array-api-strict (a device named by an array). What is
checked:

* a memmap streamed to the device gives the components of the in-memory device path (the same seed:
  the same noise, drawn on the device through the one release pipeline) and of NumPy in the zero-noise
  limit, with the same privacy report; results are arrays of the device's namespace;
* block by block: a spy on the host-to-device copies sees blocks of at most ``_BLOCK_ELEMENTS / d`` rows
  and one copy of every row per pass (validation, norm histogram, scatter);
* iterables of row blocks (a list, a callable, a one-shot generator), float32, ``DPPCA(device=...)``;
* refusals (an unknown device, float16, NaN in a late block, sparse, another namespace, a method that
  does not stream) charge nothing: an ``Accountant``'s entries stay empty.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dpspectral
from dpspectral import DPPCA, Accountant, analyze_gauss, mod_sulq, noisy_power, to_numpy
from dpspectral._array_api import config_context
from dpspectral.privacy._pipeline import NonPrivateDataError

torch = pytest.importorskip("torch")
array_api_compat = pytest.importorskip("array_api_compat")

N, D, K = 1501, 10, 3  # (1 - 0.1) N not an integer: no tie at the quantile walk
HUGE_EPSILON = 1e8  # the zero-noise limit at this data's eigen-gaps
BLOCK_ROWS = 200  # blocks of 200 rows: 8 blocks per pass


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(dpspectral._rows, "_BLOCK_ELEMENTS", BLOCK_ROWS * D)


def _spiked(seed: int = 0) -> np.ndarray:
    """Rows of norm <= 1 with well separated top eigenvalues (public, synthetic)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) * np.geomspace(4.0, 0.3, D)
    return X / np.linalg.norm(X, axis=1).max()


def _memmap(tmp_path, X: np.ndarray, dtype=np.float64) -> np.memmap:
    path = tmp_path / "rows.dat"
    mm = np.memmap(path, dtype=dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    del mm
    return np.memmap(path, dtype=dtype, mode="r", shape=X.shape)


def _ledger() -> Accountant:
    return Accountant(epsilon=100.0, delta=1e-3)


def _same_subspace(V0: np.ndarray, V1: np.ndarray, tol: float) -> None:
    assert V0.shape == V1.shape
    assert np.linalg.norm(V0 @ V0.T - V1 @ V1.T, 2) < tol
    assert np.abs(V0 - V1).max() < 10 * tol  # same order and signs


CASES = [
    (analyze_gauss, {}),
    (analyze_gauss, {"centering": "private"}),
    (analyze_gauss, {"adaptive_clip": False}),
    (analyze_gauss, {"relation": "add_remove", "release_count": True}),
    (analyze_gauss, {"row_norm": 0.4}),  # rows above the bound: clipped on the device
    (mod_sulq, {}),
    (noisy_power, {}),
    (noisy_power, {"adaptive_clip": False}),
]


@pytest.mark.parametrize(("method", "options"), CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_memmap_streamed_same_as_in_memory_device_and_numpy(tmp_path, method, options):
    X = _spiked()
    mm = _memmap(tmp_path, X)
    for epsilon in (1.0, HUGE_EPSILON):
        kwargs = {**dict(epsilon=epsilon, delta=1e-5, row_norm=1.0, random_state=3), **options}
        streamed = method(mm, K, device="cpu", **kwargs)
        with config_context(array_api_dispatch=True):
            in_memory = method(torch.asarray(X), K, **kwargs)
        assert isinstance(streamed.components, torch.Tensor)
        assert streamed.components.device == torch.device("cpu")
        # the same seed: the same device noise, the same blocks: the same release
        np.testing.assert_allclose(to_numpy(streamed.components), to_numpy(in_memory.components),
                                   atol=1e-9)
        assert streamed.privacy.events == in_memory.privacy.events
        assert streamed.privacy.epsilon == in_memory.privacy.epsilon
        assert streamed.diagnostics.get("clip") == in_memory.diagnostics.get("clip")
    ref = method(X, K, **kwargs)  # NumPy, the zero-noise limit
    _same_subspace(ref.components, to_numpy(streamed.components), tol=2e-3)
    assert streamed.privacy.events == ref.privacy.events
    assert streamed.privacy.epsilon == pytest.approx(ref.privacy.epsilon, rel=1e-12)
    assert streamed.privacy.delta == ref.privacy.delta
    assert streamed.privacy.noise_source == "exact" and ref.privacy.noise_source == "exact"
    assert streamed.diagnostics.get("clip") == ref.diagnostics.get("clip")


def _spy_copies(monkeypatch) -> list[tuple[int, ...]]:
    """Record the shape of every host-to-device copy made in PyTorch's array API namespace."""
    xp = array_api_compat.array_namespace(torch.empty(0))
    seen: list[tuple[int, ...]] = []
    original = xp.asarray

    def spy(obj, *args, **kwargs):
        if isinstance(obj, np.ndarray):
            seen.append(tuple(obj.shape))
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(xp, "asarray", spy)
    return seen


@pytest.mark.parametrize(("method", "options", "passes"), [
    (analyze_gauss, {}, 2),  # validation (which also counts the norms), scatter
    (mod_sulq, {"adaptive_clip": False}, 1),
    (analyze_gauss, {"centering": "private"}, 3),  # raw sum, centred histogram, centred scatter
    (noisy_power, {"block_size": K + 1}, 2),  # a (D, K + 1) start: not a block of rows
])
def test_rows_go_to_the_device_block_by_block(tmp_path, monkeypatch, method, options, passes):
    mm = _memmap(tmp_path, _spiked())
    seen = _spy_copies(monkeypatch)
    method(mm, K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0, device="cpu", **options)
    # (the released D x D statistic, drawn on the host by the exact source, is copied back: not rows)
    blocks = [s for s in seen if len(s) == 2 and s[1] == D and s != (D, D)]
    assert blocks and max(s[0] for s in blocks) <= BLOCK_ROWS  # never more than one block at a time
    assert max(s[0] for s in seen) <= BLOCK_ROWS  # nothing else of n rows is copied either
    # every row copied once per pass, in ceil(N / 200) blocks
    assert sum(s[0] for s in blocks) == passes * N
    assert len(blocks) == passes * -(-N // BLOCK_ROWS)


def test_row_blocks_of_a_list_a_callable_and_a_generator(tmp_path):
    X = _spiked()
    pieces = [X[a:a + 333] for a in range(0, N, 333)]  # split again on the device side (200 rows)
    kwargs = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=5, device="cpu")
    ref = analyze_gauss(_memmap(tmp_path, X), K, **kwargs)
    for source in (pieces, lambda: iter(pieces)):
        out = analyze_gauss(source, K, **kwargs)
        np.testing.assert_allclose(to_numpy(out.components), to_numpy(ref.components), atol=1e-9)
        assert out.privacy.events == ref.privacy.events
    # a one-shot generator is read once: the one-release mechanism (no adaptive clip), as on NumPy
    once = analyze_gauss((p for p in pieces), K, **kwargs)
    single = analyze_gauss(X, K, adaptive_clip=False, **kwargs)
    np.testing.assert_allclose(to_numpy(once.components), to_numpy(single.components), atol=1e-9)
    assert once.privacy.events == single.privacy.events and "clip" not in once.diagnostics


def test_float32_memmap_computes_in_float32(tmp_path):
    X = _spiked()
    out = analyze_gauss(_memmap(tmp_path, X, np.float32), K, epsilon=HUGE_EPSILON, delta=1e-5,
                        row_norm=1.0, random_state=0, device=torch.device("cpu"))
    assert out.components.dtype == torch.float32
    ref = analyze_gauss(X, K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=0)
    _same_subspace(ref.components, to_numpy(out.components).astype(np.float64), tol=5e-3)


def test_a_device_named_by_an_array_array_api_strict(tmp_path):
    xps = pytest.importorskip("array_api_strict")
    X = _spiked()
    out = noisy_power(_memmap(tmp_path, X), K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0,
                      random_state=0, device=xps.asarray([0.0]))
    assert type(out.components).__module__.split(".")[0] == "array_api_strict"
    ref = noisy_power(X, K, epsilon=HUGE_EPSILON, delta=1e-5, row_norm=1.0, random_state=0)
    _same_subspace(ref.components, to_numpy(out.components), tol=2e-3)


def test_dppca_device_parameter(tmp_path):
    X = _spiked()
    mm = _memmap(tmp_path, X)
    params = dict(n_components=K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=2, centering=None)
    est = DPPCA(**params, device="cpu").fit(mm)
    ref = analyze_gauss(mm, K, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=2, device="cpu")
    assert est.method_ == "analyze_gauss"
    assert isinstance(est.components_, torch.Tensor) and est.n_features_in_ == D
    np.testing.assert_allclose(to_numpy(est.components_), to_numpy(ref.components).T, atol=1e-12)
    assert est.privacy_.events == ref.privacy.events
    Z = est.transform(X[:5])  # host data: moved to the fitted device
    assert isinstance(Z, torch.Tensor)
    np.testing.assert_allclose(to_numpy(Z), X[:5] @ to_numpy(est.components_).T, atol=1e-12)
    # an array already on the device: sliced there, no dispatch switch needed
    on_device = DPPCA(**params, device="cpu").fit(torch.asarray(X))
    np.testing.assert_allclose(to_numpy(on_device.components_), to_numpy(est.components_), atol=1e-9)
    power = DPPCA(**params, method="noisy_power", device="cpu").fit(lambda: iter([X[:700], X[700:]]))
    assert isinstance(power.components_, torch.Tensor) and power.n_features_in_ == D
    from sklearn.base import clone

    again = clone(est).fit(mm)  # device is a plain parameter: cloned, the same fit
    assert again.device == "cpu"
    np.testing.assert_array_equal(to_numpy(again.components_), to_numpy(est.components_))


# --- refused before anything is charged ---------------------------------------------------------------


@pytest.mark.parametrize("device", ["gpu", "cuda:banana", "meta"])
def test_bad_device_string_is_refused(tmp_path, device):
    acc = _ledger()
    for method in (analyze_gauss, noisy_power):
        with pytest.raises(ValueError, match="Nothing was charged") as info:
            method(_spiked(), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device=device)
        assert repr(device) in str(info.value)
    with pytest.raises(ValueError, match="Nothing was charged"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device=device).fit(_spiked())
    assert acc.entries == ()


def test_unavailable_cuda_and_bad_device_type_are_refused():
    acc = _ledger()
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            analyze_gauss(_spiked(), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc,
                          device="cuda")
    with pytest.raises(TypeError, match="'device' parameter"):
        analyze_gauss(_spiked(), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device=3)
    assert acc.entries == ()


def test_float16_is_refused(tmp_path):
    acc = _ledger()
    mm = _memmap(tmp_path, _spiked(), np.float16)
    for method in (analyze_gauss, mod_sulq, noisy_power):
        with pytest.raises(TypeError, match="float16"):
            method(mm, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device="cpu")
    with pytest.raises(TypeError, match="float16"):
        analyze_gauss([np.asarray(mm[:700]), np.asarray(mm[700:])], K, epsilon=1.0, delta=1e-5,
                      row_norm=1.0, accountant=acc, device="cpu")
    with pytest.raises(TypeError, match="float16"):
        DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device="cpu").fit(mm)
    with pytest.raises(TypeError, match="float16"):
        analyze_gauss(torch.asarray(_spiked(), dtype=torch.float16), K, epsilon=1.0, delta=1e-5,
                      row_norm=1.0, accountant=acc, device="cpu")
    assert acc.entries == ()


def test_nan_in_a_late_block_is_refused_before_the_charge_unless_the_stream_is_one_shot():
    acc = _ledger()
    X = _spiked()
    bad = X.copy()
    bad[N - 3, 4] = np.nan  # in the last block of the last piece
    pieces = [bad[a:a + 500] for a in range(0, N, 500)]
    sources = [pieces, lambda: iter(pieces), bad]
    for method in (analyze_gauss, mod_sulq, noisy_power):
        for source in sources:  # re-readable: validated whole before the charge
            with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
                method(source, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, device="cpu")
    with pytest.raises(NonPrivateDataError, match="on_norm_violation='raise'"):
        analyze_gauss(lambda: iter([X[:700], X[700:] * 3]), K, epsilon=1.0, delta=1e-5, row_norm=1.0,
                      accountant=acc, device="cpu", on_norm_violation="raise")
    assert acc.entries == ()
    # a one-shot stream is charged before its rows are read: a failure decided by them stays charged
    for method in (analyze_gauss, mod_sulq, noisy_power):
        before = len(acc.entries)
        with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
            method((p for p in pieces), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc,
                   device="cpu")
        assert len(acc.entries) == before + 1 and acc.entries[-1].status.startswith("failed")


def test_sparse_dask_other_namespace_and_uncovered_method_are_refused():
    xps = pytest.importorskip("array_api_strict")
    acc = _ledger()
    X = _spiked()
    kwargs = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc)
    with pytest.raises(TypeError, match="sparse"):
        analyze_gauss(sp.csr_matrix(X), K, device="cpu", **kwargs)
    with pytest.raises(ValueError, match="another namespace|names"):
        analyze_gauss(xps.asarray(X), K, device="cpu", **kwargs)
    with pytest.raises(ValueError, match="does not stream data to a device"):
        DPPCA(K, method="dp_pca", device="cpu", **kwargs).fit(X)
    assert acc.entries == ()


def test_a_streamed_fit_is_charged_once_per_stage(tmp_path):
    """Positive control of the ledger checks above: a streamed fit charges as the NumPy fit does."""
    acc_np, acc_dev = _ledger(), _ledger()
    X = _spiked()
    analyze_gauss(X, K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc_np, random_state=0)
    analyze_gauss(_memmap(tmp_path, X), K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc_dev,
                  random_state=0, device="cpu")
    assert len(acc_dev.entries) == len(acc_np.entries) == 2  # norm histogram, then the scatter
    assert [e.event for e in acc_dev.entries] == [e.event for e in acc_np.entries]
