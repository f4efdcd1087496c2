"""Private-Frobenius-Continual-LRF (Upadhyay, NeurIPS 2018, Figure 8; Theorem 50, Priv2 hence Priv1).

Continual release over T time steps with the binary tree mechanism (Chan, Shi and Song 2011; Dwork, Naor,
Pitassi and Rothblum 2010) on the Priv2 sketches of
:func:`~dpspectral.lowrank._factorization.private_frobenius_lrf` (spec §7,
``../shared/papers/spec-lowrank.md``). Time step tau (1-based) carries a batch of entry updates ``E_tau``;
the dyadic node ``(level l, index j)`` covers the steps ``[j 2^l + 1, (j + 1) 2^l]`` and holds the noisy
sketches ``(A_nu Phi + N1^nu, S A_nu + N2^nu)`` of ``A_nu = sum of E_tau over its steps``, with its own
noise and the shared public sketches Phi, S. The prefix ``[1, tau]`` is the disjoint union of the nodes of
the binary digits of tau (:func:`dyadic_nodes`, at most L of them); the release at tau sums them and runs
:func:`~dpspectral.lowrank._factorization.frobenius_release`.

Memory: only the nodes of the current prefix are kept (at most L = ceil(log2 T) + 1 sketch pairs). When
a node completes, its children are the nodes it replaces in the prefix; its exact sum is recovered from
them as ``(noisy child - child noise)``, the child noise being regenerated from its seed. Node noise is
drawn from ``default_rng(SeedSequence([noise_seed, level, index]))``. The noise seed is secret: it is
never shown, and a :class:`ContinualLRF` cannot be pickled or copied (its copy would carry the seed).
With ``random_state="secure"`` the node noise cannot be regenerated: the exact node sums of the prefix
are kept beside the noisy ones (twice the memory), and each node is released by the secure source.

The whole tree is charged once, at initialisation (one :class:`~dpspectral.privacy._pipeline.ReleasePlan`
whose release ``"sketches"`` is one node); each step draws its node's noise through a
:class:`~dpspectral.privacy._pipeline.Releaser` of that charged plan, by its planned name and scale.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._constraints import Interval, validated
from .._results import LowRankResult
from ..privacy._accounting import Accountant
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._noise import seeded_source
from ..privacy._noise_base import NoiseSource
from ..privacy._pipeline import ReleasePlan, Releaser
from ..privacy._template import RunSettings, charge_at_creation
from ._factorization import (
    PRIVATE_LRF_TABLE,
    SKETCH_NOTE,
    Calibration,
    FrobeniusNoise,
    _result,
    _seed,
    add_joint,
    check_matrix,
    frobenius_noise,
    frobenius_plan,
    frobenius_release,
    frobenius_sketches,
    split_joint,
)
from ._one_call import state_keywords
from ._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options
from ._streaming import _entry_kernel, _is_int, _shrink_sigma, check_entries, read_only, state_inputs

__all__ = ["ContinualLRF", "continual_lrf", "dyadic_nodes", "tree_levels"]


def _secure(source: NoiseSource) -> bool:
    return source.name == "secure"


def _check_noise_seed(noise_seed: Any, secure: bool, owner: str) -> None:
    """None or an int >= 0, for the seeded source only; the message never echoes the (secret) seed."""
    if noise_seed is None:
        return
    if not _is_int(noise_seed) or noise_seed < 0:
        raise ValueError(
            f"The 'noise_seed' parameter of {owner} must be None or an int >= 0. Got a "
            f"{type(noise_seed).__name__} instead."
        )
    if secure:
        raise ValueError(
            f"The 'noise_seed' parameter of {owner} seeds reproducible node noise; with "
            "random_state='secure' the node noise comes from OS entropy: give no noise_seed."
        )


@validated({"horizon": Interval(1, None, "left", integer=True)})
def tree_levels(horizon: int) -> int:
    """``L = ceil(log2 T) + 1``: the number of dyadic nodes that contain a time step in [1, T]."""
    return (int(horizon) - 1).bit_length() + 1


@validated({"tau": Interval(0, None, "left", integer=True)})
def dyadic_nodes(tau: int) -> list[tuple[int, int]]:
    """The nodes ``(level, index)`` whose disjoint union is ``[1, tau]``, in time order (one per set bit)."""
    tau = int(tau)
    out, start = [], 0
    for level in range(tau.bit_length() - 1, -1, -1):
        if tau >> level & 1:
            out.append((level, start >> level))
            start += 1 << level
    return out


class ContinualLRF:
    """Continual release of Private-Frobenius-LRF over ``horizon`` time steps (binary tree mechanism).

    Parameters
    ----------
    shape : tuple of int (m, n)
        Shape of the streamed matrix (public). For m > n the sketches are kept for ``A^T`` (as in
        :func:`~dpspectral.lowrank._factorization.private_frobenius_lrf`).
    rank : int
        k in [1, min(m, n)].
    horizon : int
        T, the number of time steps (public).
    epsilon, delta : float
        The target for the whole sequence of releases; delta in (0, 1).
    relation : {"priv2", "priv1"}
    calibration : {"tight", "paper"}
    alpha : float in (0, 1)
        Default sketch sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)``, capped by min(m, n).
    sketch : Sketch, optional
        The sketches (:class:`~dpspectral.lowrank.Sketch`): t the columns of ``Y_c = A Phi`` (Phi:
        n x t), v the rows of ``Z = S A`` (S: v x m) of the rank-k solve, the failure share and the
        public seed. The seed is not shown before the horizon is reached (see Privacy).
    bound : float
        Public scale b: neighbouring streams differ in the batch of one time step, by a matrix of Frobenius
        norm at most b.
    noise_seed : int, optional
        Seed of the node noises (drawn from ``random_state`` if None). **Secret**: whoever knows it can
        remove the noise. Give it only to reproduce a run in a test; it is never shown. Not with
        ``random_state="secure"``.
    accountant : Accountant, optional
        The whole continual release is recorded at initialisation, before any noise is drawn.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret. ``"secure"``: OS entropy and exact discrete Gaussian node noise.

    Attributes
    ----------
    time : int
        tau, the number of steps taken (0 before the first).
    levels : int
        L = ceil(log2 T) + 1.
    sigma : float
        Noise std of every entry of one node's sketches; a release at tau carries popcount(tau) <= L nodes,
        noise std ``sqrt(popcount(tau)) sigma <= sqrt(L) sigma``.
    sensitivity : float
        Joint L2 sensitivity of all the nodes, ``sqrt(L) b sqrt(c_t + c_v)``.
    privacy : PrivacyReport

    Privacy
    -------
    Relation Priv2 on streams (event level): two streams are neighbours if they differ in the batch of one
    time step, by E with ``||E||_F <= b`` (so every prefix matrix differs by E: Priv2 at every time; hence
    Priv1). E enters the L nodes that contain its step, each as ``(E Phi, S E)``; the same two sketch
    norm bounds ``||E Phi||_F^2 <= c_t b^2``, ``||S E||_F^2 <= c_v b^2`` (failure ``2 delta_s``) bound all of
    them, so the concatenation of all nodes is one Gaussian mechanism with L2 sensitivity
    ``sqrt(L) b sqrt(c_t + c_v)`` (:func:`~dpspectral.lowrank._factorization.frobenius_noise` with
    ``levels=L``). Events ``GaussianDpEvent(sigma / Delta)`` and ``EpsilonDeltaDpEvent(0, 2 delta_s)``, spent
    once at initialisation; every release, at every time, is post-processing of the nodes. Streams that
    differ at several steps are not covered by this calibration.

    *Non-adaptive stream.* The per-pair sketch bounds hold for a stream fixed in advance: it must not
    depend on the drawn sketch, nor on the releases (which depend on it). The sketch (its seed,
    :meth:`sketches`) is therefore not shown before the horizon is reached, and it is fresh OS entropy
    unless ``sketch_seed`` is declared; the report's notes state the assumption. The secret noise
    seed is never shown, and the object cannot be pickled (a copy would carry it).
    """

    mechanism = "continual_lrf"

    @sketch_keywords
    @validated({**PRIVATE_LRF_TABLE, "horizon": Interval(1, None, "left", integer=True)},
               owner="ContinualLRF")
    def __init__(
        self,
        shape: tuple[int, int],
        rank: int,
        horizon: int,
        *,
        epsilon: float,
        delta: float,
        relation: Relation | str = "priv2",
        calibration: Calibration = "tight",
        alpha: float = 0.25,
        sketch: Sketch | None = None,
        bound: float = 1.0,
        noise_seed: int | None = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
    ) -> None:
        owner = type(self).__name__
        got = state_inputs(shape, rank, epsilon=epsilon, delta=delta, relation=relation,
                           allowed=(Relation.PRIV2, Relation.PRIV1), alpha=alpha, sketch=sketch, owner=owner)
        budget, rel, options, m, n = got.budget, got.relation, got.sketch, got.m, got.n
        self.levels = tree_levels(horizon)
        self.horizon = int(horizon)
        self.shape, self.rank, self.sizes = got.shape, got.rank, got.sizes
        self.transposed = got.shape[0] > got.shape[1]
        self._inner_shape = (m, n)
        noise = self._plan(budget, rel, calibration=calibration, alpha=float(alpha), bound=float(bound),
                           sketch_failure_share=failure_share_of(options))
        self._sketch_seed = _seed(options.seed, owner=owner)
        secure = isinstance(random_state, str) and random_state == "secure"
        _check_noise_seed(noise_seed, secure, owner)
        # the whole tree, charged once; the node noises are drawn at each step: from the seed fixed
        # here, or the secure source
        seed, self.privacy, source = charge_at_creation(
            self._release_plan, RunSettings(accountant, random_state),
            lambda releaser: (noise_seed if noise_seed is not None or secure
                              else releaser.integers(0, 2**63 - 1)),
            facts={"mechanism": self.mechanism, "budget": budget, "calibration": calibration},
            stacklevel=6)
        self._noise_seed = None if seed is None else int(seed)
        self._secure_source: NoiseSource | None = source if _secure(source) else None
        self._exact: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # level -> exact (Y, Z^T), secure only
        self.sigma = noise.sigma
        self.sensitivity = noise.sensitivity
        self.bound = float(bound)
        self._Phi, self._S = frobenius_sketches(m, n, self.sizes, self._sketch_seed)
        self._ST = np.ascontiguousarray(self._S.T)
        self.time = 0
        self._nodes: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # level -> (Y, Z^T), noisy

    def _plan(self, budget: PrivacyBudget, rel: Relation, *, calibration: str, alpha: float, bound: float,
              sketch_failure_share: float) -> FrobeniusNoise:
        """The per-node noise for the joint sensitivity of the L levels, and the plan of the whole tree.

        The plan's release ``"sketches"`` is one node, with the sensitivity of one node's share
        ``Delta / sqrt(L)`` (a change enters L nodes: the secure source's rounding is accounted per node
        for that share, so over the L nodes for the joint ``Delta``).
        """
        noise = frobenius_noise(budget.epsilon, budget.delta, self.sizes, bound=bound,
                                calibration=calibration,  # type: ignore[arg-type]
                                alpha=alpha, sketch_failure_share=sketch_failure_share, levels=self.levels,
                                owner=type(self).__name__, shape=self._inner_shape)
        notes = (
            f"Binary tree over T = {self.horizon} steps: L = {self.levels} levels, per-node noise for "
            "joint sensitivity sqrt(L) Delta (event-level neighbours).",
            *noise.notes,
            "Non-adaptive stream: the guarantee assumes that the stream (every step's batch, and which step "
            "differs between neighbours) is fixed in advance and does not depend on the drawn sketch or on "
            "the releases; the sketch seed is fresh OS entropy and is not shown before the horizon, unless "
            "the caller declared sketch_seed. " + SKETCH_NOTE,
        )
        per_node = noise.sensitivity / math.sqrt(self.levels)
        self._release_plan: ReleasePlan = frobenius_plan(self.mechanism, rel, noise, notes,
                                                         per_release_sensitivity=per_node)
        return noise

    # -- reading -------------------------------------------------------------------------------
    def _require_horizon(self, what: str) -> None:
        if self.time < self.horizon:
            raise ValueError(
                f"{type(self).__name__}.{what}: the sketch is not shown before the horizon is reached "
                "(a stream that depends on the drawn sketch breaks the per-pair sensitivity). Declare a "
                "public sketch_seed when the state is created if you need it earlier."
            )

    @property
    def sketch_seed(self) -> int:
        """The seed of the sketches (shown once the horizon is reached)."""
        self._require_horizon("sketch_seed")
        return self._sketch_seed

    def sketches(self) -> tuple[np.ndarray, np.ndarray]:
        """The sketches ``(Phi, S)`` of the (possibly transposed) state, read-only (once at the horizon)."""
        self._require_horizon("sketches")
        return read_only(self._Phi), read_only(self._S)

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(
            f"{type(self).__name__} holds the secret noise seed and cannot be pickled or copied: publish "
            "its releases, not the object."
        )

    @property
    def nodes(self) -> list[tuple[int, int]]:
        """The nodes ``(level, index)`` kept now: those of the prefix ``[1, time]``, in time order."""
        return dyadic_nodes(self.time)

    def _node_releaser(self, level: int, index: int) -> Releaser:
        """The releaser of node (level, index) under the plan charged at initialisation.

        Seeded: its noise source is ``default_rng(SeedSequence([noise_seed, level, index]))``, so the
        noise of a node can be regenerated (internal: the exact node sums are recovered from it). Secure:
        the secure source (nothing can be regenerated; the exact sums are kept instead).
        """
        if self._secure_source is not None:
            return Releaser.of_charged_plan(self._release_plan, self._secure_source)
        assert self._noise_seed is not None
        g = np.random.default_rng(np.random.SeedSequence([self._noise_seed, int(level), int(index)]))
        return Releaser.of_charged_plan(self._release_plan, seeded_source(g))

    def _node_noise(self, level: int, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The seeded noise ``(N1, N2)`` of node (level, index): m x t and v x n (of ``A^T`` if m > n)."""
        m, n = self._inner_shape
        t, v = self.sizes.t, self.sizes.v
        flat = self._node_releaser(level, index).gaussian("sketches", m * t + v * n)
        N1, N2 = split_joint(flat, [(m, t), (v, n)])
        return N1, N2

    def current_sketches(self) -> tuple[np.ndarray, np.ndarray]:
        """The noisy sketches ``(Y_c, Z)`` of the prefix ``[1, time]``: the sum of its nodes."""
        if self.time == 0:
            raise ValueError(f"{type(self).__name__}: nothing to release before the first step.")
        Y: np.ndarray | None = None
        ZT: np.ndarray | None = None
        for level in sorted(self._nodes, reverse=True):  # time order
            y, zt = self._nodes[level]
            Y = y.copy() if Y is None else Y + y
            ZT = zt.copy() if ZT is None else ZT + zt
        assert Y is not None and ZT is not None
        return Y, ZT.T

    # -- time steps ----------------------------------------------------------------------------
    def step(self, rows: Any = (), cols: Any = (), values: Any = ()) -> None:
        """Advance time by one with the batch ``A[rows[e], cols[e]] += values[e]`` (may be empty).

        The batch is validated as in :meth:`TurnstileLRF.update_many
        <dpspectral.lowrank._streaming.TurnstileLRF.update_many>`; on an error (or past the horizon) a
        ValueError is raised and the state and the time are unchanged.
        """
        owner = f"{type(self).__name__}.step"
        if self.time >= self.horizon:
            raise ValueError(f"{owner}: the horizon T = {self.horizon} is reached; no more steps.")
        r, c, x = check_entries(rows, cols, values, self.shape, owner)
        if self.transposed:
            r, c = c, r
        tau = self.time + 1
        level = (tau & -tau).bit_length() - 1  # the node completed at tau: [tau - 2^level + 1, tau]
        if self._secure_source is None:
            Y, ZT = self._seeded_node(tau, level, r, c, x)
            exact = None
        else:
            Y, ZT, exact = self._secure_node(tau, level, r, c, x)
        if not (np.isfinite(Y).all() and np.isfinite(ZT).all()):
            raise ValueError(f"{owner}: the batch overflows float64 in the sketches. Nothing was applied.")
        for child in range(level):
            del self._nodes[child]
            self._exact.pop(child, None)
        self._nodes[level] = (Y, ZT)
        if exact is not None:
            self._exact[level] = exact
        self.time = tau

    def _batch_sums(self, r: np.ndarray, c: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact sketches ``(E Phi, (S E)^T)`` of one step's batch E."""
        m, n = self._inner_shape
        Y = np.zeros((m, self.sizes.t))
        ZT = np.zeros((n, self.sizes.v))
        if x.size:
            _entry_kernel(Y, ZT, self._Phi, self._ST, r, c, x)
        return Y, ZT

    def _seeded_node(self, tau: int, level: int, r: np.ndarray, c: np.ndarray,
                     x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The noisy node completed at tau: its children's exact sums (noisy - regenerated noise), plus
        the batch, plus its own noise (fixed draws and arithmetic: seeded results repeat across versions)."""
        Y, ZT = self._batch_sums(r, c, x)
        for child in range(level):  # the prefix nodes it replaces: exact sums = noisy - own noise
            y, zt = self._nodes[child]
            N1, N2 = self._node_noise(child, ((tau - 1) >> child) - 1)
            Y += y - N1
            ZT += zt - N2.T
        N1, N2 = self._node_noise(level, (tau >> level) - 1)
        Y += N1
        ZT += N2.T
        return Y, ZT

    def _secure_node(self, tau: int, level: int, r: np.ndarray, c: np.ndarray,
                     x: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """The node completed at tau, released by the secure source on its exact sum (kept beside it)."""
        Y, ZT = self._batch_sums(r, c, x)
        for child in range(level):
            y, zt = self._exact[child]
            Y += y
            ZT += zt
        noisy_Y, noisy_Z = add_joint(self._node_releaser(level, (tau >> level) - 1), "sketches", [Y, ZT.T])
        return noisy_Y, np.ascontiguousarray(noisy_Z.T), (Y, ZT)

    def _fill_to_horizon(self, M: sp.csr_matrix) -> None:
        """From time 0, all T steps at once for ``M`` (T x n, row tau - 1 the batch of step tau, in A's
        orientation): only the nodes of the prefix ``[1, T]`` (its binary digits) are formed, each the
        exact sketch of its row block plus its own noise, the very node noise that :meth:`step` draws
        (seeded: the same ``(noise_seed, level, index)`` streams), so the release at T equals the
        step-by-step one up to rounding (tested). O(nnz (t + v) + L (m t + v n)) instead of
        O(T (m t + v n)): the intermediate nodes, which only intermediate releases read, are skipped.
        """
        assert self.time == 0 and M.shape[0] == self.horizon
        T = self.horizon
        nodes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for level, index in dyadic_nodes(T):
            lo, hi = index << level, (index + 1) << level  # rows lo .. hi - 1 (steps lo + 1 .. hi)
            blk = M[lo:hi].tocoo()
            r, c = blk.row.astype(np.int64) + lo, blk.col.astype(np.int64)
            if self.transposed:
                r, c = c, r
            Y, ZT = self._batch_sums(r, c, np.asarray(blk.data, dtype=float))
            if self._secure_source is None:
                N1, N2 = self._node_noise(level, index)
                nodes[level] = (Y + N1, ZT + N2.T)
            else:
                noisy_Y, noisy_Z = add_joint(self._node_releaser(level, index), "sketches", [Y, ZT.T])
                nodes[level] = (noisy_Y, np.ascontiguousarray(noisy_Z.T))
                self._exact[level] = (Y, ZT)
            if not (np.isfinite(nodes[level][0]).all() and np.isfinite(nodes[level][1]).all()):
                raise ValueError(f"{type(self).__name__}: the matrix overflows float64 in the sketches.")
        self._nodes = nodes
        self.time = T

    # -- releases ------------------------------------------------------------------------------
    def release(self, singular_values: str = "shrink") -> LowRankResult:
        """The rank-k factorization of the prefix matrix at the current time (post-processing).

        Parameters
        ----------
        singular_values : {"shrink", "raw"}
            As in :meth:`~dpspectral.lowrank.TurnstileLRF.release`, at the noise edge of the summed
            nodes' noise (std ``sqrt(len(nodes)) sigma``).

        Returns
        -------
        LowRankResult
            U (m, k), S (k,), V (n, k); diagnostics ``time``, ``horizon``, ``levels``, ``nodes``, ``sigma``
            (per node), ``noise_std`` (``sqrt(len(nodes)) sigma``), ``sensitivity``, ``t``, ``v``,
            ``transposed`` and, at the horizon only, ``sketch_seed``.
        """
        nodes = self.nodes
        std = float(np.sqrt(len(nodes))) * self.sigma if self.time else 0.0
        sigma = _shrink_sigma(singular_values, std, "ContinualLRF.release")
        Y, Z = self.current_sketches()
        U, s, V = frobenius_release(Y, Z, self._S, self.rank, sigma)
        diag = {
            "time": self.time,
            "horizon": self.horizon,
            "levels": self.levels,
            "nodes": nodes,
            "sigma": self.sigma,
            "noise_std": float(np.sqrt(len(nodes))) * self.sigma,
            "sensitivity": self.sensitivity,
            "t": self.sizes.t,
            "v": self.sizes.v,
            "transposed": self.transposed,
        }
        if self.time == self.horizon:
            diag["sketch_seed"] = self._sketch_seed
        return _result(U, s, V, self.transposed, self.privacy, diag)

    def stream(self, batches: Iterable[tuple[Any, Any, Any]]) -> Iterator[LowRankResult]:
        """For each ``(rows, cols, values)`` batch: :meth:`step`, then yield :meth:`release`."""
        for rows, cols, values in batches:
            self.step(rows, cols, values)
            yield self.release()

    def __repr__(self) -> str:
        m, n = self.shape
        return (
            f"{type(self).__name__}(shape=({m}, {n}), rank={self.rank}, horizon={self.horizon}, "
            f"time={self.time}, levels={self.levels}, epsilon={self.privacy.epsilon:.4g})"
        )


@sketch_keywords
@validated(PRIVATE_LRF_TABLE)
def continual_lrf(
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
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Continual release with one row of A per time step (horizon = m); the result is the release at T.

    A :class:`ContinualLRF` of A's shape and horizon m receives row tau at step tau; every intermediate
    release (the factorization of the first tau rows) is available from the class
    (:meth:`ContinualLRF.stream`);
    this function, the registry's entry for the continual model, returns the last one.

    Privacy
    -------
    Priv2 (hence Priv1) on the whole matrix, for the whole sequence of releases. Each entry of A is
    updated at exactly one step (its row's), so for neighbours ``||A - A'||_F <= b`` the node differences
    ``E_nu`` of one tree level have disjoint row supports and ``sum_nu ||E_nu||_F^2 = ||A - A'||_F^2``: the
    concatenation of all L levels' node differences is one fixed matrix of squared Frobenius norm at most
    ``L b^2``, and the two Laurent–Massart bounds on it (failure ``2 delta_s``) give the joint sensitivity
    ``sqrt(L) b sqrt(c_t + c_v)`` for which the class calibrates (its event-level guarantee is the case of
    one differing row).
    """
    owner = "continual_lrf"
    sketch = sketch_options(sketch, owner)  # its fields refused under this function's name
    M = sp.csr_matrix(check_matrix(A, owner))
    m = M.shape[0]
    state = ContinualLRF(M.shape, k, m, **state_keywords(ContinualLRF.__init__, locals()))
    state._fill_to_horizon(M)  # the release at T without the intermediate nodes (see the method)
    return state.release()
