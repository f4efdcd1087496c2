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
their own secret permutation (fresh per run: :func:`~dpspectral.pca.oja.dp_pca` and
:func:`~dpspectral.pca.oja.private_oja` shuffle in-memory data), each calibrated to
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

from .._validation import as_generator, check_choice, check_mechanism_inputs, check_share
from ..privacy.accounting import Accountant, ParallelDpEvent, PrivacyReport, certify_release, compose
from ..privacy.budget import Relation
from ..privacy.clipping import NormViolation, clip_rows, sensitivity_norm
from ..privacy.gaussian import analytic_noise_multiplier
from ..privacy.pipeline import charge, validate_rows
from ..results import SubspaceResult
from . import oja as oja_module

__all__ = ["LearningRateSearch", "learning_rate_grid", "select_learning_rate"]

_METHODS: dict[str, Callable[..., SubspaceResult]] = {
    "dp_pca": oja_module.dp_pca, "private_oja": oja_module.private_oja,
}
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


def learning_rate_grid(c1: float, c2: float, n_rounds: int) -> list[tuple[int, float, float]]:
    """``(round, c1, c2)`` of every candidate: the start, then 4 dyadic points per further round."""
    grid = [(1, float(c1), float(c2))]
    for i in range(2, n_rounds + 1):
        f = 2.0 ** (i - 1)
        grid += [(i, c1 * u, c2 * v) for u in (f, 1 / f) for v in (f, 1 / f)]
    return grid


def _captured(X: np.ndarray, W: np.ndarray, C: float, mode: NormViolation,
              owner: str = "select_learning_rate") -> float:
    """Mean of ``||W^T x_i||^2`` over clipped rows (in blocks, never modifying X)."""
    total = 0.0
    step = max(1, (1 << 22) // max(1, X.shape[1]))
    for a in range(0, X.shape[0], step):
        block = np.array(X[a : a + step], dtype=np.float64)
        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=False, first_row=a, owner=owner)
        total += float(np.sum((np.asarray(block) @ W) ** 2))
    return total / X.shape[0]


def select_learning_rate(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    method: Literal["dp_pca", "private_oja"] = "dp_pca",
    c1: float | None = None,
    c2: float | None = None,
    n_rounds: int = 2,
    validation_share: float = 0.1,
    tuning: Literal["private", "nonprivate"] = "private",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    **method_params: Any,
) -> LearningRateSearch:
    """Choose ``(c1, c2)`` for ``dp_pca`` or ``private_oja`` (module docstring: grid and privacy).

    ``X`` must allow several passes (an array or memmap). ``method_params`` go to the method.
    """
    owner = "select_learning_rate"
    check_choice(method, "method", tuple(_METHODS), owner)
    check_choice(tuning, "tuning", ("private", "nonprivate"), owner)
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation="replace_one", calibration="tight",
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=(Relation.REPLACE_ONE,),
    )
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, int) or n_rounds < 1:
        raise ValueError(f"The 'n_rounds' parameter of {owner} must be an int >= 1. Got {n_rounds!r}.")
    v_share = check_share(validation_share, "validation_share", owner)
    if not hasattr(X, "shape") or len(X.shape) != 2:
        raise TypeError(f"{owner} needs an array or memmap of shape (n, d): it passes over the data "
                        "once per candidate.")
    # the whole input, before anything is charged or drawn
    validate_rows(X, row_norm=C, on_norm_violation=on_norm_violation, owner=owner)
    n = int(X.shape[0])
    d0 = _DEFAULTS[method]
    grid = learning_rate_grid(d0[0] if c1 is None else float(c1), d0[1] if c2 is None else float(c2),
                              n_rounds)
    J = len(grid)
    rng = as_generator(random_state)
    seeds = np.random.SeedSequence(int(rng.integers(2**63))).spawn(J + 1)
    run = _METHODS[method]
    private = tuning == "private"
    notes = [f"{J} candidates over {n_rounds} rounds (tuning={tuning})."]
    if private:
        n_val = max(1, int(round(v_share * n)))
        if n_val >= n:
            raise ValueError(f"{owner}: validation_share={v_share:g} leaves no training rows.")
        # a secret, uniformly random split (not positional: a data-dependent row order would break
        # parallel composition); sorted indices read a memmap in order
        perm = rng.permutation(n)
        X_train, X_val = X[np.sort(perm[n_val:])], X[np.sort(perm[:n_val])]
        run_eps, run_delta = budget.epsilon / J, budget.delta / J
        s_val = analytic_noise_multiplier(budget.epsilon, budget.delta) * math.sqrt(J)
        val_std = s_val * sensitivity_norm(C) ** 2 / n_val
        val_event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s_val), J)
        # the runs' events do not depend on (c1, c2): planned once, before anything is drawn
        with warnings.catch_warnings():  # the runs below warn about their parameters, once each
            warnings.simplefilter("ignore", oja_module.AnalysisRangeWarning)
            run_events: Any = run(X_train, k, epsilon=run_eps, delta=run_delta, row_norm=row_norm,
                             c1=grid[0][1], c2=grid[0][2], on_norm_violation=on_norm_violation,
                             _plan_only=True, **method_params)
        train = dp_accounting.SelfComposedDpEvent(compose(run_events), J)
        events: list[dp_accounting.DpEvent] = [ParallelDpEvent([train, val_event])]
        notes.append("Secret random train/validation split; every candidate run permutes its rows with "
                     "its own secret permutation (independent runs, composed).")
    else:
        X_train, X_val, run_eps, run_delta = X, X, budget.epsilon, budget.delta
        val_std = 0.0
        events = []
        notes.append("Learning rate tuned NON-PRIVATELY on the data (benchmark mode): the output is not "
                     "differentially private.")
    # charged before any candidate runs (nothing is drawn before the charge; a refusal costs nothing)
    with charge(accountant if private else None, events, rel, owner):
        candidates: list[dict[str, Any]] = []
        results: list[SubspaceResult] = []
        val_rng = np.random.default_rng(seeds[J])
        for (i, a, b), seed in zip(grid, seeds[:J], strict=True):
            res = run(X_train, k, epsilon=run_eps, delta=run_delta, row_norm=row_norm, c1=a, c2=b,
                      random_state=np.random.default_rng(seed), on_norm_violation=on_norm_violation,
                      **method_params)
            score = _captured(X_val, res.components, C, on_norm_violation)
            if private:
                score += float(val_rng.standard_normal()) * val_std
            candidates.append({"round": i, "c1": a, "c2": b, "score": score})
            results.append(res)
        best = int(np.argmax([c["score"] for c in candidates]))
        if not private:
            events = [*results[0].privacy.events, dp_accounting.NonPrivateDpEvent()]
        report = certify_release(events, mechanism=f"{method}+lr_search", budget=budget, relation=rel,
                                 calibration="tight", notes=notes, stacklevel=3)
    result = dataclasses.replace(results[best], privacy=report)
    return LearningRateSearch(c1=grid[best][1], c2=grid[best][2], result=result, candidates=candidates,
                              privacy=report, tuning=tuning)

