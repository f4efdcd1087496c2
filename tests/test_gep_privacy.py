"""Privacy at the boundaries of the GEP / Fisher-discriminant code.

* A class with one member, a single class present, or a class absent from the data never makes a fit
  refuse when the public ``classes`` are given: the sensitivity proof covers them, and neighbours that
  differ in one label (a class reduced to one member, or emptied) give the same public view.
* ``classes=None`` releases the label set (a thresholded noisy count per label, charged in the same
  report): a label of one member is left out, and the report says how the set was released
  (tests/test_gep_label_release.py checks the mechanism).
* ``n_components > n_classes - 1`` is refused (as scikit-learn's LDA), before anything is charged.
* Validate, then charge: bad input is refused before the ledger is charged, with messages that name
  what the user called and no row, value, label or eigenvalue of the private data.

Deterministic: fixed data and seeds; no statistical test here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _neighbours import assert_message_is_data_free, assert_same_public_view, observe

from dpspectral import Accountant
from dpspectral.gep import (
    DPFisherDiscriminant,
    PairSensitivity,
    StepSizes,
    dp_rayleigh_flow,
    dpsr,
    fda_pair,
    private_fda,
    private_gep,
    private_pca_gep,
    sr_dp,
    symmetric_definite_pair,
)

DELTA = 1e-6
KW = {"epsilon": 1.0, "delta": DELTA, "row_norm": 1.0}

# What DPFisherDiscriminant releases (noisy, or post-processing of noisy releases); everything else in
# the fitted estimator must be identical between neighbours run with one seed.
FDA_RELEASED = (
    "scalings_", "components_", "eigenvalues_", "result_.vectors", "result_.values", "result_.whitening",
    "result_.diagnostics.lambda_b", "result_.diagnostics.whitening_norm2",
    "result_.diagnostics.sensitivity_phase2", "result_.diagnostics.noise_std_phase2",
    "result_.diagnostics.noise_std_A", "result_.diagnostics.noise_std_B",
)
METHODS = ("dpsr", "dpsrs", "sr_dp", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow")


def _data(n: int = 300, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) / 4 + np.eye(3, d)[y] / 2
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)), y


def _fit(X, y, method="dpsr", **params):
    def call(acc):
        extra = {"sparsity": 3} if method in ("dpsrs", "dp_truncated_rayleigh_flow") else {}
        return DPFisherDiscriminant(epsilon=1.0, delta=DELTA, row_norm=1.0, method=method, random_state=0,
                                    accountant=acc, **extra, **params).fit(X, y)
    return call


# ------------------------------------------------------------------------------------------------
# no refusal that one record decides
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_class_reduced_to_one_member_gives_the_same_public_view(method):
    """Neighbours D (class 2 has two members) and D' (one label changed: class 2 has one member), one
    seed. Fails on the code before the fix: D' raised "class 2 has one member"."""
    X, y = _data()
    y = np.where(y == 2, 0, y)
    y[[5, 8]] = 2                     # class 2 has two members
    y1 = y.copy()
    y1[8] = 1                         # one label changed: class 2 has one member
    a = observe(_fit(X, y, method, classes=[0, 1, 2]))
    b = observe(_fit(X, y1, method, classes=[0, 1, 2]))
    assert not a.raised and not b.raised, (a.error, b.error)
    assert_same_public_view(a, b, FDA_RELEASED, context=method)
    assert b.result.n_components_ == 2 and b.result.scalings_.shape == (5, 2)


def test_a_class_emptied_and_a_single_class_present_are_fitted():
    """A class absent from the data, and a single class present: shapes from the public classes.
    Fails on the code before the fix (one class only -> refusal)."""
    X, y = _data()
    two = np.where(y == 2, 1, y)          # class 2 absent
    y_last = two.copy()
    y_last[np.flatnonzero(two == 1)[:-1]] = 0   # class 1 down to one member
    one = np.zeros_like(y)                # a single class present
    outcomes = [observe(_fit(X, labels, classes=[0, 1, 2])) for labels in (two, y_last, one)]
    for out in outcomes:
        assert not out.raised, out.error
        assert list(out.result.classes_) == [0, 1, 2] and out.result.n_components_ == 2
    assert_same_public_view(outcomes[0], outcomes[1], FDA_RELEASED)
    assert_same_public_view(outcomes[1], outcomes[2], FDA_RELEASED)
    # the functional entry points too
    for labels in (y_last, one):
        res = private_fda(X, labels, 2, classes=[0, 1, 2], random_state=0, **KW)
        assert res.vectors.shape == (5, 2) and res.privacy.certified


def test_singleton_class_with_labels_from_the_data_is_fitted():
    """classes=None: a class with one member is not refused; its label is not released (the label
    release's threshold), and the fit goes on with the others."""
    X, y = _data(n=3000)
    y = y.copy()
    y[np.flatnonzero(y == 2)[1:]] = 0     # class 2 has one member
    est = _fit(X, y)(None)
    assert list(est.classes_) == [0, 1] and est.n_components_ == 1


def test_fda_pair_handles_empty_and_one_member_classes_exactly():
    """The one code path for every class gives the textbook scatters."""
    X, y = _data(n=60)
    y = np.where(y == 2, 0, y)
    y[7] = 2                                  # one member
    pair = fda_pair(X, y, row_norm=1.0, classes=[0, 1, 2, 3])   # class 3 absent
    mu = X.mean(axis=0)
    A = sum((y == c).sum() * np.outer(X[y == c].mean(0) - mu, X[y == c].mean(0) - mu) for c in (0, 1, 2))
    W = sum((X[y == c] - X[y == c].mean(0)).T @ (X[y == c] - X[y == c].mean(0)) for c in (0, 1, 2))
    np.testing.assert_allclose(pair.A, A / 60, atol=1e-12)
    np.testing.assert_allclose(pair.B, W / 60, atol=1e-12)
    one = fda_pair(X, np.zeros(60, int), row_norm=1.0, classes=[0, 1])
    np.testing.assert_allclose(one.A, 0.0, atol=1e-12)   # a single class: no between-class scatter


# ------------------------------------------------------------------------------------------------
# classes=None releases the label set, in the same report
# ------------------------------------------------------------------------------------------------


def test_labels_from_the_data_are_released_in_the_same_report():
    X, y = _data(n=3000)
    est = _fit(X, y)(None)
    assert est.privacy_.certified and list(est.classes_) == [0, 1, 2]
    assert any("set of labels was released privately" in note for note in est.privacy_.notes)
    res = private_fda(X, y, 2, random_state=0, **KW)
    assert res.privacy.certified and any("released privately" in note for note in res.privacy.notes)
    given = _fit(X, y, classes=[0, 1, 2])(None)
    assert not any("released privately" in note for note in given.privacy_.notes)
    assert not any("NOT protected" in note for out in (est, given) for note in out.privacy_.notes)
    # with public classes a neighbour that changes the label set changes no public field
    X, y = _data()
    a = observe(_fit(X, y, classes=[0, 1, 2, 3]))
    b = observe(_fit(X, np.where(np.arange(len(y)) == 0, 3, y), classes=[0, 1, 2, 3]))
    assert_same_public_view(a, b, FDA_RELEASED)
    assert a.result.n_components_ == 3


def test_one_label_with_labels_from_the_data_is_refused_without_quoting_it():
    """A single label in y: released (one label), then refused; the label stage stays charged."""
    X, _ = _data(n=3000)
    acc = Accountant(10.0, DELTA)
    with pytest.raises(ValueError, match="fewer than 2 labels.*'classes'") as err:
        DPFisherDiscriminant(epsilon=1.0, delta=DELTA, row_norm=1.0, accountant=acc).fit(
            X, np.full(len(X), -2.7001))
    assert "2.7" not in str(err.value) and "3000" not in str(err.value)
    assert len(acc.entries) == 1 and acc.entries[0].status == "released"


# ------------------------------------------------------------------------------------------------
# n_components <= n_classes - 1; messages name what the user called
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("classes", [None, [0, 1, 2]])
def test_n_components_above_n_classes_minus_one_is_refused_before_the_charge(classes):
    """With public classes before any charge; with classes=None right after the label release (the
    number of classes is a released value then), before the later stages."""
    X, y = _data(n=3000)
    acc = Accountant(10.0, DELTA)
    with pytest.raises(ValueError, match=r"'n_components' parameter of DPFisherDiscriminant.*n_classes - 1"):
        DPFisherDiscriminant(3, classes=classes, accountant=acc, **KW).fit(X, y)
    assert len(acc.entries) == (0 if classes is not None else 1)
    assert DPFisherDiscriminant(2, classes=classes, random_state=0, **KW).fit(X, y).n_components_ == 2


def test_public_classes_decide_n_components_before_any_data_is_read():
    """With public classes, n_components is checked before the data (even unreadable data)."""
    with pytest.raises(ValueError, match="'n_components'.*n_classes - 1 = 1"):
        DPFisherDiscriminant(2, classes=["a", "b"], **KW).fit(np.array([["x"]]), ["a"])


@pytest.mark.parametrize("call,name", [
    (lambda X, y, acc: private_fda(X, y, 2, method="dpsr", n_iter=0, accountant=acc, **KW), "private_fda"),
    (lambda X, y, acc: private_fda(X, y, 2, method="sr_dp", a_share=2.0, accountant=acc, **KW),
     "private_fda"),
    (lambda X, y, acc: private_pca_gep(X, 2, step_sizes=StepSizes(phase2=-1.0), accountant=acc, **KW),
     "private_pca_gep"),
    (lambda X, y, acc: DPFisherDiscriminant(2, method="dpsr",
                                            method_params={"step_sizes": StepSizes(phase1=-1.0)},
                                            accountant=acc, **KW).fit(X, y), "DPFisherDiscriminant"),
    (lambda X, y, acc: DPFisherDiscriminant(2, method="dpsr", method_params={"basis_size": 99},
                                            accountant=acc, **KW).fit(X, y), "DPFisherDiscriminant"),
])
def test_messages_name_what_the_user_called(call, name):
    X, y = _data()
    acc = Accountant(10.0, DELTA)
    with pytest.raises(ValueError) as err:
        call(X, y, acc)
    text = str(err.value)
    assert name in text and acc.entries == ()
    for internal in ("fda_pair", "pca_pair", "dpsr", "sr_dp", "analyze_gauss"):
        assert f"of {internal} " not in text and not text.startswith(internal), text


# ------------------------------------------------------------------------------------------------
# validate, then charge; data-free messages
# ------------------------------------------------------------------------------------------------


def _bad(case: str, rows: tuple[int, ...]) -> np.ndarray:
    X, _ = _data()
    X = X.copy()
    for r in rows:
        if case == "nan":
            X[r, 2] = np.nan
        elif case == "inf":
            X[r, 1] = np.inf
        else:
            X[r] *= 123.456 / np.linalg.norm(X[r])
    return X


ENTRY_POINTS = {
    "private_fda": lambda X, y, acc, onv: private_fda(X, y, 2, classes=[0, 1, 2], accountant=acc,
                                                      on_norm_violation=onv, random_state=0, **KW),
    "private_pca_gep": lambda X, y, acc, onv: private_pca_gep(X, 2, accountant=acc, on_norm_violation=onv,
                                                              random_state=0, **KW),
    "DPFisherDiscriminant": lambda X, y, acc, onv: DPFisherDiscriminant(
        2, classes=[0, 1, 2], accountant=acc, on_norm_violation=onv, random_state=0, **KW).fit(X, y),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("case", ["nan", "inf", "norm"])
def test_bad_rows_are_refused_before_the_charge_with_the_same_data_free_text(entry, case):
    """Fails on the code before the fix: the NaN/inf message named the row (private_fda,
    private_pca_gep) and the internal builder (fda_pair)."""
    _, y = _data()
    texts = []
    for rows in ((37,), (211, 223, 227, 229)):
        out = observe(lambda acc, rows=rows: ENTRY_POINTS[entry](
            _bad(case, rows), y, acc, "raise" if case == "norm" else "clip"))
        assert out.raised and isinstance(out.exception, ValueError), out.error
        assert out.ledger == ()
        assert_message_is_data_free(out.error[1], forbidden_numbers=set(rows) | {len(rows)} - {1},
                                    forbidden_substrings=("123.4", "fda_pair", "pca_pair"))
        texts.append(out.error)
    assert texts[0] == texts[1]


def test_a_malformed_pair_is_refused_before_the_charge():
    """A ScatterPair built by hand with a NaN: refused before any charge (it was charged, then the
    noisy iterations ran on NaN, before the fix)."""
    X, y = _data()
    pair = fda_pair(X, y, row_norm=1.0, classes=[0, 1, 2])
    bad = dataclasses.replace(pair, A=np.where(np.eye(5) > 0, np.nan, pair.A))
    for solver in (dpsr, sr_dp):
        acc = Accountant(10.0, DELTA)
        with pytest.raises(ValueError, match=f"'pair' parameter of {solver.__name__}: A contains NaN"):
            solver(bad, 2, epsilon=1.0, delta=DELTA, accountant=acc, random_state=0)
        assert acc.entries == ()


def test_a_failed_release_stays_charged_and_is_marked():
    """A failure inside the release (here: a non-definite caller B with the non-private start, which
    needs B definite) is a failed release: charged, marked failed, and re-raised."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    A = (A + A.T) / 2
    B = np.diag([1.0, 1.0, 0.0, -0.5])
    acc = Accountant(delta=DELTA)  # no ceiling: the non-private start is charged (epsilon infinite)
    sens = PairSensitivity(0.1, 0.1, 0.1, 0.1)

    pair = symmetric_definite_pair(A, B, sensitivity=sens, check_definite=False)
    with pytest.raises(ValueError, match="'B' parameter of dp_rayleigh_flow is not positive definite") as err:
        dp_rayleigh_flow(pair, 2, epsilon=1.0, delta=DELTA, accountant=acc, init="nonprivate_optimum",
                         regularization=0.01, random_state=0)
    assert "0.5" not in str(err.value)
    assert len(acc.entries) == 1 and acc.entries[0].status.startswith("failed")
    # the functional entry point with a caller's pair: no eigenvalue quoted, nothing charged
    acc2 = Accountant(10.0, DELTA)
    with pytest.raises(ValueError, match="private_gep"):
        private_gep(A, B, 2, epsilon=1.0, delta=DELTA, sensitivity=sens, accountant=acc2,
                    regularization=0.01)  # the paper's xi needs B + xi I definite (the noise ridge not)
    assert acc2.entries == ()
