"""dpspectral: differentially private spectral methods (PCA, low-rank factorization, GEPs)."""

from .estimators import DPPCA
from .local import local_gaussian
from .pca import analyze_gauss, dp_spca, dp_vrpca, mod_sulq, noisy_power, wishart
from .privacy import (
    Accountant,
    BudgetExceededError,
    PrivacyBudget,
    PrivacyReport,
    Relation,
    UncertifiedPrivacyWarning,
)
from .registry import Method, get_method, methods
from .results import SubspaceResult

__version__ = "0.1.0"

__all__ = [
    "DPPCA",
    "Accountant",
    "BudgetExceededError",
    "Method",
    "PrivacyBudget",
    "PrivacyReport",
    "Relation",
    "SubspaceResult",
    "UncertifiedPrivacyWarning",
    "analyze_gauss",
    "dp_spca",
    "dp_vrpca",
    "get_method",
    "local_gaussian",
    "methods",
    "mod_sulq",
    "noisy_power",
    "wishart",
]
