"""Hardt–Roth: row-level private low-rank approximation (default: noisy subspace iteration, STOC 2013).

``algorithm="power"`` (the default) is Hardt and Roth's STOC 2013 noisy subspace iteration on ``A^T A``
(:mod:`.power`): it releases the right subspace V and singular values S, not U. ``algorithm=
"range_finder"`` is the STOC 2012 baseline of Upadhyay's experiments, below; it is chosen automatically
with ``row_change`` or ``calibration="paper"`` (the paper's settings). On 20,000 unit MNIST rows (k = 10,
epsilon = 1) the range finder's V is at random level (subspace error 1.75 x the best, a random V 1.75),
because its stage-1 noise on the m x ell sketch has spectral norm ~ sigma sqrt(m); the power iteration
reaches 1.10 (Analyze Gauss 1.04).

The STOC 2012 baseline of Upadhyay's experiments: a private two-stage Halko et al. sketch.

Reconstructed in ``../shared/papers/spec-lowrank.md`` §9 (Upadhyay's Appendix L.2 code is lost; the
skeleton is recalled, the calibration derived). Hardt and Roth privatise the randomized range finder
of Halko, Martinsson and Tropp (2011): stage 1 releases a noisy Gaussian sketch ``Y = A Omega + N1``
of the column space and takes ``Q = orth(Y)``; stage 2 prunes the rows of Q that are too coherent
(HR12's "simple pruning of entries of a matrix formed in the intermediate step") and releases the
noisy projection ``B = Q~^T A + N2``; the answer is the rank-k SVD of ``Q B``.

Neighbouring relation: **row-level** (Upadhyay's Priv1 with ``u = e_i``): the two matrices have the
same shape and differ in one row, each row of norm at most ``row_norm`` (``Relation.REPLACE_ONE``
on the rows of the m x n matrix). It is **not** Priv1-private (general unit ``u``) at this noise:
there stage 2's sensitivity is ``||Q~^T u|| <= ||Q~||_2 ~ 1`` instead of the pruning level ``tau``,
so Upadhyay's comparison with it mixes notions (spec §9).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._constraints import (
    NOISE_PARAMETERS,
    PRIVACY_PARAMETERS,
    SHARE,
    Constraint,
    Interval,
    Options,
    Types,
    check_params,
    validated,
    without,
)
from .._options import folded
from .._results import LowRankResult
from .._validation import check_budget
from ..privacy._accounting import Accountant, EpsilonDeltaDpEvent
from ..privacy._budget import PrivacyBudget, Relation, as_relation
from ..privacy._clipping import NormViolation, check_row_norm, clip_rows, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import widen_release
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run
from ._factorization import (
    BOUND,
    Calibration,
    SingularValues,
    UncountedMatrix,
    check_matrix,
    check_rank,
)
from ._power import default_block, default_shares, power_iterate, power_plan, power_result
from ._shrink import frobenius_shrink
from ._sketches import chi2_factor, chi2_quantile_factor, finish, orth_columns, svd_top_k

__all__ = ["HardtRothNoise", "PowerIteration", "RangeFinder", "hardt_roth", "hardt_roth_noise"]

Algorithm = Literal["power", "range_finder"]

_OWNER = "hardt_roth"

#: The relation of ``row_change=b`` (one row moves by a vector of norm <= b; rows not clipped): not
#: replace-one (any row replaced by any row within the bound). ``Relation.ROW_CHANGE`` once
#: ``privacy/budget.py`` defines it; until then the report keeps ``replace_one`` and says so in words.
ROW_CHANGE_RELATION: Relation | None = getattr(Relation, "ROW_CHANGE", None)

_NONE = Types((type(None),), "None")


@dataclass(frozen=True)
class RangeFinder:
    """The constants of Hardt and Roth's two-stage range finder (STOC 2012), ``algorithm="range_finder"``.

    Stage 1 releases ``Y = A Omega + N1`` for a Gaussian Omega of ``ell = k + p`` columns; stage 2
    prunes the rows of ``Q = orth(Y)`` to norm ``tau = min(1, c sqrt(ell / m))`` and releases
    ``B = Q~^T A + N2`` (:func:`~dpspectral.lowrank.hardt_roth`). Pass
    ``hardt_roth(..., range_finder=RangeFinder(...))``; the power iteration ignores these.

    Parameters
    ----------
    oversampling : int >= 0 or None, default=None
        p, Halko–Martinsson–Tropp's oversampling (None: k); the multiplicative error is
        ``sqrt(1 + k/(p - 1))``. ell is capped at ``min(m, n)``.
    prune : float > 0, default=2.0
        c in ``tau = c sqrt(ell / m)`` (HR12 use small constants; c in [1, 3]). Smaller c: less
        stage-2 noise, more distortion on coherent matrices.
    stage_share : float in (0, 1), default=0.5
        Share of the Gaussian budget (of ``mu^2``) given to stage 1 (tight calibration).
    failure_share : float in (0, 1), default=0.1
        Share of delta that covers stage 1's chi-square bound on ``||Omega^T w||`` failing.
    """

    oversampling: int | None = None
    prune: float = 2.0
    stage_share: float = 0.5
    failure_share: float = 0.1


@dataclass(frozen=True)
class PowerIteration:
    """The constants of Hardt and Roth's noisy subspace iteration (STOC 2013), ``algorithm="power"``.

    Pass ``hardt_roth(..., power=PowerIteration(...))``; the range finder ignores these.

    Parameters
    ----------
    block : int or None, default=None
        p, the block width of ``X_j`` (n x p): at least k, at most n (None: ``min(n, 10 k)``).
    iterations : int in [1, 20], default=3
        T, the number of noisy products ``A^T (A X_j) + N_j`` (budget shares 1:2:6 for 3, else
        doubling).
    """

    block: int | None = None
    iterations: int = 3


#: The old keywords of :func:`hardt_roth` and the fields of its two option groups they became.
_RANGE_FINDER_KEYWORDS = {"oversampling": "oversampling", "prune": "prune", "stage_share": "stage_share",
                          "sketch_failure_share": "failure_share"}
_POWER_KEYWORDS = {"block": "block", "iterations": "iterations"}

#: The parameters of the noise plan (:func:`hardt_roth_noise`).
_NOISE_TABLE: dict[str, Constraint | list[Constraint] | None] = {
    **NOISE_PARAMETERS,
    "ell": Interval(1, None, "left", integer=True),
    "m": Interval(1, None, "left", integer=True),
    "prune": BOUND,
    "stage_share": SHARE,
    "sketch_failure_share": SHARE,
}

#: The parameters of :func:`hardt_roth` (``row_norm`` is checked only when used: without ``row_change``).
_TABLE: dict[str, Constraint | list[Constraint] | None] = {
    **without(PRIVACY_PARAMETERS, "row_norm"),
    "row_change": [_NONE, BOUND],
    "algorithm": [_NONE, Options(("power", "range_finder"))],
    "range_finder": [_NONE, Types((RangeFinder,), "a RangeFinder")],
    "power": [_NONE, Types((PowerIteration,), "a PowerIteration")],
    "singular_values": Options(("shrink", "raw")),
}

#: The fields of the two option groups (checked once the groups are known).
_FIELDS_TABLE: dict[str, Constraint | list[Constraint] | None] = {
    "range_finder.oversampling": [_NONE, Interval(0, None, "left", integer=True)],
    "range_finder.prune": BOUND,
    "range_finder.stage_share": SHARE,
    "range_finder.failure_share": SHARE,
    "power.block": [_NONE, Interval(1, None, "left", integer=True)],
    "power.iterations": Interval(1, 20, "both", integer=True),
}


@dataclass(frozen=True)
class HardtRothNoise:
    """Noise plan of the two stages.

    ``sigma1``: std of N1 (m x ell); ``sigma2``: std of N2 (ell x n); ``tau``: the pruning level of the
    rows of Q; ``sensitivity1`` = ``b sqrt(q_ell)`` (per pair, except with probability
    ``sketch_delta``) and ``sensitivity2`` = ``b tau`` (exact), with b = 2 row_norm the largest change of
    one row; ``events`` what the release spends.
    """

    sigma1: float
    sigma2: float
    tau: float
    sensitivity1: float
    sensitivity2: float
    sketch_delta: float
    events: tuple[dp_accounting.DpEvent, ...]
    notes: tuple[str, ...] = ()

    def plan(self, label: str, relation: Relation, notes: tuple[str, ...]) -> ReleasePlan:
        """The two releases: ``"range"`` (``Y``, sigma1, sensitivity1) and ``"projection"`` (``B``)."""
        releases = (NoisyRelease("range", "gaussian", self.sigma1, self.sensitivity1),
                    NoisyRelease("projection", "gaussian", self.sigma2, self.sensitivity2))
        return ReleasePlan(label, relation, self.events, releases, notes=notes)


@validated(_NOISE_TABLE)
def hardt_roth_noise(
    epsilon: float,
    delta: float,
    ell: int,
    m: int,
    *,
    row_norm: float = 1.0,
    prune: float = 2.0,
    calibration: Calibration = "tight",
    stage_share: float = 0.5,
    sketch_failure_share: float = 0.1,
    owner: str = "hardt_roth_noise",
) -> HardtRothNoise:
    """Noise of the two stages for a target (epsilon, delta) under row-level (replace-one) neighbours.

    Parameters
    ----------
    epsilon, delta : float
        The target; delta in (0, 1).
    ell : int
        Sketch width ``k + p``.
    m : int
        Number of rows (public: the shape is the same for all neighbours).
    row_norm : float
        Public bound C on each row's norm; a replaced row moves by at most ``b = 2 C``.
    prune : float
        The pruning constant c: rows of Q are clipped to ``tau = min(1, c sqrt(ell / m))``.
    calibration : {"tight", "paper"}
        ``"tight"``: one analytic Gaussian multiplier for the whole (adaptive) composition at
        ``delta - delta_sketch``, split exactly between the stages (Gaussian DP: shares of ``1/s^2``,
        ``stage_share`` to stage 1). ``"paper"``: spec §9's classic formula per stage,
        ``sigma_j = Delta_j sqrt(2 ln(2.5/delta)) / (epsilon/2)`` with the Laurent–Massart ``c_ell``
        in stage 1 (each stage (epsilon/2, delta/2) when epsilon/2 < 1), reported with what the
        accountant certifies.
    stage_share : float in (0, 1)
        Share of the Gaussian budget (of ``1/s^2``) given to stage 1 (tight calibration).
    sketch_failure_share : float in (0, 1)
        Share of delta covering the stage-1 norm bound failing.
    owner : str
        What the user called, for the error messages.

    Returns
    -------
    HardtRothNoise
        The two stages' noise, sensitivities, the pruning level and the events.

    Privacy
    -------
    A plan only (nothing is drawn or charged); the derivation is :func:`hardt_roth`'s Privacy section.
    """
    budget = check_budget(epsilon, delta, owner)
    C = sensitivity_norm(float(row_norm))
    c, w, share_s = float(prune), float(stage_share), float(sketch_failure_share)
    b = 2.0 * C
    tau = min(1.0, c * math.sqrt(ell / m))
    delta_s = share_s * budget.delta
    d1 = b * math.sqrt(chi2_quantile_factor(int(ell), delta_s))
    d2 = b * tau
    notes: list[str] = []
    if calibration == "tight":
        s = analytic_noise_multiplier(budget.epsilon, budget.delta - delta_s)
        s1, s2 = split_noise_multiplier(s, [w, 1.0 - w])
        sigma1, sigma2 = s1 * d1, s2 * d2
    else:
        factor = math.sqrt(2.0 * math.log(2.5 / budget.delta)) / (budget.epsilon / 2.0)
        sigma1 = b * math.sqrt(chi2_factor(int(ell), delta_s)) * factor
        sigma2 = d2 * factor
        notes.append(
            "calibration='paper': sigma_j = Delta_j sqrt(2 ln(2.5/delta)) / (epsilon/2) per stage (spec §9, "
            "Laurent-Massart c_ell in stage 1); the accountant composes the two Gaussians exactly (GDP), "
            "with the exact chi-square sensitivity of stage 1 and delta_s taken from delta."
        )
    events = (
        dp_accounting.GaussianDpEvent(sigma1 / d1),
        dp_accounting.GaussianDpEvent(sigma2 / d2),
        EpsilonDeltaDpEvent(0.0, delta_s),
    )
    return HardtRothNoise(
        sigma1=sigma1,
        sigma2=sigma2,
        tau=tau,
        sensitivity1=d1,
        sensitivity2=d2,
        sketch_delta=delta_s,
        events=events,
        notes=tuple(notes),
    )


def _dense(M: Any) -> np.ndarray:
    return np.asarray(M.toarray() if sp.issparse(M) else M)


@folded("range_finder", RangeFinder, _RANGE_FINDER_KEYWORDS)
@folded("power", PowerIteration, _POWER_KEYWORDS)
@validated(_TABLE)
def hardt_roth(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "replace_one",
    row_norm: float = 1.0,
    calibration: Calibration = "tight",
    on_norm_violation: NormViolation = "clip",
    row_change: float | None = None,
    algorithm: Algorithm | None = None,
    range_finder: RangeFinder | None = None,
    power: PowerIteration | None = None,
    singular_values: SingularValues = "shrink",
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Hardt–Roth private low-rank approximation under row-level neighbours.

    **algorithm="power"** (default; STOC 2013): ``X_0`` random orthonormal n x p (p = ``block``, default
    ``min(n, 10 k)``); for j = 1..T (``iterations``, default 3): ``Y_j = A^T (A X_j) + N_j``,
    ``X_{j+1} = orth(Y_j)``; V = the top-k left singular vectors of ``Y_T``; ``S_i = sqrt(lambda_i)``
    with ``lambda_i`` the spiked-model estimate of the i-th eigenvalue of ``A^T A`` from ``Y_T``'s
    singular values (0 below the noise edge, :func:`.shrink.signal_singular_values`). Budget shares of
    the Gaussian budget 1:2:6 (``1/s^2``). Returns a :class:`.power.RowSubspaceResult`: V and S, no U
    (``reconstruct(A)`` is the data owner's ``A V V^T``).

    **algorithm="range_finder"** (STOC 2012, the baseline of Upadhyay's experiments, spec §9; chosen
    automatically with ``row_change`` or ``calibration="paper"``): ``ell = k + p`` (capped at
    ``min(m, n)``).

    1. Range finder: ``Y = A Omega + N1`` (m x ell), ``Omega`` (n x ell) i.i.d. ``N(0, 1/ell)``;
       ``Q = orth(Y)``.
    2. Pruning: ``Q~_i = Q_i min(1, tau / ||Q_i||)`` with ``tau = min(1, c sqrt(ell / m))`` (the
       incoherence level of an ell-dimensional subspace; c = ``prune``).
    3. Projection: ``B = Q~^T A + N2`` (ell x n).
    4. Output: the rank-k SVD of ``Q B``: with ``B = U_B diag(s) V^T`` (top k), ``U = Q U_B``.

    With ``singular_values="shrink"`` (default) S is the Frobenius-optimal shrinkage of B's singular
    values (:func:`.shrink.frobenius_shrink`, noise sigma2 on an ell x n release; 0 below the noise
    edge), so the reconstruction is never worse than the zero matrix in the zero-signal limit;
    ``"raw"`` keeps B's singular values (the paper's).

    Parameters
    ----------
    A : array-like or sparse matrix of shape (m, n)
        The private matrix, one record per row; never modified.
    k : int
        Rank in [1, min(m, n)].
    epsilon, delta : float
        The target; delta in (0, 1).
    relation : {"replace_one"}
        Row-level neighbours only (see Privacy).
    row_norm : float
        Public bound C on each row's Euclidean norm; rows above it are scaled down to it (or rejected
        with ``on_norm_violation="raise"``). A replaced row moves by at most ``2 C``.
    calibration : {"tight", "paper"}
        See :func:`hardt_roth_noise`.
    on_norm_violation : {"clip", "raise"}
    row_change : float, optional
        Public bound b on the norm of the change of the one differing row (``A' = A + e_i w^T``,
        ``||w|| <= b``). When given, the rows are not clipped (no bound on the rows themselves is needed,
        see Privacy) and ``row_norm`` is ignored; Upadhyay's unit row change is ``row_change=1``. Default:
        ``b = 2 row_norm`` for rows clipped to ``row_norm``. Implies ``algorithm="range_finder"``.
    algorithm : {"power", "range_finder"}, optional
        Default ``"power"`` (STOC 2013, V and S only), or ``"range_finder"`` (STOC 2012, U, S, V) when
        ``row_change`` or ``calibration="paper"`` is given.
    range_finder : RangeFinder, optional
        The range finder's constants: oversampling p, pruning constant c, stage share and sketch
        failure share (:class:`~dpspectral.lowrank.RangeFinder`; its defaults if not given).
    power : PowerIteration, optional
        The power iteration's constants: block width p and iterations T
        (:class:`~dpspectral.lowrank.PowerIteration`; its defaults if not given).
    singular_values : {"shrink", "raw"}
        Range finder: shrink B's singular values by the noise edge (default) or keep them (the paper's).
    accountant : Accountant, optional
        Ledger (relation ``"replace_one"``) spent before any noise is drawn.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: draws Omega and the noise. ``"secure"``: OS entropy and exact discrete Gaussian noise.

    Returns
    -------
    RowSubspaceResult or LowRankResult
        ``algorithm="power"``: a :class:`~dpspectral.lowrank._subspace.RowSubspaceResult`, V (n, k) and
        S (k,), U None (``reconstruct(A)`` is the data owner's ``A V V^T``); diagnostics ``algorithm``,
        ``block``, ``iterations``, ``shares``, ``sigma`` (per iteration), ``sensitivity``.
        ``algorithm="range_finder"``: U (m, k), S (k,), V (n, k); diagnostics ``ell``, ``oversampling``,
        ``tau``, ``sigma1``, ``sigma2``, ``sensitivity1``, ``sensitivity2``, ``singular_values``,
        ``rows_pruned`` (a function of the released Y).

    Raises
    ------
    ValueError
        For an invalid parameter or matrix (not finite, a row over ``row_norm`` with
        ``on_norm_violation="raise"``, ``k`` above ``min(m, n)``), before anything is charged.
    BudgetExceededError
        If the release would exceed the accountant's ceiling (nothing is drawn).

    Privacy
    -------
    ``algorithm="power"``: relation ``Relation.REPLACE_ONE``, rows clipped to C. Each iteration
    releases ``A^T A X_j + N_j`` with ``X_j`` orthonormal and a function of earlier releases only;
    replacing row x by y changes it by ``(x x^T - y y^T) X_j``, of Frobenius norm at most
    ``||x x^T - y y^T||_F ||X_j||_2 <= sqrt(2) C^2``. T Gaussian mechanisms composed adaptively
    (Gaussian DP: exact, ``sum s_j^-2 = s^-2`` for the analytic multiplier s of (epsilon, delta)).
    ``row_change`` is not supported (an unclipped row moves ``x x^T`` without bound). Each release is
    widened for the rounding of the computed ``A^T (A X_j)`` (``m`` rows of norm <= C, ``X_j`` n x p
    orthonormal: ``h = m + n``, ``T = C^2 sqrt(p)``), the events unchanged.

    ``algorithm="range_finder"``: relation row-level, ``Relation.REPLACE_ONE`` on the rows of A (Upadhyay's
    Priv1 with ``u = e_i``): ``A' = A + e_i w^T`` with both rows of norm <= C, so ``||w|| <= b = 2 C``
    (clipping is per row, so neighbours stay neighbours); or, with ``row_change=b``, any rows whose one
    differing row moves by at most b (neither stage below needs a bound on the rows themselves): a weaker
    relation, ``row_change`` (two arbitrary rows are not protected), reported as such in the notes
    (``Relation.ROW_CHANGE`` once it exists). Omega is secret (from ``random_state``, never released). The
    whole matrix is validated before the ledger is charged.

    * Stage 1: ``||e_i w^T Omega||_F = ||Omega^T w||``, and ``Omega^T w`` has i.i.d. ``N(0, ||w||^2/ell)``
      entries for the data-independent Omega, so ``||Omega^T w||^2 <= q_ell ||w||^2`` except with
      probability delta_s (exact chi-square quantile :func:`chi2_quantile_factor`, at most the
      Laurent–Massart ``c_ell``): sensitivity ``b sqrt(q_ell)`` per pair, failure recorded as
      ``EpsilonDeltaDpEvent(0, delta_s)``.
    * Stage 2 (given the released Y, hence Q~): ``||Q~^T e_i w^T||_F = ||Q~_i|| ||w|| <= tau b``,
      exactly, because every pruned row has norm <= tau. With the rows clipped, widened for the rounding
      of the computed ``Q~^T A`` (``h = m + 1``, ``T = tau C``); stage 1 (``Omega`` secret) and unclipped
      rows have no public bound on the rounding (``docs/noise.md``).

    Two Gaussian mechanisms composed adaptively (Gaussian DP: exact), plus the sketch failure. This
    is **not** Priv1-private at this noise: for ``A' = A + u w^T`` with a general unit u, stage 2's
    sensitivity is ``||Q~^T u|| ||w||``, up to ``||Q~||_2 ~ 1`` instead of tau (spec §9), so
    ``relation`` accepts only ``"replace_one"``.
    """
    rf = RangeFinder() if range_finder is None else range_finder
    pw = PowerIteration() if power is None else power
    check_params(_FIELDS_TABLE, {f"{group}.{field.name}": getattr(value, field.name)
                                 for group, value in (("range_finder", rf), ("power", pw))
                                 for field in dataclasses.fields(value)}, _OWNER)
    return run(_HardtRoth(), _HRInputs(
        k, epsilon, delta, relation, row_norm, rf.oversampling, rf.prune, calibration, rf.stage_share,
        rf.failure_share, on_norm_violation, row_change, algorithm, pw.block, pw.iterations, singular_values,
    ), A, RunSettings(accountant, random_state))


def _algorithm(algorithm: Algorithm | None, row_change: float | None, calibration: str) -> Algorithm:
    """The default: the power iteration, unless the paper's settings (``row_change`` or
    ``calibration="paper"``) ask for the STOC 2012 range finder; ``power`` with ``row_change`` refused."""
    if algorithm is None:
        return "range_finder" if (row_change is not None or calibration == "paper") else "power"
    if algorithm == "power" and (row_change is not None or calibration == "paper"):
        raise ValueError(
            f"{_OWNER}: algorithm='power' needs rows clipped to row_norm (replace-one, sensitivity "
            "sqrt(2) C^2) and calibration='tight'; row_change and calibration='paper' are the range "
            "finder's (algorithm='range_finder')."
        )
    return algorithm


def _check_relation(relation: Any) -> Relation:
    """Row-level neighbours only (a relation the method supports: its reason in the message)."""
    rel = as_relation(relation, owner=_OWNER)
    if rel is not Relation.REPLACE_ONE:
        raise ValueError(
            f"The 'relation' parameter of {_OWNER} must be 'replace_one' (row-level neighbours: one row "
            f"changes). Got {rel.value!r} instead: Hardt-Roth is not Priv1/Priv2-private at this noise "
            "(stage 2's sensitivity under a general u is ||Q~^T u|| ~ 1, not the pruning level tau)."
        )
    return rel


def _range_plan(C: float, hr: HardtRothNoise, rel: Relation, row_change: bool, rows: int) -> ReleasePlan:
    """The range finder's release plan: the two stages, under row_change's relation when it is given.

    With the rows clipped to C, stage 2 is widened for the rounding of the computed ``Q~^T A``: a sum
    over the ``rows`` rows (public) of ``q~_i a_i^T``, each a product of norm at most ``tau C`` (``tau``
    times ``1 + 1e-6`` for the rounding of the pruning), ``h = rows + 1`` plus the product
    (:func:`~dpspectral.privacy._rounding.widen_release`). Stage 1's ``A Omega`` has no public bound
    (``Omega`` is secret and Gaussian), and under ``row_change`` the rows have none: not widened.
    """
    notes = list(hr.notes)
    rel_out: Relation = rel
    if row_change:
        rel_out = ROW_CHANGE_RELATION or rel
        notes.append(
            f"Relation row_change (not 'replace_one'): one row changes by a vector of norm <= {2 * C:g}; "
            "rows are not clipped, so replacing a row by an arbitrary one is NOT protected."
        )
    notes.append("Omega is secret (drawn from random_state, never released): keep random_state secret.")
    plan = hr.plan(_OWNER, rel_out, tuple(notes))
    if row_change:
        return plan
    stage1, stage2 = plan.releases
    stage2 = widen_release(stage2, n=rows, relation=rel, kind="products",
                           term_bound=hr.tau * C * (1.0 + 1e-6))
    return dataclasses.replace(plan, releases=(stage1, stage2))


def _two_stages(A_c: Any, ell: int, tau: float,
                releaser: Releaser) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inside the release block: stage 1 (``Y = A Omega + N1``, ``Q = orth(Y)``), pruning, stage 2.

    Returns ``Q``, the mask of pruned rows (a function of the released Y) and ``B = Q~^T A + N2``.
    """
    m, n = A_c.shape
    Omega = (releaser.standard_normal((ell, n)) / math.sqrt(ell)).T  # n x ell, N(0, 1/ell); secret
    Y = releaser.add("range", _dense(A_c @ Omega))
    Q = orth_columns(Y)
    norms = np.linalg.norm(Q, axis=1)
    over = norms > tau
    scale = np.ones(m)
    scale[over] = tau / norms[over]
    Q_pruned = Q * scale[:, None]
    B = releaser.add("projection", _dense(A_c.T @ Q_pruned).T)
    return Q, over, B


# ----------------------------------------------------------------------------------------------
# Hardt-Roth as the release template runs it
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HRInputs:
    """The public inputs of :func:`hardt_roth`."""

    k: int
    epsilon: float
    delta: float
    relation: Relation | str
    row_norm: float
    oversampling: int | None
    prune: float
    calibration: Calibration
    stage_share: float
    sketch_failure_share: float
    on_norm_violation: NormViolation
    row_change: float | None
    algorithm: Algorithm | None
    block: int | None
    iterations: int
    singular_values: str


@dataclass(frozen=True, eq=False)
class _HRChecked:
    """The checked inputs: the budget, the relation, the bound C, the matrix (finite), the algorithm's
    sizes (``p`` and the shares, or ``ell`` and the two stages' noise) and the plan."""

    inputs: _HRInputs
    budget: PrivacyBudget
    relation: Relation
    calibration: str
    algorithm: Algorithm
    C: float
    A: Any
    k: int
    size: int  # the power iteration's block p, or the range finder's ell
    shares: tuple[float, ...]
    noise: HardtRothNoise | None
    release_plan: ReleasePlan


class _HardtRoth(Mechanism[_HRInputs, LowRankResult]):
    """Hardt-Roth: the power iteration's T releases, or the range finder's two stages, in one charge."""

    label = _OWNER
    stacklevel = 6  # frames above run: hardt_roth, the parameter check, the two option folds, the caller

    def check(self, inputs: _HRInputs, X: Any) -> _HRChecked:
        budget = check_budget(inputs.epsilon, inputs.delta, _OWNER)
        rel = _check_relation(inputs.relation)
        algo = _algorithm(inputs.algorithm, inputs.row_change, inputs.calibration)
        row_change = inputs.row_change
        # b = 2 C: the largest change of one row
        C = check_row_norm(inputs.row_norm, _OWNER) if row_change is None else float(row_change) / 2.0
        A = check_matrix(X, _OWNER)  # the whole matrix (finite), before anything is charged
        m, n = A.shape
        k = check_rank(inputs.k, m, n, _OWNER)
        if algo == "power":
            p = min(n, max(k, default_block(k, n) if inputs.block is None else int(inputs.block)))
            shares = default_shares(int(inputs.iterations))
            notes = ("Releases V and S only (no U): A V is the data owner's local computation.",)
            return _HRChecked(inputs, budget, rel, "tight", algo, C, A, k, p, shares, None,
                              power_plan(budget, rel, C, shares, _OWNER, notes, shape=(m, n), block=p))
        ell = min(k + (k if inputs.oversampling is None else int(inputs.oversampling)), m, n)
        hr = hardt_roth_noise(budget.epsilon, budget.delta, ell, m, row_norm=C, prune=inputs.prune,
                              calibration=inputs.calibration, stage_share=inputs.stage_share,
                              sketch_failure_share=inputs.sketch_failure_share, owner=_OWNER)
        return _HRChecked(inputs, budget, rel, inputs.calibration, algo, C, A, k, ell, (), hr,
                          _range_plan(C, hr, rel, row_change is not None, m))

    def plan(self, inputs: _HRChecked, n: int | None, d: int | None) -> ReleasePlan:
        return inputs.release_plan

    def read(self, inputs: _HRChecked, X: Any) -> UncountedMatrix:
        """The rows clipped to C (``on_norm_violation="raise"``: a row over it is refused here, before
        the charge); under ``row_change`` the rows as given."""
        if inputs.inputs.row_change is not None:
            return UncountedMatrix(inputs.A)
        clipped, _ = clip_rows(inputs.A, inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,
                               copy=True, owner=_OWNER)
        return UncountedMatrix(clipped)

    def report_facts(self, inputs: _HRChecked) -> dict[str, Any]:
        return {"mechanism": _OWNER, "budget": inputs.budget, "calibration": inputs.calibration}

    def statistic(self, inputs: _HRChecked, rows: UncountedMatrix, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        first = plan.releases[0].name
        if inputs.algorithm == "power":
            k, p = inputs.k, inputs.size
            return {first: Drawn(lambda releaser: power_iterate(rows.B, k, p, plan, releaser))}
        assert inputs.noise is not None
        tau = inputs.noise.tau
        return {first: Drawn(lambda releaser: _two_stages(rows.B, inputs.size, tau, releaser))}

    def post_process(self, inputs: _HRChecked, rows: UncountedMatrix, released: Released,
                     report: Any) -> LowRankResult:
        plan = released.plan
        if inputs.algorithm == "power":
            V, y, sigma = released[plan.releases[0].name]
            p = inputs.size
            power_diag = {"algorithm": "power", "block": p, "iterations": int(inputs.inputs.iterations),
                    "shares": inputs.shares, "sigma": tuple(r.scale for r in plan.releases),
                    "sensitivity": plan.releases[0].sensitivity}
            return power_result(V, y, sigma, p, report, power_diag)
        hr, ell, k = inputs.noise, inputs.size, inputs.k
        assert hr is not None
        Q, over, B = released["range"]
        singular_values = inputs.inputs.singular_values
        U_B, s, V = svd_top_k(B, k)  # post-processing of the released B and Q
        if singular_values == "shrink":
            s = frobenius_shrink(s, plan["projection"].scale, ell, int(inputs.A.shape[1]))
        U, s, V = finish(Q @ U_B, s, V)
        diag: dict[str, Any] = {
            "algorithm": "range_finder", "ell": ell, "oversampling": ell - k, "tau": hr.tau,
            "sigma1": hr.sigma1, "sigma2": plan["projection"].scale, "singular_values": singular_values,
            "sensitivity1": hr.sensitivity1, "sensitivity2": hr.sensitivity2,
            "rows_pruned": int(np.count_nonzero(over)),  # a function of the released Y
        }
        return LowRankResult(U=U, S=s, V=V, privacy=report, diagnostics=diag)
