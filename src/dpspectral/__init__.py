"""dpspectral: differentially private spectral methods (PCA, low-rank factorization, GEPs)."""

from ._array_api import config_context, get_config, set_config, to_numpy
from ._costs import pipeline_cost
from ._estimators import DPPCA, DPLowRank, UncentredWarning
from ._linalg import UnresolvedVarianceWarning
from ._options import AdaptiveClip
from ._public_basis import PublicBasis, with_public_basis
from ._registry import Method, get_method, methods
from ._results import LowRankResult, SubspaceResult
from .distributed import DistributedDPPCA, SiteFailureError, SiteFailurePolicy, SiteFailureWarning, dpdispca
from .gep import DPFisherDiscriminant, DPLinearDiscriminantAnalysis, GEPResult, private_fda, private_gep
from .local import local_gaussian, private_local_lrf
from .lowrank import (
    PowerIteration,
    RangeFinder,
    Sketch,
    continual_lrf,
    continual_space_optimal_lrf,
    covariance_lrf,
    hardt_roth,
    optimal_space_lrf,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    turnstile_lrf,
    turnstile_space_optimal_lrf,
)
from .pca import (
    EpsilonSplit,
    RangeEstimation,
    WarmupSchedule,
    analyze_gauss,
    dp_pca,
    dp_spca,
    dp_vrpca,
    exponential_pca,
    minibatch_oja,
    mod_sulq,
    noisy_power,
    oja,
    ppca,
    private_oja,
    wishart,
)
from .preprocessing import DPStandardScaler
from .privacy import (
    Accountant,
    BudgetExceededError,
    PrivacyBudget,
    PrivacyParameterWarning,
    PrivacyReport,
    PureEpsilonWarning,
    Relation,
    UncertifiedPrivacyWarning,
)

__version__ = "0.1.0"

# Every registry method of the PCA and low-rank tasks by its function (the GEP methods are the `method=`
# values of private_fda and DPFisherDiscriminant), the estimators, the registry and the privacy types.
__all__ = [
    "Accountant",
    "AdaptiveClip",
    "BudgetExceededError",
    "DistributedDPPCA",
    "DPFisherDiscriminant",
    "DPLinearDiscriminantAnalysis",
    "DPLowRank",
    "DPPCA",
    "DPStandardScaler",
    "EpsilonSplit",
    "GEPResult",
    "LowRankResult",
    "Method",
    "PrivacyBudget",
    "PowerIteration",
    "PrivacyParameterWarning",
    "PublicBasis",
    "PrivacyReport",
    "PureEpsilonWarning",
    "RangeEstimation",
    "RangeFinder",
    "Relation",
    "SiteFailureError",
    "SiteFailurePolicy",
    "SiteFailureWarning",
    "Sketch",
    "SubspaceResult",
    "UncentredWarning",
    "UncertifiedPrivacyWarning",
    "UnresolvedVarianceWarning",
    "WarmupSchedule",
    "analyze_gauss",
    "config_context",
    "continual_lrf",
    "continual_space_optimal_lrf",
    "covariance_lrf",
    "dp_pca",
    "dp_spca",
    "dp_vrpca",
    "dpdispca",
    "exponential_pca",
    "get_config",
    "get_method",
    "hardt_roth",
    "local_gaussian",
    "methods",
    "minibatch_oja",
    "mod_sulq",
    "noisy_power",
    "oja",
    "optimal_space_lrf",
    "pipeline_cost",
    "ppca",
    "private_fda",
    "private_frobenius_lrf",
    "private_gep",
    "private_local_lrf",
    "private_oja",
    "private_space_optimal_lrf",
    "set_config",
    "to_numpy",
    "turnstile_lrf",
    "turnstile_space_optimal_lrf",
    "wishart",
    "with_public_basis",
]


# The implementation modules are private; their old public paths keep working for one release.
from ._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "audit": "privacy._audit",
        "audit_runner": "_audit_runner",
        "constraints": "_constraints",
        "costs": "_costs",
        "estimators": "_estimators",
        "linalg": "_linalg",
        "moments": "_moments",
        "registry": "_registry",
        "results": "_results",
    },
)
