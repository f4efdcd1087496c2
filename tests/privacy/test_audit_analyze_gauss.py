"""Statistical privacy audit of Analyze Gauss on worst-case neighbouring pairs.

Each audit is a hypothesis test of "the mechanism satisfies its claimed (epsilon, delta)": it fails
only when a lower confidence bound on epsilon exceeds the claim. False-positive rate: alpha = 1e-3
per bound (stated in dpspectral.privacy._audit); the runs are seeded, so the outcome is deterministic.
Power check: the same audit run on a mechanism with half the calibrated noise must fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral import analyze_gauss
from dpspectral.privacy import analytic_noise_multiplier, gaussian_epsilon
from dpspectral.privacy._audit import (
    covariance_pair,
    gaussian_audit,
    released_matrix_statistic,
    run_pair,
    threshold_epsilon_lower_bound,
)

ALPHA = 1e-3
DELTA = 1e-6


def _mechanism(epsilon, relation):
    def run(X, seed):
        r = analyze_gauss(X, X.shape[1], epsilon=epsilon, delta=DELTA, row_norm=1.0,
                          relation=relation, random_state=seed)
        return r.components, r.values

    return run


def _audit(epsilon_run, epsilon_claim, relation, n_runs, seed=2024):
    X0, X1, D = covariance_pair(relation, d=2)
    stat = released_matrix_statistic(D)
    t0, t1 = run_pair(_mechanism(epsilon_run, relation), X0, X1, stat, n_runs, seed)
    return t0, t1, gaussian_audit(t0, t1, epsilon_claim, DELTA, ALPHA)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_analyze_gauss_passes_its_audit(relation, epsilon):
    t0, t1, result = _audit(epsilon, epsilon, relation, n_runs=1500)
    assert not result.violated, result
    # the black-box threshold test (threshold fixed from the claim, not from the data)
    s = analytic_noise_multiplier(epsilon, DELTA)
    sens = np.sqrt(2) if relation == "replace_one" else 1.0
    X0, X1, D = covariance_pair(relation, d=2)
    iu = np.triu_indices(2)
    m0 = float((X0.T @ X0)[iu] @ (D[iu] / np.linalg.norm(D[iu])))
    threshold = m0 + 1.0 * s * sens
    assert threshold_epsilon_lower_bound(t0, t1, threshold, DELTA, ALPHA) <= epsilon


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_audit_catches_noise_off_by_a_factor_of_two(relation):
    claim = 1.0
    # A mechanism with half the noise that epsilon = 1 requires.
    half_noise_eps = gaussian_epsilon(analytic_noise_multiplier(claim, DELTA) / 2, DELTA)
    _, _, result = _audit(half_noise_eps, claim, relation, n_runs=1500)
    assert result.violated, result


@pytest.mark.slow
@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_analyze_gauss_audit_large(relation):
    # Larger run kept out of CI (pytest -m slow): 20,000 runs per data set.
    _, _, result = _audit(1.0, 1.0, relation, n_runs=20000, seed=7)
    assert not result.violated, result
    assert result.epsilon_lower_bound > 0.7  # and the bound is close to the claim: the test has power
