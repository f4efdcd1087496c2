"""Turnstile Private-Space-Optimal-LRF (Upadhyay 2018, Figure 5, Theorem 47): the state equals
the one-shot Priv1 sketches, the one-publication rule, state files, space, bad input."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from dpspectral import config_context
from dpspectral.lowrank import Sketch
from dpspectral.lowrank._continual import dyadic_nodes, tree_levels
from dpspectral.lowrank._continual_space_optimal import (
    ContinualSpaceOptimalLRF,
    continual_space_optimal_lrf,
)
from dpspectral.lowrank._factorization import (
    _space_optimal_sketches,
    private_space_optimal_lrf,
    space_optimal_noise,
)
from dpspectral.lowrank._sketches import sketch_sizes
from dpspectral.lowrank._streaming import RepublicationError, StateFileError, TurnstileLRF
from dpspectral.lowrank._turnstile_space_optimal import (
    TurnstileSpaceOptimalLRF,
    paper_space_bound,
    turnstile_space_optimal_lrf,
)
from dpspectral.privacy._accounting import Accountant
from dpspectral.privacy._budget import BudgetExceededError, PrivacyBudget, Relation

KW = dict(epsilon=1.0, delta=1e-6)
SEED = 4321  # a declared public sketch seed


@pytest.fixture
def float_noise():
    """The float source (NumPy's normals), whose draws :func:`reference_state` repeats."""
    with config_context(noise="float"):
        yield


def state_arrays(st: TurnstileSpaceOptimalLRF):
    """The state, read without publishing it (test introspection)."""
    return st._Y_c.copy(), st._Y_r.copy(), st._Z.copy()


def as_entries(A: np.ndarray, rng: np.random.Generator, parts: int = 2):
    """A as a shuffled turnstile stream: ``parts`` random summands of every entry."""
    m, n = A.shape
    ii, jj = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    pieces = rng.normal(size=(parts - 1, ii.size))
    vals = np.concatenate([pieces.ravel(), A[ii, jj] - pieces.sum(axis=0)])
    rows, cols = np.tile(ii, parts), np.tile(jj, parts)
    order = rng.permutation(rows.size)
    return rows[order], cols[order], vals[order]


def spiked(shape, k=3, scale=400.0, seed=0):
    """A rank-k matrix of large singular values plus unit noise (the signal clears the privacy noise)."""
    rng = np.random.default_rng(seed)
    m, n = shape
    L, R = np.linalg.qr(rng.normal(size=(m, k)))[0], np.linalg.qr(rng.normal(size=(n, k)))[0]
    return (L * scale * np.linspace(1.0, 0.6, k)) @ R.T + rng.normal(size=shape)


def reference_state(B: np.ndarray, k: int, random_state: int, calibration: str = "tight"):
    """The one-shot sketches of the oriented matrix B (m <= n), drawn as private_space_optimal_lrf draws
    under the float source (the ``float_noise`` fixture); the exact default draws other values."""
    m, n = B.shape
    sizes = sketch_sizes(k, 0.25, m, m + n)
    so = space_optimal_noise("x", PrivacyBudget(1.0, 1e-6), Relation.PRIV1, sizes, (m, n), bound=1.0,
                             calibration=calibration, alpha=0.25, input_share=0.5, sketch_failure_share=0.1)
    Psi, S, T = _space_optimal_sketches(m, m + n, sizes, SEED)
    rng = np.random.default_rng(random_state)
    Omega = np.random.default_rng(rng.integers(0, 2**63 - 1)).standard_normal((m + n, Psi.shape[0]))
    Ahat = np.hstack([B, so.sigma_min * np.eye(m)])
    N1 = rng.normal(0.0, so.sigma_y, size=(Psi.shape[0], m + n))
    N2 = rng.normal(0.0, so.sigma_z, size=(S.shape[0], T.shape[0]))
    return Ahat @ Omega, Psi @ Ahat + N1, S @ Ahat @ T.T + N2


# ----------------------------------------------------------------------------------------------
# the streamed state is the one-shot state; the release is the one-shot release
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(30, 55), (55, 30), (12, 12)])  # (12, 12): identity Psi and S
@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.filterwarnings("ignore::dpspectral.privacy._accounting.UncertifiedPrivacyWarning")
def test_state_equals_one_shot_state(shape, calibration, float_noise):
    rng = np.random.default_rng(1)
    A, k = spiked(shape), 3
    st = TurnstileSpaceOptimalLRF(shape, k, calibration=calibration, random_state=7, sketch_seed=SEED, **KW)
    rows, cols, vals = as_entries(A, rng)
    for chunk in np.array_split(np.arange(rows.size), 4):
        st.update_many(rows[chunk], cols[chunk], vals[chunk])
    st.update(0, 1, 0.5)  # one more entry, then take it back
    st.update(0, 1, -0.5)
    assert st.transposed == (shape[0] > shape[1])
    B = A.T if st.transposed else A
    scale = np.abs(A).max() * B.shape[1]
    for got, want in zip(state_arrays(st), reference_state(B, k, 7, calibration), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * scale)


@pytest.mark.parametrize("shape", [(30, 55), (55, 30)])
@pytest.mark.parametrize("singular_values", ["shrink", "raw"])
def test_release_equals_one_shot_factorization(shape, singular_values):
    A, k = spiked(shape, seed=2), 3
    kw = dict(random_state=11, sketch_seed=SEED, singular_values=singular_values, **KW)
    one = private_space_optimal_lrf(A, k, **kw)
    streamed = turnstile_space_optimal_lrf(A, k, batch_size=97, **kw)
    assert one.S[0] > 0  # the signal clears the noise: a non-trivial comparison
    np.testing.assert_allclose(streamed.S, one.S, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(streamed.reconstruct(), one.reconstruct(), rtol=0, atol=1e-8 * np.abs(A).max())
    for key in ("t", "v", "sigma_min", "sigma", "sigma_z", "sensitivity", "epsilon_input", "transposed"):
        assert streamed.diagnostics[key] == one.diagnostics[key]
    assert streamed.privacy.certified and streamed.privacy.relation is Relation.PRIV1
    assert streamed.privacy.epsilon == pytest.approx(one.privacy.epsilon)
    assert streamed.privacy.delta == pytest.approx(one.privacy.delta)


def test_initial_state_is_padding_and_noise(float_noise):
    """Figure 5's initialisation: Y_c = [0, s I] Omega, Y_r = Psi [0, s I] + N1, Z = S [0, s I] T^T + N2."""
    st = TurnstileSpaceOptimalLRF((10, 25), 2, random_state=3, sketch_seed=SEED, **KW)
    want = reference_state(np.zeros((10, 25)), 2, 3)
    for got, w in zip((st.Y_c, st.Y_r, st.Z), want, strict=True):  # reading publishes
        np.testing.assert_allclose(got, w, rtol=0, atol=1e-12)
    assert st.published and np.abs(st.Y_c).min() > 0  # the padding is there before any update


def test_streamed_release_beats_a_random_subspace():
    """Utility on a spiked 60 x 200 matrix at eps = 1: the released left subspace captures >= 0.9 of the
    rank-3 energy; a random 3-dim subspace captures about 3/60 (seeded, deterministic)."""
    A = spiked((60, 200), k=3, scale=600.0, seed=5)
    res = turnstile_space_optimal_lrf(A, 3, random_state=0, sketch_seed=SEED, **KW)
    U = np.linalg.svd(A, full_matrices=False)[0][:, :3]
    captured = np.linalg.norm(U.T @ res.U) ** 2 / 3
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(60, 3)))[0]
    assert captured >= 0.9 > 0.2 >= np.linalg.norm(U.T @ Q) ** 2 / 3


# ----------------------------------------------------------------------------------------------
# one publication; accounting
# ----------------------------------------------------------------------------------------------


def test_second_publication_after_updates_is_refused_and_costs_nothing():
    acc = Accountant(1.0, 1e-6, relation="priv1")
    st = TurnstileSpaceOptimalLRF((20, 30), 2, accountant=acc, random_state=0, **KW)
    assert len(acc.entries) == 1 and acc.entries[0].label == "turnstile_space_optimal_lrf"
    spent = acc.spent()
    st.update(1, 2, 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = st.release(), st.release()  # the same snapshot again: post-processing
    assert np.array_equal(a.U, b.U) and np.array_equal(a.S, b.S)
    st.update(1, 2, 3.0)
    for publish in (st.release, lambda: st.Y_c, lambda: st.Y_r, lambda: st.Z):
        with pytest.raises(RepublicationError, match="already published"):
            publish()
    with pytest.raises(RepublicationError):
        st.save(__import__("tempfile").mkdtemp() + "/s.npz", publish=True)
    assert len(acc.entries) == 1 and acc.spent() == spent
    with pytest.raises(BudgetExceededError):  # a second state is a second release: charged, here refused
        TurnstileSpaceOptimalLRF((20, 30), 2, accountant=acc, random_state=1, **KW)
    assert len(acc.entries) == 1


def test_sketch_is_hidden_until_published():
    st = TurnstileSpaceOptimalLRF((20, 30), 2, random_state=0, **KW)
    for read in (lambda: st.sketch_seed, st.sketches, lambda: st.config):
        with pytest.raises(ValueError, match="not shown before the state is published"):
            read()
    st.release()
    Psi, S, T = st.sketches()
    assert st.config.sketch_seed == st.sketch_seed and Psi.shape == (st.sizes.t, 20)


# ----------------------------------------------------------------------------------------------
# bad input: clear errors, state unchanged, nothing charged
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("update", [
    lambda st: st.update(20, 0, 1.0),
    lambda st: st.update(0, 30, 1.0),
    lambda st: st.update(-1, 0, 1.0),
    lambda st: st.update(0.0, 0, 1.0),
    lambda st: st.update(0, 0, float("nan")),
    lambda st: st.update(0, 0, float("inf")),
    lambda st: st.update_many([0, 20], [0, 0], [1.0, 1.0]),
    lambda st: st.update_many([0, 1], [0, 0], [1.0, float("nan")]),
    lambda st: st.update_many([0, 1], [0], [1.0, 1.0]),
    lambda st: st.update_many([0, 0], [0, 0], [1.5e308, 1.5e308]),  # overflows the sketches
])
def test_bad_updates_leave_the_state_unchanged(update):
    acc = Accountant(1.0, 1e-6, relation="priv1")
    st = TurnstileSpaceOptimalLRF((20, 30), 2, accountant=acc, random_state=0, **KW)
    st.update(3, 4, 2.0)
    before = state_arrays(st)
    with pytest.raises(ValueError) as info:
        update(st)
    assert "308" not in str(info.value) and "2.0" not in str(info.value)  # no value is named
    for a, b in zip(state_arrays(st), before, strict=True):
        assert np.array_equal(a, b)
    assert len(acc.entries) == 1 and not st.published


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(shape=(20, 30), rank=21), "'k' parameter"),  # k > min(m, n)
    (dict(shape=(20, 30), rank=5, sketch=Sketch(subspace_size=4)), "sketch.subspace_size"),  # k > t
    (dict(shape=(20, 30), rank=5, sketch=Sketch(subspace_size=21)), "sketch.subspace_size"),  # t > m
    (dict(shape=(20, 30), rank=5, affine_sketch_size=51), "sketch.affine_size"),  # v > m + n (old keyword)
    (dict(shape=(20, 30), rank=2, relation="priv2"), "relation"),
    (dict(shape=(20, 30), rank=2, epsilon=-1.0), "epsilon"),
    (dict(shape=(20, 30), rank=2, input_share=1.0), "input_share"),
    (dict(shape=(20,), rank=2), "shape"),
])
def test_bad_configuration_is_refused_before_the_charge(kwargs, match):
    acc = Accountant(relation="priv1")
    args = {**KW, **kwargs}
    shape, rank = args.pop("shape"), args.pop("rank")
    with pytest.raises(ValueError, match=match):
        TurnstileSpaceOptimalLRF(shape, rank, accountant=acc, **args)
    assert len(acc.entries) == 0


def test_one_call_function_refuses_bad_matrices_before_the_charge():
    acc = Accountant(relation="priv1")
    bad = np.ones((5, 6))
    bad[1, 2] = np.nan
    for A, k in ((bad, 2), (np.ones((5, 6)), 6), (np.ones(5), 1)):
        with pytest.raises(ValueError):
            turnstile_space_optimal_lrf(A, k, accountant=acc, **KW)
    with pytest.raises(ValueError, match="batch_size"):
        turnstile_space_optimal_lrf(np.ones((5, 6)), 2, batch_size=0, accountant=acc, **KW)
    assert len(acc.entries) == 0


# ----------------------------------------------------------------------------------------------
# state files and pickling
# ----------------------------------------------------------------------------------------------


def test_secret_checkpoint_continues_exactly(tmp_path):
    acc = Accountant(relation="priv1")
    A = spiked((40, 25), seed=3)
    rows, cols, vals = as_entries(A, np.random.default_rng(0))
    half = rows.size // 2
    st = TurnstileSpaceOptimalLRF((40, 25), 3, accountant=acc, random_state=5, sketch_seed=SEED, **KW)
    st.update_many(rows[:half], cols[:half], vals[:half])
    path = st.save(tmp_path / "ckpt.npz")
    with np.load(path) as f:
        assert str(f["status"]) == "secret" and "omega_seed" in f.files and "notice" in f.files
    back = TurnstileSpaceOptimalLRF.load(path, expect=st)
    assert not back.published and len(acc.entries) == 1  # loading spends nothing
    for s in (st, back):
        s.update_many(rows[half:], cols[half:], vals[half:])
    for a, b in zip(state_arrays(back), state_arrays(st), strict=True):
        assert np.array_equal(a, b)
    r1, r2 = st.release(), back.release()
    assert np.array_equal(r1.U, r2.U) and np.array_equal(r1.S, r2.S)
    assert back.privacy.epsilon == st.privacy.epsilon
    copy = pickle.loads(pickle.dumps(back))  # the publication flag travels with the copy
    assert copy.published and np.array_equal(copy.release().S, r1.S)


def test_published_file_holds_no_omega_and_cannot_be_continued(tmp_path):
    st = TurnstileSpaceOptimalLRF((20, 30), 2, random_state=0, **KW)
    st.update(1, 2, 3.0)
    path = st.save(tmp_path / "pub.npz", publish=True)
    with np.load(path) as f:
        assert str(f["status"]) == "published" and "omega_seed" not in f.files
    back = TurnstileSpaceOptimalLRF.load(path)
    assert back.published and np.array_equal(back.release().S, st.release().S)
    with pytest.raises(ValueError, match="cannot be continued"):
        back.update(0, 0, 1.0)


def test_load_refuses_corrupt_and_foreign_files(tmp_path):
    st = TurnstileSpaceOptimalLRF((20, 30), 2, random_state=0, **KW)
    path = st.save(tmp_path / "s.npz")
    with pytest.raises(StateFileError, match="another configuration"):
        TurnstileSpaceOptimalLRF.load(path, expect={"rank": 3})
    with np.load(path) as f:
        data = {name: f[name] for name in f.files}
    data["Z"] = data["Z"] + 1.0  # edited noise
    np.savez(tmp_path / "edited.npz", **data)
    with pytest.raises(StateFileError, match="checksum"):
        TurnstileSpaceOptimalLRF.load(tmp_path / "edited.npz")
    priv2 = TurnstileLRF((20, 30), 2, random_state=0, **KW).save(tmp_path / "p2.npz")
    with pytest.raises(StateFileError):
        TurnstileSpaceOptimalLRF.load(priv2)
    (tmp_path / "trunc.npz").write_bytes(path.read_bytes()[:100])
    with pytest.raises(StateFileError):
        TurnstileSpaceOptimalLRF.load(tmp_path / "trunc.npz")


# ----------------------------------------------------------------------------------------------
# space (Thm 47 part 3): the state within O((m + n) k / alpha), in bytes
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "k", "alpha"), [
    ((535, 50), 10, 0.25),  # Table 3's sizes (m ~ 10.5 n, k = 10, alpha = 0.25)
    ((1050, 100), 10, 0.25),
    ((1800, 200), 10, 0.1),  # the Table 5 example of spec §10
    ((2000, 2000), 10, 0.25),
])
def test_state_size_within_the_paper_bound(shape, k, alpha):
    st = TurnstileSpaceOptimalLRF(shape, k, alpha=alpha, random_state=0, **KW)
    m, n = sorted(shape)
    t, v = st.sizes.t, st.sizes.v
    nbytes = st.state_bytes()
    vs, vt = min(v, m), min(v, m + n)  # S and T are the identity when v reaches their dimension
    assert nbytes["state"] == 8 * (m * t + t * (m + n) + vs * vt) + 16  # Y_c, Y_r, Z and two seeds
    assert nbytes["state"] == sum(a.nbytes for a in state_arrays(st)) + 16
    # (2m + n) t + v^2 words, t = k / alpha: within 3 (m + n) k / alpha when v^2 <= (m + n) k / alpha
    assert nbytes["state"] <= 3 * paper_space_bound(shape, k, alpha)
    assert nbytes["secret_omega"] == 8 * n * t <= paper_space_bound(shape, k, alpha)


def test_secure_source_publishes_the_noisy_sketches_on_their_grid(tmp_path):
    from dpspectral.privacy._noise import grid

    st = TurnstileSpaceOptimalLRF((10, 25), 2, random_state="secure", **KW)
    st.update_many([1, 2, 3], [4, 5, 6], [0.1, 0.2, 0.3])
    assert st.privacy.noise_source == "secure"
    res = st.release()
    g = grid(res.diagnostics["sigma"])
    Y_r, Z = st.Y_r, st.Z
    assert np.array_equal(np.rint(Y_r / g) * g, Y_r) and np.array_equal(np.rint(Z / g) * g, Z)
    back = TurnstileSpaceOptimalLRF.load(st.save(tmp_path / "s.npz", publish=True))
    assert back.privacy.noise_source == "secure" and np.array_equal(back.release().S, res.S)


# ----------------------------------------------------------------------------------------------
# continual release under Priv1 (Theorem 51): the binary tree over Figure 5's sketches
# ----------------------------------------------------------------------------------------------

def test_tree_is_calibrated_for_scale_b_sqrt_L():
    """Every change enters L nodes: the stacked difference is rank one of scale b sqrt(L) (Privacy)."""
    st = ContinualSpaceOptimalLRF((40, 25), 3, 100, bound=2.0, random_state=0, **KW)
    L = tree_levels(100)
    assert st.levels == L == 8
    sizes = sketch_sizes(3, 0.25, 40, 65)

    def plan(b):
        return space_optimal_noise("x", PrivacyBudget(1.0, 1e-6), Relation.PRIV1, sizes, (40, 25), bound=b,
                                   calibration="tight", alpha=0.25, input_share=0.5, sketch_failure_share=0.1)

    ref, one = plan(2.0 * math.sqrt(L)), plan(2.0)
    assert st._so.sigma_min == pytest.approx(ref.sigma_min) == pytest.approx(math.sqrt(L) * one.sigma_min)
    assert st._so.sensitivity == pytest.approx(math.sqrt(L) * one.sensitivity)
    assert st._so.sigma_y == pytest.approx(math.sqrt(L) * one.sigma_y)
    assert st.privacy.certified and st.privacy.epsilon <= 1.0 + 1e-9


def test_tree_release_is_the_prefix_sketches_plus_the_planned_noise():
    """At time tau the summed nodes are the sketches of the prefix matrix plus padding / noise of std
    sqrt(p) times the node's (p = popcount(tau)); the std is estimated from >= 1,000 entries, 15% margin."""
    A = spiked((120, 60), seed=4)
    st = ContinualSpaceOptimalLRF(A.shape, 3, 120, random_state=1, sketch_seed=SEED, **KW)
    n = A.shape[1]
    for tau in range(1, 120 + 1):
        st.step(np.full(n, tau - 1), np.arange(n), A[tau - 1])
        if tau in (7, 64, 117):
            nodes = dyadic_nodes(tau)
            Y_c, Y_r, Z = (sum(st._nodes[key][i] for key in nodes) for i in range(3))
            P = np.zeros_like(A)
            P[:tau] = A[:tau]
            p = len(nodes)
            pad = Y_c - P @ st._Omega
            N1 = Y_r - st._Psi @ np.hstack([P, np.zeros((120, 120))])
            N2 = Z - st._S @ np.hstack([P, np.zeros((120, 120))]) @ st._T.T
            for noise, std in ((pad, st._so.sigma_min), (N1, st._so.sigma_y), (N2, st._so.sigma_z)):
                assert noise.size >= 1000
                assert np.std(noise) == pytest.approx(math.sqrt(p) * std, rel=0.15)
            res = st.release()
            assert res.diagnostics["nodes"] == nodes and res.U.shape == (120, 3)


def test_tree_utility_and_accounting():
    A = spiked((120, 60), k=3, scale=3000.0, seed=6)
    acc = Accountant(1.0, 1e-6, relation="priv1")
    res = continual_space_optimal_lrf(A, 3, accountant=acc, random_state=0, **KW)
    assert len(acc.entries) == 1 and acc.entries[0].label == "continual_space_optimal_lrf"
    U = np.linalg.svd(A, full_matrices=False)[0][:, :3]
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(120, 3)))[0]
    assert np.linalg.norm(U.T @ res.U) ** 2 / 3 >= 0.8 > 0.2 >= np.linalg.norm(U.T @ Q) ** 2 / 3
    with pytest.raises(BudgetExceededError):
        ContinualSpaceOptimalLRF(A.shape, 3, 120, accountant=acc, random_state=0, **KW)
    assert len(acc.entries) == 1


def test_tree_bad_input():
    acc = Accountant(relation="priv1")
    st = ContinualSpaceOptimalLRF((10, 20), 2, 2, accountant=acc, random_state=0, **KW)
    with pytest.raises(ValueError, match="no step yet"):
        st.release()
    for bad in (([0], [20], [1.0]), ([0], [0], [float("nan")]), ([0, 1], [0], [1.0, 1.0])):
        with pytest.raises(ValueError):
            st.step(*bad)
    assert st.time == 0 and not st._nodes
    st.step([0], [0], [1.0])
    st.step()
    with pytest.raises(ValueError, match="horizon"):
        st.step([0], [0], [1.0])
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(st)
    for kwargs in (dict(rank=11), dict(relation="priv2"), dict(horizon=0), dict(subspace_sketch_size=1)):
        args = dict(shape=(10, 20), rank=2, horizon=4, **KW)
        args.update(kwargs)
        with pytest.raises(ValueError):
            ContinualSpaceOptimalLRF(args.pop("shape"), args.pop("rank"), args.pop("horizon"), accountant=acc,
                                     **args)
    assert len(acc.entries) == 1
