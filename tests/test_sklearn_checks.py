"""scikit-learn's estimator checks on every estimator."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpspectral import DPPCA

# Checks that differential privacy makes inapplicable, each with the reason.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def _instances():
    # row_norm large enough that sklearn's small test data are barely clipped; a tiny k so that
    # every check's data (sometimes a single feature) has enough columns.
    return [
        DPPCA(1, epsilon=1.0, delta=1e-5, row_norm=100.0, random_state=0),
        DPPCA(1, epsilon=1.0, delta=1e-5, row_norm=100.0, relation="add_remove",
              centering="private", random_state=0),
    ]


@parametrize_with_checks(_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
