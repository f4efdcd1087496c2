"""DPdisPCA (Imtiaz and Sarwate, ICASSP 2018): differentially private distributed PCA, end to end.

``dpdispca(sites, k, ...)`` runs Algorithm 1 of the paper: every site releases a noisy second-moment
matrix once (Analyze Gauss) and sends the aggregator only its rank-R proxy ``P_s`` (or, with
``variant="full"``, the noisy matrix itself); the aggregator releases the top-K eigenvectors of
``A_c = sum_s w_s P_s P_s^T``. The sites run on an engine (:mod:`~dpspectral.distributed._engines`):
in-process, or on Dask workers where the sites' data live. A site that raises, whose worker dies, or that
does not answer within the timeout of the run's :class:`SiteFailurePolicy` is left out with a
:class:`SiteFailureWarning` naming it and giving a data-independent reason (never the text of the site's
exception, a row, a value, a count or a timing); the release uses the remaining sites and the result lists
which sites contributed.

Baselines of the paper: :func:`pooled_pca` (one Analyze Gauss on all rows, i.e. a trusted curator),
:func:`local_pca` (one site alone) and ``variant="full"`` (sites send their noisy ``A_hat_s``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._constraints import (
    NONE,
    PRIVACY_PARAMETERS,
    RANDOM_STATE,
    Interval,
    Options,
    Types,
    check_choice,
    check_params,
)
from .._options import folded
from .._results import SubspaceResult
from .._rows import as_numeric_array, check_dask_columns, is_dask_array
from .._validation import as_generator, check_mechanism_inputs, check_n_components
from ..privacy._accounting import Accountant, AccountingMethod, ParallelDpEvent, compose
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation
from ..privacy._noise import seeded_source_name
from ..privacy._noise_base import NoiseSource
from ..privacy._pipeline import ReleasePlan, Releaser, precheck, validate_rows
from ..privacy._template import RunSettings, charge_at_creation
from ._aggregator import Aggregate, aggregate
from ._engines import DaskEngine, Engine, InProcessEngine, SiteOutcome, is_dask_collection, is_dask_future
from ._secure import (
    MaskedMessage,
    SecureAggregationError,
    SecureRound,
    advertise_step,
    check_advert,
    coalition_epsilon,
    masking_neighbours,
    message_step,
    new_round_id,
    plan_digest,
    quantisation,
    require_cryptography,
    share_plan,
    unmask,
)
from ._site import SECURE, SitePayload, SitePlan, SiteSeed, Spectrum, Variant, site_release_plan, site_step

__all__ = [
    "DistributedResult",
    "SiteFailureError",
    "SiteFailurePolicy",
    "SiteFailureWarning",
    "SiteReport",
    "dpdispca",
    "local_pca",
    "pooled_pca",
    "spawn_site_seeds",
]

OnSiteFailure = Literal["warn", "raise"]


class SiteFailureWarning(UserWarning):
    """A site was left out of a distributed release (it raised, its worker died, or it timed out)."""


class SiteFailureError(RuntimeError):
    """Too few sites answered (or ``on_failure="raise"``); nothing was released by the aggregator."""


@dataclass(frozen=True)
class SiteFailurePolicy:
    """What a distributed run does about sites that fail: how long it waits, how many must answer, and
    whether one failure stops the run.

    Pass ``site_failure=SiteFailurePolicy(...)`` to :func:`dpdispca` or
    :class:`~dpspectral.distributed.DistributedDPPCA`; None uses these defaults. A site fails when its
    step raises (bad rows at the site included), its worker dies, or it misses ``timeout``; a failed site
    is left out with a :class:`SiteFailureWarning` naming it, and the release uses the others (each
    site's guarantee is its own, so the guarantee is unchanged).

    Parameters
    ----------
    timeout : float or None, default=None
        Seconds after dispatch by which a site must answer, in (0, inf); later sites are left out. None
        waits for every site. Whether a site is late can depend on its rows (docs/privacy-caveats.md).
    min_sites : int, default=1
        Fewest contributing sites for a release, in [1, S]; fewer raise :class:`SiteFailureError` after
        the charge (the run stays charged, marked failed in the ledger, and nothing is released).
    on_failure : {"warn", "raise"}, default="warn"
        ``"warn"``: leave a failed site out with a :class:`SiteFailureWarning`; ``"raise"``: fail the run
        with :class:`SiteFailureError` on any failed site.
    """

    timeout: float | None = None
    min_sites: int = 1
    on_failure: OnSiteFailure = "warn"


#: The fields of :class:`SiteFailurePolicy`, checked as ``site_failure.<field>`` (``min_sites <= S``
#: once the sites are read).
SITE_FAILURE_CONSTRAINTS: dict[str, Any] = {
    "site_failure.timeout": [NONE, Interval(0, None, "neither")],
    "site_failure.min_sites": Interval(1, None, "left", integer=True),
    "site_failure.on_failure": Options(("warn", "raise")),
}


def site_failure_policy(value: Any, owner: str) -> SiteFailurePolicy:
    """``site_failure`` checked: None is the defaults; a :class:`SiteFailurePolicy` has its fields checked."""
    if value is None:
        return SiteFailurePolicy()
    if not isinstance(value, SiteFailurePolicy):
        raise TypeError(f"The 'site_failure' parameter of {owner} must be a SiteFailurePolicy or None. Got "
                        f"{type(value).__name__} instead.")
    check_params(SITE_FAILURE_CONSTRAINTS, {f"site_failure.{f.name}": getattr(value, f.name)
                                            for f in dataclasses.fields(value)}, owner)
    return value


@dataclass(frozen=True)
class SiteReport:
    """Public facts about one site's part in a run.

    Attributes
    ----------
    site : int
        Index of the site in the input.
    status : {"ok", "failed", "timeout", "lost"}
        ``"ok"``: contributed. ``"failed"``: its step raised. ``"lost"``: its worker died.
        ``"timeout"``: no answer within the policy's ``timeout`` (:class:`SiteFailurePolicy`).
    contributed : bool
    bytes_sent : int
        Bytes of released numbers the site sent to the aggregator (0 when nothing arrived).
    n_samples : int or None
        N_s when public (replace-one neighbours) and known.
    worker : str or None
        The Dask worker that ran the site's step.
    error : str or None
        Why the site is missing: a data-independent reason (the kind of problem, or a generic text;
        :func:`~dpspectral.distributed._site.failure_reason`), never a row, value, count or timing.
    noise_std : float or None
        The standard deviation of the noise the site drew on each entry of its scatter ``S_s`` (on
        ``A_s = S_s / N_s`` it is ``noise_std / N_s``): the planned scale, or a larger one where the
        rounding of the site's own sum needs it (more rows than the plan assumes under replace-one, a
        Dask array of several chunks), with the same noise multiplier. A fact of the site's plan and its
        input's kind (and its public N_s under replace-one), never of its rows. None when nothing arrived,
        and under secure aggregation (the sites add shares of one pooled noise:
        ``diagnostics["share_noise_std"]``).

    No timing is reported: how long a site took depends on its private rows.
    """

    site: int
    status: str
    bytes_sent: int = 0
    n_samples: int | None = None
    worker: str | None = None
    error: str | None = None
    noise_std: float | None = None

    @property
    def contributed(self) -> bool:
        """Whether the site's release entered ``A_c``."""
        return self.status == "ok"


@dataclass(frozen=True)
class DistributedResult(SubspaceResult):
    """A :class:`~dpspectral.SubspaceResult` of a distributed run, with one :class:`SiteReport` per site.

    ``values`` and ``total`` are on the scale of the pooled scatter ``sum_i x_i x_i^T`` of the contributing
    sites (the eigenvalues of ``A_c`` times ``N'``, their number of rows, when ``A_c`` is normalised).
    """

    sites: tuple[SiteReport, ...] = ()

    @property
    def contributing_sites(self) -> tuple[int, ...]:
        """Indices of the sites whose release entered ``A_c``."""
        return tuple(r.site for r in self.sites if r.contributed)

    @property
    def failed_sites(self) -> dict[int, str]:
        """Site index -> why it was left out."""
        return {r.site: f"{r.status}: {r.error}" for r in self.sites if not r.contributed}

    @property
    def bytes_sent(self) -> dict[int, int]:
        """Site index -> bytes of released numbers it sent."""
        return {r.site: r.bytes_sent for r in self.sites}

    @property
    def site_noise_std(self) -> dict[int, float | None]:
        """Site index -> the standard deviation of the noise it drew on its scatter (:class:`SiteReport`)."""
        return {r.site: r.noise_std for r in self.sites}


# ---------------------------------------------------------------------------------------------------
# inputs


def _is_secure(random_state: Any) -> bool:
    return isinstance(random_state, str) and random_state == SECURE


def _seed_root(random_state: Any) -> np.random.SeedSequence | str:
    """The run's root ``SeedSequence`` (read once from ``random_state``), or :data:`SECURE`."""
    if _is_secure(random_state):
        return SECURE
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator | np.random.RandomState):
        rng = as_generator(random_state)
        return np.random.SeedSequence([int(x) for x in rng.integers(0, 2**32, size=4)])
    as_generator(random_state)  # validation: None or a non-negative int
    return np.random.SeedSequence(None if random_state is None else int(random_state))


def spawn_site_seeds(random_state: Any, n_sites: int) -> list[SiteSeed]:
    """One independent ``SeedSequence`` per site, from ``SeedSequence(random_state).spawn(n_sites)``.

    ``random_state``: None (fresh entropy), an int, a ``SeedSequence`` (spawned: a second call gives new
    children) or a ``Generator`` (64 bits of entropy drawn from it); ``"secure"``: every site gets
    ``"secure"`` and draws from its own OS entropy with exact samplers (nothing to reproduce).
    """
    root = _seed_root(random_state)
    return [SECURE] * n_sites if isinstance(root, str) else list(root.spawn(n_sites))


def _is_dask_array(X: Any) -> bool:
    """A ``dask.array.Array`` (a ``Delayed`` answers every attribute, so the type's name is checked)."""
    return is_dask_array(X) and type(X).__name__ == "Array"


def _check_local_site(X: Any, s: int, owner: str, *, empty_ok: bool) -> tuple[Any, int, int]:
    """Structure of an in-memory site: 2-D, numeric, at least one feature, and at least one row unless
    ``empty_ok`` (add/remove neighbours, where N_s is private, or a list's entry, whose rows are checked
    at its site). Returns (data, n, d); never copies a float64 array. The values are checked by
    :func:`validate_rows`: before the charge for one array and the pooled baseline's blocks, at the site
    for a list's entries (:func:`_list_sites`)."""
    where = f"The 'sites' parameter of {owner}: site {s}"
    if sp.issparse(X):
        data = sp.csr_matrix(X)
        if data.dtype.kind not in "biuf":
            raise TypeError(f"{where} must be numeric. Got dtype {data.dtype} instead.")
    else:
        data = as_numeric_array(X, where, ndim=None, convert_object=False)  # the refusal quotes no cell
        if data.ndim != 2:
            raise ValueError(f"{where} must be a 2-D array of shape (n_samples, n_features). Got a "
                             f"{data.ndim}-D array instead.")
    n, d = data.shape
    if d == 0:
        raise ValueError(f"{where} must hold at least one feature.")
    if n == 0 and not empty_ok:
        raise ValueError(f"{where} must hold at least one row (N_s is public under replace-one "
                         "neighbours; under add/remove an empty site is allowed).")
    return data, int(n), int(d)


def _check_n_sites(n_sites: Any, n: int, owner: str, *, empty_ok: bool) -> int:
    """``n_sites`` in [1, n]; under add/remove (``empty_ok``: n private) only ``>= 1``, so the check reads
    only n_sites, and the message does not quote n."""
    upper = None if empty_ok else n
    check_params({"n_sites": Interval(1, upper, "both" if upper is not None else "left", integer=True)},
                 {"n_sites": n_sites}, owner)
    return int(n_sites)


def _split_rows(X: Any, n_sites: int) -> list[Any]:
    """Contiguous near-equal row blocks (replace-one: n is public and a replaced row keeps its position,
    so a neighbour changes one block)."""
    bounds = np.linspace(0, X.shape[0], int(n_sites) + 1).round().astype(int)
    return [X[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _random_split(X: Any, n_sites: int, rng: np.random.Generator) -> list[Any]:
    """Add/remove: every row's site is an independent uniform draw from ``rng`` (one ``rng.random()`` per
    row, in row order), never its position.

    A split by position moves rows across every later boundary when a row is added or removed (n is
    private), so about half the sites would change. Here the rows' draws are i.i.d. and independent of
    the data: for a row added or removed, the other rows' sites have the same joint law in both data sets,
    and coupling them leaves every site but the one holding that row unchanged, so the parallel
    composition over sites holds (each output is a mixture over the draws of (epsilon, delta)-close
    pairs). The draws come from a stream of the run's secret randomness and are never output. Each site
    gets a copy of its rows, in their original order.
    """
    n = int(X.shape[0])
    site = np.minimum((rng.random(n) * n_sites).astype(np.intp), n_sites - 1)
    order = np.argsort(site, kind="stable")
    cuts = np.cumsum(np.bincount(site, minlength=n_sites))[:-1]
    return [X[rows] for rows in np.split(order, cuts)]


def _partition_stream(root: np.random.SeedSequence | str,
                      n_sites: int) -> tuple[np.random.Generator, list[SiteSeed]]:
    """The add/remove partition's generator and the sites' seeds: child ``n_sites`` of the run's
    ``SeedSequence`` (spawned with the sites' children 0..S-1, so site s keeps child s), or OS entropy
    for ``random_state="secure"``."""
    if isinstance(root, str):
        return np.random.default_rng(secrets.randbits(128)), [SECURE] * n_sites
    *sites, partition = root.spawn(n_sites + 1)
    return np.random.default_rng(partition), list(sites)


class _RowBlocks(list):  # type: ignore[type-arg]
    """Several validated in-memory arrays read as one site (a block stream): the pooled baseline."""


@dataclass
class _Sites:
    handles: list[Any]
    n_features: int | None
    sizes: list[int | None] = field(default_factory=list)
    #: the sites' seeds when the run's randomness was already read (an array split under add/remove)
    seeds: list[SiteSeed] | None = None


def _is_remote(data: Any) -> bool:
    """Data held by Dask (a future or a collection): checked at its site, not here."""
    return is_dask_future(data) or is_dask_collection(data)


def _same_features(d: int | None, d_s: int, s: int, owner: str,
                   others: str = "the earlier sites have") -> int:
    if d is not None and d_s != d:
        raise ValueError(f"The 'sites' parameter of {owner}: site {s} has {d_s} features, {others} {d}.")
    return d_s


def _dask_array_sites(sites: Any, n_sites: int | None, owner: str, *, n_private: bool) -> _Sites:
    """A Dask array whose row blocks are the sites (checked at their sites).

    Under add/remove (``n_private``) an array of several row blocks is refused: its chunk boundaries are
    positions in one ordered array, which a row added or removed moves (rows would cross into other
    sites, against the parallel composition over sites).
    """
    if n_sites is not None:
        raise ValueError(f"The 'n_sites' parameter of {owner} must be None for a Dask array: its row "
                         "blocks are the sites (rechunk the rows to change them).")
    if sites.ndim != 2:
        raise ValueError(f"The 'sites' parameter of {owner} must be a 2-D Dask array. Got shape "
                         f"{sites.shape} instead.")
    if n_private and sites.numblocks[0] > 1:
        raise ValueError(
            f"The 'sites' parameter of {owner}: under add/remove neighbours the row blocks of one Dask "
            "array cannot be the sites. Its chunk boundaries are positions in one ordered array: adding "
            "or removing a row moves other rows across them into other sites, and the guarantee needs "
            "every row to stay in its site. Pass a list with one entry per site (arrays, Dask arrays or "
            "futures), each holding that site's own rows, or use relation='replace_one' (the number of "
            "rows is public and a replaced row keeps its position). Nothing was charged.")
    check_dask_columns(sites)  # an unknown width: a clear error (compute_chunk_sizes), nothing charged
    X = sites.rechunk({1: -1}) if sites.numblocks[1] > 1 else sites
    blocks = list(X.to_delayed()[:, 0])
    sizes = [None if math.isnan(c) else int(c) for c in X.chunks[0]]
    return _Sites(blocks, int(X.shape[1]), sizes)


def _list_sites(sites: Sequence[Any], owner: str, *, allow_empty: bool,
                check_values: Callable[[Any], None], rows_at_site: bool = True) -> _Sites:
    """One entry per site: in-memory arrays, row blocks, Dask handles.

    An in-memory entry's structure (2-D, numeric, its features, at least one row under replace-one) is
    checked here, before the charge. Its rows (finite, none over ``row_norm`` with
    ``on_norm_violation="raise"``) are checked at its site when ``rows_at_site`` (the default), like the
    rows of data held by Dask: a site whose rows are bad is left out of the release with a
    :class:`SiteFailureWarning` naming it, whatever the engine. ``rows_at_site=False`` (a one-site
    baseline) checks them here, whole, before the charge. The pooled baseline's row blocks are always
    checked here.
    """
    if len(sites) == 0:
        raise ValueError(f"The 'sites' parameter of {owner} must hold at least one site. Got an empty "
                         f"{type(sites).__name__}.")
    handles: list[Any] = []
    d: int | None = None
    sizes: list[int | None] = []
    for s, X in enumerate(sites):
        if isinstance(X, _RowBlocks):
            d = _same_features(d, int(X[0].shape[1]), s, owner)
            n_s = sum(int(b.shape[0]) for b in X)
            if n_s == 0 and not allow_empty:
                raise ValueError(f"The 'sites' parameter of {owner} must hold at least one row.")
            check_values(list(X))
            handles.append(X)
            sizes.append(n_s)
        elif _is_remote(X):
            handles.append(X)
            shape = X.shape if _is_dask_array(X) else None  # a Delayed answers every attribute
            if shape is not None and len(shape) == 2 and not math.isnan(shape[1]):
                d = _same_features(d, int(shape[1]), s, owner, "site 0 has")
            sizes.append(None)
        else:
            # an empty site under replace-one is refused here, before the charge: N_s is public there
            data, n_s, d_s = _check_local_site(X, s, owner, empty_ok=allow_empty)
            d = _same_features(d, d_s, s, owner)
            handles.append(data)
            sizes.append(n_s)
    for data in handles:  # values last, after every site's structure (the texts name no site)
        if not rows_at_site and not isinstance(data, _RowBlocks) and not _is_remote(data):
            check_values(data)
    return _Sites(handles, d, sizes)


def _as_sites(sites: Any, n_sites: int | None, owner: str, *, relation: Relation | None = None,
              row_norm: float | None = None, on_norm_violation: str = "clip",
              validate: bool = True, random_state: Any = None, rows_at_site: bool = True) -> _Sites:
    """The sites' data handles: in-memory arrays, Dask futures, or Dask collections.

    One in-memory array (split into sites or not) is validated whole here, before the ledger is charged
    (:func:`validate_rows`: finite, and no row over ``row_norm`` with ``on_norm_violation="raise"``);
    the errors name neither the row nor the site that holds it. A list's in-memory entries have their
    structure checked here and their rows at their site (``rows_at_site``, see :func:`_list_sites`), as
    data held by Dask (futures, collections) do. ``validate=False`` reads the structure only (the number
    of features). Under add/remove (``relation``) a site may hold no rows; under replace-one (or
    ``relation=None``) every site needs one.

    One array with ``n_sites``: contiguous near-equal row blocks under replace-one; under add/remove
    every row's site is drawn from ``random_state`` (:func:`_random_split`), after the values are
    validated, and the sites' seeds are spawned with that draw (``_Sites.seeds``). A Dask array of
    several row blocks is refused under add/remove (:func:`_dask_array_sites`).
    """
    empty_ok = relation is not None and not relation.n_is_public
    allow_empty = empty_ok or not validate  # structure only: the emptiness is checked by the real pass

    def check_values(data: Any) -> None:
        if validate:
            validate_rows(data, row_norm=row_norm, on_norm_violation=on_norm_violation, owner=owner)

    if _is_dask_array(sites):
        return _dask_array_sites(sites, n_sites, owner, n_private=empty_ok)
    if isinstance(sites, (list, tuple)):
        if n_sites is not None:
            raise ValueError(f"The 'n_sites' parameter of {owner} must be None when 'sites' is a list of "
                             "sites.")
        return _list_sites(sites, owner, allow_empty=allow_empty, check_values=check_values,
                           rows_at_site=rows_at_site)
    if hasattr(sites, "shape") or hasattr(sites, "__array__"):
        data, n, d = _check_local_site(sites, 0, owner, empty_ok=allow_empty or n_sites is not None)
        if n_sites is not None:
            n_sites = _check_n_sites(n_sites, n, owner, empty_ok=allow_empty)
        if n_sites is not None and empty_ok:  # add/remove: a random site per row, never its position
            check_values(data)
            rng, seeds = _partition_stream(_seed_root(random_state), n_sites)
            parts = _random_split(data, n_sites, rng)
            return _Sites(parts, d, [int(p.shape[0]) for p in parts], seeds=seeds)
        parts = [data] if n_sites is None else _split_rows(data, n_sites)
        if not allow_empty and any(p.shape[0] == 0 for p in parts):
            raise ValueError(f"The 'sites' parameter of {owner} must hold at least one row.")
        check_values(data)
        return _Sites(parts, d, [int(p.shape[0]) for p in parts])
    raise TypeError(f"The 'sites' parameter of {owner} must be a list of per-site 2-D arrays (or Dask "
                    f"futures), a Dask array whose row blocks are the sites, or one 2-D array. Got "
                    f"{type(sites).__name__} instead.")


#: The protocol's own parameters (the privacy parameters are checked by ``check_mechanism_inputs``);
#: the bounds that depend on the sites (``k``, ``intermediate_rank``, ``weighting``, ``min_sites`` of
#: ``site_failure``)
#: are checked once the number of sites and features is known.
PARAMETER_CONSTRAINTS: dict[str, Any] = {
    "variant": Options(("proxy", "full")),
    "spectrum": Options(("svd", "eigh")),
    "release_count": Types((bool, np.bool_), "a bool"),
    "random_state": RANDOM_STATE,
    "aggregation": Options(("independent", "secure")),
}


def default_rank(k: int, d: int | None) -> int:
    """The proxies' default rank R: ``min(D, max(2 K, (D + 1) // 2))``.

    The paper's ``R = 2K`` drops, at every site, the directions that are below that site's own noise
    level but add up coherently over the sites (on MNIST, S = 10 sites, epsilon = 0.5: 0.761 of the
    top-10 energy against 0.861 for the full matrices). ``(D + 1) // 2`` is the largest rank whose
    proxy (D R numbers) is still no larger than the packed matrix (D (D + 1) / 2), where the proxy stops
    saving communication (0.852 there). Public: D and K only. With D unknown before the sites run (a
    caller's futures): ``2 K``.
    """
    if d is None:
        return 2 * k
    return min(d, max(2 * k, (d + 1) // 2))


def _check_sized(k: Any, intermediate_rank: Any, min_sites: Any, d: int | None, S: int,
                 owner: str) -> tuple[int, int]:
    """``k`` (in [1, D]), ``intermediate_rank`` (None or in [1, D]; default :func:`default_rank`) and
    ``min_sites`` (in [1, S]), once D (when known) and the number of sites S are."""
    if d is not None:
        k = check_n_components(k, d, owner, name="k")
    rank = Interval(1, d, "both" if d is not None else "left", integer=True)
    check_params({"k": Interval(1, None, "left", integer=True), "intermediate_rank": [NONE, rank],
                  "site_failure.min_sites": Interval(1, S, "both", integer=True)},
                 {"k": k, "intermediate_rank": intermediate_rank, "site_failure.min_sites": min_sites}, owner)
    k = int(k)
    if intermediate_rank is None:
        return k, default_rank(k, d)
    return k, int(intermediate_rank)


def _check_weighting(value: Any, n_sites: int, owner: str) -> Any:
    """``"equal"``, ``"size"``, or one finite non-negative public weight per site with a positive sum."""
    if isinstance(value, str):
        return check_choice(value, "weighting", ("equal", "size"), owner)
    try:
        w = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        w = np.asarray([np.nan])
    if w.shape != (n_sites,) or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
        raise ValueError(f"The 'weighting' parameter of {owner} must be 'equal', 'size' or {n_sites} finite, "
                         f"non-negative public weights (one per site) with a positive sum. Got {value!r} "
                         "instead.")
    return w.copy()


def _as_engine(engine: Any, owner: str) -> Engine:
    if isinstance(engine, Engine):
        return engine
    if engine == "inprocess":
        return InProcessEngine()
    if engine == "dask":
        return DaskEngine()
    raise ValueError(f"The 'engine' parameter of {owner} must be 'inprocess', 'dask' or an Engine instance. "
                     f"Got {engine!r} instead.")


class _NoiseAtSites(NoiseSource):
    """The aggregator's noise source: it draws nothing. Each site draws its own release's noise from its
    own source (:func:`~dpspectral.privacy._template.charged_elsewhere`); the name goes in the privacy
    report."""

    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def _refuse() -> RuntimeError:
        return RuntimeError("DPdisPCA: the aggregator draws no noise; each site draws its own release's.")

    @property
    def generator(self) -> np.random.Generator:  # type: ignore[override]
        raise self._refuse()

    def add_gaussian(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse()

    def add_laplace(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse()

    def add_symmetric_gaussian(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise self._refuse()

    def gaussian(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise self._refuse()


# ---------------------------------------------------------------------------------------------------
# the protocol: validate -> plan -> release (the sites, then the aggregator) -> post-process


@dataclass(frozen=True)
class _Inputs:
    """The public inputs of one run, validated (nothing charged, nothing released yet)."""

    owner: str
    mechanism: str
    budget: PrivacyBudget
    relation: Relation
    row_norm: float
    calibration: str
    variant: Variant
    spectrum: Spectrum
    sites: _Sites
    k: int
    rank: int
    weights: Any
    failure: SiteFailurePolicy
    release_count: bool
    on_norm_violation: NormViolation
    aggregation: str = "independent"


def _check_secure(params: dict[str, Any], rel: Relation, owner: str) -> None:
    """``aggregation="secure"``: replace-one, the tight calibration, no proxy rank, ``cryptography``
    installed (all public; refused before anything is charged)."""
    if params["aggregation"] != "secure":
        return
    if rel is not Relation.REPLACE_ONE:
        raise ValueError(f"The 'relation' parameter of {owner} must be 'replace_one' with "
                         "aggregation='secure' (the sites' weights need their public N_s). Nothing was "
                         "charged.")
    if params["calibration"] != "tight":
        raise ValueError(f"The 'calibration' parameter of {owner} must be 'tight' with aggregation='secure' "
                         "(the paper's noise is for independent releases). Nothing was charged.")
    if params["intermediate_rank"] is not None:
        raise ValueError(f"The 'intermediate_rank' parameter of {owner} must be None with "
                         "aggregation='secure': the sites' noisy matrices are summed whole (a sum of rank-R "
                         "proxies is not the proxy of the sum). Nothing was charged.")
    require_cryptography(owner)


def _validate(sites: Any, k: Any, call: _Call) -> _Inputs:
    """Every public parameter, then the sites' structure (one array: whole, values included), before the
    charge; a list's in-memory sites have their rows checked at their site when ``call.rows_at_site``."""
    owner, params, rows_at_site = call.owner or call.mechanism, call.params(), call.rows_at_site
    budget, rel, C = check_mechanism_inputs(
        epsilon=params["epsilon"], delta=params["delta"], row_norm=params["row_norm"],
        relation=params["relation"], calibration=params["calibration"],
        on_norm_violation=params["on_norm_violation"], owner=owner,
        allowed_relations=(Relation.REPLACE_ONE, Relation.ADD_REMOVE),
    )
    check_params(PARAMETER_CONSTRAINTS, params, owner)
    failure = site_failure_policy(call.site_failure, owner)
    _check_secure(params, rel, owner)
    parsed = _as_sites(sites, params["n_sites"], owner, relation=rel, row_norm=C,
                       on_norm_violation=params["on_norm_violation"], random_state=params["random_state"],
                       rows_at_site=rows_at_site)
    S = len(parsed.handles)
    k, rank = _check_sized(k, params["intermediate_rank"], failure.min_sites, parsed.n_features, S, owner)
    weights = _check_weighting(params["weighting"], S, owner)
    timeout = None if failure.timeout is None else float(failure.timeout)
    return _Inputs(
        owner=owner, mechanism=call.mechanism, budget=budget, relation=rel, row_norm=C,
        calibration=params["calibration"], variant=params["variant"], spectrum=params["spectrum"],
        sites=parsed, k=k, rank=rank, weights=weights,
        failure=dataclasses.replace(failure, timeout=timeout, min_sites=int(failure.min_sites)),
        release_count=bool(params["release_count"]), on_norm_violation=params["on_norm_violation"],
        aggregation=params["aggregation"],
    )


def _plan(run: _Inputs) -> tuple[SitePlan, ReleasePlan]:
    """Every site's plan and the run's: one site's events, composed in parallel over the sites.

    Every site releases the same event on its own rows (disjoint): parallel composition. The branches
    are identical, so one branch stands for all of them (the worst branch is the guarantee).
    """
    rel = run.relation
    # Under add/remove, N_s is private: normalising (equal or explicit weights) needs a noisy count.
    size_weights = isinstance(run.weights, str) and run.weights == "size"
    count = run.release_count or (not rel.n_is_public and not size_weights)
    site_plan = site_release_plan(budget=run.budget, relation=rel, calibration=run.calibration,
                                  row_norm=run.row_norm, release_count=count,
                                  n_features=run.sites.n_features)
    plan = SitePlan(variant=run.variant, rank=run.rank, spectrum=run.spectrum, relation=rel,
                    calibration=run.calibration, row_norm=run.row_norm,
                    on_norm_violation=run.on_norm_violation, n_features=run.sites.n_features,
                    release=site_plan, noise=seeded_source_name())  # decided here, sent to the sites
    events = (ParallelDpEvent([compose(site_plan.events)]),)
    return plan, ReleasePlan(run.mechanism, rel, events, notes=site_plan.notes)


def _release(run: _Inputs, plan: SitePlan, engine: Engine, seeds: list[Any], show_progress: bool | None,
             stacklevel: int, releaser: Releaser) -> tuple[list[SiteOutcome], list[SitePayload], Aggregate]:
    """Inside the run's charge: have every site release (each with its own noise), aggregate.

    Called once the run is charged (:func:`_run_protocol`), before any site is asked to release. A
    failure here (too few sites answered) is a failed release: it stays charged, marked failed in the
    ledger. ``releaser`` draws nothing: the aggregator's release is post-processing.
    """
    owner = run.owner
    outcomes = engine.run(run.sites.handles, site_step, plan, seeds, timeout=run.failure.timeout,
                          show_progress=show_progress)
    payloads = _handle_faults(outcomes, owner, run.failure.on_failure, stacklevel + 1)
    if len(payloads) < run.failure.min_sites:
        reasons = "; ".join(f"site {o.site}: {o.status} ({o.error})" for o in outcomes
                            if o.status != "ok")
        raise SiteFailureError(f"{owner}: only {len(payloads)} of {len(outcomes)} sites answered, fewer "
                               f"than min_sites={run.failure.min_sites}; nothing was released by the "
                               f"aggregator. {reasons}")
    dims = {p.n_features for p in payloads}
    if len(dims) > 1:
        raise ValueError(f"The 'sites' parameter of {owner}: the sites have different numbers of "
                         f"features ({sorted(dims)}).")
    check_n_components(run.k, dims.pop(), owner, name="k")
    agg = aggregate(payloads, run.k, weighting=run.weights, spectrum=run.spectrum, owner=owner)
    return outcomes, payloads, agg


def _drawn_scale(plan: SitePlan, payloads: list[SitePayload]) -> tuple[float | None, float | None]:
    """``(noise_std, sensitivity)`` the report states: the largest scatter scale the contributing sites
    drew, with its sensitivity (a site widens both for its own rounding bound, the multiplier
    unchanged); the plan's where no site states its scale."""
    drawn = [(p.scatter_std, p.scatter_sensitivity) for p in payloads if p.scatter_std is not None]
    planned = (plan.scatter_std, plan.release_plan["scatter"].sensitivity)
    return max(drawn, key=lambda pair: pair[0], default=planned)  # type: ignore[arg-type, return-value]


def _result(run: _Inputs, plan: SitePlan, outcomes: list[SiteOutcome], payloads: list[SitePayload],
            agg: Aggregate, report: Any, engine_name: str) -> DistributedResult:
    """The result: the aggregator's release on the pooled scatter's scale, and public facts per site."""
    rel = run.relation
    # Scale: A_c ~ X^T X / N' when normalised; the result's values are on the scatter's scale.
    n_public = [p.n_samples for p in payloads]
    n_total: float | None
    if rel.n_is_public and all(n is not None for n in n_public):
        n_total = float(sum(n for n in n_public if n is not None))
    elif plan.count_std is not None:
        n_total = float(sum(max(p.noisy_count or 0.0, 1.0) for p in payloads))
    else:
        n_total = None
    scale = (n_total or 1.0) if agg.normalised else 1.0
    site_reports = tuple(
        SiteReport(site=o.site, status=o.status, bytes_sent=o.payload.nbytes if o.payload is not None else 0,
                   n_samples=(o.payload.n_samples if o.payload is not None else run.sites.sizes[o.site]
                              if rel.n_is_public else None),
                   worker=o.worker, error=o.error, noise_std=getattr(o.payload, "scatter_std", None))
        for o in outcomes)
    noise_std, sensitivity = _drawn_scale(plan, payloads)
    diagnostics: dict[str, Any] = {
        "variant": run.variant,
        "engine": engine_name,
        "n_sites": len(outcomes),
        "n_contributing": len(payloads),
        "intermediate_rank": run.rank if run.variant == "proxy" else None,
        "spectrum": run.spectrum,
        "weights": agg.weights,
        "noise_std": noise_std,  # on the scatter S_s; on A_s = S_s / N_s it is noise_std / N_s
        "site_noise_std": {r.site: r.noise_std for r in site_reports},
        "count_noise_std": plan.count_std,
        "sensitivity": sensitivity,
        "bytes_sent": {r.site: r.bytes_sent for r in site_reports},
        "bytes_total": sum(r.bytes_sent for r in site_reports),
    }
    return DistributedResult(components=agg.components, values=agg.values * scale, total=agg.trace * scale,
                             mean=None, n_samples=n_total, privacy=report, diagnostics=diagnostics,
                             sites=site_reports)


@dataclass(frozen=True)
class _Call:
    """One run of the protocol as an entry point asks for it: its public parameters and how it runs.

    The defaults are those of the one-site baselines (the full matrix, in process, a failed site fails
    the run); :func:`dpdispca` and the estimator state every field. ``owner`` names the entry point in
    messages (default ``mechanism``); ``rows_at_site=False`` (the one-site baselines): a list's
    in-memory site is validated whole before the charge instead of at its site, where a bad site would
    be left out.
    """

    mechanism: str
    epsilon: float
    delta: float
    row_norm: float
    relation: Relation | str = "replace_one"
    calibration: str = "tight"
    variant: Variant = "full"
    intermediate_rank: int | None = None
    n_sites: int | None = None
    weighting: Any = "equal"
    spectrum: Spectrum = "eigh"
    site_failure: Any = SiteFailurePolicy(on_failure="raise")
    release_count: bool = False
    on_norm_violation: NormViolation = "clip"
    aggregation: str = "independent"
    engine: Any = "inprocess"
    settings: RunSettings = RunSettings(show_progress=False)
    stacklevel: int = 3
    owner: str | None = None
    rows_at_site: bool = True

    def params(self) -> dict[str, Any]:
        """The public parameters that :func:`_validate` checks, by their names in the signatures."""
        names = ("epsilon", "delta", "row_norm", "relation", "calibration", "intermediate_rank", "n_sites",
                 "variant", "weighting", "spectrum", "release_count", "on_norm_violation", "aggregation")
        return {**{name: getattr(self, name) for name in names}, "random_state": self.settings.random_state}


def _report_facts(run: _Inputs, settings: RunSettings) -> dict[str, Any]:
    """The privacy report's public facts: the mechanism, its budget, calibration and accounting."""
    return {"mechanism": run.mechanism, "budget": run.budget, "calibration": run.calibration,
            "accounting": settings.accounting}


def _run_protocol(sites: Any, k: int, call: _Call) -> DistributedResult:
    """Validate -> plan -> release (sites, aggregator) -> post-process: the body of every entry point.

    The run's events are charged once through the release template
    (:func:`~dpspectral.privacy._template.charge_at_creation`) before any site is asked to release; the
    sites then draw their own noise (:func:`~dpspectral.privacy._template.charged_elsewhere`).
    """
    run = _validate(sites, k, call)
    if run.aggregation == "secure":
        return _run_secure(run, call)
    plan, run_plan = _plan(run)
    eng = _as_engine(call.engine, run.owner)
    settings = call.settings
    seeds = run.sites.seeds if run.sites.seeds is not None else spawn_site_seeds(settings.random_state,
                                                                                 len(run.sites.handles))
    noise = _NoiseAtSites(SECURE if _is_secure(settings.random_state) else str(plan.noise))
    with eng.session(len(run.sites.handles)):  # connect (or fail) before the charge
        (outcomes, payloads, agg), report, _ = charge_at_creation(
            run_plan, settings, functools.partial(_release, run, plan, eng, seeds, settings.show_progress,
                                                  call.stacklevel + 1),
            facts=_report_facts(run, settings), noise=noise, stacklevel=call.stacklevel + 1)
    return _result(run, plan, outcomes, payloads, agg, report, eng.name)


@dataclass(frozen=True)
class _Traffic:
    """What one site sent in a secure round (its reports' bytes), and its public N_s."""

    nbytes: int
    n_samples: int


def _secure_weights(adverts: list[Any], weighting: Any) -> dict[int, float]:
    """``w_s`` over the sites that answered round 1 (equal, by size, or public weights renormalised)."""
    if isinstance(weighting, str):
        if weighting == "equal":
            return {a.site: 1.0 / len(adverts) for a in adverts}
        total = sum(a.n_samples for a in adverts)
        return {a.site: a.n_samples / total for a in adverts}
    w = {a.site: float(weighting[a.site]) for a in adverts}
    total = sum(w.values())
    if not total > 0:
        raise ValueError("The 'weighting' of the secure round gives the contributing sites a total weight of "
                         "0; it must be > 0. Nothing was charged.")
    return {s: v / total for s, v in w.items()}


def _secure_round(run: _Inputs, plan: SitePlan, adverts: list[Any], multiplier: float) -> SecureRound:
    """Round 2's public message, from round 1's answers (checked there): weights, grid, noise share."""
    d = adverts[0].n_features
    weights = _secure_weights(adverts, run.weights)
    coefficients = {a.site: weights[a.site] / a.n_samples for a in adverts}
    g, sensitivity, share = quantisation(coefficients, multiplier, run.row_norm, d, run.owner,
                                         n_samples={a.site: a.n_samples for a in adverts})
    return SecureRound(site_plan=dataclasses.replace(plan, n_features=d),
                       share_plan=share_plan(share, sensitivity, multiplier), round_id=new_round_id(),
                       public_keys={a.site: a.public_key for a in adverts}, coefficients=coefficients, step=g)


def _secure_keys(run: _Inputs, plan: SitePlan, eng: Engine, seeds: list[Any], show_progress: bool | None,
                 stacklevel: int) -> tuple[list[SiteOutcome], list[Any]]:
    """Round 1 (before the charge): every site checks its rows and sends its public key; a site with bad
    rows is left out (warned, named); sites that disagree on D or on the plan stop the round, named."""
    owner = run.owner
    outcomes = eng.run(run.sites.handles, advertise_step, plan, seeds, timeout=run.failure.timeout,  # type: ignore[arg-type]
                       show_progress=show_progress)
    digest = plan_digest(plan)
    ok = [o for o in outcomes if o.status == "ok"]
    adverts = [check_advert(o.payload, o.site, digest, owner) for o in ok]
    dims = {a.n_features for a in adverts}
    if len(dims) > 1:
        first = adverts[0]
        odd = next(a.site for a in adverts if a.n_features != first.n_features)
        raise ValueError(f"The 'sites' parameter of {owner}: site {odd} has a different number of features "
                         f"than site {first.site}. Nothing was charged.")
    _handle_faults(outcomes, owner, run.failure.on_failure, stacklevel + 1, charged=False)
    if len(adverts) < run.failure.min_sites:
        raise SiteFailureError(f"{owner}: only {len(adverts)} of {len(outcomes)} sites answered the key "
                               f"round, fewer than min_sites={run.failure.min_sites}; nothing was charged or "
                               "released.")
    if adverts:
        check_n_components(run.k, adverts[0].n_features, owner, name="k")
    return outcomes, adverts


def _secure_messages(run: _Inputs, rnd: SecureRound, adverts: list[Any], eng: Engine, seeds: list[Any],
                     show_progress: bool | None, releaser: Releaser) -> tuple[dict[int, Any], SitePayload,
                                                                              Aggregate]:
    """Round 2, inside the charge: the sites' masked messages, their unmasked sum and its eigenvectors."""
    owner = run.owner
    outcomes = eng.run(run.sites.handles, message_step, rnd, seeds,  # type: ignore[arg-type]
                       timeout=run.failure.timeout, show_progress=show_progress)
    messages = {o.site: o.payload for o in outcomes if o.status == "ok" and o.site in rnd.public_keys}
    missing = [o for o in outcomes if o.site in rnd.public_keys and o.status != "ok"]
    if missing:
        raise SecureAggregationError(
            f"{owner}: site {missing[0].site} did not send its masked message ({missing[0].status}: "
            f"{missing[0].error}); its masks cannot be removed, so the round was refused and nothing "
            "was released (it stays charged).")
    packed = unmask(messages, rnd, owner)
    n_total = sum(a.n_samples for a in adverts)
    payload = SitePayload(site=rnd.sites[0], variant="full", matrix=packed, n_features=rnd.n_features,
                          n_samples=n_total, noisy_count=None, normalised=True)
    agg = aggregate([payload], run.k, weighting="equal", spectrum=run.spectrum, owner=owner)
    return messages, payload, agg


def _run_secure(run: _Inputs, call: _Call) -> DistributedResult:
    """Secure aggregation (:mod:`~dpspectral.distributed._secure`): keys, charge, masked messages, sum."""
    owner, settings, stacklevel = run.owner, call.settings, call.stacklevel + 1
    run = dataclasses.replace(run, variant="full")
    plan, _ = _plan(run)
    scatter = plan.release_plan["scatter"]
    multiplier = scatter.scale / (scatter.sensitivity or 1.0)
    event = dp_accounting.GaussianDpEvent(multiplier)
    note = ("Secure aggregation: the sites' noise shares sum to the pooled Analyze Gauss noise; against a "
            "coalition of every other site a site keeps only its own share (diagnostics: coalition_epsilon).")
    precheck(settings.accountant, [event], run.relation)  # a ledger that would refuse: before any site runs
    eng = _as_engine(call.engine, owner)
    seeds = spawn_site_seeds(settings.random_state, len(run.sites.handles))
    noise = _NoiseAtSites(SECURE if _is_secure(settings.random_state) else str(plan.noise))
    with eng.session(len(run.sites.handles)):
        keys, adverts = _secure_keys(run, plan, eng, seeds, settings.show_progress, stacklevel + 1)
        rnd = _secure_round(run, plan, adverts, multiplier)
        run_plan = ReleasePlan(run.mechanism, run.relation, (event,), notes=(note,))
        (messages, payload, agg), report, _ = charge_at_creation(
            run_plan, settings, functools.partial(_secure_messages, run, rnd, adverts, eng, seeds,
                                                  settings.show_progress),
            facts=_report_facts(run, settings), noise=noise, stacklevel=stacklevel + 1)
    weights = _secure_weights(adverts, run.weights)
    agg = dataclasses.replace(agg, weights=weights)
    sent = {a.site: a.nbytes for a in adverts}
    for s, msg in messages.items():
        sent[s] += msg.nbytes if isinstance(msg, MaskedMessage) else 0
    sizes = {a.site: a.n_samples for a in adverts}
    traffic = [SiteOutcome(o.site, "ok", payload=_Traffic(sent[o.site], sizes[o.site]),  # type: ignore[arg-type]
                           worker=o.worker) if o.site in sent else o for o in keys]
    result = _result(run, plan, traffic, [payload], agg, report, eng.name)
    received = {s: 8 * 4 + sum(32 for _ in masking_neighbours(rnd.sites, s)) for s in rnd.sites}
    share = rnd.share_plan["share"].scale
    result.diagnostics.update({
        "aggregation": "secure",
        "n_contributing": len(rnd.sites),
        "noise_std": share * math.sqrt(len(rnd.sites)),  # on A_c (normalised), the pooled noise
        "share_noise_std": share,
        "sensitivity": rnd.share_plan["share"].sensitivity,
        "fixed_point_step": rnd.step,
        "mask_degree": len(masking_neighbours(rnd.sites, rnd.sites[0])),
        "coalition_epsilon": coalition_epsilon(multiplier, len(rnd.sites), run.budget.delta),
        "bytes_received": received,
        "intermediate_rank": None,
    })
    return result


def _handle_faults(outcomes: Sequence[SiteOutcome], owner: str, on_failure: OnSiteFailure,
                   stacklevel: int, charged: bool = True) -> list[Any]:
    failed = [o for o in outcomes if o.status != "ok"]
    ok = [o.site for o in outcomes if o.status == "ok"]
    if failed and on_failure == "raise":
        reasons = "; ".join(f"site {o.site}: {o.status} ({o.error})" for o in failed)
        nothing = "" if charged else " nothing was charged, and"
        raise SiteFailureError(f"{owner}: {len(failed)} of {len(outcomes)} sites did not answer "
                               f"(site_failure.on_failure='raise');{nothing} nothing was released by the "
                               f"aggregator. {reasons}")
    for o in failed:
        warnings.warn(
            f"{owner}: site {o.site} was left out of the release ({o.status}: {o.error}). The release uses "
            f"the {len(ok)} remaining sites {ok}; each site's privacy guarantee is its own, so the "
            "guarantee is unchanged.", SiteFailureWarning, stacklevel=stacklevel)
    return [o.payload for o in outcomes if o.status == "ok" and o.payload is not None]




@folded("site_failure", SiteFailurePolicy,
        {"site_timeout": "timeout", "min_sites": "min_sites", "on_site_failure": "on_failure"})
def dpdispca(
    sites: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    intermediate_rank: int | None = None,
    n_sites: int | None = None,
    variant: Variant = "proxy",
    weighting: Any = "equal",
    spectrum: Spectrum = "eigh",
    engine: Any = "inprocess",
    site_failure: SiteFailurePolicy | None = None,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
    aggregation: str = "independent",
) -> DistributedResult:
    """DPdisPCA (Imtiaz and Sarwate 2018, Algorithm 1): private PCA of data spread over sites.

    Site s computes ``A_s = X_s^T X_s / N_s`` of its clipped rows, releases ``A_hat_s = A_s + E_s`` (E_s
    symmetric Gaussian), and sends ``P_s = U_R Sigma_R^{1/2}`` of ``A_hat_s`` (``variant="proxy"``, D x R
    numbers) or ``A_hat_s`` itself (``variant="full"``, D (D+1)/2 numbers). The aggregator releases the top-K
    eigenvectors of ``A_c = sum_s w_s P_s P_s^T`` (or ``sum_s w_s A_hat_s``).

    With ``aggregation="secure"`` the sites instead add shares of the pooled noise to their matrices and
    mask them pairwise, so that the aggregator learns only their sum, which carries the noise of Analyze
    Gauss on the pooled rows (:mod:`~dpspectral.distributed._secure`).

    Privacy
    -------
    Relation: replace-one (default, the paper's: ``N_s`` public) or add/remove, on the rows of each site
    (the sites hold disjoint rows). Which site holds which rows: a list of per-site data is the sites'
    own (public, structural). One array with ``n_sites`` is cut into contiguous near-equal blocks under
    replace-one (n is public and a replaced row keeps its position; this assumes that the row order does
    not depend on the data). Under add/remove n is private, and a cut by position would move rows across
    every later boundary when a row is added or removed (about half the sites would change); there every
    row's site is an independent uniform draw from the run's secret randomness (child S of
    ``SeedSequence(random_state)``, or OS entropy for ``"secure"``; never output), so the other rows'
    sites have the same law with or without a given row, and coupling them, a neighbour changes one site.
    A Dask array's row blocks are the sites under replace-one; under add/remove an array of several row
    blocks is refused before anything is charged (its chunk boundaries are positions too): pass one
    entry per site. Each site releases the upper
    triangle of its clipped scatter ``S_s = sum_i c(x_i) c(x_i)^T`` once with symmetric Gaussian noise:
    L2 sensitivity ``sqrt(2) C^2`` (replace-one: ``||x x^T - y y^T||_F <= sqrt(2) C^2``) or ``C^2``
    (add/remove: ``||x x^T||_F = C^2``), i.e. ``sqrt(2) C^2 / N_s`` on ``A_s = S_s / N_s``. The paper
    bounds the *spectral* norm (``1 / N_s``), which is not the Gaussian mechanism's sensitivity:
    ``calibration="paper"`` reproduces that noise, ``sqrt(2)`` too small, and is certified only where the
    accountant agrees (``UncertifiedPrivacyWarning`` otherwise). ``calibration="tight"`` (default) is the
    analytic Gaussian mechanism for the Frobenius sensitivity. Under add/remove a site normalising by its
    size also releases a noisy count (1% of its Gaussian budget, split exactly). Event:
    ``ParallelDpEvent([GaussianDpEvent(sigma / Delta)])``: every site releases that event on its own
    rows, and a row is in exactly one site, so the guarantee is one site's (parallel composition). The
    proxy, the aggregation and the eigendecomposition are post-processing. Sites left out (faults) do not
    change the guarantee when a failure does not depend on the data (crashes, timeouts); the site
    step's control flow reads only public sizes once the input is validated. A site whose own rows are
    bad (NaN/inf, a row over C with ``on_norm_violation="raise"``, no rows under replace-one) is left
    out too, on either engine: whether site s fails is a function of site s's rows only, so "failed" is
    one more output of site s's own mechanism, and it reveals what a refusal by that site would (some
    row of it is invalid, and the kind of problem), nothing about the other sites' rows; the guarantee
    holds on the domain of valid rows (finite, within C). What the aggregator learns of a failed site is
    its status and a data-independent reason (the kind of problem, or a generic text); no site timing is
    reported. Under add/remove a site with no rows releases its noise on a zero scatter like any other
    (its row count is private); under replace-one an empty site is left out. Validate, then plan, then
    charge: the sites' structure (2-D, numeric, the same D) is checked before the ledger is charged; one
    array (split into sites or not) is validated whole there too (finite, and no row over C with
    ``on_norm_violation="raise"``), with messages that name no row, count or site; the rows of a list's
    sites, in memory or held by Dask, are checked at their site. Every site's releases are planned from
    public inputs (:func:`~dpspectral.distributed._site.site_release_plan`) and the run's parallel event
    is charged once, before any site is dispatched; each site then draws its noise through that plan
    from its own source (its child ``SeedSequence``, or its OS entropy for ``random_state="secure"``).
    A run that fails after the charge stays charged and is marked failed in the ledger.

    Parameters
    ----------
    sites : list of per-site data, a Dask array, or one 2-D array
        A list with one entry per site: a 2-D array or sparse matrix of shape (N_s, D) (its structure
        checked here, its rows at its site; on the Dask engine scattered to one worker per site), a
        ``distributed.Future`` of such an array
        (already on a worker), or a Dask collection; or a Dask array whose row blocks are the sites (under
        add/remove only with one row block: see Privacy); or one 2-D array (one site, or ``n_sites``
        sites). Never modified. Under add/remove a site may hold no rows (N_s is private); under
        replace-one every site needs one. A listed site whose rows are bad (NaN/inf, a row over
        ``row_norm`` with ``on_norm_violation="raise"``, no rows under replace-one) is left out with a
        :class:`SiteFailureWarning` naming it, on either engine; one array is refused whole.
    k : int
        Number of components K, in [1, D].
    epsilon : float
        In (0, inf); each site's guarantee.
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C on each row's Euclidean norm; rows above it are clipped at their site (or rejected
        with ``on_norm_violation="raise"``). Never derived from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
    intermediate_rank : int, optional
        R, the rank of the proxies (``variant="proxy"``); default ``min(D, max(2 K, (D + 1) // 2))``
        (:func:`default_rank`); the paper's (and the authors' code's) is ``min(2 K, D)``.
    n_sites : int, optional
        Only for a single 2-D array: split its rows into this many sites. Under replace-one: contiguous,
        near-equal row blocks. Under add/remove: every row's site is an independent uniform draw from
        the run's secret randomness (not its position; see Privacy), so the sites' sizes vary, some may
        be empty, and ``n_sites`` may exceed the number of rows; each site holds a copy of its rows.
    weighting : {"equal", "size"} or array-like of shape (n_sites,), default="equal"
        ``"equal"``: ``w_s = 1/S'`` (the paper). ``"size"``: ``w_s = N_s / N'`` (sites of different
        sizes; :mod:`~dpspectral.distributed._aggregator`). An array: public per-site weights.
    spectrum : {"eigh", "svd"}, default="eigh"
        Which R eigenpairs of ``A_hat_s`` form the proxy (and, for ``"full"``, the K released):
        ``"svd"`` the largest in magnitude (the paper's SVD of a symmetric matrix), ``"eigh"`` the largest
        eigenvalues with negative ones clamped to 0 (the true ``A_s`` is positive semi-definite).
    engine : {"inprocess", "dask"} or Engine, default="inprocess"
        Where the sites run; ``"dask"`` uses the active ``distributed.Client`` when there is one, else
        starts a ``LocalCluster`` for the run (closed after it); ``DaskEngine(client=...)`` or
        ``DaskEngine(scheduler_address=...)`` name a cluster. The connection is made before the charge.
    site_failure : SiteFailurePolicy or None, default=None
        How long to wait for a site, how many must answer, and whether one failure fails the run
        (:class:`SiteFailurePolicy`; None: its defaults, wait for every site, one answering site is
        enough, a failed site is left out with a warning).
    release_count : bool, default=False
        Under add/remove, have every site release a noisy row count (always done when the weighting needs
        one); ignored under replace-one, where N_s is public.
    accountant : Accountant, optional
        Ledger to spend against; a run that would exceed it is refused before any site releases.
    random_state : None, int, SeedSequence, Generator or "secure"
        Site s draws its noise from child s of ``SeedSequence(random_state).spawn(S)``, so the result does
        not depend on the engine or the order in which sites finish; one array split under add/remove
        draws its rows' sites from child S. ``"secure"``: every site draws from
        its own OS entropy with exact discrete samplers (:class:`~dpspectral.privacy._noise.SecureNoise`;
        not reproducible); the report's ``noise_source`` says which.
    on_norm_violation : {"clip", "raise"}
    accounting : {"auto", "gaussian", "pld", "rdp"}
    show_progress : bool or None
        Progress bar over the sites (in-process engine).
    aggregation : {"independent", "secure"}, default="independent"
        ``"independent"``: the paper's protocol (each site's release carries the noise its own guarantee
        needs). ``"secure"``: secure aggregation (:mod:`~dpspectral.distributed._secure`; extra
        ``secure``): every site adds ``1/S'`` of the pooled noise variance to its noisy matrix, masks it
        pairwise (X25519 keys, ChaCha20 masks modulo ``2**64``), and the aggregator decodes only the sum,
        whose noise is that of Analyze Gauss on the pooled rows. Replace-one and ``calibration="tight"``
        only; ``variant`` and ``spectrum`` of the proxy do not apply (the matrices are summed whole;
        ``spectrum`` still chooses the released eigenvectors); sites with bad rows are left out before
        the charge; a site missing after the charge ends the round with
        :class:`~dpspectral.distributed._secure.SecureAggregationError` (nothing released, charged).
        Against the aggregator alone the guarantee is ``(epsilon, delta)``; against a coalition of all
        other sites, a site keeps only its own noise share (``diagnostics["coalition_epsilon"]``).

    Returns
    -------
    DistributedResult
        ``components`` (D x K), ``values`` and ``total`` on the pooled scatter's scale, ``n_samples``
        (N' of the contributing sites when public, or the sum of their noisy counts), ``privacy``, and
        ``sites``: per-site status, bytes sent, the noise scale it drew, worker and a data-independent
        error reason (no timing). ``diagnostics["bytes_sent"]`` too, and ``diagnostics["noise_std"]``:
        the largest noise scale a site drew on its scatter (``diagnostics["site_noise_std"]``: each
        site's).

    Raises
    ------
    SiteFailureError
        Fewer than ``site_failure.min_sites`` sites answered, or a site failed with
        ``site_failure.on_failure="raise"``.
    BudgetExceededError
        The accountant refused the run (nothing was released).
    """
    if aggregation == "secure":
        mechanism = "dpdispca_secure"
    else:
        mechanism = "dpdispca" if variant == "proxy" else "dpdispca_full"
    call = _Call(mechanism, epsilon, delta, row_norm, relation=relation, calibration=calibration,
                 variant=variant, intermediate_rank=intermediate_rank, n_sites=n_sites, weighting=weighting,
                 spectrum=spectrum, site_failure=site_failure, release_count=release_count,
                 on_norm_violation=on_norm_violation, aggregation=aggregation, engine=engine,
                 settings=RunSettings(accountant, random_state, accounting, show_progress),
                 stacklevel=5)  # the caller, above the wrapper that folds the old keywords
    return _run_protocol(sites, k, call)


def pooled_pca(
    sites: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    spectrum: Spectrum = "eigh",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
) -> DistributedResult:
    """The pooled-data baseline: one Analyze Gauss on all sites' rows (a trusted curator holds them all).

    ``A_hat = X^T X / N + E`` with the same noise formula as a site (``calibration="paper"``: the paper's
    ``sqrt(2 ln(1.25/delta)) / (N epsilon)``; ``"tight"``: the analytic Gaussian for the Frobenius
    sensitivity ``sqrt(2) C^2 / N``), released as the top-K eigenvectors (``spectrum="eigh"``: identical
    in distribution to :func:`~dpspectral.analyze_gauss`). ``sites`` must be in memory (a list of arrays
    or one array); they are read as one block stream, never concatenated.

    Privacy
    -------
    As in :func:`dpdispca` (its Privacy section), with every site's rows read as one site.
    """
    owner = "dpdispca_pooled"
    # structure only here; the values are validated (whole, before the charge) by _run_protocol
    parsed = _as_sites(sites if isinstance(sites, (list, tuple)) else [sites], None, owner, validate=False)
    for h in parsed.handles:
        if is_dask_future(h) or is_dask_collection(h):
            raise TypeError(f"The 'sites' parameter of {owner} must hold in-memory arrays: the pooled "
                            "baseline needs every row in one place.")
    call = _Call(owner, epsilon, delta, row_norm, relation, calibration, spectrum=spectrum,
                 on_norm_violation=on_norm_violation,
                 settings=RunSettings(accountant, random_state, accounting, False))
    return _run_protocol([_RowBlocks(parsed.handles)], k, call)


def local_pca(
    sites: Any,
    k: int,
    *,
    site: int = 0,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: str = "tight",
    spectrum: Spectrum = "eigh",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
) -> DistributedResult:
    """The local baseline: Analyze Gauss on one site's rows alone (what a site can do without the others).

    Same release as one site of :func:`dpdispca` with ``variant="full"``, and its top-K eigenvectors.

    Privacy
    -------
    As in :func:`dpdispca` (its Privacy section), for the one site ``site`` alone.
    """
    owner = "dpdispca_local"
    if not isinstance(sites, (list, tuple)):
        sites = [sites]
    check_params({"site": Interval(0, len(sites) - 1, "both", integer=True)}, {"site": site}, owner)
    call = _Call(owner, epsilon, delta, row_norm, relation, calibration, spectrum=spectrum,
                 on_norm_violation=on_norm_violation,
                 settings=RunSettings(accountant, random_state, accounting, False), rows_at_site=False)
    return _run_protocol([sites[int(site)]], k, call)


# The tables, stated once (checked inside: check_mechanism_inputs for the privacy parameters, then
# PARAMETER_CONSTRAINTS; the bounds that depend on the sites once they are read). Attached without a
# wrapper, so that the warnings' stacklevel still points at the caller.
_PRIVACY_CONSTRAINTS: dict[str, Any] = {**PRIVACY_PARAMETERS, "delta": Interval(0, 1, "neither")}
#: The privacy and protocol parameters that dpdispca and DistributedDPPCA share.
PROTOCOL_CONSTRAINTS: dict[str, Any] = {**_PRIVACY_CONSTRAINTS, **PARAMETER_CONSTRAINTS}
dpdispca.parameter_constraints = {**PROTOCOL_CONSTRAINTS, **SITE_FAILURE_CONSTRAINTS}  # type: ignore[attr-defined]
for _f in (pooled_pca, local_pca):  # type: ignore[assignment]
    _f.parameter_constraints = {  # type: ignore[attr-defined]
        **_PRIVACY_CONSTRAINTS, "spectrum": PARAMETER_CONSTRAINTS["spectrum"]}
