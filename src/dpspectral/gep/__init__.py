"""Private generalized eigenproblems: simultaneous reduction (Chen et al., paper 003) and baselines.

Pairs: :func:`fda_pair` (between-/within-class scatter), :func:`pca_pair` (covariance, I),
:func:`symmetric_definite_pair` (the caller's, with stated sensitivities). Solvers on a pair:
:func:`simultaneous_reduction` (non-private), :func:`sr_dp`, :func:`dpsr`, :func:`dpsrs`,
:func:`dp_rayleigh_flow`, :func:`dp_truncated_rayleigh_flow`. One-call entry points:
:func:`private_fda`, :func:`private_pca_gep`, :func:`private_gep`. The sklearn transformer:
:class:`DPFisherDiscriminant`. See ``docs/algorithms/gep.md``.
"""

from ._estimator import DPFisherDiscriminant
from ._groups import PaperCalibration, StepSizes
from ._lda import DPLinearDiscriminantAnalysis
from ._rayleigh import dp_rayleigh_flow, dp_truncated_rayleigh_flow, rho_from_epsilon_delta
from ._reduction import (
    DEFAULT_BUDGET_SHARES,
    dpsr,
    dpsrs,
    paper_noise_scales,
    regularized_reduction,
    simultaneous_reduction,
    sr_dp,
)
from ._result import GEPResult
from ._scatter import (
    PairSensitivity,
    ScatterPair,
    fda_pair,
    fda_sensitivity,
    pca_pair,
    pca_sensitivity,
    symmetric_definite_pair,
)
from ._solve import GEP_METHODS, GEPMethod, fda_method, private_fda, private_gep, private_pca_gep, solve_pair

__all__ = [
    "DEFAULT_BUDGET_SHARES",
    "DPFisherDiscriminant",
    "DPLinearDiscriminantAnalysis",
    "GEPMethod",
    "GEPResult",
    "GEP_METHODS",
    "PairSensitivity",
    "PaperCalibration",
    "ScatterPair",
    "StepSizes",
    "dp_rayleigh_flow",
    "dp_truncated_rayleigh_flow",
    "dpsr",
    "dpsrs",
    "fda_method",
    "fda_pair",
    "fda_sensitivity",
    "paper_noise_scales",
    "pca_pair",
    "pca_sensitivity",
    "private_fda",
    "private_gep",
    "private_pca_gep",
    "regularized_reduction",
    "rho_from_epsilon_delta",
    "simultaneous_reduction",
    "solve_pair",
    "sr_dp",
    "symmetric_definite_pair",
]


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "estimator": "_estimator",
        "labels": "_labels",
        "lda": "_lda",
        "moments": "_moments",
        "rayleigh": "_rayleigh",
        "reduction": "_reduction",
        "result": "_result",
        "scatter": "_scatter",
        "solve": "_solve",
    },
)
