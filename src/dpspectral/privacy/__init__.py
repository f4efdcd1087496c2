"""The privacy core: budgets, relations, calibration, accounting, noise, clipping."""

from .accounting import (
    Accountant,
    EpsilonDeltaDpEvent,
    GaussianDpAccountant,
    LedgerEntry,
    ParallelDpEvent,
    PrivacyReport,
    PureDpAccountant,
    SampledGaussianAccountant,
    calibrate,
    certify_release,
    compose,
    epsilon_of,
    make_accountant,
)
from .budget import (
    BudgetExceededError,
    PrivacyBudget,
    PrivacyError,
    PureEpsilonWarning,
    Relation,
    UncertifiedPrivacyWarning,
    as_relation,
)
from .clipping import check_row_norm, clip_rows, row_norms
from .gaussian import (
    analytic_noise_multiplier,
    classic_noise_multiplier,
    gaussian_epsilon,
    split_noise_multiplier,
    symmetric_gaussian,
)
from .guardrails import PrivacyParameterWarning, check_privacy_parameters

__all__ = [
    "Accountant",
    "BudgetExceededError",
    "EpsilonDeltaDpEvent",
    "GaussianDpAccountant",
    "LedgerEntry",
    "ParallelDpEvent",
    "PrivacyBudget",
    "PrivacyError",
    "PrivacyParameterWarning",
    "PrivacyReport",
    "PureDpAccountant",
    "SampledGaussianAccountant",
    "Relation",
    "PureEpsilonWarning",
    "UncertifiedPrivacyWarning",
    "analytic_noise_multiplier",
    "as_relation",
    "calibrate",
    "certify_release",
    "check_privacy_parameters",
    "check_row_norm",
    "classic_noise_multiplier",
    "clip_rows",
    "compose",
    "epsilon_of",
    "gaussian_epsilon",
    "make_accountant",
    "row_norms",
    "split_noise_multiplier",
    "symmetric_gaussian",
]
