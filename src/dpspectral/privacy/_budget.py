"""Privacy budgets, neighbouring relations, errors and warnings.

Everything here is public input: a budget and a relation are chosen by the user before the data are
seen, never read from the data.
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass

import dp_accounting

__all__ = [
    "BudgetExceededError",
    "PrivacyBudget",
    "PrivacyError",
    "PureEpsilonWarning",
    "Relation",
    "UncertifiedPrivacyWarning",
    "as_relation",
]


class PrivacyError(ValueError):
    """Base class of the errors raised to protect a privacy guarantee."""


class BudgetExceededError(PrivacyError):
    """A release would take an accountant past its ceiling; nothing was released."""


class UncertifiedPrivacyWarning(UserWarning):
    """The noise used does not certify the requested (epsilon, delta) under our accountant."""


class PureEpsilonWarning(UserWarning):
    """A positive delta was given to a pure epsilon-DP method, which runs at delta 0.

    Delta 0 is what the method guarantees and what its privacy report states; the delta given is not
    used.
    """


class Relation(enum.StrEnum):
    """Neighbouring relations between data sets.

    ``REPLACE_ONE``: the two data sets have the same number of rows and differ in one row
    (n is then public: it is the same for every pair of neighbours).
    ``ADD_REMOVE``: one data set has one row more than the other (n itself is protected).

    ``LOCAL``: the local model; each user's report is private with respect to that user's own
    record, whatever it is (any two inputs within the public bound). The server sees n reports, so n
    is public.

    ``PRIV1`` and ``PRIV2``: Upadhyay's matrix relations for low-rank factorization (the whole matrix
    A is the data set; its shape is public). ``PRIV1``: ``A - A' = u v^T`` with ``||u|| = ||v|| = 1``
    (times the public ``bound``); with u a standard basis vector it is row-level privacy, with both
    u and v basis vectors entry-level. ``PRIV2``: ``||A - A'||_F <= 1`` (times ``bound``); it contains
    PRIV1, so a PRIV2 guarantee is also a PRIV1 guarantee.

    ``ROW_CHANGE`` and ``LOCAL_ROW_CHANGE``: one row (central) or one user's row (local) moves by a
    vector of norm at most a public ``b`` (``row_change=b``), rows not clipped. Weaker than
    ``REPLACE_ONE`` / ``LOCAL`` (any two rows of norm <= C): the shape is public, as under replace-one.
    """

    REPLACE_ONE = "replace_one"
    ADD_REMOVE = "add_remove"
    LOCAL = "local"
    PRIV1 = "priv1"
    PRIV2 = "priv2"
    ROW_CHANGE = "row_change"
    LOCAL_ROW_CHANGE = "local_row_change"

    @property
    def dp_accounting(self) -> dp_accounting.NeighboringRelation:
        """The matching ``dp_accounting.NeighboringRelation``."""
        if self in (Relation.REPLACE_ONE, Relation.ROW_CHANGE, Relation.LOCAL_ROW_CHANGE):
            return dp_accounting.NeighboringRelation.REPLACE_ONE
        return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

    @property
    def n_is_public(self) -> bool:
        """Whether the number of rows is the same for all neighbours (so not protected)."""
        return self is not Relation.ADD_REMOVE

    def implies(self, other: Relation) -> bool:
        """Whether a guarantee under this relation is also one under ``other`` (PRIV2 covers PRIV1)."""
        return self is other or (self is Relation.PRIV2 and other is Relation.PRIV1)

    def __str__(self) -> str:
        return self.value


def as_relation(relation: Relation | str, *, owner: str = "relation") -> Relation:
    """Parse a relation given as a :class:`Relation` or its string value."""
    if isinstance(relation, Relation):
        return relation
    if isinstance(relation, str):
        key = relation.strip().lower().replace("-", "_").replace("/", "_")
        aliases = {"add_or_remove": "add_remove", "add_or_remove_one": "add_remove", "r1": "replace_one",
                   "ar": "add_remove"}
        key = aliases.get(key, key)
        for member in Relation:
            if member.value == key:
                return member
    allowed = ", ".join(repr(m.value) for m in Relation)
    raise ValueError(
        f"The 'relation' parameter of {owner} must be one of {allowed}. Got {relation!r} instead."
    )


@dataclass(frozen=True)
class PrivacyBudget:
    """An (epsilon, delta) target for one private computation.

    Parameters
    ----------
    epsilon : float
        In (0, inf).
    delta : float
        In [0, 1). ``delta = 0`` asks for pure epsilon-DP, which Gaussian mechanisms cannot give.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        eps, delta = self.epsilon, self.delta
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (
            math.isfinite(eps) and eps > 0
        ):
            raise ValueError(
                f"The 'epsilon' parameter must be a float in (0, inf). Got {eps!r} instead."
            )
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0 <= delta < 1):
            raise ValueError(
                f"The 'delta' parameter must be a float in [0, 1). Got {delta!r} instead."
            )
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(delta))

    def require_delta(self, owner: str) -> None:
        """Raise if this budget has ``delta == 0`` (for mechanisms that need delta > 0)."""
        if self.delta <= 0:
            raise ValueError(
                f"The 'delta' parameter of {owner} must be in (0, 1): a Gaussian mechanism cannot "
                f"give pure epsilon-DP. Got {self.delta!r} instead."
            )
