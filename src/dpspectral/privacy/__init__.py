"""The privacy core: budgets, relations, calibration, accounting, noise, clipping."""

from ._accounting import (
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
from ._budget import (
    BudgetExceededError,
    PrivacyBudget,
    PrivacyError,
    PureEpsilonWarning,
    Relation,
    UncertifiedPrivacyWarning,
    as_relation,
)
from ._clipping import check_row_norm, clip_rows, row_norms
from ._gaussian import (
    analytic_noise_multiplier,
    classic_noise_multiplier,
    gaussian_epsilon,
    split_noise_multiplier,
    symmetric_gaussian,
)
from ._guardrails import PrivacyParameterWarning, check_privacy_parameters

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


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "accounting": "_accounting",
        "adaptive": "_adaptive",
        "audit": "_audit",
        "bbds": "_bbds",
        "budget": "_budget",
        "clipping": "_clipping",
        "device_noise": "_device_noise",
        "gaussian": "_gaussian",
        "guardrails": "_guardrails",
        "histogram": "_histogram",
        "ledger": "_ledger",
        "noise": "_noise",
        "pipeline": "_pipeline",
        "quantile": "_quantile",
    },
)
