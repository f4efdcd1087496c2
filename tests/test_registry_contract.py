"""Contract tests run over every registered algorithm (new entries are picked up automatically).

The registry's typed fields (what a user needs to choose a method), and, for every entry of every task,
the function path and the estimator path compared by value: the same components for the same seed and
parameters (``np.testing.assert_allclose``), not only the same shapes.
"""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpspectral
from dpspectral import DPPCA, DistributedDPPCA, DPFisherDiscriminant, DPLowRank, methods
from dpspectral import _registry as registry_module
from dpspectral._registry import ESTIMATORS, MODELS, TASKS, FunctionRef, get_method, methods_markdown
from dpspectral.lowrank import Sketch
from dpspectral.privacy import epsilon_of

ALL = [m for m in methods(task="pca") if m.private]  # the DP contracts (the non-private oja: below)
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
    "private_oja": {"learning_rate_scale": 1000.0, "learning_rate_offset": 1000.0},
    "dp_pca": {"learning_rate_scale": 1000.0},
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


# ---------------------------------------------------------------------------------------------------
# the typed registry: one table for every task, each entry stating how to choose it


EVERY = methods()


def test_every_task_has_entries_and_its_estimator():
    for task in TASKS:
        entries = methods(task=task)
        assert entries, task
        estimator = getattr(dpspectral, ESTIMATORS[task])
        assert all(estimator.__name__ in m.estimators for m in entries)
    assert [m.name for m in methods(task="distributed")] == ["dpdispca"]
    assert methods() == list(registry_module._TABLE)  # no filter: every entry once, in table order
    assert len({m.name for m in EVERY}) == len(EVERY)


@pytest.mark.parametrize("m", EVERY, ids=[m.name for m in EVERY])
def test_entry_states_what_a_user_needs_to_choose_it(m):
    assert m.task in TASKS and set(m.tasks) <= set(TASKS) and m.tasks[0] == m.task
    assert m.model in MODELS
    assert m.memory.startswith("O(") and m.passes and m.regime and m.summary and m.paper
    assert m.calibrations and m.default_calibration == m.calibrations[0]
    assert bool(m.relations) or not m.private
    expected = "none" if not (m.private and m.certified) else ("approximate" if m.needs_delta else "pure")
    assert m.privacy_kind == expected
    if m.privacy_kind == "approximate":
        assert m.needs_delta
    row = m.as_dict()
    assert row["name"] == m.name and row["memory"] == m.memory and row["privacy_kind"] == m.privacy_kind
    # the callables: imported on first read, then the function itself (no wrapper frame)
    assert callable(m.function) and not isinstance(m.function, FunctionRef)
    if m.task == "gep":
        assert m.solver is not None and callable(m.solver)
        assert m.sparse == ("sparsity" in m.options)
    else:
        assert m.solver is None and not m.sparse


def test_pure_and_approximate_entries():
    kinds = {m.name: m.privacy_kind for m in EVERY}
    assert kinds["ppca"] == kinds["exponential"] == "pure"
    assert kinds["analyze_gauss"] == kinds["dpsr"] == kinds["dpdispca"] == "approximate"
    assert kinds["wishart"] == kinds["sr"] == kinds["optimal_space_lrf"] == kinds["oja"] == "none"


def test_registry_imports_no_mechanism():
    # a leaf: every callable is a FunctionRef, so gep/solve.py (and anyone) may import the registry
    tree = ast.parse(Path(registry_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
    assert imported == {"privacy._budget"}


def test_function_refs_resolve_lazily_and_pickle():
    import pickle

    ref = FunctionRef("dpspectral.pca._covariance", "analyze_gauss")
    assert ref.resolve() is dpspectral.analyze_gauss
    assert pickle.loads(pickle.dumps(ref)).resolve() is dpspectral.analyze_gauss
    assert FunctionRef("dpspectral.gep._solve", "fda_method", "dpsr").resolve().__name__ == "fda_dpsr"
    assert get_method("analyze_gauss").function is dpspectral.analyze_gauss
    assert get_method("dpsr").solver is dpspectral.gep.dpsr


def test_gep_solvers_table_is_the_registry():
    from dpspectral.gep import GEP_METHODS

    assert list(GEP_METHODS) == [m.name for m in methods(task="gep") if m.private]
    assert all(GEP_METHODS[name] is get_method(name) for name in GEP_METHODS)


def test_detailed_table_has_a_row_per_entry():
    lines = methods_markdown(detailed=True).splitlines()
    assert len(lines) == 2 + len(EVERY)
    assert "when to choose it" in lines[0] and "memory" in lines[0] and "passes" in lines[0]
    assert methods_markdown() == methods_markdown(detailed=False)


# ---------------------------------------------------------------------------------------------------
# the function path and the estimator path give the same values


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("method", ALL, ids=IDS)
def test_pca_function_and_estimator_give_the_same_components(method, lowrank_data):
    settings = CONTRACT_SETTINGS.get(method.name)
    # centering=None: the functions' default release, the uncentred second moment
    est = _quiet(DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method=method.name, centering=None,
                       calibration=method.default_calibration, random_state=7, method_params=settings).fit,
                 lowrank_data)
    # what DPPCA passes on: the pure methods get delta = 0, the counting methods release the count
    extra = {"release_count": True} if "release_count" in method.options else {}
    res = _quiet(_run, method, lowrank_data, 2, seed=7, **extra)
    np.testing.assert_allclose(est.components_, res.components.T, rtol=0, atol=1e-12)
    assert est.privacy_.epsilon == res.privacy.epsilon and est.privacy_.delta == res.privacy.delta


def test_non_private_pca_reference_through_function_and_estimator(lowrank_data):
    """oja: the same components both ways, flagged non-private, nothing charged, no privacy inputs used."""
    m = get_method("oja")
    assert not m.private and m.relations == () and "DPPCA" in m.estimators
    res = _quiet(m.function, lowrank_data, 2, row_norm=1.0, random_state=7)
    acc = dpspectral.Accountant(epsilon=1.0, delta=1e-6)
    est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="oja", random_state=7, accountant=acc)
    with pytest.warns(dpspectral.UncertifiedPrivacyWarning, match="NON-PRIVATE"):
        est.fit(lowrank_data)
    np.testing.assert_allclose(est.components_, res.components.T, rtol=0, atol=1e-12)
    assert not est.privacy_.certified and acc.entries == ()
    with pytest.raises(ValueError, match="'centering' parameter of DPPCA must be None or 'private' for "
                       "method='oja'"):
        DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="oja",
              centering=np.zeros(lowrank_data.shape[1])).fit(lowrank_data)


def test_the_value_comparison_sees_the_seed(lowrank_data):
    # the comparison above has teeth: another seed gives other components
    m = get_method("analyze_gauss")
    a, b = _run(m, lowrank_data, 2, seed=7), _run(m, lowrank_data, 2, seed=8)
    assert not np.allclose(a.components, b.components, rtol=0, atol=1e-6)


LOWRANK = methods(task="lowrank")


@pytest.mark.parametrize("method", LOWRANK, ids=[m.name for m in LOWRANK])
def test_lowrank_function_and_estimator_give_the_same_factors(method):
    A = np.random.default_rng(3).uniform(size=(40, 18))
    common: dict = {"random_state": 5}
    options = {"sketch": Sketch(seed=11)} if "sketch" in method.options and method.needs_delta else {}
    if "alpha" in method.options:
        common["alpha"] = 0.25
    if "row_norm" in method.options:
        common["row_norm"] = 2.0
    privacy = dict(epsilon=1.0, delta=1e-6, relation=method.relations[0],
                   calibration=method.default_calibration) if method.private else {}
    res = _quiet(method.function, A, 3, **common, **privacy, **options)
    est = _quiet(DPLowRank(3, epsilon=1.0, delta=1e-6, method=method.name, random_state=5,
                           row_norm=common.get("row_norm"), method_params=options or None).fit, A)
    if res.U is None:  # a subspace-only release (hardt_roth: V and S, no U)
        assert est.U_ is None
    else:
        np.testing.assert_allclose(est.U_, res.U, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.S_, res.S, rtol=0, atol=1e-12)
    if res.V is None:
        assert est.V_ is None
    else:
        np.testing.assert_allclose(est.V_, res.V, rtol=0, atol=1e-12)
    assert est.n_features_in_ == A.shape[1]


GEP = methods(task="gep")


def _labelled(n: int = 300, d: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 2.0 * np.eye(d)[y]
    return X / np.linalg.norm(X, axis=1, keepdims=True).max(), y


@pytest.mark.parametrize("method, classes", [*[(m, [0, 1, 2]) for m in GEP],
                                             *[(m, None) for m in GEP if m.name == "moments"]],
                         ids=[*[m.name for m in GEP], "moments[classes=None]"])
def test_gep_function_and_estimator_give_the_same_directions(method, classes):
    """Public classes: one path. classes=None: "moments" releases the label set on both paths (the
    estimator's paper methods release it too, the functions publish no label set: not compared)."""
    X, y = _labelled(n=300 if classes is not None else 3000)
    options: dict = {"sparsity": 3} if method.sparse else {}
    if "n_iter" in method.options:
        options["n_iter"] = 15  # the estimator's default
    privacy = dict(epsilon=1.0, delta=1e-5, calibration=method.default_calibration, random_state=9) \
        if method.private else {}
    res = _quiet(method.function, X, y, 2, row_norm=1.0, classes=classes, **privacy, **options)
    est = _quiet(DPFisherDiscriminant(2, epsilon=1.0, delta=1e-5, row_norm=1.0, method=method.name,
                                      random_state=9, sparsity=options.get("sparsity"), classes=classes).fit,
                 X, y)
    np.testing.assert_allclose(est.scalings_, res.vectors, rtol=0, atol=1e-12)
    assert est.privacy_.certified == method.certified
    if method.private:
        assert est.privacy_.mechanism == res.privacy.mechanism
        assert est.privacy_.epsilon == res.privacy.epsilon


def _sites(seed: int = 2):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, 8)) / 4 for n in (120, 80, 100)]


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
@pytest.mark.parametrize("variant", ["proxy", "full"])
def test_distributed_function_and_estimators_give_the_same_components(relation, variant):
    (entry,) = methods(task="distributed")
    sites = _sites()
    kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, relation=relation, variant=variant)
    res = _quiet(entry.function, sites, 3, random_state=4, engine="inprocess", **kw)
    est = _quiet(DistributedDPPCA(3, engine="inprocess", random_state=4, method=entry.name, **kw).fit, sites)
    np.testing.assert_allclose(est.components_, res.components.T, rtol=0, atol=1e-12)
    assert est.privacy_.mechanism == res.privacy.mechanism
    # DPPCA runs the same entry on one matrix split into n_sites row blocks
    X = np.vstack(sites)
    split = _quiet(entry.function, X, 3, n_sites=3, random_state=4, **kw)
    pca = _quiet(DPPCA(3, epsilon=1.0, delta=1e-5, row_norm=1.0, relation=relation, method=entry.name,
                       random_state=4, method_params={"n_sites": 3, "variant": variant}).fit, X)
    np.testing.assert_allclose(pca.components_, split.components.T, rtol=0, atol=1e-12)


def test_distributed_estimator_chooses_its_method_in_the_registry():
    assert "method" in inspect.signature(DistributedDPPCA).parameters
    with pytest.raises(ValueError, match="The 'method' parameter of DistributedDPPCA must be one of "
                                         "'dpdispca'. Got 'analyze_gauss' instead."):
        DistributedDPPCA(2, epsilon=1.0, delta=1e-5, row_norm=1.0, engine="inprocess",
                         method="analyze_gauss").fit(_sites())
    with pytest.raises(ValueError, match="The 'method' parameter of DPFisherDiscriminant must be one of "
                                         "'moments', 'dpsr', 'dpsrs', 'sr_dp', 'dp_rayleigh_flow', "
                                         "'dp_truncated_rayleigh_flow', 'sr'. Got 'analyze_gauss'"):
        DPFisherDiscriminant(1, epsilon=1.0, delta=1e-5, row_norm=1.0, method="analyze_gauss").fit(
            *_labelled(n=30))
