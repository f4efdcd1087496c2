"""Tests that kill the mutants of the privacy core that tests/test_privacy.py left alive.

Written against the survivors of ``make mutation`` (tools/mutation.py, mutmut 3): each test names the
mutation it kills. Every assertion here is exact (no statistics), except the noise-spread test of
``symmetric_gaussian``, whose false-positive rate is stated there. The score and the equivalent
mutants are recorded in docs/privacy-audit.md ("Mutation testing").
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral.privacy import (
    check_row_norm,
    classic_noise_multiplier,
    clip_rows,
    gaussian_epsilon,
    split_noise_multiplier,
    symmetric_gaussian,
)
from dpspectral.privacy._clipping import (
    ROUNDING_SLACK,
    clip_threshold,
    norm_scale,
    row_norms,
    scaled_row_norms,
    sensitivity_norm,
)
from dpspectral.privacy._gaussian import _SPLIT_MARGIN, analytic_noise_multiplier
from dpspectral.privacy._pipeline import norm_violation_error, not_finite_error, validate_rows

# -- gaussian.py -------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1.0, 1.5, -1e-9])
def test_classic_multiplier_rejects_delta_outside_open_unit_interval(delta):
    # kills `0 <= delta`, `delta <= 1`, `delta < 2` and the message replaced by None
    with pytest.raises(ValueError, match=r"'delta' parameter must be in \(0, 1\)"):
        classic_noise_multiplier(0.5, delta)


def test_classic_multiplier_value_from_its_formula():
    # Dwork & Roth Theorem A.1, written out independently
    for eps, delta in [(0.5, 1e-5), (0.9, 1e-6), (0.1, 0.01)]:
        assert classic_noise_multiplier(eps, delta) == pytest.approx(
            (2 * math.log(1.25 / delta)) ** 0.5 / eps, rel=1e-15)


@pytest.mark.parametrize("s,delta", [(0.0, 1e-5), (-1.0, 1e-5), (1.0, 0.0), (1.0, -1e-3)])
def test_gaussian_epsilon_of_no_noise_or_no_delta_is_infinite(s, delta):
    # no noise (s <= 0) or delta <= 0: no finite epsilon. Kills `and` for `or`, `s < 0`, `delta < 0`.
    assert gaussian_epsilon(s, delta) == math.inf


def test_gaussian_epsilon_matches_the_exact_gaussian_curve():
    # independent: the Balle-Wang delta(eps) of a Gaussian with multiplier s, evaluated at the returned eps
    from scipy.stats import norm

    for s in (0.7, 1.0, 3.0):
        eps = gaussian_epsilon(s, 1e-5)
        d = norm.cdf(0.5 / s - eps * s) - math.exp(eps) * norm.cdf(-0.5 / s - eps * s)
        assert d == pytest.approx(1e-5, rel=1e-3)


@pytest.mark.parametrize("shares", [[[1.0]], [[0.5, 0.5]], [1.5, -0.5], [1.0, 0.0], [0.6, 0.6], [0.5]])
def test_split_rejects_bad_shares(shares):
    # 2-D shares (kills `and` for the first `or`), a negative or zero share (kills `any(None)`,
    # `w < 0`), shares not summing to 1
    with pytest.raises(ValueError, match="Budget shares must be positive and sum to 1"):
        split_noise_multiplier(1.0, shares)


def test_split_rounds_up_never_down():
    # kills `/ (1 + margin)` and `(1 - margin)`: every part carries at least s / sqrt(w), strictly more
    s = 1.3
    for shares in ([0.5, 0.5], [0.25, 0.75], [1.0], [0.1, 0.2, 0.7]):
        parts = split_noise_multiplier(s, shares)
        for p, w in zip(parts, shares, strict=True):
            assert p > s / math.sqrt(w)
            assert p == pytest.approx(s / math.sqrt(w), rel=1e-11)
    assert 0 < _SPLIT_MARGIN <= 1e-9


def test_split_composes_to_no_more_than_the_single_release():
    # the reason for the margin: Gaussian releases compose exactly to one with (sum s_i^-2)^-1/2
    # (Gaussian DP), which must not fall below the single release's multiplier
    for s in (analytic_noise_multiplier(2.0**-7, 1e-6), 0.8, 5.0):
        for shares in ([0.5, 0.5], [0.3, 0.7], [0.2] * 5):
            parts = split_noise_multiplier(s, shares)
            assert math.fsum(p**-2 for p in parts) ** -0.5 >= s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symmetric_gaussian_dtype_and_structure(dtype):
    # kills `astype(None)` (float32 would come back as float64)
    rng = np.random.default_rng(0)
    M = symmetric_gaussian(5, 2.0, rng, dtype=dtype)
    assert M.dtype == dtype and M.shape == (5, 5)
    np.testing.assert_array_equal(M, M.T)


def test_symmetric_gaussian_entries_have_the_calibrated_spread():
    # every entry on and above the diagonal is N(0, sigma^2): pooled over 400 draws of a 6 x 6 matrix
    # (8,400 entries), the sample variance / sigma^2 has sd sqrt(2/8400) = 0.0154; the window
    # +-0.08 is 5.2 sd (two-sided false-positive rate < 3e-7). Halving or doubling sigma is far outside.
    rng = np.random.default_rng(20251126)
    sigma, d = 3.0, 6
    iu = np.triu_indices(d)
    vals = np.concatenate([symmetric_gaussian(d, sigma, rng)[iu] for _ in range(400)])
    assert abs(vals.var() / sigma**2 - 1) < 0.08
    diag = np.concatenate([np.diagonal(symmetric_gaussian(d, sigma, rng)) for _ in range(400)])
    # 2,400 diagonal entries: sd of the ratio sqrt(2/2400) = 0.029; window 0.15 = 5.2 sd
    assert abs(diag.var() / sigma**2 - 1) < 0.15


# -- clipping.py -------------------------------------------------------------------------------


def test_rounding_slack_constants():
    # the slack is tiny and positive, and the threshold and the sensitivity bound both carry it
    # (kills `/`, `1 - slack`, `2 + slack` in clip_threshold and sensitivity_norm)
    assert 0 < ROUNDING_SLACK <= 1e-9
    for C in (0.5, 1.0, 7.0):
        assert clip_threshold(C) == C * (1 + ROUNDING_SLACK)
        assert sensitivity_norm(C) == C * (1 + ROUNDING_SLACK)
        assert C < sensitivity_norm(C) < C * (1 + 1e-9)


def test_clipping_by_its_effect_every_output_row_within_the_sensitivity_bound():
    # a row of norm 10 contributes as a row of norm C; rows within the bound are untouched
    C = 1.5
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    X *= (np.linspace(0.1, 10.0, 50) / np.linalg.norm(X, axis=1))[:, None]
    out, n = clip_rows(X, C)
    norms = np.linalg.norm(out, axis=1)
    assert np.all(norms <= sensitivity_norm(C))
    inside = np.linalg.norm(X, axis=1) <= C
    np.testing.assert_array_equal(out[inside], X[inside])
    np.testing.assert_allclose(norms[~inside], C, rtol=1e-12)
    # direction kept
    np.testing.assert_allclose(out[~inside] / C, X[~inside] / np.linalg.norm(X[~inside], axis=1)[:, None],
                               rtol=1e-12)
    assert n == int(np.count_nonzero(~inside))


def test_rows_within_the_rounding_slack_are_not_clipped_and_rows_above_are():
    C = 2.0
    e = np.zeros((1, 3))
    e[0, 0] = 1.0
    just_in = e * C * (1 + ROUNDING_SLACK / 10)
    out, n = clip_rows(just_in, C)
    assert n == 0 and out is just_in  # kills `row_norm / (1 + slack)` and `(1 - slack)` thresholds
    above = e * C * 1.5
    out, n = clip_rows(above, C)
    assert n == 1 and np.linalg.norm(out) == pytest.approx(C, rel=1e-15)  # kills `2 + slack`


def test_a_row_exactly_at_the_threshold_is_left_alone():
    # kills `>=` for `>` (norms passed explicitly, so the comparison is exact)
    X = np.array([[3.0, 4.0]])
    out, n = clip_rows(X, 5.0, norms=np.array([clip_threshold(5.0)]))
    assert n == 0 and out is X


def test_nothing_over_reports_zero_clipped_and_returns_the_input():
    # kills `return X, 1`
    X = np.eye(3) * 0.5
    out, n = clip_rows(X, 1.0)
    assert n == 0 and out is X


def test_copy_false_clips_in_place_and_copy_true_never_does():
    # kills `X.copy() if copy or True`
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    orig = X.copy()
    out, n = clip_rows(X, 1.0)
    assert n == 1 and out is not X
    np.testing.assert_array_equal(X, orig)
    out2, _ = clip_rows(X, 1.0, copy=False)
    assert out2 is X and np.linalg.norm(X[0]) == pytest.approx(1.0)


def test_sparse_rows_are_clipped_the_same_way():
    X = sp.csr_matrix(np.array([[3.0, 4.0, 0.0], [0.0, 0.1, 0.0]]))
    out, n = clip_rows(X, 1.0)
    assert n == 1 and sp.issparse(out)
    np.testing.assert_allclose(row_norms(out), [1.0, 0.1], rtol=1e-12)


def test_raise_names_the_owner_not_the_row():
    # kills owner -> None and the default owner's spelling
    X = np.array([[0.0, 0.0], [30.0, 40.0]])
    with pytest.raises(ValueError, match=r"^my_fit: some row has Euclidean norm above row_norm=1") as info:
        clip_rows(X, 1.0, on_norm_violation="raise", owner="my_fit")
    assert "50" not in str(info.value) and "row 1" not in str(info.value)
    with pytest.raises(ValueError, match=r"^dpspectral: some row"):
        clip_rows(X, 1.0, on_norm_violation="raise")


def test_check_row_norm_accepts_every_positive_finite_bound():
    # kills `value > 1` for `value > 0`
    for v in (1e-6, 0.5, 1, 3.0, np.float32(2.0), np.int64(4)):
        assert check_row_norm(v) == float(v)


def test_check_row_norm_messages():
    # kills the mutated message strings and the default owner's spelling
    with pytest.raises(ValueError, match=r"^The 'row_norm' parameter of this function is required: a public "
                       r"bound on the Euclidean norm of each row, chosen without looking at the data\. "
                       r"Got None instead\.$"):
        check_row_norm(None)
    with pytest.raises(TypeError, match=r"^The 'row_norm' parameter of f must be a float in \(0, inf\)\. "
                       r"Got '1' instead\.$"):
        check_row_norm("1", owner="f")
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match=r"^The 'row_norm' parameter of g must be a float in "
                           r"\(0, inf\)\. Got .* instead\.$"):
            check_row_norm(bad, owner="g")


_F64_MAX = float(np.finfo(np.float64).max)


@pytest.mark.parametrize(("C", "dtype", "expected"), [
    # ordinary bounds, 2^-k < C < 2^k with k = maxexp / 4 (256 for float64, 32 for float32): 1.0
    (1.0, np.float64, 1.0), (7.5, np.float64, 1.0), (1e-15, np.float64, 1.0), (1e15, np.float64, 1.0),
    (np.nextafter(2.0**-256, 1.0), np.float64, 1.0), (np.nextafter(2.0**256, 1.0), np.float64, 1.0),
    (1e-9, np.float32, 1.0), (np.nextafter(2.0**-32, 1.0), np.float32, 1.0),
    (np.nextafter(2.0**32, 1.0), np.float32, 1.0),
    # at and beyond 2^-+k: the power of two s with C s in [1, 2)
    (2.0**-256, np.float64, 2.0**256), (2.0**256, np.float64, 2.0**-256), (2.0**-300, np.float64, 2.0**300),
    (2.0**300, np.float64, 2.0**-300), (1.5 * 2.0**-700, np.float64, 2.0**700),
    (1.75 * 2.0**900, np.float64, 2.0**-900), (2.0**-32, np.float32, 2.0**32),
    (2.0**32, np.float32, 2.0**-32),
    (1e-21, np.float32, 2.0**70), (2.0**-1022, np.float64, 2.0**1022),
    # s stays a normal number of the dtype: 2^(maxexp - 1) at most, 2^minexp at least
    (2.0**-1023, np.float64, 2.0**1023), (2.0**-1074, np.float64, 2.0**1023),
    (2.0**1023, np.float64, 2.0**-1022), (_F64_MAX, np.float64, 2.0**-1022),
    (2.0**-127, np.float32, 2.0**127), (1e-45, np.float32, 2.0**127), (2.0**126, np.float32, 2.0**-126),
    (3e38, np.float32, 2.0**-126),
])
def test_norm_scale_exact_values(C, dtype, expected):
    # pins every constant and comparison of norm_scale (the range of ordinary bounds, the exponent, the
    # clamps to the dtype's normal range; one case per row, so a mutant meets a failing case early)
    assert norm_scale(C, dtype) == expected
    if dtype is np.float64:
        assert norm_scale(C) == expected  # float64 by default


def _exact_sq(row: np.ndarray, scale: float) -> Fraction:
    """The exact squared norm of ``row * scale`` (of the stored values)."""
    return sum(((Fraction(float(v)) * Fraction(scale)) ** 2 for v in np.ravel(row)), Fraction(0))


def _check_norms(norms: np.ndarray, X, scale: float) -> None:
    """``norms`` are the float64 norms of the rows of ``X * scale`` to within 1e-14 (NaN for a row with
    NaN, inf for one with an infinity or whose norm is beyond float64's range), checked exactly."""
    rows = X.toarray() if sp.issparse(X) else np.asarray(X)
    assert norms.dtype == np.float64 and norms.shape == (rows.shape[0],)
    for n, r in zip(norms.tolist(), rows, strict=True):
        if np.isnan(r).any():
            assert math.isnan(n)
            continue
        if np.isinf(r).any():
            assert n == math.inf
            continue
        exact = _exact_sq(r, scale)
        if exact == 0:
            assert n == 0.0
        elif exact > Fraction(_F64_MAX) ** 2:
            assert n == math.inf
        else:
            assert abs(Fraction(n) ** 2 / exact - 1) <= Fraction(2, 10**14), (n, float(exact) ** 0.5)


#: rows whose float64 norm differs from the float32 one ((1, 1e-4): 1 + 5e-9 against 1.0), a zero row
_SMALL = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1e-4, 0.0], [-0.5, 0.25, 2.0]])


@pytest.mark.parametrize(("kind", "scale"), [
    (kind, scale) for kind in ("float64", "float32", "sparse64", "sparse32")
    for scale in (1.0, 2.0, 2.0**-100, 2.0**100) + ((2.0**-600, 2.0**600) if "64" in kind else ())
])
def test_scaled_row_norms_against_an_exact_reference(kind, scale):
    # every path of scaled_row_norms (float64 with scale 1, the scaled pieces, sparse), in float64 also
    # for float32 rows (kills dtype=None, the fast path's `or` / `!=` / `2.0`, X / scale, a lost sqrt).
    # The rows are _SMALL / scale (exact), so that the scaled squares are normal numbers.
    dtype = np.float32 if kind.endswith("32") else np.float64
    X = (_SMALL / scale).astype(dtype)
    if kind.startswith("sparse"):
        X = sp.csr_matrix(X)
    _check_norms(scaled_row_norms(X, scale), X, scale)
    if scale == 1.0:
        _check_norms(scaled_row_norms(X), X, 1.0)  # the default scale is 1


@pytest.mark.parametrize(("dtype", "scale"), [(np.float32, 1.0), (np.float64, 2.0), (np.float64, 0.125)])
def test_scaled_row_norms_pieces_cover_every_row(dtype, scale):
    # 2,053 rows of 256 entries: pieces of 1,024 rows, the last one short (kills the loop's and the
    # slices' mutants: a row skipped, a piece misplaced or cut)
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((2053, 256)) * np.arange(1, 2054)[:, None]).astype(dtype)
    norms = scaled_row_norms(X, scale)
    expected = np.linalg.norm(X.astype(np.float64), axis=1) * scale
    assert norms.dtype == np.float64
    np.testing.assert_allclose(norms, expected, rtol=1e-13, atol=0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("scale", [1.0, 2.0, 0.25, 2.0**600])
def test_scaled_row_norms_of_overflowing_and_non_finite_rows(sparse, scale):
    # finite rows whose (scaled) squares overflow are computed again from the row over its largest
    # entry, each its own (two of them: kills axis=None); a row with NaN or infinity keeps a NaN or
    # infinite norm (in the same call: kills `all(axis=None)`); a norm beyond float64's range is inf;
    # no overflow warning on any path (kills errstate(over=None))
    import warnings

    X = np.array([[1e200, 1e200, 0.0], [3e200, 4e200, 0.0], [np.nan, 1.0, 0.0], [np.inf, 0.0, 0.0],
                  [3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1e10, -2e10, 0.0], [1e308, 1e308, 1e308]])
    A = sp.csr_matrix(X) if sparse else X
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = scaled_row_norms(A, scale)
    _check_norms(norms, X, scale)


def test_scaled_row_norms_of_float32_rows_whose_scaled_squares_overflow():
    # float32 rows far below the bound: scaled by 2^1000, their squares overflow float64; the rows are
    # scaled and the overflowing ones rescaled in float64 (in float32, 2^1000 is inf and a zero row's
    # norm NaN: kills dtype=None in both places)
    X = np.array([[1.0, 1.0], [0.5, -0.25], [0.0, 0.0]], dtype=np.float32)
    _check_norms(scaled_row_norms(X, 2.0**1000), X, 2.0**1000)
    _check_norms(scaled_row_norms(sp.csr_matrix(X), 2.0**1000), X, 2.0**1000)


def test_clip_rows_target_exactly_at_the_bound_and_inside_it_for_float32():
    # a float64 (dense or sparse) row is scaled to the bound exactly; a dense float32 row to
    # C (1 - 4 eps32), so that its rounding stays within C (kills every mutation of the margin and of
    # `narrow`: float64 or sparse rows would be aimed inside, float32 ones at C)
    eps32 = float(np.finfo(np.float32).eps)
    for dtype, expected in ((np.float64, 1.0), (np.float32, 1.0 - 4 * eps32)):
        X = np.array([[2.0, 0.0], [0.25, 0.5]], dtype=dtype)
        out, n = clip_rows(X, 1.0)
        assert n == 1 and out.dtype == dtype
        np.testing.assert_array_equal(out, np.array([[expected, 0.0], [0.25, 0.5]], dtype=dtype))
        out, n = clip_rows(sp.csr_matrix(X), 1.0)  # sparse rows of either dtype: at C exactly
        assert n == 1
        np.testing.assert_array_equal(out.toarray(), [[1.0, 0.0], [0.25, 0.5]])


def test_clip_rows_at_a_bound_far_from_one():
    # C = 2^-700: norms compared at the scaled bound C s = 1 (kills `row_norm / s` and the norms computed
    # without the scale, where the row's squares underflow to 0)
    C = 2.0**-700
    X = np.array([[2.0**-699, 0.0], [0.0, 2.0**-701], [3.0 * 2.0**-703, 4.0 * 2.0**-703]])
    out, n = clip_rows(X, C)
    assert n == 1
    np.testing.assert_array_equal(out, [[C, 0.0], [0.0, 2.0**-701], [3.0 * 2.0**-703, 4.0 * 2.0**-703]])
    with pytest.raises(ValueError, match="above row_norm"):
        clip_rows(X[:1], C, on_norm_violation="raise")
    out, n = clip_rows(X[1:], C, on_norm_violation="raise")
    assert n == 0 and out is not None


def test_clip_rows_uses_the_callers_norms_only_for_float64_rows_at_scale_one():
    # norms given by the caller are used when norm_scale(C) == 1 and X is float64 (a row said to be of
    # norm 2 is halved: kills `s == 1.0` / `s != 2.0`), and recomputed otherwise: at a scaled bound
    # (kills `and narrow`) and for float32 rows
    X = np.array([[0.3, 0.4]])
    out, n = clip_rows(X, 1.0, norms=np.array([2.0]))
    assert n == 1
    np.testing.assert_array_equal(out, [[0.15, 0.2]])
    out, n = clip_rows(np.array([[2.0**-699, 0.0]]), 2.0**-700, norms=np.zeros(1))
    assert n == 1
    out, n = clip_rows(np.array([[2.0, 0.0]], dtype=np.float32), 1.0, norms=np.zeros(1))
    assert n == 1


# -- pipeline.py -------------------------------------------------------------------------------

def test_error_texts_are_exact_and_name_no_row():
    # kills every mutation of the two data-independent messages (they are part of the contract:
    # nothing about the rows may appear, and the advice must stay)
    assert str(not_finite_error("fit")) == (
        "fit: the data contain NaN or infinity. Remove or impute them before fitting (which rows is not "
        "reported: it is a fact about the private data).")
    assert str(norm_violation_error("fit", 2.5)) == (
        "fit: some row has Euclidean norm above row_norm=2.5 and on_norm_violation='raise'. Scale the rows, "
        "raise row_norm, or use on_norm_violation='clip' (which rows, and how many, is not reported: it is "
        "a fact about the private data). The refusal itself says that some row broke the bound "
        "(docs/privacy-caveats.md).")


@pytest.mark.parametrize("rows", [
    [[0.1, 0.2], [0.3, float("nan")]],            # a list of rows (lists)
    [(0.1, 0.2), (0.3, float("inf"))],            # a list of tuples
    [np.array([[0.1, 0.2]]), np.array([[np.nan, 0.0]])],  # a list of 2-D blocks
])
def test_validate_rows_checks_every_form_of_list_input(rows):
    with pytest.raises(ValueError, match="NaN or infinity"):
        validate_rows(rows, row_norm=1.0, owner="f")


def test_validate_rows_list_of_rows_is_one_block_and_list_of_blocks_is_many():
    # a list of scalar rows is one 2-D array; a list of 2-D blocks is checked block by block
    assert validate_rows([[0.1, 0.2], [0.3, 0.4]], row_norm=1.0, on_norm_violation="raise")
    assert validate_rows([np.zeros((2, 3)), np.ones((1, 3)) * 0.5], row_norm=1.0, on_norm_violation="raise")
    with pytest.raises(ValueError, match="2-D data"):
        validate_rows([0.1, 0.2, 0.3], row_norm=1.0)  # a list of numbers is one 1-D row, refused
    with pytest.raises(ValueError, match="above row_norm=1"):
        validate_rows([np.zeros((2, 3)), np.ones((1, 3))], row_norm=1.0, on_norm_violation="raise")


def test_validate_rows_bound_is_the_clip_threshold_after_centering():
    C = 1.0
    at = np.array([[clip_threshold(C), 0.0]])
    assert validate_rows(at, row_norm=C, on_norm_violation="raise")  # exactly at the threshold: accepted
    above = np.array([[clip_threshold(C) * (1 + 1e-9), 0.0]])
    with pytest.raises(ValueError, match="above row_norm"):
        validate_rows(above, row_norm=C, on_norm_violation="raise")
    assert validate_rows(above, row_norm=C)  # "clip": accepted, clipped later
    # the public center is subtracted first: (2, 0) - (1.5, 0) has norm 0.5
    assert validate_rows(np.array([[2.0, 0.0]]), row_norm=C, on_norm_violation="raise",
                         center=np.array([1.5, 0.0]))
    with pytest.raises(ValueError, match="above row_norm"):
        validate_rows(np.array([[0.0, 0.0]]), row_norm=0.5, on_norm_violation="raise",
                      center=np.array([1.0, 0.0]))
    # sparse input, with and without a center
    X = sp.csr_matrix(np.array([[0.0, 3.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="above row_norm"):
        validate_rows(X, row_norm=2.0, on_norm_violation="raise")
    assert validate_rows(X, row_norm=2.0, on_norm_violation="raise", center=np.array([0.0, 2.0]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        validate_rows(sp.csr_matrix(np.array([[0.0, np.inf]])), row_norm=2.0)


def test_validate_rows_refuses_non_numeric_and_streams_are_not_checked():
    with pytest.raises(TypeError, match="numeric data"):
        validate_rows(np.array([["a", "b"]]), row_norm=1.0)
    with pytest.raises(TypeError, match="numeric data"):
        validate_rows(sp.csr_matrix(np.array([[1, 0]], dtype=bool)).astype(complex), row_norm=1.0)
    assert validate_rows(iter([np.zeros((2, 2))]), row_norm=1.0) is False


def test_validate_rows_errors_name_the_owner_on_every_path():
    # kills `not_finite_error(None)` / `norm_violation_error(None, ...)` on the dense and sparse paths
    cases = [
        (np.array([[np.nan, 0.0]]), "NaN or infinity"),
        (np.array([[3.0, 4.0]]), "above row_norm"),
        (sp.csr_matrix(np.array([[np.nan, 0.0]])), "NaN or infinity"),
        (sp.csr_matrix(np.array([[3.0, 4.0]])), "above row_norm"),
    ]
    for X, what in cases:
        with pytest.raises(ValueError, match=rf"^my_fit: .*{what}"):
            validate_rows(X, row_norm=1.0, on_norm_violation="raise", owner="my_fit")
    # a text dtype is not named (its width, <U1 here, is the length of the longest cell)
    with pytest.raises(TypeError, match=r"^my_fit needs numeric data; got an array of text \(convert or "
                       r"encode the columns first\)\.$"):
        validate_rows(np.array([["a"]]), row_norm=1.0, owner="my_fit")


def test_validate_rows_single_row_list():
    # kills `X[1]` for `X[0]` in the list-of-rows test (a one-row list has no X[1])
    assert validate_rows([[0.1, 0.2]], row_norm=1.0, on_norm_violation="raise")


def test_validate_rows_sparse_row_exactly_at_the_threshold_is_accepted():
    # kills `>=` for `>` on the sparse path
    t = clip_threshold(1.0)
    X = sp.csr_matrix(np.array([[t, 0.0]]))
    assert float(row_norms(X)[0]) == t  # sqrt(t * t) rounds back to t here
    assert validate_rows(X, row_norm=1.0, on_norm_violation="raise")


def test_validate_rows_overflowing_square_is_over_the_bound_without_a_warning():
    # a finite row whose square overflows: refused as over the bound, quietly (kills errstate(over=None))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="above row_norm"):
            validate_rows(np.array([[1e200, 0.0]]), row_norm=1.0, on_norm_violation="raise")


def test_validate_rows_checks_rows_beyond_the_first_chunk():
    # the rows are checked in chunks of 2**22 / d; a NaN after the first chunk is found
    # (kills iterating over the columns instead of the rows). 2,100 x 2,048 float32: 17 MB.
    X = np.zeros((2100, 2048), dtype=np.float32)
    X[2099, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        validate_rows(X, row_norm=1.0)


def test_public_seed():
    from dpspectral.privacy._pipeline import public_seed

    assert public_seed(0) == 0 and public_seed(5) == 5 and public_seed(np.int64(7)) == 7
    a, b = public_seed(), public_seed()
    assert 0 <= a < 2**63 and a != b  # OS entropy: equal with probability 2^-63
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match=r"^A public seed must be None \(OS entropy\) or a non-negative "
                           r"int\. Got .* instead\.$"):
            public_seed(bad)


# -- budget.py ---------------------------------------------------------------------------------


def test_relation_implies_truth_table():
    # a guarantee under `self` implies one under `other`: only equality, and Priv2 => Priv1 (a rank-one
    # change of unit Frobenius norm is within Priv2). Kills every mutation of `implies`.
    from dpspectral.privacy import Relation

    for a in Relation:
        for b in Relation:
            expected = a is b or (a is Relation.PRIV2 and b is Relation.PRIV1)
            assert a.implies(b) is expected, (a, b)


@pytest.mark.parametrize("text,value", [
    ("add_or_remove", "add_remove"), ("add-or-remove", "add_remove"), ("Add_Or_Remove_One", "add_remove"),
    ("add/remove", "add_remove"), ("AR", "add_remove"), (" ar ", "add_remove"), ("r1", "replace_one"),
    ("R1", "replace_one"), ("replace-one", "replace_one"), ("PRIV2", "priv2"), ("local", "local"),
])
def test_relation_aliases(text, value):
    from dpspectral.privacy import as_relation

    assert as_relation(text).value == value


def test_relation_error_lists_the_relations_and_names_the_owner():
    from dpspectral.privacy import Relation, as_relation

    allowed = ", ".join(repr(m.value) for m in Relation)
    assert "'replace_one', 'add_remove'" in allowed
    with pytest.raises(ValueError) as info:
        as_relation("add_replace")
    assert str(info.value) == (f"The 'relation' parameter of relation must be one of {allowed}. "
                               "Got 'add_replace' instead.")
    with pytest.raises(ValueError, match=r"^The 'relation' parameter of fit must be one of"):
        as_relation("x/y", owner="fit")  # "/" is read as "_": "x_y" is still not a relation


def test_budget_stores_floats():
    from dpspectral.privacy import PrivacyBudget

    b = PrivacyBudget(np.float32(2.0), 0)
    assert type(b.epsilon) is float and type(b.delta) is float and b.delta == 0.0


@pytest.mark.parametrize("sparse", [False, True])
def test_validate_rows_norms_in_double_precision_for_float32_input(sparse):
    # (1, 1e-4) in float32: its norm is 1 + 5e-9 > C (1 + 1e-10), but a float32 sum of squares rounds
    # to exactly 1. The check must compute in float64 (kills dtype=None on the dense and sparse paths).
    X = np.array([[1.0, 1e-4]], dtype=np.float32)
    assert float(np.sqrt(np.einsum("ij,ij->i", X, X))[0]) == 1.0  # the float32 computation misses it
    with pytest.raises(ValueError, match="above row_norm"):
        validate_rows(sp.csr_matrix(X) if sparse else X, row_norm=1.0, on_norm_violation="raise")


# -- accounting.py -----------------------------------------------------------------------------
# Each value below is derived without the function under test: Gaussian compositions from the closed
# form of Gaussian DP (Dong, Roth and Su 2019: multipliers s_i compose to mu = sqrt(sum 1/s_i^2)) and
# the exact Balle-Wang curve (solved here with scipy, not dp_accounting); Laplace and (epsilon, delta)
# events by basic composition written out by hand; other events with dp_accounting's own accountants;
# parallel events as the worst branch, enumerated by hand.

import pickle  # noqa: E402
import warnings  # noqa: E402

import dp_accounting  # noqa: E402
from dp_accounting import dp_event as dpe  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402

from dpspectral.privacy import (  # noqa: E402
    Accountant,
    BudgetExceededError,
    EpsilonDeltaDpEvent,
    GaussianDpAccountant,
    ParallelDpEvent,
    PrivacyBudget,
    PureDpAccountant,
    Relation,
    SampledGaussianAccountant,
    UncertifiedPrivacyWarning,
    calibrate,
    certify_release,
    compose,
    epsilon_of,
    make_accountant,
)
from dpspectral.privacy._accounting import RANDOM_STATE_NOTE, _event_summary  # noqa: E402

G = dpe.GaussianDpEvent
L = dpe.LaplaceDpEvent
ED = EpsilonDeltaDpEvent
AR = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
RO = dp_accounting.NeighboringRelation.REPLACE_ONE


def _bw_delta(mu: float, eps: float) -> float:
    """Balle & Wang (2018) Theorem 8: the delta of mu-GDP at eps."""
    from scipy.stats import norm

    # the second term in log space: exp(eps) overflows at the huge epsilons tested below
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps + norm.logcdf(-eps / mu - mu / 2)))


def _gdp_eps(mu: float, delta: float) -> float:
    """The epsilon of mu-GDP at delta, by root finding on the exact curve (independent of dp_accounting)."""
    from scipy.optimize import brentq

    if _bw_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while _bw_delta(mu, hi) > delta:
        hi *= 2
    return float(brentq(lambda e: _bw_delta(mu, e) - delta, 0.0, hi, xtol=1e-13, rtol=1e-13))


def _mu(*multipliers: float) -> float:
    return math.sqrt(sum(1.0 / s**2 for s in multipliers))


def test_gaussian_compositions_are_exact_gdp():
    # composed / self-composed Gaussians: one mu from the closed form, then the exact curve
    event = dpe.ComposedDpEvent([G(3.0), dpe.SelfComposedDpEvent(G(5.0), 4), dpe.NoOpDpEvent(), G(2.0)])
    want = _gdp_eps(_mu(3.0, 5.0, 5.0, 5.0, 5.0, 2.0), 1e-6)
    assert epsilon_of(event, 1e-6) == pytest.approx(want, rel=1e-7)
    acc = GaussianDpAccountant().compose(event)
    assert acc.mu == pytest.approx(_mu(3.0, 5.0, 5.0, 5.0, 5.0, 2.0), rel=1e-12)
    assert acc.get_delta(want) == pytest.approx(1e-6, rel=1e-6)
    assert GaussianDpAccountant().get_epsilon(1e-6) == 0.0 and GaussianDpAccountant().get_delta(1.0) == 0.0
    zero = GaussianDpAccountant().compose(G(0.0))
    assert zero.mu == math.inf and zero.get_epsilon(1e-6) == math.inf and zero.get_delta(1.0) == 1.0


def test_pure_dp_accountant_is_basic_composition():
    acc = PureDpAccountant().compose(dpe.ComposedDpEvent([L(2.0), dpe.SelfComposedDpEvent(L(4.0), 3)]))
    assert acc.get_epsilon(0.0) == pytest.approx(0.5 + 3 * 0.25, rel=1e-15)
    assert PureDpAccountant().compose(L(0.0)).get_epsilon(0.0) == math.inf
    assert PureDpAccountant().compose(dpe.NonPrivateDpEvent()).get_epsilon(0.0) == math.inf
    assert not PureDpAccountant().supports(G(1.0))


# ---- calibrate


@pytest.mark.parametrize("eps,delta,k", [(1.0, 1e-5, 1), (0.3, 1e-6, 1), (2.0, 1e-5, 10)])
def test_calibrate_gaussian_is_the_smallest_sound_multiplier(eps, delta, k):
    # k self-composed Gaussians of multiplier s are one Gaussian of multiplier s/sqrt(k) (GDP), so the
    # answer is sqrt(k) times the single-release multiplier. Sound: the exact curve's delta at eps is
    # <= delta; tight: 1e-6 below it is not sound.
    s = calibrate(lambda x: dpe.SelfComposedDpEvent(G(x), k), eps, delta)
    s1 = s / math.sqrt(k)
    assert _bw_delta(1 / s1, eps) <= delta * (1 + 1e-9)
    assert _bw_delta(1 / (s1 * (1 - 1e-8)), eps) > delta  # within tol=1e-9 (absolute) of the optimum
    # every relation gives the same unsampled answer (the multiplier is over the stated relation's shift)
    assert calibrate(lambda x: dpe.SelfComposedDpEvent(G(x), k), eps, delta,
                     relation="add_remove") == pytest.approx(s, rel=1e-8)


def test_calibrate_respects_tol_and_accounting():
    # a coarse tol returns a sound but looser multiplier (dp_accounting's bisection stops early);
    # accounting="rdp" is looser than the exact Gaussian one (RDP's conversion), "pld" close to it
    exact = calibrate(lambda x: G(x), 1.0, 1e-5)
    coarse = calibrate(lambda x: G(x), 1.0, 1e-5, tol=0.05)
    assert exact <= coarse <= exact + 0.05 + 1e-12 and coarse - exact > 1e-6
    rdp = calibrate(lambda x: G(x), 1.0, 1e-5, accounting="rdp")
    assert rdp > exact * 1.05
    acc = RdpAccountant(neighboring_relation=AR).compose(G(rdp))
    assert acc.get_epsilon(1e-5) <= 1.0 + 1e-9


def test_calibrate_refuses_a_non_private_event():
    with pytest.raises(ValueError) as info:
        calibrate(lambda x: dpe.NonPrivateDpEvent(), 1.0, 1e-5)
    assert str(info.value) == "A non-private event cannot be calibrated to a finite epsilon."


def _sampled_reference(s: float, q: float, steps: int, delta: float, relation) -> float:
    """min(no-amplification GDP bound, dp_accounting's PLD on a 1e-3 grid), built independently."""
    unsampled = s / 2 if relation is RO else s
    bound = _gdp_eps(math.sqrt(steps) / unsampled, delta)
    if s < 0.05:
        return bound
    pld = PLDAccountant(relation, value_discretization_interval=1e-3)
    pld.compose(dpe.PoissonSampledDpEvent(q, G(s)), steps)
    return min(bound, float(pld.get_epsilon(delta)))


@pytest.mark.parametrize("relation,q,steps,eps", [
    ("replace_one", 0.05, 20, 1.0),
    ("add_remove", 0.1, 5, 2.0),
])
def test_calibrate_sampled_gaussian_is_sound_and_tight_against_pld(relation, q, steps, eps):
    # Poisson-sampled Gaussians: the best of the PLD (amplification) and the unsampled bound
    rel = Relation(relation)
    def make(x):
        return dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(q, G(x)), steps)
    s = calibrate(make, eps, 1e-5, relation=relation)
    rel_dp = rel.dp_accounting
    assert _sampled_reference(s, q, steps, 1e-5, rel_dp) <= eps + 1e-9
    assert _sampled_reference(s * (1 - 1e-4), q, steps, 1e-5, rel_dp) > eps
    # amplification helps: well below the unsampled answer
    unsampled = calibrate(lambda x: dpe.SelfComposedDpEvent(G(x), steps), eps, 1e-5)
    assert s < (2 if rel is Relation.REPLACE_ONE else 1) * unsampled * 0.9


@pytest.mark.parametrize("relation,factor", [("replace_one", 2.0), ("add_remove", 1.0)])
def test_calibrate_sampled_gaussian_below_the_pld_threshold_is_the_unsampled_bound(relation, factor):
    # at a huge epsilon the unsampled multiplier is below 0.05: the PLD is skipped and the answer is
    # the unsampled Gaussian's multiplier (times 2 under replace-one, where a replaced row moves a sum by
    # twice its bound)
    s = calibrate(lambda x: dpe.PoissonSampledDpEvent(0.01, G(x)), 3000.0, 1e-5, relation=relation)
    plain = calibrate(lambda x: G(x), 3000.0, 1e-5)
    assert s < 0.05 and s == pytest.approx(factor * plain, rel=1e-7)
    assert _bw_delta(factor / s, 3000.0) <= 1e-5 * (1 + 1e-6)


def test_calibrate_sampled_gaussian_just_above_the_pld_threshold():
    # the unsampled bound's multiplier lies between 0.05 and 0.1, where the search bracket starts at
    # 0.05 * 0.999: the answer must still be sound and tight against the independent reference
    eps = 100.0
    def make(x):
        return dpe.PoissonSampledDpEvent(0.5, G(x))
    plain = calibrate(lambda x: G(x), eps, 1e-5, relation="add_remove")
    assert 0.05 < plain < 0.1
    s = calibrate(make, eps, 1e-5, relation="add_remove")
    assert _sampled_reference(s, 0.5, 1, 1e-5, AR) <= eps + 1e-9
    assert _sampled_reference(s * (1 - 1e-4), 0.5, 1, 1e-5, AR) > eps


# ---- _epsilon_simple, _split_approximate: basic composition of (epsilon, delta) and Laplace parts


def test_non_private_anywhere_is_infinite():
    for ev in [dpe.NonPrivateDpEvent(), dpe.ComposedDpEvent([G(1.0), dpe.NonPrivateDpEvent()]),
               dpe.SelfComposedDpEvent(dpe.ComposedDpEvent([ED(0.1, 0.0), dpe.NonPrivateDpEvent()]), 2)]:
        assert epsilon_of(ev, 1e-5) == math.inf


def test_epsilon_delta_event_alone_holds_at_every_delta_from_its_own():
    assert epsilon_of(ED(0.7, 1e-6), 1e-6) == 0.7
    assert epsilon_of(ED(0.7, 1e-6), 0.5) == 0.7
    assert epsilon_of(ED(0.7, 1e-6), 0.99e-6) == math.inf  # the target delta is below the event's
    assert epsilon_of(ED(0.7, 0.0), 0.0) == 0.7
    assert epsilon_of(ED(0.0, 1e-7), 1e-6) == 0.0  # a pure-delta event
    # SelfComposed: basic composition, count times each part
    assert epsilon_of(dpe.SelfComposedDpEvent(ED(0.25, 1e-7), 3), 1e-6) == pytest.approx(0.75, rel=1e-15)
    assert epsilon_of(dpe.SelfComposedDpEvent(ED(0.25, 4e-7), 3), 1e-6) == math.inf  # 1.2e-6 > 1e-6


@pytest.mark.parametrize("e0,d0", [(0.5, 0.0), (0.0, 1e-7), (0.5, 1e-7)])
def test_epsilon_delta_with_gaussian_is_basic_composition(e0, d0):
    # (e0, d0) + Gaussian(s): e0 + the Gaussian's epsilon at delta - d0 (basic composition by hand)
    ev = dpe.ComposedDpEvent([G(2.0), ED(e0, d0)])
    assert epsilon_of(ev, 1e-6) == pytest.approx(e0 + _gdp_eps(0.5, 1e-6 - d0), rel=1e-7)
    # nested: SelfComposed(Composed([ED, G]), 4) = 4 * (e0, d0) + Gaussian(s / 2)
    ev4 = dpe.SelfComposedDpEvent(dpe.ComposedDpEvent([ED(e0, d0), G(2.0)]), 4)
    assert epsilon_of(ev4, 1e-6) == pytest.approx(4 * e0 + _gdp_eps(1.0, 1e-6 - 4 * d0), rel=1e-7)
    # two levels of self-composition multiply
    ev6 = dpe.SelfComposedDpEvent(dpe.ComposedDpEvent(
        [dpe.SelfComposedDpEvent(ED(e0, d0), 3), G(3.0)]), 2)
    assert epsilon_of(ev6, 1e-6) == pytest.approx(6 * e0 + _gdp_eps(_mu(3.0, 3.0), 1e-6 - 6 * d0), rel=1e-7)


def test_epsilon_delta_using_up_delta_leaves_the_gaussian_infinite_and_laplace_finite():
    assert epsilon_of(dpe.ComposedDpEvent([ED(0.5, 1e-6), G(2.0)]), 1e-6) == math.inf
    # a pure (Laplace) rest keeps a finite epsilon at delta 0: 0.5 + 1/b
    ev = dpe.ComposedDpEvent([ED(0.5, 1e-6), L(4.0)])
    assert epsilon_of(ev, 1e-6) == pytest.approx(0.75, rel=1e-15)
    assert epsilon_of(ev, 0.5e-6) == math.inf


def test_epsilon_delta_nested_in_sampling_is_refused():
    with pytest.raises(ValueError) as info:
        epsilon_of(dpe.ComposedDpEvent([G(1.0), dpe.PoissonSampledDpEvent(0.1, ED(1.0, 0.0))]), 1e-6)
    assert str(info.value) == "An (epsilon, delta) event cannot be nested inside PoissonSampledDpEvent."


def test_laplace_with_gaussian_uses_pld_or_basic_composition_below_the_grid_threshold():
    # large multipliers: dp_accounting's own PLD accountant on the same event (unsampled: add/remove)
    ev = dpe.ComposedDpEvent([L(2.0), G(3.0)])
    want = PLDAccountant(AR).compose(ev).get_epsilon(1e-6)
    assert epsilon_of(ev, 1e-6) == pytest.approx(want, rel=1e-12)
    assert epsilon_of(ev, 1e-6) < 0.5 + _gdp_eps(1 / 3, 1e-6)  # tighter than basic composition
    # a Laplace multiplier below 0.05: the Laplace part composes as pure 1/b with the Gaussian (by hand)
    small = dpe.ComposedDpEvent([L(0.04), dpe.SelfComposedDpEvent(G(3.0), 2)])
    assert epsilon_of(small, 1e-6) == pytest.approx(25.0 + _gdp_eps(_mu(3.0, 3.0), 1e-6), rel=1e-7)
    # a Gaussian multiplier below 0.05 also moves the Laplace part to basic composition
    tiny = dpe.ComposedDpEvent([L(2.0), G(0.04)])
    assert epsilon_of(tiny, 1e-6) == pytest.approx(0.5 + _gdp_eps(25.0, 1e-6), rel=1e-7)
    # exactly at the threshold the PLD is used
    at = dpe.ComposedDpEvent([L(0.05), G(3.0)])
    assert epsilon_of(at, 1e-6) == pytest.approx(PLDAccountant(AR).compose(at).get_epsilon(1e-6), rel=1e-12)
    # Laplace only: basic composition (PureDpAccountant), valid at delta 0
    assert epsilon_of(dpe.SelfComposedDpEvent(L(0.04), 2), 0.0) == pytest.approx(50.0, rel=1e-15)
    # accounting="pld" is not rerouted: its own answer on the small-multiplier mix
    mix = dpe.ComposedDpEvent([L(0.5), G(3.0)])
    assert epsilon_of(mix, 1e-6, accounting="pld") == pytest.approx(
        PLDAccountant(AR).compose(mix).get_epsilon(1e-6), rel=1e-12)


@pytest.mark.parametrize("accounting,factory", [
    ("pld", lambda: PLDAccountant(AR)),
    ("rdp", lambda: RdpAccountant(neighboring_relation=AR)),
])
def test_explicit_accounting_is_dp_accountings_own(accounting, factory):
    ev = dpe.ComposedDpEvent([G(3.0), dpe.SelfComposedDpEvent(G(5.0), 4)])
    assert epsilon_of(ev, 1e-6, accounting=accounting) == pytest.approx(
        factory().compose(ev).get_epsilon(1e-6), rel=1e-12)


def test_rdp_at_delta_zero_is_infinite_and_gaussian_needs_delta():
    assert epsilon_of(G(1.0), 0.0, accounting="rdp") == math.inf
    assert epsilon_of(G(1.0), 0.0) == math.inf


def test_sampled_events_use_the_stated_relation():
    # sampled: dp_accounting's PLD under the stated relation (replace-one differs from add/remove)
    ev = dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.1, G(3.0)), 2)
    for rel, dp_rel in [("replace_one", RO), ("add_remove", AR)]:
        assert epsilon_of(ev, 1e-6, relation=rel, accounting="pld") == pytest.approx(
            PLDAccountant(dp_rel).compose(ev).get_epsilon(1e-6), rel=1e-12)
    assert epsilon_of(ev, 1e-6, relation="replace_one", accounting="pld") > epsilon_of(
        ev, 1e-6, relation="add_remove", accounting="pld")


def test_make_accountant_kinds():
    assert type(make_accountant("auto", Relation.REPLACE_ONE)) is GaussianDpAccountant
    assert type(make_accountant("auto", Relation.REPLACE_ONE, G(1.0))) is GaussianDpAccountant
    assert type(make_accountant("auto", Relation.REPLACE_ONE, L(1.0))) is PureDpAccountant
    sampled = make_accountant("auto", Relation.REPLACE_ONE, dpe.PoissonSampledDpEvent(0.1, G(1.0)))
    assert type(sampled) is SampledGaussianAccountant and sampled.neighboring_relation is RO
    other = make_accountant("auto", Relation.REPLACE_ONE, dpe.PoissonSampledDpEvent(0.1, L(1.0)))
    assert type(other) is PLDAccountant and other.neighboring_relation is RO
    assert make_accountant("gaussian", Relation.REPLACE_ONE).neighboring_relation is AR
    assert type(make_accountant("pld", Relation.REPLACE_ONE)) is PLDAccountant
    assert type(make_accountant("rdp", Relation.REPLACE_ONE)) is RdpAccountant
    with pytest.raises(ValueError) as info:
        make_accountant("exact", Relation.REPLACE_ONE)
    assert str(info.value) == ("The 'accounting' parameter must be one of 'auto', 'gaussian', 'pld', 'rdp'. "
                               "Got 'exact' instead.")


def test_compose():
    assert isinstance(compose([]), dpe.NoOpDpEvent)
    assert isinstance(compose([dpe.NoOpDpEvent()]), dpe.NoOpDpEvent)
    assert compose([dpe.NoOpDpEvent(), G(1.0)]) == G(1.0)
    assert compose([G(1.0), dpe.NoOpDpEvent(), G(2.0)]) == dpe.ComposedDpEvent([G(1.0), G(2.0)])


# ---- _expand_parallel: the worst branch


def test_parallel_is_the_worst_branch():
    assert epsilon_of(ParallelDpEvent([G(2.0), G(1.0), G(3.0)]), 1e-6) == pytest.approx(
        _gdp_eps(1.0, 1e-6), rel=1e-7)
    # nested parallel flattens; a parallel inside a composition: every choice, the worst one counts
    nested = ParallelDpEvent([ParallelDpEvent([G(2.0), G(1.5)]), G(3.0)])
    assert epsilon_of(nested, 1e-6) == pytest.approx(_gdp_eps(1 / 1.5, 1e-6), rel=1e-7)
    ev = dpe.ComposedDpEvent([G(4.0), ParallelDpEvent([G(2.0), G(1.0)]), ParallelDpEvent([G(0.5), G(3.0)])])
    assert epsilon_of(ev, 1e-6) == pytest.approx(_gdp_eps(_mu(4.0, 1.0, 0.5), 1e-6), rel=1e-7)
    # the worst branch need not be the one with the smallest multiplier: (2 x G(1.2)) vs G(1.0)
    two = ParallelDpEvent([G(1.0), dpe.SelfComposedDpEvent(G(1.2), 2)])
    assert epsilon_of(two, 1e-6) == pytest.approx(_gdp_eps(_mu(1.2, 1.2), 1e-6), rel=1e-7)


def test_parallel_in_a_self_composition_may_meet_the_same_branch_every_time():
    # the changed row meets one branch per repetition: the worst is G(1) all three times
    ev = dpe.SelfComposedDpEvent(ParallelDpEvent([G(2.0), G(1.0)]), 3)
    assert epsilon_of(ev, 1e-6) == pytest.approx(_gdp_eps(_mu(1.0, 1.0, 1.0), 1e-6), rel=1e-7)
    # with basic-composition leaves: the worst choice per repetition, summed by hand
    ev2 = dpe.SelfComposedDpEvent(ParallelDpEvent([ED(0.3, 0.0), ED(0.1, 0.0)]), 2)
    assert epsilon_of(ev2, 1e-6) == pytest.approx(0.6, rel=1e-15)


def test_parallel_expansion_limit_composes_all_branches():
    # 2**8 = 256 choices: still enumerated (worst branch exact); 2**9 = 512 > 256: every branch composed
    # (a sound upper bound), which for these (epsilon, 0) branches is the sum of all of them
    par = ParallelDpEvent([ED(0.1, 0.0), ED(0.2, 0.0)])
    assert epsilon_of(dpe.ComposedDpEvent([par] * 8), 1e-6) == pytest.approx(8 * 0.2, rel=1e-12)
    assert epsilon_of(dpe.ComposedDpEvent([par] * 9), 1e-6) == pytest.approx(9 * 0.3, rel=1e-12)
    # self-composition: multisets of 255 choices among 2 = 256 (enumerated); of 256 = 257 (composed)
    assert epsilon_of(dpe.SelfComposedDpEvent(par, 255), 1e-6) == pytest.approx(255 * 0.2, rel=1e-12)
    assert epsilon_of(dpe.SelfComposedDpEvent(par, 256), 1e-6) == pytest.approx(256 * 0.3, rel=1e-12)
    # beyond the limit with a Gaussian: all branches composed by GDP
    gpar = ParallelDpEvent([G(2.0), G(3.0)])
    assert epsilon_of(dpe.ComposedDpEvent([gpar] * 9), 1e-6) == pytest.approx(
        _gdp_eps(_mu(*([2.0, 3.0] * 9)), 1e-6), rel=1e-7)
    assert epsilon_of(dpe.SelfComposedDpEvent(dpe.ComposedDpEvent([gpar, G(4.0)]), 300), 1e-6) == \
        pytest.approx(_gdp_eps(math.sqrt(300) * _mu(2.0, 3.0, 4.0), 1e-6), rel=1e-7)


def test_parallel_nested_in_sampling_is_refused():
    with pytest.raises(ValueError) as info:
        epsilon_of(dpe.PoissonSampledDpEvent(0.1, ParallelDpEvent([G(1.0), G(2.0)])), 1e-6)
    assert str(info.value) == "A parallel event cannot be nested inside PoissonSampledDpEvent."


# ---- certify_release, PrivacyReport, _event_summary


def _release(events, budget, **kw):
    # a mechanism's frame: certify_release's default stacklevel=3 points the warning at ITS caller
    return certify_release(events, mechanism="toy", budget=budget, relation=Relation.REPLACE_ONE,
                           calibration="tight", **kw)


def test_certify_release_reports_the_accountants_epsilon_and_certifies_at_equality():
    events = [ED(0.25, 0.0), ED(0.25, 0.0)]  # basic composition: exactly 0.5
    rep = _release(events, PrivacyBudget(0.5, 1e-6))
    assert rep.epsilon == 0.5 and rep.certified is True
    assert rep.delta == 1e-6 and rep.requested_delta == 1e-6 and rep.requested_epsilon == 0.5
    assert rep.mechanism == "toy" and rep.relation is Relation.REPLACE_ONE and rep.calibration == "tight"
    assert rep.events == tuple(events) and rep.accounting == "auto"
    assert rep.notes == (RANDOM_STATE_NOTE,)
    assert rep.event == dpe.ComposedDpEvent(events)
    # a Gaussian: the exact GDP epsilon at the budget's delta
    g = _release([G(2.0)], PrivacyBudget(5.0, 1e-5))
    assert g.epsilon == pytest.approx(_gdp_eps(0.5, 1e-5), rel=1e-7) and g.certified


def test_certify_release_passes_relation_and_accounting_through():
    ev = [dpe.PoissonSampledDpEvent(0.1, G(1.0))]
    rep = certify_release(ev, mechanism="m", budget=PrivacyBudget(10.0, 1e-6), relation=Relation.ADD_REMOVE,
                          calibration="paper", accounting="pld")
    assert rep.epsilon == pytest.approx(PLDAccountant(AR).compose(ev[0]).get_epsilon(1e-6), rel=1e-12)
    assert rep.accounting == "pld" and rep.calibration == "paper" and rep.relation is Relation.ADD_REMOVE


def test_certify_release_notes():
    rep = _release([G(2.0)], PrivacyBudget(5.0, 1e-5), notes=["a caveat", RANDOM_STATE_NOTE])
    assert rep.notes == ("a caveat", RANDOM_STATE_NOTE)  # not added twice
    rep = _release([G(2.0)], PrivacyBudget(5.0, 1e-5), notes=("a caveat",))
    assert rep.notes == ("a caveat", RANDOM_STATE_NOTE)
    empty = _release([], PrivacyBudget(5.0, 1e-5))  # no release: no randomness to assume anything of
    assert empty.notes == () and empty.epsilon == 0.0 and empty.certified


def test_certify_release_uncertified_warns_and_notes_it():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = _release([ED(0.75, 0.0)], PrivacyBudget(0.5, 1e-6))
    message = ("toy with calibration='tight' does not certify the requested epsilon=0.5 at delta=1e-06: "
               "the accountant certifies epsilon=0.75.")
    assert rep.certified is False and rep.epsilon == 0.75
    assert rep.notes == (RANDOM_STATE_NOTE, message)
    assert len(caught) == 1 and caught[0].category is UncertifiedPrivacyWarning
    assert str(caught[0].message) == message
    # (the frame the warning names, stacklevel=3, is not asserted: mutmut's trampoline adds frames, so
    # such a test cannot pass under the mutation run; docs/privacy-audit.md lists that mutant)


def test_privacy_report_str_and_dict():
    rep = _release([G(2.0), dpe.SelfComposedDpEvent(ED(0.1, 1e-9), 2)], PrivacyBudget(5.0, 1e-5),
                   notes=["n"])
    text = (f"toy: ({rep.epsilon:.4g}, 1e-05)-DP under replace_one neighbours "
            "(certified; requested (5, 1e-05), calibration=tight)")
    assert str(rep) == text
    assert rep.to_dict() == {
        "mechanism": "toy", "relation": "replace_one", "epsilon": rep.epsilon, "delta": 1e-5,
        "requested_epsilon": 5.0, "requested_delta": 1e-5, "certified": True, "calibration": "tight",
        "accounting": "auto",
        "events": [{"type": "Gaussian", "noise_multiplier": 2.0},
                   {"type": "SelfComposed", "count": 2,
                    "event": {"type": "EpsilonDelta", "epsilon": 0.1, "delta": 1e-9}}],
        "notes": ["n", RANDOM_STATE_NOTE],
        "noise_source": "seeded",
    }
    with pytest.warns(UncertifiedPrivacyWarning):
        bad = _release([G(0.5)], PrivacyBudget(0.1, 1e-5))
    assert "(NOT certified; requested (0.1, 1e-05)" in str(bad)


def test_event_summary_names_every_field():
    assert _event_summary(dpe.ComposedDpEvent([L(1.0), ParallelDpEvent([G(2.0), dpe.NoOpDpEvent()])])) == {
        "type": "Composed", "events": [
            {"type": "Laplace", "noise_multiplier": 1.0},
            {"type": "Parallel", "events": [{"type": "Gaussian", "noise_multiplier": 2.0}, {"type": "NoOp"}]},
        ]}
    assert _event_summary(dpe.PoissonSampledDpEvent(0.1, G(2.0))) == {
        "type": "PoissonSampled", "sampling_probability": 0.1,
        "event": {"type": "Gaussian", "noise_multiplier": 2.0}}
    # fields are read by name; dp_accounting's names that are listed: sample_size, rho, xi, num_buckets,
    # dataset_size, noise_parameter (source_dataset_size is not listed, so not reported)
    assert _event_summary(dpe.SampledWithoutReplacementDpEvent(100, 10, L(1.0))) == {
        "type": "SampledWithoutReplacement", "sample_size": 10,
        "event": {"type": "Laplace", "noise_multiplier": 1.0}}
    assert _event_summary(dpe.ZCDpEvent(0.5, 0.1)) == {"type": "ZC", "rho": 0.5, "xi": 0.1}
    assert _event_summary(dpe.RandomizedResponseDpEvent(0.3, 4)) == {
        "type": "RandomizedResponse", "noise_parameter": 0.3, "num_buckets": 4}
    assert _event_summary(dpe.TruncatedSubsampledGaussianDpEvent(1000, 0.1, 120, 1.5)) == {
        "type": "TruncatedSubsampledGaussian", "noise_multiplier": 1.5, "sampling_probability": 0.1,
        "dataset_size": 1000}


# ---- Accountant: ceiling, check / spend, relation, sharing


def test_accountant_defaults_and_ceiling_delta():
    acc = Accountant()
    assert acc.ceiling is None and acc.spent() == (0.0, 1e-6) and acc.relation is None
    assert acc.accounting == "auto" and acc.remaining_epsilon() == math.inf and acc.entries == ()
    assert Accountant(delta=1e-8).spent() == (0.0, 1e-8)
    pure = Accountant(1.0)
    assert pure.ceiling == PrivacyBudget(1.0, 0.0) and pure.spent() == (0.0, 0.0)
    assert Accountant(2.0, 1e-5, relation="add_remove").relation is Relation.ADD_REMOVE
    with pytest.raises(ValueError, match=r"^The 'accounting' parameter must be one of"):
        Accountant(accounting="exact")
    with pytest.raises(ValueError, match=r"^The 'relation' parameter of Accountant must be one of"):
        Accountant(relation="neighbours")
    with pytest.raises(ValueError, match=r"'delta' parameter"):
        Accountant(delta=1.5)


def test_spend_up_to_exactly_the_ceiling_and_refuse_beyond_recording_nothing():
    acc = Accountant(1.0, 1e-6)
    assert acc.spend(ED(0.5, 0.0), "replace_one", label="a") == 0.5
    assert acc.check(ED(0.5, 0.0), "replace_one") == 1.0  # exactly at the ceiling: allowed
    assert acc.spend(ED(0.5, 0.0), "replace_one", label="b") == 1.0
    assert acc.remaining_epsilon() == 0.0
    with pytest.raises(BudgetExceededError) as info:
        acc.spend(ED(1e-9, 0.0), "replace_one")
    assert str(info.value) == ("Refused: this release would bring the accountant to epsilon=1 at "
                               "delta=1e-06, above its ceiling epsilon=1 (spent so far: 1). Nothing was "
                               "released.")
    assert [(e.label, e.epsilon_after, e.status) for e in acc.entries] == [("a", 0.5, "released"),
                                                                          ("b", 1.0, "released")]
    assert acc.events == (ED(0.5, 0.0), ED(0.5, 0.0)) and acc.epsilon_spent() == 1.0
    assert acc.ledger == dpe.ComposedDpEvent([ED(0.5, 0.0), ED(0.5, 0.0)])


def test_check_is_the_composition_with_what_is_spent_at_the_ceiling_delta():
    acc = Accountant(10.0, 1e-5)
    acc.spend(G(2.0), "replace_one")
    assert acc.check(G(3.0), "replace_one") == pytest.approx(_gdp_eps(_mu(2.0, 3.0), 1e-5), rel=1e-7)
    assert len(acc.entries) == 1  # check records nothing
    assert acc.epsilon_spent() == pytest.approx(_gdp_eps(0.5, 1e-5), rel=1e-7)
    assert acc.epsilon_spent(1e-3) == pytest.approx(_gdp_eps(0.5, 1e-3), rel=1e-7)
    assert acc.remaining_epsilon() == pytest.approx(10.0 - _gdp_eps(0.5, 1e-5), rel=1e-9)
    assert Accountant(1.0, 1e-5, accounting="rdp").check(G(20.0), "replace_one") == pytest.approx(
        RdpAccountant(neighboring_relation=AR).compose(G(20.0)).get_epsilon(1e-5), rel=1e-12)


def test_non_private_spend_refused_under_a_ceiling():
    with pytest.raises(BudgetExceededError):
        Accountant(1e6, 0.5).spend(dpe.NonPrivateDpEvent(), "replace_one")


def test_relation_is_fixed_by_the_first_spend_and_used_for_sampled_events():
    ev = dpe.PoissonSampledDpEvent(0.1, G(1.0))
    acc = Accountant()
    # the hypothetical spend is evaluated under ITS relation (sampled: relation-dependent)
    assert acc.check(ev, "add_remove") == pytest.approx(
        epsilon_of(ev, 1e-6, relation="add_remove"), rel=1e-12)
    assert epsilon_of(ev, 1e-6, relation="add_remove") < epsilon_of(ev, 1e-6, relation="replace_one")
    assert acc.relation is None
    acc.spend(ev, Relation.ADD_REMOVE)
    assert acc.relation is Relation.ADD_REMOVE
    assert acc.epsilon_spent() == pytest.approx(epsilon_of(ev, 1e-6, relation="add_remove"), rel=1e-12)
    with pytest.raises(ValueError) as info:
        acc.check(ev, "replace_one")
    assert str(info.value) == ("The accountant records guarantees under 'add_remove' neighbours; a release "
                               "under 'replace_one' cannot be composed with them. Use one accountant per "
                               "relation.")
    # an accountant without a stated relation and no spend reads a sampled ledger under replace-one
    fresh = Accountant()
    assert fresh._epsilon([ev], 1e-6) == pytest.approx(
        epsilon_of(ev, 1e-6, relation="replace_one"), rel=1e-12)
    assert fresh._epsilon([], 1e-6) == 0.0


def test_mark_failed_and_failures():
    acc = Accountant()
    acc.spend(G(2.0), "replace_one", label="x")
    acc.spend(G(3.0), "replace_one", label="y")
    acc.mark_failed(0, "ValueError")
    assert acc.entries[0].status == "failed: ValueError" and acc.entries[0].label == "x"
    assert acc.entries[0].event == G(2.0) and acc.entries[0].epsilon_after == pytest.approx(
        _gdp_eps(0.5, 1e-6), rel=1e-7)
    assert acc.failures == (acc.entries[0],)
    assert acc.epsilon_spent() == pytest.approx(_gdp_eps(_mu(2.0, 3.0), 1e-6), rel=1e-7)  # still charged


def test_accountant_is_shared_by_copy_and_frozen_by_pickle():
    import copy

    acc = Accountant(5.0, 1e-6)
    acc.spend(G(2.0), "replace_one")
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    frozen = pickle.loads(pickle.dumps(acc))
    assert frozen.frozen is True and acc.frozen is False and frozen.entries == acc.entries
    with pytest.raises(BudgetExceededError) as info:
        frozen.check(G(100.0), "replace_one")
    assert str(info.value) == ("This Accountant is a pickled copy (e.g. in a worker process) and cannot "
                               "spend: its spending would not reach the original ledger. Run with n_jobs=1 "
                               "or fit in the process that owns the accountant.")
    with frozen._lock:  # the lock is recreated
        pass


def test_accountant_repr():
    acc = Accountant(2.0, 1e-6)
    assert repr(acc) == "Accountant(ceiling=(2, 1e-06), relation=unset, spends=0, epsilon_spent=0)"
    acc.spend(ED(0.5, 0.0), "add_remove")
    assert repr(acc) == "Accountant(ceiling=(2, 1e-06), relation=add_remove, spends=1, epsilon_spent=0.5)"
    assert repr(Accountant()) == "Accountant(no ceiling, relation=unset, spends=0, epsilon_spent=0)"


# ---- SampledGaussianAccountant: the better of PLD and the unsampled GDP bound


@pytest.mark.parametrize("dp_rel,factor", [(RO, 0.5), (AR, 1.0)])
def test_sampled_accountant_is_the_min_of_pld_and_the_unsampled_bound(dp_rel, factor):
    ev = dpe.ComposedDpEvent([dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.05, G(1.0)), 10), G(4.0)])
    acc = SampledGaussianAccountant(dp_rel).compose(ev)
    pld = PLDAccountant(dp_rel, value_discretization_interval=1e-3).compose(ev).get_epsilon(1e-6)
    bound = _gdp_eps(math.sqrt(10 / factor**2 + 1 / 16), 1e-6)
    assert pld < bound  # amplification helps here
    assert acc.get_epsilon(1e-6) == pytest.approx(pld, rel=1e-12)
    # use_pld=False: the unsampled bound (not served from the cache of the PLD answer)
    nopld = SampledGaussianAccountant(dp_rel, use_pld=False).compose(ev)
    assert nopld.get_epsilon(1e-6) == pytest.approx(bound, rel=1e-7)
    # sampling probability 1, many steps: the unsampled bound is the better one
    full = dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(1.0, G(2.0)), 3)
    got = SampledGaussianAccountant(dp_rel).compose(full).get_epsilon(1e-6)
    assert got <= _gdp_eps(math.sqrt(3) / (2.0 * factor), 1e-6) * (1 + 1e-7)


def test_sampled_accountant_below_the_pld_threshold_uses_the_bound_only():
    ev = dpe.ComposedDpEvent([dpe.PoissonSampledDpEvent(0.01, G(0.049)), G(5.0)])
    got = SampledGaussianAccountant(AR).compose(ev).get_epsilon(1e-6)
    assert got == pytest.approx(_gdp_eps(_mu(0.049, 5.0), 1e-6), rel=1e-7)
    # the smallest multiplier is found inside self-compositions too
    rep = dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.01, G(0.049)), 2)
    got = SampledGaussianAccountant(AR).compose(rep).get_epsilon(1e-6)
    assert got == pytest.approx(_gdp_eps(_mu(0.049, 0.049), 1e-6), rel=1e-7)
    # at exactly the threshold the PLD is used: its answer at q = 0.001 (about 254) is well below the
    # unsampled bound (mu = 20: about 294); the PLD's value itself is pinned above at larger multipliers
    at = dpe.PoissonSampledDpEvent(0.001, G(0.05))
    assert SampledGaussianAccountant(AR).compose(at).get_epsilon(1e-6) < 0.9 * _gdp_eps(20.0, 1e-6)


def test_sampled_accountant_answers_depend_on_delta_and_relation_not_on_a_stale_cache():
    ev = dpe.PoissonSampledDpEvent(0.2, G(1.5))
    ro = SampledGaussianAccountant(RO).compose(ev)
    ar = SampledGaussianAccountant(AR).compose(ev)
    assert ro.get_epsilon(1e-6) == pytest.approx(
        PLDAccountant(RO, value_discretization_interval=1e-3).compose(ev).get_epsilon(1e-6), rel=1e-12)
    assert ar.get_epsilon(1e-6) == pytest.approx(
        PLDAccountant(AR, value_discretization_interval=1e-3).compose(ev).get_epsilon(1e-6), rel=1e-12)
    assert ro.get_epsilon(1e-6) > ar.get_epsilon(1e-6)
    assert ar.get_epsilon(1e-3) < ar.get_epsilon(1e-6)
    # composing more changes the answer (the key holds the events)
    assert ar.compose(ev).get_epsilon(1e-6) > SampledGaussianAccountant(AR).compose(ev).get_epsilon(1e-6)
    assert SampledGaussianAccountant(AR).get_epsilon(1e-6) == 0.0
    assert SampledGaussianAccountant(AR).compose(dpe.NoOpDpEvent()).get_epsilon(1e-6) == 0.0


def test_sampled_accountant_supports_only_gaussian_and_sampled_gaussian():
    acc = SampledGaussianAccountant(AR)
    for ok in [G(1.0), dpe.NoOpDpEvent(), dpe.PoissonSampledDpEvent(0.1, G(1.0)),
               dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.1, G(1.0)), 3),
               dpe.ComposedDpEvent([G(1.0), dpe.PoissonSampledDpEvent(0.1, G(1.0))])]:
        assert acc.supports(ok)
    for bad in [L(1.0), dpe.PoissonSampledDpEvent(0.1, L(1.0)), dpe.SelfComposedDpEvent(L(1.0), 2),
                dpe.ComposedDpEvent([G(1.0), L(1.0)]), dpe.NonPrivateDpEvent()]:
        assert not acc.supports(bad)
    with pytest.raises(dp_accounting.UnsupportedEventError,
                       match=r"SampledGaussianAccountant supports Gaussian and Poisson-sampled "
                       r"Gaussian events.\] caused by subevent LaplaceDpEvent\(noise_multiplier=1.0\)"):
        acc.compose(L(1.0))
    assert acc.get_epsilon(1e-6) == 0.0  # nothing recorded by the refused compose


def test_leaf_accountants_keep_their_relation_and_name_the_unsupported_event():
    assert GaussianDpAccountant(RO).neighboring_relation is RO
    assert PureDpAccountant(RO).neighboring_relation is RO
    acc = GaussianDpAccountant()
    assert acc.compose(dpe.NonPrivateDpEvent()).get_epsilon(1e-6) == math.inf  # not ignored
    assert PureDpAccountant().compose(dpe.SelfComposedDpEvent(dpe.NonPrivateDpEvent(), 2)).get_epsilon(0) == \
        math.inf
    with pytest.raises(dp_accounting.UnsupportedEventError) as info:
        GaussianDpAccountant().compose(dpe.ComposedDpEvent([G(1.0), L(2.0)]))
    assert ("[GaussianDpAccountant supports only Gaussian, composed and no-op events.] caused by subevent "
            "LaplaceDpEvent(noise_multiplier=2.0)") in str(info.value)


def test_calibrate_laplace_is_basic_composition_by_hand():
    # k Laplace releases of multiplier b are (k / b)-DP (basic composition): b = k / epsilon, at delta 0
    b = calibrate(lambda x: dpe.SelfComposedDpEvent(L(x), 4), 0.5, 0.0)
    assert b == pytest.approx(8.0, abs=1e-8) and 4 / b <= 0.5


def test_calibrate_reads_the_event_through_make_event():
    # a mechanism whose event is built from the parameter (noise std 3p over a sensitivity of 2: the
    # multiplier is 1.5 p): the answer is the plain multiplier divided by 1.5
    plain = calibrate(lambda x: G(x), 1.0, 1e-5)
    assert calibrate(lambda p: G(1.5 * p), 1.0, 1e-5) == pytest.approx(plain / 1.5, rel=1e-8)


def test_calibrate_sampled_gaussian_with_rdp_is_rdps_own_answer():
    # accounting="rdp" on a sampled Gaussian: dp_accounting's RDP accountant alone decides (not bounded
    # by the Gaussian-DP no-amplification multiplier, which is smaller here: q = 1, RDP's loose conversion)
    def make(x):
        return dpe.PoissonSampledDpEvent(1.0, G(x))
    s = calibrate(make, 1.0, 1e-5, relation="add_remove", accounting="rdp")
    rdp = lambda x: RdpAccountant(neighboring_relation=AR).compose(make(x)).get_epsilon(1e-5)  # noqa: E731
    assert rdp(s) <= 1.0 + 1e-9 and rdp(s * (1 - 1e-6)) > 1.0
    assert s > calibrate(lambda x: G(x), 1.0, 1e-5) * 1.05


def test_calibrate_towards_a_huge_epsilon_builds_no_pld(monkeypatch):
    # below the PLD threshold the answer comes from the no-amplification bound alone: no PLD grid is
    # built (at a multiplier below 0.05 one would take seconds to minutes). Counts PLD constructions.
    import dpspectral.privacy._accounting as accounting_module

    built = []

    class CountingPLD(PLDAccountant):
        def __init__(self, *args, **kwargs):
            built.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(accounting_module, "PLDAccountant", CountingPLD)
    accounting_module._SAMPLED_CACHE.clear()
    s = calibrate(lambda x: dpe.PoissonSampledDpEvent(0.01, G(x)), 3000.0, 1e-5, relation="add_remove")
    assert s < 0.05 and built == []
    # and above it the PLD is what decides (amplification): it is built
    calibrate(lambda x: dpe.PoissonSampledDpEvent(0.05, G(x)), 1.0, 1e-5, relation="add_remove")
    assert built


def test_sampled_accountant_composes_count_copies():
    # compose(event, count) is count copies: the PLD's own answer for count copies, and for the bound
    # sqrt(count) times mu (GDP)
    ev = dpe.PoissonSampledDpEvent(0.1, G(2.0))
    want = PLDAccountant(AR, value_discretization_interval=1e-3).compose(ev, 3).get_epsilon(1e-6)
    assert SampledGaussianAccountant(AR).compose(ev, 3).get_epsilon(1e-6) == pytest.approx(want, rel=1e-12)
    nopld = SampledGaussianAccountant(AR, use_pld=False).compose(ev, 3).get_epsilon(1e-6)
    assert nopld == pytest.approx(_gdp_eps(math.sqrt(3) / 2.0, 1e-6), rel=1e-7)


def test_empty_compositions_do_not_lower_the_smallest_multiplier():
    # an empty ComposedDpEvent has no multiplier (min's default: infinity), so it changes nothing
    empty = dpe.ComposedDpEvent([])
    ev = dpe.ComposedDpEvent([L(0.04), G(3.0), empty])
    assert epsilon_of(ev, 1e-6) == pytest.approx(25.0 + _gdp_eps(1 / 3, 1e-6), rel=1e-7)
    s_ev = dpe.ComposedDpEvent([dpe.PoissonSampledDpEvent(0.01, G(0.049)), empty])
    assert SampledGaussianAccountant(AR).compose(s_ev).get_epsilon(1e-6) == pytest.approx(
        _gdp_eps(1 / 0.049, 1e-6), rel=1e-7)


def test_small_laplace_multiplier_inside_a_self_composition_is_found():
    # SelfComposed(Laplace(0.04), 2) with a Gaussian: basic composition, 2 / 0.04 + the Gaussian's epsilon
    ev = dpe.ComposedDpEvent([dpe.SelfComposedDpEvent(L(0.04), 2), G(3.0)])
    assert epsilon_of(ev, 1e-6) == pytest.approx(50.0 + _gdp_eps(1 / 3, 1e-6), rel=1e-7)


def test_make_accountant_relation_and_kind_for_each_method():
    # unsampled events are read under add/remove whatever the stated relation; a composition containing
    # a sampled event under the stated one
    assert make_accountant("auto", Relation.REPLACE_ONE, G(1.0)).neighboring_relation is AR
    assert make_accountant("auto", Relation.REPLACE_ONE, L(1.0)).neighboring_relation is AR
    mixed = dpe.ComposedDpEvent([G(1.0), dpe.PoissonSampledDpEvent(0.1, G(1.0))])
    assert make_accountant("auto", Relation.REPLACE_ONE, mixed).neighboring_relation is RO
    assert type(make_accountant("gaussian", Relation.REPLACE_ONE)) is GaussianDpAccountant
    # an explicit method is never rerouted to basic composition for small Laplace multipliers
    small = dpe.ComposedDpEvent([L(0.04), G(3.0)])
    assert epsilon_of(small, 1e-6, accounting="rdp") == pytest.approx(
        RdpAccountant(neighboring_relation=AR).compose(small).get_epsilon(1e-6), rel=1e-12)


@pytest.mark.parametrize("use_pld", [True, False])
def test_sampled_accountant_counts_repeated_compositions(use_pld):
    # compose(event, count) is count releases: both the PLD and the unsampled bound must see the count
    # (kills the mutants that drop the count in _compute_epsilon: they report one step's epsilon)
    step = dpe.PoissonSampledDpEvent(0.05, G(1.0))
    got = SampledGaussianAccountant(AR, use_pld=use_pld).compose(step, 10).get_epsilon(1e-6)
    as_one = SampledGaussianAccountant(AR, use_pld=use_pld).compose(
        dpe.SelfComposedDpEvent(step, 10)).get_epsilon(1e-6)
    assert got == pytest.approx(as_one, rel=1e-12)
    if use_pld:
        pld = PLDAccountant(AR, value_discretization_interval=1e-3).compose(step, 10).get_epsilon(1e-6)
        assert got == pytest.approx(pld, rel=1e-12)
    else:
        assert got == pytest.approx(_gdp_eps(math.sqrt(10), 1e-6), rel=1e-7)
    one = SampledGaussianAccountant(AR, use_pld=use_pld).compose(step).get_epsilon(1e-6)
    assert got > 1.2 * one  # one step alone (the mutants) is well below ten


def test_spend_records_an_empty_label_by_default():
    acc = Accountant()
    acc.spend(G(3.0), "replace_one")
    assert acc.entries[0].label == ""


@pytest.mark.parametrize("relation,dp_rel", [("replace_one", RO), ("add_remove", AR)])
def test_mixed_event_evaluates_its_rest_under_the_stated_relation(relation, dp_rel):
    # an (eps0, 0) part plus a sampled Gaussian: the rest is evaluated under the stated relation (the
    # sampled answers differ between the relations), and eps0 adds by basic composition
    from dpspectral.privacy import Relation, epsilon_of

    sampled = dpe.PoissonSampledDpEvent(0.05, G(1.0))
    got = epsilon_of([ED(0.1, 0.0), sampled], 1e-6, relation=Relation(relation))
    pld = PLDAccountant(dp_rel, value_discretization_interval=1e-3).compose(sampled).get_epsilon(1e-6)
    assert got == pytest.approx(0.1 + pld, rel=1e-12)


def test_sampled_accountant_ignores_an_empty_composition():
    # an empty ComposedDpEvent releases nothing: it has no smallest multiplier (inf), and the answer is
    # that of the rest
    step = dpe.PoissonSampledDpEvent(0.01, G(1.0))
    with_empty = SampledGaussianAccountant(AR).compose(dpe.ComposedDpEvent([step, dpe.ComposedDpEvent([])]))
    alone = SampledGaussianAccountant(AR).compose(step)
    assert with_empty.get_epsilon(1e-6) == pytest.approx(alone.get_epsilon(1e-6), rel=1e-12)


def test_classic_noise_multiplier_refuses_a_bad_epsilon_with_its_table_message():
    """The classic formula checks epsilon through the constraint table (exact message)."""
    from dpspectral._constraints import InvalidParameterError
    from dpspectral.privacy._gaussian import classic_noise_multiplier

    for bad in (-1, 0, 0.0, float("nan"), float("inf")):
        with pytest.raises(InvalidParameterError) as info:
            classic_noise_multiplier(bad, 1e-5)
        assert str(info.value) == (
            f"The 'epsilon' parameter of classic_noise_multiplier must be a float in (0, inf). Got "
            f"{bad!r} instead.")
    assert classic_noise_multiplier(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)


def test_row_norms_of_dense_and_sparse_rows() -> None:
    """``row_norms`` returns the Euclidean norm of every row, dense or sparse (kills a dense path that
    returns nothing)."""
    from dpspectral.privacy import row_norms

    X = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, -1.0]])
    np.testing.assert_array_equal(row_norms(X), [5.0, 0.0, np.sqrt(2.0)])
    np.testing.assert_array_equal(row_norms(sp.csr_matrix(X)), [5.0, 0.0, np.sqrt(2.0)])
