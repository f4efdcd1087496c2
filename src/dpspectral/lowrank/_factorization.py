"""One-shot low-rank factorizations of Upadhyay (NeurIPS 2018): Optimal-Space-LRF (non-private),
Private-Space-Optimal-LRF (Priv1) and Private-Frobenius-LRF (Priv2).

The algorithm boxes are reconstructed in ``../shared/papers/spec-lowrank.md`` (§3, §4): the paper's text
lost its formulas. Each algorithm keeps linear sketches of the matrix, releases them with noise, and
solves a small rank-k problem on the released sketches (post-processing). The streaming, continual and
covariance variants reuse :func:`frobenius_release` / :func:`space_optimal_release` and the calibrations
here, so their privacy and accuracy are those of the one-shot versions.

Orientation: the algorithms are stated for ``m <= n``; for ``m > n`` they run on ``A^T`` and swap U
and V (the relations are symmetric under transposition: ``(u v^T)^T = v u^T``, ``||E^T||_F = ||E||_F``).

Every mechanism of the package reads validate -> plan -> release -> post-process: the parameters are
checked by its constraint table (:data:`PRIVATE_LRF_TABLE`) and the matrix as a whole; the plan
(:func:`frobenius_plan`, :func:`space_optimal_noise`) is built from public inputs only; the release
(:func:`~dpspectral.privacy._pipeline.release`) charges it and hands out the noise, which is drawn only
through the releaser (a sketch pair is one joint release, :func:`add_joint`); the public sketches come
from their public seed, never from the noise source. ``random_state="secure"`` selects the exact
discrete samplers (:mod:`dpspectral.privacy._noise`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._constraints import (
    CALIBRATION,
    PRIVACY_PARAMETERS,
    RANDOM_STATE,
    SHARE,
    Calibration,
    Constraint,
    Interval,
    Options,
    check_params,
    renamed,
    validated,
    without,
)
from .._results import LowRankResult
from .._rows import as_numeric_array, not_finite_error
from .._validation import check_budget, check_choice
from ..privacy._accounting import Accountant, EpsilonDeltaDpEvent
from ..privacy._budget import PrivacyBudget, Relation, as_relation
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser, public_seed
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run, unprotected_generator
from ._sketch_options import (
    SKETCH_OPTION,
    SKETCH_SEED,
    Sketch,
    failure_share_of,
    sketch_keywords,
    sketch_plan,
)
from ._sketches import (
    ALPHA,
    PAPER_SIZE_NAMES,
    SketchKind,
    SketchSizes,
    chi2_factor,
    finish,
    orth_columns,
    rank_k_between,
    rank_k_left,
    sketch_matrix,
    sketch_sizes,
    svd_top_k,
)

__all__ = [
    "BOUND",
    "FrobeniusNoise",
    "SKETCH_SEED",
    "UncountedMatrix",
    "add_joint",
    "check_matrix",
    "frobenius_noise",
    "frobenius_plan",
    "frobenius_release",
    "frobenius_sketch",
    "frobenius_sketches",
    "joint",
    "optimal_space_lrf",
    "private_frobenius_lrf",
    "private_space_optimal_lrf",
    "space_optimal_release",
    "split_joint",
]


#: The public scale b of the Priv1/Priv2 relations (and any other positive bound).
BOUND = Interval(0, None, "neither")
#: How the released singular values are chosen: shrunk by the noise edge (default) or the paper's raw ones.
SINGULAR_VALUES = Options(("shrink", "raw"))
SingularValues = Literal["shrink", "raw"]

#: The parameters every private factorization of this package takes (cross-parameter checks, k <= min(m,
#: n) and the sketch sizes within the dimensions, stay in the functions).
PRIVATE_LRF_TABLE: dict[str, Constraint | list[Constraint] | None] = {
    **without(PRIVACY_PARAMETERS, "row_norm", "on_norm_violation"),  # a matrix, whose change is "bound"
    "alpha": ALPHA,
    "bound": BOUND,
    "sketch": SKETCH_OPTION,
}


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def check_matrix(A: Any, owner: str) -> Any:
    """A finite 2-D float array or scipy.sparse matrix (never modified; copied only if not float).

    The whole matrix is checked before anything is charged (validate, then charge, then release:
    :mod:`dpspectral.privacy._pipeline`). A NaN or infinity is refused with a message that names no
    entry, no value and no count (:func:`~dpspectral.privacy._pipeline.not_finite_error`).
    """
    # numeric, real and 2-D, with refusals that quote nothing from the matrix (as_numeric_array)
    checked = as_numeric_array(A, owner, accept_sparse=True)
    if sp.issparse(checked):
        M = sp.csr_matrix(checked, dtype=np.float64)
        if not np.isfinite(M.data).all():
            raise not_finite_error(owner)
    else:
        M = np.asarray(checked, dtype=np.float64)
        step = max(1, (1 << 22) // max(M.shape[1], 1))  # by rows: no m x n mask (a memmap stays unread)
        if not all(np.isfinite(M[a : a + step]).all() for a in range(0, M.shape[0], step)):
            raise not_finite_error(owner)
    if min(M.shape) < 1:
        raise ValueError(f"{owner}: the matrix is empty (shape {M.shape}).")
    return M


def check_rank(k: Any, m: int, n: int, owner: str) -> int:
    """The rank k, an int in [1, min(m, n)] (a bound that depends on the data's public shape)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= min(m, n):
        raise ValueError(
            f"The 'k' parameter of {owner} must be an int in [1, min(m, n) = {min(m, n)}]. Got {k!r} instead."
        )
    return int(k)


def check_positive(value: Any, name: str, owner: str) -> float:
    """``value`` as a float in (0, inf) (a one-entry constraint table)."""
    check_params({name: BOUND}, {name: value}, owner)
    return float(value)


def _relation(relation: Any, allowed: tuple[Relation, ...], owner: str) -> Relation:
    rel = as_relation(relation, owner=owner)
    if rel not in allowed:
        names = ", ".join(repr(r.value) for r in allowed)
        raise ValueError(
            f"The 'relation' parameter of {owner} must be one of {names}. Got {rel.value!r} instead."
        )
    return rel


def _seed(sketch_seed: Any, name: str = "sketch_seed", owner: str = "dpspectral") -> int:
    """The seed of a public sketch: the caller's declared public int, or fresh OS entropy.

    Never drawn from the secret ``random_state`` generator
    (:func:`~dpspectral.privacy._pipeline.public_seed`):
    a published seed drawn from it lets anyone recover that generator by search and subtract the noise.
    With ``sketch_seed=None`` a run is reproducible only when the seed is declared.
    """
    check_params({name: SKETCH_SEED}, {name: sketch_seed}, owner)
    return public_seed(None if sketch_seed is None else int(sketch_seed))


#: The note every sketch-based release carries: the per-pair sketch bounds need data that do not
#: depend on the drawn sketch.
SKETCH_NOTE = (
    "The per-pair sketch bounds hold for data that do not depend on the drawn public sketches: the "
    "sketch seed is fresh OS entropy drawn after the data are given, unless the caller declares "
    "sketch_seed (then the data must not have been chosen with knowledge of that seed). random_state "
    "seeds the secret noise only and must itself stay secret."
)


# ----------------------------------------------------------------------------------------------
# joint releases: several sketches released as one Gaussian mechanism
# ----------------------------------------------------------------------------------------------


def add_joint(releaser: Releaser, name: str, parts: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``parts`` released together as one vector (one Gaussian mechanism, one L2 sensitivity).

    The planned noise of release ``name`` is added to the concatenation of the raveled parts, which is
    then split back. With the seeded source the draws are those of one ``rng.normal`` per part, in
    order (a Generator's normal draws do not depend on how the sizes are split); with the secure source
    the rounding to the grid is accounted over all the coordinates of the joint release at once.
    """
    arrays = [np.asarray(p, dtype=np.float64) for p in parts]
    noisy = np.asarray(releaser.add(name, joint(*arrays)))
    return split_joint(noisy, [a.shape for a in arrays])


def joint(*parts: Any) -> np.ndarray:
    """The parts raveled (C order, as float64) and concatenated: the statistic of one joint release."""
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])


def split_joint(flat: np.ndarray, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """A flat vector cut into consecutive arrays of the given shapes (C order)."""
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(flat[start : start + size].reshape(shape))
        start += size
    return out


# ----------------------------------------------------------------------------------------------
# Private-Frobenius-LRF (Priv2): calibration, sketches, release
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrobeniusNoise:
    """The noise plan of the Priv2 sketches ``Y_c = A Phi + N1`` (m x t) and ``Z = S A + N2`` (v x n).

    ``sigma`` is the std of every entry of N1 and N2; ``sensitivity`` the per-pair L2 sensitivity of
    the pair ``(Y_c, Z)`` (which holds except with probability ``sketch_delta``); ``events`` what the
    release spends.
    """

    sigma: float
    sensitivity: float
    sketch_delta: float
    events: tuple[dp_accounting.DpEvent, ...]
    notes: tuple[str, ...] = ()

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity


@validated({"calibration": CALIBRATION, "alpha": ALPHA, "sketch_failure_share": SHARE,
            "bound": BOUND, "levels": Interval(1, None, "left", integer=True)})
def frobenius_noise(
    epsilon: float,
    delta: float,
    sizes: SketchSizes,
    *,
    bound: float = 1.0,
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch_failure_share: float = 0.1,
    levels: int = 1,
    owner: str = "private_frobenius_lrf",
    shape: tuple[int, int] | None = None,
) -> FrobeniusNoise:
    """Noise of the Priv2 sketches for a target (epsilon, delta).

    Sensitivity (spec §4, R-derive): for neighbours ``||A - A'||_F <= b`` (b = ``bound``), ``||E Phi||_F^2
    <= c_t b^2`` and ``||S E||_F^2 <= c_v b^2`` except with probability ``delta_s`` each (Laurent–Massart,
    :func:`~dpspectral.lowrank._sketches.chi2_factor`), so the pair has L2 sensitivity
    ``Delta = b sqrt(c_t + c_v)``. ``levels`` > 1 (continual release: one update enters ``levels``
    tree nodes with independent noise) multiplies the joint sensitivity by ``sqrt(levels)``.
    ``sketch_failure_share`` of delta goes to the two sketch failures, the rest to the Gaussian.

    With ``shape=(m, n)`` (the oriented matrix, m <= n) a sketch as large as the dimension it sketches is
    the identity (:func:`embedding`), whose factor is exactly 1; without it the Gaussian factors are used
    (never smaller, so still sound).

    ``calibration="tight"``: the analytic Gaussian multiplier for (epsilon, delta_g).
    ``calibration="paper"``: ``rho_1 = sqrt((1 + alpha) ln(1/delta)) / epsilon`` times b (spec §2, recalled),
    reported with what the accountant certifies for it under our sensitivity.

    ``owner`` is kept for the callers' signatures; the parameters are checked by this function's
    constraint table.
    """
    delta_sketch = float(sketch_failure_share) * delta
    delta_s = delta_sketch / 2
    if shape is None:
        c_t, c_v = chi2_factor(sizes.t, delta_s), chi2_factor(sizes.v, delta_s)
    else:
        c_t, c_v = embedding_factor(sizes.t, shape[1], delta_s), embedding_factor(sizes.v, shape[0], delta_s)
    sens = bound * math.sqrt((c_t + c_v) * levels)
    notes: list[str] = []
    if calibration == "tight":
        sigma = analytic_noise_multiplier(epsilon, delta - delta_sketch) * sens
    else:
        sigma = math.sqrt((1 + alpha) * math.log(1 / delta)) / epsilon * bound * math.sqrt(levels)
        notes.append(
            "calibration='paper': rho_1 = sqrt((1+alpha) ln(1/delta))/epsilon for both sketches (recalled in "
            "spec-lowrank.md §2; the paper's per-pair sensitivity 1+alpha needs sketches larger than ours); "
            "certified only for the epsilon the accountant confirms under the Laurent-Massart sensitivity."
        )
    events = (dp_accounting.GaussianDpEvent(sigma / sens), EpsilonDeltaDpEvent(0.0, delta_sketch))
    return FrobeniusNoise(
        sigma=sigma, sensitivity=sens, sketch_delta=delta_sketch, events=events, notes=tuple(notes)
    )


def embedding(rows: int, cols: int, rng: np.random.Generator, kind: SketchKind = "gaussian") -> Any:
    """A ``rows x cols`` sketch, or the identity (``cols x cols``) when ``rows >= cols``.

    A square Gaussian matrix is a poor embedding (its condition number grows with the dimension) and
    no compression is gained: the identity is exact, and its per-pair factor is 1.
    """
    if rows >= cols:
        return np.eye(cols)
    return sketch_matrix(kind, rows, cols, rng)


def embedding_factor(rows: int, cols: int, delta_s: float) -> float:
    """The per-pair factor of :func:`embedding`: 1 for the identity, else ``chi2_factor(rows, delta_s)``."""
    return 1.0 if rows >= cols else chi2_factor(rows, delta_s)


def frobenius_sketches(m: int, n: int, sizes: SketchSizes, sketch_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The public sketches ``Phi`` (n x t, N(0, 1/t)) and ``S`` (v x m, N(0, 1/v)) from their seed.

    A sketch as large as its dimension is the identity (:func:`embedding`).
    """
    rng = np.random.default_rng(sketch_seed)
    Phi = embedding(sizes.t, n, rng).T
    S = embedding(sizes.v, m, rng)
    return np.ascontiguousarray(Phi), np.asarray(S)


def frobenius_plan(label: str, relation: Relation, noise: FrobeniusNoise, notes: Sequence[str] = (),
                   *, per_release_sensitivity: float | None = None) -> ReleasePlan:
    """The release plan of the Priv2 sketch pair: one Gaussian release ``"sketches"`` of ``(Y_c, Z)``.

    ``per_release_sensitivity`` (default: the pair's sensitivity) is the L2 sensitivity of one release
    of the pair; the continual tree gives ``Delta / sqrt(L)`` (one node of the L that a change enters).
    """
    sens = noise.sensitivity if per_release_sensitivity is None else per_release_sensitivity
    return ReleasePlan(label, relation, noise.events,
                       (NoisyRelease("sketches", "gaussian", noise.sigma, sens),), notes=tuple(notes))


def frobenius_sketch(B: Any, Phi: np.ndarray, S: np.ndarray, releaser: Releaser,
                     name: str = "sketches") -> tuple[np.ndarray, np.ndarray]:
    """The released Priv2 sketches ``(Y_c, Z) = (B Phi + N1, S B + N2)``, one joint release ``name``.

    The noise (i.i.d. ``N(0, sigma^2)``, the planned scale) comes from ``releaser`` (inside its
    release block); N1 is drawn before N2.
    """
    Y_c, Z = add_joint(releaser, name, [_dense(B @ Phi), _dense((B.T @ S.T).T)])
    return Y_c, Z


def frobenius_release(
    Y_c: np.ndarray, Z: np.ndarray, S: np.ndarray, k: int, sigma: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2–5 of Private-Frobenius-LRF on released sketches: ``(U, s, V)``, post-processing only.

    ``U = orth(Y_c)``; ``X = argmin_{rank <= k} ||Z - (S U) X||_F`` (:func:`rank_k_left`); the top-k SVD
    ``X = U' s V'^T`` gives ``U U'``, ``s``, ``V'``. ``sigma``: the std of the noise of Y_c and Z (one
    joint release); when > 0, U keeps only the directions of Y_c above its noise edge (at least k,
    :func:`_resolved_range`) and the solve is
    repeated with its core ``U_c^T Z`` (t x n, its noise i.i.d. of that std) shrunk by the noise edge
    (``singular_values="shrink"``: a value below the edge gets 0), and ``s_i = max(0, u_i'^T X_shrunk
    v_i')`` along the raw solve's vectors (so V is the raw one).
    """
    U = orth_columns(Y_c) if sigma <= 0 else _resolved_range(Y_c, sigma, k)
    X = rank_k_left(S @ U, Z, k)
    Up, s, Vp = svd_top_k(X, k)
    if sigma > 0:  # the raw solve's vectors, the shrunk solve's values along them
        s = _values_along(Up, rank_k_left(S @ U, Z, k, sigma), Vp)
    return finish(U @ Up, s, Vp)


def _resolved_range(Y_c: np.ndarray, sigma: float, k: int) -> np.ndarray:
    """The left singular vectors of ``Y_c`` (m x t, noise i.i.d. ``N(0, sigma^2)``) whose singular values
    clear the noise edge (:func:`.shrink.noise_threshold`), at least k of them: the paper's ``orth(Y_c)``
    when every direction is resolved (large entries), its top-k part when the tail is noise, which the
    solve would otherwise mix into U (MNIST, 20,000 unit rows, eps = 16: subspace error 1.31 -> 1.24)."""
    from ._shrink import noise_threshold

    W, y, _ = np.linalg.svd(Y_c, full_matrices=False)
    r = max(min(k, y.size), int(np.sum(y > noise_threshold(sigma, *Y_c.shape))))
    return W[:, :r]


def _resolved_rank(Y_c: np.ndarray, Y_r: np.ndarray, so: SpaceOptimalNoise) -> int:
    """How many directions both released bases of Private-Space-Optimal-LRF resolve (post-processing).

    ``Y_c = A Omega + sigma_min Omega_2`` (m x t): its padding part is i.i.d. ``N(0, sigma_min^2)``;
    ``Y_r = Psi Â + N1`` (t x (m + n)): N1 i.i.d. ``N(0, sigma_y^2)``. A singular value of either at or
    below :func:`.shrink.noise_threshold` of its noise is indistinguishable from noise, and a direction
    that one of the two bases does not resolve makes the solve's value along the final factors
    unreliable (on 20,000 MNIST rows at epsilon 12 it gave 48 where ``l^T A r`` is 3.8): the
    factorization keeps the top ``min(r_c, r_r)`` values only.
    """
    from ._shrink import noise_threshold

    r_c = int(np.sum(np.linalg.svd(Y_c, compute_uv=False) > noise_threshold(so.sigma_min, *Y_c.shape)))
    r_r = int(np.sum(np.linalg.svd(Y_r, compute_uv=False) > noise_threshold(so.sigma_y, *Y_r.shape)))
    return min(r_c, r_r)


def _row_sketch_cap(Y_r: np.ndarray, so: SpaceOptimalNoise, k: int) -> np.ndarray:
    """Caps on the k values from ``Y_r = Psi Â + N1`` alone: its Frobenius-optimal shrinkage for N1
    (:func:`.shrink.frobenius_shrink`), less the padding's share (``x_A^2 = x^2 - sigma_min^2``), divided
    by the embedding's lower distortion ``1 - sqrt(k / t)`` (Psi is a t x m embedding: the singular values
    of ``Psi Â`` along a k-dim range lie within ``1 +- sqrt(k / t)`` of Â's, so an undivided cap would
    shrink exact values: 30 -> 22.7 on a noiseless rank-3 120 x 60 matrix at t = 12)."""
    from ._shrink import frobenius_shrink, signal_singular_values

    y = np.linalg.svd(Y_r, compute_uv=False)[:k]
    x = signal_singular_values(y, so.sigma_y, *Y_r.shape)
    eta = frobenius_shrink(y, so.sigma_y, *Y_r.shape)
    frac = np.sqrt(np.maximum(1.0 - so.sigma_min**2 / np.maximum(x * x, 1e-300), 0.0))
    distortion = max(1.0 - math.sqrt(k / Y_r.shape[0]), 0.25)
    out = np.zeros(k)
    out[: eta.size] = eta * frac / distortion
    return out


def _values_along(Up: np.ndarray, X: np.ndarray, Vp: np.ndarray) -> np.ndarray:
    """``max(0, u_i^T X v_i)``: the best non-negative diagonal for fixed factors (least squares)."""
    return np.maximum(np.einsum("ik,ij,jk->k", Up, X, Vp), 0.0) + 0.0  # no -0.0


# ----------------------------------------------------------------------------------------------
# Private-Space-Optimal-LRF (Priv1): release
# ----------------------------------------------------------------------------------------------


def space_optimal_release(
    Y_c: np.ndarray, Y_r: np.ndarray, Z: np.ndarray, S: np.ndarray, T: np.ndarray, k: int, n: int,
    sigma: float = 0.0, range_sigmas: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 3–6 of (Private-)Space-Optimal-LRF on released sketches, then the m x n answer.

    ``U = orth(Y_c)`` (m x t), ``V = orth(Y_r^T)^T`` (t x N); ``X = argmin_{rank<=k} ||Z - (S U) X (V T^T)||``
    (:func:`rank_k_between`, eq. 17); ``X = U' s V'^T``; ``U U'``, ``s``, ``V^T V'`` factor an N-column
    matrix (N = n, or m + n with the padding of Priv1, whose last m columns are dropped: the SVD of
    ``U U' diag(s) (V^T V')[:n]^T`` is the answer; spec §3 notes). ``sigma`` > 0: Z's noise std, the
    core's singular values shrunk by the noise edge (as :func:`frobenius_release`). ``range_sigmas`` =
    ``(sigma_min, sigma_y)``: the noise stds of ``Y_c`` (its padding part) and ``Y_r``; U and V then keep
    only the directions above each one's noise edge (at least k, :func:`_resolved_range`).
    """
    if range_sigmas is None:
        U, V = orth_columns(Y_c), orth_columns(Y_r.T).T
    else:
        U, V = _resolved_range(Y_c, range_sigmas[0], k), _resolved_range(Y_r.T, range_sigmas[1], k).T
    X = rank_k_between(S @ U, Z, V @ T.T, k)
    Up, s, Vp = svd_top_k(X, k)
    if sigma > 0:  # the raw solve's vectors, the shrunk solve's values along them
        s = _values_along(Up, rank_k_between(S @ U, Z, V @ T.T, k, sigma), Vp)
    left, right = U @ Up, (V.T @ Vp)[:n]
    # SVD of left diag(s) right^T through a QR of the (n x k) right factor
    Q, R = np.linalg.qr(right)
    u2, s2, v2 = svd_top_k((s[:, None] * R.T), k)
    return finish(left @ u2, s2, Q @ v2)


def space_optimal_finish(Y_c: np.ndarray, Y_r: np.ndarray, Z: np.ndarray, S: np.ndarray, T: np.ndarray,
                          k: int, n: int, so: SpaceOptimalNoise,
                          singular_values: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The post-processing of released ``(Y_c, Y_r, Z)``, shared by the one-shot and turnstile Priv1
    methods: the solve, then with "shrink" the directions both released bases resolve, each value at
    most ``Y_r``'s estimate (:func:`_resolved_rank`, :func:`_row_sketch_cap`)."""
    shrink_sigma = so.sigma_z if singular_values == "shrink" else 0.0
    ranges = (so.sigma_min, so.sigma_y) if singular_values == "shrink" else None
    U, s, V = space_optimal_release(Y_c, Y_r, Z, S, T, k, n, shrink_sigma, ranges)
    if singular_values == "shrink":
        keep = np.arange(s.size) < _resolved_rank(Y_c, Y_r, so)
        s = np.minimum(s, _row_sketch_cap(Y_r, so, s.size)) * keep + 0.0  # + 0.0: no -0.0
    return U, s, V


def _space_optimal_sketches(
    m: int, N: int, sizes: SketchSizes, sketch_seed: int, kind: SketchKind = "gaussian"
) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(sketch_seed)
    Psi = embedding(sizes.t, m, rng, kind)
    S = embedding(sizes.v, m, rng, kind)
    T = embedding(sizes.v, N, rng, kind)
    return Psi, S, T


@dataclass(frozen=True)
class SpaceOptimalNoise:
    """The plan of Private-Space-Optimal-LRF: padding ``sigma_min``, noise of ``(Y_r, Z)``, events.

    ``plan`` releases ``(Y_r, Z)`` jointly as ``"sketches"`` (tight calibration: one Gaussian of
    sensitivity ``sensitivity``) or separately as ``"Y_r"`` and ``"Z"`` (paper calibration: each with
    its own sensitivity); the input-perturbed ``Y_c`` is the BBDS event of ``plan.events`` (no additive
    noise).
    """

    plan: ReleasePlan
    sigma_min: float
    sigma_y: float
    sigma_z: float
    sensitivity: float
    epsilon_input: float


def space_optimal_noise(owner: str, budget: PrivacyBudget, relation: Relation, sizes: SketchSizes,
                        shape: tuple[int, int], *, bound: float, calibration: str, alpha: float,
                        input_share: float, sketch_failure_share: float) -> SpaceOptimalNoise:
    """The plan of Priv1 for the oriented shape ``(m, n)`` (m <= n), from public inputs only.

    See :func:`private_space_optimal_lrf`'s Privacy section for the derivation of every quantity.
    """
    from ..privacy import _bbds as bbds

    m, n = shape
    eps, dlt, b = budget.epsilon, budget.delta, bound
    delta_sketch = sketch_failure_share * dlt
    delta_part = (dlt - delta_sketch) / 2
    delta_s = delta_sketch / 3
    c_psi = embedding_factor(sizes.t, m, delta_s)
    c_s, c_tt = embedding_factor(sizes.v, m, delta_s), embedding_factor(sizes.v, m + n, delta_s)
    d1, d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s * c_tt)
    sens = math.hypot(d1, d2)
    notes: list[str] = []
    if calibration == "tight":
        eps_c = input_share * eps
        sigma_min = b * bbds.min_sigma_min(eps_c, delta_part, sizes.t)
        sigma1 = sigma2 = analytic_noise_multiplier(eps - eps_c, delta_part) * sens
        releases: tuple[NoisyRelease, ...] = (NoisyRelease("sketches", "gaussian", sigma1, sens),)
    else:
        sigma_min = b * bbds.paper_sigma_min(eps, dlt, sizes.t, alpha)
        eps_c = _bbds_epsilon(sigma_min / b, delta_part, sizes.t)
        sigma1 = math.sqrt((1 + alpha) * math.log(1 / dlt)) / eps * b
        sigma2 = (1 + alpha) * math.sqrt(math.log(1 / dlt)) / eps * b
        releases = (NoisyRelease("Y_r", "gaussian", sigma1, d1), NoisyRelease("Z", "gaussian", sigma2, d2))
        notes.append(
            "calibration='paper': sigma_min = 16 ln(1/delta) sqrt(t kappa ln(1/delta))/epsilon, rho_1, rho_2 "
            "as "
            "recalled in spec-lowrank.md §2; the input-perturbed sketch is accounted exactly (BBDS "
            "accountant) and the Gaussian sketches under the Laurent-Massart sensitivities."
        )
    gauss = [dp_accounting.GaussianDpEvent(r.scale / (r.sensitivity or 1.0)) for r in releases]
    events = (bbds.bbds_event(eps_c, delta_part), *gauss, EpsilonDeltaDpEvent(0.0, delta_sketch))
    plan = ReleasePlan(owner, relation, events, releases, notes=(*notes, SKETCH_NOTE))
    return SpaceOptimalNoise(plan, sigma_min, sigma1, sigma2, sens, eps_c)


def _space_optimal_sketch(B: Any, Psi: np.ndarray, S: np.ndarray, T: np.ndarray, so: SpaceOptimalNoise,
                          releaser: Releaser) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The released ``(Y_c, Y_r, Z)`` of Priv1 (inside the release block; draws in a fixed order:
    Omega's seed, then the noise of Y_r and Z).

    ``Y_c = [B, sigma_min I] Omega`` with a secret ``Omega`` (input perturbation, from the secret
    generator, used once and dropped); ``Y_r = Psi Â + N1`` and ``Z = S Â T^T + N2`` with the planned
    noise.
    """
    m, n = B.shape
    N = m + n
    secret = np.random.default_rng(releaser.integers(0, 2**63 - 1))  # Omega: secret, used once
    Omega = secret.standard_normal((N, Psi.shape[0]))
    Y_c = _dense(B @ Omega[:n]) + so.sigma_min * Omega[n:]
    del Omega
    Y_r = np.hstack([_dense((B.T @ Psi.T).T), so.sigma_min * Psi])
    SB = _dense((B.T @ S.T).T)  # S A (v x n)
    Z = SB @ T[:, :n].T + so.sigma_min * (S @ T[:, n:].T)
    if len(so.plan.releases) == 1:  # tight: one Gaussian mechanism for the pair
        Y_r, Z = add_joint(releaser, "sketches", [Y_r, Z])
    else:
        Y_r, Z = releaser.add("Y_r", Y_r), releaser.add("Z", Z)
    return Y_c, Y_r, Z


def _dense(M: Any) -> np.ndarray:
    return np.asarray(M.toarray() if sp.issparse(M) else M)


def _orient(A: Any) -> tuple[Any, bool]:
    m, n = A.shape
    return (A.T, True) if m > n else (A, False)


def _result(
    U: np.ndarray, s: np.ndarray, V: np.ndarray, transposed: bool, privacy: Any, diagnostics: dict[str, Any]
) -> LowRankResult:
    if transposed:  # A^T ~ U s V^T, so A ~ V s U^T; re-fix the signs on the new left factor
        U, s, V = finish(V, s, U)
    return LowRankResult(U=U, S=s, V=V, privacy=privacy, diagnostics=diagnostics)


def _bbds_epsilon(sigma_min: float, delta: float, t: int) -> float:
    """The smallest epsilon (to 1e-4 relative, rounded up) at which the padded sketch is (eps, delta)-DP."""
    from ..privacy import _bbds as bbds

    lo, hi = 0.0, 1.0
    while bbds.bbds_delta(hi, sigma_min, t) > delta:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            return math.inf
    while hi - lo > 1e-4 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if bbds.bbds_delta(mid, sigma_min, t) <= delta else (mid, hi)
    return hi


# ----------------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------------


@renamed(PAPER_SIZE_NAMES)
@validated({"alpha": ALPHA, "random_state": RANDOM_STATE})
def optimal_space_lrf(
    A: Any,
    k: int,
    *,
    alpha: float = 0.25,
    subspace_sketch_size: int | None = None,
    affine_sketch_size: int | None = None,
    sketch: SketchKind = "gaussian",
    random_state: Any = None,
) -> LowRankResult:
    """Optimal-Space-LRF (non-private reference; Upadhyay's Figure 2 without padding or noise).

    ``Y_c = A Omega`` (m x t), ``Y_r = Psi A`` (t x n), ``Z = S A T^T`` (v x v), then the closed-form
    rank-k solve (:func:`space_optimal_release`). With ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)``
    (capped by the dimensions) the result is (1 + alpha)-optimal with constant probability (Thm 5's
    non-private part; our measured ratios are in docs/algorithms/lowrank.md).

    Parameters
    ----------
    A : array-like or sparse matrix of shape (m, n)
    k : int
        Rank, in [1, min(m, n)].
    alpha : float in (0, 1)
        Multiplicative error target; sets the default sketch sizes.
    subspace_sketch_size : int, optional
        t in the paper: columns of ``Y_c = A Omega``, rows of ``Y_r = Psi A`` (default ``ceil(k/alpha)``,
        capped by n). Overrides alpha's default; the old name ``t`` still works (FutureWarning).
    affine_sketch_size : int, optional
        v in the paper: rows of the affine sketches S, T of the rank-k solve (default
        ``ceil(k/alpha^2)``, capped). Overrides alpha's default; the old name ``v`` still works.
    sketch : {"gaussian", "countsketch", "srht"}
        The kind of every sketch (any subspace embedding works without privacy).
    random_state : None, int, SeedSequence, Generator or "secure"
        Draws the sketches (nothing is secret here; ``"secure"`` draws them from OS entropy).

    Returns
    -------
    LowRankResult
        ``privacy`` is None (nothing is protected).

    Privacy
    -------
    None: a non-private reference (no relation, nothing charged, no noise).
    """
    owner = "optimal_space_lrf"
    A = check_matrix(A, owner)
    check_choice(sketch, "sketch", ("gaussian", "countsketch", "srht"), owner)
    B, transposed = _orient(A)
    m, n = B.shape
    k = check_rank(k, m, n, owner)
    sizes = sketch_sizes(k, alpha, m, n, subspace_sketch_size=subspace_sketch_size,
                         affine_sketch_size=affine_sketch_size, owner=owner)
    rng = unprotected_generator(random_state)
    seed = int(rng.integers(0, 2**63 - 1))  # non-private: nothing is secret, the sketches come from rng
    Psi, S, T = _space_optimal_sketches(m, n, sizes, seed, sketch)
    Omega = embedding(sizes.t, n, rng, sketch).T
    Y_c = _dense(B @ Omega)
    Y_r = _dense(Psi @ B)
    Z = _dense(S @ _dense(T @ B.T).T)
    U, s, V = space_optimal_release(Y_c, Y_r, Z, _dense(S), _dense(T), k, n)
    diag = {
        "t": sizes.t,
        "v": sizes.v,
        "sketch": sketch,
        "transposed": transposed,
    }
    return _result(U, s, V, transposed, None, diag)


@sketch_keywords
@validated({**PRIVATE_LRF_TABLE, "singular_values": SINGULAR_VALUES})
def private_frobenius_lrf(
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
    singular_values: SingularValues = "shrink",
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Private-Frobenius-LRF (Priv2; Upadhyay's Figure 4, Theorem 40).

    ``Y_c = A Phi + N1`` (m x t) and ``Z = S A + N2`` (v x n), both released with Gaussian noise; then
    ``U = orth(Y_c)``, ``X = argmin_{rank<=k} ||Z - S U X||_F``, and the SVD of X gives the factors
    (post-processing). Expected error ``(1+alpha) ||A - [A]_k||_F + O(sqrt(k)(sqrt(m) + sqrt(n)) sigma)``.

    Parameters
    ----------
    A : array-like or sparse matrix of shape (m, n)
        The private matrix; never modified.
    k : int
        Rank in [1, min(m, n)].
    epsilon, delta : float
        The target; delta in (0, 1).
    relation : {"priv2", "priv1"}
        Priv2 (default) covers Priv1; the noise is the same.
    calibration : {"tight", "paper"}
    alpha : float in (0, 1)
        Sets the default sketch sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)`` (capped).
    sketch : Sketch, optional
        The sketches (:class:`~dpspectral.lowrank.Sketch`): t the columns of ``Y_c = A Phi`` (Phi:
        n x t), v the rows of ``Z = S A`` (S: v x m) of the rank-k solve, the share of delta that covers
        their norm bounds failing, and the public seed of Phi and S (fresh OS entropy if not given; never
        drawn from ``random_state``, which is secret).
    bound : float
        Public scale b of the relation: neighbours differ by ``||A - A'||_F <= b`` (default 1, the paper's).
    singular_values : {"shrink", "raw"}
        ``"shrink"`` (default): the rank-k solve's core ``U_c^T Z`` (its noise i.i.d. of std sigma) has its
        singular values shrunk by the noise edge (:func:`~dpspectral.lowrank._shrink.frobenius_shrink`;
        a value below ``sigma (sqrt(t) + sqrt(n) + 3.7)`` gets 0), so a release that is all noise
        reconstructs to the zero matrix instead of something worse; and the range basis keeps only the
        directions of ``Y_c`` above its noise edge (at least k; all t where the entries are large).
        Post-processing of released values. ``"raw"``: the paper's plain solve and truncation.
    accountant : Accountant, optional
        Ledger spent before any noise is drawn.
    random_state : None, int, SeedSequence, Generator or "secure"
        Seeds the secret noise (and nothing published): keep it secret. A run is reproducible when
        both ``random_state`` and the sketch's seed are given. ``"secure"``: OS entropy and exact
        discrete Gaussian noise (:mod:`dpspectral.privacy._noise`), for deployment.

    Returns
    -------
    LowRankResult
        U (m, k), S (k,), V (n, k); diagnostics ``t``, ``v``, ``sigma``, ``sensitivity``, ``sketch_seed``.

    Raises
    ------
    ValueError
        For an invalid parameter or matrix (not finite, empty, ``k`` above ``min(m, n)``), before anything
        is charged.
    BudgetExceededError
        If the release would exceed the accountant's ceiling (nothing is drawn).

    Privacy
    -------
    Relation Priv2 (``||A - A'||_F <= b``; hence Priv1). For E = A - A': ``||E Phi||_F^2 <= c_t ||E||_F^2``
    and ``||S E||_F^2 <= c_v ||E||_F^2``, each except with probability delta_s, for the data-independent
    Gaussian sketches (Laurent–Massart; :func:`~dpspectral.lowrank._sketches.chi2_factor`). The pair
    ``(Y_c, Z)`` is one Gaussian mechanism with L2 sensitivity ``b sqrt(c_t + c_v)``: events
    ``GaussianDpEvent(sigma / Delta)`` and ``EpsilonDeltaDpEvent(0, 2 delta_s)`` (the sketch failures),
    composed by the accountant. Everything after the release reads only ``Y_c``, ``Z`` and the public S.
    The per-pair bounds need a matrix that does not depend on the sketches: their seed is OS entropy
    drawn after A is given (or declared by the caller), never drawn from ``random_state``. The whole
    matrix is validated before the ledger is charged.
    """
    return run(_Frobenius(), _LRFInputs(
        "private_frobenius_lrf", k, epsilon, delta, relation, calibration, alpha, sketch, bound,
        singular_values,
    ), A, RunSettings(accountant, random_state))


@sketch_keywords
@validated({**PRIVATE_LRF_TABLE, "input_share": SHARE, "singular_values": SINGULAR_VALUES})
def private_space_optimal_lrf(
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
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> LowRankResult:
    """Private-Space-Optimal-LRF (Priv1; Upadhyay's Figure 2, Theorem 5).

    Orientation m <= n (else on ``A^T``). Pad ``Â = [A, sigma_min I_m]``; release ``Y_c = Â Omega``
    (input perturbation: Omega (m+n) x t i.i.d. N(0, 1), secret, used once), ``Y_r = Psi Â + N1``
    (t x (m+n)) and ``Z = S Â T^T + N2`` (v x v) (output perturbation); then the closed-form rank-k
    solve (:func:`space_optimal_release`) and the m x n answer. Error
    ``(1+alpha) ||A - [A]_k||_F + O(sigma_min sqrt(m) + sigma sqrt(k (m+n)))`` (spec §3).

    Parameters
    ----------
    A, k, epsilon, delta
        As in :func:`private_frobenius_lrf`.
    relation : {"priv1"}
        Input perturbation is analysed for Priv1 only.
    calibration, alpha
        As in :func:`private_frobenius_lrf`.
    sketch : Sketch, optional
        As in :func:`private_frobenius_lrf`: t the columns of ``Y_c = Â Omega`` and rows of
        ``Y_r = Psi Â``, v the rows of S and T (``Z = S Â T^T`` is v x v); the seed is Psi's, S's and T's.
    bound : float
        As in :func:`private_frobenius_lrf`; it scales the relation: ``A - A' = b u v^T``.
    input_share : float in (0, 1)
        Share of epsilon given to the input-perturbed sketch ``Y_c``; the rest goes to ``(Y_r, Z)``.
    singular_values : {"shrink", "raw"}
        As in :func:`private_frobenius_lrf`, with Z's noise std ``sigma_z`` on the t x t core.
    accountant, random_state
        As in :func:`private_frobenius_lrf`.

    Returns
    -------
    LowRankResult
        diagnostics ``t``, ``v``, ``sigma_min``, ``sigma``, ``sensitivity``, ``sketch_seed``.

    Raises
    ------
    ValueError
        For an invalid parameter or matrix, before anything is charged.
    BudgetExceededError
        If the release would exceed the accountant's ceiling (nothing is drawn).

    Privacy
    -------
    Relation Priv1 (``A' = A + b u v^T``, unit u, v). Three parts, composed by basic composition:
    (1) ``Y_c``: t i.i.d. columns ``N(0, Â Â^T)``; the accountant of :mod:`dpspectral.privacy._bbds`
    gives the smallest ``sigma_min`` for ``(eps_c, delta_c)`` (scaled by b), recorded as an
    ``EpsilonDeltaDpEvent(eps_c, delta_c)``. (2) ``(Y_r, Z)``: with ``Â' - Â = b u z^T``, z = (v, 0),
    ``||Psi u z^T||_F = ||Psi u|| <= sqrt(c_t)`` and ``||S u z^T T^T||_F = ||S u|| ||T z|| <= c_v`` except
    with probability 3 delta_s, so one Gaussian mechanism of sensitivity ``b sqrt(c_t + c_v^2)`` (a factor
    is 1 for a sketch that is the identity, :func:`embedding`).
    (3) ``EpsilonDeltaDpEvent(0, 3 delta_s)`` for the sketch failures. ``calibration="tight"`` gives
    ``(input_share eps, rest)`` of epsilon and ``(1 - sketch.failure_share) / 2`` of delta to each part;
    ``"paper"`` uses ``sigma_min = 16 ln(1/delta) sqrt(t kappa ln(1/delta)) / epsilon``,
    ``rho_1 = sqrt((1+alpha) ln(1/delta))/epsilon`` for N1 and ``rho_2 = (1+alpha) sqrt(ln(1/delta))/epsilon``
    for N2 (recalled; spec §2) and reports what the accountant certifies for them. Psi, S, T come from
    the public sketch seed (OS entropy unless declared); Omega and the noise from the secret
    ``random_state``.
    """
    return run(_SpaceOptimal(), _LRFInputs(
        "private_space_optimal_lrf", k, epsilon, delta, relation, calibration, alpha, sketch, bound,
        singular_values, input_share,
    ), A, RunSettings(accountant, random_state))


# ----------------------------------------------------------------------------------------------
# the two one-shot private factorizations as the release template runs them
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LRFInputs:
    """The public inputs of a one-shot private factorization (``input_share``: Priv1 only)."""

    owner: str
    k: int
    epsilon: float
    delta: float
    relation: Relation | str
    calibration: Calibration
    alpha: float
    sketch: Sketch | None  # the caller's; filled in and checked by ``check``
    bound: float
    singular_values: str
    input_share: float | None = None


@dataclass(frozen=True, eq=False)
class _LRFChecked:
    """The checked inputs: the budget, the relation, the oriented matrix's public shape, the sketch sizes,
    the noise plan and the public sketch seed."""

    inputs: _LRFInputs
    budget: PrivacyBudget
    relation: Relation
    calibration: str
    B: Any  # the oriented matrix (m <= n), validated whole
    transposed: bool
    k: int
    sizes: SketchSizes
    noise: Any  # FrobeniusNoise or SpaceOptimalNoise
    release_plan: ReleasePlan
    seed: int

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.B.shape[0]), int(self.B.shape[1])


@dataclass(frozen=True, eq=False)
class UncountedMatrix:
    """The matrix a release reads, with ``n`` and ``d`` None: no number of rows goes to the report."""

    B: Any
    n: None = None
    d: None = None


class _SketchLRF(Mechanism[_LRFInputs, LowRankResult]):
    """What the two one-shot factorizations share: validation, the plan, the result."""

    allowed: tuple[Relation, ...] = ()
    stacklevel = 5  # frames above run: the function, the two parameter checks, the caller

    def check(self, inputs: _LRFInputs, X: Any) -> _LRFChecked:
        owner = inputs.owner
        budget = check_budget(inputs.epsilon, inputs.delta, owner)
        rel = _relation(inputs.relation, self.allowed, owner)
        B, transposed = _orient(check_matrix(X, owner))  # the whole matrix, before anything is charged
        m, n = B.shape
        k = check_rank(inputs.k, m, n, owner)
        options, sizes = sketch_plan(inputs.sketch, k, inputs.alpha, m, self.sketched_width(m, n), owner)
        inputs = dataclasses.replace(inputs, sketch=options)
        noise, plan = self.noise_plan(inputs, budget, rel, sizes, (m, n))
        return _LRFChecked(inputs, budget, rel, inputs.calibration, B, transposed, k, sizes, noise, plan,
                           _seed((inputs.sketch or Sketch()).seed, owner=owner))

    def sketched_width(self, m: int, n: int) -> int:
        raise NotImplementedError

    def noise_plan(self, inputs: _LRFInputs, budget: PrivacyBudget, rel: Relation, sizes: SketchSizes,
                   shape: tuple[int, int]) -> tuple[Any, ReleasePlan]:
        raise NotImplementedError

    def plan(self, inputs: _LRFChecked, n: int | None, d: int | None) -> ReleasePlan:
        return inputs.release_plan

    def read(self, inputs: _LRFChecked, X: Any) -> UncountedMatrix:
        return UncountedMatrix(inputs.B)

    def report_facts(self, inputs: _LRFChecked) -> dict[str, Any]:
        return {"mechanism": inputs.inputs.owner, "budget": inputs.budget, "calibration": inputs.calibration}

    def result(self, inputs: _LRFChecked, factors: tuple[np.ndarray, np.ndarray, np.ndarray], report: Any,
               diagnostics: dict[str, Any]) -> LowRankResult:
        sizes = inputs.sizes
        diag = {"singular_values": inputs.inputs.singular_values, "t": sizes.t, "v": sizes.v, **diagnostics,
                "sketch_seed": inputs.seed, "transposed": inputs.transposed}
        return _result(*factors, inputs.transposed, report, diag)


class _Frobenius(_SketchLRF):
    """Private-Frobenius-LRF: one joint Gaussian release of ``(B Phi, S B)``."""

    label = "private_frobenius_lrf"
    allowed = (Relation.PRIV2, Relation.PRIV1)

    def sketched_width(self, m: int, n: int) -> int:
        return m

    def noise_plan(self, inputs: _LRFInputs, budget: PrivacyBudget, rel: Relation, sizes: SketchSizes,
                   shape: tuple[int, int]) -> tuple[FrobeniusNoise, ReleasePlan]:
        fro = frobenius_noise(budget.epsilon, budget.delta, sizes, bound=float(inputs.bound),
                              calibration=inputs.calibration, alpha=float(inputs.alpha),
                              sketch_failure_share=failure_share_of(inputs.sketch), owner=inputs.owner,
                              shape=shape)
        return fro, frobenius_plan(inputs.owner, rel, fro, notes=(*fro.notes, SKETCH_NOTE))

    def statistic(self, inputs: _LRFChecked, rows: UncountedMatrix, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        m, n = inputs.shape
        Phi, S = frobenius_sketches(m, n, inputs.sizes, inputs.seed)  # public, from their seed
        Y_c, Z = _dense(rows.B @ Phi), _dense((rows.B.T @ S.T).T)
        released["public_sketches"] = S, (Y_c.shape, Z.shape)
        return {"sketches": joint(Y_c, Z)}

    def post_process(self, inputs: _LRFChecked, rows: UncountedMatrix, released: Released,
                     report: Any) -> LowRankResult:
        fro, (S, shapes) = inputs.noise, released["public_sketches"]
        Y_c, Z = split_joint(np.asarray(released["sketches"]), shapes)
        shrink_sigma = fro.sigma if inputs.inputs.singular_values == "shrink" else 0.0
        factors = frobenius_release(Y_c, Z, S, inputs.k, shrink_sigma)
        return self.result(inputs, factors, report, {"sigma": fro.sigma, "sensitivity": fro.sensitivity,
                                                     "noise_multiplier": fro.noise_multiplier})


class _SpaceOptimal(_SketchLRF):
    """Private-Space-Optimal-LRF: the input-perturbed ``Y_c``, then ``(Y_r, Z)`` with Gaussian noise."""

    label = "private_space_optimal_lrf"
    allowed = (Relation.PRIV1,)

    def sketched_width(self, m: int, n: int) -> int:
        return m + n

    def noise_plan(self, inputs: _LRFInputs, budget: PrivacyBudget, rel: Relation, sizes: SketchSizes,
                   shape: tuple[int, int]) -> tuple[SpaceOptimalNoise, ReleasePlan]:
        so = space_optimal_noise(inputs.owner, budget, rel, sizes, shape, bound=float(inputs.bound),
                                 calibration=inputs.calibration, alpha=float(inputs.alpha),
                                 input_share=float(inputs.input_share or 0.5),
                                 sketch_failure_share=failure_share_of(inputs.sketch))
        return so, so.plan

    def statistic(self, inputs: _LRFChecked, rows: UncountedMatrix, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        m, n = inputs.shape
        Psi, S, T = _space_optimal_sketches(m, m + n, inputs.sizes, inputs.seed)  # public, from their seed
        released["public_sketches"] = (S, T)
        # the three sketches in one draw: Omega's seed, then the noise of Y_r and Z
        return {plan.releases[0].name: Drawn(
            lambda releaser: _space_optimal_sketch(rows.B, Psi, S, T, inputs.noise, releaser))}

    def post_process(self, inputs: _LRFChecked, rows: UncountedMatrix, released: Released,
                     report: Any) -> LowRankResult:
        so, (S, T) = inputs.noise, released["public_sketches"]
        Y_c, Y_r, Z = released[so.plan.releases[0].name]
        factors = space_optimal_finish(Y_c, Y_r, Z, S, T, inputs.k, inputs.shape[1], so,
                                       inputs.inputs.singular_values)
        return self.result(inputs, factors, report, {
            "sigma_min": so.sigma_min, "sigma": so.sigma_y, "sigma_z": so.sigma_z,
            "sensitivity": so.sensitivity, "epsilon_input": so.epsilon_input})
