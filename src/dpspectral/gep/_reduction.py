"""Simultaneous reduction: SR (non-private), SR+DP, DPSR (Algorithm 2) and DPSRS (Algorithm 3).

Paper: Chen, Huang, Lee, Chen, Tsai, "On the Privacy-preserving Generalized Eigenvalue Problem"
(``../shared/papers/003_*.txt``); specification and corrections: ``spec-pca-gep.md`` §B.8.

Simultaneous reduction (Algorithm 1, Martin and Wilkinson 1968) solves ``A v = lambda B v``: with
``B = Phi_B Lambda_B Phi_B^T`` and ``Phi~ = Phi_B (Lambda_B + xi I)^{-1/2}`` (regularised, Friedman 1989),
the top eigenvectors ``Phi_A`` of ``A~ = Phi~^T A Phi~`` give the generalized eigenvectors ``Phi~ Phi_A``
of the pair ``(A, B + xi I)``.

DPSR replaces both eigendecompositions by noisy projected gradient ascent (``m`` steps each):
``V <- Orthonormalize(V + eta (2 M V + Z))`` with ``M = B`` (phase 1) and ``M = A~`` (phase 2), Z
i.i.d. Gaussian. Every noisy gradient ``2 M V + Z`` is a release; everything else is post-processing.

What we changed, and why (spec §B.8)
------------------------------------
* **Lambda_B leaked.** The paper's step 5 computes ``Lambda_B = diag(V_m^T B V_m)`` from the true B and
  uses it in the output (and in A~). Here it is released with Gaussian noise (sensitivity
  ``min(||dB||_F, sqrt(k1) ||dB||_2)``), clamped at 0, and charged to the budget (``budget_shares[1]``,
  10% by default). With ``budget_shares[1] = 0`` it is instead read off the last released gradient,
  ``diag(V_{m-1}^T G_m) / 2`` (post-processing, free, noisier).
* **Full basis.** With ``V_0`` of k columns, ``Phi~`` spans only B's top-k eigenspace, while the
  reduction needs all of B's directions (the small within-class directions matter most for FDA). The
  first phase runs on ``k1 = basis_size`` columns, by default all d (the Frobenius sensitivity of
  ``2 B V`` does not grow with k1 beyond 2).
* **Constants.** ``C1``, ``C2`` are left unspecified by the paper; the derived ones are in
  :mod:`dpspectral.gep._scatter` (``C1 = 8 min(sqrt 2, sqrt k1) C^2``, ``C2 = 16 min(sqrt 2, sqrt k) C^2``
  for FDA). The phase-2 noise is scaled to the released ``||Phi~||_2^2 = 1 / min(Lambda^_B + xi)``
  (at most the paper's ``1/xi``).

Calibration
-----------
``"tight"`` (default): one Gaussian-DP budget (the analytic Gaussian multiplier for (epsilon, delta),
exact under the Gaussian-DP accountant, which dominates the zCDP and RDP bounds) split exactly over
phase 1, the Lambda_B release and phase 2 by ``budget_shares``. ``"paper"``: Theorem 12's
``sigma_1 = 2 C1 c sqrt(m) / (n eps)``, ``sigma_2 = 2 C2 c sqrt(m) / (n eps xi)`` with
``c = sqrt(2 ln(1.25 m / delta))`` (``calibration=PaperCalibration(formula="algorithm2")``: Algorithm 2's
``2 C sqrt(m ln(1.25/delta)) / (n eps)``), the Lambda_B release at phase 1's per-step multiplier; the
accountant certifies what that gives (:class:`~dpspectral.UncertifiedPrivacyWarning` if it is not the
requested epsilon, e.g. with ``calibration=PaperCalibration(constants=(4, 8))``, reading C1 as the
sensitivity of n B).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.linalg

from .._constraints import EPSILON, SHARE, Calibration, Constraint, Interval, Options, check_params, renamed
from .._linalg import fix_signs, orthonormalize, top_k_eigh
from .._options import folded, folded_choice
from .._progress import progress
from .._validation import gaussian_budget
from ..privacy._accounting import Accountant
from ..privacy._budget import PrivacyBudget
from ..privacy._gaussian import analytic_noise_multiplier, classic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import widened
from ..privacy._template import After, Drawn, Released, Symmetric
from ._common import (
    NOISE_RIDGE,
    POSITIVE,
    REGULARIZATION_PAPER_NAME,
    SOLVER_TABLE,
    CheckedPair,
    NamedPairMechanism,
    PairCall,
    PairMechanism,
    PairRows,
    check_int,
    check_pair,
    check_positive,
    check_regularization,
    input_perturbation_plan,
    message_owner,
    noise_ridge,
    normalize_released,
    orthonormalize_fast,
    random_orthonormal,
    run_on_pair,
    tight_pair_multipliers,
    truncate_columns,
    with_constraints,
)
from ._groups import CALIBRATION_OR_PAPER, PaperCalibration, StepSizes, group_fields
from ._pair_rounding import pair_rounding
from ._result import GEPResult
from ._scatter import ScatterPair

__all__ = [
    "DEFAULT_BUDGET_SHARES",
    "DPSR_TABLE",
    "SR_DP_TABLE",
    "dpsr",
    "dpsrs",
    "paper_noise_scales",
    "regularized_reduction",
    "simultaneous_reduction",
    "sr_dp",
]

PaperFormula = Literal["theorem12", "algorithm2"]

#: Default split of the Gaussian-DP budget of DPSR: (phase 1, the Lambda_B release, phase 2).
DEFAULT_BUDGET_SHARES: tuple[float, float, float] = (0.45, 0.10, 0.45)


# ------------------------------------------------------------------------------------------------
# Algorithm 1 (non-private) and the regularised reduction shared by SR+DP
# ------------------------------------------------------------------------------------------------


def _square(M: Any, name: str, owner: str) -> np.ndarray:
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"The '{name}' parameter of {owner} must be a non-empty square matrix. Got "
                         f"shape {M.shape}.")
    if not np.isfinite(M).all():
        raise ValueError(f"The '{name}' parameter of {owner} contains NaN or infinity.")
    scale = float(np.max(np.abs(M)))
    if float(np.max(np.abs(M - M.T))) > 1e-10 * max(scale, np.finfo(float).tiny):
        raise ValueError(f"The '{name}' parameter of {owner} must be symmetric.")
    return (M + M.T) / 2.0


@renamed(REGULARIZATION_PAPER_NAME)
def regularized_reduction(B: np.ndarray, regularization: float, *,
                          clamp: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(Phi~, lam)``: ``Phi~ = Phi_B (lam + xi)^{-1/2}`` from the eigendecomposition of B.

    ``regularization`` (xi in the paper; the old name ``xi`` still works, with a FutureWarning) is added
    to B's eigenvalues. ``clamp=True`` replaces negative eigenvalues (of a noisy B) by 0 first
    (post-processing).
    """
    xi = regularization
    lam, Phi = scipy.linalg.eigh(B, check_finite=False)
    lam = lam[::-1]
    Phi = Phi[:, ::-1]
    if clamp:
        lam = np.maximum(lam, 0.0)
    return Phi / np.sqrt(lam + xi), lam


@renamed(REGULARIZATION_PAPER_NAME)
def simultaneous_reduction(A: Any, B: Any, k: int | None = None, *, regularization: float = 0.0) -> GEPResult:
    """Top-k generalized eigenpairs of ``(A, B + xi I)`` by simultaneous reduction (Algorithm 1).

    Not private: the exact solver, the utility ceiling of the private ones.

    Parameters
    ----------
    A, B : array-like of shape (d, d)
        Symmetric; ``B + xi I`` positive definite.
    k : int or None
        Number of eigenpairs (None: all d).
    regularization : float
        ``regularization`` (xi in the paper) ``>= 0``, added to B's eigenvalues (paper's Step 6). The
        old name ``xi`` still works, with a FutureWarning.

    Returns
    -------
    GEPResult
        ``vectors`` with ``vectors.T @ (B + xi I) @ vectors = I``, ``values`` descending (equal to
        ``scipy.linalg.eigh(A, B + xi I)`` up to order and sign), ``privacy=None``.

    Privacy
    -------
    None: the exact answer on the private matrices.
    """
    owner = message_owner("simultaneous_reduction")
    xi = check_regularization(regularization, owner, allow_zero=True)
    A_ = _square(A, "A", owner)
    B_ = _square(B, "B", owner)
    if A_.shape != B_.shape:
        raise ValueError(f"A and B of {owner} must have the same shape. Got {A_.shape} and {B_.shape}.")
    d = A_.shape[0]
    k = d if k is None else check_int(k, "k", 1, d, owner)
    lam, Phi = scipy.linalg.eigh(B_, check_finite=False)
    if not lam[0] + xi > 0:
        raise ValueError(
            f"The 'B' parameter of {owner} is not positive definite after regularisation: B + xi I "
            f"(xi={xi:g}) must be positive definite. (Its eigenvalues are not reported: they are facts "
            "about the private data.)"
        )
    Phit = Phi[:, ::-1] / np.sqrt(lam[::-1] + xi)
    At = Phit.T @ A_ @ Phit
    values, U = top_k_eigh((At + At.T) / 2.0, k)
    return GEPResult(vectors=fix_signs(Phit @ U), values=values, privacy=None, method="sr",
                     whitening=Phit, diagnostics={"xi": xi})


# ------------------------------------------------------------------------------------------------
# SR+DP (the paper's ablation): Gaussian noise on A and B, then SR
# ------------------------------------------------------------------------------------------------

#: The parameters of :func:`sr_dp` (k <= d and regularization > 0 are checked next to their reasons).
SR_DP_TABLE: dict[str, Any] = {**SOLVER_TABLE, "a_share": SHARE}


def _sr_dp_plan(pair: ScatterPair, budget: PrivacyBudget, calibration: str, a_share: float) -> ReleasePlan:
    """The releases of SR+DP from public inputs: A (and B unless public), their multipliers and notes."""
    notes: list[str] = list(pair.notes)
    public_b = pair.b_is_public
    if calibration == "tight":
        s_a, s_b = tight_pair_multipliers(budget, public_b, a_share)
    else:
        if public_b:
            s_a, s_b = classic_noise_multiplier(budget.epsilon, budget.delta), math.inf
        else:
            s_a = s_b = classic_noise_multiplier(budget.epsilon / 2, budget.delta / 2)
        notes.append("SR+DP calibration='paper' is RECONSTRUCTED (the paper states no formula): the "
                     "classic Gaussian mechanism at (epsilon/2, delta/2) for each of A and B.")
    return input_perturbation_plan("sr_dp", pair, (s_a, s_b), notes)


@renamed(REGULARIZATION_PAPER_NAME)
@with_constraints(SR_DP_TABLE)
def sr_dp(
    pair: ScatterPair,
    k: int,
    *,
    epsilon: float,
    delta: float,
    regularization: float | str = "noise",
    a_share: float = 0.5,
    calibration: Calibration = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> GEPResult:
    """SR+DP: release ``A + E_A`` and ``B + E_B`` (symmetric Gaussian noise), then simultaneous reduction.

    Parameters
    ----------
    pair : ScatterPair
        From :func:`fda_pair`, :func:`pca_pair` or :func:`symmetric_definite_pair`.
    k : int
        Number of generalized eigenvectors, in [1, d].
    epsilon, delta : float
        Target (epsilon, delta); delta in (0, 1).
    regularization : "noise" or float
        The ridge r added to the released B after its projection onto the PSD cone: the reduction uses
        ``max(Lambda^_B, 0) + r``. ``"noise"`` (default): ``r = 2 ||E_A||_2 = 4 sigma_A sqrt(d)``, twice
        the spectral norm of the noise on A, a public function of the planned noise
        (:func:`~dpspectral.gep._common.noise_ridge`). A float > 0: that ridge (xi in the paper, which
        uses 0.01; the old name ``xi`` still works, with a FutureWarning).
    a_share : float
        Share of the Gaussian-DP budget (of ``1/s^2``) spent on A (tight calibration), in (0, 1).
    calibration : {"tight", "paper"}
        ``"tight"``: the analytic Gaussian multiplier split exactly between A and B. ``"paper"``: the
        paper gives no formula for its ablation; RECONSTRUCTED as the classic Gaussian mechanism
        (its Lemma 7) at (epsilon/2, delta/2) for each matrix, composed by its Lemma 4; certified by
        the accountant.
    accountant : Accountant, optional
        Spent before any noise is drawn; refused if over its ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the noise (``"secure"``: OS entropy and exact samplers).

    Returns
    -------
    GEPResult
        ``vectors`` normalised in the released ``B^ = max(., 0) + xi I``; ``values`` the top
        eigenvalues of the released reduced matrix.

    Privacy
    -------
    Relation: the pair's (replace-one for the builders). Releases: the upper triangles of ``A + E_A``
    and ``B + E_B``, with L2 sensitivities ``||dA||_F``, ``||dB||_F`` (a symmetric matrix's upper
    triangle has L2 norm at most its Frobenius norm). Events: ``GaussianDpEvent(s_A)``,
    ``GaussianDpEvent(s_B)`` (none for a public B). The reduction is post-processing, the ridge
    included: ``"noise"`` computes it from the planned noise scale (public inputs), never from the data.
    For a pair built from rows the noise is widened for the rounding of the computed A and B (``n`` and
    ``C`` public; :mod:`dpspectral.gep._pair_rounding`), the events unchanged.
    """
    return run_on_pair(_SrDp(), _SrDpInputs(k, epsilon, delta, regularization, a_share, calibration,
                                            random_state), pair, accountant, random_state)


@dataclass(frozen=True)
class _SrDpInputs:
    """The public inputs of one SR+DP run, as the caller gave them."""

    k: Any
    epsilon: Any
    delta: Any
    regularization: Any
    a_share: Any
    calibration: Any
    random_state: Any


@dataclass(frozen=True, eq=False)
class _SrDpChecked:
    """The checked public inputs of SR+DP (``xi`` is ``"noise"`` until the plan gives the noise scale)."""

    pair: ScatterPair
    budget: PrivacyBudget
    calibration: str
    k: int
    a_share: float
    regularization: Any
    xi: float | str
    d: int
    n: None = None


class _SrDp(PairMechanism):
    """SR+DP as the release template runs it: A (and B unless public) released, then the reduction."""

    label = "sr_dp"
    stacklevel = 3

    def check(self, inputs: _SrDpInputs, X: Any) -> _SrDpChecked:
        owner = message_owner("sr_dp")
        pair = check_pair(X, owner)
        budget = gaussian_budget(SR_DP_TABLE, dict(epsilon=inputs.epsilon, delta=inputs.delta,
                                                       a_share=inputs.a_share, calibration=inputs.calibration,
                                                       random_state=inputs.random_state), owner)
        xi = check_regularization(inputs.regularization, owner)
        k = check_int(inputs.k, "k", 1, pair.n_features, owner)
        return _SrDpChecked(pair, budget, inputs.calibration, k, inputs.a_share, inputs.regularization, xi,
                            pair.n_features)

    def plan(self, inputs: _SrDpChecked, n: int | None, d: int | None) -> ReleasePlan:
        return _sr_dp_plan(inputs.pair, inputs.budget, inputs.calibration, inputs.a_share)

    def statistic(self, inputs: _SrDpChecked, rows: PairRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        pair = rows.pair
        return {"A": Symmetric(pair.A), **({} if pair.b_is_public else {"B": Symmetric(pair.B)})}

    def post_process(self, inputs: _SrDpChecked, rows: PairRows, released: Released,
                     report: Any) -> GEPResult:
        """The reduction of the released pair (the ridge from the planned noise scale: public)."""
        plan, pair = released.plan, inputs.pair
        xi = noise_ridge(plan["A"].scale, inputs.d) if inputs.xi == NOISE_RIDGE else float(inputs.xi)
        B_hat = pair.B if pair.b_is_public else released["B"]  # a public B (the identity) is not released
        vectors, values, Phit = _reduce(released["A"], B_hat, xi, inputs.k)
        std_b = 0.0 if pair.b_is_public else plan["B"].scale
        s_b = math.inf if pair.b_is_public else _multiplier(plan, 1)
        return GEPResult(
            vectors=vectors, values=values, privacy=report, method=self.label, whitening=Phit,
            diagnostics={"noise_std_A": plan["A"].scale, "noise_std_B": std_b,
                         "noise_multiplier_A": _multiplier(plan), "noise_multiplier_B": s_b, "xi": xi,
                         "regularization": inputs.regularization},
        )


def _multiplier(plan: ReleasePlan, index: int = 0) -> float:
    """The Gaussian multiplier of the plan's ``index``-th event (as charged)."""
    event = plan.events[index]
    assert isinstance(event, dp_accounting.GaussianDpEvent)
    return float(event.noise_multiplier)


def _reduce(A_hat: np.ndarray, B_hat: np.ndarray, xi: float, k: int) -> tuple[np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """Simultaneous reduction of a released pair: ``(vectors, values, Phi~)`` (post-processing)."""
    Phit, _ = regularized_reduction(B_hat, xi, clamp=True)
    At = Phit.T @ A_hat @ Phit
    values, U = top_k_eigh((At + At.T) / 2.0, k)
    return fix_signs(Phit @ U), values, Phit


# ------------------------------------------------------------------------------------------------
# DPSR / DPSRS
# ------------------------------------------------------------------------------------------------


@renamed(REGULARIZATION_PAPER_NAME)
def paper_noise_scales(
    epsilon: float,
    delta: float,
    n_iter: int,
    regularization: float,
    gradient_sensitivity_b: float,
    gradient_sensitivity_a: float,
    formula: PaperFormula = "theorem12",
) -> tuple[float, float]:
    """The paper's ``(sigma_1, sigma_2)`` for gradient sensitivities ``C1/n`` and ``C2/n``.

    ``"theorem12"``: ``sigma_1 = 2 (C1/n) c sqrt(m) / eps``, ``sigma_2 = 2 (C2/n) c sqrt(m) / (eps xi)``,
    ``c = sqrt(2 ln(1.25 m / delta))``. ``"algorithm2"``: ``c sqrt(m)`` replaced by
    ``sqrt(m ln(1.25 / delta))`` (as printed in Algorithm 2; smaller noise). ``regularization`` is xi in
    the paper (the old name ``xi`` still works, with a FutureWarning).

    Privacy
    -------
    None by itself: a public formula (no data). :func:`dpsr` with ``calibration="paper"`` uses it and
    lets the accountant certify what it gives.
    """
    check_params({"epsilon": EPSILON, "delta": Interval(0, 1, "neither")},
                 {"epsilon": epsilon, "delta": delta}, "paper_noise_scales")
    m, xi = n_iter, regularization
    if formula == "theorem12":
        factor = math.sqrt(2.0 * math.log(1.25 * m / delta)) * math.sqrt(m)
    else:
        factor = math.sqrt(m * math.log(1.25 / delta))
    return (2.0 * gradient_sensitivity_b * factor / epsilon,
            2.0 * gradient_sensitivity_a * factor / (epsilon * xi))


class BudgetShares(Constraint):
    """DPSR's ``budget_shares``: three floats, the two phases > 0, the Lambda_B release >= 0, sum 1."""

    description = ("three floats (phase 1, Lambda_B, phase 2), the phases > 0, Lambda_B >= 0, summing "
                   "to 1")

    def accepts(self, value: Any) -> bool:
        """True for three numbers with the phases > 0, Lambda_B >= 0 and a sum of 1."""
        try:
            w = tuple(float(x) for x in value)
        except (TypeError, ValueError):
            return False
        return len(w) == 3 and w[0] > 0 and w[2] > 0 and w[1] >= 0 and math.isclose(sum(w), 1.0,
                                                                                    rel_tol=1e-9)


#: The parameters of :func:`dpsr` and :func:`dpsrs` (the bounds that depend on the pair, ``k``,
#: ``sparsity`` and ``basis_size`` within ``d``, the shape of ``init`` and ``regularization > 0`` are checked
#: next to their reasons).
DPSR_TABLE: dict[str, Any] = {
    **SOLVER_TABLE,
    "n_iter": Interval(1, None, "left", integer=True),
    "step_sizes.phase1": POSITIVE,
    "step_sizes.phase2": [POSITIVE, Options(("auto",))],
    "budget_shares": BudgetShares(),
    "calibration": CALIBRATION_OR_PAPER,
    "calibration.formula": Options(("theorem12", "algorithm2")),
}


#: DPSR's keywords that became fields of its option groups (still accepted, with a FutureWarning): the
#: paper's symbols of the step sizes, their descriptive names, and the paper calibration's options (now
#: ``calibration=PaperCalibration(...)``, as the ``paper_calibration`` group before it).
_PAPER_STEPS = {"eta_b": "phase1", "eta_a": "phase2"}
_STEPS = {"step_size_b": "phase1", "step_size_a": "phase2"}
_PAPER_OPTIONS = {"paper_formula": "formula", "paper_constants": "constants"}


def _check_paper_calibration(value: Any, name: str) -> None:
    """The checks of the old ``paper_calibration`` keyword, as the solver made them: a PaperCalibration
    or None, with a known formula (refused even where ``calibration="tight"`` does not read it)."""
    owner = message_owner(name)
    check_params({"paper_calibration.formula": DPSR_TABLE["calibration.formula"]},
                 group_fields(value, PaperCalibration, "paper_calibration", owner), owner)


#: ``paper_calibration=`` (and its older ``paper_formula=``, ``paper_constants=``) as
#: ``calibration=PaperCalibration(...)``, with a FutureWarning.
_paper_folded = folded_choice("calibration", "paper", PaperCalibration, "paper_calibration",
                              _PAPER_OPTIONS, _check_paper_calibration)


@dataclass(frozen=True)
class _DpsrInputs:
    """The checked public inputs of one DPSR/DPSRS run."""

    budget: PrivacyBudget
    k: int
    k1: int
    sparsity: int | None
    m: int
    xi: float
    eta_b: float
    eta_a: float
    shares: tuple[float, float, float]
    V0: np.ndarray | None
    noise_ridge: bool = False
    auto_eta: bool = False


@dataclass(frozen=True)
class _DpsrScales:
    """The plan's multipliers and sensitivities (public), and the reduction of a public B."""

    s1: float
    s_lam: float
    s2: float
    delta1: float
    delta_lam: float
    delta2_base: float
    release_lam: bool
    adaptive_phase2: bool
    public: tuple[np.ndarray, np.ndarray] | None = None
    phase2_rounding: float = 0.0  # r of phase 2's widening for rounding (:mod:`._pair_rounding`)


def _noisy_phase(
    M: np.ndarray,
    V: np.ndarray,
    *,
    n_iter: int,
    eta: float,
    release: Callable[[np.ndarray], np.ndarray] | None,
    sparsity: int | None,
    desc: str,
    show_progress: bool | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m steps ``V <- Orth(V + eta (2 M V + Z))`` (and Truncate + Orth when sparse).

    ``release`` returns a gradient plus its planned noise (the release; :meth:`Releaser.add`), None
    when the phase has no noise. Returns the last iterate, the one before it, and the last released
    gradient.
    """
    prev = V
    G = np.zeros_like(V)
    for _ in progress(range(n_iter), total=n_iter, desc=desc, enabled=show_progress, min_total=50):
        G = 2.0 * (M @ V)
        if release is not None:
            G = release(G)  # the release
        prev = V
        V = orthonormalize_fast(V + eta * G)
        if sparsity is not None and sparsity < V.shape[0]:
            V = orthonormalize_fast(truncate_columns(V, sparsity))
    return V, prev, G


@folded("step_sizes", StepSizes, _PAPER_STEPS)
@folded("step_sizes", StepSizes, _STEPS)
@_paper_folded
@renamed(REGULARIZATION_PAPER_NAME)
@with_constraints(DPSR_TABLE)
def dpsr(
    pair: ScatterPair,
    k: int,
    *,
    epsilon: float,
    delta: float,
    regularization: float | str = "noise",
    n_iter: int = 15,
    step_sizes: StepSizes | None = None,
    basis_size: int | None = None,
    budget_shares: Sequence[float] = DEFAULT_BUDGET_SHARES,
    calibration: Calibration | PaperCalibration = "tight",
    init: np.ndarray | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> GEPResult:
    """DPSR (Chen et al., Algorithm 2): simultaneous reduction with noisy gradient steps in both phases.

    Phase 1 (m = ``n_iter`` steps) on ``J1(V) = tr(V^T B V)`` from a random orthonormal d x k1 start:
    ``V <- QR(V + eta_B (2 B V + Z))`` (``eta_B``: ``step_sizes.phase1``); then ``Lambda^_B`` (released,
    see the module docstring), ``Phi~ = V (Lambda^_B + xi I)^{-1/2}``, ``A~ = Phi~^T A Phi~``; phase 2
    (m steps) on ``tr(V'^T A~ V')`` from a random orthonormal k1 x k start; the answer is ``Phi~ V'_m``.

    Parameters
    ----------
    pair : ScatterPair
        From :func:`fda_pair`, :func:`pca_pair` or :func:`symmetric_definite_pair`.
    k : int
        Number of generalized eigenvectors, in [1, d].
    epsilon, delta : float
        Target (epsilon, delta); delta in (0, 1).
    regularization : "noise" or float
        The ridge xi added to the released ``Lambda^_B`` (clamped at 0 first); the phase-2 sensitivity
        grows like ``1/xi``. ``"noise"`` (default): ``xi = 2 sigma_u sqrt(d)`` with
        ``sigma_u = s2 Delta_2`` the phase-2 gradient noise at unit whitening, a public function of the
        plan (the noise of A, as :func:`sr_dp`'s ``"noise"``). A float > 0: that ratio (the paper uses
        0.01). The old name ``xi`` still works, with a FutureWarning.
    n_iter : int
        Steps per phase m >= 1 (the paper uses 15; noise grows like sqrt(m)).
    step_sizes : StepSizes or None
        eta_B and eta_A, the steps of phase 1 (on B) and phase 2 (on the reduced A)
        (:class:`~dpspectral.gep.StepSizes`; None: 1 and ``"auto"``).
    basis_size : int or None
        k1, the number of columns of phase 1, in [k, d]; None (default) is d, the full basis the
        reduction needs (spec §B.8).
    budget_shares : three floats
        Tight calibration: shares of the Gaussian-DP budget for (phase 1, the Lambda_B release,
        phase 2); the phases > 0, Lambda_B >= 0 (0: read Lambda_B off the last released gradient
        instead of releasing it). Only whether ``budget_shares[1] > 0`` matters for ``"paper"``.
    calibration : {"tight", "paper"} or PaperCalibration, default="tight"
        ``"tight"``: noise calibrated by the accountant to (epsilon, delta). ``"paper"``: the paper's
        printed noise scale (Theorem 12's, with the derived constants), reported as the accountant
        certifies it. A :class:`~dpspectral.gep.PaperCalibration`: ``"paper"`` with that formula and
        those constants. See the module docstring. The keyword ``paper_calibration`` (with
        ``calibration="paper"``) still works for one release, with a FutureWarning.
    init : ndarray of shape (d, k1), optional
        Public starting basis of phase 1 (orthonormalised); never derived from the data. Default: a
        random orthonormal one from ``random_state``.
    accountant : Accountant, optional
        The run is refused before any noise is drawn if it would exceed the ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the noise and the random starts (``"secure"``: OS entropy and exact samplers).
    show_progress : bool or None

    Returns
    -------
    GEPResult
        ``vectors`` (d, k), B^-normalised (``B^ = V diag(Lambda^_B) V^T + xi I``), ordered by
        ``values`` = ``diag(V'_{m-1}^T G'_m) / 2`` (the last released phase-2 gradient's Rayleigh
        quotients); ``whitening`` = ``Phi~``; diagnostics with every noise scale and multiplier.

    Privacy
    -------
    Relation: the pair's (replace-one, the label part of the record, for :func:`fda_pair`). Releases:
    m noisy gradients ``2 B V_{t-1} + Z_t`` (Frobenius sensitivity
    ``Delta_1 = 2 min(||dB||_F, sqrt(k1) ||dB||_2)``, V orthonormal and public), the noisy
    ``diag(V_m^T B V_m)`` (sensitivity ``min(||dB||_F, sqrt(k1) ||dB||_2)``), and m noisy gradients
    ``2 A~ V'_{t-1} + Z'_t`` (sensitivity ``2 ||Phi~||_2^2 min(||dA||_F, sqrt(k) ||dA||_2)`` with
    ``Phi~`` released, ``||Phi~||_2^2 <= 1/xi``). Every iterate is a function of earlier releases and a
    data-independent start, so the releases compose adaptively. xi and ``step_sizes.phase2="auto"`` are
    functions of the plan's public noise scales and released quantities (``"noise"``), never of the data.
    For a pair built from rows each release is widened for the rounding of its computed statistic (the
    pair, then the products with the public ``V``, ``Phi~``, ``V'``; :mod:`dpspectral.gep._pair_rounding`).
    Events:
    ``SelfComposedDpEvent(GaussianDpEvent(s1), m)``, ``GaussianDpEvent(s_Lambda)``,
    ``SelfComposedDpEvent(GaussianDpEvent(s2), m)`` (phase 1 and Lambda_B omitted for a public B,
    e.g. PCA, where ``Phi~ = I / sqrt(1 + xi)`` exactly).
    """
    return _Dpsr.solve("dpsr", **locals())  # every parameter as given


@folded("step_sizes", StepSizes, _PAPER_STEPS)
@folded("step_sizes", StepSizes, _STEPS)
@_paper_folded
@renamed(REGULARIZATION_PAPER_NAME)
@with_constraints(DPSR_TABLE)
def dpsrs(
    pair: ScatterPair,
    k: int,
    sparsity: int,
    *,
    epsilon: float,
    delta: float,
    regularization: float | str = "noise",
    n_iter: int = 15,
    step_sizes: StepSizes | None = None,
    basis_size: int | None = None,
    budget_shares: Sequence[float] = DEFAULT_BUDGET_SHARES,
    calibration: Calibration | PaperCalibration = "tight",
    init: np.ndarray | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> GEPResult:
    """DPSRS (Chen et al., Algorithm 3): DPSR with truncation to ``s`` non-zeros after every step.

    Each step is ``V <- QR(Truncate(QR(V + eta (2 M V + Z)), s))``, in both phases (phase 2 keeps
    ``min(s, k1)`` entries of its k1-dimensional columns). For k > 1 the final QR mixes the truncated
    columns, and ``Phi~ V'`` mixes the columns of ``Phi~``, so the paper's output is not s-sparse
    itself: the returned vectors are truncated once more to ``s`` non-zeros per column and rescaled to
    unit ``B^``-norm (post-processing). Every parameter is as in :func:`dpsr`, plus:

    Parameters
    ----------
    sparsity : int
        s, the number of non-zeros per output column, in [1, d].

    Returns
    -------
    GEPResult
        ``vectors`` with at most ``sparsity`` non-zeros per column.

    Privacy
    -------
    As :func:`dpsr`: truncation and orthonormalisation are post-processing of the released
    gradients (Theorem 13); the sensitivities hold because the iterates stay orthonormal.
    """
    return _Dpsr.solve("dpsrs", **locals())  # every parameter as given


@dataclass(frozen=True, eq=False)
class _DpsrChecked(CheckedPair):
    """The checked public inputs of one run, with its plan and the plan's scales (public)."""

    scales: _DpsrScales


class _Dpsr(NamedPairMechanism):
    """DPSR/DPSRS as the release template runs it: phase 1's m noisy gradients, the Lambda_B release,
    then phase 2's m noisy gradients on the reduced A (one charge; phase 2 at the released bound)."""

    def check(self, inputs: PairCall, X: Any) -> _DpsrChecked:
        owner = message_owner(self.label)
        calibration = inputs.params["calibration"]
        paper = calibration if isinstance(calibration, PaperCalibration) else None
        params = {**inputs.params,  # the groups' fields by their dotted names, as the table has them
                  **group_fields(inputs.params["step_sizes"], StepSizes, "step_sizes", owner),
                  **group_fields(paper, PaperCalibration, "calibration", owner)}
        pair, checked = _dpsr_inputs(owner, X, inputs.k, inputs.sparsity, params)
        if paper is not None:  # checked by the table: "paper" with these settings
            params["calibration"] = "paper"
        checked = _dpsr_ridge(self.label, pair, checked, params, owner)
        plan, scales = _dpsr_plan(self.label, pair, checked, params, owner)
        return _DpsrChecked(pair, checked, plan, params["calibration"], pair.n_features, scales=scales)

    def statistic(self, inputs: _DpsrChecked, rows: PairRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        """Phase 1 (B private), the Lambda_B release, phase 2: each drawn in order, by name."""
        pair, c, desc = rows.pair, inputs, self.label

        def phase_two(whitening: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Drawn:
            return Drawn(lambda r: _phase_two(desc, pair, c.inputs, c.scales, whitening, r,
                                              self.show_progress))

        if c.scales.public is not None:  # B public: its exact reduction, no release
            Phit, lam = c.scales.public
            return {"phase2": phase_two((Phit * np.sqrt(lam + c.inputs.xi), lam, Phit))}
        out: dict[str, Any] = {
            "phase1": Drawn(lambda r: _phase_one(desc, pair, c.inputs, r, self.show_progress))}
        if c.scales.release_lam:  # diag(V_m^T B V_m), released
            out["lambda"] = After(lambda rel: np.einsum("ij,ij->j", rel["phase1"][0],
                                                        pair.B @ rel["phase1"][0]))
        out["phase2"] = After(lambda rel: phase_two(_whitening(c.inputs, c.scales, rel)))
        return out

    def post_process(self, inputs: _DpsrChecked, rows: PairRows, released: Released,
                     report: Any) -> GEPResult:
        """The generalized eigenvectors ``Phi~ V'`` ordered by the last phase-2 release (released values)."""
        out = released["phase2"]
        values = np.einsum("ij,ij->j", out["prev"], out["G"]) / 2.0  # post-processing of the last release
        order = np.argsort(values)[::-1]
        basis, lam, Phit = out["whitening"]
        vectors = Phit @ out["V"][:, order]
        if inputs.inputs.sparsity is not None:
            vectors = normalize_released(truncate_columns(vectors, inputs.inputs.sparsity), basis, lam,
                                         inputs.inputs.xi)
        out = {**out, "lam": lam}
        return GEPResult(vectors=fix_signs(vectors), values=values[order], privacy=report, method=self.label,
                         whitening=Phit, diagnostics=_dpsr_diagnostics(released.plan, inputs.inputs,
                                                                       inputs.scales, out))


def _dpsr_inputs(owner: str, pair: Any, k: Any, sparsity: Any,
                 params: dict[str, Any]) -> tuple[ScatterPair, _DpsrInputs]:
    """The public inputs, checked before anything is read or charged (the pair's shape is public)."""
    pair, budget, xi, k, sparsity = _Dpsr.check_call(owner, pair, k, sparsity, DPSR_TABLE, params)
    d = pair.n_features
    auto_eta = isinstance(params["step_sizes.phase2"], str)  # "auto": resolved in _dpsr_ridge and _auto_eta
    basis_size = params["basis_size"]
    k1 = d if basis_size is None else check_int(basis_size, "basis_size", k, d, owner)
    V0 = None
    if params["init"] is not None and not pair.b_is_public:
        V0 = np.asarray(params["init"], dtype=np.float64)
        if V0.shape != (d, k1) or not np.isfinite(V0).all():
            raise ValueError(f"The 'init' parameter of {owner} must be a finite array of shape "
                             f"(d, basis_size) = ({d}, {k1}). Got shape {V0.shape}.")
    w1, w_lam, w2 = (float(x) for x in params["budget_shares"])
    return pair, _DpsrInputs(
        budget=budget, k=k, k1=d if pair.b_is_public else k1, sparsity=sparsity, m=int(params["n_iter"]),
        xi=1.0 if xi == NOISE_RIDGE else float(xi), eta_b=float(params["step_sizes.phase1"]),
        eta_a=1.0 if auto_eta else float(params["step_sizes.phase2"]), shares=(w1, w_lam, w2), V0=V0,
        noise_ridge=xi == NOISE_RIDGE, auto_eta=auto_eta)


#: Largest step ``step_size_a="auto"`` takes (reached only as the noise vanishes: the power method's limit).
MAX_AUTO_ETA = 1e8


def _dpsr_ridge(mechanism: str, pair: ScatterPair, inputs: _DpsrInputs, params: dict[str, Any],
                owner: str) -> _DpsrInputs:
    """Resolve ``regularization="noise"`` and ``step_size_a="auto"`` from public inputs (before the plan).

    Phase 2's multiplier ``s2`` does not depend on xi (its sensitivity and, for ``"paper"``, its
    scale both carry ``1/xi``), so the plan at xi = 1 gives the A-noise scale ``s2 * Delta_2`` (per
    entry of ``2 A V``, unit whitening) and the ridge is :func:`noise_ridge` of half of it. The step
    of ``eta_a="auto"`` is set in :func:`_auto_eta` from the released phase-2 noise scale (with a float
    ridge, ``"auto"`` is the paper's step, 1).
    """
    if not inputs.noise_ridge:
        return dataclasses.replace(inputs, auto_eta=False)  # "auto" with the paper's xi: eta_a = 1
    _, scales = _dpsr_plan(mechanism, pair, dataclasses.replace(inputs, xi=1.0), params, owner)
    return dataclasses.replace(inputs, xi=noise_ridge(scales.s2 * scales.delta2_base / 2.0, pair.n_features))


def _auto_eta(inputs: _DpsrInputs, std2: float) -> float:
    """Phase 2's step: ``step_size_a``, or for ``"auto"`` the step whose per-step noise has unit column norm.

    ``eta sigma_2 sqrt(k1) = 1``: a larger step lets one step's noise replace the iterate (nothing is
    averaged over the m steps), a smaller one moves too little in m steps. ``sigma_2`` is the phase-2
    noise std, a function of the plan and the released ``||Phi~||_2^2`` (public).
    """
    if not inputs.auto_eta:
        return inputs.eta_a
    if std2 <= 0:
        return MAX_AUTO_ETA
    return float(min(1.0 / (std2 * math.sqrt(inputs.k1)), MAX_AUTO_ETA))


def _dpsr_plan(mechanism: str, pair: ScatterPair, inputs: _DpsrInputs, params: dict[str, Any],
               owner: str) -> tuple[ReleasePlan, _DpsrScales]:
    """Every release of the run, from public inputs: phase 1's m gradients, Lambda_B, phase 2's m.

    Phase 2's sensitivity ``2 ||Phi~||_2^2 ||dA||`` depends on the released ``Phi~``: the plan
    declares its worst case ``||Phi~||_2^2 <= 1/xi`` and the tight calibration draws at the planned
    multiplier times the released bound (:meth:`~dpspectral.privacy._pipeline.Releaser.adapted`). A public B
    gives ``Phi~`` exactly, before any release.
    """
    sens, m, xi = pair.sensitivity, inputs.m, inputs.xi
    public_b = pair.b_is_public
    delta1 = sens.gradient_b(inputs.k1)         # phase-1 gradient sensitivity
    delta_lam = sens.diagonal_b(inputs.k1)      # Lambda_B release
    delta2_base = sens.gradient_a(inputs.k)     # phase-2 gradient sensitivity for ||Phi~||_2 = 1
    release_lam = inputs.shares[1] > 0
    notes = list(pair.notes)
    if params["calibration"] == "tight":
        s1, s_lam, s2 = _tight_multipliers(inputs, public_b, release_lam)
        sigma2_fixed = None
    else:
        s1, s_lam, s2, sigma2_fixed = _paper_multipliers(pair, inputs, params, delta1, delta2_base,
                                                         release_lam, notes, owner)
    if not release_lam and not public_b:
        notes.append("Lambda_B read off the last released phase-1 gradient (post-processing, no extra "
                     "budget) instead of the paper's un-noised diag(V^T B V).")
    public = regularized_reduction(pair.B, xi, clamp=False) if public_b else None
    if sigma2_fixed is not None:
        phase2 = NoisyRelease("phase2", "gaussian", sigma2_fixed, delta2_base / xi)
    elif public is not None:
        phi_norm2 = float(1.0 / np.min(public[1] + xi))
        phase2 = NoisyRelease("phase2", "gaussian", s2 * delta2_base * phi_norm2, delta2_base * phi_norm2)
    else:  # the worst case ||Phi~||_2^2 <= 1/xi; drawn at the released bound (same multiplier)
        phase2 = NoisyRelease("phase2", "gaussian", s2 * delta2_base / xi, delta2_base / xi)
    # every release widened for the rounding of its computed statistic (:mod:`._pair_rounding`);
    # the events are unchanged
    rounding = pair_rounding(pair)
    r2 = rounding.whitened_gradient_share(delta2_base, inputs.k1, inputs.k)
    scale2, sensitivity2 = widened(phase2.scale, phase2.sensitivity or 0.0, r2)
    phase2 = dataclasses.replace(phase2, scale=scale2, sensitivity=sensitivity2)
    releases: list[NoisyRelease] = []
    events: list[dp_accounting.DpEvent] = []
    if not public_b:
        phase1 = NoisyRelease("phase1", "gaussian", s1 * delta1, delta1)
        releases.append(rounding.gradient_b(phase1, inputs.k1))
        events.append(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s1), m))
        if release_lam:
            lam = NoisyRelease("lambda", "gaussian", s_lam * delta_lam, delta_lam)
            releases.append(rounding.diagonal_b(lam, inputs.k1))
            events.append(dp_accounting.GaussianDpEvent(s_lam))
    releases.append(phase2)
    events.append(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s2), m))
    scales = _DpsrScales(s1=s1, s_lam=s_lam, s2=s2, delta1=delta1, delta_lam=delta_lam,
                         delta2_base=delta2_base, release_lam=release_lam,
                         adaptive_phase2=sigma2_fixed is None and public is None, public=public,
                         phase2_rounding=r2)
    return ReleasePlan(mechanism, sens.relation, tuple(events), tuple(releases), tuple(notes)), scales


def _tight_multipliers(inputs: _DpsrInputs, public_b: bool, release_lam: bool) -> tuple[float, float, float]:
    """One Gaussian-DP budget split exactly by ``budget_shares`` (``sqrt(m)`` per step of a phase)."""
    p = analytic_noise_multiplier(inputs.budget.epsilon, inputs.budget.delta)
    m = inputs.m
    if public_b:
        return math.inf, math.inf, p * math.sqrt(m)
    w1, w_lam, w2 = inputs.shares
    shares = [w1, w_lam, w2] if release_lam else [w1 / (w1 + w2), w2 / (w1 + w2)]
    split = split_noise_multiplier(p, shares)
    return split[0] * math.sqrt(m), split[1] if release_lam else math.inf, split[-1] * math.sqrt(m)


def _paper_multipliers(pair: ScatterPair, inputs: _DpsrInputs, params: dict[str, Any], delta1: float,
                       delta2_base: float, release_lam: bool, notes: list[str],
                       owner: str) -> tuple[float, float, float, float]:
    """Chen et al.'s noise scales (Theorem 12 or Algorithm 2) and the multipliers they give."""
    public_b, xi = pair.b_is_public, inputs.xi
    g1, g2 = delta1, delta2_base
    constants = params["calibration.constants"]
    if constants is not None:
        if pair.n_samples is None:
            raise ValueError(f"The 'calibration.constants' parameter of {owner} needs a pair with a "
                             "known n_samples (the paper's constants are divided by n).")
        C1, C2 = (check_positive(c, "calibration.constants", owner) for c in constants)
        unit = (pair.row_norm or 1.0) ** 2 / pair.n_samples
        g1, g2 = C1 * unit, C2 * unit
        notes.append(f"calibration='paper' with the constants C1={C1:g}, C2={C2:g} (the derived "
                     f"sound ones are C1={delta1 * pair.n_samples / (pair.row_norm or 1.0) ** 2:.4g},"
                     f" C2={delta2_base * pair.n_samples / (pair.row_norm or 1.0) ** 2:.4g}).")
    budget, formula = inputs.budget, params["calibration.formula"]
    sigma1, sigma2 = paper_noise_scales(budget.epsilon, budget.delta, inputs.m, xi, g1, g2, formula)
    s1 = math.inf if public_b else sigma1 / delta1 if delta1 > 0 else math.inf
    s_lam = s1 if (release_lam and not public_b) else math.inf
    # sigma_2 is the paper's fixed scale; the true sensitivity is at most delta2_base / xi
    s2 = sigma2 / (delta2_base / xi) if delta2_base > 0 else math.inf
    source = "Theorem 12" if formula == "theorem12" else "Algorithm 2"
    note = f"calibration='paper': Chen et al.'s {source} noise scales"
    if release_lam and not public_b:
        note += "; Lambda_B (un-noised in the paper) released at phase 1's per-step multiplier"
    notes.append(note + ".")
    return s1, s_lam, s2, sigma2


def _phase_two(desc: str, pair: ScatterPair, inputs: _DpsrInputs, scales: _DpsrScales,
               whitening: tuple[np.ndarray, np.ndarray, np.ndarray], releaser: Releaser,
               show_progress: bool | None) -> dict[str, Any]:
    """Phase 2 inside the charged block: m noisy gradients of ``tr(V'^T A~ V')`` from a random start.

    ``whitening`` is ``(basis, Lambda^_B, Phi~)``, released (or public); the noise is drawn at the
    planned multiplier times the released bound ``||Phi~||_2^2`` (:meth:`Releaser.adapted`).
    """
    _, lam, Phit = whitening
    xi, k1 = inputs.xi, inputs.k1
    phi_norm2 = float(1.0 / np.min(lam + xi))  # ||Phi~||_2^2 (basis orthonormal), released
    At = Phit.T @ pair.A @ Phit
    At = (At + At.T) / 2.0
    std2 = releaser.plan["phase2"].scale
    start2 = random_orthonormal(k1, inputs.k, releaser)
    s_phase2 = None if inputs.sparsity is None else min(inputs.sparsity, k1)
    with contextlib.ExitStack() as stack:
        phase2 = releaser
        if scales.adaptive_phase2:  # drawn at the planned multiplier times the released bound
            std2, sensitivity2 = widened(scales.s2 * scales.delta2_base * phi_norm2,
                                         scales.delta2_base * phi_norm2, scales.phase2_rounding)
            if std2 > 0:
                phase2 = stack.enter_context(releaser.adapted("phase2", scale=std2, sensitivity=sensitivity2))
        eta_a = _auto_eta(inputs, std2)  # from the released noise scale (public)
        V2, prev2, G2 = _noisy_phase(At, start2, n_iter=inputs.m, eta=eta_a,
                                     release=functools.partial(phase2.add, "phase2") if std2 > 0 else None,
                                     sparsity=s_phase2, desc=f"{desc} phase 2",
                                     show_progress=show_progress)
    return {"V": V2, "prev": prev2, "G": G2, "whitening": whitening, "std2": std2, "phi_norm2": phi_norm2,
            "eta_a": eta_a}


def _phase_one(desc: str, pair: ScatterPair, inputs: _DpsrInputs, releaser: Releaser,
               show_progress: bool | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Phase 1 inside the charged block (B's eigenbasis by m noisy gradients): ``(V_m, V_{m-1}, G_m)``."""
    d, k1 = pair.n_features, inputs.k1
    start = random_orthonormal(d, k1, releaser) if inputs.V0 is None else orthonormalize(inputs.V0)
    noisy = releaser.plan["phase1"].scale > 0
    return _noisy_phase(pair.B, start, n_iter=inputs.m, eta=inputs.eta_b,
                        release=functools.partial(releaser.add, "phase1") if noisy else None,
                        sparsity=inputs.sparsity, desc=f"{desc} phase 1", show_progress=show_progress)


def _whitening(inputs: _DpsrInputs, scales: _DpsrScales,
               released: Released) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(basis, Lambda^_B, Phi~)`` from the released phase 1 and Lambda_B (post-processing)."""
    basis, prev, G = released["phase1"]
    if scales.release_lam:
        lam = released["lambda"]
    else:
        lam = np.einsum("ij,ij->j", prev, G) / 2.0  # post-processing of the last release
    lam = np.maximum(lam, 0.0)
    return basis, lam, basis / np.sqrt(lam + inputs.xi)


def _dpsr_diagnostics(plan: ReleasePlan, inputs: _DpsrInputs, scales: _DpsrScales,
                      out: dict[str, Any]) -> dict[str, Any]:
    """Public facts of the run: the plan's scales and multipliers, and released quantities."""
    released = {r.name: r.scale for r in plan.releases}
    return {
        "n_iter": inputs.m, "basis_size": inputs.k1, "xi": inputs.xi, "eta_b": inputs.eta_b,
        "regularization": "noise" if inputs.noise_ridge else inputs.xi,
        "eta_a": out["eta_a"], "noise_std_phase1": released.get("phase1", 0.0),
        "noise_std_lambda": released.get("lambda", 0.0), "noise_std_phase2": out["std2"],
        "noise_multiplier_phase1": scales.s1, "noise_multiplier_lambda": scales.s_lam,
        "noise_multiplier_phase2": scales.s2, "sensitivity_phase1": scales.delta1,
        "sensitivity_lambda": scales.delta_lam,
        "sensitivity_phase2": scales.delta2_base * out["phi_norm2"], "whitening_norm2": out["phi_norm2"],
        "lambda_b": out["lam"], "sparsity": inputs.sparsity,
    }

