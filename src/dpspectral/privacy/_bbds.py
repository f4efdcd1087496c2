"""Exact privacy accountant of the input-perturbation ("BBDS") sketch ``Y_c = [A, sigma_min I] Omega``.

This is the sketch Upadhyay's Private-Space-Optimal-LRF releases by *input perturbation* (Blocki,
Blum, Datta and Sheffet 2012 style; ``spec-lowrank.md`` §1): pad ``Â = [A, sigma_min I_m]`` (so every
singular value of ``Â`` is at least ``sigma_min``) and release ``Y_c = Â Omega`` with
``Omega ∈ R^{(n+m) x t}`` i.i.d. N(0, 1), secret and used once. The columns of ``Y_c`` are ``t``
independent draws from ``N(0, Sigma)``, ``Sigma = Â Â^T``.

Functions
---------
:func:`bbds_delta`
    The exact worst-case delta(epsilon) over Priv1 neighbours of the release of ``t`` columns.
:func:`min_sigma_min`
    The smallest ``sigma_min`` with ``bbds_delta <= delta`` (rounded up, cached).
:func:`paper_sigma_min`
    The paper's closed form ``16 ln(1/delta) sqrt(t kappa ln(1/delta)) / epsilon`` (recalled, spec §2).
:func:`bbds_event`
    The ``EpsilonDeltaDpEvent`` by which the release enters our composition.
:func:`covariance_delta`, :func:`worst_case_eigenvalues`
    The building blocks: the hockey-stick divergence between ``t`` i.i.d. centred Gaussians whose
    covariances differ in (at most) two whitened eigenvalues, and the worst-case eigenvalues.

Privacy
-------
**Neighbours.** Priv1: ``A' = A + u v^T`` with ``||u|| = ||v|| = 1``, so ``Â' = Â + u z^T`` with
``z = (v, 0)``, ``||z|| = 1``. (For ``A' = A + b u v^T`` evaluate everything at ``sigma_min / b``:
dividing the release by ``b`` maps that case to this one.)

**Privacy loss.** Let ``P = N(0, Sigma)^{⊗t}`` and ``Q = N(0, Sigma')^{⊗t}`` with ``Sigma' = Â'Â'^T``
(both invertible since ``Sigma, Sigma' ⪰ sigma_min^2 I``). The hockey-stick divergence is invariant
under a common bijection, so whiten every column by ``Sigma^{-1/2}`` and rotate to the eigenbasis of
``M = Sigma^{-1/2} Sigma' Sigma^{-1/2}`` (eigenvalues ``mu_i``). Under ``P`` the whitened columns
``x_j`` are N(0, I); under ``Q`` they are N(0, diag(mu)). Coordinates with ``mu_i = 1`` have the same
law under both and drop out. Directly from the Gaussian densities,

    L = ln dP/dQ = sum_j [ -1/2 x_j^T x_j + 1/2 x_j^T M^{-1} x_j ] + (t/2) ln det M
      = sum_i [ (t/2) ln mu_i - 1/2 (1 - 1/mu_i) X_i ],     X_i = sum_j x_{ji}^2,

with ``X_i ~ chi2_t`` independent under ``P`` (and ``X_i ~ mu_i chi2_t`` under ``Q``). This is the
formula of the spec, with the spec's sign convention (``L = ln dP/dQ``, ``P`` the law at ``A``), which
is correct. ``delta(epsilon) = sup_S P(S) - e^epsilon Q(S) = E_P[(1 - e^{epsilon - L})_+]``; the other
direction (``Q`` vs ``P``) is the same computation with ``mu -> 1/mu``.

**Eigenvalues (the spec's 2 x 2 matrix is right).** With ``B = Sigma^{-1/2} Â`` (orthonormal rows),
``a = Sigma^{-1/2} u`` and ``b = Sigma^{-1/2} Â z = B z``:
``M = (B + a z^T)(B + a z^T)^T = I + a b^T + b a^T + a a^T``, which is the identity outside
``span{a, b}`` and, in an orthonormal basis ``(a/s, ·)`` of that span, is
``[[1 + s^2 + 2 s r cos(theta), s r sin(theta)], [s r sin(theta), 1]]`` with ``s = ||a|| <= 1/sigma_min``,
``r = ||b|| <= 1`` and ``theta`` the angle between ``a`` and ``b``. Since ``det(M - I) <= 0`` on the
span, ``mu_1 >= 1 >= mu_2``.

**Where the spec's worst case is wrong: s, r and theta are not free.** The spec maximises over
``theta ∈ [0, pi]`` at ``s = 1/sigma_min``, ``r = 1`` (maximum at ``theta = pi``, i.e.
``mu = ((1 - 1/sigma_min)^2, 1)``, or ``theta = 0``, ``mu = ((1 + 1/sigma_min)^2, 1)``). These points are
not reachable by any neighbouring pair: ``|a^T b| = |u^T Sigma^{-1} A v| <=
max_lambda lambda / (lambda^2 + sigma_min^2) = 1/(2 sigma_min)``, while they need ``|a^T b| = 1/sigma_min``.
The exact range follows from the Rayleigh quotient. With ``x`` normalised so that ``||Â^T x|| = 1``,
i.e. ``||A^T x||^2 + sigma_min^2 ||x||^2 = 1``, and ``xi = ||x|| <= 1/sigma_min``,

    x^T Sigma' x = ||Â^T x + z (u^T x)||^2 = 1 + 2 (u^T x)(v^T A^T x) + (u^T x)^2
                 ∈ 1 ± 2 xi sqrt(1 - sigma_min^2 xi^2) + xi^2,

and maximising over ``xi = sin(phi)/sigma_min`` gives, for *every* neighbouring pair,

    mu_1 <= mu_+ := 1 + 1/(2 sigma_min^2) + sqrt(1 + 1/(4 sigma_min^2)) / sigma_min
                  = exp(+2 asinh(1/(2 sigma_min))),
    mu_2 >= mu_- := 1 + 1/(2 sigma_min^2) - sqrt(1 + 1/(4 sigma_min^2)) / sigma_min
                  = exp(-2 asinh(1/(2 sigma_min))) = 1/mu_+.

``(mu_+, mu_-)`` is the spec's matrix at ``s = 1/sigma_min``, ``r = 1``, ``theta = pi/2``, and it is
reached in the limit (so the bound is tight): ``A = lambda p_2 v^T``, ``u = p_1 ⊥ p_2``
(``m >= 2``) gives ``a = p_1/sigma_min``, ``b = lambda p_2 / sqrt(lambda^2 + sigma_min^2) -> p_2`` as
``lambda -> inf``. (For ``m = 1`` there is a single eigenvalue and the result is an upper bound.)

**Monotonicity (why the corner is the worst case).** For ``mu_1 >= mu_1' >= 1`` the pair with
``mu_1'`` is a post-processing of the pair with ``mu_1`` by the same channel: add N(0, nu) to
coordinate 1 of every column, ``nu = (mu_1 - mu_1')/(mu_1' - 1)``, and rescale it by
``(1 + nu)^{-1/2}`` (for ``mu_1' = 1`` replace it by fresh noise); likewise ``mu_2 <= mu_2' <= 1``.
By the data-processing inequality the hockey-stick divergence (both directions) is non-decreasing in
``mu_1`` on ``[1, inf)`` and non-increasing in ``mu_2`` on ``(0, 1]``. Hence, over all Priv1 neighbours
(any ``A``, ``m``, ``n``, unit ``u``, ``v``), the supremum of ``delta(epsilon)`` is exactly
``delta`` at ``(mu_+, mu_-)``, which is what :func:`bbds_delta` returns (this also settles the spec's
"check s, r smaller": smaller ``s`` or ``r`` only shrinks the reachable box). As ``mu_+ mu_- = 1``,
the swapped direction has the same eigenvalues ``{1/mu_+, 1/mu_-} = {mu_-, mu_+}``; both are
computed anyway. ``delta`` is decreasing in ``sigma_min`` (``mu_±`` move towards 1) and in
``epsilon``, and increasing in ``t`` (dropping columns is post-processing), so bisection is valid.
Consequence: the spec's table (relaxed ``theta``, reproduced by ``_spec_relaxed_delta``) asks for a
``sigma_min`` 1.6 to 1.9 times larger than needed (delta = 1e-6, t = 10 to 200); it is safe, not tight.

**Numerics.** Write ``L = c - a_1 X_1 / 2 - a_2 X_2 / 2`` with ``a_i = 1 - 1/mu_i`` and
``c = (t/2) ln(mu_1 mu_2)``. For fixed ``X_1`` put ``K = epsilon - c + a_1 X_1 / 2``; the expectation
over ``X_2 ~ chi2_t`` of ``(1 - e^{K + a_2 X_2 / 2})_+`` is closed form, because
``e^{b x} f_t(x) = (1 - 2b)^{-t/2} g(x)`` for ``b < 1/2``, with ``f_t`` the chi2_t density and ``g``
that of ``chi2_t / (1 - 2b)`` (here
``1 - 2b = 1/mu_2``). For ``mu_2 < 1`` the bracket is positive for ``X_2 > x* = max(0, 2K/(1/mu_2 - 1))``
and the expectation is ``Q(t/2, x*/2) - e^K mu_2^{t/2} Q(t/2, x*/(2 mu_2))``, ``Q`` the regularised
upper incomplete gamma function (``scipy.special.gammaincc``); for ``mu_2 > 1`` it is positive for
``X_2 < x* = -2K/(1 - 1/mu_2)`` and the same with the lower function ``P`` (``gammainc``). The outer
integral over ``X_1`` is adaptive Gauss-Kronrod (``scipy.integrate.quad``, relative tolerance 1e-10)
on ``[0, F^{-1}(1 - 1e-40)]`` with break points at chi-square quantiles and at the kink ``K = 0``. The
returned value adds quad's error estimate and the truncated tail mass (so it is never below 1e-40),
which makes it an upper bound up to floating-point rounding; computing it with the roles of the two
coordinates swapped (other branches) agrees to about 1e-10 relative, and Monte Carlo of the
likelihood ratio of the actual Gaussian laws agrees within its standard error
(``tests/test_bbds.py``). No Monte Carlo is used here.

**Scope.** The accountant covers exactly the release of ``Y_c = [A, sigma_min I_m] Omega`` with
``Phi = I`` (no JL pre-projection: with ``Y_c = Â Phi Omega`` use the paper's ``kappa`` inflation,
which this module does not certify), Gaussian ``Omega`` that is secret (never released, never
derived from a public seed) and used for this one release only (not reused across releases, time
steps or tree nodes), and the padding exactly ``sigma_min I_m`` on the side of dimension ``m``
(the side of ``u``). Other sketches of the same data compose with it (basic composition via
:func:`bbds_event`).
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import integrate, optimize, special, stats

from .._constraints import Constraint, Interval, validated
from ._accounting import EpsilonDeltaDpEvent

__all__ = [
    "bbds_delta",
    "bbds_event",
    "covariance_delta",
    "min_sigma_min",
    "paper_sigma_min",
    "worst_case_eigenvalues",
]

_TAIL = 1e-40  # chi-square tail mass left out of the outer integral (added back to the result)
_EPSREL = 1e-10
_SAFETY = 1e-7  # min_sigma_min certifies delta * (1 - _SAFETY), a margin for quadrature error


# ----------------------------------------------------------------------------------------------
# parameters (constraint tables: dpspectral._constraints)
# ----------------------------------------------------------------------------------------------


class _PlusInfinity(Constraint):
    """``inf`` itself (an epsilon of ``inf``: no guarantee)."""

    description = "inf"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf


_POSITIVE = Interval(0, None, "neither")
_UNIT = Interval(0, 1, "neither")
_COLUMNS = Interval(1, None, "left", integer=True)
_NON_NEGATIVE = Interval(0, None, "left")


# ----------------------------------------------------------------------------------------------
# the hockey-stick divergence of t i.i.d. Gaussian columns
# ----------------------------------------------------------------------------------------------


def _inner(K: float, mu: float, h: float) -> float:
    """``E[(1 - exp(K - (1 - 1/mu) X / 2))_+]`` for ``X ~ chi2_{2h}`` (closed form)."""
    if mu == 1.0:
        return -math.expm1(K) if K < 0 else 0.0
    rate = 0.5 * (1.0 - 1.0 / mu)  # the exponent is K + rate * X; rate > 0 when mu > 1
    log_w = K + h * math.log(mu)  # log of e^K E[e^{rate X}] = e^K mu^h
    if rate > 0:  # (1 - e^{K + rate X}) > 0  <=>  X < -K / rate
        if K >= 0:
            return 0.0
        xs = -K / rate
        first = float(special.gammainc(h, xs / 2))
        second = float(special.gammainc(h, xs / (2 * mu)))
    else:  # rate < 0: positive  <=>  X > K / |rate|
        if K <= 0:
            return max(0.0, -math.expm1(log_w))
        xs = K / -rate
        first = float(special.gammaincc(h, xs / 2))
        second = float(special.gammaincc(h, xs / (2 * mu)))
    term = math.exp(log_w + math.log(second)) if second > 0 else 0.0
    return max(0.0, first - term)


def _covariance_delta(epsilon: float, mu_outer: float, mu_inner: float, t: int) -> float:
    """``E_P[(1 - e^{epsilon - L})_+]``; the expectation over the ``mu_inner`` coordinate is closed form."""
    h = 0.5 * t
    c = h * (math.log(mu_outer) + math.log(mu_inner))
    a = 1.0 - 1.0 / mu_outer
    K0 = epsilon - c
    if a == 0.0:
        return min(1.0, _inner(K0, mu_inner, h))
    log_norm = h * math.log(2.0) + float(special.gammaln(h))

    def integrand(x: float) -> float:
        if x <= 0.0:
            return 0.0
        dens = math.exp((h - 1.0) * math.log(x) - 0.5 * x - log_norm)
        return dens * _inner(K0 + 0.5 * a * x, mu_inner, h) if dens > 0 else 0.0

    upper = float(stats.chi2.isf(_TAIL, t))
    probs = [1e-12, 1e-6, 1e-3, 0.1, 0.5, 0.9, 0.999, 1 - 1e-6]
    points = {float(q) for q in stats.chi2.ppf(probs, t)}
    kink = -2.0 * K0 / a  # where K = 0
    if 0.0 < kink < upper:
        points.add(kink)
    pts = sorted(p for p in points if 0.0 < p < upper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, err = integrate.quad(integrand, 0.0, upper, points=pts, epsabs=0.0, epsrel=_EPSREL, limit=500)
    return float(min(1.0, max(0.0, value) + abs(err) + _TAIL))


@validated({"epsilon": _NON_NEGATIVE, "t": _COLUMNS})
def covariance_delta(epsilon: float, mu: Sequence[float], t: int) -> float:
    """Hockey-stick divergence between ``t`` i.i.d. draws of ``N(0, I)`` and of ``N(0, diag(mu))``.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, in [0, inf).
    mu : sequence of one or two floats
        The whitened covariance eigenvalues of the second law that differ from 1 (all > 0).
    t : int
        The number of i.i.d. columns.

    Returns
    -------
    float
        ``delta = E_P[(1 - e^{epsilon - L})_+]`` with ``P = N(0, I)^t``, ``Q = N(0, diag(mu))^t``
        and ``L = ln dP/dQ = sum_i [(t/2) ln mu_i - (1 - 1/mu_i) X_i / 2]``, ``X_i ~ chi2_t``.
        One direction only: the other (``Q`` vs ``P``) is ``covariance_delta(epsilon, 1/mu, t)``.
        An upper bound up to rounding (quadrature error estimate added).
    """
    owner = "covariance_delta"
    values = list(mu) if isinstance(mu, (Sequence, np.ndarray)) else None
    if (
        values is None
        or not 1 <= len(values) <= 2
        or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 < v < math.inf for v in values
        )
    ):
        raise ValueError(
            f"The 'mu' parameter of {owner} must be a sequence of one or two floats in (0, inf). "
            f"Got {mu!r} instead."
        )
    m = sorted((float(v) for v in values), reverse=True)
    if len(m) == 1:
        m.append(1.0)
    return _covariance_delta(float(epsilon), m[0], m[1], int(t))


@validated({"sigma_min": _POSITIVE})
def worst_case_eigenvalues(sigma_min: float) -> tuple[float, float]:
    """The supremum / infimum ``(mu_+, mu_-)`` of the whitened eigenvalues over Priv1 neighbours.

    ``mu_± = exp(±2 asinh(1 / (2 sigma_min)))`` (see the module docstring); ``mu_+ mu_- = 1``.
    """
    x = 2.0 * math.asinh(0.5 / float(sigma_min))
    return math.exp(x), math.exp(-x)


@functools.lru_cache(maxsize=4096)
def _bbds_delta(epsilon: float, sigma_min: float, t: int) -> float:
    mu_p, mu_m = worst_case_eigenvalues(sigma_min)
    return max(
        _covariance_delta(epsilon, mu_p, mu_m, t),
        _covariance_delta(epsilon, 1.0 / mu_m, 1.0 / mu_p, t),
    )


@validated({"epsilon": _POSITIVE, "sigma_min": _POSITIVE, "t": _COLUMNS})
def bbds_delta(epsilon: float, sigma_min: float, t: int) -> float:
    """The exact worst-case delta(epsilon) of releasing ``t`` columns of ``[A, sigma_min I] Omega``.

    Parameters
    ----------
    epsilon : float
        In (0, inf).
    sigma_min : float
        The padding, in (0, inf) (for neighbours ``A + b u v^T`` pass ``sigma_min / b``).
    t : int
        The number of columns (>= 1).

    Returns
    -------
    float
        ``sup`` over Priv1 neighbours (both orders) of ``E_P[(1 - e^{epsilon - L})_+]``, which is the
        hockey-stick divergence at the worst-case eigenvalues ``(mu_+, mu_-)`` of
        :func:`worst_case_eigenvalues`. Decreasing in ``epsilon`` and ``sigma_min``, increasing in
        ``t``.

    Raises
    ------
    ValueError
        For an epsilon or sigma_min outside (0, inf) or a t that is not an int >= 1.

    Notes
    -----
    **Privacy**: the derivation and its scope (``Phi = I``; ``Omega`` Gaussian, secret and used
    once) are in the module docstring. The spec's table maximises over infeasible ``(s, r, theta)``
    and is 1.6-1.9 times more conservative in ``sigma_min``.
    """
    return _bbds_delta(float(epsilon), float(sigma_min), int(t))


def _spec_relaxed_delta(epsilon: float, sigma_min: float, t: int, n_theta: int = 33) -> float:
    """The spec's (conservative) calibration: max over theta at s = 1/sigma_min, r = 1, both orders.

    Kept to reproduce the spec's table; the points it maximises over are not reachable by
    neighbours (see the module docstring).
    """
    s = 1.0 / sigma_min
    best = 0.0
    for theta in np.linspace(0.0, math.pi, n_theta):
        cos, sin = math.cos(theta), math.sin(theta)
        mat = np.array([[1 + s * s + 2 * s * cos, s * sin], [s * sin, 1.0]])
        lo, hi = (float(v) for v in np.linalg.eigvalsh(mat))
        lo = min(lo, 1.0)  # guard rounding: mu_2 <= 1 <= mu_1
        hi = max(hi, 1.0)
        best = max(
            best, _covariance_delta(epsilon, hi, lo, t), _covariance_delta(epsilon, 1.0 / lo, 1.0 / hi, t)
        )
    return best


# ----------------------------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _min_sigma_min(epsilon: float, delta: float, t: int) -> float:
    target = delta * (1.0 - _SAFETY)
    log_target = math.log(target)

    def excess(log_sigma: float) -> float:
        d = _bbds_delta(epsilon, math.exp(log_sigma), t)
        return math.log(max(d, 1e-300)) - log_target

    # Bracket around the Gaussian-like rule of thumb sigma ~ sqrt(t ln(1.25/delta)) / epsilon.
    guess = max(1.0, math.sqrt(t * math.log(1.25 / delta)) / epsilon)
    lo = hi = math.log(guess)
    while excess(lo) <= 0:
        lo -= math.log(2.0)
        if lo < -700:  # cannot happen: delta -> 1 as sigma_min -> 0
            raise RuntimeError("min_sigma_min: no lower bracket found")
    while excess(hi) > 0:
        hi += math.log(2.0)
        if hi > 700:
            raise RuntimeError("min_sigma_min: no upper bracket found")
    root = float(optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-12))
    sigma = math.exp(root)
    # Round up: the answer must certify; step up until it does (at most a few steps).
    for _ in range(200):
        if _bbds_delta(epsilon, sigma, t) <= target:
            return sigma
        sigma *= 1.0 + 1e-9
    return math.exp(hi)


@validated({"epsilon": _POSITIVE, "delta": _UNIT, "t": _COLUMNS})
def min_sigma_min(epsilon: float, delta: float, t: int) -> float:
    """The smallest ``sigma_min`` for which the input-perturbed sketch is (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    t : int
        The number of released columns (>= 1).

    Returns
    -------
    float
        A ``sigma_min`` with ``bbds_delta(epsilon, sigma_min, t) <= delta * (1 - 1e-7)`` found by
        Brent's method on ``log sigma_min`` (``bbds_delta`` is monotone in ``sigma_min``) and
        rounded up, so never below the true minimum; within about 1e-7 relative of it. Cached.

    Raises
    ------
    ValueError
        For an epsilon outside (0, inf), a delta outside (0, 1) or a t that is not an int >= 1.

    Notes
    -----
    **Privacy**: see the module docstring (exact worst case over Priv1 neighbours; ``Phi = I``;
    ``Omega`` secret and used once). Takes a few tens of milliseconds for t <= 200.
    """
    return _min_sigma_min(float(epsilon), float(delta), int(t))


@validated({"epsilon": _POSITIVE, "delta": _UNIT, "t": _COLUMNS, "alpha": _UNIT})
def paper_sigma_min(epsilon: float, delta: float, t: int, alpha: float) -> float:
    """The paper's padding ``sigma_min = 16 ln(1/delta) sqrt(t kappa ln(1/delta)) / epsilon``.

    Parameters
    ----------
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    t : int
        The number of columns (>= 1).
    alpha : float
        The multiplicative error, in (0, 1); ``kappa = (1 + alpha) / (1 - alpha)``.

    Returns
    -------
    float
        The recalled closed form (spec §2, R-recall, not checked against the paper). It is far
        larger than :func:`min_sigma_min` (e.g. 3,354 vs 17.2 at epsilon = 1, delta = 1e-6,
        t = 10, alpha = 0.25), so safe but noisy; what it certifies is given by :func:`bbds_delta`.
    """
    eps, dlt, tt, a = float(epsilon), float(delta), int(t), float(alpha)
    kappa = (1.0 + a) / (1.0 - a)
    log_inv = math.log(1.0 / dlt)
    return 16.0 * log_inv * math.sqrt(tt * kappa * log_inv) / eps


@validated({"epsilon": [_NON_NEGATIVE, _PlusInfinity()], "delta": Interval(0, 1, "left")})
def bbds_event(epsilon: float, delta: float) -> EpsilonDeltaDpEvent:
    """The release of the input-perturbed sketch as an ``EpsilonDeltaDpEvent(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        In [0, inf]: typically the epsilon the sketch was calibrated for with :func:`min_sigma_min`,
        or the one :func:`bbds_delta` certifies for a given ``sigma_min`` (``inf``: no guarantee).
    delta : float
        In [0, 1).

    Returns
    -------
    EpsilonDeltaDpEvent
        Composed with the other releases by basic composition (see :mod:`.accounting`).
    """
    return EpsilonDeltaDpEvent(float(epsilon), float(delta))
