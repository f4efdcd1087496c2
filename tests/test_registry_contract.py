"""Contract tests run over every registered algorithm (new entries are picked up automatically)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpspectral
from dpspectral import DPPCA, methods
from dpspectral.privacy import epsilon_of

ALL = methods(task="pca")
IDS = [m.name for m in ALL]


# Public settings some methods need on the 2,000-row fixture: DP-PCA's default minibatch
# (n / ln(n)^2 = 34 rows) is below the minimum its private top-eigenvalue histogram needs at epsilon = 1.
CONTRACT_SETTINGS: dict[str, dict] = {"dp_pca": {"batch_size": 400}}


def _run(method, X, k, seed, **kw):
    params = dict(epsilon=1.0, delta=1e-6 if method.needs_delta else 0.0, row_norm=1.0,
                  calibration=method.default_calibration, relation=method.relations[0],
                  random_state=seed)
    params.update(CONTRACT_SETTINGS.get(method.name, {}))
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        return method.function(X, k, **params)


def test_registry_lists_methods_once():
    assert len(IDS) == len(set(IDS))
    assert {"analyze_gauss", "mod_sulq", "wishart"} <= set(IDS)
    assert dpspectral.get_method("wishart").certified is False
    for m in ALL:
        assert m.relations and m.calibrations and m.paper and m.summary
        assert m.model in {"central", "local", "streaming", "continual", "distributed"}


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_shape_orthonormality_and_determinism(method, lowrank_data):
    a = _run(method, lowrank_data, 3, seed=11)
    b = _run(method, lowrank_data, 3, seed=11)
    assert a.components.shape == (12, 3)
    assert np.allclose(a.components.T @ a.components, np.eye(3), atol=1e-10)
    assert np.array_equal(a.components, b.components)
    assert a.values is None or np.all(np.diff(a.values) <= 1e-12)  # descending


# Public settings under which an iterative method converges in the zero-noise limit (full-batch
# steps for the stochastic methods, whose single-row default steps stop at a sampling-noise floor).
ZERO_NOISE_SETTINGS = {
    "dp_spca": {"sampling_rate": 1.0, "learning_rate": 1.0, "n_steps": 400},
    "dp_vrpca": {"sampling_rate": 1.0, "learning_rate": 1.0, "n_steps": 100, "n_epochs": 4},
    # one pass over 2,000 rows: steps large enough to converge within it
    "private_oja": {"c1": 1000.0, "c2": 1000.0},
    "dp_pca": {"c1": 1000.0},
}


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_zero_noise_limit(method, lowrank_data):
    # the local model's aggregate noise is sqrt(n) larger, and a single pass adds noise at every row:
    # a larger epsilon reaches the limit (multipliers fall like epsilon^-1/2 at large epsilon)
    eps = {"local": 1e9, "streaming": 1e11}.get(method.model, 1e7)
    X = lowrank_data
    if method.model == "streaming":
        # A single pass estimates the population subspace, not the sample's (its error is ~ n^-1/2
        # even without noise); on data of exact rank 3 both are the span of the rows.
        _, V = np.linalg.eigh(X.T @ X)
        X = X @ V[:, -3:] @ V[:, -3:].T
    res = _run(method, X, 3, seed=0, epsilon=eps, delta=0.5 if method.needs_delta else 0.0,
               **ZERO_NOISE_SETTINGS.get(method.name, {}))
    w, V = np.linalg.eigh(X.T @ X)
    V3 = V[:, ::-1][:, :3]
    P = res.components @ res.components.T - V3 @ V3.T
    assert np.linalg.norm(P) < 1e-3


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_events_consistent_with_claim(method, lowrank_data):
    res = _run(method, lowrank_data, 2, seed=0)
    p = res.privacy
    assert p.events, "every release is an event"
    assert p.epsilon == pytest.approx(epsilon_of(p.events, p.delta, relation=p.relation))
    assert p.relation in method.relations
    if method.certified:
        assert p.certified and p.epsilon <= p.requested_epsilon
    else:
        assert not p.certified


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_caller_data_untouched(method, lowrank_data):
    X = lowrank_data * 2.5  # most rows above the bound: clipped inside, never in place
    before = X.copy()
    out = _run(method, X, 2, seed=0)
    assert np.array_equal(X, before)
    # ... and clipped: with one seed, the rows above the bound act exactly as those rows scaled to
    # the bound (a mechanism that skipped its clip would see rows 2.5 times longer).
    if method.family == "exponential":
        return  # its sampler is not continuous in its input: tests/test_pinned_releases.py checks it
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    pre_clipped = X * np.minimum(1.0, 1.0 / norms)
    ref = _run(method, pre_clipped, 2, seed=0)
    assert np.allclose(out.components, ref.components, atol=1e-6)


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_usable_through_the_estimator(method, lowrank_data):
    est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method=method.name,
                calibration=method.default_calibration, random_state=0,
                method_params=CONTRACT_SETTINGS.get(method.name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        Z = est.fit_transform(lowrank_data)
    assert Z.shape == (2000, 2)
    assert est.privacy_.mechanism == method.name
