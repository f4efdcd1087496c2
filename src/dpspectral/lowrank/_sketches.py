"""Sketches, their per-pair sensitivity factors, sketch sizes and the closed-form rank-k solves.

Shared by every low-rank factorization of Upadhyay (NeurIPS 2018; ``../shared/papers/spec-lowrank.md``):
one-shot (:mod:`.factorization`), turnstile streaming, continual release, the covariance variant and
the local protocol all maintain the same linear sketches and finish with the same solves.

Per-pair sketch sensitivity (spec §1, R-derive)
-----------------------------------------------
For ``G`` (d x p) with i.i.d. ``N(0, 1/d)`` entries, drawn independently of the data, and any fixed
matrix E, ``||G E||_F^2`` is a weighted chi-square: writing ``E = sum_i s_i a_i b_i^T``, it is
``sum_{j<=d} sum_i (s_i^2 / d) Z_ji^2`` with weights summing to ``||E||_F^2``, of L2 norm at most
``||E||_F^2 / sqrt(d)`` and largest weight at most ``||E||_F^2 / d``. Laurent and Massart (2000,
Lemma 1) then give ``P[||G E||_F^2 > c_d(delta_s) ||E||_F^2] <= delta_s`` with
``c_d(delta_s) = 1 + 2 sqrt(ln(1/delta_s)/d) + 2 ln(1/delta_s)/d`` (:func:`chi2_factor`). The sketch is
independent of the data, so for every fixed neighbouring pair a Gaussian mechanism calibrated to the
sensitivity ``sqrt(c_d) ||E||_F`` is (epsilon, delta_g + delta_s)-DP: the sketch failure is an extra
delta, recorded as an ``EpsilonDeltaDpEvent(0, delta_s)``. This is not a worst case over sketches: the
sketch must not be chosen by an adversary (an untrusted server picking the seed in the local model);
``sketch_seed`` is fresh OS entropy unless the caller declares it
(:func:`~dpspectral.privacy._pipeline.public_seed`), never drawn from the secret ``random_state``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import scipy.sparse as sp
from scipy import stats

from .._constraints import Interval, check_params, renamed, validated
from .._linalg import fix_signs

__all__ = [
    "SketchKind",
    "SketchSizes",
    "chi2_factor",
    "chi2_quantile_factor",
    "rank_k_between",
    "rank_k_left",
    "sketch_matrix",
    "sketch_sizes",
    "svd_top_k",
]

SketchKind = Literal["gaussian", "countsketch", "srht"]
F = TypeVar("F", bound=Callable[..., Any])


#: The parameters of the sketch factors: a sketch's number of rows and a failure probability.
_FACTOR_TABLE = {"d": Interval(1, None, "left", integer=True), "delta_s": Interval(0, 1, "neither")}


@validated(_FACTOR_TABLE)
def chi2_factor(d: int, delta_s: float) -> float:
    """``c_d(delta_s)``: w.p. >= 1 - delta_s, ``||G E||_F^2 <= c_d ||E||_F^2`` for G d x p ~ N(0, 1/d).

    See the module docstring (Laurent–Massart). ``d`` is the number of rows of the sketch.
    """
    x = math.log(1.0 / delta_s)
    return 1.0 + 2.0 * math.sqrt(x / d) + 2.0 * x / d


@validated(_FACTOR_TABLE)
@functools.lru_cache(maxsize=1024)
def chi2_quantile_factor(d: int, delta_s: float) -> float:
    """``q_d(delta_s) = chi2.isf(delta_s, d) / d``: w.p. >= 1 - delta_s, ``||G x||^2 <= q_d ||x||^2``.

    For a *vector* x and G (d x p) with i.i.d. ``N(0, 1/d)`` entries drawn independently of x, ``G x``
    has i.i.d. ``N(0, ||x||^2 / d)`` entries, so ``||G x||^2 / ||x||^2`` is exactly ``chi^2_d / d`` and
    this quantile is the exact per-pair factor. It is never above the Laurent–Massart bound
    :func:`chi2_factor` (which also covers matrices E of any rank) and is
    markedly smaller for small d (``d = 2``, ``delta_s = 3e-8``: 17.3 instead of 24.2).
    """
    return float(stats.chi2.isf(delta_s, int(d))) / int(d)


@dataclass(frozen=True)
class SketchSizes:
    """Sketch sizes of one factorization, under the paper's symbols (spec §2).

    ``t`` is the ``subspace_sketch_size`` (the column / row sketches Phi, Psi: subspace embeddings) and
    ``v`` the ``affine_sketch_size`` (the sketches S, T of the rank-k solve: affine embeddings). The
    fields keep the paper's symbols: every factorization, the local protocol and the turnstile state
    files read them; the descriptive names are read-only aliases.
    """

    t: int
    v: int

    @property
    def subspace_sketch_size(self) -> int:
        """``t``: the number of columns of ``A Phi`` (rows of ``Psi A``)."""
        return self.t

    @property
    def affine_sketch_size(self) -> int:
        """``v``: the number of rows of the affine sketches ``S`` (and ``T``)."""
        return self.v


#: The accuracy target shared by every factorization (sets the default sketch sizes).
ALPHA = Interval(0, 1, "neither")

#: The descriptive names of the two sketch sizes, and the paper's symbols they replace (still accepted,
#: with a FutureWarning, by every public function and class of this package).
SIZE_NAMES = ("subspace_sketch_size", "affine_sketch_size")
PAPER_SIZE_NAMES = {"t": "subspace_sketch_size", "v": "affine_sketch_size"}
_PAPER_MAX_NAMES = {"t_max": "max_subspace_sketch_size", "v_max": "max_affine_sketch_size"}


def _accept_paper_names(func: F) -> F:
    """The paper's ``t``, ``v``, ``t_max``, ``v_max`` still work: from a user, with a FutureWarning
    (:func:`~dpspectral._constraints.renamed`); from a mechanism forwarding its own not yet renamed
    ``t``/``v`` (it passes ``owner``), silently, with messages that name ``'t'``/``'v'`` (the
    parameters its users passed; the mechanism warns about its own names itself).
    """
    warned = renamed({**PAPER_SIZE_NAMES, **_PAPER_MAX_NAMES})(func)

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        if "owner" in kwargs and kwargs.keys() & PAPER_SIZE_NAMES.keys():
            kwargs.setdefault("parameter_names", ("t", "v"))
            for old, new in PAPER_SIZE_NAMES.items():
                if old in kwargs:
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)
        return warned(*args, **kwargs)

    call.renamed_parameters = warned.renamed_parameters  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


@_accept_paper_names
def sketch_sizes(
    k: int,
    alpha: float,
    max_subspace_sketch_size: int,
    max_affine_sketch_size: int,
    *,
    subspace_sketch_size: int | None = None,
    affine_sketch_size: int | None = None,
    owner: str = "sketch_sizes",
    parameter_names: tuple[str, str] = SIZE_NAMES,
) -> SketchSizes:
    """Practical sketch sizes from (k, alpha) (spec §2, R-derive), capped by the dimensions.

    ``subspace_sketch_size`` (t in the paper) is the size of the column / row sketches (Phi, Psi:
    subspace embeddings for the generalised regression, Lemma 14); ``affine_sketch_size`` (v in the
    paper) the size of the sketches S, T of the rank-k solve (affine embeddings, Lemma 15). The theory
    asks for ``t = O(eta/alpha log(k/delta))`` and ``v = O(eta/alpha^2 log(k/delta))`` with
    ``eta = max(k, 1/alpha)``; with unknown constants these exceed the dimensions of every experiment
    of the paper. Defaults: ``t = ceil(k / alpha)`` and ``v = ceil(k / alpha^2)``, each at most the
    dimension it sketches (``max_subspace_sketch_size``, ``max_affine_sketch_size``; ``t_max``,
    ``v_max`` before) and at least k (``v >= t``). Explicit sizes win. ``owner`` and
    ``parameter_names`` (the caller's names for the two sizes) word the error messages. The paper's
    names ``t``, ``v``, ``t_max``, ``v_max`` still work, with a FutureWarning.
    """
    t, v = subspace_sketch_size, affine_sketch_size
    t_max, v_max = max_subspace_sketch_size, max_affine_sketch_size
    t_name, v_name = parameter_names
    # the bounds of t and v depend on k and the dimensions: a table built for this call
    table = {"alpha": ALPHA, t_name: Interval(k, t_max, "both", integer=True),
             v_name: Interval(k, v_max, "both", integer=True)}
    given = {name: value for name, value in ((t_name, t), (v_name, v)) if value is not None}
    check_params(table, {"alpha": alpha, **given}, owner)
    alpha = float(alpha)
    t_val = min(math.ceil(k / alpha), t_max) if t is None else int(t)
    t_val = max(t_val, min(k, t_max))
    v_val = max(min(math.ceil(k / alpha**2), v_max), min(t_val, v_max)) if v is None else int(v)
    return SketchSizes(t=int(t_val), v=int(v_val))


def sketch_matrix(kind: SketchKind, rows: int, cols: int, rng: np.random.Generator) -> Any:
    """A ``rows x cols`` random linear map that reduces ``cols`` dimensions to ``rows``.

    ``"gaussian"``: i.i.d. ``N(0, 1/rows)`` (the only kind the privacy analysis covers);
    ``"countsketch"``: one ``+-1`` per column in a uniformly random row (sparse CSR; Clarkson–Woodruff);
    ``"srht"``: ``sqrt(cols/rows) R H D`` with random signs D, the orthonormal Hadamard transform H of
    the next power of two (padded) and a uniform row sample R (dense; for moderate ``cols``).
    """
    if kind == "gaussian":
        return rng.standard_normal((rows, cols)) / math.sqrt(rows)
    if kind == "countsketch":
        h = rng.integers(0, rows, size=cols)
        s = rng.choice(np.array([-1.0, 1.0]), size=cols)
        return sp.csr_matrix((s, (h, np.arange(cols))), shape=(rows, cols))
    if kind == "srht":
        import scipy.linalg

        N = 1 << max(0, (cols - 1).bit_length())
        H = scipy.linalg.hadamard(N).astype(np.float64) / math.sqrt(N)
        D = rng.choice(np.array([-1.0, 1.0]), size=cols)
        sel = rng.choice(N, size=rows, replace=rows > N)
        return math.sqrt(N / rows) * H[sel][:, :cols] * D
    raise ValueError(
        f"The 'sketch' parameter must be one of 'gaussian', 'countsketch', 'srht'. Got {kind!r} instead."
    )


def svd_top_k(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-k singular triplets ``(U, s, V)`` of M (V as columns), descending, signs fixed on U."""
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    U, s, V = U[:, :k], s[:k], Vt[:k].T
    signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    signs[signs == 0] = 1
    return U * signs, s, V * signs


def _truncate(M: np.ndarray, k: int) -> np.ndarray:
    """``[M]_k``: the best rank-k approximation of M (Eckart–Young)."""
    U, s, V = svd_top_k(M, k)
    return (U * s) @ V.T


def _pinv_factors(C: np.ndarray, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``C = U diag(s) V^T`` with the pseudo-inverse of s (tiny values treated as zero)."""
    U, s, Vt = np.linalg.svd(C, full_matrices=False)
    keep = s > rtol * (s[0] if s.size else 0.0)
    inv = np.zeros_like(s)
    inv[keep] = 1.0 / s[keep]
    return U, inv, Vt.T


def _truncate_shrunk(M: np.ndarray, k: int, sigma: float) -> np.ndarray:
    """``[M]_k`` with its singular values shrunk for i.i.d. ``N(0, sigma^2)`` noise in M
    (:func:`.shrink.frobenius_shrink`; sigma = 0: plain ``[M]_k``)."""
    if sigma <= 0:
        return _truncate(M, k)
    from ._shrink import frobenius_shrink

    U, s, V = svd_top_k(M, k)
    return (U * frobenius_shrink(s, sigma, M.shape[0], M.shape[1])) @ V.T


def rank_k_between(C: np.ndarray, F: np.ndarray, R: np.ndarray, k: int, sigma: float = 0.0) -> np.ndarray:
    """``argmin_{rank X <= k} ||F - C X R||_F`` in closed form (spec §3 step 5, eq. 17).

    With thin SVDs ``C = U_c S_c V_c^T`` and ``R = U_r S_r V_r^T``:
    ``X = V_c S_c^+ [U_c^T F V_r]_k S_r^+ U_r^T``. Exact when C has full column rank and R full row rank
    (Friedland and Torokhti 2007; the paper's Lemma 28 for orthonormal C, R): then ``C X R`` ranges
    over all rank-k matrices of the form ``U_c Y V_r^T`` and ``||F - U_c Y V_r^T||`` is minimised by
    ``Y = [U_c^T F V_r]_k``. With ``sigma > 0`` (F = signal + i.i.d. ``N(0, sigma^2)`` noise independent
    of C and R, so the core's noise is i.i.d. too) the core's singular values are shrunk by the noise
    edge (:func:`.shrink.frobenius_shrink`): post-processing that zeroes what is noise.
    """
    Uc, sc_inv, Vc = _pinv_factors(C)
    Ur, sr_inv, Vr = _pinv_factors(R.T)  # R^T = Ur S Vr^T, so R = Vr S Ur^T
    core = _truncate_shrunk(Uc.T @ F @ Ur, k, sigma)
    return (Vc * sc_inv) @ core @ (Vr * sr_inv).T


def rank_k_left(C: np.ndarray, F: np.ndarray, k: int, sigma: float = 0.0) -> np.ndarray:
    """``argmin_{rank X <= k} ||F - C X||_F`` = ``V_c S_c^+ [U_c^T F]_k`` (spec §4 step 4); ``sigma > 0``:
    the core's singular values shrunk for i.i.d. noise of that scale in F (as :func:`rank_k_between`)."""
    Uc, sc_inv, Vc = _pinv_factors(C)
    return (Vc * sc_inv) @ _truncate_shrunk(Uc.T @ F, k, sigma)


def orth_columns(Y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column span of Y (thin QR, deterministic signs)."""
    Q, Rr = np.linalg.qr(Y)
    s = np.sign(np.diag(Rr))
    s[s == 0] = 1
    return Q * s


def finish(U: np.ndarray, s: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort descending and fix signs on U (V flipped with it): the output convention of every LRF."""
    order = np.argsort(-s, kind="stable")  # ties (all-zero shrunk values) keep their order
    U, s, V = U[:, order], s[order], V[:, order]
    Uf = fix_signs(U)
    flip = np.sign(np.sum(Uf * U, axis=0))
    flip[flip == 0] = 1
    return Uf, s, V * flip
