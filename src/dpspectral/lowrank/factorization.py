"""One-shot low-rank factorizations of Upadhyay (NeurIPS 2018): Optimal-Space-LRF (non-private),
Private-Space-Optimal-LRF (Priv1) and Private-Frobenius-LRF (Priv2).

The algorithm boxes are reconstructed in ``../shared/papers/spec-lowrank.md`` (§3, §4): the paper's text
lost its formulas. Each algorithm keeps linear sketches of the matrix, releases them with noise, and
solves a small rank-k problem on the released sketches (post-processing). The streaming, continual and
covariance variants reuse :func:`frobenius_release` / :func:`space_optimal_release` and the calibrations
here, so their privacy and accuracy are those of the one-shot versions.

Orientation: the algorithms are stated for ``m <= n``; for ``m > n`` they run on ``A^T`` and swap U
and V (the relations are symmetric under transposition: ``(u v^T)^T = v u^T``, ``||E^T||_F = ||E||_F``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._validation import as_generator, check_choice
from ..privacy.accounting import Accountant, EpsilonDeltaDpEvent, certify_release
from ..privacy.budget import PrivacyBudget, Relation, as_relation
from ..privacy.gaussian import analytic_noise_multiplier
from ..privacy.pipeline import charge, not_finite_error, public_seed
from ..results import LowRankResult
from .sketches import (
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
    "FrobeniusNoise",
    "check_matrix",
    "frobenius_noise",
    "frobenius_release",
    "frobenius_sketch",
    "frobenius_sketches",
    "optimal_space_lrf",
    "private_frobenius_lrf",
    "private_space_optimal_lrf",
    "space_optimal_release",
]

Calibration = Literal["tight", "paper"]


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def check_matrix(A: Any, owner: str) -> Any:
    """A finite 2-D float array or scipy.sparse matrix (never modified; copied only if not float).

    The whole matrix is checked before anything is charged (validate, then charge, then release:
    :mod:`dpspectral.privacy.pipeline`). A NaN or infinity is refused with a message that names no
    entry, no value and no count (:func:`~dpspectral.privacy.pipeline.not_finite_error`).
    """
    if sp.issparse(A):
        if np.asarray(A.data).dtype.kind not in "biuf":
            raise TypeError(f"{owner}: the matrix must be numeric. Got a sparse matrix of dtype {A.dtype}.")
        M = sp.csr_matrix(A, dtype=np.float64)
        if not np.isfinite(M.data).all():
            raise not_finite_error(owner)
    else:
        try:
            M = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{owner}: the matrix must be a numeric 2-D array. Got {type(A).__name__}."
            ) from exc
        if M.ndim != 2:
            raise ValueError(f"{owner}: the matrix must be 2-D. Got an array of shape {M.shape}.")
        if not np.isfinite(M).all():
            raise not_finite_error(owner)
    if min(M.shape) < 1:
        raise ValueError(f"{owner}: the matrix is empty (shape {M.shape}).")
    return M


def check_rank(k: Any, m: int, n: int, owner: str) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= min(m, n):
        raise ValueError(
            f"The 'k' parameter of {owner} must be an int in [1, min(m, n) = {min(m, n)}]. Got {k!r} instead."
        )
    return int(k)


def check_positive(value: Any, name: str, owner: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and float(value) > 0)
    ):
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a float in (0, inf). Got {value!r} instead."
        )
    return float(value)


def _check_share(value: Any, name: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a float in (0, 1). Got {value!r} instead."
        )
    return float(value)


def _budget(epsilon: Any, delta: Any, owner: str) -> PrivacyBudget:
    budget = PrivacyBudget(epsilon, delta)
    budget.require_delta(owner)
    return budget


def _relation(relation: Any, allowed: tuple[Relation, ...], owner: str) -> Relation:
    rel = as_relation(relation, owner=owner)
    if rel not in allowed:
        names = ", ".join(repr(r.value) for r in allowed)
        raise ValueError(
            f"The 'relation' parameter of {owner} must be one of {names}. Got {rel.value!r} instead."
        )
    return rel


def _seed(sketch_seed: Any, name: str = "sketch_seed") -> int:
    """The seed of a public sketch: the caller's declared public int, or fresh OS entropy.

    Never drawn from the secret ``random_state`` generator (:func:`~dpspectral.privacy.pipeline.public_seed`):
    a published seed drawn from it lets anyone recover that generator by search and subtract the noise.
    With ``sketch_seed=None`` a run is reproducible only when the seed is declared.
    """
    if sketch_seed is None:
        return public_seed()
    if isinstance(sketch_seed, bool) or not isinstance(sketch_seed, numbers.Integral) or sketch_seed < 0:
        raise ValueError(
            f"The '{name}' parameter must be None or an int >= 0. Got {sketch_seed!r} instead."
        )
    return public_seed(int(sketch_seed))


#: The note every sketch-based release carries: the per-pair sketch bounds need data that do not
#: depend on the drawn sketch.
SKETCH_NOTE = (
    "The per-pair sketch bounds hold for data that do not depend on the drawn public sketches: the "
    "sketch seed is fresh OS entropy drawn after the data are given, unless the caller declares "
    "sketch_seed (then the data must not have been chosen with knowledge of that seed). random_state "
    "seeds the secret noise only and must itself stay secret."
)


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
    :func:`~dpspectral.lowrank.sketches.chi2_factor`), so the pair has L2 sensitivity
    ``Delta = b sqrt(c_t + c_v)``. ``levels`` > 1 (continual release: one update enters ``levels``
    tree nodes with independent noise) multiplies the joint sensitivity by ``sqrt(levels)``.
    ``sketch_failure_share`` of delta goes to the two sketch failures, the rest to the Gaussian.

    With ``shape=(m, n)`` (the oriented matrix, m <= n) a sketch as large as the dimension it sketches is
    the identity (:func:`embedding`), whose factor is exactly 1; without it the Gaussian factors are used
    (never smaller, so still sound).

    ``calibration="tight"``: the analytic Gaussian multiplier for (epsilon, delta_g).
    ``calibration="paper"``: ``rho_1 = sqrt((1 + alpha) ln(1/delta)) / epsilon`` times b (spec §2, recalled),
    reported with what the accountant certifies for it under our sensitivity.
    """
    share = _check_share(sketch_failure_share, "sketch_failure_share", owner)
    delta_sketch = share * delta
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


def frobenius_sketch(
    B: Any, Phi: np.ndarray, S: np.ndarray, sigma: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The released Priv2 sketches ``(Y_c, Z) = (B Phi + N1, S B + N2)``, noise i.i.d. ``N(0, sigma^2)``."""
    m, n = B.shape
    Y_c = _dense(B @ Phi) + rng.normal(0.0, sigma, size=(m, Phi.shape[1]))
    Z = _dense((B.T @ S.T).T) + rng.normal(0.0, sigma, size=(S.shape[0], n))
    return Y_c, Z


def frobenius_release(
    Y_c: np.ndarray, Z: np.ndarray, S: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2–5 of Private-Frobenius-LRF on released sketches: ``(U, s, V)``, post-processing only.

    ``U = orth(Y_c)``; ``X = argmin_{rank <= k} ||Z - (S U) X||_F`` (:func:`rank_k_left`); the top-k SVD
    ``X = U' s V'^T`` gives ``U U'``, ``s``, ``V'``.
    """
    U = orth_columns(Y_c)
    X = rank_k_left(S @ U, Z, k)
    Up, s, Vp = svd_top_k(X, k)
    return finish(U @ Up, s, Vp)


# ----------------------------------------------------------------------------------------------
# Private-Space-Optimal-LRF (Priv1): release
# ----------------------------------------------------------------------------------------------


def space_optimal_release(
    Y_c: np.ndarray, Y_r: np.ndarray, Z: np.ndarray, S: np.ndarray, T: np.ndarray, k: int, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 3–6 of (Private-)Space-Optimal-LRF on released sketches, then the m x n answer.

    ``U = orth(Y_c)`` (m x t), ``V = orth(Y_r^T)^T`` (t x N); ``X = argmin_{rank<=k} ||Z - (S U) X (V T^T)||``
    (:func:`rank_k_between`, eq. 17); ``X = U' s V'^T``; ``U U'``, ``s``, ``V^T V'`` factor an N-column
    matrix (N = n, or m + n with the padding of Priv1, whose last m columns are dropped: the SVD of
    ``U U' diag(s) (V^T V')[:n]^T`` is the answer; spec §3 notes).
    """
    U = orth_columns(Y_c)
    V = orth_columns(Y_r.T).T
    X = rank_k_between(S @ U, Z, V @ T.T, k)
    Up, s, Vp = svd_top_k(X, k)
    left, right = U @ Up, (V.T @ Vp)[:n]
    # SVD of left diag(s) right^T through a QR of the (n x k) right factor
    Q, R = np.linalg.qr(right)
    u2, s2, v2 = svd_top_k((s[:, None] * R.T), k)
    return finish(left @ u2, s2, Q @ v2)


def _space_optimal_sketches(
    m: int, N: int, sizes: SketchSizes, sketch_seed: int, kind: SketchKind = "gaussian"
) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(sketch_seed)
    Psi = embedding(sizes.t, m, rng, kind)
    S = embedding(sizes.v, m, rng, kind)
    T = embedding(sizes.v, N, rng, kind)
    return Psi, S, T


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
    from ..privacy import bbds

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


def optimal_space_lrf(
    A: Any,
    k: int,
    *,
    alpha: float = 0.25,
    t: int | None = None,
    v: int | None = None,
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
    t, v : int, optional
        Sketch sizes (override alpha's defaults).
    sketch : {"gaussian", "countsketch", "srht"}
        The kind of every sketch (any subspace embedding works without privacy).
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    LowRankResult
        ``privacy`` is None (nothing is protected).
    """
    owner = "optimal_space_lrf"
    A = check_matrix(A, owner)
    check_choice(sketch, "sketch", ("gaussian", "countsketch", "srht"), owner)
    B, transposed = _orient(A)
    m, n = B.shape
    k = check_rank(k, m, n, owner)
    sizes = sketch_sizes(k, alpha, m, n, t=t, v=v, owner=owner)
    rng = as_generator(random_state)
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


def private_frobenius_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "priv2",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    t: int | None = None,
    v: int | None = None,
    bound: float = 1.0,
    sketch_failure_share: float = 0.1,
    sketch_seed: int | None = None,
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
    t, v : int, optional
    bound : float
        Public scale b of the relation: neighbours differ by ``||A - A'||_F <= b`` (default 1, the paper's).
    sketch_failure_share : float in (0, 1)
        Share of delta that covers the sketches' norm bounds failing.
    sketch_seed : int, optional
        Seed of the public sketches Phi, S, declared public: fresh OS entropy if None (never drawn from
        ``random_state``, which is secret). Must not be chosen by an adversary who knows the data, and
        the data must not be chosen with knowledge of it.
    accountant : Accountant, optional
        Ledger spent before any noise is drawn.
    random_state : None, int, SeedSequence or Generator
        Seeds the secret noise (and nothing published): keep it secret. A run is reproducible when
        both ``random_state`` and ``sketch_seed`` are given.

    Returns
    -------
    LowRankResult
        U (m, k), S (k,), V (n, k); diagnostics ``t``, ``v``, ``sigma``, ``sensitivity``, ``sketch_seed``.

    Privacy
    -------
    Relation Priv2 (``||A - A'||_F <= b``; hence Priv1). For E = A - A': ``||E Phi||_F^2 <= c_t ||E||_F^2``
    and ``||S E||_F^2 <= c_v ||E||_F^2``, each except with probability delta_s, for the data-independent
    Gaussian sketches (Laurent–Massart; :func:`~dpspectral.lowrank.sketches.chi2_factor`). The pair
    ``(Y_c, Z)`` is one Gaussian mechanism with L2 sensitivity ``b sqrt(c_t + c_v)``: events
    ``GaussianDpEvent(sigma / Delta)`` and ``EpsilonDeltaDpEvent(0, 2 delta_s)`` (the sketch failures),
    composed by the accountant. Everything after the release reads only ``Y_c``, ``Z`` and the public S.
    The per-pair bounds need a matrix that does not depend on the sketches: their seed is OS entropy
    drawn after A is given (or declared by the caller), never drawn from ``random_state``. The whole
    matrix is validated before the ledger is charged.
    """
    owner = "private_frobenius_lrf"
    budget = _budget(epsilon, delta, owner)
    rel = _relation(relation, (Relation.PRIV2, Relation.PRIV1), owner)
    check_choice(calibration, "calibration", ("tight", "paper"), owner)
    b = check_positive(bound, "bound", owner)
    A = check_matrix(A, owner)
    B, transposed = _orient(A)
    m, n = B.shape
    k = check_rank(k, m, n, owner)
    sizes = sketch_sizes(k, alpha, m, m, t=t, v=v, owner=owner)
    noise = frobenius_noise(
        budget.epsilon,
        budget.delta,
        sizes,
        bound=b,
        calibration=calibration,
        alpha=float(alpha),
        sketch_failure_share=sketch_failure_share,
        owner=owner,
        shape=(m, n),
    )
    report = certify_release(
        noise.events,
        mechanism=owner,
        budget=budget,
        relation=rel,
        calibration=calibration,
        notes=(*noise.notes, SKETCH_NOTE),
        stacklevel=3,
    )
    rng = as_generator(random_state)
    seed = _seed(sketch_seed)
    with charge(accountant, [report.event], rel, owner):
        Phi, S = frobenius_sketches(m, n, sizes, seed)
        Y_c, Z = frobenius_sketch(B, Phi, S, noise.sigma, rng)
    U, s, V = frobenius_release(Y_c, Z, S, k)
    diag = {
        "t": sizes.t,
        "v": sizes.v,
        "sigma": noise.sigma,
        "sensitivity": noise.sensitivity,
        "noise_multiplier": noise.noise_multiplier,
        "sketch_seed": seed,
        "transposed": transposed,
    }
    return _result(U, s, V, transposed, report, diag)


def private_space_optimal_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "priv1",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    t: int | None = None,
    v: int | None = None,
    bound: float = 1.0,
    input_share: float = 0.5,
    sketch_failure_share: float = 0.1,
    sketch_seed: int | None = None,
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
    A, k, epsilon, delta, calibration, alpha, t, v, bound, sketch_failure_share, sketch_seed, accountant,
    random_state
        As in :func:`private_frobenius_lrf`; ``bound`` scales the relation: ``A - A' = b u v^T``.
    relation : {"priv1"}
        Input perturbation is analysed for Priv1 only.
    input_share : float in (0, 1)
        Share of epsilon given to the input-perturbed sketch ``Y_c``; the rest goes to ``(Y_r, Z)``.

    Returns
    -------
    LowRankResult
        diagnostics ``t``, ``v``, ``sigma_min``, ``sigma``, ``sensitivity``, ``sketch_seed``.

    Privacy
    -------
    Relation Priv1 (``A' = A + b u v^T``, unit u, v). Three parts, composed by basic composition:
    (1) ``Y_c``: t i.i.d. columns ``N(0, Â Â^T)``; the accountant of :mod:`dpspectral.privacy.bbds`
    gives the smallest ``sigma_min`` for ``(eps_c, delta_c)`` (scaled by b), recorded as an
    ``EpsilonDeltaDpEvent(eps_c, delta_c)``. (2) ``(Y_r, Z)``: with ``Â' - Â = b u z^T``, z = (v, 0),
    ``||Psi u z^T||_F = ||Psi u|| <= sqrt(c_t)`` and ``||S u z^T T^T||_F = ||S u|| ||T z|| <= c_v`` except
    with probability 3 delta_s, so one Gaussian mechanism of sensitivity ``b sqrt(c_t + c_v^2)`` (a factor
    is 1 for a sketch that is the identity, :func:`embedding`).
    (3) ``EpsilonDeltaDpEvent(0, 3 delta_s)`` for the sketch failures. ``calibration="tight"`` gives
    ``(input_share eps, rest)`` of epsilon and ``(1 - sketch_failure_share) / 2`` of delta to each part;
    ``"paper"`` uses ``sigma_min = 16 ln(1/delta) sqrt(t kappa ln(1/delta)) / epsilon``,
    ``rho_1 = sqrt((1+alpha) ln(1/delta))/epsilon`` for N1 and ``rho_2 = (1+alpha) sqrt(ln(1/delta))/epsilon``
    for N2 (recalled; spec §2) and reports what the accountant certifies for them. Psi, S, T come from
    the public ``sketch_seed`` (OS entropy unless declared); Omega and the noise from the secret
    ``random_state``.
    """
    from ..privacy import bbds

    owner = "private_space_optimal_lrf"
    budget = _budget(epsilon, delta, owner)
    rel = _relation(relation, (Relation.PRIV1,), owner)
    check_choice(calibration, "calibration", ("tight", "paper"), owner)
    b = check_positive(bound, "bound", owner)
    share_in = _check_share(input_share, "input_share", owner)
    share_s = _check_share(sketch_failure_share, "sketch_failure_share", owner)
    A = check_matrix(A, owner)
    B, transposed = _orient(A)
    m, n = B.shape
    N = m + n
    k = check_rank(k, m, n, owner)
    sizes = sketch_sizes(k, alpha, m, N, t=t, v=v, owner=owner)
    eps, dlt = budget.epsilon, budget.delta
    delta_sketch = share_s * dlt
    delta_part = (dlt - delta_sketch) / 2
    delta_s = delta_sketch / 3
    c_psi = embedding_factor(sizes.t, m, delta_s)
    c_s, c_tt = embedding_factor(sizes.v, m, delta_s), embedding_factor(sizes.v, N, delta_s)
    d1, d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s * c_tt)
    sens = math.hypot(d1, d2)
    notes: list[str] = []
    if calibration == "tight":
        eps_c = share_in * eps
        sigma_min = b * bbds.min_sigma_min(eps_c, delta_part, sizes.t)
        sigma1 = sigma2 = analytic_noise_multiplier(eps - eps_c, delta_part) * sens
        gauss: list[dp_accounting.DpEvent] = [dp_accounting.GaussianDpEvent(sigma1 / sens)]
    else:
        alpha_f = float(alpha)
        sigma_min = b * bbds.paper_sigma_min(eps, dlt, sizes.t, alpha_f)
        eps_c = _bbds_epsilon(sigma_min / b, delta_part, sizes.t)
        sigma1 = math.sqrt((1 + alpha_f) * math.log(1 / dlt)) / eps * b
        sigma2 = (1 + alpha_f) * math.sqrt(math.log(1 / dlt)) / eps * b
        gauss = [dp_accounting.GaussianDpEvent(sigma1 / d1), dp_accounting.GaussianDpEvent(sigma2 / d2)]
        notes.append(
            "calibration='paper': sigma_min = 16 ln(1/delta) sqrt(t kappa ln(1/delta))/epsilon, rho_1, rho_2 "
            "as "
            "recalled in spec-lowrank.md §2; the input-perturbed sketch is accounted exactly (BBDS "
            "accountant) and the Gaussian sketches under the Laurent-Massart sensitivities."
        )
    events = (bbds.bbds_event(eps_c, delta_part), *gauss, EpsilonDeltaDpEvent(0.0, delta_sketch))
    report = certify_release(
        events,
        mechanism=owner,
        budget=budget,
        relation=rel,
        calibration=calibration,
        notes=(*notes, SKETCH_NOTE),
        stacklevel=3,
    )
    rng = as_generator(random_state)
    seed = _seed(sketch_seed)
    with charge(accountant, [report.event], rel, owner):
        Psi, S, T = _space_optimal_sketches(m, N, sizes, seed)
        secret = np.random.default_rng(rng.integers(0, 2**63 - 1))  # Omega: secret, used once, never stored
        Omega = secret.standard_normal((N, sizes.t))
        Y_c = _dense(B @ Omega[:n]) + sigma_min * Omega[n:]
        del Omega
        Y_r = np.hstack([_dense((B.T @ Psi.T).T), sigma_min * Psi]) + rng.normal(
            0.0, sigma1, size=(sizes.t, N)
        )
        SB = _dense((B.T @ S.T).T)  # S A (v x n)
        Z = (
            SB @ T[:, :n].T
            + sigma_min * (S @ T[:, n:].T)
            + rng.normal(0.0, sigma2, size=(S.shape[0], T.shape[0]))
        )
    U, s, V = space_optimal_release(Y_c, Y_r, Z, S, T, k, n)
    diag = {
        "t": sizes.t,
        "v": sizes.v,
        "sigma_min": sigma_min,
        "sigma": sigma1,
        "sigma_z": sigma2,
        "sensitivity": sens,
        "epsilon_input": eps_c,
        "sketch_seed": seed,
        "transposed": transposed,
    }
    return _result(U, s, V, transposed, report, diag)
