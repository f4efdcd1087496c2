"""Groups of related keyword options, passed as one value.

A mechanism whose options come in families takes each family as one small frozen object, as SciPy's
``minimize(options=...)`` and scikit-learn's ``HistGradientBoostingClassifier`` do for their families:
the defaults stay the mechanism's own, the object says which family a number belongs to, and one
definition documents it everywhere it is used.

:class:`AdaptiveClip` is the family of every method that chooses its clipping bound privately.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._constraints import NONE, SHARE, Constraint, check_params

__all__ = ["ADAPTIVE_CLIP", "AdaptiveClip", "clip_fields", "folded", "folded_choice"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class AdaptiveClip:
    """Choose the clipping bound privately, from a noisy quantile of the rows' norms.

    Pass ``adaptive_clip=AdaptiveClip(...)`` to set how; ``adaptive_clip=True`` uses the method's
    defaults and ``False`` clips at ``row_norm`` without looking at the norms.

    Parameters
    ----------
    quantile : float in (0, 1) or None, default=None
        The quantile of the rows' norms to clip at. None: the method's default.
    share : float in (0, 1) or None, default=None
        The share of the budget spent on the quantile. None: the method's default.
    """

    quantile: float | None = None
    share: float | None = None

    def __post_init__(self) -> None:
        check_params({"quantile": [NONE, SHARE], "share": [NONE, SHARE]},
                     {"quantile": self.quantile, "share": self.share}, "AdaptiveClip")


def _caller_level() -> int:
    """The ``stacklevel`` of the user's frame: the first above the calling wrapper outside the library.

    The keyword wrappers (``call``: :func:`folded`, :func:`~dpspectral._constraints.renamed`) and the
    entry points that forward keywords (``private_fda(**kwargs)``, an estimator's ``method_params``)
    stand between a user's call and the function; the warning skips them (the outermost frame if every
    frame is the library's).
    """
    level = 2
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_back is not None and _in_library(frame):
        level, frame = level + 1, frame.f_back
    return level


def _in_library(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs this package's code."""
    name = str(frame.f_globals.get("__name__", ""))
    return name == __package__ or name.startswith(f"{__package__}.")


def folded(group: str, factory: type, fields: Mapping[str, str], since: str = "0.2.0") -> Callable[[F], F]:
    """Accept keywords that became fields of an option group, with a FutureWarning.

    ``@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})`` lets ``f(..., clip_share=0.1)``
    keep working as ``f(..., adaptive_clip=AdaptiveClip(share=0.1))`` and says so. The group's value
    decides how: an instance of ``factory`` has the fields replaced, ``False`` keeps the group off (the
    old keyword had no effect there either), anything else (``True``, None, absent) becomes
    ``factory(**fields)``. Apply it outside :func:`~dpspectral._constraints.validated` (above it).
    """

    def wrap(func: F) -> F:
        owner = func.__qualname__.removesuffix(".__init__")

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            given = _pop_fields(kwargs, fields, group, factory, owner)
            if given:
                _warn_moved(_olds(fields, given), owner, group, factory, given)
                kwargs[group] = _fold(kwargs.get(group), factory, given)
            return func(*args, **kwargs)

        call.folded_parameters = {**getattr(func, "folded_parameters", {}),  # type: ignore[attr-defined]
                                  **{old: f"{group}.{new}" for old, new in fields.items()}}
        return call  # type: ignore[return-value]

    return wrap


def _pop_fields(kwargs: dict[str, Any], fields: Mapping[str, str], group: str, factory: type,
                owner: str) -> dict[str, Any]:
    """The old keywords of ``fields`` taken out of ``kwargs``, by their field names."""
    given: dict[str, Any] = {}
    for old, new in fields.items():
        if old in kwargs:
            if new in given:  # two old names of one field (a paper's symbol and its long name)
                raise TypeError(f"{owner}() got two keywords for '{group}.{new}'; pass "
                                f"{group}={factory.__name__}({new}=...).")
            given[new] = kwargs.pop(old)
    return given


def _olds(fields: Mapping[str, str], given: Mapping[str, Any]) -> list[str]:
    """The old keywords of ``fields`` that were passed (one per given field), in the table's order."""
    return [old for old, new in fields.items() if new in given]


def _warn_moved(olds: list[str], owner: str, group: str, factory: type, given: Mapping[str, Any],
                meaning: str = "") -> None:
    """The FutureWarning of old keywords ``olds`` that moved into ``group``, pointing at the caller."""
    example = ", ".join(f"{name}=..." for name in given) or "..."
    warnings.warn(
        f"{', '.join(repr(old) for old in olds)} of {owner} moved into '{group}': pass "
        f"{group}={factory.__name__}({example}){meaning}. The old keyword will be removed in a later "
        "version.", FutureWarning, stacklevel=_caller_level())


def _fold(current: Any, factory: type, given: Mapping[str, Any]) -> Any:
    """The group's value with the old keywords' fields: an instance of ``factory`` has them replaced,
    ``False`` (off) is kept (an old keyword had no effect there either), anything else (``True``, None)
    becomes ``factory(**given)``."""
    if isinstance(current, factory):
        return dataclasses.replace(current, **given)  # type: ignore[type-var]
    if current is None or bool(current):  # absent or on (False, NumPy's False: off)
        return factory(**given)
    return current


def folded_choice(choice: str, selects: str, factory: type, group: str, fields: Mapping[str, str],
                  check: Callable[[Any, str], None]) -> Callable[[F], F]:
    """Accept an option group that became a value of a choice keyword, with a FutureWarning.

    ``@folded_choice("calibration", "paper", PaperCalibration, "paper_calibration", {"paper_formula":
    "formula"}, check)`` lets ``f(..., calibration="paper", paper_calibration=PaperCalibration(...))``
    (and the group's older keywords, ``paper_formula=...``) keep working as
    ``f(..., calibration=PaperCalibration(...))``, the choice ``"paper"`` with those settings, and says
    so. As before, the group is read only with ``choice=selects``: with another choice it is checked
    (``check(value, owner)`` raises as the function did) and has no effect. A choice that is already an
    instance of ``factory`` takes the old keywords' fields, and refuses the old group besides it. Apply
    it where :func:`folded` goes.
    """

    def wrap(func: F) -> F:
        owner = func.__qualname__.removesuffix(".__init__")
        default = inspect.signature(func).parameters[choice].default

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            given = _pop_fields(kwargs, fields, group, factory, owner)
            if group not in kwargs and not given:
                return func(*args, **kwargs)
            olds = [group] * (group in kwargs) + _olds(fields, given)
            current = kwargs.get(choice, default)
            selected = isinstance(current, str) and current == selects
            unread = "" if selected or isinstance(current, factory) else (
                f"; with {choice}={current!r} it has no effect: leave it out")
            _warn_moved(olds, owner, choice, factory, given,
                        f" ({choice}={selects!r} with those settings){unread}")
            if isinstance(current, factory):
                if group in kwargs:
                    raise TypeError(f"{owner}() got both {choice}={factory.__name__}(...) and '{group}'; "
                                    f"pass {choice}={factory.__name__}(...) only.")
                kwargs[choice] = _fold(current, factory, given)
                return func(*args, **kwargs)
            value = kwargs.pop(group, None)
            if given:
                value = _fold(value, factory, given)
            check(value, owner)  # refused as before, even where it is not read
            if selected:
                kwargs[choice] = selects if value is None else value
            return func(*args, **kwargs)

        call.folded_parameters = {**getattr(func, "folded_parameters", {}),  # type: ignore[attr-defined]
                                  group: choice,
                                  **{old: f"{choice}.{new}" for old, new in fields.items()}}
        return call  # type: ignore[return-value]

    return wrap


def clip_fields(value: bool | AdaptiveClip, owner: str,
                takes_quantile: bool = True) -> tuple[bool, float | None, float | None]:
    """``(on, quantile, share)`` of an ``adaptive_clip`` value (None: the method's default).

    A method that picks its clip by the balance rule (``takes_quantile=False``) refuses a quantile, which
    it would not use.
    """
    group = value if isinstance(value, AdaptiveClip) else AdaptiveClip()
    if group.quantile is not None and not takes_quantile:
        raise ValueError(
            f"{owner} picks its clip from the released norm histogram and the noise (the balance rule), "
            f"not at a quantile: pass AdaptiveClip(share=...) without quantile. Got quantile="
            f"{group.quantile!r}.")
    return value is not False, group.quantile, group.share


@dataclass(frozen=True)
class _Group(Constraint):
    """A bool or an instance of an option group (whose fields it checked when it was made)."""

    group: type

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (bool, self.group))

    @property
    def description(self) -> str:  # type: ignore[override]
        return f"a bool or an {self.group.__name__}"


#: The constraint of an ``adaptive_clip`` parameter: True, False or an :class:`AdaptiveClip`.
ADAPTIVE_CLIP = _Group(AdaptiveClip)
