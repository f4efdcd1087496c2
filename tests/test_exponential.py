"""Pure epsilon-DP PCA by the exponential mechanism: the exact Bingham sampler, ppca, exponential.

Statistical tests are seeded (so deterministic); each states its false-positive rate, i.e. the
probability that it would fail for a correct sampler/mechanism under a fresh seed:

* goodness of fit (KS, chi-square, two-sample KS): p-value threshold 1e-3 per test;
* acceptance rates against their closed forms: 5 binomial standard deviations (about 6e-7 per test);
* privacy audits: Clopper-Pearson lower bounds on epsilon at level alpha = 1e-3 (dpspectral.privacy._audit);
  the negative controls (a mechanism twice as concentrated as calibrated) must be caught.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from dpspectral import DPPCA, Accountant, BudgetExceededError, EpsilonSplit
from dpspectral.pca import (
    BinghamSampler,
    BinghamSamplerError,
    exponential_pca,
    ppca,
    sample_bingham,
)
from dpspectral.privacy import epsilon_of
from dpspectral.privacy._audit import threshold_epsilon_lower_bound

P_MIN = 1e-3  # p-value threshold of the goodness-of-fit tests (false-positive rate per test)
ALPHA = 1e-3  # level of the audits' Clopper-Pearson bounds


def _rotation(d: int, seed: int) -> np.ndarray:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return Q


def _circle_cdf(beta: float):
    """CDF on [0, pi) of the angle phi of u = (cos phi, sin phi), density ∝ exp(-beta sin^2 phi)."""
    grid = np.linspace(0.0, math.pi, 400_001)
    f = np.exp(-beta * np.sin(grid) ** 2)
    cum = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(grid))])
    cum /= cum[-1]
    return lambda x: np.interp(x, grid, cum)


# -- the sampler: goodness of fit ------------------------------------------------------------------
@pytest.mark.parametrize("envelope", ["acg", "tangent", "auto"])
@pytest.mark.parametrize("beta", [0.5, 5.0, 300.0])
def test_circle_samples_follow_the_bingham_density(envelope, beta):
    Q = _rotation(2, 1)
    M = Q @ np.diag([3.0, 3.0 - beta]) @ Q.T  # exp(v^T M v) ∝ exp(-beta sin^2 phi) in Q's basis
    v = sample_bingham(M, 20_000, random_state=7, envelope=envelope)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    u = v @ Q
    phi = np.mod(np.arctan2(u[:, 1], u[:, 0]), math.pi)
    assert stats.kstest(phi, _circle_cdf(beta)).pvalue > P_MIN
    # antipodal symmetry: both signs of the first coordinate are equally likely
    assert stats.binomtest(int(np.sum(u[:, 0] > 0)), len(u)).pvalue > P_MIN


def test_goodness_of_fit_has_power_against_the_bare_envelope():
    """Negative control: ACG proposals accepted without the rejection step are caught."""
    beta = 5.0
    s = BinghamSampler(np.diag([0.0, -beta]), envelope="acg")
    y = np.random.default_rng(0).normal(size=(20_000, 2)) / np.sqrt(1.0 + 2.0 * np.array([0.0, beta]) / s.b)
    phi = np.mod(np.arctan2(y[:, 1], y[:, 0]), math.pi)
    assert stats.kstest(phi, _circle_cdf(beta)).pvalue < 1e-10


def _sphere_cells(beta2: float, beta3: float):
    """Cells of the upper hemisphere of S^2 (theta bands x 4 phi sectors) and their probabilities.

    u = (cos t, sin t cos p, sin t sin p), density ∝ exp(-beta2 u_2^2 - beta3 u_3^2) sin t.
    """
    scale = 1.0 / math.sqrt(2.0 * max(beta2, 0.5))
    edges = np.minimum([0.0, 0.6 * scale, 1.2 * scale, 2.0 * scale, math.pi / 2], math.pi / 2)
    edges = np.unique(edges)
    sectors = np.linspace(0.0, 2 * math.pi, 5)

    def dens(p: float, t: float) -> float:
        s = math.sin(t)
        return math.exp(-beta2 * (s * math.cos(p)) ** 2 - beta3 * (s * math.sin(p)) ** 2) * s

    probs = np.array([
        [integrate.dblquad(dens, edges[i], edges[i + 1], sectors[j], sectors[j + 1],
                           epsabs=1e-12, epsrel=1e-10)[0] for j in range(4)]
        for i in range(len(edges) - 1)
    ])
    return edges, sectors, probs / probs.sum()


@pytest.mark.parametrize("envelope", ["acg", "tangent"])
@pytest.mark.parametrize("betas", [(1.0, 4.0), (30.0, 80.0)])
def test_sphere_cell_frequencies_match_the_integrated_density(envelope, betas):
    beta2, beta3 = betas
    Q = _rotation(3, 2)
    M = Q @ np.diag([0.0, -beta2, -beta3]) @ Q.T
    u = sample_bingham(M, 20_000, random_state=11, envelope=envelope) @ Q
    u *= np.where(u[:, :1] < 0, -1.0, 1.0)  # fold onto the upper hemisphere (antipodal symmetry)
    t = np.arccos(np.clip(u[:, 0], -1.0, 1.0))
    p = np.mod(np.arctan2(u[:, 2], u[:, 1]), 2 * math.pi)
    edges, sectors, probs = _sphere_cells(beta2, beta3)
    counts, _, _ = np.histogram2d(t, p, bins=[edges, sectors])
    expected = probs * len(u)
    assert expected.min() > 20
    assert stats.chisquare(counts.ravel(), expected.ravel()).pvalue > P_MIN


def test_envelopes_agree_in_ten_dimensions_and_with_brute_force():
    d = 10
    Q = _rotation(d, 3)
    lam = np.linspace(1.0, 0.0, d) ** 1.5
    # moderate concentration: both envelopes accept about 30%
    M = Q @ np.diag(100.0 * lam) @ Q.T
    a = sample_bingham(M, 8_000, random_state=1, envelope="acg")
    b = sample_bingham(M, 8_000, random_state=2, envelope="tangent")
    for f in (lambda v: (v @ Q[:, 0]) ** 2, lambda v: np.einsum("ij,jk,ik->i", v, M, v),
              lambda v: (v @ Q[:, 1]) ** 2):
        assert stats.ks_2samp(f(a), f(b)).pvalue > P_MIN
    # low concentration: rejection from the uniform law (accept w.p. exp(v^T M v - max)) as reference
    M = Q @ np.diag(2.0 * lam) @ Q.T
    rng = np.random.default_rng(5)
    g = rng.normal(size=(60_000, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    ref = g[np.log(rng.random(len(g))) < np.einsum("ij,jk,ik->i", g, M, g) - 2.0]
    for envelope in ("acg", "tangent"):
        s = sample_bingham(M, 8_000, random_state=3, envelope=envelope)
        assert stats.ks_2samp((s @ Q[:, 0]) ** 2, (ref @ Q[:, 0]) ** 2).pvalue > P_MIN
        assert stats.ks_2samp(np.einsum("ij,jk,ik->i", s, M, s),
                              np.einsum("ij,jk,ik->i", ref, M, ref)).pvalue > P_MIN


# -- the sampler: acceptance rates and their closed forms ------------------------------------------
@pytest.mark.parametrize("beta", [0.3, 4.0, 50.0, 1e6])
def test_acceptance_rates_match_the_envelope_masses(beta):
    """Acceptance = Z / W for each envelope; on the circle Z = pi exp(-beta/2) I_0(beta/2) exactly.

    This checks both envelopes' normalising constants (a wrong constant changes the law, not only the
    speed, when it makes the envelope too low).
    """
    log_z = math.log(math.pi) - beta / 2 + math.log(special.ive(0, beta / 2)) + beta / 2
    for envelope in ("acg", "tangent"):
        s = BinghamSampler(np.diag([0.0, -beta]), envelope=envelope)
        s.sample(20_000, random_state=4)
        log_w = s.log_mass_acg if envelope == "acg" else s.log_mass_tangent
        p = math.exp(log_z - log_w)
        assert 0 < p <= 1 + 1e-12
        sd = math.sqrt(p * (1 - p) / s.proposals)
        assert abs(s.acceptance_rate - p) < 5 * sd + 1e-12, (envelope, s.acceptance_rate, p)


def test_acceptance_stays_bounded_as_concentration_grows():
    """Both envelopes target the same law, so their acceptance rates are ``Z / W_acg`` and
    ``Z / W_auto`` with one unknown normaliser Z: the ratio of the rates is ``W_acg / W_auto``
    exactly. Each measured rate is a binomial proportion; the test compares the two estimates of
    log Z within 5 standard deviations of their difference (delta method; false-positive rate about
    6e-7 per concentration). That "auto" never does worse is exact (``W_auto <= W_acg``), and the
    acceptance bounds below hold for the true rates estimated this way.
    """
    d = 20
    lam = np.linspace(1.0, 0.0, d)
    rates = {}
    for scale in (1.0, 1e2, 1e4, 1e8):
        s = BinghamSampler(np.diag(scale * lam))
        s.sample(2_000, random_state=0)
        acg = BinghamSampler(np.diag(scale * lam), envelope="acg")
        acg.sample(2_000, random_state=0)
        w_auto = s.log_mass_acg if s.envelope == "acg" else s.log_mass_tangent
        assert w_auto <= acg.log_mass_acg + 1e-12  # "auto" takes the envelope of smaller mass
        p_auto, p_acg = s.acceptance_rate, acg.acceptance_rate
        log_z_auto, log_z_acg = math.log(p_auto) + w_auto, math.log(p_acg) + acg.log_mass_acg
        sd = math.sqrt((1 - p_auto) / (p_auto * s.proposals) + (1 - p_acg) / (p_acg * acg.proposals))
        assert abs(log_z_auto - log_z_acg) < 5 * sd
        rates[scale] = (p_auto, s.proposals)
        # the ACG envelope alone tends to about sqrt(2 / (e d)) = 0.19: a lower confidence bound
        # (one-sided, level 1e-6) on its true rate stays above 0.1
        lower = stats.binomtest(acg.accepted, acg.proposals).proportion_ci(0.999998).low
        assert lower > 0.1
    # the tangent envelope takes over in the concentrated regime: its true acceptance is above 0.9
    # (Clopper-Pearson lower bound at one-sided level 1e-6)
    p, proposals = rates[1e8]
    assert stats.binomtest(round(p * proposals), proposals).proportion_ci(0.999998).low > 0.9


def test_cap_raises_a_clear_error_instead_of_hanging():
    M = np.diag(np.linspace(1.0, 0.0, 30) * 0.5)
    with pytest.raises(BinghamSamplerError, match=r"max_proposals=5 "):
        sample_bingham(M, 10, random_state=0, envelope="tangent", max_proposals=5)


def test_trivial_and_degenerate_cases():
    v = sample_bingham(np.array([[4.0]]), 1000, random_state=0)
    assert set(np.unique(v)) == {-1.0, 1.0}
    u = sample_bingham(3.0 * np.eye(5), 20_000, random_state=1)  # uniform on the sphere
    assert abs(np.mean(u[:, 0] ** 2) - 0.2) < 5 * math.sqrt(2 * 4 / (25 * 7) / 20_000)
    assert sample_bingham(np.diag([1.0, 0.0]), random_state=0).shape == (2,)
    assert sample_bingham(np.diag([1.0, 0.0]), 0, random_state=0).shape == (0, 2)
    # repeated top eigenvalue: "auto" uses the ACG envelope; "tangent" refuses clearly
    M = np.diag([5.0, 5.0, 0.0])
    assert BinghamSampler(M).envelope == "acg"
    with pytest.raises(ValueError, match="repeated"):
        BinghamSampler(M, envelope="tangent")
    # determinism under a seed
    M = np.diag([3.0, 1.0, 0.0])
    assert np.array_equal(sample_bingham(M, 50, random_state=9), sample_bingham(M, 50, random_state=9))


@pytest.mark.parametrize("M,kw,match", [
    (np.ones((2, 3)), {}, "square"),
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), {}, "finite"),
    (np.eye(2), {"envelope": "gauss"}, "'envelope'"),
    (np.eye(2), {"max_proposals": 0}, "'max_proposals'"),
    (np.eye(2), {"max_proposals": 1.5}, "'max_proposals'"),
])
def test_sampler_bad_input(M, kw, match):
    with pytest.raises(ValueError, match=match):
        sample_bingham(M, 3, random_state=0, **kw)


# -- the mechanisms ----------------------------------------------------------------------------------
def _data(n=600, d=8, seed=0):
    rng = np.random.default_rng(seed)
    Q = _rotation(d, seed + 100)
    X = (rng.normal(size=(n, d)) * np.arange(1, d + 1) ** -0.5) @ Q.T
    return X / np.linalg.norm(X, axis=1).max()


@pytest.mark.parametrize("relation,c_factor,l1", [("replace_one", 0.5, 2.0), ("add_remove", 1.0, 1.0)])
def test_tight_calibration_and_events(relation, c_factor, l1):
    X = _data()
    C = 0.7
    r = exponential_pca(X, 3, epsilon=2.0, row_norm=C, relation=relation, random_state=0,
                        epsilon_split=EpsilonSplit(eigenvalue_share=0.25, allocation="equal",
                                                   accounting="per_direction"))
    C2 = (C * (1 + 1e-10)) ** 2
    diag = r.diagnostics
    assert diag["vector_epsilons"] == pytest.approx([0.5] * 3)
    assert diag["concentrations"] == pytest.approx([c_factor * 0.5 / C2] * 3)
    assert diag["eigenvalue_noise_scale"] == pytest.approx(l1 * C2 / 0.5)
    p = r.privacy
    assert p.certified and p.delta == 0.0 and p.epsilon <= 2.0
    assert p.epsilon == pytest.approx(2.0, rel=1e-9)
    assert p.epsilon == pytest.approx(epsilon_of(p.events, 0.0, relation=relation))
    assert r.values.shape == (3,) and np.all(np.diff(r.values) <= 0)
    assert r.total is not None
    assert (r.n_samples == 600.0) == (relation == "replace_one")


def test_paper_calibration_uses_amin_et_al_constants():
    X = _data()
    r = exponential_pca(X, 2, epsilon=1.0, row_norm=1.0, calibration="paper",
                        epsilon_split=EpsilonSplit(eigenvalue_share=0.2), random_state=0)
    C2 = (1 + 1e-10) ** 2
    assert r.diagnostics["concentrations"] == pytest.approx([0.4 / 4 / C2] * 2)
    assert r.diagnostics["eigenvalue_noise_scale"] == pytest.approx(2 * C2 / 0.2)
    # exp(eps_i / 4 ...) is eps_i / 2-DP under replace-one: certified with room
    assert r.privacy.certified and r.privacy.epsilon == pytest.approx(0.2 + 0.4, rel=1e-9)


def test_ppca_spends_everything_on_directions_and_k_equals_d_is_free_at_the_end():
    X = _data(d=4)
    r = ppca(X, 1, epsilon=1.0, row_norm=1.0, random_state=0)
    assert r.values is None and r.total is None
    assert r.diagnostics["directions_epsilon"] == pytest.approx(1.0)
    old = {"epsilon_split": EpsilonSplit(allocation="equal", accounting="per_direction")}  # the papers'

    r = ppca(X, 1, epsilon=1.0, row_norm=1.0, random_state=0, **old)
    assert r.diagnostics["vector_epsilons"] == pytest.approx([1.0])
    r = ppca(X, 4, epsilon=1.0, row_norm=1.0, random_state=0, **old)
    assert r.values is None
    assert len(r.diagnostics["vector_epsilons"]) == 3  # the 4th direction is the remaining line
    assert r.diagnostics["vector_epsilons"] == pytest.approx([1 / 3] * 3)
    assert np.allclose(r.components.T @ r.components, np.eye(4), atol=1e-12)
    r = ppca(X, 4, epsilon=1.0, row_norm=1.0, random_state=0)  # k > 1: 5% on the eigenvalues
    assert len(r.diagnostics["concentrations"]) == 3 and r.values.shape == (4,)
    assert r.privacy.epsilon == pytest.approx(1.0, rel=1e-9) and r.privacy.certified
    assert r.diagnostics["eigenvalue_epsilon"] == pytest.approx(0.05, rel=1e-9)
    r = ppca(X, 3, epsilon=1.0, row_norm=1.0, calibration="paper", random_state=0)  # CSS12: none
    assert r.values is None and r.diagnostics["vector_epsilons"] == pytest.approx([1 / 3] * 3)
    r = exponential_pca(X, 2, epsilon=1.0, row_norm=1.0, random_state=0, epsilon_split=EpsilonSplit(
        eigenvalue_share=0.0, vector_shares=[3.0, 1.0], accounting="per_direction"))
    assert r.values is None
    assert r.diagnostics["vector_epsilons"] == pytest.approx([0.75, 0.25])
    assert r.privacy.epsilon == pytest.approx(1.0, rel=1e-9) and r.privacy.certified


def test_deflation_draws_each_direction_from_the_compressed_matrix():
    """With a huge concentration, deflation recovers the exact eigenvectors one by one."""
    X = _data(d=6)
    w, V = np.linalg.eigh(X.T @ X)
    r = ppca(X, 6, epsilon=1e9, row_norm=1.0, random_state=3)
    # ordered as drawn: v_j is (up to sign) the j-th eigenvector
    assert np.allclose(np.abs(np.sum(r.components * V[:, ::-1], axis=0)), 1.0, atol=1e-4)


def _circle_cdf_series(beta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """CDF on [0, pi) of exp(-beta sin^2 phi), vectorised.

    Jacobi-Anger: ``e^{z cos t} = I_0(z) + 2 sum_n I_n(z) cos(n t)``, integrated term by term.
    """
    z = beta / 2.0
    n = np.arange(1, 400)
    terms = special.ive(n[None, :], z[:, None]) * np.sin(2.0 * n[None, :] * phi[:, None]) / n[None, :]
    return (special.ive(0, z) * phi + terms.sum(axis=1)) / (math.pi * special.ive(0, z))


def test_second_direction_follows_the_bingham_law_on_the_complement_of_the_first():
    """Probability integral transform of v_2 given v_1: uniform iff the deflated step is exact."""
    X = _data(n=200, d=3, seed=4)
    A = X.T @ X
    eps = 4.0
    c = eps / 3 / (1 + 1e-10) ** 2  # replace-one, joint accounting: C^2 (max c + sum c) = eps
    pit = []
    for seed in range(1500):
        r = ppca(X, 2, epsilon=eps, row_norm=1.0, epsilon_split=EpsilonSplit(allocation="equal"),
                 random_state=seed)
        assert r.diagnostics["concentrations"] == pytest.approx([c, c], rel=1e-9)
        V = r.components
        N = np.linalg.svd(V[:, :1], full_matrices=True)[0][:, 1:]  # basis of the complement of v_1
        mu, W = np.linalg.eigh(c * N.T @ A @ N)
        u = W[:, ::-1].T @ (N.T @ V[:, 1])
        pit.append((mu[1] - mu[0], np.mod(np.arctan2(u[1], u[0]), math.pi)))
    beta, phi = map(np.array, zip(*pit, strict=True))
    assert stats.kstest(_circle_cdf_series(beta, phi), "uniform").pvalue > P_MIN


def test_released_eigenvalues_carry_the_stated_laplace_noise():
    X = _data(n=300, d=3, seed=5)
    lam = np.linalg.eigvalsh(X.T @ X)[::-1]
    res = [exponential_pca(X, 1, epsilon=1.0, row_norm=1.0, epsilon_split=EpsilonSplit(eigenvalue_share=0.5),
                           random_state=s) for s in range(1500)]
    scale = res[0].diagnostics["eigenvalue_noise_scale"]
    assert scale == pytest.approx(2 * (1 + 1e-10) ** 2 / 0.5)
    noise = np.array([r.values[0] for r in res]) - lam[0]
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > P_MIN
    tail = np.array([r.total - r.values[0] for r in res]) - lam[1:].sum()
    # a second Laplace(scale) coordinate (KS, false-positive rate P_MIN), independent of the first
    # (Kendall's tau test of independence, two-sided, false-positive rate P_MIN)
    assert stats.kstest(tail, stats.laplace(scale=scale).cdf).pvalue > P_MIN
    assert stats.kendalltau(noise, tail).pvalue > P_MIN


def test_utility_grows_with_epsilon():
    X = _data(n=3000, d=12, seed=1)
    A = X.T @ X
    w = np.linalg.eigvalsh(A)[::-1]

    def energy(eps):
        vals = []
        for s in range(10):
            V = exponential_pca(X, 3, epsilon=eps, row_norm=1.0, random_state=s).components
            vals.append(np.trace(V.T @ A @ V) / w[:3].sum())
        return float(np.mean(vals))

    e_low, e_high = energy(0.5), energy(20.0)
    assert e_low < e_high and e_high > 0.95


def test_accountant_is_charged_and_refuses_before_reading():
    X = _data()
    acc = Accountant(epsilon=1.0, delta=0.0)
    ppca(X, 2, epsilon=0.6, row_norm=1.0, accountant=acc, random_state=0)
    assert acc.epsilon_spent() == pytest.approx(0.6, rel=1e-9)
    with pytest.raises(BudgetExceededError):
        exponential_pca(X, 2, epsilon=0.6, row_norm=1.0, accountant=acc, random_state=0)
    assert len(acc.entries) == 1


def test_estimator_with_delta_zero():
    X = _data(n=1000, d=6)
    est = DPPCA(2, epsilon=1.0, delta=0.0, row_norm=1.0, method="exponential", random_state=0)
    Z = est.fit_transform(X)
    assert Z.shape == (1000, 2)
    assert est.privacy_.delta == 0.0 and est.privacy_.certified
    assert np.isfinite(est.explained_variance_ratio_).all()
    est = DPPCA(1, epsilon=1.0, delta=0.0, row_norm=1.0, method="ppca", random_state=0,
                method_params={"envelope": "acg"}).fit(X)
    assert est.components_.shape == (1, 6)


@pytest.mark.parametrize("kw,err,match", [
    ({"epsilon": 0.0}, ValueError, "'epsilon'"),
    ({"delta": 1.0}, ValueError, "'delta'"),
    ({"delta": 1e-6}, ValueError, "'delta'.*must be 0"),
    ({"row_norm": -1.0}, ValueError, "'row_norm'"),
    ({"relation": "priv1"}, ValueError, "'relation'"),
    ({"calibration": "loose"}, ValueError, "'calibration'"),
    ({"epsilon_split": {"eigenvalue_share": 0.2}}, ValueError, "'epsilon_split'.*an EpsilonSplit"),
    ({"epsilon_split": EpsilonSplit(vector_shares=[1.0])}, ValueError, "'vector_shares'"),
    ({"epsilon_split": EpsilonSplit(vector_shares=[1.0, -1.0])}, ValueError, "'vector_shares'"),
    ({"envelope": "x"}, ValueError, "'envelope'"),
    ({"max_proposals": 0}, ValueError, "'max_proposals' parameter of exponential"),
    ({"k": 9}, ValueError, "'k'.*Got 9"),
    ({"k": 1.5}, TypeError, "'k'"),
])
def test_mechanism_bad_input(kw, err, match):
    params = dict(k=2, epsilon=1.0, row_norm=1.0, random_state=0)
    params.update(kw)
    X = _data()
    k = params.pop("k")
    with pytest.raises(err, match=match):
        exponential_pca(X, k, **params)


def test_delta_zero_is_accepted_and_data_untouched():
    X = _data() * 3.0
    before = X.copy()
    r = ppca(X, 2, epsilon=1.0, delta=0.0, row_norm=1.0, random_state=0)
    assert np.array_equal(X, before)
    assert r.privacy.delta == 0.0 and r.privacy.epsilon == pytest.approx(1.0, rel=1e-9)


# -- privacy audits at pure epsilon ----------------------------------------------------------------
#
# Neighbours in d = 2 with C = 1 and two background rows e_2 (they make the normalisers move, which
# is what the factor 2 of replace-one is for): replace-one x = e_1 by y = e_2; add/remove x = e_1.
# T = v_1^2 and the event {T > 0.9}, fixed in advance from the closed-form densities (it maximises the
# expected lower bound). With epsilon = 2 the correct mechanism's bound is about 1.2 (of 2: the
# threshold test cannot reach the supremum of the privacy loss, which is attained only near v = e_1);
# a mechanism twice as concentrated has a true loss near 2.6 on this event and is caught.

EPS_AUDIT = 2.0
THRESHOLD = 0.9


def _pair(relation):
    bg = np.array([[0.0, 1.0], [0.0, 1.0]])
    x, y = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    return np.vstack([x, bg]), (np.vstack([y, bg]) if relation == "replace_one" else bg)


def _sampler_audit(relation, factor, n_runs=40_000):
    X0, X1 = _pair(relation)
    t = []
    for i, X in enumerate((X0, X1)):
        c = ppca(X, 1, epsilon=EPS_AUDIT, row_norm=1.0, relation=relation,
                 random_state=0).diagnostics["concentrations"][0]
        v = sample_bingham(factor * c * (X.T @ X), n_runs, random_state=100 + i)
        t.append(v[:, 0] ** 2)
    return threshold_epsilon_lower_bound(t[0], t[1], THRESHOLD, 0.0, ALPHA)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_audit_at_the_mechanisms_concentration(relation):
    lb = _sampler_audit(relation, 1.0)
    assert lb <= EPS_AUDIT
    assert lb > 0.8  # the test has power: it sees a good part of the claim


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_audit_catches_a_mechanism_twice_as_concentrated(relation):
    assert _sampler_audit(relation, 2.0) > EPS_AUDIT


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_end_to_end_audit_of_ppca(relation):
    """The whole mechanism (clipping, scatter, calibration, sampler), fewer runs."""
    X0, X1 = _pair(relation)
    n_runs = 1500
    seeds = np.random.SeedSequence(31).generate_state(2 * n_runs)
    t = [np.array([ppca(X, 1, epsilon=EPS_AUDIT, row_norm=1.0, relation=relation,
                        random_state=int(s)).components[0, 0] ** 2 for s in ss])
         for X, ss in ((X0, seeds[:n_runs]), (X1, seeds[n_runs:]))]
    assert threshold_epsilon_lower_bound(t[0], t[1], THRESHOLD, 0.0, ALPHA) <= EPS_AUDIT
    # and the mechanism's outputs follow the sampler's law at its concentration (two-sample KS)
    c = ppca(X0, 1, epsilon=EPS_AUDIT, row_norm=1.0, relation=relation,
             random_state=0).diagnostics["concentrations"][0]
    ref = sample_bingham(c * (X0.T @ X0), 20_000, random_state=8)[:, 0] ** 2
    assert stats.ks_2samp(t[0], ref).pvalue > P_MIN


def test_sampler_error_names_only_public_inputs():
    # the acceptance rate (and the envelope chosen, and how many were accepted) depend on
    # M, the private data in the mechanisms; the message names only public inputs.
    M = np.diag(np.linspace(1.0, 0.0, 30) * 50.0)
    with pytest.raises(BinghamSamplerError) as info:
        sample_bingham(M, 10, random_state=0, envelope="acg", max_proposals=1)
    message = str(info.value)
    for private in ("acceptance", "accepted", "acg", "tangent", "in all"):
        assert private not in message
    assert "max_proposals=1" in message and "d=30" in message


@pytest.mark.parametrize("fn", [ppca, exponential_pca])
def test_pure_epsilon_mechanisms_refuse_delta(fn):
    X = _data()
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(ValueError, match="'delta' parameter of .* must be 0"):
        fn(X, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, accountant=acc, random_state=0)
    assert acc.entries == ()


@pytest.mark.parametrize("fn", [ppca, exponential_pca])
def test_parameters_are_declared_in_a_constraint_table(fn) -> None:
    """The parameters are stated once, in a table (``parameter_constraints``); a value outside it gets
    the generated message and charges nothing."""
    table = fn.parameter_constraints
    assert {"epsilon", "delta", "row_norm", "envelope", "max_proposals", "random_state"} <= set(table)
    assert "epsilon_split" in table
    with pytest.raises(ValueError, match=r"The 'accounting' parameter of EpsilonSplit must be one of "
                                         r"'joint', 'per_direction'\. Got 'x' instead\."):
        EpsilonSplit(accounting="x")
    with pytest.raises(ValueError, match=r"The 'eigenvalue_share' parameter of EpsilonSplit must be"):
        EpsilonSplit(eigenvalue_share=1.0)
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(ValueError, match=rf"The 'envelope' parameter of {fn.__name__} must be one of "
                                         r"'auto', 'acg', 'tangent'\. Got 'x' instead\."):
        fn(_data(), 2, epsilon=1.0, row_norm=1.0, envelope="x", accountant=acc)
    with pytest.raises(ValueError, match=rf"'random_state' parameter of {fn.__name__} must be .*'secure'"):
        fn(_data(), 2, epsilon=1.0, row_norm=1.0, random_state=-1, accountant=acc)
    assert acc.entries == ()


# -- joint accounting of the deflated directions and the adaptive split -----------------
def _log_mean_exp_sphere3(M: np.ndarray) -> float:
    """log E[exp(u^T M u)] for u uniform on S^2 (Archimedes: u_3 = t is uniform on [-1, 1])."""
    m = np.sort(np.linalg.eigvalsh(M))[::-1]
    a, b = m[0] - m[2], m[1] - m[2]

    def f(t: float) -> float:
        s = 1.0 - t * t
        z = s * (a - b) / 2.0
        return math.exp(s * (a + b) / 2.0 + z - (a + b) / 2.0 - (a - b) / 2.0) * special.ive(0, z)

    val, _ = integrate.quad(f, -1.0, 1.0, epsabs=0, epsrel=1e-12, limit=200)
    return m[2] + (a + b) / 2.0 + (a - b) / 2.0 + math.log(val / 2.0)


def _log_mean_exp_circle(M: np.ndarray) -> float:
    """log E[exp(u^T M u)] for u uniform on the unit circle: e^{(m1+m2)/2} I_0((m1-m2)/2)."""
    m1, m2 = np.sort(np.linalg.eigvalsh(M))[::-1]
    z = (m1 - m2) / 2.0
    return (m1 + m2) / 2.0 + z + math.log(special.ive(0, z))


def _log_density_two_steps(A: np.ndarray, V: np.ndarray, c: list[float]) -> float:
    """Exact log density of the deflated draw (v_1, v_2) in R^3 at V, w.r.t. the product of the
    uniform laws: sum_j c_j v_j^T A_j v_j - log Z_j, Z_j the normaliser on the complement."""
    v1, v2 = V[:, 0], V[:, 1]
    out = c[0] * float(v1 @ A @ v1) - _log_mean_exp_sphere3(c[0] * A)
    P = np.linalg.svd(np.eye(3) - np.outer(v1, v1))[0][:, :2]  # basis of the complement of v_1
    A2 = P.T @ A @ P
    return out + c[1] * float(v2 @ A @ v2) - _log_mean_exp_circle(c[1] * A2)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_joint_accounting_is_exact_and_tight_on_the_worst_pair(relation):
    """The privacy loss of the two deflated draws, computed exactly (no sampling), stays within the
    certified epsilon for random outputs and neighbours and reaches >= 95% of it on the worst pair
    (background of N copies of y = e_2; x = e_1; V = (e_1, e_3)). The per-direction constants of
    before (2 c_j per direction under replace-one) would certify only 2/3 of it, and dropping the
    ``max c`` term of the joint bound is caught here (the loss would exceed the claim)."""
    eps, N = 1.0, 400
    e = np.eye(3)
    if relation == "replace_one":
        B = np.tile(e[1], (N, 1))
        D, D2, V = np.vstack([B, e[0]]), np.vstack([B, e[1]]), np.stack([e[0], e[2]], axis=1)
    else:  # add/remove: the normalisers alone (B = N copies of x = e_1, V orthogonal to x)
        B = np.tile(e[0], (N, 1))
        D, D2, V = np.vstack([B, e[0]]), B, np.stack([e[1], e[2]], axis=1)
    r = ppca(D, 2, epsilon=eps, row_norm=1.0, relation=relation, random_state=0,
             epsilon_split=EpsilonSplit(eigenvalue_share=0.0, allocation="equal"))
    c = r.diagnostics["concentrations"]
    assert r.privacy.epsilon == pytest.approx(eps, rel=1e-9)
    A, A2 = D.T @ D, D2.T @ D2
    worst = abs(_log_density_two_steps(A, V, c) - _log_density_two_steps(A2, V, c))
    assert 0.95 * eps <= worst <= eps * (1 + 1e-9)
    rng = np.random.default_rng(16)
    for _ in range(60):  # random outputs and random neighbouring pairs: the bound holds
        Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        rows = rng.normal(size=(rng.integers(1, 30), 3))
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
        x, y = (t / np.linalg.norm(t) for t in rng.normal(size=(2, 3)))
        Ab = rows.T @ rows
        Ax, Ay = Ab + np.outer(x, x), (Ab + np.outer(y, y)) if relation == "replace_one" else Ab
        loss = _log_density_two_steps(Ax, Q[:, :2], c) - _log_density_two_steps(Ay, Q[:, :2], c)
        assert abs(loss) <= eps * (1 + 1e-9)


def test_adaptive_split_always_certifies_the_planned_total():
    """Whatever the released eigenvalues, the adaptive split's concentrations satisfy the joint
    bound C^2 (max c + sum c) = epsilon of the directions (replace-one), C^2 sum c (add/remove): the
    split is post-processing of the Laplace release and the event is planned from public inputs."""
    from dpspectral.pca._exponential import _adaptive_concentrations, _plan
    from dpspectral.privacy._budget import Relation

    rng = np.random.default_rng(5)
    for relation in (Relation.REPLACE_ONE, Relation.ADD_REMOVE):
        for _ in range(200):
            d, k = int(rng.integers(3, 60)), 0
            k = int(rng.integers(2, d))
            C = float(rng.uniform(0.1, 3.0))
            plan = _plan("exponential", k=k, d=d, epsilon=float(rng.uniform(0.1, 8)), relation=relation,
                         calibration="tight", row_norm=C, eigenvalue_share=0.1, vector_shares=None,
                         allocation="adaptive", accounting="joint")
            released = rng.exponential(size=k + 1) * rng.uniform(1, 1e4) - rng.uniform(0, 50)
            cs = np.array(_adaptive_concentrations(plan, released, d, k))
            assert cs.shape == (k,) and (cs >= 0).all() and cs[0] > 0
            total = plan.unit * (cs.sum() + (cs.max() if relation is Relation.REPLACE_ONE else 0.0))
            assert total == pytest.approx(plan.directions_epsilon, rel=1e-9)


def test_adaptive_split_spends_on_the_directions_it_can_find():
    """One strong direction among weak ones: the split puts the budget on it (others free)."""
    from dpspectral.pca._exponential import _adaptive_concentrations, _plan
    from dpspectral.privacy._budget import Relation

    plan = _plan("exponential", k=5, d=100, epsilon=1.0, relation=Relation.REPLACE_ONE,
                 calibration="tight", row_norm=1.0, eigenvalue_share=0.1, vector_shares=None,
                 allocation="adaptive", accounting="joint")
    cs = _adaptive_concentrations(plan, np.array([5000.0, 60, 50, 40, 30, 2000.0]), 100, 5)
    assert cs[0] > 0 and cs[1:] == [0.0] * 4
    cs = _adaptive_concentrations(plan, np.array([5e5, 4e5, 3e5, 2e5, 1e5, 2000.0]), 100, 5)
    assert all(c > 0 for c in cs)


def test_defaults_beat_a_random_subspace_and_the_old_split_on_a_spiked_set():
    """Spiked set (d = 40, k = 4, n = 3000, unit rows, eps = 0.5), 6 seeds averaged. Measured over 8
    seeds: defaults 0.686 / 0.683 (ppca / exponential; sd 0.027 per seed), the equal per-direction
    split of before 0.513 (sd 0.048), a random subspace about 0.1 (k/d of the trace). Asserted:
    >= random + 0.3, and >= before + 0.08, i.e. about 4 standard deviations of the 6-seed difference
    below the measured gap (false-positive rate under a fresh seed about 1e-4)."""
    rng = np.random.default_rng(0)
    d, k, n, eps, seeds = 40, 4, 3000, 0.5, range(6)
    X = (rng.normal(size=(n, d)) * np.r_[[6.0, 4.0, 3.0, 2.5], np.ones(d - k) * 0.5]) @ _rotation(d, 7).T
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    A = X.T @ X
    top = np.linalg.eigvalsh(A)[::-1][:k].sum()

    def captured(res):
        return float(np.trace(res.components.T @ A @ res.components)) / top

    new = np.mean([captured(ppca(X, k, epsilon=eps, row_norm=1.0, random_state=s)) for s in seeds])
    new_e = np.mean([captured(exponential_pca(X, k, epsilon=eps, row_norm=1.0, random_state=s))
                     for s in seeds])
    old = np.mean([captured(exponential_pca(X, k, epsilon=eps, row_norm=1.0, random_state=s,
                                            epsilon_split=EpsilonSplit(allocation="equal",
                                                                       accounting="per_direction")))
                   for s in seeds])
    Qr = np.linalg.qr(np.random.default_rng(1).normal(size=(d, k)))[0]
    random_level = float(np.trace(Qr.T @ A @ Qr)) / top
    assert random_level < 0.2
    assert min(new, new_e) >= random_level + 0.3
    assert min(new, new_e) >= old + 0.08


def _release_l1(stat, relation: str, d: int = 4) -> float:
    """max L1 change of ``stat(A)`` over the worst pairs we can build: x = e_3, the top direction of
    the background, against y = e_1, a direction of the tail (or nothing, add/remove)."""
    e = np.eye(d)
    B = np.vstack([e[2]] * 3 + [e[3]] * 2)
    worst = 0.0
    for x, y in ((e[2], e[0]), (e[2], None)):
        D = np.vstack([B, x])
        D2 = np.vstack([B, y]) if relation == "replace_one" and y is not None else B
        if (relation == "replace_one") == (y is not None):
            worst = max(worst, float(np.abs(stat(D.T @ D) - stat(D2.T @ D2)).sum()))
    return worst


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_coordinate_releases_declare_their_sensitivities(relation):
    """The diagonal (L1 <= 2 C^2 replace-one, C^2 add/remove: sum_i x_i^2 moves by ||x||^2) and the
    eigenvalues of A and of A_SS released together (twice the single release) are declared at least
    at the change a built pair produces, with Laplace scale = sensitivity / epsilon share, and the
    events compose to the request."""
    from dpspectral.pca._exponential import _plan
    from dpspectral.privacy._budget import Relation

    rel = Relation(relation)
    plan = _plan("exponential", k=1, d=4, epsilon=2.0, relation=rel, calibration="tight", row_norm=1.0,
                 eigenvalue_share=0.1, vector_shares=None, allocation="adaptive", accounting="joint",
                 coordinate_share=0.05)
    assert not plan.coordinates  # k = 1: no split to choose, so no coordinates either
    plan = _plan("exponential", k=2, d=4, epsilon=2.0, relation=rel, calibration="tight", row_norm=1.0,
                 eigenvalue_share=0.1, vector_shares=None, allocation="adaptive", accounting="joint",
                 coordinate_share=0.05)
    diag, eig = plan.releases
    assert diag.name == "diagonal" and eig.name == "eigenvalues"
    built_diag = _release_l1(np.diag, relation)
    S = np.array([0, 1, 2])

    def both(A):
        w, ws = np.linalg.eigvalsh(A)[::-1], np.linalg.eigvalsh(A[np.ix_(S, S)])[::-1]
        return np.r_[w[:2], w[2:].sum(), ws[:2], ws[2:].sum()]

    built_eig = _release_l1(both, relation)
    assert built_diag == pytest.approx(2.0 if relation == "replace_one" else 1.0)
    assert built_eig == pytest.approx(4.0 if relation == "replace_one" else 2.0)
    C2 = (1 + 1e-10) ** 2
    assert diag.sensitivity >= built_diag * C2 * (1 - 1e-12)
    assert eig.sensitivity >= built_eig * C2 * (1 - 1e-12)
    assert diag.sensitivity / diag.scale == pytest.approx(0.1, rel=1e-9)
    assert eig.sensitivity / eig.scale == pytest.approx(0.2, rel=1e-9)
    assert plan.directions_epsilon == pytest.approx(1.7, rel=1e-9)
    assert epsilon_of(plan.events, 0.0, relation=rel) == pytest.approx(2.0, rel=1e-9)


def test_coordinates_are_used_where_energy_is_coordinate_sparse_and_not_after_a_rotation():
    """20 of d = 100 coordinates carry all the energy (k = 3, n = 4000, eps = 1): the released
    diagonal proposes about those and the directions are drawn there; after a random rotation nothing
    can be dropped and all d coordinates are used. A run on the sparse rows may still fall back to all d
    coordinates where its released eigenvalues call for them (7 of 40 seeds with float noise, 5 of 40
    with the exact draws; seed 1 here): at most one of the four does. Measured over 6 seeds (float
    noise): 0.904 (sd 0.023) with the coordinates against 0.752 (sd 0.022) without; over seeds 0-7 of
    the exact draws (the fallback included): 0.862 against 0.764. Asserted on 4 seeds: >= +0.08."""
    rng = np.random.default_rng(3)
    d, a, k, n, eps = 100, 20, 3, 4000, 1.0
    Z = np.zeros((n, d))
    Z[:, :a] = (rng.normal(size=(n, a)) * np.r_[[5.0, 4.0, 3.0], np.ones(a - 3)]) @ _rotation(a, 2).T
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    for X, dense in ((Z, False), (Z @ _rotation(d, 4).T, True)):
        A = X.T @ X
        top = np.linalg.eigvalsh(A)[::-1][:k].sum()
        runs = [exponential_pca(X, k, epsilon=eps, row_norm=1.0, random_state=s) for s in range(4)]
        used = [r.diagnostics["coordinates"] for r in runs]
        # sparse: the released eigenvalues may still call for all d coordinates (about 1 seed in 6 with
        # either noise, e.g. seed 1 of the exact draws): at most one of the four does
        assert all(u == d for u in used) if dense else sum(u <= 30 for u in used) >= 3
        if not dense:
            cap = np.mean([np.trace(r.components.T @ A @ r.components) / top for r in runs])
            base = np.mean([np.trace(r.components.T @ A @ r.components) / top for r in (
                exponential_pca(X, k, epsilon=eps, row_norm=1.0, random_state=s,
                                epsilon_split=EpsilonSplit(coordinate_share=0.0))
                for s in range(4))])
            assert cap >= base + 0.08
