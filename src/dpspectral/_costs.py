"""What a scikit-learn pipeline will spend, known before it is fitted (:func:`pipeline_cost`).

The cost is planned from public inputs only (each step's parameters and the number of features): no
data are read and no noise is drawn. Each private step's events are the ones its fit charges: planned
by the same functions the fit uses (:class:`~dpspectral.DPStandardScaler`, ``DPPCA`` with a covariance
method and the tight calibration, :class:`~dpspectral.DPLinearDiscriminantAnalysis`), or, where they
cannot be planned without the data or are not planned here, the step's declared ``(epsilon, delta)``
(an :class:`~dpspectral.privacy.EpsilonDeltaDpEvent`, composed with the rest by basic composition, which
can only overstate the cost). The whole is composed by the library's accountant
(:func:`~dpspectral.privacy.epsilon_of`).

A step that learns from the rows without differential privacy (scikit-learn's ``StandardScaler``,
``LogisticRegression``...) is reported as not private: the fitted pipeline is then not differentially
private (``epsilon`` is infinite), although the private steps still spend what they spend
(``charged_epsilon``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dp_accounting
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags

from ._constraints import DELTA, NONE, Interval, validated
from .privacy._accounting import Accountant, EpsilonDeltaDpEvent, compose, epsilon_of
from .privacy._budget import BudgetExceededError, PrivacyBudget, Relation, as_relation

__all__ = ["PipelineCost", "StepCost", "pipeline_cost"]

_COUNT = Interval(1, None, "left", integer=True)
#: What a step's events are: planned exactly, its declared budget, nothing (stateless), not private.
PLANNED, DECLARED, STATELESS, NOT_PRIVATE = "planned", "declared budget", "stateless", "not private"


@dataclass(frozen=True)
class StepCost:
    """The cost of one step of a pipeline.

    Attributes
    ----------
    name : str
        The step's name in the pipeline (``"outer__inner"`` in a nested pipeline).
    estimator : str
        Its class name.
    status : {"planned", "declared budget", "stateless", "not private"}
        ``"planned"``: the events its fit charges, planned from its public parameters; ``"declared
        budget"``: its ``(epsilon, delta)`` as one event (an upper bound on what it charges);
        ``"stateless"``: it learns nothing from the rows; ``"not private"``: it learns from the rows
        without differential privacy.
    events : tuple of DpEvent
        What the step's fit charges (empty for a stateless or non-private step).
    relation : Relation or None
        The neighbouring relation its guarantee is stated for (None: not a private step).
    epsilon, delta : float
        The step alone: epsilon at its delta (infinite for a non-private step).
    note : str
        How the events were obtained, in words.
    """

    name: str
    estimator: str
    status: str
    events: tuple[dp_accounting.DpEvent, ...]
    relation: Relation | None
    epsilon: float
    delta: float
    note: str

    @property
    def private(self) -> bool:
        """Whether the step's fit is differentially private (or learns nothing from the rows)."""
        return self.status != NOT_PRIVATE


@dataclass(frozen=True)
class PipelineCost:
    """The composed cost of a pipeline's fits (:func:`pipeline_cost`).

    Attributes
    ----------
    epsilon : float
        The guarantee of the fitted pipeline at ``delta``: the composition of every private step's
        events, or infinity when a step learns from the rows without privacy.
    delta : float
    charged_epsilon : float
        What fitting charges to the accountant (at ``delta``): the composition of the private steps'
        events, whether or not another step is private.
    relation : Relation or None
        The relation every private step protects (None when there is no private step).
    steps : tuple of StepCost
    n_fits : int
        How many fits were counted (e.g. the folds of a cross-validation, plus a refit).
    accountant : Accountant or None
        The accountant the private steps share (None when none has one).
    within_ceiling : bool or None
        Whether the shared accountant's ceiling would allow it now (None: no shared ceiling).
    notes : tuple of str
    """

    epsilon: float
    delta: float
    charged_epsilon: float
    relation: Relation | None
    steps: tuple[StepCost, ...]
    n_fits: int
    accountant: Accountant | None
    within_ceiling: bool | None
    notes: tuple[str, ...]

    @property
    def private(self) -> bool:
        """Whether every step is private or stateless (the fitted pipeline is then differentially private)."""
        return all(step.private for step in self.steps)

    @property
    def events(self) -> tuple[dp_accounting.DpEvent, ...]:
        """Every event charged by one fit, step by step."""
        return tuple(e for step in self.steps for e in step.events)

    def __str__(self) -> str:
        a = max([4, *(len(s.name) for s in self.steps)])
        b = max([9, *(len(s.estimator) for s in self.steps)])
        lines = [f"{'step':<{a}}  {'estimator':<{b}}  {'status':<15}  {'epsilon':<8}  delta"]
        for s in self.steps:
            eps, dlt = ("-", "-") if s.status in (STATELESS, NOT_PRIVATE) else (f"{s.epsilon:.4g}",
                                                                               f"{s.delta:.3g}")
            eps = "inf" if s.status == NOT_PRIVATE else eps
            lines.append(f"{s.name:<{a}}  {s.estimator:<{b}}  {s.status:<15}  {eps:<8}  {dlt}")
        fits = f" ({self.n_fits} fits)" if self.n_fits != 1 else ""
        lines.append(f"total{fits}: ({self.epsilon:.4g}, {self.delta:.3g})-DP"
                     + (f" under {self.relation.value} neighbours" if self.relation else "")
                     + ("" if self.private else f"; NOT private; the private steps charge "
                        f"epsilon={self.charged_epsilon:.4g}"))
        return "\n".join(lines + list(self.notes))


@validated({"n_features": [NONE, _COUNT], "delta": [NONE, DELTA], "n_fits": _COUNT})
def pipeline_cost(estimator: Any, *, n_features: int | None = None, delta: float | None = None,
                  n_fits: int = 1) -> PipelineCost:
    """The privacy cost of fitting ``estimator`` (a ``Pipeline`` or one estimator), known before fitting.

    Walks the pipeline (nested pipelines too), plans every step's events from its public parameters
    and composes them with the library's accountant. Reads no data and draws nothing.

    Parameters
    ----------
    estimator : Pipeline or estimator
        What will be fitted. A ``"passthrough"`` or None step is skipped. Other meta-estimators (a search,
        a ``ColumnTransformer``, a ``FeatureUnion``) are refused: pass the pipeline they fit and ``n_fits``.
    n_features : int or None, default=None
        The number of columns of the data (public, like an array's shape). ``DPPCA(method="auto")``
        needs it (the choice depends on d); None is accepted when no step needs it.
    delta : float or None, default=None
        The delta at which the total epsilon is stated. None: the shared accountant's delta when there is
        one, else the sum of the private steps' deltas (times ``n_fits``).
    n_fits : int, default=1
        How many times the pipeline is fitted on the private rows: ``n_splits`` for
        ``cross_val_score`` (plus 1 for a refit on all rows), ``n_candidates * n_splits + 1`` for a
        ``GridSearchCV``. The fits compose (each sees most of the same rows).

    Returns
    -------
    PipelineCost
        ``epsilon`` (infinite when a step is not private), ``delta``, ``charged_epsilon`` (what fitting
        charges to the shared accountant), the relation and each step's cost.

    Raises
    ------
    ValueError
        A private step's parameters are invalid (the message its ``fit`` would give), the private steps
        do not share one accountant (when any has one), or they protect different relations (their
        guarantees do not compose).

    Privacy
    -------
    None by itself: it reads only public parameters and ``n_features``.
    """
    steps: list[StepCost] = []
    accountants: dict[str, Any] = {}
    d = n_features
    learnt_without_privacy = False
    for name, step in _steps(estimator, ""):
        cost, d = _step_cost(name, step, d)
        if cost.status in (PLANNED, DECLARED):
            accountants[name] = step.get_params(deep=False).get("accountant")
            if learnt_without_privacy:
                cost = _replace_note(cost, " Its guarantee does not cover the original rows: an earlier "
                                           "step learnt its transform from them without privacy.")
        learnt_without_privacy |= cost.status == NOT_PRIVATE
        steps.append(cost)
    accountant = _shared_accountant(accountants)
    return _compose(tuple(steps), accountant, delta, int(n_fits))


def _steps(estimator: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """``(name, step)`` for every step that is fitted, nested pipelines flattened."""
    if isinstance(estimator, Pipeline):
        for name, step in estimator.steps:
            if step is None or (isinstance(step, str) and step == "passthrough"):
                continue
            yield from _steps(step, f"{prefix}{name}__" if isinstance(step, Pipeline) else prefix + name)
        return
    if not isinstance(estimator, BaseEstimator):
        raise TypeError(f"pipeline_cost takes a scikit-learn Pipeline or estimator; got "
                        f"{type(estimator).__name__}.")
    nested = [k for k, v in estimator.get_params(deep=False).items()
              if isinstance(v, BaseEstimator) or (isinstance(v, list) and v and isinstance(v[0], tuple))]
    if nested:
        raise ValueError(
            f"pipeline_cost does not plan {type(estimator).__name__}, which fits other estimators "
            f"({', '.join(nested)}): pass the pipeline it fits, with n_fits = the number of fits it makes "
            "(for a search: candidates x folds, plus 1 for the refit).")
    yield (prefix or type(estimator).__name__), estimator


def _step_cost(name: str, step: Any, d: int | None) -> tuple[StepCost, int | None]:
    """One step's cost and the number of features it passes on (None when not known)."""
    from ._estimators import DPPCA
    from .gep._lda import DPLinearDiscriminantAnalysis
    from .preprocessing import DPStandardScaler

    kind = type(step).__name__
    if isinstance(step, DPStandardScaler):
        plan = step._plan(d)
        return _private(name, kind, plan.events, plan.relation, step.delta, PLANNED,
                        "planned: the scaler's one release (sums, sums of squares, count)"), d
    if isinstance(step, DPPCA):
        return _dppca_cost(name, step, d)
    if isinstance(step, DPLinearDiscriminantAnalysis):
        return _lda_cost(name, step), None
    params = step.get_params(deep=False)
    if "epsilon" in params:
        return _declared(name, step, params, "its events are not planned here"), None
    if not get_tags(step).requires_fit:
        return StepCost(name, kind, STATELESS, (), None, 0.0, 0.0, "stateless: learns nothing from the "
                        "rows (a fixed map of each row)"), _same_width(step, d)
    return StepCost(name, kind, NOT_PRIVATE, (), None, math.inf, 0.0,
                    "not private: learns from the private rows without differential privacy"), \
        _same_width(step, d)


def _same_width(step: Any, d: int | None) -> int | None:
    from sklearn.base import OneToOneFeatureMixin

    return d if isinstance(step, OneToOneFeatureMixin) else None


def _private(name: str, kind: str, events: Any, relation: Relation, delta: Any, status: str,
             note: str) -> StepCost:
    events = tuple(events)
    step_delta = float(delta or 0.0)
    eps = epsilon_of(list(events), step_delta, relation=relation) if events else 0.0
    return StepCost(name, kind, status, events, relation, float(eps), step_delta, note)


def _declared(name: str, step: Any, params: dict[str, Any], why: str) -> StepCost:
    """A private step known by its declared ``(epsilon, delta)`` (basic composition with the rest)."""
    kind = type(step).__name__
    if hasattr(step, "_check_parameter_table"):
        step._check_parameter_table()  # the messages its fit would give, before anything is read
    eps, dlt = params.get("epsilon"), params.get("delta") or 0.0
    if eps is None:
        raise ValueError(f"The 'epsilon' parameter of {kind} (step {name!r}) is required. Got None instead.")
    budget = PrivacyBudget(float(eps), float(dlt))
    event = EpsilonDeltaDpEvent(budget.epsilon, budget.delta)
    return _private(name, kind, (event,), _default_relation(step, params), budget.delta, DECLARED,
                    f"declared budget ({budget.epsilon:g}, {budget.delta:g}): {why}; composed by basic "
                    "composition (an upper bound on what its fit charges)")


def _default_relation(step: Any, params: dict[str, Any]) -> Relation:
    """The relation a step protects: its ``relation``, else its method's first (DPLowRank: auto's choice)."""
    from ._registry import choose_lowrank_method, get_method

    if params.get("relation") is not None:
        return as_relation(params["relation"], owner=type(step).__name__)
    method = params.get("method")
    if method == "auto" and getattr(step, "_task", "") == "lowrank":
        method = choose_lowrank_method(relation=None).method
    if isinstance(method, str) and method != "auto":
        return get_method(method).relations[0]
    return Relation.REPLACE_ONE


def _dppca_cost(name: str, step: Any, d: int | None) -> tuple[StepCost, int | None]:
    """DPPCA: the covariance methods' plan with the tight calibration; otherwise the declared budget."""
    from ._estimators import supported_relation
    from ._options import clip_fields
    from ._registry import choose_method, get_method
    from .pca._covariance import DEFAULT_CLIP_SHARE, UNCENTRED_CLIP_SHARE, covariance_plan

    step._check_parameter_table()
    kind = type(step).__name__
    d_out = step.n_components if step.n_components is not None else d
    method = step.method
    if method == "auto":
        if d is None:
            raise ValueError(f"pipeline_cost: step {name!r} is DPPCA(method='auto'), whose method depends on "
                             "the number of features; pass n_features (the data's number of columns).")
        method = choose_method(relation=step.relation, delta=step.delta, n_features=d, stream=False).method
    entry = get_method(method, owner=kind)
    if not entry.private or not entry.certified:
        return StepCost(name, kind, NOT_PRIVATE, (), None, math.inf, 0.0,
                        f"not private: method={method!r} is not a certified private method"), d_out
    relation = supported_relation(entry, step.relation, kind)
    calibration = step.calibration or entry.default_calibration
    params = step.get_params(deep=False)
    if method not in ("analyze_gauss", "mod_sulq") or calibration != "tight" or step.method_params:
        return _declared(name, step, {**params, "relation": relation, "delta": params["delta"]
                                      if entry.needs_delta else 0.0},
                         f"method={method!r}"), d_out
    private_mean = isinstance(step.centering, str) and step.centering == "private"
    adaptive, _, clip_share = clip_fields(True if step.adaptive_clip is None else step.adaptive_clip, kind)
    if clip_share is None:
        clip_share = DEFAULT_CLIP_SHARE if private_mean else UNCENTRED_CLIP_SHARE
    plan = covariance_plan(method, budget=PrivacyBudget(float(step.epsilon), float(step.delta)),
                           relation=relation, calibration="tight", row_norm=float(step.row_norm), n=None, d=d,
                           private_mean=private_mean, release_count="release_count" in entry.options,
                           mean_share=float(step.mean_share), clip_share=clip_share if adaptive else None)
    return _private(name, kind, plan.events, relation, step.delta, PLANNED,
                    f"planned: {method} ({', '.join(r.name for r in plan.releases)})"), d_out


def _lda_cost(name: str, step: Any) -> StepCost:
    """DPLinearDiscriminantAnalysis: every stage of its moments release (label set, histogram, moments)."""
    from .gep._moments import DEFAULT_SHARES, moments_stages
    from .privacy._adaptive import DEFAULT_CLIP_SHARE
    from .privacy._clipping import check_row_norm

    kind = type(step).__name__
    step._check_parameter_table()
    relation = step._relation()
    if relation not in (Relation.REPLACE_ONE, Relation.ADD_REMOVE):
        raise ValueError(f"The 'relation' parameter of {kind} must be 'replace_one' or 'add_remove'. Got "
                         f"{step.relation!r} instead.")
    budget = PrivacyBudget(float(step.epsilon), float(step.delta))
    budget.require_delta(kind)
    share = (DEFAULT_CLIP_SHARE if step.clip_share is None else float(step.clip_share)) \
        if step.adaptive_clip else None
    _, _, _, stages = moments_stages(budget, relation, check_row_norm(step.row_norm, kind), DEFAULT_SHARES,
                                     share, classes_public=step.classes is not None)
    events = [e for stage in stages for e in stage]
    return _private(name, kind, events, relation, step.delta, PLANNED,
                    f"planned: the moments release ({len(stages)} stages)")


def _replace_note(cost: StepCost, extra: str) -> StepCost:
    from dataclasses import replace

    return replace(cost, note=cost.note + extra)


def _shared_accountant(accountants: dict[str, Any]) -> Accountant | None:
    """The one accountant of the private steps; refuse steps that do not share it (when any has one)."""
    given = {id(a): a for a in accountants.values() if a is not None}
    if not given:
        return None
    if len(given) > 1:
        raise ValueError("pipeline_cost: the private steps hold different accountants ("
                         + ", ".join(f"{n}: {a!r}" for n, a in accountants.items()) + "); give them the same "
                         "Accountant, so that one ledger composes everything the pipeline spends.")
    missing = [n for n, a in accountants.items() if a is None]
    if missing:
        raise ValueError(f"pipeline_cost: the private steps {missing} hold no accountant while others do; "
                         "give every private step the same Accountant, or their spending is not recorded.")
    return next(iter(given.values()))


def _compose(steps: tuple[StepCost, ...], accountant: Accountant | None, delta: float | None,
             n_fits: int) -> PipelineCost:
    """Compose the private steps' events (``n_fits`` times) with the accountant's method and delta."""
    private = [s for s in steps if s.status in (PLANNED, DECLARED)]
    relations = {s.relation for s in private}
    if accountant is not None and accountant.relation is not None:
        relations.add(accountant.relation)
    if len(relations) > 1:
        raise ValueError("pipeline_cost: the private steps (and the accountant) protect different "
                         f"relations ({', '.join(sorted(str(r.value) for r in relations if r))}); their "
                         "guarantees do not compose. Use one relation throughout.")
    relation = next(iter(relations)) if relations else None
    one_fit = [e for s in private for e in s.events]
    events = one_fit if n_fits == 1 or not one_fit else [dp_accounting.SelfComposedDpEvent(compose(one_fit),
                                                                                           n_fits)]
    if delta is None:
        delta = accountant.spent()[1] if accountant is not None else n_fits * sum(s.delta for s in private)
    accounting = accountant.accounting if accountant is not None else "auto"
    charged = float(epsilon_of(events, float(delta), relation=relation or Relation.REPLACE_ONE,
                               accounting=accounting)) if events else 0.0
    within = None
    if accountant is not None and accountant.ceiling is not None and relation is not None:
        try:
            accountant.check(compose(events), relation)
            within = True
        except BudgetExceededError:
            within = False
    notes = []
    if any(s.status == DECLARED for s in private):
        notes.append("Steps marked 'declared budget' count as their (epsilon, delta) (basic composition): "
                     "the total may overstate what fitting charges.")
    not_private = [s.name for s in steps if s.status == NOT_PRIVATE]
    if not_private:
        verb = "learns" if len(not_private) == 1 else "learn"
        notes.append(f"Not private: {', '.join(not_private)} {verb} from the private rows without "
                     "differential privacy, so the fitted pipeline is not differentially private.")
    return PipelineCost(epsilon=charged if not not_private else math.inf, delta=float(delta),
                        charged_epsilon=charged, relation=relation, steps=steps, n_fits=n_fits,
                        accountant=accountant, within_ceiling=within, notes=tuple(notes))
