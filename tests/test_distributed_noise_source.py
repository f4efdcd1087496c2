"""The sites of a distributed run draw the noise the run planned, on whatever engine, and the report says it.

``dpspectral.config_context(noise=...)`` holds in the thread that calls ``dpdispca``; a Dask worker (a
thread of another process, or of this one) does not see it. The kind of noise is decided once, where the
run is planned, and travels to the sites in their :class:`SitePlan`. These tests look at what the sites
sent (``variant="full"``: the noisy ``A_hat_s = (S_s + E) / N_s`` itself): exact noise lies on the
release's grid (``grid(scale)``, divided by ``N_s = 64``, a power of two, so exactly), NumPy's float
noise does not. Every check is deterministic (seeded): a float draw lands on the grid with probability
about ``2**-22`` an entry, so the "off the grid" checks fail by chance with probability below ``1e-4``.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import dpspectral
from dpspectral.distributed import (
    DaskEngine,
    DistributedDPPCA,
    InProcessEngine,
    SitePlan,
    dpdispca,
    site_release_plan,
)
from dpspectral.distributed._site import release_second_moment
from dpspectral.privacy._budget import PrivacyBudget, Relation
from dpspectral.privacy._noise import grid

N_S = 64  # rows per site: a power of two, so that A_hat_s = S_hat_s / N_s keeps the grid exactly
D = 4
KW: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-5, "row_norm": 1.0, "variant": "full"}


def _sites(n_sites: int = 3, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_sites):
        X = rng.normal(size=(N_S, D)) * np.array([2.0, 1.0, 0.5, 0.2])
        out.append(X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)))
    return out


class _Records:
    """An engine that keeps what the sites sent (their payloads: released values only)."""

    payloads: list[Any] = []

    def run(self, *args: Any, **kwargs: Any) -> Any:
        outcomes = super().run(*args, **kwargs)  # type: ignore[misc]
        self.payloads = [o.payload for o in outcomes]
        return outcomes


class _Dask(_Records, DaskEngine):
    pass


class _InProcess(_Records, InProcessEngine):
    pass


def _steps(payloads: list[Any], scatter_std: float) -> np.ndarray:
    """The sites' released entries in units of the exact grid of ``A_hat_s``."""
    step = grid(scatter_std) / N_S
    return np.concatenate([p.matrix for p in payloads]) / step


def _on_grid(steps: np.ndarray) -> bool:
    return bool(np.array_equal(steps, np.rint(steps)))


def _off_grid(steps: np.ndarray) -> bool:
    return bool(np.all(steps != np.rint(steps)))


def _check(result: Any, engine: Any, kind: str) -> None:
    payloads = engine.payloads
    assert len(payloads) == 3 and all(p is not None for p in payloads)
    steps = _steps(payloads, result.diagnostics["noise_std"])
    assert result.privacy.noise_source == kind
    if kind == "exact":
        assert _on_grid(steps)
    else:
        assert _off_grid(steps)


@pytest.fixture(scope="module")
def threads_client():  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as c, distributed.Client(c) as client:
        client.wait_for_workers(2)
        yield client


@pytest.mark.parametrize("kind", ["exact", "float"])
def test_dask_sites_draw_the_configured_noise(threads_client: Any, kind: str) -> None:
    """On worker threads (which do not see the caller's configuration) the sites draw what was planned."""
    engine = _Dask(client=threads_client)
    with dpspectral.config_context(noise=kind):
        result = dpdispca(_sites(), 2, engine=engine, random_state=3, **KW)
    _check(result, engine, kind)
    assert result.diagnostics["engine"] == "dask"


def test_default_is_exact_on_dask(threads_client: Any) -> None:
    engine = _Dask(client=threads_client)
    result = dpdispca(_sites(), 2, engine=engine, random_state=3, **KW)
    _check(result, engine, "exact")


def test_the_engines_agree_under_float_noise(threads_client: Any) -> None:
    """The same seed, the same float draws at every site whether the sites run here or on workers."""
    here, there = _InProcess(), _Dask(client=threads_client)
    with dpspectral.config_context(noise="float"):
        a = dpdispca(_sites(), 2, engine=here, random_state=4, **KW)
        b = dpdispca(_sites(), 2, engine=there, random_state=4, **KW)
    for p, q in zip(here.payloads, there.payloads, strict=True):
        assert np.allclose(p.matrix, q.matrix, rtol=0, atol=1e-12)
    assert a.privacy.noise_source == b.privacy.noise_source == "float"


def test_estimator_on_worker_processes_draws_float_noise() -> None:
    """Worker processes: the configuration cannot reach them at all; the plan carries it."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as c, distributed.Client(c) as client:
        client.wait_for_workers(2)
        engine = _Dask(client=client)
        est = DistributedDPPCA(2, engine=engine, random_state=5, **KW)
        with dpspectral.config_context(noise="float"):
            est.fit(_sites())
        _check(est.result_, engine, "float")


def test_the_plan_fixes_the_noise_where_it_is_made() -> None:
    """A SitePlan made under ``noise="float"`` draws float noise in a thread without that setting."""
    budget = PrivacyBudget(1.0, 1e-5)
    release = site_release_plan(budget=budget, relation=Relation.REPLACE_ONE, calibration="tight",
                                row_norm=1.0, release_count=False)
    with dpspectral.config_context(noise="float"):
        plan = SitePlan(variant="full", rank=D, spectrum="eigh", relation=Relation.REPLACE_ONE,
                        calibration="tight", row_norm=1.0, release=release)
    assert plan.noise == "float"
    default = SitePlan(variant="full", rank=D, spectrum="eigh", relation=Relation.REPLACE_ONE,
                       calibration="tight", row_norm=1.0, release=release)
    assert default.noise == "exact"
    X = _sites(1)[0]
    out: dict[str, np.ndarray] = {}

    def draw(name: str, p: SitePlan) -> None:
        out[name] = release_second_moment(X.T @ X, N_S, p, np.random.SeedSequence(1))[0]

    threads = [threading.Thread(target=draw, args=a) for a in (("float", plan), ("exact", default))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _off_grid(out["float"] / (grid(plan.scatter_std) / N_S))
    assert _on_grid(out["exact"] / (grid(plan.scatter_std) / N_S))
    with pytest.raises(ValueError, match="'exact' or 'float'"):
        SitePlan(variant="full", rank=D, spectrum="eigh", relation=Relation.REPLACE_ONE, calibration="tight",
                 row_norm=1.0, release=release, noise="secure")


def test_secure_aggregation_shares_follow_the_plan(threads_client: Any) -> None:
    """Secure aggregation: the noise shares drawn on workers are those drawn in process (float), and
    differ from the exact ones (so the comparison can fail)."""
    pytest.importorskip("cryptography")
    kw = {**KW, "aggregation": "secure"}
    with dpspectral.config_context(noise="float"):
        here = dpdispca(_sites(), 2, engine=InProcessEngine(), random_state=6, **kw)
        there = dpdispca(_sites(), 2, engine=DaskEngine(client=threads_client), random_state=6, **kw)
    exact = dpdispca(_sites(), 2, engine=DaskEngine(client=threads_client), random_state=6, **kw)
    assert here.privacy.noise_source == there.privacy.noise_source == "float"
    assert exact.privacy.noise_source == "exact"
    assert np.allclose(here.values, there.values, rtol=1e-12, atol=0)
    assert not np.allclose(here.values, exact.values, rtol=1e-6, atol=0)
