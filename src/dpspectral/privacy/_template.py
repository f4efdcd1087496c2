"""The release pipeline as a template: a mechanism supplies four things, the pipeline does the rest.

A mechanism (a subclass of :class:`Mechanism`) supplies

1. its **public inputs**, one frozen dataclass, and :meth:`Mechanism.check`, which validates them and
   returns them checked (a budget, a relation, a bound: the values the plan is built from);
2. :meth:`Mechanism.plan` ``(inputs, n, d) -> ReleasePlan``, from public values only (``n`` and ``d``
   are None while unknown);
3. its **statistic**: :meth:`Mechanism.read` makes the one validating pass over the rows (every row
   read is checked) and :meth:`Mechanism.statistic` gives, for each planned release of a stage, the
   exact value to be released (from the validated rows, the plan and what earlier stages released);
4. its **post-processing**, :meth:`Mechanism.post_process`, a function of the released noisy values
   and public facts only.

:func:`run` alone does the steps, always in this order: validate the public inputs (once), build the
noise source (``random_state``), check the whole plan against the accountant before any row is read
(:func:`~dpspectral.privacy._pipeline.precheck`), read and validate the rows, charge, draw the noise of
each planned release by name, post-process, and write the privacy report. Nothing is charged on bad
input (public or data); a failure after the charge stays charged and is marked in the ledger; no noise
is drawn before the charge. A one-shot stream is charged before it is read
(:func:`~dpspectral.privacy._pipeline.read_then_release`).

**Staged plans.** :meth:`Mechanism.stages` splits the plan's releases into stages (one by default);
the cost of every stage is declared and checked before the first
(:class:`~dpspectral.privacy._pipeline.StagedRelease`), and :meth:`Mechanism.stage_plan` states a
stage's releases from what the earlier stages released (a clip post-processed from a released
histogram: the sensitivity and the noise scale change together, the events do not). A stage's events
are one per release by default; :meth:`Mechanism.stage_events` says otherwise (a stage of two events
and one release, or of one event for three releases).

**A run continued by another.** :meth:`Mechanism.reserved_events` states the cost of a later run that
this one's result feeds (checked with the plan before anything is read; charged by that run), and
:attr:`Released.continuation` is the ``random_state`` with which the later run continues the same noise
stream.

Values a statistic may give for a release: an array or a number (the planned Gaussian or Laplace noise
is added), :class:`Symmetric` (a symmetric matrix, its upper triangle released), :class:`Drawn` (a
release whose randomness is not additive noise: it draws through the releaser's named draws), or
:class:`After` (a statistic that needs a value released earlier in the same charge).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._rows import is_one_shot
from ._noise import noise_source
from ._pipeline import ReleasePlan, Releaser, StagedRelease, precheck, read_then_release, release

if TYPE_CHECKING:
    from ._accounting import Accountant
    from ._noise_base import NoiseSource

__all__ = ["After", "Drawn", "MatrixRows", "Mechanism", "Prelude", "Released", "Rows", "RunSettings",
           "Symmetric", "run", "charge_at_creation", "charged_elsewhere", "unprotected_generator"]

Inputs = TypeVar("Inputs")
Result = TypeVar("Result")


@dataclass(frozen=True)
class RunSettings:
    """How a run is carried out; the same for every mechanism, none of it a fact about the data.

    Attributes
    ----------
    accountant : Accountant or None
        The ledger charged.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: the noise source (:func:`~dpspectral.privacy._noise.noise_source`).
    accounting : str
        The accountant that certifies the report's events.
    show_progress : bool or None
        Progress bar over blocks.
    """

    accountant: Accountant | None = None
    random_state: Any = None
    accounting: str = "auto"
    show_progress: bool | None = None


@dataclass(frozen=True, eq=False)
class Rows:
    """What a mechanism's validating pass computed (``first``: public ``n`` and ``d``, and the
    statistic it accumulated) and the source of the rows, for a later pass inside the charge."""

    first: Any
    source: Any

    @property
    def n(self) -> int:
        return int(self.first.n)

    @property
    def d(self) -> int:
        return int(self.first.d)


@dataclass(frozen=True, eq=False)
class MatrixRows:
    """Rows read whole as one matrix ``X`` of shape (n, d): the public ``n`` and ``d`` are its shape (a
    mechanism's read may extend it with what else it found)."""

    X: Any

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True)
class Symmetric:
    """A symmetric matrix released by its upper triangle, with noise of ``shape`` ("goe" or "iid")."""

    matrix: Any
    shape: str = "iid"


@dataclass(frozen=True)
class Drawn:
    """A release whose randomness is not additive noise: ``draw(releaser)`` makes it inside the charge.

    ``draw`` may use only the releaser's named draws (:meth:`Releaser.normal`, ...), never a generator.
    """

    draw: Callable[[Releaser], Any]


@dataclass(frozen=True)
class After:
    """A statistic computed from values released earlier in the same charge: ``statistic(released)``."""

    statistic: Callable[[Released], Any]


class Released(dict[str, Any]):
    """The values released so far (by release name), and what was post-processed from them.

    ``plan`` is the plan as released: the planned releases, each replaced by the one a stage actually
    drew (:meth:`Mechanism.stage_plan`), with every stage's notes.
    """

    plan: ReleasePlan
    releaser: Releaser
    rows: Any
    noise: NoiseSource

    @property
    def continuation(self) -> Any:
        """The ``random_state`` with which a later run continues this run's noise stream: the seeded
        generator itself (its next draws), or ``"secure"`` (OS entropy has no stream to continue)."""
        return "secure" if self.noise.name == "secure" else self.noise.generator


class Mechanism(Generic[Inputs, Result]):
    """A private mechanism as the template runs it (see the module's description).

    Attributes
    ----------
    label : str
        The name in the ledger and the report.
    stacklevel : int
        How many frames up the report's warnings point from :func:`run` (the user's call).
    """

    label: str = "mechanism"
    stacklevel: int = 2
    #: False for a release a user makes of their own record (nothing charged, no privacy report):
    #: :meth:`post_process` then receives ``report=None``.
    reported: bool = True

    def __init__(self, show_progress: bool | None = None) -> None:
        self.show_progress = show_progress

    def check(self, inputs: Inputs, X: Any) -> Any:
        """Validate the public inputs (and the data's public shape); return them checked."""
        return inputs

    def plan(self, inputs: Any, n: int | None, d: int | None) -> ReleasePlan | None:
        """The releases of the run from public values; None if they cannot be planned before reading."""
        raise NotImplementedError

    def read(self, inputs: Any, X: Any) -> Any:
        """The one validating pass over the rows; returns an object with the public ``n`` and ``d``."""
        raise NotImplementedError

    def is_staged(self, inputs: Any) -> bool:
        """Whether the run releases in several charges (:meth:`stages`); never for a one-shot stream."""
        return False

    def stages(self, inputs: Any, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        """The plan's releases, grouped in the order they are released (one stage: one charge)."""
        return (tuple(r.name for r in plan.releases),)

    def stage_events(self, inputs: Any, plan: ReleasePlan, names: tuple[str, ...]) -> tuple[Any, ...]:
        """The events of the stage releasing ``names``: by default the plan's event of each release (the
        plan then has one event per release, in the same order)."""
        if names == tuple(r.name for r in plan.releases):
            return tuple(plan.events)  # a single stage: the whole plan, whatever its events
        event_of = dict(zip((r.name for r in plan.releases), plan.events, strict=True))
        return tuple(event_of[n] for n in names)

    def stage_plan(self, inputs: Any, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        """The plan of the stage releasing ``names``: by default the planned releases themselves."""
        return _sub_plan(plan, names, self.stage_events(inputs, plan, names))

    def reserved_events(self, inputs: Any) -> tuple[Any, ...]:
        """The cost of a later run that continues this one (none by default): checked against the
        accountant with the plan, before anything is read, and charged by that later run only."""
        return ()

    def statistic(self, inputs: Any, rows: Any, plan: ReleasePlan, released: Released) -> Mapping[str, Any]:
        """The exact value of each release of the stage ``plan`` (by name, in the order released)."""
        raise NotImplementedError

    def post_process(self, inputs: Any, rows: Any, released: Released, report: Any) -> Result:
        """The result, from the released values, public facts and the privacy report only."""
        raise NotImplementedError

    def report_facts(self, inputs: Any) -> dict[str, Any]:
        """The report's ``mechanism``, ``budget`` and ``calibration`` (public inputs)."""
        return {"mechanism": self.label, "budget": inputs.budget, "calibration": inputs.calibration}


class Prelude(Mechanism[Inputs, Result]):
    """A first stage run alone, for a later run that continues it (:attr:`Released.continuation`).

    ``cost``: the later run's events, checked with this stage's before anything is read
    (:meth:`reserved_events`) and charged by the later run. The inputs state the stage's own plan:
    ``inputs.plan(label)``.
    """

    def __init__(self, owner: str, cost: tuple[Any, ...]) -> None:
        super().__init__()
        self.label = owner
        self.cost = cost

    def plan(self, inputs: Any, n: int | None, d: int | None) -> ReleasePlan:
        return inputs.plan(self.label)  # type: ignore[no-any-return]

    def reserved_events(self, inputs: Any) -> tuple[Any, ...]:
        return self.cost


def charge_at_creation(plan: ReleasePlan, settings: RunSettings, draw: Callable[[Releaser], Result], *,
                       facts: Mapping[str, Any], stacklevel: int = 2,
                       noise: NoiseSource | None = None) -> tuple[Result, Any, Any]:
    """Charge ``plan`` when a state is created, before any data arrive, and draw what is fixed then.

    For a state that takes its data later (a turnstile sketch, a continual-release tree, rows inserted
    one by one): its whole release is planned from public inputs and charged once, here; ``draw(releaser)``
    draws, inside the charge and only through the releaser, the noise (or the secret seeds) fixed at
    creation. The report is written as for :func:`run` (``facts``: ``mechanism``, ``budget``,
    ``calibration``; ``stacklevel`` counts from the caller of this function).

    Returns ``(what draw returned, the privacy report, the noise source)``; the noise source serves a
    plan charged for a whole horizon later (:meth:`~dpspectral.privacy._pipeline.Releaser.of_charged_plan`).

    The same charge serves a run whose parties draw their own noise once it is charged (the sites of a
    distributed run, each under :func:`charged_elsewhere`): ``draw`` dispatches them, and ``noise`` is
    a source that draws nothing, named for the report, in place of ``settings.random_state``'s.
    """
    noise = noise_source(settings.random_state) if noise is None else noise
    with release(plan, settings.accountant, noise) as releaser:
        drawn = draw(releaser)
    report = releaser.report(**facts, notes=plan.notes, stacklevel=stacklevel + 1)
    return drawn, report, noise


@contextlib.contextmanager
def charged_elsewhere(plan: ReleasePlan, random_state: Any) -> Iterator[Releaser]:
    """A releaser of ``plan``, a part of a release charged by another party, drawing from its own source.

    For a party that draws its share of a run charged once before dispatch (a site of a distributed
    run: the aggregator charged the whole run's events before any site ran): nothing is charged here
    and no ledger entry is written; the noise is drawn only through ``plan``, inside the block.
    ``random_state``: the party's own seed (a ``SeedSequence`` or ``Generator``), ``"secure"`` (its own
    OS entropy and exact samplers), or a noise source.
    """
    with release(plan, None, noise_source(random_state)) as releaser:
        yield releaser


def unprotected_generator(random_state: Any) -> Any:
    """The generator of a computation that protects nothing (a non-private reference, no release).

    ``random_state`` as for a mechanism (``"secure"``: OS entropy); nothing drawn from it is secret.
    """
    return noise_source(random_state).generator


def _sub_plan(plan: ReleasePlan, names: tuple[str, ...], events: tuple[Any, ...]) -> ReleasePlan:
    """The part of ``plan`` that releases ``names``, with the stage's ``events``."""
    if names == tuple(r.name for r in plan.releases):
        return plan  # a single stage: the whole plan, whatever its events
    return ReleasePlan(plan.label, plan.relation, events, tuple(plan[n] for n in names))


def _draw(releaser: Releaser, name: str, value: Any, released: Released) -> Any:
    if isinstance(value, After):
        value = value.statistic(released)
    if isinstance(value, Drawn):
        return value.draw(releaser)
    if isinstance(value, Symmetric):
        return releaser.add_symmetric(name, value.matrix, shape=value.shape)
    return releaser.add(name, value)


def _release_stage(mechanism: Mechanism[Any, Any], inputs: Any, rows: Any, stage: ReleasePlan,
                   releaser: Releaser, released: Released) -> None:
    for name, value in mechanism.statistic(inputs, rows, stage, released).items():
        released[name] = _draw(releaser, name, value, released)
    released.releaser = releaser


def _as_released(plan: ReleasePlan, stages: list[ReleasePlan]) -> ReleasePlan:
    """``plan`` with each release replaced by the one drawn, and every stage's notes."""
    drawn = {r.name: r for stage in stages for r in stage.releases}
    notes = plan.notes + tuple(note for stage in stages for note in stage.notes if note not in plan.notes)
    return ReleasePlan(plan.label, plan.relation, plan.events,
                       tuple(drawn.get(r.name, r) for r in plan.releases), notes)


def run(mechanism: Mechanism[Inputs, Result], inputs: Inputs, X: Any, settings: RunSettings) -> Result:
    """Run ``mechanism`` on the private rows ``X``: the one order of every release (module note)."""
    checked = mechanism.check(inputs, X)
    noise = noise_source(settings.random_state, like=X)
    d_known = getattr(checked, "d", None)
    n_known = getattr(checked, "n", None)
    first = mechanism.plan(checked, n_known, d_known)
    if first is not None:  # fail fast, before reading the data
        precheck(settings.accountant, (*first.events, *mechanism.reserved_events(checked)), first.relation)
    released = Released()
    released.noise = noise
    if is_one_shot(X) or not mechanism.is_staged(checked):
        final = _one_charge(mechanism, checked, X, settings, noise, released)
    else:
        final = _staged(mechanism, checked, X, settings, noise, released)
    report = released.releaser.report(**mechanism.report_facts(checked), accounting=settings.accounting,
                                      notes=final.notes, stacklevel=mechanism.stacklevel + 2,
                                      events=final.events) if mechanism.reported else None
    return mechanism.post_process(checked, released.rows, released, report)


def _one_charge(mechanism: Mechanism[Any, Any], checked: Any, X: Any, settings: RunSettings,
                noise: NoiseSource, released: Released) -> ReleasePlan:
    """One charge: read then charge, or (a one-shot stream) charge then read."""
    def plan_for(n: int | None, d: int | None) -> ReleasePlan:
        plan = mechanism.plan(checked, n, d)
        if plan is None:  # a one-shot stream whose width cannot be looked up: refused before the charge
            raise ValueError(f"{mechanism.label}: the number of features must be known before the charge.")
        return plan

    with read_then_release(X, lambda data: mechanism.read(checked, data), plan_for, settings.accountant,
                           noise, owner=mechanism.label) as (rows, releaser):
        plan = releaser.plan
        released.rows = rows
        stage = mechanism.stage_plan(checked, plan, mechanism.stages(checked, plan)[0], released)
        if stage is not plan:
            releaser.plan = stage  # the charged events, the stage's releases
        _release_stage(mechanism, checked, rows, stage, releaser, released)
        released.plan = _as_released(plan, [stage])
    return released.plan


def _staged(mechanism: Mechanism[Any, Any], checked: Any, X: Any, settings: RunSettings, noise: NoiseSource,
            released: Released) -> ReleasePlan:
    """Several charges: the rows are read (and validated) first, every stage's cost checked up front."""
    rows = mechanism.read(checked, X)
    plan = mechanism.plan(checked, rows.n, rows.d)
    assert plan is not None
    groups = mechanism.stages(checked, plan)
    staged = StagedRelease(settings.accountant, plan.relation, plan.label,
                           [mechanism.stage_events(checked, plan, names) for names in groups],
                           n_rows=rows.n)
    released.rows = rows
    drawn = []
    for names in groups:
        stage = mechanism.stage_plan(checked, plan, names, released)
        with staged.stage(stage, noise) as releaser:
            _release_stage(mechanism, checked, rows, stage, releaser, released)
        drawn.append(stage)
    released.plan = _as_released(plan, drawn)
    return released.plan
