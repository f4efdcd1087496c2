"""``DistributedDPPCA``: a scikit-learn style transformer over DPdisPCA (paper 004)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._constraints import DELTA, NONE, Options, Types
from .._estimators import ACCOUNTANT, N_COMPONENTS, PUBLIC_BASIS, _DPEstimator, method_names
from .._linalg import released_variances
from .._options import folded
from .._projection import Projection, _ReleasedSubspace
from .._public_basis import _lift_subspace, as_public_basis, resolve_for
from .._registry import Method, get_method
from .._validation import validated_data
from ..privacy._accounting import Accountant
from ..privacy._budget import Relation
from ..privacy._template import RunSettings
from ._engines import DaskEngine, Engine, _materialise, is_dask_collection, is_dask_future
from ._protocol import (
    PROTOCOL_CONSTRAINTS,
    DistributedResult,
    SiteFailurePolicy,
    _as_sites,
    _Call,
    _is_dask_array,
    _run_protocol,
)

__all__ = ["DistributedDPPCA"]


def _is_row_list(sites: Any) -> bool:
    """A nested Python list of numbers (rows), which scikit-learn reads as one matrix: a single site.

    A list of arrays (or of anything but Python lists/tuples of scalars) stays a list of sites.
    """
    return (isinstance(sites, (list, tuple)) and len(sites) > 0
            and all(isinstance(row, (list, tuple)) and all(np.isscalar(v) for v in row) for row in sites))


def _folded_into_engine(init: Callable[..., None]) -> Callable[..., None]:
    """``scheduler_address`` and ``n_workers`` are :class:`DaskEngine`'s: accepted, with a FutureWarning.

    ``DistributedDPPCA(scheduler_address=a, n_workers=w)`` keeps working as
    ``DistributedDPPCA(engine=DaskEngine(scheduler_address=a, n_workers=w))`` when ``engine`` is
    ``"dask"`` (the default); with ``"inprocess"`` or an engine object they had no effect, and still
    have none.
    """
    fields = ("scheduler_address", "n_workers")

    @functools.wraps(init)
    def call(self: Any, *args: Any, **kwargs: Any) -> None:
        given = {name: kwargs.pop(name) for name in fields if name in kwargs}
        if given:
            olds, example = ", ".join(f"'{n}'" for n in given), ", ".join(f"{n}=..." for n in given)
            warnings.warn(f"{olds} of DistributedDPPCA moved into 'engine': pass "
                          f"engine=DaskEngine({example}). The old keyword will be removed in a later "
                          "version.", FutureWarning, stacklevel=2)
            if kwargs.get("engine", "dask") == "dask":
                kwargs["engine"] = DaskEngine(**given)
        init(self, *args, **kwargs)

    call.folded_parameters = {**getattr(init, "folded_parameters", {}),  # type: ignore[attr-defined]
                              **{name: f"engine.{name}" for name in fields}}
    return call


class DistributedDPPCA(_ReleasedSubspace, _DPEstimator):
    """Differentially private PCA of data held by several sites (DPdisPCA, Imtiaz and Sarwate 2018).

    ``fit(sites)`` runs every site's private step where its data lives (a Dask worker by default) and
    releases the top-K eigenvectors of the aggregated proxies; only the proxies travel. Sites that fail
    (raise, lose their worker, or miss the ``site_failure`` timeout) are left out with a
    :class:`~dpspectral.distributed.SiteFailureWarning`; ``sites_contributed_`` says which sites the
    release used.

    Parameters
    ----------
    n_components : int or None, default=None
        K; None keeps all D features.
    epsilon : float
        Required; in (0, inf). Every site's own guarantee (and so the release's).
    delta : float
        Required; in (0, 1).
    row_norm : float
        Required: the public bound on each row's norm (rows above it are clipped at their site).
    intermediate_rank : int or None, default=None
        R, the rank of each site's proxy; None is ``min(D, max(2 K, (D + 1) // 2))`` (the
        paper's is ``min(2 K, D)``).
    method : str, default="dpdispca"
        A name from ``dpspectral.methods(task="distributed")`` (the registry's distributed entries; today
        DPdisPCA).
    engine : {"dask", "inprocess"} or Engine, default="dask"
        ``"dask"``: the sites run on ``dask.distributed`` workers: the active ``distributed.Client``;
        else the address in Dask's configuration (``DASK_SCHEDULER_ADDRESS``); else a ``LocalCluster``
        (one single-threaded process per worker) is started for the fit and closed after.
        ``DaskEngine(client=c)``, ``DaskEngine(scheduler_address=...)`` or ``DaskEngine(n_workers=...)``
        name the client, the scheduler or the size of that ``LocalCluster``
        (:class:`~dpspectral.distributed.DaskEngine`). A client the user opened is never replaced or
        closed (docs/algorithms/distributed.md, "Dask the way Dask users work"); the workers must have
        ``dpspectral`` installed. ``"inprocess"``: the sites run one after the other in this process.
    variant : {"proxy", "full"}, default="proxy"
        ``"proxy"``: sites send ``P_s`` (D x R); ``"full"``: the noisy ``A_hat_s`` (the paper's costlier
        baseline).
    weighting : {"equal", "size"} or array-like, default="equal"
        Aggregation weights: ``1/S`` (the paper), ``N_s / N`` (sites of different sizes), or public
        per-site weights.
    spectrum : {"eigh", "svd"}, default="eigh"
        Proxy from the R largest eigenvalues (negative ones clamped) or the R largest singular values
        (the paper's SVD).
    relation : {"replace_one", "add_remove"}, default="replace_one"
    calibration : {"tight", "paper"}, default="tight"
        ``"paper"`` uses the paper's spectral-norm noise, which the accountant does not certify for every
        (epsilon, delta) (:class:`~dpspectral.UncertifiedPrivacyWarning`).
    site_failure : SiteFailurePolicy or None, default=None
        How long to wait for a site, how many must answer, and whether one failure fails the fit
        (:class:`~dpspectral.distributed.SiteFailurePolicy`; None: its defaults).
    release_count : bool, default=False
        Under add/remove: every site also releases a noisy row count.
    accountant : Accountant or None, default=None
        Shared ledger, spent before any site releases.
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Site seeds are ``SeedSequence(random_state).spawn(S)``: the in-process and Dask engines give the
        same result. ``"secure"``: every site draws its noise from its own OS entropy with exact discrete
        samplers (not reproducible; ``privacy_.noise_source == "secure"``).
    on_norm_violation : {"clip", "raise"}, default="clip"
    public_basis : PublicBasis, ndarray, tuple or None, default=None
        A public orthonormal basis (as ``DPPCA``'s): every site projects its rows onto the same d' atoms
        before clipping, the protocol runs in d' dimensions and ``components_`` is lifted back (``B V``).
        With ``n_atoms="auto"`` the rule's n is the rows of all the sites (public under replace-one).
        ``docs/public-basis.md``.
    aggregation : {"independent", "secure"}, default="independent"
        ``"secure"``: secure aggregation (every site adds a share of the pooled noise and masks its
        message; the aggregator learns only the sum, with the pooled Analyze Gauss noise; extra
        ``secure``). See :func:`~dpspectral.distributed.dpdispca` and ``docs/algorithms/distributed.md``.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    explained_variance_ : ndarray of shape (n_components,) or None
        Released eigenvalues over the public N (replace-one) or the sum of released noisy counts,
        clamped at 0; None when neither is available.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Released eigenvalues over the larger of the trace of ``A_c`` and their sum: in [0, 1], summing
        to at most 1, never NaN.
    mean_ : ndarray of shape (n_features,)
        Zeros (the second-moment matrix is not centred, as in the paper).
    n_samples_ : float or None
    n_components_ : int
    n_features_in_ : int
    privacy_ : PrivacyReport
    result_ : DistributedResult
    sites_contributed_ : tuple of int
        The sites whose release entered the aggregate.
    sites_failed_ : dict of int -> str
        The sites left out, and why: a data-independent reason (the kind of problem, or a generic text;
        never a site's exception message, a row, a value, a count or a timing).
    bytes_sent_ : dict of int -> int
        Bytes of released numbers each site sent to the aggregator.

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral.distributed import DistributedDPPCA
    >>> rng = np.random.default_rng(0)
    >>> sites = [rng.normal(size=(500, 8)) / 4 for _ in range(3)]
    >>> est = DistributedDPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, engine="inprocess",
    ...                        random_state=0).fit(sites)
    >>> est.components_.shape, est.sites_contributed_
    ((2, 8), (0, 1, 2))
    """

    @_folded_into_engine
    @folded("site_failure", SiteFailurePolicy,
            {"site_timeout": "timeout", "min_sites": "min_sites", "on_site_failure": "on_failure"})
    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        row_norm: float | None = None,
        intermediate_rank: int | None = None,
        method: str = "dpdispca",
        engine: Any = "dask",
        variant: str = "proxy",
        weighting: Any = "equal",
        spectrum: str = "eigh",
        relation: str = "replace_one",
        calibration: str = "tight",
        site_failure: SiteFailurePolicy | None = None,
        release_count: bool = False,
        accountant: Accountant | None = None,
        random_state: Any = None,
        on_norm_violation: str = "clip",
        public_basis: Any = None,
        aggregation: str = "independent",
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.intermediate_rank = intermediate_rank
        self.method = method
        self.engine = engine
        self.variant = variant
        self.weighting = weighting
        self.spectrum = spectrum
        self.relation = relation
        self.calibration = calibration
        self.site_failure = site_failure
        self.release_count = release_count
        self.accountant = accountant
        self.random_state = random_state
        self.on_norm_violation = on_norm_violation
        self.public_basis = public_basis
        self.aggregation = aggregation

    _task = "distributed"
    _required_parameters = ("epsilon", "delta", "row_norm")
    #: The protocol's own tables (:func:`~dpspectral.distributed.dpdispca`), and the estimator's entries.
    _parameter_constraints = {
        **PROTOCOL_CONSTRAINTS,
        "n_components": N_COMPONENTS,  # <= n_features: the protocol's, once the sites are read
        "delta": DELTA,  # > 0 (Gaussian mechanism): the protocol's check, with its reason
        "intermediate_rank": N_COMPONENTS,  # <= n_features: the protocol's
        "method": method_names("distributed"),
        "engine": [Options(("dask", "inprocess")), Types((Engine,), "an Engine")],
        # the relations DPdisPCA protects ("replace_one", "add_remove") are checked by the protocol
        "relation": Types((str, Relation), "a str or Relation"),
        "site_failure": [Types((SiteFailurePolicy,), "a SiteFailurePolicy"), NONE],  # fields: the protocol's
        "accountant": ACCOUNTANT,
        "public_basis": PUBLIC_BASIS,
    }
    _parameters_checked_elsewhere = {
        "weighting": "'equal', 'size' or public per-site weights, whose length must be the number of "
                     "sites: checked by the protocol once the sites are known",
    }

    def _validate_params_dp(self) -> Method:
        """The registry entry of ``method`` (the table has checked every parameter; the checks that need
        the sites, such as ``n_components <= n_features``, are the protocol's)."""
        return get_method(self.method, owner=type(self).__name__)

    def _validate_single_site(self, sites: Any) -> Any:
        """One in-memory 2-D array (a single site): scikit-learn's structural checks, ``n_features_in_``.

        A nested list of numbers is one matrix (as scikit-learn reads it). Lists of sites, Dask arrays,
        collections and futures, and memmaps are passed through unchanged (the protocol checks their
        structure before the charge, and a list's rows at each site). Finiteness and row norms are the
        protocol's.
        """
        distributed = (isinstance(sites, (list, tuple, np.memmap)) or _is_dask_array(sites)
                       or is_dask_collection(sites) or is_dask_future(sites))
        in_memory = hasattr(sites, "shape") or hasattr(sites, "__array__")
        if not _is_row_list(sites) and (distributed or not in_memory):
            return sites
        try:  # under add/remove an empty site is a neighbour of a one-row site: never refused for that
            min_samples = 1 if Relation(self.relation).n_is_public else 0
        except ValueError:
            min_samples = 1  # a bad relation is refused by the protocol, with its message
        return validated_data(self, sites, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                             ensure_all_finite=False, ensure_min_samples=min_samples, copy=False,
                             reset=True)

    def _k(self, sites: Any) -> int:
        """K: ``n_components``, or every feature when it is None (read from the sites' structure only)."""
        owner = type(self).__name__
        if self.n_components is not None:
            return self.n_components
        d = _as_sites(sites, None, owner, validate=False).n_features  # structure only (public)
        if d is None:
            raise ValueError(f"The 'n_components' parameter of {owner} must be an int when the number "
                             "of features is not known before the sites run (futures). Got None.")
        return int(d)

    def fit(self, sites: Any, y: Any = None) -> DistributedDPPCA:
        """Run the protocol on ``sites`` (see :func:`~dpspectral.distributed.dpdispca`).

        Validate the public parameters -> the sites' structure -> release (the registry entry's protocol:
        every site's private step where its data lives, then the aggregator's release) -> store.

        Parameters
        ----------
        sites : list of per-site arrays (or Dask futures), a Dask array whose row blocks are the sites
            (under add/remove only with one row block), or one 2-D array-like (a single site; a nested
            list of numbers is one matrix)
        y : ignored

        Returns
        -------
        self

        Privacy
        -------
        That of :func:`~dpspectral.distributed.dpdispca`: every site's release is ``(epsilon, delta)``-DP
        for its own rows under ``relation``; the sites' rows are disjoint, so the aggregate has the same
        guarantee (parallel composition). A list's entries are the sites' own rows. A Dask array's row
        blocks are positions in one ordered array, which a row added or removed moves: under add/remove
        an array of several row blocks is refused before anything is charged (pass one entry per site,
        or use ``relation="replace_one"``, where a replaced row keeps its position). The ledger is
        charged once, before any site releases.
        """
        self._check_parameter_table()
        entry = self._validate_params_dp()
        sites = self._validate_single_site(sites)
        basis, sites = self._project_sites(sites)
        result = self._release(entry, sites, self._k(sites))
        self._store(result if basis is None else _lift_subspace(result, basis))
        return self

    def _project_sites(self, sites: Any) -> tuple[Any, Any]:
        """``public_basis``: every site projects its rows onto the same basis (d' from public facts).

        Under replace-one the rule's n is the number of rows of all the sites (public). Refused, before
        anything is charged, for Dask futures or collections (project the rows where they live).
        """
        if self.public_basis is None:
            return None, sites
        owner = type(self).__name__
        if isinstance(sites, (list, tuple)) and sites and all(hasattr(s, "shape") for s in sites):
            source: Any = list(sites)
        elif hasattr(sites, "shape") and not isinstance(sites, (list, tuple)):
            source = sites
        else:
            raise ValueError(f"{owner}: public_basis needs the sites as a list of arrays or one (Dask) "
                             "array; "
                             "for Dask futures or collections project each site's rows onto the basis "
                             "where they live first. Nothing was charged.")
        k = self.n_components if self.n_components is not None else 1
        basis = resolve_for(as_public_basis(self.public_basis, owner), source, int(k),
                            {"epsilon": self.epsilon, "delta": self.delta, "relation": self.relation}, owner)
        if isinstance(source, list):
            return basis, [basis.project(s) for s in source]
        return basis, basis.project(source)

    def _release(self, entry: Method, sites: Any, k: int) -> DistributedResult:
        """The registry entry's protocol, with this estimator's name in its messages."""
        if self.aggregation == "secure":
            mechanism = f"{entry.name}_secure"
        else:
            mechanism = entry.name if self.variant == "proxy" else f"{entry.name}_full"
        call = _Call(
            mechanism, self.epsilon, self.delta, self.row_norm,  # type: ignore[arg-type]
            relation=self.relation, calibration=self.calibration,
            variant=self.variant,  # type: ignore[arg-type]
            intermediate_rank=self.intermediate_rank, weighting=self.weighting,
            spectrum=self.spectrum,  # type: ignore[arg-type]
            site_failure=self.site_failure, release_count=self.release_count,
            on_norm_violation=self.on_norm_violation,  # type: ignore[arg-type]
            aggregation=self.aggregation, engine=self.engine,
            settings=RunSettings(self.accountant, self.random_state), stacklevel=4,
            owner=type(self).__name__)
        return _run_protocol(sites, k, call)

    def _store(self, result: DistributedResult) -> None:
        """Keep the released quantities as fitted attributes."""
        values = np.asarray(result.values)
        self.components_ = result.components.T.copy()
        self.n_components_ = int(self.components_.shape[0])
        self.n_features_in_ = int(self.components_.shape[1])
        self.n_samples_ = result.n_samples
        n = result.n_samples
        variances = released_variances(values, result.total)  # in [0, 1], sum <= 1, never NaN
        self.explained_variance_ = None if not n else variances.values / n
        self.explained_variance_ratio_ = variances.ratios
        self.mean_ = np.zeros(self.n_features_in_)
        self.privacy_ = result.privacy
        self.result_ = result
        self.sites_contributed_ = result.contributing_sites
        self.sites_failed_ = result.failed_sites
        self.bytes_sent_ = result.bytes_sent

    def fit_transform(self, sites: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit on ``sites``, then project every site's rows on the released components.

        Returns
        -------
        ndarray of shape (n_rows, n_components)
            ``X_s @ components_.T`` for every site, stacked in site order (one 2-D array: its rows; a
            Dask array: its rows in order). The projection is the caller's own computation on their
            data (as ``transform``), not a release. Sites held as Dask futures or collections are
            fetched to this process to be projected.
        """
        self.fit(sites, y, **fit_params)
        return self.transform_sites(sites)

    def transform_sites(self, sites: Any) -> np.ndarray:
        """``transform`` of every site's rows, stacked in site order (see :meth:`fit_transform`)."""
        check_is_fitted(self, "components_")
        if _is_dask_array(sites):
            return np.asarray((sites @ self.components_.T).compute())
        if not isinstance(sites, (list, tuple)) or _is_row_list(sites):
            sites = [sites]  # one site
        parts = []
        for site in sites:
            data = _materialise(site)
            if getattr(data, "shape", (1,))[0] == 0:  # an empty site (add/remove neighbours)
                parts.append(np.zeros((0, self.n_components_)))
            else:
                parts.append(self.transform(data))
        return np.vstack(parts) if parts else np.zeros((0, self.n_components_))

    def _projection(self) -> Projection:
        """``X @ components_.T``: no clipping, no centring."""
        return Projection(self.components_.T)

    def transform(self, X: Any) -> Any:
        """Project ``X`` on the released components (``X @ components_.T``; no clipping, no centring).

        A Dask array gives a Dask array (lazy: the projection of each block of rows).
        """
        return super().transform(X)

    def inverse_transform(self, X: Any) -> Any:
        """Map projected data back: ``X @ components_`` (the released subspace's coordinates).

        A Dask array gives a Dask array (lazy). Post-processing of the released model: it costs nothing.
        """
        return super().inverse_transform(X)

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # sparse sites are read block by block (csr, csc)
        return tags
