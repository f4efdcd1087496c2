"""The rounding bound at realistic sizes: every CPU path sums its rows in groups, so an add/remove release
is widened at up to ``2**28`` public rows (dpspectral.privacy._rounding, "Neighbours and n"), and its
noise scale never depends on the private number of rows."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from dpspectral import DPPCA
from dpspectral import _moments as moments_module
from dpspectral._moments import accumulate, gram_block_rows, summation_of
from dpspectral.pca._covariance import analyze_gauss
from dpspectral.preprocessing import DPStandardScaler
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._clipping import sensitivity_norm
from dpspectral.privacy._rounding import (
    MAX_WIDENING,
    PUBLIC_ROWS,
    UNGROUPED_PUBLIC_ROWS,
    Summation,
    public_rows,
    rounding_share,
    statistic_error,
)

U = Fraction(1, 2**53)  # float64's unit roundoff
S = 2**14  # a group is closed once it holds this many rows


def _gamma(h: int) -> Fraction:
    return h * U / (1 - h * U)


def _direct_error(n: int, b: int, kind: str, term: float) -> Fraction:
    """``gamma_h n T`` with the height written out: groups of fewer than ``b`` rows, closed at ``S`` rows
    (``b + ceil(n / S)`` additions for X^T X, ``2 b + ceil(n / S)`` for a sum of rows, never above the
    ``n + 1`` of any order), one rounding more for a product."""
    h = min(n + 1, (b if kind == "products" else 2 * b) + -(-n // S)) + (kind == "products")
    return _gamma(h) * n * Fraction(term)


def _unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# -- the bound at several n against a direct computation ------------------------------------------------
@pytest.mark.parametrize("n", [1, 1000, 2**14, 60_000, 2**20, 2**28, 2**30])
@pytest.mark.parametrize("kind", ["products", "sums"])
def test_the_grouped_bound_against_a_direct_computation(n, kind):
    d, term = 784, 2.0
    b = gram_block_rows(d)
    assert b == S + 1024  # pieces of 1024 rows at this width
    summation = summation_of(np.zeros((1, d)))
    exact = _direct_error(n, b, kind, term)
    assert Fraction(statistic_error(summation, n, term, kind=kind)) >= exact  # rounded up, never below
    assert statistic_error(summation, n, term, kind=kind) == pytest.approx(float(exact), rel=1e-12)
    sensitivity = math.sqrt(2.0) * term  # replace-one: n public, the bound at n
    share = rounding_share(summation, n, Relation.REPLACE_ONE, term, sensitivity, kind=kind)
    assert share == pytest.approx(float(2 * exact) / sensitivity, rel=1e-12)
    # add/remove: n private, the bound at the public 2**28 rows whatever n (a term of the sensitivity)
    share = rounding_share(summation, n, Relation.ADD_REMOVE, term, term, kind=kind)
    assert share == pytest.approx(float(2 * _direct_error(2**28, b, kind, term)) / term, rel=1e-12)


def test_the_public_rows_are_the_most_within_the_widening():
    """2**28 rows at 784 features (widening about 2e-3 for X^T X, 3e-3 for a sum of rows); twice as many
    would pass 0.5 %. At one feature a group holds up to 2**14 + 2**18 rows: fewer public rows."""
    wide = summation_of(np.zeros((1, 784)))
    for kind in ("products", "sums"):
        assert public_rows(wide, kind) == PUBLIC_ROWS == 2**28
        at = float(2 * _direct_error(2**28, gram_block_rows(784), kind, 1.0))
        assert 1e-3 < at <= MAX_WIDENING
        assert float(2 * _direct_error(2**29, gram_block_rows(784), kind, 1.0)) > MAX_WIDENING
    narrow = summation_of(np.zeros((1, 1)))
    assert narrow.block_rows == 2**14 + 2**18
    assert public_rows(narrow, "sums") == 2**25
    assert float(2 * _direct_error(2**25, narrow.block_rows, "sums", 1.0)) <= MAX_WIDENING
    assert float(2 * _direct_error(2**26, narrow.block_rows, "sums", 1.0)) > MAX_WIDENING
    # a path whose height grows with n keeps the small public bound: 2**28 rows would be ~16x the noise
    assert public_rows(Summation()) == public_rows(None) == UNGROUPED_PUBLIC_ROWS == 2**16
    assert public_rows(Summation("float32", block_rows=100)) == UNGROUPED_PUBLIC_ROWS
    assert 2 * statistic_error(Summation(), 2**28, 1.0, kind="sums") > 10


# -- no add/remove noise scale depends on n -------------------------------------------------------------
def _gauss_scales(X: np.ndarray) -> dict:
    result = analyze_gauss(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation="add_remove",
                           centering="private", adaptive_clip=False, random_state=0)
    return {k: v for k, v in result.diagnostics.items() if k.endswith("noise_std")}


def _dppca_scales(X: np.ndarray) -> dict:
    pca = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation="add_remove", method="analyze_gauss",
                adaptive_clip=False, random_state=0).fit(X)
    return {k: v for k, v in pca.result_.diagnostics.items() if k.endswith("noise_std")}


def _scaler_scales(X: np.ndarray) -> dict:
    scaler = DPStandardScaler(bounds=(-1.0, 1.0), epsilon=1.0, delta=1e-6, relation="add_remove",
                              random_state=0).fit(X)
    return dict(scaler.release_.noise_std)


@pytest.mark.parametrize("scales", [_gauss_scales, _dppca_scales, _scaler_scales],
                         ids=["analyze_gauss", "DPPCA", "DPStandardScaler"])
def test_no_add_remove_noise_scale_depends_on_the_number_of_rows(scales):
    small, large = scales(_unit_rows(1000, 5, seed=1)), scales(_unit_rows(100_000, 5, seed=2))
    assert len(small) >= 2 and small == large  # the mean or sum, the count, ...: the same floats


# -- sparse rows and streams: summed in groups, and widened for it --------------------------------------
def _record_groups(monkeypatch) -> list[int]:
    """The rows of every group closed from now on (appended as each closes)."""
    closed: list[int] = []
    close = moments_module._GroupedSums._close_group

    def record(self):
        closed.append(self.rows)
        close(self)

    monkeypatch.setattr(moments_module._GroupedSums, "_close_group", record)
    return closed


def test_sparse_and_streamed_rows_are_summed_in_groups(monkeypatch):
    """The groups the height bound counts: each closed at 2**14 rows or more and below
    gram_block_rows(d), for sparse blocks (cut into pieces) and for streamed dense blocks alike."""
    closed = _record_groups(monkeypatch)
    d = 300  # pieces of 1024 rows
    X = _unit_rows(50_000, d, seed=3) * (np.random.default_rng(4).random((50_000, d)) < 0.05)
    dense = accumulate(X, row_norm=1.0, want_sum=True)
    for source in (sp.csr_matrix(X), [sp.csr_matrix(X[:30_000]), X[30_000:]],
                   (X[a:a + 7_000] for a in range(0, 50_000, 7_000))):
        closed.clear()
        moments = accumulate(source, row_norm=1.0, want_sum=True)
        assert len(closed) >= 2 and all(S <= rows < gram_block_rows(d) for rows in closed)
        assert sum(closed) > 50_000 - gram_block_rows(d)  # the rest: one last group, added at the end
        assert np.allclose(moments.second, dense.second, rtol=1e-12, atol=1e-12)
        assert np.allclose(moments.sum, dense.sum, rtol=1e-12, atol=1e-12)


def _scatter_widening(X, relation: str, d: int) -> float:
    """The released scatter's widening ``r``: its noise scale over the charged multiplier times the
    sensitivity (``sqrt(2) C^2`` replace-one, ``C^2`` add/remove), less one."""
    result = analyze_gauss(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, relation=relation, centering=None,
                           adaptive_clip=False, random_state=0)
    (event,) = result.privacy.events
    c2 = sensitivity_norm(1.0) ** 2
    sensitivity = c2 * (math.sqrt(2.0) if relation == "replace_one" else 1.0)
    return result.diagnostics["noise_std"] / (event.noise_multiplier * sensitivity) - 1.0


def test_sparse_and_streamed_input_are_widened_at_the_grouped_height():
    n, d = 100_000, 16
    X = _unit_rows(n, d, seed=5)
    b = gram_block_rows(d)  # 2**14 + 2**18 / 16 = 32768 rows
    c2 = sensitivity_norm(1.0) ** 2
    # replace-one, n public: the grouped height b + ceil(n / 2**14) + 1, well below the n + 2 of any order
    grouped = float(2 * _direct_error(n, b, "products", c2)) / (math.sqrt(2.0) * c2)
    any_order = float(2 * _gamma(n + 2) * n * Fraction(c2)) / (math.sqrt(2.0) * c2)
    assert grouped < 0.5 * any_order
    for source in (X, sp.csr_matrix(X), [X[:40_000], sp.csr_matrix(X[40_000:])]):
        assert _scatter_widening(source, "replace_one", d) == pytest.approx(grouped, rel=1e-6)
    # add/remove, n private: at the public 2**28 rows of the grouped path (a stream of unknown width: at
    # the most rows a group can hold at any width, 2**14 + 2**18, whose public rows are 2**26)
    at_public = float(2 * _direct_error(2**28, b, "products", 1.0))
    assert 1e-3 < at_public <= MAX_WIDENING
    for source in (X, sp.csr_matrix(X), [X[:40_000], X[40_000:]]):
        assert _scatter_widening(source, "add_remove", d) == pytest.approx(at_public, rel=1e-6)
    stream = float(2 * _direct_error(2**26, 2**14 + 2**18, "products", 1.0))
    widening = _scatter_widening((X[a:a + 10_000] for a in range(0, n, 10_000)), "add_remove", d)
    assert widening == pytest.approx(stream, rel=1e-6) and stream <= MAX_WIDENING


def test_dask_partials_are_added_in_a_tree():
    """Dask: each chunk summed in groups, then the p partials in a tree of combines of at most 4:
    3 ceil(log4 max(p, n)) + 1 additions more, whatever Dask's configured split_every; the computed
    Gram within that bound of the exact one."""
    da = pytest.importorskip("dask.array")
    import dask

    rng = np.random.default_rng(6)
    n, d = 4096, 3
    X = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 30, size=(n, 1))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    chunked = da.from_array(X, chunks=(16, d))  # 256 partials
    summation = summation_of(chunked)
    assert summation.tree == 4 and summation.partials == 256
    assert summation.height(n) == n + 1 + 3 * 6 + 1  # groups larger than n: any order, then 4**6 = 4096
    with dask.config.set(scheduler="synchronous"):
        second = accumulate(chunked, row_norm=1.0).second
        with dask.config.set(split_every=64):  # the tree is the library's, not the configuration's
            assert np.array_equal(accumulate(chunked, row_norm=1.0).second, second)
    rows = [[Fraction(float(v)) for v in row] for row in X]
    error = math.sqrt(sum(float(Fraction(float(second[i, j])) - sum(r[i] * r[j] for r in rows)) ** 2
                          for i in range(d) for j in range(d)))
    assert error <= statistic_error(summation, n, 1.0, kind="products")


# -- the scaler's sums and the GEP moments: summed in groups, widened at the grouped public rows --------
def _grouped_public_rows(d: int, kind: str) -> int:
    """The largest power of two up to 2**28 rows (2**16 at the least) whose widening, a term of the
    sensitivity, is within MAX_WIDENING, from the documented height of groups of gram_block_rows(d)."""
    rows = 2**28
    while rows > 2**16 and float(2 * _direct_error(rows, gram_block_rows(d), kind, 1.0)) > MAX_WIDENING:
        rows //= 2
    return rows


def _widened_scale(scale: float, d: int, kind: str) -> float:
    """``scale (1 + r)``, ``r = 2 err / Delta`` at the grouped public rows (a term of the sensitivity)."""
    return scale * (1.0 + float(2 * _direct_error(_grouped_public_rows(d, kind), gram_block_rows(d), kind,
                                                    1.0)))


def _moments_scales(X: np.ndarray) -> dict:
    from dpspectral.gep._moments import release_moments

    y = np.arange(X.shape[0]) % 3
    moments = release_moments(X, y, epsilon=1.0, delta=1e-6, row_norm=1.0, classes=[0, 1, 2],
                              relation="add_remove", adaptive_clip=False, random_state=0)
    return dict(moments.noise_std)


def test_the_scaler_and_the_gep_moments_are_widened_at_the_grouped_public_rows():
    """Add/remove: the same noise scales at 1,000 and 100,000 rows, each its calibrated scale times the
    widening at the public rows of rows summed in groups (fewer than 2**28 at 5 features, whose groups
    hold more rows), not at 2**16; the counts (integers) not widened."""
    from dpspectral.gep._moments import moments_plan
    from dpspectral.preprocessing import scaler_plan
    from dpspectral.privacy import PrivacyBudget

    assert _grouped_public_rows(5, "sums") == 2**27 and _grouped_public_rows(20, "sums") == 2**28
    scaler = _scaler_scales(_unit_rows(1000, 5, seed=7))
    assert scaler == _scaler_scales(_unit_rows(100_000, 5, seed=8))
    plan = scaler_plan(np.full(5, -1.0), np.full(5, 1.0), epsilon=1.0, delta=1e-6, relation="add_remove")
    kinds = {"sum": "sums", "sum_of_squares": "products"}
    for name, kind in kinds.items():
        assert scaler[name] == pytest.approx(_widened_scale(plan[name].scale, 5, kind), rel=1e-12)
        at_ungrouped = plan[name].scale * (1 + 2 * statistic_error(Summation(), 2**16, 1.0, kind=kind))
        assert scaler[name] > at_ungrouped * (1 + 1e-4)  # larger than at 2**16 rows: the bound moved
    assert scaler["count"] == plan["count"].scale

    moments = _moments_scales(_unit_rows(1000, 20, seed=9))
    assert moments == _moments_scales(_unit_rows(100_000, 20, seed=10))
    plan = moments_plan(PrivacyBudget(1.0, 1e-6), "add_remove", 1.0)
    for name, kind in {"second": "products", "sums": "sums"}.items():
        assert moments[name] == pytest.approx(_widened_scale(plan[name].scale, 20, kind), rel=1e-12)
    assert moments["counts"] == plan["counts"].scale


def test_the_scaler_and_the_class_sums_are_summed_in_groups(monkeypatch):
    """The groups the widening counts: closed at 2**14 rows or more and below gram_block_rows(d), for the
    scaler's sums and the GEP class sums; the sums within the grouped bound of the exact ones, and a data
    set of one piece summed as before, in one sum from zero (its seeded results unchanged)."""
    from dpspectral.gep._moments import _exact_moments
    from dpspectral.preprocessing import clipped_sums

    closed = _record_groups(monkeypatch)
    n, d = 60_000, 100  # pieces of 2621 rows
    rng = np.random.default_rng(11)
    X = rng.standard_normal((n, d)) * 2.0 ** -rng.integers(0, 20, size=(n, 1))
    lower, upper = np.full(d, -0.5), np.full(d, 1.5)
    _, s1, s2 = clipped_sums(X, lower, upper)
    assert len(closed) >= 3 and all(S <= rows < gram_block_rows(d) for rows in closed)
    Z = np.clip(X, lower, upper) - 0.5
    for computed, terms, kind in ((s1, Z, "sums"), (s2, Z * Z, "products")):
        exact = np.array([math.fsum(column) for column in terms.T])
        term = float(np.max(np.linalg.norm(np.abs(terms), axis=1)))
        bound = statistic_error(summation_of(X), n, term, kind=kind)
        assert 0 < np.linalg.norm(computed - exact) <= bound
    closed.clear()
    y = rng.integers(0, 3, size=n)
    _, T, _ = _exact_moments(X, y, 3, 1.0, "test")
    assert len(closed) >= 3 and all(S <= rows < gram_block_rows(d) for rows in closed)
    clipped = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    assert np.allclose(T, np.stack([clipped[y == k].sum(axis=0) for k in range(3)]), rtol=1e-12, atol=1e-12)
    small = X[:2000]  # one piece at this width: the sums of before, bit for bit
    _, s1, s2 = clipped_sums(small, lower, upper)
    Z = np.clip(small, lower, upper) - 0.5
    assert np.array_equal(s1, Z.sum(axis=0)) and np.array_equal(s2, np.einsum("ij,ij->j", Z, Z))
