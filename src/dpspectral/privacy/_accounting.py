"""Accounting: every release is a ``dp_accounting`` event; the accountant turns events into epsilon.

Three accountants are available, all ``dp_accounting.PrivacyAccountant`` instances:

``"gaussian"``
    :class:`GaussianDpAccountant`, exact for (adaptive) compositions of Gaussian mechanisms: a Gaussian
    mechanism with noise multiplier ``s`` (noise standard deviation over the L2 sensitivity under the
    stated relation) is ``1/s``-GDP (Dong, Roth and Su 2019), compositions of GDP mechanisms compose by
    ``mu = sqrt(sum mu_i^2)`` (their Corollary 2, adaptive), and ``mu``-GDP is converted to
    (epsilon, delta) by the analytic Gaussian curve of Balle and Wang (2018), evaluated by
    ``dp_accounting.get_epsilon_gaussian``. It only supports Gaussian, composed and self-composed
    events (and no-op / non-private ones).
``"pld"``
    ``dp_accounting.pld.PLDAccountant`` (privacy loss distributions; tight up to discretisation).
``"rdp"``
    ``dp_accounting.rdp.RdpAccountant`` (Renyi DP; loose conversion, supports sampled events).

``"auto"`` (the default everywhere) uses the exact Gaussian accountant when it supports the events,
:class:`PureDpAccountant` (basic composition) for Laplace-only events,
:class:`SampledGaussianAccountant` (PLD with a no-amplification fallback) for Poisson-sampled
Gaussians, and PLD otherwise.
"""

from __future__ import annotations

import abc
import functools
import itertools
import math
import numbers
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import attr
import dp_accounting
from dp_accounting import dp_event as dpe
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from ._budget import (
    BudgetExceededError,
    PrivacyBudget,
    Relation,
    UncertifiedPrivacyWarning,
    as_relation,
)
from ._guardrails import check_privacy_parameters

__all__ = [
    "Accountant",
    "AccountingMethod",
    "EpsilonDeltaDpEvent",
    "ParallelDpEvent",
    "GaussianDpAccountant",
    "LedgerEntry",
    "PrivacyReport",
    "PureDpAccountant",
    "SampledGaussianAccountant",
    "calibrate",
    "certify_release",
    "compose",
    "epsilon_of",
    "event_from_dict",
    "event_to_dict",
    "make_accountant",
]

AccountingMethod = Literal["auto", "gaussian", "pld", "rdp"]
_METHODS = ("auto", "gaussian", "pld", "rdp")


class _LeafAccountant(dp_accounting.PrivacyAccountant):  # type: ignore[misc]  # an untyped base
    """An accountant that walks composed / self-composed events down to leaves it knows.

    Subclasses set ``_leaf_types``, implement :meth:`_init_state`, :meth:`_leaf` and ``get_epsilon``.
    No-op events cost nothing; a non-private event makes epsilon infinite.
    """

    _leaf_types: tuple[type, ...] = ()
    _unsupported_message = ""

    def __init__(
        self,
        neighboring_relation: dp_accounting.NeighboringRelation = (
            dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
        ),
    ) -> None:
        super().__init__(neighboring_relation)
        self._non_private = False
        self._init_state()

    def _init_state(self) -> None:
        """Set the subclass's running totals to zero."""

    @abc.abstractmethod
    def _leaf(self, event: dp_accounting.DpEvent, count: int) -> None:
        """Compose ``count`` copies of one supported leaf event."""

    def _maybe_compose(
        self, event: dp_accounting.DpEvent, count: int, do_compose: bool
    ) -> dp_accounting.PrivacyAccountant.CompositionErrorDetails | None:
        if isinstance(event, dpe.NoOpDpEvent):
            return None
        if isinstance(event, dpe.NonPrivateDpEvent):
            if do_compose:
                self._non_private = True
            return None
        if isinstance(event, self._leaf_types):
            if do_compose:
                self._leaf(event, count)
            return None
        if isinstance(event, dpe.SelfComposedDpEvent):
            return self._maybe_compose(event.event, count * event.count, do_compose)
        if isinstance(event, dpe.ComposedDpEvent):
            for sub in event.events:
                error = self._maybe_compose(sub, count, do_compose)
                if error is not None:
                    return error
            return None
        return dp_accounting.PrivacyAccountant.CompositionErrorDetails(
            invalid_event=event, error_message=self._unsupported_message
        )


class GaussianDpAccountant(_LeafAccountant):
    """Exact accountant for compositions of Gaussian mechanisms (Gaussian differential privacy).

    ``GaussianDpEvent(s)`` contributes ``1/s^2`` to ``mu^2``; ``ComposedDpEvent`` and
    ``SelfComposedDpEvent`` add up; ``NoOpDpEvent`` contributes nothing; ``NonPrivateDpEvent`` makes
    epsilon infinite. The result does not depend on the neighbouring relation because the noise
    multiplier is already normalised by the sensitivity under that relation.
    """

    _leaf_types = (dpe.GaussianDpEvent,)
    _unsupported_message = "GaussianDpAccountant supports only Gaussian, composed and no-op events."

    def _init_state(self) -> None:
        self._mu_squared = 0.0

    def _leaf(self, event: dp_accounting.DpEvent, count: int) -> None:
        if event.noise_multiplier == 0:
            self._non_private = True
        else:
            self._mu_squared += count / event.noise_multiplier**2

    @property
    def mu(self) -> float:
        """The Gaussian-DP parameter of everything composed so far."""
        return math.inf if self._non_private else math.sqrt(self._mu_squared)

    def get_epsilon(self, target_delta: float) -> float:
        """The smallest epsilon of everything composed so far at ``target_delta``."""
        if self._non_private:
            return math.inf
        if self._mu_squared == 0:
            return 0.0
        return _epsilon_gaussian(1.0 / self.mu, target_delta)

    def get_delta(self, target_epsilon: float) -> float:
        """The smallest delta of everything composed so far at ``target_epsilon``."""
        if self._non_private:
            return 1.0
        if self._mu_squared == 0:
            return 0.0
        from scipy.stats import norm

        mu, eps = self.mu, target_epsilon
        # Balle & Wang (2018), Theorem 8, for sensitivity 1 and sigma = 1/mu.
        return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


class PureDpAccountant(_LeafAccountant):
    """Basic composition of pure epsilon-DP (Laplace) events, valid at every delta including 0.

    ``LaplaceDpEvent(b)`` (noise scale over the L1 sensitivity under the stated relation) is
    ``1/b``-DP; pure-DP guarantees add up. ``dp_accounting``'s PLD accountant returns infinity at
    ``delta = 0`` (its pessimistic tail truncation), so this accountant is used for pure-DP ledgers
    at ``delta = 0``.
    """

    _leaf_types = (dpe.LaplaceDpEvent,)
    _unsupported_message = "PureDpAccountant supports only Laplace, composed and no-op events."

    def _init_state(self) -> None:
        self._epsilon = 0.0

    def _leaf(self, event: dp_accounting.DpEvent, count: int) -> None:
        b = event.noise_multiplier
        self._epsilon += math.inf if b == 0 else count / b

    def get_epsilon(self, target_delta: float) -> float:
        """The pure epsilon of everything composed so far (``target_delta`` is not used)."""
        return math.inf if self._non_private else self._epsilon


_SAMPLED_CACHE: dict[tuple[Any, ...], float] = {}  # epsilon by (events' repr, delta, relation)


class SampledGaussianAccountant(dp_accounting.PrivacyAccountant):  # type: ignore[misc]  # an untyped base
    """Gaussian and Poisson-sampled Gaussian events: the better of two sound upper bounds.

    * PLD (``dp_accounting``'s ``PLDAccountant`` on a ``1e-3`` grid, pessimistic, so sound), which
      captures amplification by sampling;
    * Gaussian DP without amplification: every ``PoissonSampledDpEvent(q, GaussianDpEvent(s))`` read
      as the unsampled release it dominates (multiplier ``s / 2`` under ``REPLACE_ONE``, where a
      replaced row moves the sum by twice its bound, ``s`` under add/remove), composed exactly.

    The PLD is skipped when a multiplier is below 0.05 (its grid would be huge and the epsilon is in
    the thousands anyway), so calibration towards huge epsilons stays fast.
    """

    PLD_INTERVAL = 1e-3
    MIN_PLD_MULTIPLIER = 0.05

    def __init__(
        self,
        neighboring_relation: dp_accounting.NeighboringRelation = (
            dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
        ),
        use_pld: bool = True,
    ) -> None:
        super().__init__(neighboring_relation)
        self._events: list[tuple[dp_accounting.DpEvent, int]] = []
        self.use_pld = use_pld

    def _check(self, event: dp_accounting.DpEvent) -> bool:
        if isinstance(event, (dpe.NoOpDpEvent, dpe.GaussianDpEvent)):
            return True
        if isinstance(event, dpe.PoissonSampledDpEvent):
            return isinstance(event.event, dpe.GaussianDpEvent)
        if isinstance(event, dpe.SelfComposedDpEvent):
            return self._check(event.event)
        if isinstance(event, dpe.ComposedDpEvent):
            return all(self._check(e) for e in event.events)
        return False

    def _maybe_compose(
        self, event: dp_accounting.DpEvent, count: int, do_compose: bool
    ) -> dp_accounting.PrivacyAccountant.CompositionErrorDetails | None:
        if not self._check(event):
            return dp_accounting.PrivacyAccountant.CompositionErrorDetails(
                invalid_event=event,
                error_message="SampledGaussianAccountant supports Gaussian and Poisson-sampled "
                "Gaussian events.",
            )
        if do_compose:
            self._events.append((event, count))
        return None

    def _unsampled(self, event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        if isinstance(event, dpe.PoissonSampledDpEvent):
            factor = 0.5 if self.neighboring_relation is (
                dp_accounting.NeighboringRelation.REPLACE_ONE) else 1.0
            return dpe.GaussianDpEvent(event.event.noise_multiplier * factor)
        return _map_children(event, self._unsampled)

    def _min_multiplier(self, event: dp_accounting.DpEvent) -> float:
        if isinstance(event, dpe.PoissonSampledDpEvent):
            return float(event.event.noise_multiplier)
        if isinstance(event, dpe.GaussianDpEvent):
            return float(event.noise_multiplier)
        if isinstance(event, dpe.SelfComposedDpEvent):
            return self._min_multiplier(event.event)
        if isinstance(event, dpe.ComposedDpEvent):
            return min((self._min_multiplier(e) for e in event.events), default=math.inf)
        return math.inf

    def get_epsilon(self, target_delta: float) -> float:
        """The smallest epsilon of the composed sampled-Gaussian events at ``target_delta``."""
        if not self._events:
            return 0.0
        key = (repr(self._events), float(target_delta), self.neighboring_relation, self.use_pld)
        cached = _SAMPLED_CACHE.get(key)
        if cached is None:
            cached = self._compute_epsilon(target_delta)
            if len(_SAMPLED_CACHE) > 4096:
                _SAMPLED_CACHE.clear()
            _SAMPLED_CACHE[key] = cached
        return cached

    def _compute_epsilon(self, target_delta: float) -> float:
        gauss = GaussianDpAccountant()
        for event, count in self._events:
            gauss.compose(self._unsampled(event), count)
        bound = gauss.get_epsilon(target_delta)
        if not self.use_pld or (
            min(self._min_multiplier(e) for e, _ in self._events) < self.MIN_PLD_MULTIPLIER
        ):
            return bound
        pld = PLDAccountant(self.neighboring_relation, value_discretization_interval=self.PLD_INTERVAL)
        for event, count in self._events:
            pld.compose(event, count)
        return min(bound, float(pld.get_epsilon(target_delta)))


@functools.lru_cache(maxsize=4096)
def _epsilon_gaussian(noise_multiplier: float, delta: float) -> float:
    return float(dp_accounting.get_epsilon_gaussian(noise_multiplier, delta))


def _check_method(accounting: str) -> None:
    if accounting not in _METHODS:
        raise ValueError(
            f"The 'accounting' parameter must be one of {', '.join(map(repr, _METHODS))}. "
            f"Got {accounting!r} instead."
        )


_SAMPLED = (
    dpe.PoissonSampledDpEvent,
    dpe.SampledWithReplacementDpEvent,
    dpe.SampledWithoutReplacementDpEvent,
)


def _has_sampling(event: dp_accounting.DpEvent | None) -> bool:
    if event is None:
        return False
    if isinstance(event, _SAMPLED):
        return True
    if isinstance(event, dpe.ComposedDpEvent):
        return any(_has_sampling(e) for e in event.events)
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _has_sampling(event.event)
    return False


def _accounting_relation(
    relation: Relation, event: dp_accounting.DpEvent | None
) -> dp_accounting.NeighboringRelation:
    """The ``dp_accounting`` relation under which ``event`` is evaluated.

    Our convention: a ``GaussianDpEvent``'s multiplier is the noise std over the L2 sensitivity of the
    release under *the stated relation* (the whole shift between neighbours). Without sampling, the
    privacy loss of such an event does not depend on the relation, and ``dp_accounting`` reads the
    multiplier this way under ``ADD_OR_REMOVE_ONE`` (its PLD accountant reads it as half the shift
    under ``REPLACE_ONE``), so unsampled events are evaluated under ``ADD_OR_REMOVE_ONE``. Sampled
    events use the stated relation and ``dp_accounting``'s convention for it (multiplier over the
    bound on one row's contribution), which their mechanisms document.
    """
    if _has_sampling(event):
        return relation.dp_accounting
    return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def make_accountant(
    accounting: AccountingMethod, relation: Relation, event: dp_accounting.DpEvent | None = None
) -> dp_accounting.PrivacyAccountant:
    """A fresh ``dp_accounting`` accountant of the requested kind for ``relation``.

    With ``accounting="auto"`` the exact Gaussian accountant is chosen when it supports ``event``.
    """
    _check_method(accounting)
    rel = _accounting_relation(relation, event)
    if accounting == "auto":
        gauss = GaussianDpAccountant(rel)
        if event is None or gauss.supports(event):
            return gauss
        pure = PureDpAccountant(rel)
        if pure.supports(event):
            return pure
        sampled = SampledGaussianAccountant(rel)
        if sampled.supports(event):
            return sampled
        return PLDAccountant(rel)
    if accounting == "gaussian":
        return GaussianDpAccountant(rel)
    if accounting == "pld":
        return PLDAccountant(rel)
    return RdpAccountant(neighboring_relation=rel)


def compose(events: Iterable[dp_accounting.DpEvent]) -> dp_accounting.DpEvent:
    """One event standing for the (adaptive) composition of ``events``."""
    events = [e for e in events if not isinstance(e, dpe.NoOpDpEvent)]
    if not events:
        return dpe.NoOpDpEvent()
    if len(events) == 1:
        return events[0]
    return dpe.ComposedDpEvent(events)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ParallelDpEvent(dp_accounting.DpEvent):  # type: ignore[misc]  # an untyped base
    """Releases computed on disjoint, data-independently chosen sets of rows (parallel composition).

    Under replace-one neighbours with public positions, the changed row is in exactly one branch, so
    the guarantee is the worst branch's. :func:`epsilon_of` evaluates every choice of branch (the
    product over all parallel events of a composition, up to :data:`MAX_PARALLEL_EXPANSIONS`; beyond
    that it composes all branches, which is a sound upper bound) and returns the largest epsilon.
    ``dp_accounting``'s own accountants do not know this event: use :func:`epsilon_of`.
    """

    events: list[dp_accounting.DpEvent]


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(dp_accounting.DpEvent):  # type: ignore[misc]  # an untyped base
    """A mechanism known only through an (epsilon, delta) guarantee (e.g. a thresholded histogram).

    Composed by basic composition with the rest: ``epsilon_of`` returns ``sum(epsilon_i) +
    epsilon_rest(delta - sum(delta_i))`` (infinite when the deltas use up the target).
    """

    epsilon: float
    delta: float

    def __attrs_post_init__(self) -> None:
        from .._constraints import InvalidParameterError

        # epsilon = inf is allowed (a release known to give no guarantee); negative or NaN is not
        if not float(self.epsilon) >= 0:
            raise InvalidParameterError(
                "The 'epsilon' parameter of EpsilonDeltaDpEvent must be a float in [0, inf]. Got "
                f"{self.epsilon!r} instead.")
        if not 0 <= float(self.delta) <= 1:
            raise InvalidParameterError(
                "The 'delta' parameter of EpsilonDeltaDpEvent must be a float in [0, 1]. Got "
                f"{self.delta!r} instead.")


MAX_PARALLEL_EXPANSIONS = 256


def _has(event: dp_accounting.DpEvent, kind: type) -> bool:
    if isinstance(event, kind):
        return True
    if isinstance(event, (dpe.ComposedDpEvent, ParallelDpEvent)):
        return any(_has(e, kind) for e in event.events)
    if isinstance(event, (dpe.SelfComposedDpEvent, dpe.PoissonSampledDpEvent)):
        return _has(event.event, kind)
    return False


def _expand_parallel(event: dp_accounting.DpEvent) -> list[dp_accounting.DpEvent]:
    """Every event the changed row can meet: one per choice of branch in each parallel event."""
    if not _has(event, ParallelDpEvent):
        return [event]
    if isinstance(event, ParallelDpEvent):
        return [x for e in event.events for x in _expand_parallel(e)]
    if isinstance(event, dpe.ComposedDpEvent):
        out: list[list[dp_accounting.DpEvent]] = [[]]
        for child in event.events:
            options = _expand_parallel(child)
            out = [prefix + [o] for prefix in out for o in options]
            if len(out) > MAX_PARALLEL_EXPANSIONS:
                return [_compose_branches(event)]
        return [compose(x) for x in out]
    if isinstance(event, dpe.SelfComposedDpEvent):
        options = _expand_parallel(event.event)
        # the changed row meets one branch in each repetition: multisets of size count
        if math.comb(len(options) + event.count - 1, event.count) > MAX_PARALLEL_EXPANSIONS:
            return [_compose_branches(event)]
        return [compose(list(c)) for c in
                itertools.combinations_with_replacement(options, event.count)]
    raise ValueError(f"A parallel event cannot be nested inside {type(event).__name__}.")


def _compose_branches(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
    """Replace every parallel event by the composition of its branches (an upper bound)."""
    if isinstance(event, ParallelDpEvent):
        return compose([_compose_branches(e) for e in event.events])
    return _map_children(event, _compose_branches)


def _map_children(event: dp_accounting.DpEvent,
                  f: Callable[[dp_accounting.DpEvent], dp_accounting.DpEvent]) -> dp_accounting.DpEvent:
    """A composed or self-composed event rebuilt with ``f`` applied to its children; any other as it is."""
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([f(e) for e in event.events])
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(f(event.event), event.count)
    return event


def _split_approximate(
    event: dp_accounting.DpEvent, times: int = 1
) -> tuple[list[dp_accounting.DpEvent], float, float]:
    """(events without EpsilonDeltaDpEvent leaves, their summed epsilon, their summed delta)."""
    if isinstance(event, EpsilonDeltaDpEvent):
        return [], times * float(event.epsilon), times * float(event.delta)
    if not _has(event, EpsilonDeltaDpEvent):
        return [event if times == 1 else dpe.SelfComposedDpEvent(event, times)], 0.0, 0.0
    if isinstance(event, dpe.ComposedDpEvent):
        rest: list[dp_accounting.DpEvent] = []
        eps = dlt = 0.0
        for child in event.events:
            r, e, d = _split_approximate(child, times)
            rest += r
            eps += e
            dlt += d
        return rest, eps, dlt
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _split_approximate(event.event, times * event.count)
    raise ValueError(f"An (epsilon, delta) event cannot be nested inside {type(event).__name__}.")


def _has_only_laplace(event: dp_accounting.DpEvent) -> bool:
    if isinstance(event, (dpe.ComposedDpEvent, ParallelDpEvent)):
        return all(_has_only_laplace(e) for e in event.events)
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _has_only_laplace(event.event)
    return isinstance(event, (dpe.LaplaceDpEvent, dpe.NoOpDpEvent))


def _min_noise(event: dp_accounting.DpEvent) -> float:
    if isinstance(event, (dpe.LaplaceDpEvent, dpe.GaussianDpEvent)):
        return float(event.noise_multiplier)
    if isinstance(event, (dpe.ComposedDpEvent, ParallelDpEvent)):
        return min((_min_noise(e) for e in event.events), default=math.inf)
    if isinstance(event, (dpe.SelfComposedDpEvent, dpe.PoissonSampledDpEvent)):
        return _min_noise(event.event)
    return math.inf


def _laplace_as_pure(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
    """Laplace leaves as their pure (1 / multiplier, 0) guarantee."""
    if isinstance(event, dpe.LaplaceDpEvent):
        return EpsilonDeltaDpEvent(1.0 / float(event.noise_multiplier), 0.0)
    return _map_children(event, _laplace_as_pure)


def epsilon_of(
    events: dp_accounting.DpEvent | Sequence[dp_accounting.DpEvent],
    delta: float,
    *,
    relation: Relation | str = Relation.REPLACE_ONE,
    accounting: AccountingMethod = "auto",
) -> float:
    """The epsilon that the accountant certifies for ``events`` at ``delta``.

    Parallel events (:class:`ParallelDpEvent`) are evaluated branch by branch (the worst counts);
    (epsilon, delta) events (:class:`EpsilonDeltaDpEvent`) compose by basic composition.
    """
    event = events if isinstance(events, dp_accounting.DpEvent) else compose(events)
    rel = as_relation(relation)
    return max(_epsilon_simple(e, delta, rel, accounting) for e in _expand_parallel(event))


def _epsilon_simple(
    event: dp_accounting.DpEvent, delta: float, relation: Relation, accounting: AccountingMethod
) -> float:
    if _has(event, dpe.NonPrivateDpEvent):
        return math.inf
    if accounting == "auto" and _has(event, dpe.LaplaceDpEvent) and not _has_only_laplace(event):
        # Laplace with Gaussian: PLD, unless a multiplier is so small that its grid would be huge
        # (then the Laplace parts compose by basic composition with the rest: a sound bound)
        if _min_noise(event) < SampledGaussianAccountant.MIN_PLD_MULTIPLIER:
            event = _laplace_as_pure(event)
    rest, eps0, delta0 = _split_approximate(event)
    if delta0 > 0 or eps0 > 0:
        if delta0 > delta:
            return math.inf
        rest_event = compose(rest)
        if isinstance(rest_event, dpe.NoOpDpEvent):
            return eps0  # an (eps0, delta0) guarantee holds at every delta >= delta0
        # the rest gets what is left of delta (possibly 0: pure events still have a finite epsilon)
        return eps0 + _epsilon_simple(rest_event, max(delta - delta0, 0.0), relation, accounting)
    acc = make_accountant(accounting, relation, event)
    if isinstance(acc, RdpAccountant) and delta == 0:
        return math.inf
    return float(acc.compose(event).get_epsilon(delta))


def calibrate(
    make_event: Callable[[float], dp_accounting.DpEvent],
    epsilon: float,
    delta: float,
    *,
    relation: Relation | str = Relation.REPLACE_ONE,
    accounting: AccountingMethod = "auto",
    tol: float = 1e-9,
) -> float:
    """Smallest noise parameter ``p`` such that ``make_event(p)`` is (epsilon, delta)-DP.

    ``make_event`` must be more private for larger ``p`` (a noise multiplier, say). Root finding is
    ``dp_accounting.calibrate_dp_mechanism``, which guarantees that the returned ``p`` meets the target
    (the epsilon gap is never positive).
    """
    from .._constraints import DELTA, EPSILON, check_params

    check_params({"epsilon": EPSILON, "delta": DELTA}, {"epsilon": epsilon, "delta": delta}, "calibrate")
    rel = as_relation(relation)
    probe = make_event(1.0)
    if isinstance(probe, dpe.NonPrivateDpEvent):
        raise ValueError("A non-private event cannot be calibrated to a finite epsilon.")
    bracket: dp_accounting.mechanism_calibration.BracketInterval = (
        dp_accounting.LowerEndpointAndGuess(0.0, 1.0)
    )
    if accounting == "auto" and isinstance(make_accountant("auto", rel, probe),
                                           SampledGaussianAccountant):
        # The no-amplification bound alone (fast) gives a sound multiplier s_b; the optimum is at
        # most s_b, and equals it when s_b is below the PLD threshold (the bound is then used).
        rel_acc = _accounting_relation(rel, probe)
        s_b = float(dp_accounting.calibrate_dp_mechanism(
            lambda: SampledGaussianAccountant(rel_acc, use_pld=False), make_event, epsilon, delta,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 1.0), tol=tol,
        ))
        if s_b < SampledGaussianAccountant.MIN_PLD_MULTIPLIER:
            return s_b
        bracket = dp_accounting.ExplicitBracketInterval(
            SampledGaussianAccountant.MIN_PLD_MULTIPLIER * 0.999, s_b
        )
        low_event = make_event(SampledGaussianAccountant.MIN_PLD_MULTIPLIER * 0.999)
        if epsilon_of(low_event, delta, relation=rel) <= epsilon:
            bracket = dp_accounting.ExplicitBracketInterval(0.0, s_b)
    return float(
        dp_accounting.calibrate_dp_mechanism(
            lambda: make_accountant(accounting, rel, probe),
            make_event,
            epsilon,
            delta,
            bracket_interval=bracket,
            tol=tol,
        )
    )


def _event_summary(event: dp_accounting.DpEvent) -> Any:
    """A JSON-friendly description of an event (type name and fields)."""
    if isinstance(event, dpe.ComposedDpEvent):
        return {"type": "Composed", "events": [_event_summary(e) for e in event.events]}
    if isinstance(event, dpe.SelfComposedDpEvent):
        return {"type": "SelfComposed", "count": event.count, "event": _event_summary(event.event)}
    if isinstance(event, ParallelDpEvent):
        return {"type": "Parallel", "events": [_event_summary(e) for e in event.events]}
    if isinstance(event, EpsilonDeltaDpEvent):
        return {"type": "EpsilonDelta", "epsilon": event.epsilon, "delta": event.delta}
    fields = {}
    for name in ("noise_multiplier", "sampling_probability", "dataset_size", "sample_size",
                 "noise_parameter", "rho", "xi", "num_buckets"):
        if hasattr(event, name):
            fields[name] = getattr(event, name)
    if hasattr(event, "event"):
        fields["event"] = _event_summary(event.event)
    return {"type": type(event).__name__.removesuffix("DpEvent"), **fields}


@dataclass(frozen=True)
class PrivacyReport:
    """What a private computation protects and what it spent.

    Attributes
    ----------
    mechanism : str
        Registry name of the algorithm.
    relation : Relation
        The neighbouring relation the guarantee is stated for.
    epsilon, delta : float
        The guarantee our accountant certifies for the released events (epsilon at ``delta``).
    requested_epsilon, requested_delta : float
        What the caller asked for.
    certified : bool
        Whether ``epsilon <= requested_epsilon`` (the accountant certifies the request).
    calibration : str
        ``"tight"`` or ``"paper"`` (or a mechanism-specific label).
    events : tuple of DpEvent
        Every release, in order.
    accounting : str
        The accountant used.
    notes : tuple of str
        Human-readable caveats (non-private preprocessing, uncertified formulas, ...).
    """

    mechanism: str
    relation: Relation
    epsilon: float
    delta: float
    requested_epsilon: float
    requested_delta: float
    certified: bool
    calibration: str
    events: tuple[dp_accounting.DpEvent, ...]
    accounting: str = "auto"
    notes: tuple[str, ...] = ()
    #: Which noise source drew the noise: ``"seeded"`` (NumPy's generator, reproducible) or
    #: ``"secure"`` (OS entropy and exact discrete samplers; :mod:`dpspectral.privacy._noise`).
    noise_source: str = "seeded"

    @property
    def event(self) -> dp_accounting.DpEvent:
        """All releases as one composed event."""
        return compose(self.events)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return {
            "mechanism": self.mechanism,
            "relation": self.relation.value,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "requested_epsilon": self.requested_epsilon,
            "requested_delta": self.requested_delta,
            "certified": self.certified,
            "calibration": self.calibration,
            "accounting": self.accounting,
            "events": [_event_summary(e) for e in self.events],
            "notes": list(self.notes),
            "noise_source": self.noise_source,
        }

    def __str__(self) -> str:
        status = "certified" if self.certified else "NOT certified"
        return (
            f"{self.mechanism}: ({self.epsilon:.4g}, {self.delta:.3g})-DP under {self.relation.value}"
            f" neighbours ({status}; requested ({self.requested_epsilon:.4g}, "
            f"{self.requested_delta:.3g}), calibration={self.calibration})"
        )


#: The assumption every report states: the noise comes from the generator given as ``random_state``.
RANDOM_STATE_NOTE = (
    "The noise is drawn from the generator given as random_state: the guarantee assumes it is secret "
    "(whoever knows the seed can subtract the noise; None draws it from OS entropy)."
)


#: The note of a report whose noise came from the secure source (``random_state="secure"``).
SECURE_NOISE_NOTE = (
    "The noise was drawn by the secure source: OS entropy and exact discrete Gaussian/Laplace samplers "
    "on a fine grid (dpspectral.privacy._noise); nothing about it can be reproduced or subtracted."
)


def certify_release(
    events: Sequence[dp_accounting.DpEvent],
    *,
    mechanism: str,
    budget: PrivacyBudget,
    relation: Relation,
    calibration: str,
    accounting: AccountingMethod = "auto",
    notes: Sequence[str] = (),
    stacklevel: int = 3,
    noise_source: str = "seeded",
    n_rows: int | None = None,
) -> PrivacyReport:
    """The report of a run: what the accountant certifies for ``events`` against the request.

    When the certified epsilon exceeds the requested one (a paper's formula that does not hold, a
    non-private baseline), the report says ``certified=False`` and an
    :class:`UncertifiedPrivacyWarning` is raised. A request that is valid but weak (a large epsilon,
    a large delta) raises a :class:`~dpspectral.privacy._guardrails.PrivacyParameterWarning`
    (:func:`~dpspectral.privacy._guardrails.check_privacy_parameters`; ``n_rows``, the public number of
    rows under replace-one neighbours when it is known, is used only there).
    """
    check_privacy_parameters(budget, relation, mechanism=mechanism, n_rows=n_rows, stacklevel=stacklevel)
    eps = epsilon_of(list(events), budget.delta, relation=relation, accounting=accounting)
    certified = bool(eps <= budget.epsilon)
    all_notes = list(notes)
    source_note = SECURE_NOISE_NOTE if noise_source == "secure" else RANDOM_STATE_NOTE
    if events and source_note not in all_notes:
        all_notes.append(source_note)
    if not certified:
        message = (
            f"{mechanism} with calibration={calibration!r} does not certify the requested "
            f"epsilon={budget.epsilon:g} at delta={budget.delta:g}: the accountant certifies "
            f"epsilon={eps:.4g}."
        )
        all_notes.append(message)
        warnings.warn(message, UncertifiedPrivacyWarning, stacklevel=stacklevel)
    return PrivacyReport(
        mechanism=mechanism,
        relation=relation,
        epsilon=eps,
        delta=budget.delta,
        requested_epsilon=budget.epsilon,
        requested_delta=budget.delta,
        certified=certified,
        calibration=calibration,
        events=tuple(events),
        accounting=accounting,
        notes=tuple(all_notes),
        noise_source=noise_source,
    )


@dataclass(frozen=True)
class LedgerEntry:
    """One spend recorded by an :class:`Accountant`."""

    label: str
    event: dp_accounting.DpEvent
    epsilon_after: float
    #: ``"released"``, or ``"failed: <ErrorType>"`` for a release that failed after its charge (it
    #: stays charged: the data may already have been touched by the noise).
    status: str = "released"


class Accountant:
    """A privacy ledger with an optional ceiling, shared by reference.

    Every private computation given this accountant records its releases here as ``dp_accounting``
    events *before* any noise is drawn, and is refused with :class:`BudgetExceededError` when the
    composition of everything recorded would exceed the ceiling (nothing is then recorded).

    The ledger is shared by reference: ``copy.copy``, ``copy.deepcopy`` and so
    ``sklearn.base.clone`` return the same object, so a ``GridSearchCV`` over an estimator holding this
    accountant spends against it. A pickled copy (e.g. sent to another process by joblib) arrives
    *frozen*: it can be read but refuses to spend, since its spending would not reach the original.

    Parameters
    ----------
    epsilon, delta : float, optional
        The ceiling. ``epsilon=None`` records without a ceiling (``delta`` is then the delta at which
        :meth:`spent` reports epsilon, default 1e-6).
    relation : Relation or str, optional
        The neighbouring relation of every spend. ``None`` takes the relation of the first spend;
        a later spend under another relation is refused (guarantees under different relations do not
        compose).
    accounting : {"auto", "gaussian", "pld", "rdp"}
        The composition accountant.
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        relation: Relation | str | None = None,
        accounting: AccountingMethod = "auto",
    ) -> None:
        _check_method(accounting)
        if epsilon is None:
            self.ceiling: PrivacyBudget | None = None
            self._report_delta = 1e-6 if delta is None else PrivacyBudget(1.0, delta).delta
        else:
            self.ceiling = PrivacyBudget(epsilon, 0.0 if delta is None else delta)
            self._report_delta = self.ceiling.delta
        self.relation: Relation | None = (
            None if relation is None else as_relation(relation, owner="Accountant")
        )
        self.accounting: AccountingMethod = accounting
        self._entries: list[LedgerEntry] = []
        self._lock = threading.RLock()
        self._frozen = False

    # -- sharing semantics -------------------------------------------------------------------
    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        state["_frozen"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- reading -------------------------------------------------------------------------------
    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every recorded spend, in order."""
        return tuple(self._entries)

    @property
    def events(self) -> tuple[dp_accounting.DpEvent, ...]:
        return tuple(e.event for e in self._entries)

    @property
    def failures(self) -> tuple[LedgerEntry, ...]:
        """The charged releases that failed after their charge (they stay charged)."""
        return tuple(e for e in self._entries if e.status != "released")

    def mark_failed(self, index: int, reason: str) -> None:
        """Mark entry ``index`` as a failed release; it stays charged.

        Parameters
        ----------
        index : int
            The ledger entry.
        reason : str
            The error type, never a message that could quote data.
        """
        with self._lock:
            entry = self._entries[index]
            self._entries[index] = LedgerEntry(
                label=entry.label, event=entry.event, epsilon_after=entry.epsilon_after,
                status=f"failed: {reason}",
            )

    @property
    def ledger(self) -> dp_accounting.DpEvent:
        """Everything recorded, as one composed ``DpEvent``."""
        return compose(self.events)

    @property
    def frozen(self) -> bool:
        """True for a pickled copy, which refuses to spend."""
        return self._frozen

    def epsilon_spent(self, delta: float | None = None) -> float:
        """Epsilon of everything recorded, at ``delta`` (default: the ceiling's delta)."""
        return self._epsilon(self.events, self._report_delta if delta is None else delta)

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far, epsilon reported at the ceiling's delta."""
        return self.epsilon_spent(), self._report_delta

    def remaining_epsilon(self) -> float:
        """Ceiling epsilon minus what is spent (an indication: composition is not additive)."""
        if self.ceiling is None:
            return math.inf
        return max(0.0, self.ceiling.epsilon - self.epsilon_spent())

    def _epsilon(
        self, events: Sequence[dp_accounting.DpEvent], delta: float, relation: Relation | None = None
    ) -> float:
        if not events:
            return 0.0
        relation = self.relation or relation or Relation.REPLACE_ONE
        return epsilon_of(list(events), delta, relation=relation, accounting=self.accounting)

    # -- spending ------------------------------------------------------------------------------
    def check(self, event: dp_accounting.DpEvent, relation: Relation | str) -> float:
        """Epsilon after a hypothetical spend; raise if it is refused. Records nothing."""
        rel = as_relation(relation)
        if self._frozen:
            raise BudgetExceededError(
                "This Accountant is a pickled copy (e.g. in a worker process) and cannot spend: its "
                "spending would not reach the original ledger. Run with n_jobs=1 or fit in the "
                "process that owns the accountant."
            )
        if self.relation is not None and rel is not self.relation:
            raise ValueError(
                f"The accountant records guarantees under '{self.relation.value}' neighbours; a "
                f"release under '{rel.value}' cannot be composed with them. Use one accountant per "
                "relation."
            )
        after = self._epsilon([*self.events, event], self._report_delta, rel)
        if self.ceiling is not None and not after <= self.ceiling.epsilon:
            raise BudgetExceededError(
                f"Refused: this release would bring the accountant to epsilon={after:.6g} at "
                f"delta={self._report_delta:.3g}, above its ceiling epsilon="
                f"{self.ceiling.epsilon:.6g} (spent so far: {self.epsilon_spent():.6g}). "
                "Nothing was released." + (
                    " This release has no finite epsilon at delta=0 (Gaussian noise never has), and "
                    "this accountant's ceiling has delta=0 (the default): give the Accountant a delta, "
                    f"e.g. Accountant(epsilon={self.ceiling.epsilon:g}, delta=1e-6)."
                    if math.isinf(after) and self._report_delta == 0 else "")
            )
        return after

    def spend(self, event: dp_accounting.DpEvent, relation: Relation | str, label: str = "") -> float:
        """Record ``event`` if the ceiling allows it (call before drawing any noise)."""
        with self._lock:
            after = self.check(event, relation)
            if self.relation is None:
                self.relation = as_relation(relation)
            self._entries.append(LedgerEntry(label=label, event=event, epsilon_after=after))
            return after

    def __repr__(self) -> str:
        ceiling = (
            "no ceiling" if self.ceiling is None
            else f"ceiling=({self.ceiling.epsilon:g}, {self.ceiling.delta:g})"
        )
        rel = self.relation.value if self.relation else "unset"
        return (
            f"Accountant({ceiling}, relation={rel}, spends={len(self._entries)}, "
            f"epsilon_spent={self.epsilon_spent():.4g})"
        )

    # -- saving --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The whole ledger as JSON-serialisable data, read back exactly by :meth:`from_dict`.

        The ceiling, the relation, the accounting method and every entry (label, event, epsilon
        after it, status). Events are written by :func:`event_to_dict`. Everything in a ledger is
        public: events are built from public inputs only.
        """
        with self._lock:
            return {
                "ceiling": None if self.ceiling is None else {
                    "epsilon": self.ceiling.epsilon, "delta": self.ceiling.delta},
                "report_delta": self._report_delta,
                "relation": None if self.relation is None else self.relation.value,
                "accounting": self.accounting,
                "entries": [
                    {"label": e.label, "event": event_to_dict(e.event),
                     "epsilon_after": e.epsilon_after, "status": e.status}
                    for e in self._entries
                ],
            }

    @classmethod
    def from_dict(cls, data: Any) -> Accountant:
        """An accountant holding the ledger that :meth:`to_dict` wrote.

        Everything is checked: a malformed ledger raises ``ValueError`` (it never yields an empty or
        partial ledger, which would forget spending).
        """
        def bad(what: str) -> ValueError:
            return ValueError(f"Not an Accountant ledger: {what}.")

        if not isinstance(data, dict):
            raise bad("not a JSON object")
        keys = {"ceiling", "report_delta", "relation", "accounting", "entries"}
        if set(data) != keys:
            raise bad(f"the keys must be {', '.join(sorted(keys))}")
        ceiling = data["ceiling"]
        try:
            if ceiling is None:
                acc = cls(None, _real(data["report_delta"]), accounting=data["accounting"])
            else:
                if not isinstance(ceiling, dict) or set(ceiling) != {"epsilon", "delta"}:
                    raise bad('"ceiling" must be null or {"epsilon": ..., "delta": ...}')
                acc = cls(_real(ceiling["epsilon"]), _real(ceiling["delta"]),
                          accounting=data["accounting"])
                if _real(data["report_delta"]) != acc._report_delta:
                    raise bad('"report_delta" differs from the ceiling\'s delta')
            if data["relation"] is not None:
                acc.relation = as_relation(data["relation"], owner="Accountant")
        except (TypeError, ValueError) as err:
            raise bad(str(err).rstrip(".")) from None
        entries = data["entries"]
        if not isinstance(entries, list):
            raise bad('"entries" must be a list')
        for item in entries:
            if not isinstance(item, dict) or set(item) != {"label", "event", "epsilon_after", "status"}:
                raise bad("an entry must have the keys label, event, epsilon_after and status")
            if not isinstance(item["label"], str) or not isinstance(item["status"], str):
                raise bad("an entry's label and status must be strings")
            acc._entries.append(LedgerEntry(label=item["label"], event=event_from_dict(item["event"]),
                                            epsilon_after=_real(item["epsilon_after"]),
                                            status=item["status"]))
        if acc._entries and acc.relation is None:
            raise bad("a ledger with entries must name its relation")
        return acc


def _real(value: Any) -> float:
    """A JSON number (not a bool) as a float; ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _event_classes() -> dict[str, type]:
    """Every event kind :func:`event_from_dict` reads: dp_accounting's and this module's."""
    classes = {c.__name__: c for c in vars(dpe).values()
               if isinstance(c, type) and issubclass(c, dp_accounting.DpEvent) and attr.has(c)}
    classes.update(ParallelDpEvent=ParallelDpEvent, EpsilonDeltaDpEvent=EpsilonDeltaDpEvent)
    return classes


def event_to_dict(event: dp_accounting.DpEvent) -> dict[str, Any]:
    """A ``DpEvent`` as JSON-serialisable data (``{"type": class name, field: value, ...}``), read back
    exactly by :func:`event_from_dict`; nested events are written the same way."""
    cls = type(event)
    if _event_classes().get(cls.__name__) is not cls:
        raise TypeError(f"event_to_dict cannot write a {cls.__name__}.")

    def encode(value: Any) -> Any:
        if isinstance(value, dp_accounting.DpEvent):
            return event_to_dict(value)
        if isinstance(value, (list, tuple)):
            return [encode(v) for v in value]
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        raise TypeError(f"event_to_dict cannot write the value of a {cls.__name__} field.")

    return {"type": cls.__name__, **{f.name: encode(getattr(event, f.name)) for f in attr.fields(cls)}}


def event_from_dict(data: Any) -> dp_accounting.DpEvent:
    """The ``DpEvent`` that :func:`event_to_dict` wrote; ``ValueError`` for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError('Not a DpEvent: expected an object with a "type".')
    cls = _event_classes().get(data["type"])
    if cls is None:
        raise ValueError(f"Not a DpEvent: unknown type {data['type']!r}.")
    names = [f.name for f in attr.fields(cls)]
    if set(data) != {"type", *names}:
        raise ValueError(f"Not a {data['type']}: its fields are {', '.join(names) or 'none'}.")

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            return event_from_dict(value)
        if isinstance(value, list):
            return [decode(v) for v in value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"Not a {data['type']}: a field holds a {type(value).__name__}.")
        return value

    try:
        return cls(**{name: decode(data[name]) for name in names})
    except (TypeError, ValueError) as err:
        raise ValueError(f"Not a {data['type']}: {err}") from None
