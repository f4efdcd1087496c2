"""Statistical privacy audit of the moments release on worst-case neighbouring pairs.

The statistic is the likelihood-ratio projection of the whole release (upper triangle of S, class sums,
class counts, each part divided by its noise scale) on the direction of the neighbours' difference: a
Gaussian with unit variance. Each audit is a test of "the release satisfies its claimed (epsilon, delta)";
it fails only when a lower confidence bound on epsilon exceeds the claim. False-positive rate: alpha =
1e-3 per bound; the runs are seeded, so the outcome is deterministic. Power: the same audit on the
release with half the calibrated noise must fail.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dpspectral.gep._moments as moments_module
from dpspectral._audit_runner import AuditPlan, audit_methods
from dpspectral.gep._moments import _exact_moments, release_moments
from dpspectral.privacy._audit import gaussian_audit

ALPHA = 1e-3
DELTA = 1e-6
C = 1.0
CLASSES = [0, 1]


def _pair(relation):
    """Worst-case neighbours in d = 2: replace-one moves (C e1, 0) to (C e2, 1) (S, one class sum and two
    counts move); add/remove adds (C e1, 0). One background row in each class."""
    bg, yb = np.array([[0.0, C], [C, 0.0]]), np.array([0, 1])
    e = np.eye(2) * C
    if relation == "replace_one":
        return (np.vstack([bg, e[0]]), np.r_[yb, 0]), (np.vstack([bg, e[1]]), np.r_[yb, 1])
    return (np.vstack([bg, e[0]]), np.r_[yb, 0]), (bg, yb)


def _vector(S, T, n, std):
    iu = np.triu_indices(S.shape[0])
    return np.r_[S[iu] / std["second"], T.ravel() / std["sums"], n / std["counts"]]


def _audit(relation, noise_factor=1.0, n_runs=1500, seed=2026):
    (X0, y0), (X1, y1) = _pair(relation)
    # the base mechanism (one release at C); the staged default is audited black-box by the registry row
    std = release_moments(X0, y0, epsilon=1.0, delta=DELTA, row_norm=C, classes=CLASSES, relation=relation,
                          random_state=0, adaptive_clip=False).noise_std
    exact = [_vector(*_exact_moments(X, y, 2, C, "audit"), std) for X, y in ((X0, y0), (X1, y1))]
    direction = (exact[0] - exact[1]) / np.linalg.norm(exact[0] - exact[1])
    seeds = np.random.SeedSequence(seed).generate_state(2 * n_runs)
    out = []
    for side, (X, y) in enumerate(((X0, y0), (X1, y1))):
        t = []
        for s in seeds[side * n_runs:(side + 1) * n_runs]:
            m = release_moments(X, y, epsilon=1.0, delta=DELTA, row_norm=C, classes=CLASSES,
                                relation=relation, random_state=int(s), adaptive_clip=False)
            released = _vector(m.second, m.sums, m.counts, std)
            noise = released - exact[side]
            t.append(float((exact[side] + noise_factor * noise) @ direction))
        out.append(np.array(t))
    return gaussian_audit(out[0], out[1], 1.0, DELTA, ALPHA)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_moments_release_passes_its_audit(relation):
    result = _audit(relation)
    assert not result.violated, result


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_audit_catches_half_the_noise(relation):
    result = _audit(relation, noise_factor=0.5)
    assert result.violated, result


def test_registry_audit_covers_moments():
    # the audit of `dpspectral audit` (registry-driven): replace-one is audited on its Fisher pair
    report = audit_methods(["moments"], plan=AuditPlan(n_pilot=100, n_runs=300))
    rows = {r.relation: r for r in report.rows}
    assert rows["replace_one"].verdict == "OK" and rows["replace_one"].certified
    assert not report.violations
    assert set(rows) == {"replace_one", "add_remove"}  # add/remove: audited above (no Fisher pair there yet)


def test_result_privacy_claim_is_the_requested_one():
    (X0, y0), _ = _pair("replace_one")
    m = release_moments(X0, y0, epsilon=1.0, delta=DELTA, row_norm=C, classes=CLASSES, random_state=0)
    assert m.privacy.certified and m.privacy.epsilon <= 1.0 and m.privacy.delta == DELTA
    assert dataclasses.is_dataclass(m) and moments_module.MOMENTS == m.privacy.mechanism
