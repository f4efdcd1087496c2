"""Moved to :mod:`dpspectral.privacy.audit` (the statistics of the privacy audit); this alias remains.

``from dpspectral.audit import threshold_epsilon_lower_bound`` keeps working: every public name of
:mod:`dpspectral.privacy.audit` is re-exported here. New code imports from ``dpspectral.privacy.audit``.
"""

from __future__ import annotations

from .privacy.audit import (
    AuditResult,
    clopper_pearson,
    covariance_pair,
    gaussian_audit,
    gaussian_mu_lower_bound,
    released_matrix_statistic,
    run_pair,
    threshold_epsilon_bounds,
    threshold_epsilon_lower_bound,
)

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "covariance_pair",
    "gaussian_audit",
    "gaussian_mu_lower_bound",
    "released_matrix_statistic",
    "run_pair",
    "threshold_epsilon_bounds",
    "threshold_epsilon_lower_bound",
]
