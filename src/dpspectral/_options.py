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
import sys
import types
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._constraints import NONE, SHARE, Constraint, check_params

__all__ = ["ADAPTIVE_CLIP", "AdaptiveClip", "clip_fields", "folded"]

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


#: The modules whose keyword wrappers (``call``: :func:`folded`, :func:`~dpspectral._constraints.renamed`)
#: stand between a user's call and the function; a warning skips them.
_WRAPPER_MODULES = frozenset({__name__, "dpspectral._constraints"})


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame above the calling wrapper that is not a keyword wrapper."""
    level = 2
    frame: types.FrameType | None = sys._getframe(2)
    while (frame is not None and frame.f_code.co_name == "call"
           and frame.f_globals.get("__name__") in _WRAPPER_MODULES):
        level, frame = level + 1, frame.f_back
    return level


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
            given: dict[str, Any] = {}
            for old, new in fields.items():
                if old in kwargs:
                    if new in given:  # two old names of one field (a paper's symbol and its long name)
                        raise TypeError(f"{owner}() got two keywords for '{group}.{new}'; pass "
                                        f"{group}={factory.__name__}({new}=...).")
                    given[new] = kwargs.pop(old)
            if given:
                olds = ", ".join(f"'{old}'" for old, new in fields.items() if new in given)
                example = ", ".join(f"{name}=..." for name in given)
                warnings.warn(
                    f"{olds} of {owner} moved into '{group}': pass {group}={factory.__name__}({example}). "
                    "The old keyword will be removed in a later version.", FutureWarning,
                    stacklevel=_caller_level())
                current = kwargs.get(group)
                if isinstance(current, factory):
                    kwargs[group] = dataclasses.replace(current, **given)  # type: ignore[type-var]
                elif current is None or bool(current):  # absent or on (False, NumPy's False: off)
                    kwargs[group] = factory(**given)
            return func(*args, **kwargs)

        call.folded_parameters = {**getattr(func, "folded_parameters", {}),  # type: ignore[attr-defined]
                                  **{old: f"{group}.{new}" for old, new in fields.items()}}
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
