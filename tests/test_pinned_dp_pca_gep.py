"""Pinned releases of DP-PCA (Liu et al. 2022, Alg. 3-5), DPSR / DPSRS and DP-Rayleigh-Flow.

For every release inside each mechanism the tests here

(a) derive the sensitivity for the relation the method claims (replace-one) from a worst neighbouring
    pair built by hand, with a random search that must not beat it, computing the released statistic
    with the test's own code (never the library's sensitivity formulas);
(b) recover the noise the mechanism actually drew, over many steps and seeds, and test its spread:
    * DP-PCA's histograms (the top-eigenvalue histogram of Algorithm 4, the p coordinate histograms
      of Algorithm 5): every Laplace draw is recorded by a stand-in generator passed through the
      histogram call; the winning bin's released noisy count must be its count plus its draw, so the
      draws recorded are the noise released;
    * DP-PCA's mean gradient (Algorithm 5): the released mean minus the test's own truncated mean of
      the gradients, in the box around the released centres, divided by the box's hand-derived
      sensitivity;
    * DPSR / DPSRS: the released gradient of every step of both phases, read off the orthonormalised
      iterate (``V + eta G``), minus the test's own ``2 M V`` (``M = B``; ``M = Phi~^T A Phi~`` with
      the released ``Phi~``); the released Lambda_B minus ``diag(V^T B V)``;
    * DP-Rayleigh-Flow: the input noise on A and B (the flow's output is checked to be computed from
      exactly those noisy matrices);
(c) check that the accountant's epsilon for the measured scales over the derived sensitivities is the
    claim: the Gaussian multiplier is root-found here (Balle and Wang 2018), Laplace is pure
    (epsilon = L1 shift / scale), and Laplace with Gaussian is composed with dp_accounting's PLD.

False-positive rates (the tests are seeded, hence deterministic; these are the rates under a fresh
seed): every spread test is two-sided at FPR = 1e-6 (chi-square for Gaussian noise: the sum of
squares over sigma^2; Gamma(N, 1) for Laplace noise: the sum of absolute values over the scale); an
epsilon bracket is taken at the ends of that same interval; the KS test of a law at p >= 1e-4. The
hand-built pairs and the end-to-end identities are exact.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from _pinned import bw_epsilon, bw_multiplier, fda_b_worst_pair, fda_by_hand
from scipy import stats

import dpspectral.gep._reduction as reduction
import dpspectral.pca._oja as oja
import dpspectral.privacy._gaussian as gaussian_module
from dpspectral import config_context
from dpspectral.gep._rayleigh import dp_rayleigh_flow
from dpspectral.gep._reduction import dpsr, dpsrs
from dpspectral.gep._scatter import fda_pair
from dpspectral.pca import RangeEstimation
from dpspectral.privacy._histogram import laplace_histogram_mode
from dpspectral.privacy._noise import SeededNoise
from dpspectral.privacy._pipeline import Releaser

FPR = 1e-6
P_MIN = 1e-4
C = 1.0


# ---------------------------------------------------------------------------------------------
# the test's own accounting and spread tests
# ---------------------------------------------------------------------------------------------

def _gauss_std_interval(z: np.ndarray) -> tuple[float, float]:
    """Two-sided 1 - FPR interval for the std of zero-mean Gaussian samples (chi-square)."""
    z = np.ravel(z)
    ss = float(np.sum(z * z))
    lo, hi = stats.chi2.ppf([FPR / 2, 1 - FPR / 2], z.size)
    return math.sqrt(ss / hi), math.sqrt(ss / lo)


def _laplace_scale_interval(x: np.ndarray) -> tuple[float, float]:
    """Two-sided 1 - FPR interval for the scale of zero-mean Laplace samples (sum |x| / b ~ Gamma)."""
    x = np.ravel(x)
    s = float(np.sum(np.abs(x)))
    lo, hi = stats.gamma.ppf([FPR / 2, 1 - FPR / 2], x.size)
    return s / hi, s / lo


def _inside(value: float, interval: tuple[float, float]) -> bool:
    return interval[0] <= value <= interval[1]


class _LaplaceRecorder(SeededNoise):
    """A seeded noise source that records every Laplace draw (the noise alone) and adds it as the
    seeded source would: the same draws from the same generator, so the run is unchanged. Wraps a
    Generator, a seeded NoiseSource or a Releaser (whatever the histogram learners are handed)."""

    def __init__(self, source, sink: list) -> None:
        if isinstance(source, Releaser):
            source = source.generator
        super().__init__(source if isinstance(source, np.random.Generator) else source.generator)
        self._sink = sink

    def add_laplace(self, statistic, scale, sensitivity=None):
        noise = super().add_laplace(np.zeros(np.shape(statistic)), scale, sensitivity)
        self._sink.append(np.ravel(noise))
        return statistic + noise


# ---------------------------------------------------------------------------------------------
# DP-PCA, Algorithm 4: the top-eigenvalue histogram
# ---------------------------------------------------------------------------------------------

UNDERFLOW = -4 * 64 - 1


def _eigen_counts(G: np.ndarray, groups: int, bound: float) -> np.ndarray:
    """The test's own histogram of Algorithm 4: pair, group, top eigenvalue, bin on 2^(l/4)."""
    pairs = G.shape[0] // 2
    s = pairs // groups
    H = (G[:pairs] - G[pairs : 2 * pairs]) / math.sqrt(2.0)
    out = np.zeros(-UNDERFLOW + 1, dtype=int)
    for j in range(groups):
        h = H[j * s : (j + 1) * s]
        lam = min(float(np.linalg.eigvalsh(h.T @ h / s)[-1]), bound)
        ell = UNDERFLOW if lam <= 0 else max(UNDERFLOW, min(0, math.floor(4 * math.log2(lam / bound))))
        out[ell - UNDERFLOW] += 1
    return out


def _gradient(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x * float(x @ w)


def test_eigen_histogram_l1_shift_from_pairs():
    """Replacing one row changes one gradient, hence one pair and one group: the counts move by L1 2.
    Built: zero rows (every group in the underflow bin) against one row C e1 (its group leaves it).
    A random search over rows of norm <= C never moves them by more."""
    d, groups, b = 4, 3, 12
    w = np.eye(d)[0]
    bound = 2.0 * C**4
    G = np.zeros((b, d))
    G2 = G.copy()
    G2[0] = _gradient(C * np.eye(d)[0], w)
    built = int(np.abs(_eigen_counts(G, groups, bound) - _eigen_counts(G2, groups, bound)).sum())
    assert built == 2
    rng = np.random.default_rng(0)
    worst = 0
    for _ in range(400):
        X = rng.normal(size=(b, d))
        X *= (C * rng.random(b) / np.linalg.norm(X, axis=1))[:, None]
        w = np.linalg.qr(rng.normal(size=(d, 1)))[0][:, 0]
        G = np.array([_gradient(x, w) for x in X])
        G2 = G.copy()
        y = rng.normal(size=d)
        G2[rng.integers(b)] = _gradient(y * C * rng.random() / np.linalg.norm(y), w)
        moved = np.abs(_eigen_counts(G, groups, bound) - _eigen_counts(G2, groups, bound)).sum()
        worst = max(worst, int(moved))
    assert worst <= built


# ---------------------------------------------------------------------------------------------
# DP-PCA, Algorithm 5: the truncated mean and its box
# ---------------------------------------------------------------------------------------------

def _truncated_mean(G: np.ndarray, centres: np.ndarray, half_width: float) -> np.ndarray:
    return np.clip(G, centres - half_width, centres + half_width).mean(axis=0)


def _box_gap(b: int, centres: np.ndarray, half_width: float) -> float:
    """Built pair: b - 1 rows at the centres; the last row far outside one corner of the box against
    far outside the opposite corner. Returns the L2 distance of the two truncated means."""
    G = np.tile(centres, (b, 1))
    G2 = G.copy()
    G[-1] = centres + 10.0 * half_width
    G2[-1] = centres - 10.0 * half_width
    gap = _truncated_mean(G, centres, half_width) - _truncated_mean(G2, centres, half_width)
    return float(np.linalg.norm(gap))


def test_truncated_mean_gap_from_pairs():
    """The built pair moves the mean by 2 h r sqrt(p) / b; a random search never moves it further."""
    rng = np.random.default_rng(1)
    for b, p, hw in ((16, 5, 0.3), (40, 12, 2.0)):
        centres = rng.normal(size=p)
        built = _box_gap(b, centres, hw)
        assert built == pytest.approx(2 * hw * math.sqrt(p) / b, rel=1e-12)
        worst = 0.0
        for _ in range(500):
            G = centres + rng.normal(size=(b, p)) * hw * rng.uniform(0.1, 5)
            G2 = G.copy()
            G2[rng.integers(b)] = centres + rng.normal(size=p) * hw * rng.uniform(0.1, 5)
            worst = max(worst, float(np.linalg.norm(_truncated_mean(G, centres, hw)
                                                    - _truncated_mean(G2, centres, hw))))
        assert worst <= built * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# DP-PCA: the noise drawn, end to end
# ---------------------------------------------------------------------------------------------

def _instrument_dp_pca(monkeypatch) -> dict:
    """Spies on DP-PCA's histogram, eigenvalue and mean calls; returns the record they fill."""
    rec: dict = {"a4": [], "a5": [], "gauss": [], "raw": [], "stable": [], "in_mean": False, "modes": [],
                 "lam": None}
    real_lhm, real_shm, real_pm = oja.laplace_histogram_mode, oja.stable_histogram_mode, oja.private_mean
    real_top, real_lm = oja.private_top_eigenvalue, oja._laplace_modes

    def top(G, **kw):
        rec["lam"] = real_top(G, **kw)
        return rec["lam"]

    def lhm(bins, low, high, *, scale, random_state, sensitivity=None):
        draws: list = []
        idx, noisy = real_lhm(bins, low, high, scale=scale, sensitivity=sensitivity,
                              random_state=_LaplaceRecorder(random_state, draws))
        ids, counts = np.unique(np.asarray(bins), return_counts=True)
        drawn = np.concatenate(draws) if draws else np.empty(0)
        assert drawn.size == ids.size  # one draw per non-empty bin
        hit = np.flatnonzero(ids == idx)
        if hit.size:  # the winner's released noisy count is its count plus the draw recorded
            assert noisy == pytest.approx(counts[hit[0]] + drawn[hit[0]], abs=1e-9)
        rec["a5" if rec["in_mean"] else "a4"].append(drawn)
        if rec["in_mean"]:
            rec["modes"].append(idx)
        return idx, noisy

    def lm(bins, low, high, releaser):  # Algorithm 5's p Laplace histograms in one draw (seeded source)
        draws: list = []
        modes = real_lm(bins, low, high, Releaser(releaser.plan, _LaplaceRecorder(releaser, draws)))
        drawn = np.concatenate(draws)
        assert drawn.size == sum(np.unique(row).size for row in bins)  # one draw per non-empty bin
        assert all(low <= m <= high for m in modes)
        rec["a5"].append(drawn)
        rec["modes"].extend(int(m) for m in modes)
        return modes

    def shm(bins, *, epsilon, delta, relation="replace_one", random_state):
        draws: list = []
        mode = real_shm(bins, epsilon=epsilon, delta=delta, relation=relation,
                        random_state=_LaplaceRecorder(random_state, draws))
        ids, counts = np.unique(np.asarray(bins), return_counts=True)
        drawn = np.concatenate(draws) if draws else np.empty(0)
        assert drawn.size == ids.size
        rec["stable"].append((rec["in_mean"], epsilon, delta, counts, drawn, ids, mode))
        if rec["in_mean"]:
            rec["modes"].append(mode)
        return mode

    def pm(G, *, radius, half_width_mult, **kw):
        rec["in_mean"], rec["modes"] = True, []
        try:
            out, info = real_pm(G, radius=radius, half_width_mult=half_width_mult, **kw)
        finally:
            rec["in_mean"] = False
        if out is not None:
            centres = 2.0 * radius * np.asarray(rec["modes"], dtype=float)
            hw = half_width_mult * radius
            gap = _box_gap(G.shape[0], centres, hw)  # the hand-built sensitivity of this release
            noise = out - _truncated_mean(G, centres, hw)
            rec["gauss"].append(noise / gap)
            rec["raw"].append((noise, gap, rec["lam"]))
        return out, info

    monkeypatch.setattr(oja, "laplace_histogram_mode", lhm)
    monkeypatch.setattr(oja, "_laplace_modes", lm)
    monkeypatch.setattr(oja, "stable_histogram_mode", shm)
    monkeypatch.setattr(oja, "private_mean", pm)
    monkeypatch.setattr(oja, "private_top_eigenvalue", top)
    return rec


def _run_dp_pca(X, seeds, **kw):
    """The paper's DP-PCA (``schedule="paper"``: equal batches, Algorithm 5 on every step) unless the
    caller passes ``schedule``."""
    kw.setdefault("schedule", "paper")
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # AnalysisRangeWarning: utility range, not privacy
        for seed in seeds:
            out.append(oja.dp_pca(X, 1, random_state=seed, **kw))
    return out


def _pca_data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.r_[3.0, np.ones(d - 1)]
    X *= (0.9 / np.linalg.norm(X, axis=1).max())
    X[::13] *= 10.0  # some rows far over the bound: clipped
    return X


def test_dp_pca_laplace_releases_pinned(monkeypatch):
    """Both histograms and the mean, with the default Laplace histograms and tight calibration.

    Algorithm 4: L1 shift 2 (derived above); the draws' scale b must give 2 / b = epsilon (pure).
    Algorithm 5: p histograms of L1 shift 2 (scale b5) and a Gaussian of multiplier s over the
    hand-built box gap; PLD(p x Laplace(b5 / 2) + Gaussian(s)) must be epsilon at delta."""
    eps, delta, h = 1.0, 1e-5, 2.0
    n, d, B = 3200, 20, 32
    rec = _instrument_dp_pca(monkeypatch)
    res = _run_dp_pca(_pca_data(n, d), range(4), epsilon=eps, delta=delta, row_norm=C, batch_size=B,
                      range_estimation=RangeEstimation(n_groups=4, half_width_mult=h))
    claim = res[0].privacy
    assert claim.certified and claim.epsilon == pytest.approx(eps, rel=1e-4)
    a4 = np.concatenate(rec["a4"])
    a5 = np.concatenate(rec["a5"])
    z = np.concatenate(rec["gauss"])
    assert a4.size > 500 and a5.size > 2000 and z.size > 2000, (a4.size, a5.size, z.size)
    # Algorithm 4: pure epsilon for the measured scale over the derived shift 2
    b4 = _laplace_scale_interval(a4)
    assert _inside(eps, (2.0 / b4[1], 2.0 / b4[0])), b4
    assert stats.kstest(a4, stats.laplace(scale=2.0 / eps).cdf).pvalue >= P_MIN
    # the declared branch-1 event reads the same epsilon (parallel branch: event4)
    event4, event5 = claim.events[0].events
    assert 1.0 / event4.noise_multiplier == pytest.approx(eps, rel=1e-9)
    # Algorithm 5: the measured scales compose (PLD) to the claim
    b5 = _laplace_scale_interval(a5)
    s5 = _gauss_std_interval(z)
    p = d

    def branch2(lap_scale: float, s: float) -> float:
        acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap_scale / 2.0), p))
        acc.compose(dp_accounting.GaussianDpEvent(s))
        return acc.get_epsilon(delta)

    assert branch2(b5[1], s5[1]) <= eps <= branch2(b5[0], s5[0]), (b5, s5)
    # and the declared multiplier is the one drawn
    assert _inside(res[0].diagnostics["mean_noise_multiplier"], s5)
    # the law is Laplace (KS against the fitted scale: conservative, FPR <= P_MIN)
    assert stats.kstest(a5, stats.laplace(scale=float(np.mean(np.abs(a5)))).cdf).pvalue >= P_MIN


def test_dp_pca_stable_releases_pinned(monkeypatch):
    """Stability-based histograms: Laplace of scale 2 / eps_h on the non-empty bins and a threshold
    at which a count of 1 (a bin only one neighbour has) survives with probability delta_h / 4 (two
    such bins per replaced row: delta_h / 2 <= delta_h). Algorithm 4 has (eps, delta); each of the p
    coordinate histograms (share * eps / p, share * delta / p); the Gaussian the Balle-Wang multiplier
    of the rest. The threshold is tested by its effect: the kept bins are those the recorded draws
    put above it."""
    eps, delta, h, share = 20.0, 1e-5, 2.0, 0.5
    n, d, B, groups = 256 * 30, 5, 256, 64
    rec = _instrument_dp_pca(monkeypatch)
    res = _run_dp_pca(_pca_data(n, d, seed=2), range(4), epsilon=eps, delta=delta, row_norm=C,
                      batch_size=B, range_estimation=RangeEstimation(
                          n_groups=groups, half_width_mult=h, histogram="stable", histogram_share=share))
    claim = res[0].privacy
    assert claim.certified
    a4 = [r for r in rec["stable"] if not r[0]]
    a5 = [r for r in rec["stable"] if r[0]]
    assert len(a4) == len(res) * (n // B)
    for in_mean, e, dl, counts, drawn, ids, mode in rec["stable"]:
        want = (eps, delta) if not in_mean else (share * eps / d, share * delta / d)
        assert (e, dl) == pytest.approx(want, rel=1e-12)
        scale = 2.0 / e  # derived: L1 shift 2 over eps_h
        threshold = 1.0 + scale * math.log(2.0 / dl)  # P(1 + Lap(scale) >= t) = delta_h / 4
        noisy = counts + drawn
        keep = noisy >= threshold
        expect = None if not keep.any() else int(ids[keep][np.argmax(noisy[keep])])
        assert mode == expect
    for group, e in ((a4, eps), (a5, share * eps / d)):
        drawn = np.concatenate([r[4] for r in group])
        assert drawn.size > 300
        bounds = _laplace_scale_interval(drawn)
        assert _inside(2.0 / e, bounds), (e, bounds)
    z = np.concatenate(rec["gauss"])
    assert z.size > 400
    s = _gauss_std_interval(z)
    # branch 2 by basic composition: p (eps_h, delta_h) histograms and the Gaussian at the rest of delta
    eps_gauss = (bw_epsilon(s[1], delta * (1 - share)), bw_epsilon(s[0], delta * (1 - share)))
    assert eps_gauss[0] + share * eps <= eps <= eps_gauss[1] + share * eps + 1e-9, s


def test_dp_pca_paper_calibration_pinned(monkeypatch):
    """calibration="paper": the mean's noise is the paper's beta_t = 8 K sqrt(2 Lambda_t)
    log^a(B d / zeta) sqrt(2 d log(2.5 / delta)) / (epsilon B) with the released Lambda_t (zeta =
    failure_probability / (2 T)), and Algorithm 4's Laplace scale is 2 / (epsilon / 2). The claim is
    what the accountant reads from the measured scales over the hand-derived sensitivities: the worst
    of the two parallel branches."""
    eps, delta, h, K, a, fail = 1.0, 1e-5, 2.0, 1.0, 0.5, 0.01
    n, d, B = 3200, 20, 32
    rec = _instrument_dp_pca(monkeypatch)
    res = _run_dp_pca(_pca_data(n, d, seed=6), range(3), epsilon=eps, delta=delta, row_norm=C,
                      batch_size=B, calibration="paper", range_estimation=RangeEstimation(
                          n_groups=4, half_width_mult=h, tail_scale=K, tail_exponent=a,
                          failure_probability=fail))
    zeta = fail / (2 * (n // B))
    z_paper, z_gap = [], []
    for noise, gap, lam in rec["raw"]:
        beta = (8 * K * math.sqrt(2 * lam) * math.log(B * d / zeta) ** a
                * math.sqrt(2 * d * math.log(2.5 / delta)) / (eps * B))
        z_paper.append(noise / beta)
        z_gap.append(noise / gap)
    z_paper, z_gap = np.concatenate(z_paper), np.concatenate(z_gap)
    assert z_paper.size > 2000
    assert _inside(1.0, _gauss_std_interval(z_paper))
    b4 = _laplace_scale_interval(np.concatenate(rec["a4"]))
    assert _inside(2.0 / (eps / 2), b4)
    b5 = _laplace_scale_interval(np.concatenate(rec["a5"]))
    s5 = _gauss_std_interval(z_gap)

    def branch2(lap_scale: float, s: float) -> float:
        acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap_scale / 2.0), d))
        acc.compose(dp_accounting.GaussianDpEvent(s))
        return acc.get_epsilon(delta)  # parallel branches: each at the whole delta

    lo = max(2.0 / b4[1], branch2(b5[1], s5[1]))
    hi = max(2.0 / b4[0], branch2(b5[0], s5[0]))
    claim = res[0].privacy
    assert lo <= claim.epsilon <= hi, (lo, claim.epsilon, hi)


@pytest.mark.parametrize("relation,shift", [("replace_one", 2.0), ("add_remove", 1.0)])
def test_stable_histogram_threshold_is_sound(relation, shift):
    """Under either relation the only bins that can differ in presence are bins of count 1 in one
    data set and 0 in the other; the others' counts move by an L1 shift of ``shift``, which the
    Laplace noise of scale shift / epsilon covers. The release is then (epsilon, delta)-DP if a count-1
    bin is kept with probability <= delta. Measured: K count-1 bins, each kept or not by the recorded
    draws; the kept ones must be exactly those above one threshold t, and t must give a pass
    probability 1/2 exp(-(t - 1) / scale) <= delta (and the observed pass rate must not exceed delta:
    one-sided binomial at FPR). The library's threshold makes it delta / 4: conservative by 4."""
    from dpspectral.privacy._histogram import stable_histogram

    eps, delta, K = 1.0, 0.2, 20000
    rng = np.random.default_rng(8)
    draws: list = []
    bins = np.r_[np.arange(K), np.full(50, K)]  # K count-1 bins and one bin of count 50
    kept = stable_histogram(bins, epsilon=eps, delta=delta, relation=relation,
                            random_state=_LaplaceRecorder(rng, draws))
    drawn = np.concatenate(draws)
    assert _inside(shift / eps, _laplace_scale_interval(drawn))
    noisy = np.r_[np.ones(K), 50.0] + drawn
    is_kept = np.isin(np.arange(K + 1), list(kept))
    assert is_kept[K]  # the heavy bin
    t_low = float(noisy[~is_kept].max())
    assert t_low < float(noisy[is_kept].min())
    for i in np.flatnonzero(is_kept):
        assert kept[int(i)] == pytest.approx(noisy[i], abs=1e-12)  # released counts are the noisy ones
    assert 0.5 * math.exp(-(t_low - 1.0) / (shift / eps)) <= delta
    passes = int(is_kept[:K].sum())
    assert passes <= stats.binom.ppf(1 - FPR, K, delta)


def test_dp_pca_public_bound_mean_pinned(monkeypatch):
    """The default DP-PCA (warm-up schedule, ``truncation="auto"``) releases a batch's mean gradient
    with noise from the public bound wherever Algorithm 5's box would be no smaller. Hand-derived
    sensitivity of the batch SUM of ``x (x^T W)`` (W: d x p orthonormal, p >= 2): the pair u = w_1,
    v = w_2 gives ``||(u u^T - v v^T) W||_F = sqrt 2`` and no pair of rows of norm <= C does better
    (random search), so the mean over b rows moves by ``sqrt(2) C^2 / b``. The noise drawn (the
    released mean minus the test's own mean) over that sensitivity must have the declared multiplier,
    and the accountant must certify the claim with it (this run's Laplace histograms of Algorithm 5
    are not used: the declared branch still composes them, so the claim is an upper bound)."""
    d = 12
    rng = np.random.default_rng(3)
    W = np.linalg.qr(rng.standard_normal((d, 5)))[0]
    built = float(np.linalg.norm((np.outer(W[:, 0], W[:, 0]) - np.outer(W[:, 1], W[:, 1])) @ W))
    assert built == pytest.approx(math.sqrt(2.0) * C**2)
    xs = rng.standard_normal((3000, d))
    xs *= (C * rng.random(3000) ** (1 / d) / np.linalg.norm(xs, axis=1))[:, None]
    G = np.einsum("ni,nj->nij", xs, xs @ W).reshape(3000, -1)
    assert max(np.linalg.norm(G - g, axis=1).max() for g in G[:300]) <= built + 1e-9
    rec: list = []
    real = oja._public_bound_release  # every public-bound mean: S (a batch SUM of b rows) / b + noise

    def spy(S, b, sensitivity, releaser):
        out = real(S, b, sensitivity, releaser)
        rec.append((out - S / b) / (built / b))
        return out

    monkeypatch.setattr(oja, "_public_bound_release", spy)
    res = _run_dp_pca(_pca_data(8000, d, seed=4), range(3), epsilon=1.0, delta=1e-5, row_norm=C,
                      schedule="warmup")
    assert res[0].diagnostics["block_size"] == d  # min(d, 20 k) columns
    z = np.concatenate([np.ravel(r) for r in rec])
    assert len(rec) >= 6 and z.size > 500, len(rec)
    s = _gauss_std_interval(z)
    assert _inside(res[0].diagnostics["mean_noise_multiplier"], s), s
    claim = res[0].privacy
    assert claim.certified and claim.epsilon <= 1.0 + 1e-9
    assert bw_epsilon(s[0], 1e-5) >= 1.0 - 0.1  # the Gaussian alone is not far below the claim
    # Where Algorithm 5 cannot act (forced here: no gradients fit), Algorithms 4 and 5 do not run and
    # every batch mean has the whole budget: the measured multiplier must certify exactly the claim.
    rec.clear()
    monkeypatch.setattr(oja, "_TRUNCATION_MAX_VALUES", 0)
    res = _run_dp_pca(_pca_data(8000, d, seed=4), range(3), epsilon=1.0, delta=1e-5, row_norm=C,
                      schedule="warmup", adaptive_clip=False)
    z = np.concatenate([np.ravel(r) for r in rec])
    assert len(rec) == 12 and res[0].diagnostics["batch_sizes"] == (400, 400, 400, 6800)
    s = _gauss_std_interval(z)
    assert res[0].privacy.certified and res[0].privacy.epsilon <= 1.0 + 1e-9
    assert bw_epsilon(s[1], 1e-5) <= res[0].privacy.epsilon <= bw_epsilon(s[0], 1e-5), s


def test_dp_pca_clips_by_effect():
    """Rows of norm 10 give exactly the output of the same rows at norm C (same seed); at norm C / 2
    they do not (the rows matter). Every row is rescaled, so the effect is seen whatever the secret
    permutation puts in which half of which minibatch."""
    X = _pca_data(400, 4, seed=3)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    out = []
    for norm in (10.0, C, C / 2):
        Y = X * norm
        out.append(_run_dp_pca(Y, [7], epsilon=1.0, delta=1e-5, row_norm=C, batch_size=40,
                               range_estimation=RangeEstimation(n_groups=4))[0].components)
        out.append(oja.private_oja(Y, 1, epsilon=50.0, delta=1e-5, row_norm=C, random_state=7).components)
    np.testing.assert_allclose(out[0], out[2], atol=1e-12)  # dp_pca
    np.testing.assert_allclose(out[1], out[3], atol=1e-12)  # private_oja
    assert np.abs(out[0] - out[4]).max() > 1e-9 and np.abs(out[1] - out[5]).max() > 1e-9


def test_laplace_histogram_empty_bins_law():
    """The winner among M empty bins is drawn without enumerating them: its noisy count must be the
    largest of M i.i.d. Laplace(b) draws (CDF F^M) and its index uniform."""
    rng = np.random.default_rng(4)
    M, scale = 257, 2.0
    vals, idx = [], []
    for _ in range(3000):
        j, v = laplace_histogram_mode(np.empty(0, dtype=int), -M + 1, 0, scale=scale, random_state=rng)
        vals.append(v)
        idx.append(j)
    lap = stats.laplace(scale=scale)
    assert stats.kstest(vals, lambda x: lap.cdf(x) ** M).pvalue >= P_MIN
    counts = np.bincount(np.asarray(idx) + M - 1, minlength=M)
    assert stats.chisquare(counts).pvalue >= P_MIN


# ---------------------------------------------------------------------------------------------
# FDA pair: sensitivities from neighbours built by hand (for DPSR / DPSRS / DP-Rayleigh-Flow)
# ---------------------------------------------------------------------------------------------

def _b_pair(q: int, d: int):
    return fda_b_worst_pair(q, d, C)


def _a_pair(q: int, big: int, d: int):
    """``big`` rows at -C e1 in class 2, q at +C e1 in classes 0 and 1; the record (C e1, class 0)
    becomes (-C e1, class 1). n ||dA||_2 -> 8 C^2."""
    e = np.eye(d) * C
    X0 = np.vstack([np.tile(-e[0], (big, 1)), np.tile(e[0], (2 * q, 1)), e[0]])
    y0 = np.r_[np.full(big, 2), np.zeros(q), np.ones(q), 0].astype(int)
    X1, y1 = X0.copy(), y0.copy()
    X1[-1], y1[-1] = -e[0], 1
    return X0, y0, X1, y1


SENS_B_F = 4 * math.sqrt(2) * C**2  # n ||dB||_F (reached by _b_pair, covers the search)
SENS_A_2 = 8 * C**2  # n ||dA||_2 (reached by _a_pair, covers the search)
SENS_A_F = 8 * math.sqrt(2) * C**2  # n ||dA||_F: covers the search, _a_pair reaches 8 (within sqrt 2)


def test_fda_gradient_sensitivities_from_pairs():
    """Phase 1 (k1 = d): ||2 dB V||_F = 2 ||dB||_F for square orthonormal V; Lambda_B:
    ||diag(V^T dB V)|| = ||dB||_F for V the eigenvectors of dB; phase 2 (k = 1): the largest
    ||2 Phi^T dA Phi v|| is 2 ||Phi||_2^2 ||dA||_2 when the pair is rotated so that dA's top direction
    is Phi's top left singular vector. All reached by the pairs; a random search never beats them."""
    d = 4
    X0, y0, X1, y1 = _b_pair(400, d)
    n = len(y0)
    dB = fda_by_hand(X0, y0, [0, 1], C)[1] - fda_by_hand(X1, y1, [0, 1], C)[1]
    V = np.linalg.qr(np.random.default_rng(0).normal(size=(d, d)))[0]
    assert n * np.linalg.norm(2 * dB @ V) > 0.99 * 2 * SENS_B_F
    U = np.linalg.eigh(dB)[1]
    assert n * np.linalg.norm(np.diag(U.T @ dB @ U)) > 0.99 * SENS_B_F
    assert n * np.linalg.norm(dB[np.triu_indices(d)]) > 0.99 * SENS_B_F  # the upper triangle too
    X0, y0, X1, y1 = _a_pair(200, 20000, d)
    n = len(y0)
    dA = fda_by_hand(X0, y0, [0, 1, 2], C)[0] - fda_by_hand(X1, y1, [0, 1, 2], C)[0]
    assert n * np.linalg.norm(dA[np.triu_indices(d)]) > 0.97 * SENS_A_2  # the upper triangle
    rng = np.random.default_rng(1)
    Phi = rng.normal(size=(d, d))
    u = np.linalg.svd(Phi)[0][:, 0]
    Q = np.linalg.qr(np.column_stack([u, rng.normal(size=(d, d - 1))]))[0]
    Q *= np.sign(Q[:, 0] @ u)  # Q e1 = u
    dA = (fda_by_hand(X0 @ Q.T, y0, [0, 1, 2], C)[0] - fda_by_hand(X1 @ Q.T, y1, [0, 1, 2], C)[0])
    reached = n * np.linalg.norm(2 * Phi.T @ dA @ Phi, 2)
    assert reached > 0.97 * 2 * np.linalg.norm(Phi, 2) ** 2 * SENS_A_2
    worst_b = worst_a2 = worst_af = 0.0
    for _ in range(300):
        m = int(rng.integers(3, 12))
        X = rng.normal(size=(m, 3)) * rng.uniform(0.2, 3.0)
        y = rng.integers(0, 3, size=m)
        X2, y2 = X.copy(), y.copy()
        X2[0] = rng.normal(size=3) * rng.uniform(0.2, 3.0)
        y2[0] = rng.integers(0, 3)
        A0, B0 = fda_by_hand(X, y, [0, 1, 2], C)
        A1, B1 = fda_by_hand(X2, y2, [0, 1, 2], C)
        worst_b = max(worst_b, m * np.linalg.norm(B0 - B1))
        worst_a2 = max(worst_a2, m * np.linalg.norm(A0 - A1, 2))
        worst_af = max(worst_af, m * np.linalg.norm(A0 - A1))
    assert worst_b <= SENS_B_F and worst_a2 <= SENS_A_2 and worst_af <= SENS_A_F


def _fda_data(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) * 0.45 + 0.15 * y[:, None]
    X[::17] *= 10.0  # over the bound: clipped
    return X, y


# ---------------------------------------------------------------------------------------------
# DPSR / DPSRS: the noisy gradients of both phases and the noisy Lambda_B
# ---------------------------------------------------------------------------------------------

def _instrument_dpsr(monkeypatch) -> list:
    phases: list = []
    real_phase, real_orth = reduction._noisy_phase, reduction.orthonormalize_fast
    current: dict = {"calls": None}

    def orth(V):
        out = real_orth(V)
        if current["calls"] is not None:
            current["calls"].append((np.array(V), np.array(out)))
        return out

    def phase(M, V, **kw):  # the noise reaches the phase through the release pipeline (a keyword)
        calls: list = []
        current["calls"] = calls
        try:
            result = real_phase(M, V, **kw)
        finally:
            current["calls"] = None
        phases.append({"V0": np.array(V), "eta": kw["eta"], "m": kw["n_iter"], "calls": calls})
        return result

    monkeypatch.setattr(reduction, "orthonormalize_fast", orth)
    monkeypatch.setattr(reduction, "_noisy_phase", phase)
    return phases


def _phase_noise(ph: dict, M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(noise of every released gradient, last iterate, the one before, last released gradient):
    ``G_t = (input of Orth - V_{t-1}) / eta``."""
    calls, m, eta = ph["calls"], ph["m"], ph["eta"]
    c = len(calls) // m
    assert c * m == len(calls) and c in (1, 2)
    V = prev = ph["V0"]
    noise = []
    G = np.zeros_like(V)
    for t in range(m):
        G = (calls[c * t][0] - V) / eta
        noise.append(G - 2.0 * M @ V)
        prev, V = V, calls[c * t + c - 1][1]
    return np.array(noise), V, prev, G


@pytest.mark.parametrize("method,shares", [("dpsr", (0.45, 0.1, 0.45)), ("dpsrs", (0.45, 0.1, 0.45)),
                                           ("dpsr", (0.5, 0.0, 0.5))],
                         ids=["dpsr", "dpsrs", "dpsr-lambda-from-gradient"])
def test_dpsr_noisy_gradients_and_lambda_pinned(method, shares, monkeypatch):
    """Every released gradient of both phases and the released Lambda_B, against the Balle-Wang
    multiplier split by ``budget_shares`` over the hand-derived sensitivities (2 ||dB||_F; ||dB||_F;
    2 ||Phi~||_2^2 ||dA||_2 for k = 1). With no share for Lambda_B it must be read off the last
    released phase-1 gradient (post-processing): ``max(diag(V_{m-1}^T G_m) / 2, 0)`` exactly."""
    eps, delta, xi, m = 1.0, 1e-5, 0.01, 15
    n, d = 10000, 5
    X, y = _fda_data(n, d, seed=4)
    A, B = fda_by_hand(X, y, [0, 1], C)
    pair = fda_pair(X, y, row_norm=C, classes=[0, 1])
    np.testing.assert_allclose(pair.B, B, atol=1e-12)  # the pair is the statistic (clipped rows)
    np.testing.assert_allclose(pair.A, A, atol=1e-12)
    phases = _instrument_dpsr(monkeypatch)
    z1, zl, z2 = [], [], []
    runs = 40
    for seed in range(runs):
        kw = dict(epsilon=eps, delta=delta, regularization=xi, n_iter=m, random_state=seed,
                  budget_shares=shares)
        res = dpsr(pair, 1, **kw) if method == "dpsr" else dpsrs(pair, 1, 3, **kw)
        ph1, ph2 = phases[-2], phases[-1]
        noise1, basis, prev, G_last = _phase_noise(ph1, B)
        lam = res.diagnostics["lambda_b"]
        if shares[1] > 0:
            assert lam.min() > 0  # no clamping (B's eigenvalues are many noise stds above 0)
        else:
            np.testing.assert_allclose(lam, np.maximum(np.einsum("ij,ij->j", prev, G_last) / 2, 0),
                                       rtol=1e-9, atol=1e-12)
        Phit = res.whitening
        np.testing.assert_allclose(Phit, basis / np.sqrt(lam + xi), atol=1e-12)
        noise2 = _phase_noise(ph2, Phit.T @ A @ Phit)[0]
        d1 = 2 * SENS_B_F / n  # derived sensitivities (test above)
        d_lam = SENS_B_F / n
        d2 = 2 * float(1.0 / np.min(lam + xi)) * SENS_A_2 / n  # ||Phi~||_2^2 from the released Lambda_B
        z1.append(noise1 / d1)
        zl.append((lam - np.einsum("ij,ij->j", basis, B @ basis)) / d_lam)
        z2.append(noise2 / d2)
    z1, zl, z2 = np.concatenate(z1, axis=None), np.concatenate(zl), np.concatenate(z2, axis=None)
    assert z1.size == runs * m * d * d and z2.size == runs * m * d
    # the multipliers drawn: Balle-Wang for (eps, delta), split in the shares of 1/s^2 (the phases'
    # shares renormalised when Lambda_B has none), sqrt(m) per step for the m steps of a phase
    p = bw_multiplier(eps, delta)
    w1, wl, w2 = shares
    measured = [_gauss_std_interval(z) for z in (z1, zl, z2)]
    if wl > 0:
        expect = [p * math.sqrt(m / w1), p / math.sqrt(wl), p * math.sqrt(m / w2)]
    else:
        expect = [p * math.sqrt(m * (w1 + w2) / w1), None, p * math.sqrt(m * (w1 + w2) / w2)]
    for want, got in zip(expect, measured, strict=True):
        assert want is None or _inside(want, got), (expect, measured)

    # the accountant's epsilon for the measured multipliers is the claim (m [+ 1] + m Gaussian releases)
    def total(idx: int) -> float:
        s1, sl, s2 = (g[idx] for g in measured)
        return bw_epsilon((m / s1**2 + (1 / sl**2 if wl > 0 else 0.0) + m / s2**2) ** -0.5, delta)

    claim = res.privacy
    assert claim.certified
    assert total(1) <= claim.epsilon <= total(0)
    assert claim.epsilon == pytest.approx(eps, rel=1e-6)


# ---------------------------------------------------------------------------------------------
# DP-Rayleigh-Flow: the noisy A and B
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_dp_rayleigh_flow_noise_pinned(calibration, monkeypatch):
    eps, delta, xi = 1.0, 1e-5, 0.01
    n, d = 300, 4
    X, y = _fda_data(n, d, seed=5)
    A, B = fda_by_hand(X, y, [0, 1], C)
    pair = fda_pair(X, y, row_norm=C, classes=[0, 1])
    drawn: list = []
    real_sg = gaussian_module.symmetric_gaussian  # the seeded noise source draws symmetric noise with it

    def sg(dim, sigma, rng, *args, **kw):
        E = real_sg(dim, sigma, rng, *args, **kw)
        drawn.append(np.array(E))
        return E

    monkeypatch.setattr(gaussian_module, "symmetric_gaussian", sg)
    iu = np.triu_indices(d)
    za, zb = [], []
    for seed in range(300):
        with config_context(noise="float"):  # the spy above is the float source's symmetric sampler
            res = dp_rayleigh_flow(pair, 1, epsilon=eps, delta=delta, regularization=xi, n_iter=5,
                                   calibration=calibration, random_state=seed)
        EA, EB = drawn[-2], drawn[-1]
        # the output is computed from exactly A + EA and B + EB: its values are the Rayleigh quotients
        # of its vectors in (A^, B^), B^ = max(B + EB, 0) + xi (scale-free, so exact)
        lam, Phi = np.linalg.eigh(B + EB)
        Bh = (Phi * (np.maximum(lam, 0) + xi)) @ Phi.T
        v = res.vectors[:, 0]
        assert res.values[0] == pytest.approx(v @ (A + EA) @ v / (v @ Bh @ v), rel=1e-8)
        za.append(EA[iu] / (SENS_A_F / n))
        zb.append(EB[iu] / (SENS_B_F / n))
    sa, sb = _gauss_std_interval(np.array(za)), _gauss_std_interval(np.array(zb))
    if calibration == "tight":
        p = bw_multiplier(eps, delta)
        want_a = want_b = p * math.sqrt(2.0)  # a_share = 1/2 of 1/s^2 each
    else:  # zCDP: rho = (sqrt(eps + L) - sqrt(L))^2, half to each, s = 1 / sqrt(2 rho_X)
        L = math.log(1 / delta)
        rho = (math.sqrt(eps + L) - math.sqrt(L)) ** 2
        want_a = want_b = 1.0 / math.sqrt(rho)
    assert _inside(want_a, sa) and _inside(want_b, sb), (want_a, sa, sb)
    claim = res.privacy
    eps_hi = bw_epsilon((sa[0] ** -2 + sb[0] ** -2) ** -0.5, delta)
    eps_lo = bw_epsilon((sa[1] ** -2 + sb[1] ** -2) ** -0.5, delta)
    assert eps_lo <= claim.epsilon <= eps_hi and claim.epsilon <= eps * (1 + 1e-9)


def test_dpsr_phase2_with_a_public_b_pinned(monkeypatch):
    """A user pair whose B is public (its sensitivity 0): no phase 1 and no Lambda_B release; Phi~ is the
    public reduction of B, and every phase-2 gradient carries noise of std ``p sqrt(m) 2 ||dA||_2
    ||Phi~||_2^2`` (k = 1: the spectral bound; the whole budget on phase 2; ``||Phi~||_2^2 =
    1 / min(eig(B) + xi)`` exactly, from B itself). The plan line that no other pinned test reaches."""
    from dpspectral.gep._scatter import PairSensitivity, symmetric_definite_pair

    eps, delta, xi, m, d = 1.0, 1e-5, 0.01, 15, 5
    rng = np.random.default_rng(3)
    G = rng.normal(size=(d, d))
    A = G @ G.T / d
    B = np.diag(np.linspace(0.5, 2.0, d))  # public
    sens = PairSensitivity(a_frobenius=0.03, b_frobenius=0.0, a_spectral=0.02, b_spectral=0.0)
    pair = symmetric_definite_pair(A, B, sensitivity=sens, regularization=xi)
    assert pair.b_is_public
    phases = _instrument_dpsr(monkeypatch)
    z = []
    runs = 40
    phi_norm2 = 1.0 / (0.5 + xi)
    for seed in range(runs):
        res = dpsr(pair, 1, epsilon=eps, delta=delta, regularization=xi, n_iter=m, random_state=seed)
        (ph2,) = phases[-1:]
        Phit = res.whitening
        assert np.linalg.norm(Phit, 2) ** 2 == pytest.approx(phi_norm2, rel=1e-9)
        noise2 = _phase_noise(ph2, Phit.T @ A @ Phit)[0]
        z.append(noise2 / (2 * 0.02 * phi_norm2))
        assert len(res.privacy.events) == 1  # phase 2 only
    assert len(phases) == runs  # one phase per run
    measured = _gauss_std_interval(np.concatenate(z, axis=None))
    assert _inside(bw_multiplier(eps, delta) * math.sqrt(m), measured), measured
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(eps, rel=1e-6)
