"""Peer environments and worker processes: creation, a run with a timeout, and parsing of the result.

Everything that talks to another process lives here, apart from the benchmark itself
(:mod:`peers.bench`), so that the parsing and the timeout handling can be tested with fake peers:

* :func:`ensure_peer_env` creates (once) a virtual environment for a peer under
  ``<peer_dir>/<name>`` with pinned requirements and records the installed versions; any failure
  (venv, pip, the import probe, a timeout) gives an *unavailable* :class:`PeerEnv` with the reason,
  never an exception.
* :func:`run_worker` starts ``python WORKER.py '<json>'`` in its own process group, waits at most
  ``timeout`` seconds (then kills the whole group), and hands stdout / stderr / the exit status to
* :func:`parse_worker_output`, a pure function: the last ``@@DPSPECTRAL-PEER-RESULT@@ {json}`` line
  of stdout is the result; a non-zero exit status is a crash (with the last line of stderr); a
  missing or malformed result line is ``"invalid"``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "PEERS",
    "RESULT_MARKER",
    "WORKERS",
    "PeerEnv",
    "PeerSpec",
    "WorkerOutcome",
    "default_peer_dir",
    "ensure_peer_env",
    "parse_worker_output",
    "run_worker",
]

#: Prefix of the one result line a worker prints (see ``workers/_protocol.py``).
RESULT_MARKER = "@@DPSPECTRAL-PEER-RESULT@@"
#: Folder of the worker scripts.
WORKERS = Path(__file__).resolve().parent / "workers"
#: Written into a finished peer venv; its presence (with the same requirements) means "reuse".
_MARKER_FILE = "dpspectral-peer.json"

Status = Literal["ok", "timeout", "crashed", "invalid"]


@dataclass(frozen=True)
class PeerSpec:
    """A peer library: how to install it and which worker runs it.

    Attributes
    ----------
    name : str
        Folder name of its venv and label in the results.
    requirements : tuple of str
        Pinned pip requirements (installed together, so that pip resolves one consistent set).
    probe : tuple of str
        Modules that must import in the new venv (the probe fails the environment otherwise).
    dists : tuple of str
        Distributions whose versions are recorded.
    worker : str
        File name of its worker script in :data:`WORKERS`.
    """

    name: str
    requirements: tuple[str, ...]
    probe: tuple[str, ...]
    dists: tuple[str, ...]
    worker: str


#: The peers. diffprivlib 0.6.6 does not import with scikit-learn >= 1.8 (``sklearn.tree._tree`` no
#: longer exports ``DOUBLE``), so it is pinned with scikit-learn 1.7.2, the newest release it imports
#: with; numpy / scipy are pinned to the versions pip resolved when these pins were chosen.
PEERS: dict[str, PeerSpec] = {
    "diffprivlib": PeerSpec(
        name="diffprivlib",
        requirements=("diffprivlib==0.6.6", "scikit-learn==1.7.2", "numpy==2.4.6", "scipy==1.17.1"),
        probe=("diffprivlib.models", "sklearn"),
        dists=("diffprivlib", "scikit-learn", "numpy", "scipy"),
        worker="diffprivlib_worker.py",
    ),
    "opendp": PeerSpec(
        name="opendp",
        requirements=(
            "opendp[scikit-learn]==0.16.0",
            "scikit-learn==1.9.1",
            "numpy==2.4.6",
            "scipy==1.17.1",
            "randomgen==2.5.1",
        ),
        probe=("opendp.prelude", "opendp.extras.sklearn.decomposition", "sklearn", "randomgen"),
        dists=("opendp", "scikit-learn", "numpy", "scipy", "randomgen"),
        worker="opendp_worker.py",
    ),
}


@dataclass
class PeerEnv:
    """A peer's environment, or the reason it has none.

    Attributes
    ----------
    name : str
    available : bool
    python : Path or None
        The venv's interpreter (None when unavailable).
    reason : str
        ``""`` when available; otherwise ``"unavailable: <why>"``.
    versions : dict
        Installed versions of the spec's distributions (and ``python``).
    seconds : float
        Time spent creating or checking the environment.
    created : bool
        True when this call created it (False when an existing one was reused).
    """

    name: str
    available: bool
    python: Path | None = None
    reason: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    created: bool = False


@dataclass
class WorkerOutcome:
    """What one worker run gave.

    Attributes
    ----------
    status : {"ok", "timeout", "crashed", "invalid"}
    message : str
        Why it is not ok (the last line of stderr for a crash), ``""`` when ok.
    result : dict or None
        The parsed result line (``components`` as a (k, d) list, ``fit_seconds``, ...) when ok.
    returncode : int or None
        None after a timeout.
    wall_seconds : float
        The whole process as seen by the parent (start-up, imports, loading the data, the fit).
    stderr_tail : str
        The last lines of stderr (for the record).
    """

    status: Status
    message: str = ""
    result: dict[str, Any] | None = None
    returncode: int | None = None
    wall_seconds: float = math.nan
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def default_peer_dir() -> Path:
    """``$XDG_CACHE_HOME/dpspectral/peers`` (``~/.cache/dpspectral/peers`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpspectral" / "peers"


def _venv_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _tail(text: str, lines: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _run(cmd: Sequence[str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``cmd`` in its own process group; (returncode or None on timeout, stdout, stderr)."""
    # OSError (e.g. a missing interpreter) propagates: callers decide what it means.
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return None, out or "", err or ""
    except BaseException:  # interrupted (Ctrl-C): the worker is in its own session, so end it here
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group this module started for ``proc`` (the worker and any children)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def ensure_peer_env(
    spec: PeerSpec,
    peer_dir: str | Path | None = None,
    *,
    python: str | None = None,
    install_timeout: float = 900.0,
    probe_timeout: float = 120.0,
) -> PeerEnv:
    """Create (or reuse) the virtual environment of a peer.

    Parameters
    ----------
    spec : PeerSpec
    peer_dir : str or Path, optional
        Parent folder of the venvs (default :func:`default_peer_dir`).
    python : str, optional
        Interpreter that creates the venv (default: this one; ``venv`` bases the new environment on
        its base installation, not on the project's venv).
    install_timeout : float, default=900
        Seconds allowed for ``pip install``.
    probe_timeout : float, default=120
        Seconds allowed for the import probe.

    Returns
    -------
    PeerEnv
        Never raises for an install problem: an unavailable env carries ``"unavailable: <reason>"``.
    """
    t0 = time.perf_counter()
    root = Path(peer_dir) if peer_dir is not None else default_peer_dir()
    path = root / spec.name
    py = _venv_python(path)
    marker = path / _MARKER_FILE

    def unavailable(why: str) -> PeerEnv:
        return PeerEnv(spec.name, False, reason=f"unavailable: {why}", seconds=time.perf_counter() - t0)

    try:
        return _ensure(spec, root, path, py, marker, python, install_timeout, probe_timeout, t0)
    except OSError as exc:  # an interpreter that cannot be started, a folder that cannot be written
        return unavailable(f"{type(exc).__name__}: {exc}")


def _ensure(
    spec: PeerSpec,
    root: Path,
    path: Path,
    py: Path,
    marker: Path,
    python: str | None,
    install_timeout: float,
    probe_timeout: float,
    t0: float,
) -> PeerEnv:
    def unavailable(why: str) -> PeerEnv:
        return PeerEnv(spec.name, False, reason=f"unavailable: {why}", seconds=time.perf_counter() - t0)

    created = False
    try:
        previous = json.loads(marker.read_text()) if marker.exists() else None
    except (OSError, ValueError):
        previous = None
    if not (previous and previous.get("requirements") == list(spec.requirements) and py.exists()):
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return unavailable(f"cannot create {root}: {exc}")
        if marker.exists():
            marker.unlink()
        rc, _, err = _run([python or sys.executable, "-m", "venv", "--clear", str(path)], timeout=300)
        if rc != 0:
            return unavailable(
                "venv creation " + ("timed out" if rc is None else f"failed: {_last_line(err)}")
            )
        rc, _, err = _run(
            [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--quiet", *spec.requirements],
            timeout=install_timeout,
        )
        if rc != 0:
            why = (
                f"pip install timed out after {install_timeout:g} s"
                if rc is None
                else f"pip install {' '.join(spec.requirements)} failed: {_last_line(_strip_pip_noise(err))}"
            )
            return unavailable(why)
        created = True
    probe = (
        "import importlib, json, sys\nfrom importlib import metadata\n"
        f"for m in {list(spec.probe)!r}: importlib.import_module(m)\n"
        "v = {'python': sys.version.split()[0]}\n"
        f"for d in {list(spec.dists)!r}: v[d] = metadata.version(d)\n"
        "print(json.dumps(v))\n"
    )
    rc, out, err = _run([str(py), "-c", probe], timeout=probe_timeout)
    if rc != 0:
        return unavailable("import probe " + ("timed out" if rc is None else f"failed: {_last_line(err)}"))
    try:
        found = json.loads(_last_line(out))
    except ValueError:
        return unavailable(f"import probe printed no versions: {_last_line(out)!r}")
    marker.write_text(json.dumps({"requirements": list(spec.requirements), "versions": found}, indent=2))
    return PeerEnv(
        spec.name,
        True,
        python=py,
        versions={str(k): str(v) for k, v in found.items()},
        seconds=time.perf_counter() - t0,
        created=created,
    )


def _strip_pip_noise(err: str) -> str:
    """pip's stderr without the index-location warnings of this machine's configuration."""
    return "\n".join(ln for ln in err.splitlines() if "is ignored: it is neither a file nor" not in ln)


def parse_worker_output(
    stdout: str,
    stderr: str,
    returncode: int | None,
    *,
    timeout: float | None = None,
    wall_seconds: float = math.nan,
) -> WorkerOutcome:
    """Turn a finished (or killed) worker's output into a :class:`WorkerOutcome`.

    Parameters
    ----------
    stdout, stderr : str
        Its whole output.
    returncode : int or None
        Its exit status; None means it was killed at the timeout.
    timeout : float, optional
        The limit it ran under (for the message).
    wall_seconds : float
        Wall time seen by the parent.

    Returns
    -------
    WorkerOutcome
        ``"timeout"`` (returncode None), ``"crashed"`` (non-zero status; message = the last line of
        stderr), ``"invalid"`` (exit 0 without a well-formed result line: no line, bad JSON, no
        ``components`` as a non-empty rectangular (k, d) list of finite numbers, a missing or negative
        ``fit_seconds``) or ``"ok"``.
    """
    tail = _tail(stderr)
    if returncode is None:
        limit = "" if timeout is None else f" after {timeout:g} s"
        return WorkerOutcome("timeout", f"did not finish{limit} (killed)", None, None, wall_seconds, tail)
    if returncode != 0:
        why = _last_line(stderr) or f"exit status {returncode}"
        return WorkerOutcome(
            "crashed", f"exit status {returncode}: {why}", None, returncode, wall_seconds, tail
        )
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    if not lines:
        return WorkerOutcome("invalid", "no result line on stdout", None, returncode, wall_seconds, tail)
    try:
        result = json.loads(lines[-1][len(RESULT_MARKER) :])
    except ValueError as exc:
        return WorkerOutcome(
            "invalid", f"result line is not JSON: {exc}", None, returncode, wall_seconds, tail
        )
    problem = _check_result(result)
    if problem:
        return WorkerOutcome("invalid", problem, None, returncode, wall_seconds, tail)
    return WorkerOutcome("ok", "", result, returncode, wall_seconds, tail)


def _check_result(result: Any) -> str:
    if not isinstance(result, dict):
        return "result is not a JSON object"
    comps = result.get("components")
    if not isinstance(comps, list) or not comps or not all(isinstance(r, list) and r for r in comps):
        return "result has no 'components' (a non-empty list of rows)"
    width = len(comps[0])
    if any(len(r) != width for r in comps):
        return "'components' rows differ in length"
    for row in comps:
        for v in row:
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                return "'components' holds a non-finite or non-numeric entry"
    fit = result.get("fit_seconds")
    if isinstance(fit, bool) or not isinstance(fit, int | float) or not math.isfinite(fit) or fit < 0:
        return "result has no valid 'fit_seconds'"
    return ""


def run_worker(
    python: str | Path, script: str | Path, args: Mapping[str, Any], *, timeout: float
) -> WorkerOutcome:
    """Run ``python script '<json args>'`` with a time limit and parse what it printed.

    Parameters
    ----------
    python : str or Path
        The interpreter (a peer venv's, or this one for dpspectral and scikit-learn).
    script : str or Path
        The worker script.
    args : mapping
        JSON-serialisable arguments (its only command-line argument).
    timeout : float
        Seconds; the process group is killed after that and the outcome is ``"timeout"``.

    Returns
    -------
    WorkerOutcome
    """
    t0 = time.perf_counter()
    try:
        rc, out, err = _run([str(python), str(script), json.dumps(dict(args))], timeout=timeout)
    except OSError as exc:  # the interpreter itself cannot be started
        return WorkerOutcome("crashed", f"could not start {python}: {exc}", wall_seconds=0.0)
    return parse_worker_output(out, err, rc, timeout=timeout, wall_seconds=time.perf_counter() - t0)
