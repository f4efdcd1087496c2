"""The report of a distributed run states the noise the sites drew.

A site whose own rounding bound is larger than the one the aggregator planned for (more rows than the
plan's public rows under replace-one, where N_s is public) draws its scatter noise at a larger scale,
with the same noise multiplier (``privacy/_rounding.py``). The report (``diagnostics["noise_std"]``,
``diagnostics["site_noise_std"]``, ``SiteReport.noise_std``) states the scales drawn; under add/remove
they do not depend on any N_s. No test here is statistical: the scales are compared exactly, or to the
rounding of the formula they follow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpspectral._moments import _SUMMED_APART, gram_block_rows
from dpspectral.distributed import DistributedDPPCA, dpdispca
from dpspectral.distributed import _site as site_module
from dpspectral.distributed._site import site_release_plan
from dpspectral.privacy import PrivacyBudget, Relation
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._rounding import UNGROUPED_PUBLIC_ROWS, gamma, unit_roundoff

KW: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, "row_norm": 1.0}
D = 5
BIG, SMALL = 100_000, 1_000


def _rows(n: int, seed: int) -> np.ndarray:
    """Rows of norm <= 1 (no clipping matters here: only the scales are compared)."""
    X = np.random.default_rng(seed).normal(size=(n, D))
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)


def _planned(relation: Relation, release_count: bool = False) -> tuple[float, float]:
    """The aggregator's planned scatter (scale, sensitivity), as charged."""
    plan = site_release_plan(budget=PrivacyBudget(KW["epsilon"], KW["delta"]), relation=relation,
                             calibration="tight", row_norm=KW["row_norm"], release_count=release_count,
                             n_features=D)
    scatter = plan["scatter"]
    assert scatter.sensitivity is not None
    return scatter.scale, scatter.sensitivity


def _error_bound(n: int, grouped: bool) -> float:
    """``gamma_h n C^2`` (privacy/_rounding.py, "The bound"), ``h`` one more than the sum's height (each
    term of ``X^T X`` is a product): rows summed in groups of ``s = 2**14`` (``h <= b + ceil(n / s)``,
    ``b`` the most rows of a group at this width), or in any order (``h <= n + 1``)."""
    height = gram_block_rows(D) + -(-n // _SUMMED_APART) if grouped else n + 1
    C = sensitivity_norm(KW["row_norm"])
    return gamma(height + 1, unit_roundoff(np.float64)) * n * C**2


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The scatter scale every site's release is drawn at, in the order the sites release."""
    seen: list[float] = []
    release = site_module.release_second_moment

    def recording(scatter: Any, n: int, plan: Any, noise: Any) -> Any:
        seen.append(plan.release_plan["scatter"].scale)
        return release(scatter, n, plan, noise)

    monkeypatch.setattr(site_module, "release_second_moment", recording)
    return seen


def test_a_site_with_more_rows_than_planned_reports_its_widened_scale(drawn: list[float]) -> None:
    """Replace-one: the site of 100,000 rows (more than the plan's 2**16) draws at its own widening; the
    report states that scale (and the small site's, the plan's), the events are those of the plan."""
    sites = [_rows(BIG, 0), _rows(SMALL, 1)]
    res = dpdispca(sites, 2, random_state=0, **KW)
    scale, sensitivity = _planned(Relation.REPLACE_ONE)
    # the site's bound exceeds the plan's, so it widens: r = 2 err / Delta on the planned release
    assert _error_bound(BIG, grouped=True) > _error_bound(UNGROUPED_PUBLIC_ROWS, grouped=False)
    share = 2.0 * _error_bound(BIG, grouped=True) / sensitivity
    expected = scale * (1.0 + share)
    assert share > 1e-7  # the widening the report missed is visible at the precision compared below

    assert drawn == [res.site_noise_std[0], res.site_noise_std[1]]  # the report says what was drawn
    assert res.site_noise_std[0] == pytest.approx(expected, rel=1e-12)
    assert res.site_noise_std[1] == scale  # within the plan's rows: the plan's scale
    assert res.diagnostics["site_noise_std"] == res.site_noise_std
    assert [r.noise_std for r in res.sites] == [res.site_noise_std[0], scale]
    assert res.diagnostics["noise_std"] == res.site_noise_std[0]  # the largest drawn
    # its sensitivity widened with it: the multiplier is the plan's
    assert res.diagnostics["sensitivity"] == pytest.approx(sensitivity * (1.0 + share), rel=1e-12)
    assert (res.diagnostics["noise_std"] / res.diagnostics["sensitivity"]
            == pytest.approx(scale / sensitivity, rel=1e-14))

    small = dpdispca([_rows(SMALL, 0), _rows(SMALL, 1)], 2, random_state=0, **KW)
    assert small.diagnostics["noise_std"] == scale and small.diagnostics["sensitivity"] == sensitivity
    assert res.privacy.events == small.privacy.events  # what is charged is unchanged
    assert res.privacy.epsilon == small.privacy.epsilon and res.privacy.certified

    est = DistributedDPPCA(2, engine="inprocess", random_state=0, **KW).fit(sites)
    assert est.result_.diagnostics["noise_std"] == res.diagnostics["noise_std"]
    assert est.result_.site_noise_std == res.site_noise_std


@pytest.mark.parametrize("weighting", ["equal", "size"])
def test_add_remove_scales_do_not_depend_on_the_sites_rows(drawn: list[float], weighting: str) -> None:
    """Add/remove: N_s is private, so the scales drawn and reported are the same for a site of 1,000
    rows and of 100,000, and the same at every site; the report states what was drawn."""
    reports = []
    for n in (SMALL, BIG):
        drawn.clear()
        res = dpdispca([_rows(n, 0), _rows(SMALL, 1)], 2, relation="add_remove", weighting=weighting,
                       random_state=0, **KW)
        assert drawn == [res.site_noise_std[0], res.site_noise_std[1]]
        reports.append(res)
    a, b = reports
    keys = ("noise_std", "site_noise_std", "sensitivity", "count_noise_std")
    assert {k: a.diagnostics[k] for k in keys} == {k: b.diagnostics[k] for k in keys}
    assert [r.noise_std for r in a.sites] == [r.noise_std for r in b.sites]
    assert a.privacy == b.privacy
    assert a.site_noise_std[0] == a.site_noise_std[1] == a.diagnostics["noise_std"]
    scale, _ = _planned(Relation.ADD_REMOVE, release_count=weighting == "equal")
    assert a.diagnostics["noise_std"] >= scale  # never below the plan's


def test_add_remove_dask_site_scale_does_not_depend_on_its_chunks(drawn: list[float]) -> None:
    """A site's Dask array: its chunks are added in a tree counted at the public rows at least, so under
    add/remove 1,000 rows in one chunk and 100,000 rows in 100 chunks report the same scale."""
    da = pytest.importorskip("dask.array")
    reports = [dpdispca([da.from_array(_rows(n, 0), chunks=(SMALL, -1)), _rows(SMALL, 1)], 2,
                        relation="add_remove", random_state=0, **KW) for n in (SMALL, BIG)]
    a, b = reports
    assert a.site_noise_std == b.site_noise_std and a.diagnostics["noise_std"] == b.diagnostics["noise_std"]
    assert drawn[:2] == [a.site_noise_std[0], a.site_noise_std[1]]
    assert drawn[2:] == [b.site_noise_std[0], b.site_noise_std[1]]
    assert math.isfinite(a.diagnostics["noise_std"])
