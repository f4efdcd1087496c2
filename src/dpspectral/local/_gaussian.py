"""Local Gaussian (Wang and Xu, TCS 2020): each user sends a noisy copy of ``x x^T``.

Protocol (``../shared/papers/spec-pca-gep.md`` §B.6, RECONSTRUCTED)::

    user i:  S_i = upper(c(x_i) c(x_i)^T + Z_i),  Z_i symmetric, i.i.d. N(0, sigma^2) on and above
             the diagonal                                        (d (d + 1) / 2 floats)
    server:  S = (1/n) sum_i S_i (rebuilt as a symmetric matrix);  V_k = top-k eigenvectors of S

``upper(M)`` is the vector of ``M[np.triu_indices(d)]`` (row-major upper triangle with the diagonal).

Noise shape. ``noise_shape="goe"`` (default with ``calibration="tight"``): the noise of an
off-diagonal entry has std ``sigma / sqrt(2)``, the diagonal's ``sigma`` (the Gaussian orthogonal
ensemble). It is the Gaussian mechanism on the Frobenius-isometric vector ``iso(M)`` (the diagonal, and
``sqrt(2)`` times each entry above it: ``||iso(M)||_2 = ||M||_F``) followed by the fixed rescaling back
to ``upper(M)`` (post-processing); ``||iso(x x^T) - iso(y y^T)||_2 = ||x x^T - y y^T||_F <= sqrt(2) C^2``
is the same sensitivity as ``upper``'s, so the privacy is the same while the off-diagonal noise
variance is halved: the spectral norm of the server's noise, which decides what can be recovered,
falls by sqrt(2). ``noise_shape="iid"`` (the paper's; default with ``calibration="paper"``): i.i.d.
``N(0, sigma^2)`` on every entry of ``upper``.

Local sensitivity (any two inputs in the ball of radius C; C taken as ``sensitivity_norm(row_norm)``)
---------------------------------------------------------------------------------------------------
``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4`` and the upper-triangle vector of a
symmetric matrix has norm at most its Frobenius norm (each off-diagonal entry is counted once instead
of twice), so ``||upper(x x^T) - upper(y y^T)||_2 <= sqrt(2) C^2``, tight for ``x = C e_1``,
``y = C e_2`` (the vector difference has entries ``C^2`` and ``-C^2``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import scipy.sparse as sp

from .._constraints import (
    NOISE_SHAPE,
    PRIVACY_PARAMETERS,
    Calibration,
    Interval,
    NoiseShape,
    Table,
    Types,
    renamed,
    validated,
)
from .._linalg import top_k_eigh
from .._moments import _dense_row_norms, accumulate, summation_of
from .._results import SubspaceResult
from .._rows import _as_float_block, _iter_blocks, as_numeric_array, is_one_shot, n_features_of
from .._validation import check_n_components
from ..pca._inputs import PcaInputs
from ..privacy._accounting import Accountant
from ..privacy._budget import PrivacyBudget, Relation, as_relation
from ..privacy._clipping import NormViolation, check_row_norm, clip_rows, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier, classic_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import Summation, widen_release
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, Symmetric, run

__all__ = ["local_gaussian", "local_gaussian_aggregate", "local_gaussian_report"]


_OWNER = "local_gaussian"
#: Upper bound on the number of report entries generated at once by the per-user simulation.
_REPORT_BLOCK_ELEMENTS = 1 << 20


def report_length(d: int) -> int:
    """Floats one user sends: ``d (d + 1) / 2``."""
    return d * (d + 1) // 2


def local_sensitivity(row_norm: float) -> float:
    """L2 sensitivity of one user's upper triangle over any two inputs of norm <= row_norm."""
    return math.sqrt(2.0) * sensitivity_norm(row_norm) ** 2


def _noise_multiplier(budget: PrivacyBudget, calibration: str) -> tuple[float, list[str]]:
    if calibration == "tight":
        return analytic_noise_multiplier(budget.epsilon, budget.delta), []
    note = (
        "Local Gaussian with the classic Gaussian formula sqrt(2 ln(1.25/delta))/epsilon times the "
        "local sensitivity sqrt(2) C^2 (Wang and Xu 2020, as reconstructed in the spec); certified "
        "only where the accountant agrees (always for epsilon < 1)."
    )
    return classic_noise_multiplier(budget.epsilon, budget.delta), [note]


#: The parameters of :func:`local_gaussian_report` (and, with ``simulate_sum``, of
#: :func:`local_gaussian`); delta > 0 and the relation are checked inline, with their reasons.
_REPORT_PARAMS: Table = {
    **PRIVACY_PARAMETERS,
    "noise_shape": NOISE_SHAPE,
}
_LOCAL_PARAMS: Table = {**_REPORT_PARAMS, "simulate_sum": Types((bool, np.bool_), "a bool")}
_AGGREGATE_PARAMS: Table = {"n_features": Interval(1, None, "left", integer=True)}

_LOCAL_NOTE = (
    "Local model: each user's report is (epsilon, delta)-DP with respect to that user's own "
    "record; the recorded event is one user's Gaussian release."
)


def _check_common(epsilon: float, delta: float, row_norm: float, owner: str) -> tuple[PrivacyBudget, float]:
    """The budget (a Gaussian mechanism needs delta > 0) and the row bound C (the table checked types)."""
    budget = PrivacyBudget(epsilon, delta)
    budget.require_delta(owner)
    return budget, check_row_norm(row_norm, owner)


def _plan(budget: PrivacyBudget, calibration: str, row_norm: float, owner: str,
          n_users: int | None = None, summation: Summation | None = None) -> ReleasePlan:
    """One user's Gaussian release (``"report"``), and with ``n_users`` the simulated average.

    The average of n reports moves by ``sqrt(2) C^2 / n`` when one user's record changes and
    carries noise of std ``sigma / sqrt(n)`` (``"average"``); the event is one user's release.
    """
    s, notes = _noise_multiplier(budget, calibration)
    sens = local_sensitivity(row_norm)
    term = sensitivity_norm(row_norm) ** 2  # x x^T, weighted by the isometry: Frobenius norm <= C^2
    # one user's w * upper(x x^T): a product and the weight (n = 1, one rounding after it)
    releases = [widen_release(NoisyRelease("report", "gaussian", s * sens, sens), n=1,
                              relation=Relation.LOCAL, kind="products", term_bound=term,
                              summation=Summation(followed_by=1))]
    if n_users is not None:  # X^T X over the n users (any path), divided by n and weighted: two roundings
        releases.append(widen_release(
            NoisyRelease("average", "gaussian", s * sens / math.sqrt(n_users), sens / n_users), n=n_users,
            relation=Relation.LOCAL, kind="products", term_bound=term / n_users,
            summation=dataclasses.replace(summation or Summation(), followed_by=2)))
    return ReleasePlan(owner, Relation.LOCAL, (dp_accounting.GaussianDpEvent(s),), tuple(releases),
                       (*notes, _LOCAL_NOTE))


def _iso_weights(d: int, shape: str) -> np.ndarray:
    """Weights mapping ``upper(M)`` to the released vector: ``iso(M)`` ("goe") or ``upper(M)`` ("iid")."""
    i, j = np.triu_indices(d)
    return np.where(i == j, 1.0, math.sqrt(2.0) if shape == "goe" else 1.0)


def _noise_shape(noise_shape: str | None, calibration: str) -> str:
    return ("goe" if calibration == "tight" else "iid") if noise_shape is None else noise_shape


def _reports(rows: np.ndarray, releaser: Releaser, shape: str) -> np.ndarray:
    """Reports of users holding the (already clipped) ``rows``: shape (n_rows, d (d + 1) / 2).

    The Gaussian mechanism runs on ``w * upper(x x^T)`` (``w`` from :func:`_iso_weights`, whose norm
    difference is at most the planned sensitivity); dividing by ``w`` is post-processing.
    """
    i, j = np.triu_indices(rows.shape[1])
    w = _iso_weights(rows.shape[1], shape)
    return releaser.add("report", rows[:, i] * rows[:, j] * w) / w


def _symmetric_from_upper(vector: np.ndarray, d: int) -> np.ndarray:
    M = np.zeros((d, d))
    M[np.triu_indices(d)] = vector
    return M + np.triu(M, 1).T


@validated(_REPORT_PARAMS)
def local_gaussian_report(
    x: Any,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    calibration: Calibration = "tight",
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    noise_shape: NoiseShape | None = None,
) -> np.ndarray:
    """What one user sends: the upper triangle of ``c(x) c(x)^T + Z``.

    Parameters
    ----------
    x : array-like of shape (n_features,)
        The user's own record. Never modified.
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C; a record above it is scaled down to norm C (or rejected with
        ``on_norm_violation="raise"``).
    calibration : {"tight", "paper"}
        ``"tight"``: the analytic Gaussian mechanism (Balle and Wang 2018) for the exact
        (epsilon, delta). ``"paper"``: the classic ``sqrt(2 ln(1.25/delta))/epsilon``, which is
        (epsilon, delta)-DP only where our accountant confirms it (always for epsilon < 1).
    random_state : None, int, SeedSequence, Generator or "secure"
        The user's own randomness. ``"secure"``: OS entropy and an exact discrete Gaussian sampler
        on a fine grid (deployment).
    on_norm_violation : {"clip", "raise"}
    noise_shape : {"goe", "iid"} or None
        ``"goe"`` (default with ``"tight"``): off-diagonal noise std ``sigma / sqrt(2)``, diagonal
        ``sigma``, at the same privacy (module docstring); ``"iid"`` (default with ``"paper"``, the
        paper's): ``sigma`` on every entry.

    Returns
    -------
    report : ndarray of shape (n_features (n_features + 1) / 2,)
        ``(c(x) c(x)^T + Z)[np.triu_indices(n_features)]``, ``Z`` symmetric Gaussian (``noise_shape``).

    Privacy
    -------
    Local model: the report is (epsilon, delta)-DP with respect to the user's record, for any two
    records of norm at most C. The L2 sensitivity of ``upper(x x^T)`` over that ball is
    ``sqrt(2) C^2`` (``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``, and the
    upper triangle counts each off-diagonal entry once); ``sigma = s sqrt(2) C^2`` with ``s`` the
    noise multiplier of one ``GaussianDpEvent(s)``. With ``"goe"`` the mechanism runs on ``iso(x x^T)``
    (off-diagonal entries times sqrt(2)), whose L2 sensitivity is ``||x x^T - y y^T||_F <= sqrt(2) C^2``
    too; the report is that release divided back entrywise (post-processing).
    """
    return run(_LocalGaussian(user=True), _LocalInputs(
        None, epsilon=epsilon, delta=delta, row_norm=row_norm, relation="local", calibration=calibration,
        on_norm_violation=on_norm_violation, noise_shape=noise_shape, owner="local_gaussian_report",
    ), x, RunSettings(None, random_state))


@renamed({"d": "n_features"})
@validated(_AGGREGATE_PARAMS)
def local_gaussian_aggregate(reports: Any, n_features: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Server side: average the reports, rebuild the symmetric matrix, take its top-k eigenpairs.

    Parameters
    ----------
    reports : array-like of shape (n_users, d (d + 1) / 2)
        One report per row, as sent by :func:`local_gaussian_report`.
    n_features : int
        d in the paper: the number of features. The old name ``d`` still works, with a FutureWarning.
    k : int
        Number of components, in [1, d].

    Returns
    -------
    components : ndarray of shape (d, k)
        Orthonormal, ordered by decreasing eigenvalue, signs fixed.
    values : ndarray of shape (k,)
        Eigenvalues of the averaged matrix (the scale of ``(1/n) sum_i x_i x_i^T``).

    Privacy
    -------
    Post-processing of the users' reports: nothing is spent.
    """
    owner = "local_gaussian_aggregate"
    d = int(n_features)
    k = check_n_components(k, d, owner, name="k")
    arr = np.asarray(reports)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"The 'reports' parameter of {owner} must be numeric. Got {arr.dtype}.")
    m = report_length(int(d))
    if arr.ndim != 2 or arr.shape[1] != m or arr.shape[0] == 0:
        raise ValueError(
            f"The 'reports' parameter of {owner} must have shape (n_users >= 1, d (d + 1) / 2 = {m}). "
            f"Got shape {arr.shape} instead."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"The 'reports' parameter of {owner} contains NaN or infinity.")
    mean = arr.mean(axis=0, dtype=np.float64)
    values, vectors = top_k_eigh(_symmetric_from_upper(mean, int(d)), k)
    return vectors, values


def _simulated_report_sum(
    X: Any, C: float, releaser: Releaser, on_norm_violation: NormViolation, owner: str,
    show_progress: bool | None, shape: str,
) -> tuple[np.ndarray, int, int]:
    """Sum of every user's actual report (vectorised over blocks of users)."""
    total: np.ndarray | None = None
    n = 0
    d: int | None = None
    for first_row, raw in _iter_blocks(X, owner, show_progress):
        block = _as_float_block(raw, first_row, d, owner)
        if d is None:
            d = int(block.shape[1])
            total = np.zeros(report_length(d))
        assert total is not None
        step = max(1, _REPORT_BLOCK_ELEMENTS // report_length(d))
        for a in range(0, block.shape[0], step):
            rows = block[a : a + step]
            rows = rows.toarray() if sp.issparse(rows) else rows
            norms = _dense_row_norms(rows, first_row + a, owner)
            rows, _ = clip_rows(rows, C, on_norm_violation=on_norm_violation, copy=True,
                                first_row=first_row + a, norms=norms)
            total += _reports(np.asarray(rows), releaser, shape).sum(axis=0)
            n += rows.shape[0]
    if d is None or n == 0 or total is None:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is required.")
    return total, n, d


@validated(_LOCAL_PARAMS)
def local_gaussian(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "local",
    calibration: Calibration = "tight",
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    simulate_sum: bool = True,
    show_progress: bool | None = None,
    noise_shape: NoiseShape | None = None,
) -> SubspaceResult:
    """Local Gaussian PCA (Wang and Xu, TCS 2020), the whole protocol simulated on one machine.

    Every user (row) sends ``upper(c(x) c(x)^T + Z)`` (see :func:`local_gaussian_report`); the
    server averages the reports and returns the top-k eigenvectors (see
    :func:`local_gaussian_aggregate`).

    Parameters
    ----------
    X : array-like of shape (n_users, n_features), np.memmap, sparse matrix, Dask array, or an
        iterable of row blocks
        One record per user. Never modified.
    k : int
        Number of components, in [1, n_features].
    epsilon : float
        In (0, inf): every user's report is (epsilon, delta)-LDP.
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C on each record's norm (records above it are clipped by their user).
    relation : {"local"}
        The local model only.
    calibration : {"tight", "paper"}
        ``"tight"``: analytic Gaussian mechanism; ``"paper"``: the classic formula (certified only
        where the accountant agrees).
    accountant : Accountant, optional
        Ledger (relation ``"local"``) to spend against; refused before any noise is drawn if it
        would exceed the ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the users' noise. ``"secure"``: OS entropy and an exact discrete Gaussian
        sampler (the report's ``noise_source`` says which; slow for many users).
    on_norm_violation : {"clip", "raise"}
    simulate_sum : bool
        True (default): draw the server's average directly: ``(1/n) sum_i c(x_i) c(x_i)^T`` (by
        :func:`dpspectral._moments.accumulate`) plus one symmetric Gaussian of entry std
        ``sigma / sqrt(n)``, which has exactly the law of the average of the n reports' noise.
        False: generate every user's report (in blocks of users) and average them.
    show_progress : bool or None
        Progress bar over blocks.
    noise_shape : {"goe", "iid"} or None
        ``"goe"`` (default with ``calibration="tight"``): each user's off-diagonal noise has std
        ``sigma / sqrt(2)`` at the same privacy (see :func:`local_gaussian_report`), which lowers the
        spectral norm of the server's noise by sqrt(2); ``"iid"`` (default with ``"paper"``): the
        paper's i.i.d. noise. The paper's version is ``calibration="paper"``.

    Returns
    -------
    SubspaceResult
        ``values`` and ``total`` on the scale of ``sum_i x_i x_i^T`` (n times the averaged
        matrix; n is public in the local model); ``n_samples`` = n; diagnostics ``noise_std``
        (each user's per-entry std), ``aggregate_noise_std``, ``noise_multiplier``,
        ``sensitivity``, ``communication_floats_per_user`` = d (d + 1) / 2, ``simulate_sum``.

    Privacy
    -------
    Relation: local. Each user's report is one Gaussian mechanism on ``upper(c(x) c(x)^T)``, whose
    L2 sensitivity over any two records of norm <= C is ``sqrt(2) C^2``
    (``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``), so it is
    (epsilon, delta)-DP with respect to that user's record whatever the others hold. The guarantee
    is per user, so the report records one ``GaussianDpEvent(sigma / (sqrt(2) C^2))`` (every user
    runs the same mechanism on disjoint data). The server's average and eigendecomposition are
    post-processing. With ``noise_shape="goe"`` (the default with ``"tight"``) each report is the same
    Gaussian mechanism on ``iso(x x^T)`` (off-diagonal entries times sqrt(2); its sensitivity is
    ``||x x^T - y y^T||_F <= sqrt(2) C^2`` as well), divided back entrywise: the off-diagonal noise std
    is ``sigma / sqrt(2)`` at the same privacy. (The same release is also (epsilon, delta)-DP under
    replace-one neighbours in the central model.) With an accountant, every row is read and validated
    before the charge (``simulate_sum=False`` reads a re-iterable source twice for this), so a refusal
    costs nothing; a one-shot stream (an iterator of blocks) is charged before it is read, and a
    failure after the charge (a bad block of such a stream) is a failed release that stays charged.
    """
    return run(_LocalGaussian(show_progress), _LocalInputs(
        k, epsilon=epsilon, delta=delta, row_norm=row_norm, calibration=calibration,
        on_norm_violation=on_norm_violation, noise_shape=noise_shape, relation=relation,
        simulate_sum=bool(simulate_sum),
    ), X, RunSettings(accountant, random_state))


@dataclass(frozen=True)
class _LocalInputs(PcaInputs):
    """The public inputs of the local Gaussian protocol; ``k=None``: one user's report."""

    k: int | None  # type: ignore[assignment]  # None: one user's report (no components)
    on_norm_violation: NormViolation
    noise_shape: str | None
    simulate_sum: bool = True
    owner: str = _OWNER


@dataclass(frozen=True, eq=False)
class _Checked:
    inputs: _LocalInputs
    budget: PrivacyBudget
    C: float
    shape: str
    summation: Summation = Summation()  # how the simulated average sums the users' x x^T

    @property
    def calibration(self) -> str:
        return self.inputs.calibration


@dataclass(frozen=True, eq=False)
class _Read:
    """What the validating pass found: ``n`` and ``d`` (None for a one-shot stream whose reports are
    generated while it is read, inside the charge), the scatter (``simulate_sum``), the rows' source."""

    n: int | None
    d: int | None
    source: Any
    second: Any = None


class _LocalGaussian(Mechanism[_LocalInputs, Any]):
    """The local Gaussian protocol as the release template runs it: the simulated server average
    (``simulate_sum``), every user's report, or (``k=None``) one user's own report."""

    label = _OWNER
    stacklevel = 3  # frames above run: local_gaussian, the constraint check, the caller

    def __init__(self, show_progress: bool | None = None, *, user: bool = False) -> None:
        super().__init__(show_progress)
        if user:  # one user's own report: nothing charged, no privacy report
            self.label, self.reported = "local_gaussian_report", False

    def check(self, inputs: _LocalInputs, X: Any) -> _Checked:
        budget, C = _check_common(inputs.epsilon, inputs.delta, inputs.row_norm, inputs.owner)
        if inputs.k is not None:
            rel = as_relation(inputs.relation, owner=_OWNER)
            if rel is not Relation.LOCAL:
                raise ValueError(
                    f"The 'relation' parameter of {_OWNER} must be 'local' (a local-model protocol). Got "
                    f"{rel.value!r} instead."
                )
            d_known = n_features_of(X)
            if d_known is not None:
                check_n_components(inputs.k, d_known, _OWNER, name="k")
        return _Checked(inputs, budget, C, _noise_shape(inputs.noise_shape, inputs.calibration),
                        summation_of(X))

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> ReleasePlan:
        k = inputs.inputs.k
        if k is not None and d is not None:
            check_n_components(k, d, _OWNER, name="k")
        n_users = n if inputs.inputs.simulate_sum and k is not None else None
        return _plan(inputs.budget, inputs.calibration, inputs.C, inputs.inputs.owner, n_users=n_users,
                     summation=inputs.summation)

    def read(self, inputs: _Checked, X: Any) -> _Read:
        """The validating pass: one record, the scatter (``simulate_sum``), or the rows alone."""
        k = inputs.inputs.k
        if k is None:
            return _Read(1, None, _user_row(X, inputs.C, inputs.inputs.on_norm_violation))
        if is_one_shot(X) and not inputs.inputs.simulate_sum:
            return _Read(None, None, X)  # read once, inside the charge, while the reports are made
        moments = accumulate(X, row_norm=inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,
                             want_sum=False, want_second=inputs.inputs.simulate_sum, owner=_OWNER,
                             show_progress=self.show_progress if inputs.inputs.simulate_sum else None)
        check_n_components(k, moments.d, _OWNER, name="k")
        return _Read(moments.n, moments.d, X, moments.second)

    def statistic(self, inputs: _Checked, rows: _Read, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if inputs.inputs.k is None:
            return {"report": Drawn(lambda releaser: _reports(rows.source, releaser, inputs.shape)[0])}
        if not inputs.inputs.simulate_sum:
            return {"report": Drawn(lambda releaser: _simulated_report_sum(
                rows.source, inputs.C, releaser, inputs.inputs.on_norm_violation, _OWNER,
                self.show_progress, inputs.shape))}
        # one symmetric Gaussian on the average: exactly the law of the average of the n reports' noise
        # (entry std sigma / sqrt(n), and sigma / sqrt(2 n) off the diagonal with "goe")
        assert rows.second is not None and rows.n is not None and rows.d is not None
        if inputs.shape == "iid":  # the paper's shape (i.i.d. entries on and above the diagonal)
            return {"average": Symmetric(rows.second / rows.n)}
        w = _iso_weights(rows.d, inputs.shape)
        return {"average": (rows.second / rows.n)[np.triu_indices(rows.d)] * w}

    def post_process(self, inputs: _Checked, rows: _Read, released: Released, report: Any) -> Any:
        """The server's average and its top-k eigenvectors (a user's report: the report itself)."""
        k = inputs.inputs.k
        if k is None:
            return released["report"]
        if inputs.inputs.simulate_sum:
            n, d = int(rows.n), int(rows.d)  # type: ignore[arg-type]
            average = released["average"]
            if inputs.shape != "iid":
                w = _iso_weights(d, inputs.shape)
                average = _symmetric_from_upper(average / w, d)
        else:
            total, n, d = released["report"]
            check_n_components(k, d, _OWNER, name="k")
            average = _symmetric_from_upper(total / n, d)
        values, components = top_k_eigh(average, k)
        spec = released.plan["report"]
        diagnostics: dict[str, Any] = {
            "noise_std": spec.scale,
            "aggregate_noise_std": spec.scale / math.sqrt(n),
            "noise_multiplier": released.plan.events[0].noise_multiplier,  # type: ignore[attr-defined]
            "sensitivity": spec.sensitivity,
            "communication_floats_per_user": report_length(d),
            "simulate_sum": bool(inputs.inputs.simulate_sum),
            "noise_shape": inputs.shape,
        }
        return SubspaceResult(
            components=components,
            values=values * n,
            total=float(np.trace(average)) * n,
            n_samples=float(n),
            privacy=report,
            diagnostics=diagnostics,
        )


def _user_row(x: Any, C: float, on_norm_violation: NormViolation) -> np.ndarray:
    """One user's record, checked (a non-empty finite 1-D array) and clipped to C, as a (1, d) copy."""
    owner = "local_gaussian_report"
    arr = as_numeric_array(x, owner, name="x", ndim=None, convert_object=False)  # quotes no value
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"The 'x' parameter of {owner} must be a non-empty 1-D array (one record). Got shape "
            f"{arr.shape} instead."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"The 'x' parameter of {owner} contains NaN or infinity.")
    row = arr.astype(np.float64)[None, :]  # a copy: the caller's record is never written
    row, _ = clip_rows(row, C, on_norm_violation=on_norm_violation, copy=False)
    return np.asarray(row)
