"""Turnstile streaming Private-Frobenius-LRF (Upadhyay, NeurIPS 2018, Figure 6; Theorem 48).

The Priv2 sketches of :func:`~dpspectral.lowrank._factorization.private_frobenius_lrf`, ``Y_c = A Phi + N1``
(m x t) and ``Z = S A + N2`` (v x n), are linear in A, so they can be maintained under turnstile updates
``(i, j, delta)``: ``A_ij += delta`` adds ``delta Phi[j, :]`` to row i of ``Y_c`` and ``delta S[:, i]`` to
column j of ``Z``. The Gaussian noise is added once, at initialisation (``Y_c <- N1``, ``Z <- N2``), so the
state is private from the start and equals the one-shot sketches of the matrix the stream has built
(spec §5, ``../shared/papers/spec-lowrank.md``). A release is post-processing of the state
(:func:`~dpspectral.lowrank._factorization.frobenius_release`).

The sketches Phi and S are regenerated from ``sketch_seed`` (fresh OS entropy unless declared); they
are never stored, and they are not shown before the state is published (a stream that depends on the
drawn sketch breaks the per-pair sensitivity). A state can be written to one ``.npz`` file, atomically,
with a checksum (:meth:`TurnstileLRF.save` and :meth:`TurnstileLRF.load`): either a *secret checkpoint*
(the default: to be continued, never published) or a *published release* (one snapshot); the file says
which.

**One snapshot per state.** The noise is drawn once, so two snapshots of one stream at different times
reveal the updates in between without noise. A state tracks its publication (in memory and in its
files): :meth:`~TurnstileLRF.release`, ``save(publish=True)`` and reading :attr:`~TurnstileLRF.Y_c` or
:attr:`~TurnstileLRF.Z` publish the current snapshot; once a snapshot was published, publishing the
state again after an update raises :class:`RepublicationError` (use
:class:`~dpspectral.lowrank._continual.ContinualLRF` for releases at many times).

The entry updates run in a compiled loop (numba) over the batch in its given order: ``update_many``
gives bit for bit the state of the same ``update`` calls one by one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import numbers
import os
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numba
import numpy as np
import scipy.sparse as sp

from .._constraints import validated
from .._results import LowRankResult
from .._rows import not_finite_error
from .._validation import check_budget
from ..privacy._accounting import Accountant, PrivacyReport, certify_release
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._noise import grid
from ..privacy._pipeline import ReleasePlan
from ..privacy._template import RunSettings, charge_at_creation
from ._factorization import (
    PRIVATE_LRF_TABLE,
    SKETCH_NOTE,
    Calibration,
    FrobeniusNoise,
    _relation,
    _result,
    _seed,
    check_matrix,
    check_rank,
    frobenius_noise,
    frobenius_plan,
    frobenius_release,
    frobenius_sketches,
    split_joint,
)
from ._one_call import state_keywords, stream_entries
from ._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options, sketch_plan
from ._sketches import SketchSizes

__all__ = [
    "STATE_FORMAT_VERSION",
    "RepublicationError",
    "StateFileError",
    "TurnstileConfig",
    "TurnstileLRF",
    "turnstile_lrf",
]

#: Version of the ``.npz`` state format written by :meth:`TurnstileLRF.save` (2: the file says whether
#: it is a published release or a secret checkpoint; no update count).
STATE_FORMAT_VERSION = 2

#: ``status`` of a state file: a published snapshot, or a secret checkpoint (never to be published).
PUBLISHED, SECRET = "published", "secret"
#: ``publication`` of a state: never published, its current snapshot published, or published and
#: changed since (it can never be published again).
NONE, CURRENT, STALE = "none", "current", "stale"

#: The notice a secret checkpoint carries in its ``notice`` member.
SECRET_NOTICE = (
    "SECRET CHECKPOINT of a dpspectral streaming state: not a release. It holds the noisy sketches and "
    "the sketch seed of a state that may be continued; do not publish it (publish with "
    "save(path, publish=True) or release())."
)

#: An in-place batch is applied only when a bound on every intermediate |entry| stays below this, so
#: that no entry can overflow; otherwise the batch is applied to a copy that is checked first.
_SAFE_MAGNITUDE = 1e300

#: The members of every state file besides its arrays.
_HEADER_KEYS = ("config", "status", "publication", "format_version", "checksum")


#: The notes of every streaming state's privacy report (the assumptions, in words).
STREAM_NOTE = (
    "Non-adaptive stream: the per-pair sketch bounds assume that the stream does not depend on the drawn "
    "sketch. The sketch seed is fresh OS entropy and is not shown before the state is published, unless "
    "the caller declared sketch_seed (then keeping the stream independent of it is the caller's "
    "responsibility). " + SKETCH_NOTE
)
ONE_SNAPSHOT_NOTE = (
    "One snapshot: the noise is drawn once, so the guarantee covers one published snapshot of the state; "
    "a publication after further updates is refused."
)


def noise_grid(noise_name: str, sigma: float) -> float | None:
    """The grid that the noise of scale ``sigma`` lies on: the exact and secure sources' (None: seeded)."""
    return grid(sigma) if noise_name in ("exact", "secure") else None


def on_grid(a: np.ndarray, step: float | None) -> np.ndarray:
    """``a`` rounded to the grid ``step`` (``a`` itself for None): what a state publishes of an array whose
    noise lies on that grid (see ``PublishOnce._snapshot``)."""
    return a if step is None else np.rint(a / step) * step


class StateFileError(ValueError):
    """A state file is corrupt, truncated, of another format, or of another configuration."""


class RepublicationError(ValueError):
    """A second snapshot of a state whose noise was already published with an earlier snapshot."""


class PublishOnce:
    """Publication tracking shared by the streaming states (:class:`TurnstileLRF`, ``CovarianceLRF``).

    A state's noise is drawn once, so at most one snapshot of it may be published: ``_publish`` marks
    the current snapshot (publishing it again is fine), ``_changed`` makes a published snapshot stale
    after new data, and a publication of a stale state raises :class:`RepublicationError`. The sketch is
    shown only after a publication (``_require_published``): a stream that depends on the drawn sketch
    would break the per-pair sensitivity.
    """

    _publication: str = NONE
    #: What the data did to the state, in the refusal's words ("has been updated", "had rows inserted").
    _change_words = "has been updated"
    #: What to use instead, for the refusal's message.
    _instead = ("ContinualLRF for releases at many times, or a new state (a new release, charged anew) "
                "for new data")

    @property
    def published(self) -> bool:
        """Whether a snapshot of this state was published (then no other snapshot may be)."""
        return self._publication != NONE

    def _publish(self, what: str) -> None:
        """Mark the current snapshot as published; refuse a second snapshot after new data."""
        if self._publication == STALE:
            raise RepublicationError(
                f"{type(self).__name__}.{what}: a snapshot of this state was already published and the "
                f"state {self._change_words} since. Its noise was drawn once, so a second snapshot would "
                f"reveal the data in between without noise; nothing was published. Use {self._instead}."
            )
        self._publication = CURRENT

    def _changed(self) -> None:
        """New data reached the state: a published snapshot becomes stale."""
        if self._publication == CURRENT:
            self._publication = STALE

    #: The secure source's grid of the state's noise (None: seeded source). See :meth:`_snapshot`.
    _grid: float | None = None

    def _use_grid(self, noise_name: str, sigma: float) -> None:
        """Record the grid of the secure source's noise of scale ``sigma`` (nothing for the seeded one)."""
        self._grid = noise_grid(noise_name, sigma)

    def _snapshot(self, a: np.ndarray) -> np.ndarray:
        """What is published of a state array.

        Seeded source: the array itself. Secure source: the array rounded to the noise's grid. The noise
        was drawn on the grid at initialisation and the data were added to it afterwards in floating
        point, so the low-order bits of the raw state carry the data modulo the grid; rounding at
        publication gives ``noise + round(statistic)``, the secure mechanism's output (the rounding of
        the statistic is covered by the secure source's widening of the noise).
        """
        return on_grid(a, self._grid)

    def _require_published(self, what: str) -> None:
        if self._publication == NONE:
            raise ValueError(
                f"{type(self).__name__}.{what}: the sketch is not shown before the state is published "
                "(a stream that depends on the drawn sketch breaks the per-pair sensitivity). Publish "
                "the state first (release(), or save(path, publish=True) where offered), or declare a "
                "public sketch_seed when the state is created."
            )


class SketchState(PublishOnce):
    """The noisy sketch pair of a streaming state, shown and released once published.

    Shared by :class:`TurnstileLRF` (the sketches of A, or of ``A^T``) and ``CovarianceLRF`` (of
    ``C = A^T A``): for the state's matrix M, ``_Y = M Phi + N1`` and ``_ZT = (S M + N2)^T`` are kept with
    the public ``_Phi``, ``_S``, ``_ST`` of the seed ``_sketch_seed``, and ``rank``, ``sizes``, ``sigma``,
    ``sensitivity`` of the release.
    """

    _Y: np.ndarray
    _ZT: np.ndarray
    _Phi: np.ndarray
    _S: np.ndarray
    _ST: np.ndarray
    _sketch_seed: int
    rank: int
    sizes: SketchSizes
    sigma: float
    sensitivity: float

    @property
    def sketch_seed(self) -> int:
        """The seed of the sketches (shown only once the state is published)."""
        self._require_published("sketch_seed")
        return self._sketch_seed

    @property
    def Y_c(self) -> np.ndarray:
        """``M Phi + N1``, a read-only copy (M: A or ``A^T``, the wide one, or C). Reading it publishes."""
        self._publish("Y_c")
        return read_only(self._snapshot(self._Y).copy())

    @property
    def Z(self) -> np.ndarray:
        """``S M + N2``, a read-only copy (M: A or ``A^T``, the wide one, or C). Reading it publishes."""
        self._publish("Z")
        return read_only(self._snapshot(self._ZT).T.copy())

    def sketches(self) -> tuple[np.ndarray, np.ndarray]:
        """The sketches ``(Phi, S)`` of the state's matrix, read-only (once the state is published)."""
        self._require_published("sketches")
        return read_only(self._Phi), read_only(self._S)

    def _published_sketches(self) -> tuple[np.ndarray, np.ndarray]:
        """Publish the current snapshot (:meth:`_publish`) and return it: ``(Y_c, Z)``."""
        self._publish("release")
        return self._snapshot(self._Y), self._snapshot(self._ZT).T

    def _set_sketches(self, m: int, n: int) -> None:
        """The public Phi (n x t), S (v x m) and ``S^T`` of the seed, for the state's m x n matrix."""
        self._Phi, self._S = frobenius_sketches(m, n, self.sizes, self._sketch_seed)
        self._ST = np.ascontiguousarray(self._S.T)

    def _diagnostics(self, extra: dict[str, Any]) -> dict[str, Any]:
        """A release's diagnostics: t, v, sigma, sensitivity, noise_multiplier, then ``extra``."""
        return {
            "t": self.sizes.t,
            "v": self.sizes.v,
            "sigma": self.sigma,
            "sensitivity": self.sensitivity,
            "noise_multiplier": self.sigma / self.sensitivity,
            **extra,
        }


def sketch_state_plan(mechanism: str, budget: PrivacyBudget, rel: Relation, sizes: SketchSizes,
                      shape: tuple[int, int], *, bound: float, calibration: str, alpha: float,
                      sketch_failure_share: float, owner: str,
                      notes: tuple[str, ...] = ()) -> tuple[FrobeniusNoise, ReleasePlan]:
    """The Priv2 noise of a :class:`SketchState` of the m x n ``shape`` (neighbours ``||M - M'||_F <=
    bound``) and its plan, noted ``notes``, the noise's notes, then the streaming ones (no spending, no
    noise)."""
    noise = frobenius_noise(budget.epsilon, budget.delta, sizes, bound=bound,
                            calibration=calibration,  # type: ignore[arg-type]
                            alpha=alpha, sketch_failure_share=sketch_failure_share, owner=owner, shape=shape)
    plan = frobenius_plan(mechanism, rel, noise, notes=(*notes, *noise.notes, STREAM_NOTE, ONE_SNAPSHOT_NOTE))
    return noise, plan


def charge_sketch_noise(plan: ReleasePlan, settings: RunSettings, shape: tuple[int, int], sizes: SketchSizes,
                        facts: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, PrivacyReport]:
    """Charge ``plan`` (refused before anything is drawn), then draw the initial state of a
    :class:`SketchState` of the m x n ``shape``: ``N1`` (m x t), then ``N2`` (v x n), one joint
    Gaussian as the one-shot sketches draw it. Returns ``(N1, N2^T, report)``."""
    m, n = shape
    (Y, Z), report, _ = charge_at_creation(
        plan, settings,
        lambda releaser: split_joint(releaser.gaussian("sketches", m * sizes.t + sizes.v * n),
                                     [(m, sizes.t), (sizes.v, n)]),
        facts=facts, stacklevel=7)
    return Y, np.ascontiguousarray(Z.T), report


# ----------------------------------------------------------------------------------------------
# compiled update loop and input validation (shared with .continual)
# ----------------------------------------------------------------------------------------------


@numba.njit(cache=True, fastmath=False, nogil=True)
def _entry_kernel(Y, ZT, Phi, ST, rows, cols, vals):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``Y[i] += d Phi[j]`` and ``ZT[j] += d ST[i]`` for each entry update ``(i, j, d)``, in order.

    ``Y`` (m x t) is ``Y_c``; ``ZT`` (n x v) is ``Z^T``; ``Phi`` (n x t); ``ST`` (m x v) is ``S^T``. The
    indices are validated by the caller (no bounds checks here).
    """
    t = Y.shape[1]
    v = ZT.shape[1]
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        d = vals[e]
        for a in range(t):
            Y[i, a] += d * Phi[j, a]
        for a in range(v):
            ZT[j, a] += d * ST[i, a]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _index_array(obj: Any, name: str, size: int, axis: str, owner: str) -> np.ndarray:
    a = np.asarray(obj)
    if a.ndim != 1:
        raise ValueError(f"{owner}: '{name}' must be a 1-D array of indices. Got shape {a.shape}.")
    if a.size == 0:
        return np.empty(0, dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{owner}: '{name}' must hold integers. Got an array of dtype {a.dtype}.")
    if bool(np.any((a < 0) | (a >= size))):
        raise ValueError(
            f"{owner}: '{name}' holds an index out of range: a {axis} index must be in [0, {size}). "
            "Nothing was applied (which entry, and how many, is not reported: the updates are private)."
        )
    return a.astype(np.int64, copy=False)


def check_entries(
    rows: Any, cols: Any, values: Any, shape: tuple[int, int], owner: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a batch of entry updates ``A[rows[e], cols[e]] += values[e]`` for an ``shape`` matrix.

    Returns int64 ``rows``, ``cols`` and float64 ``values`` (1-D, equal lengths, indices in range, values
    finite). Raises a ValueError that names the kind of problem but no position, value or count (the
    updates are the private data); nothing is applied by the caller then.
    """
    r = _index_array(rows, "rows", shape[0], "row", owner)
    c = _index_array(cols, "cols", shape[1], "column", owner)
    x = np.asarray(values)
    if x.ndim != 1:
        raise ValueError(f"{owner}: 'values' must be a 1-D array. Got an array of shape {x.shape}.")
    if x.size and x.dtype.kind not in "iuf":
        raise ValueError(f"{owner}: 'values' must be real numbers. Got an array of dtype {x.dtype}.")
    if not r.size == c.size == x.size:
        raise ValueError(
            f"{owner}: rows, cols and values must have the same length. Got {r.size}, {c.size} and {x.size}."
        )
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        raise not_finite_error(owner)
    return r, c, x


def check_entry(i: Any, j: Any, delta: Any, shape: tuple[int, int], owner: str) -> None:
    """Validate one entry update ``(i, j, delta)`` (ints in range, a finite real delta).

    The messages name the parameter and its type, never its value (the update is private data).
    """
    for name, value, size, axis in (("i", i, shape[0], "row"), ("j", j, shape[1], "column")):
        if not _is_int(value):
            raise ValueError(
                f"{owner}: the {axis} index '{name}' must be an int. Got a {type(value).__name__}."
            )
        if not 0 <= int(value) < size:
            raise ValueError(f"{owner}: '{name}' is out of range: a {axis} index must be in [0, {size}).")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(
            f"{owner}: 'delta' must be a finite real number. Got a {type(delta).__name__}."
        )
    if not math.isfinite(delta):
        raise not_finite_error(owner)


def _max_abs(*arrays: np.ndarray) -> float:
    return max((float(np.max(np.abs(a))) if a.size else 0.0) for a in arrays)


def read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


# ----------------------------------------------------------------------------------------------
# configuration and state files
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnstileConfig:
    """Everything public that defines a :class:`TurnstileLRF` state (its noise plan and sketches).

    Two states can be combined or compared only if their configurations are equal. ``shape`` is in the
    caller's orientation; ``t`` and ``v`` are the resolved sketch sizes.
    """

    shape: tuple[int, int]
    rank: int
    t: int
    v: int
    sketch_seed: int
    epsilon: float
    delta: float
    relation: str
    calibration: str
    bound: float
    alpha: float
    sketch_failure_share: float

    kind = "turnstile_lrf"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["shape"] = [int(s) for s in self.shape]
        return {"kind": self.kind, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnstileConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        kind = data.get("kind", cls.kind)
        if kind != cls.kind:
            raise StateFileError(f"The state holds a {kind!r} state, not a {cls.kind!r} state.")
        missing = sorted(names - set(data))
        if missing:
            raise StateFileError(f"The state's configuration lacks the fields {missing}.")
        shape = data["shape"]
        return cls(
            shape=(int(shape[0]), int(shape[1])),
            rank=int(data["rank"]),
            t=int(data["t"]),
            v=int(data["v"]),
            sketch_seed=int(data["sketch_seed"]),
            epsilon=float(data["epsilon"]),
            delta=float(data["delta"]),
            relation=str(data["relation"]),
            calibration=str(data["calibration"]),
            bound=float(data["bound"]),
            alpha=float(data["alpha"]),
            sketch_failure_share=float(data["sketch_failure_share"]),
        )

    def differences(self, expected: TurnstileConfig | Mapping[str, Any]) -> list[str]:
        """``"name: this != expected"`` for every field that differs (a mapping checks only its keys)."""
        mine = self.to_dict()
        other = expected.to_dict() if isinstance(expected, TurnstileConfig) else dict(expected)
        unknown = sorted(set(other) - set(mine))
        if unknown:
            raise ValueError(f"Unknown configuration fields {unknown}; known: {sorted(mine)}.")
        out = []
        for key, want in other.items():
            have = mine[key]
            if key == "shape":
                want = [int(s) for s in want]
            elif key == "relation" and isinstance(want, Relation):
                want = want.value
            if have != want:
                out.append(f"{key}: {have!r} (file) != {want!r} (expected)")
        return out


def state_checksum(
    config_json: str, status: str, publication: str, arrays: Mapping[str, np.ndarray],
    noise: str = "seeded",
) -> str:
    """sha256 over the format version, the configuration JSON, the status flags and the arrays' bytes.

    ``noise`` is the noise source of the state (public: it is in the privacy report); a state drawn by
    the secure source hashes it too (a seeded state's checksum leaves it out, so seeded files of
    earlier versions still verify).
    """
    h = hashlib.sha256()
    h.update(f"dpspectral-sketch-state/{STATE_FORMAT_VERSION}\n".encode())
    h.update(config_json.encode("utf-8") + b"\n")
    h.update(f"{status}/{publication}\n".encode())
    if noise != "seeded":
        h.update(f"noise/{noise}\n".encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform / file system allows it
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_state_file(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``arrays`` to ``path`` as one ``.npz``: a temporary file in the same folder, fsync, os.replace.

    A crash at any point leaves either the previous file or the new one at ``path``, never a mix (a
    crash before the replace may leave a ``.<name>.*.tmp`` file behind, which is safe to delete).
    """
    target = Path(path)
    folder = target.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    return target


def read_state_file(path: str | os.PathLike[str], required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Read every array of a state ``.npz`` (no pickles); a clear :class:`StateFileError` if unreadable."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"No state file at {p}.")
    try:
        loaded = np.load(p, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise StateFileError(f"{p} holds a single .npy array, not a state file (.npz).")
        with loaded as npz:
            data = {name: npz[name] for name in npz.files}
    except StateFileError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise StateFileError(
            f"Cannot read the state file {p}: it is corrupt or truncated ({type(exc).__name__}: {exc})."
        ) from exc
    missing = [k for k in required if k not in data]
    if missing:
        raise StateFileError(f"{p} is not a complete state file: it lacks {missing}.")
    return data


def verified_state(
    path: str | os.PathLike[str], data: Mapping[str, np.ndarray], array_names: tuple[str, ...]
) -> tuple[dict[str, Any], str, str]:
    """Check the format version and the checksum of a read state; return (config, status, publication).

    The noise source (:func:`recorded_noise_name`) is covered by the checksum.

    ``status`` is ``"published"`` (a released snapshot) or ``"secret"`` (a checkpoint); ``publication``
    says whether a snapshot of the state was published (``"none"``, ``"current"``, ``"stale"``).
    """
    try:
        version = int(data["format_version"])
    except (TypeError, ValueError, IndexError) as exc:
        raise StateFileError(f"{path}: malformed state file header ({exc}).") from exc
    if version != STATE_FORMAT_VERSION:
        raise StateFileError(
            f"{path}: state format version {version}; this version of dpspectral reads version "
            f"{STATE_FORMAT_VERSION}."
        )
    try:
        config_json = str(data["config"][()])
        status = str(data["status"][()])
        publication = str(data["publication"][()])
        checksum = str(data["checksum"][()])
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise StateFileError(f"{path}: malformed state file header ({exc}).") from exc
    want = state_checksum(config_json, status, publication, {k: data[k] for k in array_names},
                          recorded_noise_name(path, data))
    if want != checksum:
        raise StateFileError(f"{path}: checksum mismatch: the file is corrupt (or was edited).")
    try:
        config = json.loads(config_json)
    except json.JSONDecodeError as exc:  # pragma: no cover - the checksum covers the JSON
        raise StateFileError(f"{path}: unreadable configuration ({exc}).") from exc
    if status not in (PUBLISHED, SECRET) or publication not in (NONE, CURRENT, STALE) or (
        status == PUBLISHED and publication != CURRENT
    ):
        raise StateFileError(f"{path}: unknown state status {status!r} / {publication!r}.")
    return config, status, publication


def recorded_noise_name(path: str | os.PathLike[str], data: Mapping[str, np.ndarray]) -> str:
    """The name of the noise source a state file records (``"seeded"`` without a ``noise_source`` member)."""
    if "noise_source" not in data:
        return "seeded"
    name = str(data["noise_source"][()])
    if name not in ("seeded", "float", "exact", "secure"):
        raise StateFileError(f"{path}: unknown noise source {name!r}.")
    return name

_Config = TypeVar("_Config", bound=TurnstileConfig)


class TurnstileState(PublishOnce):
    """Entry updates and state files shared by the turnstile states (:class:`TurnstileLRF`,
    ``TurnstileSpaceOptimalLRF``).

    A subclass keeps its sketches in the orientation m <= n (``transposed``: kept for ``A^T`` when the
    caller's m > n), applies a validated batch of entries in that orientation (``_apply``) and names
    the arrays of its file (``_arrays``); its public ``update``, ``update_many``, ``save`` and ``load``
    (documented on the class: what its sketches gain, what its file holds) call the steps here.
    """

    shape: tuple[int, int]
    transposed: bool
    privacy: PrivacyReport
    mechanism: str
    _config: TurnstileConfig

    def _apply(self, r: np.ndarray, c: np.ndarray, x: np.ndarray, owner: str) -> None:
        """Add the entries ``x`` at ``(r, c)`` (internal orientation, validated) to the state."""
        raise NotImplementedError

    def _arrays(self, publish: bool = False) -> dict[str, np.ndarray]:
        """The arrays of the state's file: the published snapshot, or the secret checkpoint's."""
        raise NotImplementedError

    # -- updates -------------------------------------------------------------------------------
    def _update_entry(self, i: int, j: int, delta: float) -> None:
        """``update``: ``A[i, j] += delta``, checked (state unchanged on an error)."""
        owner = f"{type(self).__name__}.update"
        check_entry(i, j, delta, self.shape, owner)
        r, c = (int(j), int(i)) if self.transposed else (int(i), int(j))
        self._apply(
            np.array([r], dtype=np.int64), np.array([c], dtype=np.int64), np.array([float(delta)]), owner
        )

    def _update_entries(self, rows: Any, cols: Any, values: Any) -> None:
        """``update_many``: the whole batch checked, then applied in order (state unchanged on an error)."""
        owner = f"{type(self).__name__}.update_many"
        r, c, x = check_entries(rows, cols, values, self.shape, owner)
        if self.transposed:
            r, c = c, r
        self._apply(r, c, x, owner)

    # -- persistence ---------------------------------------------------------------------------
    def _write(self, path: str | os.PathLike[str], publish: bool) -> Path:
        """``save``: the file of :meth:`_arrays` with the configuration, flags, version and checksum."""
        if not isinstance(publish, (bool, np.bool_)):
            raise TypeError(f"The 'publish' parameter of {type(self).__name__}.save must be a bool. "
                            f"Got {publish!r} instead.")
        if publish:
            self._publish("save")
        status = PUBLISHED if publish else SECRET
        arrays = self._arrays(publish)
        config_json = self._config.to_json()
        source = self.privacy.noise_source
        checksum = state_checksum(config_json, status, self._publication, arrays, source)
        extra = {} if publish else {"notice": np.array(SECRET_NOTICE)}
        if source != "seeded":  # a seeded file has no entry (as in earlier versions' files)
            extra["noise_source"] = np.array(source)
        return write_state_file(
            path,
            {
                **arrays,
                "config": np.array(config_json),
                "status": np.array(status),
                "publication": np.array(self._publication),
                "format_version": np.array(STATE_FORMAT_VERSION, dtype=np.int64),
                "checksum": np.array(checksum),
                **extra,
            },
        )

    @classmethod
    def _read(
        cls,
        path: str | os.PathLike[str],
        expect: Any,
        arrays: tuple[str, ...],
        parse: Callable[[Mapping[str, Any]], _Config],
        optional: str | None = None,
    ) -> tuple[dict[str, np.ndarray], _Config, str, str]:
        """``load``: the verified file (its ``arrays``, and ``optional`` where present), its configuration
        (``parse``), status and publication flag; a :class:`StateFileError` for another configuration
        than ``expect`` (a state, a configuration, or a mapping of the fields to check)."""
        data = read_state_file(path, (*arrays, *_HEADER_KEYS))
        names = (*arrays, optional) if optional is not None and optional in data else arrays
        cfg_dict, status, publication = verified_state(path, data, names)
        config = parse(cfg_dict)
        if expect is not None:
            want = expect._config if isinstance(expect, cls) else expect
            diffs = config.differences(want)
            if diffs:
                raise StateFileError(
                    f"{path} holds a state of another configuration: " + "; ".join(diffs) + "."
                )
        return data, config, status, publication

    @classmethod
    def _file_report(cls, plan: ReleasePlan, budget: PrivacyBudget, config: TurnstileConfig,
                     path: str | os.PathLike[str], data: Mapping[str, np.ndarray]) -> PrivacyReport:
        """The report of a loaded state: its plan's, nothing charged or drawn (the file holds the noise)."""
        return certify_release(plan.events, mechanism=cls.mechanism, budget=budget, relation=plan.relation,
                               calibration=config.calibration, notes=plan.notes, stacklevel=4,
                               noise_source=recorded_noise_name(path, data))


# ----------------------------------------------------------------------------------------------
# the streaming state
# ----------------------------------------------------------------------------------------------


class TurnstileLRF(SketchState, TurnstileState):
    """Turnstile streaming Private-Frobenius-LRF (Priv2; Upadhyay's Figure 6, Theorem 48).

    Holds the noisy sketches ``Y_c = A Phi + N1`` and ``Z = S A + N2`` of the matrix A (m x n) built by the
    entry updates so far (A = 0 at initialisation). The noise is drawn at initialisation, after the budget
    is spent on ``accountant``; every later method is post-processing of the state and of the sketches.
    Orientation: as :func:`~dpspectral.lowrank._factorization.private_frobenius_lrf`, the state is kept
    for ``A^T`` when m > n (updates swap i and j, the release swaps U and V), so the sketches, the noise
    and the release are those of the one-shot function with the same ``random_state`` and
    ``sketch_seed``.

    Parameters
    ----------
    shape : tuple of int (m, n)
        Shape of the streamed matrix (public).
    rank : int
        k in [1, min(m, n)].
    epsilon, delta : float
        The target; delta in (0, 1).
    relation : {"priv2", "priv1"}
        Priv2 (default) covers Priv1; the noise is the same.
    calibration : {"tight", "paper"}
        As in :func:`~dpspectral.lowrank._factorization.frobenius_noise`.
    alpha : float in (0, 1)
        Default sketch sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)``, capped by min(m, n).
    sketch : Sketch, optional
        The sketches (:class:`~dpspectral.lowrank.Sketch`): t the columns of ``Y_c = A Phi`` (Phi:
        n x t), v the rows of ``Z = S A`` (S: v x m) of the rank-k solve. A declared seed is the
        caller's: the stream must not depend on it (see Privacy).
    bound : float
        Public scale b of the relation: neighbouring matrices differ by ``||A - A'||_F <= b``.
    accountant : Accountant, optional
        Ledger; the release is recorded there at initialisation, before any noise is drawn. A refusal
        (:class:`~dpspectral.privacy._budget.BudgetExceededError`) creates no state.
    random_state : None, int, SeedSequence, Generator or "secure"
        Source of the noise only (secret: keep it secret). ``"secure"``: OS entropy and exact discrete
        Gaussian noise (:mod:`dpspectral.privacy._noise`); the file of such a state records it.

    Attributes
    ----------
    privacy : PrivacyReport
        What the state (and so its one published snapshot) certifies.
    published : bool
        Whether a snapshot of this state (or of the state it was loaded from) was published.
    sizes : SketchSizes
    sigma, sensitivity : float
        Noise std of every entry of N1, N2 and the per-pair L2 sensitivity of ``(Y_c, Z)``.
    transposed : bool
        Whether the state is kept for ``A^T`` (m > n).

    Privacy
    -------
    Relation Priv2 (``||A - A'||_F <= b``, hence Priv1) between the matrices the streams build. The
    state is ``(A Phi + N1, S A + N2)``, the one-shot Priv2 sketches: for E = A - A',
    ``||E Phi||_F^2 <= c_t b^2`` and ``||S E||_F^2 <= c_v b^2`` except with probability delta_s each
    (Laurent–Massart, for Gaussian sketches drawn independently of E; a factor is exactly 1 for a
    sketch as large as its dimension, which is the identity), so one Gaussian mechanism with L2
    sensitivity ``b sqrt(c_t + c_v)``. Events: ``GaussianDpEvent(sigma / Delta)`` and
    ``EpsilonDeltaDpEvent(0, 2 delta_s)``, spent once, at initialisation. :meth:`release` and
    :meth:`save` read only the state and the sketches.

    *Non-adaptive stream.* The per-pair bound needs a stream that does not depend on the drawn sketch.
    The sketch (its seed, Phi, S, the configuration that holds the seed) is therefore not shown before
    the state is published (:meth:`sketches`, :attr:`sketch_seed` and :attr:`config` raise until
    then), and it is drawn from OS entropy unless the caller declares ``sketch_seed``, in which case
    keeping the stream independent of it is the caller's responsibility (stated in the report's notes).

    *One snapshot.* The guarantee covers one snapshot of the state: two snapshots of one stream at
    different times share N1, N2, so their difference reveals the updates in between without noise.
    Publishing is :meth:`release`, ``save(path, publish=True)`` or reading :attr:`Y_c` / :attr:`Z`;
    after a publication the same snapshot may be published again (post-processing), but once the
    state has been updated any further publication raises :class:`RepublicationError`. The flag is
    kept in secret checkpoints and published files, so :meth:`load` keeps it. A secret checkpoint
    (``save(path)``) is a copy of the noise: publish from at most one copy of a state (two copies
    continued and published separately are two snapshots that this object cannot see).

    *Secure source.* With ``random_state="secure"`` the noise is drawn exactly on a fine grid at
    initialisation (:mod:`dpspectral.privacy._noise`); the updates are added afterwards in floating
    point, so every publication rounds the state to that grid (``PublishOnce._snapshot``): what is
    published is the noise plus the rounded sketches, as the secure mechanism releases them.
    """

    mechanism = "turnstile_lrf"

    @sketch_keywords
    @validated(PRIVATE_LRF_TABLE, owner="TurnstileLRF")
    def __init__(
        self,
        shape: tuple[int, int],
        rank: int,
        *,
        epsilon: float,
        delta: float,
        relation: Relation | str = "priv2",
        calibration: Calibration = "tight",
        alpha: float = 0.25,
        sketch: Sketch | None = None,
        bound: float = 1.0,
        accountant: Accountant | None = None,
        random_state: Any = None,
    ) -> None:
        owner = type(self).__name__
        config = self._configure(shape, rank, epsilon=epsilon, delta=delta, relation=relation,
                                 calibration=calibration, alpha=alpha, sketch=sketch, bound=bound)
        noise, budget, plan = self._plan(config, owner)
        m, n = sorted(config.shape)
        Y, ZT, report = charge_sketch_noise(
            plan, RunSettings(accountant, random_state), (m, n), SketchSizes(t=config.t, v=config.v),
            facts={"mechanism": self.mechanism, "budget": budget, "calibration": config.calibration})
        self._build(config, noise, report, Y, ZT, NONE)

    @staticmethod
    def _configure(shape: Any, rank: Any, *, epsilon: float, delta: float, relation: Any,
                   calibration: str, alpha: float, sketch: Sketch | None, bound: float) -> TurnstileConfig:
        """Validate the public inputs (cross-parameter checks: shape, rank, sketch sizes) into a config."""
        owner = TurnstileLRF.__name__
        got = state_inputs(shape, rank, epsilon=epsilon, delta=delta, relation=relation,
                           allowed=(Relation.PRIV2, Relation.PRIV1), alpha=alpha, sketch=sketch, owner=owner)
        return TurnstileConfig(
            shape=got.shape,
            rank=got.rank,
            t=got.sizes.t,
            v=got.sizes.v,
            sketch_seed=_seed(got.sketch.seed, owner=owner),
            epsilon=got.budget.epsilon,
            delta=got.budget.delta,
            relation=got.relation.value,
            calibration=calibration,
            bound=float(bound),
            alpha=float(alpha),
            sketch_failure_share=failure_share_of(got.sketch),
        )

    # -- construction shared by __init__ and load ------------------------------------------------
    def _build(
        self,
        config: TurnstileConfig,
        noise: FrobeniusNoise,
        report: PrivacyReport,
        Y: np.ndarray,
        ZT: np.ndarray,
        publication: str,
    ) -> None:
        self._config = config
        self.shape = config.shape
        self.rank = config.rank
        self.transposed = config.shape[0] > config.shape[1]
        m, n = config.shape[::-1] if self.transposed else config.shape
        self._inner_shape = (m, n)
        self.sizes = SketchSizes(t=config.t, v=config.v)
        self.sigma = noise.sigma
        self.sensitivity = noise.sensitivity
        self.privacy = report
        self._sketch_seed = config.sketch_seed
        self._set_sketches(m, n)
        self._Y = np.ascontiguousarray(Y, dtype=np.float64)
        self._ZT = np.ascontiguousarray(ZT, dtype=np.float64)
        self._sketch_max = _max_abs(self._Phi, self._S)
        self._mag = _max_abs(self._Y, self._ZT)
        self._publication = publication
        self._use_grid(report.noise_source, noise.sigma)

    @staticmethod
    def _plan(config: TurnstileConfig, owner: str) -> tuple[FrobeniusNoise, PrivacyBudget, ReleasePlan]:
        """The noise, budget and release plan of a configuration (no spending, no noise)."""
        m, n = sorted(config.shape)
        budget = check_budget(config.epsilon, config.delta, owner)
        rel = _relation(config.relation, (Relation.PRIV2, Relation.PRIV1), owner)
        noise, plan = sketch_state_plan(
            TurnstileLRF.mechanism, budget, rel, SketchSizes(t=config.t, v=config.v), (m, n),
            bound=config.bound, calibration=config.calibration, alpha=config.alpha,
            sketch_failure_share=config.sketch_failure_share, owner=owner)
        return noise, budget, plan

    # -- reading -------------------------------------------------------------------------------
    @property
    def config(self) -> TurnstileConfig:
        """The configuration (holds the sketch seed: shown only once the state is published)."""
        self._require_published("config")
        return self._config

    def __repr__(self) -> str:
        m, n = self.shape
        return (
            f"{type(self).__name__}(shape=({m}, {n}), rank={self.rank}, t={self.sizes.t}, "
            f"v={self.sizes.v}, {self.privacy.relation.value}, epsilon={self.privacy.epsilon:.4g}, "
            f"published={self.published})"
        )

    def __getstate__(self) -> dict[str, Any]:
        # the sketches are regenerated from the seed; the publication flag travels with the copy
        return {k: v for k, v in self.__dict__.items() if k not in ("_Phi", "_S", "_ST")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._set_sketches(*self._inner_shape)

    # -- updates -------------------------------------------------------------------------------
    def update(self, i: int, j: int, delta: float) -> None:
        """``A[i, j] += delta``: ``Y_c[i, :] += delta Phi[j, :]``, ``Z[:, j] += delta S[:, i]``.

        Raises a ValueError (state unchanged) for an index out of range or a non-finite delta. An
        update after a publication makes the state unpublishable (see the class's Privacy section).
        """
        self._update_entry(i, j, delta)

    def update_many(self, rows: Any, cols: Any, values: Any) -> None:
        """``A[rows[e], cols[e]] += values[e]`` for every e, in order (duplicates add up).

        Same result, bit for bit, as calling :meth:`update` for each entry in order. The whole batch is
        validated first: integer indices in range, finite values, equal lengths; on an error a ValueError
        names the kind of problem (no position, value or count) and the state is unchanged. A batch
        whose values would overflow float64 in the sketches is refused the same way.
        """
        self._update_entries(rows, cols, values)

    def _apply(self, r: np.ndarray, c: np.ndarray, x: np.ndarray, owner: str) -> None:
        if x.size == 0:
            return
        with np.errstate(over="ignore"):  # an overflowing bound is inf: the checked path below
            inc = float(np.sum(np.abs(x))) * self._sketch_max  # bound on the change of any entry
        if not self._mag + inc <= _SAFE_MAGNITUDE:
            self._mag = _max_abs(self._Y, self._ZT)
        if self._mag + inc <= _SAFE_MAGNITUDE:
            _entry_kernel(self._Y, self._ZT, self._Phi, self._ST, r, c, x)
            self._mag += inc
        else:  # could overflow: apply to a copy and check it before it becomes the state
            Y, ZT = self._Y.copy(), self._ZT.copy()
            _entry_kernel(Y, ZT, self._Phi, self._ST, r, c, x)
            if not (np.isfinite(Y).all() and np.isfinite(ZT).all()):
                raise ValueError(
                    f"{owner}: the batch overflows float64 in the sketches. Nothing was applied (which "
                    "value is not reported: the updates are private)."
                )
            self._Y, self._ZT = Y, ZT
            self._mag = _max_abs(Y, ZT)
        self._changed()

    # -- release -------------------------------------------------------------------------------
    def release(self, singular_values: str = "shrink") -> LowRankResult:
        """The rank-k factorization ``A ~ U diag(S) V^T`` from the current state (post-processing).

        Steps 2–5 of Private-Frobenius-LRF (:func:`~dpspectral.lowrank._factorization.frobenius_release`).
        Publishes the current snapshot: free of privacy cost for it, any number of times; after an
        update that follows a publication it raises :class:`RepublicationError` (class's Privacy section).

        Parameters
        ----------
        singular_values : {"shrink", "raw"}
            ``"shrink"`` (default): the solve's core shrunk by the noise edge (a value below it gets 0;
            :func:`~dpspectral.lowrank._shrink.frobenius_shrink`), post-processing that keeps a release
            that is all noise at the zero matrix's error; ``"raw"``: the paper's plain truncation.

        Returns
        -------
        LowRankResult
            U (m, k), S (k,), V (n, k); ``privacy`` is :attr:`privacy`; diagnostics ``t``, ``v``,
            ``sigma``, ``sensitivity``, ``noise_multiplier``, ``sketch_seed``, ``transposed`` (all
            public; no count of updates).
        """
        sigma = _shrink_sigma(singular_values, self.sigma, "TurnstileLRF.release")
        Y, Z = self._published_sketches()
        U, s, V = frobenius_release(Y, Z, self._S, self.rank, sigma)
        diag = self._diagnostics({"sketch_seed": self._config.sketch_seed, "transposed": self.transposed})
        return _result(U, s, V, self.transposed, self.privacy, diag)

    # -- persistence ---------------------------------------------------------------------------
    def _arrays(self, publish: bool = False) -> dict[str, np.ndarray]:
        if publish:  # the published snapshot (rounded to the secure grid, see PublishOnce._snapshot)
            return {"Y_c": self._snapshot(self._Y), "Z": self._snapshot(self._ZT).T}
        return {"Y_c": self._Y, "Z": self._ZT.T}

    def save(self, path: str | os.PathLike[str], *, publish: bool = False) -> Path:
        """Write the state to one ``.npz`` file, atomically (temporary file, fsync, ``os.replace``).

        The file holds the noisy sketches ``Y_c`` and ``Z`` (in the internal orientation, see
        :attr:`transposed`), the configuration (JSON, with the sketch seed), its ``status`` and
        ``publication`` flags, the format version and a sha256 checksum; no count of updates. Phi and S
        are not stored: they are regenerated from the seed. A crash during the save leaves the previous
        file at ``path`` intact.

        Parameters
        ----------
        path : path-like
        publish : bool, default=False
            False: a **secret checkpoint**, to be continued (:meth:`load`), never published; the file
            says so (``status="secret"`` and a ``notice``) and saving it publishes nothing. True: a
            **published release** of the current snapshot (``status="published"``), exactly like
            :meth:`release` (refused with :class:`RepublicationError` after updates that follow a
            publication).
        """
        return self._write(path, publish)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        expect: TurnstileConfig | TurnstileLRF | Mapping[str, Any] | None = None,
    ) -> TurnstileLRF:
        """A state saved by :meth:`save`. Spends no budget: the file already holds the noisy state.

        The publication flag is kept: a state loaded from a published file (or from a checkpoint of a
        published state) may publish that snapshot again but not one after further updates. Loading
        recomputes the privacy report from the configuration (and the noise source the file records).

        Parameters
        ----------
        path : path-like
        expect : TurnstileConfig, TurnstileLRF or mapping, optional
            The configuration the caller expects (a mapping checks only the fields it names, e.g.
            ``{"shape": (m, n), "rank": k}``). A state of another configuration is a :class:`StateFileError`.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        StateFileError
            A corrupt or truncated file (unreadable zip, checksum mismatch), another format version, a
            state of another kind or configuration, or arrays that do not fit the configuration.
        """
        owner = f"{cls.__name__}.load"
        data, config, status, publication = cls._read(path, expect, ("Y_c", "Z"), TurnstileConfig.from_dict)
        m_user, n_user = config.shape
        m, n = (n_user, m_user) if m_user > n_user else (m_user, n_user)
        Y, Z = data["Y_c"], data["Z"]
        fits = Y.shape == (m, config.t) and Z.shape == (config.v, n)
        if not (fits and Y.dtype == np.float64 and Z.dtype == np.float64):
            raise StateFileError(
                f"{path}: arrays Y_c {Y.shape} {Y.dtype} and Z {Z.shape} {Z.dtype} do not fit the "
                f"configuration (expected float64 {(m, config.t)} and {(config.v, n)})."
            )
        try:
            check_rank(config.rank, m, n, owner)
            noise, budget, plan = cls._plan(config, owner)
        except ValueError as exc:
            raise StateFileError(f"{path}: invalid configuration ({exc}).") from exc
        report = cls._file_report(plan, budget, config, path, data)
        state = cls.__new__(cls)
        state._build(config, noise, report, Y, Z.T, CURRENT if status == PUBLISHED else publication)
        return state


def _check_shape(shape: Any, owner: str) -> tuple[int, int]:
    """A pair of ints >= 1 (a pair, not a plain range: checked here rather than by a constraint table)."""
    try:
        m, n = shape
    except (TypeError, ValueError):
        raise ValueError(f"The 'shape' parameter of {owner} must be a pair (m, n). Got {shape!r}.") from None
    if not (_is_int(m) and _is_int(n) and m >= 1 and n >= 1):
        raise ValueError(f"The 'shape' parameter of {owner} must be a pair of ints >= 1. Got {shape!r}.")
    return int(m), int(n)


@dataclass(frozen=True)
class StateInputs:
    """The checked public inputs of a streaming state: the budget, the relation, the shape as given
    (``m_user``, ``n_user``) and as sketched (``m``, ``n``), the rank, the sketch options and sizes."""

    budget: PrivacyBudget
    relation: Relation
    shape: tuple[int, int]
    m: int
    n: int
    rank: int
    sketch: Sketch
    sizes: SketchSizes


def state_inputs(shape: Any, rank: Any, *, epsilon: float, delta: float, relation: Any,
                 allowed: tuple[Relation, ...], alpha: float, sketch: Sketch | None, owner: str,
                 oriented: bool = True, padded: bool = False) -> StateInputs:
    """Check what every streaming state checks, in one order, before anything is charged.

    ``oriented``: the state sketches the orientation m <= n (else the shape as given); ``padded``: the
    affine sketches see ``m + n`` columns (Private-Space-Optimal's padding ``[A, sigma_min I_m]``).
    """
    budget = check_budget(epsilon, delta, owner)
    rel = _relation(relation, allowed, owner)
    given = _check_shape(shape, owner)
    m, n = sorted(given) if oriented else given
    k = check_rank(rank, m, n, owner)
    options, sizes = sketch_plan(sketch, k, alpha, m, m + n if padded else m, owner)
    return StateInputs(budget, rel, given, m, n, k, options, sizes)


@sketch_keywords
@validated(PRIVATE_LRF_TABLE)
def turnstile_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "priv2",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch: Sketch | None = None,
    bound: float = 1.0,
    batch_size: int = 1_000_000,
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Streamed Private-Frobenius-LRF in one call: every non-zero entry of A as a turnstile update.

    A :class:`TurnstileLRF` of A's shape receives the entries (row-major, in batches of ``batch_size``)
    through :meth:`TurnstileLRF.update_many` and releases once. The final state equals the one-shot
    sketches, so the result has the law of :func:`~dpspectral.lowrank._factorization.private_frobenius_lrf`
    (the registry's entry for the turnstile model; for a real stream use the class).

    Privacy
    -------
    As :class:`TurnstileLRF`: Priv2 (hence Priv1) on the final matrix, one snapshot released.
    """
    owner = "turnstile_lrf"
    sketch = sketch_options(sketch, owner)  # its fields refused under this function's name
    M = sp.coo_matrix(check_matrix(A, owner))
    state = TurnstileLRF(M.shape, k, **state_keywords(TurnstileLRF.__init__, locals()))
    stream_entries(state, M, batch_size)
    return state.release()


def check_singular_values(singular_values: str, owner: str) -> None:
    """A release's ``singular_values`` must be ``"shrink"`` or ``"raw"`` (a ValueError naming ``owner``)."""
    if singular_values not in ("shrink", "raw"):
        raise ValueError(
            f"The 'singular_values' parameter of {owner} must be one of 'shrink', 'raw'. "
            f"Got {singular_values!r} instead."
        )


def _shrink_sigma(singular_values: str, sigma: float, owner: str) -> float:
    """The noise std the release's solve shrinks by: ``sigma`` for ``"shrink"``, 0 for ``"raw"``."""
    check_singular_values(singular_values, owner)
    return float(sigma) if singular_values == "shrink" else 0.0
