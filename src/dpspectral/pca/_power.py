"""The private (noisy) power method of Hardt and Roth (STOC 2013) and Hardt and Price (NIPS 2014).

Row-level variant (``../shared/papers/spec-pca-gep.md`` §B.5, DERIVED): the scatter matrix of the
clipped rows ``A = sum_i c(x_i) c(x_i)^T`` is computed once (in chunks); from a random orthonormal
start ``X_0`` (d x p), every iteration releases ``Y_l = A X_{l-1} + G_l`` with ``G_l`` i.i.d.
``N(0, sigma^2)`` and continues from ``X_l = QR(Y_l)``. Everything after a release reads only released
quantities (``X_l`` is a function of ``Y_l``), so the L releases compose adaptively.

Sensitivity of one iteration (rows of norm <= C after clipping; X orthonormal, ``||X||_2 = 1``)
--------------------------------------------------------------------------------------------
``||M X||_F <= ||M||_F ||X||_2 = ||M||_F`` for every d x d matrix M, so

* replace x by y: ``||(x x^T - y y^T) X||_F <= ||x x^T - y y^T||_F <= sqrt(2) C^2`` (because
  ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``; tight for orthogonal x, y of
  norm C lying in the span of X);
* add/remove x: ``||x x^T X||_F = ||x|| ||X^T x|| <= C^2`` (tight for x in the span of X).

The bound does not depend on the iteration or on ``X_{l-1}`` (which is the same for both neighbours:
it is computed from earlier releases), so each iteration is a Gaussian mechanism with multiplier
``s = sigma / Delta`` and the run is ``SelfComposedDpEvent(GaussianDpEvent(s), L)``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from .._array_api import get_namespace_and_device, like, work_dtype
from .._constraints import NONE, PRIVACY_PARAMETERS, Calibration, Interval, Table, check_params, validated
from .._device_stream import DEVICE, stream_to_device
from .._linalg import fix_signs, orthonormalize
from .._moments import accumulate, needs_two_passes_ok, summation_of
from .._options import ADAPTIVE_CLIP, AdaptiveClip, clip_fields, folded
from .._progress import progress
from .._results import SubspaceResult
from .._rows import n_features_of
from .._validation import check_mechanism_inputs, check_n_components
from ..privacy._accounting import Accountant, calibrate
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, at_released_clip, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import Summation, widen_projection
from ..privacy._template import Drawn, Mechanism, Released, Rows, RunSettings, run
from ._clip_stage import ClipStaged, with_clip_stage
from ._inputs import PcaInputs

__all__ = ["hardt_price_sigma", "noisy_power"]


_OWNER = "noisy_power"
_RELATIONS = (Relation.REPLACE_ONE, Relation.ADD_REMOVE)


def _iteration_sensitivity(relation: Relation, row_norm: float) -> float:
    """L2 (Frobenius) sensitivity of ``A X`` for orthonormal X (see the module docstring)."""
    return (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * row_norm**2


def _widened(plan: ReleasePlan, inputs: Any, n: int | None, d: int | None, p: int) -> ReleasePlan:
    """The iterations widened for the rounding of the computed ``A X`` (``X``: ``d x p`` orthonormal),
    :func:`~dpspectral.privacy._rounding.widen_projection`. The events are unchanged."""
    return dataclasses.replace(plan, releases=tuple(
        widen_projection(r, n=n, relation=inputs.relation, row_norm=sensitivity_norm(inputs.C), d=d,
                         columns=p, summation=inputs.summation) for r in plan.releases))


def _events(noise_multiplier: float, n_iter: int) -> list[dp_accounting.DpEvent]:
    return [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), n_iter)]


def hardt_price_sigma(epsilon: float, delta: float, block_size: int, n_iter: int) -> float:
    """Hardt and Price's per-iteration noise scale ``sqrt(4 p L ln(1/delta)) / epsilon``.

    RECONSTRUCTED from memory in the spec (§B.5; no copy of the paper was available): check against
    the paper if one turns up. In the paper it multiplies ``||X_{l-1}||_inf`` (entry-level
    neighbours); the row-level variant here multiplies the row-level sensitivity instead.
    """
    return math.sqrt(4.0 * block_size * n_iter * math.log(1.0 / delta)) / epsilon


_N_ITER = Interval(1, None, "left", integer=True)
_N_COMPONENTS = Interval(1, None, "left", integer=True)

#: The parameters of :func:`noisy_power`; ``k <= n_features`` and ``k <= block_size <= n_features``
#: relate parameters to each other and to the data and are checked inline.
_PARAMS: Table = {
    **PRIVACY_PARAMETERS, "n_iter": _N_ITER,
    "adaptive_clip": ADAPTIVE_CLIP, "device": [NONE, DEVICE],
}


#: Default block size ``p = min(d, OVERSAMPLING k)``: the extra columns cost no privacy (the
#: sensitivity bounds ``||(x x^T - y y^T) X||_F`` whatever p is) and make two or three iterations
#: enough (measured in docs/algorithms/stochastic.md, "The noisy power method's defaults").
OVERSAMPLING = 10


def _check_block_size(block_size: Any, k: int, d: int | None, owner: str) -> int:
    """None (then ``min(d, OVERSAMPLING k)``, or k while d is unknown) or an int in [k, n_features]."""
    if block_size is None:
        return k if d is None else min(d, OVERSAMPLING * k)
    high = "n_features" if d is None else f"n_features={d}"
    message = (
        f"The 'block_size' parameter of {owner} must be None or an int in [k={k}, {high}]. "
        f"Got {block_size!r} instead."
    )
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral):
        raise TypeError(message)
    if not k <= int(block_size) <= (math.inf if d is None else d):
        raise ValueError(message)
    return int(block_size)


def _validate(X: Any, k: Any, block_size: Any, *, epsilon: float, delta: float, row_norm: float,
              relation: Relation | str, calibration: str, on_norm_violation: str,
              ) -> tuple[PrivacyBudget, Relation, float, int, int]:
    """The public inputs, checked before anything is read or charged (the table checked the rest)."""
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=_OWNER, allowed_relations=_RELATIONS,
    )
    d_known = n_features_of(X)
    if d_known is not None:
        k = check_n_components(k, d_known, _OWNER, name="k")
    else:
        check_params({"k": _N_COMPONENTS}, {"k": k}, _OWNER)
    return budget, rel, C, int(k), _check_block_size(block_size, int(k), d_known, _OWNER)


def _sizes(k: int, block_size: Any, d: int | None) -> tuple[int, int]:
    """``(k, p)`` checked against the number of features d (as far as it is known)."""
    if d is not None:
        k = check_n_components(k, d, _OWNER, name="k")
    return k, _check_block_size(block_size, k, d, _OWNER)


def _plan(budget: PrivacyBudget, relation: Relation, calibration: str, row_norm: float,
          n_iter: int, block_size: int, clip: RowClipPlan | None = None) -> ReleasePlan:
    """The L releases ``Y_l = A X_{l-1} + G_l`` (one planned Gaussian release, used L times).

    With ``clip`` (adaptive clipping) the multiplier is calibrated for the composition with the norm
    histogram (:mod:`~dpspectral.privacy._adaptive`); ``row_norm`` is then the released clip.
    """
    sens = _iteration_sensitivity(relation, sensitivity_norm(row_norm))
    notes: tuple[str, ...] = ()
    if calibration == "tight":
        def make(m: float) -> dp_accounting.DpEvent:
            return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(m), n_iter)

        s = calibrate(make if clip is None else clip.compose(make), budget.epsilon, budget.delta,
                      relation=relation)
    else:
        s = hardt_price_sigma(budget.epsilon, budget.delta, block_size, n_iter)
        notes = (
            "Private power method with Hardt and Price's sigma = sqrt(4 p L ln(1/delta))/epsilon "
            "(constant recalled from memory in the spec, not checked against the paper) times the "
            "row-level sensitivity; certified only for the epsilon the accountant confirms.",
        )
    return ReleasePlan(_OWNER, relation, tuple(_events(s, n_iter)),
                       (NoisyRelease("iteration", "gaussian", s * sens, sens),), notes)


def _iterate(A: np.ndarray, block_size: int, n_iter: int, releaser: Releaser,
             show_progress: bool | None) -> np.ndarray:
    """Inside the release block: ``Y_l = A X_{l-1} + G_l``, ``X_l = QR(Y_l)``; returns ``Y_L``."""
    d = A.shape[0]
    # the start from the host generator (as on the NumPy path), then on A's device
    Xl = like(orthonormalize(releaser.standard_normal((d, block_size))), A)
    Y = Xl
    for _ in progress(range(n_iter), total=n_iter, desc=_OWNER, enabled=show_progress, min_total=50):
        Y = releaser.add("iteration", A @ Xl)
        Xl = orthonormalize(Y)
    return Y


def _left_singular_vectors(Y: Any) -> Any:
    """``U`` of the thin SVD of ``Y`` (in ``Y``'s namespace, on its device, with array API dispatch)."""
    if isinstance(Y, np.ndarray):
        U, _, _ = np.linalg.svd(Y, full_matrices=False)
        return U
    import array_api_compat

    U, _, _ = array_api_compat.array_namespace(Y).linalg.svd(Y, full_matrices=False)
    return U


@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@validated(_PARAMS)
def noisy_power(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    n_iter: int = 3,
    block_size: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
    device: Any = None,
) -> SubspaceResult:
    """Private power iteration (Hardt and Roth 2013; Hardt and Price 2014), row-level variant.

    ``A = sum_i c(x_i) c(x_i)^T`` for the rows clipped to norm C; ``X_0`` a random orthonormal
    d x p matrix (p = ``block_size``, default ``min(d, 10 k)``); for ``l = 1..L`` (L = ``n_iter``)::

        Y_l = A X_{l-1} + G_l,   G_l i.i.d. N(0, sigma^2) of shape (d, p),   X_l = QR(Y_l)

    The result is the top-k left singular subspace of the last release ``Y_L`` (ordered by singular
    value, signs fixed). For ``p = k`` it spans the same subspace as the paper's ``X_L``; for
    ``p > k`` it is a Rayleigh-Ritz-like choice within the released block instead of the paper's
    first k columns of ``X_L``. Both are post-processing of released quantities. Eigenvalues are
    not released (``values=None``).

    Parameters
    ----------
    X, k, epsilon, delta, row_norm
        As in :func:`analyze_gauss` (``X`` is read once: ``A`` is computed in chunks; twice with
        adaptive clipping).
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): the smallest per-iteration noise multiplier whose L-fold composition
        is (epsilon, delta)-DP under the exact Gaussian accountant. ``"paper"``: Hardt and Price's
        ``sigma = sqrt(4 p L ln(1/delta)) / epsilon`` (recalled from memory in the spec, not checked
        against the paper) times the row-level sensitivity; the accountant certifies what it gives
        (an :class:`UncertifiedPrivacyWarning` when that is not the requested epsilon).
    n_iter : int, default=3
        Number of iterations L >= 1 (public; never computed from the spectrum). The noise grows
        like ``sqrt(L)``; with an oversampled block the gap that matters is
        ``lambda_k / lambda_{p+1}``, so a few iterations suffice (the paper's analysis takes
        ``L ~ log(d) / log(lambda_k / lambda_{k+1})`` with ``p = k``: pass ``n_iter`` and
        ``block_size=k`` for it).
    block_size : int, optional
        Block size p in [k, n_features] (default ``min(n_features, 10 k)``: the extra columns cost no
        privacy).
    accountant : Accountant, optional
        Ledger to spend against; the run is refused before any noise is drawn if it would exceed
        the ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the start and the noise. ``"secure"``: OS entropy and an exact discrete
        Gaussian sampler (the report's ``noise_source`` says which).
    on_norm_violation : {"clip", "raise"}
    show_progress : bool or None
        Progress bars over blocks and iterations (None: on a terminal, for long work).
    adaptive_clip : bool or AdaptiveClip, default=True
        Clip the rows at a released clip (a noisy norm histogram, then the balance rule of
        :func:`dpspectral.privacy._quantile.balanced_clip`) instead of at ``row_norm``. Off for the
        paper calibration and for a one-shot iterator (it needs a second read). ``AdaptiveClip(share=...)``
        sets the histogram's share of the budget (default 0.02); the balance rule takes no quantile.
    device : None, str, torch.device, or an array
        Out-of-core on a device: host rows (an array, a memmap, row blocks) are copied to ``device`` one
        block at a time and clipped and summed there (every pass); the noise, the iterations and the
        result are there (``dpspectral.to_numpy`` for NumPy). A string or ``torch.device`` means
        PyTorch ("cuda", "cpu"); an array means its namespace and device. None: where the data live.
        ``docs/array-api.md``, "Out-of-core on a device".

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); ``values`` None; diagnostics ``noise_std``,
        ``noise_multiplier``, ``sensitivity``, ``n_iter``, ``block_size`` (and ``clip``,
        ``histogram_noise_std`` with adaptive clipping).

    Privacy
    -------
    Relation: replace-one (default) or add/remove. Each iteration releases ``Y_l``, whose
    Frobenius (L2) sensitivity for a fixed orthonormal ``X_{l-1}`` is ``sqrt(2) C^2`` under
    replace-one (``||(x x^T - y y^T) X||_F <= ||x x^T - y y^T||_F ||X||_2`` and
    ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``) and ``C^2`` under add/remove
    (``||x x^T X||_F = ||x|| ||X^T x|| <= C^2``). ``X_{l-1}`` is computed from earlier releases (and
    the data-independent start), so it is the same for both neighbours and the L releases compose
    adaptively. Event: ``SelfComposedDpEvent(GaussianDpEvent(sigma / Delta), L)``. The final SVD
    is post-processing of ``Y_L``. The data are read (validated whole: finite, and within the bound
    with ``on_norm_violation="raise"``) before the ledger is charged, so a refusal costs nothing;
    a one-shot stream (an iterator of blocks) is charged before it is read, and a failure after the
    charge (a bad block of such a stream) is a failed release that stays charged.
    ``random_state`` is secret (it draws the noise).

    Adaptive clipping (default with ``calibration="tight"`` and an input that can be read twice): a
    noisy histogram of the row norms is released first (its ``share`` of the budget) and the rows
    are clipped at the clip post-processed from it (:mod:`dpspectral.privacy._adaptive`): the
    sensitivity above holds with C replaced by that public clip; the multiplier is calibrated for
    ``ComposedDpEvent([GaussianDpEvent(s_h), SelfComposedDpEvent(GaussianDpEvent(s), L)])``. The data
    are read twice: the validation pass also counts the row norms in the histogram's public bins (the
    exact counts stay here until the histogram's stage adds its noise), then ``X^T X`` at the clip.

    Device arrays (array API dispatch; ``docs/array-api.md``): the same mechanism, sensitivities and
    events; each released product is noised on the host (exact, or ``"secure"``) and copied back to
    the data's device. The random start is drawn by the host generator, as on the NumPy path, then
    moved to the device.
    """
    on, _, clip_share = clip_fields(adaptive_clip, _OWNER, takes_quantile=False)
    return run(_NoisyPower(show_progress), _PowerInputs(
        k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        n_iter=n_iter, block_size=block_size, on_norm_violation=on_norm_violation,
        adaptive_clip=on, clip_share=clip_share,
    ), stream_to_device(X, device, _OWNER), RunSettings(accountant, random_state))


@dataclass(frozen=True)
class _PowerInputs(PcaInputs):
    """The public inputs of the noisy power method."""

    n_iter: int
    block_size: int | None
    on_norm_violation: NormViolation
    adaptive_clip: bool
    clip_share: float | None


@dataclass(frozen=True, eq=False)
class _Checked:
    inputs: _PowerInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    k: int
    calibration: str
    clip: RowClipPlan | None  # adaptive clipping: the histogram's stage
    xp: Any
    n: int | None
    d: int | None
    summation: Summation = Summation()  # how A is summed (the rounding bound's path)
    dtype: Any = None  # a device input's floating dtype: the results' (A is summed in float64)


class _NoisyPower(ClipStaged, Mechanism[_PowerInputs, SubspaceResult]):
    """The noisy power method as the release template runs it: one release of the L iterations at
    the bound C, or (adaptive clipping) the norm histogram first, then the iterations at the released
    clip."""

    label = _OWNER
    release_name = "iteration"
    stacklevel = 3  # frames above run: noisy_power, the constraint check, the caller

    def check(self, inputs: _PowerInputs, X: Any) -> _Checked:
        budget, rel, C, k, _ = _validate(
            X, inputs.k, inputs.block_size, epsilon=inputs.epsilon, delta=inputs.delta,
            row_norm=inputs.row_norm, relation=inputs.relation, calibration=inputs.calibration,
            on_norm_violation=inputs.on_norm_violation)
        xp, _ = get_namespace_and_device(X, _OWNER)  # array API dispatch (None: the NumPy path)
        adaptive = inputs.adaptive_clip and inputs.calibration == "tight" and needs_two_passes_ok(X)
        clip = plan_row_clip(budget, rel, C, inputs.clip_share or DEFAULT_CLIP_SHARE) if adaptive else None
        d = n_features_of(X)
        return _Checked(inputs, budget, rel, C, k, inputs.calibration, clip, xp,
                        int(X.shape[0]) if d is not None and not math.isnan(X.shape[0]) else None, d,
                        summation_of(X, xp), None if xp is None else work_dtype(X, xp))

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> ReleasePlan:
        _, p = _sizes(inputs.k, inputs.inputs.block_size, d)
        plan = _plan(inputs.budget, inputs.relation, inputs.calibration, inputs.C, int(inputs.inputs.n_iter),
                     p, inputs.clip)
        return with_clip_stage(_widened(plan, inputs, n, d, p), inputs.clip)

    def read(self, inputs: _Checked, X: Any) -> Rows:
        """The validating pass: ``A`` at the bound C, or (adaptive) only the row norms' counts."""
        clip = inputs.clip
        first = accumulate(X, row_norm=inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,
                             want_sum=False, want_second=clip is None, owner=_OWNER,
                             show_progress=self.show_progress, xp=inputs.xp,
                             norm_edges=None if clip is None else clip.edges)
        _sizes(inputs.k, inputs.inputs.block_size, first.d)
        return Rows(first, X)

    def stage_plan(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        stage = super().stage_plan(inputs, plan, names, released)
        if inputs.clip is None or names != ("iteration",):
            return stage
        rows, spec = released.rows, plan["iteration"]
        _, p = _sizes(inputs.k, inputs.inputs.block_size, rows.d)
        nu = spec.scale / (spec.sensitivity or 1.0) * _iteration_sensitivity(inputs.relation, 1.0) * (
            math.sqrt(rows.d) + math.sqrt(p))  # ||G_l||_2 per unit r^2 (public)
        share = inputs.inputs.clip_share or DEFAULT_CLIP_SHARE
        # the same multiplier, the sensitivity at r
        clip, stage = at_released_clip(inputs.clip, released["norm_histogram"], stage, {"iteration": 2},
                                       share, noise_per_clip2=nu, d=rows.d,
                                       n_public=rows.n if inputs.relation.n_is_public else None)
        released["clip"] = clip
        return stage

    def statistic(self, inputs: _Checked, rows: Rows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "norm_histogram":
            return {"norm_histogram": rows.first.norm_counts}  # counted in the validating pass
        _, p = _sizes(inputs.k, inputs.inputs.block_size, rows.d)
        moments = rows.first
        if inputs.clip is not None:  # the rows clipped at the released clip (checked at C before)
            moments = accumulate(rows.source, row_norm=released["clip"], on_norm_violation="clip",
                                 want_sum=False, want_second=True, owner=_OWNER,
                                 show_progress=self.show_progress, xp=inputs.xp)
        released["n"] = moments.n
        L = int(inputs.inputs.n_iter)
        return {"iteration": Drawn(lambda releaser: _iterate(moments.second, p, L, releaser,
                                                             self.show_progress))}

    def post_process(self, inputs: _Checked, rows: Rows, released: Released, report: Any) -> SubspaceResult:
        """The top-k left singular vectors of the last release, ordered."""
        U = _left_singular_vectors(released["iteration"])
        if inputs.dtype is not None and U.dtype != inputs.dtype:  # post-processing, in X's dtype
            U = inputs.xp.astype(U, inputs.dtype)
        plan = released.plan
        spec = plan["iteration"]
        diagnostics: dict[str, Any] = {
            "noise_std": spec.scale,
            "noise_multiplier": plan.events[-1].event.noise_multiplier,  # type: ignore[attr-defined]
            "sensitivity": spec.sensitivity,
            "n_iter": int(inputs.inputs.n_iter),
            "block_size": _sizes(inputs.k, inputs.inputs.block_size, rows.d)[1],
        }
        if inputs.clip is not None:
            diagnostics["clip"] = released["clip"]  # released (post-processing of the noisy histogram)
            diagnostics["histogram_noise_std"] = inputs.clip.release.scale
        return SubspaceResult(
            components=fix_signs(U[:, :inputs.k]), values=None, privacy=report,
            n_samples=float(released["n"]) if inputs.relation.n_is_public else None,
            diagnostics=diagnostics,
        )
