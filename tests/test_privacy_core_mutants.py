"""Tests that kill the mutants of the privacy core that tests/test_privacy.py left alive.

Written against the survivors of ``make mutation`` (tools/mutation.py, mutmut 3): each test names the
mutation it kills. Every assertion here is exact (no statistics), except the noise-spread test of
``symmetric_gaussian``, whose false-positive rate is stated there. The score and the equivalent
mutants are recorded in docs/privacy-audit.md ("Mutation testing").
"""

from __future__ import annotations

import math

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
from dpspectral.privacy.clipping import (
    ROUNDING_SLACK,
    clip_threshold,
    row_norms,
    sensitivity_norm,
)
from dpspectral.privacy.gaussian import _SPLIT_MARGIN, analytic_noise_multiplier
from dpspectral.privacy.pipeline import norm_violation_error, not_finite_error, validate_rows

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
    with pytest.raises(TypeError, match=r"^my_fit needs numeric data; got an array of dtype <U1 \(convert or "
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
    from dpspectral.privacy.pipeline import public_seed

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
