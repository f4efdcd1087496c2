"""Rounding in the statistic for the row-by-row and stochastic PCA methods and the distributed sites.

Every release is drawn at ``(1 + r)`` times its unwidened scale and sensitivity, with
``r = 2 gamma_h n T / Delta`` (``gamma_h = h u / (1 - h u)``, ``u = 2**-53``; docs/noise.md, "Rounding in
the statistic"). Here ``h`` and ``T`` are written out for each computed statistic from the public
inputs (not read from the library's helpers), and the noise multiplier and the events are checked
unchanged. The sizes are large (plans only: nothing is read) so that ``r`` is far above the float
resolution of the widened sensitivity (2e-16): its observed value is compared at a relative 1e-4.
"""

from __future__ import annotations

import math
from fractions import Fraction

import dp_accounting
import numpy as np
import pytest

from dpspectral._moments import grouped_summation
from dpspectral.distributed._site import SitePlan, _at_site, site_release_plan
from dpspectral.pca import _oja, _stochastic
from dpspectral.privacy._budget import PrivacyBudget, Relation
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._gaussian import analytic_noise_multiplier, classic_noise_multiplier
from dpspectral.privacy._pipeline import NoisyRelease
from dpspectral.privacy._rounding import UNGROUPED_PUBLIC_ROWS, Summation

U = 2.0**-53
EPS, DELTA = 1.0, 1e-6
CS = sensitivity_norm(1.0)  # the bound clipped rows satisfy, rounding included, for row_norm = 1


def _gamma(h: int) -> float:
    return h * U / (1.0 - h * U)


def _share(h: int, n: int, term: float, sensitivity: float) -> float:
    """``(err(X) + err(X')) / Delta`` with ``err = gamma_h n T``."""
    return 2.0 * _gamma(h) * n * term / sensitivity


def _observed(widened: float, plain: float) -> float:
    """``widened / plain - 1`` in exact arithmetic."""
    return float(Fraction(widened) / Fraction(plain) - 1)


def _check(release: NoisyRelease, plain_sensitivity: float, multiplier: float, r: float) -> None:
    assert r > 0
    assert release.sensitivity is not None
    assert _observed(release.sensitivity, plain_sensitivity) == pytest.approx(r, rel=1e-4)
    assert _observed(release.scale, multiplier * plain_sensitivity) == pytest.approx(r, rel=1e-4)
    # the noise multiplier (what the event records) unchanged, never below the plan
    assert release.scale / release.sensitivity == pytest.approx(multiplier, rel=1e-14)
    assert release.scale >= multiplier * release.sensitivity * (1 - 2e-16)


@pytest.mark.parametrize("k, rank_method", [(1, "block"), (3, "block"), (3, "deflation")])
def test_private_oja_step(k: int, rank_method: str) -> None:
    """One row per step: ``x (x^T W)`` and the gradient clip's factor, ``h = 2 d + k + 6``,
    ``T = C^2 sqrt(k)`` (k = 1 for each part of the deflation), n = 1."""
    mech = _oja._PrivateOja(None)
    inputs = _oja._OjaInputs(k, epsilon=EPS, delta=DELTA, row_norm=1.0, relation="replace_one",
                             calibration="tight", learning_rate_scale=None, learning_rate_offset=10.0,
                             gradient_clip=None, rank_method=rank_method, amplification="none",
                             n_samples=None, on_norm_violation="clip", adaptive_clip=False)
    checked = mech.check(inputs, np.zeros((30, 4)))
    n, d = 3000, 100_000
    plan = mech.plan(checked, n, d)
    assert plan is not None
    alpha = analytic_noise_multiplier(EPS, DELTA)
    assert plan.events == (dp_accounting.GaussianDpEvent(alpha),)
    k_iter = k if rank_method == "block" else 1
    sens = min(2.0 * CS**2, min(math.sqrt(k_iter), math.sqrt(2.0)) * CS**2)
    r = _share(2 * d + k_iter + 6, 1, CS**2 * math.sqrt(k_iter) * (1 + 1e-6), sens)
    _check(plan["step"], sens, alpha, r)


def _dp_pca_plan(n: int, d: int, batch_size: int) -> tuple[object, float]:
    mech = _oja._DpPca(None)
    inputs = _oja._DpPcaInputs(1, epsilon=EPS, delta=DELTA, row_norm=1.0, relation="replace_one",
                               calibration="tight", learning_rate_scale=None, learning_rate_offset=None,
                               schedule="warmup", batch_size=batch_size, batch_constant=1.0,
                               rank_method="block", block_size=None, range_estimation=None,
                               n_samples=None, on_norm_violation="clip", adaptive_clip=False)
    checked = mech.check(inputs, np.zeros((30, 4)))
    plan = mech.plan(checked, n, d)
    assert plan is not None
    return plan, plan.releases[-1].scale / plan.releases[-1].sensitivity


@pytest.mark.parametrize("truncation", [True, False], ids=["algorithm5", "public_bound"])
def test_dp_pca_mean(truncation: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch mean (per unit sensitivity) over at most B rows: the public bound's ``S / b`` (``h =
    B + d + 3``, ``T = C^2 sqrt(p_W) / S_pub``) or Algorithm 5's centred mean (``h = B + 3``, ``T = 1/2``),
    the larger of the two where both can be released."""
    if not truncation:
        monkeypatch.setattr(_oja, "_TRUNCATION_MAX_VALUES", 0)
    n, d, B = 400_000, 12, 40_000
    plan, _ = _dp_pca_plan(n, d, B)
    block = min(d, 20)
    public = _share(B + 1 + d + 1 + 1, B,
                    math.sqrt(block) * (1 + 1e-6) / min(math.sqrt(block), math.sqrt(2)), 1.0)
    box = _share(B + 1 + 2, B, 0.5, 1.0)
    r = max(public, box) if truncation else public
    event = plan.events[0]
    if truncation:
        gauss = event.events[1].events[1]  # ParallelDpEvent([Algorithm 4, Composed([histograms, mean])])
        assert [x.name for x in plan.releases] == ["eigenvalue_histogram", "coordinate_histograms", "mean"]
        # the histograms are counts (exact; one bin per row whatever its gradient's rounding): unwidened
        assert plan["eigenvalue_histogram"].scale == 2.0 / EPS
    else:
        gauss = event.events[0]
    assert isinstance(gauss, dp_accounting.GaussianDpEvent)
    _check(plan["mean"], 1.0, gauss.noise_multiplier, r)


def test_private_mean_widened_for_its_rows() -> None:
    """Algorithm 5's centred mean over b rows (``private_mean``): ``h = b + 3``, ``T = 1/2`` per unit
    sensitivity, whatever the released box; a plan widened for more rows serves it, a smaller one not."""
    b, s = 30_000, 1.7
    release = _oja._box_mean_widened(_oja._mean_release(s), b)
    _check(release, 1.0, s, _share(b + 3, b, 0.5, 1.0))

    class _Planned:
        def __init__(self, rows: int) -> None:
            self.plan = _oja.ReleasePlan("dp_pca", Relation.REPLACE_ONE, (),
                                         (_oja._box_mean_widened(_oja._mean_release(s), rows),))

    _oja._check_widened(_Planned(2 * b), release)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="planned as"):
        _oja._check_widened(_Planned(b // 2), release)  # type: ignore[arg-type]


def test_dp_pca_truncated_mean_is_the_plain_mean_up_to_rounding() -> None:
    """Algorithm 5's mean is computed centred on the released box (its rounding then relative to the
    box): the same value as the plain truncated mean up to rounding, the noise unchanged."""
    rng = np.random.default_rng(0)
    G = rng.normal(size=(500, 6)) + 3.0

    class _Zero:
        def gaussian(self, name: str, size: int) -> np.ndarray:
            return np.zeros(size)

    centres = np.full(6, 3.0)
    mean, info = _oja._truncate(G, centres, 0.5, 3.0, _Zero())  # type: ignore[arg-type]
    plain = np.clip(G, centres - 1.5, centres + 1.5).mean(axis=0)
    np.testing.assert_allclose(mean, plain, rtol=1e-13)
    assert info["sensitivity"] == 2.0 * 1.5 * math.sqrt(6) / 500
    assert not np.array_equal(mean, G.mean(axis=0))  # the truncation acts on these rows


def _stochastic_inputs(**kw: object) -> _stochastic._StochasticInputs:
    base = dict(k=1, epsilon=EPS, delta=DELTA, row_norm=1.0, relation="replace_one", calibration="tight",
                on_norm_violation="clip", accounting="auto", n_steps=None, learning_rate=None,
                sampling_rate=None, block_size=None, adaptive_clip=False)
    base.update(kw)
    return _stochastic._StochasticInputs(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("q", [1.0, 0.01])
def test_dp_spca_step(q: float) -> None:
    """``2 A_S V`` over a sample of at most n rows, V of p orthonormal columns: ``h = n + d + 3``,
    ``T = 2 C^2 sqrt(p)``."""
    mech = _stochastic._SPCA(None)
    checked = mech.check(_stochastic_inputs(sampling_rate=q, block_size=8), np.zeros((30, 10)))
    n, d = 200_000, 300
    plan, s = mech._method_plan(checked, n, d)
    sens = (math.sqrt(2.0) if q == 1.0 else 1.0) * 2.0 * CS**2
    r = _share(n + 1 + d + 1, n, 2.0 * CS**2 * math.sqrt(8) * (1 + 1e-6), sens)
    _check(plan["step"], sens, s, r)
    inner = plan.events[0].event
    multiplier = inner.noise_multiplier if q == 1.0 else inner.event.noise_multiplier
    assert multiplier == s


def test_dp_vrpca_full_gradient_and_step() -> None:
    """The full gradient ``2 A V~ / n`` (``h = n + d + 3``, terms ``2 C^2 sqrt(p) / n``) and a step's
    ``2 A (V - V~)`` (``h = n + d + 2``, terms ``4 C^2 sqrt(p)``)."""
    mech = _stochastic._VRPCA(None)
    checked = mech.check(_stochastic_inputs(n_steps=3, block_size=5), np.zeros((30, 10)))
    n, d, p = 150_000, 400, 5
    plan, s = mech._method_plan(checked, n, d)
    full_sens = math.sqrt(2.0) * 2.0 * CS**2 / n
    full_multiplier = plan.events[0].event.noise_multiplier
    _check(plan["full_gradient"], full_sens, full_multiplier,
           _share(n + 1 + d + 1 + 1, n, 2.0 * CS**2 * math.sqrt(p) * (1 + 1e-6) / n, full_sens))
    step_sens = math.sqrt(2.0) * 4.0 * CS**2
    assert plan.events[1].event.noise_multiplier == s
    _check(plan["step"], step_sens, s, _share(n + 1 + d + 1, n, 4.0 * CS**2 * math.sqrt(p) * (1 + 1e-6),
                                              step_sens))


def test_stochastic_diagnostics_report_the_widened_scale() -> None:
    X = np.random.default_rng(1).normal(size=(400, 6)) / 3.0
    res = _stochastic.dp_vrpca(X, 1, epsilon=EPS, delta=DELTA, row_norm=1.0, n_steps=2, adaptive_clip=False,
                               random_state=0)
    mech = _stochastic._VRPCA(None)
    plan, _ = mech._method_plan(mech.check(_stochastic_inputs(n_steps=2), X), 400, 6)
    assert res.diagnostics["noise_std"] == plan["step"].scale
    assert res.diagnostics["full_gradient_noise_std"] == plan["full_gradient"].scale


@pytest.mark.parametrize("relation", [Relation.REPLACE_ONE, Relation.ADD_REMOVE])
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_site_scatter_widened_at_the_public_rows(relation: Relation, calibration: str) -> None:
    """The aggregator plans before any site is read. Under replace-one: ``X_s^T X_s`` at
    UNGROUPED_PUBLIC_ROWS rows in any grouping (``h = UNGROUPED_PUBLIC_ROWS + 2``, terms ``C^2``); under
    add/remove: summed in groups, as every site path is, for a width not known when planning (groups of
    fewer than ``b = 2**14 + 2**18`` rows, closed at ``s = 2**14``: ``h = b + ceil(N / s) + 1``), at the
    largest power of two ``N <= 2**28`` whose widening ``2 gamma_h N`` stays within 0.5 %."""
    budget = PrivacyBudget(EPS, DELTA)
    plan = site_release_plan(budget=budget, relation=relation, calibration=calibration, row_norm=1.0,
                             release_count=False)
    sens = (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * CS**2
    multiplier = plan.events[0].noise_multiplier
    if calibration == "paper" and relation is Relation.REPLACE_ONE:
        assert multiplier == classic_noise_multiplier(EPS, DELTA) * CS**2 / sens
    if relation is Relation.REPLACE_ONE:
        rows = UNGROUPED_PUBLIC_ROWS
        _check(plan["scatter"], sens, multiplier, _share(rows + 2, rows, CS**2, sens))
        return
    b, s = 2**14 + 2**18, 2**14
    rows = 2**28
    while _share(b + -(-rows // s) + 1, rows, CS**2, CS**2) > 0.005:
        rows //= 2
    assert rows == 2**26  # far above the replace-one plan's 2**16
    _check(plan["scatter"], sens, multiplier, _share(b + -(-rows // s) + 1, rows, CS**2, sens))


def _site_plan(relation: Relation) -> SitePlan:
    release = site_release_plan(budget=PrivacyBudget(EPS, DELTA), relation=relation, calibration="tight",
                                row_norm=1.0, release_count=False)
    return SitePlan(variant="full", rank=1, spectrum="eigh", relation=relation, calibration="tight",
                    row_norm=1.0, release=release)


def test_a_site_restates_its_scatter_where_its_own_bound_is_larger() -> None:
    plan = _site_plan(Relation.REPLACE_ONE)
    planned = plan.release_plan["scatter"]
    assert planned.sensitivity is not None
    # at most UNGROUPED_PUBLIC_ROWS rows, any grouping: the plan covers it
    assert _at_site(plan, UNGROUPED_PUBLIC_ROWS, Summation()) is plan
    # N_s public (replace-one) above the planned rows: widened at N_s, the multiplier unchanged
    n = 4 * UNGROUPED_PUBLIC_ROWS
    mine = _at_site(plan, n, Summation())
    assert mine.release_plan.events == plan.release_plan.events
    r = _share(n + 2, n, CS**2, planned.sensitivity)
    _check(mine.release_plan["scatter"], planned.sensitivity, planned.scale / planned.sensitivity, r)
    assert mine.scatter_std == mine.release_plan["scatter"].scale
    # N_s private (add/remove): bounded at the grouped path's public rows whatever N_s (a site's own rows
    # are summed in groups), more only for a longer path (a Dask array's 9 partials added in any order)
    private = _site_plan(Relation.ADD_REMOVE)
    grouped = grouped_summation(None)
    assert _at_site(private, n, grouped) is private
    assert _at_site(private, 2**40, grouped) is private
    dask = _at_site(private, n, Summation(block_rows=grouped.block_rows, group_rows=grouped.group_rows,
                                          partials=9))
    scatter = private.release_plan["scatter"]
    assert scatter.sensitivity is not None
    rows, b, s = 2**26, 2**14 + 2**18, 2**14
    _check(dask.release_plan["scatter"], scatter.sensitivity, scatter.scale / scatter.sensitivity,
           _share(b + rows // s + 8 + 1, rows, CS**2, scatter.sensitivity))


def test_stated_site_scales_are_widened_with_their_events_unchanged() -> None:
    plan = SitePlan(variant="full", rank=1, spectrum="eigh", relation=Relation.REPLACE_ONE,
                    calibration="tight", row_norm=1.0, scatter_std=2.0)
    sens = math.sqrt(2.0) * CS**2
    assert plan.release_plan.events == (dp_accounting.GaussianDpEvent(2.0 / sens),)
    rows = UNGROUPED_PUBLIC_ROWS
    _check(plan.release_plan["scatter"], sens, 2.0 / sens, _share(rows + 2, rows, CS**2, sens))
    assert plan.scatter_std == plan.release_plan["scatter"].scale


def test_local_report_and_simulated_average() -> None:
    """One user's ``w * upper(x x^T)`` (n = 1: ``h = 4``, ``T = C^2``) and the simulated server average
    ``X^T X / n`` weighted (``h = n + 4``, terms ``C^2 / n``); one user's event, unchanged."""
    from dpspectral.local import _gaussian

    n = 300_000
    plan = _gaussian._plan(PrivacyBudget(EPS, DELTA), "tight", 1.0, "local_gaussian", n_users=n,
                           summation=Summation())
    s = analytic_noise_multiplier(EPS, DELTA)
    assert plan.events == (dp_accounting.GaussianDpEvent(s),)
    sens = math.sqrt(2.0) * CS**2
    _check(plan["average"], sens / n, s * math.sqrt(n), _share(n + 4, n, CS**2 / n, sens / n))
    report = plan["report"]
    assert report.sensitivity is not None
    assert report.sensitivity > sens  # r = 2 gamma_4 / sqrt(2), below the float resolution of a check
    assert _observed(report.sensitivity, sens) == pytest.approx(_share(4, 1, CS**2, sens), abs=3e-16)
    assert report.scale / report.sensitivity == pytest.approx(s, rel=1e-15)


def test_secure_aggregation_sensitivity_covers_the_sites_rounding() -> None:
    """The secure round's ``Delta = max_s c_s sqrt(2) C^2`` plus, for the site that changes, twice the
    rounding of its computed ``c_s upper(S_s)``: ``c_s gamma_(2 N_s + 3) N_s C^2`` (any path, the scaling
    by ``c_s / g``); the multiplier unchanged, the grid term ``g sqrt(m)`` as before."""
    from dpspectral.distributed._secure import quantisation

    sizes = {0: 50_000, 1: 200_000, 2: 120_000}
    total = sum(sizes.values())
    coefficients = {s: (n / total) / n for s, n in sizes.items()}  # weights by size: c_s = 1 / N
    d, multiplier = 6, 3.0
    m = d * (d + 1) // 2
    g0, plain, share0 = quantisation(coefficients, multiplier, 1.0, d, "t")
    g, sensitivity, share = quantisation(coefficients, multiplier, 1.0, d, "t", n_samples=sizes)
    delta = max(coefficients.values()) * math.sqrt(2.0)
    rounding = 2 * max(c * _gamma(2 * sizes[s] + 3) * sizes[s] * CS**2 for s, c in coefficients.items())
    assert rounding > 0 and g == g0
    assert _observed(sensitivity - g * math.sqrt(m), delta) == pytest.approx(rounding / delta, rel=1e-4)
    assert share / sensitivity == pytest.approx(multiplier / math.sqrt(3), rel=1e-15)
    assert share > share0 and plain == pytest.approx(delta + g * math.sqrt(m), rel=1e-15)


@pytest.mark.parametrize("relation", [Relation.REPLACE_ONE, Relation.ADD_REMOVE])
def test_exponential_diagonal(relation: Relation) -> None:
    """The released diagonal ``sum_i x_i * x_i`` (L1: terms ``||x||^2 <= C^2``), from a list of blocks
    summed in groups (``h = b + ceil(n / 2**14) + 1``, ``b`` the most rows of a group at 40 features) at
    ``n`` (replace-one) or the path's public rows (add/remove); the Laplace event unchanged."""
    from dpspectral._moments import gram_block_rows
    from dpspectral.pca import _exponential as ex
    from dpspectral.privacy._rounding import public_rows

    inputs = ex._ExponentialInputs(
        kind="exponential", k=2, epsilon=EPS, delta=0.0, row_norm=1.0, relation=relation.value,
        calibration="tight", eigenvalue_share=0.2, vector_shares=None, allocation="adaptive",
        accounting="per_direction", coordinate_share=0.1, on_norm_violation="clip", envelope="auto",
        max_proposals=100)
    mech = ex._Exponential("exponential")
    checked = mech.check(inputs, [np.zeros((5, 40))])  # a list of blocks
    n, d = 500_000, 40
    plan = mech.plan(checked, n, d)
    assert plan is not None
    l1 = (2.0 if relation is Relation.REPLACE_ONE else 1.0) * CS**2
    diagonal = plan["diagonal"]
    event = plan.events[0]
    assert isinstance(event, dp_accounting.LaplaceDpEvent)
    rows = n if relation is Relation.REPLACE_ONE else public_rows(checked.summation, "products", CS**2 / l1)
    assert rows >= UNGROUPED_PUBLIC_ROWS
    h = gram_block_rows(d) + -(-rows // 2**14) + 1
    _check(diagonal, l1, event.noise_multiplier, _share(h, rows, CS**2, l1))


def test_learning_rate_search_validation_score() -> None:
    """The mean captured variance over the ``n_val`` validation rows: ``h = k (2 d + 3) + n_val k +
    blocks + 1`` (the products with W, the squares, the sums, the division), terms ``C^2 / n_val``."""
    from dpspectral.pca import _lr_search

    n, d, k = 400_000, 50, 2
    grid = [(1, 1.0, 10.0), (1, 3.0, 10.0), (2, 10.0, 10.0)]
    _, search = _lr_search._plan(n, d, k, budget=PrivacyBudget(EPS, DELTA), relation=Relation.REPLACE_ONE,
                                 row_norm=1.0, C=1.0, method="private_oja", grid=grid, validation_share=0.25,
                                 tuning="private", on_norm_violation="clip", method_params={},
                                 owner="select_learning_rate")
    n_val = n // 4
    assert search.validation is not None and search.n_val == n_val
    blocks = -(-n_val // ((1 << 22) // d))
    sens = CS**2 / n_val
    r = _share(k * (2 * d + 3) + n_val * k + blocks + 1, n_val, CS**2 * (1 + 1e-6) ** 2 / n_val, sens)
    _check(search.validation["score"], sens, analytic_noise_multiplier(EPS, DELTA) * math.sqrt(len(grid)), r)
