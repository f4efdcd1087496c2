"""Oja's algorithm, Private Oja and DP-PCA (Liu, Kong, Jain and Oh, NeurIPS 2022).

Paper: ``../shared/papers/001_*.txt``; Algorithms 4 and 5 and the histogram learner are reconstructed
in ``../shared/papers/spec-pca-gep.md`` §A. All three are single-pass streaming algorithms: they accept
an array, a memmap, a sparse matrix or an iterable of row blocks (a stream), read each row once, and
keep O(B d k) memory (B the minibatch size; a DP-PCA batch released with noise from the public bound is
summed by chunks of ~8 MB, so such a step needs O(chunk + d k) whatever B).

Gradients. For ``A_i = x_i x_i^T`` and an orthonormal ``W`` (d x k), the Oja gradient is
``A_i W = x_i (x_i^T W)``, never forming a d x d matrix. With rows clipped to norm C it has Frobenius
norm ``||x_i|| ||W^T x_i|| <= C^2``.

Relation and composition. Replace-one neighbours (data sets as multisets of rows). Every row enters
exactly one private sub-release (one Oja step, one top-eigenvalue histogram, or one mean estimate),
and later steps see it only through earlier releases, so by parallel composition the run is as
private as its worst sub-release; :class:`~dpspectral.privacy._accounting.ParallelDpEvent` records
that. Parallel composition needs the assignment of rows to sub-releases to be independent of the
data: for an in-memory input (array, memmap, sparse, Dask, list of blocks) the private methods
permute the rows uniformly at random with the secret generator (``random_state``) before forming
steps or minibatches, so a data-dependent row order (sorted by label or time) cannot break the
argument. A one-shot stream cannot be permuted: its order is *assumed* independent of the data (the
privacy report says so in its notes).

Validate, plan, release, post-process. The parameters are checked against each function's constraint
table (:func:`~dpspectral._constraints.validated`). An in-memory input is validated whole (numeric,
2-D, finite and, with ``on_norm_violation="raise"``, every row within the bound) before the ledger is
charged (:func:`~dpspectral.privacy._pipeline.validate_rows`). The releases of a run (their noise
kinds, scales and sensitivities) and its accounting events form a
:class:`~dpspectral.privacy._pipeline.ReleasePlan` built from public inputs only; the run then happens
inside :func:`~dpspectral.privacy._pipeline.release`, which charges the plan and then hands out the
noise: the Oja steps' and the means' Gaussian noise by release name, the histograms' Laplace noise
through the histogram learners, which draw from the releaser at the plan's scales. Every draw comes
from the one noise source (``random_state="secure"``: OS entropy and exact discrete samplers), and
the initial iterate and the row permutation from its secret generator. With the seeded source, Private
Oja's step noise is drawn by blocks from an SFC64 stream seeded from that generator (NumPy's ziggurat,
compiled; the same law) and DP-PCA's coordinate histograms in one vector draw. A one-shot stream (an
iterator of blocks) arrives after the charge (the pipeline's rule for every method): every row read
is checked the same way (whether or not it ends up in a step), and a bad block is a *failed release*:
it stays charged and the ledger marks it failed. A callable returning a fresh iterator is read once
before the charge and checked whole, as an in-memory input. Error messages name the kind of problem,
never a row, a value or a count. The paper splits (epsilon, delta) in half between
Algorithms 4 and 5 (basic composition); on disjoint rows each can have the whole budget, which halves
the noise (``calibration="tight"``, the default).

Rank k. ``rank_method="block"``: Oja on a d x k iterate with orthonormalisation after every step
(modified Gram-Schmidt per row for Oja / Private Oja, QR per minibatch for DP-PCA); the gradient is the
d x k matrix ``x (x^T W)``, flattened for DP-PCA's histograms. ``rank_method="deflation"``: the rows
are split into k consecutive parts, part j learns component j with updates projected orthogonally to
the components already found (Hotelling deflation on disjoint rows: still one pass, still parallel
composition, but each component sees n / k rows).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import itertools
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import dp_accounting
import numpy as np

from .._array_api import refuse_device
from .._constraints import (
    NONE,
    PRIVACY_PARAMETERS,
    RANDOM_STATE,
    ROW_NORM,
    Interval,
    Options,
    Types,
    check_params,
    renamed,
    validated,
    without,
)
from .._linalg import fix_signs, orthonormalize
from .._moments import needs_two_passes_ok
from .._options import ADAPTIVE_CLIP, AdaptiveClip, clip_fields, folded
from .._progress import progress
from .._results import SubspaceResult
from .._validation import check_mechanism_inputs
from ..privacy._accounting import (
    Accountant,
    EpsilonDeltaDpEvent,
    ParallelDpEvent,
    PrivacyReport,
    SampledGaussianAccountant,
    calibrate,
)
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, clip_from_counts, clip_note, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._histogram import (
    MAX_SECURE_BINS,
    histogram_shift,
    laplace_histogram_event,
    laplace_histogram_mode,
    stable_histogram_event,
    stable_histogram_mode,
)
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._quantile import norm_histogram
from ..privacy._rounding import Summation, widen_projection, widen_release
from ..privacy._template import (
    Drawn,
    MatrixRows,
    Mechanism,
    Released,
    RunSettings,
    run,
    unprotected_generator,
)
from ._clip_stage import ClipStaged, with_clip_stage
from ._inputs import PcaInputs
from ._range_estimation import RANGE_ESTIMATION_FIELDS, RangeEstimation
from ._stream import (
    _batch_sum,
    _check_k,
    _is_stream,
    _n_rows,
    _open_source,
    _order_note,
    _parts,
    _prepare_source,
    _Rows,
    _Source,
    batch_sizes,
    default_block_size,
    noise_per_clip2,
)

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
_OjaInputsT = TypeVar("_OjaInputsT", bound=PcaInputs)  # the record of one Oja method
#: The paper's symbols of the learning rate ``eta_t = c1 / (c2 + t)``, renamed (the old names warn).
LEARNING_RATE_NAMES = {"c1": "learning_rate_scale", "c2": "learning_rate_offset"}
Histogram = Literal["laplace", "stable"]
#: Private Oja's default c1 (times 1 / row_norm^2): eta_t = c1 / (c2 + t) covers eigengaps
#: >= row_norm^2 / (2 c1) = 0.05 row_norm^2 (Oja's alpha = c1 gap > 1/2; measured in docs/algorithms/oja.md)
DEFAULT_PRIVATE_OJA_C1 = 10.0
_CHUNK = 2048  # rows per compiled call / noise block in the row-by-row algorithms (the block stays in L2)
#: DP-PCA's share of each minibatch for Algorithm 4 (range estimation) outside the paper's schedule
DEFAULT_RANGE_FRACTION = 0.1
_MATERIALISE = 1 << 22  # DP-PCA forms Algorithm 4's gradients only up to this many values (32 MB)
_PLD_MAX_COORDINATES = 8192  # above: the coordinate histograms compose by basic composition (pure)
_TRUNCATION_MAX_VALUES = 1 << 26  # "auto" runs Algorithm 5 only on b x (d p) gradients up to this
_MAX_GROUP_PAIRS = 256  # Algorithm 4 uses at most this many pairs per group (range_fraction): the rest
#                         of the batch goes to the mean (an eigenvalue within a 2^(1/4) bin needs no more)
_OCTAVES = 64  # eigenvalue bins cover [2^-64, 1] x the largest possible eigenvalue (then underflow)

# The names of the planned releases (the releaser hands out noise by these names only).
_STEP = "step"  # Private Oja: the noise of one step, per unit learning rate
_EIGENVALUE_HISTOGRAM = "eigenvalue_histogram"  # DP-PCA, Algorithm 4: Laplace noise on the bins
_COORDINATE_HISTOGRAMS = "coordinate_histograms"  # DP-PCA, Algorithm 5: Laplace noise on the bins
_MEAN = "mean"  # DP-PCA, Algorithm 5: the mean's Gaussian noise, per unit of its sensitivity

# Constraint tables (the messages are generated from them); cross-parameter checks (k <= d, k <= n,
# batch_size <= n, a minimum batch) stay in the functions, next to their reasons.
_POSITIVE = Interval(0, None, "neither")
_COUNT = Interval(1, None, "left", integer=True)
_COMMON_PARAMETERS: dict[str, Any] = {
    "learning_rate_scale": _POSITIVE, "learning_rate_offset": _POSITIVE,
    "rank_method": Options(("block", "deflation")),
    "n_samples": [NONE, _COUNT], "random_state": RANDOM_STATE,
}
_PRIVATE_PARAMETERS: dict[str, Any] = {
    **_COMMON_PARAMETERS, **without(PRIVACY_PARAMETERS, "row_norm"),  # row_norm: check_mechanism_inputs
}
_OJA_PARAMETERS: dict[str, Any] = {**_COMMON_PARAMETERS, "row_norm": [NONE, ROW_NORM]}
_PRIVATE_OJA_PARAMETERS: dict[str, Any] = {
    **_PRIVATE_PARAMETERS, "gradient_clip": [NONE, _POSITIVE], "learning_rate_scale": [NONE, _POSITIVE],
    "amplification": Options(("none", "shuffle")), "adaptive_clip": ADAPTIVE_CLIP,
}
_DP_PCA_PARAMETERS: dict[str, Any] = {
    **_PRIVATE_PARAMETERS, "batch_size": [NONE, _COUNT], "batch_constant": _POSITIVE,
    "range_estimation": [NONE, Types((RangeEstimation,), "a RangeEstimation")],
    "learning_rate_scale": [NONE, _POSITIVE], "learning_rate_offset": [NONE, _POSITIVE],
    "schedule": Options(("warmup", "paper")), "block_size": [NONE, _COUNT],
    "adaptive_clip": ADAPTIVE_CLIP,
}


class AnalysisRangeWarning(UserWarning):
    """The parameters are outside the range a paper's utility analysis covers (privacy still holds)."""


# ---------------------------------------------------------------------------------------------
# the iterate and its parts (the rows are read by pca/_stream.py)


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


_PartRun = Callable[[np.ndarray, int | None, np.ndarray], np.ndarray]


def _by_parts(W: np.ndarray, parts: list[int | None], run_part: _PartRun) -> np.ndarray:
    """Run ``run_part(w, size, found)`` over the parts of the rows (:func:`_parts`), in order.

    One part (block updates): ``w`` is the whole iterate W and ``found`` is empty. k parts (deflation):
    part j starts from column j of W, orthogonalised against the components ``found`` on the earlier
    parts, and its result is the j-th component.
    """
    found = np.empty((W.shape[0], 0))
    if len(parts) == 1:
        return run_part(W, parts[0], found)
    comps = []
    for j, size in enumerate(parts):
        w = run_part(_orth(_deflate(W[:, j : j + 1].copy(), found)), size, found)
        comps.append(w)
        found = np.hstack([found, w])
    return np.hstack(comps)


def _non_private_report(mechanism: str, notes: tuple[str, ...], source_name: str) -> PrivacyReport:
    return PrivacyReport(
        mechanism=mechanism, relation=Relation.REPLACE_ONE, epsilon=math.inf, delta=0.0,
        requested_epsilon=math.inf, requested_delta=0.0, certified=False, calibration="none",
        events=(dp_accounting.NonPrivateDpEvent(),), notes=notes, noise_source=source_name,
    )


# ---------------------------------------------------------------------------------------------
# row-by-row Oja (non-private and private)

def _seeded_step_noise(releaser: Releaser) -> tuple[np.ndarray, float] | None:
    """(SFC64 state, std) when the planned release ``"step"`` comes from the plain seeded source.

    That source's release is ``std`` times i.i.d. standard normals (``generator.normal(0, std)``); they
    are drawn by blocks with :func:`~dpspectral.pca._oja_kernels.standard_normals` (NumPy's ziggurat on
    an SFC64 state seeded from the run's generator: the same law, five times faster than NumPy's
    ``Generator``; a different stream from ``Generator.standard_normal``). Any other source (secure, or
    a subclass) draws through :meth:`Releaser.gaussian`. The releaser refuses draws after its block.
    """
    from ._oja_kernels import sfc64_state

    if not releaser.draws_in_bulk:
        return None
    return sfc64_state(releaser.words(3)), float(releaser.plan[_STEP].scale)


def _run_rows(rows: _Rows, W: np.ndarray, parts: list[int | None], rates: tuple[float, float],
              beta: float, releaser: Releaser | None, owner: str, show_progress: bool | None,
              n: int | None) -> tuple[np.ndarray, int]:
    """Row-by-row (Private) Oja over all rows; returns (W, rows used).

    ``rates``: (c1, c2) of ``eta_t = c1 / (c2 + t)``. ``releaser``: the charged release of the steps'
    noise (the planned release ``"step"``, per unit eta); None: non-private.
    """
    chunks = None if n is None else -(-n // _CHUNK) + len(parts)
    bar = progress(range(chunks or 0), total=chunks, desc=owner, enabled=show_progress,
                   min_total=200_000 // _CHUNK)
    bar_it = iter(bar) if n is not None else None
    used = [0]
    seeded = None if releaser is None else _seeded_step_noise(releaser)  # one stream for all parts

    def run_part(w: np.ndarray, size: int | None, found: np.ndarray) -> np.ndarray:
        w, t = _rows_part(rows, w, size, found, rates, beta, (releaser, seeded), bar_it)
        used[0] += t
        return w

    W = _by_parts(W, parts, run_part)
    if bar_it is not None:
        collections.deque(bar_it, maxlen=0)  # close the bar
    return W, used[0]


def _rows_part(rows: _Rows, w: np.ndarray, size: int | None, found: np.ndarray, rates: tuple[float, float],
               beta: float, noise: tuple[Releaser | None, tuple[np.ndarray, float] | None],
               bar_it: Iterator[Any] | None) -> tuple[np.ndarray, int]:
    """The Oja steps over one part of the rows (all of them for block updates); returns (w, its rows).

    ``noise``: (the charged releaser of the steps' noise or None, :func:`_seeded_step_noise`). Seeded:
    the next chunk's standard normals are drawn on a second thread while the compiled loop runs (both
    release the GIL); the blocks are drawn in order, one after the other, so the stream is the same."""
    from concurrent.futures import ThreadPoolExecutor

    from ._oja_kernels import oja_rows, standard_normals

    c1, c2 = rates
    releaser, seeded = noise
    d, k = w.shape
    found, w = np.ascontiguousarray(found), np.ascontiguousarray(w)
    buffers = [np.empty((_CHUNK, d, k)) for _ in range(2 if seeded is not None else 0)]
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None if seeded is None else pool.submit(standard_normals, seeded[0], buffers[0].reshape(-1))
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
            if seeded is not None and pending is not None:  # the seeded release: std * N(0, 1), by blocks
                pending.result()
                Z = buffers[0][:mb]
                buffers.reverse()
                pending = pool.submit(standard_normals, seeded[0], buffers[0].reshape(-1))
                zetas = etas * seeded[1]  # eta_t std: the planned std, per unit eta, times eta_t
            else:
                Z = np.empty((0, d, k)) if releaser is None else releaser.gaussian(_STEP, (mb, d, k))
                zetas = etas
            w = oja_rows(w, X, etas, Z, zetas, beta, found)
            t += mb
            if bar_it is not None:
                next(bar_it, None)
            if X.shape[0] < m:
                break
        if pending is not None:
            pending.result()
    return w, t


@renamed(LEARNING_RATE_NAMES)
@validated(_OJA_PARAMETERS)
def oja(
    X: Any,
    k: int = 1,
    *,
    learning_rate_scale: float = 10.0,
    learning_rate_offset: float = 10.0,
    rank_method: RankMethod = "block",
    row_norm: float | None = None,
    n_samples: int | None = None,
    random_state: Any = None,
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Oja's algorithm (Algorithm 1): ``w_t = normalise(w_{t-1} + eta_t x_t x_t^T w_{t-1})``.

    NOT private: a reference for the private versions. ``eta_t = c1 / (c2 + t)``, with c1
    ``learning_rate_scale`` and c2 ``learning_rate_offset`` (the old names ``c1``, ``c2`` still work, with a
    FutureWarning). Rows are used as
    given unless ``row_norm`` is set (then clipped to it, as the private versions do). One pass,
    memory O(d k). ``X``: array, memmap, sparse matrix or an iterable of row blocks. ``random_state``
    draws the initial iterate (``"secure"``: from OS entropy).

    Privacy
    -------
    None: the output is a function of the data without noise. The returned :class:`SubspaceResult`'s
    privacy report says ``certified=False`` (a ``NonPrivateDpEvent``); nothing is charged.
    """
    owner = "oja"
    refuse_device(X, owner)  # host only (docs/array-api.md)
    C = math.inf if row_norm is None else float(row_norm)
    n = _n_rows(X, n_samples, owner)
    rows = _Rows(X, C, "clip", owner)
    d = rows.peek_features()
    k = _check_k(k, d, n, owner)
    # not private: the random start protects nothing (a non-private reference)
    W = orthonormalize(unprotected_generator(random_state).standard_normal((d, k)), "qr")
    rates = (float(learning_rate_scale), float(learning_rate_offset))
    W, used = _run_rows(rows, W, _parts(n, k, rank_method, owner), rates, 0.0, None,
                        owner, show_progress, n)
    source_name = "secure" if isinstance(random_state, str) else "seeded"
    report = _non_private_report(owner, ("Non-private reference (Oja's algorithm).",), source_name)
    return SubspaceResult(components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
                          diagnostics={"c1": rates[0], "c2": rates[1], "rank_method": rank_method})


def _fmt21_closed_form(eps0: float, n: int, delta: float) -> float:
    """Feldman, McMillan, Talwar (FOCS 2021), Theorem 3.1, as in the authors' reference code.

    ``log(1 + (1 - e^{-eps0}) / (1 + e^{-eps0 - e}) (a + c))`` with ``a = 8 sqrt(e^eps0 ln(4/delta) / n)``,
    ``c = 8 e^eps0 / n``, ``e = ln(1 + a + c)``, valid for ``eps0 <= ln(n / (16 ln(4 / delta)))``. (The
    factor ``(e^eps0 - 1) / (e^eps0 + 1)``, i.e. the denominator ``1 + e^{-eps0}``, is up to 12%
    smaller: not the theorem.) Kept as a cross-check;
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


@renamed({"n": "n_steps"})
def shuffle_amplified_epsilon(noise_multiplier: float, n_steps: int, delta: float,
                              *, start: float = 1.0) -> tuple[float, float]:
    """(epsilon, delta) of n shuffled adaptive Gaussian steps, each with this noise multiplier.

    ``n_steps`` is n in the theorem: the number of shuffled steps (one row each; the old name ``n``
    still works, with a FutureWarning).

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
    from ..privacy._gaussian import gaussian_epsilon

    n = n_steps
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


@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@renamed(LEARNING_RATE_NAMES)
@validated(_PRIVATE_OJA_PARAMETERS)
def private_oja(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    learning_rate_scale: float | None = None,
    learning_rate_offset: float = 10.0,
    gradient_clip: float | None = None,
    rank_method: RankMethod = "block",
    amplification: Literal["none", "shuffle"] = "none",
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
) -> SubspaceResult:
    """Private Oja (Algorithm 2): clipped Oja steps with Gaussian noise, one row per step.

    ``w_t = normalise(w_{t-1} + eta_t clip_beta(x_t x_t^T w_{t-1}) + eta_t S alpha z_t)``,
    ``eta_t = c1 / (c2 + t)`` (c1 is ``learning_rate_scale``, c2 ``learning_rate_offset``; the old
    names ``c1``, ``c2`` still work, with a FutureWarning), ``z_t ~ N(0, I)``, S the step's
    sensitivity (below). ``beta`` is
    ``gradient_clip`` (default ``row_norm^2``, which clipped rows never exceed, so only the row clip
    acts). ``c1`` defaults to ``10 / row_norm^2`` (scale-free: it covers eigengaps of at least
    ``row_norm^2 / (2 c1) = 0.05 row_norm^2``, Oja's ``alpha = c1 gap > 1/2``); an AnalysisRangeWarning
    says when ``c1 row_norm^2 < 1/2`` (no eigengap covered). Rate (one noisy step per row, noise from
    the public bound, docs/algorithms/oja.md): ``sin^2 ~ c1^2 (S alpha)^2 (d - 1) / ((2 c1 gap - 1) n)``,
    i.e. ``sin = O(alpha C^2 sqrt(d / n) / gap)``, against DP-PCA's ``alpha d C^2 / (n gap)``.
    The rows of an in-memory input are visited in a uniformly random order drawn from the secret
    generator (the paper's line 1 shuffle, fresh for every call); a stream is used in its order.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), np.memmap, sparse matrix, Dask array, or an
        iterable of row blocks
        The private data, read once per pass. Never modified.
    k : int, default=1
        Number of components, in [1, n_features].
    epsilon, delta : float
        The (epsilon, delta) guarantee, epsilon in (0, inf) and delta in (0, 1).
    row_norm : float
        Public bound C on each row's Euclidean norm; rows above it are clipped (or refused with
        ``on_norm_violation="raise"``). Never derived from the data.
    relation : {"replace_one"}
    calibration : {"tight"}
        The paper's multiplier leaves its constant unspecified: only the exact one is offered.
    learning_rate_scale, learning_rate_offset : float or None, float
        c1 and c2 of ``eta_t = c1 / (c2 + t)``; c1 None: ``10 / row_norm^2``; c2 default 10.
    gradient_clip : float or None
        beta, the clip of each step's gradient; None: ``row_norm^2`` (only the row clip acts).
    rank_method : {"block", "deflation"}
        A d x k iterate, or k parts of the rows each learning one component (module docstring).
    amplification : {"none", "shuffle"}
        ``"shuffle"``: amplification by shuffling (in-memory data only; below).
    n_samples : int or None
        n for a stream; checked against an in-memory input's row count.
    accountant : Accountant, optional
        Ledger to spend against (refused before anything is drawn when over its ceiling).
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the noise, the initial iterate and the row order.
    on_norm_violation : {"clip", "raise"}
    show_progress : bool or None
        Progress bar over the rows.
    adaptive_clip : bool or AdaptiveClip, default=True
        Clip the rows at a released clip instead of at ``row_norm`` (below); ``AdaptiveClip(share=...)``
        sets the histogram's share of the budget (the clip follows the balance rule, which takes no
        quantile).

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); ``values`` None.

    Privacy
    -------
    Relation: replace-one. The row at step t enters only that step, whose update before noise moves
    by at most ``eta_t S`` when the row is replaced, ``S = min(2 beta, min(sqrt(k), sqrt 2) C^2)``
    (:func:`private_oja_sensitivity`: both clipped gradients have norm <= beta; the clip is a
    projection onto a convex ball, so it does not increase their distance, which for unclipped
    gradients is at most ``C^2`` for k = 1 by the half-ball argument and ``sqrt(2) C^2`` for any k;
    k = 1 for each part of ``rank_method="deflation"``); the noise std ``eta_t S alpha`` makes alpha
    the noise multiplier of a ``GaussianDpEvent(alpha)`` (the plan's release ``"step"``: std
    ``S alpha`` and sensitivity ``S`` per unit eta; the bound ``S = 2 beta`` would give twice the noise at the
    default clip). Steps are assigned to rows by a data-independent permutation (drawn
    here for in-memory data; assumed for a stream, whose order must not depend on the data), so by
    parallel composition the run is as private as one step: ``amplification="none"`` (default) takes
    alpha from the exact Gaussian curve for (epsilon, delta) (the paper's "alpha = O(log(n/delta) /
    epsilon) without amplification"). ``amplification="shuffle"`` (in-memory data only: the library
    shuffles the rows itself with the secret generator, so the order is uniform and secret) uses
    amplification by shuffling (:func:`shuffle_amplified_epsilon`: Feldman, McMillan and Talwar 2021,
    the numerical bound of their reference implementation; reported as an ``EpsilonDeltaDpEvent``); it
    needs ``eps0 <= ln(n / (16 ln(8 / delta)))`` per step, so it helps only for small epsilon and
    large n. The permutation is secret: it is never output, and ``random_state`` is a secret.
    ``random_state="secure"`` draws the step noise with exact discrete Gaussian samplers from OS
    entropy (slow: pure Python, per coordinate of every step) and the permutation from an OS-seeded
    generator; the report's ``noise_source`` says which source was used. With a seeded source the
    steps' noise (``std`` times i.i.d. N(0, 1), the same law) is drawn by blocks of 2048 steps with
    NumPy's ziggurat on an SFC64 state seeded from the secret generator
    (:func:`~dpspectral.pca._oja_kernels.standard_normals`, bit-identical to NumPy's
    ``Generator(SFC64).standard_normal``, about five times faster).

    Adaptive clipping (default with ``amplification="none"`` and an input that can be read twice:
    arrays, memmaps, sparse, Dask, lists of blocks, a callable returning a fresh iterator of blocks; a
    one-shot iterator keeps the single release above): a noisy histogram of the row norms is released
    first (:mod:`dpspectral.privacy._adaptive`: ``GaussianDpEvent(s_h)``, L2 sensitivity sqrt(2),
    ``s_h = s_total / sqrt(share)``) and the clip r <= C is post-processed from it. Every row is
    then clipped at the public r, so the derivation above holds with C replaced by r:
    ``S = min(2 beta, min(sqrt(k), sqrt 2) r^2)`` with the default ``beta = r^2`` and learning rate
    ``c1 = 10 / r^2`` (a given ``gradient_clip`` or ``c1`` is kept); alpha is calibrated for
    ``ComposedDpEvent([GaussianDpEvent(s_h), GaussianDpEvent(alpha)])`` (the histogram and the steps each
    see every row once: basic composition). A re-readable stream is read three times (validated at C
    before any charge, the histogram, the steps; memory O(dk)). ``adaptive_clip=False``: the
    single release at C; ``AdaptiveClip(share=...)``: the histogram's share of the budget (default 0.02;
    the clip follows the balance rule, which takes no quantile). Diagnostics
    ``clip`` and ``histogram_noise_std`` with adaptive clipping.

    Rounding: each step's sensitivity and noise std are both widened by ``1 + r`` for the rounding of
    the computed clipped gradient (``r = 2 gamma_(2d + k + 6) C^2 sqrt(k) / S``, below ``1e-12`` at
    d = 784; docs/noise.md); the multiplier alpha is unchanged.
    """
    inputs = _OjaInputs(k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
                        calibration=calibration, learning_rate_scale=learning_rate_scale,
                        learning_rate_offset=learning_rate_offset, gradient_clip=gradient_clip,
                        rank_method=rank_method, amplification=amplification, n_samples=n_samples,
                        on_norm_violation=on_norm_violation, adaptive_clip=adaptive_clip)
    return run(_PrivateOja(show_progress), inputs, X, RunSettings(accountant, random_state))


@dataclass(frozen=True)
class _OjaInputs(PcaInputs):
    """The public inputs of :func:`private_oja` (as given; checked by :meth:`_PrivateOja.check`)."""

    learning_rate_scale: float | None
    learning_rate_offset: float
    gradient_clip: float | None
    rank_method: RankMethod
    amplification: str
    n_samples: int | None
    on_norm_violation: NormViolation
    adaptive_clip: bool | AdaptiveClip


@dataclass(frozen=True, eq=False)
class _OjaChecked:
    """:class:`_OjaInputs` checked: the budget, the relation, the bound and the clip stage (if any)."""

    inputs: _OjaInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    calibration: str
    clip: RowClipPlan | None
    beta: float  # the gradient clip at the bound C
    rates: tuple[float, float]  # (c1, c2) at the bound C
    n: int | None = None  # public shape of an in-memory array, for the plan checked before reading
    d: int | None = None


@dataclass(frozen=True, eq=False)
class _Opened:
    """What the validating pass of a row-by-row method opened: the source and its public facts."""

    source: _Source

    @property
    def n(self) -> int | None:
        return self.source.n if self.source.in_memory else None  # for the report: public when in memory

    @property
    def d(self) -> int:
        return self.source.d


def _array_shape(X: Any) -> tuple[int | None, int | None]:
    """``(n, d)`` of an in-memory array known before reading (None, None for anything else)."""
    shape = getattr(X, "shape", None)
    if isinstance(X, np.ndarray) and shape is not None and len(shape) == 2:
        return int(shape[0]), int(shape[1])
    return None, None


def _replace_one_privacy(inputs: Any, owner: str) -> tuple[PrivacyBudget, Relation, float]:
    """The privacy inputs of an Oja method (``inputs``: its record, with ``on_norm_violation``) checked:
    the budget, the relation (replace-one only) and the bound C."""
    return check_mechanism_inputs(
        epsilon=inputs.epsilon, delta=inputs.delta, row_norm=inputs.row_norm, relation=inputs.relation,
        calibration=inputs.calibration, on_norm_violation=inputs.on_norm_violation, owner=owner,
        allowed_relations=(Relation.REPLACE_ONE,),
    )


class _HostOja(Mechanism[_OjaInputsT, SubspaceResult]):
    """What :class:`_PrivateOja` and :class:`_DpPca` do alike: host data only, replace-one only, the
    adaptive clip's share, and the events of a run planned from an array's shape."""

    def _checked_privacy(self, inputs: _OjaInputsT, X: Any) -> tuple[PrivacyBudget, Relation, float]:
        refuse_device(X, self.label)  # host only, before anything else (docs/array-api.md)
        return _replace_one_privacy(inputs, self.label)

    def _clip_share(self, inputs: Any) -> float:
        return clip_fields(inputs.adaptive_clip, self.label, takes_quantile=False)[2] or DEFAULT_CLIP_SHARE

    def events_of(self, inputs: _OjaInputsT, X: Any) -> list[dp_accounting.DpEvent]:
        """The events a run on ``X`` (an array: its shape only) would be charged."""
        checked = self.check(inputs, X)
        plan = self.plan(checked, checked.n, checked.d)
        assert plan is not None
        return list(plan.events)


class _PrivateOja(ClipStaged, _HostOja[_OjaInputs]):
    """Private Oja as the release template runs it: one release of the noisy steps at the bound C, or
    (adaptive clipping) the norm histogram first, then the steps at the released clip."""

    label = "private_oja"
    release_name = _STEP
    stacklevel = 4  # frames above run: private_oja, the constraint check, the renaming, the caller

    def check(self, inputs: _OjaInputs, X: Any) -> _OjaChecked:
        budget, rel, C = self._checked_privacy(inputs, X)
        if inputs.calibration != "tight":
            raise ValueError(
                f"The 'calibration' parameter of {self.label} must be 'tight': the paper's noise multiplier "
                "C log(n/delta) / (epsilon sqrt(n)) leaves the constant C unspecified."
            )
        if inputs.amplification == "shuffle" and _is_stream(X):
            raise ValueError(
                f"{self.label}: amplification='shuffle' needs in-memory data (an array, memmap, sparse "
                "matrix, Dask array or list of blocks), which the library shuffles with the secret "
                "generator; a one-shot stream cannot be shuffled here. Use amplification='none'."
            )
        share = self._clip_share(inputs)
        adaptive = (inputs.adaptive_clip is not False and inputs.amplification == "none"
                    and needs_two_passes_ok(X))
        clip = plan_row_clip(budget, rel, C, share) if adaptive else None
        beta = sensitivity_norm(C) ** 2 if inputs.gradient_clip is None else float(inputs.gradient_clip)
        c1 = inputs.learning_rate_scale
        rates = (DEFAULT_PRIVATE_OJA_C1 / C**2 if c1 is None else float(c1),
                 float(inputs.learning_rate_offset))
        return _OjaChecked(inputs, budget, rel, C, inputs.calibration, clip, beta, rates, *_array_shape(X))

    def read(self, inputs: _OjaChecked, X: Any) -> _Opened:
        source = _private_oja_source(X, inputs.inputs.k, inputs.C, n_samples=inputs.inputs.n_samples,
                                     on_norm_violation=inputs.inputs.on_norm_violation,
                                     rank_method=inputs.inputs.rank_method,
                                     amplification=inputs.inputs.amplification)
        _warn_learning_rate(inputs.rates[0], inputs.C, self.label)
        return _Opened(source)

    def _shape(self, inputs: _OjaChecked, n: int | None, d: int) -> _Source:
        """The public facts of the rows (no data): what the plan is built from."""
        ins = inputs.inputs
        in_memory = inputs.n is not None or n is not None  # (n is None for a stream)
        n = n if n is not None else (None if ins.n_samples is None else int(ins.n_samples))
        k = _check_k(ins.k, d, n, self.label)
        return _Source(None, None, n, in_memory, d, k,
                       _parts(n, k, ins.rank_method, self.label), inputs.C, ins.on_norm_violation,
                       self.label, None)

    def plan(self, inputs: _OjaChecked, n: int | None, d: int | None) -> ReleasePlan | None:
        if d is None:
            return None
        return self._plan_of(inputs, self._shape(inputs, n, d))

    def _plan_of(self, inputs: _OjaChecked, shape: _Source) -> ReleasePlan:
        plan, _ = _private_oja_plan(inputs.budget, inputs.relation, inputs.beta, shape,
                                    inputs.inputs.amplification, inputs.clip)
        return with_clip_stage(plan, inputs.clip)

    def stage_plan(self, inputs: _OjaChecked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        if inputs.clip is None or names != (_STEP,):
            return super().stage_plan(inputs, plan, names, released)
        # everything set by the bound C follows the released clip r: the default gradient clip (r^2),
        # the sensitivity (at r), the default learning rate (10 / r^2); the same multiplier
        source = released.rows.source
        alpha = _step_multiplier(inputs.budget, inputs.relation, "none", inputs.clip, None)
        n = source.public_n()
        assert n is not None
        r = clip_from_counts(inputs.clip, released["norm_histogram"], d=source.d, n_public=n,
                             noise_per_clip2=_oja_noise_per_clip2(alpha, inputs.beta, source, n))
        ins = inputs.inputs
        source = source.at_clip(r)
        beta = sensitivity_norm(r) ** 2 if ins.gradient_clip is None else inputs.beta
        rates = (DEFAULT_PRIVATE_OJA_C1 / r**2 if ins.learning_rate_scale is None else inputs.rates[0],
                 inputs.rates[1])
        released.update(source=source, beta=beta, rates=rates, clip=r)
        stage, _ = _private_oja_plan(inputs.budget, inputs.relation, beta, source, ins.amplification,
                                     inputs.clip, alpha=alpha,
                                     note=clip_note(r, inputs.C, self._clip_share(ins)))
        return stage

    def statistic(self, inputs: _OjaChecked, rows: _Opened, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "norm_histogram":
            return {"norm_histogram": _norm_counts(rows.source, inputs.clip)}
        # at the released clip (adaptive clipping), else at the bound C
        source = released.setdefault("source", rows.source)
        rates, beta = released.setdefault("rates", inputs.rates), released.setdefault("beta", inputs.beta)
        return {_STEP: Drawn(lambda releaser: _private_oja_run(source, rates, beta, releaser,
                                                               self.show_progress))}

    def post_process(self, inputs: _OjaChecked, rows: _Opened, released: Released,
                     report: Any) -> SubspaceResult:
        """Canonical signs; diagnostics that are public or released values."""
        W, used = released[_STEP]
        rates = released["rates"]
        alpha = _step_multiplier(inputs.budget, inputs.relation, inputs.inputs.amplification, inputs.clip,
                                 released["source"].n)
        diagnostics = {"noise_multiplier": alpha, "gradient_clip": released["beta"],
                       "c1": rates[0], "c2": rates[1], "rank_method": inputs.inputs.rank_method,
                       "amplification": inputs.inputs.amplification}
        return _clip_staged_result(W, used, diagnostics, inputs.clip, released, report)


def _clip_staged_result(W: np.ndarray, used: int, diagnostics: dict[str, Any], clip: RowClipPlan | None,
                        released: Released, report: Any) -> SubspaceResult:
    """The result of a one-pass method with a clip stage (:class:`_PrivateOja`, minibatch Oja): canonical
    signs; the diagnostics, with the released clip and the histogram's noise when the stage ran."""
    if clip is not None:
        diagnostics.update(clip=released["clip"], histogram_noise_std=clip.release.scale)
    return SubspaceResult(components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
                          diagnostics=diagnostics)


def _norm_counts(source: _Source, clip: RowClipPlan | None) -> np.ndarray:
    """The exact counts of the row norms in the clip stage's public bins (released with noise)."""
    assert clip is not None
    return norm_histogram(source.data, clip.edges, center=None, owner=source.owner,
                          show_progress=source.block_progress)


def _private_oja_run(source: _Source, rates: tuple[float, float], beta: float, releaser: Releaser,
                     show_progress: bool | None) -> tuple[np.ndarray, int]:
    """Inside the charged block: the initial iterate, the secret order, one noisy step per row."""
    W = orthonormalize(releaser.standard_normal((source.d, source.k)), "qr")
    rows = source.reader(releaser)
    return _run_rows(rows, W, source.parts, rates, beta, releaser, source.owner, show_progress, source.n)


def _oja_noise_per_clip2(alpha: float, beta: float, source: _Source, n: int) -> float:
    """The balance rule's ``nu`` for Private Oja (public: n is public under replace-one).

    One step's noise (d x k', std ``alpha S`` per unit eta; k' = k for block updates, 1 per part of
    deflation) has spectral norm ``alpha S (sqrt(d) + sqrt(k'))`` (S per unit ``r^2``, as at the bound)
    and competes with the signal of its one row. Summed over the n steps that see each row once:
    ``nu = n alpha S (sqrt(d) + sqrt(k'))``. That is always above n (every step is noise-dominated:
    ``alpha S sqrt(d) > 1``), so the clip goes to the floor quantile
    (:data:`~dpspectral.privacy._adaptive.FLOOR_QUANTILE` of the rows below it). Measured against
    ``sqrt(n)`` times the per-step value (the noises in quadrature) in docs/algorithms/oja.md,
    "Adaptive clipping": the floor is better or equal in every cell.
    """
    k_iter = source.k if len(source.parts) == 1 else 1
    C = source.row_norm
    per_step = alpha * private_oja_sensitivity(beta, k_iter, C) / C**2 * (math.sqrt(source.d)
                                                                          + math.sqrt(k_iter))
    return max(n, 1) * per_step


def _private_oja_source(X: Any, k: Any, C: float, *, n_samples: int | None,
                        on_norm_violation: NormViolation, rank_method: str,
                        amplification: str) -> _Source:
    """The validating pass of :func:`private_oja` (an in-memory input checked whole; a stream's first
    block read for the number of features) and the checks that need the data's shape."""
    owner = "private_oja"
    src, n, in_memory = _prepare_source(X, n_samples, C, on_norm_violation, owner)
    return _open_source(src, n, in_memory, k, rank_method, C, on_norm_violation, owner, None)


def _private_oja_plan(budget: PrivacyBudget, relation: Relation, beta: float, source: _Source,
                      amplification: str, clip: RowClipPlan | None = None, *, alpha: float | None = None,
                      note: str | None = None) -> tuple[ReleasePlan, float]:
    """The plan of :func:`private_oja` (one Gaussian release per step) and its noise multiplier.

    With ``clip`` (adaptive clipping) the multiplier is calibrated for the composition with the norm
    histogram; ``alpha`` (the multiplier planned before) restates the plan at the released clip
    (``source.row_norm``) with the same events.
    """
    notes = [_order_note(source.in_memory, "each row in exactly one step (parallel composition)")]
    events: tuple[dp_accounting.DpEvent, ...]
    if alpha is None:
        alpha = _step_multiplier(budget, relation, amplification, clip, source.n)
    if amplification == "none":
        events = (dp_accounting.GaussianDpEvent(alpha),)
    else:
        assert source.n is not None
        eps_amp, _ = shuffle_amplified_epsilon(alpha, source.n, budget.delta, start=budget.epsilon)
        events = (EpsilonDeltaDpEvent(eps_amp, budget.delta * (1 - 1e-9)),)
        notes.append("Amplification by shuffling (Feldman-McMillan-Talwar 2021, numerical bound): the "
                     "rows were shuffled here, uniformly, with the secret generator; the order is "
                     "never output.")
    # per unit eta: the step's noise std over its replace-one sensitivity (private_oja's Privacy section)
    k_iter = source.k if len(source.parts) == 1 else 1
    sens = private_oja_sensitivity(beta, k_iter, sensitivity_norm(source.row_norm))
    step = _step_widened(NoisyRelease(_STEP, "gaussian", sens * alpha, sens), source, k_iter)
    notes += [note] if note else []
    return ReleasePlan("private_oja", relation, events, (step,), tuple(notes)), alpha


def _step_widened(step: NoisyRelease, source: _Source, k_iter: int) -> NoisyRelease:
    """A Private Oja step widened for the rounding of its computed gradient (one row, n = 1).

    ``x (x^T W)``: each entry passes through the ``d`` roundings of ``x^T W`` and one product, its
    entrywise absolute value of Frobenius norm at most ``C^2 sqrt(k)`` (:func:`widen_projection`'s
    term); the gradient clip then scales it by a computed ``eta beta / ||g||`` (``||x||^2`` and
    ``||x^T W||^2``: ``d + k`` roundings, their product, the square root, the division and the product
    with eta, and the two products of the update: ``d + k + 6``), and the clip, 1-Lipschitz, does not
    increase the first error: ``gamma_{2d + k + 6} C^2 sqrt(k)`` in all, i.e. ``widen_projection`` with
    ``2 d + k + 3`` roundings after the sum of one row.
    """
    return widen_projection(step, n=1, relation=Relation.REPLACE_ONE,
                            row_norm=sensitivity_norm(source.row_norm), d=2 * source.d + k_iter + 3,
                            columns=k_iter)


def _step_multiplier(budget: PrivacyBudget, relation: Relation, amplification: str,
                     clip: RowClipPlan | None, n: int | None) -> float:
    """Private Oja's noise multiplier alpha (public): the Gaussian curve for (epsilon, delta), calibrated
    with the norm histogram under adaptive clipping, or the shuffle bound's (n rows, in memory)."""
    if amplification != "none":
        assert n is not None
        return _calibrate_shuffle(n, budget.epsilon, budget.delta)
    if clip is None:
        return analytic_noise_multiplier(budget.epsilon, budget.delta)
    return calibrate(clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,
                     relation=relation)


def _warn_learning_rate(c1: float, C: float, owner: str) -> None:
    """AnalysisRangeWarning when ``eta_t = c1 / (c2 + t)`` is outside what Oja's analysis covers."""
    if c1 * C**2 < 0.5:
        warnings.warn(
            f"{owner}: c1 * row_norm^2 = {c1 * C**2:.3g} < 1/2. Oja's analysis (Jain et al. 2016, paper "
            "001 Theorem 2.2) needs eta_t = alpha / (gap (xi + t)) with alpha > 1/2, and an eigengap is "
            "at most row_norm^2, so no eigengap is covered: the iterate may not converge (privacy "
            "holds).", AnalysisRangeWarning, stacklevel=4)


def private_oja_sensitivity(gradient_clip: float, k: int, row_norm: float) -> float:
    """L2 sensitivity of one Private Oja step's update (per unit learning rate), replace-one.

    ``min(2 beta, min(sqrt(k), sqrt(2)) C^2)`` for the gradient ``clip_beta(x x^T W)`` of a row of norm
    <= C = ``row_norm`` and a d x k iterate (k = 1 for each part of ``rank_method="deflation"``):
    two clipped gradients are at most ``2 beta`` apart (triangle), and the clip (the projection onto
    the Frobenius ball of radius beta, a convex set) is 1-Lipschitz, so they are at most as far apart
    as the unclipped ones, whose distance is at most ``min(sqrt(k), sqrt(2)) C^2`` (the half-ball
    argument for k = 1, ``||x x^T - y y^T||_F <= sqrt(2) C^2`` for any k:
    :func:`~dpspectral.pca._minibatch.minibatch_sensitivity`).
    """
    return min(2.0 * gradient_clip, min(math.sqrt(k), math.sqrt(2.0)) * row_norm**2)


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


def _eigenvalue_release(epsilon: float) -> NoisyRelease:
    """Algorithm 4's histogram noise: Laplace(shift / epsilon) per bin, L1 shift 2 (replace-one)."""
    shift = histogram_shift(Relation.REPLACE_ONE)
    return NoisyRelease(_EIGENVALUE_HISTOGRAM, "laplace", shift / epsilon, shift)


def _coordinate_release(histogram: str, hist_scale: float | None,
                        hist_budget: tuple[float, float] | None) -> NoisyRelease:
    """Algorithm 5's histogram noise (every coordinate's histogram), L1 shift 2 (replace-one)."""
    shift = histogram_shift(Relation.REPLACE_ONE)
    if histogram == "laplace":
        if hist_scale is None:
            raise ValueError("private_mean: histogram='laplace' needs hist_scale.")
        return NoisyRelease(_COORDINATE_HISTOGRAMS, "laplace", float(hist_scale), shift)
    if hist_budget is None:
        raise ValueError("private_mean: histogram='stable' needs hist_budget = (epsilon_h, delta_h).")
    return NoisyRelease(_COORDINATE_HISTOGRAMS, "laplace", shift / hist_budget[0], shift)


def _mean_release(noise_std_per_sensitivity: float) -> NoisyRelease:
    """Algorithm 5's mean noise per unit sensitivity (a step scales it by its ``Delta``, a function of
    public values and of the released eigenvalue; the multiplier is what the event records)."""
    return NoisyRelease(_MEAN, "gaussian", float(noise_std_per_sensitivity), 1.0)


def _box_mean_widened(release: NoisyRelease, b: int) -> NoisyRelease:
    """Algorithm 5's mean release widened for the rounding of ``(1/b) sum_i (clip(g_i) - m)`` over b rows
    (:func:`_mean_widened`): terms of half the sensitivity, two roundings after the sum."""
    return widen_release(release, n=b, relation=Relation.REPLACE_ONE, kind="sums", term_bound=0.5,
                         summation=Summation(followed_by=2))


def _check_widened(releaser: Releaser, wanted: NoisyRelease) -> None:
    """The caller's planned release ``wanted.name`` has the noise multiplier of ``wanted`` and is widened
    at least as much (a plan widened for its largest batch serves every smaller one)."""
    planned = releaser.plan[wanted.name]
    assert wanted.sensitivity is not None
    if not (planned.kind == wanted.kind and planned.sensitivity is not None
            and planned.sensitivity >= wanted.sensitivity and planned.scale >= wanted.scale
            and math.isclose(planned.scale / planned.sensitivity, wanted.scale / wanted.sensitivity,
                             rel_tol=1e-12)):
        raise RuntimeError(f"{releaser.plan.label}: release {wanted.name!r} asked as {wanted}, planned "
                           f"as {planned}.")


def _check_planned(releaser: Releaser, *releases: NoisyRelease) -> None:
    """The scales a building block was called with must be those of the caller's charged plan."""
    for wanted in releases:
        if releaser.plan[wanted.name] != wanted:
            raise RuntimeError(f"{releaser.plan.label}: release {wanted.name!r} asked as {wanted}, planned "
                               f"as {releaser.plan[wanted.name]}.")


@renamed({"G": "gradients"})
def private_top_eigenvalue(
    gradients: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    bound: float,
    n_groups: int,
    histogram: Histogram = "laplace",
    random_state: Any = None,
    releaser: Releaser | None = None,
    min_count: float = -math.inf,
) -> float | None:
    """Algorithm 4: a private estimate of the top eigenvalue of the covariance of the rows of G.

    ``gradients`` (G in the paper, the old name still works with a FutureWarning): the b x p matrix
    whose rows are the gradients of the first half of a minibatch.

    Rows are paired (``h_i = (g_i - g_{b/2+i}) / sqrt 2``: zero mean, same covariance), the pairs
    split into ``n_groups`` groups, each group's top eigenvalue ``lambda_max(H_j^T H_j / s)`` binned
    on the ratio-``2^{1/4}`` grid ``bound * 2^{l/4}``, and the heaviest bin of a private histogram
    returned as its lower edge. ``bound`` is a public upper bound on any group's eigenvalue (for rows
    of norm <= c, ``2 c^2``). None (the paper's ⊥) when the underflow bin wins or nothing passes, or
    (Laplace histograms) when the winner's noisy count is below ``min_count`` (post-processing of the
    noisy histogram: :func:`eigenvalue_count_threshold` makes a win by an empty bin rare).

    Noise: standalone, from ``random_state`` (a seed, a Generator advanced as is, or ``"secure"``)
    through a one-release plan that charges nothing; inside a mechanism's charged release, from its
    ``releaser``, whose plan holds the release ``"eigenvalue_histogram"`` at this scale.

    Privacy
    -------
    Replace-one; one row changes one pair, so one group's eigenvalue: a histogram of L1 shift 2.
    ``"laplace"``: Laplace(2 / epsilon) on every one of the ``4 * 64 + 2`` bins (the underflow bin
    included; pure epsilon-DP).
    ``"stable"``: the thresholded histogram, (epsilon, delta)-DP.
    """
    if releaser is not None:
        _check_planned(releaser, _eigenvalue_release(epsilon))
        return _top_eigenvalue(gradients, epsilon, delta, bound, n_groups, histogram, releaser, min_count)
    event = (laplace_histogram_event(2.0 / epsilon, Relation.REPLACE_ONE) if histogram == "laplace"
             else stable_histogram_event(epsilon, delta))
    plan = ReleasePlan("private_top_eigenvalue", Relation.REPLACE_ONE, (event,),
                       (_eigenvalue_release(epsilon),))
    return run(_BuildingBlock(plan, lambda G, own: _top_eigenvalue(G, epsilon, delta, bound, n_groups,
                                                                     histogram, own, min_count)),
               None, gradients, RunSettings(None, random_state))


class _BuildingBlock(Mechanism[None, Any]):
    """A building block of DP-PCA run on its own (:func:`private_top_eigenvalue`, :func:`private_mean`):
    its plan charges nothing (``compute(G, releaser)`` draws from the releaser; no privacy report)."""

    reported = False

    def __init__(self, plan: ReleasePlan, compute: Callable[[np.ndarray, Releaser], Any]) -> None:
        super().__init__()
        self.label, self._plan, self._compute = plan.label, plan, compute

    def plan(self, inputs: None, n: int | None, d: int | None) -> ReleasePlan:
        return self._plan

    def read(self, inputs: None, X: Any) -> MatrixRows:
        return MatrixRows(np.asarray(X))  # the gradients handed to the building block

    def statistic(self, inputs: None, rows: MatrixRows, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        return {"value": Drawn(lambda releaser: self._compute(rows.X, releaser))}

    def post_process(self, inputs: None, rows: MatrixRows, released: Released, report: Any) -> Any:
        return released["value"]


def _top_eigenvalue(G: np.ndarray, epsilon: float, delta: float, bound: float, n_groups: int,
                    histogram: str, releaser: Releaser, min_count: float = -math.inf) -> float | None:
    """The computation of :func:`private_top_eigenvalue`, drawing from a charged ``releaser``."""
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
    return _eigenvalue_mode(lam, epsilon, delta, bound, histogram, releaser, min_count)


def eigenvalue_count_threshold(epsilon: float, failure_probability: float) -> float:
    """A noisy count that the largest of Algorithm 4's ``4 * 64 + 2`` empty bins (Laplace(2 / epsilon)
    each) exceeds with probability at most ``failure_probability``: ``(2 / epsilon) ln(258 / (2 zeta))``
    (union bound, ``P(Lap(b) >= t) = exp(-t / b) / 2``)."""
    return 2.0 / epsilon * math.log((4 * _OCTAVES + 2) / (2.0 * failure_probability))


def _eigenvalue_mode(lam: np.ndarray, epsilon: float, delta: float, bound: float, histogram: str,
                     releaser: Releaser, min_count: float = -math.inf) -> float | None:
    """The private histogram of the group eigenvalues ``lam`` on the ratio-2^(1/4) grid: the lower edge
    of the winning bin, or None (the underflow bin or an empty stable histogram)."""
    lam = np.clip(lam, 0.0, bound)
    with np.errstate(divide="ignore"):
        ell = np.floor(4.0 * np.log2(lam / bound))
    low = -4 * _OCTAVES - 1  # the underflow bin (includes 0)
    ell = np.where(np.isfinite(ell), np.maximum(ell, low), low).astype(np.int64)
    ell = np.minimum(ell, 0)
    if histogram == "laplace":
        spec = releaser.plan[_EIGENVALUE_HISTOGRAM]  # Laplace(2 / epsilon), L1 shift 2
        mode, count = laplace_histogram_mode(ell, low, 0, scale=spec.scale, sensitivity=spec.sensitivity,
                                             random_state=releaser)
        if count < min_count:
            return None
    else:  # the same scale, drawn by stable_histogram from the releaser's noise source
        found = stable_histogram_mode(ell, epsilon=epsilon, delta=delta, random_state=releaser)
        if found is None:
            return None
        mode = found
    if mode <= low:
        return None
    return float(bound * 2.0 ** (mode / 4.0))


@renamed({"G": "gradients"})
def private_mean(
    gradients: np.ndarray,
    *,
    radius: float,
    bound: float,
    hist_scale: float | None,
    hist_budget: tuple[float, float] | None,
    noise_std_per_sensitivity: float,
    half_width_mult: float = 3.0,
    histogram: Histogram = "laplace",
    random_state: Any = None,
    releaser: Releaser | None = None,
) -> tuple[np.ndarray | None, dict[str, float]]:
    """Algorithm 5: private mean of the rows of G (shape b x p), coordinate-wise.

    ``gradients`` is G in the paper (the old name still works, with a FutureWarning).

    For every coordinate j a private histogram with bins ``[2 r l - r, 2 r l + r)`` (``r = radius``)
    over the data-independent range ``|g_ij| <= bound`` finds a centre ``m_j``; each coordinate is
    truncated to ``[m_j - h r, m_j + h r]`` (``h = half_width_mult``), averaged, and released with
    Gaussian noise of std ``noise_std_per_sensitivity * Delta``, ``Delta = 2 h r sqrt(p) / b`` (the L2
    diameter of the box over b: the most a replaced row moves the mean). Returns (None, ...) when a
    coordinate's histogram suppresses everything (stable histograms only).

    Noise: standalone, from ``random_state`` (a seed, a Generator advanced as is, or ``"secure"``)
    through a plan that charges nothing; inside a mechanism's charged release, from its ``releaser``,
    whose plan holds the releases ``"coordinate_histograms"`` and ``"mean"`` (per unit sensitivity).

    Privacy
    -------
    Replace-one; one row moves one value in each of the p coordinate histograms (L1 shift 2
    each) and the truncated mean by at most ``Delta``. Laplace histograms with scale ``hist_scale``
    (pure), or stable ones with ``hist_budget = (epsilon_h, delta_h)`` each. The mean is summed centred
    on the released centres, every term inside the box, and its noise and ``Delta`` are widened by
    ``1 + b gamma_(b + 3)`` for that sum's rounding (the multiplier unchanged; docs/noise.md).
    """
    hist = _coordinate_release(histogram, hist_scale, hist_budget)
    mean = _box_mean_widened(_mean_release(noise_std_per_sensitivity), gradients.shape[0])
    if releaser is not None:
        _check_planned(releaser, hist)
        _check_widened(releaser, mean)
        return _truncated_mean(gradients, radius, bound, hist_budget, half_width_mult, histogram, releaser)
    p = gradients.shape[1]
    hist_event = (laplace_histogram_event(hist.scale, Relation.REPLACE_ONE) if histogram == "laplace"
                  else EpsilonDeltaDpEvent(*hist_budget))  # type: ignore[misc]
    event = dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(hist_event, p),
                                           dp_accounting.GaussianDpEvent(noise_std_per_sensitivity)])
    plan = ReleasePlan("private_mean", Relation.REPLACE_ONE, (event,), (hist, mean))
    return run(_BuildingBlock(plan, lambda G, own: _truncated_mean(G, radius, bound, hist_budget,
                                                                     half_width_mult, histogram, own)),
               None, gradients, RunSettings(None, random_state))


def _truncated_mean(G: np.ndarray, radius: float, bound: float,
                    hist_budget: tuple[float, float] | None, half_width_mult: float, histogram: str,
                    releaser: Releaser) -> tuple[np.ndarray | None, dict[str, float]]:
    """The computation of :func:`private_mean`, drawing from a charged ``releaser``."""
    spec = releaser.plan[_COORDINATE_HISTOGRAMS]
    b, p = G.shape
    r = float(radius)
    # The bins of coordinate j as the contiguous row ellT[j] (the values of floor((G + r) / 2r)),
    # built by blocks of rows: reading the columns of a (b, p) array one by one missed the cache on
    # every element (about 11 ms of a 30 ms call at p = 500).
    ellT = np.empty((p, b), dtype=np.int64)
    for a in range(0, b, 128):
        ellT[:, a : a + 128] = np.floor((G[a : a + 128] + r) / (2.0 * r)).T
    top = _coordinate_top(bound, r)
    centres = np.empty(p)
    if histogram == "laplace" and releaser.draws_in_bulk:  # all p histograms at once
        modes = _laplace_modes(ellT, -top, top, releaser)
        return _truncate(G, 2.0 * r * modes, r, half_width_mult, releaser)
    for j in range(p):
        if histogram == "laplace":
            mode, _ = laplace_histogram_mode(ellT[j], -top, top, scale=spec.scale,
                                             sensitivity=spec.sensitivity, random_state=releaser)
        else:
            assert hist_budget is not None
            found = stable_histogram_mode(ellT[j], epsilon=hist_budget[0], delta=hist_budget[1],
                                          random_state=releaser)
            if found is None:
                return None, {}
            mode = found
        centres[j] = 2.0 * r * mode
    return _truncate(G, centres, r, half_width_mult, releaser)


def _truncate(G: np.ndarray, centres: np.ndarray, r: float, half_width_mult: float,
              releaser: Releaser) -> tuple[np.ndarray, dict[str, float]]:
    """Algorithm 5's release: the mean of G truncated to the box around the released centres, plus
    the plan's Gaussian noise at the box's L2 diameter over b."""
    b, p = G.shape
    h = half_width_mult * r
    low, high = centres - h, centres + h
    centred = np.clip(G, low, high) - centres  # in the box around 0: their rounding is relative to h
    sens = 2.0 * h * math.sqrt(p) / b
    mean = centres + (centred.sum(axis=0) / b + releaser.gaussian(_MEAN, p) * sens)
    return mean, {"sensitivity": sens, "radius": r}


def _laplace_modes(bins: np.ndarray, low: int, high: int, releaser: Releaser) -> np.ndarray:
    """The mode of each row's Laplace histogram over ``[low, high]``, all rows at once (seeded source).

    Row j of ``bins`` (p x b) holds the bins of coordinate j. For every coordinate this has the law of
    :func:`~dpspectral.privacy._histogram.laplace_histogram_mode` with the scale of the plan's release
    ``"coordinate_histograms"``: Laplace noise on each occupied bin (one vector draw through
    :meth:`Releaser.add`), the largest of the empty bins' noises drawn from its CDF (``U^(1/M)``), and a
    uniform empty bin when that wins; coordinates are independent. Only the order of the draws differs
    from p calls of the per-coordinate routine (100 Python calls per step at d k = 100).
    """
    p, b = bins.shape
    srt = np.sort(bins, axis=1)
    start = np.ones((p, b), dtype=bool)
    start[:, 1:] = srt[:, 1:] != srt[:, :-1]
    coord, col = np.nonzero(start)  # the occupied bins, coordinate by coordinate
    flat = coord * b + col
    ids = srt[coord, col]
    counts = np.append(flat[1:], p * b) - flat  # a coordinate's last run ends where its row ends
    noisy = np.asarray(releaser.add(_COORDINATE_HISTOGRAMS, counts.astype(np.float64)), dtype=np.float64)
    first = np.flatnonzero(np.r_[True, coord[1:] != coord[:-1]])  # every coordinate has b >= 1 values
    best = np.maximum.reduceat(noisy, first)
    occupied = np.diff(np.r_[first, noisy.size])
    winner = np.minimum.reduceat(np.where(noisy == np.repeat(best, occupied), np.arange(noisy.size),
                                          noisy.size), first)
    modes = ids[winner]
    empty = (high - low + 1) - occupied
    scale = releaser.plan[_COORDINATE_HISTOGRAMS].scale
    log_u = np.log(releaser.random(p)) / np.maximum(empty, 1)  # the maximum of `empty` Laplace draws
    u = np.exp(log_u)
    with np.errstate(divide="ignore"):
        empty_max = np.where(u > 0.5, -scale * np.log(2.0 * -np.expm1(log_u)), scale * np.log(2.0 * u))
    for j in np.flatnonzero((empty > 0) & (empty_max > best)):  # a uniform empty bin wins
        taken = ids[first[j] : first[j] + occupied[j]]
        while True:
            cand = releaser.integers(low, high + 1)
            if not np.any(taken == cand):
                modes[j] = cand
                break
    return modes


def _group_eigenvalues_of_rows(X: np.ndarray, W: np.ndarray, n_groups: int) -> np.ndarray:
    """Algorithm 4's group eigenvalues ``lambda_max(H_j^T H_j / s)`` from the rows, without forming the
    b x (d p) gradients ``vec(x (x^T W))`` (the same numbers as :func:`_top_eigenvalue` computes).

    Pairs ``h_i = (a_i - c_i) / sqrt 2`` of gradients of rows x_i and y_i. The Gram matrix of the
    gradients of two row sets is a Hadamard product, ``<x x^T W, y y^T W> = (x.y) (x^T W W^T y)``, so
    the s x s Gram of a group costs O(s^2 (d + p)); its top eigenvalue (Lanczos when s > 256, from a
    fixed start: a deterministic function of the group's rows) over s.
    """
    from scipy.sparse.linalg import eigsh

    pairs = X.shape[0] // 2
    s = pairs // n_groups
    if s < 1:
        raise ValueError(f"private_top_eigenvalue: {X.shape[0]} gradients are too few for {n_groups} "
                         f"groups (at least {2 * n_groups} are needed).")
    out = np.empty(n_groups)
    for j in range(n_groups):
        A, C = X[j * s : (j + 1) * s], X[pairs + j * s : pairs + (j + 1) * s]
        PA, PC = A @ W, C @ W
        ac = (A @ C.T) * (PA @ PC.T)
        gram = ((A @ A.T) * (PA @ PA.T) + (C @ C.T) * (PC @ PC.T) - ac - ac.T) / 2.0
        if s <= 256:
            top = float(np.linalg.eigvalsh(gram)[-1])
        else:
            top = float(eigsh(gram, k=1, which="LA", v0=np.ones(s), tol=1e-6,
                              return_eigenvectors=False)[0])
        out[j] = top / s
    return out


def _coordinate_top(bound: float, radius: float) -> int:
    """Algorithm 5's bins are ``[-top, top]``: width ``2 r``, covering ``|g| <= bound``."""
    return int(math.ceil((bound + radius) / (2.0 * radius)))


def _beyond_secure_range(config: _DpPcaConfig, radius: float, releaser: Releaser) -> bool:
    """Whether Algorithm 5's Laplace histograms are beyond what a non-seeded source serves.

    Such a source noises every bin of the public range one by one, at most ``MAX_SECURE_BINS``
    (:func:`~dpspectral.privacy._histogram.laplace_histogram_mode`); the range is a function of the
    released Lambda_t and public bounds, so skipping the step then is post-processing.
    """
    if config.histogram != "laplace" or releaser.draws_in_bulk:
        return False
    return 2 * _coordinate_top(config.grad_bound, radius) + 1 > MAX_SECURE_BINS


@functools.lru_cache(maxsize=256)
def _mean_calibration(epsilon: float, delta: float, p: int, share: float, histogram: str,
                      ) -> tuple[float | None, tuple[float, float] | None, float]:
    """(Laplace multiplier per histogram, stable budget per histogram, Gaussian multiplier).

    The p coordinate histograms get ``share`` of (epsilon, delta); the Gaussian multiplier is then the
    smallest for which histograms + Gaussian together are (epsilon, delta)-DP by the accountant (PLD).
    When the budget is so large that a multiplier would fall below 0.05 (a huge PLD grid), the
    histograms compose by basic composition (pure, as
    :func:`~dpspectral.privacy._accounting.epsilon_of` then reads them) and the Gaussian gets the rest.
    """
    floor = SampledGaussianAccountant.MIN_PLD_MULTIPLIER
    if histogram == "stable":
        stable = (epsilon * share / p, delta * share / p)
        return None, stable, analytic_noise_multiplier(epsilon * (1 - share), delta * (1 - share))
    pure = p / (epsilon * share)
    gauss_pure = analytic_noise_multiplier(epsilon * (1 - share), delta)
    if pure >= floor and gauss_pure >= floor and p <= _PLD_MAX_COORDINATES:
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
    truncated: int = 0  # steps that ran Algorithm 5's histograms and truncation
    sizes: list[int] = field(default_factory=list)  # the batch of every step
    last: np.ndarray | None = None  # the last update (d x block), kept when block > k
    eigenvalues: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class _DpPcaConfig:
    """The public numbers of one DP-PCA run (sizes, calibration, learning rate), fixed before the data
    are read beyond their shape. Paper symbols: B (batch), b = B / 2, T steps, p = d k coordinates,
    zeta (failure probability per estimate), K and a (Assumption A.4), h (``half_width_mult``)."""

    n: int | None  # rows (public under replace-one; None: a stream without n_samples)
    B: int | None  # equal batches of B rows; None: the warm-up schedule (batch sizes from n)
    T: int | None  # steps in all (None: a stream of unknown length)
    block: int  # columns of the iterate (oversampling, >= k; 1 per part for deflation)
    power: bool  # c1 = infinity: each step is a block power step W = orth(g)
    truncation: str  # "auto": Algorithm 5 only where its box beats the public bound; "always"
    adaptive: bool  # whether Algorithms 4 and 5 run at all (False: "auto" where they cannot act)
    pub_sens: float  # the public replace-one sensitivity of one batch SUM of gradients
    p: int
    zeta: float
    groups: int
    histogram: Histogram
    b_eps: float  # each branch's (epsilon, delta): the whole budget (tight) or half (paper)
    b_delta: float
    eig_bound: float
    grad_bound: float
    lap_m: float | None  # Laplace multiplier of each coordinate histogram (laplace histograms)
    stable_b: tuple[float, float] | None  # (epsilon, delta) of each coordinate histogram (stable)
    s_gauss: float  # the mean's noise multiplier
    K: float
    a: float
    half_width_mult: float
    c1: float
    c2: float
    range_fraction: float | None = None  # rows of a batch for Algorithm 4 (None: the paper's halves)
    n_batches: int = 4  # the warm-up schedule: n_batches - 1 warm-ups of warmup_fraction n, then the rest
    warmup_fraction: float = 0.05

    @property
    def hist_scale(self) -> float | None:
        return None if self.lap_m is None else 2.0 * self.lap_m  # multiplier = scale / L1 shift 2


@folded("range_estimation", RangeEstimation, RANGE_ESTIMATION_FIELDS)
@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@renamed(LEARNING_RATE_NAMES)
@validated(_DP_PCA_PARAMETERS)
def dp_pca(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    learning_rate_scale: float | None = None,
    learning_rate_offset: float | None = None,
    schedule: Literal["warmup", "paper"] = "warmup",
    batch_size: int | None = None,
    batch_constant: float = 1.0,
    rank_method: RankMethod = "block",
    block_size: int | None = None,
    range_estimation: RangeEstimation | None = None,
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
) -> SubspaceResult:
    """DP-PCA (Algorithm 3): minibatch Oja with private range and mean estimation.

    Every minibatch is split: the first rows give a private estimate ``Lambda_t`` of the top eigenvalue
    of the gradients' covariance (Algorithm 4, :func:`private_top_eigenvalue`), the rest a private
    mean gradient ``g_t`` (Algorithm 5, :func:`private_mean`, half-width
    ``r = K sqrt(2 Lambda_t) log^a(b p / zeta)``); then ``W_t = orth(g_t)`` (a block power step, the
    default) or ``W_t = orth(W_{t-1} + eta_t g_t)`` with ``eta_t = c1 / (c2 + t)`` when c1 is given (c1 is
    ``learning_rate_scale``, c2 ``learning_rate_offset``, default 1; the old names ``c1``, ``c2`` still work,
    with a FutureWarning).

    Defaults (``schedule="warmup"``, measured in docs/algorithms/oja.md; public inputs only): three
    warm-up batches of 5% of the rows and one of the remaining 85% (n is public under replace-one; a
    stream needs ``n_samples``), 0.1 of each batch for Algorithm 4, an iterate of
    ``block_size = min(d, 20 k)`` columns (oversampling; the result is the top-k left singular vectors
    of the last update), power steps, and ``truncation="auto"``: Algorithm 5's histograms and box run
    only where the box is smaller than the public bound (its L2 diameter ``2 h r sqrt(p)`` below
    ``min(sqrt(p), sqrt 2) C^2``, the most one row moves a batch sum) and Algorithm 4's winning bin is
    supported by the data (noisy count above :func:`eigenvalue_count_threshold`); elsewhere the batch
    mean is released with noise from the public bound. Where the box can never be used (the b x d p
    gradients of every batch beyond memory), Algorithms 4 and 5 do not run and every batch mean gets
    the whole budget. The paper's version: ``schedule="paper"`` (equal batches ``B = batch_constant n /
    ln(n)^2``, halves, p = k columns, ``truncation="always"``, ``eta_t = c1 / (c2 + t)`` with c1 = 100
    / row_norm^2, c2 = 1), with ``calibration="paper"`` for its noise ``beta_t``. A failed estimate
    skips the step (``truncation="always"``) or uses the public bound (``"auto"``).
    The constants of Algorithms 4 and 5 (the histogram learner, K, a, the box's factor, the failure
    probability, the groups, the budget shares, ``range_fraction`` and ``truncation``) are one
    :class:`RangeEstimation`, passed as ``range_estimation`` (None: its defaults, chosen from
    measurements in docs/algorithms/oja.md). Learning rates are in the units of the data: ``eta``
    scales as ``1 / row_norm^2``; the defaults suit ``row_norm = 1``.

    Parameters
    ----------
    X, k, epsilon, delta, row_norm, relation
        As in :func:`private_oja`.
    calibration : {"tight", "paper"}
        ``"tight"``: both branches get the whole budget; ``"paper"``: the paper's split and noise
        (below).
    learning_rate_scale, learning_rate_offset : float or None
        c1 and c2 of ``eta_t = c1 / (c2 + t)``; c1 None: power steps (the paper's schedule: 100 /
        row_norm^2); c2 None: 1.
    schedule : {"warmup", "paper"}
        The minibatches: three warm-up batches of 5% and the rest, or the paper's equal batches.
    batch_size : int or None
        Equal minibatches of this size instead of the schedule's.
    batch_constant : float
        c of the paper's ``B = c n / ln(n)^2``.
    rank_method
        As in :func:`private_oja`.
    block_size : int or None
        Columns of the iterate, in [k, n_features]; None: ``min(d, 20 k)`` (the paper's schedule: k).
    range_estimation : RangeEstimation or None
        The constants of Algorithms 4 and 5 (:class:`RangeEstimation`); None: its defaults.
    n_samples, accountant, random_state, on_norm_violation, show_progress
        As in :func:`private_oja`.
    adaptive_clip : bool or AdaptiveClip, default=True
        As in :func:`private_oja`, where Algorithms 4 and 5 cannot act (below).

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); ``values`` None; diagnostics of the steps and batches.

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
    With ``truncation="auto"`` a step whose box is no smaller than the public bound (or whose
    Algorithm 4 estimate failed: a function of released values) releases instead the plain batch mean
    of ``x (x^T W)`` with noise ``s * S / b``, ``S = min(sqrt(p_W), sqrt 2) C^2`` for an iterate of p_W
    columns: the half-ball argument (p_W = 1) and ``||x x^T - y y^T||_F <= sqrt 2 C^2`` bound how far
    one replaced row moves the batch sum (:func:`~dpspectral.pca._minibatch.minibatch_oja`); one
    Gaussian of the same multiplier is dominated by the branch's event. Where the box can never act
    (public sizes), the plan is ``ParallelDpEvent([GaussianDpEvent(m)])`` with m the analytic
    multiplier of the whole (epsilon, delta): every row is in one batch mean. Above 8192 coordinates
    the p histograms compose by basic composition (their pure epsilon), a PLD of so many compositions
    being too large.
    ``calibration="tight"`` (default): both branches get the whole (epsilon, delta) (parallel
    composition); in branch 2 the histograms take ``RangeEstimation.histogram_share`` and the Gaussian
    multiplier is the smallest the accountant certifies for the rest. ``calibration="paper"``: each
    branch gets (epsilon/2, delta/2) as in the paper and the Gaussian std is the paper's
    ``beta_t = 8 K sqrt(2 Lambda_t) log^a(B d / zeta) sqrt(2 d log(2.5/delta)) / (epsilon B)``, which
    leaves nothing for the histograms: the accountant reports what that certifies (marked uncertified
    where it exceeds the request).
    Diagnostics: ``skipped_steps`` counts the steps whose released histogram output was the
    underflow bin or empty (the paper's ⊥): a function of released values only.
    ``random_state="secure"``: exact discrete Laplace / Gaussian draws from OS entropy, the Laplace
    histograms' on every bin (a step whose Algorithm 5 range exceeds 65536 bins is skipped: a function
    of released values); the report's ``noise_source`` says which source was used.

    Adaptive clipping (``adaptive_clip=True``, default): where the box can never act (public sizes,
    e.g. MNIST's d p; the plan above is ``ParallelDpEvent([GaussianDpEvent(m)])``), with
    ``calibration="tight"`` and an input that can be read twice, a noisy norm histogram is released
    first (:mod:`dpspectral.privacy._adaptive`, ``AdaptiveClip.share`` of the budget, default 0.02) and
    the rows are clipped at the clip r post-processed from it: ``S`` above holds with C replaced by the public
    r (so do the eigenvalue grid's top ``2 r^4`` and the default ``c1 = 100 / r^2``); m is calibrated for
    ``ComposedDpEvent([GaussianDpEvent(s_h), ParallelDpEvent([GaussianDpEvent(m)])])``. Where Algorithms
    4 and 5 act, their private range estimate already adapts the noise to the gradients' spread: one
    release as above. Diagnostics ``clip`` and ``histogram_noise_std`` when it runs.

    Rounding: the mean's noise and sensitivity are widened by ``1 + r`` for the rounding of the computed
    batch mean, at the larger batch (B or the public n): the public bound's ``S / b`` (the noisy power
    method's bound) or Algorithm 5's centred mean (:func:`private_mean`); the histograms are counts
    (exact). The multipliers and events are unchanged (docs/noise.md).
    """
    inputs = _DpPcaInputs(
        k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        learning_rate_scale=learning_rate_scale, learning_rate_offset=learning_rate_offset,
        schedule=schedule, batch_size=batch_size, batch_constant=batch_constant, rank_method=rank_method,
        block_size=block_size, range_estimation=range_estimation, n_samples=n_samples,
        on_norm_violation=on_norm_violation, adaptive_clip=adaptive_clip,
        seeded=not isinstance(random_state, str))
    return run(_DpPca(show_progress), inputs, X, RunSettings(accountant, random_state))


@dataclass(frozen=True)
class _DpPcaInputs(PcaInputs):
    """The public inputs of :func:`dp_pca` (as given; checked by :meth:`_DpPca.check`). ``seeded``:
    whether the noise source is seeded (not ``"secure"``), for the plan's notes."""

    learning_rate_scale: float | None
    learning_rate_offset: float | None
    schedule: str
    batch_size: int | None
    batch_constant: float
    rank_method: RankMethod
    block_size: int | None
    range_estimation: RangeEstimation | None
    n_samples: int | None
    on_norm_violation: NormViolation
    adaptive_clip: bool | AdaptiveClip
    seeded: bool = True


@dataclass(frozen=True, eq=False)
class _DpPcaChecked:
    """:class:`_DpPcaInputs` checked: the budget, the relation and the bound."""

    inputs: _DpPcaInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    calibration: str
    adaptive_clip_ok: bool  # adaptive clipping allowed (tight, an input that can be read twice)
    n: int | None = None  # public shape of an in-memory array, for the plan checked before reading
    d: int | None = None


class _DpPca(_HostOja[_DpPcaInputs]):
    """DP-PCA as the release template runs it: one release of every minibatch step (Algorithms 4 and 5
    or the public bound), or, where every batch is released with noise from the bound, the norm
    histogram first and the batches at the released clip."""

    label = "dp_pca"
    stacklevel = 4  # frames above run: dp_pca, the constraint check, the renaming, the caller

    def check(self, inputs: _DpPcaInputs, X: Any) -> _DpPcaChecked:
        budget, rel, C = self._checked_privacy(inputs, X)
        on, _, _ = clip_fields(inputs.adaptive_clip, self.label, takes_quantile=False)
        ok = on and inputs.calibration == "tight" and needs_two_passes_ok(X)
        return _DpPcaChecked(inputs, budget, rel, C, inputs.calibration, ok, *_array_shape(X))

    def _config(self, inputs: _DpPcaChecked, n: int | None, d: int,
                in_memory: bool) -> tuple[_Source, _DpPcaConfig, RowClipPlan | None]:
        """The public sizes and calibration of a run on n rows of d features (no data)."""
        ins = inputs.inputs
        n = n if n is not None else (None if ins.n_samples is None else int(ins.n_samples))
        B = _batch_layout(n, ins.batch_size, ins.batch_constant, ins.schedule, ins.calibration, self.label)
        k = _check_k(ins.k, d, n, self.label)
        shape = _Source(None, None, n, in_memory, d, k, _parts(n, k, ins.rank_method, self.label), inputs.C,
                        ins.on_norm_violation, self.label, False)
        if B is not None and len(shape.parts) > 1 and n is not None and n // k < B:
            raise ValueError(f"{self.label}: rank_method='deflation' gives each of the k={k} components "
                             f"n/k = {n // k} rows, fewer than one minibatch (B = {B}).")
        config = _dp_pca_config(shape, inputs.budget, B, ins)
        clip = None  # adaptive clipping: only where every batch is released with noise from the bound
        if inputs.adaptive_clip_ok and not config.adaptive:
            budget, share = inputs.budget, self._clip_share(ins)
            clip = plan_row_clip(budget, inputs.relation, inputs.C, share)
            config = dataclasses.replace(config, s_gauss=calibrate(
                clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,
                relation=inputs.relation))
        return shape, config, clip

    def plan(self, inputs: _DpPcaChecked, n: int | None, d: int | None) -> ReleasePlan | None:
        if d is None:
            return None
        in_memory = inputs.d is not None or n is not None
        _, config, clip = self._config(inputs, n, d, in_memory)
        return with_clip_stage(_dp_pca_plan(config, inputs.relation, in_memory, inputs.calibration,
                                            seeded=inputs.inputs.seeded), clip)

    def read(self, inputs: _DpPcaChecked, X: Any) -> _Opened:
        ins = inputs.inputs
        src, n, in_memory = _prepare_source(X, ins.n_samples, inputs.C, ins.on_norm_violation, self.label)
        _batch_layout(n, ins.batch_size, ins.batch_constant, ins.schedule, ins.calibration, self.label)
        source = _open_source(src, n, in_memory, ins.k, ins.rank_method, inputs.C, ins.on_norm_violation,
                              self.label, False)
        # its refusals (sizes, batches) before the charge
        self._config(inputs, source.n if in_memory else None, source.d, in_memory)
        _warn_outside_analysis(inputs.budget, n, self.label)
        if ins.learning_rate_scale is not None:
            _warn_learning_rate(float(ins.learning_rate_scale), inputs.C, self.label)
        return _Opened(source)

    def is_staged(self, inputs: _DpPcaChecked) -> bool:
        return inputs.adaptive_clip_ok  # a plan with the clip stage has two stages (else one)

    def stages(self, inputs: _DpPcaChecked, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        names = tuple(r.name for r in plan.releases)
        return ((names[0],), names[1:]) if names[0] == "norm_histogram" else (names,)

    def stage_plan(self, inputs: _DpPcaChecked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        stage = super().stage_plan(inputs, plan, names, released)
        if names != (_MEAN,) or plan.releases[0].name != "norm_histogram":
            return stage
        # the rows clipped at a released clip r (as minibatch_oja): the public bound of a batch sum,
        # the eigenvalue grid's top and the default c1 follow r; the same multiplier
        source = released.rows.source
        _, config, clip = self._config(inputs, source.n if source.in_memory else None, source.d,
                                       source.in_memory)
        assert clip is not None
        n = source.public_n()
        assert n is not None
        part = (source.n or 0) // len(source.parts)
        sizes = [config.B] if config.B is not None else batch_sizes(part, config.n_batches,
                                                                      config.warmup_fraction)
        r = clip_from_counts(clip, released["norm_histogram"], d=source.d, n_public=n,
                             noise_per_clip2=noise_per_clip2(config.s_gauss, source.d, config.block,
                                                             [min(sizes), n - min(sizes)]))
        grad_bound = sensitivity_norm(r) ** 2
        released.update(source=source.at_clip(r), clip=r, config=dataclasses.replace(
            config, grad_bound=grad_bound, eig_bound=2.0 * grad_bound**2,
            pub_sens=min(math.sqrt(config.block), math.sqrt(2.0)) * grad_bound,
            c1=100.0 / r**2 if inputs.inputs.learning_rate_scale is None else config.c1),
            histogram_noise_std=clip.release.scale)
        share = self._clip_share(inputs.inputs)
        return dataclasses.replace(stage, notes=plan.notes + (clip_note(r, inputs.C, share),))

    def statistic(self, inputs: _DpPcaChecked, rows: _Opened, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "norm_histogram":
            _, _, clip = self._config(inputs, rows.n, rows.d, rows.source.in_memory)
            return {"norm_histogram": _norm_counts(rows.source, clip)}
        source = released.setdefault("source", rows.source)
        if "config" not in released:
            released["config"] = self._config(inputs, source.n, source.d, source.in_memory)[1]
        config = released["config"]
        return {plan.releases[-1].name: Drawn(lambda releaser: _dp_pca_run(source, config, releaser,
                                                                           self.show_progress))}

    def post_process(self, inputs: _DpPcaChecked, rows: _Opened, released: Released,
                     report: Any) -> SubspaceResult:
        W, log, used = released[released.plan.releases[-1].name]
        out = _dp_pca_result(W, log, used, report, released["config"], inputs.inputs.rank_method,
                             released["config"].histogram)
        if "clip" in released:
            out.diagnostics.update({"clip": released["clip"],
                                    "histogram_noise_std": released["histogram_noise_std"]})
        return out


def _batch_layout(n: int | None, batch_size: int | None, batch_constant: float, schedule: str,
                  calibration: str, owner: str) -> int | None:
    """B for equal minibatches (``batch_size`` given, or the paper's schedule); None for the warm-up
    schedule (batch sizes from the public n)."""
    if batch_size is not None or schedule == "paper":
        return _batch_size(n, batch_size, batch_constant, owner)
    if n is None:
        raise ValueError(f"{owner}: a stream needs batch_size or n_samples (public under replace-one: the "
                         "warm-up schedule's batch sizes come from n).")
    if calibration == "paper":
        raise ValueError(f"{owner}: calibration='paper' (the paper's beta_t) needs equal minibatches: "
                         "use schedule='paper' or a batch_size.")
    return None


def _part_batches(config: _DpPcaConfig, size: int) -> list[int]:
    """The batch sizes of a part of ``size`` rows under the warm-up schedule (public)."""
    return batch_sizes(size, config.n_batches, config.warmup_fraction)


def _dp_pca_result(W: np.ndarray, log: _StepLog, used: int, report: PrivacyReport,
                   config: _DpPcaConfig, rank_method: str, histogram: str) -> SubspaceResult:
    """Post-processing: canonical signs, and diagnostics that are public or released values."""
    diagnostics = {"batch_size": max(log.sizes, default=0), "batch_sizes": tuple(log.sizes),
                   "n_steps": log.steps, "skipped_steps": log.skipped, "block_size": config.block,
                   "truncated_steps": log.truncated,
                   "n_groups": config.groups, "mean_noise_multiplier": config.s_gauss,
                   "c1": math.inf if config.power else config.c1, "c2": config.c2,
                   "rank_method": rank_method, "histogram": histogram}
    return SubspaceResult(components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
                          diagnostics=diagnostics)


def _batch_size(n: int | None, batch_size: int | None, batch_constant: float, owner: str) -> int:
    """The minibatch size B (``batch_constant * n / ln(n)^2`` unless given), at most n."""
    if n is None and batch_size is None:
        raise ValueError(f"{owner}: a stream needs batch_size or n_samples (to set B = c n / ln(n)^2).")
    if batch_size is None:
        assert n is not None
        B = max(4, int(float(batch_constant) * n / math.log(max(n, 3)) ** 2))
    else:
        B = int(batch_size)
    if n is not None and B > n:
        raise ValueError(f"The 'batch_size' parameter of {owner} ({B}) is larger than the number of "
                         f"rows ({n}).")
    return B


def _warn_outside_analysis(budget: PrivacyBudget, n: int | None, owner: str) -> None:
    """AnalysisRangeWarning where Theorem 5.1's utility bound does not apply (privacy still holds)."""
    if budget.epsilon >= 0.9:
        warnings.warn(
            f"{owner}: the utility analysis (Theorem 5.1) is stated for epsilon in (0, 0.9); at "
            f"epsilon={budget.epsilon:g} the privacy guarantee still holds (certified by the "
            "accountant) but the error bound is not covered.", AnalysisRangeWarning, stacklevel=5)
    if n is not None and budget.delta > 1.0 / n:
        warnings.warn(f"{owner}: Theorem 5.1 assumes delta <= 1/n = {1.0 / n:.3g}; got delta="
                      f"{budget.delta:g} (privacy holds, the analysis does not).", AnalysisRangeWarning,
                      stacklevel=5)


def _dp_pca_config(source: _Source, budget: PrivacyBudget, B: int | None,
                   inputs: _DpPcaInputs) -> _DpPcaConfig:
    """Steps, groups, block, learning rate and noise multipliers of a DP-PCA run, from public inputs."""
    calibration, schedule, rank_method = inputs.calibration, inputs.schedule, inputs.rank_method
    c1, c2 = inputs.learning_rate_scale, inputs.learning_rate_offset
    rng = inputs.range_estimation or RangeEstimation()
    histogram, n_groups, range_fraction = rng.histogram, rng.n_groups, rng.range_fraction
    n = source.n
    T = (None if n is None else n // B) if B is not None else 4 * len(source.parts)
    zeta = float(rng.failure_probability) / (2 * max(1, T or 1))
    b_eps, b_delta = (budget.epsilon, budget.delta) if calibration == "tight" else (
        budget.epsilon / 2, budget.delta / 2)
    groups = int(n_groups) if n_groups is not None else _group_count(b_eps, b_delta, zeta, histogram)
    paper = schedule == "paper"
    fraction = None if paper and range_fraction is None else (
        DEFAULT_RANGE_FRACTION if range_fraction is None else float(range_fraction))
    block = _dp_pca_block(source, rank_method, schedule, inputs.block_size)
    p = source.d * block
    mode = rng.truncation or ("always" if paper else "auto")
    adaptive = mode == "always" or calibration == "paper" or _can_truncate(source, B, groups, fraction, p)
    grad_bound = sensitivity_norm(source.row_norm) ** 2
    K, a, h = float(rng.tail_scale), float(rng.tail_exponent), float(rng.half_width_mult)
    if adaptive:
        _check_smallest_batch(source, B, groups, fraction)
        lap_m, stable_b, s_gauss = _mean_calibration(b_eps, b_delta, p, float(rng.histogram_share), histogram)
    else:  # one Gaussian release per batch: the whole (epsilon, delta)
        lap_m, stable_b = None, None
        s_gauss = analytic_noise_multiplier(budget.epsilon, budget.delta)
    if calibration == "paper":
        assert B is not None
        s_gauss = _paper_mean_multiplier(budget, B, B // 2, p, zeta, K, a, h)
    return _DpPcaConfig(
        n=n, B=B, T=T, block=block, power=c1 is None and not paper,
        truncation=mode, adaptive=adaptive,
        pub_sens=min(math.sqrt(block), math.sqrt(2.0)) * grad_bound, p=p, zeta=zeta, groups=groups,
        histogram=histogram, b_eps=b_eps, b_delta=b_delta, eig_bound=2.0 * grad_bound**2,
        grad_bound=grad_bound, lap_m=lap_m, stable_b=stable_b, s_gauss=s_gauss, K=K, a=a,
        half_width_mult=h, c1=100.0 / source.row_norm**2 if c1 is None else float(c1),
        c2=1.0 if c2 is None else float(c2), range_fraction=fraction)


def _dp_pca_block(source: _Source, rank_method: str, schedule: str, block_size: int | None) -> int:
    """Columns of the iterate: ``min(d, 20 k)`` (oversampling) under the warm-up schedule, k for the
    paper's; one per part for deflation."""
    if rank_method == "deflation":
        return 1
    if block_size is None:
        return source.k if schedule == "paper" else default_block_size(source.d, source.k)
    if not source.k <= block_size <= source.d:
        raise ValueError(f"{source.owner}: block_size must be in [k, n_features] = [{source.k}, "
                         f"{source.d}]; got {block_size}.")
    return int(block_size)


def _split(m: int, config: _DpPcaConfig) -> int:
    """Rows of a batch of m for Algorithm 4 (public): the paper's half, or ``range_fraction m`` but at
    least one and at most ``_MAX_GROUP_PAIRS`` pairs per group; the mean gets the rest (the paper: the
    other half)."""
    if config.range_fraction is None:
        return m // 2
    most = 2 * _MAX_GROUP_PAIRS * config.groups
    return max(2 * config.groups, min(math.floor(config.range_fraction * m), most))


def _smallest_batch(groups: int, fraction: float | None) -> int:
    """The smallest batch that gives Algorithm 4 one pair per group and the mean at least one row."""
    if fraction is None:
        return 4 * groups
    m = 2 * groups + 1
    while max(2 * groups, math.floor(fraction * m)) >= m:
        m += 1
    return m


def _can_truncate(source: _Source, B: int | None, groups: int, fraction: float | None, p: int) -> bool:
    """Whether "auto" truncation can act on some batch: the mean's b x (d p) gradients of the smallest
    batch fit in ``_TRUNCATION_MAX_VALUES`` values (public sizes only)."""
    if B is not None:
        m = B
    else:
        assert source.n is not None
        m = math.floor(0.05 * (source.n // len(source.parts)))
    split = m // 2 if fraction is None else max(
        2 * groups, min(math.floor(fraction * m), 2 * _MAX_GROUP_PAIRS * groups))
    return (m - split) * p <= _TRUNCATION_MAX_VALUES


def _check_smallest_batch(source: _Source, B: int | None, groups: int, fraction: float | None) -> None:
    """Every minibatch must give Algorithm 4 one pair per group (and the mean a row); the error names
    the smallest n that works under the warm-up schedule."""
    need = _smallest_batch(groups, fraction)
    if B is not None:
        if B < need:
            raise ValueError(
                f"The 'batch_size' of {source.owner} is {B}, below the minimum {need} for the private "
                f"top-eigenvalue histogram ({groups} groups of at least one pair, from half of the "
                "batch). Use more rows, a larger batch_size / batch_constant, or fewer n_groups.")
        return
    assert source.n is not None
    parts = len(source.parts)
    smallest = source.n // parts if parts > 1 else source.n
    if math.floor(0.05 * smallest) >= need:
        return
    part_n = math.ceil(need / 0.05)
    while math.floor(0.05 * part_n) < need:
        part_n += 1
    raise ValueError(
        f"{source.owner}: n={source.n} rows is too few for the warm-up schedule (each 5% warm-up batch "
        f"needs {need} rows for the private top-eigenvalue histogram's {groups} groups); the smallest "
        f"n that works is {part_n * parts}. Use more rows, a larger epsilon, fewer n_groups, or equal "
        "batches (batch_size).")


def _paper_mean_multiplier(budget: PrivacyBudget, B: int, b: int, p: int, zeta: float, K: float,
                           a: float, half_width_mult: float) -> float:
    """The paper's noise as a multiplier of our mean's sensitivity (independent of Lambda_t).

    ``beta_t = 8 K sqrt(2 Lambda) log^a(B p / zeta) sqrt(2 p log(2.5/delta)) / (eps B)`` with the
    paper's (eps/2, delta/2) for Algorithm 5; our truncated mean's sensitivity for the same Lambda is
    ``2 h r sqrt(p) / b`` with ``r = K sqrt(2 Lambda) log^a(b p / zeta)``: the ratio drops Lambda.
    """
    paper_std_factor = (8 * K * math.log(B * p / zeta) ** a
                        * math.sqrt(2 * p * math.log(2.5 / budget.delta)) / (budget.epsilon * B))
    r_unit = K * math.log(b * p / zeta) ** a
    delta_unit = 2 * half_width_mult * r_unit * math.sqrt(p) / b
    return paper_std_factor / delta_unit


def _laplace_histograms_event(multiplier: float, p: int) -> dp_accounting.DpEvent:
    """The p coordinate histograms' event: p Laplace events (PLD), or for p above
    ``_PLD_MAX_COORDINATES`` their basic composition ``(p / multiplier, 0)`` (pure; a PLD of that many
    compositions does not fit in memory)."""
    if p <= _PLD_MAX_COORDINATES:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(multiplier), p)
    return EpsilonDeltaDpEvent(p / multiplier, 0.0)


def _dp_pca_plan(config: _DpPcaConfig, relation: Relation, in_memory: bool, calibration: str, *,
                 seeded: bool) -> ReleasePlan:
    """The two parallel branches' events and the three noisy releases of a DP-PCA run (one Gaussian
    release per batch when Algorithms 4 and 5 cannot act: ``config.adaptive`` False)."""
    notes = [f"Minibatch B = {config.B} rows." if config.B is not None else
             f"Warm-up schedule: {config.n_batches - 1} batches of {config.warmup_fraction:g} n rows, "
             "then the rest.",
             _order_note(in_memory, "each row in exactly one sub-release (parallel composition)")]
    if not config.adaptive:
        notes.append("Algorithm 5's truncation cannot act at this size (b x d p gradients beyond memory): "
                     "every batch mean is released with noise from the public bound, without "
                     "Algorithms 4 and 5.")
        return ReleasePlan("dp_pca", relation, (ParallelDpEvent([dp_accounting.GaussianDpEvent(
            config.s_gauss)]),), (_mean_widened(config),), tuple(notes))
    if config.histogram == "laplace":
        assert config.lap_m is not None
        event4 = laplace_histogram_event(2.0 / config.b_eps, relation)  # Laplace scale 2 / eps4
        hist5 = _laplace_histograms_event(config.lap_m, config.p)
    else:
        assert config.stable_b is not None
        event4 = stable_histogram_event(config.b_eps, config.b_delta)
        hist5 = dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(*config.stable_b), config.p)
    event5 = dp_accounting.ComposedDpEvent([hist5, dp_accounting.GaussianDpEvent(config.s_gauss)])
    if calibration == "paper":
        notes.append("paper noise beta_t verbatim for the mean; it leaves no budget for the coordinate "
                     "histograms (spec §A.4).")
    if not seeded and config.histogram == "laplace":
        notes.append(f"Secure noise: every bin of a Laplace histogram is noised; a step whose Algorithm 5 "
                     f"range (from the released Lambda_t) exceeds {MAX_SECURE_BINS} bins is skipped "
                     "(truncation='always') or uses the public bound (truncation='auto').")
    releases = (_eigenvalue_release(config.b_eps),
                _coordinate_release(config.histogram, config.hist_scale, config.stable_b),
                _mean_widened(config))
    return ReleasePlan("dp_pca", relation, (ParallelDpEvent([event4, event5]),), releases, tuple(notes))


def _mean_widened(config: _DpPcaConfig) -> NoisyRelease:
    """The batch mean's release (per unit sensitivity) widened for the rounding of its statistic: the
    larger widening of its two forms, for a batch of at most B rows (or the public n).

    The histograms need none: each row falls in one bin (one group) whatever the rounding of its
    gradient, and counts add exactly. The public bound's mean ``S / b``, ``S = sum_i x_i (x_i^T W)``:
    :func:`widen_projection`'s derivation (the ``d`` roundings of the product with W, one more for the
    division by b), terms ``C^2 sqrt(p_W)`` over the sum's sensitivity ``S_pub``. Algorithm 5's mean
    ``m + (1/b) sum_i (clip(g_i) - m)`` (the released centres m added after the noise): every term lies
    in the box, of norm at most ``h r sqrt(p)``, half the sum's sensitivity, whatever the rounding of
    the gradient; the subtraction and the division are two roundings: ``r = b gamma_{b + 3}``.
    """
    rows = config.B if config.B is not None else config.n
    assert rows is not None  # a stream without n_samples has equal batches of B rows
    release = _mean_release(config.s_gauss)
    d = config.p // config.block
    public = widen_release(release, n=rows, relation=Relation.REPLACE_ONE, kind="products",
                           term_bound=config.grad_bound * math.sqrt(config.block) * (1.0 + 1e-6)
                           / config.pub_sens, summation=Summation(followed_by=d + 1))
    if not config.adaptive:
        return public
    return max(public, _box_mean_widened(release, rows), key=lambda r: r.scale)


def _dp_pca_run(source: _Source, config: _DpPcaConfig, releaser: Releaser,
                show_progress: bool | None) -> tuple[np.ndarray, _StepLog, int]:
    """The release of :func:`dp_pca` (after the charge): initial iterate, permutation, minibatches."""
    W = orthonormalize(releaser.standard_normal((source.d, source.k)), "qr")
    if config.block > source.k:  # oversampling: extra columns drawn after the first k (seeded runs of
        extra = releaser.standard_normal((source.d, config.block - source.k))  # k cols unchanged)
        W = orthonormalize(np.hstack([W, extra]), "qr")
    rows = source.reader(releaser)
    log = _StepLog()
    bar = progress(range(config.T or 0), total=config.T, desc=source.owner, enabled=show_progress,
                   min_total=50)
    bar_it = iter(bar)
    W = _by_parts(W, source.parts,
                  lambda w, size, found: _dp_pca_part(rows, w, size, found, config, releaser, log, bar_it))
    if log.steps == 0:  # a stream shorter than one minibatch (n is public under replace-one)
        raise ValueError(f"{source.owner}: no complete minibatch of {config.B} rows in the data.")
    return W[:, : source.k] if log.last is None else _top_left(log.last, source.k), log, rows.row


def _top_left(M: np.ndarray, k: int) -> np.ndarray:
    """The top-k left singular vectors of the last update (post-processing of released values)."""
    return np.ascontiguousarray(np.linalg.svd(M, full_matrices=False)[0][:, :k])


def _dp_pca_part(rows: _Rows, w: np.ndarray, size: int | None, found: np.ndarray,
                 config: _DpPcaConfig, releaser: Releaser, log: _StepLog,
                 bar_it: Iterator[Any]) -> np.ndarray:
    """The minibatch steps over one part of the rows (all of them for block updates)."""
    if config.B is None:  # the warm-up schedule: n (hence every part's size) is public
        part = size if size is not None else _rows_left(rows, config)
        sizes: Iterator[int] = iter(_part_batches(config, part))
    else:
        B = config.B
        sizes = itertools.repeat(B, size // B) if size is not None else itertools.repeat(B)
    used = 0
    for t, m in enumerate(sizes, start=1):
        if not config.adaptive:  # Algorithms 4 and 5 cannot act: the batch sum, read by chunks
            S, got = _batch_sum_by_chunks(rows, m, w)
            if got < m:
                break
        else:
            batch = rows.take(m)
            if batch.shape[0] < m:
                break
        used += m
        next(bar_it, None)
        log.steps += 1
        log.sizes.append(m)
        if not config.adaptive:  # the batch mean with noise from the public bound
            w = _power_or_oja(_public_bound_release(S, m, config.pub_sens, releaser), w, t, found,
                              config, log)
        else:
            w = _dp_pca_step(batch, w, t, found, config, releaser, log)
    if size is not None and size - used > 0:  # deflation: rows of this part that fill no batch
        rows.take(size - used)
    return w


def _batch_sum_by_chunks(rows: _Rows, m: int, W: np.ndarray) -> tuple[np.ndarray, int]:
    """``(sum_i x_i (x_i^T W), rows read)`` over the next m rows, read by chunks of ~8 MB (the batch is
    never held whole: memory O(chunk + d p) whatever the batch size)."""
    before = rows.row
    S = _batch_sum(rows, m, W, to_end=False)
    return S, rows.row - before


def _rows_left(rows: _Rows, config: _DpPcaConfig) -> int:
    """The rows not yet read of a run whose n is public (the last part of a deflation run)."""
    assert config.n is not None
    return config.n - rows.row


def _dp_pca_step(batch: np.ndarray, w: np.ndarray, t: int, found: np.ndarray, config: _DpPcaConfig,
                 releaser: Releaser, log: _StepLog) -> np.ndarray:
    """One step: private eigenvalue (first rows), private mean gradient (the rest), update."""
    b1 = _split(batch.shape[0], config)
    b = batch.shape[0] - b1 if config.range_fraction is not None else b1  # the mean's rows
    lam = _step_eigenvalue(batch[:b1], w, config, releaser)
    auto = config.truncation == "auto"
    if lam is None and not auto:  # the paper: a failed estimate skips the step
        log.skipped += 1
        return w
    r = 0.0
    if lam is not None:
        log.eigenvalues.append(lam)
        r = config.K * math.sqrt(2.0 * lam) * math.log(b * config.p / config.zeta) ** config.a
    X2 = batch[b1 : b1 + b]
    if auto and (lam is None or 2.0 * config.half_width_mult * r * math.sqrt(config.p) >= config.pub_sens
                 or b * config.p > _TRUNCATION_MAX_VALUES or _beyond_secure_range(config, r, releaser)):
        # no estimate, a box no smaller than the public bound, or too many bins for the secure source
        # (all functions of released and public values): the plain mean, noise from the public bound
        G = public_bound_mean(X2, w, config.pub_sens, releaser)
    else:
        if _beyond_secure_range(config, r, releaser):  # a skipped step, as for a failed estimate
            log.skipped += 1
            return w
        g, _ = private_mean(_gradients(X2, w), radius=r, bound=config.grad_bound,
                            hist_scale=config.hist_scale, hist_budget=config.stable_b,
                            noise_std_per_sensitivity=config.s_gauss,
                            half_width_mult=config.half_width_mult, histogram=config.histogram,
                            releaser=releaser)
        if g is None:
            log.skipped += 1
            return w
        log.truncated += 1
        G = g.reshape(w.shape[1], -1).T
    return _power_or_oja(G, w, t, found, config, log)


def _power_or_oja(G: np.ndarray, w: np.ndarray, t: int, found: np.ndarray, config: _DpPcaConfig,
                  log: _StepLog) -> np.ndarray:
    """The update from the released mean gradient G: ``orth(G)`` (power step) or ``orth(w + eta_t G)``."""
    M = _deflate(G if config.power else w + config.c1 / (config.c2 + t) * G, found)
    if config.block > 1:
        log.last = M
    return _orth(M)


def public_bound_mean(X: np.ndarray, W: np.ndarray, sensitivity: float, releaser: Releaser) -> np.ndarray:
    """``(1/b) sum_i x_i (x_i^T W)`` over the b rows of X plus the plan's mean noise at ``sensitivity / b``.

    ``sensitivity`` is the public replace-one bound on the batch SUM (``min(sqrt(p), sqrt(2)) C^2``,
    :func:`~dpspectral.pca._minibatch.minibatch_sensitivity`), so the mean moves by at most its b-th
    part; the plan's release ``"mean"`` is per unit sensitivity. Never forms the b x (d p) gradients.
    """
    return _public_bound_release(X.T @ (X @ W), X.shape[0], sensitivity, releaser)


def _public_bound_release(S: np.ndarray, b: int, sensitivity: float, releaser: Releaser) -> np.ndarray:
    """The batch mean ``S / b`` of a batch SUM S of b rows, plus the plan's mean noise at
    ``sensitivity / b`` (``sensitivity``: the public replace-one bound on the sum)."""
    return S / b + releaser.gaussian(_MEAN, S.shape) * (sensitivity / b)


def _step_eigenvalue(X1: np.ndarray, w: np.ndarray, config: _DpPcaConfig,
                     releaser: Releaser) -> float | None:
    """Algorithm 4 on the first half of a batch (the b x (d p) gradients formed only when small)."""
    # "auto": a win by an empty bin (an estimate the data do not support) counts as no estimate
    floor = -math.inf
    if config.truncation == "auto":
        floor = eigenvalue_count_threshold(config.b_eps, config.zeta)
    if X1.shape[0] * config.p <= _MATERIALISE:
        return private_top_eigenvalue(_gradients(X1, w), epsilon=config.b_eps, delta=config.b_delta,
                                      bound=config.eig_bound, n_groups=config.groups,
                                      histogram=config.histogram, releaser=releaser, min_count=floor)
    _check_planned(releaser, _eigenvalue_release(config.b_eps))
    lam = _group_eigenvalues_of_rows(X1, w, config.groups)
    return _eigenvalue_mode(lam, config.b_eps, config.b_delta, config.eig_bound, config.histogram,
                            releaser, floor)


def planned_events(method: str, X: Any, k: int, **params: Any) -> list[dp_accounting.DpEvent]:
    """The events ``method(X, k, **params)`` would be charged (``method``: ``"private_oja"`` or
    ``"dp_pca"``), from the public inputs only (an array: its shape); nothing is read, charged or drawn.

    The parameters are checked as the call checks them; the old keywords of the option groups are not
    accepted here.
    """
    known: dict[str, tuple[Callable[..., Any], Any, Any]] = {
        "private_oja": (private_oja, _PrivateOja, _OjaInputs), "dp_pca": (dp_pca, _DpPca, _DpPcaInputs)}
    function, mechanism, inputs_type = known[method]
    bound = inspect.signature(function).bind(X, k, **params)
    bound.apply_defaults()
    given = bound.arguments
    check_params(getattr(function, "parameter_constraints", {}), given, method)
    inputs = inputs_type(**{f.name: given[f.name] for f in dataclasses.fields(inputs_type)
                            if f.name in given})
    return mechanism(None).events_of(inputs, X)
