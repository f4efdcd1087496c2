"""Every release of the streaming, continual, covariance, Hardt–Roth and local low-rank methods, pinned.

For each release the tests here

(a) derive the sensitivity for each relation the method claims from neighbouring data: a pair built
    by hand (the worst one) and a random search that must not beat it, with the test's own clipping
    ``x * min(1, C / ||x||)``; the per-pair sketch factors from their laws (Laurent–Massart for a
    Frobenius bound that must hold for every rank, the exact chi-square quantile for a vector); the
    binary tree's level count by enumerating the published dyadic nodes that contain a step;
(b) read the noise the mechanism actually drew, over many ``random_state`` values (a fresh state with
    no updates is pure noise; a run on data has its exact statistic computed here, with the public
    sketches regenerated from the declared seed), and test its spread against the scale derived in
    (a) with the Balle–Wang multiplier root-found in the test;
(c) check that the epsilon of (derived scale / derived sensitivity), composed here (Gaussian DP:
    ``mu^2`` add up; the sketch failures are an extra delta), is the epsilon the result claims.

Clipping is tested by its effect: with the same seeds, a row of norm 10 gives exactly the output of
the same row at norm C, and a row at C / 2 does not.

False-positive rates (the tests are seeded, hence deterministic; these are the rates under a fresh
seed): each chi-square scale test is two-sided at ``FPR`` = 1e-6 (one-sided at 1e-6 where only a
lower bound is claimed); each KS test at ``P_MIN`` = 1e-4; the rest is exact.
"""

from __future__ import annotations

import importlib
import math
import warnings

import numpy as np
import pytest
from _pinned import bw_epsilon, bw_multiplier, clip_by_hand, composed
from scipy import stats

import dpspectral.local._lowrank as local_module
import dpspectral.lowrank._continual as continual_module
import dpspectral.lowrank._covariance as covariance_module
import dpspectral.lowrank._streaming as streaming_module
from dpspectral import UncertifiedPrivacyWarning
from dpspectral.local._lowrank import local_lrf_report, local_lrf_setup, private_local_lrf
from dpspectral.lowrank._continual import ContinualLRF, continual_lrf
from dpspectral.lowrank._covariance import CovarianceLRF, covariance_lrf
from dpspectral.lowrank._hardt_roth import hardt_roth
from dpspectral.lowrank._streaming import TurnstileLRF, turnstile_lrf

# the package re-exports the function under the module's name
hr_module = importlib.import_module("dpspectral.lowrank._hardt_roth")

FPR = 1e-6  # false-positive rate of each chi-square scale test
P_MIN = 1e-4  # p-value threshold of the KS tests
EPS, DELTA = 1.0, 1e-6
SHARE = 0.1  # every method's default sketch_failure_share (delta spent on the sketch bounds)


# -- the test's own accounting (tests/_pinned.py: Balle–Wang 2018, Thm 8) and statistics --------------
def _assert_scale(noise: np.ndarray, sigma: float, what: str = "") -> None:
    """Zero-mean i.i.d. N(0, sigma^2)? Two-sided chi-square test of the sum of squares at FPR."""
    z = np.ravel(noise) / sigma
    lo, hi = stats.chi2.ppf([FPR / 2, 1 - FPR / 2], z.size)
    stat = float(np.sum(z * z))
    assert lo <= stat <= hi, f"{what}: drawn variance / derived variance = {stat / z.size:.4f}"


def _assert_at_least(noise: np.ndarray, sigma: float, what: str = "") -> None:
    """One-sided: the drawn variance is not below sigma^2 (false-positive rate FPR)."""
    z = np.ravel(noise) / sigma
    assert float(np.sum(z * z)) >= stats.chi2.ppf(FPR, z.size), what


def _lm(d: int, delta_s: float) -> float:
    """Laurent–Massart (2000, Lemma 1): P[||G E||_F^2 > c ||E||_F^2] <= delta_s for G (d x p) i.i.d.
    N(0, 1/d) and any fixed E (a weighted chi-square with weights summing to ||E||_F^2, the largest
    at most ||E||_F^2 / d)."""
    x = math.log(1.0 / delta_s)
    return 1.0 + 2.0 * math.sqrt(x / d) + 2.0 * x / d


def _q(d: int, delta_s: float) -> float:
    """The exact factor for a vector E: ||G E||^2 / ||E||^2 is chi^2_d / d."""
    return float(stats.chi2.isf(delta_s, d)) / d


def _gaussian(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((rows, cols)) / math.sqrt(rows)


def _frobenius_sketches(m: int, n: int, t: int, v: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Phi (n x t) and S (v x m) regenerated from the public seed (the identity where t >= n / v >= m)."""
    g = np.random.default_rng(seed)
    Phi = np.eye(n) if t >= n else _gaussian(t, n, g).T
    S = np.eye(m) if v >= m else _gaussian(v, m, g)
    return Phi, S


def _factor(rows: int, dim: int, delta_s: float) -> float:
    """The per-pair factor of a sketch: exactly 1 for the identity, else Laurent–Massart."""
    return 1.0 if rows >= dim else _lm(rows, delta_s)


def test_sketch_factors_are_sound_for_the_worst_pair():
    """A rank-one E is the worst case of a Frobenius bound (all weight on one chi-square); its law is
    chi^2_d / d (checked by simulation) and its exact tail at delta_s is below Laurent–Massart."""
    rng = np.random.default_rng(0)
    d, p = 8, 30
    E = np.outer(np.eye(20)[3], np.eye(p)[5])  # u v^T, ||E||_F = 1: the Priv1 pair, and the worst Priv2
    ratios = np.array([np.linalg.norm(E @ _gaussian(d, p, rng).T) ** 2 for _ in range(3000)]) * d
    assert stats.kstest(ratios, stats.chi2(d).cdf).pvalue > P_MIN
    for rows in (4, 8, 32):
        for delta_s in (5e-8, 3e-8, 1e-7):
            assert _q(rows, delta_s) <= _lm(rows, delta_s)
    # a random search over E of any rank: the empirical 1e-3 tail never exceeds the LM bound at 1e-3
    for r in (1, 3, 8):
        E = rng.normal(size=(20, r)) @ rng.normal(size=(r, p))
        E /= np.linalg.norm(E)
        vals = np.array([np.linalg.norm(E @ _gaussian(d, p, rng).T) ** 2 for _ in range(4000)])
        assert np.quantile(vals, 1 - 1e-3) <= _lm(d, 1e-3)


# ====================================================================================================
# 1. TurnstileLRF / turnstile_lrf: N1 (m x t) and N2 (v x n) on the Priv2 sketches
# ====================================================================================================
def _priv_bound(relation: str, bound: float) -> float:
    """b = max ||A - A'||_F over neighbours: Priv2 by definition (scaled by the public bound), Priv1
    A' - A = bound * u v^T for unit u, v (a random search; the constructed e_i e_j^T reaches it)."""
    if relation == "priv2":
        return bound
    rng = np.random.default_rng(1)
    best = 0.0
    for _ in range(200):
        u, w = rng.normal(size=7), rng.normal(size=9)
        E = bound * np.outer(u / np.linalg.norm(u), w / np.linalg.norm(w))
        best = max(best, float(np.linalg.norm(E)))
    built = float(np.linalg.norm(bound * np.outer(np.eye(7)[0], np.eye(9)[0])))
    assert best <= built * (1 + 1e-12)
    return built


def _frobenius_sigma(calibration: str, b: float, sens: float, levels: int = 1, alpha: float = 0.25) -> float:
    if calibration == "tight":
        return bw_multiplier(EPS, DELTA * (1 - SHARE)) * sens
    return math.sqrt((1 + alpha) * math.log(1 / DELTA)) / EPS * b * math.sqrt(levels)  # the paper's rho_1


TURNSTILE_CASES = [  # (relation, calibration, shape, bound)
    ("priv2", "tight", (40, 60), 0.5),
    ("priv1", "tight", (40, 60), 1.0),
    ("priv2", "paper", (40, 60), 1.0),
    ("priv2", "tight", (10, 60), 1.0),  # v = m: S is the identity, factor exactly 1
]


@pytest.mark.parametrize("relation,calibration,shape,bound", TURNSTILE_CASES)
def test_turnstile_state_noise_pinned(relation, calibration, shape, bound):
    m, n = shape
    k, runs = 2, 60
    t, v = 8, min(32, m)  # ceil(k / 0.25), ceil(k / 0.25^2), capped by m
    delta_s = SHARE * DELTA / 2
    b = _priv_bound(relation, bound)
    sens = b * math.sqrt(_factor(t, n, delta_s) + _factor(v, m, delta_s))
    sigma = _frobenius_sigma(calibration, b, sens)
    with warnings.catch_warnings():  # the paper's calibration is reported uncertified (checked below)
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        states = [TurnstileLRF(shape, k, epsilon=EPS, delta=DELTA, relation=relation,
                               calibration=calibration, bound=bound, random_state=r) for r in range(runs)]
    assert (states[0].sizes.t, states[0].sizes.v) == (t, v)
    # a fresh state with no update is the noise alone: N1 = Y_c, N2 = Z
    _assert_scale(np.array([s._Y for s in states]), sigma, "N1")
    _assert_scale(np.array([s._ZT for s in states]), sigma, "N2")
    assert not np.allclose(states[0]._Y, states[1]._Y)  # a fresh draw per random_state
    claim = states[0].privacy
    assert claim.relation.value == relation
    assert bw_epsilon(sigma / sens, DELTA * (1 - SHARE)) == pytest.approx(claim.epsilon, rel=1e-6)
    if calibration == "tight":
        assert claim.certified and claim.epsilon == pytest.approx(EPS, rel=1e-6)


def test_turnstile_lrf_noise_on_data_pinned(monkeypatch):
    """turnstile_lrf on a matrix: the released sketches minus the exact (A Phi, S A), the public
    sketches regenerated from the declared seed, over many random_state values."""
    captured: list = []
    real = streaming_module.frobenius_release

    def spy(Y, Z, S, k, *rest):
        captured.append((Y.copy(), Z.copy()))
        return real(Y, Z, S, k, *rest)

    monkeypatch.setattr(streaming_module, "frobenius_release", spy)
    m, n, k, seed, runs = 40, 60, 2, 17, 30
    A = np.random.default_rng(2).uniform(-1, 1, size=(m, n))
    A[A < 0.3] = 0.0  # a sparse stream of entries
    for r in range(runs):
        res = turnstile_lrf(A, k, epsilon=EPS, delta=DELTA, sketch_seed=seed, random_state=r)
    Phi, S = _frobenius_sketches(m, n, 8, 32, seed)
    delta_s = SHARE * DELTA / 2
    sens = math.sqrt(_lm(8, delta_s) + _lm(32, delta_s))
    sigma = bw_multiplier(EPS, DELTA * (1 - SHARE)) * sens
    _assert_scale(np.array([Y - A @ Phi for Y, _ in captured]), sigma, "N1")
    _assert_scale(np.array([Z - S @ A for _, Z in captured]), sigma, "N2")
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(EPS, rel=1e-6)


# ====================================================================================================
# 2. ContinualLRF: per-node noise and the number of levels an update touches
# ====================================================================================================
def _published_nodes(horizon: int) -> set[tuple[int, int]]:
    """The dyadic nodes (level, index) some release [1, tau] is made of, tau = 1..T (binary digits)."""
    out = set()
    for tau in range(1, horizon + 1):
        start = 0
        for level in reversed(range(tau.bit_length())):
            if tau >> level & 1:
                out.add((level, start >> level))
                start += 1 << level
    return out


def _levels_touched(horizon: int) -> int:
    """max over steps of the number of published nodes that contain the step: a neighbouring stream
    (one step's batch changed by E) changes exactly those nodes' sums by E."""
    nodes = _published_nodes(horizon)
    return max(sum(1 for (lv, j) in nodes if j << lv < step <= (j + 1) << lv)
               for step in range(1, horizon + 1))


def test_levels_touched_by_hand():
    assert [_levels_touched(T) for T in (1, 2, 3, 4, 5, 7, 8, 16)] == [1, 2, 2, 3, 3, 3, 4, 5]


def _continual_noise(cont: ContinualLRF) -> tuple[np.ndarray, np.ndarray]:
    Y, Z = cont.current_sketches()  # no data: the prefix's noise alone
    return Y, Z


@pytest.mark.parametrize("horizon", [8, 5])
def test_continual_node_noise_and_levels_pinned(horizon):
    shape, k, runs = (40, 60), 2, 40
    t, v = 8, 32
    delta_s = SHARE * DELTA / 2
    L = _levels_touched(horizon)
    sens = math.sqrt(L) * math.sqrt(_lm(t, delta_s) + _lm(v, delta_s))  # b = 1, L nodes per update
    sigma = bw_multiplier(EPS, DELTA * (1 - SHARE)) * sens  # per node
    at_7, at_T = [], []
    for r in range(runs):
        cont = ContinualLRF(shape, k, horizon, epsilon=EPS, delta=DELTA, random_state=r)
        for tau in range(1, horizon + 1):
            cont.step()
            if tau == 7 or (tau == horizon and horizon != 7):
                noise = np.concatenate([a.ravel() for a in _continual_noise(cont)])
                (at_7 if tau == 7 else at_T).append(noise)
    claim = cont.privacy
    if horizon & (horizon - 1) == 0:  # a power of two: the release at T is one node; every level counts
        _assert_scale(np.array(at_T), sigma, "one node")
        _assert_scale(np.array(at_7), math.sqrt(3) * sigma, "tau = 7: three nodes")  # 7 = 4 + 2 + 1
        assert claim.certified and claim.epsilon == pytest.approx(EPS, rel=1e-6)
        assert bw_epsilon(sigma / sens, DELTA * (1 - SHARE)) == pytest.approx(claim.epsilon, rel=1e-6)
    else:  # T = 5: the release at 5 is nodes [1, 4] and {5}; the library may add more noise, never less
        _assert_at_least(np.array(at_T), math.sqrt(2) * sigma, "T = 5: two nodes")
        assert claim.certified and claim.epsilon <= EPS * (1 + 1e-9)


def test_continual_update_enters_every_node_of_its_step():
    """Same secret noise seed, a batch at step 1 or not: every release differs by exactly (E Phi, S E),
    so the update is counted once in every prefix (the exact node sums are recovered)."""
    shape, seed = (40, 60), 23
    Phi, S = _frobenius_sketches(40, 60, 8, 32, seed)
    a = ContinualLRF(shape, 2, 8, epsilon=EPS, delta=DELTA, sketch_seed=seed, noise_seed=5)
    b = ContinualLRF(shape, 2, 8, epsilon=EPS, delta=DELTA, sketch_seed=seed, noise_seed=5)
    E = np.zeros(shape)
    E[3, 7], E[11, 2] = 0.6, -0.8
    a.step([3, 11], [7, 2], [0.6, -0.8])
    b.step()
    for _ in range(7):
        (Ya, Za), (Yb, Zb) = a.current_sketches(), b.current_sketches()
        assert np.allclose(Ya - Yb, E @ Phi, atol=1e-9) and np.allclose(Za - Zb, S @ E, atol=1e-9)
        a.step()
        b.step()


def test_continual_lrf_function_noise_pinned(monkeypatch):
    """continual_lrf: one row per step, horizon m = 32 (a power of two, so the release at T is one
    node); n = 60, v = 32 = m makes S the identity (factor 1)."""
    captured: list = []
    real = continual_module.frobenius_release

    def spy(Y, Z, S, k, *rest):
        captured.append((Y.copy(), Z.copy()))
        return real(Y, Z, S, k, *rest)

    monkeypatch.setattr(continual_module, "frobenius_release", spy)
    m, n, seed, runs = 32, 60, 31, 12
    A = np.random.default_rng(4).uniform(-1, 1, size=(m, n))
    for r in range(runs):
        res = continual_lrf(A, 2, epsilon=EPS, delta=DELTA, sketch_seed=seed, random_state=r)
    Phi, S = _frobenius_sketches(m, n, 8, 32, seed)
    assert np.array_equal(S, np.eye(m))
    delta_s = SHARE * DELTA / 2
    sens = math.sqrt(_levels_touched(m)) * math.sqrt(_lm(8, delta_s) + 1.0)
    sigma = bw_multiplier(EPS, DELTA * (1 - SHARE)) * sens
    _assert_scale(np.array([Y - A @ Phi for Y, _ in captured]), sigma, "N1")
    _assert_scale(np.array([Z - S @ A for _, Z in captured]), sigma, "N2")
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(EPS, rel=1e-6)


# ====================================================================================================
# 3. CovarianceLRF / covariance_lrf: the Priv2 sketches of C = A^T A, rows inserted one at a time
# ====================================================================================================
ROW_NORM = 0.5  # C != C^2, so a bound in C instead of C^2 is seen


def _gram(X: np.ndarray) -> np.ndarray:
    Xc = clip_by_hand(X, ROW_NORM)
    return Xc.T @ Xc


def _covariance_bound(relation: str, d: int = 4) -> float:
    """max ||C(D) - C(D')||_F over neighbours: x = 10 e_1 against y = 10 e_2 (or against nothing),
    clipped by the test; no random pair may beat it."""
    B = np.zeros((1, d))
    x, y = 10 * np.eye(d)[0], 10 * np.eye(d)[1]
    D = np.vstack([B, x])
    D2 = np.vstack([B, y]) if relation == "replace_one" else B
    built = float(np.linalg.norm(_gram(D) - _gram(D2)))
    rng = np.random.default_rng(6)
    for i in range(400):
        Bk = rng.normal(size=(3, d)) * rng.uniform(0, 3)
        x, y = rng.normal(size=d), rng.normal(size=d)
        if i % 4 == 0:  # nearly orthogonal rows at or over the bound
            x, y = np.eye(d)[0] + 0.01 * x, np.eye(d)[1] + 0.01 * y
        x *= rng.uniform(0, 10) / np.linalg.norm(x)
        y *= rng.uniform(0, 10) / np.linalg.norm(y)
        D = np.vstack([Bk, x])
        D2 = np.vstack([Bk, y]) if relation == "replace_one" else Bk
        assert float(np.linalg.norm(_gram(D) - _gram(D2))) <= built * (1 + 1e-9)
    return built


def test_covariance_bounds_by_hand():
    assert _covariance_bound("add_remove") == pytest.approx(ROW_NORM**2)
    assert _covariance_bound("replace_one") == pytest.approx(math.sqrt(2) * ROW_NORM**2)


def _covariance_sigma(relation: str, d: int, t: int, v: int) -> tuple[float, float]:
    delta_s = SHARE * DELTA / 2
    sens = _covariance_bound(relation) * math.sqrt(_factor(t, d, delta_s) + _factor(v, d, delta_s))
    return bw_multiplier(EPS, DELTA * (1 - SHARE)) * sens, sens


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_covariance_state_noise_pinned(relation):
    d, k, runs = 40, 2, 80
    sigma, sens = _covariance_sigma(relation, d, 8, 32)
    states = [CovarianceLRF(d, k, epsilon=EPS, delta=DELTA, relation=relation, row_norm=ROW_NORM,
                            random_state=r) for r in range(runs)]
    assert (states[0].sizes.t, states[0].sizes.v) == (8, 32)
    _assert_scale(np.array([s._Y for s in states]), sigma, "N1")
    _assert_scale(np.array([s._ZT for s in states]), sigma, "N2")
    claim = states[0].privacy
    assert claim.relation.value == relation
    assert bw_epsilon(sigma / sens, DELTA * (1 - SHARE)) == pytest.approx(claim.epsilon, rel=1e-6)
    assert claim.certified and claim.epsilon == pytest.approx(EPS, rel=1e-6)


def _covariance_data(n: int = 50, d: int = 40, seed: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.05
    X[::6] *= 10.0 / np.linalg.norm(X[::6], axis=1, keepdims=True)  # rows of norm 10: clipped to 0.5
    return X


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_covariance_lrf_noise_on_clipped_rows_pinned(relation, monkeypatch):
    """covariance_lrf on rows some of norm 10 (inserted in blocks of 7): the sketches minus the exact
    (C Phi, S C) of the test's own clipped Gram matrix."""
    captured: list = []
    real = covariance_module.frobenius_release

    def spy(Y, Z, S, k, *rest):
        captured.append((Y.copy(), Z.copy()))
        return real(Y, Z, S, k, *rest)

    monkeypatch.setattr(covariance_module, "frobenius_release", spy)
    X, seed, runs = _covariance_data(), 41, 30
    d = X.shape[1]
    for r in range(runs):
        res = covariance_lrf(X, 2, epsilon=EPS, delta=DELTA, relation=relation, row_norm=ROW_NORM,
                             sketch_seed=seed, batch_rows=7, random_state=r)
    Phi, S = _frobenius_sketches(d, d, 8, 32, seed)
    G = _gram(X)
    sigma, _ = _covariance_sigma(relation, d, 8, 32)
    _assert_scale(np.array([Y - G @ Phi for Y, _ in captured]), sigma, "N1")
    _assert_scale(np.array([Z - S @ G for _, Z in captured]), sigma, "N2")
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(EPS, rel=1e-6)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_covariance_row_of_norm_10_acts_as_row_at_c(relation):
    X = _covariance_data(n=20, d=6)
    far, at, half = X.copy(), X.copy(), X.copy()
    far[3] = 10.0 * np.eye(6)[2]
    at[3] = ROW_NORM * np.eye(6)[2]
    half[3] = 0.5 * ROW_NORM * np.eye(6)[2]
    kw = dict(epsilon=EPS, delta=DELTA, relation=relation, row_norm=ROW_NORM, sketch_seed=3, random_state=9)
    a, b, c = (covariance_lrf(D, 2, **kw) for D in (far, at, half))
    assert np.allclose(a.S, b.S, atol=1e-10) and np.allclose(a.U, b.U, atol=1e-10)
    assert not np.allclose(a.U, c.U, atol=1e-10)  # the comparison has power (S may be shrunk to 0)
    st_far, st_at = (CovarianceLRF(6, 2, epsilon=EPS, delta=DELTA, relation=relation, row_norm=ROW_NORM,
                                   sketch_seed=3, random_state=9) for _ in range(2))
    for row in X[:3]:
        st_far.insert(row)
        st_at.insert(row)
    st_far.insert(far[3])
    st_at.insert(at[3])
    assert np.allclose(st_far.release().S, st_at.release().S, atol=1e-10)


# ====================================================================================================
# 4. hardt_roth: stage 1 Y = A Omega + N1 (m x ell), stage 2 B = Q~^T A + N2 (ell x n); row-level
# ====================================================================================================
HR_C = 0.7  # row_norm; a replaced row moves by at most 2 C = 1.4


def _row_change_bound() -> float:
    """max ||clip(x) - clip(y)|| over replace-one pairs: x = 10 e_1 against y = -10 e_1."""
    d = 5
    e1 = np.eye(d)[:1]
    built = float(np.linalg.norm(clip_by_hand(10 * e1, HR_C) - clip_by_hand(-10 * e1, HR_C)))
    rng = np.random.default_rng(12)
    for _ in range(500):
        x, y = rng.normal(size=d), rng.normal(size=d)
        x *= rng.uniform(0, 10) / np.linalg.norm(x)
        y *= rng.uniform(0, 10) / np.linalg.norm(y)
        assert float(np.linalg.norm(clip_by_hand(x, HR_C) - clip_by_hand(y, HR_C))) <= built * (1 + 1e-12)
    return built


def test_hardt_roth_stage1_factor_law():
    """||Omega^T w||^2 / ||w||^2 is chi^2_ell / ell for the secret Omega (n x ell, N(0, 1/ell))."""
    rng = np.random.default_rng(13)
    ell, n = 4, 30
    w = rng.normal(size=n)
    r = np.array([np.linalg.norm(_gaussian(ell, n, rng) @ w) ** 2 for _ in range(3000)]) / (w @ w) * ell
    assert stats.kstest(r, stats.chi2(ell).cdf).pvalue > P_MIN
    assert _row_change_bound() == pytest.approx(2 * HR_C)


def _hr_data(m: int = 60, n: int = 30, seed: int = 14) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * 0.1
    X[::5] *= 10.0 / np.linalg.norm(X[::5], axis=1, keepdims=True)  # norm 10: clipped to 0.7
    return X


@pytest.mark.parametrize("calibration,row_change", [("tight", None), ("paper", None), ("tight", 2 * HR_C)])
def test_hardt_roth_releases_pinned(calibration, row_change, monkeypatch):
    """Replace-one rows clipped to C (||w|| <= 2 C, derived from pairs), or row_change=b (rows not
    clipped, ||w|| <= b by the relation's definition)."""
    Ys: list = []
    Bs: list = []
    Qs: list = []
    real_orth, real_svd = hr_module.orth_columns, hr_module.svd_top_k

    def orth(Y):
        Ys.append(Y.copy())
        Q = real_orth(Y)
        Qs.append(Q.copy())
        return Q

    def svd(B, k):
        Bs.append(B.copy())
        return real_svd(B, k)

    monkeypatch.setattr(hr_module, "orth_columns", orth)
    monkeypatch.setattr(hr_module, "svd_top_k", svd)
    X = _hr_data()
    m, n = X.shape
    k, runs, ell, prune = 2, 150, 4, 2.0  # ell = k + oversampling (default k)
    Xc = clip_by_hand(X, HR_C) if row_change is None else X
    rows = dict(row_norm=HR_C) if row_change is None else dict(row_change=row_change)
    for r in range(runs):
        res = hardt_roth(X, k, epsilon=EPS, delta=DELTA, calibration=calibration, random_state=r,
                         algorithm="range_finder", **rows)
    # sensitivities, derived: stage 1 ||Omega^T w|| <= sqrt(q_ell) ||w|| except w.p. delta_s;
    # stage 2 ||Q~_i|| ||w|| <= tau ||w|| with tau the pruning level of the spec, tau = c sqrt(ell / m)
    b = _row_change_bound() if row_change is None else row_change
    delta_s = SHARE * DELTA
    tau = min(1.0, prune * math.sqrt(ell / m))
    d1, d2 = b * math.sqrt(_q(ell, delta_s)), b * tau
    if calibration == "tight":  # one multiplier for the pair, half of mu^2 to each stage
        s = bw_multiplier(EPS, DELTA - delta_s)
        sigma1, sigma2 = math.sqrt(2) * s * d1, math.sqrt(2) * s * d2
    else:  # spec §9: Delta_j sqrt(2 ln(2.5 / delta)) / (eps / 2), Laurent–Massart c_ell in stage 1
        f = math.sqrt(2 * math.log(2.5 / DELTA)) / (EPS / 2)
        sigma1, sigma2 = b * math.sqrt(_lm(ell, delta_s)) * f, d2 * f
    N1, N2 = [], []
    for r, (Y, Q, B) in enumerate(zip(Ys, Qs, Bs, strict=True)):
        Omega = _gaussian(ell, n, np.random.default_rng(r)).T  # the secret sketch, drawn first
        N1.append(Y - Xc @ Omega)
        norms = np.linalg.norm(Q, axis=1)
        Qp = Q * np.minimum(1.0, tau / norms)[:, None]  # the test's own pruning
        assert np.linalg.norm(Qp, axis=1).max() <= tau * (1 + 1e-12)
        N2.append(B - Qp.T @ Xc)
    _assert_scale(np.array(N1), sigma1, "stage 1")
    _assert_scale(np.array(N2), sigma2, "stage 2")
    claim = res.privacy
    assert claim.relation.value == ("replace_one" if row_change is None else "row_change")
    eps_acc = bw_epsilon(composed(sigma1 / d1, sigma2 / d2), DELTA - delta_s)
    assert eps_acc == pytest.approx(claim.epsilon, rel=1e-6)
    if calibration == "tight":
        assert claim.certified and claim.epsilon == pytest.approx(EPS, rel=1e-6)


def test_hardt_roth_prunes_coherent_rows(monkeypatch):
    """Stage 2's sensitivity tau ||w|| needs every row of Q~ at norm <= tau: on a coherent matrix (three
    rows carry everything) at a large epsilon, Q's rows exceed tau, and B - Q~^T A, with the test's own
    pruning, has the derived scale only if the mechanism pruned them."""
    Qs: list = []
    Bs: list = []
    real_orth, real_svd = hr_module.orth_columns, hr_module.svd_top_k

    def orth(Y):
        Q = real_orth(Y)
        Qs.append(Q.copy())
        return Q

    def svd(B, k):
        Bs.append(B.copy())
        return real_svd(B, k)

    monkeypatch.setattr(hr_module, "orth_columns", orth)
    monkeypatch.setattr(hr_module, "svd_top_k", svd)
    m, n, ell, eps = 60, 30, 4, 300.0
    X = np.zeros((m, n))
    X[[5, 20, 41]] = HR_C * np.eye(n)[[0, 1, 2]]
    X[[6, 33]] = 10.0 * np.eye(n)[[3, 4]]  # norm 10: clipped
    Xc = clip_by_hand(X, HR_C)
    for r in range(20):
        hardt_roth(X, 2, epsilon=eps, delta=DELTA, row_norm=HR_C, prune=1.0, algorithm="range_finder",
                   random_state=r)
    tau = 1.0 * math.sqrt(ell / m)
    d2 = _row_change_bound() * tau
    s = bw_multiplier(eps, DELTA * (1 - SHARE))
    N2, pruned = [], 0
    for Q, B in zip(Qs, Bs, strict=True):
        norms = np.linalg.norm(Q, axis=1)
        pruned += int(np.count_nonzero(norms > tau))
        N2.append(B - (Q * np.minimum(1.0, tau / norms)[:, None]).T @ Xc)
    assert pruned >= 60  # the rows were over tau: the check below sees whether they were pruned
    _assert_scale(np.array(N2), math.sqrt(2) * s * d2, "stage 2")


def test_hardt_roth_row_of_norm_10_acts_as_row_at_c():
    X = _hr_data(m=40, n=20)
    far, at, half = X.copy(), X.copy(), X.copy()
    far[7] = 10.0 * np.eye(20)[4]
    at[7] = HR_C * np.eye(20)[4]
    half[7] = 0.5 * HR_C * np.eye(20)[4]
    a, b, c = (hardt_roth(D, 2, epsilon=EPS, delta=DELTA, row_norm=HR_C, algorithm="range_finder",
                          singular_values="raw", random_state=4)
               for D in (far, at, half))
    assert np.allclose(a.S, b.S, atol=1e-10) and np.allclose(a.U, b.U, atol=1e-10)
    assert not np.allclose(a.S, c.S, atol=1e-10)


# ====================================================================================================
# 5. private_local_lrf / local_lrf_report: one user's report (y_i, Z_i)
# ====================================================================================================
LOC_C = 0.8


def _local_sensitivities(t: int, v: int) -> tuple[float, float]:
    """Any two rows of norm <= C: ||E|| <= 2 C (x = 10 e_1 against -10 e_1, clipped; a random search
    must not beat it). ||E^T Phi||^2 <= q_t ||E||^2, ||S_i||^2 <= q_v and ||T E||^2 <= q_v ||E||^2, each
    except with probability delta_s = share * delta / 3 (union bound): (d_y, d_z) = (2C sqrt(q_t), 2C q_v)."""
    d = 5
    e1 = np.eye(d)[:1]
    built = float(np.linalg.norm(clip_by_hand(10 * e1, LOC_C) - clip_by_hand(-10 * e1, LOC_C)))
    rng = np.random.default_rng(15)
    for _ in range(300):
        x, y = rng.normal(size=(2, d)) * rng.uniform(0, 10)
        assert float(np.linalg.norm(clip_by_hand(x, LOC_C) - clip_by_hand(y, LOC_C))) <= built * (1 + 1e-12)
    delta_s = SHARE * DELTA / 3
    return built * math.sqrt(_q(t, delta_s)), built * _q(v, delta_s)


def test_local_report_factor_laws():
    """The three per-pair norms have the chi-square laws the quantiles assume (simulated sketches)."""
    rng = np.random.default_rng(16)
    t, v, n, m = 3, 4, 6, 8
    E = rng.normal(size=n)
    E *= 2 * LOC_C / np.linalg.norm(E)
    phi, s, te = [], [], []
    for _ in range(3000):
        Phi, S, T = _gaussian(t, n, rng).T, _gaussian(v, m, rng), _gaussian(v, n, rng)
        phi.append(np.linalg.norm(E @ Phi) ** 2 / (E @ E) * t)
        s.append(np.linalg.norm(S[:, 2]) ** 2 * v)
        te.append(np.linalg.norm(T @ E) ** 2 / (E @ E) * v)
    for sample, dof in ((phi, t), (s, v), (te, v)):
        assert stats.kstest(sample, stats.chi2(dof).cdf).pvalue > P_MIN


def _local_sigmas(calibration: str, t: int, v: int, alpha: float = 0.25) -> tuple[float, float, float, float]:
    d_y, d_z = _local_sensitivities(t, v)
    if calibration == "tight":  # one Gaussian on the pair
        s = bw_multiplier(EPS, DELTA * (1 - SHARE))
        sig = s * math.hypot(d_y, d_z)
        return sig, sig, d_y, d_z
    b = 2 * LOC_C  # the paper's rho_1, rho_2 times the neighbour distance
    log_inv = math.log(1 / DELTA)
    return (b * math.sqrt((1 + alpha) * log_inv) / EPS, b * (1 + alpha) * math.sqrt(log_inv) / EPS, d_y, d_z)


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_local_report_pinned(calibration):
    m, n, i, runs = 8, 6, 3, 400
    setup = local_lrf_setup(m, n, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    Phi, S, T = (lambda g: (_gaussian(3, n, g).T, _gaussian(4, m, g), _gaussian(4, n, g)))(
        np.random.default_rng(5))  # regenerated from the public seed
    row = np.array([6.0, -8.0, 0.0, 0.0, 0.0, 0.0])  # norm 10: clipped by its user
    a = clip_by_hand(row, LOC_C)[0]
    reports = [local_lrf_report(row, i, setup, epsilon=EPS, delta=DELTA, row_norm=LOC_C,
                                calibration=calibration, rng=r) for r in range(runs)]
    sigma_y, sigma_z, d_y, d_z = _local_sigmas(calibration, 3, 4)
    _assert_scale(np.array([rep.y - a @ Phi for rep in reports]), sigma_y, "y_i")
    _assert_scale(np.array([rep.Z - np.outer(S[:, i], T @ a) for rep in reports]), sigma_z, "Z_i")
    # the claim is the protocol's (every user runs this report)
    A = np.random.default_rng(2).uniform(size=(m, n))
    with warnings.catch_warnings():  # the paper's calibration is reported uncertified (checked below)
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        claim = private_local_lrf(A, 2, epsilon=EPS, delta=DELTA, row_norm=LOC_C,
                                  subspace_sketch_size=3, affine_sketch_size=4, calibration=calibration,
                                  sketch_seed=5, random_state=0).privacy
    eps_acc = bw_epsilon(composed(sigma_y / d_y, sigma_z / d_z), DELTA * (1 - SHARE))
    assert eps_acc == pytest.approx(claim.epsilon, rel=1e-6)
    if calibration == "tight":
        assert claim.certified and claim.epsilon == pytest.approx(EPS, rel=1e-6)


@pytest.mark.parametrize("simulate_sum,row_change", [(False, None), (True, None), (False, 2 * LOC_C)])
def test_private_local_lrf_noise_pinned(simulate_sum, row_change, monkeypatch):
    """The whole protocol: Y_c = A Phi + N1 (per user, sigma_y), Z = S A T^T + sum_i G_i (sqrt(m) sigma_z),
    with the test's own clipping of the rows of norm 10; or, with row_change=b (one user's row moves by
    at most b, by the relation's definition; rows not clipped), the same noise on the raw rows."""
    captured: list = []
    real = local_module._solve

    def spy(Y_c, Z, S, k):
        captured.append((Y_c.copy(), Z.copy()))
        return real(Y_c, Z, S, k)

    monkeypatch.setattr(local_module, "_solve", spy)
    rng = np.random.default_rng(18)
    m, n, seed, runs = 40, 30, 19, 40
    X = rng.normal(size=(m, n)) * 0.1
    X[::4] *= 10.0 / np.linalg.norm(X[::4], axis=1, keepdims=True)
    Xc = clip_by_hand(X, LOC_C) if row_change is None else X
    rows = dict(row_norm=LOC_C) if row_change is None else dict(row_change=row_change)
    for r in range(runs):
        res = private_local_lrf(X, 2, epsilon=EPS, delta=DELTA, subspace_sketch_size=4, affine_sketch_size=6,
                                simulate_sum=simulate_sum, sketch_seed=seed, random_state=r, **rows)
    assert res.privacy.relation.value == ("local" if row_change is None else "local_row_change")
    g = np.random.default_rng(seed)
    Phi, S, T = _gaussian(4, n, g).T, _gaussian(6, m, g), _gaussian(6, n, g)
    sigma_y, sigma_z, _, _ = _local_sigmas("tight", 4, 6)
    _assert_scale(np.array([Y - Xc @ Phi for Y, _ in captured]), sigma_y, "N1")
    _assert_scale(np.array([Z - S @ Xc @ T.T for _, Z in captured]), math.sqrt(m) * sigma_z, "sum of G_i")
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(EPS, rel=1e-6)


def test_local_row_of_norm_10_acts_as_row_at_c():
    rng = np.random.default_rng(20)
    X = rng.normal(size=(30, 8)) * 0.1
    far, at, half = X.copy(), X.copy(), X.copy()
    far[2] = 10.0 * np.eye(8)[1]
    at[2] = LOC_C * np.eye(8)[1]
    half[2] = 0.5 * LOC_C * np.eye(8)[1]
    kw = dict(epsilon=EPS, delta=DELTA, row_norm=LOC_C, sketch_seed=6, random_state=2)
    a, b, c = (private_local_lrf(D, 2, **kw) for D in (far, at, half))
    assert np.allclose(a.U, b.U, atol=1e-10) and np.allclose(a.S, b.S, atol=1e-10)
    assert not np.allclose(a.S, c.S, atol=1e-10)
    setup = local_lrf_setup(30, 8, 2, seed=6)
    r1, r2 = (local_lrf_report(row, 2, setup, epsilon=EPS, delta=DELTA, row_norm=LOC_C, rng=7)
              for row in (far[2], at[2]))
    assert np.allclose(r1.as_vector(), r2.as_vector(), atol=1e-12)
