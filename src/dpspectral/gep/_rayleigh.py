"""DP-Rayleigh-Flow and DP-Truncated-Rayleigh-Flow (Hu, Xiang, Liu, Wang, AISTATS 2023 / TKDE 2024).

The baselines of Chen et al. (paper 003). No copy of Hu et al.'s algorithm boxes was available; this
is the RECONSTRUCTION of ``spec-pca-gep.md`` §B.7: input perturbation followed by the (truncated)
Rayleigh flow of Tan, Wang, Liu and Zhang (2018, "Rifle")::

    A^ = A + E_A,  B^ = B + E_B           (symmetric Gaussian noise: the only releases)
    B^ <- max(B^, 0) + xi I               (PSD projection, then the ridge: post-processing;
                                           xi = 4 sigma_A sqrt(d) for regularization="noise")
    for t = 1..m, for every column v:
        r = v^T A^ v / v^T B^ v;   v <- v + (eta / r) (A^ - r B^) v     (eta: step_size)
    then B^-orthonormalise the columns (Gram-Schmidt in the B^ inner product; k = 1: nothing),
    [truncated: keep the s largest |v_j| of each column], and scale each column to unit norm.

For k = 1 this is Hu et al.'s flow exactly (up to the regularisation of B^, which their analysis
does not need because it assumes B positive definite and n large); for k > 1 the B^-Gram-Schmidt
keeps the columns apart (a block variant; the paper's comparison projects to 10 dimensions).
Everything after the two releases is post-processing, so the number of iterations costs no privacy.

The sparse rate ``s log d / (n^2 rho)`` of Hu et al. cannot come from dense input noise; their truncated
variant probably privatises per iteration (e.g. a noisy top-s selection). Here it is input
perturbation plus truncation (not verified against their paper; flagged in the report's notes).

Initialisation. Hu et al.'s guarantee needs a start close to the optimum, and Chen et al.'s
comparison starts DPRF from the *non-private* generalized eigenvectors. ``init="random"`` (default) is
data-independent; an array is a public start chosen by the caller; ``init="nonprivate_optimum"``
reproduces the paper's comparison and is **not differentially private** (a ``NonPrivateDpEvent`` is
recorded: ``certified=False``, epsilon infinite, :class:`~dpspectral.UncertifiedPrivacyWarning`).

Calibration. ``"tight"``: the analytic Gaussian multiplier for (epsilon, delta), split exactly
between A and B (``a_share``). ``"paper"``: Hu et al.'s zCDP recipe, ``rho`` from (epsilon, delta) by
``rho = (sqrt(eps + ln(1/delta)) - sqrt(ln(1/delta)))^2``, ``rho_A = a_share rho``,
``rho_B = (1 - a_share) rho``, ``std_X = Delta_F(X) / sqrt(2 rho_X)`` (sound; the accountant certifies
it, with room to spare).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import scipy.linalg

from .._constraints import EPSILON, SHARE, Calibration, Interval, Options, check_params, renamed
from .._linalg import fix_signs
from .._progress import progress
from ..privacy._accounting import Accountant
from ..privacy._budget import PrivacyBudget
from ..privacy._pipeline import ReleasePlan, Releaser
from ..privacy._template import Drawn, Released, Symmetric
from ._common import (
    NOISE_RIDGE,
    POSITIVE,
    REGULARIZATION_PAPER_NAME,
    SOLVER_TABLE,
    CheckedPair,
    NamedPairMechanism,
    PairCall,
    PairRows,
    called_as,
    input_perturbation_plan,
    message_owner,
    noise_ridge,
    normalize_released,
    random_orthonormal,
    tight_pair_multipliers,
    truncate_columns,
    with_constraints,
)
from ._reduction import simultaneous_reduction
from ._result import GEPResult
from ._scatter import ScatterPair

__all__ = ["FLOW_TABLE", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow", "rho_from_epsilon_delta"]


NONPRIVATE_INIT = "nonprivate_optimum"

#: The parameters of the two flows (``k`` and ``sparsity`` within ``d``, ``regularization > 0`` and the
#: shape of an ``init`` array are checked next to their reasons).
FLOW_TABLE: dict[str, Any] = {
    **SOLVER_TABLE,
    "n_iter": Interval(1, None, "left", integer=True),
    "step_size": POSITIVE,
    "a_share": SHARE,
}


#: The paper's symbols of the flows' parameters (still accepted, with a FutureWarning).
FLOW_PAPER_NAMES = {**REGULARIZATION_PAPER_NAME, "eta": "step_size"}


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The zCDP ``rho`` that Lemma 9 of Chen et al. (Bun and Steinke 2016) turns into (epsilon, delta)."""
    check_params({"epsilon": EPSILON, "delta": Interval(0, 1, "neither")},
                 {"epsilon": epsilon, "delta": delta}, "rho_from_epsilon_delta")
    L = math.log(1.0 / delta)
    return (math.sqrt(epsilon + L) - math.sqrt(L)) ** 2


def _b_orthonormalize(V: np.ndarray, Bh: np.ndarray) -> np.ndarray:
    """Gram-Schmidt in the ``B^`` inner product (column j mixes columns 1..j only), unit columns."""
    if V.shape[1] > 1:
        M = V.T @ Bh @ V
        try:
            R = scipy.linalg.cholesky((M + M.T) / 2.0, lower=False, check_finite=False)
            V = scipy.linalg.solve_triangular(R, V.T, trans="T", lower=False, check_finite=False).T
        except np.linalg.LinAlgError:  # collapsed columns: fall back to Euclidean QR
            V = np.linalg.qr(V)[0]
    norms = np.linalg.norm(V, axis=0)
    return V / np.where(norms > 0, norms, 1.0)


@renamed(FLOW_PAPER_NAMES)
@with_constraints(FLOW_TABLE)
def dp_rayleigh_flow(
    pair: ScatterPair,
    k: int,
    *,
    epsilon: float,
    delta: float,
    regularization: float | str = "noise",
    n_iter: int = 15,
    step_size: float = 1.0,
    init: str | np.ndarray = "random",
    a_share: float = 0.5,
    calibration: Calibration = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> GEPResult:
    """DP-Rayleigh-Flow (Hu et al. 2023): Rayleigh flow on an input-perturbed pair.

    Parameters
    ----------
    pair : ScatterPair
    k : int
        Number of vectors, in [1, d].
    epsilon, delta : float
        Target (epsilon, delta); delta in (0, 1).
    regularization : "noise" or float
        The ridge r of the released B: ``B^ = max(B + E_B, 0) + r I`` (projected onto the PSD cone,
        then ridged). ``"noise"`` (default): ``r = 2 ||E_A||_2 = 4 sigma_A sqrt(d)``, a public function
        of the planned noise (as :func:`~dpspectral.gep.sr_dp`). A float > 0: that ridge (xi in the
        paper, which uses 0.01; the old name ``xi`` still works, with a FutureWarning).
    n_iter : int
        Flow iterations (post-processing: free).
    step_size : float
        Step size of the flow, > 0 (eta in Hu et al. and Tan et al.). The old name ``eta`` still works,
        with a FutureWarning.
    init : {"random", "nonprivate_optimum"} or ndarray of shape (d, k)
        Starting vectors. ``"random"``: Haar-random orthonormal (data-independent). An array: a public
        start (never derived from the private data). ``"nonprivate_optimum"``: the exact top-k
        generalized eigenvectors of ``(A, B + xi I)`` as in Chen et al.'s comparison -- NOT private
        (recorded as a ``NonPrivateDpEvent``; ``certified=False``).
    a_share : float
        Share of the budget spent on A, in (0, 1).
    calibration : {"tight", "paper"}
        See the module docstring.
    accountant : Accountant, optional
        Spent before any noise is drawn; refused if over its ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the noise and a random start (``"secure"``: OS entropy and exact samplers).
    show_progress : bool or None

    Returns
    -------
    GEPResult
        ``vectors`` with unit ``B^``-norm columns, ordered by their released Rayleigh quotients
        ``values``.

    Privacy
    -------
    Relation: the pair's. Releases: the upper triangles of ``A + E_A`` and ``B + E_B`` (L2 sensitivity
    ``||dA||_F``, ``||dB||_F``): ``GaussianDpEvent(s_A)``, ``GaussianDpEvent(s_B)`` (no B event when B is
    public). The flow is post-processing, the ridge included (``"noise"`` computes it from the planned
    noise scale, never from the data). ``init="nonprivate_optimum"`` adds a ``NonPrivateDpEvent``. For a
    pair built from rows the noise is widened for the rounding of the computed A and B
    (:mod:`dpspectral.gep._pair_rounding`), the events unchanged.
    """
    return _Flow.solve("dp_rayleigh_flow", **locals())  # every parameter as given


@renamed(FLOW_PAPER_NAMES)
@with_constraints(FLOW_TABLE)
def dp_truncated_rayleigh_flow(
    pair: ScatterPair,
    k: int,
    sparsity: int,
    *,
    epsilon: float,
    delta: float,
    regularization: float | str = "noise",
    n_iter: int = 15,
    step_size: float = 1.0,
    init: str | np.ndarray = "random",
    a_share: float = 0.5,
    calibration: Calibration = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> GEPResult:
    """DP-Truncated-Rayleigh-Flow: :func:`dp_rayleigh_flow` keeping ``s`` non-zeros per column.

    After every step (and the B^-Gram-Schmidt) each column keeps its ``sparsity`` entries of largest
    magnitude and is rescaled; the output has at most ``sparsity`` non-zeros per column. Parameters as
    :func:`dp_rayleigh_flow`, plus ``sparsity`` (s, in [1, d]). A random start is truncated to s
    entries first (Rifle starts from an s-sparse vector).

    Privacy
    -------
    As :func:`dp_rayleigh_flow` (truncation is post-processing of the two releases). Hu et al.'s
    own truncated algorithm may privatise per iteration instead (not verified; see the module
    docstring).
    """
    return _Flow.solve("dp_truncated_rayleigh_flow", **locals())  # every parameter as given


@dataclass(frozen=True, eq=False)
class _FlowChecked(CheckedPair):
    """The checked public inputs of one flow, its plan and multipliers (public)."""

    multipliers: tuple[float, float]
    init: Any


class _Flow(NamedPairMechanism):
    """The flows as the release template runs them: A^ (and B^ unless public) released, a start drawn in
    the same charge, then the (truncated) Rayleigh flow on the released pair (post-processing)."""

    def check(self, inputs: PairCall, X: Any) -> _FlowChecked:
        owner = message_owner(self.label)
        pair, checked = _flow_inputs(owner, X, inputs.k, inputs.sparsity, inputs.params)
        plan, multipliers = _flow_plan(self.label, pair, checked, inputs.params["calibration"],
                                       inputs.params["a_share"])
        if checked.noise_ridge:  # public: a function of the planned noise scale
            checked = dataclasses.replace(checked, xi=noise_ridge(plan["A"].scale, pair.n_features))
        return _FlowChecked(pair, checked, plan, inputs.params["calibration"], pair.n_features,
                            multipliers=multipliers, init=inputs.params["init"])

    def statistic(self, inputs: _FlowChecked, rows: PairRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        pair, owner = rows.pair, message_owner(self.label)
        out: dict[str, Any] = {"A": Symmetric(pair.A)}
        if not pair.b_is_public:
            out["B"] = Symmetric(pair.B)
        out["start"] = Drawn(lambda r: _flow_start(owner, pair, inputs.inputs, r))
        return out

    def post_process(self, inputs: _FlowChecked, rows: PairRows, released: Released,
                     report: Any) -> GEPResult:
        """The flow on ``(A^, max(B^, 0) + xi I)`` from the released start (post-processing)."""
        pair, checked, plan = inputs.pair, inputs.inputs, released.plan
        B_raw = pair.B if pair.b_is_public else released["B"]  # a public B (the identity) is not released
        lam, Phi = scipy.linalg.eigh(B_raw, check_finite=False)
        B_hat = (Phi * (np.maximum(lam, 0.0) + checked.xi)) @ Phi.T
        B_hat = (B_hat + B_hat.T) / 2.0
        vectors, values = _rayleigh_flow(released["A"], B_hat, released["start"], checked, self.label,
                                         self.show_progress)
        s_a, s_b = inputs.multipliers
        return GEPResult(
            vectors=vectors, values=values, privacy=report, method=self.label,
            diagnostics={"noise_std_A": plan["A"].scale,
                         "noise_std_B": 0.0 if pair.b_is_public else plan["B"].scale,
                         "noise_multiplier_A": s_a, "noise_multiplier_B": s_b, "n_iter": checked.m,
                         "eta": checked.eta, "xi": checked.xi,
                         "regularization": "noise" if checked.noise_ridge else checked.xi,
                         "init": "array" if checked.V0 is not None else inputs.init,
                         "sparsity": checked.sparsity},
        )


@dataclass(frozen=True)
class _FlowInputs:
    """The checked public inputs of one flow."""

    budget: PrivacyBudget
    k: int
    sparsity: int | None
    m: int
    eta: float
    xi: float
    V0: np.ndarray | None
    nonprivate_init: bool
    noise_ridge: bool = False


def _flow_inputs(owner: str, pair: Any, k: Any, sparsity: Any,
                 params: dict[str, Any]) -> tuple[ScatterPair, _FlowInputs]:
    """The public inputs, checked before anything is read or charged (the pair's shape is public)."""
    pair, budget, xi, k, sparsity = _Flow.check_call(owner, pair, k, sparsity, FLOW_TABLE, params)
    d = pair.n_features
    init = params["init"]
    V0: np.ndarray | None = None
    if isinstance(init, str):
        check_params({"init": Options(("random", NONPRIVATE_INIT))}, {"init": init}, owner)
    else:
        V0 = np.asarray(init, dtype=np.float64)
        if V0.shape != (d, k) or not np.isfinite(V0).all() or np.any(np.linalg.norm(V0, axis=0) == 0):
            raise ValueError(f"The 'init' parameter of {owner} must be 'random', "
                             f"'{NONPRIVATE_INIT}' or a finite array of shape (d, k) = ({d}, {k}) with "
                             f"non-zero columns. Got {type(init).__name__} of shape {V0.shape}.")
    return pair, _FlowInputs(budget=budget, k=k, sparsity=sparsity, m=int(params["n_iter"]),
                             eta=float(params["step_size"]), xi=1.0 if xi == NOISE_RIDGE else float(xi),
                             V0=V0,
                             nonprivate_init=isinstance(init, str) and init == NONPRIVATE_INIT,
                             noise_ridge=xi == NOISE_RIDGE)


def _flow_plan(mechanism: str, pair: ScatterPair, inputs: _FlowInputs, calibration: str,
               a_share: float) -> tuple[ReleasePlan, tuple[float, float]]:
    """The releases A^ (and B^ unless public), from public inputs, and their multipliers."""
    budget = inputs.budget
    public_b = pair.b_is_public
    notes = list(pair.notes)
    if calibration == "tight":
        s_a, s_b = tight_pair_multipliers(budget, public_b, a_share)
    else:
        rho = rho_from_epsilon_delta(budget.epsilon, budget.delta)
        rho_a, rho_b = (rho, 0.0) if public_b else (a_share * rho, (1.0 - a_share) * rho)
        # std = Delta / sqrt(2 rho_X): multiplier 1 / sqrt(2 rho_X)
        s_a = 1.0 / math.sqrt(2.0 * rho_a)
        s_b = math.inf if public_b else 1.0 / math.sqrt(2.0 * rho_b)
        notes.append("calibration='paper': Hu et al.'s zCDP Gaussian mechanism, std = Delta_F / "
                     "sqrt(2 rho_X), rho from (epsilon, delta) by Lemma 9 of Chen et al.")
    if inputs.sparsity is not None:
        notes.append("Truncated flow RECONSTRUCTED as input perturbation plus truncation (Hu et al.'s "
                     "per-iteration privatisation not verified).")
    more: tuple[dp_accounting.DpEvent, ...] = ()
    if inputs.nonprivate_init:
        more = (dp_accounting.NonPrivateDpEvent(),)
        notes.append("init='nonprivate_optimum': started from the exact (non-private) generalized "
                     "eigenvectors, as in Chen et al.'s comparison. NOT differentially private.")
    return input_perturbation_plan(mechanism, pair, (s_a, s_b), notes, more), (s_a, s_b)


def _flow_start(owner: str, pair: ScatterPair, inputs: _FlowInputs, releaser: Releaser) -> np.ndarray:
    """The starting vectors (truncated when sparse, unit columns), inside the charged block."""
    if inputs.nonprivate_init:
        with called_as(owner):
            V = simultaneous_reduction(pair.A, pair.B, inputs.k, regularization=inputs.xi).vectors
    elif inputs.V0 is not None:
        V = inputs.V0.copy()
    else:
        V = random_orthonormal(pair.n_features, inputs.k, releaser)
    if inputs.sparsity is not None:
        V = truncate_columns(V, inputs.sparsity)
    return V / np.linalg.norm(V, axis=0)


def _rayleigh_flow(A_hat: np.ndarray, B_hat: np.ndarray, V: np.ndarray, inputs: _FlowInputs, desc: str,
                   show_progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """The (truncated) Rayleigh flow on the released pair: ``(vectors, values)`` (post-processing)."""
    tiny = np.finfo(float).tiny
    eta, sparsity, m = inputs.eta, inputs.sparsity, inputs.m
    for _ in progress(range(m), total=m, desc=desc, enabled=show_progress, min_total=50):
        AV = A_hat @ V
        BV = B_hat @ V
        r = np.einsum("ij,ij->j", V, AV) / np.einsum("ij,ij->j", V, BV)
        r = np.where(np.abs(r) > tiny, r, tiny)
        V = V + (eta / r) * (AV - r * BV)
        V = _b_orthonormalize(V, B_hat)
        if sparsity is not None:
            V = truncate_columns(V, sparsity)
            norms = np.linalg.norm(V, axis=0)
            V = V / np.where(norms > 0, norms, 1.0)
    values = np.einsum("ij,ij->j", V, A_hat @ V) / np.einsum("ij,ij->j", V, B_hat @ V)
    order = np.argsort(values)[::-1]
    vectors = fix_signs(normalize_released(V[:, order], None, None, inputs.xi, B_hat=B_hat))
    return vectors, values[order]
