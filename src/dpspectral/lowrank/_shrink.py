"""Singular values chosen from released quantities only: never worse than releasing nothing.

A released matrix ``Y = X + N`` (a x b) whose noise N has i.i.d. ``N(0, sigma^2)`` entries, sigma public,
has its noise singular values below the *edge* ``sigma (sqrt(a) + sqrt(b))`` (Gaussian concentration:
``||N||_2 <= sigma (sqrt(a) + sqrt(b) + t)`` except with probability ``exp(-t^2 / 2)``). A singular value
of Y at or below ``sigma (sqrt(a) + sqrt(b) + t)`` is indistinguishable from noise and gets 0; above it,
the spiked-model inversion (Benaych-Georges and Nadakuditi 2012; Gavish and Donoho 2017) gives

* :func:`signal_singular_values`: an estimate of the signal's singular value x from the noisy y
  (``y^2 = (x^2 + sigma^2 a)(x^2 + sigma^2 b) / x^2`` inverted);
* :func:`frobenius_shrink`: the Frobenius-optimal shrinker ``eta(y)``, the value that minimises the
  expected ``||X - U diag(eta) V^T||_F`` for the noisy singular vectors U, V of Y (their cosines with
  the signal's are below one, so eta < x).

Both read only ``y``, sigma and the shape: post-processing of a release, no privacy cost. In the
zero-signal limit (X = 0) every value is 0 except with probability ``fail`` (the default 1e-3), so the
choice never makes a reconstruction worse than the zero matrix there (tested).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["EDGE_FAILURE", "frobenius_shrink", "noise_threshold", "signal_singular_values"]

#: Probability that pure noise clears the threshold (so that a singular value of noise is kept).
EDGE_FAILURE = 1e-3


def noise_threshold(sigma: float, a: int, b: int, fail: float = EDGE_FAILURE) -> float:
    """``sigma (sqrt(a) + sqrt(b) + sqrt(2 ln(1/fail)))``: the a x b noise's spectral norm is below it
    except with probability ``fail`` (Gaussian concentration of the spectral norm, a 1-Lipschitz
    function, around its mean, which is at most ``sigma (sqrt(a) + sqrt(b))``, Gordon)."""
    return float(sigma) * (math.sqrt(a) + math.sqrt(b) + math.sqrt(2.0 * math.log(1.0 / fail)))


def _normalised(y: np.ndarray, sigma: float, a: int, b: int, fail: float) -> tuple[np.ndarray, np.ndarray,
                                                                                    float, float]:
    """``y / (sigma sqrt(max))``, the mask of values above the threshold, beta, and the unit."""
    big, small = max(a, b), min(a, b)
    unit = float(sigma) * math.sqrt(big)
    keep = np.asarray(y, dtype=float) > noise_threshold(sigma, a, b, fail)
    z = np.where(keep, np.asarray(y, dtype=float) / max(unit, 1e-300), 0.0)
    return z, keep, small / big, unit


def signal_singular_values(y: np.ndarray, sigma: float, a: int, b: int,
                           fail: float = EDGE_FAILURE) -> np.ndarray:
    """Estimates of the signal's singular values from the noisy ones ``y`` of an a x b release.

    0 at or below :func:`noise_threshold`; above, ``x`` solving ``y^2 = (x^2 + 1)(x^2 + beta) / x^2`` in
    units of ``sigma sqrt(max(a, b))``, ``beta = min(a, b) / max(a, b)``. With ``sigma = 0`` the values
    are returned unchanged.
    """
    y = np.asarray(y, dtype=float)
    if sigma <= 0:
        return y.copy()
    z, keep, beta, unit = _normalised(y, sigma, a, b, fail)
    u = z**2 - 1.0 - beta
    disc = np.maximum(u**2 - 4.0 * beta, 0.0)
    x2 = np.where(keep, (u + np.sqrt(disc)) / 2.0, 0.0)
    return np.sqrt(np.maximum(x2, 0.0)) * unit


def frobenius_shrink(y: np.ndarray, sigma: float, a: int, b: int, fail: float = EDGE_FAILURE) -> np.ndarray:
    """The Frobenius-optimal shrinkage of the noisy singular values ``y`` of an a x b release.

    ``eta = sqrt((z^2 - beta - 1)^2 - 4 beta) / z`` in units of ``sigma sqrt(max(a, b))`` above the
    threshold, 0 at or below it (Gavish and Donoho 2017, with the edge raised by the concentration
    margin so that pure noise is zeroed except with probability ``fail``).
    """
    y = np.asarray(y, dtype=float)
    if sigma <= 0:
        return y.copy()
    z, keep, beta, unit = _normalised(y, sigma, a, b, fail)
    disc = np.maximum((z**2 - beta - 1.0) ** 2 - 4.0 * beta, 0.0)
    eta = np.where(keep, np.sqrt(disc) / np.where(keep, z, 1.0), 0.0)
    return eta * unit
