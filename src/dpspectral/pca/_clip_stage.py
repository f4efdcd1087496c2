"""The adaptive clip's stage in the plans of the PCA methods that release a norm histogram first."""

from __future__ import annotations

from typing import Any

from ..privacy._adaptive import RowClipPlan
from ..privacy._pipeline import ReleasePlan

__all__ = ["ClipStaged", "with_clip_stage"]


def with_clip_stage(plan: ReleasePlan, clip: RowClipPlan | None) -> ReleasePlan:
    """``plan`` preceded by the norm histogram of ``clip`` (its event and release first); ``plan`` itself
    without a clip."""
    if clip is None:
        return plan
    return ReleasePlan(plan.label, plan.relation, (clip.event, *plan.events), (clip.release, *plan.releases),
                       plan.notes)


class ClipStaged:
    """The stages of a mechanism whose checked inputs carry ``clip`` (a :class:`RowClipPlan` or None):
    with a clip, the norm histogram, then the release named ``release_name``; without, that release."""

    release_name: str

    def is_staged(self, inputs: Any) -> bool:
        return inputs.clip is not None

    def stages(self, inputs: Any, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        return ((("norm_histogram",),) if inputs.clip is not None else ()) + ((self.release_name,),)
