"""The number of rows released privately, to choose a public basis's d' when n is private (add/remove).

Under add/remove neighbours n is private, so the rule of :func:`dpspectral._public_basis.choose_n_atoms`
cannot read it. With ``n_atoms="auto"`` the run then has two stages, both in one privacy report:

1. **the count**: n with Gaussian noise of multiplier ``s / sqrt(share)`` (:data:`COUNT_SHARE` of
   ``1 / s^2``), ``s`` the analytic Gaussian multiplier of the whole (epsilon, delta); the method is
   calibrated to the multiplier ``s / sqrt(1 - share)`` left (Gaussian releases compose exactly to
   ``s``). The count moves by 1 when a row is added or removed: L2 sensitivity 1. (Pure epsilon-DP
   needs no count: its rule for d' does not read n.)
2. **the method**, inside the basis whose d' is chosen from the noisy count (post-processing), with the
   next draws of the same seeded noise stream.

The rows are read and checked (finite; within ``row_norm`` when violations are to be refused) by the
count's validating pass, and the method's options by a probe that stops it at its charge, so bad input
is refused before anything is charged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from ._rows import _is_block_source
from .privacy._accounting import Accountant
from .privacy._budget import PrivacyBudget, Relation
from .privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from .privacy._pipeline import NoisyRelease, ReleasePlan
from .privacy._template import Prelude, Released

#: Share of the budget spent on the number of rows (of ``1 / s^2`` for a Gaussian budget, of epsilon
#: under pure epsilon). At n = 1,000, epsilon = 1, delta = 1e-6 the Gaussian count's standard deviation
#: is about 30 rows, and the method's noise grows by ``1 / sqrt(0.98)`` (1 %).
COUNT_SHARE = 0.02
ROW_COUNT = "row_count"


@dataclass(frozen=True)
class CountRelease:
    """The count stage of a run and what it leaves to the method (public inputs only)."""

    relation: Relation
    budget: PrivacyBudget
    kind: Literal["gaussian"]
    scale: float
    rest: PrivacyBudget  # the (epsilon, delta) the method is calibrated to
    share: float = COUNT_SHARE
    rest_multiplier: float = 0.0  # the Gaussian multiplier left to the method

    @property
    def events(self) -> tuple[dp_accounting.DpEvent, ...]:
        return (dp_accounting.GaussianDpEvent(self.scale),)  # sensitivity 1: the scale is the multiplier

    def plan(self, label: str) -> ReleasePlan:
        release = NoisyRelease(ROW_COUNT, self.kind, self.scale, 1.0)
        return ReleasePlan(label, self.relation, self.events, (release,))

    def note(self) -> str:
        return (f"n_atoms='auto' under add/remove neighbours: the number of rows was released with Gaussian "
                f"noise of standard deviation {self.scale:.4g} "
                f"(share {self.share:g} of the budget; sensitivity 1) and d' chosen from that noisy count; "
                f"the method ran at (epsilon, delta) = ({self.rest.epsilon:.4g}, {self.rest.delta:.3g}).")


def plan_count(budget: PrivacyBudget, relation: Relation, share: float = COUNT_SHARE) -> CountRelease:
    """The count stage for a run of ``budget`` (module docstring)."""
    from .privacy._accounting import epsilon_of

    if budget.delta <= 0:
        raise ValueError("A count of the rows for a public basis is planned for (epsilon, delta)-DP only.")
    s = analytic_noise_multiplier(budget.epsilon, budget.delta)
    s_count, s_rest = split_noise_multiplier(s, [share, 1.0 - share])
    eps = epsilon_of(dp_accounting.GaussianDpEvent(s_rest), budget.delta, relation=relation,
                     accounting="gaussian")
    return CountRelease(relation, budget, "gaussian", float(s_count),
                        PrivacyBudget(min(float(eps), budget.epsilon), budget.delta), share, float(s_rest))


@dataclass(frozen=True, eq=False)
class CountRows:
    """The validated rows' count (private) and width (public)."""

    n: int
    d: int


def count_rows(X: Any, matrix: np.ndarray, row_norm: float | None, owner: str) -> CountRows:
    """The validating pass of the count stage: every row projected, finite, within ``row_norm`` if given
    (raises before the charge otherwise)."""
    blocks = list(X) if _is_block_source(X) and not callable(X) else (
        list(X()) if callable(X) and not hasattr(X, "shape") else [X])
    n = 0
    for block in blocks:
        B = np.asarray(sp.csr_matrix(block) @ matrix) if sp.issparse(block) else (
            np.asarray(block, dtype=np.float64) @ matrix)
        if B.ndim != 2 or not np.isfinite(B).all():
            raise ValueError(f"{owner}: the rows must be a finite 2-D array. Nothing was charged.")
        if row_norm is not None:
            worst = float(np.max(np.linalg.norm(B, axis=1), initial=0.0))
            if worst > float(row_norm) * (1.0 + 1e-9):
                raise ValueError(f"{owner}: a row is longer than row_norm = {row_norm:g} inside the basis "
                                 "(on_norm_violation='raise'). Nothing was charged.")
        n += int(B.shape[0])
    return CountRows(n, int(matrix.shape[0]))


class RowCount(Prelude[CountRelease, tuple[float, Any]]):
    """The count stage alone, for a later run (the method in the basis) that continues it.

    ``cost``: the later run's events, checked with the count's before anything is read, charged by it.
    The result is ``(the noisy count, the random_state with which the later run continues)``.
    """

    def __init__(self, owner: str, cost: tuple[dp_accounting.DpEvent, ...], rows: CountRows) -> None:
        super().__init__(owner, cost)
        self.rows = rows

    def read(self, inputs: CountRelease, X: Any) -> CountRows:
        return self.rows

    def statistic(self, inputs: CountRelease, rows: CountRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        return {ROW_COUNT: np.array([float(rows.n)])}

    def post_process(self, inputs: CountRelease, rows: CountRows, released: Released,
                     report: Any) -> tuple[float, Any]:
        return float(np.asarray(released[ROW_COUNT]).ravel()[0]), released.continuation

    def report_facts(self, inputs: CountRelease) -> dict[str, Any]:
        return {"mechanism": self.label, "budget": inputs.budget, "calibration": "tight"}


class ReachedTheCharge(Exception):
    """Raised by :class:`ProbeAccountant` when a method reaches its charge (its checks all passed)."""


class ProbeAccountant(Accountant):
    """A ledger that stops a method at its first charge or precheck: nothing recorded, nothing drawn."""

    def check(self, event: Any, relation: Any) -> float:
        raise ReachedTheCharge
