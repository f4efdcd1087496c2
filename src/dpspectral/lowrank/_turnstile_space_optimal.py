"""Turnstile streaming Private-Space-Optimal-LRF (Priv1; Upadhyay, NeurIPS 2018, Figure 5, Theorem 47).

The three sketches of the one-shot :func:`~dpspectral.lowrank._factorization.private_space_optimal_lrf`
are linear in the padded matrix ``Â = [A, sigma_min I_m]``, so they are maintained under turnstile
updates ``(i, j, delta)`` (``A_ij += delta``, j < n) from ``A = 0`` (spec §5,
``../shared/papers/spec-lowrank.md``):

* initialisation: ``Y_c <- [0, sigma_min I] Omega``, ``Y_r <- Psi [0, sigma_min I] + N1``,
  ``Z <- S [0, sigma_min I] T^T + N2`` (the noise and the padding are drawn once, here);
* update: ``Y_c[i, :] += delta Omega[j, :]``, ``Y_r[:, j] += delta Psi[:, i]``,
  ``Z += delta S[:, i] T[:, j]^T``;
* release: steps 3-6 of the one-shot algorithm on the state
  (:func:`~dpspectral.lowrank._factorization.space_optimal_release`).

The plan, the sketches, the draws (the secret Omega's seed, then the Gaussian noise of ``(Y_r, Z)``) and
the release are those of the one-shot function, so a stream whose final matrix is A gives the one-shot
state and factorization of A for the same ``random_state`` and ``sketch_seed`` (up to floating-point
summation order; tested). The one-publication rule, the state files and the update validation are
:mod:`.streaming`'s (:class:`~dpspectral.lowrank._streaming.PublishOnce`, ``write_state_file``, ...).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._constraints import SHARE, Interval, validated
from .._results import LowRankResult
from .._validation import check_budget
from ..privacy._accounting import Accountant, PrivacyReport
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._pipeline import Releaser
from ..privacy._template import RunSettings, charge_at_creation
from ._factorization import (
    PRIVATE_LRF_TABLE,
    SINGULAR_VALUES,
    Calibration,
    SingularValues,
    SpaceOptimalNoise,
    _relation,
    _result,
    _seed,
    _space_optimal_sketches,
    check_matrix,
    space_optimal_finish,
    space_optimal_noise,
    split_joint,
)
from ._one_call import state_keywords, stream_entries
from ._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options
from ._sketches import SketchSizes
from ._streaming import (
    CURRENT,
    NONE,
    ONE_SNAPSHOT_NOTE,
    PUBLISHED,
    SECRET,
    STREAM_NOTE,
    StateFileError,
    TurnstileConfig,
    TurnstileState,
    check_singular_values,
    noise_grid,
    on_grid,
    read_only,
    state_inputs,
)

__all__ = ["SpaceOptimalConfig", "TurnstileSpaceOptimalLRF", "paper_space_bound",
           "turnstile_space_optimal_lrf"]

_ARRAYS = ("Y_c", "Y_r", "Z")
_SECRET_SEED = "omega_seed"


@dataclass(frozen=True)
class SpaceOptimalConfig(TurnstileConfig):
    """The public configuration of a :class:`TurnstileSpaceOptimalLRF` (``TurnstileConfig`` + input_share)."""

    input_share: float = 0.5

    kind = "turnstile_space_optimal_lrf"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpaceOptimalConfig:
        base = super().from_dict(data)  # checks the kind and that every field (input_share too) is there
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return cls(**{**fields, "input_share": float(data["input_share"])})


def paper_space_bound(shape: tuple[int, int], k: int, alpha: float) -> int:
    """The paper's space bound ``(m + n) k / alpha`` (Thm 47 part 3, O(.) constant 1) in float64 bytes."""
    m, n = shape
    return int(8 * (m + n) * k / alpha)


class TurnstileSpaceOptimalLRF(TurnstileState):
    """Turnstile streaming Private-Space-Optimal-LRF (Priv1; Upadhyay's Figure 5, Theorem 47).

    Holds ``Y_c = Â Omega`` (m x t, input perturbation), ``Y_r = Psi Â + N1`` (t x (m + n)) and
    ``Z = S Â T^T + N2`` (v x v) of ``Â = [A, sigma_min I_m]`` for the matrix A built by the updates so
    far (A = 0 at initialisation), in the orientation m <= n (the state is kept for ``A^T`` when m > n:
    updates swap i and j, the release swaps U and V). The budget is spent at initialisation, before the
    padding, Omega and the noise are drawn; every later method is post-processing of the state.

    Parameters
    ----------
    shape : tuple of int (m, n)
        Shape of the streamed matrix (public).
    rank : int
        k in [1, min(m, n)].
    epsilon, delta, relation, calibration, alpha
        As in :func:`~dpspectral.private_space_optimal_lrf` (relation ``"priv1"`` only:
        ``A - A' = b u v^T``).
    sketch : Sketch, optional
        t (columns of ``Y_c``, rows of ``Y_r``) and v (rows of S and T), k <= t <= m, t <= v <= m + n;
        the failure share and the seed (:class:`~dpspectral.lowrank.Sketch`).
    bound, input_share
        As in :func:`~dpspectral.private_space_optimal_lrf`.
    accountant : Accountant, optional
        Ledger; charged at initialisation, before anything is drawn. A refusal creates no state.
    random_state : None, int, SeedSequence, Generator or "secure"
        The secret source of Omega's seed and of the noise (keep it secret).

    Privacy
    -------
    Relation Priv1 (``A' = A + b u v^T``, unit u, v) between the matrices the streams build. The state
    is the one-shot sketches of the final matrix (linearity: every update adds to the sketches what the
    one-shot computation adds for that entry; the padding and the noise are added once, at
    initialisation), so its law is the one-shot law and its guarantee the one-shot guarantee:
    (1) ``Y_c``: the t columns are i.i.d. ``N(0, Â Â^T)``; for ``Â' = Â + b u z^T``, ``z = (v, 0)``, the
    exact accountant of :mod:`dpspectral.privacy._bbds` gives ``sigma_min = b min_sigma_min(eps_c,
    delta_c, t)`` (``EpsilonDeltaDpEvent(eps_c, delta_c)``); Omega is secret and enters one snapshot
    only. (2) ``(Y_r, Z)``: ``||Psi (b u z^T)||_F = b ||Psi u|| <= b sqrt(c_t)`` and
    ``||S (b u z^T) T^T||_F = b ||S u|| ||T z|| <= b sqrt(c_S c_T)`` except with probability 3 delta_s
    (Laurent–Massart, Gaussian sketches drawn independently of the stream; a factor is 1 for an
    identity sketch), so one Gaussian mechanism of L2 sensitivity ``b sqrt(c_t + c_S c_T)``
    (``GaussianDpEvent(sigma / Delta)``). (3) ``EpsilonDeltaDpEvent(0, 3 delta_s)``. The events are
    :func:`~dpspectral.lowrank._factorization.space_optimal_noise`'s, charged once.

    *One snapshot.* Two snapshots share Omega, N1 and N2: their difference is ``(A_2 - A_1)[Omega; ...]``
    without padding or noise. Publishing (:meth:`release`, ``save(path, publish=True)``, reading
    :attr:`Y_c`, :attr:`Y_r`, :attr:`Z`) marks the snapshot; after an update any further publication
    raises :class:`~dpspectral.lowrank._streaming.RepublicationError` (the rule of ``TurnstileLRF``,
    kept across save/load). *Non-adaptive stream.* The sketch seed is not shown before publication.
    *Secret checkpoint.* ``save(path)`` stores the seed of Omega (secret): never publish it; a published
    file holds no Omega and cannot be continued. *Secure source.* ``Y_r`` and ``Z`` are rounded to the
    grid of their noise at publication (as ``TurnstileLRF``); ``Y_c``, like the one-shot ``Y_c``, is a
    floating-point Gaussian sketch (``docs/privacy-caveats.md``).
    """

    mechanism = "turnstile_space_optimal_lrf"
    _config: SpaceOptimalConfig
    _instead = ("ContinualSpaceOptimalLRF (the Priv1 tree) or ContinualLRF (the Priv2 tree, also Priv1) "
                "for releases at many times, or a new state (a new release, charged anew) for new data")

    @sketch_keywords
    @validated({**PRIVATE_LRF_TABLE, "input_share": SHARE}, owner="TurnstileSpaceOptimalLRF")
    def __init__(
        self,
        shape: tuple[int, int],
        rank: int,
        *,
        epsilon: float,
        delta: float,
        relation: Relation | str = "priv1",
        calibration: Calibration = "tight",
        alpha: float = 0.25,
        sketch: Sketch | None = None,
        bound: float = 1.0,
        input_share: float = 0.5,
        accountant: Accountant | None = None,
        random_state: Any = None,
    ) -> None:
        owner = type(self).__name__
        got = state_inputs(shape, rank, epsilon=epsilon, delta=delta, relation=relation,
                           allowed=(Relation.PRIV1,), alpha=alpha, sketch=sketch, owner=owner, padded=True)
        config = SpaceOptimalConfig(
            shape=got.shape, rank=got.rank, t=got.sizes.t, v=got.sizes.v,
            sketch_seed=_seed(got.sketch.seed, owner=owner),
            epsilon=got.budget.epsilon, delta=got.budget.delta, relation=got.relation.value,
            calibration=str(calibration), bound=float(bound), alpha=float(alpha),
            sketch_failure_share=failure_share_of(got.sketch), input_share=float(input_share),
        )
        so, budget = self._plan(config, owner)
        self._setup(config, so)
        shapes = [self._Y_r_shape, self._Z_shape]

        def draw(releaser: Releaser) -> tuple[int, np.ndarray, np.ndarray]:
            omega_seed = releaser.integers(0, 2**63 - 1)  # the one-shot's first draw
            if len(so.plan.releases) == 1:  # tight: N1 then N2, one joint Gaussian (as add_joint draws)
                N1, N2 = split_joint(releaser.gaussian("sketches", sum(a * b for a, b in shapes)), shapes)
            else:  # paper: two releases, Y_r's noise first
                N1, N2 = releaser.gaussian("Y_r", shapes[0]), releaser.gaussian("Z", shapes[1])
            return omega_seed, N1, N2

        # refused before anything is drawn
        (omega_seed, N1, N2), report, _ = charge_at_creation(
            so.plan, RunSettings(accountant, random_state), draw,
            facts={"mechanism": self.mechanism, "budget": budget, "calibration": config.calibration},
            stacklevel=6)
        self._init_state(omega_seed, N1, N2)
        self._finish_build(report, NONE)

    # -- construction shared by __init__ and load ------------------------------------------------
    @staticmethod
    def _plan(config: SpaceOptimalConfig, owner: str) -> tuple[SpaceOptimalNoise, PrivacyBudget]:
        """The one-shot plan of a configuration, with the streaming notes (no spending, no noise)."""
        m, n = sorted(config.shape)
        budget = check_budget(config.epsilon, config.delta, owner)
        rel = _relation(config.relation, (Relation.PRIV1,), owner)
        so = space_optimal_noise(
            TurnstileSpaceOptimalLRF.mechanism, budget, rel, SketchSizes(t=config.t, v=config.v), (m, n),
            bound=config.bound, calibration=config.calibration, alpha=config.alpha,
            input_share=config.input_share, sketch_failure_share=config.sketch_failure_share,
        )
        plan = dataclasses.replace(so.plan, notes=(*so.plan.notes, STREAM_NOTE, ONE_SNAPSHOT_NOTE))
        return dataclasses.replace(so, plan=plan), budget

    def _setup(self, config: SpaceOptimalConfig, so: SpaceOptimalNoise) -> None:
        """Public facts and the public sketches Psi, S, T (regenerated from the sketch seed)."""
        self._config, self._so = config, so
        self.shape, self.rank = config.shape, config.rank
        self.transposed = config.shape[0] > config.shape[1]
        m, n = sorted(config.shape)
        self._inner_shape = (m, n)
        self.sizes = SketchSizes(t=config.t, v=config.v)
        self._sketch_seed = config.sketch_seed
        self._Psi, self._S, self._T = _space_optimal_sketches(m, m + n, self.sizes, config.sketch_seed)
        self._Y_c_shape = (m, self._Psi.shape[0])
        self._Y_r_shape = (self._Psi.shape[0], m + n)
        self._Z_shape = (self._S.shape[0], self._T.shape[0])

    def _init_state(self, omega_seed: int, N1: np.ndarray, N2: np.ndarray) -> None:
        """Figure 5's initialisation: the sketches of ``[0, sigma_min I]`` plus the noise of (Y_r, Z)."""
        m, n = self._inner_shape
        smin = self._so.sigma_min
        self._set_omega(omega_seed)
        Omega_pad = np.random.default_rng(omega_seed).standard_normal((m + n, self._Psi.shape[0]))[n:]
        self._Y_c = np.ascontiguousarray(smin * Omega_pad)
        self._Y_r = np.hstack([np.zeros((self._Psi.shape[0], n)), smin * self._Psi]) + N1
        self._Z = smin * (self._S @ self._T[:, n:].T) + N2

    def _set_omega(self, omega_seed: int | None) -> None:
        """The secret rows ``Omega[:n]`` that the updates use (None: a published state, not continuable)."""
        m, n = self._inner_shape
        self._omega_seed = omega_seed
        self._Omega = None if omega_seed is None else np.ascontiguousarray(
            np.random.default_rng(omega_seed).standard_normal((m + n, self._Psi.shape[0]))[:n])

    def _finish_build(self, report: PrivacyReport, publication: str) -> None:
        self.privacy = report
        self._publication = publication
        self._grids = (noise_grid(report.noise_source, self._so.sigma_y),
                       noise_grid(report.noise_source, self._so.sigma_z))

    # -- reading (each publishes the current snapshot) -------------------------------------------
    def _snapshot_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What is published: Y_c as is; Y_r, Z rounded to their noise's grid with the secure source."""
        gy, gz = self._grids
        return self._Y_c, on_grid(self._Y_r, gy), on_grid(self._Z, gz)

    @property
    def Y_c(self) -> np.ndarray:
        """``Â Omega`` (m x t), read-only copy. Reading it publishes the snapshot."""
        self._publish("Y_c")
        return read_only(self._snapshot_arrays()[0].copy())

    @property
    def Y_r(self) -> np.ndarray:
        """``Psi Â + N1`` (t x (m + n)), read-only copy. Reading it publishes the snapshot."""
        self._publish("Y_r")
        return read_only(self._snapshot_arrays()[1].copy())

    @property
    def Z(self) -> np.ndarray:
        """``S Â T^T + N2`` (v x v), read-only copy. Reading it publishes the snapshot."""
        self._publish("Z")
        return read_only(self._snapshot_arrays()[2].copy())

    @property
    def sigma_min(self) -> float:
        """The padding ``sigma_min`` of ``Â = [A, sigma_min I]`` (public)."""
        return self._so.sigma_min

    @property
    def sketch_seed(self) -> int:
        """The seed of Psi, S, T (shown only once the state is published)."""
        self._require_published("sketch_seed")
        return self._sketch_seed

    @property
    def config(self) -> SpaceOptimalConfig:
        """The configuration (holds the sketch seed: shown only once the state is published)."""
        self._require_published("config")
        return self._config

    def sketches(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The public sketches ``(Psi, S, T)``, read-only (once the state is published). Omega is secret."""
        self._require_published("sketches")
        return read_only(self._Psi), read_only(self._S), read_only(self._T)

    def state_bytes(self) -> dict[str, int]:
        """Memory in bytes: ``"state"`` (Y_c, Y_r, Z and the two 8-byte seeds: what Figure 5 keeps,
        Thm 47 part 3), ``"secret_omega"`` (the rows ``Omega[:n]`` kept for fast updates; regenerable from
        its seed) and ``"public_sketches"`` (Psi, S, T kept for fast updates; regenerable from the
        sketch seed). Public: a function of the configuration only."""
        m, n = self._inner_shape
        t = self._Psi.shape[0]
        return {
            "state": 8 * (self._Y_c.size + self._Y_r.size + self._Z.size) + 16,
            "secret_omega": 8 * n * t,
            "public_sketches": 8 * (self._Psi.size + self._S.size + self._T.size),
        }

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"{type(self).__name__}(shape=({m}, {n}), rank={self.rank}, t={self.sizes.t}, "
                f"v={self.sizes.v}, priv1, epsilon={self.privacy.epsilon:.4g}, published={self.published})")

    def __getstate__(self) -> dict[str, Any]:  # the sketches and Omega's rows are regenerated from seeds
        return {k: v for k, v in self.__dict__.items() if k not in ("_Psi", "_S", "_T", "_Omega")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        m, n = self._inner_shape
        self._Psi, self._S, self._T = _space_optimal_sketches(m, m + n, self.sizes, self._sketch_seed)
        self._set_omega(self._omega_seed)

    # -- updates ---------------------------------------------------------------------------------
    def update(self, i: int, j: int, delta: float) -> None:
        """``A[i, j] += delta`` (Figure 5's update of the three sketches).

        Raises a ValueError (state unchanged) for an index out of range or a non-finite delta; an update
        after a publication makes the state unpublishable (class's Privacy section).
        """
        self._update_entry(i, j, delta)

    def update_many(self, rows: Any, cols: Any, values: Any) -> None:
        """``A[rows[e], cols[e]] += values[e]`` for every e (duplicates add up).

        The whole batch is validated first (integer indices in range, finite values, equal lengths);
        on an error, or a batch that would overflow float64 in the sketches, a ValueError names the kind
        of problem (no position, value or count) and the state is unchanged.
        """
        self._update_entries(rows, cols, values)

    def _apply(self, r: np.ndarray, c: np.ndarray, x: np.ndarray, owner: str) -> None:
        if self._Omega is None:
            raise ValueError(f"{owner}: this state was loaded from a published release, which holds no "
                             "secret Omega: it cannot be continued (nor published again after updates).")
        if x.size == 0:
            return
        m, n = self._inner_shape
        E = sp.csr_matrix((x, (r, c)), shape=(m, n))  # the batch's change of A (duplicates summed)
        ru, cu = np.unique(r), np.unique(c)
        Er = E[ru]
        with np.errstate(over="ignore", invalid="ignore"):
            Y_c = self._Y_c[ru] + np.asarray(Er @ self._Omega)  # Y_c[i] += d Omega[j]
            Y_r = self._Y_r[:, cu] + np.asarray(E[:, cu].T @ self._Psi.T).T  # Y_r[:, j] += d Psi[:, i]
            Z = self._Z + self._S[:, ru] @ np.asarray(Er @ self._T[:, :n].T)  # Z += d S[:, i] T[:, j]^T
        if not (np.isfinite(Y_c).all() and np.isfinite(Y_r).all() and np.isfinite(Z).all()):
            raise ValueError(f"{owner}: the batch overflows float64 in the sketches. Nothing was applied "
                             "(which value is not reported: the updates are private).")
        self._Y_c[ru], self._Y_r[:, cu], self._Z = Y_c, Y_r, Z
        self._changed()

    # -- release ---------------------------------------------------------------------------------
    def release(self, singular_values: SingularValues = "shrink") -> LowRankResult:
        """The rank-k factorization from the current state (post-processing; publishes the snapshot).

        Steps 3-6 of the one-shot algorithm, with its choice of singular values (``"shrink"``, default,
        or the paper's ``"raw"``). After an update that follows a publication it raises
        :class:`~dpspectral.lowrank._streaming.RepublicationError`.

        Returns
        -------
        LowRankResult
            U (m, k), S (k,), V (n, k); ``privacy`` is :attr:`privacy`; diagnostics as the one-shot
            function's (no count of updates).
        """
        check_singular_values(singular_values, "TurnstileSpaceOptimalLRF.release")
        self._publish("release")
        Y_c, Y_r, Z = self._snapshot_arrays()
        U, s, V = space_optimal_finish(Y_c, Y_r, Z, self._S, self._T, self.rank, self._inner_shape[1],
                                        self._so, singular_values)
        so = self._so
        diag = {"singular_values": singular_values, "t": self.sizes.t, "v": self.sizes.v,
                "sigma_min": so.sigma_min, "sigma": so.sigma_y, "sigma_z": so.sigma_z,
                "sensitivity": so.sensitivity, "epsilon_input": so.epsilon_input,
                "sketch_seed": self._sketch_seed, "transposed": self.transposed}
        return _result(U, s, V, self.transposed, self.privacy, diag)

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, publish: bool = False) -> Path:
        """Write the state to one ``.npz`` file, atomically (``streaming.write_state_file``).

        ``publish=False`` (default): a **secret checkpoint** (status ``"secret"``, a notice) holding
        ``Y_c``, ``Y_r``, ``Z`` and the secret seed of Omega, to be continued with :meth:`load`, never
        published. ``publish=True``: a **published release** of the current snapshot (no Omega; refused
        with ``RepublicationError`` after updates that follow a publication). Both carry the
        configuration, the publication flag, the format version and a sha256 checksum.
        """
        return self._write(path, publish)

    def _arrays(self, publish: bool = False) -> dict[str, np.ndarray]:
        if publish:
            return dict(zip(_ARRAYS, self._snapshot_arrays(), strict=True))
        if self._omega_seed is None:
            raise ValueError(f"{type(self).__name__}.save: a state loaded from a published release "
                             "has no secret to checkpoint; it is already saved as published.")
        return {"Y_c": self._Y_c, "Y_r": self._Y_r, "Z": self._Z,
                _SECRET_SEED: np.array(self._omega_seed, dtype=np.int64)}

    @classmethod
    def load(cls, path: str | os.PathLike[str], *,
             expect: SpaceOptimalConfig | TurnstileSpaceOptimalLRF | Mapping[str, Any] | None = None,
             ) -> TurnstileSpaceOptimalLRF:
        """A state saved by :meth:`save`; spends nothing (the file holds the noisy state).

        Keeps the publication flag. ``expect``: the configuration the caller expects (a mapping checks
        the fields it names). Raises FileNotFoundError, or
        :class:`~dpspectral.lowrank._streaming.StateFileError` for a corrupt, truncated, other-format or
        other-configuration file, or arrays that do not fit.
        """
        owner = f"{cls.__name__}.load"
        data, config, status, publication = cls._read(path, expect, _ARRAYS, SpaceOptimalConfig.from_dict,
                                                      _SECRET_SEED)
        try:
            so, budget = cls._plan(config, owner)
        except ValueError as exc:
            raise StateFileError(f"{path}: invalid configuration ({exc}).") from exc
        state = cls.__new__(cls)
        state._setup(config, so)
        want_shapes = (state._Y_c_shape, state._Y_r_shape, state._Z_shape)
        if any(data[a].shape != s or data[a].dtype != np.float64
               for a, s in zip(_ARRAYS, want_shapes, strict=True)):
            raise StateFileError(f"{path}: the arrays do not fit the configuration (expected float64 "
                                 f"Y_c {want_shapes[0]}, Y_r {want_shapes[1]}, Z {want_shapes[2]}).")
        if status == SECRET and _SECRET_SEED not in data:
            raise StateFileError(f"{path}: a secret checkpoint without the seed of Omega.")
        report = cls._file_report(so.plan, budget, config, path, data)
        state._set_omega(int(data[_SECRET_SEED]) if status == SECRET else None)
        state._Y_c, state._Y_r, state._Z = (np.array(data[a], dtype=np.float64) for a in _ARRAYS)
        state._finish_build(report, CURRENT if status == PUBLISHED else publication)
        return state


@sketch_keywords
@validated({**PRIVATE_LRF_TABLE, "input_share": SHARE, "singular_values": SINGULAR_VALUES,
            "batch_size": Interval(1, None, "left", integer=True)})
def turnstile_space_optimal_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "priv1",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch: Sketch | None = None,
    bound: float = 1.0,
    input_share: float = 0.5,
    singular_values: SingularValues = "shrink",
    batch_size: int = 1_000_000,
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Streamed Private-Space-Optimal-LRF in one call: every non-zero entry of A as a turnstile update.

    A :class:`TurnstileSpaceOptimalLRF` of A's shape receives the entries (row-major, in batches of
    ``batch_size``) and releases once. The final state is the one-shot state, so the result is that of
    :func:`~dpspectral.lowrank._factorization.private_space_optimal_lrf` with the same ``random_state``
    and sketch seed (up to summation order). Parameters as there; for a real stream use the class.

    Privacy
    -------
    As :class:`TurnstileSpaceOptimalLRF`: Priv1 (``A - A' = b u v^T``) on the final matrix, one snapshot
    released; events of :func:`~dpspectral.lowrank._factorization.space_optimal_noise` (the BBDS
    ``EpsilonDeltaDpEvent`` of ``Y_c``, one Gaussian of sensitivity ``b sqrt(c_t + c_S c_T)`` for
    ``(Y_r, Z)``, ``EpsilonDeltaDpEvent(0, 3 delta_s)``).
    """
    owner = "turnstile_space_optimal_lrf"
    sketch = sketch_options(sketch, owner)  # its fields refused under this function's name
    M = sp.coo_matrix(check_matrix(A, owner))
    state = TurnstileSpaceOptimalLRF(M.shape, k, **state_keywords(
        TurnstileSpaceOptimalLRF.__init__, locals()))
    stream_entries(state, M, batch_size)
    return state.release(singular_values)
