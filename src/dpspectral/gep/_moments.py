"""Fisher discriminant and LDA from ONE private release of the clipped rows' moments.

Sufficient-statistics perturbation: the rows are clipped to the public bound C, and three statistics
are released once, with the Gaussian mechanism, in one plan (:func:`moments_plan`):

* ``second``: the second moment ``S = sum_i x_i x_i^T`` (symmetric noise of the "goe" shape: the
  mechanism runs on ``iso(S)``, the diagonal and sqrt(2) x the entries above it, whose norm is
  ``||S||_F``; off-diagonal noise ``sigma_S / sqrt(2)``; see docs/algorithms/covariance.md);
* ``sums``: the class sums ``T_c = sum_{y_i = c} x_i`` (a K x d matrix, K = number of public classes);
* ``counts``: the class counts ``n_c`` (K numbers).

By default (``adaptive_clip=True``) the rows are clipped at a *released* clip ``r <= C`` instead of at
C: a noisy histogram of the row norms is released first (``clip_share`` of the budget, 0.02) and ``r``
post-processed from it by the balance rule (:mod:`dpspectral.privacy._adaptive`, with the second
moment's noise spectral norm per unit ``r^2``); the three statistics are then those of the rows clipped
at ``r``, with noise ``r^2``, ``r`` and 1 times smaller than at C per unit multiplier. Under a loose
public bound this is what keeps the classifier useful (``docs/algorithms/gep.md``, "Adaptive
clipping"); rows at the bound keep ``r = C`` (1 % more noise for the histogram's share).

Everything else is post-processing of the released values (:func:`fisher_from_moments`,
:func:`lda_from_moments`): floored counts, class means, the within-class scatter
``B = S - sum_c n_c mu_c mu_c^T`` projected onto the PSD cone, the between-class scatter
``A = sum_c n_c (mu_c - mu)(mu_c - mu)^T``, and the generalized eigenproblem
``A v = lambda (B + r I) v`` whose ridge ``r = ridge * sigma_S * sqrt(d)`` is a public function of the
noise scale (``sigma_S sqrt(d)`` is about half the spectral norm of S's noise).

Privacy
-------
A record is a row and its label; labels lie in the public ``classes``; rows are clipped per row to
``||x|| <= C`` (a per-record map), so every sensitivity below is over clipped rows.

*Replace-one* (``(x, a)`` replaced by ``(x', b)``; n is public, the class counts are not):

* ``dS = x' x'^T - x x^T``: ``||dS||_F^2 = ||x||^4 + ||x'||^4 - 2 (x . x')^2 <= 2 C^4``, so
  ``||dS||_F <= sqrt(2) C^2``; the released ``iso(dS)`` has L2 norm exactly ``||dS||_F``.
* ``dT``: if ``a = b``, only ``T_a`` moves, by ``x' - x``, of norm ``<= 2 C`` (``x' = -x``); if
  ``a != b``, ``T_a`` loses x and ``T_b`` gains x': ``sqrt(||x||^2 + ||x'||^2) <= sqrt(2) C``. Hence
  ``||dT||_F <= 2 C`` (the same-class case is the worst).
* ``dn``: 0 if ``a = b``, else one count -1 and another +1: ``||dn||_2 <= sqrt(2)``.

*Add/remove* (``(x, a)`` added or removed; n and the counts are private):
``||dS||_F = ||x||^2 <= C^2``, ``||dT||_F = ||x|| <= C``, ``||dn||_2 = 1``.

*One event.* With per-part sensitivities ``D_i`` and noise ``sigma_i = s D_i / sqrt(w_i)`` (shares
``w_i`` summing to 1, raised by a relative 1e-12 for rounding), the whole release is one Gaussian
mechanism on the concatenation ``(S / sigma_S, T / sigma_T, n / sigma_n)`` with unit noise and L2
sensitivity at most ``sqrt(sum_i w_i D_i^2 / (s^2 D_i^2)) <= 1 / s``: exactly one
``GaussianDpEvent(s)``, with ``s`` the analytic Gaussian multiplier of (epsilon, delta). (The bound adds
the parts' worst cases; the worst cases of S and T do not occur on the same pair, so it is not tight.)

*Adaptive clipping (the default).* Two Gaussian releases, both declared and checked against the ledger
before the first (:class:`~dpspectral.privacy._pipeline.StagedRelease`): the norm histogram, whose count
vector moves by ``sqrt(2)`` (replace-one: one unit between two bins) or ``1`` (add/remove), with
multiplier ``s / sqrt(h)`` (``h = clip_share``); then the moments with multiplier ``s / sqrt(1 - h)``
(raised by 1e-12) split by the shares as above. The clip ``r`` is a function of the histogram's release
only, hence public for the second release, and every row is clipped at ``r`` before it is used, so the
sensitivities above hold with C replaced by ``r`` (the plan is restated at ``r``: the same multipliers,
scales times ``(r / C)^2``, ``r / C`` and 1). By Gaussian DP the two compose adaptively to
``1 / s^2 (h + (1 - h)) = 1 / s^2``: exactly the budget of one ``GaussianDpEvent(s)``. The report
carries both events.

*Without public classes* (``classes=None``) the label set is released first, in the same run
(:mod:`dpspectral.gep._labels`): a Gaussian stability histogram of the labels present (counts of L2
sensitivity ``sqrt(2)`` replace-one, 1 add/remove; share 0.05 of ``1 / s^2``), a threshold that a label
of one record passes with probability at most ``delta_L / 2`` (replace-one) or ``delta_L`` (add/remove),
``delta_L = 0.1 delta``, charged as ``EpsilonDeltaDpEvent(0, delta_L)``; every Gaussian stage (label
counts, norm histogram, moments) is then calibrated together to ``(epsilon, delta - delta_L)``. The rows
of a label not kept are left out before the moments (a per-row map of the released set: a replace-one
pair stays one or becomes an add/remove pair, whose sensitivities above are smaller), and n is then
private: the released counts replace it. Three stages, all declared up front.

Refusals (a label outside ``classes``, NaN, a row over the bound with ``on_norm_violation="raise"``,
bad public parameters) happen before the charge and are about the input's domain, never about one
in-domain record: a public class with no rows, or one row, or a single class present, is not an error.
With ``classes=None``, fewer than 2 labels kept (or k above the number kept minus one) fails after the
label stage, a decision on released values (the label stage stays charged).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._constraints import NONE, PRIVACY_PARAMETERS, SHARE, Constraint, Interval, Types, check_params, without
from .._linalg import fix_signs
from .._moments import accumulate, grouped_summation, sum_in_groups
from .._options import ADAPTIVE_CLIP, AdaptiveClip, clip_fields, folded
from .._rows import as_numeric_2d
from ..privacy._accounting import Accountant, PrivacyReport
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, at_released_clip, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation, as_relation
from ..privacy._clipping import check_row_norm, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan
from ..privacy._quantile import norm_histogram
from ..privacy._rounding import Kind, widen_release
from ..privacy._template import MatrixRows, Mechanism, Released, RunSettings, Symmetric, run
from ._common import message_owner
from ._labels import LABEL_COUNTS, LabelRelease, plan_label_release
from ._result import GEPResult
from ._scatter import _clip, _labels, check_classes

__all__ = [
    "DEFAULT_RIDGE",
    "DEFAULT_SHARES",
    "MOMENTS_TABLE",
    "FisherFromMoments",
    "LDAFromMoments",
    "ReleasedMoments",
    "fisher_from_moments",
    "fisher_result",
    "lda_from_moments",
    "moments_fda",
    "moments_pair_solver",
    "moments_plan",
    "moments_sensitivity",
    "moments_stages",
    "prepare_moments",
    "release_moments",
]

#: The registry name of the method.
MOMENTS = "moments"
#: Default ridge, in units of the public noise scale ``sigma_S sqrt(d)`` (measured on four data sets:
#: ``docs/algorithms/gep.md``, "The moments release").
DEFAULT_RIDGE = 1.0
#: Default shares of the Gaussian-DP budget (of ``1 / s^2``): (second moment, class sums, class counts).
DEFAULT_SHARES: tuple[float, float, float] = (0.5, 0.4, 0.1)
_PARTS = ("second", "sums", "counts")


class _Shares(Constraint):
    """Three positive budget shares summing to 1 (second moment, class sums, class counts)."""

    description = "three positive floats summing to 1 (second moment, class sums, class counts)"

    def accepts(self, value: Any) -> bool:
        try:
            w = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return False
        return bool(w.shape == (3,) and np.all(np.isfinite(w)) and np.all(w > 0)
                    and math.isclose(float(w.sum()), 1.0, rel_tol=1e-9))


#: The public parameters of :func:`release_moments` / :func:`moments_fda` (the bounds that depend on
#: the data's shape, k <= n_classes - 1, are checked next to their reason).
MOMENTS_TABLE: dict[str, Any] = {
    **without(PRIVACY_PARAMETERS, "row_norm"),  # row_norm: check_row_norm, whose message says why
    "ridge": Interval(0, None, "neither"),
    "budget_shares": _Shares(),
    "adaptive_clip": Types((bool, np.bool_), "a bool"),
    "clip_share": [NONE, SHARE],
}

#: How each part's sensitivity scales with the clip: ``r^2`` (second moment), ``r`` (sums), 1 (counts).
_CLIP_POWER = {"second": 2, "sums": 1, "counts": 0}


def moments_sensitivity(relation: Relation | str, row_norm: float) -> dict[str, float]:
    """L2 sensitivities of (second moment, class sums, class counts) for rows of norm <= ``row_norm``.

    Replace-one: ``(sqrt(2) C^2, 2 C, sqrt(2))``; add/remove: ``(C^2, C, 1)`` (module docstring).
    """
    rel = as_relation(relation)
    C = sensitivity_norm(row_norm)
    if rel is Relation.REPLACE_ONE:
        return {"second": math.sqrt(2.0) * C * C, "sums": 2.0 * C, "counts": math.sqrt(2.0)}
    if rel is Relation.ADD_REMOVE:
        return {"second": C * C, "sums": C, "counts": 1.0}
    raise ValueError(f"The moments release protects replace-one or add/remove neighbours. Got "
                     f"{rel.value!r}.")


def moments_plan(budget: PrivacyBudget, relation: Relation | str, row_norm: float,
                 shares: Any = DEFAULT_SHARES, clip_share: float | None = None,
                 label_share: float | None = None) -> ReleasePlan:
    """The one release of the moments, from public inputs only (epsilon, delta, relation, C, shares).

    One ``GaussianDpEvent(s)`` (s: the analytic multiplier of (epsilon, delta)) and three
    :class:`NoisyRelease` entries with ``scale = s / sqrt(w_i) * D_i`` (module docstring: the parts
    together are that one Gaussian mechanism). With ``clip_share`` (adaptive clipping) the norm histogram
    takes that share of ``1 / s^2`` first (:func:`~dpspectral.privacy._adaptive.plan_row_clip`: multiplier
    ``s / sqrt(clip_share)``) and the moments the rest: ``s`` becomes ``s / sqrt(1 - clip_share)``, so the
    two Gaussian events compose to exactly the budget's. With ``label_share`` (``classes=None``: the
    label set released first, :mod:`dpspectral.gep._labels`) that share is taken too (``budget`` is then
    the Gaussian stages' ``(epsilon, delta - delta_L)``).
    """
    rel = as_relation(relation)
    sens = moments_sensitivity(rel, row_norm)
    s = analytic_noise_multiplier(budget.epsilon, budget.delta)
    taken = (0.0 if clip_share is None else float(clip_share)) + (0.0 if label_share is None
                                                                  else float(label_share))
    if taken > 0:  # the earlier stages' shares first (Gaussian DP: an exact split)
        s = split_noise_multiplier(s, [taken, 1.0 - taken])[1]
    parts = split_noise_multiplier(s, [float(w) for w in shares])
    releases = tuple(NoisyRelease(name, "gaussian", m * sens[name], sens[name])
                     for name, m in zip(_PARTS, parts, strict=True))
    notes = (f"moments release: second moment, class sums and class counts of the rows clipped at "
             f"C={float(row_norm):g}, budget shares {tuple(float(w) for w in shares)}, one Gaussian "
             f"mechanism (multiplier {s:.6g}).",)
    return ReleasePlan(MOMENTS, rel, (dp_accounting.GaussianDpEvent(s),), releases, notes)


@dataclass(frozen=True)
class ReleasedMoments:
    """The released (noisy) moments of the clipped rows: every field is a release or a public input.

    Attributes
    ----------
    second : ndarray of shape (d, d)
        ``S + E`` (symmetric noise).
    sums : ndarray of shape (n_classes, d)
        Noisy class sums.
    counts : ndarray of shape (n_classes,)
        Noisy class counts (not floored; may be negative or fractional).
    classes : ndarray
        The public classes (or, with ``classes=None``, the labels kept by the private label release).
    row_norm : float
        The public bound C.
    relation : Relation
    n_samples : int or None
        n when public (replace-one with public classes); None under add/remove, and with
        ``classes=None`` (rows of a label not kept are left out, so the number used is private).
    noise_std : dict
        The noise standard deviation of each part (public: from the plan).
    privacy : PrivacyReport
    notes : tuple of str
    clip : float or None
        With adaptive clipping, the released clip ``r <= C`` the rows were clipped at (post-processing
        of the noisy norm histogram: public); None when the rows were clipped at C.
    histogram_noise_std : float or None
        The norm histogram's noise standard deviation (public; None without adaptive clipping).
    """

    second: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    classes: np.ndarray
    row_norm: float
    relation: Relation
    n_samples: int | None
    noise_std: dict[str, float]
    privacy: PrivacyReport
    notes: tuple[str, ...] = field(default_factory=tuple)
    clip: float | None = None
    histogram_noise_std: float | None = None

    @property
    def n_features(self) -> int:
        """d (public)."""
        return int(self.second.shape[0])

    @property
    def radius(self) -> float:
        """The norm the rows were clipped at: the released clip, or C (public either way)."""
        return self.row_norm if self.clip is None else self.clip

    def count_floor(self) -> float:
        """The public floor of the counts: ``max(1, sigma_T sqrt(d) / C)`` (C: :attr:`radius`).

        A class mean ``T_c / n_c`` of clipped rows has norm at most C; below this count the noise of
        the mean (about ``sigma_T sqrt(d) / n_c``) exceeds C, so a smaller released count is raised to
        it (the mean is shrunk towards 0). A public class with no rows gets this count and a mean that
        is noise of norm about C (the documented rule for unseen public classes).
        """
        return max(1.0, self.noise_std["sums"] * math.sqrt(self.n_features) / self.radius)

    def floored_counts(self) -> np.ndarray:
        """The released counts raised to :meth:`count_floor` (post-processing)."""
        return np.maximum(self.counts, self.count_floor())

    def total(self) -> float:
        """n when public (replace-one), else the sum of the floored released counts."""
        return float(self.n_samples) if self.n_samples is not None else float(self.floored_counts().sum())

    def means(self) -> np.ndarray:
        """Class means ``T_c / n_c`` (floored counts), projected onto the ball of radius :attr:`radius`."""
        mu = self.sums / self.floored_counts()[:, None]
        norms = np.linalg.norm(mu, axis=1)
        return mu * np.minimum(1.0, self.radius / np.maximum(norms, 1e-300))[:, None]

    def ridge_value(self, ridge: float) -> float:
        """The ridge added to the within-class scatter: ``ridge * sigma_S * sqrt(d)`` (public)."""
        return float(ridge) * self.noise_std["second"] * math.sqrt(self.n_features)


def _read_data(X: Any, y: Any, C: float, on_norm_violation: Any, classes: Any, rel: Relation,
               owner: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """Rows (float64, or CSR) and labels, validated whole before the charge; (X, class index, classes).

    The one validating pass over the rows (finite; within the bound with ``on_norm_violation="raise"``).
    Under replace-one n is public and must be >= 1; under add/remove an empty data set is a neighbour
    like any other and is accepted. No message names a row, a value or a label read from ``y``.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = as_numeric_2d(X, owner).astype(np.float64, copy=False)
    if X.shape[1] == 0 or (X.shape[0] == 0 and rel is Relation.REPLACE_ONE):
        raise ValueError(f"{owner}: the data are empty (shape {X.shape}); at least one column, and under "
                         "replace-one (n public) at least one row, are required.")
    if X.shape[0] > 0:
        accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=False, want_second=False,
                   owner=owner)
    idx, cls = _labels(y, X.shape[0], classes, owner)
    return X, np.asarray(idx, dtype=np.intp), cls

def _exact_moments(X: Any, idx: np.ndarray, n_classes: int, C: float,
                   owner: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(S, T, counts)`` of the rows clipped at C (private: released only with noise)."""
    n, d = X.shape
    if n == 0:
        return np.zeros((d, d)), np.zeros((n_classes, d)), np.zeros(n_classes)
    Xc = _clip(X, C)
    moments = accumulate(Xc, row_norm=C, on_norm_violation="clip", want_sum=False, want_second=True,
                         owner=owner)
    assert moments.second is not None
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), idx)), shape=(n, n_classes))

    def class_sums(a: int, b: int) -> tuple[np.ndarray]:
        piece = onehot[a:b].T @ Xc[a:b]
        return (np.asarray(piece.toarray() if sp.issparse(piece) else piece, dtype=np.float64),)

    (sums,) = sum_in_groups(n, d, class_sums, np.zeros((n_classes, d)))  # as accumulate sums X^T X
    counts = np.bincount(idx, minlength=n_classes).astype(np.float64)
    return moments.second, sums, counts


def release_moments(
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    classes: Any = None,
    relation: Relation | str = Relation.REPLACE_ONE,
    budget_shares: Any = DEFAULT_SHARES,
    calibration: str = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: str = "clip",
    adaptive_clip: bool = True,
    clip_share: float | None = None,
    owner: str = "release_moments",
) -> ReleasedMoments:
    """Release the second moment, class sums and class counts of the clipped rows, once.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Private rows; never modified.
    y : array-like of shape (n_samples,)
        Private labels, in the public ``classes``.
    epsilon, delta : float
        The target; delta in (0, 1).
    row_norm : float
        Public bound C; rows above it are clipped per row (or refused with ``on_norm_violation="raise"``).
    classes : array-like or None
        The public labels (at least 2). None: the label set is released privately first, in the same
        report (module docstring; rows of a label not kept are left out).
    relation : {"replace_one", "add_remove"}
    budget_shares : three floats summing to 1
        Shares of the Gaussian-DP budget for (second moment, class sums, class counts).
    calibration : {"tight"}
        The analytic Gaussian multiplier (there is no paper formula to reproduce: "paper" is refused).
    accountant, random_state, on_norm_violation
        As everywhere in the library.
    adaptive_clip : bool, default=True
        Clip the rows at a released clip ``r <= C`` instead of at C: a noisy histogram of the row norms
        is released first (``clip_share`` of the budget) and ``r`` post-processed from it by the balance
        rule (:mod:`dpspectral.privacy._adaptive`); the moments are then those of the rows clipped at
        ``r``, with the same noise multipliers times their sensitivities at ``r``. False: the one
        release at C.
    clip_share : float in (0, 1) or None
        The histogram's share of ``1 / s^2`` (None: 0.02). Ignored with ``adaptive_clip=False``.

    Returns
    -------
    ReleasedMoments

    Privacy
    -------
    One ``GaussianDpEvent`` for the relation asked (module docstring: sensitivities ``sqrt(2) C^2``,
    ``2 C``, ``sqrt(2)`` under replace-one; ``C^2``, ``C``, ``1`` under add/remove). With adaptive
    clipping (the default) two: ``GaussianDpEvent(s / sqrt(h))`` for the norm histogram (one row moves
    one count between bins: ``sqrt(2)`` replace-one, ``1`` add/remove) and ``GaussianDpEvent(s /
    sqrt(1 - h))`` for the moments at the released clip ``r`` (a function of the histogram only, so
    public for the second stage; every row is clipped at ``r`` before use, so the sensitivities hold
    with C replaced by ``r``); by Gaussian DP they compose to exactly one ``GaussianDpEvent(s)``. Both
    are declared and checked against the ledger before the first. With ``classes=None`` the label set's
    release comes first (module docstring: its Gaussian counts and ``EpsilonDeltaDpEvent(0, delta_L)``,
    the Gaussian stages sharing ``(epsilon, delta - delta_L)``). The whole input is validated before
    the charge; the refusals are about the input's domain.
    """
    prepared = prepare_moments(X, y, epsilon=epsilon, delta=delta, row_norm=row_norm, classes=classes,
                               relation=relation, budget_shares=budget_shares, calibration=calibration,
                               random_state=random_state, on_norm_violation=on_norm_violation,
                               adaptive_clip=adaptive_clip, clip_share=clip_share, owner=owner)
    return prepared.release(accountant, random_state)


def _noise_norm_per_clip2(plan: ReleasePlan, d: int) -> float:
    """``nu``: the second moment's noise spectral norm per unit ``r^2`` (public: multiplier, relation, d).

    At clip ``r`` the noise std is ``m D(r)`` with ``D(r) = c r^2`` (``c = sqrt(2)`` replace-one, 1
    add/remove); the "goe" shape's spectral norm is about ``sqrt(2 d)`` times it.
    """
    planned = plan["second"]
    per_r2 = planned.scale / (planned.sensitivity or 1.0) * moments_sensitivity(plan.relation, 1.0)["second"]
    return math.sqrt(2.0 * d) * per_r2


def moments_stages(budget: PrivacyBudget, relation: Relation, row_norm: float, shares: Any = DEFAULT_SHARES,
                   clip_share: float | None = None, *,
                   classes_public: bool = True) -> tuple[Any, Any, ReleasePlan, list[tuple[Any, ...]]]:
    """Every stage of a moments release, from public inputs only: ``(labels, clip, plan, stages)``.

    ``labels``: the label-set stage (``classes_public=False``) or None; ``clip``: the norm histogram's
    stage (``clip_share`` given: adaptive clipping) or None; ``plan``: the moments' plan at the public
    bound; ``stages``: the events of each stage, in order (what :class:`StagedRelease` declares).
    """
    labels = None if classes_public else plan_label_release(budget, relation)
    gaussian = budget if labels is None else labels.rest  # what the Gaussian stages share
    clip = None if clip_share is None else plan_row_clip(gaussian, relation, row_norm, clip_share)
    plan = moments_plan(gaussian, relation, row_norm, shares, clip_share,
                        None if labels is None else labels.share)
    stages = [*(() if labels is None else (labels.events,)), *(() if clip is None else ((clip.event,),)),
              tuple(plan.events)]
    return labels, clip, plan, stages


#: ``on_classes(classes, d, released)``: the checks that depend on the number of classes. Called once the
#: rows are read (before the charge: the public ``classes``, or None with ``classes=None``), and, with
#: ``classes=None``, again with the labels the label stage kept (``released=True``; that stage stays
#: charged if it refuses).
OnClasses = Callable[[Any, int, bool], None]


@dataclass(frozen=True)
class MomentsInputs:
    """The public inputs of a moments release (checked by the release, before anything is read).

    Attributes
    ----------
    epsilon, delta, row_norm, classes, relation, budget_shares, calibration, random_state,
    on_norm_violation, adaptive_clip, clip_share
        As :func:`release_moments` (``random_state`` only to check it: the run draws from it).
    owner : str
        The name in messages and the ledger.
    on_classes : callable or None
        The caller's checks that depend on the number of classes (:data:`OnClasses`).
    """

    epsilon: Any
    delta: Any
    row_norm: Any
    classes: Any = None
    relation: Any = Relation.REPLACE_ONE
    budget_shares: Any = DEFAULT_SHARES
    calibration: Any = "tight"
    random_state: Any = None
    on_norm_violation: Any = "clip"
    adaptive_clip: Any = True
    clip_share: Any = None
    owner: str = "release_moments"
    on_classes: OnClasses | None = None


@dataclass(frozen=True)
class _Labelled:
    """The private rows and their labels, read together by the moments release."""

    X: Any
    y: Any


@dataclass(frozen=True, eq=False)
class _Checked:
    inputs: MomentsInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    classes: np.ndarray | None  # the public classes, checked
    labels: LabelRelease | None  # classes=None: the label set's stage
    clip: RowClipPlan | None  # adaptive clipping: the norm histogram's stage
    moments: ReleasePlan  # the moments' plan at the bound C

    @property
    def owner(self) -> str:
        return self.inputs.owner


@dataclass(frozen=True, eq=False)
class _Read(MatrixRows):
    """What the validating pass read: the rows ``X`` (float64 or CSR), each row's class index, the classes."""

    index: np.ndarray
    classes: np.ndarray


class _Moments(Mechanism[MomentsInputs, ReleasedMoments]):
    """The moments release as the release template runs it: (``classes=None``) the label set, then
    (adaptive clipping) the norm histogram and the clip from it, then the three moments."""

    label = MOMENTS
    stacklevel = 3

    def check(self, inputs: MomentsInputs, X: Any) -> _Checked:
        owner = inputs.owner
        C = check_row_norm(inputs.row_norm, owner)
        checked = ("epsilon", "delta", "calibration", "random_state", "on_norm_violation", "budget_shares",
                   "adaptive_clip", "clip_share")
        check_params(MOMENTS_TABLE, {name: getattr(inputs, name) for name in checked}, owner)
        rel = _relation(inputs.relation, owner)
        if inputs.calibration != "tight":
            raise ValueError(f"The 'calibration' parameter of {owner} must be 'tight' for the moments "
                             f"release (no paper formula to reproduce). Got {inputs.calibration!r} instead.")
        budget = PrivacyBudget(float(inputs.epsilon), float(inputs.delta))
        budget.require_delta(owner)
        classes = None if inputs.classes is None else check_classes(inputs.classes, owner)
        share = ((DEFAULT_CLIP_SHARE if inputs.clip_share is None else float(inputs.clip_share))
                 if inputs.adaptive_clip else None)
        labels, clip, plan, _ = moments_stages(budget, rel, C, tuple(float(w) for w in inputs.budget_shares),
                                               share, classes_public=classes is not None)
        return _Checked(inputs, budget, rel, C, classes, labels, clip, plan)

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> ReleasePlan:
        """Every stage's releases and events, in order (the moments stated at the bound C)."""
        first = (() if inputs.labels is None else (inputs.labels,)) + (() if inputs.clip is None
                                                                       else (inputs.clip,))
        events = tuple(e for stage in first for e in _events_of(stage)) + inputs.moments.events
        releases = tuple(stage.release for stage in first) + _widened(inputs, inputs.moments, n, d).releases
        return ReleasePlan(MOMENTS, inputs.relation, events, releases, inputs.moments.notes)

    def is_staged(self, inputs: _Checked) -> bool:
        return inputs.labels is not None or inputs.clip is not None

    def stages(self, inputs: _Checked, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        return ((() if inputs.labels is None else ((LABEL_COUNTS,),))
                + (() if inputs.clip is None else (("norm_histogram",),)) + (_PARTS,))

    def stage_events(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...]) -> tuple[Any, ...]:
        if names == (LABEL_COUNTS,):
            assert inputs.labels is not None
            return inputs.labels.events  # the counts' Gaussian and the threshold's delta: one release
        if names == ("norm_histogram",):
            assert inputs.clip is not None
            return (inputs.clip.event,)
        return inputs.moments.events  # one Gaussian mechanism for the three parts

    def read(self, inputs: _Checked, X: _Labelled) -> _Read:
        owner = inputs.owner
        rows = _Read(*_read_data(X.X, X.y, inputs.C, inputs.inputs.on_norm_violation, inputs.inputs.classes,
                                 inputs.relation, owner))
        if inputs.inputs.on_classes is not None:  # before the charge
            inputs.inputs.on_classes(inputs.classes, rows.d, False)
        return rows

    def stage_plan(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        owner, rows = inputs.owner, released.rows
        if names == (LABEL_COUNTS,):
            assert inputs.labels is not None
            return inputs.labels.plan(owner)
        if inputs.labels is not None and "classes" not in released:
            _keep_labels(inputs, rows, released)  # a decision on the released set, outside any charge
        if names == ("norm_histogram",):
            assert inputs.clip is not None
            return inputs.clip.stage_plan(owner)
        stage = _widened(inputs, inputs.moments, rows.n, rows.d)
        if inputs.clip is not None:  # the same multipliers, the sensitivities at the released clip
            n_public = rows.n if inputs.relation.n_is_public else None
            share = inputs.inputs.clip_share
            share = DEFAULT_CLIP_SHARE if share is None else float(share)
            clip, stage = at_released_clip(inputs.clip, released["norm_histogram"], stage, _CLIP_POWER, share,
                                           n_public=n_public, d=rows.d,
                                           noise_per_clip2=_noise_norm_per_clip2(stage, rows.d))
            released["clip"] = clip
        if inputs.labels is not None:
            stage = ReleasePlan(stage.label, stage.relation, stage.events, stage.releases,
                                stage.notes + (inputs.labels.note(),))
        return stage

    def statistic(self, inputs: _Checked, rows: _Read, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        name = plan.releases[0].name
        if name == LABEL_COUNTS:
            assert inputs.labels is not None
            return {LABEL_COUNTS: inputs.labels.statistic(rows.classes, rows.index)}
        if name == "norm_histogram":
            assert inputs.clip is not None
            counts = norm_histogram(rows.X, inputs.clip.edges, center=None, owner=inputs.owner)
            return {"norm_histogram": counts}  # every row read, those of a label not kept too
        X, index, classes = rows.X, rows.index, released.get("classes", rows.classes)
        if inputs.labels is not None:  # the rows of a label not kept are left out
            index = released["index"]
            X, index = X[index >= 0], index[index >= 0]
        radius = released.get("clip", inputs.C)  # the released clip, or C without adaptive clipping
        S, T, counts = _exact_moments(X, index, int(classes.size), radius, inputs.owner)
        return {"second": Symmetric(S, "goe"), "sums": T, "counts": counts}  # off-diagonal noise / sqrt(2)

    def post_process(self, inputs: _Checked, rows: _Read, released: Released, report: Any) -> ReleasedMoments:
        plan = released.plan
        public_n = inputs.relation is Relation.REPLACE_ONE and inputs.labels is None  # else n private
        return ReleasedMoments(
            second=released["second"], sums=np.asarray(released["sums"], dtype=np.float64),
            counts=np.asarray(released["counts"], dtype=np.float64),
            classes=released.get("classes", rows.classes), row_norm=inputs.C, relation=inputs.relation,
            n_samples=rows.n if public_n else None, noise_std={name: plan[name].scale for name in _PARTS},
            privacy=report, notes=plan.notes, clip=released.get("clip"),
            histogram_noise_std=None if inputs.clip is None else inputs.clip.release.scale,
        )

    def report_facts(self, inputs: _Checked) -> dict[str, Any]:
        return {"mechanism": MOMENTS, "budget": inputs.budget, "calibration": "tight"}


def _widened(inputs: _Checked, plan: ReleasePlan, n: int | None, d: int | None) -> ReleasePlan:
    """The moments' releases widened for the rounding of their computed sums over the ``n`` rows of width
    ``d`` (:mod:`dpspectral.privacy._rounding`): ``X^T X`` (terms of norm ``C^2``), the class sums
    (``C``), both summed in groups (:func:`_exact_moments`), the counts (integers: exact). The events
    are unchanged."""
    C = sensitivity_norm(inputs.C)
    terms: dict[str, tuple[Kind, float]] = {"second": ("products", C * C), "sums": ("sums", C),
                                            "counts": ("counts", 1.0)}
    summation = grouped_summation(d)
    releases = tuple(widen_release(r, n=n, relation=inputs.relation, kind=terms[r.name][0],
                                   term_bound=terms[r.name][1], summation=summation) for r in plan.releases)
    return dataclasses.replace(plan, releases=releases)


def _events_of(stage: Any) -> tuple[Any, ...]:
    """A first stage's events: the label set's two, or the norm histogram's one."""
    return tuple(stage.events) if isinstance(stage, LabelRelease) else (stage.event,)


def _keep_labels(inputs: _Checked, rows: _Read, released: Released) -> None:
    """After the label stage: the labels kept, each row's index among them (-1: left out), the caller's
    checks. A refusal here is a decision on released values; the label stage stays charged."""
    assert inputs.labels is not None
    classes, index = inputs.labels.kept(released[LABEL_COUNTS], rows.classes, rows.index, inputs.owner)
    released["classes"], released["index"] = classes, index
    if inputs.inputs.on_classes is not None:
        inputs.inputs.on_classes(classes, rows.d, True)


@dataclass(frozen=True)
class PreparedMoments:
    """A moments release's public inputs and its private rows and labels, before anything is read.

    :meth:`release` runs it (every check, the charge, the draws) through the release template.
    """

    inputs: MomentsInputs
    X: Any
    y: Any

    def release(self, accountant: Accountant | None, random_state: Any,
                on_classes: OnClasses | None = None) -> ReleasedMoments:
        """Check, read, charge, then release the statistics (the plan is built from public inputs).

        Every stage is declared up front (refused before any draw). With ``classes=None`` stage one
        releases the label set (:mod:`dpspectral.gep._labels`) and the rows of a label not kept are left
        out; ``on_classes`` (:data:`OnClasses`) runs on the labels kept, before the other stages. With
        adaptive clipping the norm histogram and the clip ``r`` from it come next; last, the moments of
        the rows clipped at ``r`` (the plan restated at ``r``).
        """
        inputs = dataclasses.replace(self.inputs, random_state=random_state,
                                     on_classes=self.inputs.on_classes if on_classes is None else on_classes)
        return run(_Moments(), inputs, _Labelled(self.X, self.y), RunSettings(accountant, random_state))


def prepare_moments(X: Any, y: Any, *, epsilon: Any, delta: Any, row_norm: Any, classes: Any = None,
                    relation: Any = Relation.REPLACE_ONE, budget_shares: Any = DEFAULT_SHARES,
                    calibration: Any = "tight", random_state: Any = None, on_norm_violation: Any = "clip",
                    adaptive_clip: Any = True, clip_share: Any = None,
                    owner: str = "prepare_moments") -> PreparedMoments:
    """The moments release of ``X, y`` with these public parameters, ready to run (nothing read yet).

    The parameters are those of :func:`release_moments`; :meth:`PreparedMoments.release` checks them,
    then the whole input, before anything is charged.
    """
    return PreparedMoments(MomentsInputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, classes=classes, relation=relation,
        budget_shares=budget_shares, calibration=calibration, random_state=random_state,
        on_norm_violation=on_norm_violation, adaptive_clip=adaptive_clip, clip_share=clip_share, owner=owner,
    ), X, y)


def _relation(relation: Any, owner: str) -> Relation:
    try:
        rel = as_relation(relation)
    except (ValueError, TypeError):
        rel = None
    if rel not in (Relation.REPLACE_ONE, Relation.ADD_REMOVE):
        raise ValueError(f"The 'relation' parameter of {owner} must be 'replace_one' or 'add_remove' (the "
                         f"moments release protects either; a record is a row and its label). Got "
                         f"{relation!r} instead.")
    return rel


# ------------------------------------------------------------------------------------------------
# post-processing: within-class covariance, Fisher directions, the LDA classifier
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FisherFromMoments:
    """Post-processing of released moments: the Fisher directions and what they came from.

    ``vectors`` (d x k) are normalised so that ``v^T (Sigma_w + (r/n) I) v = 1`` with ``Sigma_w`` the
    released within-class covariance ``B / n`` (n: public, or the released total under add/remove).
    """

    vectors: np.ndarray
    values: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    covariance: np.ndarray
    ridge: float
    total: float


def _within(moments: ReleasedMoments, ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                            np.ndarray, float]:
    """(means, floored counts, eigenvalues and eigenvectors of the PSD-projected B, the ridge r)."""
    mu = moments.means()
    counts = moments.floored_counts()
    B = moments.second - (mu.T * counts) @ mu
    B = (B + B.T) / 2.0
    lam, Q = scipy.linalg.eigh(B, check_finite=False)
    lam = np.maximum(lam, 0.0)  # projection onto the PSD cone
    r = moments.ridge_value(ridge)
    # a numerical floor (post-processing of the released B) so that a vanishing ridge (epsilon -> inf)
    # on a singular B still gives a definite matrix
    r = max(r, 1e-12 * max(float(lam.max(initial=0.0)), 1e-300))
    return mu, counts, lam, Q, r


def fisher_from_moments(moments: ReleasedMoments, k: int, *,
                        ridge: float = DEFAULT_RIDGE) -> FisherFromMoments:
    """Top-k solutions of ``A v = lambda (B + r I) v`` from released moments (post-processing only).

    ``B = S - sum_c n_c mu_c mu_c^T`` projected onto the PSD cone; ``A = sum_c n_c (mu_c - mu)
    (mu_c - mu)^T`` with ``mu`` the count-weighted mean of the class means; floored counts and means
    projected onto the C-ball (:meth:`ReleasedMoments.means`); ``r = ridge sigma_S sqrt(d)``. A has
    rank at most n_classes - 1, so the problem is solved in that space: ``W = (B + r I)^{-1/2} M`` with
    ``A = M M^T``, whose left singular vectors give the directions.
    """
    mu, counts, lam, Q, r = _within(moments, ridge)
    total = moments.total()
    center = counts @ mu / counts.sum()
    M = (mu - center).T * np.sqrt(counts)  # d x K, A = M M^T
    inv_sqrt = 1.0 / np.sqrt(lam + r)
    W = inv_sqrt[:, None] * (Q.T @ M)
    U, sv, _ = np.linalg.svd(W, full_matrices=False)
    kk = min(k, U.shape[1])
    V = Q @ (inv_sqrt[:, None] * U[:, :kk])  # V^T (B + r I) V = I
    if kk < k:  # more directions than A's rank: complete with the next (B + r I)-orthonormal ones
        V = np.hstack([V, _complete(Q, inv_sqrt, U[:, :kk], k - kk)])
        sv = np.r_[sv[:kk], np.zeros(k - kk)]
    covariance = (Q * ((lam + r) / total)) @ Q.T
    return FisherFromMoments(vectors=fix_signs(V * math.sqrt(total)), values=sv[:k] ** 2, means=mu,
                             counts=counts, covariance=covariance, ridge=r, total=total)


def _complete(Q: np.ndarray, inv_sqrt: np.ndarray, U: np.ndarray, extra: int) -> np.ndarray:
    """``extra`` more whitened directions orthogonal to U's (eigenvalue 0: the order is arbitrary)."""
    d = Q.shape[0]
    basis = np.eye(d)[:, : U.shape[1] + extra]
    P = np.linalg.qr(np.hstack([U, basis]))[0][:, U.shape[1]: U.shape[1] + extra]
    return Q @ (inv_sqrt[:, None] * P)


@dataclass(frozen=True)
class LDAFromMoments:
    """The linear discriminant classifier of released moments (post-processing only).

    ``coef`` (K x d) and ``intercept`` (K,): the class scores ``x^T Sigma^{-1} mu_c - mu_c^T Sigma^{-1}
    mu_c / 2 + log pi_c`` with ``Sigma = (B + r I) / n`` and ``pi_c`` the floored released counts
    normalised.
    """

    coef: np.ndarray
    intercept: np.ndarray
    means: np.ndarray
    priors: np.ndarray
    covariance: np.ndarray
    ridge: float


def lda_from_moments(moments: ReleasedMoments, *, ridge: float = DEFAULT_RIDGE,
                     priors: np.ndarray | None = None) -> LDAFromMoments:
    """Linear discriminant analysis from released moments: class means, shared covariance, priors.

    ``priors`` (public, optional) replaces the priors from the released counts.
    """
    mu, counts, lam, Q, r = _within(moments, ridge)
    total = moments.total()
    pi = counts / counts.sum() if priors is None else np.asarray(priors, dtype=float)
    # Sigma^{-1} = Q diag(total / (lam + r)) Q^T
    coef = ((mu @ Q) * (total / (lam + r))) @ Q.T
    intercept = -0.5 * np.einsum("ij,ij->i", mu, coef) + np.log(pi)
    covariance = (Q * ((lam + r) / total)) @ Q.T
    return LDAFromMoments(coef=coef, intercept=intercept, means=mu, priors=pi, covariance=covariance,
                          ridge=r)


# ------------------------------------------------------------------------------------------------
# the registry's callables
# ------------------------------------------------------------------------------------------------


@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
def moments_fda(
    X: Any,
    y: Any,
    k: int,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    row_norm: float | None = None,
    relation: Relation | str = Relation.REPLACE_ONE,
    ridge: float = DEFAULT_RIDGE,
    budget_shares: Any = DEFAULT_SHARES,
    classes: Any = None,
    calibration: str = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: str = "clip",
    adaptive_clip: bool | AdaptiveClip = True,
) -> GEPResult:
    """Private Fisher discriminant directions by one release of the moments (registry: ``"moments"``).

    Parameters
    ----------
    X, y
        Private rows and labels.
    k : int
        Directions, in ``[1, n_classes - 1]`` (what scikit-learn's LDA allows; a larger k is refused).
    epsilon, delta, row_norm, relation, budget_shares, classes, calibration, accountant, random_state,
    on_norm_violation
        As :func:`release_moments`.
    adaptive_clip : bool or AdaptiveClip, default=True
        Adaptive clipping of the rows (the default), as ``adaptive_clip`` of :func:`release_moments`;
        ``AdaptiveClip(share=...)`` is its ``clip_share`` (the clip follows the balance rule, which
        takes no quantile).
    ridge : float
        > 0, in units of the public noise scale ``sigma_S sqrt(d)`` (default 1.0, measured on four data sets).

    Returns
    -------
    GEPResult
        ``vectors`` normalised in the released within-class covariance plus ridge; ``values`` the
        generalized eigenvalues; ``diagnostics`` the noise scales, the ridge and the count floor (and,
        with adaptive clipping, the released ``clip`` and ``histogram_noise_std``).

    Privacy
    -------
    That of :func:`release_moments` (a record is a row and its label; replace-one or add/remove): by
    default two Gaussian events, the norm histogram and the moments at the released clip, composing to
    the budget; with ``adaptive_clip=False`` one; with ``classes=None`` the label set's release first
    (k is then checked against the number of labels kept, after that stage). The directions are
    post-processing. Parameters are checked before the data are read.
    """
    owner = message_owner("moments_fda")  # private_fda's name when it calls this
    if epsilon is None or delta is None or row_norm is None:
        raise TypeError(f"{owner} needs epsilon, delta and row_norm (public privacy parameters; none has a "
                        "default).")
    check_params({"ridge": MOMENTS_TABLE["ridge"], "adaptive_clip": ADAPTIVE_CLIP},
                 {"ridge": ridge, "adaptive_clip": adaptive_clip}, owner)
    adaptive, _, clip_share = clip_fields(adaptive_clip, owner, takes_quantile=False)
    _check_k(k, None if classes is None else int(check_classes(classes, owner).size), owner)
    found: dict[str, int] = {}

    def on_classes(cls: Any, d: int, released: bool) -> None:
        # before the charge: k <= d, and k <= n_classes - 1 for public classes; with classes=None, once
        # the label set is released: k <= n_classes - 1 (a refusal then leaves that stage charged)
        found["k"] = _check_k(k, d + 1 if cls is None else min(int(cls.size), d + 1), owner, released)

    prepared = prepare_moments(X, y, epsilon=epsilon, delta=delta, row_norm=row_norm, classes=classes,
                               relation=relation, budget_shares=budget_shares, calibration=calibration,
                               random_state=random_state, on_norm_violation=on_norm_violation,
                               adaptive_clip=adaptive, clip_share=clip_share, owner=owner)
    moments = prepared.release(accountant, random_state, on_classes)
    return fisher_result(moments, found["k"], ridge)


def fisher_result(moments: ReleasedMoments, k: int, ridge: float) -> GEPResult:
    """The :class:`GEPResult` of :func:`fisher_from_moments` on released moments (post-processing)."""
    fisher = fisher_from_moments(moments, k, ridge=ridge)
    diagnostics: dict[str, Any] = {
        "noise_std": dict(moments.noise_std), "ridge": fisher.ridge, "ridge_units": ridge,
        "count_floor": moments.count_floor(), "relation": moments.relation.value}
    if moments.clip is not None:
        diagnostics["clip"] = moments.clip  # released (post-processing of the noisy norm histogram)
        diagnostics["histogram_noise_std"] = moments.histogram_noise_std
    return GEPResult(vectors=fisher.vectors, values=fisher.values, privacy=moments.privacy, method=MOMENTS,
                     diagnostics=diagnostics)


def _check_k(k: Any, n_classes: int | None, owner: str, released: bool = False) -> int:
    """k in ``[1, n_classes - 1]`` (scikit-learn's LDA refuses more, and more than n_features: the caller
    passes ``min(n_classes, n_features + 1)``); only the lower bound when unknown. ``released``: the
    number of classes is that of the private label release (``classes=None``), checked after it."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 or (
            n_classes is not None and k > n_classes - 1):
        bound = "inf)" if n_classes is None else f"n_classes - 1 = {n_classes - 1}]"
        where = (" n_classes is the number of labels the private label release kept (classes=None; "
                 "pass the public 'classes' to fix it before the fit), and the release stays charged."
                 if released else "")
        raise ValueError(f"The 'k' parameter of {owner} must be an int in [1, {bound} (Fisher "
                         f"discriminant analysis has at most n_classes - 1 directions).{where} Got {k!r} "
                         "instead.")
    return int(k)


def moments_pair_solver(pair: Any, k: int, **kwargs: Any) -> GEPResult:
    """The registry's ``solver`` slot of ``"moments"``: it cannot run on a pair, and says so.

    The moments method releases the rows' moments, not a scatter pair: call
    :func:`~dpspectral.gep.private_fda` or :class:`~dpspectral.DPFisherDiscriminant` with
    ``method="moments"``.
    """
    raise ValueError("method='moments' releases the moments of the labelled rows, not a scatter pair: "
                     "use private_fda(X, y, k, method='moments', ...) or DPFisherDiscriminant(method="
                     "'moments'). Nothing was charged.")
