"""Progress bars for long work (tqdm), quiet when output is not a terminal unless forced."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

__all__ = ["progress"]


def progress(
    iterable: Iterable[T],
    *,
    total: int | None = None,
    desc: str = "",
    enabled: bool | None = None,
    min_total: int = 8,
) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar.

    ``enabled=None`` shows the bar on a terminal only, and only for at least ``min_total`` steps;
    ``True`` always shows it; ``False`` never.
    """
    if enabled is False or (enabled is None and total is not None and total < min_total):
        yield from iterable
        return
    yield from tqdm(iterable, total=total, desc=desc, disable=None if enabled is None else False,
                    leave=False, dynamic_ncols=True)
