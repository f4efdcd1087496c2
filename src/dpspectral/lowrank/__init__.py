"""Private low-rank factorization (Upadhyay, NeurIPS 2018): U, Sigma, V of a private matrix.

One-shot algorithms in :mod:`.factorization` (Optimal-Space-LRF, Private-Space-Optimal-LRF (Priv1),
Private-Frobenius-LRF (Priv2)); the turnstile state :class:`TurnstileLRF` in :mod:`.streaming`; continual
release (binary tree) in :mod:`.continual`; Private-Covariance-LRF in :mod:`.covariance`; the Hardt–Roth
baseline in :mod:`.hardt_roth` (default: the noisy subspace iteration of :mod:`.power`); sketches and the
closed-form solves in :mod:`.sketches`; singular values chosen from released quantities in :mod:`.shrink`;
results that need the data owner's A to reconstruct in :mod:`.subspace`. The local
protocol (Private-Local-LRF) is :mod:`dpspectral.local._lowrank`.
"""

from ._continual import ContinualLRF, continual_lrf
from ._continual_space_optimal import ContinualSpaceOptimalLRF, continual_space_optimal_lrf
from ._covariance import CovarianceLRF, covariance_lrf
from ._factorization import optimal_space_lrf, private_frobenius_lrf, private_space_optimal_lrf
from ._hardt_roth import PowerIteration, RangeFinder, hardt_roth
from ._sketch_options import Sketch
from ._sketches import chi2_factor, rank_k_between, rank_k_left, sketch_sizes
from ._streaming import StateFileError, TurnstileLRF, turnstile_lrf
from ._subspace import GramResult, RowSubspaceResult
from ._turnstile_space_optimal import TurnstileSpaceOptimalLRF, turnstile_space_optimal_lrf

__all__ = [
    "ContinualLRF",
    "ContinualSpaceOptimalLRF",
    "CovarianceLRF",
    "GramResult",
    "PowerIteration",
    "RangeFinder",
    "RowSubspaceResult",
    "Sketch",
    "StateFileError",
    "TurnstileLRF",
    "TurnstileSpaceOptimalLRF",
    "continual_lrf",
    "continual_space_optimal_lrf",
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


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "continual": "_continual",
        "continual_space_optimal": "_continual_space_optimal",
        "covariance": "_covariance",
        "factorization": "_factorization",
        "hardt_roth": "_hardt_roth",
        "power": "_power",
        "shrink": "_shrink",
        "sketches": "_sketches",
        "streaming": "_streaming",
        "subspace": "_subspace",
        "turnstile_space_optimal": "_turnstile_space_optimal",
    },
)
