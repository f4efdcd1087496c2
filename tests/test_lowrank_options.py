"""The option groups of the low-rank methods: ``sketch=Sketch(...)`` and Hardt-Roth's constants.

The old keywords (the sketch sizes and the paper's ``t``, ``v``, the failure share, the seed; Hardt-Roth's
oversampling, pruning, stage share, block and iterations) still work for one release: each gives the
same seeded result as the group, with a FutureWarning that names the group. The defaults of the groups
are the methods' own (a call with an empty group equals a call without it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpspectral
from dpspectral import PowerIteration, RangeFinder, Sketch
from dpspectral.local import private_local_lrf
from dpspectral.lowrank import (
    ContinualLRF,
    ContinualSpaceOptimalLRF,
    CovarianceLRF,
    TurnstileLRF,
    TurnstileSpaceOptimalLRF,
    continual_lrf,
    continual_space_optimal_lrf,
    covariance_lrf,
    hardt_roth,
    private_frobenius_lrf,
    private_space_optimal_lrf,
    turnstile_lrf,
    turnstile_space_optimal_lrf,
)

_A = np.random.default_rng(2018).uniform(size=(12, 9))
_ROWS = _A / np.linalg.norm(_A, axis=1, keepdims=True)
_PRIVATE = {"epsilon": 1.0, "delta": 1e-6, "random_state": 0}
_OLD = {"t": 4, "affine_sketch_size": 6, "sketch_failure_share": 0.2, "sketch_seed": 11}
_NEW = {"sketch": Sketch(subspace_size=4, affine_size=6, failure_share=0.2, seed=11)}


def _factors(res: Any) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(x) for x in (res.U, res.S, res.V) if x is not None)


def _turnstile(cls: type, **kw: Any) -> tuple[np.ndarray, ...]:
    state = cls(_A.shape, 2, **_PRIVATE, **kw)
    rows, cols = np.nonzero(_A)
    state.update_many(rows, cols, _A[rows, cols])
    return _factors(state.release())


def _continual(cls: type, **kw: Any) -> tuple[np.ndarray, ...]:
    state = cls(_A.shape, 2, 2, **_PRIVATE, **kw)
    for step in range(2):
        cols = np.arange(_A.shape[1])
        state.step(np.full(cols.size, step), cols, _A[step])
    return _factors(state.release())


def _covariance(**kw: Any) -> tuple[np.ndarray, ...]:
    state = CovarianceLRF(_ROWS.shape[1], 2, **_PRIVATE, **kw)
    state.insert_many(_ROWS)
    return _factors(state.release())


#: (name, run(**keywords) -> arrays)
SKETCH_CASES: list[tuple[str, Callable[..., tuple[np.ndarray, ...]]]] = [
    ("private_frobenius_lrf", lambda **kw: _factors(private_frobenius_lrf(_A, 2, **_PRIVATE, **kw))),
    ("private_space_optimal_lrf", lambda **kw: _factors(private_space_optimal_lrf(_A, 2, **_PRIVATE, **kw))),
    ("turnstile_lrf", lambda **kw: _factors(turnstile_lrf(_A, 2, **_PRIVATE, **kw))),
    ("turnstile_space_optimal_lrf",
     lambda **kw: _factors(turnstile_space_optimal_lrf(_A, 2, **_PRIVATE, **kw))),
    ("continual_lrf", lambda **kw: _factors(continual_lrf(_A, 2, **_PRIVATE, **kw))),
    ("continual_space_optimal_lrf",
     lambda **kw: _factors(continual_space_optimal_lrf(_A, 2, **_PRIVATE, **kw))),
    ("covariance_lrf", lambda **kw: _factors(covariance_lrf(_ROWS, 2, **_PRIVATE, **kw))),
    ("private_local_lrf", lambda **kw: _factors(private_local_lrf(_ROWS, 2, **_PRIVATE, **kw))),
    ("TurnstileLRF", lambda **kw: _turnstile(TurnstileLRF, **kw)),
    ("TurnstileSpaceOptimalLRF", lambda **kw: _turnstile(TurnstileSpaceOptimalLRF, **kw)),
    ("ContinualLRF", lambda **kw: _continual(ContinualLRF, **kw)),
    ("ContinualSpaceOptimalLRF", lambda **kw: _continual(ContinualSpaceOptimalLRF, **kw)),
    ("CovarianceLRF", _covariance),
]


def _same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(("name", "run"), SKETCH_CASES, ids=[c[0] for c in SKETCH_CASES])
def test_old_sketch_keywords_warn_and_give_the_group_result(name, run):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the group: no warning
        expected = run(**_NEW)
    with pytest.warns(FutureWarning, match=r"moved into 'sketch': pass sketch=Sketch\(") as caught:
        got = run(**_OLD)
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, FutureWarning)), name
    _same(expected, got)


@pytest.mark.parametrize(("name", "run"), SKETCH_CASES[:3], ids=[c[0] for c in SKETCH_CASES[:3]])
def test_an_empty_sketch_is_the_default(name, run):
    _same(run(sketch=Sketch(seed=3)), run(sketch=Sketch(seed=3, failure_share=None, subspace_size=None)))
    with pytest.raises(AssertionError):  # the options matter: a different failure share, other noise
        _same(run(sketch=Sketch(seed=3)), run(sketch=Sketch(seed=3, failure_share=0.3)))


@pytest.mark.parametrize("bad", [Sketch(failure_share=1.5), Sketch(seed=-1), Sketch(subspace_size=0),
                                 Sketch(sensitivity="drawn")])
def test_a_bad_sketch_field_is_refused_before_anything_is_charged(bad):
    acc = dpspectral.Accountant(epsilon=10.0, delta=1e-3, relation="priv2")
    with pytest.raises(ValueError, match=r"sketch"):
        private_frobenius_lrf(_A, 2, epsilon=1.0, delta=1e-6, sketch=bad, accountant=acc, random_state=0)
    assert acc.spent()[0] == 0.0


def test_a_sketch_that_is_not_a_sketch_is_refused():
    with pytest.raises(ValueError, match=r"'sketch' parameter of private_frobenius_lrf must be"):
        private_frobenius_lrf(_A, 2, epsilon=1.0, delta=1e-6, sketch=5)


def test_drawn_sensitivity_moved_into_the_sketch_of_the_local_protocol():
    new = private_local_lrf(_ROWS, 2, **_PRIVATE, sketch=Sketch(seed=4, sensitivity="drawn"))
    with pytest.warns(FutureWarning, match="'sketch_seed', 'sketch_sensitivity'"):
        old = private_local_lrf(_ROWS, 2, **_PRIVATE, sketch_seed=4, sketch_sensitivity="drawn")
    _same(_factors(new), _factors(old))
    assert new.diagnostics["sketch_seed"] == 4


_HR_CASES = [
    ({"algorithm": "range_finder", "oversampling": 1, "prune": 3.0, "stage_share": 0.4,
      "sketch_failure_share": 0.2},
     {"algorithm": "range_finder",
      "range_finder": RangeFinder(oversampling=1, prune=3.0, stage_share=0.4, failure_share=0.2)}),
    ({"block": 4, "iterations": 2}, {"power": PowerIteration(block=4, iterations=2)}),
]


@pytest.mark.parametrize(("old", "new"), _HR_CASES, ids=["range_finder", "power"])
def test_hardt_roth_old_keywords_warn_and_give_the_group_result(old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        expected = hardt_roth(_ROWS, 2, **_PRIVATE, **new)
    with pytest.warns(FutureWarning, match="moved into") as caught:
        got = hardt_roth(_ROWS, 2, **_PRIVATE, **old)
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, FutureWarning))
    _same(_factors(expected), _factors(got))


def test_hardt_roth_groups_default_to_the_method_defaults():
    plain = hardt_roth(_ROWS, 2, **_PRIVATE)
    _same(_factors(plain), _factors(hardt_roth(_ROWS, 2, **_PRIVATE, power=PowerIteration(),
                                               range_finder=RangeFinder())))
    other = hardt_roth(_ROWS, 2, **_PRIVATE, power=PowerIteration(iterations=5))
    assert other.diagnostics["iterations"] == 5 and plain.diagnostics["iterations"] == 3


def test_hardt_roth_bad_group_field_is_refused():
    with pytest.raises(ValueError, match=r"'power.iterations' parameter of hardt_roth"):
        hardt_roth(_ROWS, 2, **_PRIVATE, power=PowerIteration(iterations=0))
    with pytest.raises(ValueError, match=r"'range_finder.prune' parameter of hardt_roth"):
        hardt_roth(_ROWS, 2, **_PRIVATE, algorithm="range_finder", range_finder=RangeFinder(prune=-1.0))


def test_two_old_names_of_one_field_are_refused():
    with pytest.raises(TypeError, match=r"two keywords for 'sketch.subspace_size'"):
        private_frobenius_lrf(_A, 2, **_PRIVATE, t=4, subspace_sketch_size=5)


def test_a_sketch_field_selects_the_local_sketch_protocol_and_is_named_when_refused():
    assert private_local_lrf(_ROWS, 2, **_PRIVATE, sketch=Sketch(failure_share=0.2)).U is None  # gram: V, S
    assert private_local_lrf(_ROWS, 2, **_PRIVATE, sketch=Sketch(seed=2)).U is not None  # the paper's
    with pytest.raises(ValueError, match=r"sketch\.seed belong\(s\) to the paper's sketch protocol"):
        private_local_lrf(_ROWS, 2, **_PRIVATE, protocol="gram", sketch=Sketch(seed=2))
