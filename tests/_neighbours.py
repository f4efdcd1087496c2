"""Shared helpers of the neighbour-invariance and nothing-charged tests.

The rule these helpers check: nothing derived from the data leaves the library unless it was released
with noise. For two neighbouring data sets run with the same seed, everything a user can observe that
is *not* a declared release must be identical: the fields of results, their diagnostics, the privacy
report, fitted attributes, warnings (category and text), whether the call raised and its message, and
the ledger entries. A declared release (a noisy matrix, the components computed from it) may differ in
value, but not in kind: its type, shape and dtype are public too.

:func:`observe` runs one call and records all of that as an :class:`Outcome`; :func:`public_view`
flattens a result (dataclasses, dicts, arrays, estimators) into ``{dotted.path: comparable value}``
with the released paths reduced to their kind; :func:`assert_same_public_view` compares two outcomes
and reports every path that differs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fnmatch
import io
import math
import numbers
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpspectral import Accountant

__all__ = [
    "Outcome",
    "assert_exception_is_data_free",
    "assert_message_is_data_free",
    "assert_same_public_view",
    "fitted_attributes",
    "observe",
    "public_attributes",
    "public_view",
]

_MAX_DEPTH = 10


@dataclass(frozen=True)
class Outcome:
    """Everything a caller observes from one call."""

    result: Any
    error: tuple[str, str] | None  # (exception type, message)
    warnings: tuple[tuple[str, str], ...]  # (category, message), in order
    ledger: tuple[tuple[str, str, str], ...]  # (label, repr(event), status) of each ledger entry
    printed: tuple[str, str] = ("", "")  # what the call wrote to sys.stdout and sys.stderr
    exception: BaseException | None = dataclasses.field(default=None, compare=False)

    @property
    def raised(self) -> bool:
        return self.error is not None


def observe(call: Callable[[Accountant], Any], *, accountant: Accountant | None = None) -> Outcome:
    """Run ``call(accountant)`` and record its result or error, its warnings, what it printed and the ledger.

    ``accountant`` defaults to a fresh one with no ceiling, so that every charge is recorded (none is
    refused) and shows in :attr:`Outcome.ledger`.
    """
    acc = Accountant(delta=1e-3) if accountant is None else accountant
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        exception = None
        try:
            result, error = call(acc), None
        except Exception as exc:  # noqa: BLE001 - the fact and text of a failure are outputs too
            result, error, exception = None, (type(exc).__name__, str(exc)), exc
    seen = tuple((w.category.__name__, str(w.message)) for w in caught)
    ledger = tuple((e.label, repr(e.event), e.status) for e in acc.entries)
    return Outcome(result=result, error=error, warnings=seen, ledger=ledger,
                   printed=(out.getvalue(), err.getvalue()), exception=exception)


def _is_released(path: str, released: Iterable[str]) -> bool:
    """``path`` (dotted) matches a released pattern (fnmatch), or lies below one."""
    return any(fnmatch.fnmatchcase(path, pat) or fnmatch.fnmatchcase(path, pat + ".*") for pat in released)


def _kind(obj: Any) -> Any:
    """What stays public about a released value: its type, and its shape and dtype for arrays."""
    if obj is None:
        return ("None",)
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.shape, obj.dtype.str)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, len(obj), tuple(_kind(x) for x in obj))
    if isinstance(obj, Mapping):
        return (type(obj).__name__, tuple(sorted(map(str, obj))))
    if isinstance(obj, numbers.Number):
        return ("number", type(obj).__name__)
    return (type(obj).__name__,)


def _scalar(obj: Any) -> Any:
    if isinstance(obj, (bool, np.bool_)):
        return ("bool", bool(obj))
    if isinstance(obj, numbers.Integral):
        return ("int", int(obj))
    if isinstance(obj, numbers.Real):
        f = float(obj)
        return ("float", "nan" if math.isnan(f) else f.hex())
    if isinstance(obj, numbers.Complex):
        return ("complex", complex(obj).real.hex(), complex(obj).imag.hex())
    return None


def public_view(obj: Any, released: Iterable[str] = (), path: str = "") -> dict[str, Any]:
    """Flatten ``obj`` into ``{dotted path: comparable value}``.

    Dataclasses, mappings, sequences and objects with public attributes are walked; arrays are compared
    bit for bit (shape, dtype, bytes); floats exactly. A path matching a pattern of ``released`` (fnmatch,
    e.g. ``"components"``, ``"diagnostics.n_samples"``, ``"sites.*.n_samples"``) keeps only its kind
    (:func:`_kind`).
    """
    released = tuple(released)
    out: dict[str, Any] = {}
    _walk(obj, released, path, out, 0)
    return out


def _walk(obj: Any, released: tuple[str, ...], path: str, out: dict[str, Any], depth: int) -> None:
    key = path or "<root>"
    if path and _is_released(path, released):
        out[key] = ("released", _kind(obj))
        return
    if depth > _MAX_DEPTH:
        out[key] = ("deep", type(obj).__name__)
        return

    def sub(name: Any) -> str:
        return f"{path}.{name}" if path else str(name)

    if obj is None or isinstance(obj, (str, bytes)):
        out[key] = obj
    elif isinstance(obj, enum.Enum):
        out[key] = ("enum", type(obj).__name__, obj.value)
    elif (s := _scalar(obj)) is not None:
        out[key] = s
    elif isinstance(obj, np.ndarray):
        arr = np.ascontiguousarray(obj)
        out[key] = ("ndarray", arr.shape, arr.dtype.str,
                    arr.tobytes() if arr.dtype.kind != "O" else repr(arr.tolist()))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out[key] = ("dataclass", type(obj).__name__)
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name), released, sub(f.name), out, depth + 1)
    elif isinstance(obj, Mapping):
        out[key] = ("mapping", type(obj).__name__, tuple(sorted(map(str, obj))))
        for k, v in obj.items():
            _walk(v, released, sub(k), out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        out[key] = (type(obj).__name__, len(obj))
        for i, v in enumerate(obj):
            _walk(v, released, sub(i), out, depth + 1)
    elif _is_dp_event(obj):
        out[key] = ("event", repr(obj))
    elif hasattr(obj, "__dict__") and not callable(obj):
        out[key] = ("object", type(obj).__name__)
        for name, v in public_attributes(obj).items():
            _walk(v, released, sub(name), out, depth + 1)
    else:
        out[key] = ("other", type(obj).__name__)


def _is_dp_event(obj: Any) -> bool:
    return type(obj).__module__.startswith("dp_accounting")


def public_attributes(obj: Any) -> dict[str, Any]:
    """An object's public instance attributes (names not starting with ``_``)."""
    return {k: v for k, v in sorted(vars(obj).items()) if not k.startswith("_")}


def fitted_attributes(estimator: Any) -> dict[str, Any]:
    """A fitted scikit-learn style estimator's fitted attributes (public names ending with ``_``)."""
    return {k: v for k, v in sorted(vars(estimator).items()) if k.endswith("_") and not k.startswith("_")}


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def assert_same_public_view(
    a: Outcome, b: Outcome, released: Iterable[str] = (), *, context: str = ""
) -> None:
    """Assert that two neighbours' outcomes agree on everything that is not a declared release.

    Compares whether each raised and the error text, the warnings (category and text), what was printed
    (stdout, stderr), the ledger entries, and :func:`public_view` of the two results with ``released``
    reduced to their kind. The assertion message lists every path that differs.
    """
    released = tuple(released)
    problems: list[str] = []
    if a.error != b.error:
        problems.append(f"error: {_short(a.error)} != {_short(b.error)}")
    if a.warnings != b.warnings:
        problems.append(f"warnings: {_short(a.warnings, 400)} != {_short(b.warnings, 400)}")
    if a.printed != b.printed:
        problems.append(f"printed: {_short(a.printed, 400)} != {_short(b.printed, 400)}")
    if a.ledger != b.ledger:
        problems.append(f"ledger: {_short(a.ledger, 400)} != {_short(b.ledger, 400)}")
    va, vb = public_view(a.result, released), public_view(b.result, released)
    if a.raised != b.raised:  # one answered, one refused: the decision itself is the difference
        va, vb = {}, {}
    for key in sorted(set(va) | set(vb), key=str):
        if va.get(key, "<absent>") != vb.get(key, "<absent>"):
            problems.append(f"{key}: {_short(va.get(key, '<absent>'))} != {_short(vb.get(key, '<absent>'))}")
    if problems:
        head = f"{context}: " if context else ""
        shown = "\n  ".join(problems[:25])
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        raise AssertionError(f"{head}neighbours differ outside the declared releases:\n  {shown}{more}")


def assert_message_is_data_free(message: str, *, forbidden_numbers: Iterable[int] = (),
                                forbidden_substrings: Iterable[str] = ()) -> None:
    """Assert that an error/warning text names none of the given row indices, counts or values.

    Numbers are matched as whole tokens (``37`` is not found in ``137`` or ``3.7``).
    """
    for number in forbidden_numbers:
        assert not re.search(rf"(?<![\w.]){number}(?![\w]|\.\d)", message), (
            f"the message names {number} (a row index or count of the private data): {message!r}"
        )
    for text in forbidden_substrings:
        assert text not in message, f"the message quotes {text!r} (a private value): {message!r}"


def assert_exception_is_data_free(exc: BaseException, *, forbidden_numbers: Iterable[int] = (),
                                  forbidden_substrings: Iterable[str] = ()) -> None:
    """:func:`assert_message_is_data_free` on an exception and on everything chained under it.

    A clean message is not enough when NumPy's or scikit-learn's error (which quotes the offending cell)
    is kept as the ``__cause__`` or ``__context__``: the traceback prints it too.
    """
    numbers, texts = tuple(forbidden_numbers), tuple(forbidden_substrings)
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        assert_message_is_data_free(f"{type(e).__name__}: {e}", forbidden_numbers=numbers,
                                    forbidden_substrings=texts)
        todo += [e.__cause__, e.__context__]
