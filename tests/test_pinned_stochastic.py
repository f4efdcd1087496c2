"""Pinned calibrations of DP-SPCA, DP-VRPCA and Private Oja: independent derivations.

For each release: (a) the sensitivity is derived here from a worst neighbouring pair built by hand
(not from the library's formula); (b) the noise the mechanism actually draws is measured on data where
the noiseless step is known (all-zero rows: the gradient vanishes, so one step moves the iterate by the
noise alone), and the accountant's epsilon for the measured scale over the hand-derived sensitivity is
compared with the claim; (c) clipping is tested by its effect: a row of norm 10 must act exactly like
the same row scaled to norm C.

Measuring the noise. With zero rows and k = 1, one step is ``w1 = normalise(w0 + h z)`` (``h`` the step
size times the noise std, ``z ~ N(0, I_d)``). A run with a negligible step size and the same seed gives
``w0`` (the same generator draws, in the same order). Then ``w1 / (w1 . w0) - w0 = h P z / (1 + h z.w0)``
with ``P`` the projection orthogonal to ``w0``: its squared norm over ``d - 1`` estimates ``h^2`` (a
chi-square with ``d - 1`` degrees of freedom, pooled over seeds); ``h z.w0`` is kept below 1e-3 so the
denominator moves the estimate by < 0.5%.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dpspectral import dp_spca, dp_vrpca
from dpspectral.pca._oja import private_oja
from dpspectral.privacy import epsilon_of

DELTA = 1e-5


def _orthogonal_spread(w0: np.ndarray, w1: np.ndarray) -> tuple[float, int]:
    """(sum of squares of w1 / (w1.w0) - w0 orthogonal to w0, degrees of freedom)."""
    v = w1 / float(w1 @ w0) - w0
    v = v - float(v @ w0) * w0
    return float(v @ v), w0.size - 1


def _measured_std(run, d: int, seeds: range, small: float, big: float) -> float:
    """Pooled estimate of the per-step noise scale h / (step size): runs ``run(X, rate, seed)``."""
    X = np.zeros((1, d))
    ss, dof = 0.0, 0
    for seed in seeds:
        w0 = run(X, small, seed)
        w1 = run(X, big, seed)
        s, k = _orthogonal_spread(w0, w1)
        ss += s
        dof += k
    return math.sqrt(ss / dof)


# Pooled chi-square: with N = len(seeds) * (d - 1) = 20 * 3999 ~ 8e4 degrees of freedom, the relative
# standard error of the estimated std is 1 / sqrt(2 N) ~ 0.25%; the 3% tolerance below is 12 standard
# errors: false-positive rate < 1e-30 (plus the < 0.5% bias bound from the denominator, stated above).
SEEDS = range(20)
D = 4000
TOL = 0.03


# ---------------------------------------------------------------------------------------------
# Private Oja


def _clipped_gradient(x: np.ndarray, w: np.ndarray, beta: float) -> np.ndarray:
    g = x * float(x @ w)
    norm = float(np.linalg.norm(g))
    return g if norm <= beta else g * (beta / norm)


def test_private_oja_sensitivity_from_a_worst_pair_built_by_hand():
    """One step's update before noise is ``eta clip_beta(x x^T w)``. Worst pair, built by hand: rows of
    norm C at angles +-phi to w with ``cos(phi) = beta / C^2`` (for beta <= C^2 / sqrt 2): both
    gradients are clipped to norm beta and point at +-phi, distance ``2 beta sin(phi)``, which tends to
    2 beta as beta / C^2 -> 0 (the calibration's 2 beta is tight there). With beta = C^2 (the default)
    the gradients fill the ball of diameter C^2 centred at (C^2 / 2) w, so the largest distance is C^2,
    half the triangle bound 2 beta: the calibration uses min(2 beta, C^2) for k = 1."""
    rng = np.random.default_rng(0)
    d, C = 6, 1.0
    w = np.eye(d)[0]
    u = np.eye(d)[1]
    for beta in (0.01, 0.1, 0.5):
        phi = math.acos(beta / C**2)
        x = C * (math.cos(phi) * w + math.sin(phi) * u)
        x2 = C * (math.cos(phi) * w - math.sin(phi) * u)
        gap = np.linalg.norm(_clipped_gradient(x, w, beta) - _clipped_gradient(x2, w, beta))
        assert gap == pytest.approx(2 * beta * math.sin(phi), rel=1e-12)
        # a random search finds nothing larger than the constructed pair (and nothing above 2 beta)
        xs = rng.standard_normal((4000, d))
        xs *= (C * rng.random(4000) ** (1 / d) / np.linalg.norm(xs, axis=1))[:, None]
        G = np.array([_clipped_gradient(r, w, beta) for r in xs])
        far = max(np.linalg.norm(G - g, axis=1).max() for g in G[:200])
        assert far <= gap + 1e-9 and gap <= 2 * beta
    # the default beta = C^2: the diameter of the gradient set is C^2 (pair at +-45 degrees)
    x = C * (w + u) / math.sqrt(2)
    x2 = C * (w - u) / math.sqrt(2)
    assert np.linalg.norm(_clipped_gradient(x, w, C**2) - _clipped_gradient(x2, w, C**2)) == (
        pytest.approx(C**2))


def _oja_run(epsilon: float, gradient_clip: float | None, c2: float = 1.0):
    def run(X, c1, seed):
        res = private_oja(X, 1, epsilon=epsilon, delta=DELTA, row_norm=1.0, learning_rate_scale=c1,
                          learning_rate_offset=c2,
                          gradient_clip=gradient_clip, random_state=seed, adaptive_clip=False)
        return res.components[:, 0]
    return run


@pytest.mark.parametrize("beta", [0.01, 0.1])
def test_private_oja_noise_drawn_has_the_calibrated_scale(beta):
    """Small gradient clip: the hand-derived sensitivity is ``2 beta sin(phi)`` (previous test); the
    accountant's epsilon for (measured std) / (that sensitivity) must equal the claim. Halving the
    noise (2 beta alpha -> beta alpha) makes it about 2x the claim."""
    epsilon = 1.0
    # eta_1 = c1 / (c2 + 1) = c1 / 2; h = eta_1 * std, std ~ 2 beta alpha ~ 2 beta * 4.4
    big = 2e-4 / (2 * beta * 4.4) * 2
    std = _measured_std(_oja_run(epsilon, beta), D, SEEDS, 1e-12, big) / (big / 2)
    sens = 2 * beta * math.sqrt(1 - beta**2)  # the worst pair's distance (C = 1)
    eps_hi = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 - TOL) / sens), DELTA)
    eps_lo = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 + TOL) / sens), DELTA)
    assert eps_lo <= epsilon <= eps_hi, (std, eps_lo, eps_hi)


def test_private_oja_default_clip_is_sound():
    """Default beta = C^2 (k = 1): the hand-derived sensitivity is C^2 (the pair at +-45 degrees of
    the first test; the clip, a projection onto a convex ball, cannot move two gradients further apart).
    The accountant's epsilon for the measured noise over C^2 must be the claim: at most epsilon (sound)
    and not below it (the calibration uses C^2, not the triangle bound 2 beta = 2 C^2)."""
    epsilon = 1.0
    big = 2e-4 / 4.4 * 2
    std = _measured_std(_oja_run(epsilon, None), D, SEEDS, 1e-12, big) / (big / 2)
    eps_hi = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 - TOL) / 1.0), DELTA)
    eps_lo = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 + TOL) / 1.0), DELTA)
    assert eps_lo <= epsilon <= eps_hi, (std, eps_lo, eps_hi)


# ---------------------------------------------------------------------------------------------
# DP-SPCA and DP-VRPCA


def test_stochastic_row_contribution_from_a_worst_row_built_by_hand():
    """A row's contribution to a DP-SPCA step is ``2 x x^T V``; the row ``x = C V[:, 0]`` attains
    ``||2 x x^T V||_F = 2 C^2`` and no row of norm <= C exceeds it (random search). For DP-VRPCA's
    variance-reduced term ``2 x x^T (V - V~)`` the row ``x = C u`` with u the top singular vector of
    ``V - V~`` attains ``2 C^2 ||V - V~||_2``, which is 4 C^2 for V~ = -V."""
    rng = np.random.default_rng(1)
    d, k, C = 7, 2, 1.5
    V = np.linalg.qr(rng.standard_normal((d, k)))[0]
    x = C * V[:, 0]
    assert np.linalg.norm(2 * np.outer(x, x) @ V) == pytest.approx(2 * C**2)
    xs = rng.standard_normal((5000, d))
    xs *= (C / np.linalg.norm(xs, axis=1))[:, None]
    norms = [np.linalg.norm(2 * np.outer(r, r) @ V) for r in xs]
    assert max(norms) <= 2 * C**2 + 1e-12
    D_ = V - (-V)
    u = np.linalg.svd(D_)[0][:, 0]
    assert np.linalg.norm(2 * np.outer(C * u, C * u) @ D_) == pytest.approx(4 * C**2)


def test_dp_spca_full_batch_shift_from_a_pair_built_by_hand():
    """A full-batch DP-SPCA step releases ``2 A V + Z``; replacing x by y moves it by ``2 (x x^T - y y^T)
    V``. Built by hand: ``x = C e_1``, ``y = C e_2``, ``V = [e_1, e_2]`` give ``||.||_F = 2 sqrt(2)
    C^2`` (sqrt 2 above one row's ``2 C^2``, sqrt 2 below the ``2 * 2 C^2`` a Poisson-sampled event over
    one row's contribution is read as); no pair of norm <= C and no orthonormal V (random search,
    1 to d columns) exceeds it."""
    rng = np.random.default_rng(3)
    d, C = 6, 1.5
    x, y, V = C * np.eye(d)[0], C * np.eye(d)[1], np.eye(d)[:, :2]
    built = np.linalg.norm(2 * (np.outer(x, x) - np.outer(y, y)) @ V)
    assert built == pytest.approx(2 * math.sqrt(2) * C**2)
    for _ in range(3000):
        a, b = rng.standard_normal((2, d))
        a *= C * rng.random() ** 0.25 / np.linalg.norm(a)
        b *= C * rng.random() ** 0.25 / np.linalg.norm(b)
        W = np.linalg.qr(rng.standard_normal((d, int(rng.integers(1, d + 1)))))[0]
        assert np.linalg.norm(2 * (np.outer(a, a) - np.outer(b, b)) @ W) <= built * (1 + 1e-12)


def _spca_std(epsilon: float, q: float, guess: float) -> float:
    """Measured per-step noise std of one DP-SPCA step (T = 1, k = p = 1) on zero rows."""

    def run(X, rate, seed):
        return dp_spca(X, 1, epsilon=epsilon, delta=DELTA, row_norm=1.0, n_steps=1, sampling_rate=q,
                       learning_rate=rate, random_state=seed, adaptive_clip=False).components[:, 0]

    big = 2e-4 / guess * q  # the step moves by (eta / (q n)) std z: keep it ~2e-4 per coordinate
    return _measured_std(run, D, SEEDS, 1e-14, big) / (big / q)


def test_dp_spca_noise_drawn_has_the_calibrated_scale():
    """Full batches (q = 1, the default), one step on zero rows: ``V1 = normalise(V0 + (eta / n) std z)``.
    The accountant's epsilon for ``Gaussian(std_measured / (2 sqrt(2) C^2))`` (the shift of the pair
    built by hand above) must equal the claim: noise drawn over a shift sqrt 2 smaller (one row's
    ``2 C^2``) certifies about sqrt 2 times epsilon, sqrt 2 larger (``4 C^2``) well below it."""
    epsilon = 2.0
    std = _spca_std(epsilon, 1.0, 2.0 * 2.0 * math.sqrt(2))  # multiplier ~2 at epsilon 2, times the shift
    shift = 2.0 * math.sqrt(2)  # C = 1
    eps_hi = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 - TOL) / shift), DELTA)
    eps_lo = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 + TOL) / shift), DELTA)
    assert eps_lo <= epsilon <= eps_hi, (std, eps_lo, eps_hi)


def test_dp_spca_sampled_noise_drawn_has_the_calibrated_scale():
    """Sampled steps (q = 1/2, as the paper's q = 1/n), one step on zero rows: the accountant's epsilon
    for ``PoissonSampled(q, Gaussian(std_measured / (2 C^2)))`` (one row's contribution, the worst row
    built by hand above, read by the PLD under replace-one) must equal the claim."""
    epsilon, q = 2.0, 0.5
    std = _spca_std(epsilon, q, 2.0 * 2.0)
    event = lambda s: dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s))  # noqa: E731
    eps_hi = epsilon_of(event(std * (1 - TOL) / 2.0), DELTA, accounting="pld")
    eps_lo = epsilon_of(event(std * (1 + TOL) / 2.0), DELTA, accounting="pld")
    assert eps_lo <= epsilon <= eps_hi, (std, eps_lo, eps_hi)


def _row_of_norm(X: np.ndarray, i: int, norm: float) -> np.ndarray:
    Y = X.copy()
    Y[i] *= norm / np.linalg.norm(Y[i])
    return Y


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 6)) * np.r_[2.0, np.ones(5)]
    return 0.9 * X / np.linalg.norm(X, axis=1).max()


@pytest.mark.parametrize("fn,kw", [
    (dp_spca, {"sampling_rate": 0.5, "n_steps": 40, "learning_rate": 0.5}),
    # the sampled steps clip the row alike in both runs: without the full gradient's clip, its
    # epoch gradients differ (it reads every row), and so do the results
    (dp_vrpca, {"sampling_rate": 0.5, "n_steps": 10, "n_epochs": 2, "learning_rate": 0.5}),
])
def test_clipping_by_effect(fn, kw, data):
    """A row of norm 10 contributes exactly as the same row scaled to norm C = 1 (same seed, so the
    same samples and noise); the same row at norm 0.5 gives a different result (the row matters)."""
    far = _row_of_norm(data, 3, 10.0)
    at_c = _row_of_norm(data, 3, 1.0)
    inside = _row_of_norm(data, 3, 0.5)
    run = lambda X: fn(X, 1, epsilon=50.0, delta=DELTA, row_norm=1.0, random_state=11,  # noqa: E731
                       adaptive_clip=False, **kw).components
    a, b, c = run(far), run(at_c), run(inside)
    np.testing.assert_allclose(a, b, atol=1e-9)
    assert np.abs(a - c).max() > 1e-6



# -- DP-VRPCA (defaults: full batches, released full gradients, adaptive inner noise) ---------
def test_dp_vrpca_full_gradient_shift_from_a_pair_built_by_hand():
    """A replaced row moves the mean gradient ``2 A V~ / n`` by ``2 (x x^T - y y^T) V~ / n``. Built by
    hand: ``x = C e_1``, ``y = C e_2`` and ``V~ = [e_1, e_2]`` give ``||.||_F = 2 sqrt(2) C^2 / n``; no
    pair of norm <= C and no orthonormal V~ (random search) exceeds it."""
    rng = np.random.default_rng(2)
    d, C, n = 6, 1.5, 7
    x, y, V = C * np.eye(d)[0], C * np.eye(d)[1], np.eye(d)[:, :2]
    built = np.linalg.norm(2 * (np.outer(x, x) - np.outer(y, y)) @ V) / n
    assert built == pytest.approx(2 * math.sqrt(2) * C**2 / n)
    for _ in range(3000):
        a, b = rng.standard_normal((2, d))
        a *= C * rng.random() / np.linalg.norm(a)
        b *= C * rng.random() / np.linalg.norm(b)
        W = np.linalg.qr(rng.standard_normal((d, int(rng.integers(1, d + 1)))))[0]
        assert np.linalg.norm(2 * (np.outer(a, a) - np.outer(b, b)) @ W) / n <= built * (1 + 1e-12)


def test_dp_vrpca_full_gradient_noise_drawn_has_the_calibrated_scale():
    """One epoch of one step (the default step count) on zero rows, k = p = 1: the only release is the
    full gradient, ``V1 = normalise(V0 + eta Z)``. The accountant's epsilon for ``Gaussian(std_measured /
    (2 sqrt(2) C^2 / n))`` (the shift of the pair built by hand above) must equal the claim."""
    epsilon = 2.0

    def run(X, rate, seed):
        return dp_vrpca(X, 1, epsilon=epsilon, delta=DELTA, row_norm=1.0, n_epochs=1, block_size=1,
                        learning_rate=rate, random_state=seed, adaptive_clip=False).components[:, 0]

    big = 2e-4 / (2.3 * 2 * math.sqrt(2))  # order of magnitude only (multiplier ~2.3 at epsilon 2)
    std = _measured_std(run, D, SEEDS, 1e-14, big) / big
    shift = 2 * math.sqrt(2)  # n = 1, C = 1
    eps_hi = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 - TOL) / shift), DELTA)
    eps_lo = epsilon_of(dp_accounting.GaussianDpEvent(std * (1 + TOL) / shift), DELTA)
    assert eps_lo <= epsilon <= eps_hi, (std, eps_lo, eps_hi)


def test_dp_vrpca_inner_step_noise_follows_the_public_distance():
    """An inner step (full batches) releases ``2 X^T X (V - V~)`` whose replace-one shift is at most
    ``2 ||x x^T - y y^T||_F ||V - V~||_2 <= 2 sqrt(2) C^2 r``, ``r = ||V - V~||_2`` (public). The noise
    drawn for a given r (measured: 20 x 4000 draws, relative standard error 0.25%) over that shift must
    have the multiplier the accountant charged for the step."""
    from dpspectral.pca import _stochastic as st
    from dpspectral.privacy._budget import PrivacyBudget, Relation
    from dpspectral.privacy._noise import noise_source
    from dpspectral.privacy._pipeline import release

    C, n = 1.0, 50
    plan, s = st._vrpca_plan(PrivacyBudget(1.0, DELTA), Relation.REPLACE_ONE, C, n=n, n_steps=3,
                             n_epochs=2, q=1.0, full_gradient_share=0.5, calibration="tight",
                             accounting="auto")
    rng = np.random.default_rng(0)
    for r in (0.1, 0.8):
        diff = np.linalg.qr(rng.standard_normal((D, 2)))[0] * np.array([r, r / 3])  # ||diff||_2 = r
        draws = []
        for seed in range(SEEDS.stop):
            with release(plan, None, noise_source(seed)) as releaser:
                draws.append(st._vr_noisy(releaser, np.zeros((D, 2)), diff, True))
        std = float(np.sqrt(np.mean(np.square(draws))))
        shift = 2 * math.sqrt(2) * C**2 * r
        assert std / shift == pytest.approx(s, rel=TOL), (r, std / shift, s)
