"""Oja's algorithm, Private Oja and DP-PCA (Liu, Kong, Jain and Oh, NeurIPS 2022).

Paper: ``../shared/papers/001_*.txt``; Algorithms 4 and 5 and the histogram learner are reconstructed
in ``../shared/papers/spec-pca-gep.md`` §A. All three are single-pass streaming algorithms: they accept
an array, a memmap, a sparse matrix or an iterable of row blocks (a stream), read each row once, and
keep O(B d k) memory (B the minibatch size).

Gradients. For ``A_i = x_i x_i^T`` and an orthonormal ``W`` (d x k), the Oja gradient is
``A_i W = x_i (x_i^T W)``, never forming a d x d matrix. With rows clipped to norm C it has Frobenius
norm ``||x_i|| ||W^T x_i|| <= C^2``.

Relation and composition. Replace-one neighbours with the rows' positions public (the stream order,
or the array's row order: no data-dependent reordering). Every row enters exactly one private
sub-release (one Oja step, one top-eigenvalue histogram, or one mean estimate), and later steps see
it only through earlier releases, so by parallel composition the run is as private as its worst
sub-release; :class:`~dpspectral.privacy.accounting.ParallelDpEvent` records that. The paper splits
(epsilon, delta) in half between Algorithms 4 and 5 (basic composition); on disjoint rows each can
have the whole budget, which halves the noise (``calibration="tight"``, the default).

Rank k. ``rank_method="block"``: Oja on a d x k iterate with orthonormalisation after every step
(modified Gram-Schmidt per row for Oja / Private Oja, QR per minibatch for DP-PCA); the gradient is the
d x k matrix ``x (x^T W)``, flattened for DP-PCA's histograms. ``rank_method="deflation"``: the rows
are split into k consecutive parts, part j learns component j with updates projected orthogonally to
the components already found (Hotelling deflation on disjoint rows: still one pass, still parallel
composition, but each component sees n / k rows).
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._progress import progress
from .._validation import as_generator, check_choice, check_mechanism_inputs, check_share
from ..linalg import fix_signs, orthonormalize
from ..moments import _iter_blocks, _page_releaser
from ..privacy.accounting import (
    Accountant,
    EpsilonDeltaDpEvent,
    ParallelDpEvent,
    PrivacyReport,
    SampledGaussianAccountant,
    calibrate,
    certify_release,
    compose,
)
from ..privacy.budget import Relation
from ..privacy.clipping import NormViolation, clip_rows, sensitivity_norm
from ..privacy.gaussian import analytic_noise_multiplier
from ..privacy.histogram import (
    laplace_histogram_event,
    laplace_histogram_mode,
    stable_histogram_event,
    stable_histogram_mode,
)
from ..results import SubspaceResult

__all__ = [
    "AnalysisRangeWarning",
    "dp_pca",
    "minimum_batch_size",
    "oja",
    "private_mean",
    "private_oja",
    "private_top_eigenvalue",
    "shuffle_amplified_epsilon",
]

RankMethod = Literal["block", "deflation"]
Histogram = Literal["laplace", "stable"]
_CHUNK = 4096  # rows per compiled call / noise draw in the row-by-row algorithms
_MEMMAP_BLOCK_ELEMENTS = 1 << 20  # values per block read from a memmap (8 MB of float64)
_OCTAVES = 64  # eigenvalue bins cover [2^-64, 1] x the largest possible eigenvalue (then underflow)


class AnalysisRangeWarning(UserWarning):
    """The parameters are outside the range a paper's utility analysis covers (privacy still holds)."""


# ---------------------------------------------------------------------------------------------
# input handling


def _check_positive(value: Any, name: str, owner: str, *, integer: bool = False,
                    allow_none: bool = False) -> Any:
    if value is None and allow_none:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    if ok and integer:
        ok = float(value) == int(value)
    if not ok or not math.isfinite(float(value)) or float(value) <= 0:
        kind = "an int >= 1" if integer else "a float in (0, inf)"
        raise ValueError(f"The '{name}' parameter of {owner} must be {kind}. Got {value!r} instead.")
    return int(value) if integer else float(value)


def _n_rows(X: Any, n_samples: int | None, owner: str) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and not callable(X):
        if n_samples is not None and int(n_samples) != int(shape[0]):
            raise ValueError(f"{owner}: n_samples={n_samples} but the data have {shape[0]} rows.")
        return int(shape[0])
    if isinstance(X, (list, tuple)) and X and np.ndim(X[0]) == 1:
        return len(X)
    return None if n_samples is None else _check_positive(n_samples, "n_samples", owner, integer=True)


def _as_source(X: Any) -> Any:
    """A list of 1-D rows is an array; anything else with ``shape`` or an iterable of blocks as is."""
    if isinstance(X, (list, tuple)) and X and np.ndim(X[0]) == 1:
        return np.asarray(X)
    return X


def _memmap_blocks(X: np.memmap) -> Iterator[tuple[int, np.ndarray]]:
    """(start, rows) blocks of ~8 MB of a memmap (views: the data are read when ``take`` copies them)."""
    n, d = X.shape
    step = max(1, _MEMMAP_BLOCK_ELEMENTS // max(d, 1))
    for a in range(0, n, step):
        yield a, X[a : min(n, a + step)]


class _Rows:
    """The rows of an array or a stream of row blocks, re-cut into float64 blocks of fixed sizes.

    Every block is checked for finite values and clipped to the row norm C (a copy: the caller's data
    are never modified). ``take(m)`` returns the next ``m`` rows (fewer at the end of the data).
    """

    def __init__(self, X: Any, C: float, mode: NormViolation, owner: str,
                 show_progress: bool | None = None) -> None:
        self.C, self.mode, self.owner = C, mode, owner
        src = _as_source(X)
        # A memmap is read by small blocks and the pages of the rows already copied are dropped after
        # every take (the generic path's 128 MB blocks stayed resident until done, and pages of a
        # block's tail, re-read after the block's release, stayed for good: ~70 MB at 1e6 x 100).
        # Not for a copy-on-write map, where dropping pages would discard the caller's changes.
        self._release: Callable[[int, int], None] | None = None
        self._released = 0  # the pages of rows [0, _released) have been released
        self._blocks: Iterator[tuple[int, Any]]
        if isinstance(src, np.memmap) and src.ndim == 2:
            if getattr(src, "mode", None) != "c":
                self._release = _page_releaser(src)
            self._blocks = _memmap_blocks(src)
        else:
            self._blocks = _iter_blocks(src, owner, show_progress)
        self._buffer: list[np.ndarray] = []
        self._buffered = 0
        self.row = 0  # rows handed out so far
        self.d: int | None = None

    def _pull(self) -> bool:
        try:
            start, block = next(self._blocks)
        except StopIteration:
            return False
        if sp.issparse(block):
            block = block.toarray()
        block = np.asarray(block)
        if block.ndim == 1:
            block = block[None, :]
        if block.ndim != 2:
            raise ValueError(f"{self.owner}: every block of a stream must be 2-D; got {block.shape}.")
        if block.dtype.kind not in "biuf":
            raise TypeError(f"{self.owner} needs numeric data; got dtype {block.dtype}.")
        if self.d is None:
            self.d = int(block.shape[1])
        elif block.shape[1] != self.d:
            raise ValueError(
                f"{self.owner}: a block at row {start} has {block.shape[1]} columns; earlier blocks "
                f"had {self.d}."
            )
        if block.shape[0]:
            self._buffer.append(block)
            self._buffered += block.shape[0]
        return True

    def peek_features(self) -> int:
        while self.d is None:
            if not self._pull():
                raise ValueError(f"{self.owner}: the data are empty (0 rows); at least one row is needed.")
        return self.d

    def take(self, m: int) -> np.ndarray:
        while self._buffered < m and self._pull():
            pass
        if not self._buffer:
            return np.empty((0, self.d or 0))
        # Cut the first m rows off the buffered blocks, copying only those rows: concatenating whole
        # blocks (up to 128 MB each from an array or memmap) at every block boundary dominated the
        # time and doubled the resident memory.
        pieces: list[np.ndarray] = []
        got = 0
        while self._buffer and got < m:
            head = self._buffer[0]
            if head.shape[0] <= m - got:
                pieces.append(head)
                self._buffer.pop(0)
            else:
                pieces.append(head[: m - got])
                self._buffer[0] = head[m - got :]
            got += pieces[-1].shape[0]
        self._buffered -= got
        if len(pieces) == 1:
            out = np.array(pieces[0], dtype=np.float64)  # a private copy
        else:
            out = np.concatenate(pieces).astype(np.float64, copy=False)  # a fresh array
        if self._release is not None:
            self._release(self._released, self.row + got)
            self._released = self.row + got
        if not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise ValueError(f"{self.owner}: input contains NaN or infinity (first at row {self.row + i}).")
        out, _ = clip_rows(out, self.C, on_norm_violation=self.mode, copy=False, first_row=self.row)
        self.row += out.shape[0]
        return np.asarray(out)


def _rate(c1: Any, c2: Any, owner: str) -> tuple[float, float]:
    return (_check_positive(c1, "c1", owner), _check_positive(c2, "c2", owner))


def _etas(c1: float, c2: float, t0: int, m: int) -> np.ndarray:
    """``eta_t = c1 / (c2 + t)`` for t = t0 + 1, ..., t0 + m."""
    return c1 / (c2 + np.arange(t0 + 1, t0 + m + 1, dtype=np.float64))


def _orth(W: np.ndarray) -> np.ndarray:
    if W.shape[1] == 1:
        nrm = float(np.linalg.norm(W))
        return W / nrm if nrm > 0 else W
    return orthonormalize(W, "qr")


def _deflate(W: np.ndarray, F: np.ndarray) -> np.ndarray:
    return W - F @ (F.T @ W) if F.shape[1] else W


def _parts(n: int | None, k: int, rank_method: str, owner: str) -> list[int | None]:
    """Rows per part: one part for block updates, k consecutive parts for deflation."""
    if rank_method == "block" or k == 1:
        return [None]
    if n is None:
        raise ValueError(
            f"{owner}: rank_method='deflation' on a stream needs n_samples (public under replace-one) "
            "to split the rows into k parts."
        )
    base = n // k
    return [base] * (k - 1) + [None]  # the last part takes the rest


def _non_private_report(mechanism: str, notes: tuple[str, ...]) -> PrivacyReport:
    return PrivacyReport(
        mechanism=mechanism, relation=Relation.REPLACE_ONE, epsilon=math.inf, delta=0.0,
        requested_epsilon=math.inf, requested_delta=0.0, certified=False, calibration="none",
        events=(dp_accounting.NonPrivateDpEvent(),), notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# row-by-row Oja (non-private and private)


def _run_rows(rows: _Rows, W: np.ndarray, parts: list[int | None], c1: float, c2: float,
              beta: float, noise_std: float, rng: np.random.Generator, owner: str,
              show_progress: bool | None, n: int | None) -> tuple[np.ndarray, int]:
    """Row-by-row (Private) Oja over all rows; returns (W, rows used). ``noise_std`` per unit eta."""
    from ._oja_kernels import oja_rows

    d, k = W.shape
    deflation = len(parts) > 1
    found = np.empty((d, 0))
    bar = progress(range(n if n is not None else 0), total=n, desc=owner, enabled=show_progress,
                   min_total=200_000)
    bar_it = iter(bar) if n is not None else None
    t_all = 0
    comps = []
    noise_buf: np.ndarray | None = None
    for j, size in enumerate(parts):
        w = (W[:, j : j + 1].copy() if deflation else W)
        if deflation:
            w = _orth(_deflate(w, found))
        t = 0
        while True:
            m = _CHUNK if size is None else min(_CHUNK, size - t)
            if m <= 0:
                break
            X = rows.take(m)
            if X.shape[0] == 0:
                break
            mb = X.shape[0]
            etas = _etas(c1, c2, t, mb)
            if noise_std > 0:  # drawn into a reused buffer: the same values as a fresh draw
                if noise_buf is None or noise_buf.shape[1:] != (d, w.shape[1]):
                    noise_buf = np.empty((_CHUNK, d, w.shape[1]))
                Z = rng.standard_normal(out=noise_buf[:mb])
                Z *= noise_std
            else:
                Z = np.empty((0, d, w.shape[1]))
            w = oja_rows(np.ascontiguousarray(w), X, etas, Z, beta, np.ascontiguousarray(found))
            t += mb
            if bar_it is not None:  # advance the bar by mb rows at C speed (a Python loop cost 20%)
                collections.deque(itertools.islice(bar_it, mb), maxlen=0)
            if X.shape[0] < m:
                break
        t_all += t
        if deflation:
            comps.append(w)
            found = np.hstack([found, w])
        else:
            W = w
    if deflation:
        W = np.hstack(comps)
    return W, t_all


def oja(
    X: Any,
    k: int = 1,
    *,
    c1: float = 10.0,
    c2: float = 10.0,
    rank_method: RankMethod = "block",
    row_norm: float | None = None,
    n_samples: int | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Oja's algorithm (Algorithm 1): ``w_t = normalise(w_{t-1} + eta_t x_t x_t^T w_{t-1})``.

    NOT private: a reference for the private versions. ``eta_t = c1 / (c2 + t)``. Rows are used as
    given unless ``row_norm`` is set (then clipped to it, as the private versions do). One pass,
    memory O(d k). ``X``: array, memmap, sparse matrix or an iterable of row blocks.

    Returns a :class:`SubspaceResult` whose privacy report says ``certified=False`` (non-private).
    """
    owner = "oja"
    c1, c2 = _rate(c1, c2, owner)
    check_choice(rank_method, "rank_method", ("block", "deflation"), owner)
    C = math.inf if row_norm is None else _check_positive(row_norm, "row_norm", owner)
    n = _n_rows(X, n_samples, owner)
    rows = _Rows(X, C, "clip", owner)
    d = rows.peek_features()
    k = _check_k(k, d, n, owner)
    rng = as_generator(random_state)
    W = orthonormalize(rng.standard_normal((d, k)), "qr")
    W, used = _run_rows(rows, W, _parts(n, k, rank_method, owner), c1, c2, 0.0, 0.0, rng, owner,
                        show_progress, n)
    report = _non_private_report(owner, ("Non-private reference (Oja's algorithm).",))
    return SubspaceResult(components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
                          diagnostics={"c1": c1, "c2": c2, "rank_method": rank_method})


def _check_k(k: Any, d: int, n: int | None, owner: str) -> int:
    from .._validation import check_n_components

    k = check_n_components(k, d, owner, name="k")
    if n is not None and k > n:
        raise ValueError(f"The 'k' parameter of {owner} must be at most the number of rows ({n}). "
                         f"Got {k} instead.")
    return k


def _fmt21_epsilon(eps0: float, n: int, delta: float) -> float:
    """Feldman, McMillan, Talwar (FOCS 2021), Theorem 3.1: shuffled eps0-DP local steps."""
    e0 = math.exp(eps0)
    return math.log1p((e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n)
                                             + 8 * e0 / n))


def shuffle_amplified_epsilon(noise_multiplier: float, n: int, delta: float) -> tuple[float, float]:
    """(epsilon, delta) of n shuffled adaptive Gaussian steps, each with this noise multiplier.

    Each step is ``(eps0, delta0)``-DP for the exact Gaussian curve (``delta0`` chosen as below); the
    shuffled, adaptive sequence is then ``(eps, delta / 2 + (e^eps + 1)(1 + e^{-eps0} / 2) n delta0)``-DP
    by Feldman, McMillan and Talwar (FOCS 2021, Theorems 3.1, 3.8 and §5 for adaptive steps), valid
    while ``eps0 <= ln(n / (16 ln(2 / delta)))``. We take ``delta0`` so that the second part is at most
    delta / 2. Returns ``(inf, delta)`` outside the valid range.
    """
    from ..privacy.gaussian import gaussian_epsilon

    half = delta / 2
    # (e^eps + 1)(1 + e^{-eps0}/2) <= 1.5 (e^eps + 1); delta0 must be set from an eps at least as large
    # as the one returned, so iterate (with a tiny margin) until the bound is self-consistent
    eps = 1.0
    for _ in range(100):
        delta0 = half / (1.5 * (math.exp(eps) + 1) * n)
        eps0 = gaussian_epsilon(noise_multiplier, delta0)
        if eps0 > math.log(n / (16 * math.log(2 / half))):
            return math.inf, delta
        new = _fmt21_epsilon(eps0, n, half)
        if new <= eps:
            return new, delta
        eps = new * (1 + 1e-6)
    return math.inf, delta


def private_oja(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    c1: float = 10.0,
    c2: float = 10.0,
    gradient_clip: float | None = None,
    rank_method: RankMethod = "block",
    amplification: Literal["none", "shuffle"] = "none",
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Private Oja (Algorithm 2): clipped Oja steps with Gaussian noise, one row per step.

    ``w_t = normalise(w_{t-1} + eta_t clip_beta(x_t x_t^T w_{t-1}) + 2 eta_t beta alpha z_t)``,
    ``eta_t = c1 / (c2 + t)``, ``z_t ~ N(0, I)``. ``beta`` is ``gradient_clip`` (default ``row_norm^2``,
    which clipped rows never exceed, so only the row clip acts). Rows are processed in their order
    (the paper's random permutation is the caller's to apply, data-independently, before streaming).

    Privacy
    -------
    Relation: replace-one, positions public. The row at step t enters only that step, whose update
    before noise moves by at most ``2 eta_t beta`` when the row is replaced (both gradients have norm
    <= beta after clipping); the noise std ``2 eta_t beta alpha`` makes alpha the noise multiplier of
    a ``GaussianDpEvent(alpha)``. By parallel composition the run is as private as one step:
    ``amplification="none"`` (default) takes alpha from the exact Gaussian curve for (epsilon, delta)
    (the paper's "alpha = O(log(n/delta)/epsilon) without amplification"). ``amplification="shuffle"``
    assumes the rows were uniformly shuffled *and* that the order is secret, and uses the numerical
    bound :func:`shuffle_amplified_epsilon` (reported as an ``EpsilonDeltaDpEvent``); it is only
    valid for small epsilon (the paper's Lemma 3.1 range, epsilon = O(sqrt(log(n/delta)/n))).
    """
    owner = "private_oja"
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=(Relation.REPLACE_ONE,),
    )
    if calibration != "tight":
        raise ValueError(
            f"The 'calibration' parameter of {owner} must be 'tight': the paper's noise multiplier "
            "C log(n/delta) / (epsilon sqrt(n)) leaves the constant C unspecified."
        )
    c1, c2 = _rate(c1, c2, owner)
    check_choice(rank_method, "rank_method", ("block", "deflation"), owner)
    check_choice(amplification, "amplification", ("none", "shuffle"), owner)
    Cs = sensitivity_norm(C)
    beta = Cs**2 if gradient_clip is None else _check_positive(gradient_clip, "gradient_clip", owner)
    n = _n_rows(X, n_samples, owner)
    rows = _Rows(X, C, on_norm_violation, owner)
    d = rows.peek_features()
    k = _check_k(k, d, n, owner)
    notes = ["Rows used in their given order, each in exactly one step (parallel composition)."]
    if amplification == "none":
        alpha = analytic_noise_multiplier(budget.epsilon, budget.delta)
        events: list[dp_accounting.DpEvent] = [dp_accounting.GaussianDpEvent(alpha)]
    else:
        if n is None:
            raise ValueError(f"{owner}: amplification='shuffle' needs the number of rows (n_samples).")
        alpha = _calibrate_shuffle(n, budget.epsilon, budget.delta)
        eps_amp, _ = shuffle_amplified_epsilon(alpha, n, budget.delta)
        events = [EpsilonDeltaDpEvent(eps_amp, budget.delta * (1 - 1e-9))]
        notes.append("Amplification by shuffling (Feldman-McMillan-Talwar 2021): valid only if the "
                     "rows were shuffled uniformly at random and the order is kept secret.")
    if accountant is not None:
        accountant.spend(compose(events), rel, label=owner)
    rng = as_generator(random_state)
    W = orthonormalize(rng.standard_normal((d, k)), "qr")
    noise_std = 2.0 * beta * alpha
    W, used = _run_rows(rows, W, _parts(n, k, rank_method, owner), c1, c2, beta, noise_std, rng,
                        owner, show_progress, n)
    report = certify_release(events, mechanism=owner, budget=budget, relation=rel,
                             calibration=calibration, notes=notes, stacklevel=3)
    return SubspaceResult(
        components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
        diagnostics={"noise_multiplier": alpha, "gradient_clip": beta, "c1": c1, "c2": c2,
                     "rank_method": rank_method, "amplification": amplification},
    )


@functools.lru_cache(maxsize=64)
def _calibrate_shuffle(n: int, epsilon: float, delta: float) -> float:
    lo, hi = 1e-3, 1e4
    if shuffle_amplified_epsilon(hi, n, delta)[0] > epsilon:
        raise ValueError(
            f"private_oja: amplification by shuffling cannot certify epsilon={epsilon:g} at n={n} "
            f"(the bound needs eps0 <= ln(n / (16 ln(4/delta)))); use amplification='none'."
        )
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if shuffle_amplified_epsilon(mid, n, delta)[0] <= epsilon:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-6:
            break
    return hi


# ---------------------------------------------------------------------------------------------
# DP-PCA building blocks


def _group_count(epsilon: float, delta: float, zeta: float, histogram: str) -> int:
    """Number of groups of Algorithm 4 (spec §A.2: ceil(8 ln(4 / (delta zeta)) / epsilon))."""
    if histogram == "stable":
        # at least 3: a bin is kept only above the threshold 1 + 2 ln(2/delta)/epsilon > 1, so with one
        # group (or two in different bins) nothing would ever pass at large epsilon
        return max(3, math.ceil(8.0 * math.log(4.0 / (delta * zeta)) / epsilon))
    # pure Laplace over 4*64 + 1 bins: the true bin must beat the largest of ~257 noises
    return max(1, math.ceil(4.0 * math.log(4.0 * (4 * _OCTAVES + 1) / zeta) / epsilon))


def minimum_batch_size(epsilon: float, delta: float, *, failure_probability: float = 0.01,
                       n_steps: int = 1, histogram: Histogram = "laplace",
                       n_groups: int | None = None) -> int:
    """Smallest minibatch for which Algorithm 4 has at least one pair per group (B >= 4 groups)."""
    zeta = failure_probability / (2 * max(1, n_steps))
    g = n_groups or _group_count(epsilon, delta, zeta, histogram)
    return 4 * g


def _gradients(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Row i: vec(x_i (x_i^T W)), shape (m, d k) (column-major in k so k = 1 is x_i (x_i . w))."""
    P = X @ W  # m x k
    return (X[:, None, :] * P[:, :, None]).reshape(X.shape[0], -1) if W.shape[1] > 1 else X * P


def private_top_eigenvalue(
    G: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    bound: float,
    n_groups: int,
    histogram: Histogram = "laplace",
    random_state: np.random.Generator,
) -> float | None:
    """Algorithm 4: a private estimate of the top eigenvalue of the covariance of the rows of G.

    Rows are paired (``h_i = (g_i - g_{b/2+i}) / sqrt 2``: zero mean, same covariance), the pairs
    split into ``n_groups`` groups, each group's top eigenvalue ``lambda_max(H_j^T H_j / s)`` binned
    on the ratio-``2^{1/4}`` grid ``bound * 2^{l/4}``, and the heaviest bin of a private histogram
    returned as its lower edge. ``bound`` is a public upper bound on any group's eigenvalue (for rows
    of norm <= c, ``2 c^2``). None (the paper's ⊥) when the underflow bin wins or nothing passes.

    Privacy: replace-one; one row changes one pair, so one group's eigenvalue: a histogram of
    L1 shift 2. ``"laplace"``: Laplace(2 / epsilon) on every one of the ``4 * 64 + 1`` bins (pure
    epsilon-DP). ``"stable"``: the thresholded histogram, (epsilon, delta)-DP.
    """
    rng = random_state
    b = G.shape[0]
    pairs = b // 2
    s = pairs // n_groups
    if s < 1:
        raise ValueError(f"private_top_eigenvalue: {b} gradients are too few for {n_groups} groups "
                         f"(at least {2 * n_groups} are needed).")
    H = (G[:pairs] - G[pairs : 2 * pairs]) / math.sqrt(2.0)
    H = H[: s * n_groups].reshape(n_groups, s, -1)
    if s <= H.shape[2]:
        gram = H @ H.transpose(0, 2, 1)
    else:
        gram = H.transpose(0, 2, 1) @ H
    lam = np.linalg.eigvalsh(gram)[:, -1] / s
    lam = np.clip(lam, 0.0, bound)
    with np.errstate(divide="ignore"):
        ell = np.floor(4.0 * np.log2(lam / bound))
    low = -4 * _OCTAVES - 1  # the underflow bin (includes 0)
    ell = np.where(np.isfinite(ell), np.maximum(ell, low), low).astype(np.int64)
    ell = np.minimum(ell, 0)
    if histogram == "laplace":
        mode, _ = laplace_histogram_mode(ell, low, 0, scale=2.0 / epsilon, random_state=rng)
    else:
        found = stable_histogram_mode(ell, epsilon=epsilon, delta=delta, random_state=rng)
        if found is None:
            return None
        mode = found
    if mode <= low:
        return None
    return float(bound * 2.0 ** (mode / 4.0))


def private_mean(
    G: np.ndarray,
    *,
    radius: float,
    bound: float,
    hist_scale: float | None,
    hist_budget: tuple[float, float] | None,
    noise_std_per_sensitivity: float,
    half_width_mult: float = 3.0,
    histogram: Histogram = "laplace",
    random_state: np.random.Generator,
) -> tuple[np.ndarray | None, dict[str, float]]:
    """Algorithm 5: private mean of the rows of G (shape b x p), coordinate-wise.

    For every coordinate j a private histogram with bins ``[2 r l - r, 2 r l + r)`` (``r = radius``)
    over the data-independent range ``|g_ij| <= bound`` finds a centre ``m_j``; each coordinate is
    truncated to ``[m_j - h r, m_j + h r]`` (``h = half_width_mult``), averaged, and released with
    Gaussian noise of std ``noise_std_per_sensitivity * Delta``, ``Delta = 2 h r sqrt(p) / b`` (the L2
    diameter of the box over b: the most a replaced row moves the mean). Returns (None, ...) when a
    coordinate's histogram suppresses everything (stable histograms only).

    Privacy: replace-one; one row moves one value in each of the p coordinate histograms (L1 shift 2
    each) and the truncated mean by at most ``Delta``. Laplace histograms with scale ``hist_scale``
    (pure), or stable ones with ``hist_budget = (epsilon_h, delta_h)`` each.
    """
    rng = random_state
    b, p = G.shape
    r = float(radius)
    # The bins of coordinate j as the contiguous row ellT[j] (the values of floor((G + r) / 2r)),
    # built by blocks of rows: reading the columns of a (b, p) array one by one missed the cache on
    # every element (about 11 ms of a 30 ms call at p = 500).
    ellT = np.empty((p, b), dtype=np.int64)
    for a in range(0, b, 128):
        ellT[:, a : a + 128] = np.floor((G[a : a + 128] + r) / (2.0 * r)).T
    top = int(math.ceil((bound + r) / (2.0 * r)))
    centres = np.empty(p)
    for j in range(p):
        if histogram == "laplace":
            assert hist_scale is not None
            mode, _ = laplace_histogram_mode(ellT[j], -top, top, scale=hist_scale, random_state=rng)
        else:
            assert hist_budget is not None
            found = stable_histogram_mode(ellT[j], epsilon=hist_budget[0], delta=hist_budget[1],
                                          random_state=rng)
            if found is None:
                return None, {}
            mode = found
        centres[j] = 2.0 * r * mode
    h = half_width_mult * r
    low, high = centres - h, centres + h
    clipped = np.clip(G, low, high)
    sens = 2.0 * h * math.sqrt(p) / b
    mean = clipped.mean(axis=0) + rng.standard_normal(p) * noise_std_per_sensitivity * sens
    return mean, {"sensitivity": sens, "radius": r}


@functools.lru_cache(maxsize=256)
def _mean_calibration(epsilon: float, delta: float, p: int, share: float, histogram: str,
                      ) -> tuple[float | None, tuple[float, float] | None, float]:
    """(Laplace multiplier per histogram, stable budget per histogram, Gaussian multiplier).

    The p coordinate histograms get ``share`` of (epsilon, delta); the Gaussian multiplier is then the
    smallest for which histograms + Gaussian together are (epsilon, delta)-DP by the accountant (PLD).
    When the budget is so large that a multiplier would fall below 0.05 (a huge PLD grid), the
    histograms compose by basic composition (pure, as
    :func:`~dpspectral.privacy.accounting.epsilon_of` then reads them) and the Gaussian gets the rest.
    """
    floor = SampledGaussianAccountant.MIN_PLD_MULTIPLIER
    if histogram == "stable":
        stable = (epsilon * share / p, delta * share / p)
        return None, stable, analytic_noise_multiplier(epsilon * (1 - share), delta * (1 - share))
    pure = p / (epsilon * share)
    gauss_pure = analytic_noise_multiplier(epsilon * (1 - share), delta)
    if pure >= floor and gauss_pure >= floor:
        lap = calibrate(lambda m: dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(m), p),
                        epsilon * share, delta * share, accounting="pld", tol=1e-6)
        hist = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap), p)
        gauss = calibrate(lambda s: dp_accounting.ComposedDpEvent([hist, dp_accounting.GaussianDpEvent(s)]),
                          epsilon, delta, accounting="pld", tol=1e-6)
        if gauss >= floor:
            return lap, None, gauss
    # A multiplier below the floor: epsilon_of then reads the Laplace histograms as pure (basic
    # composition with the Gaussian), so they are calibrated that way (PLD-calibrated ones would not
    # be certified when only the Gaussian is below the floor).
    return pure, None, gauss_pure


@dataclass
class _StepLog:
    skipped: int = 0
    steps: int = 0
    eigenvalues: list[float] = field(default_factory=list)


def dp_pca(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    c1: float = 100.0,
    c2: float = 1.0,
    batch_size: int | None = None,
    batch_constant: float = 1.0,
    rank_method: RankMethod = "block",
    histogram: Histogram = "laplace",
    half_width_mult: float = 2.0,
    K: float = 1.0,
    a: float = 0.5,
    failure_probability: float = 0.01,
    n_groups: int | None = None,
    histogram_share: float = 0.5,
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """DP-PCA (Algorithm 3): minibatch Oja with private range and mean estimation.

    Minibatch t (B rows, ``B = batch_constant * n / ln(n)^2`` by default) is split in halves: the
    first gives a private estimate ``Lambda_t`` of the top eigenvalue of the gradients' covariance
    (:func:`private_top_eigenvalue`), the second a private mean gradient ``g_t``
    (:func:`private_mean`, half-width ``r = K sqrt(2 Lambda_t) log^a(b p / zeta)``);
    ``W_t = orth(W_{t-1} + eta_t g_t)``, ``eta_t = c1 / (c2 + t)``. A failed estimate skips the step.
    ``zeta = failure_probability / (2 T)``; ``K``, ``a`` are Assumption A.4's constants (the paper's
    Gaussian values are K = 4, a = 1, which make the truncation box ~80 standard deviations wide at
    n = 2e5; the defaults K = 1, a = 1/2 and ``half_width_mult = 2`` (the factor of Algorithm 5's box;
    spec default 3) were chosen from measurements, docs/algorithms/oja.md). Learning rates are in the
    units of the data: ``eta`` scales as ``1 / row_norm^2``; the defaults suit ``row_norm = 1``.

    Privacy
    -------
    Relation: replace-one, positions public. A row is in exactly one half of one minibatch, so the
    run is a :class:`ParallelDpEvent` of two branches. Gradients of clipped rows have norm <= C^2 and
    group eigenvalues of the paired differences are <= ``2 C^4`` (public bin ranges).
    Branch 1, Algorithm 4: one group eigenvalue changes; histogram of L1 shift 2: Laplace(2/eps4)
    (``LaplaceDpEvent``, pure) or stable ((eps4, delta4) event).
    Branch 2, Algorithm 5: p = d k coordinate histograms (L1 shift 2 each) and the truncated mean with
    sensitivity ``Delta = 2 h r sqrt(p) / b``: ``Composed([p x histogram, GaussianDpEvent(s)])``.
    ``calibration="tight"`` (default): both branches get the whole (epsilon, delta) (parallel
    composition); in branch 2 the histograms take ``histogram_share`` and the Gaussian multiplier is
    the smallest the accountant certifies for the rest. ``calibration="paper"``: each branch gets
    (epsilon/2, delta/2) as in the paper and the Gaussian std is the paper's
    ``beta_t = 8 K sqrt(2 Lambda_t) log^a(B d / zeta) sqrt(2 d log(2.5/delta)) / (epsilon B)``, which
    leaves nothing for the histograms: the accountant reports what that certifies (uncertified).
    """
    owner = "dp_pca"
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=(Relation.REPLACE_ONE,),
    )
    c1, c2 = _rate(c1, c2, owner)
    check_choice(rank_method, "rank_method", ("block", "deflation"), owner)
    check_choice(histogram, "histogram", ("laplace", "stable"), owner)
    half_width_mult = _check_positive(half_width_mult, "half_width_mult", owner)
    K = _check_positive(K, "K", owner)
    a = _check_positive(a, "a", owner)
    zeta_total = check_share(failure_probability, "failure_probability", owner)
    share = check_share(histogram_share, "histogram_share", owner)
    n = _n_rows(X, n_samples, owner)
    if n is None and batch_size is None:
        raise ValueError(f"{owner}: a stream needs batch_size or n_samples (to set B = c n / ln(n)^2).")
    if batch_size is None:
        assert n is not None
        bc = _check_positive(batch_constant, "batch_constant", owner)
        B = max(4, int(bc * n / math.log(max(n, 3)) ** 2))
    else:
        B = _check_positive(batch_size, "batch_size", owner, integer=True)
    if n is not None and B > n:
        raise ValueError(f"The 'batch_size' parameter of {owner} ({B}) is larger than the number of "
                         f"rows ({n}).")
    rows = _Rows(X, C, on_norm_violation, owner, show_progress=False)
    d = rows.peek_features()
    k = _check_k(k, d, n, owner)
    parts = _parts(n, k, rank_method, owner)
    if len(parts) > 1 and n is not None and n // k < B:
        raise ValueError(f"{owner}: rank_method='deflation' gives each of the k={k} components n/k = "
                         f"{n // k} rows, fewer than one minibatch (B = {B}).")
    T = None if n is None else n // B
    zeta = zeta_total / (2 * max(1, T or 1))
    if budget.epsilon >= 0.9:
        warnings.warn(
            f"{owner}: the utility analysis (Theorem 5.1) is stated for epsilon in (0, 0.9); at "
            f"epsilon={budget.epsilon:g} the privacy guarantee still holds (certified by the "
            "accountant) but the error bound is not covered.", AnalysisRangeWarning, stacklevel=2)
    if n is not None and budget.delta > 1.0 / n:
        warnings.warn(f"{owner}: Theorem 5.1 assumes delta <= 1/n = {1.0 / n:.3g}; got delta="
                      f"{budget.delta:g} (privacy holds, the analysis does not).", AnalysisRangeWarning,
                      stacklevel=2)
    b_eps, b_delta = (budget.epsilon, budget.delta) if calibration == "tight" else (
        budget.epsilon / 2, budget.delta / 2)
    groups = n_groups or _group_count(b_eps, b_delta, zeta, histogram)
    groups = _check_positive(groups, "n_groups", owner, integer=True)
    if B < 4 * groups:
        raise ValueError(
            f"The 'batch_size' of {owner} is {B}, below the minimum {4 * groups} for the private "
            f"top-eigenvalue histogram ({groups} groups of at least one pair, from half of the batch). "
            "Use more rows, a larger batch_size / batch_constant, or fewer n_groups."
        )
    b = B // 2
    p = d * (1 if rank_method == "deflation" else k)
    Cs = sensitivity_norm(C)
    grad_bound = Cs**2
    eig_bound = 2.0 * grad_bound**2
    lap4 = 2.0 / b_eps  # Algorithm 4's Laplace scale (L1 shift 2)
    event4 = (laplace_histogram_event(lap4, rel) if histogram == "laplace"
              else stable_histogram_event(b_eps, b_delta))
    lap_m, stable_b, s_gauss = _mean_calibration(b_eps, b_delta, p, share, histogram)
    hist5 = (dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(lap_m), p)
             if lap_m is not None else
             dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(*stable_b), p))  # type: ignore[misc]
    hist_scale = None if lap_m is None else 2.0 * lap_m  # multiplier = scale / L1 shift 2
    notes = [f"Minibatch B = {B} rows; each row in exactly one sub-release (parallel composition)."]
    paper_std_factor = None
    if calibration == "paper":
        # beta_t = 8 K sqrt(2 Lambda) log^a(B p / zeta) sqrt(2 p log(2.5/delta)) / (eps B), with the
        # paper's (eps/2, delta/2) for Algorithm 5; recorded as a multiplier of our sensitivity below
        paper_std_factor = (8 * K * math.log(B * p / zeta) ** a
                            * math.sqrt(2 * p * math.log(2.5 / budget.delta)) / (budget.epsilon * B))
        notes.append("paper noise beta_t verbatim for the mean; it leaves no budget for the coordinate "
                     "histograms (spec §A.4).")
        # sensitivity of our truncated mean for the same Lambda: 2 h r sqrt(p) / b with
        # r = K sqrt(2 Lambda) log^a: the multiplier is beta_t / Delta, independent of Lambda
        r_unit = K * math.log(b * p / zeta) ** a
        delta_unit = 2 * half_width_mult * r_unit * math.sqrt(p) / b
        s_gauss = paper_std_factor / delta_unit
    event5 = dp_accounting.ComposedDpEvent([hist5, dp_accounting.GaussianDpEvent(s_gauss)])
    events: list[dp_accounting.DpEvent] = [ParallelDpEvent([event4, event5])]
    if accountant is not None:
        accountant.spend(compose(events), rel, label=owner)
    rng = as_generator(random_state)
    W = orthonormalize(rng.standard_normal((d, k)), "qr")
    log = _StepLog()
    deflation = len(parts) > 1
    found = np.empty((d, 0))
    comps = []
    bar = progress(range(T or 0), total=T, desc=owner, enabled=show_progress, min_total=50)
    bar_it = iter(bar)
    for j, size in enumerate(parts):
        w = _orth(_deflate(W[:, j : j + 1].copy(), found)) if deflation else W
        t = 0
        while size is None or (t + 1) * B <= size:
            batch = rows.take(B)
            if batch.shape[0] < B:
                break
            t += 1
            next(bar_it, None)
            log.steps += 1
            G1 = _gradients(batch[:b], w)
            G2 = _gradients(batch[b : 2 * b], w)
            lam = private_top_eigenvalue(G1, epsilon=b_eps, delta=b_delta, bound=eig_bound,
                                         n_groups=groups, histogram=histogram, random_state=rng)
            if lam is None:
                log.skipped += 1
                continue
            log.eigenvalues.append(lam)
            r = K * math.sqrt(2.0 * lam) * math.log(b * p / zeta) ** a
            g, info = private_mean(G2, radius=r, bound=grad_bound, hist_scale=hist_scale,
                                   hist_budget=stable_b, noise_std_per_sensitivity=s_gauss,
                                   half_width_mult=half_width_mult, histogram=histogram,
                                   random_state=rng)
            if g is None:
                log.skipped += 1
                continue
            eta = c1 / (c2 + t)
            w = _orth(_deflate(w + eta * g.reshape(w.shape[1], d).T, found))
        if deflation:
            if size is not None:
                leftover = size - t * B  # rows of this part that fill no batch: skip them
                if leftover > 0:
                    rows.take(leftover)
            comps.append(w)
            found = np.hstack([found, w])
        else:
            W = w
    if deflation:
        W = np.hstack(comps)
    if log.steps == 0:
        raise ValueError(f"{owner}: no complete minibatch of {B} rows in the data.")
    report = certify_release(events, mechanism=owner, budget=budget, relation=rel,
                             calibration=calibration, notes=notes, stacklevel=3)
    return SubspaceResult(
        components=fix_signs(W), values=None, privacy=report, n_samples=float(rows.row),
        diagnostics={
            "batch_size": B, "n_steps": log.steps, "skipped_steps": log.skipped, "n_groups": groups,
            "mean_noise_multiplier": s_gauss, "c1": c1, "c2": c2, "rank_method": rank_method,
            "histogram": histogram, },
    )
