"""dpspectral: differentially private spectral methods (PCA, low-rank factorization, GEPs)."""

from .estimators import DPPCA
from .pca import analyze_gauss, mod_sulq, wishart
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
    "get_method",
    "methods",
    "mod_sulq",
    "wishart",
]
