"""Exact draws other than additive noise: selections, Poisson samples and permutations from integer bits.

A release's randomness that is not noise added to a statistic (the exponential mechanism's choice, the
rows of a Poisson-sampled step, a secret order of the rows) is drawn here from uniform 64-bit words,
with integer comparisons only, so that each draw follows its law **exactly** (given uniform words):

* **Words** (:func:`word_source`): the release's source decides where they come from. The exact source
  (the default for a seeded ``random_state``) reads them from its seeded generator
  (``integers(0, 2**64)``: the bit generator's raw 64-bit output, reproducible from the seed, the same
  on every platform and NumPy version); the secure source (``random_state="secure"``) from the operating
  system (``os.urandom``); the float source (``dpspectral.config_context(noise="float")``) has none,
  and its callers keep NumPy's floating-point draws, so that it reproduces the papers' experiments.
* **Uniform integers** (:func:`below`): ``j`` uniform in ``[0, m)`` by masked rejection (a word's low
  ``ceil(log2 m)`` bits, retried when ``>= m``; each try succeeds with probability above 1/2): no
  modulo bias. The words come in passes: one word for every value still undecided, in order, then the
  rejected values again; a compiled loop (numba) decides each pass.
* **Permutations** (:func:`permutation`): Fisher-Yates, swapping position ``i = n-1, ..., 1`` with a
  uniform ``j`` in ``[0, i]`` (:func:`below`): each of the ``n!`` orders has probability exactly
  ``1 / n!``. The swaps run in a compiled loop: a permutation of a million rows in tens of
  milliseconds, about NumPy's own (``docs/noise.md``).
* **Bernoulli(q)** for a float ``q`` (:func:`bernoulli`): ``q`` is a dyadic rational (every float is),
  and ``U < q`` is decided for a uniform ``U`` in ``[0, 1)`` whose 64-bit digits are drawn one word at a
  time: the first word decides unless it equals ``q``'s first 64 binary digits (probability ``2**-64``),
  then the next one does, and so on; the probability is exactly ``q``, the float the accounting uses.
  A Poisson sample of ``n`` rows at rate ``q`` (:func:`poisson_sample`) is one such decision per row.
* **The exponential mechanism** (:func:`exponential_choice`): index ``i`` with probability
  ``exp(u_i / s) / sum_j exp(u_j / s)`` for the float scores ``u`` and scale ``s``, exactly (their
  exact rational values). With ``x_i = (max u - u_i) / s >= 0``: propose ``i`` uniformly
  (:func:`below`), accept with probability ``exp(-x_i)`` (the exact ``Bernoulli(exp(-x))`` of
  :mod:`dpspectral.privacy._discrete`: 53 random digits compared with a float enclosure, an exact
  rational comparison in the rare undecided band), repeat until accepted. The first accepted proposal
  of a sequence of independent tries is ``i`` with probability ``exp(-x_i) / sum_j exp(-x_j)``: the law
  of report-noisy-max with Gumbel noise, which is the law the selection is charged as. Each try is
  accepted with probability at least ``1 / m`` (the best candidate has ``x = 0``); tries are made ``m``
  at a time (at least 16), so about 1.6 rounds of ``m`` tries at worst, one on average when the scores
  are close.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numba
import numpy as np

from . import _discrete
from ._discrete import _exp_neg, _LazyUniform
from ._noise_base import NoiseSource

__all__ = ["GeneratorRawWords", "below", "bernoulli", "exponential_choice", "permutation",
           "poisson_sample", "word_source"]

_U64 = np.uint64
_WORD = 1 << 64
_POISSON_CHUNK = 1 << 20  # rows decided per call of the word source (8 MB of words)


_X_MAX = 64.0  # exp(-x) < exp(-64) < 2**-90 beyond


class _Fresh:
    """Streams of a source of fresh words (OS entropy or a seeded generator's raw words): each request
    is answered with new words."""

    def __init__(self, src: Any) -> None:
        self._src = src

    def words(self, idx: np.ndarray) -> np.ndarray:
        return np.asarray(self._src.words(len(idx)), dtype=_U64)


def _bern_exp(st: Any, x_hat: np.ndarray, exact: Any, idx: np.ndarray) -> np.ndarray:
    """Exact ``Bernoulli(exp(-x))`` per entry: ``x_hat`` within relative ``2**-44`` of ``x``.

    The first 53 binary digits of a uniform ``V`` decide ``V < exp(-x)`` unless ``V`` falls within the
    proved error band of the float64 ``exp(-x_hat)`` (``privacy._discrete``); there further digits are
    drawn and compared with exact rational enclosures. ``exact(i)`` gives entry ``i``'s ``x`` as a
    Fraction (called only in that rare band); entry ``i`` reads the stream of value ``idx[i]``.
    """
    u = (st.words(idx) >> _U64(11)).astype(np.float64)  # the first 53 bits of V, exactly
    v_lo = u * 2.0**-53
    v_hi = (u + 1.0) * 2.0**-53
    big = x_hat > _X_MAX
    p = _exp_neg(np.where(big, 0.0, x_hat))
    margin = _discrete._MARGIN  # read at call time (a test widens it to exercise the exact path)
    lo = np.where(big, 0.0, p * (1.0 - margin))
    hi = np.where(big, 2.0**-90, p * (1.0 + margin))
    out: np.ndarray = v_hi <= lo
    undecided = np.flatnonzero(~out & (v_lo < hi))
    for i in undecided:
        def more(i: int = int(i)) -> int:
            return int(st.words(np.array([idx[i]]))[0])
        out[i] = _LazyUniform(int(u[i]), 53, more).less_exp(exact(int(i)))
    return out


class GeneratorRawWords:
    """Uniform 64-bit words from a seeded NumPy generator (reproducible from its seed)."""

    def __init__(self, generator: np.random.Generator) -> None:
        self._generator = generator

    def words(self, n: int) -> np.ndarray:
        out: np.ndarray = self._generator.integers(0, np.iinfo(np.uint64).max, size=int(n), dtype=np.uint64,
                                                   endpoint=True)
        return out


def word_source(noise: NoiseSource) -> Any:
    """Where the exact draws of a release with noise source ``noise`` take their words.

    The secure source: its own words (OS entropy); the exact source (host or device): its seeded
    generator's words; any other source (the float source): None, and the caller keeps NumPy's draws.
    """
    name = getattr(noise, "name", None)
    if name == "secure":
        return noise._words  # type: ignore[attr-defined]
    if name == "exact":
        return GeneratorRawWords(noise.generator)
    return None


@numba.njit(cache=True, nogil=True)
def _rejection_pass(words, top, todo, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One pass of masked rejection: ``words[k]`` is a try for the value ``t = todo[k]`` (uniform in
    ``[0, top[t]]``). Its low bits (the mask of ``top[t]``) are kept when at most ``top[t]``; the rejected
    values move to the front of ``todo``, in order. Returns how many were rejected."""
    rejected = 0
    for k in range(todo.size):
        t = todo[k]
        mask = top[t]
        for shift in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(shift)
        v = words[k] & mask
        if v <= top[t]:
            out[t] = v
        else:
            todo[rejected] = t
            rejected += 1
    return rejected


@numba.njit(cache=True, nogil=True)
def _fisher_yates(swaps):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The order of ``range(len(swaps) + 1)`` after swapping position ``i = n-1, ..., 1`` with
    ``swaps[n-1-i]`` (in ``[0, i]``)."""
    n = swaps.size + 1
    order = np.arange(n)
    for k in range(n - 1):
        i = n - 1 - k
        j = swaps[k]
        order[i], order[j] = order[j], order[i]
    return order


def below(src: Any, bounds: Any) -> np.ndarray:
    """For each ``m`` of ``bounds`` (integers in ``[1, 2**63)``) a uniform integer in ``[0, m)`` (int64).

    Masked rejection: the low ``ceil(log2 m)`` bits of a word, retried while ``>= m``; one word per
    undecided value a pass, in order (module docstring).
    """
    m = np.asarray(bounds, dtype=np.int64).ravel()
    if m.size and (m.min() < 1):
        raise ValueError("below(m) needs every m >= 1.")
    top = (m - 1).astype(_U64)
    out = np.zeros(m.size, dtype=_U64)
    todo = np.flatnonzero(m > 1)
    while todo.size:
        words = np.asarray(src.words(todo.size), dtype=_U64)
        todo = todo[:int(_rejection_pass(words, top, todo, out))]
    return out.astype(np.int64)


def permutation(src: Any, n: int) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` (int64): Fisher-Yates with :func:`below`."""
    n = int(n)
    if n <= 1:
        return np.arange(max(n, 0), dtype=np.int64)
    swaps = below(src, np.arange(n, 1, -1))  # j uniform in [0, i] for i = n-1, ..., 1
    order: np.ndarray = _fisher_yates(swaps)
    return order


def _less_than(src: Any, rest: Fraction) -> bool:
    """Whether a fresh uniform ``V`` in ``[0, 1)`` is below ``rest`` (a dyadic rational in [0, 1))."""
    while rest > 0:
        rest *= _WORD
        head = int(rest)  # the next 64 binary digits of rest
        word = int(src.words(1)[0])
        if word != head:
            return word < head
        rest -= head
    return False


def bernoulli(src: Any, q: float, size: int) -> np.ndarray:
    """``size`` independent exact Bernoulli(``q``) decisions (booleans) for a float ``q`` in [0, 1]."""
    size = int(size)
    exact = Fraction(float(q))
    if not 0 <= exact <= 1:
        raise ValueError(f"A Bernoulli probability must lie in [0, 1]; got {q!r}.")
    if exact == 0 or exact == 1 or size == 0:
        return np.full(size, exact == 1, dtype=bool)
    scaled = exact * _WORD
    head = int(scaled)  # q's first 64 binary digits, below 2**64
    words = np.asarray(src.words(size), dtype=_U64)
    out: np.ndarray = words < _U64(head)
    rest = scaled - head
    for i in np.flatnonzero(words == _U64(head)):  # probability 2**-64 each
        out[i] = _less_than(src, rest)
    return out


def poisson_sample(src: Any, n: int, q: float) -> np.ndarray:
    """The sorted indices (int64) of a Poisson sample of ``range(n)``: each kept with probability ``q``."""
    n = int(n)
    parts = [np.flatnonzero(bernoulli(src, q, min(_POISSON_CHUNK, n - a))) + a
             for a in range(0, n, _POISSON_CHUNK)]
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)


def exponential_choice(src: Any, scores: Any, scale: float) -> int:
    """Index ``i`` with probability ``exp(scores[i] / scale) / sum_j exp(scores[j] / scale)``, exactly.

    ``scores``: finite floats (taken at their exact values); ``scale``: a positive finite float. The
    exponential mechanism by rejection from uniform proposals (module docstring).
    """
    u = np.asarray(scores, dtype=np.float64).ravel()
    s = float(scale)
    if u.size == 0 or not np.isfinite(u).all() or not (np.isfinite(s) and s > 0):
        raise ValueError("exponential_choice needs finite scores and a positive finite scale.")
    m = u.size
    if m == 1:
        return 0
    top = float(u.max())
    top_q, s_q = Fraction(top), Fraction(s)
    with np.errstate(over="ignore"):
        x_hat = (top - u) / s  # within a relative 3 * 2**-53 of the exact x where finite
    for i in np.flatnonzero(~np.isfinite(x_hat)):  # an overflow on the way: the exact value, rounded
        x = (top_q - Fraction(float(u[i]))) / s_q
        x_hat[i] = float(x) if x < 2**1000 else np.inf  # exp(-x) < 2**-90 from x > 64 on
    streams = _Fresh(src)
    batch = max(m, 16)
    while True:
        proposals = below(src, np.full(batch, m))
        keep = _bern_exp(streams, x_hat[proposals],
                         lambda k, p=proposals: (top_q - Fraction(float(u[p[k]]))) / s_q, np.arange(batch))
        hits = np.flatnonzero(keep)
        if hits.size:
            return int(proposals[hits[0]])
