"""One declarative way to state and check parameters, for functions and estimators alike.

Each public callable states its parameters once, as a small table ``{name: constraint}``; the checks
and their error messages are generated from it, in the form scikit-learn users know::

    The 'epsilon' parameter of analyze_gauss must be a float in (0, inf). Got -1 instead.

A function declares its table with :func:`validated` (checked when called, before anything is read or
charged); an estimator sets ``_parameter_constraints`` and calls :func:`check_params` at the start of
``fit`` (parameters are checked at fit time, as scikit-learn requires). The table is data: the tests
enumerate it (every public callable rejects a negative epsilon with this message and charges nothing).

The shared entries (:data:`EPSILON`, :data:`DELTA`, :data:`ROW_NORM`, ...) are the public privacy
parameters every mechanism takes, gathered in the shared tables a callable's table extends
(:data:`PRIVACY_PARAMETERS`, :data:`NOISE_PARAMETERS`, :data:`BUDGET_PARAMETERS`; :func:`without` for a
callable that takes all but some); a callable adds its own (``n_components``, ``learning_rate``...).
Constraints that relate several parameters (``n_components <= n_features``, a relation the method
supports) stay in the callable, next to the reason.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

import numpy as np

__all__ = [
    "BUDGET_PARAMETERS",
    "CALIBRATION",
    "Calibration",
    "DELTA",
    "EPSILON",
    "InvalidParameterError",
    "NOISE_PARAMETERS",
    "NOISE_SHAPE",
    "NONE",
    "ON_NORM_VIOLATION",
    "OPTIONAL_BUDGET_PARAMETERS",
    "PRIVACY_PARAMETERS",
    "RANDOM_STATE",
    "ROW_NORM",
    "SHARE",
    "Constraint",
    "Interval",
    "NoiseShape",
    "Options",
    "Types",
    "check_params",
    "renamed",
    "validated",
    "without",
]


class InvalidParameterError(ValueError, TypeError):
    """A parameter breaks its declared constraint (a ValueError and a TypeError, as in scikit-learn)."""


class Constraint:
    """One admissible form of a parameter. A table entry is one constraint or a list of them."""

    description: str = "valid"

    def accepts(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """A real (or integer, with ``integer=True``) number in an interval; bools are refused.

    ``closed`` is ``"left"``, ``"right"``, ``"both"`` or ``"neither"``; ``None`` bounds are infinite
    (and always open). Infinite and NaN values are always refused.
    """

    low: float | None = None
    high: float | None = None
    closed: str = "neither"
    integer: bool = False

    def accepts(self, value: Any) -> bool:
        kind = numbers.Integral if self.integer else numbers.Real
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind):
            return False
        x = float(value)
        if math.isnan(x):
            return False
        left_ok = self.low is None or (x >= self.low if self.closed in ("left", "both") else x > self.low)
        right_ok = self.high is None or (x <= self.high if self.closed in ("right", "both")
                                         else x < self.high)
        return left_ok and right_ok and math.isfinite(x)

    @property
    def description(self) -> str:  # type: ignore[override]
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "[" if self.closed in ("left", "both") and self.low is not None else "("
        right = "]" if self.closed in ("right", "both") and self.high is not None else ")"
        return f"{'an int' if self.integer else 'a float'} in {left}{lo}, {hi}{right}"


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values (strings, usually)."""

    values: tuple[Any, ...]

    def accepts(self, value: Any) -> bool:
        try:
            return any(value == v and type(value) is type(v) for v in self.values)
        except Exception:  # an array compared with a string  # noqa: BLE001
            return False

    @property
    def description(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Types(Constraint):
    """An instance of one of ``types`` (``None`` admitted by listing ``type(None)``)."""

    types: tuple[type, ...]
    name: str = ""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.types) and not (
            isinstance(value, bool) and bool not in self.types and numbers.Integral in self.types)

    @property
    def description(self) -> str:  # type: ignore[override]
        if self.name:
            return self.name
        return "an instance of " + " or ".join(t.__name__ for t in self.types)


NONE = Types((type(None),), "None")

#: The public privacy parameters every mechanism takes.
EPSILON = Interval(0, None, "neither")
DELTA = Interval(0, 1, "left")
ROW_NORM = Interval(0, None, "neither")
SHARE = Interval(0, 1, "neither")
#: The noise calibrations: ``"tight"`` (the exact analytic multiplier) or ``"paper"`` (the paper's formula).
Calibration = Literal["tight", "paper"]
CALIBRATION = Options(get_args(Calibration))
#: The shapes of a symmetric noise matrix: ``"goe"`` (off-diagonal std ``sigma / sqrt(2)``) or ``"iid"``
#: (``N(0, sigma^2)`` on and above the diagonal); None: the mechanism's default for its calibration.
NoiseShape = Literal["goe", "iid"]
NOISE_SHAPE = [NONE, Options(get_args(NoiseShape))]
ON_NORM_VIOLATION = Options(("clip", "raise"))
RANDOM_STATE = [
    NONE,
    Interval(0, None, "left", integer=True),
    Types((np.random.Generator, np.random.SeedSequence, np.random.RandomState),
          "a numpy Generator, SeedSequence or RandomState"),
    Options(("secure",)),
]

Table = Mapping[str, "Constraint | list[Constraint] | None"]

#: The target (epsilon, delta) of a release.
BUDGET_PARAMETERS: Table = {"epsilon": EPSILON, "delta": DELTA}
#: The public parameters that fix a mechanism's noise scale: its target, the rows' norm bound and how
#: the noise is calibrated (a noise plan takes these and reads no data).
NOISE_PARAMETERS: Table = {**BUDGET_PARAMETERS, "row_norm": ROW_NORM, "calibration": CALIBRATION}
#: The privacy parameters of a mechanism on norm-bounded rows, in the order they are checked; a
#: function's table starts with them and adds its own (``{**PRIVACY_PARAMETERS, "n_iter": ...}``).
PRIVACY_PARAMETERS: Table = {
    **NOISE_PARAMETERS, "on_norm_violation": ON_NORM_VIOLATION, "random_state": RANDOM_STATE,
}
#: The target of an estimator, which may be left None until ``fit`` (where a method that needs it says
#: it is required).
OPTIONAL_BUDGET_PARAMETERS: Table = {"epsilon": [EPSILON, NONE], "delta": [DELTA, NONE]}


def without(table: Table, *names: str) -> dict[str, Constraint | list[Constraint] | None]:
    """``table`` less the entries ``names``: for a callable that takes the shared parameters but these
    (``{**without(PRIVACY_PARAMETERS, "calibration"), "n_rounds": ...}``).

    Raises
    ------
    KeyError
        A name that is not in ``table`` (a misspelt name would otherwise drop nothing).
    """
    missing = [name for name in names if name not in table]
    if missing:
        raise KeyError(f"not in the table: {missing}")
    return {name: entry for name, entry in table.items() if name not in names}


def _constraints(entry: Constraint | list[Constraint] | None) -> list[Constraint]:
    if entry is None:
        return []
    return list(entry) if isinstance(entry, list) else [entry]


def check_params(table: Table, values: Mapping[str, Any], owner: str) -> None:
    """Check every value named in ``table`` (a ``None`` entry means "any value", not checked here).

    Raises
    ------
    InvalidParameterError
        ``"The '<name>' parameter of <owner> must be <forms>. Got <value> instead."``
    """
    for name, entry in table.items():
        constraints = _constraints(entry)
        if not constraints or name not in values:
            continue
        value = values[name]
        if any(c.accepts(value) for c in constraints):
            continue
        forms = [c.description for c in constraints]
        text = forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]
        must = "is required: it must be" if value is None else "must be"
        raise InvalidParameterError(
            f"The '{name}' parameter of {owner} {must} {text}. Got {value!r} instead."
        )


F = TypeVar("F", bound=Callable[..., Any])


def validated(table: Table, owner: str | None = None) -> Callable[[F], F]:
    """Decorate a function with its constraint table: arguments are checked before the body runs.

    The table is kept as ``function.parameter_constraints`` (the tests read it). Unknown keyword
    arguments are refused by Python itself (a ``TypeError`` naming the argument).
    """

    def wrap(func: F) -> F:
        signature = inspect.signature(func)
        unknown = set(table) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{func.__name__}: constraints for unknown parameters {sorted(unknown)}")
        name = owner or func.__name__

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            check_params(table, bound.arguments, name)
            return func(*args, **kwargs)

        checked.parameter_constraints = dict(table)  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]

    return wrap


def renamed(old_to_new: Mapping[str, str], since: str = "0.2.0") -> Callable[[F], F]:
    """Accept the old (paper-notation) keyword names of a renamed parameter, with a FutureWarning.

    ``@renamed({"t": "sketch_rows"})`` lets ``f(..., t=5)`` keep working as ``f(..., sketch_rows=5)``
    and says so; passing both names is an error. Apply it outside :func:`validated` (above it).
    """

    def wrap(func: F) -> F:
        # a class's __init__ is named by its class ("TurnstileLRF"), a function by its name
        owner = func.__qualname__.removesuffix(".__init__")

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(
                            f"{owner}() got both '{old}' and its new name '{new}'; pass '{new}'."
                        )
                    warnings.warn(
                        f"The '{old}' parameter of {owner} was renamed '{new}' in {since}; the "
                        "old name will be removed in a later version.", FutureWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        call.renamed_parameters = dict(old_to_new)  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


def check_choice(value: Any, name: str, allowed: Collection[str], owner: str) -> str:
    """``value`` must be one of ``allowed`` (a one-entry table; for choices known only at run time)."""
    check_params({name: Options(tuple(allowed))}, {name: value}, owner)
    return value
