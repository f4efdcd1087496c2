"""Option groups of DPSR and DPSRS (Chen et al.): the two phases' step sizes, and the paper's printed
noise scale that ``calibration="paper"`` reproduces.

Each group is one frozen value passed as one keyword (as :class:`~dpspectral.AdaptiveClip` is):
``step_sizes=StepSizes(...)`` (None: the defaults documented on the group) and
``calibration=PaperCalibration(...)`` (``"paper"`` with those settings; ``"paper"`` alone: the defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

from .._constraints import CALIBRATION, Types

__all__ = ["CALIBRATION_OR_PAPER", "PaperCalibration", "StepSizes", "group_fields"]

G = TypeVar("G")


@dataclass(frozen=True)
class StepSizes:
    """The step sizes of DPSR's two phases (Chen et al., Algorithm 2: eta_B and eta_A).

    Pass ``step_sizes=StepSizes(...)`` to :func:`~dpspectral.gep.dpsr` or :func:`~dpspectral.gep.dpsrs`
    (or through the ``**kwargs`` of :func:`~dpspectral.gep.private_fda` and the ``method_params`` of
    :class:`~dpspectral.DPFisherDiscriminant`); None uses these defaults.

    Parameters
    ----------
    phase1 : float, default=1.0
        eta_B, the step of phase 1 (on B), > 0. The paper searches {1/4, 1/2, 1}.
    phase2 : float or "auto", default="auto"
        eta_A, the step of phase 2 (on the reduced A), > 0. ``"auto"``: with
        ``regularization="noise"`` the step with ``eta_A sigma_2 sqrt(k1) = 1`` (one step's noise has
        the norm of an iterate column; ``sigma_2`` the phase-2 noise std, from the plan and the released
        ``||Phi~||_2^2``: public); with a float xi the paper's 1.
    """

    phase1: float = 1.0
    phase2: float | str = "auto"


@dataclass(frozen=True)
class PaperCalibration:
    """Which of the paper's printed noise scales ``calibration="paper"`` reproduces, with which constants.

    Pass ``calibration=PaperCalibration(...)`` to :func:`~dpspectral.gep.dpsr` or
    :func:`~dpspectral.gep.dpsrs` (or to :class:`~dpspectral.DPFisherDiscriminant` with one of these
    methods): the paper's calibration, ``calibration="paper"``, with these settings (reproduction: the
    accountant certifies what these scales give, and warns where they fall short;
    :mod:`dpspectral.gep._reduction`). ``calibration="paper"`` uses these defaults.

    Parameters
    ----------
    formula : {"theorem12", "algorithm2"}, default="theorem12"
        Theorem 12's noise scale, or Algorithm 2's ``2 C sqrt(m ln(1.25/delta)) / (n eps)``.
    constants : (C1, C2) or None, default=None
        The constants in the formula, on the paper's scale (rows of norm 1; multiplied by
        ``row_norm^2 / n`` here, so the pair needs a known n). None: the derived ones (sound). Other
        values show what the accountant certifies for other readings of the paper.
    """

    formula: Literal["theorem12", "algorithm2"] = "theorem12"
    constants: tuple[float, float] | None = None


#: The constraint of DPSR's ``calibration``: ``"tight"``, ``"paper"`` or a :class:`PaperCalibration`.
CALIBRATION_OR_PAPER = [CALIBRATION, Types((PaperCalibration,), "a PaperCalibration")]


def group_fields(value: Any, group: type[G], name: str, owner: str) -> dict[str, Any]:
    """The fields of option group ``name`` as ``{"name.field": value}`` (None: the group's defaults).

    The dotted names are the group's entries in a solver's parameter table, so that a bad field is
    refused by the table with its full name.
    """
    if value is None:
        value = group()
    if not isinstance(value, group):
        raise TypeError(f"The '{name}' parameter of {owner} must be a {group.__name__} or None. Got "
                        f"{type(value).__name__} instead.")
    return {f"{name}.{f.name}": getattr(value, f.name) for f in fields(value)}  # type: ignore[arg-type]
