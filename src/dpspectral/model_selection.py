"""Private model selection: choose among public candidates with an accounted release.

Choosing a hyperparameter (a method, a ``row_norm``, a calibration, a number of iterations) by
scores computed on the private data is itself a release about that data: cross-validation scores,
and the choice of the best model, are functions of the rows. ``GridSearchCV`` over a DP estimator
charges every *fit* to the shared ledger, but its scores and its choice are computed outside it and
are not private. This module makes the choice itself a differentially private, charged release:

* :func:`private_select` -- the exponential mechanism (McSherry and Talwar 2007) over a public list
  of candidates with scores of declared sensitivity, its law sampled exactly from integer bits
  (``docs/noise.md``; report-noisy-max with NumPy's Gumbel noise under
  ``dpspectral.config_context(noise="float")``); one ``EpsilonDeltaDpEvent(eps, 0)`` is charged
  through :func:`dpspectral.privacy._pipeline.release`.
* :func:`select_subspace` -- the common PCA case: among candidate subspaces (released components
  of earlier private fits, or public ones), the one that captures the most energy of the private
  rows clipped to ``row_norm``. Its score ``sum_i ||V^T c(x_i)||^2`` has sensitivity ``C^2``
  (derived below), so nothing has to be declared by the caller.

A typical accounted grid search: fit one ``DPPCA`` per setting with a shared ``Accountant`` (each
fit is charged), then ``select_subspace([est.components_.T for est in fits], X, ...)`` (charged
too). The total is the composition of all fits and the selection (adaptive composition: the
candidates are released quantities). The candidates' count and order must not depend on the data
beyond what was released.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._constraints import (
    EPSILON,
    ON_NORM_VIOLATION,
    RANDOM_STATE,
    ROW_NORM,
    Interval,
    Table,
    Types,
    validated,
)
from ._moments import accumulate
from .privacy._accounting import Accountant, EpsilonDeltaDpEvent, PrivacyReport
from .privacy._budget import PrivacyBudget, Relation, as_relation
from .privacy._clipping import NormViolation, check_row_norm, sensitivity_norm
from .privacy._pipeline import ReleasePlan, Releaser
from .privacy._template import Drawn, Mechanism, Released, RunSettings, run

__all__ = ["SelectionResult", "private_select", "select_subspace"]

_RELATIONS = (Relation.REPLACE_ONE, Relation.ADD_REMOVE)


@dataclass(frozen=True)
class SelectionResult:
    """The released choice. Only ``index`` and ``candidate`` are released; no score is."""

    index: int
    candidate: Any
    privacy: PrivacyReport


_SELECT_PARAMS: Table = {
    "epsilon": EPSILON, "sensitivity": Interval(0, None, "neither"),
    "monotone": Types((bool, np.bool_), "a bool"), "random_state": RANDOM_STATE,
}
_SUBSPACE_PARAMS: Table = {
    "epsilon": EPSILON, "row_norm": ROW_NORM, "on_norm_violation": ON_NORM_VIOLATION,
    "random_state": RANDOM_STATE,
}


def _check_relation(relation: Any, owner: str) -> Relation:
    """A relation the exponential mechanism's analysis here covers (central, row-level)."""
    rel = as_relation(relation, owner=owner)
    if rel not in _RELATIONS:
        raise ValueError(
            f"The 'relation' parameter of {owner} must be 'replace_one' or 'add_remove'. "
            f"Got {rel.value!r} instead."
        )
    return rel


def _check_candidates(candidates: Any, owner: str) -> list[Any]:
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        raise TypeError(
            f"The 'candidates' parameter of {owner} must be a public sequence (list or tuple) of "
            f"candidates. Got {type(candidates).__name__} instead."
        )
    out = list(candidates)
    if not out:
        raise ValueError(f"The 'candidates' parameter of {owner} must not be empty.")
    return out


@dataclass(frozen=True)
class _SelectInputs:
    """The public inputs of a selection (checked by the public function before the run).

    ``score_fn`` scores one candidate (:func:`private_select`); ``subspaces`` are the candidates as
    orthonormal matrices, scored on the scatter of the rows clipped at ``row_norm``
    (:func:`select_subspace`).
    """

    candidates: tuple[Any, ...]
    budget: PrivacyBudget
    sensitivity: float
    relation: Relation
    monotone: bool
    notes: tuple[str, ...]
    score_fn: Callable[[Any], float] | None = None
    subspaces: tuple[np.ndarray, ...] = ()
    row_norm: float = 1.0
    on_norm_violation: NormViolation = "clip"
    calibration: str = "tight"


@dataclass(frozen=True, eq=False)
class _Scores:
    """What the validating pass read: the scatter of the clipped rows (:func:`select_subspace`), or
    nothing (:func:`private_select`, whose scores come from the caller's function)."""

    second: np.ndarray | None = None
    d: int | None = None
    n: None = None  # not given to the report (the selection's plan does not depend on it)


class _Select(Mechanism[_SelectInputs, SelectionResult]):
    """The exponential mechanism on private scores, as the release template runs it: one pure-DP event,
    the scores computed inside the charge (a failing score is a failed release that stays charged), the
    choice drawn by :meth:`Releaser.exponential_choice`, only the chosen index released."""

    stacklevel = 4  # frames above run: the public function, the constraint check, the caller

    def __init__(self, owner: str) -> None:
        super().__init__()
        self.label = owner

    def plan(self, inputs: _SelectInputs, n: int | None, d: int | None) -> ReleasePlan:
        for V in inputs.subspaces:
            if d is not None and V.shape[0] != d:
                raise ValueError(f"{self.label}: the candidates have {V.shape[0]} rows, the data "
                                 f"{d} columns.")
        return ReleasePlan(self.label, inputs.relation, (EpsilonDeltaDpEvent(inputs.budget.epsilon, 0.0),),
                           notes=(
            *inputs.notes,
            "Exponential mechanism over a public list of "
            f"{len(inputs.candidates)} candidates; only the chosen index is released, no score.",
        ))

    def read(self, inputs: _SelectInputs, X: Any) -> _Scores:
        if inputs.score_fn is not None:
            return _Scores()
        # This pass reads (and validates) every row of an in-memory input before the charge.
        moments = accumulate(X, row_norm=inputs.row_norm, on_norm_violation=inputs.on_norm_violation,
                             want_sum=False, want_second=True, owner=self.label)
        assert moments.second is not None
        return _Scores(moments.second, int(moments.d))

    def statistic(self, inputs: _SelectInputs, rows: _Scores, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        return {"index": Drawn(lambda releaser: self._choose(inputs, rows, releaser))}

    def _choose(self, inputs: _SelectInputs, rows: _Scores, releaser: Releaser) -> int:
        """Inside the charge: the exact scores, then the noisy argmax."""
        if inputs.score_fn is not None:
            scores = np.array([float(inputs.score_fn(c)) for c in inputs.candidates])
        else:
            S = rows.second
            scores = np.array([float(np.trace(V.T @ S @ V)) for V in inputs.subspaces])
        scores = np.asarray(scores, dtype=float)
        if scores.shape != (len(inputs.candidates),) or not np.isfinite(scores).all():
            raise ValueError(
                f"{self.label}: the score function must return one finite float per candidate "
                "(which candidate failed is not reported: it is a fact about the private data)."
            )
        # exp(eps u / (2 Delta)) in general; exp(eps u / Delta) when every score moves in the same
        # direction between neighbours (monotone), as in McSherry and Talwar's analysis.
        # The scale as a float no smaller than the real quotient, so the law drawn is never sharper
        # than the one charged (the division rounds to nearest).
        width = (1.0 if inputs.monotone else 2.0) * inputs.sensitivity
        scale = width / inputs.budget.epsilon
        if Fraction(scale) < Fraction(width) / Fraction(inputs.budget.epsilon):
            scale = math.nextafter(scale, math.inf)
        return releaser.exponential_choice(scores, scale)

    def post_process(self, inputs: _SelectInputs, rows: _Scores, released: Released,
                     report: Any) -> SelectionResult:
        index = released["index"]
        return SelectionResult(index=index, candidate=inputs.candidates[index], privacy=report)


@validated(_SELECT_PARAMS)
def private_select(
    candidates: Sequence[Any],
    score_fn: Callable[[Any], float],
    *,
    epsilon: float,
    sensitivity: float,
    relation: Relation | str = "replace_one",
    monotone: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> SelectionResult:
    """Choose one of ``candidates`` by the exponential mechanism on private scores.

    Returns candidate ``i`` with probability proportional to ``exp(epsilon u_i / (2 Delta))``
    (``exp(epsilon u_i / Delta)`` with ``monotone=True``), ``u_i = score_fn(candidates[i])``: this law
    exactly, for the float scores, by rejection from integer bits (``docs/noise.md``); inside
    ``dpspectral.config_context(noise="float")``, by report-noisy-max with NumPy's Gumbel noise.

    Parameters
    ----------
    candidates : sequence
        A public list (fixed before looking at the data; its length and order are public), e.g.
        hyperparameter settings, or models released by earlier charged private fits.
    score_fn : callable
        ``score_fn(candidate) -> float``, computed on the private data (higher is better). The
        caller promises ``|score_fn(c)(D) - score_fn(c)(D')| <= sensitivity`` for every candidate
        and every pair of neighbours D, D' under ``relation``; the privacy guarantee rests on it.
    epsilon : float
        In (0, inf). The selection is pure epsilon-DP (delta = 0).
    sensitivity : float
        The declared bound Delta above (a public input; never computed from the data).
    relation : {"replace_one", "add_remove"}
    monotone : bool
        True when, between any two neighbours, all scores move in the same direction (e.g. a sum
        over rows of non-negative terms under add/remove); halves the noise.
    accountant : Accountant, optional
        Ledger charged with ``EpsilonDeltaDpEvent(epsilon, 0)`` (refused before the scores are
        computed if over its ceiling).
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret randomness (it decides the choice): a seed draws it reproducibly, ``"secure"`` from
        OS entropy (the report's ``noise_source`` says which).

    Returns
    -------
    SelectionResult
        ``index``, ``candidate``, ``privacy``. No score is returned (they are not released).

    Privacy
    -------
    Relation: as declared. The exponential mechanism with a utility of sensitivity Delta is
    epsilon-DP with ``exp(eps u / (2 Delta))``, and with ``exp(eps u / Delta)`` for monotone
    utilities (McSherry and Talwar 2007). Event: ``EpsilonDeltaDpEvent(epsilon, 0)``, charged through
    :func:`dpspectral.privacy._pipeline.release`; the scores are computed after the charge, so a
    failing score function is a failed release that stays charged. Correctness rests on the
    declared ``sensitivity`` (the library cannot check a user's function): prefer
    :func:`select_subspace`, whose sensitivity is derived.
    """
    owner = "private_select"
    cands = _check_candidates(candidates, owner)
    if not callable(score_fn):
        raise TypeError(f"The 'score_fn' parameter of {owner} must be callable. Got {score_fn!r}.")
    rel = _check_relation(relation, owner)
    declared = "The score function's sensitivity was declared by the caller, not derived."
    inputs = _SelectInputs(tuple(cands), PrivacyBudget(float(epsilon), 0.0), float(sensitivity), rel,
                           bool(monotone), (declared,), score_fn=score_fn)
    return run(_Select(owner), inputs, None, RunSettings(accountant=accountant, random_state=random_state))


def _as_subspace(candidate: Any, d: int | None, owner: str) -> np.ndarray:
    V = getattr(candidate, "components_", None)
    V = np.asarray(candidate if V is None else np.asarray(V).T, dtype=float)
    if V.ndim != 2 or (d is not None and V.shape[0] != d) or not np.isfinite(V).all():
        raise ValueError(
            f"{owner}: every candidate must be a finite (n_features, k) array with orthonormal "
            "columns, or a fitted DPPCA. Got one of shape "
            f"{V.shape if V.ndim else ()}."
        )
    if not np.allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-6):
        raise ValueError(f"{owner}: every candidate's columns must be orthonormal (V^T V = I).")
    return V


@validated(_SUBSPACE_PARAMS)
def select_subspace(
    candidates: Sequence[Any],
    X: Any,
    *,
    epsilon: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
) -> SelectionResult:
    """Choose the candidate subspace that captures the most energy of the private rows, privately.

    The score of an orthonormal ``V`` (d x k) is ``u(V) = sum_i ||V^T c(x_i)||^2 = tr(V^T S V)``,
    ``S`` the scatter matrix of the rows clipped to ``row_norm``; the choice is the exponential
    mechanism on it (:func:`private_select` with the derived sensitivity).

    Parameters
    ----------
    candidates : sequence of arrays of shape (n_features, k) or fitted DPPCA estimators
        Public or previously released subspaces (orthonormal columns). Compare candidates of the
        same k: a larger subspace always captures at least as much energy.
    X : array-like of shape (n_samples, n_features), sparse matrix, np.memmap, Dask array, or an
        iterable of row blocks
        The private data (never modified). An in-memory input is validated whole before the charge.
    epsilon : float
        In (0, inf); pure epsilon-DP.
    row_norm : float
        Public bound C on each row's norm; rows above it are clipped (or refused with
        ``on_norm_violation="raise"``, before the charge).
    relation : {"replace_one", "add_remove"}
    accountant : Accountant, optional
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret (it decides the choice): a seed draws it reproducibly, ``"secure"`` from OS entropy.
    on_norm_violation : {"clip", "raise"}

    Returns
    -------
    SelectionResult

    Privacy
    -------
    Sensitivity: adding a row x changes ``u(V)`` by ``||V^T c(x)||^2`` in ``[0, C^2]`` for every V
    (monotone), so under add/remove Delta = C^2 and ``exp(eps u / C^2)`` is epsilon-DP; replacing
    x by y changes it by ``||V^T c(y)||^2 - ||V^T c(x)||^2`` in ``[-C^2, C^2]``, Delta = C^2 with
    ``exp(eps u / (2 C^2))`` (not monotone). C is taken as ``row_norm (1 + 1e-10)`` (clipped rows
    satisfy it up to rounding). Event: ``EpsilonDeltaDpEvent(epsilon, 0)``.
    """
    owner = "select_subspace"
    budget = PrivacyBudget(float(epsilon), 0.0)
    cands = _check_candidates(candidates, owner)
    C = check_row_norm(row_norm, owner)
    rel = _check_relation(relation, owner)
    d_known = getattr(X, "shape", (None, None))[1] if getattr(X, "ndim", 2) == 2 else None
    subspaces = [_as_subspace(c, d_known, owner) for c in cands]  # public: checked first
    inputs = _SelectInputs(
        tuple(cands), budget, sensitivity_norm(C) ** 2, rel, rel is Relation.ADD_REMOVE,
        ("Score: energy of the clipped rows captured by the subspace (sensitivity C^2).",),
        subspaces=tuple(subspaces), row_norm=C, on_norm_violation=on_norm_violation)
    return run(_Select(owner), inputs, X, RunSettings(accountant=accountant, random_state=random_state))
