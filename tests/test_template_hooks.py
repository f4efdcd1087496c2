"""The release template's hooks for staged runs: stage events, reserved cost, independent streams, and a
later run continuing the noise stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import pytest

from dpspectral import Accountant
from dpspectral.privacy._accounting import BudgetExceededError
from dpspectral.privacy._budget import PrivacyBudget, Relation
from dpspectral.privacy._noise import ExactNoise, SecureNoise, SeededNoise
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from dpspectral.privacy._template import Drawn, Mechanism, Released, RunSettings, run

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # the report's warnings on a weak budget

G1, G2, G3 = (dp_accounting.GaussianDpEvent(m) for m in (20.0, 30.0, 40.0))


@dataclass(frozen=True)
class _Rows:
    values: np.ndarray

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def d(self) -> int:
        return 1


class _TwoStages(Mechanism[None, Released]):
    """Stage one: two events for one release; stage two: one event for two releases."""

    label = "two_stages"

    def __init__(self, reserved: tuple[Any, ...] = (), independent: bool = False) -> None:
        super().__init__()
        self.reserved = reserved
        self.independent = independent

    def plan(self, inputs: Any, n: int | None, d: int | None) -> ReleasePlan:
        releases = tuple(NoisyRelease(name, "gaussian", 1.0, 1.0) for name in ("a", "b", "c"))
        return ReleasePlan(self.label, Relation.ADD_REMOVE, (G1, G2, G3), releases)

    def is_staged(self, inputs: Any) -> bool:
        return True

    def stages(self, inputs: Any, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        return (("a",), ("b", "c"))

    def stage_events(self, inputs: Any, plan: ReleasePlan, names: tuple[str, ...]) -> tuple[Any, ...]:
        return (G1, G2) if names == ("a",) else (G3,)

    def reserved_events(self, inputs: Any) -> tuple[Any, ...]:
        return self.reserved

    def read(self, inputs: Any, X: Any) -> _Rows:
        return _Rows(np.asarray(X, dtype=float))

    def statistic(self, inputs: Any, rows: _Rows, plan: ReleasePlan, released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "a":
            if not self.independent:
                return {"a": rows.values.sum()}

            def draw(releaser: Releaser) -> Any:
                with releaser.independent() as own:
                    return own.add("a", rows.values.sum())
            return {"a": Drawn(draw)}
        return {"b": 0.0, "c": 0.0}

    def post_process(self, inputs: Any, rows: Any, released: Released, report: Any) -> Released:
        released["report"] = report
        return released

    def report_facts(self, inputs: Any) -> dict[str, Any]:
        return {"mechanism": self.label, "budget": PrivacyBudget(1e6, 0.5), "calibration": "tight"}


def test_stage_events_charge_each_stage_its_own_events_and_the_report_has_all():
    ledger = Accountant(epsilon=100.0, delta=0.5)
    out = run(_TwoStages(), None, [1.0, 2.0], RunSettings(ledger, 0))
    assert [e.event for e in ledger.entries] == [dp_accounting.ComposedDpEvent([G1, G2]), G3]
    assert tuple(out["report"].events) == (G1, G2, G3)


def test_reserved_events_are_checked_before_anything_is_read_and_not_charged():
    small = Accountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        run(_TwoStages(reserved=(dp_accounting.GaussianDpEvent(0.1),)), None, [1.0], RunSettings(small, 0))
    assert len(small.entries) == 0
    run(_TwoStages(), None, [1.0], RunSettings(small, 0))  # the run alone fits that ledger
    assert len(small.entries) == 2
    ledger = Accountant(epsilon=100.0, delta=0.5)
    run(_TwoStages(reserved=(G1,)), None, [1.0], RunSettings(ledger, 0))
    assert len(ledger.entries) == 2  # the reserved cost is the later run's to charge


def test_independent_stream_is_seeded_by_one_draw_and_secure_serves_as_is():
    plan = ReleasePlan("x", Relation.ADD_REMOVE, (G1,), (NoisyRelease("a", "gaussian", 1.0, 1.0),))
    outer = Releaser(plan, SeededNoise(np.random.default_rng(3)))
    with outer.independent() as own:
        inner = own.add("a", np.zeros(4))
    seed = np.random.default_rng(3).integers(0, 2**63 - 1)
    assert np.array_equal(inner, np.random.default_rng(int(seed)).normal(0.0, 1.0, size=4))
    assert not own._open  # closed with its block
    secure = Releaser(plan, SecureNoise())
    with secure.independent() as own:
        assert own.noise is secure.noise


def test_continuation_continues_the_seeded_stream_and_is_secure_for_os_entropy():
    a = run(_TwoStages(), None, [1.0], RunSettings(None, 5))
    b = run(_TwoStages(), None, [1.0], RunSettings(None, 5))
    # the same stream, continued: the next draws equal (and differ from a fresh generator's)
    assert a.continuation.normal() == b.continuation.normal()
    assert run(_TwoStages(), None, [1.0], RunSettings(None, "secure")).continuation == "secure"


def test_independent_draws_do_not_shift_the_later_stages_noise():
    plain = run(_TwoStages(), None, [1.0], RunSettings(None, 7))
    own = run(_TwoStages(independent=True), None, [1.0], RunSettings(None, 7))
    assert plain["a"] != own["a"]
    # one draw of the run's stream seeds the independent stream, whatever was drawn inside it
    rng = np.random.default_rng(7)
    rng.integers(0, 2**63 - 1)
    assert own["b"] == ExactNoise(rng).add_gaussian(0.0, 1.0, 1.0)  # the default source: exact noise


def test_inner_blocks_close_with_their_block_and_refuse_later_draws():
    """A block inside a release (an independent stream, a release adapted to a smaller sensitivity)
    closes when it ends: its noise, its randomness and a restated plan are refused after it."""
    plan = ReleasePlan("x", Relation.ADD_REMOVE, (G1,), (NoisyRelease("a", "gaussian", 2.0, 1.0),))
    outer = Releaser(plan, SeededNoise(np.random.default_rng(4)))
    with outer.adapted("a", scale=1.0, sensitivity=0.5) as sub:
        sub.add("a", np.zeros(2))
    with outer.independent() as own:
        own.add("a", np.zeros(2))
    for closed in (sub, own):
        with pytest.raises(RuntimeError, match="x: noise drawn after its release block ended"):
            closed.add("a", np.zeros(2))
        with pytest.raises(RuntimeError, match="x: randomness drawn after its release block ended"):
            _ = closed.generator
        with pytest.raises(RuntimeError, match="x: plan restated after its release block ended"):
            closed.restate(plan)
    outer.add("a", np.zeros(2))  # the outer block is still open
