"""The private label set of a Fisher discriminant fitted with ``classes=None`` (the default).

Without a public list of labels, the set of labels present in ``y`` decides ``classes_``, the default
number of directions and every output shape; a label held by one person appears in it or not. That
set is therefore *released*, as the first stage of the fit, with a Gaussian stability histogram
(:func:`~dpspectral.privacy._histogram.gaussian_stable_histogram`): each label present gets its count
plus Gaussian noise, and is kept iff the noisy count exceeds a public threshold. The later stages read
only the kept labels; rows whose label was not kept are dropped (a per-row map that depends on the
released set only), like rows of a label outside a public class list would be.

Budget
------
Planned from public inputs (epsilon, delta, relation), before anything is read:

* ``LABEL_DELTA_SHARE`` (10 %) of delta pays for the threshold: a label held by one record is kept
  with probability at most ``delta_L / 2`` (replace-one) or ``delta_L`` (add/remove):
  ``EpsilonDeltaDpEvent(0, delta_L)``;
* the Gaussian releases of the whole fit are calibrated together to ``(epsilon, delta - delta_L)``
  (multiplier ``s``); the label counts take ``LABEL_SHARE`` (5 %) of ``1 / s^2``: multiplier
  ``s / sqrt(LABEL_SHARE)``, so the later stages keep ``1 - LABEL_SHARE`` of it (their noise grows by
  ``1 / sqrt(0.95)``, 2.6 %).

Privacy
-------
A record is a row and its label. The counts of the labels present move by at most ``sqrt(2)`` in L2
(replace-one: one unit from the old label to the new one) or 1 (add/remove): the noise is
``GaussianDpEvent(s / sqrt(LABEL_SHARE))`` for that sensitivity. A label present on one side only has
count 1 there; the threshold bounds the probability that it is kept, and the analysis in
:mod:`dpspectral.privacy._histogram` (Gaussian variant) shows the whole fit is
``(epsilon, delta_G(epsilon) + delta_L)``-DP, ``delta_G`` the privacy profile of all its Gaussian
releases: the report's events are the label stage's two, then the later stages', and the accountant
certifies ``epsilon_G(delta - delta_L) <= epsilon``. Dropping rows whose label was not released keeps
the later stages' sensitivities: a replace-one pair stays a replace-one pair, or becomes an add/remove
pair (one row dropped on one side only), whose sensitivities are smaller; under replace-one the number
of rows kept is then private, and the later stages use the released counts instead of n.

Failures decided after the release (fewer than 2 labels kept, ``n_components`` above the number
kept) are post-processing of released values: identical for neighbours that release the same set, and
the label stage stays charged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._histogram import (
    gaussian_stable_histogram,
    gaussian_stable_histogram_events,
    gaussian_stable_threshold,
)
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._quantile import histogram_sensitivity
from ..privacy._template import Drawn, Prelude, Released

__all__ = ["LABEL_DELTA_SHARE", "LABEL_SHARE", "LabelRelease", "LabelRows", "LabelSet", "plan_label_release",
           "solver_budget", "too_few_labels"]

#: The label counts' share of the Gaussian budget ``1 / s^2`` of the whole fit.
LABEL_SHARE = 0.05
#: The share of delta that pays for the threshold (a one-record label kept).
LABEL_DELTA_SHARE = 0.1
#: The name of the label counts' release in the plans.
LABEL_COUNTS = "label_counts"


@dataclass(frozen=True)
class LabelRelease:
    """The label-set stage of a fit with ``classes=None``, planned from public inputs.

    Attributes
    ----------
    relation : Relation
    multiplier : float
        The label counts' Gaussian noise multiplier ``s / sqrt(share)``.
    delta : float
        ``delta_L``: the threshold's failure probability, charged as ``EpsilonDeltaDpEvent(0, delta_L)``.
    share : float
        The label counts' share of ``1 / s^2``.
    rest : PrivacyBudget
        ``(epsilon, delta - delta_L)``: what the Gaussian releases of the whole fit (this one included)
        are calibrated to.
    """

    relation: Relation
    multiplier: float
    delta: float
    share: float
    rest: PrivacyBudget

    @property
    def events(self) -> tuple[dp_accounting.DpEvent, ...]:
        """``(GaussianDpEvent(multiplier), EpsilonDeltaDpEvent(0, delta_L))``."""
        return gaussian_stable_histogram_events(self.multiplier, self.delta)

    @property
    def release(self) -> NoisyRelease:
        """The label counts' Gaussian release (scale: multiplier times the L2 sensitivity)."""
        sens = histogram_sensitivity(self.relation)
        return NoisyRelease(LABEL_COUNTS, "gaussian", self.multiplier * sens, sens)

    def plan(self, label: str) -> ReleasePlan:
        """The stage's plan (its two events, its one release)."""
        return ReleasePlan(label, self.relation, self.events, (self.release,))

    def threshold(self) -> float:
        """The public threshold of the seeded source (the secure source's is a little higher)."""
        return gaussian_stable_threshold(self.release.scale, self.delta, self.relation)

    def rest_multiplier(self) -> float:
        """The Gaussian multiplier left to the later stages: ``s / sqrt(1 - share)`` (one event)."""
        s = analytic_noise_multiplier(self.rest.epsilon, self.rest.delta)
        return split_noise_multiplier(s, [self.share, 1.0 - self.share])[1]

    def note(self) -> str:
        """The report's note (public facts only)."""
        return (f"classes=None: the set of labels was released privately (a Gaussian stability histogram: "
                f"each label present kept iff its noisy count exceeds about {self.threshold():.4g}; share "
                f"{self.share:g} of the Gaussian budget, delta {self.delta:.3g} for the threshold); "
                "rows of a label not kept were left out. classes_ and every shape come from that release.")

    def statistic(self, classes: np.ndarray, index: np.ndarray) -> Drawn:
        """The stage's release (for the release template): which labels the noisy counts keep.

        The label counts are drawn from a stream of their own, seeded by one draw of the run's
        (:meth:`~dpspectral.privacy._pipeline.Releaser.independent`): the later stages' noise does not
        depend on how many labels are present.
        """
        counts = np.bincount(np.asarray(index, dtype=np.intp), minlength=int(classes.size))

        def draw(releaser: Releaser) -> np.ndarray:
            with releaser.independent() as own:
                keep, _ = gaussian_stable_histogram(counts, releaser=own, name=LABEL_COUNTS,
                                                    delta=self.delta, relation=self.relation)
            return keep

        return Drawn(draw)

    def kept(self, keep: np.ndarray, classes: np.ndarray, index: np.ndarray,
             owner: str) -> tuple[np.ndarray, np.ndarray]:
        """After the stage (post-processing of its release ``keep``): ``(kept labels, new index per row,
        -1 if dropped)``. Refuses when fewer than 2 labels were kept (the stage stays charged)."""
        kept = np.flatnonzero(keep)
        if kept.size < 2:
            raise too_few_labels(owner, self.threshold())
        remap = np.full(int(classes.size), -1, dtype=np.intp)
        remap[kept] = np.arange(kept.size)
        return classes[kept], remap[np.asarray(index, dtype=np.intp)]


@dataclass(frozen=True, eq=False)
class LabelRows:
    """The private labels of a label-set release: the labels present and each row's index among them."""

    classes: np.ndarray
    index: np.ndarray

    @property
    def n(self) -> int:
        return int(self.index.size)

    @property
    def d(self) -> int:
        return 0  # no features are read


class LabelSet(Prelude[LabelRelease, tuple[np.ndarray, Any]]):
    """The label-set stage alone, as the release template runs it, for a later run that continues it.

    ``cost``: the events of that later run (a solver on the pair), checked against the ledger with the
    label stage's before anything is drawn and charged by the later run. The result is ``(the labels
    kept, the random_state with which the later run continues the same noise stream)``; fewer than 2
    labels kept is refused after the charge (a decision on the released set: the stage stays charged).
    """

    def __init__(self, owner: str, cost: tuple[dp_accounting.DpEvent, ...], budget: PrivacyBudget) -> None:
        super().__init__(owner, cost)
        self.budget = budget

    def read(self, inputs: LabelRelease, X: LabelRows) -> LabelRows:
        return X

    def statistic(self, inputs: LabelRelease, rows: LabelRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        return {LABEL_COUNTS: inputs.statistic(rows.classes, rows.index)}

    def post_process(self, inputs: LabelRelease, rows: LabelRows, released: Released,
                     report: Any) -> tuple[np.ndarray, Any]:
        classes, _ = inputs.kept(released[LABEL_COUNTS], rows.classes, rows.index, self.label)
        return classes, released.continuation

    def report_facts(self, inputs: LabelRelease) -> dict[str, Any]:
        return {"mechanism": self.label, "budget": self.budget, "calibration": "tight"}


def plan_label_release(budget: PrivacyBudget, relation: Relation, share: float = LABEL_SHARE,
                       delta_share: float = LABEL_DELTA_SHARE) -> LabelRelease:
    """The label-set stage for a fit of budget ``(epsilon, delta)`` (module docstring: Budget)."""
    delta_l = float(delta_share) * budget.delta
    rest = PrivacyBudget(budget.epsilon, budget.delta - delta_l)
    s = analytic_noise_multiplier(rest.epsilon, rest.delta)
    multiplier = split_noise_multiplier(s, [float(share), 1.0 - float(share)])[0]
    return LabelRelease(relation=relation, multiplier=multiplier, delta=delta_l, share=float(share),
                        rest=rest)


def too_few_labels(owner: str, threshold: float) -> ValueError:
    """The error when the label release kept fewer than 2 labels (public facts only)."""
    return ValueError(
        f"{owner}: with classes=None the set of labels is released privately, and fewer than 2 labels "
        f"passed its threshold (a noisy count above about {threshold:.4g} rows; labels with fewer records "
        "are left out), so one class or none is left, while Fisher discriminant analysis needs at least 2. "
        "Pass the public list of labels as 'classes' (no threshold then), or a larger epsilon. The label "
        "release stays charged."
    )


def solver_budget(labels: LabelRelease) -> PrivacyBudget:
    """The ``(epsilon, delta)`` a solver that calibrates itself gets after the label stage: the epsilon
    of one ``GaussianDpEvent(rest_multiplier)`` at ``delta - delta_L``, so that its Gaussian releases
    and the label counts compose (Gaussian DP) to the budget's multiplier."""
    from ..privacy._accounting import epsilon_of

    eps = epsilon_of(dp_accounting.GaussianDpEvent(labels.rest_multiplier()), labels.rest.delta,
                     relation=labels.relation, accounting="gaussian")
    return PrivacyBudget(min(float(eps), labels.rest.epsilon), labels.rest.delta)

