"""Learning-rate selection for the Oja family (paper 001, §5)."""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral.pca._lr_search import learning_rate_grid, select_learning_rate
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


# ---------------------------------------------------------------------------------------------
# validate, charge first, secret split, independent runs


def test_the_search_is_charged_before_any_candidate_runs(spiked: np.ndarray, monkeypatch) -> None:
    """The whole search is charged before the first candidate draws anything (it used to draw every
    candidate's noise first and charge at the end)."""
    import dpspectral.pca._lr_search as lr

    ledger = Accountant(epsilon=5.0, delta=1e-5)
    seen = []
    real = lr._METHODS["private_oja"]

    def spy(*args, **kw):
        seen.append(len(ledger.entries))
        return real(*args, **kw)

    monkeypatch.setitem(lr._METHODS, "private_oja", spy)
    select_learning_rate(spiked, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                         accountant=ledger, random_state=0)
    assert seen == [1] * 5  # every candidate ran after the single charge


@pytest.mark.parametrize("kind", ["nan", "over"])
def test_bad_rows_are_refused_before_anything_is_charged(spiked: np.ndarray, kind: str) -> None:
    from dpspectral.privacy._pipeline import NonPrivateDataError, norm_violation_error, not_finite_error

    X = spiked.copy()
    if kind == "nan":
        X[29_999, 1] = np.nan  # in the last rows: the old positional split put it in validation
    else:
        X[29_999] *= 4.0 / np.linalg.norm(X[29_999])
    ledger = Accountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(NonPrivateDataError) as info:
        select_learning_rate(X, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                             accountant=ledger, on_norm_violation="raise", random_state=0)
    owner = "select_learning_rate"
    expected = not_finite_error(owner) if kind == "nan" else norm_violation_error(owner, 1.0)
    assert str(info.value) == str(expected)
    assert ledger.entries == ()


def test_split_is_secret_and_random_and_runs_compose(spiked: np.ndarray, monkeypatch) -> None:
    """The validation rows are a uniformly random subset drawn from the secret generator (not the
    last rows: a data-dependent order would break parallel composition); every run permutes its rows
    with its own generator, so the J runs are independent mechanisms and compose:
    ``SelfComposedDpEvent(run, J)`` (with branches, the changed row may meet any branch in each run)."""
    import dp_accounting

    import dpspectral.pca._lr_search as lr

    X = spiked.copy()
    X[:, 0] = np.arange(X.shape[0]) / X.shape[0] / 10  # rows identifiable by their first coordinate
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    vals = []
    real = lr._captured
    monkeypatch.setattr(lr, "_captured",
                        lambda Xv, *a, **k: vals.append(np.asarray(Xv)) or real(Xv, *a, **k))
    out = select_learning_rate(X, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                               random_state=0)
    Xv = vals[0]
    n_val = Xv.shape[0]
    assert n_val == 3000 and not np.array_equal(Xv, X[-n_val:])
    ids = np.rint(Xv[:, 0] * X.shape[0] * 10).astype(int)
    assert ids.min() < 10_000 and ids.max() > 20_000  # spread over the whole data set
    train, val = out.privacy.events[0].events
    assert isinstance(train, dp_accounting.SelfComposedDpEvent) and train.count == 5
    assert isinstance(val, dp_accounting.SelfComposedDpEvent)


def test_dp_pca_search_composes_runs_over_every_branch_choice() -> None:
    from dpspectral.privacy import ParallelDpEvent as PE

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 4)) / 3
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    out = select_learning_rate(X, 1, epsilon=0.8, delta=1e-6, row_norm=1.0, method="dp_pca", n_rounds=1,
                               random_state=0, batch_size=2000)
    train, _ = out.privacy.events[0].events
    assert isinstance(train.event, PE)  # the run's two branches, composed across runs as a whole
    assert out.privacy.certified and out.privacy.epsilon <= 0.8 + 1e-9


def test_search_with_shuffled_private_oja_reshuffles_per_run(spiked: np.ndarray) -> None:
    """amplification='shuffle': each candidate run shuffles its rows itself (fresh, secret), so the
    runs are independent and basic composition of their (eps / J, delta / J) guarantees is sound."""
    out = select_learning_rate(spiked, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, method="private_oja",
                               random_state=0, amplification="shuffle")
    assert out.privacy.certified and out.privacy.epsilon <= 1.0 + 1e-9
    assert any("its own secret permutation" in t for t in out.privacy.notes)


def test_parameters_are_declared_in_a_constraint_table(spiked: np.ndarray) -> None:
    """The parameters are stated once, in a table (``parameter_constraints``); a value outside it gets
    the generated message and charges nothing."""
    table = select_learning_rate.parameter_constraints
    assert {"epsilon", "delta", "row_norm", "method", "tuning", "n_rounds", "validation_share",
            "random_state"} <= set(table)
    ledger = Accountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(ValueError, match=r"The 'n_rounds' parameter of select_learning_rate must be an "
                                         r"int in \[1, inf\)\. Got 0 instead\."):
        select_learning_rate(spiked, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, n_rounds=0,
                             accountant=ledger)
    assert ledger.entries == ()
