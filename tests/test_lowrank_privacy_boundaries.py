"""Privacy at the boundaries of the low-rank factorizations.

Nothing data-derived in the diagnostics; one published snapshot per streaming state (in memory and in
its files); public randomness independent of the secret generator; users that regenerate the sketches
from the public seed; the sketch hidden from the stream until publication; the noise actually drawn
checked against an independently derived scale; validate, then charge.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, stats

import dpspectral
from dpspectral import Accountant, DPLowRank, get_method, methods
from dpspectral.local._lowrank import (
    drawn_sensitivity,
    local_lrf_noise_drawn,
    local_lrf_report,
    local_lrf_setup,
    private_local_lrf,
)
from dpspectral.lowrank import Sketch
from dpspectral.lowrank import _factorization as factorization
from dpspectral.lowrank._continual import ContinualLRF, continual_lrf
from dpspectral.lowrank._covariance import CovarianceLRF, covariance_lrf
from dpspectral.lowrank._factorization import private_frobenius_lrf, private_space_optimal_lrf
from dpspectral.lowrank._hardt_roth import hardt_roth
from dpspectral.lowrank._streaming import RepublicationError, TurnstileLRF, turnstile_lrf
from dpspectral.privacy._accounting import EpsilonDeltaDpEvent
from dpspectral.privacy._budget import Relation

KW = dict(epsilon=1.0, delta=1e-6)
PRIVATE = [m for m in methods(task="lowrank") if m.private]
PRIVATE_IDS = [m.name for m in PRIVATE]


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        return fn(*args, **kwargs)


def _method_kwargs(method, seed: int = 3) -> dict:
    kw: dict = dict(random_state=seed, epsilon=1.0, delta=1e-6, relation=method.relations[0])
    if "row_norm" in method.options:
        kw["row_norm"] = 2.0
    if "sketch" in method.options and method.needs_delta:
        kw["sketch"] = Sketch(seed=11)
    return kw


# ----------------------------------------------------------------------------------------------
# item 1: no data-dependent count in any diagnostics
# ----------------------------------------------------------------------------------------------


def _sparse_matrix_and_neighbour():
    rng = np.random.default_rng(0)
    A = rng.uniform(size=(30, 20))
    A[A < 0.5] = 0.0
    A2 = A.copy()
    i, j = np.argwhere(A == 0.0)[0]
    A2[i, j] = 0.7  # a Priv1/Priv2 (and row-level) neighbour with one more non-zero entry
    return A, A2


def test_turnstile_result_holds_no_count_of_entries():
    A, A2 = _sparse_matrix_and_neighbour()
    a = turnstile_lrf(A, 3, random_state=1, sketch_seed=2, **KW)
    b = turnstile_lrf(A2, 3, random_state=1, sketch_seed=2, **KW)
    assert "n_updates" not in a.diagnostics
    assert a.diagnostics == b.diagnostics  # old code: n_updates 300 vs 301, certified=True
    params = {"sketch": Sketch(seed=2)}
    est = [DPLowRank(3, method="turnstile_lrf", random_state=1, method_params=params, **KW).fit(X)
           for X in (A, A2)]
    assert est[0].result_.diagnostics == est[1].result_.diagnostics
    st = TurnstileLRF((30, 20), 3, **KW)
    st.update(0, 0, 1.0)
    assert not hasattr(st, "n_updates") and "n_updates" not in repr(st)


@pytest.mark.parametrize("method", PRIVATE, ids=PRIVATE_IDS)
def test_diagnostics_are_the_same_on_neighbours(method):
    """Every private low-rank method: same seeds, neighbouring inputs, identical diagnostics.

    Allowed to differ: ``rows_pruned`` of hardt_roth, a function of the released noisy sketch Y.
    """
    A, A2 = _sparse_matrix_and_neighbour()
    kw = _method_kwargs(method)
    da = dict(_quiet(method.function, A, 2, **kw).diagnostics)
    db = dict(_quiet(method.function, A2, 2, **kw).diagnostics)
    for d in (da, db):
        d.pop("rows_pruned", None)
    assert da == db


# ----------------------------------------------------------------------------------------------
# item 7: one published snapshot per state, in memory and in its files
# ----------------------------------------------------------------------------------------------


def test_release_update_release_is_refused_by_every_publication_path(tmp_path):
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    st.update(1, 2, 3.0)
    first = st.release()
    assert first.privacy.certified and st.published
    st.update(4, 4, 0.7)
    with pytest.raises(RepublicationError, match="already published"):
        st.release()  # old code: a warning, then a certified=True release revealing the update
    with pytest.raises(RepublicationError):
        st.save(tmp_path / "p.npz", publish=True)
    assert not (tmp_path / "p.npz").exists()
    with pytest.raises(RepublicationError):
        _ = st.Y_c
    with pytest.raises(RepublicationError):
        _ = st.Z
    st.save(tmp_path / "c.npz")  # a secret checkpoint is still allowed, and it keeps the tracking
    back = TurnstileLRF.load(tmp_path / "c.npz")
    assert back.published
    with pytest.raises(RepublicationError):
        back.release()
    clone = pickle.loads(pickle.dumps(st))  # a copy keeps the tracking too
    with pytest.raises(RepublicationError):
        clone.release()


def test_reading_the_sketches_is_a_publication():
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    st.update(1, 2, 3.0)
    Y = st.Y_c  # old code: a read-only view of the live state, no publication recorded
    st.update(4, 4, 0.7)
    assert not np.array_equal(Y, st._Y)  # a copy, not a live view
    with pytest.raises(RepublicationError):
        st.release()


def test_save_publish_then_update_then_release_reveals_nothing(tmp_path):
    """The issue's scenario: a published file, an update, a release (old: differ by 0.7 Phi[4])."""
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    st.update_many([0, 3], [1, 2], [1.0, -1.0])
    path = st.save(tmp_path / "s.npz", publish=True)
    with np.load(path, allow_pickle=False) as f:
        assert str(f["status"][()]) == "published" and str(f["publication"][()]) == "current"
        assert "n_updates" not in f.files and "notice" not in f.files
    st.update(4, 4, 0.7)
    with pytest.raises(RepublicationError):
        st.release()
    back = TurnstileLRF.load(path)
    assert back.published
    assert back.release().privacy.certified  # the published snapshot itself: post-processing
    back.update(4, 4, 0.7)
    with pytest.raises(RepublicationError):
        back.release()


def test_a_secret_checkpoint_says_so_and_publishes_nothing(tmp_path):
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    st.update(1, 1, 1.0)
    path = st.save(tmp_path / "c.npz")  # default: a secret checkpoint
    with np.load(path, allow_pickle=False) as f:
        assert str(f["status"][()]) == "secret" and str(f["publication"][()]) == "none"
        assert "SECRET CHECKPOINT" in str(f["notice"][()]) and "n_updates" not in f.files
    assert not st.published
    st.update(2, 2, 1.0)
    assert st.release().privacy.certified  # the checkpoint was not a publication
    with pytest.raises(TypeError, match="'publish'"):
        st.save(tmp_path / "x.npz", publish="yes")


def test_covariance_state_has_the_same_guard():
    cov = CovarianceLRF(5, 2, random_state=0, **KW)
    cov.insert([0.1, 0.2, 0.3, 0.0, 0.0])
    cov.release()
    cov.release()  # the same snapshot again
    cov.insert([0.0, 0.2, 0.0, 0.1, 0.0])
    with pytest.raises(RepublicationError):
        cov.release()  # old code: no guard at all
    with pytest.raises(RepublicationError):
        _ = cov.Y_c
    assert not hasattr(cov, "n_rows")


# ----------------------------------------------------------------------------------------------
# item 8: the continual tree's noise stays inside
# ----------------------------------------------------------------------------------------------


def test_continual_noise_is_not_exposed_and_cannot_be_copied_out():
    cont = ContinualLRF((10, 12), 2, 4, random_state=0, **KW)
    cont.step([1], [2], [3.0])
    assert not hasattr(cont, "node_noise") and not hasattr(cont, "noise_seed")
    with pytest.raises(TypeError, match="secret noise seed"):
        pickle.dumps(cont)
    with pytest.raises(TypeError, match="secret noise seed"):
        copy.deepcopy(cont)
    assert "noise_seed" not in cont.release().diagnostics


# ----------------------------------------------------------------------------------------------
# item 9: public randomness is not drawn from the secret generator
# ----------------------------------------------------------------------------------------------

SEEDED = [
    (private_frobenius_lrf, {}),
    (private_space_optimal_lrf, {}),
    (turnstile_lrf, {}),
    (continual_lrf, {}),
    (covariance_lrf, {"row_norm": 2.0}),
    (private_local_lrf, {"row_norm": 2.0, "protocol": "sketch"}),
]


@pytest.mark.parametrize("fn, extra", SEEDED, ids=[f.__name__ for f, _ in SEEDED])
def test_published_sketch_seed_is_independent_of_random_state(fn, extra):
    A = np.random.default_rng(1).uniform(size=(24, 16))
    a = fn(A, 2, random_state=7, **extra, **KW).diagnostics["sketch_seed"]
    b = fn(A, 2, random_state=7, **extra, **KW).diagnostics["sketch_seed"]
    assert a != b  # OS entropy: equal with probability 2^-63 (old code: equal, a function of random_state)
    assert a != int(np.random.default_rng(7).integers(0, 2**63 - 1))  # the old derivation


def test_noise_is_a_function_of_random_state_only(monkeypatch):
    """With or without a declared sketch seed, the same random_state draws the same noise."""
    captured: list = []
    real = factorization.frobenius_release

    def spy(Y, Z, S, k, *rest):
        captured.append((Y.copy(), Z.copy()))
        return real(Y, Z, S, k, *rest)

    monkeypatch.setattr(factorization, "frobenius_release", spy)
    A = np.zeros((20, 30))  # the released sketches are then the noise alone
    for seed in (None, 1, 2):
        private_frobenius_lrf(A, 2, random_state=5, sketch_seed=seed, **KW)
    for Y, Z in captured[1:]:
        assert np.array_equal(Y, captured[0][0]) and np.array_equal(Z, captured[0][1])
    states = [TurnstileLRF((20, 30), 2, random_state=5, sketch_seed=s, **KW) for s in (None, 1, 2)]
    for st in states[1:]:
        assert np.array_equal(st._Y, states[0]._Y) and np.array_equal(st._ZT, states[0]._ZT)
    covs = [CovarianceLRF(6, 2, random_state=5, sketch_seed=s, **KW) for s in (None, 1)]
    assert np.array_equal(covs[0]._Y, covs[1]._Y)


# ----------------------------------------------------------------------------------------------
# item 10: the local user never trusts the server's matrices
# ----------------------------------------------------------------------------------------------


def test_user_regenerates_the_sketches_and_refuses_altered_ones():
    setup = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    row = np.full(6, 0.1)
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
    good = local_lrf_report(row, 0, setup, rng=1, **kw)
    scaled = dataclasses.replace(setup, Phi=setup.Phi * 100, T=setup.T * 100)  # epsilon ~ 139
    with pytest.raises(ValueError, match="does not match the sketches of its public seed"):
        local_lrf_report(row, 0, scaled, rng=1, **kw)
    with pytest.raises(ValueError, match="does not match"):
        local_lrf_report(row, 0, dataclasses.replace(setup, seed=6), rng=1, **kw)
    fresh = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    again = local_lrf_report(row, 0, fresh, rng=1, **kw)
    assert np.array_equal(good.as_vector(), again.as_vector())


def test_drawn_sensitivity_is_the_exact_worst_case():
    """Derived independently: the change of user i's clean report is (E^T Phi, S_i (T E)^T)."""
    setup = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    joint, part_y, part_z = drawn_sensitivity(setup.Phi, setup.S, setup.T, bound=2.0, column=3)
    s = float(np.linalg.norm(setup.S[:, 3]))

    def change(E: np.ndarray) -> float:
        parts = [E @ setup.Phi, np.outer(setup.S[:, 3], setup.T @ E).ravel()]
        return float(np.linalg.norm(np.concatenate(parts)))

    directions = np.random.default_rng(0).normal(size=(3000, 6))
    assert max(change(2.0 * e / np.linalg.norm(e)) for e in directions) <= joint  # a random search
    top = np.linalg.svd(np.vstack([setup.Phi.T, s * setup.T]))[2][0]
    assert change(2.0 * top) == pytest.approx(joint, rel=1e-8)  # attained: the exact worst case
    assert joint <= math.hypot(part_y, part_z)


def test_drawn_calibration_spends_no_sketch_delta_and_draws_that_noise():
    setup = local_lrf_setup(8, 6, 2, subspace_sketch_size=3, affine_sketch_size=4, seed=5)
    nz = local_lrf_noise_drawn(1.0, 1e-6, setup, row_norm=1.0, column=3)
    mult = _analytic_gaussian(1.0, 1e-6)  # all of delta goes to the Gaussian
    assert nz.sketch_delta == 0.0 and len(nz.events) == 1
    assert nz.events[0].noise_multiplier == pytest.approx(mult, rel=1e-6)
    assert nz.sigma_y == nz.sigma_z == pytest.approx(mult * nz.sensitivity, rel=1e-6)
    row = np.full(6, 0.1)
    clean = np.concatenate([row @ setup.Phi, np.outer(setup.S[:, 3], setup.T @ row).ravel()])
    reports = [local_lrf_report(row, 3, setup, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=r,
                                sketch_sensitivity="drawn") for r in range(300)]
    _variance_matches(np.concatenate([r.as_vector() - clean for r in reports]), nz.sigma_y)
    A = np.random.default_rng(2).uniform(size=(30, 10))
    res = private_local_lrf(A, 2, sketch_sensitivity="drawn", random_state=0, **KW)
    assert res.privacy.certified and not any(isinstance(e, EpsilonDeltaDpEvent) for e in res.privacy.events)
    assert any("sketch_sensitivity='drawn'" in n for n in res.privacy.notes)
    with pytest.raises(ValueError, match="tight calibration only"):
        private_local_lrf(A, 2, sketch_sensitivity="drawn", calibration="paper", **KW)


# ----------------------------------------------------------------------------------------------
# item 11: the sketch is not shown to the stream before publication
# ----------------------------------------------------------------------------------------------


def test_streaming_sketches_are_not_shown_before_publication():
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    for get in (st.sketches, lambda: st.sketch_seed, lambda: st.config):
        with pytest.raises(ValueError, match="not shown before the state is published"):
            get()
    assert any("Non-adaptive stream" in note for note in st.privacy.notes)
    st.update(0, 0, 1.0)
    res = st.release()
    assert st.sketch_seed == res.diagnostics["sketch_seed"] and st.sketches()[0].shape == (30, st.sizes.t)

    cov = CovarianceLRF(5, 2, random_state=0, **KW)
    with pytest.raises(ValueError, match="not shown before"):
        cov.sketches()
    assert any("Non-adaptive stream" in note for note in cov.privacy.notes)
    cov.release()
    assert cov.sketch_seed == cov.release().diagnostics["sketch_seed"]

    cont = ContinualLRF((10, 12), 2, 2, random_state=0, **KW)
    assert any("Non-adaptive stream" in note for note in cont.privacy.notes)
    cont.step([1], [2], [3.0])
    assert "sketch_seed" not in cont.release().diagnostics
    with pytest.raises(ValueError, match="not shown before the horizon"):
        cont.sketches()
    cont.step([2], [2], [1.0])
    assert cont.release().diagnostics["sketch_seed"] == cont.sketch_seed  # at the horizon


# ----------------------------------------------------------------------------------------------
# item 12: row_change is its own relation
# ----------------------------------------------------------------------------------------------


def test_row_change_is_reported_as_its_own_relation_in_words():
    A = np.random.default_rng(2).uniform(size=(30, 10))
    res = private_local_lrf(A, 2, row_change=1.0, sketch_seed=1, random_state=0, **KW)
    assert any("local_row_change" in n and "NOT protected" in n for n in res.privacy.notes)
    clipped = private_local_lrf(A, 2, row_norm=0.5, sketch_seed=1, random_state=0, **KW)
    assert not any("local_row_change" in n for n in clipped.privacy.notes)
    hr = hardt_roth(A, 2, row_change=1.0, random_state=0, **KW)
    assert any("row_change (not 'replace_one')" in n for n in hr.privacy.notes)


def test_row_change_relation_member():
    A = np.random.default_rng(2).uniform(size=(30, 10))
    res = private_local_lrf(A, 2, row_change=1.0, sketch_seed=1, random_state=0, **KW)
    assert res.privacy.relation is Relation.LOCAL_ROW_CHANGE
    hr = hardt_roth(A, 2, row_change=1.0, random_state=0, **KW)
    assert hr.privacy.relation is Relation.ROW_CHANGE


# ----------------------------------------------------------------------------------------------
# item 15: the non-private reference protects no relation
# ----------------------------------------------------------------------------------------------


def test_non_private_reference_lists_no_relation():
    m = get_method("optimal_space_lrf")
    assert not m.private and m.relations == ()


# ----------------------------------------------------------------------------------------------
# the noise actually drawn, against an independently derived scale
# ----------------------------------------------------------------------------------------------


def _laurent_massart(d: int, delta_s: float) -> float:
    """P[chi2_d / d > c] <= delta_s for c = 1 + 2 sqrt(x/d) + 2 x/d, x = ln(1/delta_s) (LM 2000, Lemma 1)."""
    x = math.log(1.0 / delta_s)
    return 1.0 + 2.0 * math.sqrt(x / d) + 2.0 * x / d


def _analytic_gaussian(eps: float, delta: float) -> float:
    """sigma / sensitivity of the analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8)."""

    def excess(s: float) -> float:
        tail = math.exp(eps) * stats.norm.cdf(-0.5 / s - eps * s)
        return float(stats.norm.cdf(0.5 / s - eps * s) - tail) - delta

    return float(optimize.brentq(excess, 1e-2, 1e2, xtol=1e-14, rtol=1e-14))


def _variance_matches(noise: np.ndarray, sigma: float) -> None:
    """Two-sided chi-square test that i.i.d. entries have std sigma; false-positive rate 1e-6."""
    lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], noise.size)
    assert lo <= float(np.sum(noise**2)) / sigma**2 <= hi


def test_space_optimal_noise_has_the_independently_derived_scale(monkeypatch):
    """Priv1: (Y_r, Z) sensitivity sqrt(c_psi + c_s c_tt) (the c_tt factor must be there).

    Neighbours ``Â' - Â = u z^T`` (unit u, z = (v, 0)): ``||Psi u z^T||_F = ||Psi u||`` and
    ``||S u z^T T^T||_F = ||S u|| ||T z||``; each squared norm is a chi-square over its sketch's rows
    (t, v and v rows), bounded by Laurent–Massart at delta_s = 0.1 delta / 3 each.
    """
    captured: dict = {}
    real = factorization.space_optimal_release

    def spy(Y_c, Y_r, Z, S, T, k, n, *rest):
        captured.update(Y_r=Y_r.copy(), Z=Z.copy(), S=np.asarray(S).copy(), T=np.asarray(T).copy())
        return real(Y_c, Y_r, Z, S, T, k, n, *rest)

    monkeypatch.setattr(factorization, "space_optimal_release", spy)
    m, n, k, seed = 40, 60, 2, 99
    A = np.random.default_rng(3).uniform(size=(m, n))
    res = private_space_optimal_lrf(A, k, random_state=4, sketch_seed=seed, **KW)
    t, v, N = 8, 32, m + n  # ceil(k / 0.25), ceil(k / 0.25^2): v < m and v < N, so c_s, c_tt > 1
    assert (res.diagnostics["t"], res.diagnostics["v"]) == (t, v)
    # the sketches, regenerated independently: Psi (t x m), S (v x m), T (v x N), N(0, 1/rows)
    g = np.random.default_rng(seed)
    Psi = g.standard_normal((t, m)) / math.sqrt(t)
    S = g.standard_normal((v, m)) / math.sqrt(v)
    T = g.standard_normal((v, N)) / math.sqrt(v)
    assert np.allclose(captured["S"], S) and np.allclose(captured["T"], T)
    A_hat = np.hstack([A, res.diagnostics["sigma_min"] * np.eye(m)])
    N1 = captured["Y_r"] - Psi @ A_hat
    N2 = captured["Z"] - S @ A_hat @ T.T
    delta_s = 0.1 * 1e-6 / 3
    c_psi = _laurent_massart(t, delta_s)  # Psi: t rows
    c_s = c_tt = _laurent_massart(v, delta_s)  # S and T: v rows each
    sens = math.sqrt(c_psi + c_s * c_tt)
    sigma = _analytic_gaussian(0.5, (1e-6 - 1e-7) / 2) * sens  # half of epsilon, half of the rest of delta
    _variance_matches(np.concatenate([N1.ravel(), N2.ravel()]), sigma)  # the noise actually drawn
    assert res.diagnostics["sensitivity"] == pytest.approx(sens, rel=1e-12)
    gauss = [e for e in res.privacy.events if isinstance(e, dp_accounting.GaussianDpEvent)]
    assert len(gauss) == 1 and gauss[0].noise_multiplier == pytest.approx(sigma / sens, rel=1e-6)
    assert res.privacy.certified and 0.999 <= res.privacy.epsilon <= 1.0


def test_frobenius_noise_has_the_independently_derived_scale(monkeypatch):
    """Priv2: (Y_c, Z) sensitivity sqrt(c_t + c_v) for ||E||_F <= 1 (Laurent–Massart, delta_s = delta/20)."""
    captured: dict = {}
    real = factorization.frobenius_release

    def spy(Y, Z, S, k, *rest):
        captured.update(Y=Y.copy(), Z=Z.copy())
        return real(Y, Z, S, k, *rest)

    monkeypatch.setattr(factorization, "frobenius_release", spy)
    m, n, seed = 40, 60, 98
    A = np.random.default_rng(3).uniform(size=(m, n))
    res = private_frobenius_lrf(A, 2, random_state=4, sketch_seed=seed, **KW)
    t, v = 8, 32
    g = np.random.default_rng(seed)
    Phi = (g.standard_normal((t, n)) / math.sqrt(t)).T
    S = g.standard_normal((v, m)) / math.sqrt(v)
    delta_s = 0.1 * 1e-6 / 2
    sens = math.sqrt(_laurent_massart(t, delta_s) + _laurent_massart(v, delta_s))
    sigma = _analytic_gaussian(1.0, 0.9e-6) * sens
    noise = np.concatenate([(captured["Y"] - A @ Phi).ravel(), (captured["Z"] - S @ A).ravel()])
    _variance_matches(noise, sigma)
    assert res.diagnostics["sigma"] == pytest.approx(sigma, rel=1e-6)


# ----------------------------------------------------------------------------------------------
# validate the whole matrix, then charge; data-independent messages
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["nan", "inf", "over_bound"])
@pytest.mark.parametrize("method", PRIVATE, ids=PRIVATE_IDS)
def test_bad_input_is_refused_before_the_ledger_is_charged(method, bad):
    A = np.random.default_rng(4).uniform(size=(30, 20)) * 0.1
    kw = _method_kwargs(method)
    if bad == "over_bound":
        if "on_norm_violation" not in method.options:
            pytest.skip("no row bound: Priv1/Priv2 methods protect matrix changes, not rows")
        kw["on_norm_violation"] = "raise"
        A[17] = 5.0
    else:
        A[17, 3] = np.nan if bad == "nan" else np.inf
    acc = Accountant(100.0, 1e-3)
    with pytest.raises(ValueError) as info:
        _quiet(method.function, A, 2, accountant=acc, **kw)
    assert len(acc.entries) == 0  # old code: covariance_lrf charged, then refused
    message = str(info.value)
    assert "17" not in message and "5.0" not in message and "row 0" not in message


def test_stream_errors_name_no_row_or_value():
    cov = CovarianceLRF(5, 2, on_norm_violation="raise", random_state=0, **KW)
    rows = np.full((3, 5), 0.1)
    rows[1, 2] = np.nan
    with pytest.raises(ValueError) as info:
        cov.insert_many(rows)
    assert "row 1" not in str(info.value)  # old: "row 1 of this batch contains NaN"
    st = TurnstileLRF((20, 30), 2, **KW)
    with pytest.raises(ValueError) as info:
        st.update_many([0, 1, 2], [0, 1, 2], [1.0, 2.5, np.nan])
    assert "values[2]" not in str(info.value) and "nan" not in str(info.value)
    with pytest.raises(ValueError) as info:
        st.update_many([0, 25], [0, 1], [1.0, 1.0])
    assert "rows[1]" not in str(info.value) and "25" not in str(info.value)
