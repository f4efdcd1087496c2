"""DPFisherDiscriminant: scikit-learn's checks, the estimator contract, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpspectral.gep import DPFisherDiscriminant

EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _instances():
    return [
        DPFisherDiscriminant(1, epsilon=1.0, delta=1e-5, row_norm=100.0, random_state=0),
        DPFisherDiscriminant(1, epsilon=1.0, delta=1e-5, row_norm=100.0, method="sr_dp",
                             random_state=0),
    ]


@parametrize_with_checks(_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
