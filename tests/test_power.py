"""The private (noisy) power method of Hardt-Roth / Hardt-Price, row-level variant."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral import Accountant, BudgetExceededError, UncertifiedPrivacyWarning, config_context
from dpspectral.datasets import spiked_covariance
from dpspectral.pca._power import noisy_power
from dpspectral.privacy import analytic_noise_multiplier, epsilon_of
from dpspectral.privacy._rounding import MAX_WIDENING

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)


@pytest.fixture(scope="module")
def spiked() -> tuple[np.ndarray, np.ndarray]:
    """Spiked data scaled to row norm <= 1, and the exact top-3 eigenvectors of X^T X."""
    X, _ = spiked_covariance(1500, 15, 3, spike=[30.0, 20.0, 10.0], random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()
    _, V = np.linalg.eigh(X.T @ X)
    return X, V[:, ::-1][:, :3]


def proj_dist(V: np.ndarray, W: np.ndarray) -> float:
    return float(np.linalg.norm(V @ V.T - W @ W.T))


# -- zero-noise limit, utility, determinism, untouched input -----------------------------------
@pytest.mark.parametrize("kw", [
    {},
    {"relation": "add_remove"},
    {"block_size": 5, "n_iter": 20},  # a small block converges in more iterations (the paper's p = k)
    {"calibration": "paper"},
])
def test_zero_noise_limit_converges_to_exact_eigenspace(kw, spiked):
    X, V3 = spiked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        res = noisy_power(X, 3, epsilon=1e7, delta=0.5, row_norm=1.0, random_state=0, **kw)
    assert res.components.shape == (15, 3)
    assert np.allclose(res.components.T @ res.components, np.eye(3), atol=1e-10)
    assert proj_dist(res.components, V3) < 1e-3
    assert res.values is None  # eigenvalues are not released
    # ordered by the released singular values: the first column is the top eigenvector
    assert abs(res.components[:, 0] @ V3[:, 0]) > 0.999


def test_convergence_needs_iterations():
    # A small spectral gap (population eigenvalues 4, 3, 2 | 1): with the paper's block p = k one
    # power step from a random start is far from the eigenspace, 40 steps reach it. Shows that the
    # zero-noise test has power. (The default oversampled block needs fewer steps.)
    X, _ = spiked_covariance(1500, 15, 3, spike=[3.0, 2.0, 1.0], random_state=1)
    X = X / np.linalg.norm(X, axis=1).max()
    _, V = np.linalg.eigh(X.T @ X)
    V3 = V[:, ::-1][:, :3]
    kw = dict(epsilon=1e7, delta=0.5, row_norm=1.0, random_state=0)
    assert proj_dist(noisy_power(X, 3, n_iter=1, block_size=3, **kw).components, V3) > 0.1
    assert proj_dist(noisy_power(X, 3, n_iter=40, block_size=3, **kw).components, V3) < 1e-3


def test_private_run_on_strong_signal_is_useful(spiked):
    X, V3 = spiked
    noisy = noisy_power(X, 3, epsilon=5.0, delta=1e-6, row_norm=1.0, n_iter=5, random_state=1)
    assert proj_dist(noisy.components, V3) < 0.7  # a random 3-subspace of R^15 is at ~2.2


def test_seed_determinism_and_independence(spiked):
    X, _ = spiked
    a = noisy_power(X, 2, random_state=3, **KW)
    b = noisy_power(X, 2, random_state=3, **KW)
    c = noisy_power(X, 2, random_state=4, **KW)
    assert np.array_equal(a.components, b.components)
    assert not np.allclose(a.components, c.components)
    g = np.random.default_rng(3)
    d1 = noisy_power(X, 2, random_state=g, **KW)
    d2 = noisy_power(X, 2, random_state=g, **KW)  # the generator advances
    assert not np.allclose(d1.components, d2.components)


def test_caller_data_untouched_and_sources_agree(spiked):
    X = spiked[0] * 3  # most rows above the bound: clipped inside, never in place
    before = X.copy()
    dense = noisy_power(X, 2, random_state=0, **KW)
    assert np.array_equal(X, before)
    Xs = sp.csr_matrix(X)
    before_sp = Xs.copy()
    sparse = noisy_power(Xs, 2, random_state=0, **KW)
    assert (Xs != before_sp).nnz == 0
    blocks = noisy_power([X[:700], X[700:]], 2, random_state=0, **KW)
    assert np.allclose(dense.components, sparse.components, atol=1e-8)
    assert np.allclose(dense.components, blocks.components, atol=1e-8)


# -- calibration and accounting ----------------------------------------------------------------
@pytest.mark.parametrize("relation,sens", [("replace_one", math.sqrt(2)), ("add_remove", 1.0)])
@pytest.mark.parametrize("n_iter", [1, 7, 20])
def test_tight_noise_matches_a_direct_accountant_query(relation, sens, n_iter, spiked):
    X, _ = spiked
    eps, delta, C = 0.7, 1e-5, 2.0
    res = noisy_power(X, 2, epsilon=eps, delta=delta, row_norm=C, relation=relation,
                      n_iter=n_iter, random_state=0, adaptive_clip=False)
    s = res.diagnostics["noise_multiplier"]
    (event,) = res.privacy.events
    assert event == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), n_iter)
    direct = epsilon_of(event, delta, relation=relation)
    assert direct <= eps and direct == pytest.approx(eps, rel=1e-6)
    assert res.privacy.epsilon == pytest.approx(direct) and res.privacy.certified
    # Reference: L Gaussian releases of multiplier s are exactly one of multiplier s / sqrt(L).
    assert s == pytest.approx(math.sqrt(n_iter) * analytic_noise_multiplier(eps, delta), rel=1e-6)
    # widened for the rounding of the computed A X by a relative 1e-5 at most at a public n, 0.5 % at the
    # public rows of an add/remove release (docs/noise.md)
    widening = 1e-5 if relation == "replace_one" else MAX_WIDENING
    assert 1 <= res.diagnostics["noise_std"] / (s * sens * C**2) <= 1 + widening
    assert res.n_samples == (1500.0 if relation == "replace_one" else None)


def test_paper_calibration_reports_its_certified_epsilon(spiked):
    X, _ = spiked
    eps, delta, p, L = 1.0, 1e-6, 4, 10
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # certified: no warning
        res = noisy_power(X, 2, epsilon=eps, delta=delta, row_norm=1.0, calibration="paper",
                          block_size=p, n_iter=L, random_state=0)
    sigma = math.sqrt(4 * p * L * math.log(1 / delta)) / eps
    assert res.diagnostics["noise_multiplier"] == pytest.approx(sigma)
    assert res.diagnostics["noise_std"] == pytest.approx(sigma * math.sqrt(2), rel=1e-9)
    assert res.privacy.certified
    assert res.privacy.epsilon == pytest.approx(epsilon_of(res.privacy.events, delta))
    assert res.privacy.epsilon < eps  # the paper's formula is conservative here
    assert res.privacy.calibration == "paper"


def test_paper_calibration_flagged_when_not_certified(spiked):
    # p = 1, L = 2, delta = 0.01: sqrt(4 p L ln(1/delta)) / epsilon gives epsilon ~ 20.9 > 20.
    X, _ = spiked
    with pytest.warns(UncertifiedPrivacyWarning, match="does not certify"):
        res = noisy_power(X, 1, epsilon=20.0, delta=0.01, row_norm=1.0, calibration="paper",
                          n_iter=2, block_size=1, random_state=0)
    assert not res.privacy.certified and res.privacy.epsilon > 20.0
    assert res.privacy.epsilon == pytest.approx(epsilon_of(res.privacy.events, 0.01))


def test_accountant_records_one_event_and_refuses_before_noise(spiked):
    X, _ = spiked
    acc = Accountant(1.2, 1e-6)
    noisy_power(X, 2, accountant=acc, random_state=0, adaptive_clip=False, **KW)
    assert len(acc.entries) == 1
    assert acc.epsilon_spent() == pytest.approx(1.0, rel=1e-6)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        noisy_power(X, 2, accountant=acc, random_state=rng, adaptive_clip=False, **KW)
    assert len(acc.entries) == 1
    assert rng.bit_generator.state == state  # no randomness was drawn


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("k,kw,err,match", [
    (2, {"n_iter": 0}, ValueError, "'n_iter'.*Got 0"),
    (2, {"n_iter": 2.5}, TypeError, "'n_iter'"),
    (2, {"n_iter": True}, TypeError, "'n_iter'"),
    (3, {"block_size": 2}, ValueError, "'block_size'.*Got 2"),
    (2, {"block_size": 6}, ValueError, "'block_size'.*n_features=5.*Got 6"),
    (2, {"block_size": 3.0}, TypeError, "'block_size'"),
    (2, {"relation": "local"}, ValueError, "'relation'.*'local'"),
    (2, {"relation": "swap"}, ValueError, "'relation'"),
    (2, {"delta": 0.0}, ValueError, "'delta'.*pure"),
    (2, {"epsilon": -1}, ValueError, "'epsilon'"),
    (2, {"row_norm": None}, ValueError, "'row_norm'"),
    (2, {"calibration": "loose"}, ValueError, "'calibration'"),
    (2, {"on_norm_violation": "ignore"}, ValueError, "'on_norm_violation'"),
    (0, {}, ValueError, "'k'.*Got 0"),
    (6, {}, ValueError, "'k'.*Got 6"),
])
def test_bad_input(k, kw, err, match):
    X = np.full((20, 5), 0.1)
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(err, match=match):
        noisy_power(X, k, **{**KW, "accountant": acc, "random_state": 0, **kw})
    assert acc.entries == ()


def test_bad_data_and_stream_checks():
    with pytest.raises(ValueError, match="NaN or infinity"):
        noisy_power(np.array([[np.nan, 1.0], [0.0, 1.0]]), 1, **KW)
    with pytest.raises(ValueError, match="some row has Euclidean norm above"):
        noisy_power(np.ones((4, 3)), 1, on_norm_violation="raise", **KW)
    # over a stream, k and block_size are checked once the width is known
    with pytest.raises(ValueError, match="'block_size'.*n_features=3"):
        noisy_power(iter([np.full((4, 3), 0.1)]), 2, block_size=4, **KW)


class _RecordingGenerator(np.random.Generator):
    """A seeded Generator that records the scale and shape of every Gaussian draw (white-box; the float
    source, ``config_context(noise="float")``, draws the releases with its ``normal``)."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.draws: list[tuple[float, object]] = []

    def normal(self, loc=0.0, scale=1.0, size=None):  # type: ignore[override]
        self.draws.append((scale, size))
        return super().normal(loc, scale, size)


@pytest.mark.parametrize("relation,sens", [("replace_one", math.sqrt(2)), ("add_remove", 1.0)])
def test_the_noise_drawn_is_the_planned_noise(relation, sens, spiked):
    X, _ = spiked
    g = _RecordingGenerator(0)
    with config_context(noise="float"):  # the recorded draws: NumPy's normal at the planned std
        res = noisy_power(X, 2, epsilon=0.5, delta=1e-6, row_norm=1.5, relation=relation, n_iter=6,
                          block_size=4, random_state=g, adaptive_clip=False)
    s = res.diagnostics["noise_multiplier"]
    assert s == pytest.approx(math.sqrt(6) * analytic_noise_multiplier(0.5, 1e-6))
    widening = 1e-6 if relation == "replace_one" else MAX_WIDENING  # add/remove: at the public rows
    assert g.draws == [(pytest.approx(s * sens * 1.5**2 * (1 + widening / 2), rel=widening / 2), (15, 4))] * 6


def test_matches_a_brute_force_reference_given_the_same_random_stream(spiked):
    # Reference implementation of the iteration, written out: X_0 from the generator, then
    # Y_l = A X_{l-1} + G_l, X_l = QR(Y_l) (positive diag(R)); output: top-k left singular vectors
    # of Y_L with the sign convention of dpspectral._linalg.fix_signs.
    X, _ = spiked
    X = X * 2.0  # exercise clipping
    Xc = X * np.minimum(1.0, 1.0 / np.linalg.norm(X, axis=1))[:, None]
    A = Xc.T @ Xc
    with config_context(noise="float"):  # the reference redraws the float source's stream
        res = noisy_power(X, 2, epsilon=3.0, delta=1e-6, row_norm=1.0, n_iter=3, block_size=3,
                          random_state=42, adaptive_clip=False)
    std = res.diagnostics["noise_std"]
    rng = np.random.default_rng(42)
    Q, R = np.linalg.qr(rng.standard_normal((15, 3)))
    Xl = Q * np.sign(np.diag(R))
    for _ in range(3):
        Y = A @ Xl + rng.normal(0.0, std, size=(15, 3))
        Q, R = np.linalg.qr(Y)
        Xl = Q * np.sign(np.diag(R))
    U = np.linalg.svd(Y)[0][:, :2]
    U = U * np.sign(U[np.argmax(np.abs(U), axis=0), [0, 1]])
    assert np.allclose(res.components, U, atol=1e-8)


def test_parameters_are_declared_in_a_constraint_table() -> None:
    """The parameters are stated once, in a table (``parameter_constraints``); a value outside it gets
    the generated message and charges nothing."""
    table = noisy_power.parameter_constraints
    assert {"epsilon", "delta", "row_norm", "calibration", "n_iter", "random_state"} <= set(table)
    X = np.full((20, 5), 0.1)
    acc = Accountant(10.0, 1e-3)
    with pytest.raises(ValueError, match=r"The 'n_iter' parameter of noisy_power must be an int in "
                                         r"\[1, inf\)\. Got 0 instead\."):
        noisy_power(X, 2, **KW, n_iter=0, accountant=acc)
    with pytest.raises(ValueError, match=r"'random_state' parameter of noisy_power must be .*'secure'"):
        noisy_power(X, 2, **KW, random_state="securely", accountant=acc)
    assert acc.entries == ()
