"""Pinned releases of the Fisher-discriminant pair (SR+DP) and of a DPdisPCA site.

Each test derives what it needs without the library's formulas:

* the sensitivity from neighbouring pairs built by hand (and a random search): a coded bound must
  cover every pair (soundness) and be reached by a constructed one to within a factor well above 1/2
  (so that a halved bound fails);
* the calibrated multiplier from the analytic Gaussian mechanism (Balle and Wang 2018), root-found
  here with SciPy;
* the noise actually drawn, read from the released matrices over many seeds on data whose exact
  statistic the test computes itself, against that scale with a two-sided chi-square test.

False-positive rate: each chi-square check is two-sided at 1e-6; the constructed pairs are exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _pinned import bw_multiplier, clip_by_hand, fda_b_worst_pair, fda_by_hand
from scipy import stats

import dpspectral.gep._reduction as reduction
from dpspectral.distributed._site import SitePlan, site_step, unpack_upper
from dpspectral.gep._reduction import sr_dp
from dpspectral.gep._scatter import fda_pair

C = 1.0
EPS, DELTA = 1.0, 1e-5
FPR = 1e-6


def _chi2_ok(samples: np.ndarray, sigma: float) -> bool:
    """Two-sided chi-square test that zero-mean ``samples`` have standard deviation ``sigma``."""
    m = samples.size
    stat = float(np.sum(samples**2) / sigma**2)
    lo, hi = stats.chi2.ppf(FPR / 2, m), stats.chi2.ppf(1 - FPR / 2, m)
    return lo <= stat <= hi


# ----------------------------------------------------------------------------------------------
# the Fisher pair's sensitivities, from neighbours built by hand
# ----------------------------------------------------------------------------------------------

def _tight_b_pair(q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return fda_b_worst_pair(q, 3, C)


def _tight_a_pair(q: int, big: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The module's spectral example: ``big`` rows at -C e1 in class 2, q rows at +C e1 in classes 0
    and 1 each, and the record (C e1, class 0) replaced by (-C e1, class 1); ||n dA||_2 -> 8 C^2."""
    d = 3
    e = np.eye(d) * C
    X0 = np.vstack([np.tile(-e[0], (big, 1)), np.tile(e[0], (2 * q, 1)), e[0]])
    y0 = np.r_[np.full(big, 2), np.zeros(q), np.ones(q), 0].astype(int)
    X1, y1 = X0.copy(), y0.copy()
    X1[-1], y1[-1] = -e[0], 1
    return X0, y0, X1, y1


def test_fda_b_sensitivity_is_sound_and_reached():
    X0, y0, X1, y1 = _tight_b_pair(q=400)
    n = len(y0)
    classes = [0, 1]
    _, B0 = fda_by_hand(X0, y0, classes, C)
    _, B1 = fda_by_hand(X1, y1, classes, C)
    measured_f = np.linalg.norm(B0 - B1) * n
    measured_2 = np.linalg.norm(B0 - B1, 2) * n
    sens = fda_pair(X0, y0, row_norm=C, classes=classes).sensitivity
    assert sens.b_frobenius * n >= measured_f * (1 - 1e-9)
    assert sens.b_spectral * n >= measured_2 * (1 - 1e-9)
    # reached: 4 sqrt(2) (q / (q + 1)) ~ 5.64 against a bound of 4 sqrt(2) ~ 5.66: a bound halved fails
    assert measured_f > 0.99 * 4 * math.sqrt(2) * C**2
    assert sens.b_frobenius * n < 1.01 * measured_f


def test_fda_a_sensitivity_is_sound_and_reached():
    X0, y0, X1, y1 = _tight_a_pair(q=200, big=20000)
    n = len(y0)
    classes = [0, 1, 2]
    A0, _ = fda_by_hand(X0, y0, classes, C)
    A1, _ = fda_by_hand(X1, y1, classes, C)
    measured_2 = np.linalg.norm(A0 - A1, 2) * n
    measured_f = np.linalg.norm(A0 - A1) * n
    sens = fda_pair(X0, y0, row_norm=C, classes=classes).sensitivity
    assert sens.a_spectral * n >= measured_2 * (1 - 1e-9)
    assert sens.a_frobenius * n >= measured_f * (1 - 1e-9)
    assert measured_2 > 0.97 * 8 * C**2  # the spectral bound is reached: a halved one fails
    assert measured_f > 0.6 * sens.a_frobenius * n  # the Frobenius bound is within sqrt 2 of reached


def test_fda_sensitivity_covers_a_random_search():
    rng = np.random.default_rng(7)
    classes = [0, 1, 2]
    worst_a = worst_b = 0.0
    for _ in range(300):
        n, d = int(rng.integers(3, 12)), 3
        X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0)
        y = rng.integers(0, 3, size=n)
        X2, y2 = X.copy(), y.copy()
        X2[0] = rng.normal(size=d) * rng.uniform(0.2, 3.0)
        y2[0] = rng.integers(0, 3)
        A0, B0 = fda_by_hand(X, y, classes, C)
        A1, B1 = fda_by_hand(X2, y2, classes, C)
        sens = fda_pair(X, y, row_norm=C, classes=classes).sensitivity
        worst_a = max(worst_a, np.linalg.norm(A0 - A1) / sens.a_frobenius)
        worst_b = max(worst_b, np.linalg.norm(B0 - B1) / sens.b_frobenius)
    assert worst_a <= 1 + 1e-9 and worst_b <= 1 + 1e-9


def test_fda_pair_matches_the_definitions_with_clipping():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4)) * 2.0  # most rows above the bound: the pair must use clipped rows
    y = rng.integers(0, 3, size=40)
    pair = fda_pair(X, y, row_norm=C, classes=[0, 1, 2])
    A, B = fda_by_hand(X, y, [0, 1, 2], C)
    np.testing.assert_allclose(pair.A, A, atol=1e-12)
    np.testing.assert_allclose(pair.B, B, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# SR+DP: the noise drawn on A and on B
# ----------------------------------------------------------------------------------------------

def test_sr_dp_noise_drawn_has_the_calibrated_scale(monkeypatch):
    rng = np.random.default_rng(11)
    n, d = 300, 4
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 2, size=n)
    pair = fda_pair(X, y, row_norm=C, classes=[0, 1])
    A, B = fda_by_hand(X, y, [0, 1], C)
    captured: dict[str, list[np.ndarray]] = {"B": [], "At": [], "Phi": []}
    real_reduction, real_top = reduction.regularized_reduction, reduction.top_k_eigh

    def spy_reduction(B_hat, xi, *, clamp):
        captured["B"].append(np.array(B_hat))
        out = real_reduction(B_hat, xi, clamp=clamp)
        captured["Phi"].append(np.array(out[0]))
        return out

    def spy_top(M, k):
        captured["At"].append(np.array(M))
        return real_top(M, k)

    monkeypatch.setattr(reduction, "regularized_reduction", spy_reduction)
    monkeypatch.setattr(reduction, "top_k_eigh", spy_top)
    for seed in range(150):
        sr_dp(pair, 1, epsilon=EPS, delta=DELTA, regularization=0.01, random_state=seed)
    iu = np.triu_indices(d)
    noise_b = np.array([(Bh - B)[iu] for Bh in captured["B"]])
    noise_a = []
    for At, Phi in zip(captured["At"], captured["Phi"], strict=True):
        Pinv = np.linalg.inv(Phi)
        A_hat = Pinv.T @ At @ Pinv
        noise_a.append((A_hat - A)[iu])
    noise_a = np.array(noise_a)
    # independent scales: sensitivities derived in the tests above (4 sqrt 2 and 8 sqrt 2, over n),
    # multipliers composing exactly to the Balle-Wang multiplier of (EPS, DELTA)
    sens_a, sens_b = 8 * math.sqrt(2) * C**2 / n, 4 * math.sqrt(2) * C**2 / n
    std_a, std_b = float(np.sqrt(np.mean(noise_a**2))), float(np.sqrt(np.mean(noise_b**2)))
    s_a, s_b = std_a / sens_a, std_b / sens_b
    p = bw_multiplier(EPS, DELTA)
    composed = (s_a**-2 + s_b**-2) ** -0.5
    # 150 x 10 samples each: the relative error of a std estimate is ~ 1/sqrt(2 * 1500) = 1.8%
    assert composed == pytest.approx(p, rel=0.1)
    # and the declared per-release scales are what was drawn (chi-square, two-sided at 1e-6 each)
    res = sr_dp(pair, 1, epsilon=EPS, delta=DELTA, regularization=0.01, random_state=0)
    assert _chi2_ok(noise_a, res.diagnostics["noise_std_A"])
    assert _chi2_ok(noise_b, res.diagnostics["noise_std_B"])
    # the declared multipliers compose to exactly the calibrated one
    sa, sb = res.diagnostics["noise_multiplier_A"], res.diagnostics["noise_multiplier_B"]
    assert (sa**-2 + sb**-2) ** -0.5 == pytest.approx(p, rel=1e-6)
    # the declared stds use sensitivities at least the derived ones
    assert res.diagnostics["noise_std_A"] >= sa * sens_a * (1 - 1e-9)
    assert res.diagnostics["noise_std_B"] >= sb * sens_b * (1 - 1e-9)


# ----------------------------------------------------------------------------------------------
# DPdisPCA: one site's release
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_site_release_noise_has_the_calibrated_scale(relation):
    from dpspectral.distributed._site import plan_site_release
    from dpspectral.privacy import PrivacyBudget, Relation

    rel = Relation(relation)
    rng = np.random.default_rng(5)
    n, d = 80, 5
    X = rng.normal(size=(n, d)) * 0.8  # some rows above the bound: the site must clip them
    scatter_std, count_std, _, _ = plan_site_release(
        budget=PrivacyBudget(EPS, DELTA), relation=rel, calibration="tight", row_norm=C,
        release_count=False,
    )
    plan = SitePlan(variant="full", rank=d, spectrum="eigh", relation=rel, calibration="tight",
                    row_norm=C, scatter_std=scatter_std, count_std=count_std)
    Xc = clip_by_hand(X, C)
    S = Xc.T @ Xc
    iu = np.triu_indices(d)
    noise = []
    for seed in range(300):
        payload = site_step(X, plan, np.random.SeedSequence(seed), 0)
        A_hat = unpack_upper(payload.matrix, d)
        scale = float(n) if rel.n_is_public else 1.0
        noise.append((A_hat * scale - S)[iu])
    noise = np.array(noise)
    # derived: replacing a row moves x x^T by at most sqrt(2) C^2 in Frobenius norm (x = C e1 vs C e2);
    # adding one moves it by C^2. One Gaussian release at the Balle-Wang multiplier.
    e = np.eye(d)
    sens = (np.linalg.norm(np.outer(e[0], e[0]) - np.outer(e[1], e[1])) if rel.n_is_public
            else np.linalg.norm(np.outer(e[0], e[0]))) * C**2
    expected = bw_multiplier(EPS, DELTA) * sens
    assert _chi2_ok(noise, expected)
    assert not _chi2_ok(noise, expected / 2) and not _chi2_ok(noise, expected * 0.8)  # power


def test_site_release_clips_by_effect():
    from dpspectral.distributed._site import plan_site_release
    from dpspectral.privacy import PrivacyBudget, Relation

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4)) * 0.3
    far = X.copy()
    far[7] = far[7] / np.linalg.norm(far[7]) * 10.0
    at = far.copy()
    at[7] = at[7] / 10.0 * C
    std, cstd, _, _ = plan_site_release(budget=PrivacyBudget(EPS, DELTA), relation=Relation.REPLACE_ONE,
                                        calibration="tight", row_norm=C, release_count=False)
    plan = SitePlan(variant="full", rank=4, spectrum="eigh", relation=Relation.REPLACE_ONE,
                    calibration="tight", row_norm=C, scatter_std=std, count_std=cstd)
    a = site_step(far, plan, np.random.SeedSequence(1), 0).matrix
    b = site_step(at, plan, np.random.SeedSequence(1), 0).matrix
    np.testing.assert_allclose(a, b, atol=1e-12)
