"""Adaptive row clipping for the iterative methods: stage one of a staged release.

A public bound ``C`` on the row norms is chosen before the data are seen and is often loose (raw
pixel rows bounded by ``sqrt(d)``, rows whose typical norm is a third of the bound). Every method here
adds noise proportional to its sensitivity at ``C`` (``C^2`` for a product with ``x x^T``), so a loose
bound buys noise and nothing else. The covariance path clips at a released clip
(``pca/covariance.py``); this module gives the same to the methods whose releases are iterations
(noisy power method, DP-SPCA, DP-VRPCA, mini-batch Oja, Private Oja) and to the Fisher moments:

1. **plan** (public inputs only): a noisy histogram of the row norms, :mod:`~dpspectral.privacy._quantile`,
   with noise multiplier ``s_h = s_total / sqrt(share)`` (``s_total``: the analytic Gaussian multiplier
   of the whole budget; for Gaussian releases ``share`` is exactly the histogram's share of
   ``1 / s_total^2``). The method then calibrates its own noise for the *composition* of this event and
   its own (:meth:`RowClipPlan.compose`), so the two stages together meet the budget exactly under the
   accountant. Both stages' events are declared before the first (:class:`StagedRelease`);
2. **stage one**: the histogram released; the clip ``r <= C`` post-processed from it (the balance rule
   of :func:`~dpspectral.privacy._quantile.balanced_clip`, given the method's noise per unit ``r^2``);
3. **stage two**: the method runs on the rows clipped at ``r`` with its sensitivity at ``r`` and the
   noise *multiplier* planned in 1 (so its events are the declared ones; only the scale follows ``r``).

Privacy
-------
Relation: the method's (replace-one or add/remove). The histogram moves one unit of count between
bins when one row is replaced (L2 sensitivity ``sqrt(2)``) and adds or removes one under add/remove
(``1``): ``GaussianDpEvent(s_h)``. The clip ``r`` is a function of that release only (post-processing)
and so is public for stage two: its sensitivity derivation holds with ``C`` replaced by ``r`` because
every row is clipped at ``r`` before it is used. The whole run is
``ComposedDpEvent([GaussianDpEvent(s_h), <the method's events>])``, calibrated jointly. The data are
read and validated (finite; within ``C`` with ``on_norm_violation="raise"``) before the first charge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dp_accounting
import numpy as np

from ._budget import PrivacyBudget, Relation
from ._gaussian import analytic_noise_multiplier
from ._pipeline import NoisyRelease, ReleasePlan, StagedRelease
from ._quantile import BALANCE_FACTOR, balanced_clip, bound_edges, histogram_sensitivity, norm_histogram

if TYPE_CHECKING:
    from ._accounting import Accountant
    from ._noise_base import NoiseSource

__all__ = ["DEFAULT_CLIP_SHARE", "FLOOR_QUANTILE", "RowClipPlan", "at_clip", "at_released_clip",
           "clip_from_counts", "clip_note", "plan_row_clip", "release_row_clip"]

#: Budget share of the norm histogram (of ``1 / s_total^2``): the price when the bound is already tight
#: is a ``1 / sqrt(1 - share)`` (1 %) larger noise.
DEFAULT_CLIP_SHARE = 0.02
#: The clip never goes below the norm this share of rows falls under (the noise-dominated limit: once
#: every row is clipped, signal and noise both scale with ``r^2``).
FLOOR_QUANTILE = 0.1


@dataclass(frozen=True)
class RowClipPlan:
    """The first stage of an adaptively clipped run, planned from public inputs.

    Attributes
    ----------
    row_norm : float
        The public bound ``C``.
    relation : Relation
    event : dp_accounting.GaussianDpEvent
        The histogram's event ``GaussianDpEvent(s_h)``.
    release : NoisyRelease
        The ``"norm_histogram"`` release (scale ``s_h`` times its sensitivity).
    """

    row_norm: float
    relation: Relation
    event: dp_accounting.GaussianDpEvent
    release: NoisyRelease

    def compose(self, make_event: Callable[[float], dp_accounting.DpEvent]
                ) -> Callable[[float], dp_accounting.DpEvent]:
        """``m -> ComposedDpEvent([histogram, make_event(m)])``: calibrate the method's noise to the rest."""
        return lambda m: dp_accounting.ComposedDpEvent([self.event, make_event(m)])

    @property
    def edges(self) -> np.ndarray:
        """The histogram's public bin edges (rows at the bound, up to rounding, in the top bin)."""
        return bound_edges(self.row_norm)

    def first_in(self, plan: ReleasePlan) -> ReleasePlan:
        """``plan`` (the method's releases) with the histogram's event and release first: the whole run."""
        return ReleasePlan(plan.label, plan.relation, (self.event, *plan.events),
                           (self.release, *plan.releases), plan.notes)

    def stage_plan(self, label: str) -> ReleasePlan:
        """The plan of stage one (the histogram alone)."""
        return ReleasePlan(label, self.relation, (self.event,), (self.release,))

    def staged(self, accountant: Accountant | None, label: str,
               method_events: tuple[dp_accounting.DpEvent, ...], n_rows: int | None = None) -> StagedRelease:
        """Both stages declared (and checked against the ceiling) before the first. ``n_rows``: the
        number of rows when known before the charge, for the report (:class:`StagedRelease`)."""
        return StagedRelease(accountant, self.relation, label, [(self.event,), tuple(method_events)],
                             n_rows=n_rows)


def plan_row_clip(budget: PrivacyBudget, relation: Relation, row_norm: float,
                  share: float = DEFAULT_CLIP_SHARE) -> RowClipPlan:
    """The histogram stage: multiplier ``s_total / sqrt(share)`` for the whole budget's ``s_total``."""
    s_total = analytic_noise_multiplier(budget.epsilon, budget.delta)
    s_hist = s_total / math.sqrt(share)
    sens = histogram_sensitivity(relation)
    return RowClipPlan(float(row_norm), relation, dp_accounting.GaussianDpEvent(s_hist),
                       NoisyRelease("norm_histogram", "gaussian", s_hist * sens, sens))


def release_row_clip(X: Any, plan: RowClipPlan, staged: StagedRelease, noise: NoiseSource, *,
                     noise_per_clip2: float, d: int, n_public: int | None, owner: str,
                     center: np.ndarray | None = None, show_progress: bool | None = None,
                     counts: np.ndarray | None = None) -> float:
    """Stage one: release the norm histogram and return the clip ``r <= C`` (post-processing).

    ``noise_per_clip2`` (``nu``, public): the spectral norm of the method's noise on the quantity that
    clipping biases, per unit ``r^2``, summed over the releases that see each row once (a full-batch
    step sees every row; mini-batches see each row once). The balance rule places about
    ``BALANCE_FACTOR sqrt(d) nu`` rows above the clip, never fewer than ``1 - FLOOR_QUANTILE`` of them
    below it. The caller has read and validated the rows at ``C`` before (nothing charged on refusal).
    ``counts``: the exact counts in ``plan.edges``, when the caller's validation pass counted them
    (``accumulate(..., norm_edges=plan.edges)``); else this reads ``X`` once more to count them.
    """
    if counts is None:
        counts = norm_histogram(X, plan.edges, center=center, owner=owner, show_progress=show_progress)
    with staged.stage(plan.stage_plan(owner), noise) as releaser:
        noisy_counts = releaser.add("norm_histogram", counts)
    return clip_from_counts(plan, noisy_counts, noise_per_clip2=noise_per_clip2, d=d, n_public=n_public)


def clip_from_counts(plan: RowClipPlan, noisy_counts: np.ndarray, *, noise_per_clip2: float, d: int,
                     n_public: int | None) -> float:
    """The clip ``r <= C`` post-processed from the released histogram (:func:`release_row_clip`)."""
    C = plan.row_norm
    edges = plan.edges
    n_rows = float(n_public) if n_public is not None else float(np.sum(noisy_counts))
    kappa = BALANCE_FACTOR * math.sqrt(d) * noise_per_clip2
    return balanced_clip(noisy_counts, edges, kappa, plan.release.scale, C,
                         floor_rows=(1.0 - FLOOR_QUANTILE) * max(n_rows, 1.0))


def at_clip(plan: ReleasePlan, clip: float, row_norm: float, power: dict[str, int],
            note: str | None = None) -> ReleasePlan:
    """``plan`` (stated at the bound ``row_norm``) restated at the released ``clip``: the same events.

    Release ``name``'s sensitivity is proportional to ``row_norm ** power[name]`` (2 for a product with
    ``x x^T``, 1 for a sum of rows, 0 for a count): scale and sensitivity are multiplied by
    ``(clip / row_norm) ** power``, the noise multiplier (what the events record) is unchanged.
    """
    ratio = float(clip) / float(row_norm)
    if not 0 < ratio <= 1 + 1e-12:
        raise ValueError(f"{plan.label}: the released clip must lie in (0, row_norm].")
    releases = tuple(
        NoisyRelease(r.name, r.kind, r.scale * ratio ** power.get(r.name, 0),
                     None if r.sensitivity is None else r.sensitivity * ratio ** power.get(r.name, 0))
        for r in plan.releases)
    notes = plan.notes + ((note,) if note else ())
    return ReleasePlan(plan.label, plan.relation, plan.events, releases, notes)


def clip_note(clip: float, row_norm: float, share: float) -> str:
    """The report's note on a released clip."""
    return (f"Adaptive clipping: the rows were clipped at {clip:.4g}, released from a noisy norm "
            f"histogram (share {share:g} of the budget; public bound row_norm={row_norm:g}).")


def at_released_clip(clip_plan: RowClipPlan, noisy_counts: np.ndarray, plan: ReleasePlan,
                     power: dict[str, int], share: float, *, noise_per_clip2: float, d: int,
                     n_public: int | None) -> tuple[float, ReleasePlan]:
    """Stage two: the clip ``r`` post-processed from the released histogram (:func:`clip_from_counts`)
    and ``plan`` restated at it (:func:`at_clip`), with the report's note on the clip (``share``: the
    histogram's share of the budget)."""
    r = clip_from_counts(clip_plan, noisy_counts, noise_per_clip2=noise_per_clip2, d=d, n_public=n_public)
    return r, at_clip(plan, r, clip_plan.row_norm, power, clip_note(r, clip_plan.row_norm, share))
