"""Oja, Private Oja and DP-PCA with the secure noise source (``random_state="secure"``).

The secure source draws exact discrete Gaussian / Laplace samples from OS entropy, one coordinate at a
time in pure Python, so the runs here are tiny (d = 3, tens of steps). Each public function is run
once or twice: it must answer, report ``noise_source == "secure"``, draw its additive noise from the
secure samplers (counted by a spy on :class:`SecureNoise`: exactly the coordinates the plan says) and
differ between two runs (fresh OS entropy). Runs with the secure source are not reproducible, so the
assertions hold for every draw (no statistical test, no false-positive rate) except where stated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpspectral import Accountant, RangeEstimation
from dpspectral.pca._oja import (
    AnalysisRangeWarning,
    dp_pca,
    oja,
    private_mean,
    private_oja,
    private_top_eigenvalue,
)
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._noise import SecureNoise, SeededNoise
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, release

DELTA = 1e-5


@pytest.fixture(scope="module")
def rows():
    """320 x 3 rows with a clear top direction, scaled to row norm <= 1."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((320, 3)) * [1.0, 0.5, 0.2]
    return X / np.linalg.norm(X, axis=1).max()


@pytest.fixture
def secure_draws(monkeypatch):
    """Records (kind, number of coordinates) of every draw of the secure samplers."""
    record: list[tuple[str, int]] = []
    real = SecureNoise._add

    def spy(self, statistic, scale, sensitivity, kind, each=False):
        record.append((kind, int(np.size(statistic))))
        return real(self, statistic, scale, sensitivity, kind, each=each)

    monkeypatch.setattr(SecureNoise, "_add", spy)
    return record


def _coordinates(record, kind: str) -> int:
    return sum(m for k, m in record if k == kind)


def test_oja_secure_initial_iterate(rows):
    a = oja(rows, 2, random_state="secure")
    b = oja(rows, 2, random_state="secure")
    assert a.privacy.noise_source == "secure" and not a.privacy.certified
    assert np.allclose(a.components.T @ a.components, np.eye(2), atol=1e-10)
    assert not np.array_equal(a.components, b.components)  # a fresh OS-seeded initial iterate


@pytest.mark.parametrize("k,rank_method", [(1, "block"), (2, "deflation")])
def test_private_oja_secure(rows, secure_draws, k, rank_method):
    X = rows[:60]
    acc = Accountant(10.0, 1e-3)
    a = private_oja(X, k, epsilon=1.0, delta=DELTA, row_norm=1.0, rank_method=rank_method,
                    accountant=acc, random_state="secure", adaptive_clip=False)  # the steps' draws only
    assert a.privacy.noise_source == "secure" and a.privacy.certified
    assert len(acc.entries) == 1 and not acc.failures
    # one Gaussian coordinate per step and per column of the iterate, all from the secure sampler
    columns = k if rank_method == "block" else 1
    assert _coordinates(secure_draws, "gaussian") == X.shape[0] * X.shape[1] * columns
    assert _coordinates(secure_draws, "laplace") == 0
    b = private_oja(X, k, epsilon=1.0, delta=DELTA, row_norm=1.0, rank_method=rank_method,
                    random_state="secure")
    assert a.components.shape == (3, k) and not np.array_equal(a.components, b.components)


def test_private_oja_secure_with_shuffling(secure_draws):
    # The smallest n at which the shuffle bound certifies epsilon = 1 at delta = 1e-3 comfortably.
    X = np.random.default_rng(1).standard_normal((2000, 2)) / 5
    res = private_oja(X, 1, epsilon=1.0, delta=1e-3, row_norm=1.0, amplification="shuffle",
                      random_state="secure")
    assert res.privacy.noise_source == "secure" and res.privacy.certified
    assert any("shuffled here" in note for note in res.privacy.notes)
    assert _coordinates(secure_draws, "gaussian") == X.size


@pytest.mark.parametrize("histogram", ["laplace", "stable"])
def test_dp_pca_secure(rows, secure_draws, histogram):
    groups = 2 if histogram == "laplace" else 3
    kw = dict(epsilon=200.0, delta=DELTA, row_norm=1.0, batch_size=32, schedule="paper",  # halves, p = k,
              range_estimation=RangeEstimation(histogram=histogram, n_groups=groups))  # Alg. 5 always
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisRangeWarning)
        acc = Accountant(500.0, 1e-3)
        a = dp_pca(rows, 1, accountant=acc, random_state="secure", **kw)
        taken = a.diagnostics["n_steps"] - a.diagnostics["skipped_steps"]
        gaussian = _coordinates(secure_draws, "gaussian")
        b = dp_pca(rows, 1, random_state="secure", **kw)
    assert a.privacy.noise_source == "secure" and a.privacy.certified and len(acc.entries) == 1
    assert a.diagnostics["n_steps"] == rows.shape[0] // 32
    # the mean's Gaussian noise: p = d coordinates per step taken, from the secure sampler
    assert gaussian == 3 * taken
    # the histograms' Laplace noise: every one of Algorithm 4's 258 bins per step (laplace), or the
    # occupied bins only (stable): at least one per histogram
    laplace = _coordinates(secure_draws, "laplace")
    assert laplace >= (258 if histogram == "laplace" else 1) * a.diagnostics["n_steps"]
    assert not np.array_equal(a.components, b.components)
    # every bin of a Laplace histogram is noised: steps with too wide a range are skipped (noted)
    noted = any("Secure noise" in note and "skipped" in note for note in a.privacy.notes)
    assert noted is (histogram == "laplace")


def test_private_top_eigenvalue_secure(secure_draws):
    # Rows ~ N(0, diag(0.3, 0.03, 0.03)): 10 groups of 200 pairs; at epsilon = 1e3 the histogram noise
    # (scale 2e-3) cannot move the winning bin: the estimate is within a factor 2 of 0.3 (as in
    # test_oja.py's seeded test).
    rng = np.random.default_rng(2)
    G = rng.standard_normal((4000, 3)) * np.sqrt([0.3, 0.03, 0.03])
    est = private_top_eigenvalue(G, epsilon=1e3, delta=DELTA, bound=2.0, n_groups=10,
                                 random_state="secure")
    assert est is not None and 0.15 <= est <= 0.6
    # every bin of the public range [-4 * 64 - 1, 0] (the underflow bin -257 included)
    assert _coordinates(secure_draws, "laplace") == 4 * 64 + 2


def test_private_mean_secure(secure_draws):
    G = 0.3 + 0.05 * np.random.default_rng(3).standard_normal((200, 3))
    kw = {"radius": 0.5, "bound": 1.0, "hist_scale": 1e-3, "hist_budget": None,
          "noise_std_per_sensitivity": 2.0, "half_width_mult": 3.0}
    a, info = private_mean(G, random_state="secure", **kw)
    b, _ = private_mean(G, random_state="secure", **kw)
    assert a is not None and b is not None and not np.array_equal(a, b)
    # the noise std is 2 x 0.045 = 0.09: |error| < 0.9 (10 std) fails with probability ~1e-23
    assert np.all(np.abs(a - G.mean(axis=0)) < 0.9)
    assert _coordinates(secure_draws, "gaussian") == 2 * 3
    assert info["sensitivity"] == pytest.approx(2 * 3.0 * 0.5 * np.sqrt(3) / 200)


def test_private_mean_secure_refuses_a_range_it_cannot_noise():
    # A radius of 1e-6 over |g| <= 1 is ~1e6 bins: the secure source noises every bin, at most 65536.
    G = np.zeros((20, 2))
    with pytest.raises(ValueError, match="at most 65536"):
        private_mean(G, radius=1e-6, bound=1.0, hist_scale=1.0, hist_budget=None,
                     noise_std_per_sensitivity=1.0, random_state="secure")


def test_building_blocks_refuse_scales_that_are_not_planned():
    # Inside a mechanism the plan is the authority: a call with other scales is a programming error.
    plan = ReleasePlan("test", Relation.REPLACE_ONE, (), (
        NoisyRelease("coordinate_histograms", "laplace", 0.5, 2.0),
        NoisyRelease("mean", "gaussian", 1.0, 1.0),
        NoisyRelease("eigenvalue_histogram", "laplace", 2.0, 2.0)))
    G = np.zeros((40, 2))
    with release(plan, None, SeededNoise(np.random.default_rng(0))) as releaser:
        with pytest.raises(RuntimeError, match="planned"):
            private_mean(G, radius=0.1, bound=1.0, hist_scale=0.5, hist_budget=None,
                         noise_std_per_sensitivity=2.0, releaser=releaser)
        with pytest.raises(RuntimeError, match="planned"):
            private_top_eigenvalue(G, epsilon=2.0, delta=DELTA, bound=2.0, n_groups=2, releaser=releaser)
        est = private_top_eigenvalue(G, epsilon=1.0, delta=DELTA, bound=2.0, n_groups=2,
                                     releaser=releaser)  # the planned scale 2 / epsilon: accepted
        assert est is None or 0.0 < est <= 2.0
