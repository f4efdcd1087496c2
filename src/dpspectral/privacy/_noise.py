"""The one noise source of the release pipeline: exact discrete noise by default, seeded or secure.

Every noisy release draws from a :class:`NoiseSource`, chosen by the ``random_state`` argument that
every mechanism takes (:func:`noise_source`):

* :class:`ExactNoise` (any seeded ``random_state``: None, an int, a ``SeedSequence`` or a
  ``Generator``; the default): the **exact** discrete Gaussian and discrete Laplace of Canonne, Kamath
  and Steinke (NeurIPS 2020) on a grid of width ``g = 2**(floor(log2 scale) - GRID_BITS)``, drawn from
  per-value word streams keyed once by the seeded generator (the same release from the same seed,
  whatever the chunking of the rows: ``docs/noise.md``), and no output carries the
  low-order bits of a floating-point sample (Mironov, CCS 2012, showed that such bits can reveal the
  value they hide). The report's ``noise_source`` is ``"exact"``.
* :class:`SecureNoise` (``random_state="secure"``): the same samplers and the same law, with every bit
  from the operating system's CSPRNG (``os.urandom`` read in bulk); not reproducible. ``"secure"``.
* :class:`SeededNoise`: NumPy's floating-point normal and Laplace samples, as in the papers'
  experiments; only on request (``dpspectral.config_context(noise="float")``), for comparison. It is
  not meant for deployment against an adversary who sees the exact bits of the output. ``"float"``.

The samplers (:mod:`dpspectral.privacy._discrete`) are vectorised over arrays, in integer arithmetic
with an exact fallback for the rare decisions that 53 bits do not settle: their output follows the
discrete laws exactly, at about a million draws a second (``docs/noise.md``). The pure-Python samplers
:func:`discrete_gaussian` and :func:`discrete_laplace` below are the reference implementation the tests
compare with.

Privacy of the grid
-------------------
The statistic is rounded to the grid and the integer noise times ``g`` added, so every output is an
exact multiple of ``g``. Rounding moves each coordinate by at most ``g/2``, so two neighbouring
statistics at L2 distance ``Delta`` are, after rounding, at L2 distance at most ``Delta + g sqrt(m)``
(``m`` coordinates; L1: ``Delta + g m``). The noise is therefore scaled by ``(Delta + g sqrt(m)) /
Delta`` (L1: ``(Delta + g m) / Delta``) and its width in grid steps rounded up to an integer, so that
the ratio noise/sensitivity, which the accounting event records, is not smaller than planned; with
``GRID_BITS = 30`` the increase is below ``1e-6`` for a million coordinates. The discrete Laplace with
scale ``b/g`` on integer shifts gives the same pure epsilon as the continuous one. For the discrete
Gaussian, CKS20 prove the same concentrated-DP bound (``rho = Delta'^2 / (2 sigma^2)``) as the
continuous Gaussian and an (epsilon, delta) curve that matches the continuous one up to terms
negligible for ``sigma / g >= 2**30`` (their Theorem 7 and Figure 1): the accountant's Gaussian events
are used as they are, and the report says which source drew the noise. A release that declares no
sensitivity (an uncertified paper calibration) is drawn on the grid at its planned scale, unwidened;
the secure source refuses it.

Selections (the exponential mechanism), Poisson samples and secret permutations are drawn exactly
from integer words of the same source (:mod:`dpspectral.privacy._draws`: the seeded generator's words,
or OS entropy for the secure source; NumPy's draws with the float source). The other randomness
(sketches kept secret, random starts, the exponential mechanism's Bingham sampler, the Wishart
mechanism) comes from :attr:`NoiseSource.generator`: for the secure source a NumPy generator seeded
with 128 bits of OS entropy (not reproducible, not exposed), sampled in floating point
(``docs/noise.md`` lists these and why).
"""

from __future__ import annotations

import math
import random
import secrets
from fractions import Fraction
from typing import Any

import numpy as np

from ._device_noise import device_noise_source
from ._discrete import GeneratorWords, SystemWords, discrete_array
from ._noise_base import NoiseSource, _check_shape

__all__ = [
    "GRID_BITS",
    "ExactNoise",
    "NoiseSource",
    "SecureNoise",
    "SeededNoise",
    "discrete_gaussian",
    "discrete_laplace",
    "grid",
    "noise_source",
    "seeded_source",
    "seeded_source_name",
]

#: The secure grid is ``2**(floor(log2 scale) - GRID_BITS)``: the noise is at least ``2**GRID_BITS``
#: grid steps wide, so the discrete distribution is indistinguishable in utility from the continuous one.
GRID_BITS = 30


def grid(scale: float) -> float:
    """The secure source's grid for a noise of this scale: ``2**(floor(log2 scale) - GRID_BITS)``."""
    return math.ldexp(1.0, math.floor(math.log2(scale)) - GRID_BITS)


class SeededNoise(NoiseSource):
    """NumPy's floating-point samples (reproducible from a seed). Draws exactly what ``rng.normal``
    would; only with ``dpspectral.config_context(noise="float")`` (module docstring)."""

    name = "float"

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator

    def add_gaussian(self, statistic: Any, std: float, sensitivity: float | None = None) -> Any:
        if np.ndim(statistic) == 0:
            return float(statistic) + float(self.generator.normal(0.0, std))
        return statistic + self.generator.normal(0.0, std, size=np.shape(statistic))

    def add_laplace(self, statistic: Any, scale: float, sensitivity: float | None = None) -> Any:
        if np.ndim(statistic) == 0:
            return float(statistic) + float(self.generator.laplace(0.0, scale))
        return statistic + self.generator.laplace(0.0, scale, size=np.shape(statistic))

    def add_symmetric_gaussian(self, matrix: np.ndarray, std: float,
                               sensitivity: float | None = None, shape: str = "iid") -> np.ndarray:
        from ._gaussian import symmetric_gaussian

        noise = symmetric_gaussian(matrix.shape[0], std, self.generator, dtype=matrix.dtype)
        if _check_shape(shape) == "goe":
            diagonal = np.diagonal(noise).copy()
            noise *= 1.0 / math.sqrt(2.0)
            np.fill_diagonal(noise, diagonal)
        noisy: np.ndarray = matrix + noise
        return noisy

    def gaussian(self, std: float, size: Any, sensitivity: float | None = None) -> np.ndarray:
        draws: np.ndarray = self.generator.normal(0.0, std, size=size)
        return draws


# --- exact samplers (Canonne, Kamath and Steinke 2020), integers and OS entropy only ------------------


#: The bits of the exact samplers: the operating system's CSPRNG. (Tests pass a seeded
#: ``random.Random`` instead, to check the laws reproducibly; it has the same two methods.)
_SYSTEM_BITS = secrets.SystemRandom()


def _bernoulli(p: Fraction, bits: random.Random) -> bool:
    return bool(bits.randrange(p.denominator) < p.numerator)


def _bernoulli_exp_at_most_one(gamma: Fraction, bits: random.Random) -> bool:
    k = 1
    while _bernoulli(gamma / k, bits):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(gamma: Fraction, bits: random.Random) -> bool:
    """Exact Bernoulli(exp(-gamma)) for rational gamma >= 0 (CKS20 Algorithm 1)."""
    while gamma > 1:
        if not _bernoulli_exp_at_most_one(Fraction(1), bits):
            return False
        gamma -= 1
    return _bernoulli_exp_at_most_one(gamma, bits)


def discrete_laplace(scale: Fraction, bits: random.Random = _SYSTEM_BITS) -> int:
    """One exact draw with ``P(x) ~ exp(-|x| / scale)`` on the integers (CKS20 Algorithm 2).

    ``bits`` supplies ``randrange(n)`` and ``getrandbits(1)``: the OS CSPRNG by default.
    """
    s, t = scale.denominator, scale.numerator  # scale = t / s
    while True:
        u = bits.randrange(t)
        if not _bernoulli_exp(Fraction(u, t), bits):
            continue
        v = 0
        while _bernoulli_exp(Fraction(1), bits):
            v += 1
        y = (u + t * v) // s
        negative = bits.getrandbits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma: Fraction, bits: random.Random = _SYSTEM_BITS) -> int:
    """One exact draw with ``P(x) ~ exp(-x^2 / (2 sigma^2))`` on the integers (CKS20 Algorithm 3).

    ``bits`` supplies ``randrange(n)`` and ``getrandbits(1)``: the OS CSPRNG by default.
    """
    sigma2 = sigma * sigma
    t = math.floor(sigma) + 1
    while True:
        y = discrete_laplace(Fraction(t), bits)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if _bernoulli_exp(gamma, bits):
            return y


class _RandomWords:
    """64-bit words from an object with ``getrandbits`` (a seeded ``random.Random`` in tests)."""

    def __init__(self, bits: Any) -> None:
        self._bits = bits

    def words(self, n: int) -> np.ndarray:
        return np.array([self._bits.getrandbits(64) for _ in range(int(n))], dtype=np.uint64)


class _GridNoise(NoiseSource):
    """Exact discrete noise on the release's grid (module docstring); ``_words`` supplies the bits."""

    _words: Any
    #: Whether a release must declare its sensitivity (the secure source refuses one that does not).
    _strict = False

    def _require(self, sensitivity: float | None, scale: float) -> float | None:
        if self._strict and (sensitivity is None or not sensitivity >= 0):
            raise ValueError(
                "The secure noise source needs each release's sensitivity and a positive finite noise "
                "scale (to widen the noise for the rounding to its grid); this release declared none."
            )
        if sensitivity is not None and not sensitivity >= 0:
            raise ValueError(f"A release's sensitivity must be non-negative; got {sensitivity!r}.")
        if (sensitivity is None or sensitivity > 0) and not (math.isfinite(scale) and scale > 0):
            raise ValueError(
                f"The {self.name} noise source needs a positive finite noise scale; got {scale!r}."
            )
        return None if sensitivity is None else float(sensitivity)

    def _add(self, statistic: Any, scale: float, sensitivity: float | None, kind: str,
             each: bool = False) -> Any:
        delta = self._require(sensitivity, scale)
        if delta == 0:  # the statistic does not depend on the data: released as it is, no noise needed
            return statistic
        values = np.asarray(statistic, dtype=np.float64)
        m = 1 if each else max(values.size, 1)
        step = grid(scale)
        spread = step * (math.sqrt(m) if kind == "gaussian" else m)
        widened = scale if delta is None else scale * (delta + spread) / delta
        steps_wide = math.ceil(Fraction(widened) / Fraction(step))  # in grid steps, rounded up
        noise = discrete_array(kind, steps_wide, values.size, self._words).reshape(values.shape)
        out = (np.rint(values / step) + noise) * step
        return float(out) if np.ndim(statistic) == 0 else out

    def add_gaussian(self, statistic: Any, std: float, sensitivity: float | None = None) -> Any:
        return self._add(statistic, std, sensitivity, "gaussian")

    def add_laplace(self, statistic: Any, scale: float, sensitivity: float | None = None) -> Any:
        return self._add(statistic, scale, sensitivity, "laplace")

    def add_laplace_each(self, values: np.ndarray, scale: float,
                         sensitivity: float | None = None) -> np.ndarray:
        """What ``add_laplace(v, scale, sensitivity)`` on each value alone would release.

        The same law (each value its own release: the widening of one coordinate), in one call.
        """
        return np.asarray(self._add(np.asarray(values, dtype=np.float64), scale, sensitivity, "laplace",
                                    each=True))

    def add_symmetric_gaussian(self, matrix: np.ndarray, std: float,
                               sensitivity: float | None = None, shape: str = "iid") -> np.ndarray:
        d = matrix.shape[0]
        upper = np.triu_indices(d)
        weights = _iso_weights(d) if _check_shape(shape) == "goe" else 1.0
        released = self._add(np.asarray(matrix, dtype=np.float64)[upper] * weights, std, sensitivity,
                             "gaussian") / weights
        out = np.empty((d, d), dtype=np.float64)
        out[upper] = released
        out.T[upper] = released
        return out.astype(matrix.dtype, copy=False)


class ExactNoise(_GridNoise):
    """The default: exact discrete noise on the grid from a seeded generator's bits (reproducible).

    Parameters
    ----------
    generator : numpy.random.Generator
        The secret generator: its raw words draw the noise, and it serves the randomness other than
        additive noise (:attr:`generator`).
    """

    name = "exact"

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator
        self._words = GeneratorWords(generator)


class SecureNoise(_GridNoise):
    """OS entropy and the exact discrete samplers on a fine grid (module docstring: privacy and speed).

    Parameters
    ----------
    bits : object with ``getrandbits``, optional
        Where the bits come from instead of ``os.urandom`` (tests pass a seeded ``random.Random``).
    """

    name = "secure"
    _strict = True

    def __init__(self, bits: Any = None) -> None:
        self._words = SystemWords() if bits is None else _RandomWords(bits)
        self.generator = np.random.default_rng(secrets.randbits(128))


def _iso_weights(d: int) -> np.ndarray:
    """``iso(M) = upper(M) * weights``: 1 on the diagonal, ``sqrt(2)`` above it."""
    i, j = np.triu_indices(d)
    return np.where(i == j, 1.0, math.sqrt(2.0))


def seeded_source(generator: np.random.Generator, name: str | None = None) -> NoiseSource:
    """The source of a seeded generator under the configuration: :class:`ExactNoise` by default,
    :class:`SeededNoise` (floating point) inside ``dpspectral.config_context(noise="float")``.

    ``name`` (``"exact"`` or ``"float"``, from :func:`seeded_source_name` where the release was planned)
    decides instead of this thread's configuration: for a party that draws its share of a release
    planned elsewhere (a site of a distributed run, on another thread or process).
    """
    name = seeded_source_name() if name is None else name
    if name not in (SeededNoise.name, ExactNoise.name):
        raise ValueError(f"A seeded noise source is 'exact' or 'float'. Got {name!r} instead.")
    return SeededNoise(generator) if name == SeededNoise.name else ExactNoise(generator)


def seeded_source_name() -> str:
    """The report's name of the source a seeded ``random_state`` gives under the configuration:
    ``"exact"`` by default, ``"float"`` inside ``dpspectral.config_context(noise="float")``."""
    from .._array_api import get_config

    return SeededNoise.name if get_config()["noise"] == "float" else ExactNoise.name


def noise_source(random_state: Any, like: Any = None, seeded: str | None = None) -> NoiseSource:
    """The noise source for ``random_state``: ``"secure"`` -> :class:`SecureNoise`, else seeded.

    ``seeded`` (``"exact"`` or ``"float"``): the seeded source planned elsewhere, instead of this
    thread's configuration (:func:`seeded_source`).

    ``None``, an int, a ``SeedSequence`` or a ``Generator`` give :class:`ExactNoise` (or
    :class:`SeededNoise` with ``config_context(noise="float")``: :func:`seeded_source`); a Generator is
    used and advanced as is; the global NumPy state is never used. A :class:`NoiseSource` passes
    through. ``like``: a non-NumPy array (PyTorch, CuPy...; array API dispatch on) gives
    :class:`~dpspectral.privacy._device_noise.DeviceNoise`: the host's exact (or, ``"secure"``, secure)
    noise copied to that array's device, or, with ``config_context(noise="float")``, the device's own
    floating-point stream.
    """
    if isinstance(random_state, NoiseSource):
        return random_state
    if like is not None:
        from .._array_api import get_config

        device = device_noise_source(random_state, like,
                                     exact=ExactNoise if get_config()["noise"] == "exact" else None,
                                     secure=SecureNoise)
        if device is not None:
            return device
    if isinstance(random_state, str):
        if random_state == "secure":
            return SecureNoise()
        raise ValueError(
            "The 'random_state' parameter must be None, an int, a numpy SeedSequence or Generator, or "
            f"'secure'. Got {random_state!r} instead."
        )
    from .._validation import as_generator

    return seeded_source(as_generator(random_state), seeded)  # the usual TypeError for other types
