"""The public inputs every PCA mechanism takes, as one frozen record that each mechanism's inputs extend."""

from __future__ import annotations

from dataclasses import dataclass

from ..privacy._budget import Relation

__all__ = ["PcaInputs"]


@dataclass(frozen=True, eq=False)
class PcaInputs:
    """The public inputs common to the PCA mechanisms, as given (each mechanism's ``check`` checks them):
    the number of components, the target (epsilon, delta), the public bound on the row norms, the
    neighbouring relation and the noise calibration.

    A mechanism's record inherits these (they come first, so positional construction starts with them)
    and adds its own fields. Equality and hashing are each record's own (``eq=False`` here): a record
    declared with ``eq=False`` compares by identity, as it did before it extended this one.
    """

    k: int
    epsilon: float
    delta: float
    row_norm: float
    relation: Relation | str
    calibration: str
