"""Statistical privacy audit of Analyze Gauss with adaptive clipping.

The staged releases — centred: private mean, private quantile of the centred norms (noisy histogram),
scatter of the centred rows clipped at the released quantile; uncentred (the default path): noisy
histogram of the norms, scatter of the rows clipped at the released clip (balance rule) — are audited
end to end on the worst-case covariance pair, with the released matrix statistic. False-positive rate
alpha = 1e-3 per bound (stated in dpspectral.privacy._audit); the runs are seeded, so the outcome is
deterministic. Power check: the same
audit must catch the release when its scatter noise is computed for a sensitivity 4x too small (a
calibration bug in the stage planned from the released clip). The calibration itself is pinned in
tests/test_pinned_releases.py::test_adaptive_clip_releases_pinned; this audit is the end-to-end smoke test.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpspectral.pca._covariance as cov_module
from dpspectral import analyze_gauss
from dpspectral.privacy._audit import covariance_pair, gaussian_audit, released_matrix_statistic, run_pair

ALPHA = 1e-3
DELTA = 1e-6


def _mechanism(epsilon, relation, centering="private"):
    def run(X, seed):
        r = analyze_gauss(X, X.shape[1], epsilon=epsilon, delta=DELTA, row_norm=1.0, relation=relation,
                          centering=centering, random_state=seed)
        return r.components, r.values

    return run


def _pair(relation: str, background: int = 20000):
    """The covariance pair (e1 against e2, or against nothing) over many background rows +-0.52 e1
    (mean zero, centred norms 0.52): the released mean is accurate (its noise moves the background's
    scatter by about sigma_sum^2 / n), the clip lands at 0.545 and the differing row survives it."""
    X0, X1, D = covariance_pair(relation, d=2)
    signs = np.where(np.arange(background) % 2 == 0, 0.52, -0.52)  # mid-bin: the clip is stable
    rows = np.column_stack([signs, np.zeros(background)])
    return np.vstack([rows, X0]), np.vstack([rows, X1]), D


def _audit(relation, n_runs, seed=2025, centering="private"):
    X0, X1, D = _pair(relation)
    stat = released_matrix_statistic(D)
    t0, t1 = run_pair(_mechanism(1.0, relation, centering), X0, X1, stat, n_runs, seed)
    return gaussian_audit(t0, t1, 1.0, DELTA, ALPHA)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_adaptive_clip_passes_its_audit(relation):
    result = _audit(relation, n_runs=1500)
    assert not result.violated, result


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_uncentred_adaptive_clip_passes_its_audit(relation):
    # uncentred: the background's norms are 0.52, the released clip is the top of their bin (0.545),
    # the differing row of norm 1 is clipped to it
    result = _audit(relation, n_runs=1500, centering=None)
    assert not result.violated, result


@pytest.mark.parametrize("centering", ["private", None])
def test_audit_catches_a_scatter_noise_planned_for_a_quarter_of_the_sensitivity(centering, monkeypatch):
    original = cov_module._scatter_sensitivity
    monkeypatch.setattr(cov_module, "_scatter_sensitivity", lambda rel, c: original(rel, c) / 4.0)
    result = _audit("replace_one", n_runs=1500, centering=centering)
    assert result.violated, result
