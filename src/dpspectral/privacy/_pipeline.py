"""The release pipeline's first pieces: validate, then charge, then release; public randomness.

Every private computation follows one order, and this module holds the steps that every mechanism
shares so that none writes them again:

1. **validate** the whole input before anything is charged (:func:`validate_rows`): for an in-memory
   array (NumPy, ``np.memmap``, scipy.sparse, Dask) every row is checked, not only the rows a
   stochastic method happens to sample, so whether a fit is refused never depends on the random
   draw, and a refusal costs nothing;
2. **charge** the ledger with the planned events (:func:`charge`), which refuses before any noise is
   drawn when the ceiling would be exceeded;
3. **release**: the mechanism computes its statistics and draws its noise inside the ``charge``
   block. A failure there (a bad block of a stream that arrives after the charge, a numerical
   failure) is a *failed release*: it stays charged (the noise may already have touched the data)
   and the ledger records it as failed (:attr:`Accountant.failures`); it is never silently
   un-charged.

Error messages about the data say what kind of problem there is and how to fix it, never which rows
or values (:func:`not_finite_error`, :func:`norm_violation_error`): the position of a NaN or the number
of rows over the bound are facts about the private data, and an error message is an output.

Public randomness (a sketch that is published, the seed of a public sketch) never comes from the
secret generator: :func:`public_seed` draws it from OS entropy unless the caller declares a public
seed, so that nothing published reveals the generator that draws the noise.

**Streams: one rule for every method.** A *one-shot stream* (:func:`is_one_shot`: an iterator of row
blocks, such as a generator, or a stream that says it cannot be re-read) cannot be validated before the
charge: it is charged before its rows are read (only the first block's number of columns, a public fact
like an array's shape, is looked at first: :func:`open_one_shot`), and a failure decided by the data
after that (NaN or infinity, a row over the bound with ``on_norm_violation="raise"``, no rows) is a
failed release: it stays charged and the ledger marks it. Every other input (an array, a memmap, a
sparse or Dask array, a list of blocks, a callable returning a fresh iterator) is read, and so
validated, before the charge, so its refusal costs nothing. Mechanisms whose statistic is computed in
one pass take this order from :func:`read_then_release`; the row-by-row methods read inside the
charged block and validate an in-memory input first (:func:`validate_rows`). Every row read is
validated the same way, whether or not the method uses it.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import numbers
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._moments import accumulate
from .._rows import (
    NonPrivateDataError,
    _is_block_source,
    _page_releaser,
    as_numeric_2d,
    is_dask_array,
    is_one_shot,
    norm_violation_error,
    not_finite_error,
)
from . import _draws
from ._budget import Relation
from ._clipping import clip_threshold, norm_scale, scaled_row_norms

if TYPE_CHECKING:
    from ._accounting import Accountant
    from ._noise_base import NoiseSource

__all__ = [
    "NoisyRelease",
    "NonPrivateDataError",
    "ReleasePlan",
    "Releaser",
    "StagedRelease",
    "as_numeric_2d",
    "charge",
    "is_one_shot",
    "open_one_shot",
    "precheck",
    "release",
    "norm_violation_error",
    "not_finite_error",
    "public_seed",
    "read_then_release",
    "validate_rows",
]


def open_one_shot(X: Any, owner: str) -> tuple[Any, int | None]:
    """A one-shot stream, ready to be read after the charge, and its number of features.

    The first block is taken from the stream and put back in front of the rest; only its number of
    columns is looked at (a public fact, like an array's shape), never its values, so that a plan that
    depends on the width (and the check of ``k``) is settled before the charge. A stream with no block,
    or whose first block is not 2-D, is refused here (nothing charged: its format, not its values).
    Returns ``(stream, n_features)``; ``n_features`` is None for a stream that cannot be peeked.
    """
    inner = X if isinstance(X, Iterator) else getattr(X, "source", None)
    if not isinstance(inner, Iterator):
        return X, None
    first = next(inner, None)
    if first is None:
        raise ValueError(f"{owner}: the stream holds no block of rows (at least one row is required). "
                         "Nothing was charged.")
    shape = first.shape if hasattr(first, "shape") else np.shape(first)
    if len(shape) != 2:
        raise ValueError(f"{owner}: every block of a stream must be 2-D, of shape (n_rows, n_features); "
                         f"the first block has shape {tuple(shape)}. Nothing was charged.")
    rest = itertools.chain([first], inner)
    if inner is X:
        return rest, int(shape[1])
    opened = copy.copy(X)  # a wrapper of a one-shot iterator (a stream onto a device): the same, re-chained
    opened.source = rest
    return opened, int(shape[1])


def _is_stream(X: Any) -> bool:
    return _is_block_source(X) and not is_dask_array(X) and not isinstance(X, (list, tuple))


def validate_rows(
    X: Any,
    *,
    row_norm: float | None,
    on_norm_violation: str = "clip",
    owner: str = "dpspectral",
    center: np.ndarray | None = None,
) -> bool:
    """Check every row of an in-memory input before the ledger is charged.

    Checks: numeric, 2-D, finite, and (with ``on_norm_violation="raise"``) no row of norm above
    ``row_norm`` after subtracting the public ``center``. A list or tuple of blocks is checked block
    by block. The errors name the kind of problem, never a row or a value.

    Returns
    -------
    bool
        True when the whole input was checked; False for a one-shot stream (an iterator or a
        callable), which is read once, after the charge (see the module's note on streams).
    """
    if _is_stream(X):
        return False
    if is_dask_array(X):
        # 2-D, numeric, known width; then one task per row block (finite; rows above the bound
        # counted), the flags summed in a tree
        accumulate(X, row_norm=math.inf if row_norm is None else row_norm, center=center,
                   on_norm_violation="raise" if on_norm_violation == "raise" and row_norm is not None
                   else "clip",
                   want_sum=False, want_second=False, owner=owner)
        return True
    blocks: Sequence[Any] = X if isinstance(X, (list, tuple)) and X and not _is_scalar_row(X) else [X]
    for block in blocks:
        _validate_block(block, row_norm=row_norm, on_norm_violation=on_norm_violation, owner=owner,
                        center=center)
    return True


def _is_scalar_row(X: Sequence[Any]) -> bool:
    """A list of numbers or of lists (array-like data), not a list of 2-D blocks."""
    first = X[0]
    return isinstance(first, numbers.Number) or (
        isinstance(first, (list, tuple)) and not hasattr(first, "ndim")
    )


def _validate_block(
    block: Any, *, row_norm: float | None, on_norm_violation: str, owner: str,
    center: np.ndarray | None,
) -> None:
    # norms compared on rows scaled by a public power of two (exact; 1 for most bounds): see clipping
    scale = 1.0 if row_norm is None else norm_scale(row_norm)
    if sp.issparse(block):
        values = np.asarray(block.data)
        if values.dtype.kind not in "biuf":
            raise TypeError(f"{owner} needs numeric data; got a sparse matrix of dtype {values.dtype}.")
        if not np.isfinite(values).all():
            raise not_finite_error(owner)
        if on_norm_violation == "raise" and row_norm is not None:
            dense_center = center is not None and np.any(center)
            norms = scaled_row_norms(np.asarray(block.toarray(), dtype=float) - center if dense_center
                                     else sp.csr_matrix(block, dtype=np.float64), scale)
            if norms.size and float(norms.max()) > clip_threshold(row_norm * scale):
                raise norm_violation_error(owner, row_norm)
        return
    arr = as_numeric_2d(block, owner)
    step = max(1, (1 << 22) // max(arr.shape[1], 1))  # ~32 MB of float64 at a time
    release = _page_releaser(block)  # a memmap: its pages dropped once checked (the file stays mapped)
    for a in range(0, arr.shape[0], step):
        part = np.asarray(arr[a:a + step], dtype=np.float64)
        if center is not None:
            part = part - center
        if not np.isfinite(part).all():
            raise not_finite_error(owner)
        if on_norm_violation == "raise" and row_norm is not None:
            if scale == 1.0:
                with np.errstate(over="ignore"):  # a finite row whose square overflows is over the bound
                    norms = np.sqrt(np.einsum("ij,ij->i", part, part))
            else:
                norms = scaled_row_norms(part, scale)
            if norms.size and float(norms.max()) > clip_threshold(row_norm * scale):
                raise norm_violation_error(owner, row_norm)
        if release is not None:
            release(a, a + part.shape[0])


@contextlib.contextmanager
def charge(
    accountant: Accountant | None,
    events: Sequence[dp_accounting.DpEvent],
    relation: Relation,
    label: str,
) -> Iterator[list[dp_accounting.DpEvent]]:
    """Charge ``events`` to ``accountant`` (if any), then run the release in the ``with`` block.

    The charge is refused with :class:`BudgetExceededError` before the block runs (nothing drawn,
    nothing recorded). An exception inside the block marks the ledger entry as a failed release: it
    stays charged, and the exception propagates.

    Yields
    ------
    list of DpEvent
        The events recorded (for the result's privacy report).
    """
    from ._accounting import compose

    index = None
    if accountant is not None:
        accountant.spend(compose(events), relation, label=label)
        index = len(accountant.entries) - 1
    try:
        yield list(events)
    except BaseException as exc:
        if accountant is not None and index is not None:
            accountant.mark_failed(index, type(exc).__name__)
        raise


def public_seed(seed: Any = None) -> int:
    """A seed for public randomness (a published sketch), independent of the secret generator.

    ``seed=None`` (default) draws 63 bits from the operating system's entropy; an int is a seed the
    caller declares public (for reproducible sketches). Never derive it from ``random_state``: a
    published seed drawn from the secret generator lets anyone recover that generator by search and
    subtract the noise.
    """
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise ValueError(
            f"A public seed must be None (OS entropy) or a non-negative int. Got {seed!r} instead."
        )
    return int(seed)


# --- plans: the releases of a run, fixed from public inputs before the data are read ------------------


@dataclass(frozen=True)
class NoisyRelease:
    """One additive-noise release of a plan.

    Attributes
    ----------
    name : str
        What is released (``"scatter"``, ``"sum"``, ``"count"``, ``"step"``...): the mechanism asks the
        :class:`Releaser` for noise by this name.
    kind : {"gaussian", "laplace"}
        The noise distribution.
    scale : float
        The Gaussian's standard deviation, or the Laplace scale ``b``.
    sensitivity : float or None
        The L2 (Gaussian) or L1 (Laplace) sensitivity of the released statistic under the plan's
        relation, derived in the mechanism's Privacy section (``None`` only for uncertified paper
        calibrations; the secure noise source refuses those).
    """

    name: str
    kind: Literal["gaussian", "laplace"]
    scale: float
    sensitivity: float | None = None


@dataclass(frozen=True)
class ReleasePlan:
    """Everything a run releases, computed from public inputs only, before the data are read.

    ``events`` are the accounting events charged (exactly the releases made: a release repeated ``T``
    times is one ``SelfComposedDpEvent``); ``releases`` are the additive-noise releases the mechanism
    may draw, by name. Mechanisms whose randomness is not additive noise (the exponential mechanism,
    sampling) declare their events and no ``releases``; they draw through the releaser's named draws
    (:meth:`Releaser.exponential_choice`, :meth:`Releaser.poisson_sample`, ...).
    """

    label: str
    relation: Relation
    events: tuple[dp_accounting.DpEvent, ...]
    releases: tuple[NoisyRelease, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        names = [r.name for r in self.releases]
        if len(set(names)) != len(names):
            raise ValueError(f"A release plan names each release once; got {names}.")

    def __getitem__(self, name: str) -> NoisyRelease:
        for r in self.releases:
            if r.name == name:
                return r
        raise KeyError(
            f"{self.label}: no release named {name!r} in its plan (planned: "
            f"{', '.join(r.name for r in self.releases) or 'none'}). Noise is drawn only for planned "
            "releases."
        )


class Releaser:
    """The noise of a charged plan: handed to the mechanism inside :func:`release`, closed after.

    Noise is drawn only by a planned release's name, with the planned scale; no draw is possible
    before the charge or after the block ends.
    """

    def __init__(self, plan: ReleasePlan, noise: NoiseSource) -> None:
        self.plan = plan
        self.noise = noise
        self._open = True
        #: The number of rows when it was known before the charge (an input read first by
        #: :func:`read_then_release`); passed to the report, which uses it only under replace-one
        #: neighbours, where it is public (:mod:`dpspectral.privacy._guardrails`).
        self.n_rows: int | None = None

    def _require_open(self, what: str) -> None:
        """Refuse ``what`` (a draw, a restated plan) once this releaser's block has ended."""
        if not self._open:
            raise RuntimeError(f"{self.plan.label}: {what} after its release block ended.")

    @contextlib.contextmanager
    def _inner(self, sub: Releaser) -> Iterator[Releaser]:
        """``sub`` as a block inside this one's: closed when the block ends."""
        try:
            yield sub
        finally:
            sub._open = False

    def _spec(self, name: str) -> NoisyRelease:
        self._require_open("noise drawn")
        return self.plan[name]

    @classmethod
    def of_charged_plan(cls, plan: ReleasePlan, noise: NoiseSource) -> Releaser:
        """A releaser for a plan already charged by :func:`release` (continual release).

        For a mechanism that charges the releases of its whole horizon once, at creation, and draws
        each step's noise later (the binary tree of ``ContinualLRF``): only a plan that went through
        :func:`release` may be passed here; the draws stay limited to its planned releases.
        """
        return cls(plan, noise)

    @property
    def generator(self) -> np.random.Generator:
        """The secret generator, for randomness other than additive noise (sampling, shuffles)."""
        self._require_open("randomness drawn")
        return self.noise.generator

    # --- named draws: randomness other than additive noise (sampling, shuffles, starting points) ---

    def normal(self, loc: float, scale: float, size: Any) -> np.ndarray:
        """Normal draws ``N(loc, scale^2)`` of shape ``size`` from the secret generator."""
        draws: np.ndarray = self.generator.normal(loc, scale, size=size)
        return draws

    def standard_normal(self, size: Any) -> np.ndarray:
        """Standard normal draws of shape ``size`` (a random start, a secret sketch)."""
        draws: np.ndarray = self.generator.standard_normal(size)
        return draws

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of ``range(n)`` (a secret order of the rows).

        Exact (:func:`~dpspectral.privacy._draws.permutation`: Fisher-Yates on the source's integer
        words); NumPy's ``permutation`` with the float source.
        """
        src = self._words()
        if src is None:
            return self.generator.permutation(n)
        return _draws.permutation(src, n)

    def poisson_sample(self, n: int, q: float) -> np.ndarray:
        """The sorted indices of a Poisson sample of ``range(n)``, each row kept with probability ``q``.

        Exact (:func:`~dpspectral.privacy._draws.poisson_sample`: one ``Bernoulli(q)`` per row from
        integer words); with the float source, NumPy's binomial count and that many distinct indices.
        """
        src = self._words()
        if src is not None:
            return _draws.poisson_sample(src, n, q)
        b = int(self.generator.binomial(n, q))
        idx: np.ndarray = self.generator.choice(n, size=b, replace=False) if b else np.empty(0, np.int64)
        idx.sort()
        return idx

    def exponential_choice(self, scores: np.ndarray, scale: float) -> int:
        """The exponential mechanism: index ``i`` with probability proportional to
        ``exp(scores[i] / scale)``.

        Exact (:func:`~dpspectral.privacy._draws.exponential_choice`); with the float source,
        report-noisy-max with NumPy's Gumbel noise (the same law, up to floating point).
        """
        src = self._words()
        if src is not None:
            return _draws.exponential_choice(src, scores, scale)
        return int(np.argmax(scores / scale + self.gumbel(0.0, 1.0, np.shape(scores))))

    def _words(self) -> Any:
        """The word source of the exact draws (None for the float source), after the open check."""
        self.generator  # noqa: B018 - refuses a draw after the release block ended
        return _draws.word_source(self.noise)

    def integers(self, low: int, high: int) -> int:
        """A uniform integer in ``[low, high)`` (the seed of a secret stream)."""
        return int(self.generator.integers(low, high))

    def gumbel(self, loc: float, scale: float, size: Any) -> np.ndarray:
        """Gumbel draws of location ``loc`` and scale ``scale``, shape ``size`` (report-noisy-max)."""
        draws: np.ndarray = self.generator.gumbel(loc, scale, size=size)
        return draws

    def random(self, size: Any) -> np.ndarray:
        """Uniform draws in ``[0, 1)`` of shape ``size`` (an acceptance test of rejection sampling)."""
        draws: np.ndarray = self.generator.random(size)
        return draws

    @contextlib.contextmanager
    def independent(self) -> Iterator[Releaser]:
        """This releaser with a noise stream of its own, for a release whose number of draws is private.

        A seeded source gives the block a generator seeded by one draw of this one's stream (the draws
        after the block do not depend on how many were made inside it); a source with no seed (OS
        entropy) is already independent and serves as is. The same plan and the same block: it closes
        when the block ends.
        """
        from ._noise import ExactNoise, SeededNoise

        noise = self.noise
        if isinstance(noise, (ExactNoise, SeededNoise)):
            noise = type(noise)(np.random.default_rng(self.integers(0, 2**63 - 1)))
        sub = Releaser(self.plan, noise)
        sub.n_rows = self.n_rows
        with self._inner(sub):
            yield sub

    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words (``uint64``): the seed of a compiled secret stream (an SFC64 state)."""
        return self.generator.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)

    def spawn(self, n: int) -> list[Any]:
        """``n`` independent secret random states for inner runs (each a mechanism's ``random_state``).

        Seeded: generators on the children of one ``SeedSequence`` seeded by one draw of this
        generator; secure: ``"secure"`` (OS entropy) for each. Serve a part of this charged release
        with :meth:`part`.
        """
        if getattr(self.noise, "name", "") == "secure":
            return ["secure"] * n
        seeds = np.random.SeedSequence(int(self.generator.integers(2**63))).spawn(n)
        return [np.random.default_rng(seed) for seed in seeds]

    def part(self, plan: ReleasePlan, random_state: Any) -> Releaser:
        """A releaser of ``plan``, a part of this charged release, drawing from ``random_state``.

        ``plan``'s cost must be included in the events charged for this release (its own events are
        not charged again); ``random_state`` is one of :meth:`spawn`'s (secure: the same source).
        """
        from ._noise import noise_source

        self._require_open("randomness drawn")
        noise = self.noise if random_state == "secure" else noise_source(random_state)
        return Releaser(plan, noise)

    @property
    def draws_in_bulk(self) -> bool:
        """Whether the noise source is a seeded generator, whose draws can be made in bulk with the same
        law: its Gaussian release is ``std`` times i.i.d. standard normals (drawable by a compiled
        sampler seeded from :meth:`words`) and its Laplace histograms are noised on their occupied bins
        in one vector draw. False for the secure source (exact draws, one at a time, on every bin)."""
        from ._noise import SeededNoise

        return type(self.noise) is SeededNoise

    @property
    def events(self) -> list[dp_accounting.DpEvent]:
        """The events charged for this plan (for the privacy report)."""
        return list(self.plan.events)

    def add(self, name: str, statistic: Any) -> Any:
        """``statistic`` plus the planned noise of release ``name`` (Gaussian or Laplace)."""
        spec = self._spec(name)
        if spec.kind == "laplace":
            return self.noise.add_laplace(statistic, spec.scale, spec.sensitivity)
        return self.noise.add_gaussian(statistic, spec.scale, spec.sensitivity)

    def add_symmetric(self, name: str, matrix: np.ndarray, shape: str = "iid") -> np.ndarray:
        """``matrix`` plus symmetric Gaussian noise of release ``name`` (upper triangle released).

        ``shape``: ``"iid"`` (the release's sensitivity bounds the upper triangle's L2 change) or
        ``"goe"`` (it bounds the Frobenius change; off-diagonal noise ``scale / sqrt(2)``; see
        :meth:`~dpspectral.privacy._noise.NoiseSource.add_symmetric_gaussian`).
        """
        spec = self._spec(name)
        if spec.kind != "gaussian":
            raise ValueError(f"{self.plan.label}: release {name!r} is not Gaussian.")
        return self.noise.add_symmetric_gaussian(matrix, spec.scale, spec.sensitivity, shape=shape)

    def gaussian(self, name: str, size: Any) -> np.ndarray:
        """The planned Gaussian noise of release ``name`` alone (for noise used inside a computation)."""
        spec = self._spec(name)
        return self.noise.gaussian(spec.scale, size, spec.sensitivity)

    def restate(self, plan: ReleasePlan) -> None:
        """Serve ``plan`` instead: the charged plan restated with a fact learnt while reading.

        For a one-shot stream, charged before it is read (:func:`read_then_release`): a release whose
        scale depends on ``n`` (an average over the rows) is stated once ``n`` is known. The events and
        the relation must be those charged; anything else is refused (inside the block: a failed
        release, still charged).
        """
        self._require_open("plan restated")
        if tuple(plan.events) != tuple(self.plan.events) or plan.relation is not self.plan.relation:
            raise RuntimeError(
                f"{self.plan.label}: a restated plan must record the events and relation charged."
            )
        if getattr(self.noise, "name", "") == "secure":
            _check_secure_plan(plan)
        self.plan = plan

    @contextlib.contextmanager
    def adapted(self, name: str, *, scale: float, sensitivity: float) -> Iterator[Releaser]:
        """Release ``name`` at a sensitivity learnt from an earlier release of the same run.

        The plan declared ``name`` at its worst-case sensitivity, with the multiplier ``scale /
        sensitivity`` its event records; an earlier release of the run can give a smaller bound (DPSR's
        phase 2: ``2 ||Phi~||_2^2 ||dA||`` with ``Phi~`` released, at most ``2 ||dA|| / xi``). Inside the
        charged block this yields a releaser for ``name`` at that sensitivity and the *same*
        multiplier: the charge and the events are unchanged (nothing is charged again), only the noise
        scale follows the sensitivity. A larger sensitivity or another multiplier is refused. (For a
        later release whose *cost* depends on an earlier one, use :class:`StagedRelease`.)
        """
        planned = self._spec(name)
        if planned.sensitivity is None or not 0 < sensitivity <= planned.sensitivity * (1 + 1e-12) or (
                abs(scale / sensitivity - planned.scale / planned.sensitivity)
                > 1e-9 * planned.scale / planned.sensitivity):
            raise ValueError(
                f"{self.plan.label}: release {name!r} can be adapted only to a smaller sensitivity at "
                "the planned noise multiplier (the events charged record that multiplier)."
            )
        spec = NoisyRelease(name, planned.kind, scale, sensitivity)
        sub = Releaser(ReleasePlan(self.plan.label, self.plan.relation, self.plan.events, (spec,)),
                       self.noise)
        with self._inner(sub):
            yield sub

    def report(self, *, mechanism: str, budget: Any, calibration: str, events: Any = None,
               **kwargs: Any) -> Any:
        """The privacy report of this release (:func:`certify_release`), naming the noise source."""
        from ._accounting import certify_release

        return certify_release(
            self.events if events is None else events, mechanism=mechanism, budget=budget,
            relation=self.plan.relation, calibration=calibration, noise_source=self.noise.name,
            **{"n_rows": self.n_rows, **kwargs},
        )


def precheck(accountant: Accountant | None, events: Sequence[dp_accounting.DpEvent],
             relation: Relation) -> None:
    """Refuse now (nothing read, nothing recorded) if ``events`` would exceed the ceiling.

    For a mechanism whose plan needs a fact learnt while reading (``n`` of a stream): it checks the
    cost it can compute from public inputs before the first read.
    """
    from ._accounting import compose

    if accountant is not None:
        accountant.check(compose(events), relation)


def _check_secure_plan(plan: ReleasePlan) -> None:
    """The secure source needs every release's sensitivity and a positive scale: refuse before the charge."""
    for r in plan.releases:
        if r.sensitivity is None or not math.isfinite(r.sensitivity) or r.sensitivity < 0 or (
                r.sensitivity > 0 and not (math.isfinite(r.scale) and r.scale > 0)):
            raise ValueError(
                f"{plan.label}: random_state='secure' needs each release's sensitivity and a positive "
                f"finite noise scale; release {r.name!r} has sensitivity {r.sensitivity!r} and scale "
                f"{r.scale!r} (an uncertified paper calibration declares none). Nothing was charged."
            )


@contextlib.contextmanager
def release(plan: ReleasePlan, accountant: Accountant | None, noise: NoiseSource, *,
            n_rows: int | None = None) -> Iterator[Releaser]:
    """Charge ``plan`` to ``accountant``, then hand the mechanism its noise (a :class:`Releaser`).

    The one order of every private computation: the plan was built from public inputs; the charge is
    refused before anything is drawn (:func:`charge`); the noise exists only inside the block; an
    exception inside marks the ledger entry as a failed release (it stays charged); a plan of no events
    (nothing to release) charges nothing and writes no entry. ``n_rows``, the
    number of rows when it was known before the charge, goes to the report (:attr:`Releaser.n_rows`).
    """
    if getattr(noise, "name", "") == "secure":
        _check_secure_plan(plan)
    releaser = Releaser(plan, noise)
    releaser.n_rows = None if n_rows is None else int(n_rows)
    charged = (charge(accountant, plan.events, plan.relation, plan.label) if plan.events
               else contextlib.nullcontext())  # a plan of no events releases nothing: no ledger entry
    try:
        with charged:
            yield releaser
    finally:
        releaser._open = False


@contextlib.contextmanager
def read_then_release(
    X: Any,
    read: Callable[[Any], Any],
    plan_for: Callable[[int | None, int | None], ReleasePlan],
    accountant: Accountant | None,
    noise: NoiseSource,
    *,
    owner: str,
) -> Iterator[tuple[Any, Releaser]]:
    """The one order of a release whose statistic is computed in one pass over ``X``.

    ``read(X)`` makes that pass (it validates every block it reads) and returns what it computed, with
    the public facts ``n`` and ``d``; ``plan_for(n, d)`` builds the plan from public inputs and those
    facts (``None`` when not known yet). Yields ``(what read returned, the Releaser)``.

    * Anything that can be read before the charge (in memory, a list of blocks, a callable returning
      a fresh iterator) is read first: a refusal decided by the data costs nothing; then
      ``plan_for(n, d)`` is charged (:func:`release`).
    * A one-shot stream (:func:`is_one_shot`) cannot be: ``plan_for(None, d)`` (``d``, the first
      block's width: :func:`open_one_shot`) is charged before its rows are read, and ``read`` runs
      inside the charged block, so a failure decided by the data (NaN, a row over the bound with
      ``on_norm_violation="raise"``, no rows) stays charged and is marked failed. The plan is then
      restated with ``n`` (:meth:`Releaser.restate`: the same events).
    """
    if not is_one_shot(X):
        done = read(X)
        with release(plan_for(done.n, done.d), accountant, noise, n_rows=done.n) as releaser:
            yield done, releaser
        return
    stream, d = open_one_shot(X, owner)
    with release(plan_for(None, d), accountant, noise) as releaser:
        done = read(stream)
        releaser.restate(plan_for(done.n, done.d))
        yield done, releaser


class StagedRelease:
    """A run of several releases, each planned from what the earlier ones released.

    The cost of every stage is declared up front from public inputs (``stage_events``) and the whole
    is checked against the ceiling before stage one (fail closed: a run that cannot finish releases
    nothing). Each stage's plan may then take its *scales* from earlier released values (an adaptive
    clip from a private quantile: the clip changes the sensitivity and the noise with it, not the
    noise-to-sensitivity ratio the events record); its events must equal the declared ones.
    """

    def __init__(self, accountant: Accountant | None, relation: Relation, label: str,
                 stage_events: Sequence[Sequence[dp_accounting.DpEvent]], *,
                 n_rows: int | None = None) -> None:
        self.accountant = accountant
        self.n_rows = n_rows  # known before the charge: for the reports (:attr:`Releaser.n_rows`)
        self.relation = relation
        self.label = label
        self.stage_events = [tuple(ev) for ev in stage_events]
        self._next = 0
        precheck(accountant, [e for ev in self.stage_events for e in ev], relation)

    @contextlib.contextmanager
    def stage(self, plan: ReleasePlan, noise: NoiseSource) -> Iterator[Releaser]:
        """Release the next stage (in order) with ``plan``, whose events must be the declared ones."""
        if self._next >= len(self.stage_events):
            raise RuntimeError(f"{self.label}: all {len(self.stage_events)} declared stages were released.")
        if tuple(plan.events) != self.stage_events[self._next] or plan.relation is not self.relation:
            raise ValueError(
                f"{self.label}: stage {self._next + 1}'s plan does not match the cost declared up "
                "front (its events or relation differ)."
            )
        self._next += 1
        with release(plan, self.accountant, noise, n_rows=self.n_rows) as releaser:
            yield releaser

    @property
    def events(self) -> list[dp_accounting.DpEvent]:
        """The events of the stages released so far."""
        return [e for ev in self.stage_events[: self._next] for e in ev]
