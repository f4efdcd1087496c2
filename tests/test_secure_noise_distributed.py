"""DPdisPCA and its baselines through the release pipeline, with the secure noise source.

Every public entry point of :mod:`dpspectral.distributed` accepts ``random_state="secure"``: each site
then draws its noise from its own OS entropy with exact discrete samplers, the privacy report says
``noise_source == "secure"``, and two runs differ. The plans (:func:`site_release_plan`, :class:`SitePlan`)
are checked against the sensitivities of the module docstring. No statistical test here: every assertion
is deterministic (two secure runs coincide with probability 0: each release has thousands of grid steps
of noise per coordinate).
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np
import pytest

from dpspectral.distributed import SiteFailurePolicy, dpdispca, local_pca, pooled_pca, spawn_site_seeds
from dpspectral.distributed._protocol import _NoiseAtSites
from dpspectral.distributed._site import (
    SECURE,
    SitePlan,
    plan_site_release,
    release_second_moment,
    site_release_plan,
    site_step,
)
from dpspectral.privacy._accounting import Accountant, ParallelDpEvent
from dpspectral.privacy._budget import PrivacyBudget, Relation
from dpspectral.privacy._noise import SecureNoise
from dpspectral.privacy._rounding import MAX_WIDENING

KW: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-5, "row_norm": 1.0}
D = 4


def _sites(n_sites: int = 3, n: int = 25, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, D)) / 3 for _ in range(n_sites)]


@pytest.mark.filterwarnings("ignore::dpspectral.privacy._budget.UncertifiedPrivacyWarning")
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"variant": "full"},
        {"relation": "add_remove"},  # each site also releases a noisy count (equal weights)
        {"relation": "add_remove", "weighting": "size"},  # unnormalised scatters, no count
        {"calibration": "paper"},
    ],
)
def test_dpdispca_secure_runs_reports_and_differs(kwargs: dict[str, Any]) -> None:
    sites = _sites()
    runs = [dpdispca(sites, 2, random_state="secure", **KW, **kwargs) for _ in range(2)]
    for r in runs:
        assert r.privacy.noise_source == "secure"
        assert r.components.shape == (D, 2) and np.all(np.isfinite(r.components))
        assert np.allclose(r.components.T @ r.components, np.eye(2), atol=1e-10)
        assert r.contributing_sites == (0, 1, 2)
    assert not np.array_equal(runs[0].components, runs[1].components)
    assert not np.array_equal(runs[0].values, runs[1].values)


def test_seeded_run_reports_exact_and_secure_charges_one_parallel_event() -> None:
    sites = _sites()
    seeded = dpdispca(sites, 2, random_state=0, **KW)
    assert seeded.privacy.noise_source == "exact"  # the sites' seeded default: exact discrete noise
    acc = Accountant(delta=1e-5)
    secure = dpdispca(sites, 2, random_state="secure", accountant=acc, **KW)
    assert len(acc.entries) == 1 and isinstance(acc.entries[0].event, ParallelDpEvent)
    # the same plan, whatever the source: the same event and the same certified epsilon
    assert secure.privacy.events == seeded.privacy.events
    assert secure.privacy.epsilon == seeded.privacy.epsilon


@pytest.mark.parametrize("baseline", [pooled_pca, local_pca])
def test_baselines_secure(baseline: Any) -> None:
    sites = _sites()
    a = baseline(sites, 2, random_state="secure", **KW)
    b = baseline(sites, 2, random_state="secure", **KW)
    assert a.privacy.noise_source == b.privacy.noise_source == "secure"
    assert a.components.shape == (D, 2)
    assert not np.array_equal(a.values, b.values)


def test_secure_site_seeds_and_site_step() -> None:
    assert spawn_site_seeds(SECURE, 3) == [SECURE] * 3
    X = _sites(1)[0]
    std, cstd, _, _ = plan_site_release(budget=PrivacyBudget(1.0, 1e-5), relation=Relation.REPLACE_ONE,
                                        calibration="tight", row_norm=1.0, release_count=False)
    plan = SitePlan(variant="full", rank=D, spectrum="eigh", relation=Relation.REPLACE_ONE,
                    calibration="tight", row_norm=1.0, scatter_std=std, count_std=cstd)
    a = site_step(X, plan, SECURE, 0).matrix
    b = site_step(X, plan, SECURE, 0).matrix
    assert a.shape == (D * (D + 1) // 2,) and not np.array_equal(a, b)
    # seeded: the same child seed gives the same release (the engines rely on it)
    seed = np.random.SeedSequence(4)
    assert np.array_equal(site_step(X, plan, seed, 0).matrix, site_step(X, plan, seed, 0).matrix)


def test_secure_release_lies_on_the_grid() -> None:
    """The secure source rounds the statistic to its grid and adds integer multiples of it."""
    budget = PrivacyBudget(1.0, 1e-5)
    site_plan = site_release_plan(budget=budget, relation=Relation.ADD_REMOVE, calibration="tight",
                                  row_norm=1.0, release_count=False)
    plan = SitePlan(variant="full", rank=D, spectrum="eigh", relation=Relation.ADD_REMOVE,
                    calibration="tight", row_norm=1.0, release=site_plan)
    S = np.cov(_sites(1)[0].T)
    S_hat, count = release_second_moment(S, 25, plan, SecureNoise())
    assert count is None  # add/remove without a count: the unnormalised scatter
    grid = math.ldexp(1.0, math.floor(math.log2(plan.scatter_std)) - 30)
    steps = S_hat / grid
    assert np.array_equal(steps, np.round(steps)) and np.array_equal(S_hat, S_hat.T)


def test_site_plans_state_their_sensitivities() -> None:
    budget = PrivacyBudget(1.0, 1e-5)
    C = 1.0 + 1e-10  # sensitivity_norm(1.0): the bound clipped rows satisfy up to rounding
    r1 = site_release_plan(budget=budget, relation=Relation.REPLACE_ONE, calibration="tight", row_norm=1.0,
                           release_count=False)
    assert [r.name for r in r1.releases] == ["scatter"]
    # widened for the rounding of the computed scatter (at the public 2**16 rows): at most 1e-6 relative
    assert 1 <= r1["scatter"].sensitivity / (math.sqrt(2.0) * C**2) <= 1 + 1e-6
    ar = site_release_plan(budget=budget, relation=Relation.ADD_REMOVE, calibration="tight", row_norm=1.0,
                           release_count=True)
    assert [r.name for r in ar.releases] == ["scatter", "count"]
    # add/remove (N_s private): at the public rows of rows summed in groups, within 0.5 % (any width)
    assert 1 + 1e-3 <= ar["scatter"].sensitivity / C**2 <= 1 + MAX_WIDENING
    assert ar["count"].sensitivity == 1.0
    paper = site_release_plan(budget=budget, relation=Relation.REPLACE_ONE, calibration="paper",
                              row_norm=1.0, release_count=False)
    (event,) = paper.events
    assert isinstance(event, dp_accounting.GaussianDpEvent)
    assert event.noise_multiplier == pytest.approx(paper["scatter"].scale / paper["scatter"].sensitivity)
    # plan_site_release reads the same plan
    std, cstd, composed, notes = plan_site_release(budget=budget, relation=Relation.ADD_REMOVE,
                                                   calibration="tight", row_norm=1.0, release_count=True)
    assert (std, cstd) == (ar["scatter"].scale, ar["count"].scale) and notes == list(ar.notes)
    assert composed == dp_accounting.ComposedDpEvent(list(ar.events))


def test_site_plan_is_its_release_plan() -> None:
    budget = PrivacyBudget(1.0, 1e-5)
    plan = site_release_plan(budget=budget, relation=Relation.ADD_REMOVE, calibration="tight", row_norm=1.0,
                             release_count=True)
    common = {"variant": "proxy", "rank": 2, "spectrum": "eigh", "calibration": "tight", "row_norm": 1.0}
    sp = SitePlan(relation=Relation.ADD_REMOVE, release=plan, **common)
    assert sp.scatter_std == plan["scatter"].scale and sp.count_std == plan["count"].scale and sp.normalised
    with pytest.raises(ValueError, match="noise scales must be those of its release plan"):
        SitePlan(relation=Relation.ADD_REMOVE, release=plan, scatter_std=1.0, **common)
    with pytest.raises(ValueError, match="release plan is for add_remove"):
        SitePlan(relation=Relation.REPLACE_ONE, release=plan, **common)
    with pytest.raises(ValueError, match="needs its release plan"):
        SitePlan(relation=Relation.REPLACE_ONE, **common)


def test_the_aggregator_draws_no_noise() -> None:
    noise = _NoiseAtSites("exact")
    for draw in (lambda: noise.add_gaussian(0.0, 1.0, 1.0), lambda: noise.gaussian(1.0, 3, 1.0),
                 lambda: noise.add_laplace(0.0, 1.0, 1.0), lambda: noise.generator):
        with pytest.raises(RuntimeError, match="the aggregator draws no noise"):
            draw()


def test_dask_engine_secure() -> None:
    distributed = pytest.importorskip("dask.distributed")
    from dpspectral.distributed import DaskEngine

    sites = _sites(2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as c, distributed.Client(c) as client:
        runs = [dpdispca(sites, 2, engine=DaskEngine(client=client), random_state="secure", **KW)
                for _ in range(2)]
    assert all(r.privacy.noise_source == "secure" and r.diagnostics["engine"] == "dask" for r in runs)
    assert not np.array_equal(runs[0].values, runs[1].values)


@pytest.mark.parametrize("fn", [dpdispca, pooled_pca, local_pca])
def test_parameters_are_declared_in_a_constraint_table(fn: Any) -> None:
    """The parameters are stated once, in a table; a value outside it gets the generated message and
    charges nothing."""
    table = fn.parameter_constraints
    assert {"epsilon", "delta", "row_norm", "calibration", "random_state", "spectrum"} <= set(table)
    acc = Accountant(10.0, 1e-3)
    name = "dpdispca_pooled" if fn is pooled_pca else "dpdispca_local" if fn is local_pca else "dpdispca"
    with pytest.raises(ValueError, match=rf"'random_state' parameter of {name} must be .*'secure'"):
        fn(_sites(), 2, random_state="securely", accountant=acc, **KW)
    with pytest.raises(ValueError, match=rf"The 'spectrum' parameter of {name} must be one of"):
        fn(_sites(), 2, spectrum="qr", accountant=acc, **KW)
    assert acc.entries == ()


def test_dpdispca_table_covers_the_protocol_options() -> None:
    table = dpdispca.parameter_constraints
    assert {"variant", "site_failure.on_failure", "site_failure.timeout", "release_count"} <= set(table)
    with pytest.raises(ValueError,
                       match=r"The 'site_failure.timeout' parameter of dpdispca must be None or a float"):
        dpdispca(_sites(), 2, site_failure=SiteFailurePolicy(timeout=0.0), **KW)
    with pytest.raises(TypeError, match=r"The 'release_count' parameter of dpdispca must be a bool"):
        dpdispca(_sites(), 2, release_count="yes", **KW)
