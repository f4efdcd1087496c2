"""scikit-learn's estimator checks on every estimator of the library.

Every public scikit-learn estimator of ``dpspectral`` is listed here (a test enumerates them), each in
the settings the checks need: a ``row_norm`` large enough that the checks' small data are barely
clipped, a tiny k so that every check's data (sometimes a single feature) has enough columns, a fixed
``random_state`` (and a declared public sketch seed for the sketching methods) so that refits are
identical, and the in-process engine for ``DistributedDPPCA`` (no Dask cluster is started: the
fixture below makes the Dask engine fail).

A check that differential privacy makes inapplicable is listed in ``EXPECTED_FAILED_CHECKS`` under the
estimator's class name (with ``[add_remove]`` for an instance under add/remove neighbours), with its
reason (as scikit-learn's ``expected_failed_checks`` does), and in the estimator's docstring.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpspectral
import dpspectral.distributed._estimator as distributed_estimator
from dpspectral import (
    DPPCA,
    DistributedDPPCA,
    DPFisherDiscriminant,
    DPLinearDiscriminantAnalysis,
    DPLowRank,
    DPStandardScaler,
)
from dpspectral._constraints import Constraint, InvalidParameterError
from dpspectral.lowrank import Sketch

#: {estimator class name (``[add_remove]`` for that relation): {check name: reason}}.
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "DPStandardScaler[add_remove]": {
        "check_estimators_empty_data_messages": "under add/remove neighbours an empty data set is a "
        "neighbour like any other: it is released (a noisy count and noisy sums), not refused",
    },
}


def _expected_failed_checks(est: BaseEstimator) -> dict[str, str]:
    key = type(est).__name__
    if isinstance(est, DPStandardScaler) and est.relation == "add_remove":
        key += "[add_remove]"
    return EXPECTED_FAILED_CHECKS.get(key, {})

_PRIVACY = dict(epsilon=1.0, delta=1e-5, random_state=0)


def _instances() -> list[BaseEstimator]:
    return [
        DPPCA(1, row_norm=100.0, **_PRIVACY),
        DPPCA(1, row_norm=100.0, relation="add_remove", centering="private", **_PRIVACY),
        # pure epsilon-DP: delta 0 (a positive delta would be unused, with a PureEpsilonWarning)
        DPPCA(1, row_norm=100.0, method="ppca", **{**_PRIVACY, "delta": 0.0}),
        DPLowRank(1, method_params={"sketch": Sketch(seed=0)}, **_PRIVACY),
        DPLowRank(1, method="covariance_lrf", row_norm=100.0, method_params={"sketch": Sketch(seed=0)},
                  **_PRIVACY),
        # a large epsilon: the checks' small data pass the private label release's threshold (classes=None)
        DPFisherDiscriminant(1, row_norm=100.0, epsilon=1e4, delta=1e-5, random_state=0),
        DistributedDPPCA(1, row_norm=100.0, engine="inprocess", **_PRIVACY),
        # the classifier checks ask for training accuracy on small blobs: a large epsilon (the noise is
        # calibrated as always; the checks test the scikit-learn contract, not the privacy/utility trade-off)
        DPLinearDiscriminantAnalysis(1, row_norm=100.0, epsilon=1e4, delta=1e-5, random_state=0),
        # public bounds wide enough that the checks' small data are barely clipped
        DPStandardScaler(bounds=(-100.0, 100.0), **_PRIVACY),
        DPStandardScaler(bounds=(-100.0, 100.0), relation="add_remove", **_PRIVACY),
    ]


@pytest.fixture(autouse=True)
def _no_dask_cluster(monkeypatch):
    """The checks must not start a Dask cluster: the Dask engine fails if anything asks for it."""
    def refuse(*args, **kwargs):
        raise AssertionError("the scikit-learn checks must run DistributedDPPCA in process")

    monkeypatch.setattr(distributed_estimator, "DaskEngine", refuse)


@parametrize_with_checks(
    _instances(),
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_public_estimator_is_checked():
    public = {obj for name in dir(dpspectral) if inspect.isclass(obj := getattr(dpspectral, name))
              and issubclass(obj, BaseEstimator)}
    assert public == {type(est) for est in _instances()}


def test_distributed_fit_transform_on_sites_and_on_one_array():
    rng = np.random.default_rng(0)
    sites = [rng.normal(size=(n, 6)) / 4 for n in (40, 30, 50)]
    est = DistributedDPPCA(2, row_norm=1.0, engine="inprocess", **_PRIVACY)
    Z = est.fit_transform(sites)
    assert Z.shape == (120, 2)
    np.testing.assert_allclose(Z, np.vstack(sites) @ est.components_.T)
    # one array is one site; a nested list of numbers is that array (as scikit-learn reads it)
    one = DistributedDPPCA(2, row_norm=1.0, engine="inprocess", **_PRIVACY)
    Z1 = one.fit_transform(sites[0])
    Z2 = DistributedDPPCA(2, row_norm=1.0, engine="inprocess", **_PRIVACY).fit_transform(sites[0].tolist())
    np.testing.assert_array_equal(Z1, Z2)
    np.testing.assert_allclose(Z1, sites[0] @ one.components_.T)
    # under add/remove an empty site is a neighbour like any other: fitted, never refused for that
    empty = DistributedDPPCA(2, row_norm=1.0, engine="inprocess", relation="add_remove", **_PRIVACY)
    assert empty.fit_transform(np.zeros((0, 6))).shape == (0, 2)


# --- The parameter tables ------------------------------------------------------------

ESTIMATOR_CLASSES = [DPPCA, DPLowRank, DPFisherDiscriminant, DistributedDPPCA]


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def test_parameter_table_covers_the_constructor(cls):
    """The table names only ``__init__`` parameters; every other one is listed with where it is checked."""
    init = set(inspect.signature(cls.__init__).parameters) - {"self"}
    table = cls._parameter_constraints
    elsewhere = cls._parameters_checked_elsewhere
    assert set(table) <= init, f"{cls.__name__}: table entries that are not parameters"
    assert set(elsewhere) <= init
    assert not set(table) & set(elsewhere), "a parameter is either in the table or checked elsewhere"
    assert set(table) | set(elsewhere) == init, f"{cls.__name__}: parameters checked nowhere"
    assert all(reason.strip() for reason in elsewhere.values())
    assert set(cls._required_parameters) <= set(table)
    for entry in table.values():
        entries = entry if isinstance(entry, list) else [entry]
        assert entries and all(isinstance(c, Constraint) for c in entries)
    # the method names come from the registry
    auto = {"auto"} if cls.__name__ in ("DPPCA", "DPLowRank") else set()  # method="auto" (registry)
    assert set(table["method"].values) == {m.name for m in dpspectral.methods(task=cls._task)} | auto


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def test_parameter_table_refuses_a_bad_value_before_anything_is_charged(cls):
    """Each estimator's table is what ``fit`` checks: a wrong type of each kind is refused, named."""
    X = np.random.default_rng(0).normal(size=(40, 4)) / 4
    y = np.arange(40) % 2
    acc = dpspectral.Accountant()
    base = dict(epsilon=1.0, delta=1e-5, random_state=0, accountant=acc)
    if cls is not DPLowRank:
        base["row_norm"] = 1.0
    if cls is DistributedDPPCA:
        base["engine"] = "inprocess"
    for name, bad in [("random_state", "urandom"), ("calibration", "loose"), ("method_params", [1]),
                      ("on_norm_violation", "ignore"), ("epsilon", float("nan"))]:
        if name not in cls._parameter_constraints:
            continue
        est = cls(1, **{**base, name: bad})
        with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of {cls.__name__} must be"):
            est.fit(X, y) if cls is DPFisherDiscriminant else est.fit(X)
    assert acc.entries == ()


def _tiny_fit(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)) / 4
    if cls is DPFisherDiscriminant:
        y = np.arange(120) % 3
        return DPFisherDiscriminant(1, epsilon=1.0, delta=1e-5, row_norm=1.0, n_iter=3, classes=[0, 1, 2],
                                    random_state="secure").fit(X, y)
    if cls is DistributedDPPCA:
        return DistributedDPPCA(1, epsilon=1.0, delta=1e-5, row_norm=1.0, engine="inprocess",
                                random_state="secure").fit([X[:60], X[60:]])
    if cls is DPLowRank:
        return DPLowRank(1, epsilon=1.0, delta=1e-5, random_state="secure").fit(X)
    return DPPCA(1, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state="secure").fit(X)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def test_secure_noise_through_every_estimator(cls):
    """``random_state="secure"`` reaches the method: the report says so, and two fits differ (the OS
    entropy is not a seed; equal outputs have probability 0 for continuous-valued released factors)."""
    a, b = _tiny_fit(cls), _tiny_fit(cls)
    assert a.privacy_.noise_source == "secure" and a.privacy_.certified
    assert b.privacy_.noise_source == "secure"
    fitted = "U_" if cls is DPLowRank else "components_"
    assert not np.array_equal(getattr(a, fitted), getattr(b, fitted))
    assert np.isfinite(getattr(a, fitted)).all()
    assert '"secure"' in cls.__doc__


def test_seeded_fits_say_exact():
    est = DPPCA(1, row_norm=1.0, **_PRIVACY).fit(np.random.default_rng(0).normal(size=(50, 3)) / 4)
    assert est.privacy_.noise_source == "exact"
