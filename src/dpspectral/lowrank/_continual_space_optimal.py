"""Continual release under Priv1 (Upadhyay, NeurIPS 2018, Theorem 51): the binary tree mechanism over
Figure 5's sketches.

Time step tau (1-based, up to the horizon T) carries a batch of entry updates. The dyadic node
``nu = (level l, index j)`` covers the steps ``[j 2^l + 1, (j + 1) 2^l]`` and, once complete, is released
as the Priv1 sketches of ``A_nu`` (the sum of its steps' updates):

* ``Y_c^nu = A_nu Omega_1 + sigma_min G^nu`` (input perturbation; ``Omega_1`` (n x t) is secret and
  **shared by every node**, ``G^nu`` (m x t) i.i.d. N(0, 1) is the node's own padding);
* ``Y_r^nu = Psi [A_nu, 0] + N1^nu`` and ``Z^nu = S [A_nu, 0] T^T + N2^nu`` (output perturbation);

with the shared public sketches Psi, S, T. The release at tau sums the ``p = popcount(tau)`` nodes of
the prefix ``[1, tau]`` (:func:`~dpspectral.lowrank._continual.dyadic_nodes`): ``Y_c = A_tau Omega_1 +
sigma_min sqrt(p) G`` in law, and with the public padding ``sigma_min sqrt(p) [0, I]`` added to ``Y_r``
and Z the three are the one-shot sketches of ``[A_tau, sigma_min sqrt(p) I]`` with noise std
``sqrt(p)`` times the node's; steps 3-6 of the one-shot algorithm follow (post-processing).

The privacy proof (why sharing Omega_1 is sound here, and for which neighbouring streams) is in the
class's Privacy section and in ``docs/algorithms/lowrank.md``. Memory: the L open nodes' exact sketches
(secret) and the at most L released prefix nodes, ``2 L (m t + t (m + n) + v^2)`` words, plus ``Omega_1``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._constraints import SHARE, Interval, validated
from .._results import LowRankResult
from ..privacy._accounting import Accountant
from ..privacy._budget import Relation
from ..privacy._pipeline import Releaser
from ..privacy._template import RunSettings, charge_at_creation
from ._continual import dyadic_nodes, tree_levels
from ._factorization import (
    PRIVATE_LRF_TABLE,
    Calibration,
    SingularValues,
    _result,
    _seed,
    _space_optimal_sketches,
    add_joint,
    check_matrix,
    space_optimal_finish,
    space_optimal_noise,
)
from ._one_call import state_keywords
from ._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options
from ._streaming import STREAM_NOTE, check_entries, check_singular_values, state_inputs

__all__ = ["ContinualSpaceOptimalLRF", "continual_space_optimal_lrf"]


class ContinualSpaceOptimalLRF:
    """Private-Space-Optimal-LRF under continual release (Priv1; Theorem 51), a factorization per step.

    Parameters
    ----------
    shape : tuple of int (m, n)
        Shape of the streamed matrix (public). Not transposed: the padding ``[A, sigma_min I_m]`` is on
        the side of the rows, so that a stream of whole rows is covered (Privacy).
    rank : int
        k in [1, min(m, n)].
    horizon : int
        T, the number of steps (public).
    epsilon, delta, calibration, alpha, sketch, bound, input_share, accountant, random_state
        As in :class:`~dpspectral.lowrank._turnstile_space_optimal.TurnstileSpaceOptimalLRF`; the whole
        horizon is charged at initialisation.

    Privacy
    -------
    Relation Priv1 (``b u v^T``, unit u, v), for the whole sequence of releases, between streams
    (a) whose batches differ at one step by ``b u v^T`` (event level), or (b) that build matrices
    ``A - A' = b u v^T`` when each row of A is updated at one step only (one row per step, as
    :func:`continual_space_optimal_lrf`). Let ``L = tree_levels(T)`` and stack every node's matrix into
    ``𝒜 = [A_nu]_nu`` (rows: the nodes' m rows one after the other). All node sketches together are
    ``Y = [𝒜, sigma_min I] [Omega_1; G^nu ...]``, ``Psi_blk [𝒜, 0]`` and the Z's: the one-shot
    Priv1 sketches of 𝒜 (block-wise Psi, S). In both cases the difference of the stacked matrices is
    rank one, ``𝒟 = b [u_nu]_nu v^T`` with ``u_nu = u`` on the L nodes that hold the step (a) or ``u_nu``
    = u restricted to the node's rows (b); each row is in exactly one node per level, so
    ``||[u_nu]||^2 <= L``: a Priv1 change of scale ``b sqrt(L)``. Hence (1) the BBDS accountant (which
    depends on t and ``sigma_min / scale`` only, not on the number of rows) at ``sigma_min = b sqrt(L)
    min_sigma_min(eps_c, delta_c, t)``; (2) ``sum_nu ||Psi u_nu||^2 = ||Psi G^{1/2}||_F^2 <= c_t L`` for
    ``G = sum_nu u_nu u_nu^T`` (trace <= L; Laurent–Massart for a fixed matrix) and likewise
    ``sum_nu ||S u_nu||^2 ||T z||^2 <= c_S c_T L``: one Gaussian mechanism of sensitivity
    ``b sqrt(L) sqrt(c_t + c_S c_T)`` over all nodes. These are the events of
    :func:`~dpspectral.lowrank._factorization.space_optimal_noise` at ``bound = b sqrt(L)``, charged once.
    A column-wise stream (each column at one step) is **not** covered: its node differences ``u v_nu^T``
    do not stack into a rank-one matrix. The stream must not depend on the sketches (non-adaptive).
    """

    mechanism = "continual_space_optimal_lrf"

    @sketch_keywords
    @validated({**PRIVATE_LRF_TABLE, "input_share": SHARE,
                "horizon": Interval(1, None, "left", integer=True)}, owner="ContinualSpaceOptimalLRF")
    def __init__(self, shape: tuple[int, int], rank: int, horizon: int, *, epsilon: float, delta: float,
                 relation: Relation | str = "priv1", calibration: Calibration = "tight", alpha: float = 0.25,
                 sketch: Sketch | None = None, bound: float = 1.0, input_share: float = 0.5,
                 accountant: Accountant | None = None, random_state: Any = None) -> None:
        owner = type(self).__name__
        got = state_inputs(shape, rank, epsilon=epsilon, delta=delta, relation=relation,
                           allowed=(Relation.PRIV1,), alpha=alpha, sketch=sketch, owner=owner, oriented=False,
                           padded=True)
        budget, rel, options, m, n = got.budget, got.relation, got.sketch, got.m, got.n
        self.rank, self.sizes = got.rank, got.sizes
        self.shape, self.horizon, self.levels, self.time = (m, n), int(horizon), tree_levels(horizon), 0
        so = space_optimal_noise(self.mechanism, budget, rel, self.sizes, (m, n),
                                 bound=float(bound) * math.sqrt(self.levels), calibration=str(calibration),
                                 alpha=float(alpha), input_share=float(input_share),
                                 sketch_failure_share=failure_share_of(options))
        self._so = dataclasses.replace(so, plan=dataclasses.replace(
            so.plan, notes=(*so.plan.notes, STREAM_NOTE, f"Binary tree over T = {self.horizon} steps, L = "
                            f"{self.levels} levels: sigma_min and the noise set for scale b sqrt(L).")))
        self._sketch_seed = _seed(options.seed, owner=owner)
        self._Psi, self._S, self._T = _space_optimal_sketches(m, m + n, self.sizes, self._sketch_seed)
        # the whole horizon, charged once; Omega's secret seed drawn then
        omega_seed, self.privacy, self._source = charge_at_creation(
            self._so.plan, RunSettings(accountant, random_state),
            lambda releaser: releaser.integers(0, 2**63 - 1),
            facts={"mechanism": self.mechanism, "budget": budget, "calibration": str(calibration)},
            stacklevel=7)
        t = self._Psi.shape[0]
        self._Omega = np.random.default_rng(omega_seed).standard_normal((n, t))  # secret, shared
        self._open = [self._zeros() for _ in range(self.levels)]  # exact sketches of each level's open node
        self._nodes: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _zeros(self) -> list[np.ndarray]:
        m, n = self.shape
        t = self._Psi.shape[0]
        return [np.zeros((m, t)), np.zeros((t, m + n)), np.zeros((self._S.shape[0], self._T.shape[0]))]

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"{type(self).__name__} cannot be pickled or copied: it holds the secret Omega_1.")

    def step(self, rows: Any = (), cols: Any = (), values: Any = ()) -> None:
        """Advance time by one step whose updates are ``A[rows[e], cols[e]] += values[e]`` (may be empty).

        The batch is validated first (a ValueError names the kind of problem, never an entry; nothing is
        applied). The nodes that end at this step are released (noise drawn by the charged plan).
        """
        owner = f"{type(self).__name__}.step"
        if self.time >= self.horizon:
            raise ValueError(f"{owner}: the horizon T = {self.horizon} is reached; no step is left.")
        r, c, x = check_entries(rows, cols, values, self.shape, owner)
        (m, n), t = self.shape, self._Psi.shape[0]
        E = sp.csr_matrix((x, (r, c)), shape=(m, n))
        with np.errstate(over="ignore", invalid="ignore"):
            d_r = np.hstack([np.asarray(E.T @ self._Psi.T).T, np.zeros((t, m))])  # Psi [E, 0]
            inc = [np.asarray(E @ self._Omega), d_r, self._S @ np.asarray(E @ self._T[:, :n].T)]
        if not all(np.isfinite(a).all() for a in inc):
            raise ValueError(f"{owner}: the batch overflows float64 in the sketches. Nothing was applied.")
        self.time += 1
        for level in range(self.levels):
            for acc, d in zip(self._open[level], inc, strict=True):
                acc += d
            if self.time % (1 << level) == 0:  # the level's node ends here: release it, open the next
                self._nodes[(level, self.time // (1 << level) - 1)] = self._release_node(self._open[level])
                self._open[level] = self._zeros()
        keep = set(dyadic_nodes(self.time))
        self._nodes = {key: val for key, val in self._nodes.items() if key in keep}

    def _release_node(self, exact: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One node's released sketches, drawn by the plan charged at initialisation."""
        releaser = Releaser.of_charged_plan(self._so.plan, self._source)
        Y_c = exact[0] + self._so.sigma_min * releaser.standard_normal(exact[0].shape)
        if len(self._so.plan.releases) == 1:
            Y_r, Z = add_joint(releaser, "sketches", exact[1:])
        else:
            Y_r, Z = releaser.add("Y_r", exact[1]), releaser.add("Z", exact[2])
        return Y_c, Y_r, Z

    def release(self, singular_values: SingularValues = "shrink") -> LowRankResult:
        """The rank-k factorization of the matrix built up to now (post-processing of released nodes).

        Returns
        -------
        LowRankResult
            U (m, k), S (k,), V (n, k); diagnostics ``time``, ``horizon``, ``levels``, ``nodes``,
            ``sigma_min`` and ``sigma`` (per node), ``t``, ``v``.
        """
        check_singular_values(singular_values, "ContinualSpaceOptimalLRF.release")
        if self.time == 0:
            raise ValueError("ContinualSpaceOptimalLRF.release: no step yet (call step first).")
        m, n = self.shape
        nodes = dyadic_nodes(self.time)
        Y_c, Y_r, Z = (sum(self._nodes[key][i] for key in nodes) for i in range(3))
        root = math.sqrt(len(nodes))
        so = dataclasses.replace(self._so, sigma_min=root * self._so.sigma_min,
                                 sigma_y=root * self._so.sigma_y, sigma_z=root * self._so.sigma_z)
        Y_r = np.asarray(Y_r) + np.hstack([np.zeros((self._Psi.shape[0], n)), so.sigma_min * self._Psi])
        Z = Z + so.sigma_min * (self._S @ self._T[:, n:].T)
        U, s, V = space_optimal_finish(np.asarray(Y_c), Y_r, Z, self._S, self._T, self.rank, n, so,
                                        singular_values)
        diag = {"time": self.time, "horizon": self.horizon, "levels": self.levels, "nodes": nodes,
                "sigma_min": self._so.sigma_min, "sigma": self._so.sigma_y, "t": self.sizes.t,
                "v": self.sizes.v}
        return _result(U, s, V, False, self.privacy, diag)


@sketch_keywords
@validated({**PRIVATE_LRF_TABLE, "input_share": SHARE})
def continual_space_optimal_lrf(
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
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Continual release under Priv1 with one row of A per step (horizon m); the result is the release at T.

    Every intermediate release is available from :class:`ContinualSpaceOptimalLRF` (``step`` then
    ``release``); this function, the registry's entry, returns the last one.

    Privacy
    -------
    Priv1 (``A - A' = b u v^T``) on the whole matrix for the whole sequence of releases: case (b) of
    :class:`ContinualSpaceOptimalLRF`'s Privacy section (each row updated at one step).
    """
    owner = "continual_space_optimal_lrf"
    sketch = sketch_options(sketch, owner)  # its fields refused under this function's name
    M = sp.csr_matrix(check_matrix(A, owner))
    m = M.shape[0]
    init = ContinualSpaceOptimalLRF.__init__
    state = ContinualSpaceOptimalLRF(M.shape, k, m, **state_keywords(init, locals()))
    for i in range(m):
        lo, hi = M.indptr[i], M.indptr[i + 1]
        state.step(np.full(hi - lo, i), M.indices[lo:hi], M.data[lo:hi])
    return state.release()
