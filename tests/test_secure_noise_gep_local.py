"""The GEP solvers and the local low-rank protocol through the release pipeline's secure noise source.

Every public mechanism of ``dpspectral.gep`` (``sr_dp``, ``dpsr``, ``dpsrs``, the two Rayleigh flows)
and of ``dpspectral.local._lowrank`` (``private_local_lrf``, ``local_lrf_report``) accepts
``random_state="secure"`` (``rng="secure"`` for one user's report): it runs, its report says
``noise_source == "secure"``, two secure runs differ (OS entropy: the chance that two runs draw the
same noise is nil), and one user's report is an exact multiple of the secure grid (no low-order bits
of a floating-point sample). The seeded source keeps every seeded result (the pinned tests).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpspectral import Accountant, UncertifiedPrivacyWarning, config_context
from dpspectral.gep import (
    dp_rayleigh_flow,
    dp_truncated_rayleigh_flow,
    dpsr,
    dpsrs,
    fda_pair,
    pca_pair,
    private_fda,
    sr_dp,
)
from dpspectral.local._lowrank import (
    local_lrf_noise,
    local_lrf_report,
    local_lrf_setup,
    private_local_lrf,
)
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._noise import GRID_BITS, SeededNoise
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, release

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=200)
    X = rng.normal(size=(200, 4)) * 0.4 + 0.3 * y[:, None]
    return X, y


@pytest.fixture(scope="module")
def pairs(data):
    X, y = data
    return {"fda": fda_pair(X, y, row_norm=1.0, classes=[0, 1]), "pca": pca_pair(X, row_norm=1.0)}


GEP_CALLS = {
    "sr_dp": lambda p, **kw: sr_dp(p, 2, **kw),
    "dpsr": lambda p, **kw: dpsr(p, 2, n_iter=5, **kw),
    "dpsr_lambda_from_gradient": lambda p, **kw: dpsr(p, 2, n_iter=5, budget_shares=(0.5, 0.0, 0.5), **kw),
    "dpsrs": lambda p, **kw: dpsrs(p, 2, 3, n_iter=5, **kw),
    "dp_rayleigh_flow": lambda p, **kw: dp_rayleigh_flow(p, 2, n_iter=5, **kw),
    "dp_truncated_rayleigh_flow": lambda p, **kw: dp_truncated_rayleigh_flow(p, 2, 3, n_iter=5, **kw),
}


@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("kind", ["fda", "pca"])
@pytest.mark.parametrize("name", list(GEP_CALLS))
def test_gep_solvers_run_on_the_secure_source(name, kind, calibration, pairs):
    call = GEP_CALLS[name]
    acc = Accountant(10.0, 1e-3)
    with warnings.catch_warnings():  # some paper calibrations are reported uncertified (tested elsewhere)
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        a = call(pairs[kind], epsilon=EPS, delta=DELTA, calibration=calibration, random_state="secure",
                 accountant=acc)
        b = call(pairs[kind], epsilon=EPS, delta=DELTA, calibration=calibration, random_state="secure")
    assert a.privacy.noise_source == "secure" and b.privacy.noise_source == "secure"
    assert any("secure source" in note for note in a.privacy.notes)
    assert a.vectors.shape == (4, 2) and np.isfinite(a.vectors).all() and np.isfinite(a.values).all()
    assert not np.array_equal(a.vectors, b.vectors)
    assert len(acc.entries) == 1 and acc.entries[0].status == "released"  # one charge, as seeded


def test_seeded_reports_name_the_exact_source(pairs):
    res = dpsr(pairs["fda"], 2, epsilon=EPS, delta=DELTA, n_iter=5, random_state=0)
    assert res.privacy.noise_source == "exact"
    with config_context(noise="float"):
        res = dpsr(pairs["fda"], 2, epsilon=EPS, delta=DELTA, n_iter=5, random_state=0)
    assert res.privacy.noise_source == "float"


def test_private_fda_passes_the_secure_source_to_the_solver(data):
    X, y = data
    for options in ({"method": "dpsr", "n_iter": 5}, {}):  # a paper solver, and the default (moments)
        res = private_fda(X, y, 1, epsilon=EPS, delta=DELTA, row_norm=1.0, classes=[0, 1],
                          random_state="secure", **options)
        assert res.privacy.noise_source == "secure" and res.vectors.shape == (4, 1)


@pytest.mark.parametrize("kw", [
    {},
    {"simulate_sum": True},
    {"calibration": "paper"},
    {"sketch_sensitivity": "drawn"},
    {"row_change": 1.0},
], ids=["per-user", "simulate-sum", "paper", "drawn", "row-change"])
def test_private_local_lrf_runs_on_the_secure_source(kw):
    A = np.random.default_rng(1).uniform(size=(20, 6))
    acc = Accountant(delta=1e-3)  # no ceiling: the paper calibration is not certified
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        a = private_local_lrf(A, 2, epsilon=EPS, delta=DELTA, row_norm=2.0, subspace_sketch_size=2,
                              affine_sketch_size=3, sketch_seed=7, random_state="secure", accountant=acc,
                              **kw)
        b = private_local_lrf(A, 2, epsilon=EPS, delta=DELTA, row_norm=2.0, subspace_sketch_size=2,
                              affine_sketch_size=3, sketch_seed=7, random_state="secure", **kw)
    assert a.privacy.noise_source == "secure" and b.privacy.noise_source == "secure"
    assert a.U.shape == (20, 2) and np.isfinite(a.U).all()
    assert not np.array_equal(a.S, b.S)
    assert len(acc.entries) == 1
    assert a.diagnostics["sketch_seed"] == 7  # the public sketches come from the public seed only


def _grid(scale: float) -> float:
    return math.ldexp(1.0, math.floor(math.log2(scale)) - GRID_BITS)


@pytest.mark.parametrize("calibration,sketch_sensitivity",
                         [("tight", "per_pair"), ("paper", "per_pair"), ("tight", "drawn")])
def test_local_report_on_the_secure_source_lies_on_its_grid(calibration, sketch_sensitivity):
    setup = local_lrf_setup(12, 5, 2, subspace_sketch_size=2, affine_sketch_size=3, seed=3)
    row = np.linspace(-0.4, 0.5, 5)
    kw = dict(epsilon=EPS, delta=DELTA, row_norm=1.0, calibration=calibration,
              sketch_sensitivity=sketch_sensitivity)
    a = local_lrf_report(row, 4, setup, rng="secure", **kw)
    b = local_lrf_report(row, 4, setup, rng="secure", **kw)
    assert a.y.shape == (2,) and a.Z.shape == (3, 3)
    assert not np.array_equal(a.as_vector(), b.as_vector())
    if sketch_sensitivity == "per_pair":
        noise = local_lrf_noise(EPS, DELTA, 2, 3, row_norm=1.0, calibration=calibration)
        for part, sigma in ((a.y, noise.sigma_y), (a.Z, noise.sigma_z)):
            steps = part / _grid(sigma)  # exact: the grid is a power of two
            assert np.array_equal(steps, np.round(steps))  # no low-order bits of a float sample
    # the user regenerated the sketches from the public seed: the same report law as seeded
    seeded = local_lrf_report(row, 4, setup, rng=0, **kw)
    assert seeded.as_vector().shape == a.as_vector().shape


def test_seeded_local_report_draws_what_the_generator_drew():
    """One report is one Gaussian on (y_i, Z_i): y's noise then Z's, row by row, from ``rng`` (the
    float source, whose draws are NumPy's normals)."""
    setup = local_lrf_setup(12, 5, 2, subspace_sketch_size=2, affine_sketch_size=3, seed=3)
    row = np.linspace(-0.4, 0.5, 5)
    noise = local_lrf_noise(EPS, DELTA, 2, 3, row_norm=1.0)
    with config_context(noise="float"):
        rep = local_lrf_report(row, 4, setup, epsilon=EPS, delta=DELTA, row_norm=1.0, rng=11)
    z = np.random.default_rng(11).standard_normal(2 + 9)
    np.testing.assert_array_equal(rep.y, row @ setup.Phi + noise.sigma_y * z[:2])
    np.testing.assert_array_equal(rep.Z, np.outer(setup.S[:, 4], setup.T @ row)
                                  + noise.sigma_z * z[2:].reshape(3, 3))


def _plan() -> ReleasePlan:
    return ReleasePlan("t", Relation.REPLACE_ONE, (), (NoisyRelease("phase2", "gaussian", 2.0, 1.0),))


def test_adapted_release_keeps_the_multiplier_and_stays_in_the_block():
    with release(_plan(), None, SeededNoise(np.random.default_rng(0))) as releaser:
        with releaser.adapted("phase2", scale=1.0, sensitivity=0.5) as sub:
            assert sub.plan["phase2"].scale == 1.0 and sub.plan.events == releaser.plan.events
            drawn = sub.add("phase2", np.zeros(4000))
        with pytest.raises(RuntimeError):  # the adapted releaser closes with its block
            sub.add("phase2", np.zeros(2))
        with pytest.raises(ValueError, match="planned noise multiplier"):  # another multiplier
            with releaser.adapted("phase2", scale=1.0, sensitivity=0.25):
                pass
        with pytest.raises(ValueError, match="smaller sensitivity"):  # above the planned worst case
            with releaser.adapted("phase2", scale=4.0, sensitivity=2.0):
                pass
    assert float(np.std(drawn)) == pytest.approx(1.0, rel=0.1)  # 4000 draws: 5 sigma is 0.056
    with pytest.raises(RuntimeError):  # after the charged block: no adaptation
        with releaser.adapted("phase2", scale=1.0, sensitivity=0.5):
            pass
