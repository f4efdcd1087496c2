"""Private low-rank factorization (Upadhyay, NeurIPS 2018): U, Sigma, V of a private matrix.

One-shot algorithms in :mod:`.factorization`; sketches and the closed-form solves in :mod:`.sketches`.
"""

from .factorization import optimal_space_lrf, private_frobenius_lrf, private_space_optimal_lrf
from .hardt_roth import hardt_roth
from .sketches import chi2_factor, rank_k_between, rank_k_left, sketch_sizes

__all__ = [
    "chi2_factor",
    "hardt_roth",
    "optimal_space_lrf",
    "private_frobenius_lrf",
    "private_space_optimal_lrf",
    "rank_k_between",
    "rank_k_left",
    "sketch_sizes",
]
