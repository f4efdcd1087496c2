"""The rounding bound of the device path and of the distributed sites: both sum their rows in groups in
float64, so an add/remove release is widened at up to ``2**28`` public rows (dpspectral.privacy._rounding,
"Neighbours and n"), and its noise scale never depends on the private number of rows.

The device tests run on PyTorch's CPU tensors and array-api-strict arrays: the code path (the namespace's
matrix products, slices and additions) is the one a GPU runs."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspectral import _rows as rows_module
from dpspectral._array_api import config_context
from dpspectral._moments import accumulate, device_summation, gram_block_rows, summation_of
from dpspectral.distributed import dpdispca
from dpspectral.distributed._site import SitePlan, planned_summation, site_release_plan, site_step
from dpspectral.pca._covariance import analyze_gauss
from dpspectral.privacy._budget import PrivacyBudget, Relation
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._rounding import MAX_WIDENING, Summation, public_rows

from .test_public_rows import _record_groups  # also records the device's groups (a subclass)

torch = pytest.importorskip("torch")
array_api_compat = pytest.importorskip("array_api_compat")

U = Fraction(1, 2**53)  # float64's unit roundoff
S = 2**14  # a group is closed once it holds this many rows; the device's pieces hold at most this many


def _gamma(h: int) -> Fraction:
    return h * U / (1 - h * U)


def _widening(rows: int, b: int, kind: str) -> float:
    """``r = 2 gamma_h rows T / Delta`` with ``T = Delta`` (add/remove) and the height written out: groups
    of fewer than ``b`` rows closed at ``S`` rows, ``b + ceil(rows / S)`` additions for ``X^T X`` (and
    one rounding more for its products), ``2 b + ceil(rows / S)`` for the sum of the rows."""
    h = (b + 1 if kind == "products" else 2 * b) + -(-rows // S)
    return float(2 * _gamma(h) * rows)


def _unit_rows(n: int, d: int, seed: int) -> np.ndarray:
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# -- the device path: groups of public sizes, described by device_summation ----------------------------
def test_the_device_summation_is_grouped_at_two_to_the_28_rows():
    """A device array in float64 sums in groups of fewer than 2 * 2**14 rows (pieces of at most 2**14
    rows, a group closed at 2**14): 2**28 public rows for X^T X and for the sum of the rows at every
    width (widenings about 2.9e-3 and 4.9e-3), where the old description (any order) gave 2**16."""
    X = torch.zeros((3, 784), dtype=torch.float64)
    xp = array_api_compat.array_namespace(X)
    summation = summation_of(X, xp)
    assert summation == device_summation() == Summation("float64", block_rows=2 * S, group_rows=S)
    for kind, expected in (("products", 2.9e-3), ("sums", 4.9e-3)):
        assert public_rows(summation, kind) == 2**28
        at = _widening(2**28, 2 * S, kind)
        assert at == pytest.approx(expected, rel=0.02) and at <= MAX_WIDENING
    # float32 (float noise, opt-in) keeps the ungrouped bound at the small public rows
    assert summation_of(X.to(torch.float32), xp) == summation  # float32 data summed in float64
    with config_context(noise="float"):
        assert summation_of(X.to(torch.float32), xp) == device_summation("float32") == Summation("float32")
    assert public_rows(device_summation("float32")) == 2**16


@pytest.mark.parametrize("source", ["tensor", "stream", "strict"])
def test_device_groups_are_of_public_sizes_and_the_sums_match_the_cpu(monkeypatch, source):
    """Device blocks larger than a group (cut into pieces of 2**14 rows) and streamed blocks of any size
    (7,000 rows): every group closed at 2**14 rows or more and below 2 * 2**14; the sum and X^T X within
    1e-12 of the CPU path's."""
    monkeypatch.setattr(rows_module, "_BLOCK_ELEMENTS", 1 << 20)  # device blocks of 52,428 rows at d = 20
    n, d = 120_000, 20
    X = _unit_rows(n, d, seed=1) * 1.5  # rows above the bound: clipped
    cpu = accumulate(X, row_norm=1.0, want_sum=True)
    closed = _record_groups(monkeypatch)
    if source == "strict":
        xps = pytest.importorskip("array_api_strict")
        with config_context(array_api_dispatch=True):
            on_device = accumulate(xps.asarray(X), row_norm=1.0, want_sum=True, xp=xps)
        total, second = np.asarray(on_device.sum), np.asarray(on_device.second)
    else:
        from dpspectral._device_stream import stream_to_device

        data = torch.asarray(X) if source == "tensor" else stream_to_device(
            lambda: (X[a:a + 7_000] for a in range(0, n, 7_000)), "cpu", "test")
        xp = array_api_compat.array_namespace(torch.zeros(1))
        with config_context(array_api_dispatch=True):
            on_device = accumulate(data, row_norm=1.0, want_sum=True, xp=xp)
        total, second = on_device.sum.numpy(), on_device.second.numpy()
    assert len(closed) >= 5 and all(S <= rows < 2 * S for rows in closed)
    assert sum(closed) > n - 2 * S  # the rest: one last group, added at the end
    assert on_device.n == n and on_device.n_clipped == cpu.n_clipped == n
    assert np.allclose(total, cpu.sum, rtol=1e-12, atol=1e-12)
    assert np.allclose(second, cpu.second, rtol=1e-12, atol=1e-12)


def _scatter_and_mean_widening(X, relation: str) -> tuple[float, float]:
    """The released scatter's and mean's widening ``r`` on the device: the noise scale over the charged
    multiplier times the sensitivity (``C^2`` and ``C`` under add/remove), less one."""
    result = analyze_gauss(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation=relation,
                           centering="private", adaptive_clip=False, random_state=0, device="cpu")
    scatter, mean, _ = result.privacy.events  # the scatter, the mean, the count
    c = sensitivity_norm(1.0)
    return (result.diagnostics["noise_std"] / (scatter.noise_multiplier * c**2) - 1.0,
            result.diagnostics["mean_noise_std"] / (mean.noise_multiplier * c) - 1.0)


def test_device_add_remove_scales_do_not_depend_on_n_and_are_widened_at_the_grouped_rows():
    """Add/remove on a device: the same noise scales at 1,000 and 100,000 rows, the scatter widened at
    ``2**28`` rows of groups below ``2 * 2**14`` rows (2.9e-3), the mean likewise (4.9e-3)."""
    def scales(n: int, seed: int) -> dict:
        X = torch.asarray(_unit_rows(n, 5, seed))
        result = analyze_gauss(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation="add_remove",
                               centering="private", adaptive_clip=False, random_state=0, device="cpu")
        return {k: v for k, v in result.diagnostics.items() if k.endswith("noise_std")}

    small, large = scales(1000, 2), scales(100_000, 3)
    assert len(small) >= 2 and small == large
    scatter, mean = _scatter_and_mean_widening(torch.asarray(_unit_rows(1000, 5, 4)), "add_remove")
    assert scatter == pytest.approx(_widening(2**28, 2 * S, "products"), rel=1e-9)
    assert mean == pytest.approx(_widening(2**28, 2 * S, "sums"), rel=1e-9)


# -- the distributed sites: the scatter planned at the grouped public rows of the sites' width ----------
def test_sites_are_planned_at_the_grouped_public_rows():
    """Add/remove: every site sums its rows on the CPU in groups (grouped_summation of its width); the
    aggregator plans at those groups' public rows (2**28 at 20 features); replace-one keeps 2**16."""
    assert planned_summation(Relation.ADD_REMOVE, 20) == summation_of(np.zeros((1, 20)))
    assert public_rows(planned_summation(Relation.ADD_REMOVE, 20), "products") == 2**28
    assert planned_summation(Relation.ADD_REMOVE, None) == summation_of(iter([np.zeros((1, 20))]))
    assert public_rows(planned_summation(Relation.REPLACE_ONE, 20), "products") == 2**16


def test_site_add_remove_scales_do_not_depend_on_n_and_are_widened_at_the_grouped_rows():
    """Add/remove across sites: a site of 1,000 rows and one of 100,000 draw and report the same scale,
    the plan's, widened at 2**28 rows of groups below gram_block_rows(20) rows (2.7e-3)."""
    d = 20
    reports = [dpdispca([_unit_rows(n, d, 5), _unit_rows(1000, d, 6)], 2, epsilon=1.0, delta=1e-6,
                        row_norm=1.0, relation="add_remove", random_state=0) for n in (1000, 100_000)]
    a, b = reports
    assert a.site_noise_std == b.site_noise_std and a.site_noise_std[0] == a.site_noise_std[1]
    assert a.diagnostics["noise_std"] == b.diagnostics["noise_std"]
    widening = a.diagnostics["sensitivity"] / sensitivity_norm(1.0) ** 2 - 1.0
    expected = _widening(2**28, gram_block_rows(d), "products")
    assert 1e-3 < expected <= MAX_WIDENING
    assert widening == pytest.approx(expected, rel=1e-9)
    assert widening > 100 * _ungrouped_widening(2**16)  # the old plan, at 2**16 rows of any order


def test_a_dask_site_draws_at_its_own_larger_bound_and_states_it():
    """A site handed a Dask array adds its chunks' partials in a tree above its groups: its own bound at
    the plan's public rows is larger than the plan's, so it draws wider (and states the scale), the
    multiplier unchanged; an in-memory site of any size draws at the plan's scale."""
    da = pytest.importorskip("dask.array")
    import dask

    d = 20
    release = site_release_plan(budget=PrivacyBudget(1.0, 1e-6), relation=Relation.ADD_REMOVE,
                                calibration="tight", row_norm=1.0, release_count=True, n_features=d)
    plan = SitePlan(variant="full", rank=d, spectrum="eigh", relation=Relation.ADD_REMOVE,
                    calibration="tight", row_norm=1.0, n_features=d, release=release)
    rows = _unit_rows(4000, d, 7)
    for n in (1000, 4000):
        assert site_step(rows[:n], plan, np.random.SeedSequence(0), 0).scatter_std == plan.scatter_std
    with dask.config.set(scheduler="synchronous"):
        payload = site_step(da.from_array(rows, chunks=(1000, -1)), plan, np.random.SeedSequence(0), 0)
    assert payload.scatter_std > plan.scatter_std
    assert (payload.scatter_std / payload.scatter_sensitivity
            == pytest.approx(plan.scatter_std / release["scatter"].sensitivity, rel=1e-14))


def _ungrouped_widening(rows: int) -> float:
    return float(2 * _gamma(rows + 2) * rows)


def test_replace_one_site_plans_are_unchanged():
    """Replace-one: the plan keeps the small public rows of any order (the site restates at its N_s)."""
    res = dpdispca([_unit_rows(1000, 5, 9), _unit_rows(1000, 5, 10)], 2, epsilon=1.0, delta=1e-6,
                   row_norm=1.0, random_state=0)
    widening = res.diagnostics["sensitivity"] / (math.sqrt(2.0) * sensitivity_norm(1.0) ** 2) - 1.0
    assert widening == pytest.approx(_ungrouped_widening(2**16) / math.sqrt(2.0), rel=1e-9)
