"""Statistical privacy audits: lower bounds on epsilon from many runs on a neighbouring pair.

Two tests on a scalar statistic ``T`` of the output, computed on runs over the two data sets of a
worst-case neighbouring pair:

* :func:`threshold_epsilon_lower_bound` (black-box): for a threshold fixed in advance,
  ``epsilon >= ln((P[T0 > t] - delta) / P[T1 > t])`` for every (epsilon, delta)-DP mechanism; the two
  probabilities are replaced by one-sided Clopper-Pearson bounds, so the reported bound exceeds the
  truth with probability at most ``alpha``.
* :func:`gaussian_mu_lower_bound` (for Gaussian mechanisms, whose ``T`` is ``N(m_j, sigma^2)``): a
  lower confidence bound on ``mu = |m_0 - m_1| / sigma``; the mechanism is ``mu``-GDP at best, so
  ``epsilon(mu_lb, delta)`` is a lower bound on its epsilon, again with false-positive rate
  ``alpha``. This is far more powerful: a noise scale off by a factor of two is detected with a few
  thousand runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._budget import Relation, as_relation
from ._gaussian import gaussian_epsilon

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "covariance_pair",
    "gaussian_audit",
    "gaussian_mu_lower_bound",
    "released_matrix_statistic",
    "run_pair",
    "threshold_epsilon_bounds",
    "threshold_epsilon_lower_bound",
]


@dataclass(frozen=True)
class AuditResult:
    """What an audit found, next to what was claimed."""

    claimed_epsilon: float
    delta: float
    epsilon_lower_bound: float
    alpha: float
    method: str
    n_runs: int

    @property
    def violated(self) -> bool:
        return self.epsilon_lower_bound > self.claimed_epsilon


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided (1 - alpha) Clopper-Pearson bounds ``(lower, upper)`` for a binomial proportion."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def threshold_epsilon_lower_bound(
    t0: np.ndarray, t1: np.ndarray, threshold: float, delta: float, alpha: float = 1e-3
) -> float:
    """Black-box lower bound on epsilon from the event ``T > threshold`` (either direction).

    ``threshold`` must be chosen before looking at ``t0``, ``t1``. The bound holds with probability
    at least ``1 - alpha`` (``alpha`` split over the two proportions and the two directions).
    """
    best = 0.0
    a = alpha / 4
    for hi_side, lo_side in ((t0, t1), (t1, t0)):
        k_hi = int(np.sum(hi_side > threshold))
        k_lo = int(np.sum(lo_side > threshold))
        p_hi, _ = clopper_pearson(k_hi, hi_side.size, a)
        _, p_lo = clopper_pearson(k_lo, lo_side.size, a)
        if p_hi - delta > 0 and p_lo > 0:
            best = max(best, math.log((p_hi - delta) / p_lo))
    return best


def gaussian_mu_lower_bound(t0: np.ndarray, t1: np.ndarray, alpha: float = 1e-3) -> float:
    """Lower (1 - alpha) confidence bound on ``|m0 - m1| / sigma`` for two normal samples.

    The common sigma is bounded above with the chi-square interval of the pooled variance
    (level alpha/2) and the mean difference below with a normal interval at that sigma (alpha/2);
    by the union bound the result exceeds the true ratio with probability at most alpha.
    """
    n0, n1 = t0.size, t1.size
    diff = abs(float(np.mean(t0) - np.mean(t1)))
    dof = n0 + n1 - 2
    pooled = (np.sum((t0 - t0.mean()) ** 2) + np.sum((t1 - t1.mean()) ** 2)) / dof
    sigma_hi = math.sqrt(pooled * dof / stats.chi2.ppf(alpha / 2, dof))
    diff_lo = diff - stats.norm.ppf(1 - alpha / 2) * sigma_hi * math.sqrt(1 / n0 + 1 / n1)
    return max(0.0, float(diff_lo / sigma_hi))


def covariance_pair(relation: Relation | str, d: int = 2, row_norm: float = 1.0,
                    n_background: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worst-case neighbours for second-moment mechanisms and the direction of their difference.

    Replace-one: one row ``C e_1`` versus ``C e_2`` (``||x x^T - y y^T||_F = sqrt(2) C^2``, the
    maximum). Add/remove: the row ``C e_1`` present or absent (``||x x^T||_F = C^2``). Both data sets
    also hold ``n_background`` zero rows. Returns ``(X0, X1, D)`` with ``D = X0^T X0 - X1^T X1``.
    """
    rel = as_relation(relation)
    base = np.zeros((n_background, d))
    x = np.zeros((1, d))
    x[0, 0] = row_norm
    X0 = np.vstack([x, base])
    if rel is Relation.REPLACE_ONE:
        y = np.zeros((1, d))
        y[0, 1] = row_norm
        X1 = np.vstack([y, base])
    else:
        X1 = base
    D = X0.T @ X0 - X1.T @ X1
    return X0, X1, D


def released_matrix_statistic(D: np.ndarray) -> Callable[[np.ndarray, np.ndarray], float]:
    """``T = <upper(S_hat), upper(D)> / ||upper(D)||`` from a full eigendecomposition (k = d).

    The projection of the released upper triangle on the direction of the neighbours' difference: the
    likelihood-ratio statistic of a Gaussian mechanism, with standard deviation equal to the noise
    standard deviation.
    """
    iu = np.triu_indices(D.shape[0])
    direction = D[iu] / np.linalg.norm(D[iu])

    def statistic(components: np.ndarray, values: np.ndarray) -> float:
        S_hat = (components * values) @ components.T
        return float(S_hat[iu] @ direction)

    return statistic


def run_pair(
    mechanism: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    X0: np.ndarray,
    X1: np.ndarray,
    statistic: Callable[[np.ndarray, np.ndarray], float],
    n_runs: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``mechanism(X, seed) -> (components, values)`` ``n_runs`` times on each data set.

    Seeds come from one ``SeedSequence``, distinct for every run.
    """
    seeds = np.random.SeedSequence(seed).generate_state(2 * n_runs)
    t0 = np.array([statistic(*mechanism(X0, int(s))) for s in seeds[:n_runs]])
    t1 = np.array([statistic(*mechanism(X1, int(s))) for s in seeds[n_runs:]])
    return t0, t1


def gaussian_audit(
    t0: np.ndarray, t1: np.ndarray, claimed_epsilon: float, delta: float, alpha: float = 1e-3
) -> AuditResult:
    """Epsilon lower bound of a Gaussian mechanism from its two output samples."""
    mu_lb = gaussian_mu_lower_bound(t0, t1, alpha)
    eps_lb = 0.0 if mu_lb == 0 else gaussian_epsilon(1.0 / mu_lb, delta)
    return AuditResult(claimed_epsilon, delta, eps_lb, alpha, "gaussian", t0.size + t1.size)


def threshold_epsilon_bounds(
    k0: np.ndarray, k1: np.ndarray, n0: int, n1: int, delta: float, alpha: float = 1e-3
) -> np.ndarray:
    """:func:`threshold_epsilon_lower_bound` from counts, vectorised over thresholds.

    ``k0[i]`` of ``n0`` runs on the first data set and ``k1[i]`` of ``n1`` on the second exceed
    threshold ``i``; returns the bound of each threshold (the same numbers as
    :func:`threshold_epsilon_lower_bound` on such runs). For choosing thresholds quickly (e.g. on a
    pilot sample): testing several thresholds on the same runs needs a multiplicity correction.
    """
    k0 = np.asarray(k0, dtype=np.int64)
    k1 = np.asarray(k1, dtype=np.int64)
    a = alpha / 4

    def lower(k: np.ndarray, n: int) -> np.ndarray:
        safe = np.clip(k, 1, n)
        return np.where(k == 0, 0.0, stats.beta.ppf(a, safe, n - safe + 1))

    def upper(k: np.ndarray, n: int) -> np.ndarray:
        safe = np.clip(k, 0, n - 1)
        return np.where(k == n, 1.0, stats.beta.ppf(1 - a, safe + 1, n - safe))

    best = np.zeros(np.broadcast(k0, k1).shape)
    for p_hi, p_lo in ((lower(k0, n0), upper(k1, n1)), (lower(k1, n1), upper(k0, n0))):
        ok = (p_hi - delta > 0) & (p_lo > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(ok, np.log(np.where(ok, p_hi - delta, 1.0) / np.where(ok, p_lo, 1.0)), 0.0)
        best = np.maximum(best, value)
    return best
