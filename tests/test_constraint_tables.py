"""The shared parameter tables: one statement of the privacy parameters that the callables' tables extend.

* :data:`PRIVACY_PARAMETERS` is :data:`NOISE_PARAMETERS` (itself :data:`BUDGET_PARAMETERS` and the
  norm bound and calibration) and the run's options, in the order they are checked;
* :func:`without` drops the named entries only, keeps the order, and refuses a name not in the table
  (a misspelt name would otherwise drop nothing and leave the callable's table naming a parameter
  it does not take);
* a callable whose table extends a shared one states the shared entries with the shared constraints;
* the target of a Gaussian mechanism is checked by one function (the shared entries, then delta > 0).
"""

from __future__ import annotations

import pytest

from dpspectral._constraints import (
    BUDGET_PARAMETERS,
    DELTA,
    EPSILON,
    NOISE_PARAMETERS,
    PRIVACY_PARAMETERS,
    InvalidParameterError,
    check_params,
    without,
)
from dpspectral.lowrank import hardt_roth
from dpspectral.pca._lr_search import select_learning_rate


def test_the_shared_tables_nest_in_checking_order():
    assert list(BUDGET_PARAMETERS) == ["epsilon", "delta"]
    assert list(NOISE_PARAMETERS) == ["epsilon", "delta", "row_norm", "calibration"]
    assert list(PRIVACY_PARAMETERS) == [*NOISE_PARAMETERS, "on_norm_violation", "random_state"]
    assert BUDGET_PARAMETERS["epsilon"] is EPSILON and NOISE_PARAMETERS["delta"] is DELTA


def test_without_drops_the_named_entries_and_keeps_the_order():
    table = without(PRIVACY_PARAMETERS, "row_norm", "calibration")
    assert list(table) == ["epsilon", "delta", "on_norm_violation", "random_state"]
    assert all(table[name] is PRIVACY_PARAMETERS[name] for name in table)
    assert "row_norm" in PRIVACY_PARAMETERS  # the shared table itself is left as it was


def test_without_refuses_a_name_not_in_the_table():
    with pytest.raises(KeyError, match="row_nrom"):
        without(PRIVACY_PARAMETERS, "row_nrom")


@pytest.mark.parametrize(("fn", "dropped"), [(select_learning_rate, "calibration"), (hardt_roth, "row_norm")])
def test_an_extended_table_states_the_shared_entries(fn, dropped):
    table = fn.parameter_constraints
    assert dropped not in table
    for name in without(PRIVACY_PARAMETERS, dropped):
        assert table[name] is PRIVACY_PARAMETERS[name]
    with pytest.raises(InvalidParameterError, match="The 'epsilon' parameter of f must be a float in"):
        check_params(table, {"epsilon": -1.0}, "f")


def test_the_gaussian_budget_is_checked_in_one_place():
    """The shared entries first (their message), then delta > 0 with the Gaussian mechanism's reason."""
    from dpspectral._validation import check_budget

    budget = check_budget(1, 1e-6, "f")
    assert (budget.epsilon, budget.delta) == (1.0, 1e-6)
    with pytest.raises(InvalidParameterError, match="The 'delta' parameter of f must be a float in"):
        check_budget(1.0, 1.5, "f")
    with pytest.raises(ValueError, match="The 'delta' parameter of f must be in \\(0, 1\\): a Gaussian"):
        check_budget(1.0, 0.0, "f")
