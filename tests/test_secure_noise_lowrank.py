"""``random_state="secure"`` in every low-rank mechanism.

Each public function and streaming state of :mod:`dpspectral.lowrank` runs with the secure noise source
(OS entropy, exact discrete Gaussian on a fine grid): it answers, its report says
``noise_source == "secure"`` with the same certified guarantee as the seeded run, and two secure runs
differ (the noise is fresh, not seeded). The secure state files record their source (covered by the
checksum); the continual tree refuses a ``noise_seed`` with the secure source; the noise a secure state
draws has the planned scale (a chi-square test with a stated false-positive rate). Small data: the
exact samplers run in pure Python.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import dpspectral
from dpspectral import Accountant
from dpspectral.lowrank import (
    ContinualLRF,
    CovarianceLRF,
    RangeFinder,
    Sketch,
    TurnstileLRF,
    continual_lrf,
    covariance_lrf,
    optimal_space_lrf,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    turnstile_lrf,
)
from dpspectral.lowrank._hardt_roth import hardt_roth
from dpspectral.lowrank._streaming import StateFileError

KW = dict(epsilon=1.0, delta=1e-6)
A = np.random.default_rng(1).uniform(size=(24, 16)) * 0.2


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)
        return fn(*args, **kwargs)


FUNCTIONS = [
    (private_frobenius_lrf, {}),
    (private_frobenius_lrf, {"calibration": "paper"}),
    (private_space_optimal_lrf, {}),
    (private_space_optimal_lrf, {"calibration": "paper"}),
    (hardt_roth, {}),
    (hardt_roth, {"row_change": 1.0, "calibration": "paper"}),
    (covariance_lrf, {"row_norm": 1.0}),
    (turnstile_lrf, {}),
    (continual_lrf, {}),
]
IDS = [f"{fn.__name__}-{'-'.join(map(str, extra.values())) or 'default'}" for fn, extra in FUNCTIONS]


@pytest.mark.parametrize("fn, extra", FUNCTIONS, ids=IDS)
def test_secure_runs_report_their_source_and_differ(fn, extra):
    acc = Accountant(100.0, 1e-3)
    a = _quiet(fn, A, 2, random_state="secure", accountant=acc, **extra, **KW)
    b = _quiet(fn, A, 2, random_state="secure", **extra, **KW)
    seeded = _quiet(fn, A, 2, random_state=0, **extra, **KW)
    assert a.privacy.noise_source == "secure" and b.privacy.noise_source == "secure"
    assert seeded.privacy.noise_source == "exact"
    # the same plan, the same guarantee: only the source of the noise changed
    assert a.privacy.events == seeded.privacy.events
    assert a.privacy.epsilon == seeded.privacy.epsilon and a.privacy.certified == seeded.privacy.certified
    assert len(acc.entries) == 1  # charged once, like the seeded run
    # (hardt_roth releases no U; small released values may be shrunk to 0: compare the bases)
    assert a.V.shape == seeded.V.shape and np.isfinite(a.V).all() and np.isfinite(a.S).all()
    assert not np.array_equal(a.V, b.V)  # fresh OS entropy each run


def test_non_private_reference_accepts_the_secure_source():
    a = optimal_space_lrf(A, 2, random_state="secure")
    b = optimal_space_lrf(A, 2, random_state="secure")
    assert a.privacy is None and a.U.shape == (24, 2)
    assert not np.array_equal(a.U, b.U)  # sketches from OS entropy


def test_secure_turnstile_state_file_records_its_source(tmp_path: Path):
    st = TurnstileLRF((12, 9), 2, random_state="secure", **KW)
    st.update_many([0, 3, 11], [1, 2, 8], [1.0, -0.5, 0.25])
    assert st.privacy.noise_source == "secure"
    path = st.save(tmp_path / "s.npz")
    with np.load(path, allow_pickle=False) as f:
        assert str(f["noise_source"][()]) == "secure"
        data = {k: f[k] for k in f.files}
    back = TurnstileLRF.load(path)
    assert back.privacy.noise_source == "secure" and not back.published
    assert np.array_equal(back.release().U, st.release().U)
    # the source is covered by the checksum: a file that claims another source is refused
    data["noise_source"] = np.array("seeded")
    np.savez(tmp_path / "edited.npz", **data)
    with pytest.raises(StateFileError, match="checksum mismatch"):
        TurnstileLRF.load(tmp_path / "edited.npz")
    # the published snapshot is rounded to the noise's grid (the data were added after the draw)
    grid = 2.0 ** (np.floor(np.log2(st.sigma)) - 30)
    assert not np.array_equal(np.rint(st._Y / grid) * grid, st._Y)  # the raw state is not on it
    published = st.save(tmp_path / "p.npz", publish=True)
    for Y in (st.Y_c, np.load(published)["Y_c"]):
        assert np.array_equal(np.rint(Y / grid) * grid, Y)
        assert np.max(np.abs(Y - st._Y)) <= grid / 2
    seeded = TurnstileLRF((12, 9), 2, random_state=0, **KW).save(tmp_path / "plain.npz")
    with np.load(seeded, allow_pickle=False) as f:
        assert str(f["noise_source"][()]) == "exact"  # a seeded run draws exact noise by default
    assert TurnstileLRF.load(seeded).privacy.noise_source == "exact"


def test_secure_covariance_state_and_two_states_differ():
    states = [CovarianceLRF(5, 2, random_state="secure", **KW) for _ in range(2)]
    for cov in states:
        cov.insert_many(np.full((3, 5), 0.2))
        assert cov.privacy.noise_source == "secure"
    assert not np.array_equal(states[0].release().V, states[1].release().V)


def test_secure_continual_tree_releases_at_every_step():
    A_small = np.random.default_rng(2).uniform(size=(6, 5))
    trees = [ContinualLRF(A_small.shape, 2, 6, random_state="secure", sketch_seed=3, **KW) for _ in range(2)]
    for tree in trees:
        for i in range(6):
            tree.step(np.full(5, i), np.arange(5), A_small[i])
            res = tree.release()
            assert res.privacy.noise_source == "secure" and res.diagnostics["time"] == i + 1
        assert set(tree._exact) == set(tree._nodes)  # the exact sums of the kept nodes only
    assert not np.array_equal(trees[0].release().V, trees[1].release().V)
    # the kept exact sums add up to the exact sketches of the whole prefix (the sketches are public
    # at the horizon); the state is kept for A^T since m > n
    Phi, S = trees[0].sketches()
    Y_all = sum(y for y, _ in trees[0]._exact.values())
    ZT_all = sum(zt for _, zt in trees[0]._exact.values())
    B = A_small.T
    np.testing.assert_allclose(Y_all, B @ Phi, atol=1e-9)
    np.testing.assert_allclose(ZT_all, (S @ B).T, atol=1e-9)


def test_secure_continual_refuses_a_noise_seed():
    acc = Accountant(100.0, 1e-3)
    with pytest.raises(ValueError, match="noise_seed") as info:
        ContinualLRF((6, 5), 2, 6, random_state="secure", noise_seed=12345, accountant=acc, **KW)
    assert "12345" not in str(info.value)  # the (secret) seed is never echoed
    assert acc.entries == ()  # refused before the charge


def test_secure_state_noise_has_the_planned_scale():
    """The initial state is the noise alone: i.i.d. with the planned std (widened by < 1e-6).

    Two-sided chi-square test on the sum of squares; false-positive rate 1e-6.
    """
    st = TurnstileLRF((20, 30), 2, random_state="secure", **KW)
    noise = np.concatenate([st._Y.ravel(), st._ZT.ravel()])
    lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], noise.size)
    assert lo <= float(np.sum(noise**2)) / st.sigma**2 <= hi
    grid = 2.0 ** (np.floor(np.log2(st.sigma)) - 30)
    assert np.array_equal(np.rint(noise / grid) * grid, noise)  # on the secure grid: no low-order bits


def test_no_ledger_call_outside_the_pipeline():
    """No ``accountant.<method>(`` call is left in the low-rank mechanisms (the pipeline charges)."""
    folder = Path(dpspectral.__file__).parent / "lowrank"
    for path in folder.glob("*.py"):
        assert not re.search(r"accountant\.\w+\(", path.read_text()), path.name


# ----------------------------------------------------------------------------------------------
# the parameters are declared as constraint tables (checked before anything is read or charged)
# ----------------------------------------------------------------------------------------------

TABLED = [
    (private_frobenius_lrf, "private_frobenius_lrf", lambda **kw: private_frobenius_lrf(A, 2, **kw)),
    (private_space_optimal_lrf, "private_space_optimal_lrf",
     lambda **kw: private_space_optimal_lrf(A, 2, **kw)),
    (hardt_roth, "hardt_roth", lambda **kw: hardt_roth(A, 2, **kw)),
    (covariance_lrf, "covariance_lrf", lambda **kw: covariance_lrf(A, 2, **kw)),
    (turnstile_lrf, "turnstile_lrf", lambda **kw: turnstile_lrf(A, 2, **kw)),
    (continual_lrf, "continual_lrf", lambda **kw: continual_lrf(A, 2, **kw)),
    (TurnstileLRF.__init__, "TurnstileLRF", lambda **kw: TurnstileLRF((6, 5), 2, **kw)),
    (CovarianceLRF.__init__, "CovarianceLRF", lambda **kw: CovarianceLRF(5, 2, **kw)),
    (ContinualLRF.__init__, "ContinualLRF", lambda **kw: ContinualLRF((6, 5), 2, 3, **kw)),
]


@pytest.mark.parametrize("fn, owner, call", TABLED, ids=[owner for _, owner, _ in TABLED])
def test_parameters_are_checked_from_the_table_before_any_charge(fn, owner, call):
    table = fn.parameter_constraints
    # the failure share of the sketches: Hardt-Roth's is one of its range finder's constants
    group, share = (("range_finder", RangeFinder(failure_share=1.0)) if owner == "hardt_roth"
                    else ("sketch", Sketch(failure_share=1.0)))
    assert {"epsilon", "delta", "calibration", group, "random_state"} <= set(table)
    for bad, words in [({"epsilon": -1.0}, "'epsilon' parameter"),
                       ({group: share}, f"'{group}.failure_share' parameter"),
                       ({"random_state": "os"}, "'random_state' parameter")]:
        acc = Accountant(100.0, 1e-3)
        with pytest.raises(ValueError, match=re.escape(f"The {words} of {owner} must be")):
            call(**{**KW, "accountant": acc, **bad})
        assert acc.entries == ()
