"""Private histograms (paper 001's range estimation) and the parallel / (epsilon, delta) accounting.

Statistical tests are seeded (deterministic outcome); each states its false-positive rate (FPR): the
probability that a correct implementation fails it for a fresh seed. Privacy audits use the
Clopper-Pearson threshold test of :mod:`dpspectral.privacy._audit` (FPR alpha = 1e-3 per bound) and are each
paired with a deliberately broken mechanism that the same audit must flag (power).
"""

from __future__ import annotations

import math
import time

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dpspectral import config_context
from dpspectral.privacy import EpsilonDeltaDpEvent, ParallelDpEvent, epsilon_of
from dpspectral.privacy import _histogram as hist
from dpspectral.privacy._accounting import MAX_PARALLEL_EXPANSIONS
from dpspectral.privacy._audit import threshold_epsilon_lower_bound
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._histogram import (
    histogram_shift,
    laplace_histogram_event,
    laplace_histogram_mode,
    stable_histogram,
    stable_histogram_event,
    stable_histogram_mode,
    stable_threshold,
)
from dpspectral.privacy._noise import ExactNoise, SecureNoise, SeededNoise
from dpspectral.privacy._pipeline import ReleasePlan, release

ALPHA = 1e-3  # false-positive rate of every audit bound and of every two-sample test below

# ---------------------------------------------------------------------------------------------
# laplace_histogram_mode: the O(1) maximum over the empty bins has the law of the brute-force argmax

LOW, HIGH, SCALE = 0, 9, 1.5
BINS = np.array([2, 2, 2, 5, 6, 6])  # counts: bin 2 -> 3, bin 5 -> 1, bin 6 -> 2; seven empty bins


def _fast(n_runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = SeededNoise(np.random.default_rng(seed))  # the float source's O(1) maximum of the empty bins
    out = [laplace_histogram_mode(BINS, LOW, HIGH, scale=SCALE, random_state=rng) for _ in range(n_runs)]
    return np.array([i for i, _ in out]), np.array([v for _, v in out])


def _brute(n_runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every bin of [LOW, HIGH] enumerated with its own explicit Laplace noise, then the argmax."""
    rng = np.random.default_rng(seed)
    counts = np.bincount(BINS - LOW, minlength=HIGH - LOW + 1).astype(float)
    noisy = counts + rng.laplace(0.0, SCALE, size=(n_runs, counts.size))
    idx = np.argmax(noisy, axis=1)
    return idx + LOW, noisy[np.arange(n_runs), idx]


Draws = tuple[np.ndarray, np.ndarray]


def _same_law_pvalues(a: Draws, b: Draws) -> tuple[float, float]:
    """(chi-square p-value of the winning bin over all ten bins, KS p-value of the winning value)."""
    cats = np.arange(LOW, HIGH + 1)
    table = np.array([[np.sum(a[0] == c) for c in cats], [np.sum(b[0] == c) for c in cats]])
    table = table[:, table.sum(axis=0) > 0]
    p_index = float(stats.chi2_contingency(table)[1])
    p_value = float(stats.ks_2samp(a[1], b[1]).pvalue)
    return p_index, p_value


def test_laplace_mode_has_the_law_of_the_brute_force_argmax():
    # Two-sample chi-square on the winning bin (each empty bin its own category, so uniformity among
    # the empty bins is tested too) and two-sample KS on the winning noisy count, 20,000 seeded runs
    # each. FPR: at most 2e-3 (two tests at level 1e-3).
    fast, brute = _fast(20_000, 1), _brute(20_000, 2)
    assert np.isin(fast[0], np.arange(LOW, HIGH + 1)).all()
    empty = ~np.isin(fast[0], BINS)
    assert 0.05 < empty.mean() < 0.95  # the empty bins do win often: the comparison has teeth
    p_index, p_value = _same_law_pvalues(fast, brute)
    assert p_index > ALPHA and p_value > ALPHA, (p_index, p_value)


def test_the_law_comparison_detects_a_wrong_empty_bin_maximum(monkeypatch):
    # Power of the test above: the largest of the 7 empty bins' noises replaced by ONE Laplace draw
    # (a plausible bug) must be rejected. Deterministic given the seeds.
    monkeypatch.setattr(hist, "_laplace_max", lambda m, scale, rng: float(rng.laplace(0.0, scale)))
    p_index, p_value = _same_law_pvalues(_fast(20_000, 1), _brute(20_000, 2))
    assert min(p_index, p_value) < ALPHA


@pytest.mark.parametrize("m", [1, 2, 50, 1000])
def test_laplace_max_matches_explicit_maxima(m):
    # KS two-sample test between the O(1) sampler and the maximum of m explicit draws (5,000 each);
    # FPR 1e-3 per m.
    rng = np.random.default_rng(m)
    fast = np.array([hist._laplace_max(m, 2.0, rng) for _ in range(5000)])
    explicit = rng.laplace(0.0, 2.0, size=(5000, m)).max(axis=1)
    assert stats.ks_2samp(fast, explicit).pvalue > ALPHA


def test_laplace_mode_over_a_huge_range_is_fast_and_lands_on_an_empty_bin():
    # 2e12 bins, five values in bin 0 with scale 1: the largest empty-bin noise is ~ ln(1e12) = 27.6,
    # so an empty bin wins; its value lies in [20, 40] except with probability < 1e-5 per run. The O(1)
    # maximum of the empty bins is the float source's; the exact default noises every bin, and refuses.
    with pytest.raises(ValueError, match="every bin of the public range"):
        laplace_histogram_mode(np.zeros(5, np.int64), -10**12, 10**12, scale=1.0,
                               random_state=np.random.default_rng(3))
    rng = SeededNoise(np.random.default_rng(3))
    low, high = -10**12, 10**12
    t = time.perf_counter()
    for _ in range(50):
        j, v = laplace_histogram_mode(np.zeros(5, np.int64), low, high, scale=1.0, random_state=rng)
        assert low <= j <= high and j != 0
        assert 20.0 < v < 40.0
    assert time.perf_counter() - t < 2.0


def test_laplace_mode_finds_a_heavy_bin():
    # 200 values in bin 7, 20 scattered ones, 2,001 bins, epsilon = 1 under replace-one (scale 2).
    # The true mode loses only if some noise difference exceeds ~180 = 90 scales: probability
    # < 2001 * exp(-85) per run, so FPR ~ 0 over the 200 seeded runs.
    rng = np.random.default_rng(4)
    bins = np.r_[np.full(200, 7), rng.integers(-1000, 1001, size=20)]
    scale = histogram_shift("replace_one") / 1.0
    for _ in range(200):
        j, v = laplace_histogram_mode(bins, -1000, 1000, scale=scale, random_state=rng)
        assert j == 7 and abs(v - 200) < 60


def test_laplace_mode_all_bins_occupied_and_no_data():
    rng = np.random.default_rng(5)
    j, _ = laplace_histogram_mode(np.arange(4), 0, 3, scale=1e-9, random_state=rng)
    assert 0 <= j <= 3  # no empty bin: the argmax of the four occupied ones
    j, v = laplace_histogram_mode(np.r_[0, 1, 1, 2, 3], 0, 3, scale=1e-9, random_state=rng)
    assert j == 1 and v == pytest.approx(2.0)
    j, _ = laplace_histogram_mode(np.empty(0, np.int64), -3, 3, scale=1.0, random_state=rng)
    assert -3 <= j <= 3  # no data: a uniform bin


@pytest.mark.parametrize("bins", [[-1, 0, 3], [0, 4], [10], [-17, 2]])
def test_laplace_mode_rejects_bins_outside_the_range(bins):
    with pytest.raises(ValueError, match=r"must lie in the public range \[0, 3\]") as info:
        laplace_histogram_mode(np.array(bins), 0, 3, scale=1.0, random_state=np.random.default_rng(0))
    # the message names the public range only, never an offending (private) value
    outside = [b for b in bins if not 0 <= b <= 3]
    assert not any(str(b) in str(info.value).replace("[0, 3]", "") for b in outside)


def test_laplace_histogram_event_is_epsilon():
    for rel, eps in (("replace_one", 0.7), ("add_remove", 2.0)):
        scale = histogram_shift(rel) / eps
        assert epsilon_of(laplace_histogram_event(scale, rel), 0.0, relation=rel) == pytest.approx(eps)


# ---------------------------------------------------------------------------------------------
# stable_histogram


def test_stable_threshold_formula():
    # spec §A.3: a count of 1 must pass with probability delta / 4 (replace-one: two such bins)
    eps, delta = 0.8, 1e-6
    for rel in ("replace_one", "add_remove"):
        scale = histogram_shift(rel) / eps
        t = stable_threshold(eps, delta, rel)
        p_pass = 0.5 * math.exp(-(t - 1.0) / scale)  # P(1 + Lap(scale) >= t)
        assert p_pass == pytest.approx(delta / 4)


def test_stable_histogram_suppresses_light_bins_and_keeps_heavy_ones():
    # Ten bins of count 1 (each passes with probability delta/4 = 2.5e-7) and bin 3 with 500
    # (threshold ~30, so it fails to pass only with probability ~exp(-235)). FPR < 1e-3 over 300 runs.
    rng = np.random.default_rng(6)
    bins = np.r_[np.full(500, 3), np.arange(10, 20)]
    for _ in range(300):
        kept = stable_histogram(bins, epsilon=1.0, delta=1e-6, random_state=rng)
        assert set(kept) == {3} and abs(kept[3] - 500) < 60
    # everything suppressed: the mode is None
    assert stable_histogram_mode(np.arange(50), epsilon=1.0, delta=1e-6, random_state=rng) is None
    assert stable_histogram(np.empty(0, np.int64), epsilon=1.0, delta=1e-6, random_state=rng) == {}


def test_stable_histogram_mode_on_concentrated_data():
    # 80% of 2,000 values in bin -4, the rest spread over 200 bins: the mode wins unless a noise
    # difference exceeds ~1,500 scales (FPR ~ 0).
    rng = np.random.default_rng(7)
    bins = np.r_[np.full(1600, -4), rng.integers(0, 200, size=400)]
    for _ in range(100):
        assert stable_histogram_mode(bins, epsilon=0.5, delta=1e-6, random_state=rng) == -4


@pytest.mark.parametrize("kw", [{"epsilon": 0.0, "delta": 1e-6}, {"epsilon": 1.0, "delta": 0.0},
                                {"epsilon": 1.0, "delta": 1.0}, {"epsilon": -1.0, "delta": 0.1}])
def test_stable_histogram_bad_budget(kw):
    with pytest.raises(ValueError, match="The .(epsilon|delta). parameter of stable_histogram must be"):
        stable_histogram([1, 2], random_state=np.random.default_rng(0), **kw)


# ---------------------------------------------------------------------------------------------
# noise sources: a Generator, a NoiseSource or a Releaser; the secure source


def test_generator_and_its_default_source_draw_the_same():
    # a Generator is wrapped in the default source (exact noise); in config_context(noise="float") in
    # the float source
    bins = np.r_[np.full(30, 2), np.arange(-50, 50)]
    kw = {"epsilon": 1.0, "delta": 1e-6}
    for seed in range(5):
        for kind, source in (("exact", ExactNoise), ("float", SeededNoise)):
            with config_context(noise=kind):
                a = laplace_histogram_mode(bins, -100, 100, scale=2.0,
                                           random_state=np.random.default_rng(seed))
                h = stable_histogram(bins, random_state=np.random.default_rng(seed), **kw)
            b = laplace_histogram_mode(bins, -100, 100, scale=2.0,
                                       random_state=source(np.random.default_rng(seed)))
            assert a == b
            assert h == stable_histogram(bins, random_state=source(np.random.default_rng(seed)), **kw)


def test_secure_laplace_mode_and_stable_histogram():
    # 200 values in bin 7 among 201 bins at scale 2: the true mode loses only if a noise difference
    # exceeds ~190 = 95 scales (probability < 201 exp(-90) per run: FPR ~ 0 over the runs below).
    bins = np.r_[np.full(200, 7), np.arange(-100, 101, 10)]
    shift = histogram_shift("replace_one")
    values = set()
    for _ in range(5):
        j, v = laplace_histogram_mode(bins, -100, 100, scale=shift, sensitivity=shift,
                                      random_state=SecureNoise())
        assert j == 7 and abs(v - 201) < 60
        values.add(v)
    assert len(values) == 5  # fresh OS entropy every run
    kept = stable_histogram(bins, epsilon=1.0, delta=1e-6, random_state=SecureNoise())
    assert set(kept) == {7} and abs(kept[7] - 201) < 60  # the 1-count bins pass w.p. delta/4 each


def test_secure_laplace_mode_refusals():
    with pytest.raises(ValueError, match="needs each release's sensitivity"):
        laplace_histogram_mode(np.zeros(3, np.int64), 0, 3, scale=1.0, random_state=SecureNoise())
    with pytest.raises(ValueError, match="at most 65536"):
        laplace_histogram_mode(np.zeros(3, np.int64), 0, 10**6, scale=1.0, sensitivity=1.0,
                               random_state=SecureNoise())
    with pytest.raises(ValueError, match="'scale' parameter of laplace_histogram_mode"):
        laplace_histogram_mode(np.zeros(3, np.int64), 0, 3, scale=-1.0, random_state=np.random.default_rng())
    with pytest.raises(TypeError, match="'random_state' parameter of stable_histogram"):
        stable_histogram([1], epsilon=1.0, delta=1e-6, random_state=0)


def test_histogram_through_a_releaser():
    plan = ReleasePlan("hist", Relation.REPLACE_ONE, (laplace_histogram_event(2.0, "replace_one"),))
    with release(plan, None, SeededNoise(np.random.default_rng(0))) as releaser:
        inside = laplace_histogram_mode(np.arange(5), 0, 9, scale=2.0, random_state=releaser)
    fresh = SeededNoise(np.random.default_rng(0))
    assert inside == laplace_histogram_mode(np.arange(5), 0, 9, scale=2.0, random_state=fresh)
    with pytest.raises(RuntimeError, match="after its release block ended"):
        laplace_histogram_mode(np.arange(5), 0, 9, scale=2.0, random_state=releaser)


def _membership(bins: np.ndarray, target: int, n_runs: int, seed: int, **kw) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([float(target in stable_histogram(bins, random_state=rng, **kw))
                     for _ in range(n_runs)])


AUDIT_EPS, AUDIT_DELTA, AUDIT_RUNS = 1.0, 0.01, 20_000


def test_stable_histogram_threshold_audit(monkeypatch):
    # Worst case for the threshold (replace-one): D has one value in bin 0 and 100 in bin 5, D' moves
    # it to bin 9. Event "bin 9 reported" (T = 1): never under D, delta/4 under D'. The
    # Clopper-Pearson lower bound on epsilon (FPR alpha = 1e-3) must not exceed the claim. Power: the
    # same audit must flag a threshold set at half its height above 1 (a count of 1 then passes with
    # probability 0.5 sqrt(delta / 2) = 3.5% > delta).
    d0 = np.r_[0, np.full(100, 5)]
    d1 = np.r_[9, np.full(100, 5)]
    kw = {"epsilon": AUDIT_EPS, "delta": AUDIT_DELTA}
    t0 = _membership(d0, 9, AUDIT_RUNS, 10, **kw)
    t1 = _membership(d1, 9, AUDIT_RUNS, 11, **kw)
    assert t0.sum() == 0 and 0 < t1.mean() < AUDIT_DELTA  # ~ delta / 4
    assert threshold_epsilon_lower_bound(t0, t1, 0.5, AUDIT_DELTA, ALPHA) <= AUDIT_EPS

    right = hist.stable_threshold
    monkeypatch.setattr(hist, "stable_threshold", lambda *args: 1.0 + (right(*args) - 1.0) / 2)
    t0 = _membership(d0, 9, AUDIT_RUNS, 12, **kw)
    t1 = _membership(d1, 9, AUDIT_RUNS, 13, **kw)
    assert threshold_epsilon_lower_bound(t0, t1, 0.5, AUDIT_DELTA, ALPHA) > AUDIT_EPS


def test_stable_histogram_without_threshold_is_flagged(monkeypatch):
    # Power: with the threshold removed, bin 9 is reported in every run on D' and never on D.
    monkeypatch.setattr(hist, "stable_threshold", lambda *args: -math.inf)
    d0 = np.r_[0, np.full(100, 5)]
    d1 = np.r_[9, np.full(100, 5)]
    t0 = _membership(d0, 9, 2000, 14, epsilon=AUDIT_EPS, delta=AUDIT_DELTA)
    t1 = _membership(d1, 9, 2000, 15, epsilon=AUDIT_EPS, delta=AUDIT_DELTA)
    assert threshold_epsilon_lower_bound(t0, t1, 0.5, AUDIT_DELTA, ALPHA) > AUDIT_EPS


def _count_statistic(bins: np.ndarray, n_runs: int, seed: int, epsilon: float) -> np.ndarray:
    """T = min(c_9 - 101, 99 - c_0): positive iff bin 9's noisy count >= 101 and bin 0's <= 99."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_runs)
    for i in range(n_runs):
        kept = stable_histogram(bins, epsilon=epsilon, delta=1e-6, random_state=rng)
        out[i] = min(kept.get(9, -np.inf) - 101.0, 99.0 - kept.get(0, np.inf))
    return out


@pytest.mark.parametrize("run_epsilon,flagged", [(1.0, False), (2.0, True)])
def test_stable_histogram_noise_audit(run_epsilon, flagged):
    # Worst case for the Laplace noise (replace-one): D = 100 values in bin 0 and 100 in bin 9, D'
    # moves one from bin 0 to bin 9. The event {c_9 >= 101, c_0 <= 99} has probability 1/4 under D'
    # and e^{-epsilon} / 4 under D: the likelihood ratio is exactly e^epsilon, so this audit is tight.
    # Claim epsilon = 1 (delta = 1e-6). Run at epsilon = 1 it must pass (FPR alpha = 1e-3); run at
    # epsilon = 2 (half the Laplace scale) it must be flagged (expected bound ~1.8).
    d0 = np.r_[np.full(100, 0), np.full(100, 9)]
    d1 = np.r_[np.full(99, 0), np.full(101, 9)]
    t0 = _count_statistic(d0, AUDIT_RUNS, 20, run_epsilon)
    t1 = _count_statistic(d1, AUDIT_RUNS, 21, run_epsilon)
    bound = threshold_epsilon_lower_bound(t0, t1, 0.0, 1e-6, ALPHA)
    assert (bound > 1.0) is flagged, bound
    if not flagged:
        assert bound > 0.8  # close to the claim: the audit is sharp enough to mean something


def test_stable_histogram_event():
    ev = stable_histogram_event(0.5, 1e-6)
    assert isinstance(ev, EpsilonDeltaDpEvent)
    assert epsilon_of(ev, 1e-6) == pytest.approx(0.5)  # certified at exactly its own delta
    assert epsilon_of(ev, 1e-3) == pytest.approx(0.5)
    assert epsilon_of(ev, 1e-7) == math.inf


# ---------------------------------------------------------------------------------------------
# accounting: ParallelDpEvent, EpsilonDeltaDpEvent, Laplace with Gaussian

G = dp_accounting.GaussianDpEvent
L = dp_accounting.LaplaceDpEvent
DELTA = 1e-6


def test_parallel_epsilon_is_the_worst_branch():
    assert epsilon_of(ParallelDpEvent([L(2.0), L(0.25)]), DELTA) == pytest.approx(4.0)
    a, b = G(3.0), G(1.5)
    assert epsilon_of(ParallelDpEvent([a, b]), DELTA) == pytest.approx(epsilon_of(b, DELTA))
    assert epsilon_of(ParallelDpEvent([a, b]), DELTA) < epsilon_of(dp_accounting.ComposedDpEvent([a, b]),
                                                                   DELTA)
    # mixed kinds: each branch by its own accountant
    mixed = ParallelDpEvent([L(1 / 0.3), EpsilonDeltaDpEvent(0.6, 1e-7), G(4.0)])
    expected = max(0.3, 0.6, epsilon_of(G(4.0), DELTA))
    assert epsilon_of(mixed, DELTA) == pytest.approx(expected)


def test_parallel_inside_compositions():
    a, b, c = G(3.0), G(1.5), G(2.0)
    # composed with a common release: the worst branch together with it
    ev = dp_accounting.ComposedDpEvent([ParallelDpEvent([a, b]), c])
    assert epsilon_of(ev, DELTA) == pytest.approx(epsilon_of(dp_accounting.ComposedDpEvent([b, c]), DELTA))
    # repeated: the changed row meets one branch per repetition, the worst is b every time
    ev = dp_accounting.SelfComposedDpEvent(ParallelDpEvent([a, b]), 3)
    assert epsilon_of(ev, DELTA) == pytest.approx(epsilon_of(dp_accounting.SelfComposedDpEvent(b, 3), DELTA))
    # a report holding the parallel event among others (a sequence is composed)
    assert epsilon_of([ParallelDpEvent([a, b]), c], DELTA) == pytest.approx(
        epsilon_of(dp_accounting.ComposedDpEvent([b, c]), DELTA))


def test_parallel_expansion_beyond_the_cap_is_a_sound_upper_bound():
    a, b = G(30.0), G(20.0)
    count = MAX_PARALLEL_EXPANSIONS + 10  # more multisets than the cap: all branches composed
    ev = dp_accounting.SelfComposedDpEvent(ParallelDpEvent([a, b]), count)
    worst = epsilon_of(dp_accounting.SelfComposedDpEvent(b, count), DELTA)
    everything = epsilon_of(dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(a, count), dp_accounting.SelfComposedDpEvent(b, count)]), DELTA)
    got = epsilon_of(ev, DELTA)
    assert got >= worst and got == pytest.approx(everything)


def test_parallel_cannot_be_sampled():
    ev = dp_accounting.PoissonSampledDpEvent(0.1, ParallelDpEvent([G(1.0), G(2.0)]))
    with pytest.raises(ValueError, match="cannot be nested"):
        epsilon_of(ev, DELTA)


def test_epsilon_delta_events_compose_by_basic_composition():
    e1, e2 = EpsilonDeltaDpEvent(0.3, 1e-7), EpsilonDeltaDpEvent(0.2, 2e-7)
    both = dp_accounting.ComposedDpEvent([e1, e2])
    assert epsilon_of(both, 1e-6) == pytest.approx(0.5)
    assert epsilon_of(both, 3e-7) == pytest.approx(0.5)  # exactly the summed delta
    assert epsilon_of(both, 2.9e-7) == math.inf  # less delta than the parts use
    assert epsilon_of(dp_accounting.SelfComposedDpEvent(e1, 5), 5e-7) == pytest.approx(1.5)
    # with a Gaussian: sum of epsilons + the Gaussian's epsilon at the remaining delta
    s = 2.0
    mixed = dp_accounting.ComposedDpEvent([e1, G(s)])
    assert epsilon_of(mixed, DELTA) == pytest.approx(0.3 + epsilon_of(G(s), DELTA - 1e-7))
    # with a pure Laplace part that takes no delta: finite even when the parts use all of delta
    pure = dp_accounting.ComposedDpEvent([EpsilonDeltaDpEvent(0.3, DELTA), L(2.0)])
    assert epsilon_of(pure, DELTA) == pytest.approx(0.8)
    # and the Gaussian needs some delta
    assert epsilon_of(dp_accounting.ComposedDpEvent([EpsilonDeltaDpEvent(0.3, DELTA), G(s)]), DELTA) \
        == math.inf


@pytest.mark.parametrize("lap,gauss", [(1e-4, 1.0), (1e-5, 1e-3)])
def test_laplace_with_gaussian_tiny_multipliers_is_fast(lap, gauss):
    ev = dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(L(lap), 3), G(gauss)])
    t = time.perf_counter()
    eps = epsilon_of(ev, DELTA)
    assert time.perf_counter() - t < 1.0
    # basic composition: the Laplace parts as pure epsilon plus the exact Gaussian epsilon
    assert eps == pytest.approx(3 / lap + epsilon_of(G(gauss), DELTA))


def test_laplace_fallback_is_no_smaller_than_the_pld_answer():
    # A Laplace multiplier just under the PLD floor (0.05): the fast fallback (basic composition) must
    # be a sound upper bound on the PLD value, which is still computable here (about a second).
    ev = dp_accounting.ComposedDpEvent([L(0.04), G(0.5)])
    fast = epsilon_of(ev, 1e-5)
    pld = epsilon_of(ev, 1e-5, accounting="pld")
    assert fast >= pld
    assert fast == pytest.approx(1 / 0.04 + epsilon_of(G(0.5), 1e-5))
    assert fast - pld < 1.0  # and not absurdly loose
