"""Oja's algorithm, Private Oja and DP-PCA (Liu, Kong, Jain and Oh, NeurIPS 2022).

Paper: ``../shared/papers/001_*.txt``; Algorithms 4 and 5 and the histogram learner are reconstructed
in ``../shared/papers/spec-pca-gep.md`` §A. All three are single-pass streaming algorithms: they accept
an array, a memmap, a sparse matrix or an iterable of row blocks (a stream), read each row once, and
keep O(B d k) memory (B the minibatch size).

Gradients. For ``A_i = x_i x_i^T`` and an orthonormal ``W`` (d x k), the Oja gradient is
``A_i W = x_i (x_i^T W)``, never forming a d x d matrix. With rows clipped to norm C it has Frobenius
norm ``||x_i|| ||W^T x_i|| <= C^2``.

Relation and composition. Replace-one neighbours (data sets as multisets of rows). Every row enters
exactly one private sub-release (one Oja step, one top-eigenvalue histogram, or one mean estimate),
and later steps see it only through earlier releases, so by parallel composition the run is as
private as its worst sub-release; :class:`~dpspectral.privacy.accounting.ParallelDpEvent` records
that. Parallel composition needs the assignment of rows to sub-releases to be independent of the
data: for an in-memory input (array, memmap, sparse, Dask, list of blocks) the private methods
permute the rows uniformly at random with the secret generator (``random_state``) before forming
steps or minibatches, so a data-dependent row order (sorted by label or time) cannot break the
argument. A one-shot stream cannot be permuted: its order is *assumed* independent of the data (the
privacy report says so in its notes).

Validate, then charge, then release. An in-memory input is validated whole (numeric, 2-D, finite
and, with ``on_norm_violation="raise"``, every row within the bound) before the ledger is charged
(:func:`~dpspectral.privacy.pipeline.validate_rows`). A stream arrives after the charge: every row
read is checked the same way (whether or not it ends up in a step), and a bad block is a *failed
release*: it stays charged and the ledger marks it failed (:func:`~dpspectral.privacy.pipeline.
charge`). Error messages name the kind of problem, never a row, a value or a count. The paper splits
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
from ..privacy.pipeline import charge, not_finite_error, validate_rows
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


def _indexable(X: Any) -> Any:
    """An in-memory input as one object with ``shape`` and row indexing (lists of blocks stacked)."""
    from ..moments import is_dask_array

    X = _as_source(X)
    if isinstance(X, (list, tuple)):
        blocks = list(X)
        if any(sp.issparse(b) for b in blocks):
            return sp.csr_matrix(sp.vstack([sp.csr_matrix(b) for b in blocks]))
        return np.vstack([np.asarray(b) for b in blocks])
    if sp.issparse(X):
        return sp.csr_matrix(X)
    if is_dask_array(X) or hasattr(X, "shape"):
        return X
    return np.asarray(X)


def _permuted_blocks(X: Any, order: np.ndarray) -> Iterator[tuple[int, Any]]:
    """(start, rows) blocks of ``X`` read in the order ``order`` (a permutation of its rows)."""
    from ..moments import is_dask_array

    n, d = X.shape
    step = max(1, _MEMMAP_BLOCK_ELEMENTS // max(d, 1))
    for a in range(0, n, step):
        idx = order[a : a + step]
        if is_dask_array(X):
            yield a, np.asarray(X[idx].compute())
        else:
            yield a, X[idx]  # fancy indexing: a copy, in the permuted order


class _Rows:
    """The rows of an array or a stream of row blocks, re-cut into float64 blocks of fixed sizes.

    Every block is checked for finite values and clipped to the row norm C (a copy: the caller's data
    are never modified). ``take(m)`` returns the next ``m`` rows (fewer at the end of the data).
    ``order``: read the rows of an in-memory input in this order (a secret permutation).
    """

    def __init__(self, X: Any, C: float, mode: NormViolation, owner: str,
                 show_progress: bool | None = None, order: np.ndarray | None = None) -> None:
        self.C, self.mode, self.owner = C, mode, owner
        src = _as_source(X) if order is None else _indexable(X)
        # A memmap is read by small blocks and the pages of the rows already copied are dropped after
        # every take (the generic path's 128 MB blocks stayed resident until done, and pages of a
        # block's tail, re-read after the block's release, stayed for good: ~70 MB at 1e6 x 100).
        # Not for a copy-on-write map, where dropping pages would discard the caller's changes.
        self._release: Callable[[int, int], None] | None = None
        self._released = 0  # the pages of rows [0, _released) have been released
        self._blocks: Iterator[tuple[int, Any]]
        if order is not None:
            self._blocks = _permuted_blocks(src, order)
        elif isinstance(src, np.memmap) and src.ndim == 2:
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
            _, block = next(self._blocks)
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
                f"{self.owner}: the blocks of the data do not all have the same number of columns "
                f"(the first had {self.d})."
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
        if not np.isfinite(out).all():  # every row read, used in a step or not
            raise not_finite_error(self.owner)
        out, _ = clip_rows(out, self.C, on_norm_violation=self.mode, copy=False, first_row=self.row,
                           owner=self.owner)
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


def _fmt21_closed_form(eps0: float, n: int, delta: float) -> float:
    """Feldman, McMillan, Talwar (FOCS 2021), Theorem 3.1, as in the authors' reference code.

    ``log(1 + (1 - e^{-eps0}) / (1 + e^{-eps0 - e}) (a + c))`` with ``a = 8 sqrt(e^eps0 ln(4/delta) / n)``,
    ``c = 8 e^eps0 / n``, ``e = ln(1 + a + c)``, valid for ``eps0 <= ln(n / (16 ln(4 / delta)))``. (An
    earlier version of this module used the factor ``(e^eps0 - 1) / (e^eps0 + 1)``, i.e. the
    denominator ``1 + e^{-eps0}``, which is up to 12% smaller: not the theorem.) Kept as a cross-check;
    :func:`shuffle_amplified_epsilon` uses the numerical bound, which is far tighter.
    """
    a = 8.0 * math.sqrt(math.exp(eps0) * math.log(4.0 / delta) / n)
    c = 8.0 * math.exp(eps0) / n
    e = math.log1p(a + c)
    return math.log1p((1.0 - math.exp(-eps0)) / (1.0 + math.exp(-eps0 - e)) * (a + c))


def _shuffle_delta(eps0: float, n: int, eps: float, tail: float = 1e-14) -> float:
    """Upper bound on ``delta(eps)`` of n shuffled eps0-DP local randomizers (FMT21's reduction).

    FMT21 (Theorem 3.2 and its adaptive version) reduce the shuffled output to a post-processing of
    ``P = (A + D, C - A + 1 - D)`` against ``Q = (A + 1 - D, C - A + D)`` with ``C ~ Bin(n - 1,
    e^{-eps0})``, ``A ~ Bin(C, 1/2)``, ``D ~ Bern(e^eps0 / (e^eps0 + 1))``. Given C the likelihood ratio
    is monotone in A, so the hockey-stick divergence of each conditional pair is one threshold test;
    we sum them over C exactly (vectorised; the authors' reference code evaluates C in steps of
    ``step`` values and bounds each step by its end points) and add the mass of C outside the range
    evaluated (a divergence is at most 1), so the result is an upper bound. ``tail``: the mass of C
    left out on each side (added back in full; small against the target delta keeps it tight).
    """
    from scipy import stats

    p = math.exp(-eps0)
    alpha = math.exp(eps0) / (math.exp(eps0) + 1.0)
    ee = math.exp(eps)
    den = alpha - ee * (1.0 - alpha)
    if den <= 0:  # eps >= eps0: nothing to gain
        return 0.0
    ratio = (ee * alpha - (1.0 - alpha)) / den  # e^{eps_eff}: A <= cut is the likelihood-ratio set
    m = n - 1
    lo = max(0, int(stats.binom.ppf(tail, m, p)) - 1)
    hi = min(m, int(stats.binom.isf(tail, m, p)) + 1)
    c = np.arange(lo, hi + 1, dtype=np.float64)
    w = stats.binom.pmf(c, m, p)
    tail = (float(stats.binom.cdf(lo - 1, m, p)) if lo > 0 else 0.0) + float(stats.binom.sf(hi, m, p))
    out = []
    for beta, forward in ((1.0 / (ratio + 1.0), True), (1.0 / (1.0 / ratio + 1.0), False)):
        cut = beta * (c + 1.0)
        f1 = stats.binom.cdf(cut, c, 0.5)
        f0 = stats.binom.cdf(cut - 1.0, c, 0.5)
        pc = alpha * f1 + (1.0 - alpha) * f0
        qc = (1.0 - alpha) * f1 + alpha * f0
        div = (pc - ee * qc) if forward else ((1.0 - qc) - ee * (1.0 - pc))
        out.append(float(w @ np.maximum(div, 0.0)))
    return min(1.0, max(out) + tail)


@functools.lru_cache(maxsize=1024)
def _shuffle_epsilon(eps0: float, n: int, delta: float) -> float:
    """Smallest eps (to ~1e-7 relative, rounded up) with ``_shuffle_delta(eps0, n, eps) <= delta``."""
    lo, hi = 0.0, eps0
    for _ in range(48):
        mid = 0.5 * (lo + hi)
        if _shuffle_delta(eps0, n, mid, tail=1e-6 * delta) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-7 * hi:
            break
    return hi


def _shuffle_limit(n: int, delta_shuffle: float) -> float:
    """The largest eps0 for which we use the shuffle theorem (FMT21's regime, the reference's 4/delta)."""
    return math.log(n / (16.0 * math.log(4.0 / delta_shuffle))) if n > 16 else -math.inf


def shuffle_amplified_epsilon(noise_multiplier: float, n: int, delta: float,
                              *, start: float = 1.0) -> tuple[float, float]:
    """(epsilon, delta) of n shuffled adaptive Gaussian steps, each with this noise multiplier.

    Each step is ``(eps0, delta0)``-DP for the exact Gaussian curve. By Feldman, McMillan and Talwar
    (FOCS 2021, Theorem 3.8 with the adaptive reduction of §5), the shuffled sequence is then
    ``(eps, delta / 2 + (e^eps + 1)(1 + e^{-eps0} / 2) n delta0)``-DP, where eps is the shuffle bound of
    ``eps0``-DP randomizers at ``delta / 2``; we compute that bound numerically (:func:`_shuffle_delta`,
    the reference implementation's numerical analysis) and take ``delta0`` so that the second part is
    at most ``delta / 2``. Used only while ``eps0 <= ln(n / (16 ln(8 / delta)))`` (the theorem's
    regime at ``delta / 2``); returns ``(inf, delta)`` outside it. ``start``: a first guess of eps
    (the result is self-consistent whatever the guess: ``delta0`` is set from an eps at least as
    large as the one returned).
    """
    from ..privacy.gaussian import gaussian_epsilon

    half = delta / 2
    limit = _shuffle_limit(n, half)
    eps = float(start)
    for _ in range(100):
        delta0 = half / (1.5 * (math.exp(eps) + 1) * n)  # (1 + e^{-eps0}/2) <= 1.5
        eps0 = gaussian_epsilon(noise_multiplier, delta0)
        if not eps0 <= limit:
            return math.inf, delta
        new = _shuffle_epsilon(round(eps0, 12) + 1e-12, n, half)
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
    _plan_only: bool = False,
) -> SubspaceResult:
    """Private Oja (Algorithm 2): clipped Oja steps with Gaussian noise, one row per step.

    ``w_t = normalise(w_{t-1} + eta_t clip_beta(x_t x_t^T w_{t-1}) + 2 eta_t beta alpha z_t)``,
    ``eta_t = c1 / (c2 + t)``, ``z_t ~ N(0, I)``. ``beta`` is ``gradient_clip`` (default ``row_norm^2``,
    which clipped rows never exceed, so only the row clip acts). The rows of an in-memory input are
    visited in a uniformly random order drawn from the secret generator (the paper's line 1 shuffle,
    fresh for every call); a stream is used in its order.

    Privacy
    -------
    Relation: replace-one. The row at step t enters only that step, whose update before noise moves
    by at most ``2 eta_t beta`` when the row is replaced (both gradients have norm <= beta after
    clipping); the noise std ``2 eta_t beta alpha`` makes alpha the noise multiplier of a
    ``GaussianDpEvent(alpha)``. Steps are assigned to rows by a data-independent permutation (drawn
    here for in-memory data; assumed for a stream, whose order must not depend on the data), so by
    parallel composition the run is as private as one step: ``amplification="none"`` (default) takes
    alpha from the exact Gaussian curve for (epsilon, delta) (the paper's "alpha = O(log(n/delta) /
    epsilon) without amplification"). ``amplification="shuffle"`` (in-memory data only: the library
    shuffles the rows itself with the secret generator, so the order is uniform and secret) uses
    amplification by shuffling (:func:`shuffle_amplified_epsilon`: Feldman, McMillan and Talwar 2021,
    the numerical bound of their reference implementation; reported as an ``EpsilonDeltaDpEvent``); it
    needs ``eps0 <= ln(n / (16 ln(8 / delta)))`` per step, so it helps only for small epsilon and
    large n. The permutation is secret: it is never output, and ``random_state`` is a secret.
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
    src, n, in_memory = _prepare_source(X, n_samples, C, on_norm_violation, owner)
    rows = None if in_memory else _Rows(src, C, on_norm_violation, owner)
    d = int(src.shape[1]) if in_memory else rows.peek_features()  # type: ignore[union-attr]
    k = _check_k(k, d, n, owner)
    parts = _parts(n, k, rank_method, owner)
    notes = [_order_note(in_memory, "each row in exactly one step (parallel composition)")]
    if amplification == "none":
        alpha = analytic_noise_multiplier(budget.epsilon, budget.delta)
        events: list[dp_accounting.DpEvent] = [dp_accounting.GaussianDpEvent(alpha)]
    else:
        if not in_memory:
            raise ValueError(
                f"{owner}: amplification='shuffle' needs in-memory data (an array, memmap, sparse "
                "matrix, Dask array or list of blocks), which the library shuffles with the secret "
                "generator; a one-shot stream cannot be shuffled here. Use amplification='none'."
            )
        assert n is not None
        alpha = _calibrate_shuffle(n, budget.epsilon, budget.delta)
        eps_amp, _ = shuffle_amplified_epsilon(alpha, n, budget.delta, start=budget.epsilon)
        events = [EpsilonDeltaDpEvent(eps_amp, budget.delta * (1 - 1e-9))]
        notes.append("Amplification by shuffling (Feldman-McMillan-Talwar 2021, numerical bound): the "
                     "rows were shuffled here, uniformly, with the secret generator; the order is "
                     "never output.")
    if _plan_only:  # for select_learning_rate: the events, before anything is charged or drawn
        return events  # type: ignore[return-value]
    with charge(accountant, events, rel, owner):  # a bad block of a stream now is a failed release
        rng = as_generator(random_state)
        W = orthonormalize(rng.standard_normal((d, k)), "qr")
        if in_memory:
            assert n is not None
            rows = _Rows(src, C, on_norm_violation, owner, order=rng.permutation(n))
        noise_std = 2.0 * beta * alpha
        assert rows is not None
        W, used = _run_rows(rows, W, parts, c1, c2, beta, noise_std, rng, owner, show_progress, n)
        report = certify_release(events, mechanism=owner, budget=budget, relation=rel,
                                 calibration=calibration, notes=notes, stacklevel=3)
    return SubspaceResult(
        components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
        diagnostics={"noise_multiplier": alpha, "gradient_clip": beta, "c1": c1, "c2": c2,
                     "rank_method": rank_method, "amplification": amplification},
    )


def _order_note(in_memory: bool, what: str) -> str:
    if in_memory:
        return (f"Rows permuted uniformly at random with the secret generator before use; {what}.")
    return (f"Stream: rows used in their arrival order, {what}. ASSUMPTION: that order does not depend "
            "on the data (a stream sorted by a label, a value or a time that depends on the rows "
            "breaks parallel composition; shuffle it with secret randomness first).")


def _prepare_source(X: Any, n_samples: int | None, C: float, on_norm_violation: str,
                    owner: str) -> tuple[Any, int | None, bool]:
    """(source, n, in_memory): an in-memory input is validated whole here, before any charge."""
    src = _as_source(X)
    in_memory = validate_rows(src, row_norm=C, on_norm_violation=on_norm_violation, owner=owner)
    if not in_memory:
        return src, _n_rows(X, n_samples, owner), False
    src = _indexable(src)
    n = _n_rows(src, n_samples, owner)
    if not n:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is needed.")
    return src, n, True


@functools.lru_cache(maxsize=64)
def _calibrate_shuffle(n: int, epsilon: float, delta: float) -> float:
    """The smallest multiplier found for which :func:`shuffle_amplified_epsilon` certifies epsilon.

    The largest per-step eps0 whose shuffle bound at delta / 2 is at most epsilon (bisection), then
    the Gaussian multiplier for (eps0, delta0) with ``delta0 = (delta / 2) / (1.5 (e^epsilon + 1) n)``;
    checked (and nudged up) against :func:`shuffle_amplified_epsilon`.
    """
    half = delta / 2
    limit = _shuffle_limit(n, half)
    if not limit > 0:
        raise ValueError(
            f"private_oja: amplification by shuffling cannot certify epsilon={epsilon:g} at n={n} "
            f"(the bound needs eps0 <= ln(n / (16 ln(8/delta))) > 0); use amplification='none'."
        )
    lo, hi = 0.0, limit
    if _shuffle_epsilon(limit, n, half) <= epsilon * (1 - 1e-6):
        lo = limit
    else:
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if _shuffle_epsilon(mid, n, half) <= epsilon * (1 - 1e-6):
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-6 * hi:
                break
    if lo <= 0:
        raise ValueError(f"private_oja: amplification by shuffling cannot certify epsilon={epsilon:g} "
                         f"at n={n}; use amplification='none'.")
    delta0 = half / (1.5 * (math.exp(epsilon) + 1) * n)
    alpha = analytic_noise_multiplier(lo, delta0)
    for _ in range(200):
        if shuffle_amplified_epsilon(alpha, n, delta, start=epsilon)[0] <= epsilon:
            return alpha
        alpha *= 1 + 1e-6
    raise ValueError(f"private_oja: amplification by shuffling cannot certify epsilon={epsilon:g} at "
                     f"n={n}; use amplification='none'.")


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
    _plan_only: bool = False,
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
    Relation: replace-one. The rows of an in-memory input are permuted uniformly at random with the
    secret generator before the minibatches are formed (a stream's order is assumed independent of
    the data: stated in the report's notes); a row is then in exactly one half of one minibatch, so
    the run is a :class:`ParallelDpEvent` of two branches. Gradients of clipped rows have norm <= C^2 and
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
    leaves nothing for the histograms: the accountant reports what that certifies (marked uncertified
    where it exceeds the request).
    Diagnostics: ``skipped_steps`` counts the steps whose released histogram output was the
    underflow bin or empty (the paper's ⊥): a function of released values only.
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
    src, n, in_memory = _prepare_source(X, n_samples, C, on_norm_violation, owner)
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
    rows = None if in_memory else _Rows(src, C, on_norm_violation, owner, show_progress=False)
    d = int(src.shape[1]) if in_memory else rows.peek_features()  # type: ignore[union-attr]
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
    notes = [f"Minibatch B = {B} rows.",
             _order_note(in_memory, "each row in exactly one sub-release (parallel composition)")]
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
    if _plan_only:  # for select_learning_rate: the events, before anything is charged or drawn
        return events  # type: ignore[return-value]
    with charge(accountant, events, rel, owner):  # a bad block of a stream now is a failed release
        W, log, used = _dp_pca_run(
            src, rows, n, in_memory, C, on_norm_violation, owner, d, k, parts, B, b, T, p, zeta,
            groups, histogram, b_eps, b_delta, eig_bound, grad_bound, K, a, hist_scale, stable_b,
            s_gauss, half_width_mult, c1, c2, show_progress, random_state)
        report = certify_release(events, mechanism=owner, budget=budget, relation=rel,
                                 calibration=calibration, notes=notes, stacklevel=3)
    return SubspaceResult(
        components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
        diagnostics={
            "batch_size": B, "n_steps": log.steps, "skipped_steps": log.skipped, "n_groups": groups,
            "mean_noise_multiplier": s_gauss, "c1": c1, "c2": c2, "rank_method": rank_method,
            "histogram": histogram, },
    )


def _dp_pca_run(src: Any, rows: _Rows | None, n: int | None, in_memory: bool, C: float,
                on_norm_violation: NormViolation, owner: str, d: int, k: int,
                parts: list[int | None], B: int, b: int, T: int | None, p: int, zeta: float,
                groups: int, histogram: Histogram, b_eps: float, b_delta: float, eig_bound: float,
                grad_bound: float, K: float, a: float, hist_scale: float | None,
                stable_b: tuple[float, float] | None, s_gauss: float, half_width_mult: float,
                c1: float, c2: float, show_progress: bool | None, random_state: Any,
                ) -> tuple[np.ndarray, _StepLog, int]:
    """The release of :func:`dp_pca` (after the charge): the minibatch loop."""
    rng = as_generator(random_state)
    W = orthonormalize(rng.standard_normal((d, k)), "qr")
    if in_memory:
        assert n is not None
        rows = _Rows(src, C, on_norm_violation, owner, show_progress=False, order=rng.permutation(n))
    assert rows is not None
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
    if log.steps == 0:  # a stream shorter than one minibatch (n is public under replace-one)
        raise ValueError(f"{owner}: no complete minibatch of {B} rows in the data.")
    return W, log, rows.row
