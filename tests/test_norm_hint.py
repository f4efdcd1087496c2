"""The scatter pass that reuses the first pass's row norms adds exactly the rows an ordinary pass adds."""

import numpy as np
import pytest

from dpspectral._moments import accumulate, centred_norm_hint, exact_norm_hint
from dpspectral.privacy._centred_norms import centred_row_norms
from dpspectral.privacy._quantile import bin_counts, norm_edges, norm_histogram


def _data(seed: int, n: int = 3000, d: int = 37, offset: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.1, 2.0, size=(n, 1)) + offset
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True) / 5.0, 1.0)  # norms at most 5
    return X


@pytest.mark.parametrize("seed", range(4))
def test_margin_covers_the_centred_norms(seed):
    X = _data(seed)
    center = X.mean(axis=0) + np.random.default_rng(seed).normal(0, 0.01, X.shape[1])
    hint = centred_norm_hint(X, np.linalg.norm(X, axis=1), center)
    exact = centred_row_norms(X, center) ** 2
    assert np.all(np.abs(hint.approx - exact) <= hint.margin)
    assert np.all(hint.margin > 0)


def test_margin_covers_adversarial_cancellation():
    """Rows almost equal to a large centre: the expansion cancels ~1e8 to leave ~1e-8."""
    rng = np.random.default_rng(7)
    center = np.full(50, 1e4)
    X = center + rng.normal(0, 1e-4, (500, 50))
    hint = centred_norm_hint(X, np.linalg.norm(X, axis=1), center)
    exact = np.square(centred_row_norms(X, center))
    assert np.all(np.abs(hint.approx - exact) <= hint.margin)
    assert np.median(np.abs(hint.approx - exact)) > 0  # the cancellation is real here


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("clip", [0.5, 2.0, 4.0, 10.0])
def test_hinted_scatter_is_the_scatter(seed, clip):
    X = _data(seed, n=5000)
    center = X.mean(axis=0)
    plain = accumulate(X, row_norm=clip, center=center, want_second=True)
    first = accumulate(X, row_norm=5.0, want_sum=True, want_second=False, keep_norms=True)
    hinted = accumulate(X, row_norm=clip, center=center, want_second=True,
                        norm_hint=centred_norm_hint(X, first.row_norms, center))
    np.testing.assert_allclose(hinted.second, plain.second, rtol=1e-11,
                               atol=1e-11 * np.abs(plain.second).max())
    assert hinted.n_clipped == plain.n_clipped
    if clip < 4.0:
        assert plain.n_clipped > 0  # some rows are clipped: the scaled rows are checked


def test_rows_scaled_from_the_hint_stay_within_the_clip():
    """Every row as the hinted pass uses it (centred, times its factor) has a norm within the
    sensitivity's bound; most rows above the clip take their norm from the hint."""
    from dpspectral._moments import _hinted_norms
    from dpspectral.privacy._clipping import clip_threshold, sensitivity_norm

    X = _data(9, n=6000, offset=4.0)
    center = X.mean(axis=0)
    hint = centred_norm_hint(X, np.linalg.norm(X, axis=1), center)
    for clip in (0.3, 1.0, 2.5):
        norms = _hinted_norms(X, 0, hint, clip, center)
        over = norms > clip_threshold(clip)
        factors = np.where(over, clip / np.where(over, norms, 1.0), 1.0)
        used = (X - center) * factors[:, None]
        true = np.array([float(np.sqrt(np.sum(np.square(row.astype(np.longdouble))))) for row in used])
        assert true.max() <= sensitivity_norm(clip)
        exact = centred_row_norms(X, center)
        np.testing.assert_array_equal(over, exact > clip_threshold(clip))
        from_hint = over & (norms == np.sqrt(hint.approx))
        assert from_hint.sum() > 0.5 * over.sum()


@pytest.mark.parametrize("clip", [0.5, 3.0])
def test_exact_hint_uncentred(clip):
    X = _data(3, offset=0.0)
    plain = accumulate(X, row_norm=clip, want_second=True)
    first = accumulate(X, row_norm=5.0, want_second=False, keep_norms=True)
    hinted = accumulate(X, row_norm=clip, want_second=True, norm_hint=exact_norm_hint(first.row_norms))
    np.testing.assert_allclose(hinted.second, plain.second, rtol=1e-11,
                               atol=1e-11 * np.abs(plain.second).max())
    assert plain.n_clipped > 0


def test_norms_kept_only_when_asked_and_dense():
    X = _data(1)
    assert accumulate(X, row_norm=5.0, want_second=False).row_norms is None
    kept = accumulate(X, row_norm=5.0, want_second=False, keep_norms=True).row_norms
    np.testing.assert_allclose(kept, np.linalg.norm(X, axis=1), rtol=1e-12)
    import scipy.sparse as sp
    assert accumulate(sp.csr_matrix(X), row_norm=5.0, want_second=False, keep_norms=True).row_norms is None


def test_histogram_from_the_hint_matches_the_pass():
    """Counts from the hint's norms equal the histogram pass's counts (no row lies within its rounding
    margin of an edge here)."""
    X = _data(5, n=4000)
    center = X.mean(axis=0)
    edges = norm_edges(5.0)
    hint = centred_norm_hint(X, np.linalg.norm(X, axis=1), center)
    np.testing.assert_array_equal(bin_counts(np.sqrt(np.maximum(hint.approx, 0.0)), edges),
                                  norm_histogram(X, edges, center=center, owner="test"))


def test_default_dppca_uses_one_reading_for_the_histogram(monkeypatch):
    """The default private-mean fit on a float64 array reads its rows for the mean and the scatter
    only: the histogram comes from the first pass's norms, and the fit is the same as with the
    histogram pass (same seed)."""
    from dpspectral import DPPCA
    from dpspectral.privacy import _quantile

    X = _data(2, n=4000, d=20) / 5.0
    with monkeypatch.context() as m:  # the reference: every pass reads the rows
        m.setattr("dpspectral.pca._covariance._in_memory", lambda X, inputs: False)
        reference = DPPCA(3, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    calls = []
    original = _quantile.norm_histogram
    monkeypatch.setattr("dpspectral.pca._covariance.norm_histogram",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    fast = DPPCA(3, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    assert calls == []
    np.testing.assert_allclose(np.abs(fast.components_), np.abs(reference.components_), atol=1e-8)
    # an iterable of blocks cannot be read at random: the histogram pass runs
    DPPCA(3, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(lambda: iter([X[:2000], X[2000:]]))
    assert calls == [1]


def test_a_memory_map_keeps_the_block_passes(tmp_path, monkeypatch):
    """A memory-mapped array is read block by block in every pass (its pages released as they go): no
    whole-array product, so the histogram pass runs."""
    from dpspectral import DPPCA

    X = _data(4, n=3000, d=12) / 5.0
    path = tmp_path / "rows.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    calls = []
    from dpspectral.privacy import _quantile

    original = _quantile.norm_histogram
    monkeypatch.setattr("dpspectral.pca._covariance.norm_histogram",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(mapped)
    assert calls == [1]
