"""Every additive release of every method draws exact discrete noise by default.

Each private method of the registry's PCA, low-rank and Fisher discriminant tasks, the streaming and
continual states of :mod:`dpspectral.lowrank`, a Dask input and the distributed protocol run on small
data with a seeded ``random_state``: the privacy report names the ``"exact"`` source, and with
``random_state="secure"`` the ``"secure"`` source. A spy on the exact sources records every additive
release as it leaves the sampler (before any post-processing): each lies on its grid (an exact multiple
of ``2**(floor(log2 scale) - 30)``), and the floating-point source is never called. A few releases are
checked by name: a vector, a symmetric matrix of the ``"goe"`` shape and a Laplace release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpspectral
from dpspectral import DPPCA, methods
from dpspectral.lowrank import (
    ContinualLRF,
    ContinualSpaceOptimalLRF,
    CovarianceLRF,
    TurnstileLRF,
    TurnstileSpaceOptimalLRF,
)
from dpspectral.privacy import _noise
from dpspectral.privacy._noise import grid
from dpspectral.privacy._pipeline import Releaser

#: Public settings some methods need on the 2,000-row data (as in tests/test_registry_contract.py).
SETTINGS: dict[str, dict[str, Any]] = {"dp_pca": {"batch_size": 400}}
#: Methods whose randomness is not additive noise (no grid to round to; docs/noise.md lists them):
#: the Bingham sampler of the exponential mechanism and the Wishart mechanism.
NOT_ADDITIVE = {"exponential", "wishart"}
#: The only method allowed to draw Gaussian samples from the secret generator (the Wishart baseline).
FLOAT_DRAWS = {"wishart"}


class _Spy:
    """What the exact sources released (kind, grid, values) and which float draws were made."""

    def __init__(self) -> None:
        self.releases: list[tuple[str, float, np.ndarray]] = []
        self.symmetric: list[tuple[str, float, np.ndarray]] = []
        self.normal_draws: list[str] = []

    def check_on_grid(self) -> None:
        for kind, step, values in self.releases:
            assert np.all(np.isfinite(values)), kind
            assert np.array_equal(np.rint(values / step) * step, values), f"a {kind} release off its grid"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    record = _Spy()
    add = _noise._GridNoise._add
    symmetric = _noise._GridNoise.add_symmetric_gaussian
    normal = Releaser.normal

    def spy_add(self: Any, statistic: Any, scale: float, sensitivity: Any, kind: str,
                each: bool = False) -> Any:
        out = add(self, statistic, scale, sensitivity, kind, each)
        if sensitivity != 0:  # a zero-sensitivity statistic is released as it is (no noise)
            record.releases.append((kind, grid(scale), np.array(out, dtype=np.float64, copy=True)))
        return out

    def spy_symmetric(self: Any, matrix: Any, std: float, sensitivity: Any = None, shape: str = "iid") -> Any:
        out = symmetric(self, matrix, std, sensitivity, shape)
        record.symmetric.append((shape, grid(std), np.array(out, copy=True)))
        return out

    def spy_normal(self: Any, loc: float, scale: float, size: Any) -> Any:
        record.normal_draws.append(self.plan.label)
        return normal(self, loc, scale, size)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the floating-point noise source drew a release by default")

    monkeypatch.setattr(_noise._GridNoise, "_add", spy_add)
    monkeypatch.setattr(_noise._GridNoise, "add_symmetric_gaussian", spy_symmetric)
    monkeypatch.setattr(Releaser, "normal", spy_normal)
    for name in ("add_gaussian", "add_laplace", "add_symmetric_gaussian", "gaussian"):
        monkeypatch.setattr(_noise.SeededNoise, name, refuse)
    return record


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weak budgets, uncertified paper calibrations, pure epsilon
        return fn(*args, **kwargs)


def _expect(report: Any, random_state: Any) -> None:
    assert report.noise_source == ("secure" if random_state == "secure" else "exact")


def _check_draws(spy: _Spy, name: str, random_state: Any) -> None:
    if name not in NOT_ADDITIVE:
        assert spy.releases, f"{name}: no release drew exact noise"
    spy.check_on_grid()
    assert set(spy.normal_draws) <= FLOAT_DRAWS | {""}, spy.normal_draws
    if name not in FLOAT_DRAWS:
        assert not spy.normal_draws, f"{name} drew float Gaussians from the secret generator"


PCA = [m for m in methods(task="pca") if m.private]
LOWRANK = [m for m in methods(task="lowrank") if m.private]
GEP = [m for m in methods(task="gep") if m.private]
STATES = ["seed", "secure"]


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
@pytest.mark.parametrize("method", PCA, ids=[m.name for m in PCA])
def test_pca_methods(method: Any, random_state: Any, lowrank_data: np.ndarray, spy: _Spy) -> None:
    res = _quiet(method.function, lowrank_data, 2, epsilon=1.0, delta=1e-6 if method.needs_delta else 0.0,
                 row_norm=1.0, calibration=method.default_calibration, relation=method.relations[0],
                 random_state=random_state, **SETTINGS.get(method.name, {}))
    _expect(res.privacy, random_state)
    _check_draws(spy, method.name, random_state)


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
@pytest.mark.parametrize("method", LOWRANK, ids=[m.name for m in LOWRANK])
def test_lowrank_methods(method: Any, random_state: Any, spy: _Spy) -> None:
    A = np.random.default_rng(3).uniform(size=(40, 18))
    extra: dict[str, Any] = {}
    if "alpha" in method.options:
        extra["alpha"] = 0.25
    if "row_norm" in method.options:
        extra["row_norm"] = 2.0
    res = _quiet(method.function, A, 3, epsilon=1.0, delta=1e-6, relation=method.relations[0],
                 calibration=method.default_calibration, random_state=random_state, **extra)
    _expect(res.privacy, random_state)
    _check_draws(spy, method.name, random_state)


def _labelled(n: int = 300, d: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 2.0 * np.eye(d)[y]
    return X / np.linalg.norm(X, axis=1, keepdims=True).max(), y


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
@pytest.mark.parametrize("method", GEP, ids=[m.name for m in GEP])
def test_fisher_methods(method: Any, random_state: Any, spy: _Spy) -> None:
    X, y = _labelled()
    options: dict[str, Any] = {"sparsity": 3} if method.sparse else {}
    res = _quiet(method.function, X, y, 2, row_norm=1.0, classes=[0, 1, 2], epsilon=1.0, delta=1e-5,
                 calibration=method.default_calibration, random_state=random_state, **options)
    _expect(res.privacy, random_state)
    _check_draws(spy, method.name, random_state)


KW = dict(epsilon=1.0, delta=1e-6)
STATE_CLASSES = [
    ("TurnstileLRF", lambda rs: TurnstileLRF((12, 9), 2, random_state=rs, **KW)),
    ("TurnstileSpaceOptimalLRF", lambda rs: TurnstileSpaceOptimalLRF((12, 9), 2, random_state=rs, **KW)),
    ("ContinualLRF", lambda rs: ContinualLRF((12, 9), 2, 4, random_state=rs, sketch_seed=3, **KW)),
    ("ContinualSpaceOptimalLRF",
     lambda rs: ContinualSpaceOptimalLRF((12, 9), 2, 4, random_state=rs, sketch_seed=3, **KW)),
    ("CovarianceLRF", lambda rs: CovarianceLRF(9, 2, random_state=rs, **KW)),
]


def _feed(state: Any) -> None:
    rows, cols, values = [0, 3, 11], [1, 2, 8], [0.5, -0.25, 0.125]
    if isinstance(state, CovarianceLRF):
        state.insert_many(np.full((3, 9), 0.2))
    elif hasattr(state, "step"):
        for _ in range(4):
            state.step(rows, cols, values)
            state.release()  # a release after every step
    else:
        state.update_many(rows, cols, values)


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
@pytest.mark.parametrize("name, make", STATE_CLASSES, ids=[n for n, _ in STATE_CLASSES])
def test_streaming_and_continual_states(name: str, make: Any, random_state: Any, spy: _Spy) -> None:
    state = _quiet(make, random_state)
    _quiet(_feed, state)
    res = _quiet(state.release)
    _expect(res.privacy, random_state)
    _check_draws(spy, name, random_state)


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
def test_dask_input(random_state: Any, lowrank_data: np.ndarray, spy: _Spy) -> None:
    da = pytest.importorskip("dask.array")
    X = da.from_array(lowrank_data, chunks=(300, 12))
    est = _quiet(DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=random_state).fit, X)
    _expect(est.privacy_, random_state)
    _check_draws(spy, "dask", random_state)


@pytest.mark.parametrize("random_state", [0, "secure"], ids=STATES)
@pytest.mark.parametrize("variant, aggregation",
                         [("proxy", "independent"), ("full", "independent"), ("full", "secure")])
def test_distributed_protocol(variant: str, aggregation: str, random_state: Any, spy: _Spy) -> None:
    """Each site draws its own release's noise; the aggregator's report names the sites' source."""
    if aggregation == "secure":
        pytest.importorskip("cryptography")
    rng = np.random.default_rng(2)
    sites = [rng.normal(size=(n, 8)) / 4 for n in (120, 80, 100)]
    res = _quiet(dpspectral.dpdispca, sites, 3, epsilon=1.0, delta=1e-5, row_norm=1.0, variant=variant,
                 aggregation=aggregation, engine="inprocess", random_state=random_state)
    _expect(res.privacy, random_state)
    _check_draws(spy, "dpdispca", random_state)
    assert len(spy.releases) >= len(sites)  # every site drew its own release's noise


# --- a few releases by name: a vector, a symmetric "goe" matrix, a Laplace release --------------------


def test_a_vector_release_lies_on_its_grid(lowrank_data: np.ndarray, spy: _Spy) -> None:
    """analyze_gauss with a released mean: the mean is a d-vector, released on its grid."""
    res = _quiet(dpspectral.analyze_gauss, lowrank_data, 2, epsilon=1.0, delta=1e-6, row_norm=1.0,
                 centering="private", random_state=0)
    assert res.privacy.noise_source == "exact"
    vectors = [values for kind, _, values in spy.releases if kind == "gaussian" and values.shape == (12,)]
    assert vectors, "no vector release"
    spy.check_on_grid()


def test_a_goe_matrix_release_lies_on_its_grid(lowrank_data: np.ndarray, spy: _Spy) -> None:
    """The "goe" shape: iso(M) (diagonal, sqrt(2) times each entry above it) is released on the grid,
    then mapped back (post-processing): the released diagonal is on the grid, sqrt(2) times an entry
    above it within rounding of the grid, and the matrix symmetric."""
    res = _quiet(dpspectral.analyze_gauss, lowrank_data, 2, epsilon=1.0, delta=1e-6, row_norm=1.0,
                 noise_shape="goe", random_state=0)
    assert res.privacy.noise_source == "exact"
    (shape, step, matrix), = [s for s in spy.symmetric if s[0] == "goe"]
    assert matrix.shape == (12, 12) and np.array_equal(matrix, matrix.T)
    diagonal = np.diagonal(matrix)
    assert np.array_equal(np.rint(diagonal / step) * step, diagonal)
    upper = matrix[np.triu_indices(12, 1)] * np.sqrt(2.0)
    # within the rounding of the map back and forth (a few ulps of the entries)
    assert np.allclose(np.rint(upper / step) * step, upper, rtol=0, atol=4 * np.spacing(np.abs(upper).max()))
    (kind, released_step, iso), = [r for r in spy.releases if r[2].size == 12 * 13 // 2]
    assert kind == "gaussian" and released_step == step
    spy.check_on_grid()  # iso(M) + noise itself: exact multiples of the grid


def test_a_laplace_release_lies_on_its_grid(lowrank_data: np.ndarray, spy: _Spy) -> None:
    """ppca (pure epsilon) releases the eigenvalues with Laplace noise, on its grid."""
    res = _quiet(dpspectral.ppca, lowrank_data, 2, epsilon=1.0, row_norm=1.0, random_state=0)
    assert res.privacy.noise_source == "exact"
    laplace = [values for kind, _, values in spy.releases if kind == "laplace"]
    assert laplace and all(v.size >= 1 for v in laplace)
    spy.check_on_grid()


def test_the_checks_see_float_noise(spy: _Spy) -> None:
    """The checks above have teeth: inside config_context(noise="float") the report names the float
    source and the spy refuses its draw; float values are off the grid."""
    X = np.random.default_rng(0).normal(size=(200, 6)) / 4
    with dpspectral.config_context(noise="float"):
        with pytest.raises(AssertionError, match="floating-point noise source"):
            _quiet(dpspectral.analyze_gauss, X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    spy.releases.append(("gaussian", grid(1.0), np.random.default_rng(0).normal(size=10)))
    with pytest.raises(AssertionError, match="off its grid"):
        spy.check_on_grid()
