"""The release pipeline's shared steps: validate the whole input, charge, failed releases, public seeds."""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral.privacy import Accountant, BudgetExceededError, Relation
from dpspectral.privacy._pipeline import (
    NonPrivateDataError,
    charge,
    norm_violation_error,
    not_finite_error,
    public_seed,
    validate_rows,
)


def _ok(n: int = 50, d: int = 4) -> np.ndarray:
    X = np.random.default_rng(0).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * 0.9


@pytest.mark.parametrize("kind", ["dense", "sparse", "list", "memmap"])
def test_validate_rows_checks_every_row(kind, tmp_path):
    X = _ok()
    bad_nan = X.copy()
    bad_nan[37, 2] = np.nan
    bad_norm = X.copy()
    bad_norm[41] *= 3.0

    def wrap(A):
        if kind == "sparse":
            return sp.csr_matrix(A)
        if kind == "list":
            return [A[:20], A[20:]]
        if kind == "memmap":
            mm = np.lib.format.open_memmap(tmp_path / f"x{id(A)}.npy", mode="w+", shape=A.shape)
            mm[:] = A
            return mm
        return A

    assert validate_rows(wrap(X), row_norm=1.0, on_norm_violation="raise", owner="f") is True
    with pytest.raises(NonPrivateDataError) as err:
        validate_rows(wrap(bad_nan), row_norm=1.0, owner="f")
    # the message names neither the row nor anything about it
    assert "37" not in str(err.value) and "NaN or infinity" in str(err.value)
    with pytest.raises(NonPrivateDataError) as err:
        validate_rows(wrap(bad_norm), row_norm=1.0, on_norm_violation="raise", owner="f")
    assert "41" not in str(err.value) and "2.7" not in str(err.value)
    # with clipping a row over the bound is fine
    assert validate_rows(wrap(bad_norm), row_norm=1.0, on_norm_violation="clip", owner="f") is True


def test_validate_rows_center_and_overflow():
    X = _ok() + 5.0  # centred by the public centre (5, ..., 5) the rows are within the bound
    assert validate_rows(X, row_norm=1.0, on_norm_violation="raise", center=np.full(4, 5.0))
    with pytest.raises(NonPrivateDataError):
        validate_rows(X, row_norm=1.0, on_norm_violation="raise")
    huge = _ok()
    huge[3, 0] = 1e300  # finite, but its square overflows: over any bound
    with pytest.raises(NonPrivateDataError):
        validate_rows(huge, row_norm=1e10, on_norm_violation="raise")


def test_validate_rows_streams_are_not_read():
    consumed = []

    def gen():
        consumed.append(1)
        yield _ok()

    it = gen()
    assert validate_rows(it, row_norm=1.0, on_norm_violation="raise") is False
    assert consumed == []  # the stream is read once, later, by the mechanism
    assert validate_rows(gen, row_norm=1.0) is False


def test_validate_rows_types():
    with pytest.raises(TypeError, match="numeric"):
        validate_rows(np.array([["a", "b"]]), row_norm=1.0)
    with pytest.raises(ValueError, match="2-D"):
        validate_rows(np.ones(3), row_norm=1.0)


def test_validate_rows_dask():
    da = pytest.importorskip("dask.array")
    X = _ok()
    assert validate_rows(da.from_array(X, chunks=(10, 4)), row_norm=1.0, on_norm_violation="raise")
    X[13, 1] = np.inf
    with pytest.raises(NonPrivateDataError):
        validate_rows(da.from_array(X, chunks=(10, 4)), row_norm=1.0)


def test_charge_records_then_marks_a_failed_release():
    acc = Accountant(epsilon=2.0, delta=1e-5)
    event = dp_accounting.GaussianDpEvent(3.0)
    with charge(acc, [event], Relation.REPLACE_ONE, "ok") as events:
        assert events == [event]
    assert [e.status for e in acc.entries] == ["released"]
    with pytest.raises(RuntimeError):
        with charge(acc, [event], Relation.REPLACE_ONE, "boom"):
            raise RuntimeError("a failure after the charge")
    assert [e.status for e in acc.entries] == ["released", "failed: RuntimeError"]
    assert acc.failures == (acc.entries[1],)
    spent = acc.epsilon_spent()
    assert spent > 0  # the failed release stays charged
    # a refusal records nothing and runs nothing
    ran = []
    with pytest.raises(BudgetExceededError):
        with charge(acc, [dp_accounting.GaussianDpEvent(0.01)], Relation.REPLACE_ONE, "big"):
            ran.append(1)
    assert ran == [] and len(acc.entries) == 2 and acc.epsilon_spent() == spent


def test_charge_without_accountant():
    event = dp_accounting.GaussianDpEvent(3.0)
    with charge(None, [event], Relation.ADD_REMOVE, "x") as events:
        assert events == [event]


def test_public_seed_is_independent_of_any_generator():
    np.random.seed(0)  # noqa: NPY002 (the legacy global state must not decide a public seed)
    a, b = public_seed(), public_seed()
    assert a != b and 0 <= a < 2**63  # OS entropy: equal with probability 2^-63
    assert public_seed(12) == 12
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError):
            public_seed(bad)


def test_error_texts_name_no_data():
    assert "row" in str(not_finite_error("f")).lower()
    msg = str(norm_violation_error("analyze_gauss", 2.0))
    assert msg.startswith("analyze_gauss:") and "row_norm=2" in msg


def test_every_report_states_that_random_state_is_a_secret():
    from dpspectral.pca._covariance import analyze_gauss
    from dpspectral.privacy._accounting import RANDOM_STATE_NOTE

    res = analyze_gauss(_ok(), 2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    assert RANDOM_STATE_NOTE in res.privacy.notes
    assert "secret" in RANDOM_STATE_NOTE
