"""Private low-rank factorization (Upadhyay, NeurIPS 2018): U, Sigma, V of a private matrix.

One-shot algorithms in :mod:`.factorization` (Optimal-Space-LRF, Private-Space-Optimal-LRF (Priv1),
Private-Frobenius-LRF (Priv2)); the turnstile state :class:`TurnstileLRF` in :mod:`.streaming`; continual
release (binary tree) in :mod:`.continual`; Private-Covariance-LRF in :mod:`.covariance`; the Hardt–Roth
baseline in :mod:`.hardt_roth` (default: the noisy subspace iteration of :mod:`.power`); sketches and the
closed-form solves in :mod:`.sketches`; singular values chosen from released quantities in :mod:`.shrink`;
results that need the data owner's A to reconstruct in :mod:`.subspace`. The local
protocol (Private-Local-LRF) is :mod:`dpspectral.local.lowrank`.
"""

from .continual import ContinualLRF, continual_lrf
from .covariance import CovarianceLRF, covariance_lrf
from .factorization import optimal_space_lrf, private_frobenius_lrf, private_space_optimal_lrf
from .hardt_roth import hardt_roth
from .sketches import chi2_factor, rank_k_between, rank_k_left, sketch_sizes
from .streaming import StateFileError, TurnstileLRF, turnstile_lrf
from .subspace import GramResult, RowSubspaceResult
from .turnstile_space_optimal import TurnstileSpaceOptimalLRF, turnstile_space_optimal_lrf

__all__ = [
    "ContinualLRF",
    "CovarianceLRF",
    "GramResult",
    "RowSubspaceResult",
    "StateFileError",
    "TurnstileLRF",
    "TurnstileSpaceOptimalLRF",
    "continual_lrf",
    "covariance_lrf",
    "turnstile_lrf",
    "turnstile_space_optimal_lrf",
    "chi2_factor",
    "hardt_roth",
    "optimal_space_lrf",
    "private_frobenius_lrf",
    "private_space_optimal_lrf",
    "rank_k_between",
    "rank_k_left",
    "sketch_sizes",
]
