"""Independent references shared by the pinned-release tests (never the library's own formulas).

* the analytic Gaussian mechanism (Balle and Wang 2018, Thm 8), root-found with SciPy;
* adaptive composition of Gaussian releases (their Gaussian-DP mu's add in quadrature);
* per-row clipping and the Fisher-discriminant scatter pair, written from their definitions.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def bw_delta(epsilon: float, s: float) -> float:
    """delta(epsilon) of the Gaussian mechanism with noise multiplier s (std over L2 sensitivity)."""
    a, b = 0.5 / s - epsilon * s, -0.5 / s - epsilon * s
    return float(stats.norm.cdf(a) - math.exp(epsilon + stats.norm.logcdf(b)))


def bw_multiplier(epsilon: float, delta: float) -> float:
    """The smallest multiplier whose Gaussian mechanism is (epsilon, delta)-DP."""
    return float(optimize.brentq(lambda s: bw_delta(epsilon, s) - delta, 1e-4, 1e3, xtol=1e-16,
                                 rtol=1e-14))


def bw_epsilon(s: float, delta: float) -> float:
    """The epsilon at ``delta`` of the Gaussian mechanism with multiplier s."""
    if bw_delta(0.0, s) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: bw_delta(e, s) - delta, 0.0, 500.0, xtol=1e-14, rtol=1e-14))


def composed(*multipliers: float) -> float:
    """Gaussian releases composed adaptively are one Gaussian release: mu's add in quadrature."""
    return sum(m**-2.0 for m in multipliers) ** -0.5


def clip_by_hand(X: np.ndarray, c: float) -> np.ndarray:
    """Rows scaled to norm at most c: ``x min(1, c / ||x||)``."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, c / np.where(norms > 0, norms, 1.0))[:, None]


def fda_by_hand(X: np.ndarray, y: np.ndarray, classes, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Between-class A and within-class B (1/n normalised) of the rows clipped to c, from the definitions."""
    X = clip_by_hand(X, c)
    n, d = X.shape
    mu = X.mean(axis=0)
    A, B = np.zeros((d, d)), np.zeros((d, d))
    for label in classes:
        Xc = X[y == label]
        if len(Xc) == 0:
            continue
        mc = Xc.mean(axis=0)
        A += len(Xc) * np.outer(mc - mu, mc - mu)
        B += (Xc - mc).T @ (Xc - mc)
    return A / n, B / n


def fda_b_worst_pair(q: int, d: int, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replace-one neighbours that nearly reach the within-class sensitivity: class 0 holds q rows at
    -c e1 and the record c e1, class 1 q rows at -c e2; the neighbour moves the record to (c e2, class 1).
    ``n ||dB||_F`` tends to 4 sqrt(2) c^2 as q grows."""
    e = np.eye(d) * c
    X0 = np.vstack([np.tile(-e[0], (q, 1)), np.tile(-e[1], (q, 1)), e[0]])
    y0 = np.r_[np.zeros(q), np.ones(q), 0].astype(int)
    X1, y1 = X0.copy(), y0.copy()
    X1[-1], y1[-1] = e[1], 1
    return X0, y0, X1, y1
