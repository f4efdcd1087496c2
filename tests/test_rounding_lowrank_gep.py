"""Rounding in the statistic for the GEP solvers and the low-rank methods: each release's noise scale is
its unwidened scale times ``1 + r``, with ``r`` derived here from public inputs (``n``, ``d``, ``C``, the
sizes), ``r > 0``, and the events (what is charged) unchanged.

The unwidened run is the same call with the widening turned off (the module's rounding bound replaced by
zero); the seeds are the same, so the two reports must hold the same events."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpspectral import gep
from dpspectral.gep import _common, _pair_rounding, _reduction, _scatter

U = 2.0**-53  # the unit roundoff of float64


def _gamma(k: int) -> float:
    return k * U / (1 - k * U)


N, D, C, K1 = 1500, 12, 1.0, 12  # rows, features, row bound, DPSR's basis (all d by default)


@pytest.fixture(scope="module")
def pairs() -> dict[str, gep.ScatterPair]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    y = rng.integers(0, 3, N)
    return {"fda": gep.fda_pair(X, y, row_norm=C, classes=[0, 1, 2]), "pca": gep.pca_pair(X, row_norm=C)}


def _no_widening(monkeypatch: pytest.MonkeyPatch) -> None:
    def unwidened(pair: gep.ScatterPair) -> _pair_rounding.PairRounding:
        return _pair_rounding.PairRounding(pair.n_features)

    monkeypatch.setattr(_common, "pair_rounding", unwidened)  # the pair's own release (SR+DP, the flows)
    monkeypatch.setattr(_reduction, "pair_rounding", unwidened)  # DPSR's


def _run(method: str, pair: gep.ScatterPair, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(gep, method)(pair, 2, epsilon=1.0, delta=1e-5, random_state=0, **kw)


def _shares_a_b(kind: str) -> tuple[float, float]:
    """``r`` of the releases of A and B: ``2 gamma_k M / Delta_F`` (docstring of ``_pair_rounding``)."""
    if kind == "pca":
        return 2 * _gamma(2 * N + 8) * 2 * C**2 / (4 * math.sqrt(2) * C**2 / N), 0.0
    r_a = 2 * _gamma(4 * N + 12) * 4 * C**2 / (8 * math.sqrt(2) * C**2 / N)
    r_b = 2 * _gamma(3 * N + 11) * 2 * C**2 / (4 * math.sqrt(2) * C**2 / N)
    return r_a, r_b


@pytest.mark.parametrize("kind", ["fda", "pca"])
@pytest.mark.parametrize("method", ["sr_dp", "dp_rayleigh_flow"])
def test_pair_releases_are_widened_by_the_rounding_of_the_computed_pair(pairs, monkeypatch, method, kind):
    pair = pairs[kind]
    widened = _run(method, pair)
    _no_widening(monkeypatch)
    plain = _run(method, pair)
    assert widened.privacy.events == plain.privacy.events
    assert widened.privacy.epsilon == plain.privacy.epsilon
    r_a, r_b = _shares_a_b(kind)
    assert r_a > 0
    std_a, plain_a = widened.diagnostics["noise_std_A"], plain.diagnostics["noise_std_A"]
    assert std_a / plain_a - 1 == pytest.approx(r_a, rel=1e-6)
    assert std_a / plain_a - 1 < 1e-5  # tiny at this size
    if kind == "fda":
        assert r_b > 0
        assert widened.diagnostics["noise_std_B"] / plain.diagnostics["noise_std_B"] - 1 == pytest.approx(
            r_b, rel=1e-6)
    else:  # B = I is public: no release
        assert widened.diagnostics["noise_std_B"] == plain.diagnostics["noise_std_B"] == 0.0


def _dpsr_shares(kind: str, k: int) -> dict[str, float]:
    """``r`` of DPSR's three releases (docstring of ``_pair_rounding``): ``2 B V`` (``d`` roundings more,
    ``2 sqrt(k1)`` times B's bound), ``diag(V^T B V)`` (``2 d + 1`` more, ``sqrt(k1)``), phase 2
    (``2 d + 2 + k1`` more, ``2 k1 sqrt(k)`` times A's bound, over ``2 min(||dA||_F, sqrt(k) ||dA||_2)``)."""
    slack = 1 + 1e-6
    if kind == "fda":
        k_a, m_a, a_f, a_2 = 4 * N + 12, 4 * C**2, 8 * math.sqrt(2) * C**2 / N, 8 * C**2 / N
        k_b, m_b, b_f, b_2 = 3 * N + 11, 2 * C**2, 4 * math.sqrt(2) * C**2 / N, 4 * C**2 / N
        delta1 = 2 * min(b_f, math.sqrt(K1) * b_2)
        delta_lam = min(b_f, math.sqrt(K1) * b_2)
        out = {
            "phase1": 2 * _gamma(k_b + D) * m_b * 2 * math.sqrt(K1) * slack / delta1,
            "lambda": 2 * _gamma(k_b + 2 * D + 1) * m_b * math.sqrt(K1) * slack**2 / delta_lam,
        }
    else:
        k_a, m_a, a_f, a_2 = 2 * N + 8, 2 * C**2, 4 * math.sqrt(2) * C**2 / N, 4 * C**2 / N
        out = {}
    delta2 = 2 * min(a_f, math.sqrt(k) * a_2)
    out["phase2"] = 2 * _gamma(k_a + 2 * D + 2 + K1) * m_a * 2 * K1 * math.sqrt(k) * slack**3 / delta2
    return out


@pytest.mark.parametrize("kind", ["fda", "pca"])
@pytest.mark.parametrize("method", ["dpsr", "dpsrs"])
def test_dpsr_releases_are_widened_by_the_rounding_of_their_gradients(pairs, monkeypatch, method, kind):
    pair = pairs[kind]
    kw = {"n_iter": 4, **({"sparsity": 6} if method == "dpsrs" else {})}
    widened = _run(method, pair, **kw)
    _no_widening(monkeypatch)
    plain = _run(method, pair, **kw)
    assert widened.privacy.events == plain.privacy.events
    shares = _dpsr_shares(kind, 2)
    for name, r in shares.items():
        assert r > 0
        key = f"noise_std_{name}"
        got = widened.diagnostics[key] / plain.diagnostics[key] - 1
        assert got == pytest.approx(r, rel=1e-6), name
        # and the unwidened scale is the charged multiplier times the sensitivity
        diag = widened.diagnostics
        expected = diag[f"noise_multiplier_{name}"] * diag[f"sensitivity_{name}"]
        assert plain.diagnostics[key] == pytest.approx(expected, rel=1e-12)
    if kind == "pca":
        assert widened.diagnostics["noise_std_phase1"] == plain.diagnostics["noise_std_phase1"] == 0.0


def test_a_pair_the_caller_built_is_not_widened(pairs, monkeypatch):
    """The caller's pair: its sensitivities are the caller's statement about what it computed."""
    fda = pairs["fda"]
    user = gep.symmetric_definite_pair(fda.A, fda.B, sensitivity=fda.sensitivity, regularization="noise")
    widened = _run("sr_dp", user)
    _no_widening(monkeypatch)
    plain = _run("sr_dp", user)
    assert widened.diagnostics["noise_std_A"] == plain.diagnostics["noise_std_A"]
    assert widened.diagnostics["noise_std_B"] == plain.diagnostics["noise_std_B"]


# ------------------------------------------------------------------------------------------------
# Hardt-Roth
# ------------------------------------------------------------------------------------------------


def _hardt_roth(A: np.ndarray, **kw):
    from dpspectral.lowrank import hardt_roth

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hardt_roth(A, 2, epsilon=1.0, delta=1e-5, random_state=1, **kw)


def _rows(m: int = 400, n: int = 30) -> np.ndarray:
    A = np.random.default_rng(5).normal(size=(m, n))
    return A / np.linalg.norm(A, axis=1, keepdims=True) * 0.9


def test_hardt_roth_power_iterations_are_widened_for_the_rounding_of_a_t_a_x(monkeypatch):
    from dpspectral.lowrank import _power
    from dpspectral.privacy._clipping import sensitivity_norm

    A = _rows()
    m, n = A.shape
    widened = _hardt_roth(A, algorithm="power")
    monkeypatch.setattr(_power, "widen_projection", lambda release, **kw: release)
    plain = _hardt_roth(A, algorithm="power")
    assert widened.privacy.events == plain.privacy.events
    p = widened.diagnostics["block"]
    C = sensitivity_norm(1.0)
    # A^T (A X): a sum over the m rows (m + 1 additions) of products through the n of x^T X, plus the
    # products; each term at most C^2 ||X||_F = C^2 sqrt(p); over the sensitivity sqrt(2) C^2
    r = 2 * _gamma(m + n + 2) * m * C**2 * math.sqrt(p) * (1 + 1e-6) / (math.sqrt(2) * C**2)
    assert r > 0
    for got, base, event in zip(widened.diagnostics["sigma"], plain.diagnostics["sigma"],
                                plain.privacy.events, strict=True):
        assert base == pytest.approx(event.noise_multiplier * math.sqrt(2) * C**2, rel=1e-12)
        assert got / base - 1 == pytest.approx(r, rel=1e-6)


def test_hardt_roth_range_finder_projection_is_widened_and_the_range_is_not(monkeypatch):
    from dpspectral.lowrank import _hardt_roth as module

    A = _rows()
    m = A.shape[0]
    widened = _hardt_roth(A, algorithm="range_finder")
    monkeypatch.setattr(module, "widen_release", lambda release, **kw: release)
    plain = _hardt_roth(A, algorithm="range_finder")
    assert widened.privacy.events == plain.privacy.events
    # Q~^T A: a sum over the m rows of products q~_i a_i^T (norm <= tau C): gamma_(m+2) m tau C (1 + 1e-6)
    # against the sensitivity 2 C tau
    r = _gamma(m + 2) * m * (1 + 1e-6)
    assert r > 0
    assert widened.diagnostics["sigma2"] / plain.diagnostics["sigma2"] - 1 == pytest.approx(r, rel=1e-6)
    assert plain.diagnostics["sigma2"] == pytest.approx(
        plain.privacy.events[1].noise_multiplier * plain.diagnostics["sensitivity2"], rel=1e-12)
    assert widened.diagnostics["sigma1"] == plain.diagnostics["sigma1"]  # A Omega: Omega secret, no bound


def test_hardt_roth_rows_not_clipped_have_no_bound_and_are_not_widened():
    res = _hardt_roth(_rows(), row_change=1.0)
    unwidened = res.privacy.events[1].noise_multiplier * res.diagnostics["sensitivity2"]
    assert res.diagnostics["sigma2"] == pytest.approx(unwidened, rel=1e-13)  # a widening here: ~1e-11


# ------------------------------------------------------------------------------------------------
# the bound on the computed pair, against exact rationals
# ------------------------------------------------------------------------------------------------


def _exact_pair(rows: np.ndarray, idx: np.ndarray, classes: int):
    """The exact PCA ``A`` and FDA ``A``, ``B`` of the (already clipped) rows, in rationals."""
    from fractions import Fraction

    n, d = rows.shape
    R = [[Fraction(float(v)) for v in row] for row in rows]
    G = [[sum(r[i] * r[j] for r in R) for j in range(d)] for i in range(d)]
    t = [sum(r[i] for r in R) for i in range(d)]
    sums = [[sum(R[row][i] for row in range(n) if idx[row] == c) for i in range(d)] for c in range(classes)]
    counts = [max(int(np.sum(idx == c)), 1) for c in range(classes)]
    P = [[sum(sums[c][i] * sums[c][j] / counts[c] for c in range(classes)) for j in range(d)]
         for i in range(d)]
    pca_a = [[(G[i][j] - t[i] * t[j] / n) / n for j in range(d)] for i in range(d)]
    fda_a = [[(P[i][j] - t[i] * t[j] / n) / n for j in range(d)] for i in range(d)]
    fda_b = [[(G[i][j] - P[i][j]) / n for j in range(d)] for i in range(d)]
    return pca_a, fda_a, fda_b


def _distance(computed: np.ndarray, exact) -> float:
    from fractions import Fraction

    d = computed.shape[0]
    return math.sqrt(float(sum((Fraction(float(computed[i, j])) - exact[i][j]) ** 2
                               for i in range(d) for j in range(d))))


@pytest.mark.parametrize("seed", range(3))
def test_the_computed_pair_is_within_its_bound(seed):
    """``fda_pair`` and ``pca_pair`` on rows of mixed magnitudes (2**-30 to 1, so that the products and
    the subtractions round), against exact rationals: the Frobenius error within ``gamma_k M``."""
    rng = np.random.default_rng(seed)
    n, d, classes = 150, 3, 3
    rows = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 30, size=(n, 1))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    rows[: n // 2] += 0.5 / math.sqrt(d)  # a large mean: s s^T / n cancels much of G
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    idx = rng.integers(0, classes, n)
    fda = gep.fda_pair(rows, idx, row_norm=1.0, classes=list(range(classes)))
    pca = gep.pca_pair(rows, row_norm=1.0)
    clipped = _scatter._clip(rows, 1.0)  # the rows as the builders clip them
    exact_pca_a, exact_fda_a, exact_fda_b = _exact_pair(clipped, idx, classes)
    rounding_pca, rounding_fda = _pair_rounding.pair_rounding(pca), _pair_rounding.pair_rounding(fda)
    for computed, exact, (k, M) in [
        (pca.A, exact_pca_a, (rounding_pca.a_roundings, rounding_pca.a_magnitude)),
        (fda.A, exact_fda_a, (rounding_fda.a_roundings, rounding_fda.a_magnitude)),
        (fda.B, exact_fda_b, (rounding_fda.b_roundings, rounding_fda.b_magnitude)),
    ]:
        error = _distance(computed, exact)
        assert 0 < error <= _gamma(k) * M


def test_dpsr_gradients_of_the_computed_pair_are_within_their_bound():
    """``2 B V`` and ``2 sym(Phi~^T A Phi~) V'`` as DPSR computes them (``V``, ``Phi~``, ``V'`` public
    floats), against the exact products of the exact pair: within the bounds of ``_pair_rounding``."""
    from fractions import Fraction

    rng = np.random.default_rng(8)
    n, d, classes, k = 150, 3, 3, 2
    rows = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 30, size=(n, 1))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    idx = rng.integers(0, classes, n)
    fda = gep.fda_pair(rows, idx, row_norm=1.0, classes=list(range(classes)))
    _, exact_a, exact_b = _exact_pair(_scatter._clip(rows, 1.0), idx, classes)
    rounding = _pair_rounding.pair_rounding(fda)
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]  # k1 = d
    lam = np.array([0.3, 0.02, 1e-4])
    Phit = V / np.sqrt(lam + 0.01)
    W = np.linalg.qr(rng.standard_normal((d, k)))[0]

    def exact_times(M, X):
        return [[sum(M[i][q] * Fraction(float(X[q, j])) for q in range(len(M))) for j in range(X.shape[1])]
                for i in range(len(M))]

    def distance(computed, exact):
        return math.sqrt(float(sum((Fraction(float(computed[i, j])) - exact[i][j]) ** 2
                                   for i in range(computed.shape[0]) for j in range(computed.shape[1]))))

    exact_gradient = [[2 * v for v in row] for row in exact_times(exact_b, V)]
    error = distance(2.0 * (fda.B @ V), exact_gradient)
    bound = _gamma(rounding.b_roundings + d) * rounding.b_magnitude * 2 * math.sqrt(d) * (1 + 1e-6)
    assert 0 < error <= bound
    At = Phit.T @ fda.A @ Phit
    computed = 2.0 * (((At + At.T) / 2.0) @ W)
    PhiT = [[Fraction(float(Phit[q, i])) for q in range(d)] for i in range(d)]
    exact_at = exact_times([[sum(PhiT[i][q] * exact_a[q][j] for q in range(d)) for j in range(d)]
                            for i in range(d)], Phit)
    exact_phase2 = [[2 * v for v in row] for row in exact_times(exact_at, W)]
    phi_norm2 = float(1.0 / np.min(lam + 0.01))
    share = rounding.whitened_gradient_share(1.0, d, k)  # r for a sensitivity of 1 per ||Phi~||_2^2
    assert 0 < distance(computed, exact_phase2) <= share / 2 * phi_norm2
