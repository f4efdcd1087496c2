"""The site side of DPdisPCA (Imtiaz and Sarwate 2018, Algorithm 1, steps 2-7).

A site holds rows ``X_s`` (``N_s x D``) that never leave it. It computes the second-moment matrix of its
clipped rows, adds symmetric Gaussian noise once (Analyze Gauss), and sends the aggregator only a
function of that noisy matrix:

* ``variant="proxy"`` (the paper's DPdisPCA): the rank-R proxy ``P_s = U_R Sigma_R^{1/2}`` of the noisy
  ``A_hat_s`` (``D x R`` numbers);
* ``variant="full"`` (the paper's "sending A_s" baseline): the noisy ``A_hat_s`` itself, as its packed
  upper triangle (``D (D + 1) / 2`` numbers).

Everything here is a plain function of (data, public plan, seed), so the same code runs in-process, on a
Dask worker, or anywhere else; :func:`site_step` is the unit of work the engines ship to the sites.

The pipeline, site by site: the aggregator builds every site's
:class:`~dpspectral.privacy._pipeline.ReleasePlan` from public inputs (:func:`site_release_plan`, wrapped
in the :class:`SitePlan` it ships) and charges the run before any site runs; the site validates its rows,
then draws its noise only through that plan (:func:`release_second_moment`) from its own noise source
(its child ``SeedSequence``, or ``"secure"``: its own OS entropy), then reduces.

Privacy
-------
Relation: replace-one (the paper's; ``N_s`` is then public) or add/remove, per site. The released vector
is the upper triangle (with the diagonal) of ``S_s = sum_i c(x_i) c(x_i)^T`` for rows clipped to the
public norm ``C`` (``c(x) = x min(1, C / ||x||)``); the L2 sensitivity is at most the Frobenius norm of
the change of ``S_s``: ``sqrt(2) C^2`` under replace-one (``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 -
2 (x.y)^2 <= 2 C^4``), ``C^2`` under add/remove (``||x x^T||_F = ||x||^2``). Dividing by the public
``N_s`` (replace-one) is post-processing, so on ``A_s = S_s / N_s`` the noise standard deviation is
``sigma / N_s`` for the sensitivity ``sqrt(2) C^2 / N_s``. The paper bounds the change by the *spectral*
norm (``||A_s - A'_s||_2 <= 1 / N_s``), which is not the sensitivity the Gaussian mechanism needs (it
adds noise to ``D (D + 1) / 2`` coordinates, whose change is measured in L2); ``calibration="paper"``
reproduces that noise and is certified only where the accountant agrees. Event per site:
``GaussianDpEvent(sigma / Delta)`` (plus a count event under add/remove when a noisy count is released).
The eigendecomposition, the truncation to rank R and the square roots are post-processing. Under
add/remove a site with no rows releases its noise on a zero scatter like any other site. A failure is
reported to the aggregator as its kind only (:func:`failure_reason`), and no timing is sent.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

import dp_accounting
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._constraints import check_choice
from .._linalg import fix_signs
from .._moments import accumulate, grouped_summation, summation_of
from .._rows import NonPrivateDataError
from ..pca._covariance import covariance_plan
from ..privacy._accounting import compose
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._gaussian import classic_noise_multiplier
from ..privacy._noise import noise_source, seeded_source_name
from ..privacy._pipeline import NoisyRelease, ReleasePlan, validate_rows
from ..privacy._rounding import Summation, rows_bound, statistic_error, widen_release, widened
from ..privacy._template import charged_elsewhere

__all__ = [
    "SECURE",
    "SiteInputError",
    "SitePayload",
    "SitePlan",
    "SiteStepError",
    "Spectrum",
    "Variant",
    "failure_reason",
    "pack_upper",
    "plan_site_release",
    "site_release_plan",
    "proxy_from_eigh",
    "proxy_from_matrix",
    "release_second_moment",
    "site_eigh",
    "site_step",
    "top_k_of_eigh",
    "unpack_upper",
]

Variant = Literal["proxy", "full"]
Spectrum = Literal["svd", "eigh"]
#: What a site draws its noise from: its child ``SeedSequence``, or ``"secure"`` (its own OS entropy).
SiteSeed = np.random.SeedSequence | str


#: The label of one site's release plan (the site's plan is not charged at the site: see SitePlan).
SITE_LABEL = "dpdispca site"
#: The seed a site receives for ``random_state="secure"``: it draws from its own OS entropy.
SECURE = "secure"


@dataclass(frozen=True)
class SitePlan:
    """The public settings of every site's release, fixed by the aggregator before any site runs.

    It wraps the site's :class:`~dpspectral.privacy._pipeline.ReleasePlan` (``release``: the noisy
    scatter, and the noisy count when one is released), built from public inputs by
    :func:`site_release_plan`; a site draws its noise only through that plan
    (:func:`release_second_moment`). ``scatter_std`` and ``count_std`` are read from it. Code that
    states the noise scales instead (``SitePlan(..., scatter_std=s, count_std=c)`` without
    ``release``, as the reproductions do) gets the plan of those scales, with the sensitivities of the
    module docstring.

    Attributes
    ----------
    variant : {"proxy", "full"}
        What a site sends: the rank-R proxy ``P_s`` or the whole noisy ``A_hat_s``.
    rank : int
        The intermediate dimension R (``variant="proxy"``).
    spectrum : {"svd", "eigh"}
        ``"svd"`` (the paper's step 5): the R largest singular values of the symmetric ``A_hat_s``
        (eigenvalues by magnitude, ``Sigma = |Lambda|``). ``"eigh"``: the R largest eigenvalues, negative
        ones clamped to 0 (the true ``A_s`` is positive semi-definite, so a negative eigenvalue of the
        noisy matrix is noise).
    relation : Relation
    calibration : str
    row_norm : float
        The public clipping bound C.
    scatter_std : float
        Standard deviation of the noise on each entry on and above the diagonal of ``S_s`` (the
        unnormalised scatter); on ``A_s = S_s / N_s`` it is ``scatter_std / N_s``.
    count_std : float or None
        Standard deviation of the noisy row count (add/remove neighbours only), or None.
    on_norm_violation : {"clip", "raise"}
    n_features : int or None
        The expected D (checked at the site), when the aggregator knows it in advance.
    release : ReleasePlan
        The site's releases ("scatter", and "count" when planned) and their events. The events are
        not charged at the site: the aggregator charges the run's parallel composition of them before
        any site is asked to release.
    noise : {"exact", "float"}
        What a site with a seed draws: the exact discrete samplers (``"exact"``) or NumPy's
        floating-point samples (``"float"``). Decided where the plan is made, from
        ``dpspectral.config_context(noise=...)`` there (when not given), and sent to the sites with the
        plan: the configuration where a site runs (a Dask worker's thread or process) plays no part.
        A site with ``random_state="secure"`` draws from its OS entropy with exact samplers whatever
        this says.
    """

    variant: Variant
    rank: int
    spectrum: Spectrum
    relation: Relation
    calibration: str
    row_norm: float
    scatter_std: float | None = None
    count_std: float | None = None
    on_norm_violation: NormViolation = "clip"
    n_features: int | None = None
    release: ReleasePlan | None = None
    noise: str | None = None

    def __post_init__(self) -> None:
        if self.noise is None:  # the configuration of the thread that plans the run (the aggregator's)
            object.__setattr__(self, "noise", seeded_source_name())
        elif self.noise not in ("exact", "float"):
            raise ValueError(f"A SitePlan's noise is 'exact' or 'float'. Got {self.noise!r} instead.")
        plan = self.release
        if plan is None:
            if self.scatter_std is None:
                raise ValueError("A SitePlan needs its release plan (site_release_plan) or its noise "
                                 "scales (scatter_std, count_std).")
            plan = _plan_from_scales(self.relation, self.row_norm, self.scatter_std, self.count_std,
                                     self.n_features)
            object.__setattr__(self, "release", plan)
            object.__setattr__(self, "scatter_std", plan["scatter"].scale)  # widened for rounding
            return
        if plan.relation is not self.relation:
            raise ValueError(f"A SitePlan's release plan is for {plan.relation.value}, not "
                             f"{self.relation.value}.")
        stds = (plan["scatter"].scale, _count_std(plan))
        given = (self.scatter_std, self.count_std)
        if any(g is not None and g != s for g, s in zip(given, stds, strict=True)):
            raise ValueError("A SitePlan's noise scales must be those of its release plan.")
        object.__setattr__(self, "scatter_std", stds[0])
        object.__setattr__(self, "count_std", stds[1])

    def noise_source(self, seed: Any) -> Any:
        """The noise source of a site whose own randomness is ``seed``, drawing :attr:`noise`.

        A ``SeedSequence`` or a ``Generator`` gives the plan's seeded source (exact or float, as
        planned); :data:`SECURE` and a noise source pass through (``"secure"``: the site's OS entropy,
        exact samplers).
        """
        if isinstance(seed, np.random.SeedSequence | np.random.Generator):
            return noise_source(seed, seeded=self.noise)
        return seed

    @property
    def release_plan(self) -> ReleasePlan:
        """The site's :class:`~dpspectral.privacy._pipeline.ReleasePlan` (``release``, never None)."""
        assert self.release is not None
        return self.release

    @property
    def normalised(self) -> bool:
        """Whether the site releases ``A_s = S_s / N_s`` (by the public N_s or a noisy count)."""
        return self.relation.n_is_public or self.count_std is not None


@dataclass(frozen=True)
class SitePayload:
    """What one site sends to the aggregator: released quantities and public facts only.

    Attributes
    ----------
    site : int
        The site's index (public).
    variant : {"proxy", "full"}
    matrix : ndarray
        ``P_s`` of shape (D, R), or the packed upper triangle of ``A_hat_s``, shape (D (D + 1) / 2,).
    n_features : int
        D.
    n_samples : int or None
        ``N_s`` when it is public (replace-one neighbours), else None.
    noisy_count : float or None
        The released noisy ``N_s`` (add/remove neighbours, when requested), else None.
    normalised : bool
        True when ``matrix`` is on the scale of ``A_s = S_s / N_s``; False for the unnormalised scatter.
    scatter_std : float or None
        The standard deviation of the noise the site drew on each entry on and above the diagonal of its
        scatter ``S_s``: the plan's, or larger where the site's own rounding bound is (:func:`_at_site`).
        A public fact of the plan, never of the rows: a function of the plan, the input's kind (a Dask
        array's chunks, the width) and, under replace-one only, the public N_s. None where not stated.
    scatter_sensitivity : float or None
        The sensitivity that scale was drawn for (widened with it: the noise multiplier is the plan's).

    No timing travels: how long a site took depends on its private rows.
    """

    site: int
    variant: Variant
    matrix: np.ndarray
    n_features: int
    n_samples: int | None
    noisy_count: float | None
    normalised: bool
    scatter_std: float | None = None
    scatter_sensitivity: float | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the released numbers (the wire format adds a few hundred bytes of framing)."""
        extra = 8 * sum(v is not None for v in (self.n_samples, self.noisy_count))
        return int(self.matrix.nbytes) + extra

    def gram(self) -> np.ndarray:
        """Return ``P_s P_s^T`` (proxy) or the symmetric ``A_hat_s`` (full), D x D."""
        if self.variant == "proxy":
            return self.matrix @ self.matrix.T
        return unpack_upper(self.matrix, self.n_features)


def pack_upper(M: np.ndarray) -> np.ndarray:
    """The upper triangle (with the diagonal) of a square matrix, row by row."""
    return M[np.triu_indices(M.shape[0])].copy()


def unpack_upper(v: np.ndarray, d: int) -> np.ndarray:
    """The symmetric d x d matrix whose packed upper triangle is ``v`` (inverse of :func:`pack_upper`)."""
    if v.shape != (d * (d + 1) // 2,):
        raise ValueError(f"A packed upper triangle of a {d} x {d} matrix has {d * (d + 1) // 2} entries; "
                         f"got shape {v.shape}.")
    M = np.zeros((d, d))
    M[np.triu_indices(d)] = v
    return M + np.triu(M, 1).T


def _count_std(plan: ReleasePlan) -> float | None:
    return next((r.scale for r in plan.releases if r.name == "count"), None)


def _plan_from_scales(relation: Relation, row_norm: float, scatter_std: float,
                      count_std: float | None, d: int | None = None) -> ReleasePlan:
    """The site plan of given noise scales: the sensitivities of the module docstring, the events
    ``GaussianDpEvent(std / sensitivity)`` (count: sensitivity 1)."""
    C = sensitivity_norm(row_norm)
    sensitivity = (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * C**2
    releases = [NoisyRelease("scatter", "gaussian", float(scatter_std), sensitivity)]
    if count_std is not None:
        releases.append(NoisyRelease("count", "gaussian", float(count_std), 1.0))
    events = tuple(dp_accounting.GaussianDpEvent(r.scale / (r.sensitivity or 1.0)) for r in releases)
    return ReleasePlan(SITE_LABEL, relation, events, (_scatter_widened(releases[0], relation, C, d),)
                       + tuple(releases[1:]))


def planned_summation(relation: Relation, d: int | None) -> Summation:
    """How the aggregator counts a site's summation of ``S_s`` when it plans the scatter, before any site
    has read its rows (``d``: the public width when known, None: any width).

    Under add/remove every way a site sums its rows (in memory, a memory map, sparse, a stream of
    blocks, each chunk of a Dask array) goes through the CPU path of
    :func:`~dpspectral._moments.accumulate`, summed in groups in float64
    (:func:`~dpspectral._moments.grouped_summation`, whatever the input's dtype), so the plan is taken at
    that path's public rows (:func:`~dpspectral.privacy._rounding.public_rows`; a Dask site's tree
    above its chunks is its own, larger bound: :func:`_at_site`). Under replace-one the plan keeps any
    grouping (``h <= N_s + 1``) at the small public rows, and each site restates it at its public N_s.
    """
    return Summation() if relation.n_is_public else grouped_summation(d)


def _scatter_widened(release: NoisyRelease, relation: Relation, C: float,
                     d: int | None = None) -> NoisyRelease:
    """A site's scatter release widened for the rounding of its computed ``S_s`` as the aggregator plans
    it, before any site has read its rows: terms ``x x^T`` of Frobenius norm ``C^2``, summed as
    :func:`planned_summation` counts, at :func:`~dpspectral.privacy._rounding.rows_bound` rows with N_s
    not known yet (a public number); a site whose own bound is larger restates it (:func:`_at_site`)."""
    return widen_release(release, n=None, relation=relation, kind="products", term_bound=C**2,
                         summation=planned_summation(relation, d))


def _at_site(plan: SitePlan, n: int, summation: Summation) -> SitePlan:
    """``plan`` as this site releases it: the scatter widened further where the site's own rounding
    bound (its summation path: a Dask array's partials; its N_s where public, under replace-one) exceeds
    the planned one (:func:`_scatter_widened`). Under add/remove both are taken at the plan's public
    rows, never at N_s.

    The noise multiplier (the charged event) is unchanged; the larger scale is a function of public
    facts, and the site states it with its payload (:attr:`SitePayload.scatter_std`), so that the report
    says what was drawn.
    """
    release = plan.release_plan
    scatter = release["scatter"]
    C = sensitivity_norm(plan.row_norm)
    planned = planned_summation(plan.relation, plan.n_features)
    at_plan = statistic_error(planned, rows_bound(None, plan.relation, planned, kind="products"), C**2,
                              kind="products")
    mine = statistic_error(summation, rows_bound(n, plan.relation, planned, kind="products"), C**2,
                           kind="products")
    if scatter.sensitivity is None or mine <= at_plan:
        return plan
    scale, sensitivity = widened(scatter.scale, scatter.sensitivity, 2.0 * mine / scatter.sensitivity)
    more = dataclasses.replace(scatter, scale=scale, sensitivity=sensitivity)
    restated = dataclasses.replace(release, releases=tuple(more if r.name == "scatter" else r
                                                           for r in release.releases))
    return dataclasses.replace(plan, release=restated, scatter_std=scale)


def _paper_site_plan(budget: PrivacyBudget, row_norm: float) -> ReleasePlan:
    """Imtiaz and Sarwate's noise under replace-one: the classic formula on the spectral sensitivity."""
    C = sensitivity_norm(row_norm)
    s_paper = classic_noise_multiplier(budget.epsilon, budget.delta)
    scatter_std = s_paper * C**2  # the paper's Delta = sqrt(2 ln(1.25/delta)) / (N_s eps), times N_s C^2
    frobenius = math.sqrt(2.0) * C**2
    note = (
        "DPdisPCA with the paper's noise: sqrt(2 ln(1.25/delta))/epsilon times the spectral-norm bound "
        "1/N_s on ||A_s - A'_s|| (Imtiaz and Sarwate 2018). The Gaussian mechanism needs the L2 "
        "(Frobenius) sensitivity sqrt(2) C^2 / N_s of the released upper triangle, so the noise is "
        "sqrt(2) too small for the classic formula; certified only where the accountant agrees."
    )
    return ReleasePlan(SITE_LABEL, Relation.REPLACE_ONE,
                       (dp_accounting.GaussianDpEvent(scatter_std / frobenius),),
                       (_scatter_widened(NoisyRelease("scatter", "gaussian", scatter_std, frobenius),
                                         Relation.REPLACE_ONE, C),), notes=(note,))


def site_release_plan(
    *,
    budget: PrivacyBudget,
    relation: Relation,
    calibration: str,
    row_norm: float,
    release_count: bool,
    n_features: int | None = None,
) -> ReleasePlan:
    """The releases of one site (``"scatter"``, and ``"count"`` when one is released), from public inputs.

    ``calibration="tight"`` is the library's Analyze Gauss plan (:mod:`dpspectral.pca._covariance`):
    the analytic Gaussian mechanism for the Frobenius sensitivity, with the budget split exactly with the
    count when one is released. ``calibration="paper"`` is the noise of Imtiaz and Sarwate (2018),
    ``sqrt(2 ln(1.25/delta)) / epsilon`` times the *spectral* sensitivity ``C^2`` of ``S_s``
    (``1 / N_s`` of ``A_s`` for ``C = 1``) under replace-one; under add/remove the spectral and Frobenius
    sensitivities of ``S_s`` coincide (``C^2``) and it is the classic Analyze Gauss formula.

    The noise does not depend on N_s: the standard deviation on ``A_s = S_s / N_s`` is
    ``scatter_std / N_s``, which is how the paper writes it. ``n_features``: the sites' public number of
    features D where the aggregator knows it (the rounding bound of an add/remove plan is taken for it;
    None: for any D).

    Privacy
    -------
    Each release declares its L2 sensitivity under ``relation``: the scatter ``sqrt(2) C^2``
    (replace-one) or ``C^2`` (add/remove), the count 1 (module docstring). The events are one site's;
    the protocol charges their parallel composition over the sites (a row is in one site only). The
    scatter's std and sensitivity are both widened for the rounding of the computed ``S_s`` at a public
    number of rows (N_s is not known when the plan is made): under add/remove that of rows summed in
    groups, up to ``2**28``; under replace-one ``2**16``. A site whose own bound is larger (a Dask
    array's tree of partials; under replace-one, more rows) widens its draw further, the multiplier
    unchanged, and states the scale it drew (docs/noise.md).
    """
    if calibration == "paper" and relation is Relation.REPLACE_ONE:
        return _paper_site_plan(budget, row_norm)
    plan = covariance_plan(
        "analyze_gauss", budget=budget, relation=relation, calibration=calibration, row_norm=row_norm,
        n=None, d=None, private_mean=False, release_count=release_count, mean_share=0.1,
        summation=planned_summation(relation, n_features),
    )
    return dataclasses.replace(plan, label=SITE_LABEL)


def plan_site_release(
    *,
    budget: PrivacyBudget,
    relation: Relation,
    calibration: str,
    row_norm: float,
    release_count: bool,
    n_features: int | None = None,
) -> tuple[float, float | None, dp_accounting.DpEvent, list[str]]:
    """:func:`site_release_plan` as ``(scatter_std, count_std, event, notes)`` (its one composed event).

    Privacy
    -------
    That of :func:`site_release_plan`, whose plan this reads.
    """
    plan = site_release_plan(budget=budget, relation=relation, calibration=calibration, row_norm=row_norm,
                             release_count=release_count, n_features=n_features)
    return plan["scatter"].scale, _count_std(plan), compose(plan.events), list(plan.notes)


def release_second_moment(
    scatter: np.ndarray, n: int, plan: SitePlan, noise: Any  # a random state (see below) or a noise source
) -> tuple[np.ndarray, float | None]:
    """The site's one release: ``A_hat_s`` (and the noisy count under add/remove when planned).

    ``scatter`` is ``S_s = X_s^T X_s`` of the clipped rows (never released as such). Returns
    ``(A_hat_s, noisy_count)`` where ``A_hat_s = (S_s + E) / N_s`` under replace-one (N_s public),
    ``(S_s + E) / max(noisy_count, 1)`` under add/remove with a count, and ``S_s + E`` otherwise. The
    noise ``E`` is drawn first, then the count, so the stream of random numbers is fixed by the seed.
    ``noise``: the site's own randomness: its child ``SeedSequence``, a NumPy generator (seeded: drawn
    as ``plan.noise`` says), :data:`SECURE` (its own OS entropy and exact samplers) or a noise source.

    Privacy
    -------
    The noise is drawn only through the site's plan (``plan.release``), inside
    :func:`~dpspectral.privacy._template.charged_elsewhere` (no ledger): the aggregator charged the run's
    parallel composition before dispatching the sites (a standalone call charges nothing). Symmetric
    Gaussian noise on the upper triangle of ``S_s`` (sensitivity in the module docstring) and Gaussian
    noise on the count (sensitivity 1); the division is post-processing.
    """
    with charged_elsewhere(plan.release_plan, plan.noise_source(noise)) as releaser:
        S_hat = releaser.add_symmetric("scatter", np.asarray(scatter, dtype=np.float64))
        noisy_count = None
        if plan.count_std is not None:
            noisy_count = float(releaser.add("count", float(n)))
    if plan.relation.n_is_public:
        S_hat /= float(n)
    elif noisy_count is not None:
        S_hat /= max(noisy_count, 1.0)
    return S_hat, noisy_count


def site_eigh(A_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All eigenpairs of a symmetric matrix, ascending (LAPACK ``syevd``; only the upper triangle is read)."""
    w, U = scipy.linalg.eigh(A_hat, lower=False, check_finite=False, driver="evd")
    return w, U


def proxy_from_eigh(w: np.ndarray, U: np.ndarray, rank: int, spectrum: Spectrum) -> np.ndarray:
    """``P = U_R Sigma_R^{1/2}`` from an eigendecomposition ``(w ascending, U)`` of ``A_hat``.

    ``spectrum="svd"``: the R largest ``|w|`` (the singular values of a symmetric matrix, as in the
    paper's step 5); ``"eigh"``: the R largest ``w``, negative ones clamped to 0. Columns ordered by
    decreasing weight, signs fixed (``P P^T`` does not depend on them).
    """
    d = w.shape[0]
    if spectrum == "svd":
        order = np.argsort(-np.abs(w), kind="stable")[:rank]
        weights = np.abs(w[order])
    else:
        order = np.arange(d - 1, d - 1 - rank, -1)
        weights = np.maximum(w[order], 0.0)
    return fix_signs(U[:, order]) * np.sqrt(weights)


def proxy_from_matrix(A_hat: np.ndarray, rank: int, spectrum: Spectrum) -> np.ndarray:
    """:func:`proxy_from_eigh` of the eigendecomposition of ``A_hat``."""
    w, U = site_eigh(A_hat)
    return proxy_from_eigh(w, U, rank, spectrum)


def top_k_of_eigh(w: np.ndarray, U: np.ndarray, k: int, spectrum: Spectrum) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs ``(values, vectors)`` from ``(w ascending, U)``: by value (``"eigh"``) or by
    magnitude (``"svd"``, the paper's SVD of a symmetric matrix). Values are the signed eigenvalues."""
    d = w.shape[0]
    order = (np.argsort(-np.abs(w), kind="stable")[:k] if spectrum == "svd"
             else np.arange(d - 1, d - 1 - k, -1))
    return w[order], fix_signs(U[:, order])


class SiteInputError(ValueError):
    """A site's input is malformed in a way stated from public facts only (its number of features, a
    non-numeric dtype, no rows under replace-one where N_s is public)."""


class SiteStepError(RuntimeError):
    """A site's step failed for a reason whose details stay at the site (they may describe its rows)."""


#: What the aggregator learns about a site whose step raised something other than a data-independent
#: error of this module or of :mod:`dpspectral.privacy._pipeline`.
GENERIC_FAILURE = ("an error at the site; its type and message stay at the site (they may describe the "
                   "site's private data)")

_REPORTABLE = (NonPrivateDataError, SiteInputError, SiteStepError)


def failure_reason(exc: BaseException) -> str:
    """The data-independent reason the aggregator may learn for a site's failure.

    :class:`~dpspectral.privacy._pipeline.NonPrivateDataError` (NaN/inf, a row over the bound with
    ``on_norm_violation="raise"``: fixed texts that name no row, value or count), :class:`SiteInputError`
    and :class:`SiteStepError` keep their one-line text; any other exception (raised by the caller's
    code computing a site's data, say) is reported as :data:`GENERIC_FAILURE`, without its type or text.
    """
    if isinstance(exc, _REPORTABLE):
        lines = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return GENERIC_FAILURE


def _check_features(d: int, plan: SitePlan, owner: str) -> None:
    if plan.n_features is not None and d != plan.n_features:
        raise SiteInputError(f"{owner} has {d} features; the other sites have {plan.n_features}.")


def _empty_site(d: int, plan: SitePlan, owner: str) -> tuple[np.ndarray, int, int]:
    """A site with no rows: under add/remove (N_s private) it releases its noise on a zero scatter like
    any other site; under replace-one N_s = 0 is public and a site needs rows."""
    if plan.relation.n_is_public:
        raise SiteInputError(f"{owner} holds no rows (N_s is public under replace-one neighbours, and a "
                             "site needs at least one).")
    return np.zeros((d, d)), 0, d


def _site_scatter(data: Any, plan: SitePlan, owner: str) -> tuple[np.ndarray, int, int]:
    """``(S_s, N_s, D)``: the clipped scatter of the site's rows, its row count and its features.

    An in-memory array (or a list of blocks) is validated whole first (:func:`validate_rows`); a
    one-shot stream is checked as it is read. The errors name no row, value or count.
    """
    if sp.issparse(data) or isinstance(data, np.ndarray):
        arr = data if sp.issparse(data) else np.asarray(data)
        if arr.ndim != 2:
            raise SiteInputError(f"{owner}: the data must be 2-D (n_samples, n_features); got a "
                                 f"{arr.ndim}-D array.")
        if arr.dtype.kind not in "biuf":
            shown = "text" if arr.dtype.kind in "US" else f"dtype {arr.dtype}"  # a text dtype's width is data
            raise SiteInputError(f"{owner} needs numeric data; got {shown}.")
        _check_features(int(arr.shape[1]), plan, owner)
        if arr.shape[0] == 0:
            return _empty_site(int(arr.shape[1]), plan, owner)
        validate_rows(arr, row_norm=plan.row_norm, on_norm_violation=plan.on_norm_violation, owner=owner)
        data = arr
    elif isinstance(data, (list, tuple)) and data and all(hasattr(b, "shape") for b in data):
        d = int(data[0].shape[1])
        _check_features(d, plan, owner)
        if sum(int(b.shape[0]) for b in data) == 0:
            return _empty_site(d, plan, owner)
        validate_rows(list(data), row_norm=plan.row_norm, on_norm_violation=plan.on_norm_violation,
                      owner=owner)
    moments = accumulate(data, row_norm=plan.row_norm, on_norm_violation=plan.on_norm_violation,
                         want_sum=False, want_second=True, owner=owner, show_progress=False)
    _check_features(moments.d, plan, owner)
    assert moments.second is not None
    return moments.second, moments.n, moments.d


def site_step(data: Any, plan: SitePlan, seed: SiteSeed, site: int) -> SitePayload:
    """Everything one site does, where its data lives: validate, clip, ``X^T X``, release, reduce.

    Parameters
    ----------
    data : array-like of shape (N_s, D), sparse matrix, or iterable of row blocks
        The site's private rows. Never modified (clipping works on copies). Under add/remove
        neighbours a site may hold no rows (N_s is private): it releases its noise on a zero scatter
        like any other site.
    plan : SitePlan
        Public settings, the same for every site.
    seed : numpy SeedSequence or "secure"
        This site's own stream (a child of the run's ``SeedSequence``), or :data:`SECURE`: the site
        draws from its own OS entropy with exact samplers.
    site : int
        The site's index (for messages and the payload).

    Returns
    -------
    SitePayload
        Only released quantities and public facts (no timing).

    Raises
    ------
    NonPrivateDataError, SiteInputError
        Data-independent texts (the kind of problem, no row, value or count).
    SiteStepError
        Any other failure, with a generic text: the original message stays at the site.

    Privacy
    -------
    One Gaussian release of the upper triangle of the clipped scatter (see the module docstring), plus a
    noisy count under add/remove when planned, drawn through the plan (:func:`release_second_moment`;
    the aggregator charged the run before dispatch). How many rows were clipped is never returned, and what
    a failure sends the aggregator is the kind of problem only (:func:`failure_reason`). The scale the
    site drew is returned as a fact of its plan (:func:`_at_site`): under add/remove it does not depend
    on N_s.
    """
    owner = f"DPdisPCA site {site}"
    try:
        scatter, n, d = _site_scatter(data, plan, owner)
        if plan.variant == "proxy" and plan.rank > d:
            raise SiteInputError(f"{owner}: intermediate_rank={plan.rank} exceeds the {d} features.")
        drawn = _at_site(plan, n, summation_of(data))
        A_hat, noisy_count = release_second_moment(scatter, n, drawn, seed)
        if plan.variant == "full":
            matrix = pack_upper(A_hat)
        else:
            matrix = proxy_from_matrix(A_hat, plan.rank, plan.spectrum)
    except _REPORTABLE:
        raise
    except Exception:  # its text may describe the rows: it stays here
        raise SiteStepError(f"{owner}: {GENERIC_FAILURE}.") from None
    return SitePayload(
        site=site, variant=plan.variant, matrix=matrix, n_features=d,
        n_samples=n if plan.relation.n_is_public else None, noisy_count=noisy_count,
        normalised=plan.normalised, scatter_std=drawn.scatter_std,
        scatter_sensitivity=drawn.release_plan["scatter"].sensitivity,
    )


def check_spectrum(value: Any, owner: str) -> Spectrum:
    """``value`` must be ``"svd"`` or ``"eigh"`` (a one-entry constraint table)."""
    return check_choice(value, "spectrum", ("svd", "eigh"), owner)  # type: ignore[return-value]


def check_variant(value: Any, owner: str) -> Variant:
    """``value`` must be ``"proxy"`` or ``"full"`` (a one-entry constraint table)."""
    return check_choice(value, "variant", ("proxy", "full"), owner)  # type: ignore[return-value]
