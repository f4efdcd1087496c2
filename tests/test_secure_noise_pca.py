"""The secure noise source (``random_state="secure"``) in the exponential-mechanism, power-method,
stochastic, model-selection, learning-rate-search and local-Gaussian mechanisms.

For every public function: it runs on small data, its report says ``noise_source == "secure"``, the
result is certified as for the seeded source, and two secure runs differ (OS entropy, no seed). Two
secure runs of a continuous release coincide with probability 0; for the discrete choices
(``private_select``, ``select_subspace``) the test uses a flat score (every candidate equally likely)
and compares 40 draws: they coincide with probability ``4**-40``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpspectral import config_context
from dpspectral.local._gaussian import local_gaussian, local_gaussian_report
from dpspectral.model_selection import private_select, select_subspace
from dpspectral.pca._exponential import EpsilonSplit, exponential_pca, ppca
from dpspectral.pca._lr_search import select_learning_rate
from dpspectral.pca._power import noisy_power
from dpspectral.pca._stochastic import dp_spca, dp_vrpca
from dpspectral.privacy import Accountant
from dpspectral.privacy._noise import GRID_BITS

DELTA = 1e-5


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4)) * np.r_[2.0, 1.0, 0.5, 0.5]
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]


RUNS = {
    "ppca": lambda X, rs: ppca(X, 2, epsilon=1.0, row_norm=1.0, random_state=rs),
    "exponential_pca": lambda X, rs: exponential_pca(X, 2, epsilon=1.0, row_norm=1.0, random_state=rs),
    "noisy_power": lambda X, rs: noisy_power(X, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, n_iter=5,
                                             random_state=rs),
    "dp_spca": lambda X, rs: dp_spca(X, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, n_steps=20,
                                     sampling_rate=0.2, learning_rate=0.5, random_state=rs),
    "dp_vrpca": lambda X, rs: dp_vrpca(X, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, n_steps=10,
                                       n_epochs=2, sampling_rate=0.2, learning_rate=0.5, random_state=rs),
    "local_gaussian": lambda X, rs: local_gaussian(X, 2, epsilon=1.0, delta=DELTA, row_norm=1.0,
                                                   random_state=rs),
    "local_gaussian_reports": lambda X, rs: local_gaussian(X, 2, epsilon=1.0, delta=DELTA, row_norm=1.0,
                                                           simulate_sum=False, random_state=rs),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_secure_runs_are_reported_secure_and_differ(name: str, data: np.ndarray) -> None:
    run = RUNS[name]
    a, b = run(data, "secure"), run(data, "secure")
    assert a.privacy.noise_source == "secure" and b.privacy.noise_source == "secure"
    assert any("secure" in note for note in a.privacy.notes)
    assert not np.array_equal(a.components, b.components)
    W = a.components
    np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-8)
    seeded = run(data, 0)
    assert seeded.privacy.noise_source == "exact"
    assert a.privacy.certified == seeded.privacy.certified
    assert a.privacy.epsilon == pytest.approx(seeded.privacy.epsilon)


def test_secure_run_is_charged_like_a_seeded_one(data: np.ndarray) -> None:
    ledger = Accountant(epsilon=10.0, delta=1e-3)
    noisy_power(data, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, n_iter=3, accountant=ledger,
                random_state="secure")
    # two stages by default: the norm histogram (adaptive clip), then the iterations
    assert len(ledger.entries) == 2 and ledger.failures == ()
    seeded = Accountant(epsilon=10.0, delta=1e-3)
    noisy_power(data, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, n_iter=3, accountant=seeded, random_state=0)
    assert [e.event for e in seeded.entries] == [e.event for e in ledger.entries]


def test_secure_eigenvalues_lie_on_the_laplace_grid(data: np.ndarray) -> None:
    """The released eigenvalue vector is a multiple of the secure grid ``2**(floor(log2 b) - 30)``."""
    res = exponential_pca(data, 2, epsilon=1.0, row_norm=1.0, random_state="secure",
                          epsilon_split=EpsilonSplit(eigenvalue_share=0.5))
    grid = 2.0 ** (np.floor(np.log2(res.diagnostics["eigenvalue_noise_scale"])) - GRID_BITS)
    steps = np.append(res.values, res.total) / grid
    np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-3)


def test_secure_local_report_lies_on_the_grid_and_differs() -> None:
    x = np.array([0.3, -0.4, 0.5])
    kw = dict(epsilon=1.0, delta=DELTA, row_norm=1.0, random_state="secure")
    a, b = local_gaussian_report(x, **kw), local_gaussian_report(x, **kw)
    assert a.shape == (6,) and not np.array_equal(a, b)
    seeded = local_gaussian_report(x, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=0)
    with config_context(noise="float"):
        floating = local_gaussian_report(x, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=0)
    std = local_gaussian(x[None, :], 1, epsilon=1.0, delta=DELTA, row_norm=1.0,
                         random_state=0).diagnostics["noise_std"]
    grid = 2.0 ** (np.floor(np.log2(std)) - GRID_BITS)
    i, j = np.triu_indices(3)
    iso = np.where(i == j, 1.0, math.sqrt(2.0))  # noise_shape="goe" releases upper(M) * iso on the grid
    steps, seeded_steps = a * iso / grid, seeded * iso / grid
    float_steps = floating * iso / grid
    # on the grid up to the rounding of * sqrt(2) / sqrt(2) (relative 1e-16 of values ~1e9 steps)
    assert np.max(np.abs(steps - np.rint(steps))) <= 1e-6
    assert np.max(np.abs(seeded_steps - np.rint(seeded_steps))) <= 1e-6  # the exact default: the grid too
    assert np.max(np.abs(float_steps - np.rint(float_steps))) > 1e-3  # the float source has no grid


def test_secure_private_select_and_select_subspace(data: np.ndarray) -> None:
    cands = [1, 2, 3, 4]
    picks = [[private_select(cands, lambda c: 0.0, epsilon=1.0, sensitivity=1.0,
                             random_state="secure").index for _ in range(40)] for _ in range(2)]
    assert picks[0] != picks[1]  # flat scores: equal with probability 4**-40
    out = private_select(cands, lambda c: 0.0, epsilon=1.0, sensitivity=1.0, random_state="secure")
    assert out.privacy.noise_source == "secure" and out.privacy.certified
    subspaces = [np.eye(4)[:, [i]] for i in range(4)]
    flat = np.ones((8, 4)) * 0.25  # every coordinate axis captures the same energy
    sel = [[select_subspace(subspaces, flat, epsilon=1.0, row_norm=1.0, random_state="secure").index
            for _ in range(40)] for _ in range(2)]
    assert sel[0] != sel[1]
    res = select_subspace(subspaces, data, epsilon=1.0, row_norm=1.0, random_state="secure")
    assert res.privacy.noise_source == "secure"


def test_secure_learning_rate_search() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 3)) * np.r_[3.0, 1.0, 1.0]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    kw = dict(epsilon=2.0, delta=1e-6, row_norm=1.0, method="private_oja", n_rounds=1,
              random_state="secure")
    a, b = select_learning_rate(X, 1, **kw), select_learning_rate(X, 1, **kw)
    assert a.privacy.noise_source == "secure" and a.result.privacy.noise_source == "secure"
    assert a.privacy.certified
    assert a.candidates[0]["score"] != b.candidates[0]["score"]
    assert not np.array_equal(a.result.components, b.result.components)


@pytest.mark.parametrize("shape", ["goe", "iid"])
def test_secure_symmetric_noise_has_the_shape_of_its_release(shape: str) -> None:
    # The secure source releases iso(S) ("goe": diagonal, sqrt(2) x the entries above it) or upper(S)
    # ("iid") with i.i.d. discrete Gaussian noise of std sigma (widened by the rounding, a factor
    # 1 + 2^-30 sqrt(m)). All-zero data: the released matrix is the noise. Chi-square tests of the
    # diagonal and the off-diagonal part, two-sided false-positive rate 1e-6 each (seeded bits are not
    # used: OS entropy; the rate holds per run).
    from scipy import stats

    from dpspectral.pca._covariance import analyze_gauss

    d, reps = 5, 150
    i, j = np.triu_indices(d)
    weight = np.where(i == j, 1.0, math.sqrt(2.0) if shape == "goe" else 1.0)
    diag_total = off_total = 0.0
    for _ in range(reps):
        r = analyze_gauss(np.zeros((4, d)), d, epsilon=1.0, delta=DELTA, row_norm=1.0,
                          noise_shape=shape, random_state="secure")
        released = ((r.components * r.values) @ r.components.T)[i, j] * weight / r.diagnostics["noise_std"]
        diag_total += float(np.sum(released[i == j] ** 2))
        off_total += float(np.sum(released[i != j] ** 2))
    for total, count in ((diag_total, reps * d), (off_total, reps * d * (d - 1) // 2)):
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], count)
        assert lo <= total <= hi
