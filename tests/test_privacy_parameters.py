"""Weak privacy parameters: a ``PrivacyParameterWarning`` from the one shared check, at its boundaries.

* ``epsilon > 10`` warns (10 itself does not);
* ``delta > 1e-3`` warns (1e-3 itself does not), under every relation;
* ``delta >= 1/n`` warns where n is public and known before the release (replace-one, in memory), and n
  is never used under add/remove;
* the text quotes public inputs only (the same for neighbouring data sets), and the warning changes
  nothing that is charged or released;
* every registered PCA method passes through the check (one warning per fit);
* an ``Accountant`` ceiling at delta 0 refuses a Gaussian release with a message that says to set a delta.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpspectral
from dpspectral import (
    Accountant,
    BudgetExceededError,
    PrivacyBudget,
    PrivacyParameterWarning,
    Relation,
    analyze_gauss,
    methods,
)
from dpspectral.privacy import check_privacy_parameters


def _messages(f, *args, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(*args, **kwargs)
    return [str(w.message) for w in caught if w.category is PrivacyParameterWarning]


def _check(epsilon, delta, relation=Relation.REPLACE_ONE, n_rows=None):
    return _messages(check_privacy_parameters, PrivacyBudget(epsilon, delta), relation, mechanism="m",
                     n_rows=n_rows)


def test_exported_from_the_package():
    assert dpspectral.PrivacyParameterWarning is PrivacyParameterWarning
    assert issubclass(PrivacyParameterWarning, UserWarning)


def test_epsilon_boundary():
    assert _check(10.0, 1e-6) == []
    (msg,) = _check(10.000001, 1e-6)
    assert "epsilon=10" in msg and "weak" in msg
    assert len(_check(1e9, 1e-6)) == 1


@pytest.mark.parametrize("relation", [Relation.REPLACE_ONE, Relation.ADD_REMOVE, Relation.LOCAL])
def test_fixed_delta_limit_without_n(relation):
    assert _check(1.0, 1e-3, relation) == []
    (msg,) = _check(1.0, 1.0000001e-3, relation)
    assert "delta=0.001" in msg
    assert len(_check(1.0, 0.5, relation)) == 1


def test_delta_against_public_n():
    n = 2000
    assert _check(1.0, np.nextafter(1 / n, 0), n_rows=n) == []
    (msg,) = _check(1.0, 1 / n, n_rows=n)
    assert "n=2000" in msg and "1/n" in msg
    # a small public n: the fixed limit still applies (delta=5e-3 < 1/100)
    assert len(_check(1.0, 5e-3, n_rows=100)) == 1


def test_n_is_never_used_under_add_remove():
    assert _check(1.0, 1 / 2000, Relation.ADD_REMOVE, n_rows=2000) == []
    assert "n=" not in " ".join(_check(1.0, 0.01, Relation.ADD_REMOVE, n_rows=2000))


def test_both_rules_give_two_messages():
    assert len(_check(20.0, 0.01)) == 2


# --- through a mechanism --------------------------------------------------------------------------


def _fit(X, *, epsilon=1.0, delta=1e-6, relation="replace_one", accountant=None, seed=0):
    return analyze_gauss(X, 2, epsilon=epsilon, delta=delta, row_norm=1.0, relation=relation,
                         accountant=accountant, random_state=seed)


def test_mechanism_boundaries_in_memory(lowrank_data):
    n = lowrank_data.shape[0]  # 2000: 1/n = 5e-4 < 1e-3
    assert _messages(_fit, lowrank_data, delta=np.nextafter(1 / n, 0)) == []
    (msg,) = _messages(_fit, lowrank_data, delta=1 / n)
    assert "n=2000" in msg
    # under add/remove the same delta is below the fixed limit and n is not used
    assert _messages(_fit, lowrank_data, delta=1 / n, relation="add_remove") == []
    assert _messages(_fit, lowrank_data, epsilon=10.0) == []
    assert len(_messages(_fit, lowrank_data, epsilon=10.5)) == 1


def test_a_one_shot_stream_uses_the_fixed_limit(lowrank_data):
    """A one-shot stream's n is not known before the charge: only the fixed limit applies."""
    blocks = lambda: iter(np.array_split(lowrank_data, 4))  # noqa: E731
    assert _messages(_fit, blocks(), delta=1 / 2000) == []
    assert len(_messages(_fit, blocks(), delta=2e-3)) == 1


def test_text_quotes_public_inputs_only(lowrank_data):
    """Neighbouring data sets (one row replaced) give the same text, built from the public inputs."""
    neighbour = lowrank_data.copy()
    neighbour[7] = 0.123456789 * np.ones(lowrank_data.shape[1]) / np.sqrt(lowrank_data.shape[1])
    a = _messages(_fit, lowrank_data, epsilon=12.0, delta=1e-3)
    b = _messages(_fit, neighbour, epsilon=12.0, delta=1e-3)
    assert a == b and len(a) == 2
    text = " ".join(a)
    assert "0.123" not in text
    numbers = {tok.strip("(),.;:=") for tok in text.replace("=", " ").split()}
    digits = {t for t in numbers if any(c.isdigit() for c in t)}
    assert digits <= {"analyze_gauss", "12", "10", "0.001", "2000", "1/n", "exp(epsilon)", "20"}


def test_the_warning_changes_no_charge(lowrank_data):
    quiet, loud = Accountant(), Accountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyParameterWarning)
        a = _fit(lowrank_data, epsilon=20.0, delta=0.01, accountant=quiet, seed=3)
    with pytest.warns(PrivacyParameterWarning):
        b = _fit(lowrank_data, epsilon=20.0, delta=0.01, accountant=loud, seed=3)
    assert quiet.events == loud.events and len(loud.entries) == len(b.privacy.events)
    assert quiet.epsilon_spent(0.01) == loud.epsilon_spent(0.01)
    assert a.privacy.events == b.privacy.events
    np.testing.assert_array_equal(a.components, b.components)


_SETTINGS = {"dp_pca": {"batch_size": 400}}
_PRIVATE_PCA = [m for m in methods(task="pca") if m.private]


@pytest.mark.parametrize("method", _PRIVATE_PCA, ids=[m.name for m in _PRIVATE_PCA])
def test_every_pca_method_passes_through_the_check(method, lowrank_data):
    params = dict(epsilon=10.5, delta=1e-6 if method.needs_delta else 0.0, row_norm=1.0,
                  calibration=method.default_calibration, relation=method.relations[0], random_state=0)
    params.update(_SETTINGS.get(method.name, {}))
    msgs = _messages(method.function, lowrank_data, 2, **params)
    assert len(msgs) == 1 and "epsilon=10.5" in msgs[0]


# --- the Accountant's ceiling at delta 0 ----------------------------------------------------------


def test_accountant_without_delta_says_to_set_one(lowrank_data):
    acc = Accountant(epsilon=10)
    with pytest.raises(BudgetExceededError, match=r"Accountant\(epsilon=10, delta=1e-6\)") as info:
        _fit(lowrank_data, accountant=acc)
    assert "delta=0" in str(info.value) and acc.entries == ()
    # with a delta it runs
    _fit(lowrank_data, accountant=Accountant(epsilon=10, delta=1e-6))


def test_an_ordinary_refusal_has_no_delta_hint(lowrank_data):
    acc = Accountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError) as info:
        _fit(lowrank_data, accountant=acc)
    assert "give the Accountant a delta" not in str(info.value)
