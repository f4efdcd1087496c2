"""Minibatch clipped Oja over disjoint minibatches, one pass (Liu, Kong, Jain and Oh 2022, Eq. (7)).

Paper 001 (``../shared/papers/001_*.txt``) introduces minibatch Oja as the fix for Private Oja's
restricted epsilon range: few steps over disjoint minibatches, each step a clipped batch gradient plus
Gaussian noise, renormalised. Here a step is taken with an infinite learning rate (block power
iteration on the batch), which the measurements in docs/algorithms/oja.md found best:

    W_0 = a random orthonormal d x k frame (secret generator)
    for t = 1..T over disjoint batches B_t (every row in exactly one batch):
        G_t = sum_{x in B_t} c(x) (c(x)^T W_{t-1}) + N(0, sigma^2)^{d x p}    (the release "batch")
        W_t = QR(G_t)                                                          (post-processing)
    components = the top-k left singular vectors of G_T                        (post-processing)

W_0 has p >= k columns (oversampling, ``block_size``; by default min(d, 20 k)): for p >= 2 the
sensitivity does not grow with p, and the few steps converge far better.

Batch sizes come from public inputs only (n is public under replace-one): ``n_batches - 1`` warm-up
batches of ``floor(warmup_fraction n)`` rows each, then one batch with the rest (defaults 4 and
0.05). An in-memory input is permuted with the secret generator first (as
:func:`~dpspectral.pca._oja.private_oja` does); a stream
is cut into consecutive rows (its order is assumed independent of the data), and its last batch takes
every remaining row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from .._array_api import clip_rows_xp, from_numpy, get_namespace_and_device, work_dtype
from .._constraints import NONE, PRIVACY_PARAMETERS, Interval, Options, Types, validated
from .._linalg import orthonormalize
from .._moments import accumulate, accumulation_dtype, chained_summation, needs_two_passes_ok
from .._options import ADAPTIVE_CLIP, AdaptiveClip, clip_fields, folded
from .._results import SubspaceResult
from ..privacy._accounting import Accountant, ParallelDpEvent, calibrate
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, at_released_clip, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import Summation, widen_projection
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run
from ._clip_stage import ClipStaged, with_clip_stage
from ._inputs import PcaInputs
from ._oja import _array_shape, _clip_staged_result, _norm_counts, _Opened, _replace_one_privacy
from ._schedule import WarmupSchedule
from ._stream import (
    _as_source,
    _batch_sum,
    _check_k,
    _is_stream,
    _n_rows,
    _open_source,
    _order_note,
    _prepare_source,
    _Rows,
    _Source,
    batch_sizes,
    default_block_size,
    minibatch_sensitivity,
    noise_per_clip2,
)

__all__ = ["batch_sizes", "default_block_size", "minibatch_oja", "minibatch_sensitivity", "noise_per_clip2"]

_OWNER = "minibatch_oja"
_BATCH = "batch"  # the planned release: one noisy batch sum (d x p) per batch
_DEVICE_CHUNK_ELEMENTS = 1 << 24  # values per chunk on a device (array API dispatch): few, large kernels

MINIBATCH_OJA_PARAMETERS: dict[str, Any] = {
    **PRIVACY_PARAMETERS, "calibration": Options(("tight",)),
    "schedule": [NONE, Types((WarmupSchedule,), "a WarmupSchedule")],
    "block_size": [NONE, Interval(1, None, "left", integer=True)],
    "n_samples": [NONE, Interval(1, None, "left", integer=True)],
    "show_progress": [NONE, Types((bool,), "a bool")],
    "adaptive_clip": ADAPTIVE_CLIP,
}


def _block_size(block_size: int | None, d: int, k: int) -> int:
    if block_size is None:
        return default_block_size(d, k)
    if not k <= block_size <= d:
        raise ValueError(f"{_OWNER}: block_size must be in [k, n_features] = [{k}, {d}]; got {block_size}.")
    return int(block_size)


def _multiplier(budget: PrivacyBudget, relation: Relation, clip: RowClipPlan | None) -> float:
    """The batches' noise multiplier, from public inputs only.

    With ``clip`` (adaptive clipping) it is calibrated for the composition of the norm histogram with
    one batch (the batches are parallel: every branch is the same Gaussian).
    """
    if clip is None:
        return analytic_noise_multiplier(budget.epsilon, budget.delta)
    multiplier = calibrate(clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,
                           relation=relation)
    return float(multiplier)


def _plan(relation: Relation, multiplier: float, block: int, row_norm: float, n_batches: int,
          in_memory: bool) -> ReleasePlan:
    """The releases (one Gaussian batch sum per batch, ``block`` columns) and events, from public inputs."""
    sens = minibatch_sensitivity(block, sensitivity_norm(row_norm))
    events = (ParallelDpEvent([dp_accounting.GaussianDpEvent(multiplier)] * n_batches),)
    notes = (_order_note(in_memory, f"each row in exactly one of {n_batches} batches (parallel "
                                    "composition: every batch has the full budget)"),)
    releases = (NoisyRelease(_BATCH, "gaussian", multiplier * sens, sens),)
    return ReleasePlan(_OWNER, relation, events, releases, notes)


def _noisy_batch(releaser: Releaser, statistic: np.ndarray) -> np.ndarray:
    """The released batch sum (statistic + the planned Gaussian noise)."""
    return np.asarray(releaser.add(_BATCH, statistic))


def _run(source: _Source, sizes: list[int], block: int, releaser: Releaser,
         where: tuple[Any, Any] = (None, None)) -> tuple[np.ndarray, int]:
    """The pass (after the charge): initial frame, permutation (in-memory input), one release per batch.

    The iterate has ``block`` >= k columns; the result is the top-k left singular vectors of the last
    released batch sum (post-processing). ``where``: ``(xp, device)`` of a device array (array API
    dispatch; :func:`_run_xp`), ``(None, None)`` for the NumPy path.
    """
    W = orthonormalize(releaser.standard_normal((source.d, block)), "qr")
    if where[0] is not None:
        return _run_xp(source, sizes, W, releaser, where)
    rows: _Rows = source.reader(releaser)
    G = W
    for t, size in enumerate(sizes):
        to_end = t == len(sizes) - 1 and not source.in_memory
        G = _noisy_batch(releaser, _batch_sum(rows, size, W, to_end))
        W = orthonormalize(G, "qr")
    U = np.linalg.svd(G, full_matrices=False)[0]
    return np.ascontiguousarray(U[:, : source.k]), rows.row


def _clip_xp(chunk: Any, r: float, xp: Any) -> Any:
    """Rows of norm above ``r`` scaled to ``r``, on the device (:func:`~dpspectral._array_api.clip_rows_xp`;
    the data were checked finite before the charge)."""
    return clip_rows_xp(chunk, r, xp)[0]


def _run_xp(source: _Source, sizes: list[int], W0: np.ndarray, releaser: Releaser,
            where: tuple[Any, Any]) -> tuple[Any, int]:
    """:func:`_run` where the data live: the same initial frame and permutation (the host generator, draw
    for draw as on the NumPy path), then the batch sums, the noise (the releaser's device source), QR
    and the final SVD in the data's namespace, on its device."""
    X, (xp, device) = source.data, where
    assert source.n is not None  # an in-memory array
    dtype = accumulation_dtype(X, xp)  # float64 unless the noise is float (its rounding: docs/noise.md)
    order = from_numpy(releaser.permutation(source.n), xp, device)
    W = G = from_numpy(W0, xp, device, dtype)
    step = max(1, _DEVICE_CHUNK_ELEMENTS // max(source.d, 1))
    start = 0
    for size in sizes:
        S = xp.zeros(tuple(W.shape), dtype=dtype, device=device)
        for a in range(start, start + size, step):
            chunk = xp.astype(xp.take(X, order[a:min(a + step, start + size)], axis=0), dtype, copy=False)
            chunk = _clip_xp(chunk, source.row_norm, xp)
            S = S + chunk.T @ (chunk @ W)
        G = releaser.add(_BATCH, S)
        W = orthonormalize(G, "qr")
        start += size
    U = xp.linalg.svd(G, full_matrices=False)[0]
    return xp.astype(U[:, : source.k], work_dtype(X, xp)), start  # post-processing, in X's dtype


def _device_source(X: Any, xp: Any, n_samples: int | None, C: float,
                   on_norm_violation: NormViolation) -> int:
    """A device array validated whole where it lives (finite; within C with ``"raise"``), before any
    charge (only a yes/no comes back); its row count."""
    n = _n_rows(X, n_samples, _OWNER)
    accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=False, want_second=False,
               owner=_OWNER, xp=xp)  # refuses 0 rows
    assert n is not None
    return n


def _source(X: Any, k: Any, C: float, n_samples: int | None, on_norm_violation: NormViolation,
            show_progress: bool | None, where: tuple[Any, Any] = (None, None)) -> _Source:
    """Validate the data (an in-memory input whole, before any charge) and open it.

    ``where``: ``(xp, device)`` of a device array (array API dispatch), validated on its device.
    """
    n: int | None
    if where[0] is not None:
        src, n, in_memory = X, _device_source(X, where[0], n_samples, C, on_norm_violation), True
    else:
        src, n, in_memory = _prepare_source(X, n_samples, C, on_norm_violation, _OWNER)
    return _open_source(src, n, in_memory, k, "block", C, on_norm_violation, _OWNER, show_progress)


@dataclass(frozen=True)
class _MinibatchInputs(PcaInputs):
    """The public inputs of :func:`minibatch_oja` (as given; checked by :meth:`_MinibatchOja.check`)."""

    n_batches: int
    warmup_fraction: float
    block_size: int | None
    n_samples: int | None
    on_norm_violation: NormViolation
    adaptive_clip: bool
    clip_share: float | None


@dataclass(frozen=True, eq=False)
class _MinibatchChecked:
    """:class:`_MinibatchInputs` checked: budget, relation, bound, clip stage (if any), multiplier."""

    inputs: _MinibatchInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    calibration: str
    clip: RowClipPlan | None
    multiplier: float
    where: tuple[Any, Any]  # (xp, device) of a device array; (None, None) on the NumPy path
    in_memory: bool
    n: int | None = None  # public shape of an in-memory array, for the plan checked before reading
    d: int | None = None
    summation: Summation = Summation()  # how a batch is summed (chunks chained: no groups apart)


class _MinibatchOja(ClipStaged, Mechanism[_MinibatchInputs, SubspaceResult]):
    """Minibatch Oja as the release template runs it: one release of the noisy batch sums at the bound
    C, or (adaptive clipping) the norm histogram first, then the batch sums at the released clip."""

    label = _OWNER
    release_name = _BATCH
    stacklevel = 3  # frames above run: minibatch_oja, the constraint check, the caller

    def check(self, inputs: _MinibatchInputs, X: Any) -> _MinibatchChecked:
        budget, rel, C = _replace_one_privacy(inputs, _OWNER)
        where = get_namespace_and_device(X, _OWNER)  # array API dispatch: (xp, device); NumPy: (None, None)
        in_memory = where[0] is not None or not _is_stream(_as_source(X))
        if not in_memory:  # the batch sizes of a stream are fixed by n_samples, before the charge
            if inputs.n_samples is None:
                raise ValueError(
                    f"{_OWNER}: a stream needs n_samples (public under replace-one) to set the batch sizes.")
            batch_sizes(int(inputs.n_samples), int(inputs.n_batches), float(inputs.warmup_fraction))
        share = inputs.clip_share or DEFAULT_CLIP_SHARE
        adaptive = inputs.adaptive_clip and needs_two_passes_ok(X)
        clip = plan_row_clip(budget, rel, C, share) if adaptive else None
        return _MinibatchChecked(inputs, budget, rel, C, inputs.calibration, clip,
                                 _multiplier(budget, rel, clip), where, in_memory, *_array_shape(X),
                                 summation=chained_summation(X, where[0]))

    def read(self, inputs: _MinibatchChecked, X: Any) -> _Opened:
        ins = inputs.inputs
        source = _source(X, ins.k, inputs.C, ins.n_samples, ins.on_norm_violation, self.show_progress,
                         inputs.where)
        _sizes(inputs, source)  # too few rows for the schedule: refused before the charge
        return _Opened(source)

    def _block(self, inputs: _MinibatchChecked, n: int | None, d: int) -> int:
        ins = inputs.inputs
        k = _check_k(ins.k, d, n if n is not None else ins.n_samples, _OWNER)
        return _block_size(ins.block_size, d, k)

    def _method_plan(self, inputs: _MinibatchChecked, n: int | None, d: int) -> ReleasePlan:
        """The batches' plan, each batch sum ``sum_i x_i x_i^T W`` widened for its rounding (a batch has
        at most the ``n`` rows, or the public ``n_samples`` of a stream)."""
        block = self._block(inputs, n, d)
        plan = _plan(inputs.relation, inputs.multiplier, block, inputs.C, int(inputs.inputs.n_batches),
                     inputs.in_memory)
        rows = n if n is not None else inputs.inputs.n_samples
        return dataclasses.replace(plan, releases=tuple(
            widen_projection(r, n=rows, relation=inputs.relation, row_norm=sensitivity_norm(inputs.C), d=d,
                             columns=block, summation=inputs.summation) for r in plan.releases))

    def plan(self, inputs: _MinibatchChecked, n: int | None, d: int | None) -> ReleasePlan | None:
        if d is None:
            return None
        return with_clip_stage(self._method_plan(inputs, n, d), inputs.clip)

    def stage_plan(self, inputs: _MinibatchChecked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        if inputs.clip is None or names != (_BATCH,):
            return super().stage_plan(inputs, plan, names, released)
        # the batches at the released clip r: the same multiplier, sensitivity and noise at r
        source = released.rows.source
        n = source.public_n()
        assert n is not None
        block = self._block(inputs, source.n, source.d)
        nu = noise_per_clip2(inputs.multiplier, source.d, block, _sizes(inputs, source))
        r, stage = at_released_clip(inputs.clip, released["norm_histogram"],
                                    self._method_plan(inputs, source.n, source.d), {_BATCH: 2},
                                    inputs.inputs.clip_share or DEFAULT_CLIP_SHARE, noise_per_clip2=nu,
                                    d=source.d, n_public=n)
        released.update(source=source.at_clip(r), clip=r)
        return stage

    def statistic(self, inputs: _MinibatchChecked, rows: _Opened, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "norm_histogram":
            return {"norm_histogram": _norm_counts(rows.source, inputs.clip)}
        source = released.setdefault("source", rows.source)  # at the released clip, else at the bound C
        sizes, block = _sizes(inputs, source), self._block(inputs, source.n, source.d)
        return {_BATCH: Drawn(lambda releaser: _run(source, sizes, block, releaser, inputs.where))}

    def post_process(self, inputs: _MinibatchChecked, rows: _Opened, released: Released,
                     report: Any) -> SubspaceResult:
        """Canonical signs; diagnostics that are public or released values."""
        W, used = released[_BATCH]
        source, batch = released["source"], released.plan[_BATCH]
        sizes = _sizes(inputs, source)
        diagnostics: dict[str, Any] = {
            "noise_multiplier": inputs.multiplier, "noise_std": batch.scale, "sensitivity": batch.sensitivity,
            "batch_sizes": tuple(sizes), "n_batches": len(sizes),
            "block_size": self._block(inputs, source.n, source.d)}
        return _clip_staged_result(W, used, diagnostics, inputs.clip, released, report)


def _sizes(inputs: _MinibatchChecked, source: _Source) -> list[int]:
    """The public batch sizes of the source's n rows (n_samples for a stream)."""
    assert source.n is not None
    return batch_sizes(source.n, int(inputs.inputs.n_batches), float(inputs.inputs.warmup_fraction))


@folded("schedule", WarmupSchedule, {"n_batches": "n_batches", "warmup_fraction": "warmup_fraction"})
@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@validated(MINIBATCH_OJA_PARAMETERS)
def minibatch_oja(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    schedule: WarmupSchedule | None = None,
    block_size: int | None = None,
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
) -> SubspaceResult:
    """Minibatch clipped Oja (paper 001, Eq. (7)): one pass, T noisy block-power steps on disjoint batches.

    ``G_t = sum_{x in B_t} c(x) c(x)^T W_{t-1} + Z_t`` with ``Z_t`` i.i.d. ``N(0, sigma^2)``, then
    ``W_t = QR(G_t)``; ``c`` clips rows to norm C = ``row_norm``; W has p = ``block_size`` >= k columns
    and the components are the top-k left singular vectors of ``G_T``. T = ``schedule.n_batches``; the
    first T - 1 batches (warm-up) have ``floor(warmup_fraction n)`` rows each, the last the rest (public:
    n is public under replace-one; a stream needs ``n_samples``). Memory O(dk + B d) for a batch of B rows
    read from a stream (an in-memory input is indexed in its secret order), p = ``block_size``.

    Parameters
    ----------
    X : array-like (n_samples, n_features), memmap, sparse, Dask array, list of blocks, or a stream
        The private data. Never modified. With array API dispatch on, a PyTorch or CuPy array (any
        namespace ``array-api-compat`` knows): computed on its device, ``components`` in its namespace.
    k : int
        Number of components, in [1, n_features].
    epsilon, delta : float
        The (epsilon, delta) guarantee.
    row_norm : float
        Public bound C on row norms; rows above it are clipped (or refused with
        ``on_norm_violation="raise"``).
    relation : {"replace_one"}
    calibration : {"tight"}
    schedule : WarmupSchedule or None, default=None
        The batches: T = ``n_batches`` steps, T - 1 warm-up batches of ``warmup_fraction`` of the rows
        (:class:`WarmupSchedule`; None: 4 and 0.05). The old keywords ``n_batches``, ``warmup_fraction``
        still work, with a FutureWarning.
    block_size : int or None
        p, the columns of the iterate (oversampling), in [k, n_features]; None: ``min(d, 20 k)``
        (:func:`default_block_size`). The result is the top-k left
        singular vectors of the last released batch sum.
    n_samples : int or None
        n for a stream (required there); checked against an in-memory input's row count.
    accountant : Accountant, optional
        Ledger to spend against (refused before anything is drawn when over its ceiling).
    random_state : None, int, Generator or "secure"
        Secret: draws the noise, the initial frame and the permutation.
    on_norm_violation : {"clip", "raise"}
    show_progress : bool or None
        Progress bar over the blocks of a stream.
    adaptive_clip : bool or AdaptiveClip, default=True
        As in :func:`noisy_power`; ignored (one release) for a one-shot iterator, which cannot be read
        twice.

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); diagnostics ``noise_multiplier``, ``noise_std``, ``sensitivity``,
        ``batch_sizes``, ``n_batches``, ``block_size`` (and ``clip``, ``histogram_noise_std`` with
        adaptive clipping).

    Privacy
    -------
    Relation: replace-one only. Sensitivity of one batch sum, with W orthonormal (public: released
    before) and u = x / C, v = y / C of norm <= 1. (a) k = 1, the half-ball trick: for a unit w,
    ``||(u.w) u - w/2||^2 = (u.w)^2 (||u||^2 - 1) + 1/4 <= 1/4``, so every term lies in the ball of
    radius 1/2 around the public w/2, and replacing a row moves the sum by at most 1 (the w/2 terms
    cancel because both batches have the same size under replace-one). Summed over k columns the same
    argument gives sqrt(k). (b) Any k: ``||(uu^T - vv^T) W||_F <= ||uu^T - vv^T||_F`` and
    ``||uu^T - vv^T||_F^2 = |u|^4 + |v|^4 - 2 (u.v)^2 <= 2``. So the L2 sensitivity of the d x p
    release is ``min(sqrt(p), sqrt(2)) C^2`` (tight: u = w_1, v = w_2, or v orthogonal to w for p = 1),
    with p the iterate's columns (``block_size``; written k above for the columns). Each row
    lies in exactly one batch, assigned by position after a secret uniform permutation (in-memory) or
    by arrival (a stream: its order is assumed independent of the data), so the pass is a parallel
    composition of T Gaussian releases: ``ParallelDpEvent([GaussianDpEvent(m)] * T)``, every batch with
    the full noise multiplier ``m`` of the analytic Gaussian mechanism for (epsilon, delta)
    (``calibration="tight"``, the only one), ``sigma = m * min(sqrt(p), sqrt(2)) C^2``. The QR steps,
    the final SVD, the initial frame and the permutation (secret generator) are post-processing or
    data-independent.
    Add/remove is not offered: batches are cut by position, so adding a row shifts rows between
    batches (and n, hence the batch sizes, would no longer be public). ``random_state="secure"`` draws
    the noise with exact discrete samplers from OS entropy.

    Adaptive clipping (default for an input that can be read twice: arrays, memmaps, sparse, Dask,
    lists of blocks, a callable that returns a fresh iterator of blocks; a one-shot iterator keeps the
    single release above): a noisy histogram of the row norms is released first
    (:mod:`dpspectral.privacy._adaptive`: ``GaussianDpEvent(s_h)``, L2 sensitivity sqrt(2) under
    replace-one, ``s_h = s_total / sqrt(share)``) and the clip r <= C is post-processed from it
    (the balance rule with :func:`noise_per_clip2`). Every row is then clipped at the public r, so the
    derivation above holds with C replaced by r: ``sigma = m min(sqrt(p), sqrt 2) r^2``, with m
    calibrated for ``ComposedDpEvent([GaussianDpEvent(s_h), ParallelDpEvent([GaussianDpEvent(m)] * T)])``
    (the histogram sees every row once, the batches each row once: basic composition of the two
    stages). A re-readable stream is read three times: once at C to validate it (finite; within C
    with ``on_norm_violation="raise"``) before any charge, once for the histogram, once for the
    batches (memory as in one pass).

    Device arrays (array API dispatch, ``docs/array-api.md``): a PyTorch/CuPy/array-API array is
    validated, clipped, multiplied and decomposed (QR, SVD) in its namespace, on its device; the plan
    and the accountant stay on the host. The same mechanism, sensitivities and events; each batch's
    release is noised on the host (exact, or ``"secure"``) and copied back to the data's device. The
    initial frame and the secret permutation are drawn by the host generator (with ``"secure"``, from
    the OS's bits), as on the NumPy path, then moved to the device.
    """
    on, _, clip_share = clip_fields(adaptive_clip, _OWNER, takes_quantile=False)
    batches = schedule or WarmupSchedule()
    inputs = _MinibatchInputs(k, epsilon, delta, row_norm, relation, calibration, batches.n_batches,
                              batches.warmup_fraction, block_size, n_samples, on_norm_violation, on,
                              clip_share)
    return run(_MinibatchOja(show_progress), inputs, X,
               RunSettings(accountant=accountant, random_state=random_state, show_progress=show_progress))
