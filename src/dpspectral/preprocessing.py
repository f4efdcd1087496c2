"""``DPStandardScaler``: per-feature mean and variance released under public per-feature bounds.

One release of Gaussian noise on the vector of clipped sums and the vector of clipped sums of squares
(and, under add/remove neighbours, on the number of rows), then post-processing of the released values
only (:func:`scaler_plan`, :class:`DPStandardScaler`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
from sklearn.base import OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._constraints import DELTA, EPSILON, NONE, RANDOM_STATE
from ._estimators import ACCOUNTANT, BOOL, RELATION, _DPEstimator
from ._moments import grouped_summation, sum_in_groups
from ._validation import as_numeric_array, validated_data
from .privacy._accounting import Accountant, PrivacyReport
from .privacy._budget import PrivacyBudget, Relation, as_relation
from .privacy._clipping import ROUNDING_SLACK
from .privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from .privacy._pipeline import NoisyRelease, ReleasePlan, not_finite_error
from .privacy._rounding import Kind, widen_release
from .privacy._template import Mechanism, Released, RunSettings, run

__all__ = ["DPStandardScaler", "ScalerRelease", "clipped_sums", "scaler_plan", "scaler_sensitivities"]

#: The label of the release (ledger entries and privacy reports).
MECHANISM = "standard_scaler"
#: Share of the Gaussian budget (of ``1/s^2``) spent on the noisy count under add/remove neighbours.
COUNT_SHARE = 0.01
#: The relations the release protects.
RELATIONS = (Relation.REPLACE_ONE, Relation.ADD_REMOVE)
#: Released standard deviations below this are read as 0 and give a scale of 1 (as scikit-learn).
_ZERO_SCALE = 10 * np.finfo(np.float64).eps


def _check_bounds(bounds: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """``bounds = (lower, upper)``: finite scalars or 1-D arrays with ``lower < upper`` (no data read)."""
    why = ("a pair (lower, upper) of finite numbers or of 1-D arrays of shape (n_features,), with "
           "lower < upper for every feature")
    if bounds is None:
        raise ValueError(f"The 'bounds' parameter of {owner} is required (public per-feature bounds, "
                         f"chosen without looking at the data): {why}. Got None instead.")
    pair = None
    if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        try:
            pair = tuple(np.asarray(b, dtype=np.float64) for b in bounds)
        except (TypeError, ValueError):
            pair = None
    if pair is None or any(b.ndim > 1 or b.size == 0 or not np.all(np.isfinite(b)) for b in pair):
        raise ValueError(f"The 'bounds' parameter of {owner} must be {why}. Got {bounds!r} instead.")
    lower, upper = pair
    if lower.ndim == 1 and upper.ndim == 1 and lower.shape != upper.shape:
        raise ValueError(f"The 'bounds' parameter of {owner} must be {why}; lower and upper have "
                         f"{lower.size} and {upper.size} entries. Got {bounds!r} instead.")
    with np.errstate(over="ignore"):
        ok = np.all(lower < upper) and np.all(np.isfinite(upper - lower))
    if not ok:
        raise ValueError(f"The 'bounds' parameter of {owner} must be {why}. Got {bounds!r} instead.")
    return lower, upper


def _bounds_for(lower: np.ndarray, upper: np.ndarray, n_features: int,
                owner: str) -> tuple[np.ndarray, np.ndarray]:
    """The bounds as two arrays of shape (n_features,) (a scalar applies to every feature)."""
    for b in (lower, upper):
        if b.ndim == 1 and b.size != n_features:
            raise ValueError(f"The 'bounds' parameter of {owner} has arrays of {b.size} entries, but the "
                             f"data have n_features = {n_features} columns; give one bound per feature "
                             "(or scalars). Nothing was charged.")
    return (np.broadcast_to(lower, (n_features,)).astype(np.float64),
            np.broadcast_to(upper, (n_features,)).astype(np.float64))


def scaler_sensitivities(lower: np.ndarray, upper: np.ndarray, relation: Relation | str) -> dict[str, float]:
    """L2 sensitivities of the released vectors for values clipped to ``[lower, upper]`` per feature.

    The values are clipped, then centred at the midpoint ``m = (lower + upper) / 2``: ``z = clip(x) - m``
    lies in ``[-h, h]`` with ``h = (upper - lower) / 2``. The releases are ``sum_i z_i`` (``"sum"``),
    ``sum_i z_i^2`` (``"sum_of_squares"``) and ``n`` (``"count"``, add/remove only).

    * replace-one, ``"sum"``: one row ``z`` becomes ``z'``, each coordinate moves by ``|z'_j - z_j| <=
      2 h_j``: ``2 ||h||_2 = ||upper - lower||_2``, reached by a row at ``lower`` replaced by a row at
      ``upper``;
    * replace-one, ``"sum_of_squares"``: ``z'_j^2 - z_j^2`` lies in ``[-h_j^2, h_j^2]``:
      ``||h^2||_2``, reached by a row at the midpoint replaced by a row at a bound (centring is what makes
      this ``h^2`` rather than ``max(lower^2, upper^2) - min over [lower, upper] of x^2``, up to 4 times
      larger: ``[0, 1]`` gives ``1/4`` instead of ``1``);
    * add/remove, ``"sum"``: ``||z||_2 <= ||h||_2`` (a row at a bound); ``"sum_of_squares"``:
      ``||z^2||_2 <= ||h^2||_2``; ``"count"``: 1.

    Each is taken at ``h (1 + ROUNDING_SLACK)`` so that the rounding of the computed centred values
    stays covered (:data:`~dpspectral.privacy._clipping.ROUNDING_SLACK`).
    """
    rel = as_relation(relation)
    h = (np.asarray(upper, dtype=np.float64) - np.asarray(lower, dtype=np.float64)) / 2.0
    h = h * (1.0 + ROUNDING_SLACK)
    sums = float(np.linalg.norm(h))
    return {"sum": 2.0 * sums if rel is Relation.REPLACE_ONE else sums,
            "sum_of_squares": float(np.linalg.norm(h * h)), "count": 1.0}


def scaler_plan(lower: np.ndarray, upper: np.ndarray, *, epsilon: float, delta: float,
                relation: Relation | str = Relation.REPLACE_ONE, with_mean: bool = True,
                with_std: bool = True) -> ReleasePlan:
    """The one release of :class:`DPStandardScaler`, from public inputs only.

    The analytic Gaussian multiplier ``s`` of ``(epsilon, delta)`` (:func:`analytic_noise_multiplier`) is
    split exactly (:func:`split_noise_multiplier`, Gaussian DP) between the releases needed: the sums
    (for a mean or a variance), the sums of squares (for a variance) and, under add/remove, the count
    (:data:`COUNT_SHARE` of ``1/s^2``); the sums and the sums of squares share the rest equally. One
    ``GaussianDpEvent`` per release; they compose to exactly the one Gaussian release of ``s``.
    With neither a mean nor a variance under replace-one nothing is released (the plan is empty).
    """
    rel = as_relation(relation)
    names = []
    if with_mean or with_std:
        names.append("sum")
    if with_std:
        names.append("sum_of_squares")
    count = not rel.n_is_public
    shares = {name: (1.0 - (COUNT_SHARE if count else 0.0)) / len(names) for name in names}
    if count:
        shares["count"] = COUNT_SHARE if names else 1.0
    if not shares:
        return ReleasePlan(MECHANISM, rel, (), (), notes=("Nothing released: with_mean and with_std are "
                                                          "both False and n is public (replace-one).",))
    s = analytic_noise_multiplier(float(epsilon), float(delta))
    multipliers = dict(zip(shares, split_noise_multiplier(s, list(shares.values())), strict=True))
    sens = scaler_sensitivities(lower, upper, rel)
    releases = tuple(NoisyRelease(name, "gaussian", multipliers[name] * sens[name], sens[name])
                     for name in shares)
    events = tuple(dp_accounting.GaussianDpEvent(multipliers[name]) for name in shares)
    note = (f"standard scaler: {', '.join(shares)} of the values clipped to the public bounds and centred "
            f"at their midpoints, one Gaussian mechanism (multiplier {s:.6g}) split "
            f"{', '.join(f'{w:.3g}' for w in shares.values())}.")
    return ReleasePlan(MECHANISM, rel, events, releases, notes=(note,))


def clipped_sums(X: Any, lower: np.ndarray, upper: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, sum_i z_i, sum_i z_i^2)`` of ``z = clip(x, lower, upper) - (lower + upper) / 2`` per feature.

    In float64, piece by piece (bounded memory), the pieces summed in groups of rows as the covariance
    releases sum theirs (:func:`~dpspectral._moments.sum_in_groups`: the rounding of the sums grows with
    the rows of a group plus the number of groups, not with ``n``); the caller's array is never written.
    """
    X = np.asarray(X)
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    center = (lower + upper) / 2.0
    n, d = X.shape

    def piece_sums(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        z = np.clip(np.asarray(X[a:b], dtype=np.float64), lower, upper) - center
        return z.sum(axis=0), np.einsum("ij,ij->j", z, z)

    s1, s2 = sum_in_groups(n, d, piece_sums, np.zeros(d), np.zeros(d))
    return int(n), s1, s2


@dataclass(frozen=True)
class ScalerRelease:
    """What one fit released (every value is noisy or public).

    Attributes
    ----------
    center : ndarray of shape (n_features,)
        The public midpoints ``(lower + upper) / 2`` the clipped values were centred at.
    half_range : ndarray of shape (n_features,)
        The public ``(upper - lower) / 2``.
    sum, sum_of_squares : ndarray of shape (n_features,) or None
        The noisy sums of the centred clipped values and of their squares (None when not released).
    count : float or None
        The noisy number of rows (add/remove only).
    n_samples : int or None
        n when public (replace-one).
    noise_std, sensitivity : dict
        Each release's noise standard deviation and L2 sensitivity (public: from the plan).
    """

    center: np.ndarray
    half_range: np.ndarray
    sum: np.ndarray | None
    sum_of_squares: np.ndarray | None
    count: float | None
    n_samples: int | None
    noise_std: dict[str, float] = field(default_factory=dict)
    sensitivity: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _ScalerInputs:
    """The checked public inputs of a fit (the bounds broadcast to the data's columns)."""

    budget: PrivacyBudget
    relation: Relation
    lower: np.ndarray
    upper: np.ndarray
    with_mean: bool
    with_std: bool
    owner: str


@dataclass(frozen=True, eq=False)
class _Sums:
    """The validating pass: the number of rows and the clipped, centred sums (private)."""

    n: int
    d: int
    sum: np.ndarray
    sum_of_squares: np.ndarray


class _Scaler(Mechanism[_ScalerInputs, tuple[ReleasePlan, dict[str, Any], int, PrivacyReport]]):
    """The scaler's release as the release template runs it (a plan with no release charges nothing)."""

    label = MECHANISM
    stacklevel = 3

    def report_facts(self, inputs: _ScalerInputs) -> dict[str, Any]:
        return {"mechanism": MECHANISM, "budget": inputs.budget, "calibration": "tight"}

    def plan(self, inputs: _ScalerInputs, n: int | None, d: int | None) -> ReleasePlan:
        """:func:`scaler_plan`, each release widened for the rounding of its sum over the ``n`` rows
        (:mod:`dpspectral.privacy._rounding`; a term is at most the add/remove sensitivity), summed in
        groups (:func:`clipped_sums`: under add/remove at the public rows of that path)."""
        budget = inputs.budget
        plan = scaler_plan(inputs.lower, inputs.upper, epsilon=budget.epsilon, delta=budget.delta,
                           relation=inputs.relation, with_mean=inputs.with_mean, with_std=inputs.with_std)
        terms = scaler_sensitivities(inputs.lower, inputs.upper, Relation.ADD_REMOVE)
        kinds: dict[str, Kind] = {"sum": "sums", "sum_of_squares": "products", "count": "counts"}
        summation = grouped_summation(inputs.lower.size)
        return dataclasses.replace(plan, releases=tuple(
            widen_release(r, n=n, relation=plan.relation, kind=kinds[r.name], term_bound=terms[r.name],
                          summation=summation) for r in plan.releases))

    def read(self, inputs: _ScalerInputs, X: Any) -> _Sums:
        if not np.all(np.isfinite(X)):
            raise not_finite_error(inputs.owner)
        n, s1, s2 = clipped_sums(X, inputs.lower, inputs.upper)
        return _Sums(n, int(X.shape[1]), s1, s2)

    def statistic(self, inputs: _ScalerInputs, rows: _Sums, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        statistics = {"sum": rows.sum, "sum_of_squares": rows.sum_of_squares, "count": float(rows.n)}
        return {spec.name: statistics[spec.name] for spec in plan.releases}

    def post_process(self, inputs: _ScalerInputs, rows: _Sums, released: Released,
                     report: Any) -> tuple[ReleasePlan, dict[str, Any], int, PrivacyReport]:
        return released.plan, dict(released), rows.n, report


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, _DPEstimator):
    """Standardize features by a differentially private mean and variance.

    Like scikit-learn's ``StandardScaler`` (``z = (x - mean_) / scale_``), but ``mean_`` and ``var_``
    come from one private release: the values are clipped to PUBLIC per-feature bounds, centred at the
    bounds' midpoints, and Gaussian noise is added to their sums and sums of squares (and, under
    add/remove neighbours, to the number of rows). Everything stored is post-processing of that release.

    Parameters
    ----------
    bounds : tuple (lower, upper)
        Public bounds of each feature: two floats (the same for every feature) or two arrays of shape
        (n_features,), ``lower < upper``. Required: chosen without looking at the data (from the
        measurement's range, a schema, domain knowledge). Values outside are clipped to them before
        anything is computed; wide bounds cost accuracy (the noise scales with ``upper - lower``).
    epsilon : float
        In (0, inf). Required.
    delta : float
        In (0, 1). Required (Gaussian noise).
    relation : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation protected. Replace-one: n is public (``n_samples_seen_`` is n).
        Add/remove: n is private; a noisy count is released too (1 % of the budget) and the mean and
        variance are computed from the noisy sums over the noisy count.
    accountant : Accountant or None, default=None
        A shared ledger with a ceiling; the fit is refused before any noise is drawn when it would be
        exceeded. Shared by reference across ``clone`` (a pipeline's steps can share one).
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Seeds the noise (keep a seed secret). ``"secure"``: OS entropy and exact discrete samplers.
    with_mean : bool, default=True
        Subtract ``mean_`` in ``transform``.
    with_std : bool, default=True
        Divide by ``scale_`` in ``transform``. False: no sums of squares are released (the whole
        budget goes to the sums; with ``with_mean=False`` too, nothing is released under replace-one).
    copy : bool, default=True
        False: ``transform`` and ``inverse_transform`` scale a float array in place (``fit`` never
        writes the caller's array).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        Released mean, within the bounds (None when neither a mean nor a variance is asked for).
    var_ : ndarray of shape (n_features,) or None
        Released variance (population, as scikit-learn), within ``[0, (upper - lower)^2 / 4]``
        (the largest variance of values in the bounds). None when ``with_std=False``.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``; 1 where the released variance is 0 (as scikit-learn for a constant feature).
    n_samples_seen_ : int or float
        n under replace-one (public); the released noisy count (floored at 1) under add/remove.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when X has feature names that are all strings.
    privacy_ : PrivacyReport
        The relation, epsilon, delta, certified and the events of this fit.
    release_ : ScalerRelease
        The release itself (noisy sums, noisy count, public centres, noise scales).

    Notes
    -----
    ``partial_fit`` and ``sample_weight`` are not offered (each call would be another release; weights
    change the sensitivity). NaN is refused, not ignored (how many values are missing is private).
    ``transform`` does not clip new data to the bounds. A noisy variance below 0 is clipped to 0, so a
    feature whose spread is small next to the noise gets ``scale_ = 1``: raise epsilon or tighten its
    bounds. The scikit-learn estimator checks pass, except under add/remove neighbours the one that expects
    an empty data set to be refused: there an empty data set is a neighbour like any other, and is
    released (a noisy count and noisy sums), not refused.

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral import DPStandardScaler
    >>> X = np.random.default_rng(0).normal(loc=[5.0, -2.0], scale=[2.0, 0.5], size=(10_000, 2))
    >>> scaler = DPStandardScaler(bounds=([-5.0, -5.0], [15.0, 1.0]), epsilon=1.0, delta=1e-6,
    ...                           random_state=0).fit(X)
    >>> np.round(scaler.mean_, 1), np.round(scaler.scale_, 1)
    (array([ 5., -2.]), array([2. , 0.5]))
    """

    def __init__(
        self,
        *,
        bounds: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        relation: Any = "replace_one",
        accountant: Accountant | None = None,
        random_state: Any = None,
        with_mean: bool = True,
        with_std: bool = True,
        copy: bool = True,
    ) -> None:
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.relation = relation
        self.accountant = accountant
        self.random_state = random_state
        self.with_mean = with_mean
        self.with_std = with_std
        self.copy = copy

    _required_parameters = ("epsilon", "delta")
    _parameter_constraints = {
        "epsilon": [EPSILON, NONE],  # None: "is required" (_required_parameters)
        "delta": [DELTA, NONE],
        "relation": RELATION,  # replace-one or add/remove: _relation
        "accountant": ACCOUNTANT,
        "random_state": RANDOM_STATE,
        "with_mean": BOOL,
        "with_std": BOOL,
        "copy": BOOL,
    }
    _parameters_checked_elsewhere = {
        "bounds": "a pair (lower, upper) of finite scalars or 1-D arrays, lower < upper: _check_bounds at "
                  "fit before the data, and their length against n_features before the charge",
    }

    def _relation(self) -> Relation:
        owner = type(self).__name__
        rel = Relation.REPLACE_ONE if self.relation is None else as_relation(self.relation, owner=owner)
        if rel not in RELATIONS:
            raise ValueError(f"The 'relation' parameter of {owner} must be 'replace_one' or 'add_remove'. "
                             f"Got {self.relation!r} instead.")
        return rel

    def _public_inputs(self) -> tuple[PrivacyBudget, Relation, np.ndarray, np.ndarray]:
        """The checked public parameters (nothing read): budget, relation, lower, upper."""
        owner = type(self).__name__
        self._check_parameter_table()
        budget = PrivacyBudget(float(self.epsilon), float(self.delta))  # type: ignore[arg-type]
        budget.require_delta(owner)
        rel = self._relation()
        lower, upper = _check_bounds(self.bounds, owner)
        return budget, rel, lower, upper

    def _plan(self, n_features: int | None = None) -> ReleasePlan:
        """The plan of a fit on ``n_features`` columns, from public inputs only (checked first).

        The events do not depend on ``n_features`` (only the noise scales do): None plans with the
        bounds as given (one feature for scalar bounds).
        """
        budget, rel, lower, upper = self._public_inputs()
        d = n_features if n_features is not None else max(lower.size, upper.size)
        lower, upper = _bounds_for(lower, upper, d, type(self).__name__)
        return scaler_plan(lower, upper, epsilon=budget.epsilon, delta=budget.delta, relation=rel,
                           with_mean=self.with_mean, with_std=self.with_std)

    def fit(self, X: Any, y: Any = None) -> DPStandardScaler:
        """Release the clipped sums (and sums of squares, and the count under add/remove), then post-process.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private data; never modified.
        y : ignored

        Returns
        -------
        self

        Privacy
        -------
        Relation: replace-one (default) or add/remove. With ``h = (upper - lower) / 2`` and the values
        clipped and centred at the midpoints (:func:`scaler_sensitivities`): the sums have L2
        sensitivity ``2 ||h||_2 = ||upper - lower||_2`` (replace-one) or ``||h||_2`` (add/remove); the
        sums of squares ``||h^2||_2`` (both); the count 1 (add/remove). Each is a Gaussian release with
        its multiplier from one analytic Gaussian budget split exactly (:func:`scaler_plan`), one
        ``GaussianDpEvent`` each, charged together before any noise is drawn. Every check (parameters,
        bounds, the data's type, shape and finiteness) runs before the charge: a refusal costs nothing.
        """
        owner = type(self).__name__
        budget, rel, lower, upper = self._public_inputs()
        empty_ok = rel is Relation.ADD_REMOVE  # under add/remove an empty data set is a neighbour too
        X = validated_data(self, X, dtype=(np.float64, np.float32), ensure_all_finite=False, copy=False,
                           reset=True, ensure_min_samples=0 if empty_ok else 1)
        lower, upper = _bounds_for(lower, upper, int(X.shape[1]), owner)
        inputs = _ScalerInputs(budget, rel, lower, upper, bool(self.with_mean), bool(self.with_std), owner)
        plan, released, n, report = run(_Scaler(), inputs, X, RunSettings(self.accountant, self.random_state))
        self._store(plan, released, lower, upper, n if rel.n_is_public else None, report)
        return self

    def _store(self, plan: ReleasePlan, released: dict[str, Any], lower: np.ndarray, upper: np.ndarray,
               n_public: int | None, report: PrivacyReport) -> None:
        """Post-processing of the release: mean, variance, scale (released values and public bounds only)."""
        center, h = (lower + upper) / 2.0, (upper - lower) / 2.0
        count = None if "count" not in released else float(released["count"])
        n_hat = float(n_public) if n_public is not None else max(float(count), 1.0)  # type: ignore[arg-type]
        self.n_samples_seen_: int | float = n_public if n_public is not None else n_hat
        self.mean_ = self.var_ = self.scale_ = None
        if "sum" in released:
            mean_z = np.clip(np.asarray(released["sum"], dtype=np.float64) / n_hat, -h, h)
            self.mean_ = np.clip(center + mean_z, lower, upper)
            if "sum_of_squares" in released:
                second = np.asarray(released["sum_of_squares"], dtype=np.float64) / n_hat
                self.var_ = np.clip(second - mean_z * mean_z, 0.0, h * h)
                scale = np.sqrt(self.var_)
                self.scale_ = np.where(scale < _ZERO_SCALE, 1.0, scale)
        self.release_ = ScalerRelease(
            center=center, half_range=h, sum=released.get("sum"),
            sum_of_squares=released.get("sum_of_squares"), count=count, n_samples=n_public,
            noise_std={r.name: r.scale for r in plan.releases},
            sensitivity={r.name: float(r.sensitivity or 0.0) for r in plan.releases})
        self.privacy_: PrivacyReport = report

    def transform(self, X: Any, copy: bool | None = None) -> np.ndarray:
        """``(X - mean_) / scale_`` (each step as ``with_mean`` / ``with_std`` ask); no clipping."""
        check_is_fitted(self, "release_")
        copy = self.copy if copy is None else copy
        X = validated_data(self, X, dtype=(np.float64, np.float32), copy=copy, reset=False)
        if self.with_mean and self.mean_ is not None:
            X -= self.mean_
        if self.with_std and self.scale_ is not None:
            X /= self.scale_
        return X

    def inverse_transform(self, X: Any, copy: bool | None = None) -> np.ndarray:
        """``X * scale_ + mean_``: back to the original units."""
        check_is_fitted(self, "release_")
        owner = f"{type(self).__name__}.inverse_transform"
        copy = self.copy if copy is None else copy
        Z = as_numeric_array(X, owner, name="X", ndim=2)
        Z = np.array(Z, dtype=np.float64, copy=True) if copy or Z.dtype.kind not in "f" else Z
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"{owner} expects shape (n_samples, {self.n_features_in_}); got "
                             f"{Z.shape[1]} columns.")
        if self.with_std and self.scale_ is not None:
            Z *= self.scale_
        if self.with_mean and self.mean_ is not None:
            Z += self.mean_
        return Z

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
