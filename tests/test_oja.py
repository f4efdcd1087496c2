"""Oja, Private Oja and DP-PCA (paper 001, Liu, Kong, Jain and Oh 2022): convergence, building blocks,
streams, accounting, bad input and a one-step audit.

Every random quantity is seeded, so each test is deterministic; statistical tests state their
false-positive rate (FPR), the probability that a correct implementation fails them for a fresh seed.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest

from dpspectral import Accountant, BudgetExceededError, RangeEstimation, UncertifiedPrivacyWarning
from dpspectral.datasets import spiked_covariance
from dpspectral.metrics import max_sin_theta
from dpspectral.pca._oja import (
    AnalysisRangeWarning,
    dp_pca,
    minimum_batch_size,
    oja,
    private_mean,
    private_oja,
    private_oja_sensitivity,
    private_top_eigenvalue,
    shuffle_amplified_epsilon,
)
from dpspectral.privacy import ParallelDpEvent, analytic_noise_multiplier, epsilon_of, gaussian_epsilon
from dpspectral.privacy._accounting import compose
from dpspectral.privacy._audit import gaussian_audit

DELTA = 1e-6
HUGE = 1e6  # an epsilon at which the noise is negligible


@pytest.fixture(scope="module")
def spiked():
    """20,000 x 10 rows, three spikes (12, 8, 5) over unit noise, scaled to row norm <= 1."""
    X, V = spiked_covariance(20_000, 10, 3, spike=[12.0, 8.0, 5.0], random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), V


@pytest.fixture(scope="module")
def small():
    """6,000 x 8 rows (two spikes) with rows up to norm 3: clipping to 1 acts on most of them."""
    X, _ = spiked_covariance(6_000, 8, 2, spike=[10.0, 5.0], random_state=1)
    return 3.0 * X / np.linalg.norm(X, axis=1).max()


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisRangeWarning)
        return fn(*args, **kw)


# ---------------------------------------------------------------------------------------------
# convergence (zero or negligible noise)


@pytest.mark.parametrize("k,rank_method", [(1, "block"), (3, "block"), (3, "deflation")])
def test_oja_converges_on_a_spiked_matrix(k, rank_method, spiked):
    X, V = spiked
    res = oja(X, k, learning_rate_scale=100.0, rank_method=rank_method, random_state=0)
    assert res.components.shape == (10, k)
    assert np.allclose(res.components.T @ res.components, np.eye(k), atol=1e-10)
    assert max_sin_theta(res.components, V[:, :k]) < 0.1
    assert not res.privacy.certified and res.privacy.epsilon == math.inf  # a non-private reference
    assert res.n_samples == X.shape[0]


@pytest.mark.parametrize("k,rank_method", [(1, "block"), (3, "block"), (3, "deflation")])
def test_private_oja_converges_at_huge_epsilon(k, rank_method, spiked):
    X, V = spiked
    res = private_oja(X, k, epsilon=HUGE, delta=DELTA, row_norm=1.0, learning_rate_scale=100.0,
                      rank_method=rank_method, random_state=0)
    assert max_sin_theta(res.components, V[:, :k]) < 0.1
    assert res.privacy.certified


@pytest.mark.parametrize("schedule", ["warmup", "paper"])
@pytest.mark.parametrize("k,rank_method", [(1, "block"), (3, "block"), (3, "deflation")])
def test_dp_pca_converges_at_huge_epsilon(k, rank_method, schedule, spiked):
    X, V = spiked
    res = _quiet(dp_pca, X, k, epsilon=HUGE, delta=DELTA, row_norm=1.0, rank_method=rank_method,
                 schedule=schedule, random_state=0)
    assert max_sin_theta(res.components, V[:, :k]) < 0.1
    assert res.diagnostics["skipped_steps"] == 0
    if schedule == "paper":  # B = n / ln(n)^2: many small batches
        assert res.diagnostics["n_steps"] > 10
    else:  # three 5% warm-up batches and one of the rest (per component for deflation)
        parts = k if rank_method == "deflation" else 1
        assert res.diagnostics["n_steps"] == 4 * parts
        if parts == 1:
            assert res.diagnostics["batch_sizes"] == (1000, 1000, 1000, 17_000)
    assert res.privacy.certified


# ---------------------------------------------------------------------------------------------
# utility with the defaults: better than a random subspace by a stated margin


def _spiked_unit(n: int, d: int, seed: int, scale: float = 1.0) -> np.ndarray:
    """The benchmarks' spiked set: covariance diag(17, 1, ..., 1) / (2.25 * (16 + d)), rows clipped to
    norm 1, times ``scale``; the top eigenvector is e_1."""
    rng = np.random.default_rng(seed)
    lam = np.ones(d)
    lam[0] = 17.0
    X = rng.standard_normal((n, d)) * np.sqrt(lam) / (1.5 * np.sqrt(lam.sum()))
    return scale * X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def _sin_e1(W: np.ndarray) -> float:
    w = W[:, 0] / np.linalg.norm(W[:, 0])
    return float(math.sqrt(max(0.0, 1.0 - w[0] ** 2)))


def _random_sin_below(threshold: float, d: int) -> float:
    """P(sin(u, e_1) < threshold) for a uniformly random unit u in R^d: cos^2 ~ Beta(1/2, (d - 1)/2)."""
    from scipy import stats

    return float(stats.beta.sf(1.0 - threshold**2, 0.5, (d - 1) / 2))


def test_dp_pca_defaults_beat_a_random_subspace():
    """d = 10, n = 2e4, epsilon = 1, delta = 1e-6, defaults. Over 20 seeds sin theta was 0.008-0.0105
    (Analyze Gauss's scale); the test asks < 0.05, which a random direction reaches with probability
    5e-13 (computed below). FPR: none of 20 seeds came within 4x of the threshold."""
    X = _spiked_unit(20_000, 10, 7)
    assert _random_sin_below(0.05, 10) < 1e-12
    res = _quiet(dp_pca, X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=0)
    assert _sin_e1(res.components) < 0.05
    assert res.diagnostics["batch_sizes"] == (1000, 1000, 1000, 17_000)


def test_private_oja_defaults_beat_a_random_subspace():
    """d = 10, n = 1e5, epsilon = 1, defaults (one noisy step per row). Private Oja's rate is
    sin^2 ~ c1^2 (alpha C^2)^2 (d - 1) / ((2 c1 gap - 1) n) (docs/algorithms/oja.md): 0.2 here
    (gap 0.233); over 20 seeds the median was 0.18 and the largest 0.56. The test asks the mean of
    three seeds < 0.4. Three random directions have a mean below 0.4 only if one of them is below 0.4
    (the others are at most 1): probability at most 3 x 7.3e-5 = 2.2e-4 (computed below)."""
    X = _spiked_unit(100_000, 10, 7)
    assert 3 * _random_sin_below(0.4, 10) < 2.5e-4
    sins = [_sin_e1(private_oja(X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=s).components)
            for s in range(3)]
    assert float(np.mean(sins)) < 0.4, sins


def test_dp_pca_range_estimation_acts_when_the_public_bound_is_loose():
    """Rows of norm <= 0.05 with row_norm = 1: the public bound is 20x too large, so noise from it
    (minibatch_oja, 0.15-0.25 over 5 seeds) is far above the data; DP-PCA's private range estimate
    (Algorithms 4 and 5) truncates the last batch's gradients to a box the data fill and reaches
    0.019-0.032 (5 seeds). Asked: a truncated step and sin < 0.08 (margin 2.5x over the worst seed)."""
    from dpspectral.pca._minibatch import minibatch_oja

    X = _spiked_unit(200_000, 10, 7, scale=0.05)
    res = _quiet(dp_pca, X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=1)
    assert res.diagnostics["truncated_steps"] >= 1
    assert _sin_e1(res.components) < 0.08
    flat = minibatch_oja(X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=1, adaptive_clip=False)
    assert _sin_e1(flat.components) > 0.1  # (its adaptive clip fixes this: test_adaptive_clip_streaming)


def test_dp_pca_defaults_name_the_smallest_n():
    """Warm-up schedule at epsilon = 1: 55 groups for Algorithm 4; the smallest batch that gives each
    group a pair and the mean a row is 111, so a 5% warm-up batch needs n >= 2220."""
    X = _spiked_unit(2220, 6, 1)
    with pytest.raises(ValueError, match=r"the smallest n that works is 2220\b"):
        _quiet(dp_pca, X[:2219], 1, epsilon=1.0, delta=DELTA, row_norm=1.0)
    res = _quiet(dp_pca, X, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, random_state=0)
    assert res.diagnostics["n_steps"] == 4 and res.diagnostics["n_groups"] == 55


def test_learning_rates_outside_the_analysis_warn(small):
    with pytest.warns(AnalysisRangeWarning, match="c1 \\* row_norm\\^2"):
        private_oja(small, 1, epsilon=1.0, delta=DELTA, row_norm=1.0, learning_rate_scale=0.1, random_state=0)
    with pytest.warns(AnalysisRangeWarning, match="c1 \\* row_norm\\^2"):
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, learning_rate_scale=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the defaults are inside (c1 = 10 / row_norm^2)
        private_oja(small, 1, epsilon=1.0, delta=DELTA, row_norm=3.0, random_state=0)


def test_group_eigenvalues_from_rows_equal_those_from_the_gradients():
    """DP-PCA's Algorithm 4 on large batches works from the rows (Gram matrices as Hadamard products);
    it must give the group eigenvalues of the explicit paired gradients (exact below 256 pairs per
    group, Lanczos above)."""
    from dpspectral.pca._oja import _gradients, _group_eigenvalues_of_rows

    rng = np.random.default_rng(5)
    for rows, groups in ((200, 7), (2400, 2)):
        X = rng.standard_normal((rows, 6)) / 3.0
        W = np.linalg.qr(rng.standard_normal((6, 3)))[0]
        G = _gradients(X, W)
        pairs = rows // 2
        s = pairs // groups
        H = ((G[:pairs] - G[pairs : 2 * pairs]) / math.sqrt(2.0))[: s * groups].reshape(groups, s, -1)
        want = np.array([np.linalg.eigvalsh(h.T @ h)[-1] / s for h in H])
        np.testing.assert_allclose(_group_eigenvalues_of_rows(X, W, groups), want, rtol=1e-6)


def test_private_oja_sensitivity():
    """min(2 beta, min(sqrt k, sqrt 2) C^2): the half-ball bound for k = 1, sqrt 2 C^2 for k >= 2 (the
    pairs are built by hand in tests/test_pinned_stochastic.py and tests/test_minibatch_oja.py)."""
    assert private_oja_sensitivity(1.0, 1, 1.0) == 1.0
    assert private_oja_sensitivity(4.0, 3, 2.0) == pytest.approx(4.0 * math.sqrt(2.0))
    assert private_oja_sensitivity(0.1, 5, 1.0) == pytest.approx(0.2)


def test_dp_pca_with_stable_histograms_takes_steps_at_huge_epsilon(spiked):
    # The thresholded histogram keeps a bin only above 1 + 2 ln(2/delta)/epsilon > 1: with a single
    # group (what the spec's group count gives at large epsilon) no step would ever be taken.
    X, V = spiked
    res = _quiet(dp_pca, X, 3, epsilon=HUGE, delta=DELTA, row_norm=1.0,
                 range_estimation=RangeEstimation(histogram="stable"), batch_size=1000, random_state=0)
    assert res.diagnostics["n_groups"] >= 3
    # with three groups a bin passes the threshold only when two groups agree (about half the steps
    # at these settings, varying with the secret row permutation): some steps must be taken
    assert res.diagnostics["skipped_steps"] < res.diagnostics["n_steps"]
    assert max_sin_theta(res.components, V[:, :3]) < 0.1
    assert res.privacy.certified


# ---------------------------------------------------------------------------------------------
# building blocks


@pytest.mark.parametrize("histogram", ["laplace", "stable"])
@pytest.mark.parametrize("lam1", [0.02, 0.3])
def test_private_top_eigenvalue_accuracy(histogram, lam1):
    # Rows ~ N(0, diag(lam1, lam1 / 10, ...)), 4,000 rows, 10 groups of 200 pairs: every group's
    # eigenvalue is within ~15% of lam1 (so the winning bin's lower edge within a factor 2^(1/4)
    # more); at epsilon = 1e3 the histogram noise is negligible. 20 seeded runs; FPR ~ 0.
    rng = np.random.default_rng(0)
    p = 6
    sd = np.sqrt(np.r_[lam1, np.full(p - 1, lam1 / 10)])
    for _ in range(20):
        G = rng.standard_normal((4000, p)) * sd + rng.standard_normal(p)  # a common mean cancels
        est = private_top_eigenvalue(G, epsilon=1e3, delta=DELTA, bound=2.0, n_groups=10,
                                     histogram=histogram, random_state=rng)
        assert est is not None and lam1 / 2 <= est <= 2 * lam1, est


def test_private_top_eigenvalue_of_oja_gradients(spiked):
    # The quantity DP-PCA needs: the top eigenvalue of the covariance of the gradients x (x^T w).
    X, _ = spiked
    rng = np.random.default_rng(1)
    w = np.linalg.qr(rng.standard_normal((10, 1)))[0]
    G = X * (X @ w)
    truth = float(np.linalg.eigvalsh(np.cov(G.T))[-1])
    est = private_top_eigenvalue(G[:8000], epsilon=1e3, delta=DELTA, bound=2.0, n_groups=8,
                                 random_state=rng)
    assert est is not None and truth / 2 <= est <= 2 * truth


def test_private_top_eigenvalue_underflow_and_too_few_rows():
    rng = np.random.default_rng(2)
    assert private_top_eigenvalue(np.zeros((400, 3)), epsilon=1e3, delta=DELTA, bound=2.0, n_groups=4,
                                  random_state=rng) is None  # the underflow bin wins: the paper's ⊥
    with pytest.raises(ValueError, match="at least 20 are needed"):  # one pair per group
        private_top_eigenvalue(np.ones((19, 3)), epsilon=1.0, delta=DELTA, bound=2.0, n_groups=10,
                               random_state=rng)
    assert private_top_eigenvalue(np.ones((20, 3)), epsilon=1e3, delta=DELTA, bound=2.0, n_groups=10,
                                  random_state=rng) is None  # identical rows: zero covariance


def _mean_runs(G, n_runs, seed, **kw):
    rng = np.random.default_rng(seed)
    out = np.empty((n_runs, G.shape[1]))
    for i in range(n_runs):
        m, info = private_mean(G, random_state=rng, **kw)
        out[i] = m
    return out, info


def test_private_mean_is_unbiased_without_truncation():
    # Fixed data (b = 200, p = 4) well inside the truncation box (radius 0.5, box half-width 1.5
    # around a centre the near-noiseless histograms put within one bin of the data). Over 2,000
    # seeded runs the average release minus the data mean is N(0, sigma^2 / 2000) per coordinate with
    # the known sigma = multiplier x sensitivity: a two-sided z-test per coordinate at level
    # 2.5e-4 (FPR 1e-3 by the union bound over the 4 coordinates).
    rng = np.random.default_rng(3)
    G = 0.3 + 0.05 * rng.standard_normal((200, 4))
    kw = {"radius": 0.5, "bound": 1.0, "hist_scale": 1e-3, "hist_budget": None,
          "noise_std_per_sensitivity": 2.0, "half_width_mult": 3.0}
    runs, info = _mean_runs(G, 2000, 4, **kw)
    sigma = 2.0 * info["sensitivity"]
    assert info["sensitivity"] == pytest.approx(2 * 3.0 * 0.5 * math.sqrt(4) / 200)
    z = (runs.mean(axis=0) - G.mean(axis=0)) / (sigma / math.sqrt(runs.shape[0]))
    from scipy import stats

    assert np.all(np.abs(z) < stats.norm.ppf(1 - 2.5e-4 / 2)), z
    # power: a box that truncates (radius 0.01 around a centre at 0.3) biases the mean of skewed data
    Gs = 0.3 + 0.05 * rng.standard_exponential((200, 4))
    runs, info = _mean_runs(Gs, 2000, 5, **{**kw, "radius": 0.01})
    sigma = 2.0 * info["sensitivity"]
    z = (runs.mean(axis=0) - Gs.mean(axis=0)) / (sigma / math.sqrt(runs.shape[0]))
    assert np.any(np.abs(z) > stats.norm.ppf(1 - 2.5e-4 / 2))


def test_private_mean_stable_histogram_suppression_returns_none():
    # Stable histograms with a tiny budget suppress every bin of 10 spread values: no release.
    G = np.linspace(-1, 1, 10)[:, None]
    m, _ = private_mean(G, radius=0.01, bound=1.0, hist_scale=None, hist_budget=(0.1, 1e-9),
                        noise_std_per_sensitivity=1.0, histogram="stable",
                        random_state=np.random.default_rng(0))
    assert m is None


def test_one_step_audit_of_the_mean_release():
    # Algorithm 5 as DP-PCA uses it, on the worst-case replace-one pair: 199 zero gradients plus one
    # row at -1 (D) or +1 (D') in both coordinates; the box around the centre 0 is [-h r, h r], so
    # the truncated means differ by exactly the sensitivity Delta in L2. The statistic (projection
    # on (1, 1) / sqrt 2) is Gaussian; the Gaussian audit (FPR alpha = 1e-3) bounds the epsilon of
    # the Gaussian release, which must not exceed what its own event claims. Power: the same audit
    # flags the release with half the calibrated noise (e.g. a sensitivity off by a factor of two).
    from dpspectral.pca._oja import _mean_calibration

    p, eps = 2, 1.0
    lap, _, s = _mean_calibration(eps, DELTA, p, 0.5, "laplace")
    base = np.zeros((199, p))
    D0, D1 = np.vstack([-np.ones((1, p)), base]), np.vstack([np.ones((1, p)), base])
    kw = {"radius": 0.1, "bound": 1.0, "hist_scale": 2.0 * lap, "hist_budget": None,
          "half_width_mult": 2.0}
    claim = epsilon_of(dp_accounting.GaussianDpEvent(s), DELTA)  # what the event says of this part
    direction = np.ones(p) / math.sqrt(p)
    for mult, flagged in ((s, False), (s / 2, True)):
        t0 = _mean_runs(D0, 3000, 30, noise_std_per_sensitivity=mult, **kw)[0] @ direction
        t1 = _mean_runs(D1, 3000, 31, noise_std_per_sensitivity=mult, **kw)[0] @ direction
        result = gaussian_audit(t0, t1, claim, DELTA, 1e-3)
        assert result.violated is flagged, result
    assert epsilon_of(ParallelDpEvent([dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap), p),
         dp_accounting.GaussianDpEvent(s)])]), DELTA) <= eps


# ---------------------------------------------------------------------------------------------
# streams, lists, memmaps: the same rows in the same order give the same result


def _blocks(X, sizes):
    i = 0
    for m in sizes:
        yield X[i : i + m]
        i += m
    if i < X.shape[0]:
        yield X[i:]


SIZES = [1, 999, 3, 4000, 17, 250]

RUNS = {
    "oja": lambda X, **kw: oja(X, 2, learning_rate_scale=50.0, random_state=7, **kw),
    "private_oja": lambda X, **kw: private_oja(X, 2, epsilon=0.5, delta=DELTA, row_norm=1.0,
                                               random_state=7, **kw),
    "dp_pca": lambda X, **kw: _quiet(dp_pca, X, 2, epsilon=0.5, delta=DELTA, row_norm=1.0,
                                     batch_size=1500, random_state=7, **kw),
}


@pytest.mark.parametrize("rank_method", ["block", "deflation"])
@pytest.mark.parametrize("name", list(RUNS))
def test_stream_list_and_memmap_equal_the_array(name, rank_method, small, tmp_path):
    # In-memory inputs (array, list or tuple of blocks, memmap) are all permuted by the same secret
    # permutation in the private methods, so they agree with each other; a one-shot stream is used in
    # its order (the same whatever its block sizes), and for the non-private oja equals the array.
    X = small
    run = RUNS[name]
    ref = run(X, rank_method=rank_method).components
    n = X.shape[0]
    from_stream = run(_blocks(X, SIZES), n_samples=n, rank_method=rank_method).components
    one_block = run(iter([X]), n_samples=n, rank_method=rank_method).components
    assert np.array_equal(from_stream, one_block)
    if name != "oja":
        from_stream = ref
    from_list = run(list(_blocks(X, SIZES)), n_samples=n, rank_method=rank_method).components
    from_tuple = run(tuple(_blocks(X, [2500, 2500])), n_samples=n, rank_method=rank_method).components
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    from_memmap = run(np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="r", shape=X.shape),
                      rank_method=rank_method).components
    for other in (from_stream, from_list, from_tuple, from_memmap):
        assert np.array_equal(ref, other)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_data_are_never_modified(name, small):
    X = small.copy()
    before = X.copy()
    RUNS[name](X)
    assert np.array_equal(X, before)
    blocks = list(_blocks(X, SIZES))
    copies = [b.copy() for b in blocks]
    RUNS[name](blocks, n_samples=X.shape[0])
    assert all(np.array_equal(b, c) for b, c in zip(blocks, copies, strict=True))
    X32 = small.astype(np.float32)
    before = X32.copy()
    RUNS[name](X32)
    assert np.array_equal(X32, before)


# ---------------------------------------------------------------------------------------------
# bad input


def _private(fn, **defaults):
    def run(X, k=1, **kw):
        args = {"epsilon": 0.5, "delta": DELTA, "row_norm": 1.0, **defaults, **kw}
        return _quiet(fn, X, k, **args)
    return run


ALL3 = {"oja": lambda X, k=1, **kw: oja(X, k, **kw), "private_oja": _private(private_oja),
        "dp_pca": _private(dp_pca, batch_size=1500)}


@pytest.mark.parametrize("name", list(ALL3))
def test_old_learning_rate_names_warn_and_give_the_same_run(name, small):
    """``c1``, ``c2`` (the paper's symbols) still work for one release, with a FutureWarning, and run
    exactly what the new names run (the same seed gives the same subspace)."""
    new = ALL3[name](small, learning_rate_scale=50.0, learning_rate_offset=5.0, random_state=3)
    with pytest.warns(FutureWarning, match="'c1' parameter of .* was renamed 'learning_rate_scale'"):
        old = ALL3[name](small, c1=50.0, learning_rate_offset=5.0, random_state=3)
    np.testing.assert_array_equal(old.components, new.components)
    with pytest.warns(FutureWarning, match="'c2' parameter of .* was renamed 'learning_rate_offset'"):
        old = ALL3[name](small, learning_rate_scale=50.0, c2=5.0, random_state=3)
    np.testing.assert_array_equal(old.components, new.components)
    with pytest.raises(TypeError, match="both 'c1' and its new name"):
        ALL3[name](small, c1=50.0, learning_rate_scale=50.0)


@pytest.mark.parametrize("name", list(ALL3))
@pytest.mark.parametrize("kw,match", [
    ({"learning_rate_scale": 0.0}, "'learning_rate_scale'"),
    ({"learning_rate_scale": -1.0}, "'learning_rate_scale'"),
    ({"learning_rate_offset": 0.0}, "'learning_rate_offset'"),
    ({"learning_rate_offset": math.nan}, "'learning_rate_offset'"),
    ({"rank_method": "greedy"}, "'rank_method'"),
])
def test_bad_rates_and_options(name, kw, match, small):
    with pytest.raises(ValueError, match=match):
        ALL3[name](small, **kw)


@pytest.mark.parametrize("name", list(ALL3))
def test_nan_rows_and_ragged_blocks(name, small):
    X = small.copy()
    X[4321, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        ALL3[name](X)

    def ragged():
        yield small[:3000]
        yield small[3000:, :5]

    with pytest.raises(ValueError, match="columns"):
        ALL3[name](ragged(), n_samples=small.shape[0])
    with pytest.raises(ValueError, match="n_samples"):  # deflation needs n to split the rows
        ALL3[name](_blocks(small, SIZES), 2, rank_method="deflation")
    with pytest.raises(ValueError, match="'k'"):
        ALL3[name](small, 9)


@pytest.mark.parametrize("fn", [private_oja, dp_pca])
@pytest.mark.parametrize("kw,match", [
    ({"relation": "add_remove"}, "'relation'"),
    ({"delta": 0.0}, "'delta'"),
    ({"epsilon": -1.0}, "'epsilon'"),
    ({"row_norm": 0.0}, "'row_norm'"),
    ({"calibration": "exact"}, "'calibration'"),
])
def test_private_bad_input_spends_nothing(fn, kw, match, small):
    acc = Accountant(10.0, DELTA)
    args = {"epsilon": 0.5, "delta": DELTA, "row_norm": 1.0, "accountant": acc, **kw}
    with pytest.raises(ValueError, match=match):
        _quiet(fn, small, 1, **args)
    assert acc.entries == ()


def test_private_oja_rejects_paper_calibration(small):
    with pytest.raises(ValueError, match="'calibration'.*'tight'"):
        private_oja(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, calibration="paper")


def test_dp_pca_batch_errors(small):
    n = small.shape[0]
    with pytest.raises(ValueError, match="larger than the number of rows"):
        _quiet(dp_pca, small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, batch_size=n + 1)
    # the error names the minimum, which minimum_batch_size computes for the same run
    b = 40
    need = minimum_batch_size(0.5, DELTA, n_steps=n // b)
    assert need > b
    with pytest.raises(ValueError, match=rf"below the minimum {need}\b"):
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, batch_size=b, schedule="paper")
    with pytest.raises(ValueError, match="batch_size or n_samples"):
        dp_pca(_blocks(small, SIZES), 1, epsilon=0.5, delta=DELTA, row_norm=1.0)
    with pytest.raises(ValueError, match="'batch_size'"):
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, batch_size=0)
    with pytest.raises(ValueError, match="'histogram' parameter of RangeEstimation"):
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0,
               range_estimation=RangeEstimation(histogram="exponential"))
    with pytest.raises(ValueError, match="'range_estimation' parameter of dp_pca"):
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, range_estimation={"histogram": "stable"})
    with pytest.raises(ValueError, match="deflation"):  # n / k rows per component < one batch
        _quiet(dp_pca, small, 3, epsilon=HUGE, delta=DELTA, row_norm=1.0, batch_size=2500,
               rank_method="deflation")


def test_minimum_batch_size_grows_as_epsilon_shrinks():
    sizes = [minimum_batch_size(e, DELTA, n_steps=100) for e in (2.0, 0.5, 0.1)]
    assert sizes[0] < sizes[1] < sizes[2] and all(s % 4 == 0 for s in sizes)
    assert minimum_batch_size(0.5, DELTA, n_groups=7) == 28


# ---------------------------------------------------------------------------------------------
# analysis-range warnings, paper calibration, events and the ledger


def test_dp_pca_analysis_range_warnings(small):
    with pytest.warns(AnalysisRangeWarning, match="epsilon in"):
        dp_pca(small, 1, epsilon=0.9, delta=DELTA, row_norm=1.0, batch_size=1500, random_state=0)
    with pytest.warns(AnalysisRangeWarning, match="delta <= 1/n"):
        dp_pca(small, 1, epsilon=0.5, delta=1e-3, row_norm=1.0, batch_size=1500, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the analysed range: no warning of any kind
        dp_pca(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, batch_size=1500, random_state=0)


@pytest.mark.parametrize("half_width_mult", [2.0, 3.0])
def test_dp_pca_paper_calibration_reports_what_the_accountant_certifies(half_width_mult, spiked):
    X, _ = spiked
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dp_pca(X, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, calibration="paper",
                     range_estimation=RangeEstimation(half_width_mult=half_width_mult), batch_size=4000,
                     random_state=0)
    report = res.privacy
    eps = epsilon_of(report.events, DELTA, relation="replace_one")
    assert report.calibration == "paper" and report.epsilon == pytest.approx(eps)
    assert report.certified is (eps <= 0.5)
    uncertified = [w for w in caught if issubclass(w.category, UncertifiedPrivacyWarning)]
    assert bool(uncertified) is (not report.certified)
    assert any("beta_t" in note for note in report.notes)


@pytest.mark.parametrize("histogram", ["laplace", "stable"])
def test_dp_pca_events_are_parallel_and_tight(histogram, spiked):
    X, _ = spiked
    res = dp_pca(X, 2, epsilon=0.5, delta=1e-5, row_norm=1.0,
                 range_estimation=RangeEstimation(histogram=histogram), batch_size=8000, random_state=0)
    (event,) = res.privacy.events
    assert isinstance(event, ParallelDpEvent) and len(event.events) == 2
    eps = epsilon_of(res.privacy.events, 1e-5, relation="replace_one")
    assert eps <= 0.5 and eps == pytest.approx(0.5, rel=1e-3)  # tight: no budget left unused
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(eps)
    # each branch alone is within the budget (parallel composition), their composition is not
    assert all(epsilon_of(b, 1e-5) <= 0.5 for b in event.events)
    assert epsilon_of(dp_accounting.ComposedDpEvent(list(event.events)), 1e-5) > 0.5


@pytest.mark.parametrize("epsilon", [0.5, 600.0])
def test_dp_pca_mean_calibration_is_certified(epsilon):
    # Branch 2's multipliers, including the regime where only the Gaussian falls below the PLD floor
    # (epsilon = 600, p = 40): the accountant must certify what the calibration chose.
    from dpspectral.pca._oja import _mean_calibration

    p = 40
    lap, _, s = _mean_calibration(epsilon, 1e-5, p, 0.5, "laplace")
    hist = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap), p)
    ev = dp_accounting.ComposedDpEvent([hist, dp_accounting.GaussianDpEvent(s)])
    assert epsilon_of(ev, 1e-5) <= epsilon


def test_private_oja_event_is_one_gaussian_step(small):
    res = private_oja(small, 1, epsilon=0.5, delta=DELTA, row_norm=1.0, random_state=0, adaptive_clip=False)
    (event,) = res.privacy.events
    assert isinstance(event, dp_accounting.GaussianDpEvent)
    assert event.noise_multiplier == pytest.approx(analytic_noise_multiplier(0.5, DELTA))
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(0.5, rel=1e-6)


@pytest.mark.parametrize("fn", [private_oja, dp_pca])
def test_the_ledger_records_the_spend(fn, small):
    acc = Accountant(1.0, DELTA)
    kw: dict = {"batch_size": 1500} if fn is dp_pca else {"adaptive_clip": False}  # one release
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fn(small, 1, epsilon=0.8, delta=DELTA, row_norm=1.0, accountant=acc, random_state=0, **kw)
    assert len(acc.entries) == 1 and acc.entries[0].label == fn.__name__
    assert acc.epsilon_spent() == pytest.approx(res.privacy.epsilon) and acc.epsilon_spent() <= 0.8
    assert isinstance(acc.entries[0].event, type(compose(res.privacy.events)))
    with pytest.raises(BudgetExceededError):  # a second run of the same would compose above 1
        fn(small, 1, epsilon=0.8, delta=DELTA, row_norm=1.0, accountant=acc, random_state=0, **kw)
    assert len(acc.entries) == 1


# ---------------------------------------------------------------------------------------------
# amplification by shuffling


def _fmt21(eps0: float, n: int, delta: float) -> float:
    """Feldman, McMillan and Talwar (FOCS 2021), Theorem 3.1, as in the authors' reference code
    (apple/ml-shuffling-amplification, ``closedformanalysis``), written out independently."""
    a = 8 * math.sqrt(math.exp(eps0) * math.log(4 / delta)) / math.sqrt(n)
    c = 8 * math.exp(eps0) / n
    e = math.log(1 + a + c)
    return math.log(1 + (1 - math.exp(-eps0)) / (1 + math.exp(-eps0 - e)) * (a + c))


def _reduction_delta(eps0: float, n: int, eps: float) -> float:
    """delta(eps) of FMT21's pair P, Q by brute force over every (C, A) (independent of the library):
    C ~ Bin(n-1, e^-eps0), A ~ Bin(C, 1/2), P puts A + Bern(1-a), Q puts A + Bern(a), a = e^eps0/(e^eps0+1);
    the output (first count, C) has P(x, c) = w_c (a B_c(x) + (1-a) B_c(x-1)), Q with a and 1-a swapped."""
    from scipy import stats

    a = math.exp(eps0) / (math.exp(eps0) + 1)
    dp = dq = 0.0
    weights = stats.binom.pmf(np.arange(n), n - 1, math.exp(-eps0))
    for c in np.flatnonzero(weights > 1e-20):  # the rest weighs < 1e-15 in all
        w = weights[c]
        b = stats.binom.pmf(np.arange(c + 2), c, 0.5)  # B_c(0..c+1) (B_c(c+1) = 0)
        b1 = np.concatenate([[0.0], b[:-1]])  # B_c(x - 1)
        P = a * b + (1 - a) * b1
        Q = (1 - a) * b + a * b1
        dp += w * np.maximum(P - math.exp(eps) * Q, 0).sum()
        dq += w * np.maximum(Q - math.exp(eps) * P, 0).sum()
    return max(dp, dq)


def test_shuffle_bound_is_sound_against_the_reduction_and_below_the_closed_form():
    """The numerical shuffle bound vs. a brute-force evaluation of FMT21's reduction and their closed
    form. Reference numbers (apple/ml-shuffling-amplification ``numericalanalysis``, step 100, 40
    bisections) at n = 1e4, eps0 = 0.5, delta = 1e-6: upper 0.020494, lower 0.020312; closed form
    0.104682 (the formula this module used before, with 1 + e^-eps0 in the denominator: 0.093868)."""
    from dpspectral.pca._oja import _shuffle_delta, _shuffle_epsilon

    n, eps0, delta = 10_000, 0.5, 1e-6
    eps = _shuffle_epsilon(eps0, n, delta)
    assert 0.020312 <= eps <= 0.020494  # between the reference's lower and upper numerical bounds
    assert _reduction_delta(eps0, n, eps) <= delta  # sound: the exact delta at the returned eps
    assert _reduction_delta(eps0, n, eps * 0.99) > delta  # and tight (1% lower is not enough)
    assert _shuffle_delta(eps0, n, eps) >= _reduction_delta(eps0, n, eps) - 1e-15
    assert eps < _fmt21(eps0, n, delta)
    for n2, e2 in ((2000, 0.3), (20_000, 1.0)):
        e = _shuffle_epsilon(e2, n2, 1e-5)
        assert _reduction_delta(e2, n2, e) <= 1e-5 and e <= _fmt21(e2, n2, 1e-5)


def test_shuffle_amplified_epsilon_decreases_with_n_and_is_self_consistent():
    eps = [shuffle_amplified_epsilon(2.0, n, DELTA)[0] for n in (10**5, 10**6, 10**7)]
    assert all(math.isfinite(e) for e in eps) and all(a > b for a, b in zip(eps, eps[1:], strict=False))
    assert shuffle_amplified_epsilon(2.0, 1000, DELTA)[0] == math.inf  # outside the theorem's range
    assert shuffle_amplified_epsilon(2.0, 10**6, DELTA)[1] == DELTA
    # the local delta0 must be set from an epsilon at least the one returned (the second part of
    # delta, (e^eps + 1) 1.5 n delta0, is at most delta / 2); includes amplified epsilons above 1
    from dpspectral.pca._oja import _shuffle_epsilon

    for alpha, n, delta in ((2.0, 10**6, DELTA), (0.9, 10**7, 1e-3), (1.2, 10**7, 1e-6)):
        e, _ = shuffle_amplified_epsilon(alpha, n, delta)
        assert math.isfinite(e)
        delta0 = delta / 2 / (1.5 * (math.exp(e) + 1) * n)
        eps0 = gaussian_epsilon(alpha, delta0)
        assert _shuffle_epsilon(eps0, n, delta / 2) <= e
        assert eps0 <= math.log(n / (16 * math.log(8 / delta)))  # the theorem's regime


def test_private_oja_with_shuffling():
    n, eps = 10**5, 0.1
    X = np.random.default_rng(0).standard_normal((n, 2)) * [1.0, 0.3] / 5

    def stream():
        for i in range(10):
            yield X[i * n // 10 : (i + 1) * n // 10]

    res = private_oja(X, 1, epsilon=eps, delta=DELTA, row_norm=1.0, amplification="shuffle",
                      random_state=0)
    assert res.privacy.certified and res.privacy.epsilon <= eps
    assert res.diagnostics["noise_multiplier"] < analytic_noise_multiplier(eps, DELTA) / 2  # it helps
    assert any("shuffled here" in note for note in res.privacy.notes)
    # a stream cannot be shuffled by the library: refused before anything is charged
    acc = Accountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="in-memory"):
        private_oja(stream(), 1, epsilon=eps, delta=DELTA, row_norm=1.0, n_samples=n,
                    amplification="shuffle", accountant=acc)
    assert len(acc.entries) == 0
    with pytest.raises(ValueError, match="cannot certify"):  # n < 16 ln(4 / delta): never in range
        private_oja(np.ones((200, 2)) / 2, 1, epsilon=eps, delta=DELTA, row_norm=1.0,
                    amplification="shuffle")
    with pytest.raises(ValueError, match="in-memory"):
        private_oja(stream(), 1, epsilon=eps, delta=DELTA, row_norm=1.0, amplification="shuffle")
    with pytest.raises(ValueError, match="'amplification'"):
        private_oja(np.ones((10, 2)), 1, epsilon=eps, delta=DELTA, row_norm=1.0, amplification="poisson")


# ---------------------------------------------------------------------------------------------
# validate, then charge; secret row permutation


def _with_bad_row(X: np.ndarray, kind: str) -> np.ndarray:
    Y = X.copy()
    if kind == "nan":
        Y[4321, 2] = np.nan
    elif kind == "inf":
        Y[4321, 0] = np.inf
    else:
        Y[4321] *= 5.0 / np.linalg.norm(Y[4321])
    return Y


PRIVATE2 = {"private_oja": _private(private_oja), "dp_pca": _private(dp_pca, batch_size=1500)}


@pytest.mark.parametrize("name", list(PRIVATE2))
@pytest.mark.parametrize("kind", ["nan", "inf", "over"])
def test_arrays_are_validated_whole_before_the_charge(name, kind, small):
    from dpspectral.privacy._pipeline import NonPrivateDataError, norm_violation_error, not_finite_error

    X = np.clip(small, -0.3, 0.3)  # every row within norm 1 except the bad one
    acc = Accountant(10.0, DELTA)
    with pytest.raises(NonPrivateDataError) as info:
        PRIVATE2[name](_with_bad_row(X, kind), accountant=acc, on_norm_violation="raise")
    expected = not_finite_error(name) if kind != "over" else norm_violation_error(name, 1.0)
    assert str(info.value) == str(expected) and "4321" not in str(info.value)
    assert acc.entries == ()


@pytest.mark.parametrize("name", list(PRIVATE2))
@pytest.mark.parametrize("kind", ["nan", "over"])
def test_a_bad_block_of_a_stream_is_a_failed_release_that_stays_charged(name, kind, small):
    """A stream arrives after the charge: a bad block then fails the release, which stays charged and
    is marked failed in the ledger (the contract in the module docstring); the message names no row."""
    X = np.clip(small, -0.3, 0.3)
    bad = _with_bad_row(X, kind)
    acc = Accountant(10.0, DELTA)
    with pytest.raises(ValueError) as info:
        PRIVATE2[name](_blocks(bad, SIZES), n_samples=X.shape[0], accountant=acc,
                       on_norm_violation="raise")
    from dpspectral.privacy._pipeline import norm_violation_error, not_finite_error

    expected = not_finite_error(name) if kind == "nan" else norm_violation_error(name, 1.0)
    assert str(info.value) == str(expected) and "4321" not in str(info.value)
    assert len(acc.entries) == 1 and len(acc.failures) == 1
    assert acc.failures[0].status.startswith("failed")


@pytest.mark.parametrize("name", list(PRIVATE2))
def test_in_memory_rows_are_permuted_with_the_secret_generator(name, small, monkeypatch):
    """Positional minibatches/steps need a data-independent assignment of rows: an array's rows are
    read in a uniformly random order drawn from the run's generator (not the caller's order); a stream
    is used as it comes, and the report states the assumption in words."""
    import dpspectral.pca._stream as stream_module

    orders = []
    real = stream_module._Rows

    def spy(*args, **kw):
        orders.append(kw.get("order"))
        return real(*args, **kw)

    monkeypatch.setattr(stream_module, "_Rows", spy)
    res = PRIVATE2[name](small, random_state=1)
    PRIVATE2[name](small, random_state=2)
    n = small.shape[0]
    assert len(orders) == 2 and all(o is not None for o in orders)
    assert all(np.array_equal(np.sort(o), np.arange(n)) for o in orders)  # permutations of the rows
    assert not np.array_equal(orders[0], np.arange(n)) and not np.array_equal(orders[0], orders[1])
    assert any("permuted uniformly at random with the secret generator" in t for t in res.privacy.notes)
    orders.clear()
    res = PRIVATE2[name](_blocks(small, SIZES), n_samples=n)
    assert orders == [None]
    assert any("ASSUMPTION" in t and "does not depend on the data" in t for t in res.privacy.notes)


# ---------------------------------------------------------------------------------------------
# the seeded steps' noise by blocks, and the fused k = 1 loop


def test_seeded_step_noise_is_numpys_ziggurat_on_sfc64():
    """The compiled draws are NumPy's own ``Generator(SFC64).standard_normal`` from the same state, to the
    bit (the ziggurat's wedge and tail included: 2e6 draws reach |z| > 5): the law is N(0, 1) exactly as
    NumPy samples it. The state is seeded from the run's generator and advanced in place."""
    from dpspectral.pca._oja_kernels import sfc64_state, standard_normals

    def words(seed):  # what a charged releaser's named draw ``words(3)`` gives for a seeded generator
        return np.random.default_rng(seed).integers(0, np.iinfo(np.uint64).max, size=3, dtype=np.uint64,
                                                    endpoint=True)

    state = sfc64_state(words(11))
    bit = np.random.SFC64(0)
    st = bit.state
    st["state"]["state"] = state.copy()
    st["has_uint32"], st["uinteger"] = 0, 0
    bit.state = st
    z = np.empty(2_000_000)
    standard_normals(state, z[:1_000_000])
    standard_normals(state, z[1_000_000:])  # two blocks continue one stream
    reference = np.random.Generator(bit).standard_normal(2_000_000)
    assert np.array_equal(z, reference)
    assert np.array_equal(state, bit.state["state"]["state"])
    assert np.abs(z).max() > 5.0
    # two runs from one seed draw the same noise; different seeds different noise
    a, b, c = (sfc64_state(words(s)) for s in (1, 1, 2))
    za, zb, zc = np.empty(8), np.empty(8), np.empty(8)
    for s, out in ((a, za), (b, zb), (c, zc)):
        standard_normals(s, out)
    assert np.array_equal(za, zb) and not np.array_equal(za, zc)


def test_fused_vector_oja_loop_equals_the_general_loop():
    """k = 1 without deflation runs a fused loop: the same operations in the same order as the general
    loop, so the same results to the bit, with and without noise and gradient clipping (the general
    loop is forced by a deflation basis of one zero column, which subtracts exact zeros)."""
    from dpspectral.pca._oja_kernels import oja_rows

    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 30)) / 5
    etas = 1.0 / (10.0 + np.arange(1, 501))
    W0 = rng.standard_normal((30, 1))
    W0 /= np.linalg.norm(W0)
    for Z in (np.empty((0, 30, 1)), 0.3 * rng.standard_normal((500, 30, 1))):
        for beta in (0.0, 0.05):
            fused = oja_rows(W0.copy(), X, etas, Z, 0.7 * etas, beta, np.empty((30, 0)))
            general = oja_rows(W0.copy(), X, etas, Z, 0.7 * etas, beta, np.zeros((30, 1)))
            assert np.array_equal(fused, general)


def test_private_oja_seeded_runs_repeat_and_the_pipeline_path_still_runs(small, monkeypatch):
    """The plain seeded source draws by blocks in the compiled path (the same noise for the same seed);
    any other source (secure, or a NoiseSource subclass) draws through ``Releaser.gaussian`` by blocks
    (forced here), one call per chunk of rows."""
    import dpspectral.pca._oja as oja_module
    from dpspectral.privacy._pipeline import Releaser

    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
    a = private_oja(small, 1, random_state=3, **kw).components
    b = private_oja(small, 1, random_state=3, **kw).components
    assert np.array_equal(a, b)
    calls = []
    original = Releaser.gaussian
    monkeypatch.setattr(Releaser, "gaussian", lambda self, name, size: calls.append(size) or original(
        self, name, size))
    monkeypatch.setattr(oja_module, "_seeded_step_noise", lambda releaser: None)
    c = private_oja(small, 1, random_state=3, **kw).components
    assert sum(size[0] for size in calls) == small.shape[0] and c.shape == a.shape


def test_vectorised_coordinate_histograms_have_the_law_of_the_per_coordinate_routine():
    """Algorithm 5's p coordinate histograms are noised in one vector draw (seeded source). Every
    coordinate's mode must have the law of ``laplace_histogram_mode``: 6000 identical coordinates
    (bins 0, 0, 0, 1, 1, 2 in the range [-4, 4], Laplace scale 2, so that empty bins win about a third
    of the time) against 6000 calls of the routine; a two-sample chi-square over the 9 bins
    (false-positive rate 1e-6)."""
    import dp_accounting as dpa
    from scipy import stats

    from dpspectral.pca._oja import _laplace_modes
    from dpspectral.privacy._budget import Relation
    from dpspectral.privacy._histogram import laplace_histogram_mode
    from dpspectral.privacy._noise import noise_source
    from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, release

    p, low, high = 6000, -4, 4
    values = np.array([0, 0, 0, 1, 1, 2])
    plan = ReleasePlan("test", Relation.REPLACE_ONE, (dpa.LaplaceDpEvent(1.0),),
                       (NoisyRelease("coordinate_histograms", "laplace", 2.0, 2.0),))
    with release(plan, None, noise_source(5)) as releaser:
        fast = _laplace_modes(np.tile(values, (p, 1)), low, high, releaser)
    rng = np.random.default_rng(6)
    slow = np.array([laplace_histogram_mode(values, low, high, scale=2.0, random_state=rng)[0]
                     for _ in range(p)])
    table = np.array([[np.sum(m == v) for v in range(low, high + 1)] for m in (fast, slow)])
    assert table[0, :4].sum() + table[0, 7:].sum() > 0.2 * p  # empty bins do win
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table)[1] > 1e-6, table
