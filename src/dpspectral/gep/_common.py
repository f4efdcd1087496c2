"""Shared steps of the GEP solvers: the parameter table and checks, truncation, released-B normalisation."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import dp_accounting
import numpy as np
from scipy.linalg import lapack

from .._constraints import (
    PRIVACY_PARAMETERS,
    Interval,
    InvalidParameterError,
    check_params,
    without,
)
from .._linalg import orthonormalize
from .._validation import gaussian_budget
from ..privacy._budget import PrivacyBudget
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan
from ..privacy._template import Mechanism, RunSettings, run
from ._pair_rounding import pair_rounding
from ._scatter import ScatterPair

if TYPE_CHECKING:
    from ..privacy._accounting import Accountant

__all__ = [
    "POSITIVE",
    "SOLVER_TABLE",
    "called_as",
    "check_int",
    "check_pair",
    "check_positive",
    "NOISE_RIDGE",
    "CheckedPair",
    "NamedPairMechanism",
    "PairCall",
    "PairMechanism",
    "PairRows",
    "REGULARIZATION_PAPER_NAME",
    "RIDGE_FACTOR",
    "check_regularization",
    "input_perturbation_plan",
    "message_owner",
    "noise_ridge",
    "normalize_released",
    "orthonormalize_fast",
    "run_on_pair",
    "random_orthonormal",
    "tight_pair_multipliers",
    "truncate_columns",
    "with_constraints",
]

F = TypeVar("F", bound=Callable[..., Any])


_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("dpspectral_gep_caller", default=None)


@contextlib.contextmanager
def called_as(name: str) -> Iterator[None]:
    """Within the block, the solvers' messages name ``name`` (what the user called, e.g.
    ``private_fda`` or ``DPFisherDiscriminant``) instead of the internal solver."""
    token = _CALLER.set(name)
    try:
        yield
    finally:
        _CALLER.reset(token)


def message_owner(owner: str) -> str:
    """The name a message should give: the user's entry point when one is set, else ``owner``."""
    return _CALLER.get() or owner


def check_pair(pair: Any, owner: str) -> ScatterPair:
    """A ScatterPair whose A and B are finite, square float matrices of one shape (checked before any
    charge; the messages quote no entry)."""
    if not isinstance(pair, ScatterPair):
        raise TypeError(
            f"The 'pair' parameter of {owner} must be a ScatterPair (from fda_pair, pca_pair or "
            f"symmetric_definite_pair). Got {type(pair).__name__} instead."
        )
    for name in ("A", "B"):
        M = getattr(pair, name)
        if not isinstance(M, np.ndarray) or M.dtype.kind not in "biuf" or M.ndim != 2 or (
                M.shape[0] != M.shape[1] or M.shape[0] == 0):
            raise ValueError(f"The 'pair' parameter of {owner}: {name} must be a non-empty square numeric "
                             "array.")
        if not np.isfinite(M).all():
            raise ValueError(f"The 'pair' parameter of {owner}: {name} contains NaN or infinity.")
    if pair.A.shape != pair.B.shape:
        raise ValueError(f"The 'pair' parameter of {owner}: A and B must have the same shape. Got "
                         f"{pair.A.shape} and {pair.B.shape}.")
    return pair


#: A strictly positive finite float (step sizes, constants).
POSITIVE = Interval(0, None, "neither")
#: The public parameters every private GEP solver takes, checked from this table (the bounds that
#: depend on the pair's dimension, ``k <= d`` and ``sparsity <= d``, are checked by :func:`check_int`
#: next to the reason; ``regularization`` by :func:`check_regularization`, whose message says why it
#: must be positive).
SOLVER_TABLE: dict[str, Any] = {
    **without(PRIVACY_PARAMETERS, "row_norm", "on_norm_violation"),  # the solvers read a pair, not rows
}


def with_constraints(table: Mapping[str, Any]) -> Callable[[F], F]:
    """Attach a public function's constraint table as ``function.parameter_constraints``.

    The GEP solvers check their table themselves (:func:`check_params` with :func:`message_owner`), so
    that a message names the entry point the user called (``private_fda``, ``DPFisherDiscriminant``),
    which :func:`~dpspectral._constraints.validated` (a fixed name) cannot do.
    """

    def attach(func: F) -> F:
        func.parameter_constraints = dict(table)  # type: ignore[attr-defined]
        return func

    return attach


def check_int(value: Any, name: str, low: int, high: int | None, owner: str) -> int:
    """``value`` as an int in ``[low, high]`` (``high=None``: no upper bound), a one-entry table."""
    check_params({name: Interval(low, high, "both" if high is not None else "left", integer=True)},
                 {name: value}, owner)
    return int(value)


def check_positive(value: Any, name: str, owner: str) -> float:
    """``value`` as a float in (0, inf), a one-entry table."""
    check_params({name: POSITIVE}, {name: value}, owner)
    return float(value)


#: The paper's symbol of the regularisation ratio of every public GEP function (still accepted, with a
#: FutureWarning, through :func:`~dpspectral._constraints.renamed`).
REGULARIZATION_PAPER_NAME = {"xi": "regularization"}


#: ``regularization="noise"``: the ridge is a public function of the planned noise (:func:`noise_ridge`).
NOISE_RIDGE = "noise"
#: The noise-scaled ridge is ``RIDGE_FACTOR`` times the spectral norm of the noise on A (measured on
#: MNIST, a9a and RT-IoT2022 for SR+DP: ``docs/algorithms/gep.md``, "Regularisation from the noise").
RIDGE_FACTOR = 2.0


def noise_ridge(a_noise_std: float, d: int) -> float:
    """The ridge ``RIDGE_FACTOR * 2 sigma_A sqrt(d)`` for i.i.d. Gaussian noise of std ``sigma_A`` on A.

    ``2 sigma sqrt(d)`` is the spectral norm of a d x d symmetric Gaussian matrix of entry std sigma
    (to first order). A direction that carries only noise reaches a generalized Rayleigh quotient of at
    most ``||E_A||_2 / (u^T B^ u + r) <= 1 / RIDGE_FACTOR`` against the ridged, PSD-projected released
    B^, whatever the noise in B does to its small eigenvalues. Public: a function of the planned noise
    scale (public inputs only), so the ridge is post-processing and costs no privacy.
    """
    return float(RIDGE_FACTOR * 2.0 * a_noise_std * math.sqrt(d))


def check_regularization(value: Any, owner: str, *, allow_zero: bool = False,
                         name: str = "regularization") -> float | str:
    """The ridge: ``"noise"`` (private solvers only) or the regularisation ratio (xi in the paper).

    A float must be > 0 for the private solvers (the sensitivity has 1/xi) and >= 0 for the
    non-private one (``allow_zero=True``), which has no noise to scale a ridge from. ``name`` is the
    parameter the caller passed (``"xi"`` for :class:`DPFisherDiscriminant`, whose parameter keeps the
    paper's symbol).
    """
    if not allow_zero and isinstance(value, str) and value == NOISE_RIDGE:
        return NOISE_RIDGE
    if not Interval(0, None, "left" if allow_zero else "neither").accepts(value):
        interval = "[0, inf)" if allow_zero else f"(0, inf) or {NOISE_RIDGE!r}"
        reason = "" if allow_zero else (
            f" (the private solvers need {name} > 0: the sensitivity of the reduced matrix grows like "
            f"1/{name}; {NOISE_RIDGE!r} sets it from the noise scale)"
        )
        raise InvalidParameterError(f"The '{name}' parameter of {owner} must be a float in "
                                    f"{interval}{reason}. Got {value!r} instead.")
    return float(value)


def tight_pair_multipliers(budget: PrivacyBudget, public_b: bool, a_share: float) -> tuple[float, float]:
    """The analytic Gaussian multiplier of ``budget`` split exactly between the releases of A and B
    (``a_share`` of ``1/s^2`` to A): ``(s_A, s_B)``, all of it on A (``s_B`` infinite) when B is public."""
    p = analytic_noise_multiplier(budget.epsilon, budget.delta)
    if public_b:
        return p, math.inf
    s_a, s_b = split_noise_multiplier(p, [a_share, 1.0 - a_share])
    return s_a, s_b


def input_perturbation_plan(mechanism: str, pair: ScatterPair, multipliers: tuple[float, float],
                            notes: list[str],
                            more_events: tuple[dp_accounting.DpEvent, ...] = ()) -> ReleasePlan:
    """The plan of a solver that releases the pair itself: ``A + E_A`` (and ``B + E_B`` unless B is
    public), Gaussian at the multipliers ``(s_A, s_B)`` times the Frobenius sensitivities, widened for
    the rounding of the computed pair (events unchanged); ``more_events`` follow the Gaussian ones."""
    sens = pair.sensitivity
    s_a, s_b = multipliers
    releases = [NoisyRelease("A", "gaussian", s_a * sens.a_frobenius, sens.a_frobenius)]
    events: list[dp_accounting.DpEvent] = [dp_accounting.GaussianDpEvent(s_a)]
    if not pair.b_is_public:
        releases.append(NoisyRelease("B", "gaussian", s_b * sens.b_frobenius, sens.b_frobenius))
        events.append(dp_accounting.GaussianDpEvent(s_b))
    events.extend(more_events)
    rounding = pair_rounding(pair)
    releases = [rounding.matrix(r) for r in releases]
    return ReleasePlan(mechanism, sens.relation, tuple(events), tuple(releases), tuple(notes))


def _cholesky_qr_pass(V: np.ndarray) -> tuple[np.ndarray, float] | None:
    """One Cholesky-QR pass ``V R^{-1}`` with ``R = chol(V^T V)``; None when V^T V is not definite."""
    G = V.T @ V
    R, info = lapack.dpotrf(G, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        return None
    diag = np.abs(np.diag(R))
    if diag.min() <= 0:
        return None
    Rinv, info = lapack.dtrtri(R, lower=0)
    if info != 0:
        return None
    return V @ Rinv, float(diag.max() / diag.min())


def orthonormalize_fast(V: np.ndarray) -> np.ndarray:
    """``orthonormalize(V, "qr")`` (R with a positive diagonal) by Cholesky QR, with BLAS-3 only.

    Householder QR of a square d x d block is latency-bound and slows down badly when the BLAS threads
    compete with other processes; Cholesky QR is three BLAS-3 calls. Its loss of orthogonality is
    about ``eps cond(V)^2``, so a second pass is made unless the ratio of R's extreme diagonal entries
    (a cheap lower estimate of the condition number) is below 2 (CholeskyQR2, accurate to rounding for
    ``cond(V) < 1e7``), and Householder QR is used when that ratio exceeds 1e6 or the factorisation
    fails. The result equals the Householder one up to rounding (same signs).
    """
    first = _cholesky_qr_pass(V)
    if first is None or first[1] > 1e6:
        return orthonormalize(V, "qr")
    Q, cond = first
    if cond > 2.0:
        second = _cholesky_qr_pass(Q)
        if second is None:
            return orthonormalize(V, "qr")
        Q = second[0]
    return Q


def random_orthonormal(rows: int, cols: int, rng: Any) -> np.ndarray:
    """A Haar-random ``rows x cols`` matrix with orthonormal columns (data-independent).

    ``rng``: what draws the standard normals, a releaser's named draw inside a charged release
    (:meth:`~dpspectral.privacy._pipeline.Releaser.standard_normal`) or a public generator.
    """
    Q, R = np.linalg.qr(rng.standard_normal((rows, cols)))
    s = np.sign(np.diag(R))
    s[s == 0] = 1
    return Q * s


def truncate_columns(V: np.ndarray, s: int) -> np.ndarray:
    """Keep the ``s`` entries of largest magnitude in every column, zero the rest (Tan et al. 2018)."""
    d = V.shape[0]
    if s >= d:
        return V.copy()
    keep = np.argpartition(-np.abs(V), s - 1, axis=0)[:s]
    out = np.zeros_like(V)
    cols = np.arange(V.shape[1])
    out[keep, cols] = V[keep, cols]
    return out


def normalize_released(Phi: np.ndarray, basis: np.ndarray | None, lam: np.ndarray | None,
                       xi: float, B_hat: np.ndarray | None = None) -> np.ndarray:
    """Scale each column to unit norm in the released B: ``phi^T B_rel phi = 1``.

    ``B_rel = basis diag(lam) basis^T + xi I`` (simultaneous reduction) or ``B_hat`` (given).
    """
    if B_hat is not None:
        sq = np.einsum("ij,ij->j", Phi, B_hat @ Phi)
    else:
        assert basis is not None and lam is not None
        proj = basis.T @ Phi
        sq = (lam[:, None] * proj**2).sum(axis=0) + xi * (Phi**2).sum(axis=0)
    sq = np.where(sq > 0, sq, 1.0)
    return Phi / np.sqrt(sq)


class PairRows:
    """The "rows" of a solver on a scatter pair: the pair itself, built (and its rows validated) by
    :func:`~dpspectral.gep._scatter.fda_pair` and the other builders before the solver runs.

    ``n`` is None (the solvers' reports do not use it) and ``d`` the pair's public dimension.
    """

    n = None

    def __init__(self, pair: ScatterPair) -> None:
        self.pair = pair
        self.d = pair.n_features


class PairMechanism(Mechanism[Any, Any]):
    """A GEP solver on a scatter pair as the release template runs it (:mod:`dpspectral.privacy._template`).

    Its checked inputs carry ``budget``, ``calibration``, ``d`` (the pair's dimension) and ``n`` (None);
    reading is taking the pair (:class:`PairRows`). Subclasses supply ``plan``, ``statistic`` and
    ``post_process``.
    """

    def read(self, inputs: Any, X: Any) -> PairRows:
        """The pair (already validated by its builder and :func:`check_pair`)."""
        return PairRows(X)


def run_on_pair(mechanism: PairMechanism, inputs: Any, pair: ScatterPair, accountant: Accountant | None,
                random_state: Any) -> Any:
    """Run a solver on ``pair`` through the release template (check, plan, charge, draw, post-process)."""
    return run(mechanism, inputs, pair, RunSettings(accountant, random_state))


@dataclass(frozen=True)
class PairCall:
    """The public inputs of one run of a :class:`NamedPairMechanism`, as the caller gave them."""

    k: Any
    sparsity: Any
    #: the solver's keywords (``random_state`` among them)
    params: dict[str, Any]


@dataclass(frozen=True, eq=False)
class CheckedPair:
    """The checked public inputs of one run of a :class:`NamedPairMechanism`: the pair, the solver's own
    checked inputs (``inputs.budget`` among them), its plan, calibration and dimension (public)."""

    pair: ScatterPair
    inputs: Any
    plan: ReleasePlan
    calibration: str
    d: int
    n = None  # the pair is not read row by row

    @property
    def budget(self) -> PrivacyBudget:
        return self.inputs.budget  # type: ignore[no-any-return]


class NamedPairMechanism(PairMechanism):
    """A solver serving several registry names (DPSR and DPSRS, the two flows): ``label`` is the name
    called; :meth:`check` returns a :class:`CheckedPair` whose plan is the run's."""

    stacklevel = 4

    def __init__(self, mechanism: str, show_progress: bool | None = None) -> None:
        super().__init__(show_progress)
        self.label = mechanism

    def plan(self, inputs: CheckedPair, n: int | None, d: int | None) -> ReleasePlan:
        return inputs.plan

    @staticmethod
    def check_call(owner: str, pair: Any, k: Any, sparsity: Any, table: Mapping[str, Any],
                   params: Mapping[str, Any]) -> tuple[ScatterPair, PrivacyBudget, Any, int, int | None]:
        """The checks every named solver starts with, before anything is read or charged: the pair,
        the solver's ``table`` (the budget), the ridge, then ``k`` and ``sparsity`` in [1, d] (the pair's
        shape is public). Returns ``(pair, budget, ridge, k, sparsity)``."""
        pair = check_pair(pair, owner)
        budget = gaussian_budget(table, params, owner)
        xi = check_regularization(params["regularization"], owner)
        d = pair.n_features
        k = check_int(k, "k", 1, d, owner)
        if sparsity is not None:
            sparsity = check_int(sparsity, "sparsity", 1, d, owner)
        return pair, budget, xi, k, sparsity

    @classmethod
    def solve(cls, mechanism: str, pair: ScatterPair, k: int, sparsity: int | None = None, *,
              accountant: Accountant | None, show_progress: bool | None, **params: Any) -> Any:
        """Run the solver named ``mechanism`` on ``pair`` through the release template, on the
        parameters of its function's call (every one as given; ``sparsity`` only for a sparse one)."""
        return run_on_pair(cls(mechanism, show_progress), PairCall(k, sparsity, params), pair, accountant,
                           params["random_state"])
