"""Learning-rate selection for the Oja family (Liu, Kong, Jain and Oh 2022, §5, "Remarks on the
assumptions"): run the algorithm with several ``eta_t = c1 / (c2 + t)`` and keep the best, privately.

The paper's search doubles the grid in rounds, ``(c1, c2)`` in ``[2^{i-1}, 2^{-i+1}]``-style dyadic
sets around a starting point, evaluates each solution privately with a per-round budget
``epsilon_i ~ epsilon / i^2`` and stops once the error is below a target. The OCR of the split is
garbled and a target error is rarely known, so we run a fixed number of rounds (round 1: the starting
point; round i >= 2: the four points ``(c1 * 2^{+-(i-1)}, c2 * 2^{+-(i-1)})``) and split the budget
evenly over the J candidates, which spends no more than the paper's series.

Privacy (``tuning="private"``, replace-one)
-------------------------------------------
Validate, then charge, then release: the whole input is validated before anything is charged, and
the whole search (every candidate and every score) is charged to the ledger *before* any candidate
runs or any noise is drawn. A secret uniformly random split (from ``random_state``, a secret) puts
``validation_share`` of the rows in the validation set and the rest in the training set (disjoint,
data-independent: parallel composition). Training: the J runs each permute the training rows with
their own secret permutation (fresh per run: :func:`~dpspectral.pca._oja.dp_pca` and
:func:`~dpspectral.pca._oja.private_oja` shuffle in-memory data), each calibrated to
``(epsilon / J, delta / J)``; they are independent mechanisms on the same rows, so they compose:
the training event is ``SelfComposedDpEvent(run, J)``, where a run with branches
(``ParallelDpEvent``) lets the changed row meet any branch in each run (the accountant takes the
worst choice). No run shares a permutation with another, so nothing rests on composing runs of one
shuffle (which no theorem covers for amplification by shuffling). Validation: candidate j's score is
the captured variance ``sum_i ||W_j^T x_i||^2 / n_val`` of the validation rows plus Gaussian noise;
one row moves it by at most ``C^2 / n_val`` (``W`` orthonormal), and the J scores together are
calibrated to (epsilon, delta) by the exact Gaussian accountant. The released output is the best
candidate's subspace and its ``(c1, c2)``, and the noisy scores.

``tuning="nonprivate"`` is for benchmarks: every candidate runs on all rows with the full budget and
is scored by its true captured variance; the result's privacy report says NOT certified and the
search is labelled non-private in every output.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np

from .._constraints import PRIVACY_PARAMETERS, SHARE, Interval, Options, Table, renamed, validated, without
from .._moments import accumulate
from .._results import SubspaceResult
from .._validation import check_mechanism_inputs
from ..privacy._accounting import Accountant, ParallelDpEvent, PrivacyReport, compose
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, clip_rows, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import Summation, widen_release
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run
from . import _oja as oja_module

__all__ = ["LearningRateSearch", "learning_rate_grid", "select_learning_rate"]

_METHODS: dict[str, Callable[..., SubspaceResult]] = {
    "dp_pca": oja_module.dp_pca, "private_oja": oja_module.private_oja,
}
#: The grid's start ``(c1 * row_norm^2, c2)``: c1 is in units of 1 / row_norm^2 (the gradient scales as
#: row_norm^2), so the search is scale-free; dp_pca's runs take Oja steps with these rates.
_DEFAULTS = {"dp_pca": (100.0, 1.0), "private_oja": (10.0, 10.0)}


@dataclass(frozen=True)
class LearningRateSearch:
    """The outcome of :func:`select_learning_rate`.

    Attributes
    ----------
    c1, c2 : float
        The selected learning-rate constants.
    result : SubspaceResult
        The selected candidate's subspace; its ``privacy`` is the whole search's report.
    candidates : list of dict
        ``round``, ``c1``, ``c2`` and ``score`` (noisy validation captured variance when private,
        the true captured variance when ``tuning="nonprivate"``) of every candidate.
    privacy : PrivacyReport
    tuning : str
        ``"private"`` or ``"nonprivate"`` (benchmark mode, NOT differentially private).
    """

    c1: float
    c2: float
    result: SubspaceResult
    candidates: list[dict[str, Any]]
    privacy: PrivacyReport
    tuning: str


@renamed(oja_module.LEARNING_RATE_NAMES)
def learning_rate_grid(learning_rate_scale: float, learning_rate_offset: float,
                       n_rounds: int) -> list[tuple[int, float, float]]:
    """``(round, c1, c2)`` of every candidate: the start, then 4 dyadic points per further round.

    Parameters
    ----------
    learning_rate_scale : float
        c1 of the start ``eta_t = c1 / (c2 + t)`` (the old name ``c1`` still works, with a FutureWarning).
    learning_rate_offset : float
        c2 of the start (the old name ``c2`` still works, with a FutureWarning).
    n_rounds : int
        Rounds: round 1 is the start, round i >= 2 the four points ``(c1 2^{+-(i-1)}, c2 2^{+-(i-1)})``.

    Returns
    -------
    list of (int, float, float)
        ``(round, c1, c2)`` of every candidate.
    """
    c1, c2 = float(learning_rate_scale), float(learning_rate_offset)
    grid = [(1, c1, c2)]
    for i in range(2, n_rounds + 1):
        f = 2.0 ** (i - 1)
        grid += [(i, c1 * u, c2 * v) for u in (f, 1 / f) for v in (f, 1 / f)]
    return grid


def _score_block(d: int) -> int:
    """Rows of X per block of :func:`_captured` (public: from d)."""
    return max(1, (1 << 22) // max(1, d))


def _score_widened(score: NoisyRelease, n_val: int, d: int, k: int, C: float) -> NoisyRelease:
    """The validation score's release widened for the rounding of :func:`_captured`.

    Each ``p_c = x^T w_c`` is off by at most ``gamma_d ||x||`` (``||w_c|| <= 1``), so its computed square
    by at most ``(2 gamma_d + gamma_d^2 + u (1 + gamma_d)^2) C^2``: over the k columns of a row within
    ``gamma_(k (2 d + 3)) C^2``; the ``n_val k`` squares (each ``<= C^2``, a row's ``<= C^2``) are summed
    within a block (any order), each block into the total, then divided by ``n_val``: ``h = k (2 d + 3)
    + n_val k + blocks + 1`` in all, terms ``C^2 / n_val`` (times ``1 + 1e-6`` for W's orthonormality).
    """
    blocks = -(-n_val // _score_block(d))
    h = k * (2 * d + 3) + n_val * k + blocks + 1
    return widen_release(score, n=n_val, relation=Relation.REPLACE_ONE, kind="sums",
                         term_bound=sensitivity_norm(C) ** 2 * (1.0 + 1e-6) ** 2 / n_val,
                         summation=Summation(followed_by=h - (n_val + 1)))


def _captured(X: np.ndarray, W: np.ndarray, C: float, mode: NormViolation,
              owner: str = "select_learning_rate") -> float:
    """Mean of ``||W^T x_i||^2`` over clipped rows (in blocks, never modifying X)."""
    total = 0.0
    step = _score_block(X.shape[1])
    for a in range(0, X.shape[0], step):
        block = np.array(X[a : a + step], dtype=np.float64)
        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=False, first_row=a, owner=owner)
        total += float(np.sum((np.asarray(block) @ W) ** 2))
    return total / X.shape[0]


#: The parameters of :func:`select_learning_rate`; the learning rates and ``method_params`` are checked by
#: the method itself (before the charge, when the search plans the runs' cost).
_PARAMS: Table = {
    **without(PRIVACY_PARAMETERS, "calibration"), "method": Options(tuple(_METHODS)),
    "tuning": Options(("private", "nonprivate")), "n_rounds": Interval(1, None, "left", integer=True),
    "validation_share": SHARE,
}


@dataclass(frozen=True)
class _Search:
    """The public facts of one search, fixed before anything is charged or drawn."""

    grid: list[tuple[int, float, float]]
    private: bool
    n_val: int  # rows in the validation set (0 for the non-private search)
    run_epsilon: float
    run_delta: float
    validation: ReleasePlan | None  # the noisy scores (private search), charged with the search


def _run_events(n: int, d: int, k: int, budget: tuple[float, float], row_norm: float, method: str,
                grid: list[tuple[int, float, float]], on_norm_violation: NormViolation,
                method_params: dict[str, Any]) -> list[dp_accounting.DpEvent]:
    """The events of one candidate run on n rows of d features at ``budget``: they depend only on the
    shape and the public parameters (not on (c1, c2)), planned on a public stand-in of that shape."""
    stand_in = np.broadcast_to(np.zeros((1, d)), (n, d))
    with warnings.catch_warnings():  # the runs below warn about their parameters, once each
        warnings.simplefilter("ignore", oja_module.AnalysisRangeWarning)
        return oja_module.planned_events(
            method, stand_in, k, epsilon=budget[0], delta=budget[1], row_norm=row_norm,
            learning_rate_scale=grid[0][1], learning_rate_offset=grid[0][2],
            on_norm_violation=on_norm_violation, **method_params)


def _plan(n: int, d: int, k: int, *, budget: PrivacyBudget, relation: Relation, row_norm: float, C: float,
          method: str, grid: list[tuple[int, float, float]], validation_share: float, tuning: str,
          on_norm_violation: NormViolation, method_params: dict[str, Any],
          owner: str) -> tuple[ReleasePlan, _Search]:
    """The whole search's cost (J runs and J noisy scores, on disjoint rows), from public inputs.

    The non-private search charges nothing; its plan records the events of one run at the whole budget
    and a ``NonPrivateDpEvent`` (what its report says)."""
    J = len(grid)
    notes = [f"{J} candidates over {grid[-1][0]} rounds (tuning={tuning})."]
    if tuning != "private":
        notes.append("Learning rate tuned NON-PRIVATELY on the data (benchmark mode): the output is not "
                     "differentially private.")
        search = _Search(grid, False, 0, budget.epsilon, budget.delta, None)
        events = _run_events(n, d, k, (budget.epsilon, budget.delta), row_norm, method, grid,
                             on_norm_violation, method_params)
        return ReleasePlan(owner, relation, (*events, dp_accounting.NonPrivateDpEvent()),
                           notes=tuple(notes)), search
    n_val = max(1, int(round(validation_share * n)))
    if n_val >= n:
        raise ValueError(f"{owner}: validation_share={validation_share:g} leaves no training rows.")
    run_eps, run_delta = budget.epsilon / J, budget.delta / J
    s_val = analytic_noise_multiplier(budget.epsilon, budget.delta) * math.sqrt(J)
    score_sens = sensitivity_norm(C) ** 2 / n_val  # one row moves a captured variance by <= C^2 / n_val
    val_event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s_val), J)
    run_events = _run_events(n - n_val, d, k, (run_eps, run_delta), row_norm, method, grid,
                             on_norm_violation, method_params)
    train = dp_accounting.SelfComposedDpEvent(compose(run_events), J)
    notes.append("Secret random train/validation split; every candidate run permutes its rows with "
                 "its own secret permutation (independent runs, composed).")
    val_std = s_val * sensitivity_norm(C) ** 2 / n_val
    validation = ReleasePlan(f"{owner} (validation scores)", relation, (), (_score_widened(
        NoisyRelease("score", "gaussian", val_std, score_sens), n_val, d, k, C),))
    search = _Search(grid, True, n_val, run_eps, run_delta, validation)
    return ReleasePlan(owner, relation, (ParallelDpEvent([train, val_event]),), notes=tuple(notes)), search


def _run_candidates(X: Any, k: int, search: _Search, releaser: Releaser, *, row_norm: float, C: float,
                    method: str, on_norm_violation: NormViolation,
                    method_params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[SubspaceResult]]:
    """Inside the charged block: the secret split, the J runs and their (noisy) validation scores."""
    J = len(search.grid)
    states = releaser.spawn(J + 1)  # each run's secret random state, and the scores'
    X_train, X_val = X, X
    if search.private:
        # a secret, uniformly random split (not positional: a data-dependent row order would break
        # parallel composition); sorted indices read a memmap in order
        perm = releaser.permutation(int(X.shape[0]))
        X_train, X_val = X[np.sort(perm[search.n_val:])], X[np.sort(perm[:search.n_val])]
    # the scores' noise has its own stream (seeded: a child of the run's seed; secure: OS entropy);
    # the whole search, scores included, was charged once by the enclosing release
    scorer = None if search.validation is None else releaser.part(search.validation, states[J])
    candidates: list[dict[str, Any]] = []
    results: list[SubspaceResult] = []
    for (i, a, b), state in zip(search.grid, states[:J], strict=True):
        res = _METHODS[method](X_train, k, epsilon=search.run_epsilon, delta=search.run_delta,
                               row_norm=row_norm, learning_rate_scale=a, learning_rate_offset=b,
                               on_norm_violation=on_norm_violation, random_state=state, **method_params)
        score = _captured(X_val, res.components, C, on_norm_violation)
        if scorer is not None:
            score = scorer.add("score", score)
        candidates.append({"round": i, "c1": a, "c2": b, "score": score})
        results.append(res)
    return candidates, results


@renamed(oja_module.LEARNING_RATE_NAMES)
@validated(_PARAMS)
def select_learning_rate(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    method: Literal["dp_pca", "private_oja"] = "dp_pca",
    learning_rate_scale: float | None = None,
    learning_rate_offset: float | None = None,
    n_rounds: int = 2,
    validation_share: float = 0.1,
    tuning: Literal["private", "nonprivate"] = "private",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    **method_params: Any,
) -> LearningRateSearch:
    """Choose ``(c1, c2)`` of ``eta_t = c1 / (c2 + t)`` for ``dp_pca`` or ``private_oja`` (module
    docstring: grid and privacy). The search starts from ``learning_rate_scale`` (c1; default 100 /
    row_norm^2 for dp_pca, 10 / row_norm^2 for private_oja) and ``learning_rate_offset`` (c2; default
    1 for dp_pca, 10 for private_oja); the old names ``c1``, ``c2`` still work, with a FutureWarning.

    ``X`` must allow several passes (an array or memmap). ``method_params`` go to the method.
    ``random_state="secure"`` runs every candidate with the secure noise source and draws the split
    and the scores' noise from OS entropy.

    Privacy
    -------
    Replace-one, (epsilon, delta) for the whole search (``tuning="private"``): the J runs compose
    on the training rows, the J noisy scores (sensitivity ``C^2 / n_val`` each) are calibrated
    together, and the two parts are on disjoint rows (``ParallelDpEvent``); see the module
    docstring. ``tuning="nonprivate"`` is NOT differentially private and is reported so.
    """
    inputs = _SearchInputs(k, epsilon, delta, row_norm, method, learning_rate_scale, learning_rate_offset,
                           int(n_rounds), float(validation_share), tuning, on_norm_violation, method_params)
    return run(_LearningRateSearch(), inputs, X,
               RunSettings(accountant if tuning == "private" else None, random_state))


@dataclass(frozen=True)
class _SearchInputs:
    """The public inputs of :func:`select_learning_rate` (as given)."""

    k: int
    epsilon: float
    delta: float
    row_norm: float
    method: str
    learning_rate_scale: float | None
    learning_rate_offset: float | None
    n_rounds: int
    validation_share: float
    tuning: str
    on_norm_violation: NormViolation
    method_params: dict[str, Any]


@dataclass(frozen=True, eq=False)
class _SearchChecked:
    inputs: _SearchInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    grid: list[tuple[int, float, float]]
    n: int
    d: int
    calibration: str = "tight"


@dataclass(frozen=True, eq=False)
class _Data:
    """The validated rows (an array or memmap); ``n`` is not passed to the report (None)."""

    X: Any
    d: int
    n: None = None


class _LearningRateSearch(Mechanism[_SearchInputs, LearningRateSearch]):
    """The search as the release template runs it: the whole search (every run and every score)
    charged once, then the secret split, the runs and their noisy scores inside the charge."""

    label = "select_learning_rate"
    stacklevel = 4  # frames above run: select_learning_rate, the constraint check, the renaming, the caller

    def check(self, inputs: _SearchInputs, X: Any) -> _SearchChecked:
        budget, rel, C = check_mechanism_inputs(
            epsilon=inputs.epsilon, delta=inputs.delta, row_norm=inputs.row_norm, relation="replace_one",
            calibration="tight", on_norm_violation=inputs.on_norm_violation, owner=self.label,
            allowed_relations=(Relation.REPLACE_ONE,),
        )
        if not hasattr(X, "shape") or len(X.shape) != 2:
            raise TypeError(f"{self.label} needs an array or memmap of shape (n, d): it passes over the "
                            "data once per candidate.")
        d0 = _DEFAULTS[inputs.method]
        c1, c2 = inputs.learning_rate_scale, inputs.learning_rate_offset
        grid = learning_rate_grid(d0[0] / C**2 if c1 is None else float(c1),
                                  d0[1] if c2 is None else float(c2), inputs.n_rounds)
        return _SearchChecked(inputs, budget, rel, C, grid, int(X.shape[0]), int(X.shape[1]))

    def plan(self, inputs: _SearchChecked, n: int | None, d: int | None) -> ReleasePlan:
        return self._search(inputs)[0]

    def _search(self, inputs: _SearchChecked) -> tuple[ReleasePlan, _Search]:
        ins = inputs.inputs
        return _plan(inputs.n, inputs.d, ins.k, budget=inputs.budget, relation=inputs.relation,
                     row_norm=ins.row_norm, C=inputs.C, method=ins.method, grid=inputs.grid,
                     validation_share=ins.validation_share, tuning=ins.tuning,
                     on_norm_violation=ins.on_norm_violation, method_params=ins.method_params,
                     owner=self.label)

    def read(self, inputs: _SearchChecked, X: Any) -> _Data:
        """The whole input checked (finite; within the bound with "raise") before anything is charged."""
        accumulate(X, row_norm=inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,
                   want_sum=False, want_second=False, owner=self.label)
        return _Data(X, inputs.d)

    def statistic(self, inputs: _SearchChecked, rows: _Data, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        ins, search = inputs.inputs, self._search(inputs)[1]
        return {"candidates": Drawn(lambda releaser: _run_candidates(
            rows.X, ins.k, search, releaser, row_norm=ins.row_norm, C=inputs.C, method=ins.method,
            on_norm_violation=ins.on_norm_violation, method_params=ins.method_params))}

    def report_facts(self, inputs: _SearchChecked) -> dict[str, Any]:
        return {"mechanism": f"{inputs.inputs.method}+lr_search", "budget": inputs.budget,
                "calibration": "tight"}

    def post_process(self, inputs: _SearchChecked, rows: _Data, released: Released,
                     report: Any) -> LearningRateSearch:
        """The best candidate by its (noisy) score; the whole search's report."""
        candidates, results = released["candidates"]
        best = int(np.argmax([c["score"] for c in candidates]))
        grid = inputs.grid
        return LearningRateSearch(c1=grid[best][1], c2=grid[best][2],
                                  result=dataclasses.replace(results[best], privacy=report),
                                  candidates=candidates, privacy=report, tuning=inputs.inputs.tuning)
