"""Learning-rate selection for the Oja family (paper 001, §5)."""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral.pca.lr_search import learning_rate_grid, select_learning_rate
from dpspectral.privacy import Accountant, ParallelDpEvent, UncertifiedPrivacyWarning, epsilon_of


@pytest.fixture(scope="module")
def spiked() -> np.ndarray:
    rng = np.random.default_rng(3)
    n, d = 30_000, 6
    X = rng.standard_normal((n, d)) * np.r_[3.0, np.ones(d - 1)]
    return X / np.sqrt(d + 8.0)


def test_grid_rounds() -> None:
    grid = learning_rate_grid(10.0, 2.0, 3)
    assert len(grid) == 1 + 4 + 4
    assert grid[0] == (1, 10.0, 2.0)
    assert {(c1, c2) for r, c1, c2 in grid if r == 3} == {(40.0, 8.0), (40.0, 0.5), (2.5, 8.0), (2.5, 0.5)}


def test_private_search_is_certified_and_recorded(spiked: np.ndarray) -> None:
    ledger = Accountant(epsilon=5.0, delta=1e-5)
    out = select_learning_rate(spiked, 1, epsilon=2.0, delta=1e-6, row_norm=1.0, method="private_oja",
                               n_rounds=2, accountant=ledger, random_state=0)
    assert out.tuning == "private"
    assert len(out.candidates) == 5
    assert out.privacy.certified
    assert isinstance(out.privacy.events[0], ParallelDpEvent)
    assert epsilon_of(out.privacy.events, 1e-6) <= 2.0 + 1e-9
    assert ledger.epsilon_spent(1e-6) == pytest.approx(out.privacy.epsilon, rel=1e-6)
    best = max(out.candidates, key=lambda c: c["score"])
    assert (out.c1, out.c2) == (best["c1"], best["c2"])
    W = out.result.components
    np.testing.assert_allclose(W.T @ W, np.eye(1), atol=1e-10)
    assert out.result.privacy is out.privacy


def test_private_search_is_reproducible(spiked: np.ndarray) -> None:
    a = select_learning_rate(spiked, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                             random_state=7)
    b = select_learning_rate(spiked, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                             random_state=7)
    np.testing.assert_array_equal(a.result.components, b.result.components)
    assert a.candidates == b.candidates


def test_nonprivate_search_is_labelled(spiked: np.ndarray) -> None:
    with pytest.warns(UncertifiedPrivacyWarning):
        out = select_learning_rate(spiked, 1, epsilon=1e6, delta=1e-6, row_norm=1.0, method="private_oja",
                                   n_rounds=2, tuning="nonprivate",
                                   random_state=0)
    assert not out.privacy.certified
    assert out.privacy.epsilon == np.inf
    assert any("NON-PRIVATELY" in note for note in out.privacy.notes)
    # with negligible noise the selected candidate is a good solution: captured variance near optimal
    top = np.linalg.eigh(np.cov(spiked.T, bias=True) + np.outer(spiked.mean(0), spiked.mean(0)))[1][:, -1]
    assert abs(float(out.result.components[:, 0] @ top)) > 0.95


def test_dp_pca_search_runs(spiked: np.ndarray) -> None:
    X = np.vstack([spiked, spiked[::-1]])  # 60,000 rows: enough for the histogram's minimum batch
    out = select_learning_rate(X, 1, epsilon=2.0, delta=1e-6, row_norm=1.0, method="dp_pca", n_rounds=1,
                               random_state=0)
    assert out.privacy.certified and len(out.candidates) == 1


def test_bad_input(spiked: np.ndarray) -> None:
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
    with pytest.raises(TypeError, match="array or memmap"):
        select_learning_rate(iter([spiked]), 1, **kw)
    with pytest.raises(ValueError, match="n_rounds"):
        select_learning_rate(spiked, 1, n_rounds=0, **kw)
    with pytest.raises(ValueError, match="method"):
        select_learning_rate(spiked, 1, method="analyze_gauss", **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tuning"):
        select_learning_rate(spiked, 1, tuning="oracle", **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="validation_share"):
        select_learning_rate(spiked, 1, validation_share=1.5, **kw)
