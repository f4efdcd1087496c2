"""The private label set of the Fisher discriminant and LDA with ``classes=None`` (the default).

Without public ``classes`` the set of labels present decides ``classes_`` and every shape; it is released
by a Gaussian stability histogram charged in the same report (``dpspectral.gep._labels``). Checked here:

* the report of a ``classes=None`` fit is certified for the requested (epsilon, delta) and carries the
  label stage's events (its Gaussian noise and the threshold's delta) next to the later stages';
* the threshold: a bin of count 1 passes with probability ``delta / 2`` (replace-one), measured;
* a label held by one row is not released (seeded; per fit it is kept with probability at most
  ``delta_L / 2 = 5e-8`` here, so over the 20 fits below a false failure has probability < 1e-6);
* neighbours that add, remove or relabel the one row of a rare label give the same public view, and the
  same error text when too few labels survive;
* the ``n_components`` error after a label release quotes no number read from the data, and priors
  without public classes are refused before any charge.

Deterministic (fixed data and seeds); the histogram's pass rate is a binomial check at 5 standard errors.
"""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
from _neighbours import assert_message_is_data_free, assert_same_public_view, fitted_attributes, observe

from dpspectral import Accountant, DPLinearDiscriminantAnalysis
from dpspectral.gep import DPFisherDiscriminant, private_fda
from dpspectral.gep._labels import LABEL_DELTA_SHARE
from dpspectral.privacy._accounting import EpsilonDeltaDpEvent
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._histogram import gaussian_stable_histogram, gaussian_stable_histogram_events
from dpspectral.privacy._noise import SeededNoise
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, release

EPS, DELTA = 1.0, 1e-6
RARE = 7  # the label of the one rare row


def _data(n: int = 3000, d: int = 5, seed: int = 0, rare: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Classes 0, 1, 2 of about n/3 rows each, and (``rare``) one more row of label 7, last."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) / 4 + np.eye(3, d)[y] / 2
    if rare:
        X = np.vstack([X, rng.normal(size=(1, d)) / 4])
        y = np.r_[y, RARE]
    return X, y


def _lda(**kw):
    return DPLinearDiscriminantAnalysis(epsilon=EPS, delta=DELTA, row_norm=1.5, **kw)


def _fda(**kw):
    return DPFisherDiscriminant(epsilon=EPS, delta=DELTA, row_norm=1.5, **kw)


def _events(report) -> list:
    return list(report.events)


FITS = {
    "lda": lambda acc, X, y: _lda(accountant=acc, random_state=0).fit(X, y).privacy_,
    "lda[add_remove]": lambda acc, X, y: _lda(accountant=acc, random_state=0, relation="add_remove")
    .fit(X, y).privacy_,
    "lda[fixed clip]": lambda acc, X, y: _lda(accountant=acc, random_state=0, adaptive_clip=False)
    .fit(X, y).privacy_,
    "fisher[moments]": lambda acc, X, y: _fda(accountant=acc, random_state=0).fit(X, y).privacy_,
    "fisher[dpsr]": lambda acc, X, y: _fda(accountant=acc, random_state=0, method="dpsr")
    .fit(X, y).privacy_,
    "fisher[sr_dp]": lambda acc, X, y: _fda(accountant=acc, random_state=0, method="sr_dp")
    .fit(X, y).privacy_,
    "private_fda": lambda acc, X, y: private_fda(X, y, 2, epsilon=EPS, delta=DELTA, row_norm=1.5,
                                                  accountant=acc, random_state=0).privacy,
}


@pytest.mark.parametrize("name", list(FITS))
def test_classes_none_report_is_certified_and_charges_the_label_release(name):
    """Fails on the code before the label release: no event for the label set (and a "NOT protected"
    note), although classes_ came from the private labels."""
    X, y = _data()
    acc = Accountant(delta=1e-3)
    report = FITS[name](acc, X, y)
    assert report.certified and report.requested_epsilon == EPS and report.requested_delta == DELTA
    # the same total budget as requested: spent almost entirely, never exceeded
    assert 0.999 * EPS <= report.epsilon <= EPS
    events = _events(report)
    threshold = [e for e in events if isinstance(e, EpsilonDeltaDpEvent)]
    assert threshold == [EpsilonDeltaDpEvent(0.0, LABEL_DELTA_SHARE * DELTA)], events
    assert isinstance(events[0], dp_accounting.GaussianDpEvent)  # the label counts come first
    assert not any("NOT protected" in note for note in report.notes)
    assert any("set of labels was released privately" in note for note in report.notes)
    # the ledger holds the label stage first, then the later stages
    assert len(acc.entries) >= 2 and "EpsilonDeltaDpEvent" in repr(acc.entries[0].event), acc.entries
    assert all(entry.status == "released" for entry in acc.entries)


def test_secure_noise_releases_the_label_set_too():
    """The secure source: one exact draw per label, the sub-Gaussian threshold (a little higher)."""
    X, y = _data()
    clf = _lda(random_state="secure").fit(X, y)
    assert list(clf.classes_) == [0, 1, 2]
    assert clf.privacy_.certified and clf.privacy_.noise_source == "secure"
    assert any(isinstance(e, EpsilonDeltaDpEvent) for e in clf.privacy_.events)


def test_public_classes_take_no_label_stage():
    X, y = _data(rare=False)
    report = _lda(classes=[0, 1, 2], random_state=0).fit(X, y).privacy_
    assert report.certified and not any(isinstance(e, EpsilonDeltaDpEvent) for e in report.events)


def test_threshold_keeps_a_one_member_bin_with_the_stated_probability():
    """A bin of count 1 passes with probability delta / 2 (replace-one) or delta (add/remove): measured
    with a large delta on 20,000 bins; a bin of count 0 would pass less often still."""
    rng = np.random.default_rng(1)
    for relation, per_bin in ((Relation.REPLACE_ONE, 0.05), (Relation.ADD_REMOVE, 0.1)):
        sens = np.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0
        multiplier, delta = 3.0, 0.1
        plan = ReleasePlan("t", relation, gaussian_stable_histogram_events(multiplier, delta),
                           (NoisyRelease("label_counts", "gaussian", multiplier * sens, sens),))
        with release(plan, None, SeededNoise(rng)) as r:
            kept, threshold = gaussian_stable_histogram(np.ones(20000), releaser=r, name="label_counts",
                                                        delta=delta, relation=relation)
        rate = kept.mean()
        assert abs(rate - per_bin) < 5 * np.sqrt(per_bin * (1 - per_bin) / 20000), (relation, rate)
        assert threshold > 1.0


def test_a_label_held_by_one_row_is_not_released():
    """Seeded, 20 fits (false failure < 1e-6, module docstring). Fails on the code before the label
    release: the rare label was always in classes_ (and in the shapes of coef_ and means_)."""
    X, y = _data()
    for seed in range(20):
        clf = _lda(random_state=seed).fit(X, y)
        assert list(clf.classes_) == [0, 1, 2], seed
        assert clf.coef_.shape == (3, 5) and clf.means_.shape == (3, 5)
        fda = _fda(random_state=seed).fit(X, y)
        assert list(fda.classes_) == [0, 1, 2] and fda.n_components_ == 2


LDA_RELEASED = frozenset({"coef_", "intercept_", "means_", "covariance_", "priors_", "scalings_",
                          "explained_variance_ratio_", "moments_.second", "moments_.sums", "moments_.counts",
                          "moments_.clip"})


def _neighbours(relation: str):
    """(D, D'): D has a row of the rare label; D' removes it (add/remove) or relabels it (replace-one)."""
    X, y = _data()
    if relation == "add_remove":
        return (X, y), (X[:-1], y[:-1])
    relabelled = y.copy()
    relabelled[-1] = 0
    return (X, y), (X, relabelled)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_neighbours_with_a_rare_label_have_the_same_public_view(relation):
    """Fails on the code before the label release: classes_, coef_'s shape and n_components_ differed."""
    data, neighbour = _neighbours(relation)

    def fit(Xy):
        return lambda acc: fitted_attributes(_lda(relation=relation, accountant=acc, random_state=3).fit(*Xy))

    a, b = observe(fit(data)), observe(fit(neighbour))
    assert not a.raised, a.error
    assert_same_public_view(a, b, LDA_RELEASED, context="DPLinearDiscriminantAnalysis")


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_too_few_labels_gives_neighbours_the_same_error(relation):
    """One large class and one row of a rare label, against the large class alone: both release one
    label and refuse with the same text, after the same charge. Fails on the code before: D fitted (two
    labels present), D' refused before any charge."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2001, 4)) / 4
    y = np.zeros(2001, dtype=int)
    y[-1] = RARE
    pairs = ((X, y), (X[:-1], y[:-1])) if relation == "add_remove" else ((X, y), (X, np.zeros_like(y)))

    for fit in (lambda Xy: lambda acc: _lda(relation=relation, accountant=acc, random_state=0).fit(*Xy),
                lambda Xy: lambda acc: _fda(accountant=acc, random_state=0).fit(*Xy),
                lambda Xy: lambda acc: private_fda(*Xy, 1, epsilon=EPS, delta=DELTA, row_norm=1.5,
                                                   accountant=acc, random_state=0)):
        a, b = observe(fit(pairs[0])), observe(fit(pairs[1]))
        assert a.raised and a.error[0] == "ValueError" and "fewer than 2 labels" in a.error[1], a.error
        assert_same_public_view(a, b)
        assert len(a.ledger) == 1 and a.ledger[0][2] == "released"  # the label stage stays charged
        assert_message_is_data_free(a.error[1], forbidden_numbers=(2000, 2001, RARE))


def test_n_components_error_after_the_label_release_is_data_free_and_the_same_for_neighbours():
    """n_components=3 with classes=None: 3 labels released (the rare one is not), so at most 2. Fails on
    the code before: D (4 labels found) fitted, D' refused quoting "3 classes found in y"."""
    (X, y), (X1, y1) = _neighbours("add_remove")
    for make in (lambda acc: _lda(n_components=3, accountant=acc, random_state=0),
                 lambda acc: _fda(n_components=3, accountant=acc, random_state=0)):
        a = observe(lambda acc, make=make: make(acc).fit(X, y))
        b = observe(lambda acc, make=make: make(acc).fit(X1, y1))
        assert a.raised and "'n_components'" in a.error[1] and "private label release" in a.error[1], a.error
        assert_same_public_view(a, b)
        assert_message_is_data_free(a.error[1], forbidden_numbers=(4, len(y), len(y1)),
                                    forbidden_substrings=("found in y",))


def test_n_components_above_n_features_and_priors_without_classes_are_refused_before_the_charge():
    X, y = _data(d=2)
    acc = Accountant(10.0, DELTA)
    with pytest.raises(ValueError, match="'n_components'.*n_features = 2"):
        _lda(n_components=3, accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="'n_components'.*n_features = 2"):
        _fda(n_components=3, accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="'priors'.*'classes'"):
        _lda(priors=[0.5, 0.25, 0.25], accountant=acc).fit(X, y)
    assert acc.entries == ()
