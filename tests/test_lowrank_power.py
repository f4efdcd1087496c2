"""Hardt–Roth's noisy subspace iteration (the default ``hardt_roth``), the subspace-only release and the
singular-value shrinkage that keeps every reconstruction no worse than the zero matrix."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from dpspectral import Accountant, DPLowRank, Relation
from dpspectral.lowrank import PowerIteration, hardt_roth
from dpspectral.lowrank import _power as power_module
from dpspectral.lowrank._power import RowSubspaceResult, default_block, default_shares
from dpspectral.lowrank._shrink import frobenius_shrink, noise_threshold, signal_singular_values
from dpspectral.privacy import analytic_noise_multiplier, epsilon_of

KW = dict(epsilon=1.0, delta=1e-6)


def _unit_rows(m: int, n: int, k: int, seed: int) -> np.ndarray:
    """m unit rows near a k-dimensional subspace of R^n (a spiked matrix)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.normal(size=(n, k)))[0]
    X = rng.normal(size=(m, k)) * np.linspace(3.0, 1.0, k) @ B.T + rng.normal(size=(m, n)) / math.sqrt(n)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _subspace_error(A: np.ndarray, V: np.ndarray, k: int) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.linalg.norm(A - (A @ V) @ V.T) / np.sqrt(np.sum(s[k:] ** 2)))


def test_power_plan_is_the_derived_composition(monkeypatch):
    """Each iteration adds N(0, (s_j sqrt(2) C^2)^2) to A^T A X_j with sum s_j^-2 = s^-2 (Gaussian DP)."""
    A = _unit_rows(300, 20, 3, seed=1) * 0.8
    A[::7] *= 12.5  # norm 10: clipped to 0.8 on a copy
    Ac = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True) / 0.8, 1.0)
    seen: list = []
    real = power_module.orth_columns

    def orth(Y):
        seen.append(Y.copy())
        return real(Y)

    monkeypatch.setattr(power_module, "orth_columns", orth)
    res = hardt_roth(A, 3, row_norm=0.8, random_state=0, **KW)
    p, T = default_block(3, 20), 3
    assert res.diagnostics["block"] == p == 20 and res.diagnostics["iterations"] == T
    s = analytic_noise_multiplier(1.0, 1e-6)
    mults = [g.noise_multiplier for g in res.privacy.events]
    assert sum(m**-2 for m in mults) == pytest.approx(s**-2, rel=1e-9)
    assert [m**-2 / s**-2 for m in mults] == pytest.approx(list(default_shares(3)), rel=1e-9)
    assert res.privacy.relation is Relation.REPLACE_ONE and res.privacy.certified
    assert epsilon_of(list(res.privacy.events), 1e-6, relation="replace_one") == pytest.approx(1.0, rel=1e-6)
    sens = math.sqrt(2) * 0.8**2
    assert res.diagnostics["sensitivity"] == pytest.approx(sens)
    # the noise actually drawn: Y_j - A^T A X_j with X_0 = seen[0] (the start) and X_j = orth(Y_{j-1})
    X = real(seen[0])
    for j, Y in enumerate(seen[1:]):
        N = Y - Ac.T @ (Ac @ X)
        assert np.std(N) == pytest.approx(mults[j] * sens, rel=0.1)  # 400 entries: 3.5% std error
        X = real(Y)


def test_sensitivity_bound_holds_on_random_and_adversarial_pairs():
    """||(x x^T - y y^T) X||_F <= sqrt(2) C^2 for rows of norm <= C and orthonormal X."""
    rng = np.random.default_rng(2)
    n, p, C = 12, 5, 0.7
    worst = 0.0
    for _ in range(2000):
        X = np.linalg.qr(rng.normal(size=(n, p)))[0]
        x, y = rng.normal(size=n), rng.normal(size=n)
        x *= C / np.linalg.norm(x)
        y *= C * rng.uniform(0, 1) ** 0.1 / np.linalg.norm(y)
        if rng.uniform() < 0.5:  # inside the block: the bound is attained for orthogonal x, y
            x, y = X @ (X.T @ x), X @ (X.T @ y)
            x *= C / np.linalg.norm(x)
            y -= x * (x @ y) / (x @ x)
            y *= C / np.linalg.norm(y)
        worst = max(worst, float(np.linalg.norm((np.outer(x, x) - np.outer(y, y)) @ X)))
    assert worst <= math.sqrt(2) * C**2 * (1 + 1e-12)
    assert worst >= 0.999 * math.sqrt(2) * C**2  # the bound is tight


def test_subspace_only_release_and_its_reconstruction():
    A = _unit_rows(400, 30, 3, seed=3)
    res = hardt_roth(A, 3, row_norm=1.0, random_state=0, epsilon=50.0, delta=1e-6)
    assert isinstance(res, RowSubspaceResult) and res.U is None and res.rank == 3
    assert res.V.shape == (30, 3) and np.allclose(res.V.T @ res.V, np.eye(3), atol=1e-10)
    with pytest.raises(ValueError, match="needs the matrix A"):
        res.reconstruct()
    with pytest.raises(ValueError, match="30 columns"):
        res.reconstruct(A[:, :5])
    R = res.reconstruct(A)
    assert np.allclose(R, A @ res.V @ res.V.T)
    # S estimates A's top singular values (spiked-model inversion of the last iterate's)
    s = np.linalg.svd(A, compute_uv=False)[:3]
    assert np.allclose(res.S, s, rtol=0.05)
    est = DPLowRank(3, epsilon=50.0, delta=1e-6, method="hardt_roth", row_norm=1.0, random_state=0).fit(A)
    assert est.U_ is None and np.allclose(est.reconstruct(A), R)
    with pytest.raises(ValueError, match="needs the matrix A"):
        est.reconstruct()


def test_power_beats_a_random_subspace_on_a_spiked_set():
    """Seeded (5 seeds): at epsilon = 1 the subspace error is within 1.25 of the best on 2,000 unit rows
    near a 5-dim subspace of R^50, where a random 5-dim V is above 3 and the range finder's (STOC 2012)
    V too. Measured: 1.14-1.18 (power), 3.74 (random), 3.63-3.71 (range finder)."""
    A = _unit_rows(2000, 50, 5, seed=4)
    rnd = _subspace_error(A, np.linalg.qr(np.random.default_rng(0).normal(size=(50, 5)))[0], 5)
    errs = [_subspace_error(A, hardt_roth(A, 5, row_norm=1.0, random_state=r, **KW).V, 5) for r in range(5)]
    assert rnd > 3.0 and max(errs) < 1.25


def _mnist_rows(m: int) -> np.ndarray | None:
    root = Path(os.environ.get("DPSPECTRAL_DATA", "/nonexistent")) / "mnist"
    path = root / "t10k-images-idx3-ubyte.gz"
    if not path.is_file():
        return None
    from dpspectral.datasets import load_idx

    X, _ = load_idx(path, root / "t10k-labels-idx1-ubyte.gz")
    A = np.asarray(X[:m], dtype=float)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def test_power_beats_a_random_subspace_on_real_images():
    """MNIST t10k, first 4,000 images, unit rows, k = 5, epsilon = 1, seeds 0-2: the subspace error
    (over the best rank-5) is at most 1.25 where a random V's is above 1.45 (the range finder's V, the
    STOC 2012 algorithm, is at random level here). Measured: 1.18 (power), 1.51 (random and range
    finder); k = 10: 1.33 against 1.71."""
    A = _mnist_rows(4000)
    if A is None:
        pytest.skip("MNIST not in DPSPECTRAL_DATA")
    k = 5
    rnd = _subspace_error(A, np.linalg.qr(np.random.default_rng(0).normal(size=(784, k)))[0], k)
    errs = [_subspace_error(A, hardt_roth(A, k, row_norm=1.0, random_state=r, **KW).V, k) for r in range(3)]
    assert rnd > 1.45 and max(errs) < 1.25


def test_zero_signal_never_worse_than_the_zero_matrix():
    """A = 0 (rows of norm 0 <= C): every released singular value is 0 (both algorithms, 20 seeds), so
    the reconstruction's error equals the zero matrix's. False-positive rate per run <= 1e-3 (the
    concentration margin of the edge), so <= 2% over the 20 seeded runs; the seeds pass."""
    A = np.zeros((200, 30))
    for r in range(20):
        rf = hardt_roth(A, 3, row_norm=1.0, algorithm="range_finder", random_state=r, **KW)
        assert np.all(rf.S == 0) and np.linalg.norm(rf.reconstruct()) == 0.0
        pw = hardt_roth(A, 3, row_norm=1.0, random_state=r, **KW)
        assert np.all(pw.S == 0)
    # the raw values (the paper's) are not zero: the shrinkage is what keeps the error at zero's
    raw = hardt_roth(A, 3, row_norm=1.0, algorithm="range_finder", singular_values="raw", random_state=0,
                     **KW)
    assert np.all(raw.S > 0)


def test_shrinkers_on_pure_noise_and_on_a_spike():
    rng = np.random.default_rng(5)
    a, b, sigma = 80, 300, 0.5
    kept = 0
    for _ in range(200):  # pure noise: zeroed except with probability <= 1e-3 each
        y = np.linalg.svd(sigma * rng.normal(size=(a, b)), compute_uv=False)
        kept += int(np.any(frobenius_shrink(y, sigma, a, b) > 0))
        assert y[0] < noise_threshold(sigma, a, b) * 1.05
    assert kept <= 2
    u, v = np.linalg.qr(rng.normal(size=(a, 1)))[0], np.linalg.qr(rng.normal(size=(b, 1)))[0]
    x = 4.0 * sigma * math.sqrt(b)
    errs_shrunk, errs_raw = [], []
    for _ in range(50):
        Y = x * u @ v.T + sigma * rng.normal(size=(a, b))
        U, y, Vt = np.linalg.svd(Y, full_matrices=False)
        assert signal_singular_values(y[:1], sigma, a, b)[0] == pytest.approx(x, rel=0.05)
        for shr, errs in ((frobenius_shrink(y[:1], sigma, a, b), errs_shrunk), (y[:1], errs_raw)):
            errs.append(np.linalg.norm(x * u @ v.T - shr[0] * np.outer(U[:, 0], Vt[0])))
    assert np.mean(errs_shrunk) < np.mean(errs_raw) < x  # shrinkage beats the raw value
    assert np.array_equal(frobenius_shrink(np.array([3.0]), 0.0, 4, 5), [3.0])


@pytest.mark.parametrize("kw,match", [
    ({"algorithm": "power", "row_change": 1.0}, "algorithm='power' needs rows clipped"),
    ({"algorithm": "power", "calibration": "paper"}, "algorithm='power' needs"),
    ({"algorithm": "svd"}, "'algorithm'"),
    ({"power": PowerIteration(block=0)}, "'power.block'"),
    ({"iterations": 0}, "'power.iterations'"),
    ({"power": PowerIteration(iterations=21)}, "'power.iterations'"),
    ({"singular_values": "zero"}, "'singular_values'"),
    ({"row_norm": float("nan")}, "row_norm"),
    ({"row_norm": 0.0}, "row_norm"),
])
def test_bad_input_charges_nothing(kw, match):
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(ValueError, match=match):
        hardt_roth(np.full((6, 4), 0.2), 1, **{**KW, "accountant": acc, "random_state": 0, **kw})
    assert acc.entries == ()
