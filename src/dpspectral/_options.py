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
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["AdaptiveClip", "folded"]

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
                # name the user's line, above any other option group folded around this one
                frame, level = sys._getframe(1), 2
                while frame is not None and frame.f_code is call.__code__:
                    frame, level = frame.f_back, level + 1
                warnings.warn(
                    f"{olds} of {owner} moved into '{group}': pass {group}={factory.__name__}({example}). "
                    "The old keyword will be removed in a later version.", FutureWarning, stacklevel=level)
                current = kwargs.get(group)
                if isinstance(current, factory):
                    kwargs[group] = dataclasses.replace(current, **given)
                elif current is not False:
                    kwargs[group] = factory(**given)
            return func(*args, **kwargs)

        call.folded_parameters = {**getattr(func, "folded_parameters", {}),  # type: ignore[attr-defined]
                                  **{old: f"{group}.{new}" for old, new in fields.items()}}
        return call  # type: ignore[return-value]

    return wrap
