"""Exact discrete Gaussian and discrete Laplace samplers, vectorised over arrays in integer arithmetic.

The laws are those of Canonne, Kamath and Steinke (NeurIPS 2020): the discrete Laplace
``P(y) ~ exp(-|y| / scale)`` and the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the
integers, for rational ``scale`` and ``sigma``. Every draw is **exact**: no floating-point number is
computed on the way, so the samples follow these laws exactly (given uniform random bits), with no
total-variation distance to account for. The samplers are the pure-Python ones of
:mod:`dpspectral.privacy._noise` (kept there as the reference) rewritten so that each step runs on the
whole array of pending draws at once, with rejection loops only over the entries still pending.

The bits
--------
A *word source* supplies uniform 64-bit words (:class:`GeneratorWords`: one stream per value drawn,
Philox4x32-10 keyed once from a seeded NumPy generator, reproducible and independent of how the values
are split into calls; :class:`SystemWords`: the operating system's CSPRNG, ``os.urandom``, read in
bulk and viewed as ``uint64``, so every bit is OS entropy). Every step below reads, for each pending
value, the next word of that value's stream. The law of the output is the same whatever the source;
only the stream differs.

The building blocks, each exact
-------------------------------
* ``below(n)``: a uniform integer in ``[0, n)`` by masked rejection (draw ``ceil(log2 n)`` bits,
  retry if ``>= n``; each try succeeds with probability above 1/2); 32-bit halves of the words when
  ``n <= 2**32``.
* ``Bernoulli(exp(-x))`` for a rational ``x >= 0``: the event ``V < exp(-x)`` for a uniform real ``V``
  in ``[0, 1)`` whose binary digits are drawn lazily. The first 53 digits (one word) give
  ``V`` to within ``2**-53``; ``exp(-x)`` is evaluated in float64 as ``1 / P(x / 1024)**1024`` with
  ``P`` the degree-10 Taylor polynomial of ``exp`` (only IEEE-754 additions, multiplications and one
  division, each correctly rounded), and the comparison is decided from these 53 digits whenever ``V``'s
  interval lies outside the band ``exp(-x) (1 +- 2**-33)``. When it does not (probability about
  ``2**-32`` a decision), more digits of ``V`` are drawn and compared with rational enclosures of
  ``exp(-x)`` (Taylor series of ``exp(x)`` with its remainder bounded, in exact fractions) until the
  comparison is decided. The answer is therefore exactly ``Bernoulli(exp(-x))``, provided the band
  contains ``exp(-x)``: **error bound.** Write ``u = 2**-53``. The argument ``x`` reaches the float
  routine with relative error at most ``7u`` (two integers rounded to float64, a division, a square),
  which moves ``exp(-x)`` by a relative ``64 * 7u < 2**-44`` for ``x <= 64``. With ``y = x / 1024 <=
  1/16`` (exact), the truncation of the Taylor series is below ``y**11 / 11! < 2**-69`` relatively;
  Horner's rule on positive terms has relative error at most ``21u``; each of the ten squarings
  doubles the relative error and adds ``u``, so ``P**1024`` is within ``1024 * 21u + 1023 u <
  2**-38.4`` and the reciprocal adds ``u``: in all below ``2**-38``, a factor 32 inside the band.
  For ``x > 64`` (``exp(-x) < 2**-90``) the enclosure is ``[0, 2**-90]``.
* The geometric variable ``K = #{k >= 1 : V < exp(-k)}`` (``P(K >= k) = exp(-k)``): a float guess
  ``floor(-log V)``, confirmed by the two comparisons above with the same ``V``, and counted one
  exact comparison at a time for an entry whose guess is not confirmed.

The discrete Laplace of scale ``t / s`` (CKS20 Algorithm 2): ``U`` uniform in ``[0, t)`` kept with
probability ``exp(-U / t)``; ``V = K`` above; ``X = (U + t V) // s``; a uniform sign, with ``-0``
rejected. ``U + t V`` is then geometric with ratio ``exp(-1/t)`` and ``X`` geometric with ratio
``exp(-1/scale)``, as in the reference.

The discrete Gaussian of ``sigma = S / M`` (CKS20 Algorithm 3): a discrete Laplace proposal ``Y`` of
integer scale ``T = ceil(sigma)``, kept with probability ``exp(-r^2 / 2)`` where
``r = (|Y| - sigma^2 / T) / sigma = a / B`` with the integers ``a = |Y| M^2 T - S^2`` and
``B = S M T`` (all three coefficients divided by their common factor; for an integer ``sigma``,
``a = |Y| - sigma`` and ``B = sigma``). The proposal times the acceptance is proportional to
``exp(-y^2 / (2 sigma^2))`` for any positive ``T``, so the output is exactly the discrete Gaussian.

Speed: about a million draws a second on one core for the secure source's scales (``sigma`` of
``2**30`` grid steps); the figures are in ``docs/noise.md``.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["GeneratorWords", "SystemWords", "discrete_gaussian_array", "discrete_laplace_array"]

_U64 = np.uint64
_LIMIT = 1 << 62  # integers handled in uint64/int64 without overflow


class GeneratorWords:
    """Per-value streams of uniform 64-bit words, reproducible from a NumPy generator (Philox4x32-10).

    The first time it is used it reads one 64-bit key from the generator (its only draw from it). The
    values drawn through it are numbered ``0, 1, 2, ...`` in the order of the calls; the ``j``-th word
    of value ``g`` is the Philox4x32-10 block of counter ``(g, j)`` under that key (a counter-based
    generator: Salmon et al., SC 2011). Each value's draw reads only its own stream, so the draws do not
    depend on how the values are split between calls.
    """

    def __init__(self, generator: np.random.Generator) -> None:
        self._bits = generator.bit_generator
        self._key: tuple[int, int] | None = None
        self._next = 0  # the number of the next value

    def open(self, size: int) -> _PhiloxStreams:
        if self._key is None:
            key = int(self._bits.random_raw())
            self._key = (key & 0xFFFFFFFF, key >> 32)
        first, self._next = self._next, self._next + int(size)
        return _PhiloxStreams(self._key, first, int(size))

    def words(self, n: int) -> np.ndarray:
        """``n`` words of ``n`` new values' streams (one each)."""
        return self.open(n).words(np.arange(int(n)))


_M32 = _U64(0xFFFFFFFF)


def _philox(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray,
            k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """The first two 32-bit lanes of Philox4x32-10 (32-bit values held in uint64 arrays)."""
    m0, m1 = _U64(0xD2511F53), _U64(0xCD9E8D57)
    for _ in range(10):
        p0, p1 = c0 * m0, c2 * m1
        c0, c1, c2, c3 = ((p1 >> _U64(32)) ^ c1 ^ _U64(k0), p1 & _M32,
                          (p0 >> _U64(32)) ^ c3 ^ _U64(k1), p0 & _M32)
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0, c1


class _PhiloxStreams:
    """The streams of values ``first .. first + size - 1``: ``words(idx)``, each listed value's next word."""

    def __init__(self, key: tuple[int, int], first: int, size: int) -> None:
        self._key, self._first = key, first
        self._used = np.zeros(size, dtype=_U64)

    def words(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)  # distinct indices
        g = _U64(self._first) + idx.astype(_U64)
        j = self._used[idx]
        self._used[idx] = j + _U64(1)
        lo, hi = _philox(g & _M32, g >> _U64(32), j & _M32, j >> _U64(32), *self._key)
        words: np.ndarray = lo | (hi << _U64(32))
        return words


class SystemWords:
    """Uniform 64-bit words from the operating system's CSPRNG (``os.urandom``), read in bulk."""

    def words(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * int(n)), dtype=_U64).copy()


class _Fresh:
    """Streams of a source of fresh words (OS entropy): each request is answered with new words."""

    def __init__(self, src: Any) -> None:
        self._src = src

    def words(self, idx: np.ndarray) -> np.ndarray:
        return np.asarray(self._src.words(len(idx)), dtype=_U64)


def _open(src: Any, size: int) -> Any:
    """The per-value streams of ``size`` new values from ``src``."""
    return src.open(size) if hasattr(src, "open") else _Fresh(src)


def _below(st: Any, n: int, idx: np.ndarray) -> np.ndarray:
    """An exact uniform integer in ``[0, n)`` for each value of ``idx`` (masked rejection), as uint64."""
    n = int(n)
    if not 1 <= n <= 1 << 63:
        raise ValueError(f"below(n) needs 1 <= n <= 2**63; got {n}.")
    out = np.zeros(idx.size, dtype=_U64)
    if n == 1 or idx.size == 0:
        return out
    mask = _U64((1 << (n - 1).bit_length()) - 1)
    todo = np.arange(idx.size)
    while todo.size:
        vals = st.words(idx[todo]) & mask
        ok = vals < _U64(n)
        out[todo[ok]] = vals[ok]
        todo = todo[~ok]
    return out


# --- Bernoulli(exp(-x)) by comparing 53 random bits with an enclosure of exp(-x), exact fallback -----

#: The float evaluation below is within ``2**-38`` of ``exp(-x)`` relatively (module docstring); a
#: comparison is decided from the first 53 bits only outside a band of relative width ``2**-33``.
_MARGIN = 2.0**-33
_X_MAX = 64.0
_COEFFS = [1.0 / math.factorial(k) for k in range(10, -1, -1)]


def _exp_neg(x: np.ndarray) -> np.ndarray:
    """``exp(-x)`` for ``0 <= x <= 64`` from IEEE operations only: ``1 / P(x / 1024)**1024``.

    ``P`` is the Taylor polynomial of ``exp`` of degree 10 (positive terms, Horner's rule); ten
    squarings raise it to the 1024th power. Relative error below ``2**-38`` (module docstring).
    """
    y = x * (1.0 / 1024.0)
    p = np.full_like(y, _COEFFS[0])
    for c in _COEFFS[1:]:
        p *= y
        p += c
    for _ in range(10):
        p *= p
    return 1.0 / p


class _LazyUniform:
    """A uniform ``V`` in ``[0, 1)`` of which the first ``n_bits`` binary digits (``prefix``) are drawn."""

    def __init__(self, prefix: int, n_bits: int, src: Any) -> None:
        self.prefix, self.n_bits, self.src = prefix, n_bits, src

    def less_exp(self, x: Fraction) -> bool:
        """Whether ``V < exp(-x)``, exactly: more digits are drawn until the enclosure decides."""
        while True:
            lo, hi = _exp_neg_bounds(x, self.n_bits + 8)
            if Fraction(self.prefix + 1, 1 << self.n_bits) <= lo:
                return True
            if Fraction(self.prefix, 1 << self.n_bits) >= hi:
                return False
            self.prefix = (self.prefix << 64) | int(self.src.words(1)[0])
            self.n_bits += 64


def _exp_neg_bounds(x: Fraction, bits: int) -> tuple[Fraction, Fraction]:
    """Rational ``lo <= exp(-x) <= hi`` with ``hi - lo <= 2**-bits`` (Taylor series of ``exp(x)``)."""
    target = Fraction(1, 1 << bits)
    n_terms = 1
    while True:
        term, total = Fraction(1), Fraction(1)
        for k in range(1, n_terms + 1):
            term = term * x / k
            total += term
        nxt = term * x / (n_terms + 1)
        if n_terms + 2 > 2 * x:
            rest = nxt * 2  # the tail after the last term is at most twice its first term here
            lo, hi = 1 / (total + rest), 1 / total
            if hi - lo <= target:
                return lo, hi
        n_terms *= 2


class _One:
    """The stream of one value, as a word source (for the exact fallback)."""

    def __init__(self, st: Any, index: int) -> None:
        self._st, self._idx = st, np.array([index])

    def words(self, n: int) -> np.ndarray:
        return np.concatenate([self._st.words(self._idx) for _ in range(int(n))])


def _bern_exp(st: Any, x_hat: np.ndarray, exact: Any, idx: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(exp(-x))`` per entry: ``x_hat`` within relative ``2**-44`` of ``x``.

    ``exact(i)`` gives entry ``i``'s ``x`` as a Fraction (only called in the rare undecided band);
    entry ``i`` reads the stream of value ``idx[i]``.
    """
    u = (st.words(idx) >> _U64(11)).astype(np.float64)  # the first 53 bits of V, exactly
    v_lo = u * 2.0**-53
    v_hi = (u + 1.0) * 2.0**-53
    big = x_hat > _X_MAX  # exp(-x) < exp(-63) < 2**-90
    p = _exp_neg(np.where(big, 0.0, x_hat))
    lo = np.where(big, 0.0, p * (1.0 - _MARGIN))
    hi = np.where(big, 2.0**-90, p * (1.0 + _MARGIN))
    out: np.ndarray = v_hi <= lo
    undecided = np.flatnonzero(~out & (v_lo < hi))
    for i in undecided:
        out[i] = _LazyUniform(int(u[i]), 53, _One(st, int(idx[i]))).less_exp(exact(int(i)))
    return out


def _laplace_magnitude(st: Any, scale: Fraction, idx: np.ndarray) -> np.ndarray:
    """``K = #{k >= 1 : V < exp(-k / scale)}`` for uniform ``V``: geometric, ``P(K >= k) = exp(-k/scale)``.

    A float guess ``floor(-scale log V)`` checked exactly by two comparisons (:func:`_bern_exp` with
    the same ``V``); an entry whose guess is not confirmed is counted exactly, one comparison at a time.
    """
    words = st.words(idx)
    u = (words >> _U64(11)).astype(np.float64)
    b = float(scale)
    with np.errstate(divide="ignore"):
        guess = np.floor(-b * np.log((u + 0.5) * 2.0**-53))
    guess = np.clip(guess, 0.0, 2.0**60).astype(np.int64)
    k_hat = guess.astype(np.float64)
    out: np.ndarray = guess.copy()
    v_lo, v_hi = u * 2.0**-53, (u + 1.0) * 2.0**-53

    def decided_less(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        big = xs > _X_MAX
        p = _exp_neg(np.where(big, 0.0, xs))
        lo = np.where(big, 0.0, p * (1.0 - _MARGIN))
        hi = np.where(big, 2.0**-90, p * (1.0 + _MARGIN))
        yes, no = v_hi <= lo, v_lo >= hi
        return yes, no

    inv_b = 1.0 / b
    yes_at, _ = decided_less(k_hat * inv_b)  # V < exp(-k_hat / b): K >= k_hat
    yes_at |= guess == 0
    _, no_next = decided_less((k_hat + 1.0) * inv_b)  # not V < exp(-(k_hat + 1) / b): K < k_hat + 1
    for i in np.flatnonzero(~(yes_at & no_next)):
        out[i] = _exact_magnitude(int(u[i]), scale, int(guess[i]), _One(st, int(idx[i])))
    return out


def _exact_magnitude(prefix: int, scale: Fraction, start: int, src: Any) -> int:
    """``#{k >= 1 : V < exp(-k / scale)}`` exactly, for ``V`` with 53-bit prefix ``prefix``."""
    v = _LazyUniform(prefix, 53, src)
    k = max(start, 0)
    while k > 0 and not v.less_exp(Fraction(k) / scale):
        k -= 1
    while v.less_exp(Fraction(k + 1) / scale):
        k += 1
    return k


def _as_fraction(x: Any, what: str) -> Fraction:
    f = Fraction(x)
    if not f > 0:
        raise ValueError(f"The {what} of a discrete sampler must be positive; got {x!r}.")
    return f


def discrete_laplace_array(scale: Any, size: int, src: Any) -> np.ndarray:
    """``size`` exact draws with ``P(y) ~ exp(-|y| / scale)`` on the integers (int64).

    Parameters
    ----------
    scale : Fraction, int or float
        The scale (a float is taken as its exact rational value).
    size : int
        The number of draws.
    src : GeneratorWords or SystemWords
        The source of the words (:class:`GeneratorWords`: each value from its own stream).
    """
    f = _as_fraction(scale, "scale")
    t, s = f.numerator, f.denominator
    if t >= _LIMIT or s >= _LIMIT:
        raise ValueError(f"The scale's numerator and denominator must be below 2**62; got {f}.")
    return _laplace(_open(src, size), t, s, np.arange(int(size)))


def _laplace(st: Any, t: int, s: int, idx: np.ndarray) -> np.ndarray:
    """The discrete Laplace of scale ``t / s`` for each value of ``idx``, each from its own stream."""
    one = Fraction(1)
    out = np.empty(idx.size, dtype=np.int64)
    todo = np.arange(idx.size)
    while todo.size:
        ids = idx[todo]
        u = _below(st, t, ids)
        keep = _bern_exp(st, u.astype(np.float64) / t, lambda i, u=u: Fraction(int(u[i]), t), ids)
        kept = np.flatnonzero(keep)
        v = _laplace_magnitude(st, one, ids[kept])
        if np.any(v >= (_LIMIT - t) // t):  # probability exp(-2**62 / t): never, but never wrong
            raise OverflowError("a discrete Laplace draw exceeded 2**62")
        x = (u[kept].astype(np.int64) + t * v) // s
        negative = _bits(st, ids[kept])
        good = ~(negative & (x == 0))
        out[todo[kept[good]]] = np.where(negative, -x, x)[good]
        done = np.zeros(todo.size, dtype=bool)
        done[kept[good]] = True
        todo = todo[~done]
    return out


def _bits(st: Any, idx: np.ndarray) -> np.ndarray:
    """A fair bit (boolean) for each value of ``idx``: the low bit of its next word."""
    bits: np.ndarray = (st.words(idx) & _U64(1)).astype(bool)
    return bits


def discrete_gaussian_array(sigma: Any, size: int, src: Any) -> np.ndarray:
    """``size`` exact draws with ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers (int64).

    Parameters
    ----------
    sigma : Fraction, int or float
        The scale (a float is taken as its exact rational value).
    size : int
        The number of draws.
    src : GeneratorWords or SystemWords
        The source of the words (:class:`GeneratorWords`: each value from its own stream).
    """
    f = _as_fraction(sigma, "sigma")
    S, M = f.numerator, f.denominator
    T = math.ceil(f)  # any positive integer scale gives the law; ceil(sigma) keeps the numbers small
    A, C, B = M * M * T, S * S, S * M * T  # a = |y| A - C, r = a / B
    g = math.gcd(math.gcd(A, C), B)
    A, C, B = A // g, C // g, B // g
    if B >= _LIMIT or C >= _LIMIT or A >= _LIMIT:
        raise ValueError(f"sigma = {f} has too large a numerator or denominator for the fast sampler.")
    st = _open(src, size)
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(int(size))
    b_float = float(B)
    while todo.size:
        y = _laplace(st, T, 1, todo)
        ay = np.abs(y)
        if np.any(ay >= (_LIMIT - C) // A):
            raise OverflowError("a discrete Gaussian proposal exceeded the fast sampler's range")
        a = ay * A - C
        r = a.astype(np.float64) / b_float
        x_hat = 0.5 * r * r
        ok = _bern_exp(st, x_hat, lambda i, a=a: Fraction(int(a[i]) ** 2, 2 * B * B), todo)
        out[todo[ok]] = y[ok]
        todo = todo[~ok]
    return out
