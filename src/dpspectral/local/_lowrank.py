"""Private-Local-LRF (Upadhyay, NeurIPS 2018, Figure 9 / Theorem 57): non-interactive LDP low-rank PCA.

:func:`private_local_lrf`'s default (``protocol="gram"``) is not the paper's: each user sends
the Local Gaussian report of its row and the server releases V and S (the local model's limit; the
paper's linear reports stay at random level at any practical epsilon, docs/algorithms/lowrank.md). The
paper's protocol below is ``protocol="sketch"`` (and :func:`local_lrf_report` / :func:`local_lrf_aggregate`).

Every user holds one row of the m x n matrix A. Protocol (``../shared/papers/spec-lowrank.md`` §8,
RECONSTRUCTED; the algorithm box lost its formulas)::

    server -> all users (one message): a seed for the public Gaussian sketches
             Phi (n x t, N(0, 1/t)),  S (v x m, N(0, 1/v)),  T (v x n, N(0, 1/v))
    user i (row a_i, clipped to norm <= C):
             y_i = a_i^T Phi + g_i          g_i ~ N(0, sigma_y^2)^{1 x t}
             Z_i = S[:, i] (T a_i)^T + G_i  G_i ~ N(0, sigma_z^2)^{v x v}        (t + v^2 floats)
    server:  Y_c = [y_1; ...; y_m] = A Phi + N1;   Z = sum_i Z_i = S A T^T + N3
             (N3: i.i.d. entries of std sqrt(m) sigma_z)
             U = orth(Y_c);  W = argmin_{rank <= k} ||Z - (S U) W||_F = V_s Sigma_s^+ [U_s^T Z]_k
             (SVD S U = U_s Sigma_s V_s^T);  output U^ = orth(U W) in R^{m x k}

The approximation of A is ``U^ U^^T A``; its guarantee form is ``||A - U^ U^^T A||_F <=
(1 + O(alpha)) ||A - [A]_k||_F + O(v sqrt(m) sigma_z)``, and the communication ``t + v^2`` words per
user does not depend on n.

Local sensitivity (one user; R-derive)
--------------------------------------
LDP neighbours: **any two rows a, a' of norm <= C** (the user's report must hide which one it
holds; C = ``row_norm``, every row being clipped to it by its own user), so ``E = a - a'`` has
``||E|| <= 2 C``. The sketches are drawn independently of the data, and for the fixed vector E:

* ``Phi^T E`` has i.i.d. ``N(0, ||E||^2 / t)`` entries, so ``||E^T Phi||^2 <= q_t ||E||^2``;
* ``||S[:, i] (T E)^T||_F = ||S[:, i]|| ||T E||``; ``||S[:, i]||^2`` (a column of a v x m
  ``N(0, 1/v)`` matrix) is ``chi^2_v / v``, so ``||S[:, i]||^2 <= q_v``; and ``T E`` has i.i.d.
  ``N(0, ||E||^2 / v)`` entries, so ``||T E||^2 <= q_v ||E||^2``;

each except with probability delta_s, where ``q_d = chi2.isf(delta_s, d) / d`` is the exact chi-square
quantile (:func:`~dpspectral.lowrank._sketches.chi2_quantile_factor`, never above the Laurent–Massart
``c_d`` of :func:`~dpspectral.lowrank._sketches.chi2_factor`). The report ``(y_i, Z_i)`` is therefore
one Gaussian mechanism of L2 sensitivity ``Delta = 2 C sqrt(q_t + q_v^2)`` for every fixed pair,
except with probability ``3 delta_s`` over the sketches: (epsilon, delta_g + 3 delta_s)-LDP, recorded
as ``GaussianDpEvent`` plus ``EpsilonDeltaDpEvent(0, 3 delta_s)``.

Seed caveat (spec §1): this is a per-pair bound over *random* sketches, not a worst case over
sketches. The seed must not be chosen adversarially (e.g. by an untrusted server that knows the
data); derive it from a trusted or committed public coin. The user never trusts the server's sketch
matrices: :func:`local_lrf_report` regenerates them from the public seed and refuses a setup whose
matrices differ (a server that sent ``Phi`` and ``T`` scaled by 100 would otherwise get a report
with epsilon ~ 139 instead of 0.46). The seed itself is public randomness, never drawn from a secret
generator (:func:`~dpspectral.privacy._pipeline.public_seed`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._constraints import (
    NOISE_PARAMETERS,
    NONE,
    PRIVACY_PARAMETERS,
    RANDOM_STATE,
    SHARE,
    Calibration,
    Interval,
    Options,
    Types,
    check_params,
    renamed,
    validated,
    without,
)
from .._linalg import fix_signs
from .._moments import accumulate
from .._results import LowRankResult
from .._rows import as_numeric_array, not_finite_error
from .._validation import gaussian_budget
from ..lowrank._factorization import check_matrix, check_rank
from ..lowrank._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options
from ..lowrank._sketches import (
    PAPER_SIZE_NAMES,
    chi2_quantile_factor,
    orth_columns,
    rank_k_left,
    sketch_matrix,
    sketch_sizes,
    svd_top_k,
)
from ..lowrank._subspace import RowSubspaceResult
from ..privacy._accounting import Accountant, EpsilonDeltaDpEvent, PrivacyReport
from ..privacy._budget import PrivacyBudget, Relation, as_relation
from ..privacy._clipping import NormViolation, check_row_norm, clip_rows, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser, public_seed
from ..privacy._template import Drawn, Mechanism, Released, Rows, RunSettings, run

__all__ = [
    "LocalLrfNoise",
    "LocalLrfReport",
    "LocalLrfSetup",
    "local_lrf_aggregate",
    "drawn_sensitivity",
    "local_lrf_noise",
    "local_lrf_noise_drawn",
    "local_lrf_report",
    "local_lrf_setup",
    "private_local_lrf",
]

Protocol = Literal["gram", "sketch"]

_OWNER = "private_local_lrf"

#: The relation of ``row_change=b``: one user's row moves by a vector of norm at most b, rows are not
#: clipped. It is not the local relation (any two rows within a public bound), so it needs its own
#: name: ``Relation.LOCAL_ROW_CHANGE`` once ``privacy/budget.py`` defines it. Until then the report
#: keeps ``Relation.LOCAL`` and its notes say, in words, that the guarantee is for a bounded change.
ROW_CHANGE_RELATION: Relation | None = getattr(Relation, "LOCAL_ROW_CHANGE", None)
ROW_CHANGE_NOTE = (
    "Relation local_row_change (not 'local'): with row_change=b each user's report hides a change of its "
    "row by a vector of norm <= b; rows are not clipped, so two arbitrary rows are NOT protected."
)
#: Bytes of one transmitted word (float64).
FLOAT_BYTES = 8
#: Upper bound on the noise entries generated at once when every user's v x v noise is drawn.
_NOISE_BLOCK_ELEMENTS = 1 << 22


# ----------------------------------------------------------------------------------------------
# public setup, noise plan, report
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LocalLrfSetup:
    """The server's single public message: the sketch sizes and the sketches derived from ``seed``.

    Attributes
    ----------
    m, n : int
        Number of users (rows) and of features.
    t, v : int
        Sketch sizes.
    seed : int
        Seed of the sketches (public; must come from a trusted or committed coin).
    Phi : ndarray of shape (n, t)
        i.i.d. ``N(0, 1/t)``.
    S : ndarray of shape (v, m)
        i.i.d. ``N(0, 1/v)``; user i uses its column ``S[:, i]``.
    T : ndarray of shape (v, n)
        i.i.d. ``N(0, 1/v)``.
    """

    m: int
    n: int
    t: int
    v: int
    seed: int
    Phi: np.ndarray
    S: np.ndarray
    T: np.ndarray

    @property
    def communication_floats(self) -> int:
        """Words one user sends: ``t + v^2`` (independent of n)."""
        return self.t + self.v * self.v

    @property
    def communication_bytes(self) -> int:
        """Bytes one user sends (float64 words)."""
        return FLOAT_BYTES * self.communication_floats


#: A count (users, features, sketch sizes): an int >= 1.
COUNT = Interval(1, None, "left", integer=True)
#: A declared public seed, or None (fresh OS entropy, :func:`~dpspectral.privacy._pipeline.public_seed`).
SEED = [NONE, Interval(0, None, "left", integer=True)]
#: The accuracy parameter alpha of the sketch sizes and the paper's formulas.
ALPHA = Interval(0, 1, "neither")
SKETCH_SENSITIVITY = Options(("per_pair", "drawn"))
SETUP = Types((LocalLrfSetup,), "a LocalLrfSetup (see local_lrf_setup)")

#: The parameters of :func:`local_lrf_setup` (k <= min(n_users, n_features) and the sketch sizes within it
#: are checked next to it).
SETUP_TABLE: dict[str, Any] = {"n_users": COUNT, "n_features": COUNT, "seed": SEED}
#: The parameters of :func:`local_lrf_noise`.
NOISE_TABLE: dict[str, Any] = {
    **NOISE_PARAMETERS, "subspace_sketch_size": COUNT, "affine_sketch_size": COUNT,
    "alpha": ALPHA, "sketch_failure_share": SHARE,
}
#: The parameters of :func:`local_lrf_noise_drawn`.
NOISE_DRAWN_TABLE: dict[str, Any] = {
    **without(NOISE_PARAMETERS, "calibration"),
    "column": [NONE, Interval(0, None, "left", integer=True)],
}
#: The parameters of :func:`local_lrf_report` (``user_index`` in [0, m) and the row's length are checked
#: next to the setup they depend on).
REPORT_TABLE: dict[str, Any] = {
    "setup": SETUP, **without(PRIVACY_PARAMETERS, "random_state"), "rng": RANDOM_STATE,
    "alpha": ALPHA, "sketch_failure_share": SHARE, "sketch_sensitivity": SKETCH_SENSITIVITY,
}
#: The parameters of :func:`private_local_lrf` (``row_norm`` is checked only without ``row_change``,
#: which replaces it; the relation must be local; k and the sketch sizes within the matrix's shape).
LRF_TABLE: dict[str, Any] = {
    **without(PRIVACY_PARAMETERS, "row_norm"), "alpha": ALPHA,
    "simulate_sum": [NONE, Types((bool, np.bool_), "a bool")], "sketch_seed": SEED,
    "sketch_failure_share": SHARE, "protocol": [NONE, Options(("gram", "sketch"))],
    "row_change": [NONE, Interval(0, None, "neither")], "sketch_sensitivity": SKETCH_SENSITIVITY,
}


def _budget(table: dict[str, Any], values: dict[str, Any], owner: str) -> PrivacyBudget:
    """Check ``values`` against ``table``; the per-user target (epsilon, delta), delta > 0."""
    if "row_norm" in values:
        check_row_norm(values["row_norm"], owner)  # its message says why a public bound is required
    return gaussian_budget(table, values, owner)


#: The paper's symbols of :func:`local_lrf_setup`'s parameters (still accepted, with a FutureWarning).
SETUP_PAPER_NAMES = {"m": "n_users", "n": "n_features", **PAPER_SIZE_NAMES}


@renamed(SETUP_PAPER_NAMES)
@validated(SETUP_TABLE)
def local_lrf_setup(
    n_users: int,
    n_features: int,
    k: int,
    *,
    alpha: float = 0.25,
    subspace_sketch_size: int | None = None,
    affine_sketch_size: int | None = None,
    seed: int | None = None,
) -> LocalLrfSetup:
    """The public setup of Private-Local-LRF: sketch sizes and Gaussian sketches from one seed.

    Parameters
    ----------
    n_users : int
        m in the paper: the number of users (rows of A; user i holds row i).
    n_features : int
        n in the paper: the number of features (columns of A).
    k : int
        Rank in [1, min(m, n)].
    alpha : float in (0, 1)
        Sets the default sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)``, both capped at
        ``min(m, n)`` (:func:`~dpspectral.lowrank._sketches.sketch_sizes`).
    subspace_sketch_size : int, optional
        t in the paper: the columns of ``Phi`` (n x t), in [k, min(m, n)].
    affine_sketch_size : int, optional
        v in the paper: the rows of ``S`` (v x m) and ``T`` (v x n), in [k, min(m, n)].
        (The paper's names ``m``, ``n``, ``t``, ``v`` still work, with a FutureWarning.)
    seed : int, optional
        Seed of the sketches, public: fresh OS entropy if None
        (:func:`~dpspectral.privacy._pipeline.public_seed`). Must not be chosen adversarially.

    Returns
    -------
    LocalLrfSetup
        Read-only sketches ``Phi = G1^T`` (G1 t x n), ``S`` (v x m), ``T`` (v x n), drawn in that order
        by ``sketch_matrix("gaussian", ...)`` from ``numpy.random.default_rng(seed)``
        (:func:`sketches_from_seed`; every user regenerates them from the seed).

    Privacy
    -------
    Nothing private: the setup is public (it depends on m, n, k and the public seed only). The seed
    is never drawn from a secret generator.
    """
    owner = "local_lrf_setup"
    m, n = int(n_users), int(n_features)
    k = check_rank(k, m, n, owner)
    seed_val = public_seed(seed)
    cap = min(m, n)
    sizes = sketch_sizes(k, alpha, cap, cap, subspace_sketch_size=subspace_sketch_size,
                         affine_sketch_size=affine_sketch_size, owner=owner)
    Phi, S, T = sketches_from_seed(m, n, sizes.t, sizes.v, seed_val)
    return LocalLrfSetup(m=m, n=n, t=sizes.t, v=sizes.v, seed=seed_val, Phi=Phi, S=S, T=T)


@functools.lru_cache(maxsize=8)
def sketches_from_seed(
    m: int, n: int, t: int, v: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The read-only sketches ``(Phi, S, T)`` of a setup, regenerated from its public seed.

    ``Phi`` (n x t), ``S`` (v x m), ``T`` (v x n), i.i.d. Gaussian (``N(0, 1/t)``, ``N(0, 1/v)``), drawn in
    that order from ``numpy.random.default_rng(seed)``. Cached (a user regenerates them per report).
    """
    rng = np.random.default_rng(seed)
    Phi = np.ascontiguousarray(sketch_matrix("gaussian", t, n, rng).T)
    S = sketch_matrix("gaussian", v, m, rng)
    T = sketch_matrix("gaussian", v, n, rng)
    for M in (Phi, S, T):
        M.setflags(write=False)
    return Phi, S, T


#: The fields of a setup a user checks before regenerating its sketches.
_SETUP_FIELDS: dict[str, Any] = {
    "setup.m": COUNT, "setup.n": COUNT, "setup.t": COUNT, "setup.v": COUNT,
    "setup.seed": Interval(0, None, "left", integer=True),
}


def verified_sketches(setup: LocalLrfSetup, owner: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The user's side: regenerate the sketches from ``setup.seed`` and refuse a setup that differs.

    The server's matrices are never trusted: the calibration holds for Gaussian sketches drawn from the
    seed, not for matrices an untrusted server chose. Returns the regenerated ``(Phi, S, T)``.
    """
    fields = {f"setup.{name}": getattr(setup, name) for name in ("m", "n", "t", "v", "seed")}
    check_params(_SETUP_FIELDS, fields, owner)
    if setup.t > min(setup.m, setup.n) or setup.v > min(setup.m, setup.n):
        raise ValueError(f"{owner}: the setup's sketch sizes t={setup.t}, v={setup.v} exceed min(m, n).")
    Phi, S, T = sketches_from_seed(setup.m, setup.n, setup.t, setup.v, int(setup.seed))
    for name, mine in (("Phi", Phi), ("S", S), ("T", T)):
        theirs = np.asarray(getattr(setup, name))
        if theirs.shape != mine.shape or not np.array_equal(theirs, mine):
            raise ValueError(
                f"{owner}: the setup's sketch matrix {name} does not match the sketches of its public seed "
                f"{setup.seed}: refused (the user regenerates the sketches from the seed and never uses "
                "matrices it cannot check)."
            )
    return Phi, S, T


@dataclass(frozen=True)
class LocalLrfNoise:
    """Noise plan of one user's report.

    ``sigma_y`` / ``sigma_z``: std of every entry of ``g_i`` (1 x t) / ``G_i`` (v x v);
    ``sensitivity_y = 2 C sqrt(q_t)`` and ``sensitivity_z = 2 C q_v`` the per-pair L2 sensitivities of
    ``y_i`` and ``Z_i`` (holding except with probability ``sketch_delta`` in all); ``events`` what
    one report spends.
    """

    sigma_y: float
    sigma_z: float
    sensitivity_y: float
    sensitivity_z: float
    sketch_delta: float
    events: tuple[dp_accounting.DpEvent, ...]
    notes: tuple[str, ...] = ()
    #: The exact joint sensitivity of the drawn sketches (:func:`local_lrf_noise_drawn`), else None.
    joint_sensitivity: float | None = None

    @property
    def sensitivity(self) -> float:
        """Joint L2 sensitivity of the pair ``(y_i, Z_i)``."""
        if self.joint_sensitivity is not None:
            return self.joint_sensitivity
        return math.hypot(self.sensitivity_y, self.sensitivity_z)

    @property
    def noise_multiplier(self) -> float:
        """The multiplier of the single Gaussian mechanism equivalent to the report (GDP: ``1/mu``)."""
        if self.joint_sensitivity is not None:  # sigma_y == sigma_z
            return self.sigma_y / self.joint_sensitivity
        return 1.0 / math.hypot(self.sensitivity_y / self.sigma_y, self.sensitivity_z / self.sigma_z)


def drawn_sensitivity(
    Phi: np.ndarray, S: np.ndarray, T: np.ndarray, *, bound: float, column: int | None = None
) -> tuple[float, float, float]:
    """The exact worst-case sensitivity of one report for the sketches actually drawn.

    The clean report of a row a is ``(Phi^T a, S[:, i] (T a)^T)``, linear in a. For ``||a - a'|| <= b``
    its change E gives ``||Phi^T E||^2 + s^2 ||T E||^2 = ||K E||^2`` with ``K = [Phi^T; s T]``
    ((t + v) x n) and ``s = ||S[:, i]||`` (``column=None``: the largest column norm of S, a bound for
    every user). Hence the supremum is exactly ``b ||K||_2``, attained at E = b times K's top right
    singular vector: a worst case over rows for these sketches, whatever they are (no failure
    probability, no assumption on how the seed was chosen). Returned with a 1e-9 relative slack for
    rounding, with the two parts' own worst cases ``b ||Phi||_2`` and ``b s ||T||_2``.

    Returns
    -------
    (joint, part_y, part_z) : tuple of float
    """
    norms = np.linalg.norm(S, axis=0)
    s = float(norms.max() if column is None else norms[int(column)])
    K = np.vstack([np.asarray(Phi, dtype=np.float64).T, s * np.asarray(T, dtype=np.float64)])
    slack = 1.0 + 1e-9
    joint = bound * float(np.linalg.norm(K, 2)) * slack
    part_y = bound * float(np.linalg.norm(Phi, 2)) * slack
    part_z = bound * s * float(np.linalg.norm(T, 2)) * slack
    return joint, part_y, part_z


def local_lrf_noise_drawn(
    epsilon: float,
    delta: float,
    setup: LocalLrfSetup,
    *,
    row_norm: float,
    column: int | None = None,
    owner: str = "local_lrf_noise_drawn",
) -> LocalLrfNoise:
    """Noise of one report calibrated to the drawn sketches' exact sensitivity (no sketch-failure delta).

    ``sigma_y = sigma_z = s Delta`` with the analytic multiplier ``s`` for the whole (epsilon, delta) and
    ``Delta = 2 C ||[Phi^T; ||S_i|| T]||_2`` (:func:`drawn_sensitivity`; ``column=None`` uses the largest
    column of S, so every user's noise is the same). Sound for any sketch, adversarial ones included:
    the user computes it from the sketches it regenerated from the public seed. Only the tight
    calibration exists in this mode.

    Privacy
    -------
    A plan, nothing released: the noise of one report for the local relation (any two rows of norm
    <= C), from the public sketches and (epsilon, delta); :func:`local_lrf_report` draws it.
    """
    budget = _budget(NOISE_DRAWN_TABLE, dict(epsilon=epsilon, delta=delta, row_norm=row_norm, column=column),
                     owner)
    b = 2.0 * sensitivity_norm(float(row_norm))
    Phi, S, T = verified_sketches(setup, owner)
    joint, part_y, part_z = drawn_sensitivity(Phi, S, T, bound=b, column=column)
    s = analytic_noise_multiplier(budget.epsilon, budget.delta)
    note = (
        "sketch_sensitivity='drawn': the report is calibrated to the exact worst case over rows for the "
        "sketches actually drawn (2C ||[Phi^T; ||S_i|| T]||_2), which holds for any sketch, adversarial "
        "ones included: no sketch-failure delta and no assumption on how the public seed was chosen."
    )
    return LocalLrfNoise(
        sigma_y=s * joint,
        sigma_z=s * joint,
        sensitivity_y=part_y,
        sensitivity_z=part_z,
        sketch_delta=0.0,
        events=(dp_accounting.GaussianDpEvent(s),),
        notes=(note,),
        joint_sensitivity=joint,
    )


@renamed(PAPER_SIZE_NAMES)
def local_lrf_noise(
    epsilon: float,
    delta: float,
    subspace_sketch_size: int,
    affine_sketch_size: int,
    *,
    row_norm: float,
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch_failure_share: float = 0.1,
    owner: str = "local_lrf_noise",
) -> LocalLrfNoise:
    """Noise of one user's report for a target (epsilon, delta) (local model).

    Parameters
    ----------
    epsilon, delta : float
        The per-user target; delta in (0, 1).
    subspace_sketch_size : int
        t in the paper: the columns of ``Phi`` (the length of ``y_i``).
    affine_sketch_size : int
        v in the paper: the rows of ``S`` and ``T`` (``Z_i`` is v x v). The paper's names ``t``, ``v``
        still work, with a FutureWarning.
    row_norm : float
        Public bound C on a row's norm; LDP neighbours differ by ``||a - a'|| <= b = 2 C``.
    calibration : {"tight", "paper"}
        ``"tight"``: one Gaussian on the pair, ``sigma_y = sigma_z = s Delta`` with the analytic
        multiplier ``s`` for ``(epsilon, delta - 3 delta_s)`` and ``Delta = b sqrt(q_t + q_v^2)``.
        ``"paper"``: ``sigma_y = b rho_1``, ``sigma_z = b rho_2`` with ``rho_1 = sqrt((1+alpha)
        ln(1/delta))/epsilon`` and ``rho_2 = (1+alpha) sqrt(ln(1/delta))/epsilon`` (spec §2, recalled;
        the paper's neighbours differ by a unit vector, here by b), reported with what the accountant
        certifies for them under the chi-square sensitivities (usually *not* the request).
    alpha : float in (0, 1)
        Used by the paper's formulas only.
    sketch_failure_share : float in (0, 1)
        Share of delta (``3 delta_s``) covering the three norm bounds failing.

    Returns
    -------
    LocalLrfNoise

    Privacy
    -------
    A plan, nothing released (see :func:`local_lrf_report` for the guarantee it gives).
    """
    t, v = subspace_sketch_size, affine_sketch_size
    budget = _budget(NOISE_TABLE, dict(epsilon=epsilon, delta=delta, subspace_sketch_size=t,
                                       affine_sketch_size=v, row_norm=row_norm, calibration=calibration,
                                       alpha=alpha, sketch_failure_share=sketch_failure_share), owner)
    b = 2.0 * sensitivity_norm(float(row_norm))
    delta_sketch = float(sketch_failure_share) * budget.delta
    delta_s = delta_sketch / 3.0
    d_y, d_z = b * math.sqrt(chi2_quantile_factor(int(t), delta_s)), b * chi2_quantile_factor(int(v), delta_s)
    notes: list[str] = []
    events: tuple[dp_accounting.DpEvent, ...]
    if calibration == "tight":
        s = analytic_noise_multiplier(budget.epsilon, budget.delta - delta_sketch)
        sigma_y = sigma_z = s * math.hypot(d_y, d_z)
        events = (dp_accounting.GaussianDpEvent(s), EpsilonDeltaDpEvent(0.0, delta_sketch))
    else:
        a, log_inv = float(alpha), math.log(1.0 / budget.delta)
        sigma_y = b * math.sqrt((1.0 + a) * log_inv) / budget.epsilon
        sigma_z = b * (1.0 + a) * math.sqrt(log_inv) / budget.epsilon
        events = (
            dp_accounting.GaussianDpEvent(sigma_y / d_y),
            dp_accounting.GaussianDpEvent(sigma_z / d_z),
            EpsilonDeltaDpEvent(0.0, delta_sketch),
        )
        notes.append(
            "calibration='paper': rho_1 = sqrt((1+alpha) ln(1/delta))/epsilon for y_i and rho_2 = "
            "(1+alpha) sqrt(ln(1/delta))/epsilon for Z_i (recalled in spec-lowrank.md §2), times the "
            "neighbour distance 2 row_norm; the paper's per-pair factor 1+alpha needs sketches far larger "
            "than these, so the accountant certifies them under the chi-square sensitivities "
            "2C sqrt(q_t) and 2C q_v."
        )
    return LocalLrfNoise(
        sigma_y=sigma_y,
        sigma_z=sigma_z,
        sensitivity_y=d_y,
        sensitivity_z=d_z,
        sketch_delta=delta_sketch,
        events=events,
        notes=tuple(notes),
    )


@dataclass(frozen=True, eq=False)
class LocalLrfReport:
    """What user i sends: ``y`` (t,) and ``Z`` (v, v); ``i`` says where ``y`` goes in ``Y_c``."""

    i: int
    y: np.ndarray
    Z: np.ndarray

    def as_vector(self) -> np.ndarray:
        """The ``t + v^2`` words sent, ``y`` then ``Z`` row by row."""
        return np.concatenate([self.y, self.Z.ravel()])


def _noise_plan(
    epsilon: float, delta: float, setup: LocalLrfSetup, *, row_norm: float, calibration: Calibration,
    alpha: float, sketch_failure_share: float, sketch_sensitivity: str, column: int | None, owner: str,
) -> LocalLrfNoise:
    """The noise of one report for ``sketch_sensitivity`` (public inputs only)."""
    if sketch_sensitivity == "drawn":
        if calibration != "tight":
            raise ValueError(
                f"{owner}: sketch_sensitivity='drawn' has the tight calibration only. Got "
                f"calibration={calibration!r} instead."
            )
        return local_lrf_noise_drawn(epsilon, delta, setup, row_norm=row_norm, column=column, owner=owner)
    return local_lrf_noise(
        epsilon, delta, setup.t, setup.v, row_norm=row_norm, calibration=calibration, alpha=alpha,
        sketch_failure_share=sketch_failure_share, owner=owner,
    )


def _report_plan(owner: str, noise: LocalLrfNoise) -> ReleasePlan:
    """One user's report, from public inputs: one Gaussian release of the pair ``(y_i, Z_i)`` when the
    calibration is one Gaussian mechanism (``sigma_y == sigma_z``, tight or drawn), else two (the
    paper's ``y_i`` and ``Z_i`` scales, each with its own event and sensitivity)."""
    releases: tuple[NoisyRelease, ...]
    if len([e for e in noise.events if isinstance(e, dp_accounting.GaussianDpEvent)]) == 1:
        releases = (NoisyRelease("report", "gaussian", noise.sigma_y, noise.sensitivity),)
    else:
        releases = (NoisyRelease("y", "gaussian", noise.sigma_y, noise.sensitivity_y),
                    NoisyRelease("Z", "gaussian", noise.sigma_z, noise.sensitivity_z))
    return ReleasePlan(owner, Relation.LOCAL, noise.events, releases, noise.notes)


@renamed({"i": "user_index"})
def local_lrf_report(
    row: Any,
    user_index: int,
    setup: LocalLrfSetup,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    rng: Any = None,
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch_failure_share: float = 0.1,
    on_norm_violation: NormViolation = "clip",
    sketch_sensitivity: Literal["per_pair", "drawn"] = "per_pair",
) -> LocalLrfReport:
    """What user i sends: ``y_i = a_i^T Phi + g_i`` and ``Z_i = S[:, i] (T a_i)^T + G_i``.

    Parameters
    ----------
    row : array-like of shape (n,)
        The user's own row a_i. Never modified.
    user_index : int
        i in the paper: the user's index in [0, m) (public: it selects the column ``S[:, i]`` and the row
        of ``Y_c``). The old name ``i`` still works, with a FutureWarning.
    setup : LocalLrfSetup
        The server's public message. The sketches are regenerated from ``setup.seed`` and a setup whose
        matrices differ from them is refused (:func:`verified_sketches`).
    epsilon, delta : float
        The report is (epsilon, delta)-LDP; delta in (0, 1).
    row_norm : float
        Public bound C; a row above it is scaled down to norm C (or rejected with
        ``on_norm_violation="raise"``).
    rng : None, int, SeedSequence, Generator or "secure"
        The user's own secret randomness (``"secure"``: OS entropy and exact samplers).
    calibration, alpha, sketch_failure_share
        See :func:`local_lrf_noise`.
    on_norm_violation : {"clip", "raise"}
    sketch_sensitivity : {"per_pair", "drawn"}
        ``"per_pair"`` (default): the chi-square per-pair calibration (:func:`local_lrf_noise`), which
        assumes a seed that was not chosen adversarially. ``"drawn"``: the exact worst case for the
        sketches of the seed and this user's column (:func:`local_lrf_noise_drawn`; tight calibration
        only), sound whatever the seed.

    Returns
    -------
    LocalLrfReport
        ``t + v^2`` words (``setup.communication_floats``).

    Privacy
    -------
    Local model: for any two rows of norm <= C (``||a - a'|| <= 2 C``), the report is one Gaussian
    mechanism of per-pair sensitivity ``2 C sqrt(q_t + q_v^2)`` (exact chi-square quantiles of
    ``||Phi^T E||^2``, ``||S[:, i]||^2`` and ``||T E||^2``; module docstring), except with probability
    ``3 delta_s`` over the public sketches: (epsilon, delta)-LDP in all, provided the seed was not
    chosen adversarially. The sketches used are those of the seed, regenerated here, never the
    server's matrices.
    """
    owner = "local_lrf_report"
    check_params({"setup": SETUP}, {"setup": setup}, owner)  # first: the other checks read it
    Phi, S, T = verified_sketches(setup, owner)
    _budget(REPORT_TABLE, dict(setup=setup, epsilon=epsilon, delta=delta, row_norm=row_norm, rng=rng,
                               calibration=calibration, alpha=alpha, on_norm_violation=on_norm_violation,
                               sketch_failure_share=sketch_failure_share,
                               sketch_sensitivity=sketch_sensitivity), owner)
    C = float(row_norm)
    i = user_index
    check_params({"user_index": Interval(0, setup.m, "left", integer=True)}, {"user_index": i},
                 owner)  # S[:, i] exists
    plan = _report_plan(owner, _noise_plan(
        epsilon, delta, setup, row_norm=C, calibration=calibration, alpha=alpha, owner=owner,
        sketch_failure_share=sketch_failure_share, sketch_sensitivity=sketch_sensitivity, column=int(i)))
    return run(_UserReport(), _ReportInputs(int(i), setup, (Phi, S, T), C, on_norm_violation, plan), row,
               RunSettings(None, rng))


@dataclass(frozen=True, eq=False)
class _ReportInputs:
    """The public inputs of one user's report, checked, and its plan (from public inputs)."""

    i: int
    setup: LocalLrfSetup
    sketches: tuple[np.ndarray, np.ndarray, np.ndarray]  # Phi, S, T regenerated from the seed
    C: float
    on_norm_violation: NormViolation
    report_plan: ReleasePlan


class _UserReport(Mechanism[_ReportInputs, LocalLrfReport]):
    """One user's ``(y_i, Z_i)`` as the release template runs it: the user's own noise, nothing charged
    and no privacy report (a local-model report)."""

    label = "local_lrf_report"
    reported = False

    def plan(self, inputs: _ReportInputs, n: int | None, d: int | None) -> ReleasePlan:
        return inputs.report_plan

    def read(self, inputs: _ReportInputs, X: Any) -> Rows:
        """The user's row: checked (numeric, length n, finite) and clipped at C, as a copy."""
        arr = _user_row(X, inputs.setup.n, self.label)
        a2, _ = clip_rows(arr.astype(np.float64)[None, :], inputs.C,
                          on_norm_violation=inputs.on_norm_violation, copy=False)
        return Rows(_Shape(1, inputs.setup.n), np.asarray(a2)[0])  # astype copied: the row is never written

    def statistic(self, inputs: _ReportInputs, rows: Rows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        Phi, S, T = inputs.sketches
        a = rows.source
        clean_y, clean_Z = a @ Phi, np.outer(S[:, inputs.i], T @ a)
        if len(plan.releases) == 1:  # one Gaussian on the pair: y then Z, row by row
            return {"report": np.concatenate([clean_y, clean_Z.ravel()])}
        return {"y": clean_y, "Z": clean_Z}

    def post_process(self, inputs: _ReportInputs, rows: Rows, released: Released,
                     report: Any) -> LocalLrfReport:
        t, v = inputs.setup.t, inputs.setup.v
        if "report" in released:
            noisy = released["report"]
            return LocalLrfReport(i=inputs.i, y=noisy[:t], Z=noisy[t:].reshape(v, v))
        return LocalLrfReport(i=inputs.i, y=released["y"], Z=released["Z"])


def _user_row(row: Any, n: int, owner: str) -> np.ndarray:
    """The user's row: numeric, of length n, finite (the messages quote no value)."""
    arr = as_numeric_array(row, owner, name="row", ndim=None, convert_object=False)  # quotes no value
    if arr.shape != (n,):
        raise ValueError(
            f"The 'row' parameter of {owner} must be a 1-D array of length n={n} (one row). Got shape "
            f"{arr.shape} instead."
        )
    if not np.isfinite(arr).all():
        raise not_finite_error(owner)
    return arr


# ----------------------------------------------------------------------------------------------
# server
# ----------------------------------------------------------------------------------------------


def _solve(Y_c: np.ndarray, Z: np.ndarray, S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``U^ = orth(U W)`` and the singular values of ``U W`` (post-processing of ``Y_c``, ``Z``).

    ``U = orth(Y_c)``; ``W = argmin_{rank <= k} ||Z - (S U) W||_F`` (:func:`rank_k_left`: ``V_s
    Sigma_s^+ [U_s^T Z]_k``). With the top-k SVD ``W = U' diag(s) V'^T`` and U orthonormal, ``U W =
    (U U') diag(s) V'^T`` is an SVD, so ``orth(U W) = U U'`` and s are its singular values (an
    estimate of those of ``A T^T``, hence of A's).
    """
    U = orth_columns(Y_c)
    W = rank_k_left(S @ U, Z, k)
    Up, s, _ = svd_top_k(W, k)
    return fix_signs(U @ Up), s


def local_lrf_aggregate(
    reports: Iterable[LocalLrfReport],
    setup: LocalLrfSetup,
    k: int,
    *,
    privacy: PrivacyReport | None = None,
) -> LowRankResult:
    """Server side: stack the ``y_i`` into ``Y_c``, sum the ``Z_i``, and solve for the rank-k subspace.

    Parameters
    ----------
    reports : iterable of LocalLrfReport
        Exactly one report per user ``i = 0, ..., m - 1`` (any order).
    setup : LocalLrfSetup
        The public setup the reports were made with.
    k : int
        Rank in [1, min(m, n)].
    privacy : PrivacyReport, optional
        The users' guarantee, attached to the result as is (the aggregation spends nothing).

    Returns
    -------
    LowRankResult
        ``U`` (m, k) orthonormal (``U^``; approximate A by ``U U^T A``), ``S`` the singular values of
        the solve ``U W`` (k,), ``V = None``; diagnostics ``t``, ``v``, ``n_reports``.

    Privacy
    -------
    Post-processing of the reports and the public sketches.
    """
    owner = "local_lrf_aggregate"
    check_params({"setup": SETUP}, {"setup": setup}, owner)
    k = check_rank(k, setup.m, setup.n, owner)
    Y_c = np.zeros((setup.m, setup.t))
    Z = np.zeros((setup.v, setup.v))
    seen = np.zeros(setup.m, dtype=bool)
    for r in reports:
        if not isinstance(r, LocalLrfReport):
            raise TypeError(
                f"The 'reports' parameter of {owner} must hold LocalLrfReport objects. Got "
                f"{type(r).__name__}."
            )
        y, Zi = np.asarray(r.y, dtype=np.float64), np.asarray(r.Z, dtype=np.float64)
        if y.shape != (setup.t,) or Zi.shape != (setup.v, setup.v):
            raise ValueError(
                f"The 'reports' parameter of {owner}: user {r.i} sent y of shape {y.shape} and Z of shape "
                f"{Zi.shape}; the setup expects ({setup.t},) and ({setup.v}, {setup.v})."
            )
        if not (np.isfinite(y).all() and np.isfinite(Zi).all()):
            raise ValueError(
                f"The 'reports' parameter of {owner}: user {r.i}'s report contains NaN or infinity."
            )
        if not 0 <= r.i < setup.m or seen[r.i]:
            raise ValueError(
                f"The 'reports' parameter of {owner}: user index {r.i} is out of range or repeated."
            )
        seen[r.i] = True
        Y_c[r.i] = y
        Z += Zi
    if not seen.all():
        raise ValueError(
            f"The 'reports' parameter of {owner} must hold one report per user (m={setup.m}); "
            f"{int(np.count_nonzero(~seen))} are missing."
        )
    U_hat, s = _solve(Y_c, Z, setup.S, k)
    return LowRankResult(
        U=U_hat, S=s, V=None, privacy=privacy, diagnostics={"t": setup.t, "v": setup.v, "n_reports": setup.m}
    )


# ----------------------------------------------------------------------------------------------
# the whole protocol on one machine
# ----------------------------------------------------------------------------------------------


def _dense(M: Any) -> np.ndarray:
    return np.asarray(M.toarray() if sp.issparse(M) else M)


def _simulate_reports(A_c: Any, setup: LocalLrfSetup, releaser: Releaser,
                      simulate_sum: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(Y_c, Z)`` as the server receives them from the users holding the (clipped) rows of ``A_c``.

    Inside the charged block. ``Y_c = A Phi + N1`` (m x t: every user's own ``y`` noise row, release
    ``"y"``). ``Z = sum_i (S[:, i] (T a_i)^T + G_i)``: ``simulate_sum=False`` releases every user's
    ``Z_i`` (release ``"Z"``, in blocks of users) and adds them up; ``simulate_sum=True`` releases the
    sum ``S A T^T`` once with v x v i.i.d. ``N(0, m sigma_z^2)`` noise (release ``"Z_sum"``), which has
    exactly the same law (a sum of m independent ``N(0, sigma_z^2)`` variables is ``N(0, m sigma_z^2)``,
    entry by entry, independently).
    """
    m, v = setup.m, setup.v
    Y_c = releaser.add("y", _dense(A_c @ setup.Phi))
    TA = _dense(A_c @ setup.T.T)  # row i: T a_i
    if simulate_sum:
        return Y_c, releaser.add("Z_sum", setup.S @ TA)
    Z = np.zeros((v, v))
    step = max(1, _NOISE_BLOCK_ELEMENTS // (v * v))
    for first in range(0, m, step):
        users = slice(first, min(first + step, m))
        clean = setup.S[:, users].T[:, :, None] * TA[users, None, :]  # S[:, i] (T a_i)^T, user by user
        Z += releaser.add("Z", clean).sum(axis=0)
    return Y_c, Z


def _protocol_plan(relation: Relation, noise: LocalLrfNoise, *, m: int, simulate_sum: bool,
                   notes: list[str]) -> ReleasePlan:
    """The protocol's releases from public inputs: every user's ``y_i`` and ``Z_i`` (or their sum).

    Each part is released with its own sensitivity (``sensitivity_y``, ``sensitivity_z``; for the secure
    source, which widens each part for its rounding to the grid); the events are one user's report.
    """
    releases = [NoisyRelease("y", "gaussian", noise.sigma_y, noise.sensitivity_y)]
    if simulate_sum:
        releases.append(NoisyRelease("Z_sum", "gaussian", noise.sigma_z * math.sqrt(m), noise.sensitivity_z))
    else:
        releases.append(NoisyRelease("Z", "gaussian", noise.sigma_z, noise.sensitivity_z))
    return ReleasePlan(_OWNER, relation, noise.events, tuple(releases), tuple(notes))


@sketch_keywords
def private_local_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float = 1.0,
    relation: Relation | str = "local",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch: Sketch | None = None,
    simulate_sum: bool | None = None,
    on_norm_violation: NormViolation = "clip",
    row_change: float | None = None,
    random_state: Any = None,
    accountant: Accountant | None = None,
    protocol: Protocol | None = None,
) -> LowRankResult:
    """Private low-rank factorization in the local model: each row of A is one user (no trusted curator).

    **Default, ``protocol="gram"``**: every user sends the Local Gaussian report of its row,
    ``iso(a a^T)`` plus Gaussian noise (:func:`~dpspectral.local._gaussian.local_gaussian`, ``n (n + 1) / 2``
    floats), the server averages them and releases V (n x k, the top-k eigenvectors) and S (k; the
    spiked-Wigner estimate of the singular values, 0 below the noise edge): a
    :class:`~dpspectral.lowrank._subspace.RowSubspaceResult` (U is None; ``reconstruct(A)`` is
    ``A V V^T``, each user computing its own coefficients ``a^T V`` locally). A direction of
    ``A^T A / m`` is visible only above about ``s(eps, delta) C^2 sqrt(n / m)`` (the local model's limit,
    docs/algorithms/stochastic.md "Local Gaussian"). The paper's protocol's reports are linear in the row,
    so its signal and its summed noise both grow like ``sqrt(m)``: it stays at random level at any
    practical epsilon (docs/algorithms/lowrank.md, "Private-Local-LRF").

    **``protocol="sketch"``** (Upadhyay's Figure 9, Theorem 57; selected by any of ``row_change``,
    ``calibration="paper"``, or a sketch size, seed or ``sensitivity="drawn"`` in ``sketch``):
    every user sends ``(y_i, Z_i)`` (:func:`local_lrf_report`); the server
    aggregates (:func:`local_lrf_aggregate`) into ``U^`` (m x k), orthonormal, with
    ``||A - U^ U^^T A||_F <= (1 + O(alpha)) ||A - [A]_k||_F + O(v sqrt(m) sigma_z)``. The users are
    simulated vectorised (no Python loop over users), with the same laws as the per-user reports.

    Parameters
    ----------
    A : array-like or sparse matrix of shape (m, n)
        One row per user. Never modified.
    k : int
        Rank in [1, min(m, n)].
    epsilon, delta : float
        Every user's report is (epsilon, delta)-LDP; delta in (0, 1).
    row_norm : float
        Public bound C on each row's norm (rows above it are clipped by their user).
    relation : {"local"}
        The local model only.
    calibration : {"tight", "paper"}
        See :func:`local_lrf_noise`.
    alpha : float in (0, 1)
        Sets the default sketch sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)`` (capped at
        ``min(m, n)``) and the paper's noise formulas.
    sketch : Sketch, optional
        The public sketches of ``protocol="sketch"`` (:class:`~dpspectral.lowrank.Sketch`): t the
        columns of ``Phi`` (n x t), the length of each ``y_i``; v the rows of ``S`` (v x m) and ``T``
        (v x n), each ``Z_i`` v x v; both in [k, min(m, n)]. The seed must not be chosen adversarially
        (module docstring). ``sensitivity="per_pair"`` (default): chi-square per-pair bounds over
        random sketches (a sketch-failure delta; the seed must not be adversarial); ``"drawn"``: every
        user is calibrated to the exact worst case for the drawn sketches (the largest column norm of
        S: the same noise for all users), sound whatever the seed, no sketch-failure delta
        (:func:`local_lrf_noise_drawn`).
    simulate_sum : bool, optional
        ``"gram"``: True (default) draws the average's noise directly (exactly the law of the mean of the
        m reports); False draws every user's report. ``"sketch"``:
        False (default): draw every user's v x v noise ``G_i`` and add them up (in blocks of users).
        True: draw the server's sum ``sum_i G_i`` directly as one v x v matrix of i.i.d.
        ``N(0, m sigma_z^2)`` entries, exactly the same law, in O(v^2) instead of O(m v^2) time. The
        ``y_i`` noise is per user in both modes (it is one m x t matrix).
    on_norm_violation : {"clip", "raise"}
    row_change : float, optional
        Public bound b on how far one user's row may change (``||a - a'|| <= b``). When given, rows are not
        clipped and ``row_norm`` is ignored (the sensitivities depend only on ``a - a'``); Upadhyay's unit
        change is ``row_change=1``. Default ``b = 2 row_norm``. This is a different relation
        (``local_row_change``: see Privacy).
    random_state : None, int, SeedSequence, Generator or "secure"
        Seeds the users' secret noise only: keep it secret (``"secure"``: OS entropy and exact samplers).
        The public sketches always come from the sketch's public seed, never from it.
    accountant : Accountant, optional
        Ledger (relation ``"local"``) spent before any noise is drawn, after the whole matrix was
        validated (a refusal costs nothing).
    protocol : {"gram", "sketch"}, optional
        None (default): ``"gram"`` unless a parameter of the sketch protocol is set (``row_change``,
        ``calibration="paper"``, or in ``sketch`` a size, the seed or ``sensitivity="drawn"``), then
        ``"sketch"``, the paper's Figure 9.

    Returns
    -------
    RowSubspaceResult or LowRankResult
        ``"gram"``: V (n, k), S (k,), U None; diagnostics ``protocol``, ``noise_std``,
        ``aggregate_noise_std`` (the average's off-diagonal std tau), ``noise_edge``, ``sensitivity``,
        ``noise_multiplier``, ``noise_shape``, ``communication_floats_per_user``, ``simulate_sum``.
        ``"sketch"``: ``U`` (m, k), ``S`` (k,) the singular values of the solve, ``V = None``;
        diagnostics ``t``, ``v``, ``sigma_y``, ``sigma_z``, ``aggregate_noise_std_z`` (``sqrt(m) sigma_z``),
        ``sensitivity``, ``sensitivity_y``, ``sensitivity_z``, ``noise_multiplier``, ``sketch_seed``,
        ``communication_floats_per_user`` (``t + v^2``), ``communication_bytes_per_user`` (8 per
        float), ``simulate_sum``.

    Privacy
    -------
    Relation: local (non-interactive), both protocols. ``"gram"``: user i's report is one Gaussian
    mechanism on ``iso(a a^T)``, of L2 sensitivity ``||a a^T - a' a'^T||_F <= sqrt(2) C^2`` for any two rows
    of norm <= C (:func:`~dpspectral.local._gaussian.local_gaussian`); the average, its eigenvectors and
    the values are post-processing. ``"sketch"``: for any two rows a, a' of norm <= C
    (``||a - a'|| <= 2 C``), user i's report ``(a^T Phi + g_i, S[:, i] (T a)^T + G_i)`` is one Gaussian
    mechanism of per-pair
    L2 sensitivity ``2 C sqrt(q_t + q_v^2)``: ``||(a - a')^T Phi|| <= sqrt(q_t) ||a - a'||`` and
    ``||S[:, i] (T (a - a'))^T||_F = ||S[:, i]|| ||T (a - a')|| <= q_v ||a - a'||``, each chi-square bound
    failing with probability delta_s over the public sketches (``EpsilonDeltaDpEvent(0, 3 delta_s)``).
    The report records one user's events (every user runs the same mechanism on their own row); the
    server's sum and solve are post-processing. ``calibration="tight"`` uses the analytic multiplier for
    ``(epsilon, delta - 3 delta_s)``; ``"paper"`` uses rho_1, rho_2 of spec §2 and reports (and warns
    about) what the accountant certifies. The seed must come from a trusted or committed coin: the
    guarantee is per pair over random sketches, not over adversarial ones.

    With ``row_change=b`` the guarantee is for a bounded change of one user's row (``||a - a'|| <= b``,
    rows not clipped), not for any two rows: its relation is ``local_row_change``
    (``Relation.LOCAL_ROW_CHANGE`` where defined; until then the report says so in its notes). Every
    user's noise comes from the release pipeline's source (``random_state="secure"``: each part of a
    report rounded to the secure grid and widened for it with its own sensitivity).
    """
    owner = _OWNER
    options = sketch_options(sketch, owner, drawn=True)
    subspace_sketch_size, affine_sketch_size = options.subspace_size, options.affine_size
    sketch_seed, sketch_failure_share = options.seed, failure_share_of(options)
    sketch_sensitivity = options.sensitivity or "per_pair"
    budget, C = _lrf_inputs(owner, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
                            calibration=calibration, alpha=alpha, simulate_sum=simulate_sum,
                            sketch_seed=sketch_seed, sketch_failure_share=sketch_failure_share,
                            on_norm_violation=on_norm_violation, row_change=row_change,
                            random_state=random_state, sketch_sensitivity=sketch_sensitivity,
                            protocol=protocol)
    sketch_args = {"row_change": row_change, "calibration": calibration,
                   "sketch.sensitivity": sketch_sensitivity, "sketch.subspace_size": subspace_sketch_size,
                   "sketch.affine_size": affine_sketch_size, "sketch.seed": sketch_seed}
    if _protocol(protocol, sketch_args, owner) == "gram":
        gram_sum = True if simulate_sum is None else bool(simulate_sum)
        return _gram_protocol(A, k, budget, C, simulate_sum=gram_sum, on_norm_violation=on_norm_violation,
                              accountant=accountant, random_state=random_state)
    return run(_SketchProtocol(), _SketchInputs(
        k, budget, C, calibration=calibration, alpha=alpha, subspace_sketch_size=subspace_sketch_size,
        affine_sketch_size=affine_sketch_size, simulate_sum=bool(simulate_sum), sketch_seed=sketch_seed,
        sketch_failure_share=sketch_failure_share, on_norm_violation=on_norm_violation,
        row_change=row_change, sketch_sensitivity=sketch_sensitivity,
    ), A, RunSettings(accountant, random_state))


@dataclass(frozen=True)
class _SketchInputs:
    """The public inputs of the paper's sketch protocol (``budget`` and ``C`` checked already)."""

    k: int
    budget: PrivacyBudget
    C: float
    calibration: Calibration
    alpha: float
    subspace_sketch_size: int | None
    affine_sketch_size: int | None
    simulate_sum: bool  # the paper's protocol: every user's Z_i noise unless asked
    sketch_seed: int | None
    sketch_failure_share: float
    on_norm_violation: NormViolation
    row_change: float | None
    sketch_sensitivity: str


@dataclass(frozen=True, eq=False)
class _SketchChecked:
    inputs: _SketchInputs
    A: Any
    k: int
    setup: LocalLrfSetup
    noise: LocalLrfNoise

    @property
    def budget(self) -> PrivacyBudget:
        return self.inputs.budget

    @property
    def calibration(self) -> str:
        return self.inputs.calibration


class _SketchProtocol(Mechanism[_SketchInputs, LowRankResult]):
    """Upadhyay's Figure 9 as the release template runs it: every user's ``(y_i, Z_i)`` (or the sum of
    the ``Z_i``), simulated in one charge; the server's solve is post-processing."""

    label = _OWNER
    stacklevel = 2  # frames above run: private_local_lrf, the caller

    def check(self, inputs: _SketchInputs, X: Any) -> _SketchChecked:
        A = check_matrix(X, _OWNER)
        m, n = A.shape
        k = check_rank(inputs.k, m, n, _OWNER)
        seed = public_seed(inputs.sketch_seed)  # public randomness: never from random_state
        setup = local_lrf_setup(m, n, k, alpha=inputs.alpha, subspace_sketch_size=inputs.subspace_sketch_size,
                                affine_sketch_size=inputs.affine_sketch_size, seed=seed)
        noise = _noise_plan(
            inputs.budget.epsilon, inputs.budget.delta, setup, row_norm=inputs.C,
            calibration=inputs.calibration, alpha=inputs.alpha,
            sketch_failure_share=inputs.sketch_failure_share, sketch_sensitivity=inputs.sketch_sensitivity,
            column=None, owner=_OWNER,
        )
        return _SketchChecked(inputs, A, k, setup, noise)

    def plan(self, inputs: _SketchChecked, n: int | None, d: int | None) -> ReleasePlan:
        i = inputs.inputs
        relation = Relation.LOCAL if i.row_change is None else (ROW_CHANGE_RELATION or Relation.LOCAL)
        return _protocol_plan(relation, inputs.noise, m=inputs.setup.m, simulate_sum=i.simulate_sum,
                              notes=_protocol_notes(inputs.noise, i.C, i.row_change, i.sketch_sensitivity))

    def read(self, inputs: _SketchChecked, X: Any) -> Rows:
        """The whole matrix, validated (rows clipped at C) before anything is charged; with
        ``row_change`` the rows are used as given."""
        i = inputs.inputs
        if i.row_change is not None:
            return Rows(_Shape(*inputs.A.shape), inputs.A)
        checked = accumulate(inputs.A, row_norm=i.C, on_norm_violation=i.on_norm_violation, want_sum=False,
                             want_second=False, owner=_OWNER)
        A_c = clip_rows(inputs.A, i.C, on_norm_violation=i.on_norm_violation, copy=True, owner=_OWNER)[0]
        return Rows(_Shape(checked.n, checked.d), A_c)

    def statistic(self, inputs: _SketchChecked, rows: Rows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        return {"reports": Drawn(lambda releaser: _simulate_reports(
            rows.source, inputs.setup, releaser, inputs.inputs.simulate_sum))}

    def post_process(self, inputs: _SketchChecked, rows: Rows, released: Released,
                     report: Any) -> LowRankResult:
        """The server's solve (post-processing of the users' reports)."""
        Y_c, Z = released["reports"]
        U_hat, s = _solve(Y_c, Z, inputs.setup.S, inputs.k)
        return LowRankResult(U=U_hat, S=s, V=None, privacy=report, diagnostics=_protocol_diagnostics(
            inputs.setup, inputs.noise, inputs.setup.seed, inputs.inputs.simulate_sum))


@dataclass(frozen=True)
class _Shape:
    n: int
    d: int


def _lrf_inputs(owner: str, *, row_norm: Any, relation: Any, row_change: Any, calibration: str,
                sketch_sensitivity: str, **values: Any) -> tuple[PrivacyBudget, float]:
    """The public inputs of :func:`private_local_lrf`: the budget and the distance ``2 C`` of the plan."""
    values.update(calibration=calibration, sketch_sensitivity=sketch_sensitivity, row_change=row_change)
    check_params(LRF_TABLE, values, owner)
    budget = PrivacyBudget(values["epsilon"], values["delta"])
    budget.require_delta(owner)
    rel = as_relation(relation, owner=owner)
    if rel is not Relation.LOCAL:
        raise ValueError(
            f"The 'relation' parameter of {owner} must be 'local' (a local-model protocol). Got "
            f"{rel.value!r} instead."
        )
    if sketch_sensitivity == "drawn" and calibration != "tight":
        raise ValueError(
            f"{owner}: sketch_sensitivity='drawn' has the tight calibration only. Got "
            f"calibration={calibration!r} instead."
        )
    if row_change is None:
        return budget, check_row_norm(row_norm, owner)
    return budget, float(row_change) / 2.0  # the noise plan's distance is 2 C


#: The parameters that only the paper's sketch protocol has: setting one selects ``protocol="sketch"``.
_SKETCH_ONLY = ("row_change", "calibration", "sketch.sensitivity", "sketch.subspace_size",
                "sketch.affine_size", "sketch.seed")
#: Failure probability of the noise edge below which the gram protocol's singular values are set to 0.
_EDGE_FAILURE = 1e-3


def _protocol(protocol: str | None, sketch_args: dict[str, Any], owner: str) -> str:
    """The protocol: ``"gram"`` (default) unless a parameter of the paper's sketch protocol is set.

    A public choice (it reads the arguments only). ``protocol="gram"`` with a sketch-only parameter is
    refused (it would be ignored).
    """
    defaults = {"row_change": None, "calibration": "tight", "sketch.sensitivity": "per_pair"}
    given = [name for name in _SKETCH_ONLY if sketch_args.get(name) != defaults.get(name)]
    if protocol is None:
        return "sketch" if given else "gram"
    if protocol == "gram" and given:
        raise ValueError(
            f"{owner}: {', '.join(given)} belong(s) to the paper's sketch protocol (protocol='sketch'); "
            "protocol='gram' has no sketch, no row_change and the tight calibration only."
        )
    return protocol


def _gram_protocol(A: Any, k: int, budget: PrivacyBudget, C: float, *, simulate_sum: bool,
                   on_norm_violation: NormViolation, accountant: Accountant | None,
                   random_state: Any) -> RowSubspaceResult:
    """``protocol="gram"``: every user sends the Local Gaussian report of its row; V and S, no U.

    Each user's report is :func:`~dpspectral.local._gaussian.local_gaussian`'s ``iso(a a^T) + noise``
    (sensitivity ``sqrt(2) C^2`` for any two rows of norm <= C: the same local relation); the server
    averages the reports, V is the top-k eigenvectors of the average, and ``S_i = sqrt(m theta_i)`` with
    ``theta_i`` the spiked-Wigner estimate of the i-th eigenvalue of ``A^T A / m`` from the observed
    ``l_i`` (``theta = (l + sqrt(l^2 - 4 tau^2 n)) / 2`` above the noise edge
    ``tau (2 sqrt(n) + 2 sqrt(ln(1/1e-3)))``, 0 below; ``tau`` the public off-diagonal noise std):
    post-processing. No U: user i's coefficients ``a_i^T V`` are its own local computation.
    """
    from ._gaussian import local_gaussian  # noqa: PLC0415 (the local package imports this module)

    A = check_matrix(A, _OWNER)
    m, n = A.shape
    k = check_rank(k, m, n, _OWNER)
    res = local_gaussian(A, k, epsilon=budget.epsilon, delta=budget.delta, row_norm=C, accountant=accountant,
                         random_state=random_state, on_norm_violation=on_norm_violation,
                         simulate_sum=simulate_sum)
    diag = res.diagnostics
    tau = diag["aggregate_noise_std"] / (math.sqrt(2.0) if diag["noise_shape"] == "goe" else 1.0)
    edge = tau * (2.0 * math.sqrt(n) + 2.0 * math.sqrt(math.log(1.0 / _EDGE_FAILURE)))
    ell = np.asarray(res.values, dtype=np.float64) / m
    above = ell > edge
    theta = np.where(above, (ell + np.sqrt(np.maximum(ell * ell - 4.0 * tau * tau * n, 0.0))) / 2.0, 0.0)
    note = ("protocol='gram' (default): every user sends the Local Gaussian report of its row "
            "(iso(a a^T) + Gaussian noise, sensitivity sqrt(2) C^2 for any two rows of norm <= C); V is the "
            "top-k eigenvectors of the average, S from its eigenvalues; no U is released (each user's "
            "coefficients a^T V are its own local computation).")
    privacy = dataclasses.replace(res.privacy, mechanism=_OWNER, notes=(*res.privacy.notes, note))
    diagnostics = {"protocol": "gram", "noise_std": diag["noise_std"], "aggregate_noise_std": tau,
                   "noise_edge": edge, "sensitivity": diag["sensitivity"],
                   "noise_multiplier": diag["noise_multiplier"], "noise_shape": diag["noise_shape"],
                   "communication_floats_per_user": diag["communication_floats_per_user"],
                   "simulate_sum": simulate_sum}
    return RowSubspaceResult(U=None, S=np.sqrt(m * theta), V=np.asarray(res.components), privacy=privacy,
                             diagnostics=diagnostics)


def _protocol_notes(noise: LocalLrfNoise, C: float, row_change: float | None,
                    sketch_sensitivity: str) -> list[str]:
    """The report's notes: what each user's report hides, and the sketch assumption."""
    if row_change is None:
        hidden = "any two rows of norm <= row_norm"
    else:
        hidden = f"any change of the row by a vector of norm <= {2 * C:g}; rows not clipped"
    notes = [
        *noise.notes,
        "Local model: each user's report is (epsilon, delta)-DP with respect to that user's own row "
        f"({hidden}); the recorded events are one user's release."
        + (
            " The per-pair sketch bounds assume the public seed was not chosen adversarially (it is fresh OS "
            "entropy unless declared) and that the rows do not depend on it."
            if sketch_sensitivity == "per_pair"
            else " Every user is calibrated to the largest column norm of S (the same noise for all)."
        ),
    ]
    if row_change is not None:
        notes.append(ROW_CHANGE_NOTE)
    return notes


def _protocol_diagnostics(setup: LocalLrfSetup, noise: LocalLrfNoise, seed: int,
                          simulate_sum: bool) -> dict[str, Any]:
    """Public facts of the run (the plan's scales, the public setup)."""
    return {
        "t": setup.t,
        "v": setup.v,
        "sigma_y": noise.sigma_y,
        "sigma_z": noise.sigma_z,
        "aggregate_noise_std_z": noise.sigma_z * math.sqrt(setup.m),
        "sensitivity": noise.sensitivity,
        "sensitivity_y": noise.sensitivity_y,
        "sensitivity_z": noise.sensitivity_z,
        "noise_multiplier": noise.noise_multiplier,
        "sketch_seed": seed,
        "communication_floats_per_user": setup.communication_floats,
        "communication_bytes_per_user": setup.communication_bytes,
        "simulate_sum": simulate_sum,
    }


for _function, _table in ((local_lrf_noise, NOISE_TABLE), (local_lrf_noise_drawn, NOISE_DRAWN_TABLE),
                          (local_lrf_report, REPORT_TABLE), (local_lrf_aggregate, {"setup": SETUP})):
    _function.parameter_constraints = dict(_table)  # type: ignore[union-attr]
private_local_lrf.parameter_constraints = dict(LRF_TABLE)  # type: ignore[attr-defined]
