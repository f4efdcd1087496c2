"""Never worse than the zero matrix, results that say what they need, continual_lrf's fast path,
bad method_params, and each method's V against a random subspace where its regime allows."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from dpspectral import Accountant, DPLowRank, methods
from dpspectral.lowrank import (
    ContinualLRF,
    CovarianceLRF,
    TurnstileLRF,
    continual_lrf,
    covariance_lrf,
    hardt_roth,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    turnstile_lrf,
)
from dpspectral.lowrank._subspace import GramResult

KW = dict(epsilon=1.0, delta=1e-6)
ONE_SHOT = [
    (private_frobenius_lrf, {}),
    (private_space_optimal_lrf, {}),
    (turnstile_lrf, {}),
    (continual_lrf, {}),
    (hardt_roth, {"row_norm": 1.0, "algorithm": "range_finder"}),
    (hardt_roth, {"row_norm": 1.0}),
    (covariance_lrf, {"row_norm": 1.0}),
]
IDS = ["priv2", "priv1", "turnstile", "continual", "hr_range_finder", "hr_power", "covariance"]


@pytest.mark.parametrize("fn,extra", ONE_SHOT, ids=IDS)
@pytest.mark.parametrize("shape", [(60, 12), (12, 60)])
def test_zero_signal_releases_the_zero_matrix(fn, extra, shape):
    """A = 0: every released singular value is 0 at epsilon 1 and 8 (seeds 0-4), so the error of the
    reconstruction equals the zero matrix's. Each run keeps a noise value with probability <= 1e-3
    (the edge's concentration margin): <= 1% over the 10 seeded runs of a case; the seeds pass."""
    A = np.zeros(shape)
    for eps in (1.0, 8.0):
        for r in range(5):
            seed = {} if fn is hardt_roth else {"sketch_seed": r}
            res = fn(A, 3, epsilon=eps, delta=1e-6, random_state=r, **seed, **extra)
            assert np.all(res.S == 0), (fn.__name__, eps, r, res.S)
            if res.U is not None and not isinstance(res, GramResult):
                assert np.linalg.norm(res.reconstruct()) == 0.0


def test_raw_singular_values_are_the_papers_and_worse_than_zero_on_noise():
    """The paper's raw truncation stays reachable; on A = 0 it releases noise (error above zero's)."""
    A = np.zeros((60, 12))
    for fn in (private_frobenius_lrf, private_space_optimal_lrf):
        raw = fn(A, 3, **KW, random_state=0, sketch_seed=1, singular_values="raw")
        shr = fn(A, 3, **KW, random_state=0, sketch_seed=1)
        assert np.all(raw.S > 0) and np.linalg.norm(raw.reconstruct()) > 0
        assert np.allclose(np.abs(raw.V.T @ shr.V), np.eye(3), atol=1e-8) or np.all(shr.S == 0)
    st = TurnstileLRF((60, 12), 3, **KW, random_state=0, sketch_seed=1)
    assert np.all(st.release(singular_values="raw").S > 0) and np.all(st.release().S == 0)
    with pytest.raises(ValueError, match="'singular_values' parameter of TurnstileLRF.release"):
        st.release(singular_values="zero")


def test_shrinkage_keeps_a_strong_signal():
    """Far above the noise edge the shrunk values are within 2% of the raw ones (the paper's regime:
    entries in the thousands, unit Priv2 noise) and the factorization is unchanged."""
    A = np.random.default_rng(0).uniform(0, 4800, size=(200, 30))
    raw = private_frobenius_lrf(A, 5, **KW, random_state=0, sketch_seed=2, singular_values="raw")
    shr = private_frobenius_lrf(A, 5, **KW, random_state=0, sketch_seed=2)
    np.testing.assert_allclose(shr.S, raw.S, rtol=0.02)
    np.testing.assert_allclose(shr.V, raw.V, atol=1e-10)


def test_covariance_result_says_what_it_factorizes():
    A = np.random.default_rng(1).normal(size=(80, 9)) / 4
    res = covariance_lrf(A, 3, epsilon=1e6, delta=1e-3, row_norm=2.0, random_state=0)
    assert isinstance(res, GramResult) and res.U.shape == (9, 3)
    with pytest.raises(ValueError, match=r"factorizes A\^T A \(9 x 9\), not A: gram\(\)"):
        res.reconstruct()
    G = A.T @ A
    assert np.linalg.norm(G - res.gram()) <= 1.3 * np.linalg.norm(G - _rank_k(G, 3))
    np.testing.assert_allclose(res.reconstruct(A), A @ res.V @ res.V.T)
    st = CovarianceLRF(9, 3, epsilon=1e6, delta=1e-3, row_norm=2.0, random_state=0)
    st.insert_many(A)
    assert isinstance(st.release(), GramResult)
    est = DPLowRank(3, epsilon=1e6, delta=1e-3, method="covariance_lrf", row_norm=2.0, random_state=0).fit(A)
    with pytest.raises(ValueError, match="needs the matrix A"):
        est.reconstruct()
    assert est.reconstruct(A).shape == A.shape


def _rank_k(M: np.ndarray, k: int) -> np.ndarray:
    U, s, Vt = np.linalg.svd(M)
    return (U[:, :k] * s[:k]) @ Vt[:k]


@pytest.mark.parametrize("shape", [(37, 11), (11, 37), (64, 20)])
def test_continual_fast_path_equals_the_step_by_step_release(shape):
    """continual_lrf forms only the prefix's nodes at T; the release equals T steps of ContinualLRF with
    the same seeds (same node noises), up to rounding."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=shape)
    A[rng.uniform(size=shape) < 0.3] = 0.0
    fast = continual_lrf(A, 3, **KW, random_state=7, sketch_seed=5)
    st = ContinualLRF(shape, 3, shape[0], **KW, random_state=7, sketch_seed=5)
    for i in range(shape[0]):
        nz = np.flatnonzero(A[i])
        st.step(np.full(nz.size, i), nz, A[i, nz])
    slow = st.release()
    scale = max(1.0, float(np.abs(slow.S).max()))
    np.testing.assert_allclose(fast.S, slow.S, atol=1e-9 * scale)
    np.testing.assert_allclose(fast.reconstruct(), slow.reconstruct(), atol=1e-8 * scale)
    assert fast.diagnostics["nodes"] == slow.diagnostics["nodes"]
    secure = continual_lrf(A, 3, **KW, random_state="secure")  # the secure source runs the same path
    assert secure.privacy.noise_source == "secure"


def test_continual_lrf_is_fast_on_a_large_matrix():
    """20,000 x 200 (a quarter of MNIST's width): the one-call release at T in seconds (it took minutes
    step by step; 20,000 x 784 now takes about 7 s on one core)."""
    A = np.random.default_rng(4).uniform(size=(20000, 200)) / 10
    t0 = time.perf_counter()
    res = continual_lrf(A, 5, **KW, random_state=0)
    assert time.perf_counter() - t0 < 30 and res.diagnostics["time"] == 20000


@pytest.mark.parametrize("bound", [0.0, -1.0, float("nan"), float("inf")])
@pytest.mark.parametrize("method", ["private_frobenius_lrf", "private_space_optimal_lrf", "turnstile_lrf",
                                    "continual_lrf"])
def test_bad_bound_is_refused_before_any_charge(method, bound):
    acc = Accountant(10.0, 1e-3)
    est = DPLowRank(2, epsilon=1.0, delta=1e-6, method=method, accountant=acc, random_state=0,
                    method_params={"bound": bound})
    with pytest.raises(ValueError, match="'bound' parameter"):
        est.fit(np.ones((8, 5)) / 5)
    assert acc.entries == ()


def test_every_lowrank_method_reconstructs_or_names_what_is_missing():
    A = np.random.default_rng(5).uniform(size=(30, 8)) / 4
    for m in methods(task="lowrank"):
        est = DPLowRank(2, epsilon=1.0, delta=1e-6, method=m.name, row_norm=1.0, random_state=0).fit(A)
        try:
            R = est.reconstruct()
        except ValueError as exc:
            assert "needs" in str(exc), (m.name, str(exc))
            continue
        assert R.shape == A.shape, m.name


def _mnist_rows(m: int) -> np.ndarray | None:
    root = Path(os.environ.get("DPSPECTRAL_DATA", "/nonexistent")) / "mnist"
    if not (root / "t10k-images-idx3-ubyte.gz").is_file():
        return None
    from dpspectral.datasets import load_idx

    X, _ = load_idx(root / "t10k-images-idx3-ubyte.gz", root / "t10k-labels-idx1-ubyte.gz")
    A = np.asarray(X[:m], dtype=float)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def _sub(A: np.ndarray, V: np.ndarray, best: float) -> float:
    return float(np.linalg.norm(A - (A @ V) @ V.T) / best)


def test_each_method_beats_a_random_subspace_where_its_regime_allows():
    """MNIST t10k, first 3,000 unit rows, k = 5, seed 0 (a random V: 1.51 x the best subspace error).
    Row-level methods at epsilon = 1: below 1.3 (measured: hardt_roth 1.19, covariance_lrf 1.20).
    Priv1/Priv2 (turnstile included) protect any unit Frobenius change of the matrix, a far stronger
    promise: at epsilon = 1 their V is at random level here (1.51: the noise edge sigma (sqrt(n) +
    sqrt(t)) is above every singular value but the first); at epsilon = 64 they beat a random V by more
    than 0.2 (measured 1.16-1.20). The range finder (row-level) does at epsilon = 16 (1.21). Not in
    their regime on this matrix up to epsilon = 64: continual_lrf (1.48; the tree's noise) and the
    paper's private_local_lrf protocol (1.47; each user's own noise) -- not asserted (the default
    "gram" protocol has its own test, tests/test_local_lrf_utility.py)."""
    A = _mnist_rows(3000)
    if A is None:
        pytest.skip("MNIST not in DPSPECTRAL_DATA")
    k = 5
    s = np.linalg.svd(A, compute_uv=False)
    best = float(np.sqrt(np.sum(s[k:] ** 2)))
    rnd = _sub(A, np.linalg.qr(np.random.default_rng(0).normal(size=(784, k)))[0], best)
    assert rnd > 1.4
    row_level = [hardt_roth(A, k, row_norm=1.0, random_state=0, **KW).V,
                 covariance_lrf(A, k, row_norm=1.0, random_state=0, **KW).V]
    for V in row_level:
        assert _sub(A, V, best) < 1.3
    big = dict(epsilon=64.0, delta=1e-6, random_state=0)
    for fn in (private_frobenius_lrf, private_space_optimal_lrf, turnstile_lrf):
        assert _sub(A, fn(A, k, **big).V, best) < rnd - 0.2
    rf = hardt_roth(A, k, row_norm=1.0, algorithm="range_finder", epsilon=16.0, delta=1e-6, random_state=0)
    assert _sub(A, rf.V, best) < rnd - 0.2
    assert math.isfinite(rnd)
