"""Streaming low-rank factorizations (Upadhyay 2018, Figures 6–8): turnstile state, checkpoints, the
covariance variant and continual release."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpspectral import config_context
from dpspectral.lowrank import Sketch
from dpspectral.lowrank._continual import ContinualLRF, dyadic_nodes, tree_levels
from dpspectral.lowrank._covariance import CovarianceLRF
from dpspectral.lowrank._factorization import (
    frobenius_noise,
    frobenius_release,
    frobenius_sketches,
    private_frobenius_lrf,
)
from dpspectral.lowrank._sketches import finish, sketch_sizes
from dpspectral.lowrank._streaming import (
    STATE_FORMAT_VERSION,
    RepublicationError,
    StateFileError,
    TurnstileLRF,
    state_checksum,
)
from dpspectral.privacy._accounting import Accountant
from dpspectral.privacy._budget import BudgetExceededError
from dpspectral.privacy._clipping import sensitivity_norm

KW = dict(epsilon=1.0, delta=1e-6)
SEED = 1234  # a declared public sketch seed (the default is fresh OS entropy)


@pytest.fixture
def float_noise():
    """The float source (NumPy's normals), whose draws :func:`reference_noise` repeats."""
    with config_context(noise="float"):
        yield


def reference_noise(random_state: int, m: int, n: int, t: int, v: int, sigma: float):
    """The draws of TurnstileLRF / private_frobenius_lrf under the float source (the ``float_noise``
    fixture): N1 (m x t), then N2 (v x n); nothing else.

    The sketch seed is public randomness, never drawn from random_state.
    """
    rng = np.random.default_rng(random_state)
    return rng.normal(0.0, sigma, size=(m, t)), rng.normal(0.0, sigma, size=(v, n))


def state_arrays(st):
    """The (secret) state arrays, read without publishing them (test introspection)."""
    return st._Y.copy(), st._ZT.T.copy()


def as_entries(A: np.ndarray, rng: np.random.Generator, parts: int = 2):
    """A as a shuffled turnstile stream: ``parts`` random summands of every entry (duplicates add up)."""
    m, n = A.shape
    ii, jj = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    pieces = rng.normal(size=(parts - 1, ii.size))
    vals = np.concatenate([pieces.ravel(), A[ii, jj] - pieces.sum(axis=0)])
    rows, cols = np.tile(ii, parts), np.tile(jj, parts)
    order = rng.permutation(rows.size)
    return rows[order], cols[order], vals[order]


def oriented_release(Y: np.ndarray, Z: np.ndarray, S: np.ndarray, k: int, transposed: bool,
                     sigma: float = 0.0):
    U, s, V = frobenius_release(Y, Z, S, k, sigma)
    return finish(V, s, U) if transposed else (U, s, V)


def snapshot(st: TurnstileLRF):
    return state_arrays(st)


def assert_unchanged(st: TurnstileLRF, snap) -> None:
    Y, Z = snap
    Y2, Z2 = state_arrays(st)
    assert np.array_equal(Y2, Y) and np.array_equal(Z2, Z)


# ----------------------------------------------------------------------------------------------
# turnstile state = one-shot sketches
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(40, 70), (70, 40), (12, 12)])  # (12, 12): identity sketches
def test_state_equals_one_shot_sketches(shape, float_noise):
    rng = np.random.default_rng(0)
    A = rng.normal(size=shape)
    k = 4
    st = TurnstileLRF(shape, k, random_state=11, sketch_seed=SEED, **KW)
    rows, cols, vals = as_entries(A, rng)
    for chunk in np.array_split(np.arange(rows.size), 5):
        st.update_many(rows[chunk], cols[chunk], vals[chunk])
    B = A.T if st.transposed else A
    assert st.transposed == (shape[0] > shape[1])
    m, n = B.shape
    sizes = sketch_sizes(k, 0.25, m, m)
    assert (st.sizes.t, st.sizes.v) == (sizes.t, sizes.v)
    sigma = frobenius_noise(1.0, 1e-6, sizes, shape=(m, n)).sigma
    assert st.sigma == sigma
    N1, N2 = reference_noise(11, m, n, sizes.t, sizes.v, sigma)
    Phi, S = frobenius_sketches(m, n, sizes, SEED)
    Y, Z = state_arrays(st)
    np.testing.assert_allclose(Y, B @ Phi + N1, rtol=0, atol=1e-11)
    np.testing.assert_allclose(Z, S @ B + N2, rtol=0, atol=1e-11)
    # the release is frobenius_release on the state (bit for bit), and the one-shot function's result
    res = st.release(singular_values="raw")  # the paper's values (the default shrinks them: see below)
    assert st.sketch_seed == SEED == res.diagnostics["sketch_seed"]  # shown once published
    assert np.array_equal(st.sketches()[0], Phi) and np.array_equal(st.sketches()[1], S)
    U, s, V = oriented_release(Y, Z, S, k, st.transposed)
    assert np.array_equal(res.U, U) and np.array_equal(res.S, s) and np.array_equal(res.V, V)
    assert res.U.shape == (shape[0], k) and res.V.shape == (shape[1], k)
    one = private_frobenius_lrf(A, k, random_state=11, sketch_seed=SEED, singular_values="raw", **KW)
    np.testing.assert_allclose(res.S, one.S, rtol=1e-9)
    np.testing.assert_allclose(res.reconstruct(), one.reconstruct(), rtol=0, atol=1e-9 * np.abs(A).max())
    shrunk, one = st.release(), private_frobenius_lrf(A, k, random_state=11, sketch_seed=SEED, **KW)
    U, s, V = oriented_release(Y, Z, S, k, st.transposed, st.sigma)
    assert np.array_equal(shrunk.S, s) and np.allclose(shrunk.S, one.S, rtol=1e-9, atol=1e-9)
    assert res.privacy is st.privacy and res.privacy.certified
    assert res.privacy.epsilon == pytest.approx(one.privacy.epsilon)
    assert "n_updates" not in res.diagnostics and "seconds" not in res.diagnostics


def test_state_is_noisy_from_initialisation(float_noise):
    st = TurnstileLRF((30, 50), 3, random_state=2, **KW)
    N1, N2 = reference_noise(2, 30, 50, st.sizes.t, st.sizes.v, st.sigma)
    assert not st.published
    assert np.array_equal(st.Y_c, N1) and np.array_equal(st.Z, N2)  # reading them publishes
    assert st.published
    with pytest.raises(ValueError):
        st.Y_c[0, 0] = 1.0  # read-only


def test_update_and_update_many_agree_bitwise():
    rng = np.random.default_rng(5)
    shape = (50, 35)  # transposed internally
    a = TurnstileLRF(shape, 3, random_state=9, sketch_seed=SEED, **KW)
    b = TurnstileLRF(shape, 3, random_state=9, sketch_seed=SEED, **KW)
    rows = rng.integers(0, 50, 3000)
    cols = rng.integers(0, 35, 3000)
    rows[:100], cols[:100] = 7, 3  # many duplicates of one entry
    vals = rng.normal(size=3000)
    for i, j, d in zip(rows.tolist(), cols.tolist(), vals.tolist(), strict=True):
        a.update(i, j, d)
    b.update_many(rows, cols, vals)
    for x, y in zip(state_arrays(a), state_arrays(b), strict=True):
        assert np.array_equal(x, y)
    # numpy integer and float scalars are accepted
    a.update(np.int32(1), np.int64(2), np.float32(0.5))
    b.update_many(np.array([1], dtype=np.uint8), [2], [0.5])
    for x, y in zip(state_arrays(a), state_arrays(b), strict=True):
        assert np.array_equal(x, y)


def test_empty_batch_is_a_no_op():
    st = TurnstileLRF((20, 30), 2, random_state=1, **KW)
    snap = snapshot(st)
    st.update_many([], [], [])
    assert_unchanged(st, snap)


# ----------------------------------------------------------------------------------------------
# bad input leaves the state unchanged
# ----------------------------------------------------------------------------------------------

BAD_BATCHES = [
    ([0, 20], [0, 1], [1.0, 1.0], r"'rows' holds an index out of range"),
    ([0, 1], [0, -1], [1.0, 1.0], r"'cols' holds an index out of range"),
    ([0, 1], [0, 30], [1.0, 1.0], r"'cols' holds an index out of range"),
    ([0.0, 1.0], [0, 1], [1.0, 1.0], "must hold integers"),
    ([True, False], [0, 1], [1.0, 1.0], "must hold integers"),
    ([0, 1], [0, 1], [1.0, np.nan], "NaN or infinity"),
    ([0, 1], [0, 1], [np.inf, 1.0], "NaN or infinity"),
    ([0, 1], [0, 1, 2], [1.0, 1.0], "same length"),
    ([0, 1], [0, 1], [1.0], "same length"),
    ([[0, 1]], [[0, 1]], [[1.0, 1.0]], "1-D"),
    ([0, 1], [0, 1], [1j, 1.0], "real numbers"),
    ([0] * 100, [0] * 100, [1.7e308] * 100, "overflows"),
]


@pytest.mark.parametrize("rows, cols, values, match", BAD_BATCHES)
def test_bad_batches_are_refused_whole(rows, cols, values, match):
    st = TurnstileLRF((20, 30), 2, random_state=1, **KW)
    st.update_many([0, 5], [3, 4], [1.0, -2.0])
    snap = snapshot(st)
    with pytest.raises(ValueError, match=match) as info:
        st.update_many(rows, cols, values)
    # no position, value or count of the bad entries (the updates are private)
    assert not re.search(r"\w\[\d+\]|position|in this batch|1\.7e|nan\b|inf\b", str(info.value))
    assert_unchanged(st, snap)
    st.update_many([1], [1], [1.0])  # still usable
    assert not np.array_equal(state_arrays(st)[0], snap[0])


@pytest.mark.parametrize("i, j, d, match", [
    (20, 0, 1.0, "'i' is out of range"),
    (0, 30, 1.0, "'j' is out of range"),
    (-1, 0, 1.0, "out of range"),
    (1.0, 0, 1.0, "must be an int"),
    (True, 0, 1.0, "must be an int"),
    (0, 0, math.nan, "NaN or infinity"),
    (0, 0, math.inf, "NaN or infinity"),
    (0, 0, "1", "finite"),
])
def test_bad_single_updates_are_refused(i, j, d, match):
    st = TurnstileLRF((20, 30), 2, random_state=1, **KW)
    snap = snapshot(st)
    with pytest.raises(ValueError, match=match):
        st.update(i, j, d)
    assert_unchanged(st, snap)


def test_huge_but_safe_values_take_the_checked_path():
    st = TurnstileLRF((20, 30), 2, random_state=1, **KW)
    st.update_many([0, 0], [0, 0], [1e299, -1e299])  # bound above the safe level, result finite
    Y, Z = state_arrays(st)
    assert np.isfinite(Y).all() and np.isfinite(Z).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(shape=(20, 30), rank=21), "'k' parameter"),
    (dict(shape=(30, 20), rank=0), "'k' parameter"),
    (dict(shape=(20,), rank=2), "'shape'"),
    (dict(shape=(0, 5), rank=1), "'shape'"),
    (dict(shape=(20, 30), rank=2, delta=0.0), "delta"),
    (dict(shape=(20, 30), rank=2, relation="add_remove"), "relation"),
    (dict(shape=(20, 30), rank=2, bound=-1.0), "bound"),
    (dict(shape=(20, 30), rank=2, sketch=Sketch(subspace_size=25)), "'sketch.subspace_size' parameter"),
])
def test_bad_configuration(kwargs, match):
    args = {**KW, **kwargs}
    shape, rank = args.pop("shape"), args.pop("rank")
    with pytest.raises(ValueError, match=match):
        TurnstileLRF(shape, rank, **args)


def test_accountant_spends_at_init_and_refuses_a_second_state():
    acc = Accountant(1.0, 1e-6)
    st = TurnstileLRF((20, 30), 2, accountant=acc, random_state=0, **KW)
    assert len(acc.entries) == 1 and acc.entries[0].label == "turnstile_lrf"
    assert acc.relation.value == "priv2"
    with pytest.raises(BudgetExceededError):
        TurnstileLRF((20, 30), 2, accountant=acc, random_state=1, **KW)
    assert len(acc.entries) == 1
    st.update_many([1, 2], [3, 4], [1.0, 1.0])
    res = st.release()  # releases of the existing state cost nothing
    res2 = st.release()
    assert np.array_equal(res.U, res2.U)
    assert len(acc.entries) == 1


def test_priv1_relation_is_accepted_with_the_same_noise():
    acc = Accountant(relation="priv1")
    a = TurnstileLRF((20, 30), 2, relation="priv1", accountant=acc, random_state=0, **KW)
    b = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    assert a.privacy.relation.value == "priv1" and a._config.relation == "priv1"
    assert a.sigma == b.sigma and np.array_equal(state_arrays(a)[0], state_arrays(b)[0])
    assert len(acc.entries) == 1


def test_release_after_more_updates_is_refused():
    st = TurnstileLRF((20, 30), 2, random_state=0, **KW)
    st.update(1, 2, 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = st.release()
        b = st.release()  # the same snapshot again: post-processing, allowed
    assert np.array_equal(a.U, b.U)
    st.update(1, 2, 3.0)
    for publish in (st.release, lambda: st.Y_c, lambda: st.Z):
        with pytest.raises(RepublicationError, match="already published"):
            publish()


# ----------------------------------------------------------------------------------------------
# save / load
# ----------------------------------------------------------------------------------------------


def make_state(shape=(40, 25), rank=3, n=2000, seed=0) -> TurnstileLRF:
    rng = np.random.default_rng(seed)
    st = TurnstileLRF(shape, rank, random_state=seed, **KW)
    st.update_many(rng.integers(0, shape[0], n), rng.integers(0, shape[1], n), rng.normal(size=n))
    return st


def test_save_load_round_trip(tmp_path):
    st = make_state()
    path = st.save(tmp_path / "state.npz")
    assert path == tmp_path / "state.npz" and path.is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["state.npz"]  # no temporary file left
    back = TurnstileLRF.load(path, expect=st)
    assert back._config == st._config and not back.published  # a secret checkpoint publishes nothing
    for a, b in zip(state_arrays(back), state_arrays(st), strict=True):
        assert np.array_equal(a, b)
    assert back.transposed == st.transposed
    assert back.privacy.epsilon == st.privacy.epsilon and back.sigma == st.sigma
    # both continue identically
    st.update_many([1, 2, 3], [4, 5, 6], [0.1, 0.2, 0.3])
    back.update_many([1, 2, 3], [4, 5, 6], [0.1, 0.2, 0.3])
    for a, b in zip(state_arrays(back), state_arrays(st), strict=True):
        assert np.array_equal(a, b)
    r1, r2 = st.release(), back.release()
    assert np.array_equal(r1.U, r2.U) and np.array_equal(r1.S, r2.S) and np.array_equal(r1.V, r2.V)
    for a, b in zip(back.sketches(), st.sketches(), strict=True):
        assert np.array_equal(a, b)
    # overwrite in place; a string path works too
    st.save(str(path))
    assert np.array_equal(state_arrays(TurnstileLRF.load(str(path)))[0], state_arrays(st)[0])


def test_load_does_not_spend(tmp_path):
    acc = Accountant(1.0, 1e-6)
    st = TurnstileLRF((20, 30), 2, accountant=acc, random_state=0, **KW)
    st.save(tmp_path / "s.npz")
    TurnstileLRF.load(tmp_path / "s.npz")
    TurnstileLRF.load(tmp_path / "s.npz")
    assert len(acc.entries) == 1


def test_load_refuses_another_configuration(tmp_path):
    st = make_state(rank=3)
    path = st.save(tmp_path / "s.npz")
    other = TurnstileLRF((40, 25), 4, random_state=0, **KW)
    with pytest.raises(StateFileError, match=r"another configuration: .*rank: 3 \(file\) != 4"):
        TurnstileLRF.load(path, expect=other)
    with pytest.raises(StateFileError, match="sketch_seed"):
        TurnstileLRF.load(path, expect={"sketch_seed": st._config.sketch_seed + 1})
    with pytest.raises(StateFileError, match="epsilon"):
        TurnstileLRF.load(path, expect={"shape": (40, 25), "epsilon": 2.0})
    with pytest.raises(ValueError, match="Unknown configuration fields"):
        TurnstileLRF.load(path, expect={"colour": "red"})
    assert TurnstileLRF.load(path, expect={"shape": (40, 25), "rank": 3, "relation": "priv2"}).rank == 3
    assert TurnstileLRF.load(path, expect=st._config).rank == 3


def _rewrite(path: Path, **changes) -> None:
    with np.load(path, allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    data.update(changes)
    np.savez(path, **data)


def test_load_refuses_corrupt_files(tmp_path):
    st = make_state()
    path = st.save(tmp_path / "s.npz")
    raw = path.read_bytes()
    cases: dict[str, bytes] = {
        "truncated": raw[: len(raw) // 2],
        "empty": b"",
        "garbage": b"not a zip file at all" * 10,
        "flipped": raw[:200] + bytes([raw[200] ^ 0xFF]) + raw[201:],  # inside the Y_c member
    }
    for name, content in cases.items():
        bad = tmp_path / f"{name}.npz"
        bad.write_bytes(content)
        with pytest.raises(StateFileError, match="corrupt|truncated|checksum"):
            TurnstileLRF.load(bad)
    # an edited array with the old checksum
    edited = tmp_path / "edited.npz"
    edited.write_bytes(raw)
    Y = state_arrays(st)[0]
    Y[0, 0] += 1e-12
    _rewrite(edited, Y_c=Y)
    with pytest.raises(StateFileError, match="checksum mismatch"):
        TurnstileLRF.load(edited)
    # a consistent file of another format version
    future = tmp_path / "future.npz"
    future.write_bytes(raw)
    _rewrite(future, format_version=np.array(STATE_FORMAT_VERSION + 1))
    with pytest.raises(StateFileError, match="format version"):
        TurnstileLRF.load(future)
    # a member missing
    partial = tmp_path / "partial.npz"
    with np.load(path) as f:
        np.savez(partial, **{k: f[k] for k in f.files if k != "checksum"})
    with pytest.raises(StateFileError, match="lacks"):
        TurnstileLRF.load(partial)
    # arrays that do not fit the configuration, with a valid checksum
    wrong = tmp_path / "wrong.npz"
    wrong.write_bytes(raw)
    with np.load(path) as f:
        cfg, status, pub = str(f["config"][()]), str(f["status"][()]), str(f["publication"][()])
    Y2, Z2 = state_arrays(st)[0][:-1], state_arrays(st)[1]
    _rewrite(wrong, Y_c=Y2, checksum=np.array(state_checksum(cfg, status, pub, {"Y_c": Y2, "Z": Z2},
                                                                      st.privacy.noise_source)))
    with pytest.raises(StateFileError, match="do not fit"):
        TurnstileLRF.load(wrong)
    npy = tmp_path / "a.npy"
    np.save(npy, state_arrays(st)[0])
    with pytest.raises(StateFileError, match=r"\.npy"):
        TurnstileLRF.load(npy)
    with pytest.raises(FileNotFoundError):
        TurnstileLRF.load(tmp_path / "missing.npz")
    assert np.array_equal(state_arrays(TurnstileLRF.load(path))[0], state_arrays(st)[0])  # original fine


def test_save_interrupted_before_replace_keeps_previous_file(tmp_path, monkeypatch):
    st = make_state()
    path = st.save(tmp_path / "s.npz")
    before = path.read_bytes()
    Y_before = state_arrays(st)[0]
    st.update_many([1, 2], [3, 4], [5.0, 6.0])

    def crash(*args, **kwargs):
        raise OSError("simulated crash before os.replace")

    monkeypatch.setattr("dpspectral.lowrank._streaming.os.replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        st.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert np.array_equal(state_arrays(TurnstileLRF.load(path))[0], Y_before)
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]  # the temporary file was removed

    def half_write(file, **arrays):  # dies in the middle of writing the temporary file
        file.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", half_write)
    with pytest.raises(KeyboardInterrupt):
        st.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]


# -- crash between updates: a subprocess that saves, then dies -------------------------------------

CRASH_SHAPE = (90, 60)
BATCH = 20_000
BATCH_SRC = textwrap.dedent(f"""
    import numpy as np

    def batch(b):
        r = np.random.default_rng([2024, b])
        return (r.integers(0, {CRASH_SHAPE[0]}, {BATCH}), r.integers(0, {CRASH_SHAPE[1]}, {BATCH}),
                r.normal(size={BATCH}))

    def new_state():
        from dpspectral.lowrank._streaming import TurnstileLRF
        return TurnstileLRF({CRASH_SHAPE}, 3, epsilon=1.0, delta=1e-6, sketch_seed=17, random_state=23)
""")
CHILD_SRC = BATCH_SRC + textwrap.dedent("""
    import os, sys
    path, mode = sys.argv[1], sys.argv[2]
    st = new_state()
    b = 0
    while b < 100_000:
        st.update_many(*batch(b))
        b += 1
        if mode == "exit":
            if b == 3:
                st.save(path)
                print("saved", b, flush=True)
            if b == 5:
                os._exit(1)  # dies without saving batches 3 and 4
        elif b % 3 == 0:
            st.save(path)
            print("saved", b, flush=True)
""")


def _reference(n_batches: int):
    ns: dict = {}
    exec(BATCH_SRC, ns)
    ref = ns["new_state"]()
    for b in range(n_batches):
        ref.update_many(*ns["batch"](b))
    return ref


def _child(path: Path, mode: str) -> subprocess.Popen:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", CHILD_SRC, str(path), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_crash_after_save_loses_nothing_saved(tmp_path):
    path = tmp_path / "state.npz"
    proc = _child(path, "exit")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert out.split() == ["saved", "3"]
    back = TurnstileLRF.load(path)
    ref = _reference(3)
    assert back._config == ref._config
    for a, b in zip(state_arrays(back), state_arrays(ref), strict=True):
        assert np.array_equal(a, b)


def test_sigkill_mid_stream_loses_nothing_saved(tmp_path):
    path = tmp_path / "state.npz"
    proc = _child(path, "kill")
    saved = []
    try:
        assert proc.stdout is not None
        while len(saved) < 4:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "child ended"
            saved.append(int(line.split()[1]))
        time.sleep(float(np.random.default_rng(7).uniform(0.0, 0.05)))  # somewhere in later updates / saves
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # only complete lines count: the kill may cut the child's last "saved N" line short
    complete = rest.split("\n")[:-1]
    saved += [int(m.group(1)) for line in complete if (m := re.fullmatch(r"saved (\d+)", line.strip()))]
    back = TurnstileLRF.load(path)  # whatever stage the kill hit, the file is a complete state
    # the file holds no update count: it is the state after the last reported save, or after the next
    # save whose line the kill cut (saves every 3 batches)
    Y, Z = state_arrays(back)
    matches = [b for b in (saved[-1], saved[-1] + 3)
               if all(np.array_equal(x, y) for x, y in zip((Y, Z), state_arrays(_reference(b)), strict=True))]
    assert matches  # every reported save is there, and the file is one complete state


# ----------------------------------------------------------------------------------------------
# zero-noise limit
# ----------------------------------------------------------------------------------------------


def low_rank_plus_noise(m: int, n: int, k: int, rng: np.random.Generator, scale: float = 0.05) -> np.ndarray:
    L = rng.normal(size=(m, k)) * np.linspace(10, 4, k)
    return L @ rng.normal(size=(k, n)) + scale * rng.normal(size=(m, n))


def best_rank_k_error(A: np.ndarray, k: int) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.sqrt(np.sum(s[k:] ** 2)))


@pytest.mark.parametrize("shape", [(60, 90), (90, 60)])
def test_zero_noise_limit_is_near_optimal(shape):
    rng = np.random.default_rng(3)
    A = low_rank_plus_noise(*shape, 4, rng)
    st = TurnstileLRF(shape, 4, epsilon=1e7, delta=1e-6, random_state=4, sketch_seed=SEED)  # a fixed sketch
    st.update_many(*as_entries(A, rng))
    res = st.release()
    opt = best_rank_k_error(A, 4)
    assert np.linalg.norm(A - res.reconstruct()) <= 1.25 * opt
    np.testing.assert_allclose(res.U.T @ res.U, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(res.V.T @ res.V, np.eye(4), atol=1e-10)


# ----------------------------------------------------------------------------------------------
# Private-Covariance-LRF
# ----------------------------------------------------------------------------------------------


def test_covariance_state_equals_dense_sketch_of_ata(float_noise):
    rng = np.random.default_rng(7)
    d, k = 14, 3
    X = rng.normal(size=(300, d)) * 0.4
    X[:10] *= 5  # some rows above the bound: clipped
    cov = CovarianceLRF(d, k, random_state=8, sketch_seed=SEED, **KW)
    for row in X[:5]:
        cov.insert(row)
    cov.insert_many(X[5:200])
    cov.insert_many(X[200:])
    assert cov._n_rows == 300 and not hasattr(cov, "n_rows")  # n is private under add/remove
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, 1.0 / norms)[:, None]
    C = Xc.T @ Xc
    sizes = sketch_sizes(k, 0.25, d, d)
    b = sensitivity_norm(1.0) ** 2
    assert cov.bound == b
    assert cov.sigma == frobenius_noise(1.0, 1e-6, sizes, bound=b, shape=(d, d)).sigma
    N1, N2 = reference_noise(8, d, d, sizes.t, sizes.v, cov.sigma)
    Phi, S = frobenius_sketches(d, d, sizes, SEED)
    Y, Z = state_arrays(cov)
    np.testing.assert_allclose(Y, C @ Phi + N1, rtol=0, atol=1e-11)
    np.testing.assert_allclose(Z, S @ C + N2, rtol=0, atol=1e-11)
    res = cov.release(singular_values="raw")
    U, s, V = frobenius_release(Y, Z, S, k)
    assert np.array_equal(res.U, U) and np.array_equal(res.S, s) and np.array_equal(res.V, V)
    assert "n_rows" not in res.diagnostics  # n is private under add/remove
    assert res.privacy.relation.value == "add_remove" and res.privacy.certified


def test_covariance_replace_one_bound_and_sensitivity():
    rng = np.random.default_rng(0)
    # ||a' a'^T - a a^T||_F <= sqrt(2) for unit-bounded rows, attained by orthogonal unit rows
    worst = 0.0
    for _ in range(2000):
        a, c = rng.normal(size=(2, 6))
        a *= rng.uniform(0, 1) / np.linalg.norm(a)
        c *= rng.uniform(0, 1) / np.linalg.norm(c)
        worst = max(worst, float(np.linalg.norm(np.outer(c, c) - np.outer(a, a))))
    assert worst <= math.sqrt(2)
    e1, e2 = np.eye(6)[:2]
    assert np.linalg.norm(np.outer(e1, e1) - np.outer(e2, e2)) == pytest.approx(math.sqrt(2))
    ar = CovarianceLRF(10, 2, row_norm=2.0, random_state=0, **KW)
    r1 = CovarianceLRF(10, 2, row_norm=2.0, relation="replace_one", random_state=0, **KW)
    assert ar.bound == pytest.approx(4.0) and r1.bound == pytest.approx(4.0 * math.sqrt(2))
    assert r1.sigma / ar.sigma == pytest.approx(math.sqrt(2))
    r1.insert_many(rng.normal(size=(5, 10)))
    assert r1.release().diagnostics["n_rows"] == 5


def test_covariance_bad_rows_leave_state_unchanged():
    cov = CovarianceLRF(5, 2, on_norm_violation="raise", random_state=0, **KW)
    cov.insert([0.1, 0.2, 0.3, 0.0, 0.0])
    Y, Z = state_arrays(cov)
    for bad, match in [
        (np.array([[0.1] * 5, [1.0] * 5]), "above row_norm"),
        (np.array([[0.1] * 5, [np.nan] * 5]), "NaN"),
        (np.ones((2, 4)) * 0.1, "shape"),
        (np.ones((2, 2, 5)), "shape"),
    ]:
        with pytest.raises(ValueError, match=match) as info:
            cov.insert_many(bad)
        assert "row 1" not in str(info.value)  # no row named
        Y2, Z2 = state_arrays(cov)
        assert np.array_equal(Y2, Y) and np.array_equal(Z2, Z) and cov._n_rows == 1
    with pytest.raises(ValueError, match="relation"):
        CovarianceLRF(5, 2, relation="priv2", **KW)
    with pytest.raises(ValueError, match="'k' parameter"):
        CovarianceLRF(5, 6, **KW)


def test_covariance_zero_noise_limit(lowrank_data):
    X = lowrank_data
    cov = CovarianceLRF(X.shape[1], 3, epsilon=1e9, delta=1e-6, random_state=1, sketch_seed=SEED)
    cov.insert_many(X)
    res = cov.release()
    C = X.T @ X
    w, E = np.linalg.eigh(C)
    top = E[:, ::-1][:, :3]
    assert np.linalg.norm(res.U @ res.U.T - top @ top.T) < 1e-3
    assert np.linalg.norm(np.abs(res.U.T @ res.V) - np.eye(3)) < 1e-3  # U = V up to signs
    np.testing.assert_allclose(res.S, w[::-1][:3], rtol=1e-3)  # S-weighted solve: (1 + alpha)-optimal
    M = (res.U * res.S) @ res.V.T
    assert np.linalg.norm(C - M) <= 1.25 * np.sqrt(np.sum(w[:-3] ** 2))  # (1 + alpha)-optimal


# ----------------------------------------------------------------------------------------------
# continual release
# ----------------------------------------------------------------------------------------------


def test_dyadic_decomposition():
    assert [tree_levels(T) for T in (1, 2, 3, 4, 5, 13, 16, 17)] == [1, 2, 3, 3, 4, 5, 5, 6]
    for T in range(1, 70):
        L = tree_levels(T)
        for tau in range(1, T + 1):
            nodes = dyadic_nodes(tau)
            assert len(nodes) == bin(tau).count("1") <= L
            steps = [s for lvl, j in nodes for s in range(j * 2**lvl + 1, (j + 1) * 2**lvl + 1)]
            assert steps == list(range(1, tau + 1))  # disjoint, in time order
            assert all(lvl < L for lvl, _ in nodes)
    assert dyadic_nodes(0) == []
    with pytest.raises(ValueError):
        tree_levels(0)


@pytest.mark.parametrize("shape", [(20, 30), (30, 20)])
def test_continual_release_equals_one_shot_of_prefix(shape):
    T, k = 13, 3
    rng = np.random.default_rng(11)
    cont = ContinualLRF(shape, k, T, random_state=5, sketch_seed=SEED, **KW)
    L = cont.levels
    assert L == 5
    sizes = sketch_sizes(k, 0.25, min(shape), min(shape))
    inner = (min(shape), max(shape))
    one_level = frobenius_noise(1.0, 1e-6, sizes, shape=inner)
    tree = frobenius_noise(1.0, 1e-6, sizes, levels=L, shape=inner)
    assert cont.sigma == tree.sigma
    assert cont.sensitivity == pytest.approx(math.sqrt(L) * one_level.sensitivity)
    assert cont.privacy.certified
    with pytest.raises(ValueError, match="not shown before the horizon"):
        cont.sketches()
    Phi, S = cont._Phi, cont._S  # test introspection
    A = np.zeros(shape)
    for tau in range(1, T + 1):
        b = 0 if tau == 4 else int(rng.integers(1, 40))  # step 4 is empty
        rows, cols, vals = rng.integers(0, shape[0], b), rng.integers(0, shape[1], b), rng.normal(size=b)
        cont.step(rows, cols, vals)
        np.add.at(A, (rows, cols), vals)
        assert cont.time == tau and cont.nodes == dyadic_nodes(tau) and len(cont._nodes) <= L
        B = A.T if cont.transposed else A
        Y = B @ Phi
        Z = S @ B
        for lvl, j in dyadic_nodes(tau):
            N1, N2 = cont._node_noise(lvl, j)
            Y, Z = Y + N1, Z + N2
        Yc, Zc = cont.current_sketches()
        np.testing.assert_allclose(Yc, Y, rtol=0, atol=1e-10)
        np.testing.assert_allclose(Zc, Z, rtol=0, atol=1e-10)
        res = cont.release(singular_values="raw")
        U, s, V = oriented_release(Y, Z, np.asarray(S), k, cont.transposed)
        np.testing.assert_allclose(res.S, s, rtol=1e-10)
        np.testing.assert_allclose((res.U * res.S) @ res.V.T, (U * s) @ V.T, rtol=0, atol=1e-10 * s[0])
        # noise of the release: popcount(tau) nodes, std sqrt(popcount) sigma <= L sigma
        pop = bin(tau).count("1")
        resid = np.concatenate([(Yc - B @ Phi).ravel(), (Zc - S @ B).ravel()])
        assert res.diagnostics["noise_std"] == pytest.approx(math.sqrt(pop) * cont.sigma)
        assert res.diagnostics["noise_std"] <= L * cont.sigma
        # the residual is i.i.d. N(0, pop sigma^2): two-sided chi-square test of its variance,
        # false-positive rate 1e-6 per step (26 steps in all: < 3e-5 for the test)
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], resid.size)
        assert lo <= float(np.sum(resid**2)) / (pop * cont.sigma**2) <= hi
    with pytest.raises(ValueError, match="horizon"):
        cont.step([0], [0], [1.0])
    assert cont.time == T


def test_continual_bad_step_keeps_time_and_state():
    cont = ContinualLRF((10, 12), 2, 8, random_state=0, **KW)
    with pytest.raises(ValueError, match="nothing to release"):
        cont.release()
    cont.step([1], [2], [3.0])
    Y, Z = cont.current_sketches()
    with pytest.raises(ValueError, match="out of range"):
        cont.step([1, 10], [2, 2], [1.0, 1.0])
    with pytest.raises(ValueError, match="NaN or infinity"):
        cont.step([1], [2], [np.nan])
    assert cont.time == 1
    Y2, Z2 = cont.current_sketches()
    assert np.array_equal(Y, Y2) and np.array_equal(Z, Z2)
    results = list(cont.stream([([0], [0], [1.0]), ([], [], [])]))
    assert [r.diagnostics["time"] for r in results] == [2, 3]


def test_continual_accountant_and_seeds():
    acc = Accountant(1.0, 1e-6)
    a = ContinualLRF((10, 12), 2, 8, accountant=acc, sketch_seed=1, noise_seed=2, **KW)
    with pytest.raises(BudgetExceededError):
        ContinualLRF((10, 12), 2, 8, accountant=acc, **KW)
    b = ContinualLRF((10, 12), 2, 8, sketch_seed=1, noise_seed=2, **KW)
    for st in (a, b):
        st.step([1, 2], [3, 4], [1.0, 2.0])
        st.step([5], [6], [1.0])
    assert np.array_equal(a.current_sketches()[0], b.current_sketches()[0])
    assert "noise_seed" not in a.release().diagnostics
    c = ContinualLRF((10, 12), 2, 8, sketch_seed=1, noise_seed=3, **KW)
    assert not np.array_equal(a._node_noise(0, 0)[0], c._node_noise(0, 0)[0])


def test_continual_zero_noise_limit():
    rng = np.random.default_rng(2)
    A = low_rank_plus_noise(40, 60, 3, rng)
    rows, cols, vals = as_entries(A, rng)
    T = 6
    cont = ContinualLRF(A.shape, 3, T, epsilon=1e7, delta=1e-6, random_state=0, sketch_seed=SEED)
    for chunk in np.array_split(np.arange(rows.size), T):
        cont.step(rows[chunk], cols[chunk], vals[chunk])
    res = cont.release()
    assert np.linalg.norm(A - res.reconstruct()) <= 1.25 * best_rank_k_error(A, 3)


def test_state_files_are_zip_archives(tmp_path):
    path = make_state().save(tmp_path / "s.npz")
    keys = ("Y_c", "Z", "config", "status", "publication", "format_version", "checksum",
            "noise_source")  # a seeded state draws exact noise by default, and says so
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == sorted(f"{k}.npy" for k in (*keys, "notice"))  # a secret checkpoint
    path = make_state().save(tmp_path / "p.npz", publish=True)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == sorted(f"{k}.npy" for k in keys)
