"""The draws other than additive noise, from integer bits: each against its exact law.

Uniform integers, permutations, Bernoulli(q) (Poisson sampling) and the exponential mechanism of
:mod:`dpspectral.privacy._draws`, then the releases that use them (``private_select``, ``dp_spca``,
``minibatch_oja``): reproducible from the seed, the float opt-in drawing NumPy's draws as before, and the
same accounting events whatever the source.

Statistical tests are seeded (deterministic); each chi-square test rejects at p < 1e-6, so a correct
sampler fails it with probability 1e-6 over the seeds (twelve such checks here: about 1e-5 in all). The
power checks beside them (a slightly wrong law rejected at the same draws) show that the tests can fail.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpspectral
from dpspectral import dp_spca, minibatch_oja
from dpspectral.model_selection import private_select
from dpspectral.privacy import _discrete
from dpspectral.privacy import _draws as _draws_module
from dpspectral.privacy._accounting import EpsilonDeltaDpEvent
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._draws import (
    GeneratorRawWords,
    below,
    bernoulli,
    exponential_choice,
    permutation,
    poisson_sample,
    word_source,
)
from dpspectral.privacy._histogram import laplace_histogram_mode
from dpspectral.privacy._noise import ExactNoise, SecureNoise, SeededNoise
from dpspectral.privacy._noise_base import NoiseSource
from dpspectral.privacy._pipeline import ReleasePlan, Releaser

P_MIN = 1e-6
N_DRAWS = 100_000


def _words(seed: int) -> GeneratorRawWords:
    return GeneratorRawWords(np.random.default_rng(seed))


def _pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    probs = np.asarray(probs, dtype=float)
    return float(stats.chisquare(counts, probs / probs.sum() * counts.sum()).pvalue)


# --- uniform integers and permutations ------------------------------------------------------------


def test_below_is_uniform_without_modulo_bias():
    m = 3 * 2**61  # masked rejection: a modulus would favour the low third, which is tested here
    draws = below(_words(0), np.full(N_DRAWS, m))
    assert draws.min() >= 0 and draws.max() < m
    thirds = np.bincount((draws // 2**61).astype(np.int64), minlength=3)
    assert _pvalue(thirds, np.ones(3)) > P_MIN
    small = np.bincount(below(_words(1), np.full(N_DRAWS, 7)), minlength=7)
    assert small.size == 7 and _pvalue(small, np.ones(7)) > P_MIN
    assert _pvalue(small, np.r_[1.1, np.ones(6)]) < P_MIN  # power: a 10% bias on one value is seen


def test_permutation_is_uniform_over_all_orders():
    src = _words(2)
    orders = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24, dtype=np.int64)
    for _ in range(N_DRAWS):
        counts[orders[tuple(permutation(src, 4).tolist())]] += 1
    assert _pvalue(counts, np.ones(24)) > P_MIN
    # the first position alone: uniform, and a 2% tilt would be rejected
    first = np.array([counts[[orders[p] for p in orders if p[0] == v]].sum() for v in range(4)])
    assert _pvalue(first, np.ones(4)) > P_MIN
    assert _pvalue(first, np.r_[1.04, np.ones(3)]) < P_MIN


def _naive_shuffle_law(n):
    """The law of the classic mistake: position i swapped with j uniform in [0, n) (not [0, i])."""
    law = {}
    for js in itertools.product(range(n), repeat=n):
        order = list(range(n))
        for i, j in zip(range(n - 1, -1, -1), js, strict=True):
            order[i], order[j] = order[j], order[i]
        law[tuple(order)] = law.get(tuple(order), 0) + 1
    return law


def test_permutation_of_five_is_uniform_over_all_120_orders():
    """Every one of the 5! orders (about 500 draws each): chi-square at p < 1e-6 (false-positive rate
    1e-6, seeded). Power: the same counts reject the law of the naive shuffle (j uniform in [0, n))."""
    src = _words(12)
    perms = list(itertools.permutations(range(5)))
    index = {p: i for i, p in enumerate(perms)}
    counts = np.zeros(len(perms), dtype=np.int64)
    for _ in range(60_000):
        p = permutation(src, 5)
        assert p.dtype == np.int64
        counts[index[tuple(p.tolist())]] += 1
    assert counts.size == 120 and counts.min() > 0
    assert _pvalue(counts, np.ones(120)) > P_MIN
    naive = _naive_shuffle_law(5)
    assert _pvalue(counts, np.array([naive[p] for p in perms], dtype=float)) < P_MIN


def test_permutation_swaps_position_i_with_the_uniform_integer_drawn_for_it():
    """The compiled swaps are Fisher-Yates on below(i + 1) for i = n-1, ..., 1, in that order."""
    n = 1000
    swaps = below(_words(13), np.arange(n, 1, -1)).tolist()
    order = list(range(n))
    for i, j in zip(range(n - 1, 0, -1), swaps, strict=True):
        order[i], order[j] = order[j], order[i]
    assert np.array_equal(permutation(_words(13), n), order)


def test_permutation_of_many_rows_is_a_permutation():
    p = permutation(_words(3), 10_001)
    assert p.dtype == np.int64 and np.array_equal(np.sort(p), np.arange(10_001))
    assert not np.array_equal(p, np.arange(10_001))
    assert permutation(_words(3), 1).tolist() == [0] and permutation(_words(3), 0).size == 0


# --- Bernoulli(q) and Poisson samples ----------------------------------------------------------------


@pytest.mark.parametrize("q", [0.3, 1 / 3 + 2.0**-52, 0.01])
def test_bernoulli_has_probability_q(q):
    n = 10 * N_DRAWS
    hits = int(bernoulli(_words(4), q, n).sum())
    assert _pvalue(np.array([hits, n - hits]), np.array([q, 1 - q])) > P_MIN
    off = q * 1.1  # power: a probability 10% off is rejected
    assert _pvalue(np.array([hits, n - hits]), np.array([off, 1 - off])) < P_MIN


class _ScriptedWords:
    """Words given in advance (to reach the comparison's later digits, probability 2**-64 each)."""

    def __init__(self, words):
        self._words = list(words)

    def words(self, n):
        out, self._words = self._words[:n], self._words[n:]
        assert len(out) == n, "more words read than scripted"
        return np.array(out, dtype=np.uint64)


def test_bernoulli_decides_a_tie_on_the_first_word_with_the_next_digits():
    q = Fraction(2**52 + 1, 2**80)  # a float whose binary digits run past the first 64
    assert Fraction(float(q)) == q
    head, second = 2**36, 2**48  # q = (2**36 + 2**-16) 2**-64: its first two 64-digit words
    assert q == Fraction(head, 2**64) + Fraction(second, 2**128)
    # V's first word equals q's first 64 digits: the second word decides
    assert bernoulli(_ScriptedWords([head, second - 1]), float(q), 1).tolist() == [True]
    assert bernoulli(_ScriptedWords([head, second + 1]), float(q), 1).tolist() == [False]
    # V's digits equal all of q's (its expansion ends there): V >= q, not below it
    assert bernoulli(_ScriptedWords([head, second]), float(q), 1).tolist() == [False]
    assert bernoulli(_ScriptedWords([head - 1, head + 1]), float(q), 2).tolist() == [True, False]


def test_poisson_sample_keeps_each_row_with_probability_q():
    n, q, reps = 1000, 0.05, 200
    src = _words(5)
    per_row = np.zeros(n, dtype=np.int64)
    sizes = []
    for _ in range(reps):
        idx = poisson_sample(src, n, q)
        assert np.all(np.diff(idx) > 0) and idx.min(initial=0) >= 0 and idx.max(initial=0) < n
        per_row[idx] += 1
        sizes.append(idx.size)
    # N_DRAWS row decisions in all: per-row counts are independent binomials (chi-square over rows)
    expected = reps * q
    chi2 = float((((per_row - expected) ** 2) / (expected * (1 - q))).sum())
    assert stats.chi2.sf(chi2, n) > P_MIN
    assert sum(sizes) / (n * reps) == pytest.approx(q, rel=0.05)
    assert poisson_sample(src, 5, 1.0).tolist() == [0, 1, 2, 3, 4]
    assert poisson_sample(src, 5, 0.0).size == 0


# --- the exponential mechanism -------------------------------------------------------------------


def _choices(src, scores, scale, n):
    return np.array([exponential_choice(src, scores, scale) for _ in range(n)])


def test_exponential_choice_has_the_exponential_mechanisms_law():
    scores = np.array([0.0, 1.0, 2.5, -3.0, 2.4])
    scale = 1.3
    picks = _choices(_words(6), scores, scale, N_DRAWS)
    law = np.exp((scores - scores.max()) / scale)
    counts = np.bincount(picks, minlength=scores.size)
    assert _pvalue(counts, law) > P_MIN
    sharper = np.exp(1.05 * (scores - scores.max()) / scale)
    assert _pvalue(counts, sharper) < P_MIN


def test_exponential_choice_with_the_exact_fallback_forced(monkeypatch):
    # a band of relative width 1/8 sends about a tenth of the decisions to the rational comparison of
    # further digits (the path a float decision takes with probability about 2**-32)
    monkeypatch.setattr(_discrete, "_MARGIN", 0.125)
    fallbacks = []
    less_exp = _discrete._LazyUniform.less_exp
    monkeypatch.setattr(_discrete._LazyUniform, "less_exp",
                        lambda self, x: fallbacks.append(x) or less_exp(self, x))
    scores, scale = np.array([0.0, 0.7, -0.4]), 0.9
    picks = _choices(_words(7), scores, scale, 20_000)
    assert len(fallbacks) > 2000
    counts = np.bincount(picks, minlength=3)
    assert _pvalue(counts, np.exp(scores / scale)) > P_MIN
    assert _pvalue(counts, np.exp(1.2 * scores / scale)) < P_MIN


def test_exponential_choice_at_extreme_scores():
    src = _words(8)
    # the difference overflows in float64 but the exact weights are exp(0) and exp(-2)
    big = np.array([1e308, -1e308])
    picks = _choices(src, big, 1e308, 4000)
    assert 0 < picks.sum() < 4000  # the second candidate keeps its weight exp(-2) / (1 + exp(-2))
    assert abs(picks.mean() - math.exp(-2) / (1 + math.exp(-2))) < 0.03
    assert _choices(src, np.array([0.0, -1e6]), 1.0, 200).tolist() == [0] * 200
    assert exponential_choice(src, np.array([5.0]), 1.0) == 0
    with pytest.raises(ValueError, match="finite"):
        exponential_choice(src, np.array([0.0, np.nan]), 1.0)


# --- the sources ----------------------------------------------------------------------------------------


def test_each_source_draws_from_its_own_bits():
    assert word_source(SeededNoise(np.random.default_rng(0))) is None  # the float opt-in: NumPy's draws
    exact = word_source(ExactNoise(np.random.default_rng(9)))
    assert np.array_equal(exact.words(4), _words(9).words(4))  # the seeded generator's words
    secure = word_source(SecureNoise(bits=random.Random(1)))
    bits = random.Random(1)
    assert np.array_equal(secure.words(3), np.array([bits.getrandbits(64) for _ in range(3)],
                                                    dtype=np.uint64))
    assert isinstance(word_source(SecureNoise()), _discrete.SystemWords)


# --- the releases -------------------------------------------------------------------------------------


def _select(random_state):
    scores = [0.0, 0.5, 1.0, 0.2]
    return private_select(list(range(4)), lambda c: scores[c], epsilon=2.0, sensitivity=1.0,
                          random_state=random_state)


def test_private_select_is_reproducible_and_keeps_its_event():
    runs = [_select(s).index for s in range(30)]
    assert runs == [_select(s).index for s in range(30)]  # the same seed: the same choice
    assert len(set(runs)) > 1
    exact, secure = _select(3), _select("secure")
    with dpspectral.config_context(noise="float"):
        floating = _select(3)
    events = [r.privacy.events for r in (exact, secure, floating)]
    assert events[0] == events[1] == events[2] == (EpsilonDeltaDpEvent(2.0, 0.0),)
    assert [r.privacy.noise_source for r in (exact, secure, floating)] == ["exact", "secure", "float"]


def test_private_select_under_the_float_source_draws_numpys_gumbel_noise():
    scores = np.array([0.0, 0.5, 1.0, 0.2])
    with dpspectral.config_context(noise="float"):
        picks = [_select(np.random.default_rng(s)).index for s in range(40)]
    # report-noisy-max with the generator's Gumbel draws, at scale 2 Delta / epsilon = 1
    expected = [int(np.argmax(scores + np.random.default_rng(s).gumbel(0.0, 1.0, 4))) for s in range(40)]
    assert picks == expected


def _spca(random_state):
    X = np.random.default_rng(0).standard_normal((200, 6))
    return dp_spca(X, 2, epsilon=1.0, delta=1e-5, row_norm=3.0, sampling_rate=0.1, n_steps=3,
                   adaptive_clip=False, random_state=random_state)


def test_poisson_sampled_release_is_reproducible_and_keeps_its_events():
    a, b = _spca(11), _spca(11)
    assert np.array_equal(a.components, b.components)
    with dpspectral.config_context(noise="float"):
        floating = _spca(11)
    assert a.privacy.events == floating.privacy.events
    assert a.privacy.noise_source == "exact" and floating.privacy.noise_source == "float"


def test_permuted_release_is_reproducible_and_keeps_its_events(monkeypatch):
    X = np.random.default_rng(1).standard_normal((300, 5))
    orders = []
    real = _draws_module.permutation
    monkeypatch.setattr(_draws_module, "permutation", lambda src, n: orders.append(n) or real(src, n))

    def run(seed):
        return minibatch_oja(X, 2, epsilon=1.0, delta=1e-5, row_norm=2.0, adaptive_clip=False,
                             random_state=seed)

    a, b = run(5), run(5)
    assert orders == [300, 300]  # the secret order of the rows: the exact permutation, once a run
    assert np.array_equal(a.components, b.components)
    with dpspectral.config_context(noise="float"):
        floating = run(5)
    assert orders == [300, 300]  # the float source keeps NumPy's permutation
    assert a.privacy.events == floating.privacy.events


def test_secure_releaser_draws_its_permutation_from_the_secure_bits():
    plan = ReleasePlan("test", Relation.REPLACE_ONE, ())
    releaser = Releaser(plan, SecureNoise(bits=random.Random(3)))
    expected = permutation(word_source(SecureNoise(bits=random.Random(3))), 50)
    assert np.array_equal(releaser.permutation(50), expected)


class _FlatCounts(NoiseSource):
    """An exact-named source that adds nothing: every bin of a histogram ties, to test the tie break."""

    name = "exact"

    def __init__(self, seed):
        self.generator = np.random.default_rng(seed)

    def add_laplace_each(self, values, scale, sensitivity=None):
        return np.asarray(values, dtype=float)


def test_a_tie_of_noisy_counts_is_broken_uniformly_from_the_words():
    noise = _FlatCounts(12)
    # 20,000 draws (each a full histogram release); the law of the integer draw itself is tested at 10^5
    wins = np.array([laplace_histogram_mode(np.array([], dtype=np.int64), 3, 7, scale=1.0,
                                            random_state=noise, sensitivity=1.0)[0] for _ in range(20_000)])
    counts = np.bincount(wins - 3, minlength=5)
    assert counts.size == 5 and _pvalue(counts, np.ones(5)) > P_MIN
    assert _pvalue(counts, np.r_[1.15, np.ones(4)]) < P_MIN


@pytest.mark.parametrize("epsilon, monotone", [(3.0, False), (0.7, True), (2.0, False)])
def test_selection_scale_is_never_below_the_charged_one(monkeypatch, epsilon, monotone):
    scales = []
    monkeypatch.setattr(Releaser, "exponential_choice", lambda self, scores, scale: scales.append(scale) or 0)
    private_select([0, 1], lambda c: float(c), epsilon=epsilon, sensitivity=1.0, monotone=monotone,
                   random_state=0)
    real = Fraction(1 if monotone else 2) / Fraction(epsilon)
    (scale,) = scales
    assert Fraction(scale) >= real  # the law drawn is at most as sharp as the one charged
    assert Fraction(math.nextafter(scale, 0.0)) < real  # and the nearest float that is
