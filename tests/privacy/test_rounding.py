"""Rounding in the statistic: the bounds of dpspectral.privacy._rounding against exact arithmetic, and
adversarial neighbours whose computed sums are further apart than the real-arithmetic sensitivity."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral._moments import accumulate, summation_of
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._rounding import (
    PUBLIC_ROWS,
    UNGROUPED_PUBLIC_ROWS,
    Summation,
    gamma,
    rounding_share,
    rows_bound,
    statistic_error,
    unit_roundoff,
    widened,
)


def _recursive_sum(rows: np.ndarray, dtype: type) -> np.ndarray:
    """The naive sum: a Python loop adding one row at a time in ``dtype``."""
    total = np.zeros(rows.shape[1], dtype=dtype)
    for row in rows.astype(dtype):
        total = (total + row).astype(dtype)
    return total


def _adversarial_neighbours() -> tuple[np.ndarray, np.ndarray]:
    """Two data sets of scalar rows in [-1, 1] that differ in one row (+1 against -1: the exact sums
    differ by 2, the replace-one sensitivity for C = 1).

    After the common prefix the sums are 4096 (float32 spacing 2**-11) and 4094 (spacing 2**-12). Each
    later row t = 0.7 * 2**-11 rounds the first up to a whole 2**-11 and the second down to 2**-12: the
    computed sums drift apart by 2**-12 a row, 8000 rows in all."""
    prefix = np.ones(4095)
    tail = np.full(8000, 0.7 * 2.0**-11)
    X = np.concatenate([prefix, [1.0], tail])[:, None]
    Y = np.concatenate([prefix, [-1.0], tail])[:, None]
    return X, Y


def test_naive_float32_sum_exceeds_the_sensitivity_and_the_bound_covers_it():
    X, Y = _adversarial_neighbours()
    C, sensitivity = 1.0, 2.0  # rows of norm <= C; replace-one: the sum moves by at most 2C
    assert np.abs(X).max() <= C and np.abs(Y).max() <= C and np.count_nonzero(X != Y) == 1
    exact = abs(sum(Fraction(float(v)) for v in X[:, 0]) - sum(Fraction(float(v)) for v in Y[:, 0]))
    assert exact == sensitivity
    for computed_x, computed_y in [
        (_recursive_sum(X, np.float32), _recursive_sum(Y, np.float32)),
        (np.add.accumulate(X.astype(np.float32), axis=0)[-1],
         np.add.accumulate(Y.astype(np.float32), axis=0)[-1]),
    ]:
        observed = float(np.linalg.norm(computed_x.astype(np.float64) - computed_y.astype(np.float64)))
        assert observed > 1.9 * sensitivity  # the computed sums: almost twice as far apart
        n = X.shape[0]
        err = statistic_error(Summation("float32"), n, C, kind="sums")
        assert observed <= sensitivity + 2 * err  # Delta + err(X) + err(X')
        share = rounding_share(Summation("float32"), n, Relation.REPLACE_ONE, C, sensitivity, kind="sums")
        scale, widened_sensitivity = widened(3.0 * sensitivity, sensitivity, share)
        assert widened_sensitivity >= observed  # the release is calibrated to what was computed
        assert scale / widened_sensitivity >= 3.0  # at the planned multiplier (the accounting event)


def test_float64_sums_of_the_same_neighbours_stay_within_the_float64_bound():
    X, Y = _adversarial_neighbours()
    observed = abs(float(_recursive_sum(X, np.float64)[0] - _recursive_sum(Y, np.float64)[0]))
    assert observed <= 2.0 + 2 * statistic_error(Summation(), X.shape[0], 1.0, kind="sums")


def _exact_gram(rows: np.ndarray) -> list[list[Fraction]]:
    d = rows.shape[1]
    exact = [[Fraction(0)] * d for _ in range(d)]
    for row in rows:
        r = [Fraction(float(v)) for v in row]
        for i in range(d):
            for j in range(d):
                exact[i][j] += r[i] * r[j]
    return exact


def _frobenius_distance(computed: np.ndarray, exact: list[list[Fraction]]) -> float:
    squared = sum((Fraction(float(computed[i, j])) - exact[i][j]) ** 2
                  for i in range(computed.shape[0]) for j in range(computed.shape[1]))
    return math.sqrt(float(squared))


@pytest.mark.parametrize("seed", range(4))
def test_the_library_gram_is_within_the_bound_of_its_path(seed):
    """``accumulate`` (BLAS rank-k updates in float64) on rows of norm <= C, against exact rationals;
    the rows mix magnitudes (2**-30 to 1) so that the products do round."""
    rng = np.random.default_rng(seed)
    n, d, C = 300, 4, 1.0
    rows = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 30, size=(n, 1))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)  # norms <= 1 (up to an ulp)
    moments = accumulate(rows, row_norm=C, want_sum=True)
    exact = _exact_gram(rows)
    error = _frobenius_distance(moments.second, exact)
    bound = statistic_error(summation_of(rows), n, C**2, kind="products")
    assert error <= bound
    exact_sum = [sum(Fraction(float(v)) for v in rows[:, j]) for j in range(d)]
    sum_error = math.sqrt(float(sum((Fraction(float(moments.sum[j])) - exact_sum[j]) ** 2 for j in range(d))))
    assert sum_error <= statistic_error(summation_of(rows), n, C, kind="sums")
    # a float32 Gram of the same rows, one matrix product: within the float32 bound
    rows32 = rows.astype(np.float32)
    gram32 = (rows32.T @ rows32).astype(np.float64)
    assert _frobenius_distance(gram32, _exact_gram(rows32)) <= statistic_error(
        Summation("float32"), n, C**2, kind="products")


def test_gamma_is_rounded_up_and_refuses_a_sum_too_long():
    u = unit_roundoff(np.float64)
    assert u == 2.0**-53 and unit_roundoff(np.float32) == 2.0**-24
    for k in (1, 3, 60_000, 10**7):
        exact = Fraction(k) * Fraction(u) / (1 - Fraction(k) * Fraction(u))
        assert Fraction(gamma(k, u)) >= exact
        assert gamma(k, u) <= float(exact) * (1 + 1e-15)
    with pytest.raises(ValueError, match="wider type"):
        gamma(2**24, 2.0**-24)


def test_heights_of_the_paths():
    assert Summation().height(1000) == 1001  # any blocks, any BLAS, and a group's addition to the total
    assert Summation(partials=8).height(1000) == 1008  # a tree over the partials on top
    assert Summation(block_rows=100).height(1000) == 110  # groups summed apart, then the chain
    assert Summation(block_rows=100).height(1000, products=False) == 210  # sums of rows: pieces first
    assert Summation(block_rows=5000).height(1000) == 1001  # never above the general bound
    assert Summation(followed_by=15).height(1000) == 1016  # then a product with a public 15-row matrix
    assert Summation(block_rows=150, group_rows=100).height(1000) == 160  # fewer than n / s groups
    assert Summation(partials=8, tree=2).height(1000) == 1001 + 10 + 1  # pairwise: ceil(log2 1000) + 1
    assert Summation(partials=3000, tree=2).height(1000) == 1001 + 12 + 1  # ceil(log2 3000) + 1
    assert Summation(partials=8, tree=4).height(1000) == 1001 + 3 * 5 + 1  # 3 additions a level, 4**5 > 1000


def test_the_paths_of_the_inputs():
    X = np.zeros((10, 784))
    assert summation_of(X).block_rows == 2**14 + 1024  # dense in memory: groups of X^T X summed apart
    assert summation_of(np.zeros((10, 3))).block_rows == 2**14 + 2**18 // 3  # pieces of 2**18 entries
    assert summation_of([X, X]).block_rows == 2**14 + 1024  # a list of blocks: the first block's width
    assert summation_of(iter([X])).block_rows == 2**14 + 2**18  # a stream: the width not known yet
    assert summation_of(sp.csr_matrix(X)).block_rows == 2**14 + 1024  # sparse rows: grouped as well
    assert summation_of(X).group_rows == 2**14  # a group is closed once it holds 2**14 rows
    dask_array = pytest.importorskip("dask.array")
    assert summation_of(dask_array.zeros((100, 4), chunks=(10, 4))) == Summation(
        partials=10, block_rows=2**14 + 2**18 // 4, group_rows=2**14, tree=4)


def test_the_grouped_gram_is_within_its_bound():
    """More rows than one group (2**14 + a piece): the groups summed apart, then added; against the
    exact Gram (the rows as integers times 2**-75, multiplied in Python's integers), the error within
    the grouped bound, itself below the general one."""
    rng = np.random.default_rng(11)
    n, d = 40_000, 16
    rows = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 20, size=(n, 1))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
    moments = accumulate(rows, row_norm=1.0, want_sum=True)
    second = moments.second
    scale = 2**75  # every entry (above 2**-75 in magnitude, 53 bits) is an integer times 2**-75
    K = np.array([[int(v) for v in row] for row in rows * float(scale)], dtype=object)
    exact = K.T.dot(K)  # integers: the Gram times 2**150
    error = math.sqrt(sum(float(Fraction(int(float(second[i, j]) * float(scale) ** 2)) - exact[i, j]) ** 2
                          for i in range(d) for j in range(d))) / float(scale) ** 2
    summation = summation_of(rows)
    assert summation.block_rows is not None and summation.block_rows < n
    bound = statistic_error(summation, n, 1.0, kind="products")
    assert 0 < error <= bound
    assert bound < statistic_error(Summation(), n, 1.0, kind="products")
    exact_sum = K.sum(axis=0)  # integers: the sum times 2**75
    sum_error = math.sqrt(sum(float(Fraction(int(float(moments.sum[j]) * float(scale))) - exact_sum[j]) ** 2
                              for j in range(d))) / float(scale)
    assert sum_error <= statistic_error(summation, n, 1.0, kind="sums")


def test_rows_bound_under_each_relation():
    grouped = summation_of(np.zeros((2, 784)))
    assert rows_bound(60_000, Relation.REPLACE_ONE) == 60_000  # public n
    assert rows_bound(60_000, Relation.REPLACE_ONE, grouped) == 60_000
    assert rows_bound(10, Relation.ADD_REMOVE, grouped) == PUBLIC_ROWS == 2**28  # private n: public rows
    # above it too: the noise scale, which the report states, must not depend on the private n
    assert rows_bound(10**9, Relation.ADD_REMOVE, grouped) == PUBLIC_ROWS
    assert rows_bound(None, Relation.REPLACE_ONE, grouped) == PUBLIC_ROWS
    # a path not known to be grouped: its height grows with n, a smaller public bound
    assert rows_bound(10, Relation.ADD_REMOVE) == UNGROUPED_PUBLIC_ROWS == 2**16
    assert rows_bound(None, Relation.REPLACE_ONE, Summation()) == UNGROUPED_PUBLIC_ROWS


def test_counts_are_exact():
    assert statistic_error(Summation(), 10**9, 1.0, kind="counts") == 0.0
    assert statistic_error(Summation("float32"), 2**20, 1.0, kind="counts") == 0.0
    with pytest.raises(ValueError, match="wider type"):  # float32 counts past 2**24: no bound, refused
        statistic_error(Summation("float32"), 2**25, 1.0, kind="counts")


@pytest.mark.parametrize("relation,sensitivity", [(Relation.REPLACE_ONE, math.sqrt(2.0)),
                                                  (Relation.ADD_REMOVE, 1.0)])
def test_mnist_sized_float64_widening_below_one_in_a_million(relation, sensitivity):
    share = rounding_share(Summation(), 60_000, relation, 1.0, sensitivity, kind="products")
    assert 0 < share < 1e-6
    scale, _ = widened(5.0, sensitivity, share)
    assert 0 < scale / 5.0 - 1 < 1e-6
    # float32 with the same rows would need hundreds of times the noise: the device path sums in float64
    assert rounding_share(Summation("float32"), 60_000, relation, 1.0, sensitivity, kind="products") > 100


def test_device_moments_are_summed_in_float64_unless_the_noise_is_float():
    array_api_strict = pytest.importorskip("array_api_strict")
    from dpspectral import config_context

    X = array_api_strict.asarray(np.ones((5, 3), dtype=np.float32))
    assert summation_of(X, array_api_strict).dtype == "float64"
    with config_context(noise="float"):
        assert summation_of(X, array_api_strict).dtype == "float32"


def test_a_gram_times_a_public_orthonormal_matrix_is_within_its_bound():
    """The noisy power method's ``A X``: ``A`` summed over the rows, then multiplied by ``X`` (d x p,
    orthonormal) in float32, against exact rationals; the bound ``gamma_(n+d+1) n C^2 ||X||_F``."""
    rng = np.random.default_rng(7)
    n, d, p, C = 200, 5, 3, 1.0
    rows = (rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 12, size=(n, 1))).astype(np.float32)
    rows /= np.maximum(np.linalg.norm(rows.astype(np.float64), axis=1, keepdims=True), 1.0).astype(np.float32)
    V = np.linalg.qr(rng.standard_normal((d, p)))[0].astype(np.float32)
    computed = ((rows.T @ rows) @ V).astype(np.float64)  # float32 throughout
    gram = _exact_gram(rows)
    exact = [[sum(gram[i][k] * Fraction(float(V[k, j])) for k in range(d)) for j in range(p)]
             for i in range(d)]
    error = _frobenius_distance(computed, exact)
    frobenius_v = float(np.linalg.norm(V.astype(np.float64)))
    bound = statistic_error(Summation("float32", followed_by=d), n, C**2 * frobenius_v, kind="products")
    assert 0 < error <= bound


def test_add_remove_noise_scale_does_not_depend_on_the_row_count():
    # two data sets of different (private) sizes above the public row count: the same released scale
    import dpspectral

    rng = np.random.default_rng(0)
    stds = []
    for n in (70_000, 90_000):
        X = rng.normal(size=(n, 4))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        result = dpspectral.analyze_gauss(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation="add_remove",
                                          adaptive_clip=False, centering=None, random_state=0)
        stds.append(result.diagnostics["noise_std"])
    assert stds[0] == stds[1]
