"""dpspectral: differentially private spectral methods (PCA, low-rank factorization, GEPs)."""

from ._array_api import config_context, get_config, set_config, to_numpy
from .costs import pipeline_cost
from .distributed import DistributedDPPCA, SiteFailureError, SiteFailureWarning, dpdispca
from .estimators import DPPCA, DPLowRank, UncentredWarning
from .gep import DPFisherDiscriminant, GEPResult, private_fda, private_gep
from .gep.lda import DPLinearDiscriminantAnalysis
from .linalg import UnresolvedVarianceWarning
from .local import local_gaussian
from .lowrank import optimal_space_lrf, private_frobenius_lrf, private_space_optimal_lrf
from .pca import analyze_gauss, dp_spca, dp_vrpca, mod_sulq, noisy_power, wishart
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
from .public_basis import PublicBasis, with_public_basis
from .registry import Method, get_method, methods
from .results import LowRankResult, SubspaceResult

__version__ = "0.1.0"

__all__ = [
    "DPFisherDiscriminant",
    "DPLinearDiscriminantAnalysis",
    "DPLowRank",
    "DPStandardScaler",
    "GEPResult",
    "private_fda",
    "private_gep",
    "DistributedDPPCA",
    "SiteFailureError",
    "SiteFailureWarning",
    "dpdispca",
    "DPPCA",
    "LowRankResult",
    "Accountant",
    "BudgetExceededError",
    "Method",
    "PrivacyBudget",
    "PrivacyParameterWarning",
    "PublicBasis",
    "PrivacyReport",
    "PureEpsilonWarning",
    "Relation",
    "SubspaceResult",
    "UncentredWarning",
    "UncertifiedPrivacyWarning",
    "UnresolvedVarianceWarning",
    "analyze_gauss",
    "config_context",
    "get_config",
    "set_config",
    "to_numpy",
    "dp_spca",
    "dp_vrpca",
    "get_method",
    "local_gaussian",
    "methods",
    "mod_sulq",
    "noisy_power",
    "optimal_space_lrf",
    "pipeline_cost",
    "private_frobenius_lrf",
    "private_space_optimal_lrf",
    "wishart",
    "with_public_basis",
]
