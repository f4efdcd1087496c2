"""Exact discrete Gaussian and discrete Laplace samplers, compiled (numba), for whole arrays at once.

The laws are those of Canonne, Kamath and Steinke (NeurIPS 2020): the discrete Laplace
``P(y) ~ exp(-|y| / b)`` and the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers,
for rational ``b`` and ``sigma``. Every draw is **exact**: the samples follow these laws exactly
(given uniform random bits), with no total-variation distance to account for. The pure-Python samplers
of :mod:`dpspectral.privacy._noise` remain the reference.

The bits
--------
A *word source* supplies uniform 64-bit words. :class:`GeneratorWords` (seeded): one stream per value
drawn, Philox4x32-10 keyed once from a seeded NumPy generator; a value reads only its own stream, so
the values do not depend on how they are split into calls. :class:`SystemWords`: the operating
system's CSPRNG (``os.urandom``), read in bulk, every bit OS entropy. The law is the same whatever the
source; only the stream differs.

The algorithm: rounds of rejection sampling
-------------------------------------------
Both laws are drawn by rejection from a discrete Laplace of integer scale ``T`` (CKS20 use
``T = ceil(sigma)``; any ``T > 0`` gives the Gaussian, any ``T >= b`` the Laplace of scale ``b``). ``T``
is the scale rounded (for the Laplace: up) to an integer up to 64, and above to a multiple of
``2**(e - 4)`` where ``2**e <= scale < 2**(e + 1)``, so that ``T`` is within 1/32 of the scale and the
proposal is a matter of bits. A *round* reads two fresh words ``wa, wb`` and either returns a value or
is rejected; rounds repeat until one returns a value, and since their words are fresh they are
independent trials.

* The magnitude ``M = N 2**j + L`` with ``j = max(e - 6, 0)`` (``j = 0`` up to 64) and ``rho = 2**j /
  T``, between 1/128 and 1: ``N = #{k >= 1 : V < exp(-k rho)}`` for the uniform ``V`` whose first 32
  binary digits are the high half of ``wa`` (so ``P(N >= k) = exp(-k rho)``: geometric), ``L`` uniform
  in ``[0, 2**j)`` from bits ``1..j`` of ``wa``, the sign from bit 0; ``M = 0`` with the minus sign is
  rejected.
* The round is accepted with probability ``exp(-x)``, ``x = L / T + g(M)``: ``g(M) = (M / sigma -
  sigma / T)**2 / 2`` for the Gaussian, ``g(M) = M (1 / b - 1 / T)`` for the Laplace (``T >= b``).

**Why the law is exact.** A round yields ``y`` (``|y| = M = n 2**j + L``, one sign for ``y = 0``)
with probability ``(1 - exp(-rho)) exp(-n rho) 2**-j / 2 * exp(-L / T) exp(-g(M))``, and ``n rho +
L / T = M / T``: proportional to ``exp(-M / T - g(M))``, which is ``exp(-y^2 / (2 sigma^2))`` times a
constant for the Gaussian and ``exp(-|y| / b)`` for the Laplace. So the first accepted round follows
the target law. The acceptance of ``exp(-L / T)`` folds the truncated-geometric low part of ``M`` into
the same Bernoulli as the target's correction: one Bernoulli per round, and a round is accepted with
probability about 0.75 for the Gaussian and above 0.9 for the Laplace at release scales.

Each decision is exact
----------------------
* ``N``: the comparisons ``V < exp(-k rho)`` are made with the integers ``t[k] = floor(exp(-k rho)
  2**32)``, tabulated exactly (integer enclosures of ``exp(-rho) 2**192`` raised to the ``k``-th power
  with outward rounding; ``exp(-k rho) 2**32`` is irrational, so its floor is decided once the two ends
  agree): ``V < exp(-k rho)`` surely when the prefix is below ``t[k]``, surely not when above. A float
  logarithm only says where to start looking. When the prefix equals the ``t[N + 1]`` that would
  decide (probability about ``2**-22`` a round at the release scale, where the table runs down to
  entries of 256), or lies beyond the table's end (``exp(-k rho) < 2**-24``), the round is *undecided*.
* The acceptance ``V' < exp(-x)``, ``V'`` with its first 53 digits the high bits of ``wb``:
  ``exp(-x)`` is evaluated in float64 as ``1 / P(x / 1024)**1024`` with ``P`` the degree-10 Taylor
  polynomial of ``exp`` (IEEE additions, multiplications and one division, each correctly rounded;
  no library function), and the comparison is decided from the 53 digits whenever ``V'``'s interval
  lies outside the band ``exp(-x) (1 +- 2**-33)``; otherwise (probability about ``2**-32``) the round
  is undecided. For ``x > 64`` the enclosure is ``[0, 2**-90]``.
* An undecided round is decided exactly in Python. For ``N``: 64 more digits of ``V`` (from the
  value's own stream, or the OS) and a second table, of ``floor(exp(-k rho) 2**96)`` down to
  ``exp(-k rho) >= 2**-60``, computed the same way. For the acceptance: first the float test above
  (a round is also undecided when only ``N`` was); inside the band, more digits of ``V'`` compared with
  rational enclosures of ``exp(-x)`` (integer arithmetic with outward rounding: the Taylor series of
  ``exp(x / 2**s)`` with its remainder bounded, inverted and squared ``s`` times), ``x`` computed in
  fractions, until the comparison is decided. The value's later rounds run there as well.

**Error bound.** The band must contain ``exp(-x)``. Write ``u = 2**-53``. *The argument:* ``L / T <= rho
<= 1`` is computed within ``2u``; for the Gaussian, with ``sigma`` and ``sigma / T`` rounded to float64
and ``sigma / T <= 2``, ``M / sigma - sigma / T`` is within ``43u`` of ``r`` and ``r^2 / 2`` within
``620u`` of its value when ``x <= 64`` (``|r| <= 11.32``); for the Laplace, ``1 / b - 1 / T`` is within
``3u / b``, and with ``M (1 / b - 1 / T) <= 64`` and ``M / T <= 18`` on the table, ``M (1 / b - 1 / T)``
is within ``310u``; the final sum adds ``64u``: in all ``x`` is within ``700u < 2**-43`` absolutely,
which moves ``exp(-x)`` by a relative ``2**-43``. *The polynomial:* with ``y = x / 1024 <= 1/16``
(exact), the truncation is below ``y**11 / 11! < 2**-69`` relatively; Horner's rule on positive terms
errs by at most ``21u``; each of the ten squarings doubles the relative error and adds ``u``, so
``P**1024`` is within ``1024 * 21u + 1023u < 2**-38.5``, and the reciprocal adds ``u``. Together below
``2**-38``, a factor 32 inside the band. For ``x_hat > 64``, ``x > 63`` and ``exp(-x) < 2**-90``.

Speed
-----
The rounds run in compiled loops (:func:`_draw_streams` generates each value's Philox blocks inline;
:func:`_draw_words` takes OS words in bulk, one round per pending value a pass). On the shared
benchmark machine, one core: about 1.3 x 10^7 discrete Gaussian and 1.8 x 10^7 discrete Laplace draws
a second at ``2**30`` grid steps from a seed (``docs/benchmarks/speed.md``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import cache
from typing import Any

import numba
import numpy as np

__all__ = ["GeneratorWords", "SystemWords", "discrete_array", "discrete_gaussian_array",
           "discrete_laplace_array"]

_U64 = np.uint64
_M32 = 0xFFFFFFFF

#: The float evaluation of ``exp(-x)`` on the fast path is within ``2**-38`` of the true value
#: relatively (module docstring); a comparison is decided from 53 bits only outside a band of relative
#: half-width ``2**-33`` around it.
_MARGIN = 2.0**-33
_COEFFS = [1.0 / math.factorial(k) for k in range(10, -1, -1)]
#: The most bits of ``L`` (the low part of a proposal's magnitude) handled: scales below ``2**37``.
_J_MAX = 31
#: The compiled rounds' geometric table ends where ``exp(-k rho) 2**32`` falls below ``2**8``, the exact
#: path's where ``exp(-k rho) 2**96`` falls below ``2**36`` (``exp(-k rho) < 2**-60``).
_TABLE_END = 1 << 8
_TABLE_END_HI = 1 << 36


# --- the bits -----------------------------------------------------------------------------------------


class GeneratorWords:
    """Per-value streams of uniform 64-bit words, reproducible from a NumPy generator (Philox4x32-10).

    The first time it is used it reads one 64-bit key from the generator (its only draw from it). The
    values drawn through it are numbered ``0, 1, 2, ...`` in the order of the calls; block ``j`` of
    value ``g``, its words ``2j`` and ``2j + 1``, is the Philox4x32-10 output for the counter ``(g, j)``
    under that key (a counter-based generator: Salmon et al., SC 2011). Each value's draw reads only its
    own stream, so the draws do not depend on how the values are split between calls.
    """

    def __init__(self, generator: np.random.Generator) -> None:
        self._bits = generator.bit_generator
        self._key: tuple[int, int] | None = None
        self._next = 0  # the number of the next value

    def reserve(self, size: int) -> tuple[int, tuple[int, int]]:
        """The number of the first of ``size`` new values, and the key."""
        if self._key is None:
            key = int(self._bits.random_raw())
            self._key = (key & _M32, key >> 32)
        first, self._next = self._next, self._next + int(size)
        return first, self._key


class SystemWords:
    """Uniform 64-bit words from the operating system's CSPRNG (``os.urandom``), read in bulk."""

    def words(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * int(n)), dtype=_U64).copy()


@numba.njit(cache=True, nogil=True)
def _philox_block(g, j, k0, k1):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Philox4x32-10 of the counter ``(g, j)`` (two 64-bit halves) under the key ``(k0, k1)``.

    Returns the two 64-bit words ``lane0 | lane1 << 32`` and ``lane2 | lane3 << 32``.
    """
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    c0, c1, c2, c3 = g & m32, g >> s32, j & m32, j >> s32
    for _ in range(10):
        p0 = c0 * np.uint64(0xD2511F53)
        p1 = c2 * np.uint64(0xCD9E8D57)
        c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ k0, p1 & m32, (p0 >> s32) ^ c3 ^ k1, p0 & m32
        k0 = (k0 + np.uint64(0x9E3779B9)) & m32
        k1 = (k1 + np.uint64(0xBB67AE85)) & m32
    return c0 | (c1 << s32), c2 | (c3 << s32)


# --- exp(-x) in IEEE operations, with a proved error bound --------------------------------------------


def _exp_neg(x: np.ndarray) -> np.ndarray:
    """``exp(-x)`` for ``0 <= x <= 64`` from IEEE operations only: ``1 / P(x / 1024)**1024``.

    ``P`` is the Taylor polynomial of ``exp`` of degree 10 (positive terms, Horner's rule); ten
    squarings raise it to the 1024th power. Relative error below ``2**-38`` (module docstring). The
    compiled :func:`_exp_neg1` performs the same operations in the same order (the same results).
    """
    y = x * (1.0 / 1024.0)
    p = np.full_like(y, _COEFFS[0])
    for c in _COEFFS[1:]:
        p *= y
        p += c
    for _ in range(10):
        p *= p
    return 1.0 / p


_C = tuple(_COEFFS)


@numba.njit(cache=True, nogil=True)
def _exp_neg1(x):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """:func:`_exp_neg` of one float (the same IEEE operations in the same order)."""
    y = x * (1.0 / 1024.0)
    p = _C[0]
    for c in _C[1:]:
        p = p * y
        p = p + c
    for _ in range(10):
        p = p * p
    return 1.0 / p


def _exp_neg_bounds(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """Rational ``lo <= exp(-x) <= hi`` with ``hi - lo <= 2**-bits``, for a rational ``x >= 0``.

    Integer arithmetic with outward rounding in fixed point: ``y = x / 2**s <= 1/2``, the Taylor series of
    ``exp(y)`` summed until a term is at most one unit (the rest is below twice that term, the ratio of
    consecutive terms being at most 1/2), inverted, then squared ``s`` times.
    """
    s = 0
    while x > Fraction(1 << s, 2):
        s += 1
    y = x / (1 << s)
    num, den = y.numerator, y.denominator
    p = bits + s + 24
    while True:
        lo_sum = hi_sum = 0
        t_lo = t_hi = 1 << p
        k = 0
        while t_hi > 1:
            lo_sum, hi_sum = lo_sum + t_lo, hi_sum + t_hi
            k += 1
            t_lo, t_hi = t_lo * num // (den * k), -(-t_hi * num // (den * k))
        lo_sum, hi_sum = lo_sum + t_lo, hi_sum + 3 * t_hi  # the rest is below 2 t_hi
        lo, hi = (1 << 2 * p) // hi_sum, -(-(1 << 2 * p) // lo_sum)
        for _ in range(s):
            lo, hi = (lo * lo) >> p, -((-hi * hi) >> p)
        if (hi - lo) << bits <= 1 << p:
            return Fraction(lo, 1 << p), Fraction(hi, 1 << p)
        p += 32  # pragma: no cover - the precision above suffices


class _LazyUniform:
    """A uniform ``V`` in ``[0, 1)`` of which the first ``n_bits`` binary digits (``prefix``) are drawn;
    ``more()`` gives 64 further digits (a word of the value's stream)."""

    def __init__(self, prefix: int, n_bits: int, more: Callable[[], int]) -> None:
        self.prefix, self.n_bits, self.more = prefix, n_bits, more

    def less_exp(self, x: Fraction) -> bool:
        """Whether ``V < exp(-x)``, exactly: more digits are drawn until the enclosure decides."""
        while True:
            lo, hi = _exp_neg_bounds(x, self.n_bits + 8)
            if Fraction(self.prefix + 1, 1 << self.n_bits) <= lo:
                return True
            if Fraction(self.prefix, 1 << self.n_bits) >= hi:
                return False
            self.prefix = (self.prefix << 64) | self.more()
            self.n_bits += 64


# --- the geometric tables -----------------------------------------------------------------------------


@cache
def _table(rho: Fraction) -> tuple[np.ndarray, list[int]]:
    """The floors of ``exp(-k rho) 2**32`` and of ``exp(-k rho) 2**96``, from ``k = 0``.

    The first (uint64, for the compiled rounds) ends before the first entry below ``_TABLE_END``, the
    second (Python ints, for the exact path) before the first below ``_TABLE_END_HI``. Computed exactly:
    integer enclosures of ``exp(-rho) 2**192`` (from :func:`_exp_neg_bounds`) raised to the ``k``-th
    power with outward rounding; each floor is taken only where the two ends agree (``exp(-k rho)
    2**96`` is irrational, never an integer).
    """
    bits = 192
    one = 1 << bits
    lo1, hi1 = _exp_neg_bounds(rho, bits + 8)
    lo1_i, hi1_i = math.floor(lo1 * one), math.ceil(hi1 * one)
    lo, hi = one, one
    low, high = [1 << 32], [1 << 96]
    while True:
        lo, hi = (lo * lo1_i) >> bits, -((-hi * hi1_i) >> bits)
        f_lo, f_hi = lo >> (bits - 96), hi >> (bits - 96)
        if f_lo != f_hi:  # pragma: no cover - would need exp(-k rho) 2**96 within 2**-80 of an integer
            raise RuntimeError("a geometric table entry could not be decided")
        if f_lo < _TABLE_END_HI:
            return np.array(low, dtype=_U64), high
        high.append(f_lo)
        if len(low) == len(high) - 1 and f_lo >> 64 >= _TABLE_END:
            low.append(f_lo >> 64)


@numba.njit(cache=True, nogil=True)
def _count(u, table, rho):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``n = #{1 <= k <= K : table[k] > u}`` and whether ``N = #{k >= 1 : V < exp(-k rho)}`` equals it.

    ``V`` has the 32-bit prefix ``u``. For ``k <= n``, ``V < exp(-k rho)`` surely (``n`` is a sure lower
    bound of ``N``); ``N = n`` is sure when ``table[n + 1] < u`` (then ``V >= exp(-(n + 1) rho)``).
    The float logarithm only picks where to start looking.
    """
    last = table.shape[0] - 1
    guess = -math.log((float(u) + 0.5) * 2.0**-32) / rho
    n = int(min(max(guess, 0.0), float(last)))
    while n > 0 and table[n] <= u:
        n -= 1
    while n < last and table[n + 1] > u:
        n += 1
    return n, n < last and table[n + 1] < u


# --- one round: a proposal from a discrete Laplace of integer scale T, and one acceptance -----------


@numba.njit(cache=True, nogil=True)
def _round(wa, wb, j, table, rho, gauss, c1, c2, inv_t, margin):  # type: ignore[no-untyped-def]  # pragma: no cover
    """One round from two words: (0, 0) rejected, (1, y) accepted, (2, 0) undecided by 53 bits.

    ``N`` from the high 32 bits of ``wa``, ``L`` from its bits 1..j, the sign from bit 0; ``M = N 2**j +
    L``; ``V`` for the acceptance ``exp(-x)`` from the high 53 bits of ``wb``. Gaussian: ``x = L / T +
    (M / sigma - sigma / T)**2 / 2`` with ``c1 = sigma``, ``c2 = sigma / T``; Laplace: ``x = L / T + M
    c1`` with ``c1 = 1 / b - 1 / T``.
    """
    n, sure = _count(wa >> np.uint64(32), table, rho)
    if not sure:
        return 2, 0
    low = (wa >> np.uint64(1)) & ((np.uint64(1) << np.uint64(j)) - np.uint64(1))
    m = (np.int64(n) << np.int64(j)) | np.int64(low)
    negative = (wa & np.uint64(1)) == np.uint64(1)
    if m == 0 and negative:
        return 0, 0
    return _accept(m, low, negative, wb, gauss, c1, c2, inv_t, margin)


@numba.njit(cache=True, nogil=True)
def _accept(m, low, negative, wb, gauss, c1, c2, inv_t, margin):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The acceptance ``V' < exp(-x)`` of a round of magnitude ``m``, decided from 53 bits of ``wb``."""
    if gauss:
        r = float(m) / c1 - c2
        x = float(low) * inv_t + 0.5 * r * r
    else:
        x = float(low) * inv_t + float(m) * c1
    if x > 64.0:
        lo, hi = 0.0, 2.0**-90
    else:
        p = _exp_neg1(x)
        lo, hi = p * (1.0 - margin), p * (1.0 + margin)
    ub = float(wb >> np.uint64(11))
    if (ub + 1.0) * 2.0**-53 <= lo:
        return 1, -m if negative else m
    if ub * 2.0**-53 >= hi:
        return 0, 0
    return 2, 0


@numba.njit(cache=True, nogil=True)
def _draw_streams(out, start, first, k0, k1, law,  # type: ignore[no-untyped-def]
                  stuck, stuck_wa, stuck_wb, stuck_next):  # pragma: no cover - compiled
    """Values ``start, start + 1, ...`` (numbers ``first + i``) by rounds on their own streams (block
    ``r`` for round ``r``) until accepted; a value whose round is undecided is listed in ``stuck`` (with
    that round's words and the number of its next word) for the exact path. Stops when ``stuck`` is
    full; returns the number listed and the index of the next value to draw. ``law`` is
    :meth:`_Law.args`, the constants of :func:`_round`."""
    j, table, rho, gauss, c1, c2, inv_t, margin = law
    n_stuck = 0
    for i in range(start, out.shape[0]):
        if n_stuck == stuck.shape[0]:
            return n_stuck, i
        g = np.uint64(first + i)
        r = 0
        while True:
            wa, wb = _philox_block(g, np.uint64(r), k0, k1)
            r += 1
            code, y = _round(wa, wb, j, table, rho, gauss, c1, c2, inv_t, margin)
            if code == 1:
                out[i] = y
                break
            if code == 2:
                stuck[n_stuck] = i
                stuck_wa[n_stuck] = wa
                stuck_wb[n_stuck] = wb
                stuck_next[n_stuck] = 2 * r
                n_stuck += 1
                break
    return n_stuck, out.shape[0]


@numba.njit(cache=True, nogil=True)
def _draw_words(words, codes, ys, j, table, rho, gauss, c1, c2, inv_t, margin):  # type: ignore[no-untyped-def]  # pragma: no cover
    """One round for each row of ``words`` (two words each): ``codes`` and ``ys`` as :func:`_round`."""
    for i in range(words.shape[0]):
        codes[i], ys[i] = _round(words[i, 0], words[i, 1], j, table, rho, gauss, c1, c2, inv_t, margin)


# --- the laws -----------------------------------------------------------------------------------------


class _Law:
    """A target law as rejection from the discrete Laplace of integer scale ``T`` (module docstring);
    ``M = N 2**j + L``."""

    def __init__(self, gauss: bool, value: Fraction, T: int, j: int) -> None:
        if j > _J_MAX:
            raise ValueError(f"The fast discrete samplers handle scales below 2**{_J_MAX + 6}; got {value}.")
        self.gauss, self.value, self.T, self.j = gauss, value, T, j
        self.rho_frac = Fraction(1 << j, T)
        self.table, self.table_hi = _table(self.rho_frac)
        self.rho = float(self.rho_frac)
        self.inv_t = 1.0 / T
        if gauss:
            self.c1 = float(value)
            self.c2 = self.c1 / T
        else:
            self.c1 = float(1 / value) - self.inv_t

    def args(self) -> tuple[Any, ...]:
        return (self.j, self.table, self.rho, self.gauss, self.c1, self.c2 if self.gauss else 0.0,
                self.inv_t, float(_MARGIN))

    def exact_x(self, m: int, low: int) -> Fraction:
        """The exponent of the acceptance, exactly."""
        if self.gauss:
            s = self.value
            return Fraction(low, self.T) + (m - s * s / self.T) ** 2 / (2 * s * s)
        return Fraction(low, self.T) + m * (1 / self.value - Fraction(1, self.T))

    def exact_round(self, wa: int, wb: int, more: Callable[[], int]) -> tuple[bool, int]:
        """The round of :func:`_round` decided exactly: further digits of its uniforms from ``more``."""
        n, sure = _count(_U64(wa >> 32), self.table, self.rho)
        n = int(n)
        if not sure:  # 64 more digits of V and the 96-bit table; rational enclosures beyond it
            v, high = (wa >> 32 << 64) | more(), self.table_hi
            while n + 1 < len(high) and high[n + 1] > v:
                n += 1
            if n + 1 >= len(high) or high[n + 1] == v:
                lazy = _LazyUniform(v, 96, more)
                while lazy.less_exp((n + 1) * self.rho_frac):
                    n += 1
        low = (wa >> 1) & ((1 << self.j) - 1)
        m = (n << self.j) | low
        negative = wa & 1 == 1
        if m == 0 and negative:
            return False, 0
        code, y = _accept(np.int64(m), _U64(low), negative, _U64(wb), *self.args()[3:])
        if code == 2:  # in the band: more digits of V', rational enclosures
            code = 1 if _LazyUniform(wb >> 11, 53, more).less_exp(self.exact_x(m, low)) else 0
            y = -m if negative else m
        return code == 1, int(y)

    def exact_value(self, wa: int, wb: int, more: Callable[[], int]) -> int:
        """Rounds decided exactly from ``(wa, wb)`` on, until one is accepted."""
        while True:
            ok, y = self.exact_round(wa, wb, more)
            if ok:
                return y
            wa, wb = more(), more()


def _stream_reader(key: tuple[int, int], g: int, start: int) -> Callable[[], int]:
    """Words ``start, start + 1, ...`` of value ``g``'s stream."""
    pos = [start]
    k0, k1 = _U64(key[0]), _U64(key[1])

    def more() -> int:
        w = pos[0]
        pos[0] += 1
        return int(_philox_block(_U64(g), _U64(w // 2), k0, k1)[w % 2])

    return more


#: Below this many values a draw runs on the calling thread; above, on up to ``_THREADS`` threads.
_PARALLEL_VALUES = 1 << 15
_THREADS = max(1, min(4, os.cpu_count() or 1))


def _parts(size: int) -> list[tuple[int, int]]:
    """The ranges of values drawn apart, one per thread (public: from the size alone)."""
    count = 1 if size < _PARALLEL_VALUES else _THREADS
    bounds = [size * t // count for t in range(count + 1)]
    return [(bounds[t], bounds[t + 1]) for t in range(count)]


def _draw_part(law: _Law, out: np.ndarray, first: int, key: tuple[int, int]) -> None:
    """Values ``first, first + 1, ...`` into ``out`` (the compiled rounds release the GIL); the rare
    undecided rounds finished exactly."""
    cap = 64  # undecided rounds are rare (below 2**-21 a round)
    stuck, snext = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    swa, swb = np.empty(cap, dtype=_U64), np.empty(cap, dtype=_U64)
    start, size = 0, out.shape[0]
    while start < size:
        k, start = _draw_streams(out, start, first, _U64(key[0]), _U64(key[1]), law.args(),
                                 stuck, swa, swb, snext)
        for s in range(int(k)):
            i = int(stuck[s])
            more = _stream_reader(key, first + i, int(snext[s]))
            out[i] = law.exact_value(int(swa[s]), int(swb[s]), more)


def _draw(law: _Law, size: int, src: Any) -> np.ndarray:
    size = int(size)
    out = np.empty(size, dtype=np.int64)
    if size == 0:
        return out
    if hasattr(src, "reserve"):
        first, key = src.reserve(size)
        parts = _parts(size)
        if len(parts) == 1:
            _draw_part(law, out, first, key)
        else:  # each value on its own stream: the parts give the same values on the threads
            with ThreadPoolExecutor(len(parts)) as pool:
                list(pool.map(lambda ab: _draw_part(law, out[ab[0]:ab[1]], first + ab[0], key), parts))
        return out
    todo = np.arange(size)
    while todo.size:  # one round for every pending value, with fresh words
        words = np.asarray(src.words(2 * todo.size), dtype=_U64).reshape(todo.size, 2)
        codes, ys = np.empty(todo.size, dtype=np.int64), np.empty(todo.size, dtype=np.int64)
        _draw_words(words, codes, ys, *law.args())
        for h in np.flatnonzero(codes == 2):
            codes[h], ys[h] = 1, law.exact_value(int(words[h, 0]), int(words[h, 1]),
                                                 lambda: int(src.words(1)[0]))
        done = codes == 1
        out[todo[done]] = ys[done]
        todo = todo[~done]
    return out


def _as_fraction(x: Any, what: str) -> Fraction:
    f = Fraction(x)
    if not f > 0:
        raise ValueError(f"The {what} of a discrete sampler must be positive; got {x!r}.")
    return f


def _proposal(tau: Fraction, up: bool) -> tuple[int, int]:
    """The proposal's scale ``T`` near ``tau`` (at least ``tau`` when ``up``) and ``j``.

    Up to 64, ``T`` is ``tau`` rounded to an integer (at least 1) and ``j = 0``; above, ``T`` is ``tau``
    rounded to a multiple of ``2**(e - 4)``, ``2**e <= tau < 2**(e + 1)``, and ``j = e - 6``: ``rho = 2**j
    / T`` is then between 1/128 and 1/64, and ``T`` within 1/32 of ``tau``.
    """
    unit, j = 1, 0
    if tau > 64:
        e = tau.numerator.bit_length() - tau.denominator.bit_length() + 1
        while Fraction(1 << e) > tau:
            e -= 1
        unit, j = 1 << (e - 4), e - 6
    q = tau / unit
    n = math.ceil(q) if up else math.floor(q + Fraction(1, 2))
    return unit * max(n, 1), j


def _gaussian_law(sigma: Fraction) -> _Law:
    """The proposal's scale near ``sigma``, where the rounds are accepted most often (any ``T`` gives
    the law)."""
    return _Law(True, sigma, *_proposal(sigma, up=False))


def _laplace_law(scale: Fraction) -> _Law:
    """The proposal's scale just above ``scale`` (the proposal must not decay faster than the law)."""
    return _Law(False, scale, *_proposal(scale, up=True))


def discrete_array(kind: str, scale: Any, size: int, src: Any) -> np.ndarray:
    """``size`` exact draws on the integers (int64) from the discrete Gaussian or Laplace law.

    Parameters
    ----------
    kind : {"gaussian", "laplace"}
        ``P(y) ~ exp(-y^2 / (2 scale^2))`` (the discrete Gaussian of sigma ``scale``) or
        ``P(y) ~ exp(-|y| / scale)`` (the discrete Laplace).
    scale : Fraction, int or float
        The scale (a float is taken as its exact rational value).
    size : int
        The number of draws.
    src : GeneratorWords or SystemWords
        The source of the words (:class:`GeneratorWords`: each value from its own stream).
    """
    if kind == "gaussian":
        return _draw(_gaussian_law(_as_fraction(scale, "sigma")), size, src)
    return _draw(_laplace_law(_as_fraction(scale, "scale")), size, src)


def discrete_laplace_array(scale: Any, size: int, src: Any) -> np.ndarray:
    """:func:`discrete_array` of the discrete Laplace law, ``P(y) ~ exp(-|y| / scale)``."""
    return discrete_array("laplace", scale, size, src)


def discrete_gaussian_array(sigma: Any, size: int, src: Any) -> np.ndarray:
    """:func:`discrete_array` of the discrete Gaussian law, ``P(y) ~ exp(-y^2 / (2 sigma^2))``."""
    return discrete_array("gaussian", sigma, size, src)
