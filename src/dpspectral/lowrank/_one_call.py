"""What the one-call entries of the streaming states share (``turnstile_lrf``, ``continual_lrf``, ...).

Each such function builds the state of its class for A's public shape, passes its own arguments on to
it by name, feeds A and releases once; the class documents and checks the parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["state_keywords", "stream_entries"]


def state_keywords(init: Callable[..., Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword-only parameters of ``init`` (a state's ``__init__``) among ``arguments``.

    A one-call function passes ``locals()``: its own parameters that the state shares, by name, so that
    the two lists cannot drift apart (a parameter of the function the state lacks stays behind).
    """
    names = [p.name for p in inspect.signature(init).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return {name: arguments[name] for name in names if name in arguments}


def stream_entries(state: Any, M: Any, batch_size: int) -> None:
    """Every stored entry of the COO matrix M as a turnstile update, row-major, ``batch_size`` at a time."""
    step = max(1, int(batch_size))
    for a in range(0, M.nnz, step):
        state.update_many(M.row[a : a + step], M.col[a : a + step], M.data[a : a + step])
