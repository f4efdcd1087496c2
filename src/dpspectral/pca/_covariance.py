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
from collections.abc import Sequence
from typing import Any, Literal

import dp_accounting
import numpy as np

from .._array_api import get_namespace_and_device, like, vector_norm
from .._constraints import (
    CALIBRATION,
    DELTA,
    EPSILON,
    NONE,
    ON_NORM_VIOLATION,
    RANDOM_STATE,
    ROW_NORM,
    SHARE,
    Constraint,
    Options,
    Types,
    validated,
)
from .._device_stream import DEVICE, stream_to_device
from .._linalg import top_k_eigh
from .._moments import accumulate, needs_two_passes_ok
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
from ..privacy._noise import noise_source
from ..privacy._pipeline import (
    NoisyRelease,
    ReleasePlan,
    Releaser,
    StagedRelease,
    precheck,
    read_then_release,
    release,
)
from ..privacy._quantile import (
    BALANCE_FACTOR,
    balanced_clip,
    bound_edges,
    clip_from_histogram,
    histogram_sensitivity,
    norm_edges,
    norm_histogram,
)

__all__ = ["COUNT_SHARE", "analyze_gauss", "covariance_plan", "mod_sulq", "wishart"]

Calibration = Literal["tight", "paper"]
NoiseShape = Literal["goe", "iid"]
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
) -> ReleasePlan:
    """The releases of one run (scatter, and the mean, count and norm histogram when released).

    From public inputs only. With ``clip_share`` (adaptive clipping of the centred rows) the plan also
    holds the ``"histogram"`` release of the centred row norms, and its ``"scatter"`` release is stated
    at the public bound ``row_norm`` (the worst case: the run draws it at the released clip, with the
    same noise multiplier, in a staged release).
    """
    row_norm = sensitivity_norm(row_norm)  # the bound the (rounded) clipped rows satisfy
    cov_sens = _scatter_sensitivity(relation, row_norm)
    count_needed = (release_count or private_mean) and not relation.n_is_public
    if kind == "wishart":
        return ReleasePlan(kind, relation, (dp_accounting.NonPrivateDpEvent(),), notes=(
            "Wishart mechanism (Jiang, Xie and Zhang 2016): known NOT to be differentially private "
            "(Sheffet 2019; Amin et al. 2019); a labelled reproduction baseline only.",))
    if calibration == "tight":
        return _tight_plan(kind, budget, relation, cov_sens, _sum_sensitivity(relation, row_norm),
                           private_mean=private_mean, count_needed=count_needed, mean_share=mean_share,
                           clip_share=clip_share)
    return _paper_plan(kind, budget, relation, cov_sens, row_norm, n, d, count_needed=count_needed)


def _tight_plan(kind: str, budget: PrivacyBudget, relation: Relation, cov_sens: float,
                sum_sens: float, *, private_mean: bool, count_needed: bool,
                mean_share: float, clip_share: float | None = None) -> ReleasePlan:
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
    releases = tuple(NoisyRelease(name, "gaussian", multipliers[name] * sensitivities[name],
                                  sensitivities[name]) for name in shares)
    events = tuple(dp_accounting.GaussianDpEvent(multipliers[name]) for name in shares)
    return ReleasePlan(kind, relation, events, releases)


def _paper_plan(kind: str, budget: PrivacyBudget, relation: Relation, cov_sens: float,
                row_norm: float, n: int | None, d: int | None, *, count_needed: bool) -> ReleasePlan:
    """The paper's own formula for the scatter release (and a tight count when one is needed)."""
    cov_eps, cov_delta = budget.epsilon, budget.delta
    releases: list[NoisyRelease] = []
    if count_needed:
        # basic-composition split; the accountant then certifies the composition
        cov_eps, cov_delta = cov_eps * (1 - COUNT_SHARE), cov_delta * (1 - COUNT_SHARE)
        s_count = analytic_noise_multiplier(budget.epsilon * COUNT_SHARE, budget.delta * COUNT_SHARE)
        releases.append(NoisyRelease("count", "gaussian", s_count, 1.0))
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
    releases.insert(0, NoisyRelease("scatter", "gaussian", s_cov * cov_sens, cov_sens))
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


def _covariance_pca(
    kind: _NoiseKind,
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str,
    calibration: str,
    centering: Centering,
    mean_share: float,
    release_count: bool,
    accountant: Accountant | None,
    random_state: Any,
    on_norm_violation: NormViolation,
    accounting: AccountingMethod,
    show_progress: bool | None,
    allowed_relations: Sequence[Relation],
    adaptive_clip: bool = False,
    clip_quantile: float | None = None,
    clip_share: float | None = None,
    noise_shape: str | None = None,
) -> SubspaceResult:
    """Validate -> plan -> release (the noisy scatter, and mean/count) -> top-k eigenvectors."""
    budget, rel, C, center, mean_share = _validate(
        kind, X, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        on_norm_violation=on_norm_violation, allowed_relations=allowed_relations)
    xp = _array_api_namespace(kind, X)
    noise = noise_source(random_state, like=X)
    private_mean = isinstance(center, str)
    d_known = n_features_of(X)
    if d_known is not None:
        check_n_components(k, d_known, kind, name="k")
    n_known = int(X.shape[0]) if d_known is not None and not math.isnan(X.shape[0]) else None

    # adaptive clipping: centred (private mean) or uncentred; the paper's calibrations stay as published,
    # and a one-shot stream (one read only) keeps the one-pass release
    adaptive = adaptive_clip and calibration == "tight" and kind != "wishart" and (
        private_mean or needs_two_passes_ok(X))
    if clip_quantile is None and private_mean:  # uncentred: None is the balance rule
        clip_quantile = DEFAULT_CLIP_QUANTILE
    if clip_share is None:
        clip_share = DEFAULT_CLIP_SHARE if private_mean else UNCENTRED_CLIP_SHARE

    def make_plan(n: int | None, d: int | None) -> ReleasePlan:
        return covariance_plan(
            kind, budget=budget, relation=rel, calibration=calibration, row_norm=C, n=n, d=d,
            private_mean=private_mean, release_count=release_count, mean_share=mean_share,
            clip_share=clip_share if adaptive else None,
        )

    # Fail fast, before reading the data, when the budget cannot cover the run.
    if kind != "mod_sulq" or n_known is not None:
        precheck(accountant, make_plan(n_known, d_known).events, rel)
    release_args: dict[str, Any] = dict(
        kind=kind, k=k, C=C, epsilon=epsilon, accountant=accountant, noise=noise,
        noise_shape=noise_shape or ("goe" if calibration == "tight" else "iid"),
        on_norm_violation=on_norm_violation, show_progress=show_progress, xp=xp)
    if adaptive and private_mean:
        plan, released = _release_centred_adaptive(
            X, make_plan, quantile=clip_quantile or DEFAULT_CLIP_QUANTILE, **release_args)
    elif adaptive:
        plan, released = _release_uncentred_adaptive(
            X, make_plan, center=center if isinstance(center, np.ndarray) else None,
            quantile=clip_quantile, **release_args)
    elif private_mean:
        plan, released = _release_centred(X, make_plan, **release_args)
    else:
        center_array = center if isinstance(center, np.ndarray) else None
        plan, released = _release_uncentred(X, make_plan, center=center_array, **release_args)
    report = released.releaser.report(mechanism=kind, budget=budget, calibration=calibration,
                                      accounting=accounting, notes=plan.notes, stacklevel=4,
                                      events=plan.events)
    return _result(kind, plan, released, report, rel, released.clip or C, release_args["noise_shape"])


class _Released:
    """What one run released (all public after the release) and its post-processing."""

    def __init__(self) -> None:
        self.S_hat: np.ndarray
        self.values: np.ndarray
        self.vectors: np.ndarray
        self.center: np.ndarray | None = None
        self.noisy_count: float | None = None
        self.n = 0
        self.releaser: Releaser
        self.clip: float | None = None  # the released clip of the centred rows (adaptive clipping)


def _release_centred(X: Any, make_plan: Any, *, kind: _NoiseKind, k: int, C: float, epsilon: float,
                     noise_shape: str, accountant: Any, noise: Any, on_norm_violation: NormViolation,
                     show_progress: bool | None, xp: Any = None) -> tuple[ReleasePlan, _Released]:
    """centering='private': pass 1 (sum of clipped raw rows: validates the whole input before the
    charge), then one release (noisy sum, noisy count, noisy scatter of the rows centred by the
    released mean). A failure inside (a re-read stream with a bad block) stays charged."""
    first = accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=True,
                       want_second=False, owner=kind, show_progress=show_progress, xp=xp)
    check_n_components(k, first.d, kind, name="k")
    plan = make_plan(first.n, first.d)
    out = _Released()
    with release(plan, accountant, noise, n_rows=first.n) as releaser:
        assert first.sum is not None
        noisy_sum = releaser.add("mean", first.sum)
        n_mean = float(first.n)  # public under replace-one; replaced by a noisy count otherwise
        if _has(plan, "count"):
            out.noisy_count = releaser.add("count", float(first.n))
            n_mean = max(out.noisy_count, 1.0)
        mu = noisy_sum / n_mean
        norm_mu = vector_norm(mu)
        if norm_mu > C:  # the true mean of clipped rows lies in the ball: project (post-proc.)
            mu *= C / norm_mu
        out.center = mu
        # Pass 2: the raw rows were checked in pass 1; the rows centred by the released mean are
        # clipped to C (never refused: a refusal here would be decided by the data after the
        # charge, and the centred rows may exceed C although the raw rows do not).
        moments = accumulate(X, row_norm=C, center=mu, on_norm_violation="clip", want_sum=False,
                             want_second=True, owner=kind, show_progress=show_progress, xp=xp)
        out.S_hat = _noisy_scatter(kind, moments, releaser, C, epsilon, noise_shape)
        out.values, out.vectors = top_k_eigh(out.S_hat, k)
    out.n, out.releaser = moments.n, releaser
    return plan, out


def _release_centred_adaptive(X: Any, make_plan: Any, *, quantile: float, kind: _NoiseKind, k: int,
                              C: float, epsilon: float, noise_shape: str, accountant: Any, noise: Any,
                              on_norm_violation: NormViolation,
                              show_progress: bool | None, xp: Any = None) -> tuple[ReleasePlan, _Released]:
    """centering='private' with adaptive clipping: a staged release of three stages.

    Pass 1 (sum of clipped raw rows) validates the whole input before anything is charged. Stage 1
    releases the noisy sum (and count); stage 2 the noisy histogram of the norms of the rows centred
    by the released mean, from which the clip ``r`` (a quantile) is post-processed; stage 3 the
    scatter of the centred rows clipped at ``r``, with the planned noise multiplier times its
    sensitivity at ``r``. The whole cost is declared and checked up front (StagedRelease).
    """
    first = accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=True,
                       want_second=False, owner=kind, show_progress=show_progress, xp=xp)
    check_n_components(k, first.d, kind, name="k")
    plan = make_plan(first.n, first.d)
    event_of = dict(zip((r.name for r in plan.releases), plan.events, strict=True))
    stage1 = ("mean", "count") if _has(plan, "count") else ("mean",)
    stages = [tuple(event_of[name] for name in stage1), (event_of["histogram"],), (event_of["scatter"],)]
    staged = StagedRelease(accountant, plan.relation, kind, stages, n_rows=first.n)
    out = _Released()

    def stage_plan(names: tuple[str, ...], releases: tuple[NoisyRelease, ...]) -> ReleasePlan:
        return ReleasePlan(kind, plan.relation, tuple(event_of[n] for n in names), releases)

    with staged.stage(stage_plan(stage1, tuple(plan[n] for n in stage1)), noise) as releaser:
        assert first.sum is not None
        n_mean = float(first.n)  # public under replace-one; a noisy count otherwise
        noisy_sum = releaser.add("mean", first.sum)
        if _has(plan, "count"):
            out.noisy_count = releaser.add("count", float(first.n))
            n_mean = max(out.noisy_count, 1.0)
    mu = noisy_sum / n_mean
    norm_mu = vector_norm(mu)
    if norm_mu > C:  # the true mean of clipped rows lies in the ball: project (post-processing)
        mu *= C / norm_mu
    out.center = mu
    edges = norm_edges(C)
    with staged.stage(stage_plan(("histogram",), (plan["histogram"],)), noise) as releaser:
        counts = norm_histogram(X, edges, center=mu, owner=kind, show_progress=show_progress)
        noisy_counts = releaser.add("histogram", counts)
    out.clip = min(clip_from_histogram(noisy_counts, edges, quantile, n_mean), C)
    return _scatter_at_released_clip(X, plan, staged, out, center=mu, what="centred rows",
                                     rule=f"the released {quantile:g}-quantile of their norms",
                                     kind=kind, k=k, C=C, epsilon=epsilon, noise_shape=noise_shape,
                                     noise=noise, show_progress=show_progress, xp=xp)


def _scatter_at_released_clip(X: Any, plan: ReleasePlan, staged: StagedRelease, out: _Released, *,
                              center: np.ndarray | None, what: str, rule: str, kind: _NoiseKind,
                              k: int, C: float, epsilon: float, noise_shape: str, noise: Any,
                              show_progress: bool | None, xp: Any = None) -> tuple[ReleasePlan, _Released]:
    """The last stage of adaptive clipping: the scatter of the rows clipped at the released clip
    ``out.clip``, with the planned noise multiplier times its sensitivity at that clip."""
    assert out.clip is not None
    planned = plan["scatter"]
    sensitivity = _scatter_sensitivity(plan.relation, sensitivity_norm(out.clip))
    multiplier = planned.scale / (planned.sensitivity or 1.0)
    scatter = NoisyRelease("scatter", "gaussian", multiplier * sensitivity, sensitivity)
    event = plan.events[[r.name for r in plan.releases].index("scatter")]
    with staged.stage(ReleasePlan(kind, plan.relation, (event,), (scatter,)), noise) as releaser:
        # the rows clipped at the released clip (never refused: a refusal here would be decided by
        # the data after the charge; the raw rows were checked before it)
        moments = accumulate(X, row_norm=out.clip, center=center, on_norm_violation="clip",
                             want_sum=False, want_second=True, owner=kind, show_progress=show_progress,
                             xp=xp)
        out.S_hat = _noisy_scatter(kind, moments, releaser, out.clip, epsilon, noise_shape)
        out.values, out.vectors = top_k_eigh(out.S_hat, k)
    out.n, out.releaser = moments.n, releaser
    released_plan = ReleasePlan(kind, plan.relation, plan.events,
                                tuple(r for r in plan.releases if r.name != "scatter") + (scatter,),
                                notes=plan.notes + (
                                    f"Adaptive clipping: the {what} were clipped at {out.clip:.4g}, "
                                    f"{rule} (public bound row_norm={C:g}).",))
    return released_plan, out


def _release_uncentred_adaptive(X: Any, make_plan: Any, *, center: np.ndarray | None,
                                quantile: float | None,
                                kind: _NoiseKind, k: int, C: float, epsilon: float, noise_shape: str,
                                accountant: Any, noise: Any, on_norm_violation: NormViolation,
                                show_progress: bool | None, xp: Any = None) -> tuple[ReleasePlan, _Released]:
    """centering None (or a public centre) with adaptive clipping: a staged release of two stages.

    Pass 1 validates the whole input (finite; norms, with ``on_norm_violation="raise"``) before
    anything is charged, and counts the row norms in the histogram's public bins (kept until stage 1:
    one pass less over the data). Stage 1 releases the noisy histogram of the row norms (and, under add/remove
    with ``release_count``, the noisy count), from which the clip ``r`` (the balance rule, or a given
    quantile) is post-processed; stage 2 the scatter of the rows clipped at ``r``, with the planned noise
    multiplier times its sensitivity at ``r``. The whole cost is declared and checked up front.
    """
    edges = bound_edges(C)  # rows at the bound (up to rounding) in the top bin
    # one pass validates the rows and counts their norms (kept here until the histogram's stage)
    first = accumulate(X, row_norm=C, center=center, on_norm_violation=on_norm_violation,
                       want_sum=False, want_second=False, owner=kind, show_progress=show_progress,
                       xp=xp, norm_edges=edges)
    check_n_components(k, first.d, kind, name="k")
    plan = make_plan(first.n, first.d)
    event_of = dict(zip((r.name for r in plan.releases), plan.events, strict=True))
    stage1 = ("histogram", "count") if _has(plan, "count") else ("histogram",)
    staged = StagedRelease(accountant, plan.relation, kind,
                           [tuple(event_of[name] for name in stage1), (event_of["scatter"],)], n_rows=first.n)
    out = _Released()
    out.center = center
    counts = first.norm_counts
    stage = ReleasePlan(kind, plan.relation, tuple(event_of[n] for n in stage1),
                        tuple(plan[n] for n in stage1))
    with staged.stage(stage, noise) as releaser:
        noisy_counts = releaser.add("histogram", counts)
        if _has(plan, "count"):
            out.noisy_count = releaser.add("count", float(first.n))
    # the rows counted: n (public under replace-one), else the released count or the histogram's total
    n_rows = float(first.n) if plan.relation.n_is_public else (
        out.noisy_count if out.noisy_count is not None else float(noisy_counts.sum()))
    if quantile is None:  # the balance rule: its target is a clip with about `kappa` rows above it (public)
        kappa = BALANCE_FACTOR * math.sqrt(first.d) * _noise_norm_per_clip2(plan, noise_shape, first.d)
        out.clip = _balanced_clip(noisy_counts, edges, kappa, plan["histogram"].scale, C)
        what = (f"chosen by the balance rule from the released histogram, whose target (about {kappa:.3g} "
                "rows above the clip) is a public number set by the noise level and d, not a count of "
                "the data")
    else:
        clip = clip_from_histogram(noisy_counts, edges, quantile, max(n_rows, 1.0))
        out.clip = C if clip >= edges[-1] else clip  # the top bin: the public bound itself
        what = f"the released {quantile:g}-quantile of their norms"
    return _scatter_at_released_clip(X, plan, staged, out, center=center, what="rows", rule=what,
                                     kind=kind, k=k, C=C, epsilon=epsilon,
                                     noise_shape=noise_shape, noise=noise, show_progress=show_progress,
                                     xp=xp)


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


def _release_uncentred(X: Any, make_plan: Any, *, center: np.ndarray | None, kind: _NoiseKind,
                       k: int, C: float, epsilon: float, noise_shape: str, accountant: Any, noise: Any,
                       on_norm_violation: NormViolation,
                       show_progress: bool | None, xp: Any = None) -> tuple[ReleasePlan, _Released]:
    """One pass, then one release, in the pipeline's order (:func:`read_then_release`): an input that
    can be re-read is read (and so validated) before the charge; a one-shot stream after it."""
    def read(data: Any) -> Any:
        moments = accumulate(data, row_norm=C, center=center, on_norm_violation=on_norm_violation,
                             want_sum=False, want_second=True, owner=kind, show_progress=show_progress,
                             xp=xp)
        check_n_components(k, moments.d, kind, name="k")
        return moments

    def plan_for(n: int | None, d: int | None) -> ReleasePlan:
        if d is not None:
            check_n_components(k, d, kind, name="k")
        return make_plan(n, d)  # type: ignore[no-any-return]

    out = _Released()
    out.center = center
    with read_then_release(X, read, plan_for, accountant, noise, owner=kind) as (moments, releaser):
        plan = releaser.plan
        if _has(plan, "count"):
            out.noisy_count = releaser.add("count", float(moments.n))
        out.S_hat = _noisy_scatter(kind, moments, releaser, C, epsilon, noise_shape)
        out.values, out.vectors = top_k_eigh(out.S_hat, k)
    out.n, out.releaser = moments.n, releaser
    return plan, out


def _has(plan: ReleasePlan, name: str) -> bool:
    return any(r.name == name for r in plan.releases)


def _result(kind: _NoiseKind, plan: ReleasePlan, released: _Released, report: Any, rel: Relation,
            C: float, noise_shape: str) -> SubspaceResult:
    """The result: released values and public facts of the plan only."""
    n_samples: float | None = float(released.n) if rel.n_is_public else released.noisy_count
    d = int(released.vectors.shape[0])
    diagnostics: dict[str, Any] = {
        "noise_std": plan["scatter"].scale if kind != "wishart" else None,
        "sensitivity": _scatter_sensitivity(rel, sensitivity_norm(C)),
        "noise_shape": noise_shape,
        # the noise's spectral norm (public): released eigenvalues at or below it are not resolved
        "noise_edge": None if kind == "wishart" else
        (math.sqrt(2.0 * d) if noise_shape == "goe" else 2.0 * math.sqrt(d)) * plan["scatter"].scale,
    }
    if _has(plan, "mean"):
        diagnostics["mean_noise_std"] = plan["mean"].scale
    if _has(plan, "count"):
        diagnostics["count_noise_std"] = plan["count"].scale  # public: a function of (epsilon, delta)
    if released.clip is not None:
        diagnostics["clip"] = released.clip  # released (post-processing of a noisy histogram)
        if _has(plan, "mean"):
            diagnostics["centred_clip"] = released.clip
        diagnostics["histogram_noise_std"] = plan["histogram"].scale
    return SubspaceResult(
        components=released.vectors,
        values=released.values,
        total=_trace(released.S_hat),
        mean=None if released.center is None else like(released.center, released.vectors),
        n_samples=n_samples,
        privacy=report,
        diagnostics=diagnostics,
    )


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


def _noisy_scatter(kind: _NoiseKind, moments: Any, releaser: Releaser, C: float,
                   epsilon: float, noise_shape: str) -> np.ndarray:
    """The released scatter matrix ``S + E`` (inside the release block; ``E`` of ``noise_shape``)."""
    assert moments.second is not None
    S, d, n = moments.second, moments.d, moments.n
    if kind == "wishart":
        scale = 3.0 * C**2 / (2.0 * n * epsilon)  # Wishart_d(d+1, scale * I) on X^T X / n
        G = releaser.generator.normal(0.0, math.sqrt(scale), size=(d, d + 1))
        return S + n * (G @ G.T)
    return releaser.add_symmetric("scatter", S, shape=noise_shape)


_COMMON_DOC = """
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
    adaptive_clip, clip_quantile, clip_share : bool, float or None, float or None
        (analyze_gauss, mod_sulq; ``calibration="tight"``) Clip the rows at a clip released from a
        noisy histogram of their norms (spending ``clip_share`` of the budget; None: 0.02 uncentred,
        0.05 centred) instead of at ``row_norm`` (docs/algorithms/covariance.md). With
        ``centering="private"``: the released ``clip_quantile`` (None: 0.1) of the centred norms.
        Uncentred (None or a public centre): ``clip_quantile=None`` is the balance rule (about
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
"""


#: The parameters of the three covariance mechanisms (constraints.py); relation, centring and k are
#: checked in the mechanism (they depend on the method and on the data's shape).
COVARIANCE_PARAMETERS: dict[str, Constraint | list[Constraint] | None] = {
    "epsilon": EPSILON, "delta": DELTA, "row_norm": ROW_NORM, "calibration": CALIBRATION,
    "mean_share": SHARE, "release_count": Types((bool,), "a bool"), "random_state": RANDOM_STATE,
    "on_norm_violation": ON_NORM_VIOLATION, "accounting": Options(("auto", "gaussian", "pld", "rdp")),
    "show_progress": [NONE, Types((bool,), "a bool")],
}
#: analyze_gauss and mod_sulq also clip the privately centred rows adaptively.
ADAPTIVE_PARAMETERS: dict[str, Constraint | list[Constraint] | None] = {
    **COVARIANCE_PARAMETERS,
    "adaptive_clip": Types((bool,), "a bool"), "clip_quantile": [NONE, SHARE],
    "clip_share": [NONE, SHARE],
    "noise_shape": [NONE, Options(("goe", "iid"))],
    "device": [NONE, DEVICE],
}


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
    adaptive_clip: bool = True,
    clip_quantile: float | None = None,
    clip_share: float | None = None,
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
    events; the noise is drawn on the data's device by
    :class:`~dpspectral.privacy._device_noise.DeviceNoise` (a seeded PyTorch or CuPy generator): the
    same law, a different stream than NumPy's (the report's ``noise_source`` is ``"seeded-device"``);
    ``random_state="secure"`` is refused there (its exact samplers run on the host).
    """
    return _covariance_pca(
        "analyze_gauss", stream_to_device(X, device, "analyze_gauss"), k, epsilon=epsilon, delta=delta,
        row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE, Relation.ADD_REMOVE),
        adaptive_clip=adaptive_clip, clip_quantile=clip_quantile, clip_share=clip_share,
        noise_shape=noise_shape,
    )


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
    adaptive_clip: bool = True,
    clip_quantile: float | None = None,
    clip_share: float | None = None,
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

    Privacy
    -------
    Relation: replace-one only (n is public under it, so a noise scale depending on n is allowed).
    The upper triangle of ``X^T X / n`` has L2 sensitivity ``sqrt(2) C^2 / n`` (see
    :func:`analyze_gauss`). Event: ``GaussianDpEvent(beta n / (sqrt(2) C^2))`` for the paper's beta;
    the accountant certifies the epsilon it gives (the paper's per-entry union bound is loose, so it
    is normally certified with room to spare).

    Device arrays (array API dispatch; ``docs/array-api.md``): the same mechanism, sensitivities and
    events; the noise is drawn on the data's device by
    :class:`~dpspectral.privacy._device_noise.DeviceNoise` (a seeded PyTorch or CuPy generator): the
    same law, a different stream than NumPy's (the report's ``noise_source`` is ``"seeded-device"``);
    ``random_state="secure"`` is refused there (its exact samplers run on the host).
    """
    return _covariance_pca(
        "mod_sulq", stream_to_device(X, device, "mod_sulq"), k, epsilon=epsilon, delta=delta,
        row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE,),
        adaptive_clip=adaptive_clip, clip_quantile=clip_quantile, clip_share=clip_share,
        noise_shape=noise_shape,
    )


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
    """The Wishart mechanism (Jiang, Xie and Zhang, AAAI 2016). **Not differentially private.**

    ``A_hat = X^T X / n + W`` with ``W ~ Wishart_d(d + 1, 3 C^2 / (2 n eps) I)`` (the constant used by
    the papers' comparisons). Its claimed epsilon-DP analysis is known to be wrong (Sheffet 2019,
    footnote 4; Amin et al. 2019, §1.2); it exists only to reproduce the papers' baselines.

    Privacy
    -------
    None certified. The release is recorded as ``NonPrivateDpEvent``, so the result has
    ``certified=False`` and ``epsilon=inf``, an :class:`UncertifiedPrivacyWarning` is raised, and an
    accountant with a finite ceiling refuses it. Only ``calibration="paper"`` exists.
    """
    return _covariance_pca(
        "wishart", X, k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE, Relation.ADD_REMOVE),
    )


for _f in (analyze_gauss, mod_sulq, wishart):
    _f.__doc__ = (_f.__doc__ or "") + _COMMON_DOC
