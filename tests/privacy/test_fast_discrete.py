"""The fast discrete samplers against their exact laws (chi-square and Kolmogorov-Smirnov).

Every test is seeded; each statistical assertion rejects a correct sampler with probability at most
``ALPHA = 1e-4`` (chi-square: exactly, asymptotically; KS on a discrete law: at most, the test is
conservative there), and each has a negative control that must be rejected at the same level.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpspectral.privacy import _discrete
from dpspectral.privacy._discrete import (
    GeneratorWords,
    SystemWords,
    discrete_gaussian_array,
    discrete_laplace_array,
)

ALPHA = 1e-4
N = 10**6


def _pmf(log_weight, support: np.ndarray) -> np.ndarray:
    w = np.exp(log_weight(support.astype(np.float64)) - log_weight(np.zeros(1))[0])
    return w / w.sum()


def _gauss(sigma: float):
    return lambda x: -x * x / (2.0 * sigma * sigma)


def _laplace(scale: float):
    return lambda x: -np.abs(x) / scale


def _support(width: float) -> np.ndarray:
    half = int(math.ceil(40 * width)) + 5  # mass beyond 40 scales is below 1e-300
    return np.arange(-half, half + 1)


def _chi2_p(samples: np.ndarray, log_weight, width: float) -> float:
    """Chi-square p-value of integer samples against the law ``exp(log_weight)`` (cells of >= 20)."""
    support = _support(width)
    pmf = _pmf(log_weight, support)
    counts = np.bincount(samples - support[0], minlength=support.size)
    if counts.size > support.size:  # a draw outside 40 scales: impossible under the law
        return 0.0
    expected = pmf * samples.size
    # merge cells from both tails inwards until each has an expected count >= 20
    edges = np.cumsum(expected)
    cell = np.floor(edges / 20.0).astype(np.int64)
    cell = np.minimum(cell, cell[-1] - 1) if cell[-1] > 0 else cell
    obs = np.bincount(cell, weights=counts)
    exp_ = np.bincount(cell, weights=expected)
    keep = exp_ > 0
    return float(stats.chisquare(obs[keep], exp_[keep] * obs.sum() / exp_[keep].sum()).pvalue)


def _ks_p(samples: np.ndarray, log_weight, width: float) -> float:
    """Kolmogorov-Smirnov p-value against the discrete law (conservative for a discrete law)."""
    support = _support(width)
    cdf = np.cumsum(_pmf(log_weight, support))
    values, counts = np.unique(samples, return_counts=True)
    ecdf = np.cumsum(counts) / samples.size
    idx = values - support[0]
    upper = np.max(np.abs(ecdf - cdf[idx]))  # just after each atom
    below = np.concatenate(([0.0], ecdf[:-1]))
    lower = np.max(np.abs(below - np.where(idx > 0, cdf[idx - 1], 0.0)))  # just before each atom
    return float(stats.kstwo.sf(max(upper, lower), samples.size))


class _SeededBulkWords:
    """Words in bulk, as the OS source gives them, but from a seeded generator (reproducible)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def words(self, n: int) -> np.ndarray:
        return self._rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


# 1000 and 100001/3: proposals with low bits (j = 3 and j = 9) above the 64 of the integer tables
WIDTHS = [Fraction(1, 2), Fraction(1), Fraction(3), Fraction(50), Fraction(1000), Fraction(100001, 3)]


@pytest.mark.parametrize("sigma", WIDTHS)
def test_fast_discrete_gaussian_follows_its_law(sigma: Fraction) -> None:
    x = discrete_gaussian_array(sigma, N, GeneratorWords(np.random.default_rng(int(sigma * 10))))
    s = float(sigma)
    assert _chi2_p(x, _gauss(s), s) > ALPHA
    assert _ks_p(x, _gauss(s), s) > ALPHA
    # negative controls: 1% wider for the chi-square up to 50 (its cells get too many to resolve 1%
    # beyond), 3% wider for KS everywhere (10^6 draws resolve both)
    assert s > 50 or _chi2_p(x, _gauss(1.01 * s), s) < ALPHA
    assert _ks_p(x, _gauss(1.03 * s), s) < ALPHA


@pytest.mark.parametrize("scale", WIDTHS)
def test_fast_discrete_laplace_follows_its_law(scale: Fraction) -> None:
    x = discrete_laplace_array(scale, N, GeneratorWords(np.random.default_rng(int(scale * 10) + 1)))
    b = float(scale)
    assert _chi2_p(x, _laplace(b), b) > ALPHA
    assert _ks_p(x, _laplace(b), b) > ALPHA
    assert b > 50 or _chi2_p(x, _laplace(1.03 * b), b) < ALPHA  # negative controls: 3% wider
    assert _ks_p(x, _laplace(1.03 * b), b) < ALPHA


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize("width", [Fraction(2**30 + 12345), Fraction(2**31 - 1)])
@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_fast_samplers_at_the_release_scale(kind: str, width: Fraction, bulk: bool) -> None:
    """At ``2**30`` grid steps the law, scaled by its width, is the continuous one to within 1e-9 in
    its distribution function, far below what 10^6 draws resolve (KS at 1e-3): a scaled check, on the
    per-value streams and on the bulk-word path the OS source takes."""
    seed = 11 if kind == "gaussian" else 12
    src = _SeededBulkWords(seed) if bulk else GeneratorWords(np.random.default_rng(seed))
    draw = discrete_gaussian_array if kind == "gaussian" else discrete_laplace_array
    z = draw(width, N, src) / float(width)
    law = stats.norm() if kind == "gaussian" else stats.laplace()
    assert stats.kstest(z, law.cdf).pvalue > ALPHA
    wider = stats.norm(scale=1.02) if kind == "gaussian" else stats.laplace(scale=1.02)
    assert stats.kstest(z, wider.cdf).pvalue < ALPHA


def test_operating_system_bits_give_the_same_law() -> None:
    """OS entropy cannot be seeded: each assertion fails a correct sampler with probability ALPHA."""
    x = discrete_gaussian_array(Fraction(3), N, SystemWords())
    assert _chi2_p(x, _gauss(3.0), 3.0) > ALPHA
    assert _ks_p(x, _gauss(3.0), 3.0) > ALPHA
    y = discrete_laplace_array(Fraction(3), N, SystemWords())
    assert _chi2_p(y, _laplace(3.0), 3.0) > ALPHA
    assert _ks_p(y, _laplace(3.0), 3.0) > ALPHA


@pytest.mark.parametrize("width", [Fraction(7, 3), Fraction(40)])
def test_the_bulk_word_path_follows_the_law(width: Fraction) -> None:
    """The path the OS source takes (one round per pending value a pass), seeded so it is reproducible."""
    w = float(width)
    x = discrete_gaussian_array(width, N, _SeededBulkWords(21))
    assert _chi2_p(x, _gauss(w), w) > ALPHA and _ks_p(x, _gauss(w), w) > ALPHA
    assert _chi2_p(x, _gauss(1.01 * w), w) < ALPHA
    y = discrete_laplace_array(width, N, _SeededBulkWords(22))
    assert _chi2_p(y, _laplace(w), w) > ALPHA and _ks_p(y, _laplace(w), w) > ALPHA
    assert _chi2_p(y, _laplace(1.03 * w), w) < ALPHA


@pytest.mark.parametrize("draw", [discrete_gaussian_array, discrete_laplace_array])
@pytest.mark.parametrize("width", [Fraction(3), Fraction(2**30 + 12345)])
def test_the_draws_do_not_depend_on_how_they_are_split_into_calls(draw, width: Fraction) -> None:
    n = 50_000
    whole = draw(width, n, GeneratorWords(np.random.default_rng(8)))
    cuts = np.sort(np.random.default_rng(9).choice(np.arange(1, n), size=40, replace=False))
    src = GeneratorWords(np.random.default_rng(8))
    parts = [draw(width, b - a, src) for a, b in zip(np.r_[0, cuts], np.r_[cuts, n], strict=True)]
    assert np.array_equal(np.concatenate(parts), whole)
    assert not np.array_equal(draw(width, n, GeneratorWords(np.random.default_rng(10))), whole)


@pytest.mark.parametrize("end_hi", [2**36, 2**92])
def test_the_exact_path_of_the_geometric_part_keeps_the_law(monkeypatch: pytest.MonkeyPatch,
                                                            end_hi: int) -> None:
    """Short tables (ending at exp(-k rho) >= 2**-4) send about 1 value in 16 through the exact path:
    its 96-bit table, or (that one short as well) rational enclosures."""
    _discrete._table.cache_clear()
    monkeypatch.setattr(_discrete, "_TABLE_END", 2**28)
    monkeypatch.setattr(_discrete, "_TABLE_END_HI", end_hi)
    try:
        x = discrete_gaussian_array(Fraction(5, 2), 20_000, GeneratorWords(np.random.default_rng(6)))
        y = discrete_laplace_array(Fraction(7, 2), 20_000, GeneratorWords(np.random.default_rng(7)))
    finally:
        _discrete._table.cache_clear()
    assert _chi2_p(x, _gauss(2.5), 2.5) > ALPHA and _chi2_p(x, _gauss(3.5), 2.5) < ALPHA
    assert _chi2_p(y, _laplace(3.5), 3.5) > ALPHA and _chi2_p(y, _laplace(5.0), 3.5) < ALPHA


RHOS = [Fraction(1), Fraction(1, 3), Fraction(1, 64), Fraction(1, 68), Fraction(1, 128)]


@pytest.mark.parametrize("rho", RHOS)
def test_the_geometric_tables_are_the_exact_floors(rho: Fraction) -> None:
    table = _discrete._table(rho)[0]
    assert table[0] == 2**32 and table[-1] >= _discrete._TABLE_END > table[-1] * math.exp(-float(rho)) - 1
    for k in np.unique(np.linspace(1, table.size - 1, 25).astype(int)):
        lo, hi = _discrete._exp_neg_bounds(k * rho, 80)
        assert math.floor(lo * 2**32) == math.floor(hi * 2**32) == int(table[k])


def test_the_rational_enclosures_of_the_exponential() -> None:
    from decimal import Decimal, localcontext

    for x in [Fraction(0), Fraction(1, 3), Fraction(7, 2), Fraction(64), Fraction(2**40 + 1, 2**33)]:
        lo, hi = _discrete._exp_neg_bounds(x, 120)
        assert 0 <= hi - lo <= Fraction(1, 2**120)
        with localcontext() as ctx:
            ctx.prec = 80  # exp is correctly rounded: within 1e-79 relatively
            ref = Fraction((-Decimal(x.numerator) / Decimal(x.denominator)).exp())
        assert lo * (1 - Fraction(1, 10**70)) <= ref <= hi * (1 + Fraction(1, 10**70))
    lo, hi = _discrete._exp_neg_bounds(Fraction(1), 60)
    assert not lo <= Fraction(Decimal(-1.001).exp()) <= hi  # a different value is not enclosed


@pytest.mark.parametrize("rho", RHOS)
def test_the_high_tables_are_the_exact_floors(rho: Fraction) -> None:
    _, high = _discrete._table(rho)
    assert high[0] == 2**96 and high[-1] >= _discrete._TABLE_END_HI
    for k in np.unique(np.linspace(1, len(high) - 1, 15).astype(int)):
        lo, hi = _discrete._exp_neg_bounds(k * rho, 140)
        assert math.floor(lo * 2**96) == math.floor(hi * 2**96) == high[k]


def test_philox_matches_the_published_answers() -> None:
    """Random123's known-answer vectors for Philox4x32-10 (counter, key -> output, 32-bit lanes)."""
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((2**32 - 1,) * 4, (2**32 - 1,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for c, k, expected in cases:
        a, b = _discrete._philox_block(np.uint64(c[0] | c[1] << 32), np.uint64(c[2] | c[3] << 32),
                                       np.uint64(k[0]), np.uint64(k[1]))
        assert (int(a) & 0xFFFFFFFF, int(a) >> 32, int(b) & 0xFFFFFFFF, int(b) >> 32) == expected


def test_the_compiled_exponential_is_the_checked_one() -> None:
    x = np.random.default_rng(1).uniform(0, 64, 2000)
    compiled = np.array([_discrete._exp_neg1(v) for v in x])
    assert np.array_equal(compiled, _discrete._exp_neg(x))


@pytest.mark.parametrize("kind", ["exact", "secure"])
def test_every_released_value_lies_on_its_grid(kind: str) -> None:
    from dpspectral.privacy._noise import ExactNoise, SecureNoise, grid

    source = ExactNoise(np.random.default_rng(2)) if kind == "exact" else SecureNoise()
    statistic = np.random.default_rng(3).normal(size=(40, 30))
    for add, scale in ((source.add_gaussian, 0.7), (source.add_laplace, 3.1)):
        out = add(statistic, scale, sensitivity=1.0)
        steps = out / grid(scale)
        assert np.array_equal(steps, np.round(steps)) and not np.array_equal(out, statistic)
    sym = source.add_symmetric_gaussian(statistic[:30] @ statistic[:30].T, 0.7, sensitivity=1.0)
    assert np.array_equal(sym, sym.T)
    steps = sym[np.triu_indices(30)] / grid(0.7)
    assert np.array_equal(steps, np.round(steps))


def test_the_exact_fallback_keeps_the_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the float band made wide, about a tenth of the decisions go through the exact path."""
    monkeypatch.setattr(_discrete, "_MARGIN", 0.1)
    src = GeneratorWords(np.random.default_rng(5))
    x = discrete_gaussian_array(Fraction(5, 2), 10_000, src)
    assert _chi2_p(x, _gauss(2.5), 2.5) > ALPHA
    assert _chi2_p(x, _gauss(3.5), 2.5) < ALPHA
    y = discrete_laplace_array(Fraction(7, 2), 10_000, src)
    assert _chi2_p(y, _laplace(3.5), 3.5) > ALPHA
    assert _chi2_p(y, _laplace(5.0), 3.5) < ALPHA


def test_the_float_exponential_is_within_its_stated_bound() -> None:
    x = np.concatenate([np.linspace(0.0, 64.0, 20001), np.random.default_rng(0).uniform(0, 64, 20000)])
    # 180 bits: within 2**-80 relatively even at exp(-64) > 2**-93
    exact = np.array([float(sum(_discrete._exp_neg_bounds(Fraction(v), 180)) / 2) for v in x[::400]])
    assert np.max(np.abs(_discrete._exp_neg(x[::400]) / exact - 1.0)) < 2.0**-38


def test_same_seed_same_draws_and_the_seed_matters() -> None:
    a = discrete_gaussian_array(Fraction(7), 1000, GeneratorWords(np.random.default_rng(3)))
    b = discrete_gaussian_array(Fraction(7), 1000, GeneratorWords(np.random.default_rng(3)))
    c = discrete_gaussian_array(Fraction(7), 1000, GeneratorWords(np.random.default_rng(4)))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
