"""Covariance-perturbation PCA: Analyze Gauss, MOD-SULQ and the (uncertified) Wishart mechanism.

All three release a noisy version of the scatter matrix ``S = sum_i c(x_i) c(x_i)^T`` of the
clipped (and optionally centred) rows ``c(x) = clip(x - m, row_norm)`` and return the top-k
eigenvectors of the released matrix (post-processing).

Sensitivities (rows of norm <= C after clipping; derived in ``../shared/papers/spec-pca-gep.md`` §0)
---------------------------------------------------------------------------------------------
The released vector is the upper triangle (with the diagonal) of ``S``, so the L2 sensitivity is
at most the Frobenius norm of the change of ``S`` (C is taken as ``row_norm (1 + 1e-10)``, the bound
that clipped rows satisfy up to rounding: see ``privacy.clipping.ROUNDING_SLACK``):

* add/remove one row x: ``||x x^T||_F = ||x||^2 <= C^2`` (tight for x = C e_1);
* replace x by y: ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``, so ``sqrt(2) C^2``
  (tight for orthogonal x, y of norm C).

The private mean (``centering="private"``) releases the sum of clipped raw rows, sensitivity ``C``
(add/remove) or ``2 C`` (replace-one), and under add/remove a count, sensitivity 1; the centred rows
are clipped to C again, so the scatter sensitivity above is unchanged (the released centre is a fixed
public vector for the second release: adaptive composition, accounted by the accountant).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import dp_accounting
import numpy as np

from .._validation import as_generator, check_mechanism_inputs, check_n_components, check_share
from ..linalg import top_k_eigh
from ..moments import accumulate, n_features_of, needs_two_passes_ok
from ..privacy.accounting import Accountant, AccountingMethod, certify_release, compose
from ..privacy.budget import PrivacyBudget, Relation
from ..privacy.clipping import NormViolation, sensitivity_norm
from ..privacy.gaussian import (
    analytic_noise_multiplier,
    classic_noise_multiplier,
    split_noise_multiplier,
    symmetric_gaussian,
)
from ..privacy.pipeline import charge
from ..results import SubspaceResult

__all__ = ["COUNT_SHARE", "analyze_gauss", "mod_sulq", "wishart"]

Calibration = Literal["tight", "paper"]
Centering = None | str | np.ndarray

#: Share of the Gaussian budget (of ``1/s^2``) spent on a noisy row count when one is released
#: (add/remove neighbours, where n itself is protected).
COUNT_SHARE = 0.01

_NoiseKind = Literal["analyze_gauss", "mod_sulq", "wishart"]


def _scatter_sensitivity(relation: Relation, row_norm: float) -> float:
    return (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * row_norm**2


def _sum_sensitivity(relation: Relation, row_norm: float) -> float:
    return (2.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm


def _mod_sulq_beta(n: int, d: int, epsilon: float, delta: float) -> float:
    """Per-entry noise std on ``A = X^T X / n`` from Chaudhuri, Sarwate and Sinha (2012), rows <= 1."""
    return (d + 1) / (n * epsilon) * math.sqrt(
        2.0 * math.log((d * d + d) / (2.0 * math.sqrt(2.0 * math.pi) * delta))
    ) + 1.0 / (n * math.sqrt(epsilon))


class _Plan:
    """Noise scales of every release of one run, fixed before any noise is drawn."""

    def __init__(self) -> None:
        self.cov_std: float = 0.0  # std of the scatter noise (Gaussian kinds)
        self.mean_std: float | None = None
        self.count_std: float | None = None
        self.events: list[dp_accounting.DpEvent] = []
        self.notes: list[str] = []


def _plan(
    kind: _NoiseKind,
    *,
    budget: PrivacyBudget,
    relation: Relation,
    calibration: str,
    row_norm: float,
    n: int | None,
    d: int | None,
    private_mean: bool,
    release_count: bool,
    mean_share: float,
) -> _Plan:
    plan = _Plan()
    eps, delta = budget.epsilon, budget.delta
    row_norm = sensitivity_norm(row_norm)  # the bound the (rounded) clipped rows satisfy
    cov_sens = _scatter_sensitivity(relation, row_norm)
    count_needed = (release_count or private_mean) and not relation.n_is_public
    if kind == "wishart":
        plan.events.append(dp_accounting.NonPrivateDpEvent())
        plan.notes.append(
            "Wishart mechanism (Jiang, Xie and Zhang 2016): known NOT to be differentially private "
            "(Sheffet 2019; Amin et al. 2019); a labelled reproduction baseline only."
        )
        return plan
    if calibration == "tight":
        shares = [1.0]
        names = ["cov"]
        if private_mean:
            shares.append(mean_share)
            names.append("mean")
        if count_needed:
            shares.append(COUNT_SHARE)
            names.append("count")
        shares[0] = 1.0 - sum(shares[1:])
        s_total = analytic_noise_multiplier(eps, delta)
        multipliers = dict(zip(names, split_noise_multiplier(s_total, shares), strict=True))
        plan.cov_std = multipliers["cov"] * cov_sens
        plan.events.append(dp_accounting.GaussianDpEvent(multipliers["cov"]))
        if private_mean:
            plan.mean_std = multipliers["mean"] * _sum_sensitivity(relation, row_norm)
            plan.events.append(dp_accounting.GaussianDpEvent(multipliers["mean"]))
        if count_needed:
            plan.count_std = multipliers["count"]
            plan.events.append(dp_accounting.GaussianDpEvent(multipliers["count"]))
        return plan
    # calibration == "paper": the paper's own formula for the scatter release.
    cov_eps, cov_delta = eps, delta
    if count_needed:
        # basic-composition split; the accountant then certifies the composition
        cov_eps, cov_delta = eps * (1 - COUNT_SHARE), delta * (1 - COUNT_SHARE)
        s_count = analytic_noise_multiplier(eps * COUNT_SHARE, delta * COUNT_SHARE)
        plan.count_std = s_count
    if kind == "analyze_gauss":
        s_cov = classic_noise_multiplier(cov_eps, cov_delta)
        plan.notes.append(
            "Analyze Gauss with the classic Gaussian formula sqrt(2 ln(1.25/delta))/epsilon times the "
            "Frobenius sensitivity (Dwork et al. 2014); certified only where the accountant agrees."
        )
    else:  # mod_sulq
        assert n is not None and d is not None
        beta = _mod_sulq_beta(n, d, cov_eps, cov_delta) * row_norm**2
        s_cov = n * beta / cov_sens
        plan.notes.append(
            "MOD-SULQ with the noise formula of Chaudhuri, Sarwate and Sinha (2012) on X^T X / n."
        )
    plan.cov_std = s_cov * cov_sens
    plan.events.append(dp_accounting.GaussianDpEvent(s_cov))
    if plan.count_std is not None:
        plan.events.append(dp_accounting.GaussianDpEvent(plan.count_std))
    return plan


def _parse_centering(centering: Centering, owner: str) -> np.ndarray | str | None:
    if centering is None:
        return None
    if isinstance(centering, str):
        if centering != "private":
            raise ValueError(
                f"The 'centering' parameter of {owner} must be None, an array (a public centre) or "
                f"'private'. Got {centering!r} instead."
            )
        return centering
    center = np.asarray(centering, dtype=float)
    if center.ndim != 1 or not np.isfinite(center).all():
        raise ValueError(
            f"The 'centering' parameter of {owner} must be a finite 1-D array (a public centre). "
            f"Got an array of shape {center.shape}."
        )
    return center.copy()


def _covariance_pca(
    kind: _NoiseKind,
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str,
    calibration: str,
    centering: Centering,
    mean_share: float,
    release_count: bool,
    accountant: Accountant | None,
    random_state: Any,
    on_norm_violation: NormViolation,
    accounting: AccountingMethod,
    show_progress: bool | None,
    allowed_relations: Sequence[Relation],
) -> SubspaceResult:
    owner = kind
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=allowed_relations,
        needs_delta=kind != "wishart",
    )
    if kind == "wishart" and calibration != "paper":
        raise ValueError(
            "The Wishart mechanism has no sound calibration (it is known not to be differentially "
            "private). Pass calibration='paper' to run it as the labelled, uncertified baseline."
        )
    if kind == "mod_sulq" and calibration == "paper":
        budget.require_delta(owner)
    center = _parse_centering(centering, owner)
    private_mean = isinstance(center, str)
    if private_mean:
        mean_share = check_share(mean_share, "mean_share", owner)
        if calibration != "tight":
            raise ValueError(
                f"centering='private' is not part of the paper's {owner} mechanism; use "
                "calibration='tight' (which splits the budget exactly) or a public centre."
            )
        if not needs_two_passes_ok(X):
            raise ValueError(
                "centering='private' reads the data twice (mean, then covariance); pass a "
                "re-iterable source (an array, a list of blocks, or a callable returning a fresh "
                "iterator) instead of a one-shot iterator."
            )
    rng = as_generator(random_state)
    d_known = n_features_of(X)
    if d_known is not None:
        check_n_components(k, d_known, owner, name="k")
    n_known = int(X.shape[0]) if d_known is not None and not math.isnan(X.shape[0]) else None

    def make_plan(n: int | None, d: int | None) -> _Plan:
        return _plan(
            kind, budget=budget, relation=rel, calibration=calibration, row_norm=C, n=n, d=d,
            private_mean=private_mean, release_count=release_count, mean_share=mean_share,
        )

    # Fail fast, before reading the data, when the budget cannot cover the run.
    if accountant is not None and (kind != "mod_sulq" or n_known is not None):
        accountant.check(compose(make_plan(n_known, d_known).events), rel)

    # Validate, then charge, then release. For an in-memory input the pass below reads every row
    # (finite, numeric, and with on_norm_violation="raise" within the bound) before the ledger is
    # charged: a refusal costs nothing. (Pass 1 of the private centring, or the only pass otherwise.)
    noisy_count: float | None = None
    second_center = center if isinstance(center, np.ndarray) else None
    if private_mean:
        # Pass 1: the sum of clipped raw rows (validates the whole input before the charge).
        first = accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=True,
                           want_second=False, owner=owner, show_progress=show_progress)
        check_n_components(k, first.d, owner, name="k")
        plan = make_plan(first.n, first.d)
        # Everything after the charge is one release: a failure inside (a re-read stream with a bad
        # block) is a failed release that stays charged.
        with charge(accountant, plan.events, rel, kind) as released_events:
            assert first.sum is not None and plan.mean_std is not None
            noisy_sum = first.sum + rng.normal(0.0, plan.mean_std, size=first.d)
            n_mean = float(first.n)  # public under replace-one; replaced by a noisy count otherwise
            if plan.count_std is not None:
                noisy_count = first.n + float(rng.normal(0.0, plan.count_std))
                n_mean = max(noisy_count, 1.0)
            mu = noisy_sum / n_mean
            norm_mu = float(np.linalg.norm(mu))
            if norm_mu > C:  # the true mean of clipped rows lies in the ball: project (post-proc.)
                mu *= C / norm_mu
            second_center = mu
            # Pass 2: the raw rows were checked in pass 1; the rows centred by the released mean
            # are clipped to C (never refused: a refusal here would be decided by the data after
            # the charge, and the centred rows may exceed C although the raw rows do not).
            moments = accumulate(X, row_norm=C, center=second_center, on_norm_violation="clip",
                                 want_sum=False, want_second=True, owner=owner,
                                 show_progress=show_progress)
            S_hat = _noisy_scatter(kind, moments, plan, C, epsilon, rng)
            values, vectors = top_k_eigh(S_hat, k)
        d, n = moments.d, moments.n
    else:
        moments = accumulate(X, row_norm=C, center=second_center,
                             on_norm_violation=on_norm_violation, want_sum=False, want_second=True,
                             owner=owner, show_progress=show_progress)
        d, n = moments.d, moments.n
        check_n_components(k, d, owner, name="k")
        plan = make_plan(n, d)
        with charge(accountant, plan.events, rel, kind) as released_events:
            if plan.count_std is not None:
                noisy_count = n + float(rng.normal(0.0, plan.count_std))
            S_hat = _noisy_scatter(kind, moments, plan, C, epsilon, rng)
            values, vectors = top_k_eigh(S_hat, k)

    report = certify_release(
        released_events, mechanism=kind, budget=budget, relation=rel, calibration=calibration,
        accounting=accounting, notes=plan.notes, stacklevel=4,
    )
    n_samples: float | None = float(n) if rel.n_is_public else noisy_count
    diagnostics: dict[str, Any] = {
        "noise_std": plan.cov_std if kind != "wishart" else None,
        "sensitivity": _scatter_sensitivity(rel, sensitivity_norm(C)),
    }
    if plan.mean_std is not None:
        diagnostics["mean_noise_std"] = plan.mean_std
    if plan.count_std is not None:
        diagnostics["count_noise_std"] = plan.count_std  # public: a function of (epsilon, delta)
    return SubspaceResult(
        components=vectors,
        values=values,
        total=float(np.trace(S_hat)),
        mean=None if second_center is None else np.asarray(second_center),
        n_samples=n_samples,
        privacy=report,
        diagnostics=diagnostics,
    )


def _noisy_scatter(
    kind: _NoiseKind, moments: Any, plan: _Plan, C: float, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """The released scatter matrix ``S + E`` (call inside the charge)."""
    assert moments.second is not None
    S, d, n = moments.second, moments.d, moments.n
    if kind == "wishart":
        scale = 3.0 * C**2 / (2.0 * n * epsilon)  # Wishart_d(d+1, scale * I) on X^T X / n
        G = rng.normal(0.0, math.sqrt(scale), size=(d, d + 1))
        return S + n * (G @ G.T)
    return S + symmetric_gaussian(d, plan.cov_std, rng)


_COMMON_DOC = """
    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), np.memmap, sparse matrix, Dask array, or
        an iterable of row blocks
        The private data. Never modified.
    k : int
        Number of components, in [1, n_features].
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C on the Euclidean norm of each (centred) row; rows above it are clipped per
        row, or rejected with ``on_norm_violation="raise"``. Never derived from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): the analytic Gaussian mechanism for the exact (epsilon, delta).
        ``"paper"``: the paper's own noise formula; the result is marked uncertified (with an
        :class:`UncertifiedPrivacyWarning`) where the accountant cannot certify the request.
    centering : None, array of shape (n_features,), or "private"
        None: the uncentred second-moment matrix (as in the papers). An array: a public centre.
        ``"private"``: a DP mean spending ``mean_share`` of the budget (tight calibration only).
    mean_share : float
        Share of the Gaussian budget (of ``1/s^2``) given to the private mean.
    release_count : bool
        Under add/remove neighbours, also release a noisy row count (``COUNT_SHARE`` of the budget)
        so that variances can be normalised; under replace-one, n is public and nothing is spent.
    accountant : Accountant, optional
        Ledger to spend against; the run is refused before any noise is drawn if it would exceed the
        ceiling.
    random_state : None, int, SeedSequence or Generator
        Secret: it draws the noise (see docs/privacy-caveats.md).
    on_norm_violation : {"clip", "raise"}
        With ``"raise"`` the whole input is checked before the ledger is charged (a refusal costs
        nothing but says that some row broke the bound). With ``centering="private"`` the raw rows
        are checked; the rows centred by the released mean are clipped to C (never refused).
    accounting : {"auto", "gaussian", "pld", "rdp"}
        Accountant used to certify the released events.
    show_progress : bool or None
        Progress bar over blocks (None: on a terminal, for long inputs).

    Returns
    -------
    SubspaceResult
"""


def analyze_gauss(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    centering: Centering = None,
    mean_share: float = 0.1,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Analyze Gauss (Dwork, Talwar, Thakurta and Zhang, STOC 2014): Gaussian noise on X^T X.

    ``S_hat = sum_i c(x_i) c(x_i)^T + E`` with ``E`` symmetric, i.i.d. ``N(0, sigma^2)`` on and above
    the diagonal; the result is the top-k eigenvectors of ``S_hat``.

    Privacy
    -------
    Relation: replace-one (default) or add/remove. The released vector is the upper triangle of the
    scatter matrix of rows clipped to norm C; its L2 sensitivity is ``C^2`` (add/remove:
    ``||x x^T||_F = ||x||^2``) or ``sqrt(2) C^2`` (replace-one: ``||x x^T - y y^T||_F^2 =
    ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``). Event: ``GaussianDpEvent(sigma / sensitivity)``
    (plus the private-mean and count events when requested). ``calibration="tight"`` finds the
    smallest sigma for (epsilon, delta) with the analytic Gaussian mechanism; ``"paper"`` uses
    ``sqrt(2 ln(1.25/delta))/epsilon`` times the sensitivity, certified only for the epsilon the
    accountant confirms (always for epsilon < 1). Eigen-decomposition is post-processing.
    """
    return _covariance_pca(
        "analyze_gauss", X, k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE, Relation.ADD_REMOVE),
    )


def mod_sulq(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    centering: Centering = None,
    mean_share: float = 0.1,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """MOD-SULQ (Chaudhuri, Sarwate and Sinha, NIPS 2012): symmetric Gaussian noise on X^T X / n.

    ``calibration="paper"`` adds noise of standard deviation
    ``beta = (d+1)/(n eps) sqrt(2 ln((d^2+d)/(2 sqrt(2 pi) delta))) + 1/(n sqrt(eps))`` (times C^2)
    to every entry on and above the diagonal of ``X^T X / n``. ``calibration="tight"`` uses the
    smallest noise that certifies (epsilon, delta) for the same release, which makes it identical to
    replace-one Analyze Gauss (the two differ only in their noise formula).

    Privacy
    -------
    Relation: replace-one only (n is public under it, so a noise scale depending on n is allowed).
    The upper triangle of ``X^T X / n`` has L2 sensitivity ``sqrt(2) C^2 / n`` (see
    :func:`analyze_gauss`). Event: ``GaussianDpEvent(beta n / (sqrt(2) C^2))`` for the paper's beta;
    the accountant certifies the epsilon it gives (the paper's per-entry union bound is loose, so it
    is normally certified with room to spare).
    """
    return _covariance_pca(
        "mod_sulq", X, k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE,),
    )


def wishart(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float = 0.0,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "paper",
    centering: Centering = None,
    mean_share: float = 0.1,
    release_count: bool = False,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """The Wishart mechanism (Jiang, Xie and Zhang, AAAI 2016). **Not differentially private.**

    ``A_hat = X^T X / n + W`` with ``W ~ Wishart_d(d + 1, 3 C^2 / (2 n eps) I)`` (the constant used by
    the papers' comparisons). Its claimed epsilon-DP analysis is known to be wrong (Sheffet 2019,
    footnote 4; Amin et al. 2019, §1.2); it exists only to reproduce the papers' baselines.

    Privacy
    -------
    None certified. The release is recorded as ``NonPrivateDpEvent``, so the result has
    ``certified=False`` and ``epsilon=inf``, an :class:`UncertifiedPrivacyWarning` is raised, and an
    accountant with a finite ceiling refuses it. Only ``calibration="paper"`` exists.
    """
    return _covariance_pca(
        "wishart", X, k, epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation,
        calibration=calibration, centering=centering, mean_share=mean_share,
        release_count=release_count, accountant=accountant, random_state=random_state,
        on_norm_violation=on_norm_violation, accounting=accounting, show_progress=show_progress,
        allowed_relations=(Relation.REPLACE_ONE, Relation.ADD_REMOVE),
    )


for _f in (analyze_gauss, mod_sulq, wishart):
    _f.__doc__ = (_f.__doc__ or "") + _COMMON_DOC
