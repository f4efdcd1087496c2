"""A privacy ledger kept in a file and shared by runs (``dpspectral fit --ledger FILE``).

The file holds an :class:`~dpspectral.privacy._accounting.Accountant` (its ceiling, relation and every
charged ``dp_accounting`` event, :meth:`Accountant.to_dict`) and one record per run: its label, the
time it started, the method, the (epsilon, delta) it asked for and the one certified, its status and
which of the accountant's entries it charged. Everything in it is public: the events are built from
public inputs only, and nothing is read from the data.

Rules:

* the file is written atomically (a temporary file in the same folder, then a rename), so a reader
  sees the old ledger or the new one, never half of one;
* a file that is not a ledger, is corrupt, or was written by another format version raises
  :class:`LedgerFileError` and is left as it is: it is never reset (that would forget spending);
* :func:`locked` holds an exclusive lock (a ``FILE.lock`` file beside it, on systems with ``fcntl``)
  for a whole run, so two runs cannot both spend the same remaining budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._accounting import Accountant

__all__ = ["LEDGER_FORMAT", "LEDGER_FORMAT_VERSION", "LedgerBusyError", "LedgerFile", "LedgerFileError",
           "locked", "read_ledger", "write_ledger"]

LEDGER_FORMAT = "dpspectral-privacy-ledger"
LEDGER_FORMAT_VERSION = 1

#: The keys of one run's record, and the JSON types of their values.
_RUN_KEYS: dict[str, tuple[type, ...]] = {
    "label": (str,), "command": (str,), "time": (str,), "method": (str,), "relation": (str,),
    "requested_epsilon": (int, float), "requested_delta": (int, float),
    "epsilon": (int, float), "delta": (int, float), "status": (str,), "entries": (list,),
}


class LedgerFileError(ValueError):
    """A ledger file that cannot be used (corrupt, or another format version); it is left unchanged."""


class LedgerBusyError(OSError):
    """Another run holds the ledger's lock."""


@dataclass
class LedgerFile:
    """A ledger in memory: the accountant and the runs' records (``path`` is where it is saved)."""

    path: Path
    accountant: Accountant
    runs: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The file's JSON content: format and version, the spend so far, the accountant, the runs."""
        from .. import __version__

        acc = self.accountant
        return {
            "format": LEDGER_FORMAT,
            "format_version": LEDGER_FORMAT_VERSION,
            "dpspectral_version": __version__,
            # for people reading the file; recomputed from the events whenever the file is read
            "spent": {"epsilon": acc.epsilon_spent(), "delta": acc.spent()[1]},
            "accountant": acc.to_dict(),
            "runs": self.runs,
        }


def read_ledger(path: str | os.PathLike[str]) -> LedgerFile:
    """The ledger saved at ``path``: :class:`LedgerFileError` unless it is an intact ledger of this
    format version (``FileNotFoundError`` when there is no file)."""
    p = Path(path)
    name = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LedgerFileError(f"The ledger {name!r} is corrupt (not UTF-8 text); it was left "
                              "unchanged.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise LedgerFileError(f"The ledger {name!r} is corrupt (not valid JSON: {err.msg}, line "
                              f"{err.lineno}); it was left unchanged.") from None
    if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
        raise LedgerFileError(f"{name!r} is not a dpspectral privacy ledger; it was left unchanged.")
    version = data.get("format_version")
    if version != LEDGER_FORMAT_VERSION:
        raise LedgerFileError(
            f"The ledger {name!r} was written in format version {version!r}; this dpspectral reads "
            f"version {LEDGER_FORMAT_VERSION} only. It was left unchanged (use the dpspectral that "
            "wrote it, or start a new ledger)."
        )
    try:
        accountant = Accountant.from_dict(data.get("accountant"))
        runs = data.get("runs")
        _check_runs(runs, len(accountant.entries))
        assert isinstance(runs, list)
    except ValueError as err:
        raise LedgerFileError(f"The ledger {name!r} is corrupt ({str(err).rstrip('.')}); it was left "
                              "unchanged.") from None
    if accountant.ceiling is None:
        raise LedgerFileError(f"The ledger {name!r} is corrupt (it has no budget); it was left unchanged.")
    return LedgerFile(p, accountant, runs)


def _check_runs(runs: Any, n_entries: int) -> None:
    """Every run is a record of the known keys, and the runs' entries tile the accountant's."""
    if not isinstance(runs, list):
        raise ValueError('"runs" must be a list')
    at = 0
    for run in runs:
        if not isinstance(run, dict) or set(run) != set(_RUN_KEYS):
            raise ValueError(f"a run must have the keys {', '.join(_RUN_KEYS)}")
        for key, types in _RUN_KEYS.items():
            if isinstance(run[key], bool) or not isinstance(run[key], types):
                raise ValueError(f'a run\'s "{key}" has the wrong type')
        span = run["entries"]
        if (len(span) != 2 or not all(isinstance(i, int) and not isinstance(i, bool) for i in span)
                or span[0] != at or span[1] < span[0]):
            raise ValueError("the runs' entries do not match the accountant's")
        at = span[1]
    if at != n_entries:
        raise ValueError("the runs' entries do not match the accountant's")


def write_ledger(ledger: LedgerFile) -> None:
    """Save ``ledger`` atomically: a temporary file in the same folder, flushed, then renamed."""
    p = ledger.path
    text = json.dumps(ledger.to_dict(), indent=2) + "\n"
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(p).st_mode & 0o7777)  # keep an existing ledger's permissions
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename durable (POSIX)
        with contextlib.suppress(OSError):
            dir_fd = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on the ledger at ``path`` (``PATH.lock``) for the ``with`` block.

    Refuses at once (:class:`LedgerBusyError`) when another run holds it. Where ``fcntl`` is missing
    (Windows) no lock is taken: do not run two commands on one ledger at the same time there.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock_path = Path(f"{os.fspath(path)}.lock")
    with open(lock_path, "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LedgerBusyError(f"Another run is using the ledger {os.fspath(path)!r} (its lock "
                                  f"{str(lock_path)!r} is held); try again when it has finished.") from None
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
