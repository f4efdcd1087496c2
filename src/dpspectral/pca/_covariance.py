"""Covariance-perturbation PCA: Analyze Gauss, MOD-SULQ and the (uncertified) Wishart mechanism.

All three release a noisy version of the scatter matrix ``S = sum_i c(x_i) c(x_i)^T`` of the
clipped (and optionally centred) rows ``c(x) = clip(x - m, row_norm)`` and return the top-k
eigenvectors of the released matrix (post-processing).

Sensitivities (rows of norm <= C after clipping; derived in ``../shared/papers/spec-pca-gep.md`` §0)
---------------------------------------------------------------------------------------------
The released vector is the upper triangle (with the diagonal) of ``S``, so the L2 sensitivity is
at most the Frobenius norm of the change of ``S`` (C is taken as ``row_norm (1 + 1e-10)``, the bound
that clipped rows satisfy up to rounding: see ``privacy.clipping.ROUNDING_SLACK``):

* add/remove one row x: ``||x x^T||_F = ||x||^2 <= C^2`` (tight for x = C e_1);
* replace x by y: ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``, so ``sqrt(2) C^2``
  (tight for orthogonal x, y of norm C).

The private mean (``centering="private"``) releases the sum of clipped raw rows, sensitivity ``C``
(add/remove) or ``2 C`` (replace-one), and under add/remove a count, sensitivity 1; the centred rows
are clipped to C again, so the scatter sensitivity above is unchanged (the released centre is a fixed
public vector for the second release: adaptive composition, accounted by the accountant).

Adaptive clipping (``adaptive_clip=True``, the default with ``calibration="tight"``): a noisy
histogram of the row norms (``privacy/quantile.py``; L2 sensitivity ``sqrt(2)`` replace-one, 1
add/remove) is released first, a clip ``r <= C`` is post-processed from it, and the scatter of the rows
clipped at ``r`` is released with the planned noise multiplier times its sensitivity at ``r``. With
``centering="private"`` the clip is the released ``clip_quantile`` (0.1) of the centred norms; on the
uncentred path (``centering`` None or a public centre) it is the balance rule of :func:`_balanced_clip`
(or a given ``clip_quantile``). Every stage's event is declared before the first (StagedRelease).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np

from .._array_api import get_namespace_and_device, like, vector_norm, work_dtype
from .._constraints import (
    NOISE_SHAPE,
    NONE,
    PRIVACY_PARAMETERS,
    SHARE,
    Calibration,
    Constraint,
    NoiseShape,
    Options,
    Types,
    validated,
)
from .._device_stream import DEVICE, stream_to_device
from .._linalg import top_k_eigh
from .._moments import (
    NormHint,
    accumulate,
    centred_norm_hint,
    exact_norm_hint,
    needs_two_passes_ok,
    summation_of,
)
from .._options import ADAPTIVE_CLIP, AdaptiveClip, clip_fields, folded
from .._results import SubspaceResult
from .._rows import is_one_shot, n_features_of
from .._validation import check_mechanism_inputs, check_n_components, check_share
from ..privacy._accounting import Accountant, AccountingMethod
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._gaussian import (
    analytic_noise_multiplier,
    classic_noise_multiplier,
    split_noise_multiplier,
)
from ..privacy._pipeline import NoisyRelease, ReleasePlan
from ..privacy._quantile import (
    BALANCE_FACTOR,
    balanced_clip,
    bin_counts,
    bound_edges,
    clip_from_histogram,
    histogram_sensitivity,
    norm_edges,
    norm_histogram,
)
from ..privacy._rounding import Kind, Summation, widen_release
from ..privacy._template import After, Drawn, Mechanism, Released, Rows, RunSettings, Symmetric, run
from ._inputs import PcaInputs

__all__ = ["COUNT_SHARE", "analyze_gauss", "covariance_plan", "mod_sulq", "wishart"]

Centering = None | str | np.ndarray

#: Share of the Gaussian budget (of ``1/s^2``) spent on a noisy row count when one is released
#: (add/remove neighbours, where n itself is protected).
COUNT_SHARE = 0.01

#: The quantile of the centred row norms at which ``centering="private"`` clips the centred rows
#: (adaptive clipping; measured in docs/algorithms/covariance.md).
DEFAULT_CLIP_QUANTILE = 0.1
#: The uncentred path (``centering`` None or a public centre) clips by the balance rule instead
#: (``clip_quantile=None``: :func:`_balanced_clip`; docs/algorithms/covariance.md, "Adaptive clipping of
#: the uncentred path").
#: The budget shares of the norm histogram: centred path, uncentred path.
DEFAULT_CLIP_SHARE = 0.05
UNCENTRED_CLIP_SHARE = 0.02

_NoiseKind = Literal["analyze_gauss", "mod_sulq", "wishart"]
#: The neighbouring relations each mechanism offers (MOD-SULQ's noise scale depends on n, public only
#: under replace-one).
_RELATIONS: dict[str, tuple[Relation, ...]] = {
    "analyze_gauss": (Relation.REPLACE_ONE, Relation.ADD_REMOVE), "mod_sulq": (Relation.REPLACE_ONE,),
    "wishart": (Relation.REPLACE_ONE, Relation.ADD_REMOVE)}


def _scatter_sensitivity(relation: Relation, row_norm: float) -> float:
    return (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * row_norm**2


def _sum_sensitivity(relation: Relation, row_norm: float) -> float:
    return (2.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm


def _mod_sulq_beta(n: int, d: int, epsilon: float, delta: float) -> float:
    """Per-entry noise std on ``A = X^T X / n`` from Chaudhuri, Sarwate and Sinha (2012), rows <= 1."""
    return (d + 1) / (n * epsilon) * math.sqrt(
        2.0 * math.log((d * d + d) / (2.0 * math.sqrt(2.0 * math.pi) * delta))
    ) + 1.0 / (n * math.sqrt(epsilon))


def covariance_plan(
    kind: _NoiseKind,
    *,
    budget: PrivacyBudget,
    relation: Relation,
    calibration: str,
    row_norm: float,
    n: int | None,
    d: int | None,
    private_mean: bool,
    release_count: bool,
    mean_share: float,
    clip_share: float | None = None,
    summation: Summation | None = None,
) -> ReleasePlan:
    """The releases of one run (scatter, and the mean, count and norm histogram when released).

    From public inputs only. With ``clip_share`` (adaptive clipping of the centred rows) the plan also
    holds the ``"histogram"`` release of the centred row norms, and its ``"scatter"`` release is stated
    at the public bound ``row_norm`` (the worst case: the run draws it at the released clip, with the
    same noise multiplier, in a staged release).

    Every release is widened for the rounding of its computed statistic (``summation``: how the rows are
    summed, :func:`~dpspectral._moments.summation_of`; the CPU path by default): its sensitivity and scale
    both times ``1 + r`` (:mod:`dpspectral.privacy._rounding`), its noise multiplier unchanged.
    """
    row_norm = sensitivity_norm(row_norm)  # the bound the (rounded) clipped rows satisfy
    widen = _rounding(relation, row_norm, n, summation or Summation())
    cov_sens = _scatter_sensitivity(relation, row_norm)
    count_needed = (release_count or private_mean) and not relation.n_is_public
    if kind == "wishart":
        return ReleasePlan(kind, relation, (dp_accounting.NonPrivateDpEvent(),), notes=(
            "Wishart mechanism (Jiang, Xie and Zhang 2016): known NOT to be differentially private "
            "(Sheffet 2019; Amin et al. 2019); a labelled reproduction baseline only.",))
    if calibration == "tight":
        return _tight_plan(kind, budget, relation, cov_sens, _sum_sensitivity(relation, row_norm),
                           private_mean=private_mean, count_needed=count_needed, mean_share=mean_share,
                           clip_share=clip_share, widen=widen)
    return _paper_plan(kind, budget, relation, cov_sens, row_norm, n, d, count_needed=count_needed,
                       widen=widen)


_Widen = Callable[[NoisyRelease], NoisyRelease]


def _rounding(relation: Relation, row_norm: float, n: int | None, summation: Summation) -> _Widen:
    """``widen(release)``: a release widened for the rounding of its computed statistic: ``X^T X``
    (terms ``x x^T``, norm ``C^2``), the sum of the rows (norm ``C``), the count and the histogram
    (integers, exact)."""
    terms: dict[str, tuple[Kind, float]] = {
        "scatter": ("products", row_norm**2), "mean": ("sums", row_norm),
        "count": ("counts", 1.0), "histogram": ("counts", 1.0)}

    def widen(release: NoisyRelease) -> NoisyRelease:
        kind, term = terms[release.name]
        return widen_release(release, n=n, relation=relation, kind=kind, term_bound=term,
                             summation=summation)

    return widen


def _tight_plan(kind: str, budget: PrivacyBudget, relation: Relation, cov_sens: float,
                sum_sens: float, *, private_mean: bool, count_needed: bool,
                mean_share: float, clip_share: float | None = None, widen: _Widen) -> ReleasePlan:
    """One analytic Gaussian budget split exactly between scatter, mean, count and norm histogram."""
    shares = {"scatter": 1.0}
    if private_mean:
        shares["mean"] = mean_share
    if count_needed:
        shares["count"] = COUNT_SHARE
    if clip_share is not None:
        shares["histogram"] = clip_share
    shares["scatter"] = 1.0 - sum(v for key, v in shares.items() if key != "scatter")
    s_total = analytic_noise_multiplier(budget.epsilon, budget.delta)
    multipliers = dict(zip(shares, split_noise_multiplier(s_total, list(shares.values())), strict=True))
    sensitivities = {"scatter": cov_sens, "mean": sum_sens, "count": 1.0,
                     "histogram": histogram_sensitivity(relation)}
    releases = tuple(widen(NoisyRelease(name, "gaussian", multipliers[name] * sensitivities[name],
                                        sensitivities[name])) for name in shares)
    events = tuple(dp_accounting.GaussianDpEvent(multipliers[name]) for name in shares)
    return ReleasePlan(kind, relation, events, releases)


def _paper_plan(kind: str, budget: PrivacyBudget, relation: Relation, cov_sens: float,
                row_norm: float, n: int | None, d: int | None, *, count_needed: bool,
                widen: _Widen) -> ReleasePlan:
    """The paper's own formula for the scatter release (and a tight count when one is needed)."""
    cov_eps, cov_delta = budget.epsilon, budget.delta
    releases: list[NoisyRelease] = []
    if count_needed:
        # basic-composition split; the accountant then certifies the composition
        cov_eps, cov_delta = cov_eps * (1 - COUNT_SHARE), cov_delta * (1 - COUNT_SHARE)
        s_count = analytic_noise_multiplier(budget.epsilon * COUNT_SHARE, budget.delta * COUNT_SHARE)
        releases.append(widen(NoisyRelease("count", "gaussian", s_count, 1.0)))
    if kind == "analyze_gauss":
        s_cov = classic_noise_multiplier(cov_eps, cov_delta)
        note = ("Analyze Gauss with the classic Gaussian formula sqrt(2 ln(1.25/delta))/epsilon times "
                "the Frobenius sensitivity (Dwork et al. 2014); certified only where the accountant "
                "agrees.")
    else:  # mod_sulq
        assert n is not None and d is not None
        beta = _mod_sulq_beta(n, d, cov_eps, cov_delta) * row_norm**2
        s_cov = n * beta / cov_sens
        note = "MOD-SULQ with the noise formula of Chaudhuri, Sarwate and Sinha (2012) on X^T X / n."
    releases.insert(0, widen(NoisyRelease("scatter", "gaussian", s_cov * cov_sens, cov_sens)))
    events = tuple(dp_accounting.GaussianDpEvent(r.scale / (r.sensitivity or 1.0)) for r in releases)
    return ReleasePlan(kind, relation, events, tuple(releases), notes=(note,))


def _parse_centering(centering: Centering, owner: str) -> np.ndarray | str | None:
    if centering is None:
        return None
    if isinstance(centering, str):
        if centering != "private":
            raise ValueError(
                f"The 'centering' parameter of {owner} must be None, an array (a public centre) or "
                f"'private'. Got {centering!r} instead."
            )
        return centering
    center = np.asarray(centering, dtype=float)
    if center.ndim != 1 or not np.isfinite(center).all():
        raise ValueError(
            f"The 'centering' parameter of {owner} must be a finite 1-D array (a public centre). "
            f"Got an array of shape {center.shape}."
        )
    return center.copy()


def _validate(kind: _NoiseKind, X: Any, *, epsilon: float, delta: float, row_norm: float,
              relation: Relation | str, calibration: str, centering: Centering, mean_share: float,
              on_norm_violation: str, allowed_relations: Sequence[Relation],
              ) -> tuple[PrivacyBudget, Relation, float, np.ndarray | str | None, float]:
    """The public inputs, checked before anything is read or charged."""
    owner = kind
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=allowed_relations,
        needs_delta=kind != "wishart",
    )
    if kind == "wishart" and calibration != "paper":
        raise ValueError(
            "The Wishart mechanism has no sound calibration (it is known not to be differentially "
            "private). Pass calibration='paper' to run it as the labelled, uncertified baseline."
        )
    if kind == "mod_sulq" and calibration == "paper":
        budget.require_delta(owner)
        if is_one_shot(X):
            raise ValueError(
                "mod_sulq with calibration='paper' sets its noise from n, which a one-shot stream gives "
                "only once it is read, after the charge; pass a re-iterable source (a list of blocks, "
                "or a callable returning a fresh iterator) or use calibration='tight'. Nothing was "
                "charged."
            )
    center = _parse_centering(centering, owner)
    if isinstance(center, str):
        mean_share = check_share(mean_share, "mean_share", owner)
        if calibration != "tight":
            raise ValueError(
                f"centering='private' is not part of the paper's {owner} mechanism; use "
                "calibration='tight' (which splits the budget exactly) or a public centre."
            )
        if not needs_two_passes_ok(X):
            raise ValueError(
                "centering='private' reads the data twice (mean, then covariance); pass a "
                "re-iterable source (an array, a list of blocks, or a callable returning a fresh "
                "iterator) instead of a one-shot iterator."
            )
    return budget, rel, C, center, mean_share


@dataclass(frozen=True, eq=False)
class CovarianceInputs(PcaInputs):
    """The public inputs of one covariance release (Analyze Gauss, MOD-SULQ, Wishart)."""

    kind: _NoiseKind
    centering: Centering
    mean_share: float
    release_count: bool
    on_norm_violation: NormViolation
    adaptive_clip: bool | AdaptiveClip = False
    noise_shape: str | None = None


@dataclass(frozen=True, eq=False)
class _Checked:
    """The inputs once checked: what the plan, the passes and the post-processing read (all public)."""

    kind: _NoiseKind
    k: int
    budget: PrivacyBudget
    relation: Relation
    C: float
    center: np.ndarray | None  # a public centre
    private_mean: bool
    mean_share: float
    release_count: bool
    adaptive: bool
    clip_quantile: float | None
    clip_share: float
    noise_shape: str
    calibration: str
    epsilon: float
    on_norm_violation: NormViolation
    show_progress: bool | None
    xp: Any
    n: int | None  # known before reading (an array's shape), else None
    d: int | None
    summation: Summation  # how the rows are summed (the rounding bound's path)
    dtype: Any = None  # a device input's floating dtype: the results' (its moments are summed in float64)


class _Covariance(Mechanism[CovarianceInputs, SubspaceResult]):
    """Covariance perturbation as the release template runs it (:mod:`dpspectral.privacy._template`).

    One release (the scatter, and the count under add/remove) from one pass; with a private mean, the
    mean (and count) first, then the scatter of the rows centred by it, in the same charge; with
    adaptive clipping a staged release (the norm histogram, then the scatter at the released clip).
    """

    stacklevel = 3

    def check(self, inputs: CovarianceInputs, X: Any) -> _Checked:
        kind = inputs.kind
        self.label = kind
        budget, rel, C, center, mean_share = _validate(
            kind, X, epsilon=inputs.epsilon, delta=inputs.delta, row_norm=inputs.row_norm,
            relation=inputs.relation, calibration=inputs.calibration, centering=inputs.centering,
            mean_share=inputs.mean_share, on_norm_violation=inputs.on_norm_violation,
            allowed_relations=_RELATIONS[kind])
        xp = _array_api_namespace(kind, X)
        private_mean = isinstance(center, str)
        d_known = n_features_of(X)
        n_known = int(X.shape[0]) if d_known is not None and not math.isnan(X.shape[0]) else None
        # adaptive clipping: centred (private mean) or uncentred; the paper's calibrations stay as
        # published, and a one-shot stream (one read only) keeps the one-pass release
        on, clip_quantile, clip_share = clip_fields(inputs.adaptive_clip, kind)
        adaptive = on and inputs.calibration == "tight" and kind != "wishart" and (
            private_mean or needs_two_passes_ok(X))
        if clip_quantile is None and private_mean:  # uncentred: None is the balance rule
            clip_quantile = DEFAULT_CLIP_QUANTILE
        if clip_share is None:
            clip_share = DEFAULT_CLIP_SHARE if private_mean else UNCENTRED_CLIP_SHARE
        return _Checked(
            kind=kind, k=inputs.k, budget=budget, relation=rel, C=C,
            center=center if isinstance(center, np.ndarray) else None, private_mean=private_mean,
            mean_share=mean_share, release_count=inputs.release_count, adaptive=adaptive,
            clip_quantile=clip_quantile, clip_share=clip_share,
            noise_shape=inputs.noise_shape or ("goe" if inputs.calibration == "tight" else "iid"),
            calibration=inputs.calibration, epsilon=inputs.epsilon,
            on_norm_violation=inputs.on_norm_violation, show_progress=self.show_progress, xp=xp,
            n=n_known, d=d_known, summation=summation_of(X, xp),
            dtype=None if xp is None else work_dtype(X, xp))

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> ReleasePlan | None:
        if d is not None:
            check_n_components(inputs.k, d, inputs.kind, name="k")
        if inputs.kind == "mod_sulq" and n is None and inputs.calibration == "paper":
            return None  # its noise is a function of n: checked once the rows are counted
        return covariance_plan(
            inputs.kind, budget=inputs.budget, relation=inputs.relation, calibration=inputs.calibration,
            row_norm=inputs.C, n=n, d=d, private_mean=inputs.private_mean,
            release_count=inputs.release_count, mean_share=inputs.mean_share,
            clip_share=inputs.clip_share if inputs.adaptive else None, summation=inputs.summation,
        )

    def is_staged(self, inputs: _Checked) -> bool:
        return inputs.adaptive

    def read(self, inputs: _Checked, X: Any) -> Rows:
        """The first pass: every row validated (before the charge for anything but a one-shot stream).

        It computes what the first release needs: the scatter (one release), the sum of the clipped
        raw rows (a private mean), or only the counts of the row norms in the histogram's public bins
        (adaptive clipping of the uncentred rows: kept until the histogram's stage, one pass less).
        """
        first = self._accumulate(
            inputs, X, row_norm=inputs.C, center=None if inputs.private_mean else inputs.center,
            on_norm_violation=inputs.on_norm_violation, want_sum=inputs.private_mean,
            want_second=not (inputs.private_mean or inputs.adaptive),
            norm_edges=bound_edges(inputs.C) if inputs.adaptive and not inputs.private_mean else None,
            keep_norms=_in_memory(X, inputs) and (inputs.private_mean or inputs.adaptive))
        check_n_components(inputs.k, first.d, inputs.kind, name="k")
        return Rows(first, X)

    def _accumulate(self, inputs: _Checked, X: Any, **kw: Any) -> Any:
        return accumulate(X, owner=inputs.kind, show_progress=inputs.show_progress, xp=inputs.xp, **kw)

    def stages(self, inputs: _Checked, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        count = ("count",) if _has(plan, "count") else ()
        if not inputs.adaptive:
            return (("mean",) + count + ("scatter",) if inputs.private_mean else count + ("scatter",),)
        if inputs.private_mean:
            return ("mean",) + count, ("histogram",), ("scatter",)
        return ("histogram",) + count, ("scatter",)

    def stage_plan(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        if not inputs.adaptive:
            return plan
        if names != ("scatter",):
            return super().stage_plan(inputs, plan, names, released)
        # the last stage: the scatter of the rows clipped at the clip post-processed from the released
        # histogram, with the planned noise multiplier times its sensitivity at that clip
        clip, rule = self._clip(inputs, plan, released)
        released["clip"] = clip
        planned = plan["scatter"]
        # the planned widening for rounding (a multiple of the sensitivity, whatever the clip) kept
        at_bound = _scatter_sensitivity(plan.relation, sensitivity_norm(inputs.C))
        widening = (planned.sensitivity or at_bound) / at_bound
        sensitivity = _scatter_sensitivity(plan.relation, sensitivity_norm(clip)) * widening
        multiplier = planned.scale / (planned.sensitivity or 1.0)
        scatter = NoisyRelease("scatter", "gaussian", multiplier * sensitivity, sensitivity)
        event = plan.events[[r.name for r in plan.releases].index("scatter")]
        what = "centred rows" if inputs.private_mean else "rows"
        return ReleasePlan(inputs.kind, plan.relation, (event,), (scatter,), notes=(
            f"Adaptive clipping: the {what} were clipped at {clip:.4g}, {rule} (public bound "
            f"row_norm={inputs.C:g}).",))

    def _clip(self, inputs: _Checked, plan: ReleasePlan, released: Released) -> tuple[float, str]:
        """The clip of the scatter's rows, post-processed from the released histogram (and its rule)."""
        noisy_counts = released["histogram"]
        if inputs.private_mean:
            quantile = inputs.clip_quantile or DEFAULT_CLIP_QUANTILE
            clip = clip_from_histogram(noisy_counts, norm_edges(inputs.C), quantile, released["n_mean"])
            return min(clip, inputs.C), f"the released {quantile:g}-quantile of their norms"
        edges = bound_edges(inputs.C)
        if inputs.clip_quantile is None:  # the balance rule: a clip with about `kappa` rows above it
            d = released.rows.d
            kappa = BALANCE_FACTOR * math.sqrt(d) * _noise_norm_per_clip2(plan, inputs.noise_shape, d)
            return _balanced_clip(noisy_counts, edges, kappa, plan["histogram"].scale, inputs.C), (
                f"chosen by the balance rule from the released histogram, whose target (about {kappa:.3g} "
                "rows above the clip) is a public number set by the noise level and d, not a count of "
                "the data")
        # the rows counted: n (public under replace-one), else the released count or the histogram's total
        n_rows = float(released.rows.n) if plan.relation.n_is_public else (
            released["count"] if "count" in released else float(noisy_counts.sum()))
        clip = clip_from_histogram(noisy_counts, edges, inputs.clip_quantile, max(n_rows, 1.0))
        return (inputs.C if clip >= edges[-1] else clip,  # the top bin: the public bound itself
                f"the released {inputs.clip_quantile:g}-quantile of their norms")

    def statistic(self, inputs: _Checked, rows: Rows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        names = [r.name for r in plan.releases] or ["scatter"]  # the Wishart plan states no release
        out: dict[str, Any] = {}
        if "mean" in names:
            out["mean"] = rows.first.sum
        if "histogram" in names:
            out["histogram"] = After(lambda done: self._histogram(inputs, rows, done))
        if "count" in names:
            out["count"] = float(rows.n)
        if "scatter" in names:
            out["scatter"] = After(lambda done: self._scatter(inputs, rows, done))
        return out

    def _histogram(self, inputs: _Checked, rows: Rows, released: Released) -> Any:
        if not inputs.private_mean:
            return rows.first.norm_counts  # counted in the validating pass
        hint = self._norm_hint(inputs, rows, released)
        if hint is not None:  # the centred norms from the first pass's norms: no third reading of the rows
            return bin_counts(np.sqrt(np.maximum(hint.approx, 0.0)), norm_edges(inputs.C))
        return norm_histogram(rows.source, norm_edges(inputs.C), center=self._center(inputs, rows, released),
                              owner=inputs.kind, show_progress=inputs.show_progress)

    def _norm_hint(self, inputs: _Checked, rows: Rows, released: Released) -> NormHint | None:
        """What the scatter's pass knows of its rows' norms before reading them (None: nothing).

        With a private mean, the squared norms of the rows centred by it from the first pass's norms
        (float64 rows in memory); else the first pass's norms themselves, of the rows as the scatter
        centres them. Private (per row): kept on this call's mechanism, never in ``released``.
        """
        norms = rows.first.row_norms
        if norms is None:
            return None
        if not inputs.private_mean:
            return exact_norm_hint(norms)
        if getattr(self, "_centred_hint", None) is None:
            X = rows.source
            if not (isinstance(X, np.ndarray) and X.dtype == np.float64):
                return None
            self._centred_hint = centred_norm_hint(X, norms, self._center(inputs, rows, released))
        hint: NormHint = self._centred_hint
        return hint

    def _center(self, inputs: _Checked, rows: Rows, released: Released) -> Any:
        """The released mean (post-processing of the noisy sum and count), projected into the ball."""
        if "center" not in released:
            n_mean = float(rows.n)  # public under replace-one; a noisy count otherwise
            if "count" in released:
                n_mean = max(released["count"], 1.0)
            mu = released["mean"] / n_mean
            norm_mu = vector_norm(mu)
            if norm_mu > inputs.C:  # the true mean of clipped rows lies in the ball: project
                mu *= inputs.C / norm_mu
            released["center"], released["n_mean"] = mu, n_mean
        return released["center"]

    def _scatter(self, inputs: _Checked, rows: Rows, released: Released) -> Any:
        """The scatter to release: from the first pass, or (a released centre or clip) a later one."""
        if inputs.private_mean or inputs.adaptive:
            # the rows centred by the released mean, or clipped at the released clip, are clipped
            # (never refused: a refusal here would be decided by the data after the charge; the raw
            # rows were checked in the first pass)
            clip = released.get("clip", inputs.C)
            center = self._center(inputs, rows, released) if inputs.private_mean else inputs.center
            moments = self._accumulate(inputs, rows.source, row_norm=clip, center=center,
                                       on_norm_violation="clip", want_sum=False, want_second=True,
                                       norm_hint=self._norm_hint(inputs, rows, released))
        else:
            moments, clip = rows.first, inputs.C
        S, d, n = moments.second, moments.d, moments.n
        if inputs.kind != "wishart":
            return Symmetric(S, inputs.noise_shape)
        scale = 3.0 * clip**2 / (2.0 * n * inputs.epsilon)  # Wishart_d(d+1, scale * I) on X^T X / n
        return Drawn(lambda releaser: S + n * _gram(releaser.normal(0.0, math.sqrt(scale), (d, d + 1))))

    def post_process(self, inputs: _Checked, rows: Rows, released: Released,
                     report: Any) -> SubspaceResult:
        """The top-k eigenvectors of the released scatter, and public facts of the plan."""
        scatter = released["scatter"]
        if inputs.dtype is not None and scatter.dtype != inputs.dtype:  # post-processing in X's dtype
            scatter = released["scatter"] = inputs.xp.astype(scatter, inputs.dtype)
        values, vectors = top_k_eigh(scatter, inputs.k, noisy=True)
        plan, rel, kind, shape = released.plan, inputs.relation, inputs.kind, inputs.noise_shape
        C = released.get("clip", inputs.C)
        d = int(vectors.shape[0])
        noisy_count = released.get("count")
        diagnostics: dict[str, Any] = {
            "noise_std": plan["scatter"].scale if kind != "wishart" else None,
            "sensitivity": _scatter_sensitivity(rel, sensitivity_norm(C)),
            "noise_shape": shape,
            # the noise's spectral norm (public): released eigenvalues at or below it are not resolved
            "noise_edge": None if kind == "wishart" else
            (math.sqrt(2.0 * d) if shape == "goe" else 2.0 * math.sqrt(d)) * plan["scatter"].scale,
        }
        if _has(plan, "mean"):
            diagnostics["mean_noise_std"] = plan["mean"].scale
        if _has(plan, "count"):
            diagnostics["count_noise_std"] = plan["count"].scale  # public: a function of (epsilon, delta)
        if "clip" in released:
            diagnostics["clip"] = released["clip"]  # released (post-processing of a noisy histogram)
            if _has(plan, "mean"):
                diagnostics["centred_clip"] = released["clip"]
            diagnostics["histogram_noise_std"] = plan["histogram"].scale
        center = released.get("center", inputs.center)
        return SubspaceResult(
            components=vectors,
            values=values,
            total=_trace(released["scatter"]),
            mean=None if center is None else like(center, vectors),
            n_samples=float(rows.n) if rel.n_is_public else noisy_count,
            privacy=report,
            diagnostics=diagnostics,
        )


def _in_memory(X: Any, inputs: _Checked) -> bool:
    """Rows held in memory on the host (a NumPy array, not a memory map: a whole-array product over a
    map would bring every page into memory, where the block passes release them as they go)."""
    return inputs.xp is None and isinstance(X, np.ndarray) and not isinstance(X, np.memmap) and X.ndim == 2


def _gram(G: np.ndarray) -> np.ndarray:
    return G @ G.T


def _covariance_call(kind: _NoiseKind, X: Any, k: int, *, accountant: Accountant | None, random_state: Any,
                     accounting: AccountingMethod, show_progress: bool | None, device: Any = None,
                     **public: Any) -> SubspaceResult:
    """Run one covariance mechanism on the parameters of its function's call (every one as given):
    validate -> plan -> release (the noisy scatter, and mean/count) -> top-k eigenvectors."""
    inputs = CovarianceInputs(k, kind=kind, **public)
    settings = RunSettings(accountant, random_state, accounting, show_progress)
    return run(_Covariance(show_progress), inputs, stream_to_device(X, device, kind), settings)


def _noise_norm_per_clip2(plan: ReleasePlan, noise_shape: str, d: int) -> float:
    """``nu``: the scatter noise's spectral norm divided by ``r^2`` (public: multiplier, relation, d).

    The sensitivity at clip ``r`` is ``c r^2`` (``c = sqrt(2)`` replace-one, 1 add/remove), the noise std
    ``sigma = s c r^2``; a GOE matrix of that std has spectral norm about ``sqrt(2 d) sigma``, the i.i.d.
    shape ``2 sqrt(d) sigma``.
    """
    planned = plan["scatter"]
    per_r2 = planned.scale / (planned.sensitivity or 1.0) * _scatter_sensitivity(plan.relation, 1.0)
    return (math.sqrt(2.0 * d) if noise_shape == "goe" else 2.0 * math.sqrt(d)) * per_r2


def _balanced_clip(noisy_counts: np.ndarray, edges: np.ndarray, kappa: float, hist_std: float,
                   C: float) -> float:
    """The clip of the balance rule (:func:`~dpspectral.privacy._quantile.balanced_clip`)."""
    return balanced_clip(noisy_counts, edges, kappa, hist_std, C)


def _has(plan: ReleasePlan, name: str) -> bool:
    return any(r.name == name for r in plan.releases)


def _array_api_namespace(kind: _NoiseKind, X: Any) -> Any:
    """``X``'s array namespace with array API dispatch on (None: the NumPy path); refusals first."""
    xp, _ = get_namespace_and_device(X, kind)
    if xp is not None and kind == "wishart":
        raise ValueError(
            "wishart does not run on device arrays (array API dispatch covers analyze_gauss, mod_sulq "
            "and noisy_power): convert the data with dpspectral.to_numpy(X). Nothing was charged."
        )
    return xp


def _trace(S: Any) -> float:
    """The trace of the released matrix (NumPy, or a device array: one float back)."""
    if isinstance(S, np.ndarray):
        return float(np.trace(S))
    import array_api_compat

    xp = array_api_compat.array_namespace(S)
    return float(xp.sum(xp.linalg.diagonal(S)))





#: The parameters of the three covariance mechanisms (constraints.py); relation, centring and k are
#: checked in the mechanism (they depend on the method and on the data's shape).
COVARIANCE_PARAMETERS: dict[str, Constraint | list[Constraint] | None] = {
    **PRIVACY_PARAMETERS, "mean_share": SHARE, "release_count": Types((bool,), "a bool"),
    "accounting": Options(("auto", "gaussian", "pld", "rdp")),
    "show_progress": [NONE, Types((bool,), "a bool")],
}
#: analyze_gauss and mod_sulq also clip the privately centred rows adaptively.
ADAPTIVE_PARAMETERS: dict[str, Constraint | list[Constraint] | None] = {
    **COVARIANCE_PARAMETERS,
    "adaptive_clip": ADAPTIVE_CLIP,
    "noise_shape": NOISE_SHAPE,
    "device": [NONE, DEVICE],
}


@folded("adaptive_clip", AdaptiveClip, {"clip_quantile": "quantile", "clip_share": "share"})
@validated(ADAPTIVE_PARAMETERS)
def analyze_gauss(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    centering: Centering = None,
    mean_share: float = 0.1,
    adaptive_clip: bool | AdaptiveClip = True,
    noise_shape: NoiseShape | None = None,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
    device: Any = None,
) -> SubspaceResult:
    """Analyze Gauss (Dwork, Talwar, Thakurta and Zhang, STOC 2014): Gaussian noise on X^T X.

    ``S_hat = sum_i c(x_i) c(x_i)^T + E`` with ``E`` symmetric Gaussian; the result is the top-k
    eigenvectors of ``S_hat``. ``noise_shape="goe"`` (the default with ``calibration="tight"``): ``E``
    has ``N(0, sigma^2)`` on the diagonal and ``N(0, sigma^2 / 2)`` above it (the Gaussian orthogonal
    ensemble: the mechanism runs on ``iso(S)``, the diagonal and ``sqrt(2)`` times the entries above
    it, whose norm is ``||S||_F``); ``"iid"`` (the paper's, the default with ``"paper"``): i.i.d.
    ``N(0, sigma^2)`` on and above the diagonal. Same sigma, same event: "goe" has a spectral norm
    ``sqrt(2)`` smaller (MNIST k = 10: captured energy 0.856 with "goe", 0.785 with "iid", at epsilon
    0.1).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), np.memmap, sparse matrix, Dask array, or
        an iterable of row blocks
        The private data. Never modified.
    k : int
        Number of components, in [1, n_features].
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C on the Euclidean norm of each (centred) row; rows above it are clipped per
        row, or rejected with ``on_norm_violation="raise"``. Never derived from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): the analytic Gaussian mechanism for the exact (epsilon, delta).
        ``"paper"``: the paper's own noise formula; the result is marked uncertified (with an
        :class:`UncertifiedPrivacyWarning`) where the accountant cannot certify the request.
    centering : None, array of shape (n_features,), or "private", default=None
        None (the default): the functions compute the principal axes of the uncentred second-moment
        matrix ``X^T X``, as the papers do. An array: a public centre. ``"private"``: centred PCA (of
        the covariance, as scikit-learn's ``PCA``) around a DP mean released in the same privacy
        report, spending ``mean_share`` of the budget (tight calibration only). The estimator
        :class:`dpspectral.DPPCA` centres by default (``centering="private"``).
    mean_share : float
        Share of the Gaussian budget (of ``1/s^2``) given to the private mean.
    adaptive_clip : bool or AdaptiveClip, default=True
        (``calibration="tight"``) Clip the rows at a clip released from a noisy histogram of their
        norms (spending its ``share`` of the budget; None: 0.02 uncentred, 0.05 centred)
        instead of at ``row_norm`` (docs/algorithms/covariance.md). With ``centering="private"``: the
        released ``quantile`` (None: 0.1) of the centred norms. Uncentred (None or a
        public centre): ``quantile=None`` is the balance rule (about
        ``sqrt(d)/2`` times the scatter noise's spectral norm per unit ``r^2`` rows above the clip, so
        that as the noise vanishes nothing is clipped); a float clips at that quantile. A one-shot
        iterator (one read) keeps the one-release mechanism. ``adaptive_clip=False``: the one release
        at ``row_norm`` (the paper's mechanism).
    noise_shape : {"goe", "iid"} or None
        (analyze_gauss, mod_sulq) The symmetric noise: ``"goe"`` (off-diagonal std ``sigma / sqrt(2)``,
        the same mechanism on ``iso(S)``, ``||iso(S)|| = ||S||_F``) or ``"iid"`` (the papers'). None:
        "goe" with ``calibration="tight"``, "iid" with ``"paper"``.
    release_count : bool
        Under add/remove neighbours, also release a noisy row count (``COUNT_SHARE`` of the budget)
        so that variances can be normalised; under replace-one, n is public and nothing is spent.
    accountant : Accountant, optional
        Ledger to spend against; the run is refused before any noise is drawn if it would exceed the
        ceiling.
    random_state : None, int, SeedSequence or Generator
        Secret: it draws the noise (see docs/privacy-caveats.md).
    on_norm_violation : {"clip", "raise"}
        With ``"raise"`` the whole input is checked before the ledger is charged (a refusal costs
        nothing but says that some row broke the bound); a one-shot stream (an iterator of blocks) is
        checked as it is read, after the charge (a refusal then stays charged, marked failed in the
        ledger). With ``centering="private"`` the raw rows
        are checked; the rows centred by the released mean are clipped to C (never refused).
    accounting : {"auto", "gaussian", "pld", "rdp"}
        Accountant used to certify the released events.
    show_progress : bool or None
        Progress bar over blocks (None: on a terminal, for long inputs).
    device : None, str, torch.device, or an array
        (analyze_gauss, mod_sulq) Out-of-core on a device: host rows (an array, a memmap, row blocks)
        are copied to ``device`` one block at a time, clipped and summed there (every pass), the noise
        is drawn there, and the result's arrays are on it (``dpspectral.to_numpy`` for NumPy). A string
        or ``torch.device`` means PyTorch ("cuda", "cuda:1", "cpu"); an array means its namespace and
        device. None: compute where the data live. ``docs/array-api.md``, "Out-of-core on a device".

    Returns
    -------
    SubspaceResult

    Privacy
    -------
    Relation: replace-one (default) or add/remove. The released vector is the upper triangle of the
    scatter matrix of rows clipped to norm C ("iid") or ``iso`` of it ("goe"); both have L2
    sensitivity at most the Frobenius change, ``C^2`` (add/remove: ``||x x^T||_F = ||x||^2``) or
    ``sqrt(2) C^2`` (replace-one: ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``;
    ``||iso(M)||_2 = ||M||_F`` and ``||upper(M)||_2 <= ||M||_F``). Event:
    ``GaussianDpEvent(sigma / sensitivity)`` (plus the private-mean and count events when requested).
    ``calibration="tight"`` finds the smallest sigma for (epsilon, delta) with the analytic Gaussian
    mechanism; ``"paper"`` uses ``sqrt(2 ln(1.25/delta))/epsilon`` times the sensitivity, certified
    only for the epsilon the accountant confirms (always for epsilon < 1). Eigen-decomposition is
    post-processing.

    Adaptive clipping (default with ``calibration="tight"``) is a staged release of Gaussian mechanisms
    whose multipliers are fixed up front and split one analytic budget exactly: (the private mean and
    count with ``centering="private"``,) the noisy histogram of the row norms (one count moves between
    two bins under replace-one: L2 ``sqrt(2)``; one count changes under add/remove: 1), then the
    scatter of the rows clipped at the clip ``r`` post-processed from it, with noise ``s`` times its
    sensitivity at ``r`` (``sqrt(2) r^2`` or ``r^2``, whatever ``r`` is: every row is clipped at
    ``r``). The later stages' inputs (centre, clip) are earlier *released* values, so the run is an
    adaptive composition of Gaussian mechanisms, which composes as the non-adaptive one (Gaussian DP;
    Dong, Roth and Su 2022): one ``GaussianDpEvent`` per release, all declared before the first.

    Device arrays (array API dispatch; ``docs/array-api.md``): the same mechanism, sensitivities and
    events; the released scatter is noised on the host (exact, or ``"secure"``) and copied back to the
    data's device.
    """
    return _covariance_call("analyze_gauss", **locals())


@folded("adaptive_clip", AdaptiveClip, {"clip_quantile": "quantile", "clip_share": "share"})
@validated(ADAPTIVE_PARAMETERS)
def mod_sulq(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    centering: Centering = None,
    mean_share: float = 0.1,
    adaptive_clip: bool | AdaptiveClip = True,
    noise_shape: NoiseShape | None = None,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
    device: Any = None,
) -> SubspaceResult:
    """MOD-SULQ (Chaudhuri, Sarwate and Sinha, NIPS 2012): symmetric Gaussian noise on X^T X / n.

    ``calibration="paper"`` adds noise of standard deviation
    ``beta = (d+1)/(n eps) sqrt(2 ln((d^2+d)/(2 sqrt(2 pi) delta))) + 1/(n sqrt(eps))`` (times C^2)
    to every entry on and above the diagonal of ``X^T X / n``. ``calibration="tight"`` uses the
    smallest noise that certifies (epsilon, delta) for the same release, which makes it identical to
    replace-one Analyze Gauss (the two differ only in their noise formula).

    Parameters
    ----------
    X, k, epsilon, delta, row_norm
        As in :func:`analyze_gauss`.
    relation : {"replace_one"}
        Replace-one only: the paper's noise scale depends on n, public under replace-one.
    calibration, centering, mean_share, adaptive_clip, noise_shape, release_count, accountant, \
random_state, on_norm_violation, accounting, show_progress, device
        As in :func:`analyze_gauss`.

    Returns
    -------
    SubspaceResult

    Privacy
    -------
    Relation: replace-one only (n is public under it, so a noise scale depending on n is allowed).
    The upper triangle of ``X^T X / n`` has L2 sensitivity ``sqrt(2) C^2 / n`` (see
    :func:`analyze_gauss`). Event: ``GaussianDpEvent(beta n / (sqrt(2) C^2))`` for the paper's beta;
    the accountant certifies the epsilon it gives (the paper's per-entry union bound is loose, so it
    is normally certified with room to spare).

    Device arrays: as :func:`analyze_gauss`.
    """
    return _covariance_call("mod_sulq", **locals())


@validated(COVARIANCE_PARAMETERS)
def wishart(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float = 0.0,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "paper",
    centering: Centering = None,
    mean_share: float = 0.1,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Run the Wishart mechanism (Jiang, Xie and Zhang, AAAI 2016), which is not differentially private.

    ``A_hat = X^T X / n + W`` with ``W ~ Wishart_d(d + 1, 3 C^2 / (2 n eps) I)`` (the constant used by
    the papers' comparisons). Its claimed epsilon-DP analysis is known to be wrong (Sheffet 2019,
    footnote 4; Amin et al. 2019, §1.2); it exists only to reproduce the papers' baselines.

    Parameters
    ----------
    X, k, epsilon
        As in :func:`analyze_gauss`.
    delta : float, default=0.0
        Not used by the mechanism (recorded in the report).
    row_norm, relation
        As in :func:`analyze_gauss`.
    calibration : {"paper"}
        The only calibration.
    centering, mean_share, release_count, accountant, random_state, on_norm_violation, accounting, \
show_progress
        As in :func:`analyze_gauss`.

    Returns
    -------
    SubspaceResult

    Privacy
    -------
    None certified. The release is recorded as ``NonPrivateDpEvent``, so the result has
    ``certified=False`` and ``epsilon=inf``, an :class:`UncertifiedPrivacyWarning` is raised, and an
    accountant with a finite ceiling refuses it. Only ``calibration="paper"`` exists.
    """
    return _covariance_call("wishart", **locals())

