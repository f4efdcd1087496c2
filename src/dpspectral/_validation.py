"""Parameter validation shared by the functions and estimators (messages name the parameter)."""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from ._constraints import BUDGET_PARAMETERS, CALIBRATION, ON_NORM_VIOLATION, Table, check_params
from ._rows import _column_names, as_label_array, as_numeric_array, check_numeric_dtype, check_numeric_layout
from .privacy._budget import PrivacyBudget, as_relation
from .privacy._clipping import check_row_norm

__all__ = ["as_generator", "as_label_array", "as_numeric_array", "check_budget", "check_choice",
           "check_n_components", "check_numeric_dtype", "check_numeric_layout", "check_share",
           "gaussian_budget", "validated_data"]


def check_choice(value: Any, name: str, allowed: Collection[str], owner: str) -> str:
    """``value`` must be one of ``allowed`` (strings): a one-entry constraint table."""
    from ._constraints import check_choice as _check

    return _check(value, name, allowed, owner)


def check_n_components(k: Any, n_features: int, owner: str, name: str = "n_components") -> int:
    """An integer in [1, n_features]."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(
            f"The '{name}' parameter of {owner} must be an int in [1, {n_features}]. Got {k!r} "
            "instead."
        )
    if not 1 <= int(k) <= n_features:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in [1, n_features={n_features}]. "
            f"Got {k!r} instead."
        )
    return int(k)


def check_share(value: Any, name: str, owner: str) -> float:
    """A budget share in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a float in (0, 1). Got {value!r} instead."
        )
    return float(value)


def as_generator(random_state: Any) -> np.random.Generator:
    """A ``np.random.Generator`` from None, an int, a SeedSequence or a Generator.

    The global NumPy state is never used. A Generator passed in is used (and advanced) as is.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(
                f"The 'random_state' parameter must be a non-negative int. Got {random_state!r}."
            )
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        # Legacy generator: derive a Generator from it (deterministic given its state).
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    raise TypeError(
        "The 'random_state' parameter must be None, an int, a numpy SeedSequence or Generator. "
        f"Got {random_state!r} instead."
    )


def check_mechanism_inputs(
    *,
    epsilon: Any,
    delta: Any,
    row_norm: Any,
    relation: Any,
    calibration: Any,
    on_norm_violation: Any,
    owner: str,
    allowed_relations: Collection[Any],
    needs_delta: bool = True,
) -> tuple[Any, Any, float]:
    """The public inputs every mechanism takes: ``(PrivacyBudget, Relation, row_norm)``.

    Raises a ValueError/TypeError naming the parameter for a bad epsilon, delta (and delta = 0 when
    ``needs_delta``), row_norm, relation outside ``allowed_relations``, calibration or
    on_norm_violation.
    """
    check_params(BUDGET_PARAMETERS, {"epsilon": epsilon, "delta": delta}, owner)
    budget = PrivacyBudget(epsilon, delta)
    rel = as_relation(relation, owner=owner)
    if rel not in allowed_relations:
        allowed = ", ".join(repr(r.value) for r in allowed_relations)
        raise ValueError(
            f"The 'relation' parameter of {owner} must be one of {allowed}. Got {rel.value!r} instead."
        )
    check_params({"calibration": CALIBRATION, "on_norm_violation": ON_NORM_VIOLATION},
                 {"calibration": calibration, "on_norm_violation": on_norm_violation}, owner)
    C = check_row_norm(row_norm, owner)
    if needs_delta:
        budget.require_delta(owner)
    return budget, rel, C


def gaussian_budget(table: Table, values: Mapping[str, Any], owner: str) -> PrivacyBudget:
    """Check ``values`` against ``table`` (which states epsilon and delta); the target (epsilon, delta)
    of a Gaussian mechanism, which needs delta > 0 (refused, saying why, before anything is charged)."""
    check_params(table, values, owner)
    budget = PrivacyBudget(values["epsilon"], values["delta"])
    budget.require_delta(owner)
    return budget


def check_budget(epsilon: Any, delta: Any, owner: str) -> PrivacyBudget:
    """The target (epsilon, delta) of a Gaussian mechanism from the shared table entries; delta > 0."""
    return gaussian_budget(BUDGET_PARAMETERS, {"epsilon": epsilon, "delta": delta}, owner)


# --- user data: converted by dpspectral._rows, refused with messages that quote nothing from the data


def validated_data(estimator: Any, X: Any, y: Any = "no_validation", **check_params: Any) -> Any:
    """scikit-learn's ``validate_data`` for an estimator's ``fit``/``transform``/``predict`` input,
    after the conversions that could quote the data have been made here (:func:`as_numeric_array`
    for X, :func:`as_label_array` for y), with data-free refusals.

    scikit-learn's own messages quote the data (``Expected 2D array, got 1D array instead:
    array=[...]``, ``Complex data not supported`` followed by the array, NumPy's ``could not convert
    string to float: '...'``). A DataFrame goes on to scikit-learn as it is (so that ``feature_names_in_``
    is recorded and checked) once every cell has been read as a number; other input goes on converted.
    """
    from sklearn.utils.validation import validate_data

    owner = type(estimator).__name__
    sparse_ok = bool(check_params.get("accept_sparse", False))
    checked = as_numeric_array(X, owner, name="X", ndim=2, accept_sparse=sparse_ok)
    data = X if _column_names(X) is not None else checked
    if isinstance(y, str) and y == "no_validation":
        return validate_data(estimator, data, **check_params)
    if y is not None:
        as_label_array(y, owner, n_rows=int(checked.shape[0]))
    return validate_data(estimator, data, y, **check_params)
