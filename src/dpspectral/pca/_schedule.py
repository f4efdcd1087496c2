"""The warm-up schedule of the minibatch methods: how a pass is cut into batches (public sizes)."""

from __future__ import annotations

from dataclasses import dataclass

from .._constraints import Interval, Table, check_params
from ._stream import DEFAULT_N_BATCHES, DEFAULT_WARMUP_FRACTION

__all__ = ["WarmupSchedule"]


@dataclass(frozen=True)
class WarmupSchedule:
    """Cut one pass over n rows into T batches: T - 1 warm-up batches, then one with the rest.

    The first ``n_batches - 1`` batches have ``floor(warmup_fraction n)`` rows each and the last the
    rest (public sizes: n is public under replace-one; a stream needs ``n_samples``). The early steps
    only need to find the subspace roughly; the last, large batch sets the accuracy.

    Parameters
    ----------
    n_batches : int, default=4
        T, the number of batches (steps), at least 1.
    warmup_fraction : float in (0, 1), default=0.05
        The share of the rows in each warm-up batch.
    """

    n_batches: int = DEFAULT_N_BATCHES
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION

    def __post_init__(self) -> None:
        table: Table = {"n_batches": Interval(1, None, "left", integer=True),
                        "warmup_fraction": Interval(0, 1, "neither")}
        check_params(table, {name: getattr(self, name) for name in table}, "WarmupSchedule")
