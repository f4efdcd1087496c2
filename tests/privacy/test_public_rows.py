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
def test_sparse_and_streamed_rows_are_summed_in_groups(monkeypatch):
    """The groups the height bound counts: each closed at 2**14 rows or more and below
    gram_block_rows(d), for sparse blocks (cut into pieces) and for streamed dense blocks alike."""
    closed: list[int] = []
    close = moments_module._Groups._close_group

    def record(self):
        closed.append(self.rows)
        close(self)

    monkeypatch.setattr(moments_module._Groups, "_close_group", record)
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
