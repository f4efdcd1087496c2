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

from typing import Any

import dp_accounting
import numpy as np

from .._array_api import clip_rows_xp, from_numpy, get_namespace_and_device, work_dtype
from .._constraints import NONE, PRIVACY_PARAMETERS, SHARE, Interval, Options, Types, validated
from .._linalg import fix_signs, orthonormalize
from .._moments import accumulate, needs_two_passes_ok
from .._results import SubspaceResult
from .._validation import check_mechanism_inputs
from ..privacy._accounting import Accountant, ParallelDpEvent, calibrate
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, at_clip, clip_note, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier
from ..privacy._noise import noise_source
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser, precheck, release
from ._stream import (
    DEFAULT_N_BATCHES,
    DEFAULT_WARMUP_FRACTION,
    _adaptive_clip_stage,
    _batch_sum,
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
    "n_batches": Interval(1, None, "left", integer=True),
    "warmup_fraction": Interval(0, 1, "neither"),
    "block_size": [NONE, Interval(1, None, "left", integer=True)],
    "n_samples": [NONE, Interval(1, None, "left", integer=True)],
    "show_progress": [NONE, Types((bool,), "a bool")],
    "adaptive_clip": Types((bool,), "a bool"), "clip_share": [NONE, SHARE],
}


def _block_size(block_size: int | None, d: int, k: int) -> int:
    if block_size is None:
        return default_block_size(d, k)
    if not k <= block_size <= d:
        raise ValueError(f"{_OWNER}: block_size must be in [k, n_features] = [{k}, {d}]; got {block_size}.")
    return int(block_size)


def _plan(budget: PrivacyBudget, relation: Relation, k: int, row_norm: float, n_batches: int,
          in_memory: bool, clip: RowClipPlan | None = None) -> tuple[ReleasePlan, float]:
    """The releases (one Gaussian batch sum per batch) and events, from public inputs only.

    With ``clip`` (adaptive clipping) the multiplier is calibrated for the composition of the norm
    histogram with one batch (the batches are parallel: every branch is the same Gaussian).
    """
    if clip is None:
        multiplier = analytic_noise_multiplier(budget.epsilon, budget.delta)
    else:
        multiplier = calibrate(clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,
                               relation=relation)
    sens = minibatch_sensitivity(k, sensitivity_norm(row_norm))
    events = (ParallelDpEvent([dp_accounting.GaussianDpEvent(multiplier)] * n_batches),)
    notes = (_order_note(in_memory, f"each row in exactly one of {n_batches} batches (parallel "
                                    "composition: every batch has the full budget)"),)
    releases = (NoisyRelease(_BATCH, "gaussian", multiplier * sens, sens),)
    return ReleasePlan(_OWNER, relation, events, releases, notes), multiplier


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
    W = orthonormalize(releaser.generator.standard_normal((source.d, block)), "qr")
    if where[0] is not None:
        return _run_xp(source, sizes, W, releaser, where)
    rows: _Rows = source.reader(releaser.generator)
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
    dtype = work_dtype(X, xp)
    order = from_numpy(releaser.generator.permutation(source.n), xp, device)
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
    return U[:, : source.k], start


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
            n_batches: int, warmup_fraction: float, show_progress: bool | None,
            where: tuple[Any, Any] = (None, None)) -> tuple[_Source, list[int]]:
    """Validate the data (an in-memory input whole, before any charge) and fix the public batch sizes.

    ``where``: ``(xp, device)`` of a device array (array API dispatch), validated on its device.
    """
    n: int | None
    if where[0] is not None:
        src, n, in_memory = X, _device_source(X, where[0], n_samples, C, on_norm_violation), True
    else:
        src, n, in_memory = _prepare_source(X, n_samples, C, on_norm_violation, _OWNER)
    if n is None:
        raise ValueError(
            f"{_OWNER}: a stream needs n_samples (public under replace-one) to set the batch sizes.")
    sizes = batch_sizes(n, n_batches, warmup_fraction)
    return (_open_source(src, n, in_memory, k, "block", C, on_norm_violation, _OWNER, show_progress),
            sizes)


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
    n_batches: int = DEFAULT_N_BATCHES,
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
    block_size: int | None = None,
    n_samples: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
    adaptive_clip: bool = True,
    clip_share: float | None = None,
) -> SubspaceResult:
    """Minibatch clipped Oja (paper 001, Eq. (7)): one pass, T noisy block-power steps on disjoint batches.

    ``G_t = sum_{x in B_t} c(x) c(x)^T W_{t-1} + Z_t`` with ``Z_t`` i.i.d. ``N(0, sigma^2)``, then
    ``W_t = QR(G_t)``; ``c`` clips rows to norm C = ``row_norm``; W has p = ``block_size`` >= k columns
    and the components are the top-k left singular vectors of ``G_T``. T = ``n_batches``; the first T - 1
    batches (warm-up) have ``floor(warmup_fraction n)`` rows each, the last the rest (public: n is
    public under replace-one; a stream needs ``n_samples``). Memory O(dk + B d) for a batch of B rows
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
    n_batches : int
        T, the number of steps (batches); default 4.
    warmup_fraction : float
        Share of the rows in each of the T - 1 warm-up batches; default 0.05.
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
    adaptive_clip : bool, default=True
        Clip the rows at a released clip (a noisy norm histogram, then the balance rule) instead of at
        ``row_norm``; ignored (one release) for a one-shot iterator, which cannot be read twice.
    clip_share : float in (0, 1) or None
        The histogram's share of the budget (default 0.02).

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
    replace-one, ``s_h = s_total / sqrt(clip_share)``) and the clip r <= C is post-processed from it
    (the balance rule with :func:`noise_per_clip2`). Every row is then clipped at the public r, so the
    derivation above holds with C replaced by r: ``sigma = m min(sqrt(p), sqrt 2) r^2``, with m
    calibrated for ``ComposedDpEvent([GaussianDpEvent(s_h), ParallelDpEvent([GaussianDpEvent(m)] * T)])``
    (the histogram sees every row once, the batches each row once: basic composition of the two
    stages). A re-readable stream is read three times: once at C to validate it (finite; within C
    with ``on_norm_violation="raise"``) before any charge, once for the histogram, once for the
    batches (memory as in one pass).

    Device arrays (array API dispatch, ``docs/array-api.md``): a PyTorch/CuPy/array-API array is
    validated, clipped, multiplied and decomposed (QR, SVD) in its namespace, on its device; the plan
    and the accountant stay on the host. The same mechanism, sensitivities and events; the noise is
    drawn on the device by :class:`~dpspectral.privacy._device_noise.DeviceNoise` (a seeded device
    generator: the same law, a different stream than NumPy's; the report's ``noise_source`` is
    ``"seeded-device"``; ``random_state="secure"`` is refused there). The initial frame and the secret
    permutation are drawn by the host generator, as on the NumPy path, then moved to the device.
    """
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=_OWNER, allowed_relations=(Relation.REPLACE_ONE,),
    )
    where = get_namespace_and_device(X, _OWNER)  # array API dispatch: (xp, device); NumPy: (None, None)
    noise = noise_source(random_state, like=X if where[0] is not None else None)
    share = clip_share or DEFAULT_CLIP_SHARE
    clip = plan_row_clip(budget, rel, C, share) if adaptive_clip and needs_two_passes_ok(X) else None
    if clip is not None:  # the whole cost from public inputs, before anything is read
        precheck(accountant, (clip.event, *_plan(budget, rel, 1, C, 1, True, clip)[0].events), rel)
    source, sizes = _source(X, k, C, n_samples, on_norm_violation, int(n_batches), float(warmup_fraction),
                            show_progress, where)
    block = _block_size(block_size, source.d, source.k)
    plan, multiplier = _plan(budget, rel, block, C, len(sizes), source.in_memory, clip)
    diagnostics: dict[str, Any] = {}
    n_rows = source.n if source.in_memory else None  # for the report (public under replace-one)
    if clip is None:
        with release(plan, accountant, noise, n_rows=n_rows) as releaser:  # a bad block of a stream: failed
            W, used = _run(source, sizes, block, releaser, where)
            report = releaser.report(mechanism=_OWNER, budget=budget, calibration=calibration,
                                     notes=plan.notes, stacklevel=4)
    else:
        staged = clip.staged(accountant, _OWNER, plan.events, n_rows=n_rows)
        nu = noise_per_clip2(multiplier, source.d, block, sizes)
        source, r = _adaptive_clip_stage(source, clip, staged, noise, lambda n: nu)
        plan = at_clip(plan, r, C, {_BATCH: 2}, clip_note(r, C, share))  # the same multiplier, at r
        with staged.stage(plan, noise) as releaser:
            W, used = _run(source, sizes, block, releaser, where)
            report = releaser.report(mechanism=_OWNER, budget=budget, calibration=calibration,
                                     notes=plan.notes, stacklevel=4, events=[clip.event, *plan.events])
        diagnostics = {"clip": r, "histogram_noise_std": clip.release.scale}
    return SubspaceResult(
        components=fix_signs(W), values=None, privacy=report, n_samples=float(used),
        diagnostics={"noise_multiplier": multiplier, "noise_std": plan[_BATCH].scale,
                     "sensitivity": plan[_BATCH].sensitivity, "batch_sizes": tuple(sizes),
                     "n_batches": len(sizes), "block_size": block, **diagnostics},
    )
