"""Row clipping at very small and very large public bounds C.

A norm computed as ``sqrt(sum x_j^2)`` is accurate to a relative rounding error only while the squares
are normal numbers: at C = 1e-24 (float32) or 1e-160 (float64) they are subnormal or zero, and at
C = 1e200 (float64) they overflow. Every place that compares a row norm with C scales the rows by a
public power of two first (exact in binary floating point), so rows above C are clipped or refused at
any C in the supported range. Each clipped row's norm is checked exactly (``fractions.Fraction``) against
the bound that sensitivities use, ``sensitivity_norm(C)``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral._moments import accumulate
from dpspectral.privacy._clipping import clip_rows, norm_scale, sensitivity_norm
from dpspectral.privacy._pipeline import NonPrivateDataError, validate_rows

#: (dtype, C): float32 where its squares are subnormal (1e-21, 1e-24, 1e-30) or overflow (1e30); float64
#: where they are (1e-160, 1e-300) or overflow (1e200, 1e300); C = 1 and 1e-21 as ordinary cases.
CASES = [
    ("float32", 1.0), ("float32", 1e-21), ("float32", 1e-24), ("float32", 1e-30), ("float32", 1e30),
    ("float64", 1.0), ("float64", 1e-21), ("float64", 1e-24), ("float64", 1e-160), ("float64", 1e-300),
    ("float64", 1e200), ("float64", 1e300),
]
IDS = [f"{t}-{c:g}" for t, c in CASES]
ABOVE = (1.0001, 4.5)  # rows above the bound, in units of C
D = 20


def _unit_rows(m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m, D))
    return U / np.linalg.norm(U, axis=1, keepdims=True)


def _rows(dtype: str, C: float, factors: tuple[float, ...], seed: int = 0) -> np.ndarray:
    """Rows of norm ``f C`` (up to the dtype's rounding), built entry by entry in exact arithmetic."""
    U = _unit_rows(len(factors), seed)
    exact = [[float(Fraction(float(u)) * Fraction(f) * Fraction(C)) for u in row]
             for row, f in zip(U, factors, strict=True)]
    return np.array(exact, dtype=dtype)


def _sq_ratio(row: np.ndarray, C: float) -> Fraction:
    """The exact ``||row||^2 / C^2`` of the stored values."""
    return sum((Fraction(float(v)) ** 2 for v in np.asarray(row, dtype=np.float64).ravel()), Fraction(0)) / (
        Fraction(C) ** 2
    )


def _check_clipped(out: np.ndarray, given: np.ndarray, C: float) -> None:
    """Every row within ``sensitivity_norm(C)`` exactly; the rows above C scaled to about C (not to 0)."""
    bound = (Fraction(sensitivity_norm(C)) / Fraction(C)) ** 2
    for row_out, row_in in zip(np.asarray(out), given, strict=True):
        r_out, r_in = _sq_ratio(row_out, C), _sq_ratio(row_in, C)
        assert r_out <= bound, float(r_out)
        if r_in > 1.0001:
            assert r_out >= Fraction(99, 100), float(r_out)  # clipped to the bound, not zeroed
        elif r_in <= Fraction(1, 2):  # well inside: untouched (rows at C may be scaled a little inside)
            assert np.array_equal(np.asarray(row_out, dtype=np.float64), row_in.astype(np.float64))


def _within(dtype: str, C: float) -> np.ndarray:
    """Rows within the bound: 0.5 C, and C itself (float64) or just inside it (float32's rounding of a
    row at C may sit above C (1 + 1e-10), which a float64 norm rightly refuses)."""
    at = 1.0 if dtype == "float64" else 1.0 - 1e-5
    X = _rows(dtype, C, (0.5, at, 0.5, at), seed=1)
    assert all(_sq_ratio(r, C) <= (Fraction(sensitivity_norm(C)) / Fraction(C)) ** 2 for r in X)
    return X


def test_norm_scale_is_a_public_power_of_two_and_one_for_ordinary_bounds():
    for C in (1e-15, 1e-3, 1.0, 7.5, 1e15):
        assert norm_scale(C) == 1.0
    for C in (1e-160, 1e-300, 1e200, 2.0 ** -700, 1e300):
        s = norm_scale(C)
        assert s == 2.0 ** round(np.log2(s))
        assert 1.0 <= C * s < 2.0
    assert norm_scale(1e-21, np.float32) != 1.0 and 1.0 <= 1e-21 * norm_scale(1e-21, np.float32) < 2.0


@pytest.mark.parametrize(("dtype", "C"), CASES, ids=IDS)
def test_clip_rows_dense_and_sparse(dtype, C):
    X = _rows(dtype, C, ABOVE + (1.0, 0.5) + ABOVE)
    out, n = clip_rows(X, C)
    _check_clipped(out, X, C)
    assert n >= 4
    if dtype == "float64":
        out, _ = clip_rows(sp.csr_matrix(X), C)
        _check_clipped(out.toarray(), X, C)
    for row in X[[0, 1]]:
        with pytest.raises(NonPrivateDataError):
            clip_rows(row[None, :], C, on_norm_violation="raise")
    W = _within(dtype, C)
    out, n = clip_rows(W, C, on_norm_violation="raise")
    assert n == 0 and out is W


@pytest.mark.parametrize(("dtype", "C"), CASES, ids=IDS)
@pytest.mark.parametrize("source", ["array", "blocks", "dask"])
def test_accumulate_clips_every_row(dtype, C, source):
    """The covariance path's clipped accumulation (NumPy blocks, a list of blocks, a Dask array): each
    row alone, its clipped sum is the clipped row."""
    X = _rows(dtype, C, ABOVE + (1.0, 0.5))

    def wrap(A):
        if source == "blocks":
            return [A[:1], A[1:]] if A.shape[0] > 1 else [A]
        if source == "dask":
            da = pytest.importorskip("dask.array")
            return da.from_array(A, chunks=(1, D))
        return A

    for row in X:
        m = accumulate(wrap(row[None, :]), row_norm=C, want_sum=True, want_second=False)
        _check_clipped(m.sum[None, :], row[None, :].astype(np.float64), C)
    for row in X[:2]:
        with pytest.raises(NonPrivateDataError):
            accumulate(wrap(row[None, :]), row_norm=C, on_norm_violation="raise", want_sum=True)
        with pytest.raises(NonPrivateDataError):  # the validation pass
            accumulate(wrap(row[None, :]), row_norm=C, on_norm_violation="raise", want_sum=False,
                       want_second=False)
    W = _within(dtype, C)
    m = accumulate(wrap(W), row_norm=C, on_norm_violation="raise", want_sum=True, want_second=False)
    assert m.n_clipped == 0


@pytest.mark.parametrize(("dtype", "C"), CASES, ids=IDS)
@pytest.mark.parametrize("kind", ["dense", "sparse", "blocks"])
def test_validation_pass_refuses_rows_above_the_bound(dtype, C, kind):
    def wrap(A):
        if kind == "sparse":
            return sp.csr_matrix(A)
        if kind == "blocks":
            return [A[:1], A[1:]] if A.shape[0] > 1 else [A]
        return A

    for row in _rows(dtype, C, ABOVE):
        with pytest.raises(NonPrivateDataError):
            validate_rows(wrap(row[None, :]), row_norm=C, on_norm_violation="raise", owner="test")
    validate_rows(wrap(_within(dtype, C)), row_norm=C, on_norm_violation="raise", owner="test")


@pytest.mark.parametrize(("dtype", "C"), CASES, ids=IDS)
def test_device_clip_and_validation(dtype, C):
    """The array API paths (array-api-strict): the shared device clip, the clipped accumulation and the
    validation pass."""
    xps = pytest.importorskip("array_api_strict")
    from dpspectral._array_api import clip_rows_xp, config_context, to_numpy

    X = _rows(dtype, C, ABOVE + (1.0, 0.5) + ABOVE)
    clipped, norms, n_refused = clip_rows_xp(xps.asarray(X), C, xps)
    _check_clipped(to_numpy(clipped), X, C)
    assert n_refused == 4
    np.testing.assert_allclose(to_numpy(norms) / C, np.sqrt([float(_sq_ratio(r, C)) for r in X]), rtol=1e-5)
    with config_context(array_api_dispatch=True):
        for row in X[:2]:
            m = accumulate(xps.asarray(row[None, :]), row_norm=C, want_sum=True, want_second=False, xp=xps)
            _check_clipped(to_numpy(m.sum)[None, :], row[None, :], C)
            for want in (True, False):
                with pytest.raises(NonPrivateDataError):
                    accumulate(xps.asarray(row[None, :]), row_norm=C, on_norm_violation="raise",
                               want_sum=want, want_second=False, xp=xps)
        W = xps.asarray(_within(dtype, C))
        assert clip_rows_xp(W, C, xps)[2] == 0
        accumulate(W, row_norm=C, on_norm_violation="raise", want_sum=False, want_second=False, xp=xps)


@pytest.mark.parametrize(("C", "size"), [(1.0, 1e200), (1e-300, 1e5), (1e-300, 1e10), (1e300, 1e-300)],
                         ids=["1-1e200", "1e-300-1e5", "1e-300-1e10", "1e300-tiny"])
def test_rows_far_from_the_bound(C, size):
    """A row far above C (its squares, or its scaled squares, overflow) is clipped (or mapped to zero when
    its clip factor underflows) and refused under "raise", on every path; a tiny row is left as it is.
    Its finite norm never reads as a NaN or infinity (which would refuse finite data)."""
    X = np.vstack([_unit_rows(1, 3) * size, _unit_rows(1, 4) * (0.5 * C)])
    above = size > C
    check = _check_clipped
    if size / C > 1e308:  # beyond float64's range above the bound: the row is mapped to zero
        def check(out, given, C):
            assert not np.asarray(out)[0].any()
            _check_clipped(np.asarray(out)[1:], given[1:], C)
    out, n = clip_rows(X, C)
    assert n == int(above)
    check(out, X, C)
    m = accumulate(X, row_norm=C, want_sum=True, want_second=False)
    assert m.n_clipped == int(above)
    if above:
        with pytest.raises(NonPrivateDataError):
            validate_rows(X, row_norm=C, on_norm_violation="raise", owner="test")
    xps = pytest.importorskip("array_api_strict")
    from dpspectral._array_api import clip_rows_xp, config_context, to_numpy

    clipped, norms, n_refused = clip_rows_xp(xps.asarray(X), C, xps)
    assert n_refused == int(above) and np.isfinite(to_numpy(norms)).all()
    check(to_numpy(clipped), X, C)
    with config_context(array_api_dispatch=True):
        m = accumulate(xps.asarray(X), row_norm=C, want_sum=True, want_second=False, xp=xps)
        assert m.n_clipped == int(above)
