"""``DPFisherDiscriminant``: a scikit-learn transformer for private Fisher discriminant analysis."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import dp_accounting
import numpy as np

from .._constraints import DELTA, EPSILON, NONE, PRIVACY_PARAMETERS, Interval, Options
from .._estimators import (
    ACCOUNTANT,
    METHOD_PARAMS,
    N_COMPONENTS,
    PUBLIC_BASIS,
    RELATION,
    _DPEstimator,
    method_names,
    require,
)
from .._public_basis import _lift_gep
from .._registry import Method, get_method, methods
from ..privacy._accounting import Accountant, PrivacyReport, certify_release
from ..privacy._budget import PrivacyBudget, Relation, UncertifiedPrivacyWarning, as_relation
from ..privacy._guardrails import PrivacyParameterWarning
from ..privacy._noise import noise_source
from ..privacy._template import RunSettings, run
from ._common import check_int, check_regularization
from ._directions import _ReleasedDirections
from ._groups import CALIBRATION_OR_PAPER, PaperCalibration
from ._labelled import _LabelledFit
from ._labels import LabelRows, LabelSet, plan_label_release, solver_budget
from ._moments import DEFAULT_RIDGE, MOMENTS, fisher_result, prepare_moments
from ._result import GEPResult
from ._scatter import build_fda_pair, check_classes
from ._solve import default_regularization, solve_pair

__all__ = ["DPFisherDiscriminant"]


class _ReachedTheCharge(Exception):
    """Raised by :class:`_ProbeAccountant` when a solver reaches its charge (its checks all passed)."""


class _ProbeAccountant(Accountant):
    """A ledger that stops a solver at its first charge or precheck: nothing recorded, nothing drawn."""

    def check(self, event: Any, relation: Any) -> float:
        raise _ReachedTheCharge


def _takes_paper_settings(method: Method) -> bool:
    """Whether the solver of a GEP entry takes ``calibration=PaperCalibration(...)`` (its table says so)."""
    table = getattr(method.solver, "parameter_constraints", {}) if method.private else {}
    entry = table.get("calibration") or []
    return any(c.accepts(PaperCalibration()) for c in (entry if isinstance(entry, list) else [entry]))


class DPFisherDiscriminant(_ReleasedDirections, _LabelledFit, _DPEstimator):
    """Differentially private Fisher discriminant analysis (dimension reduction).

    ``fit(X, y)`` releases, once, the second moment, the class sums and the class counts of the clipped
    rows (``method="moments"``, the default: :mod:`dpspectral.gep._moments`) and solves the Fisher
    generalized eigenproblem ``A v = lambda (B + r I) v`` on the released values, with a ridge r set
    from the public noise scale; or, with a paper method (``"dpsr"``, ...), builds the scatter pair of
    the clipped rows (:func:`~dpspectral.gep.fda_pair`) and runs that private solver. Only released
    quantities are stored. ``transform(X)`` is ``X @ scalings_``.

    The default is ``"moments"``, not the paper's ``"dpsr"``: on MNIST (9 directions, logistic
    regression on the projections) it reaches 0.88 at epsilon = 1 where DPSR with certified noise is
    at the level of a random projection (``docs/algorithms/gep.md``). ``method="dpsr"`` reproduces
    Chen et al.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of directions, in ``[1, min(n_classes - 1, n_features)]`` (a larger value is refused,
        as scikit-learn's LDA does); None takes ``min(n_classes - 1, n_features)``. ``n_classes`` is
        the length of the public ``classes`` when given.
    epsilon : float
        Privacy parameter in (0, inf). Required (ignored by ``method="sr"``).
    delta : float
        In (0, 1). Required (ignored by ``method="sr"``).
    row_norm : float
        Public bound on each row's Euclidean norm; rows above it are clipped per row, or rejected with
        ``on_norm_violation="raise"``. Required: chosen without looking at the data.
    method : {"moments", "dpsr", "dpsrs", "sr_dp", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow", "sr"}, \
default="moments"
        ``"moments"`` (one Gaussian release of the moments, by default of the rows clipped at a released
        clip; replace-one or add/remove),
        ``"dpsr"`` (Algorithm 2 of Chen et al., corrected as in ``docs/algorithms/gep.md``),
        ``"dpsrs"`` (sparse, needs ``sparsity``), ``"sr_dp"`` (noise on A and B, then SR),
        the DP-Rayleigh-Flow baselines, or ``"sr"``: the NON-PRIVATE simultaneous reduction (a labelled
        reference: ``privacy_.certified`` is False and an ``UncertifiedPrivacyWarning`` is raised).
    regularization : float, "noise" or None, default=None
        Regularisation of the paper methods (the paper's xi): a float is the ratio added to the within-class
        eigenvalues (> 0; 0.01 is the paper's), ``"noise"`` the paper solvers' ridge from the planned
        noise scale (a public function of epsilon, delta and the sensitivities). None:
        ``"noise"`` for the private methods, 0.01 for ``"sr"``. Not used by ``"moments"`` (its
        regulariser is ``ridge``). The same name as in :func:`~dpspectral.private_fda`.
    ridge : float or None, default=None
        ``method="moments"`` only: the ridge added to the released within-class scatter, in units of the
        public noise scale ``sigma_S sqrt(d)`` (> 0; None: 1.0, measured on four data sets). Refused
        with another method.
    relation : {"replace_one", "add_remove"} or None, default=None
        The neighbouring relation (a record is a row and its label). None: replace-one. The paper
        methods protect replace-one only; ``"moments"`` either (under add/remove the counts, and n,
        are private too).
    calibration : {"tight", "paper"} or PaperCalibration, default="tight"
        Accountant-calibrated noise, or the paper's formula (flagged when the accountant does not
        certify it). ``method="dpsr"`` and ``"dpsrs"`` also take a :class:`PaperCalibration`: the
        paper's formula with that choice of formula and constants.
    n_iter : int, default=15
        Iterations per phase (the paper's m) of the iterative methods.
    sparsity : int or None, default=None
        s, the non-zeros per direction, for the sparse methods.
    classes : array-like or None, default=None
        The public list of labels (at least 2): the class list, the default ``n_components`` and every
        output shape then come from it, and a class absent from the data, a class with one member, or
        a single class present are handled by the mechanism (no refusal that one record decides).
        None (scikit-learn's behaviour): the set of labels is released privately first, in the same
        report (:mod:`dpspectral.gep._labels`: a label present is kept iff its noisy count passes a
        public threshold, about 145 rows at epsilon = 1, delta = 1e-6), and ``classes_``,
        ``n_components_`` and the shapes come from that release; fewer than 2 labels kept is an error
        after that charge. ``"moments"`` leaves out the rows of a label not kept; a paper method runs
        on every row (its pair does not depend on which labels are named).
    accountant : Accountant or None, default=None
        Shared ledger with a ceiling, shared by reference across ``clone``; a fit is refused before any
        noise is drawn when it would exceed it.
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Seeds the noise (keep a seed secret). ``"secure"`` draws the noise from OS entropy with exact
        discrete samplers (not reproducible); ``privacy_.noise_source`` says which source was used.
    on_norm_violation : {"clip", "raise"}, default="clip"
    method_params : dict or None, default=None
        Extra options of the solver (e.g. ``step_sizes`` (:class:`StepSizes`), ``basis_size``,
        ``budget_shares`` for DPSR; ``step_size``, ``init`` for the flows; ``a_share``; for ``"moments"``
        only ``budget_shares``, the
        shares of (second moment, class sums, counts), default (0.5, 0.4, 0.1), ``adaptive_clip``
        (default True: the rows clipped at a clip released from a noisy norm histogram;
        :func:`~dpspectral.gep._moments.release_moments`) and ``clip_share`` (the histogram's share,
        default 0.02)).
    xi : float or "noise", optional
        The old name of ``regularization``; it still works, with a ``FutureWarning``, for one release.
    public_basis : PublicBasis, ndarray, tuple or None, default=None
        A public orthonormal basis (as ``DPPCA``'s): each row is projected onto its d' atoms before it is
        clipped, the method releases in d' dimensions, and the directions are lifted back (``w -> B w``:
        ``w^T (B^T x) = (B w)^T x``); the report notes the basis. ``docs/public-basis.md``.

    Attributes
    ----------
    scalings_ : ndarray of shape (n_features, n_components)
        Released discriminant directions (columns), normalised in the released within-class matrix.
    components_ : ndarray of shape (n_components, n_features)
        ``scalings_.T``.
    eigenvalues_ : ndarray of shape (n_components,) or None
        Released estimates of the generalized eigenvalues.
    classes_ : ndarray
        The public ``classes`` as given or, with ``classes=None``, the labels kept by the private
        label release.
    n_components_ : int
    n_features_in_ : int
    privacy_ : PrivacyReport
        Relation (replace-one; a record is a row and its label), epsilon, delta, certified, events.
    result_ : GEPResult

    Notes
    -----
    ``transform`` does not centre (a shift of the projected data changes no classifier that has an
    intercept) and does not clip.

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral.gep import DPFisherDiscriminant
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 3000)
    >>> X = rng.normal(size=(3000, 5)) / 4 + np.eye(3, 5)[y] / 2
    >>> fda = DPFisherDiscriminant(2, epsilon=1.0, delta=1e-6, row_norm=1.5, random_state=0)
    >>> fda.fit_transform(X, y).shape
    (3000, 2)
    >>> fda.privacy_.certified
    True
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        row_norm: float | None = None,
        method: str = "moments",
        regularization: float | str | None = None,
        ridge: float | None = None,
        relation: Any = None,
        calibration: str = "tight",
        n_iter: int = 15,
        sparsity: int | None = None,
        classes: Any = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        on_norm_violation: str = "clip",
        method_params: dict[str, Any] | None = None,
        xi: Any = "deprecated",
        public_basis: Any = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.method = method
        self.regularization = regularization
        self.ridge = ridge
        self.relation = relation
        self.calibration = calibration
        self.n_iter = n_iter
        self.sparsity = sparsity
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.on_norm_violation = on_norm_violation
        self.method_params = method_params
        self.xi = xi
        self.public_basis = public_basis

    _task = "gep"
    _required_parameters = ("row_norm",)
    _parameter_constraints = {
        "n_components": N_COMPONENTS,  # <= min(n_classes - 1, n_features): _n_components
        **PRIVACY_PARAMETERS,
        "epsilon": [EPSILON, NONE],  # required by the private solvers only (not by "sr")
        "delta": [DELTA, NONE],
        "method": method_names("gep"),
        "calibration": CALIBRATION_OR_PAPER,  # a PaperCalibration for dpsr, dpsrs: _validate_params_dp
        # > 0 for the private solvers, or "noise" (a ridge from the noise scale): check_regularization
        "regularization": [NONE, Interval(0, None, "left"), Options(("noise",))],
        "xi": [NONE, Interval(0, None, "left"), Options(("noise", "deprecated"))],  # the old name
        "ridge": [Interval(0, None, "neither"), NONE],  # method="moments" only: _validate_params_dp
        "relation": RELATION,  # one the method protects: _validate_params_dp
        "n_iter": Interval(1, None, "left", integer=True),
        "sparsity": [Interval(1, None, "left", integer=True), NONE],  # <= n_features: the solver's
        "accountant": ACCOUNTANT,
        "method_params": METHOD_PARAMS,
        "public_basis": PUBLIC_BASIS,
    }
    _parameters_checked_elsewhere = {
        "classes": "a public list of at least 2 labels or None: check_classes at fit, before the data "
                   "are read (the labels are compared with y's)",
    }

    def _validate_params_dp(self) -> Method:
        """The checks that relate parameters (after the table); the registry entry of ``method``."""
        owner = type(self).__name__
        entry = get_method(self.method, owner=owner)
        if entry.private:
            require({"epsilon": self.epsilon, "delta": self.delta}, ("epsilon", "delta"), owner)
            PrivacyBudget(float(self.epsilon), float(self.delta)).require_delta(owner)  # type: ignore[arg-type]
        check_regularization(self._xi(entry), owner, allow_zero=not entry.private)
        self._check_sparsity(entry, owner)
        if isinstance(self.calibration, PaperCalibration):  # the settings of the paper calibration
            takes = [m.name for m in methods(task="gep") if _takes_paper_settings(m)]
            if entry.name not in takes:
                raise ValueError(f"The 'calibration' parameter of {owner} takes a PaperCalibration (the "
                                 f"settings of the paper's calibration) with method="
                                 f"{' or '.join(map(repr, takes))} only. Got {self.calibration!r} with "
                                 f"method={self.method!r}.")
        if self.ridge is not None and entry.name != MOMENTS:
            raise ValueError(f"The 'ridge' parameter of {owner} must be None for method={self.method!r} "
                             f"(it applies to 'moments'; the paper methods use regularization). Got "
                             f"{self.ridge!r} instead.")
        self._relation(entry, owner)
        return entry

    def _xi(self, entry: Method) -> float | str:
        """``regularization`` (xi) with None resolved: the noise ridge for a private method, 0.01 for "sr"."""
        value = self.regularization
        if not (isinstance(self.xi, str) and self.xi == "deprecated"):
            warnings.warn("The 'xi' parameter of DPFisherDiscriminant is now called 'regularization' (as in "
                          "private_fda); 'xi' will be removed in the next release.", FutureWarning,
                          stacklevel=3)
            value = self.xi
        xi = default_regularization(entry.name, value)
        return xi if isinstance(xi, str) else float(xi)

    def _relation(self, entry: Method, owner: str) -> Relation:
        """The relation asked (None: the method's first), one the registry entry protects."""
        if self.relation is None:
            return entry.relations[0] if entry.relations else Relation.REPLACE_ONE
        try:
            rel = as_relation(self.relation)
        except (ValueError, TypeError):
            rel = None
        allowed = entry.relations or (Relation.REPLACE_ONE,)
        if rel not in allowed:
            raise ValueError(f"The 'relation' parameter of {owner} must be one of "
                             f"{', '.join(repr(r.value) for r in allowed)} for method={self.method!r}. Got "
                             f"{self.relation!r} instead.")
        return rel  # type: ignore[return-value]

    def _check_sparsity(self, entry: Method, owner: str) -> None:
        """``sparsity`` is required by the registry's sparse solvers and refused by the others."""
        sparse = entry.private and entry.sparse
        if sparse and self.sparsity is None:
            raise ValueError(f"The 'sparsity' parameter of {owner} is required for method="
                             f"{self.method!r}. Got None instead.")
        if not sparse and self.sparsity is not None:
            names = " and ".join(repr(m.name) for m in methods(task="gep") if m.private and m.sparse)
            raise ValueError(f"The 'sparsity' parameter of {owner} must be None for method="
                             f"{self.method!r} (it applies to {names}). Got {self.sparsity!r} instead.")

    def fit(self, X: Any, y: Any = None) -> DPFisherDiscriminant:
        """Fit the private discriminant directions.

        Validate (public parameters, then the whole input) -> build the scatter pair of the clipped rows
        -> release with the registry entry's solver -> store the released quantities.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Private rows; never modified.
        y : array-like of shape (n_samples,)
            Private labels.

        Returns
        -------
        self

        Privacy
        -------
        ``method="moments"``: one Gaussian release of the moments (:mod:`dpspectral.gep._moments`:
        replace-one sensitivities ``sqrt(2) C^2``, ``2 C``, ``sqrt(2)`` for the second moment, the class
        sums and the counts; add/remove ``C^2``, ``C``, ``1``), by default at a clip C released by a
        first Gaussian release (a noisy norm histogram; the two compose to the budget), the directions
        post-processing. The paper
        methods: that of the chosen solver (:func:`~dpspectral.gep.private_fda`), for replace-one
        neighbours. A record is a row and its label. With ``classes=None`` the label set is released
        first (:mod:`dpspectral.gep._labels`: Gaussian counts of L2 sensitivity ``sqrt(2)`` / ``1``, a
        threshold charged as ``EpsilonDeltaDpEvent(0, delta_L)``); the later stages, or the paper solver
        (calibrated to the Gaussian budget left), complete the requested budget, and ``privacy_``
        composes every event. The whole input is validated, and the paper solver's own checks run,
        before anything is charged; a check on the released label set fails after the label stage
        (charged). ``method="sr"`` releases nothing private (``privacy_.certified`` is False; its
        ``classes_`` are the labels present).
        """
        owner = type(self).__name__
        self._check_parameter_table()
        entry = self._validate_params_dp()
        public = None if self.classes is None else check_classes(self.classes, owner)
        if public is not None:  # public parameters first, before any data is read
            self._n_components(int(public.size), None)
        X, y = self._labelled_rows(X, y, self._relation(entry, owner), owner)
        d = X.shape[1]
        self._n_components(None if public is None else int(public.size), d)
        if entry.name == MOMENTS:
            return self._fit_moments(X, y, public)
        # the whole input (rows and labels) is validated here, before the solver charges the ledger
        pair = build_fda_pair(X, y, row_norm=float(self.row_norm),  # type: ignore[arg-type]
                              classes=public, on_norm_violation=self.on_norm_violation, owner=owner)
        assert pair.classes is not None
        if entry.private and public is None:  # the label set released first, then the solver
            result, classes, k = self._release_with_labels(entry, pair, y, d)
            assert result.privacy is not None
            self._store(result, result.privacy, classes, k)
            return self
        k = self._n_components(int(pair.classes.size), d)
        if entry.private:
            result = self._release(entry, pair, k)
            assert result.privacy is not None
            privacy = result.privacy
        else:
            result, privacy = self._reference(entry, pair, k)
        self._store(result, privacy, pair.classes, k)
        return self

    def _fit_moments(self, X: Any, y: Any, public: np.ndarray | None) -> DPFisherDiscriminant:
        """``method="moments"``: validate, one release of the moments, the Fisher directions."""
        owner = type(self).__name__
        options = dict(self.method_params or {})
        unknown = sorted(set(options) - {"budget_shares", "adaptive_clip", "clip_share"})
        if unknown:
            raise ValueError(f"The 'method_params' parameter of {owner}: method='moments' takes "
                             f"'budget_shares', 'adaptive_clip' and 'clip_share' only. Got {unknown}.")
        prepared = prepare_moments(X, y, epsilon=self.epsilon, delta=self.delta, row_norm=self.row_norm,
                                   classes=public, relation=self._relation(get_method(MOMENTS), owner),
                                   calibration=self.calibration, random_state=self.random_state,
                                   on_norm_violation=self.on_norm_violation, owner=owner, **options)
        ridge = DEFAULT_RIDGE if self.ridge is None else float(self.ridge)
        moments, k = self._release_moments(prepared, public, int(X.shape[1]))
        result = fisher_result(moments, k, ridge)
        assert result.privacy is not None
        self._store(result, result.privacy, moments.classes, k)
        return self

    def _release_with_labels(self, entry: Method, pair: Any, y: Any,
                             d: int) -> tuple[GEPResult, np.ndarray, int]:
        """``classes=None`` with a paper solver: release the label set, then run the solver.

        The label stage (:mod:`dpspectral.gep._labels`) and a stand-in for the solver's cost (one
        Gaussian of the multiplier left to it) are checked against the ledger up front; the solver is
        then calibrated to the epsilon of that Gaussian at ``delta - delta_L``
        (:func:`~dpspectral.gep._labels.solver_budget`), with the next draws of the same noise stream.
        The pair does not depend on which labels are released (an absent class contributes 0): only
        ``classes_`` and the number of components do. The report composes every event of the run.
        """
        owner = type(self).__name__
        budget = PrivacyBudget(float(self.epsilon), float(self.delta))  # type: ignore[arg-type]
        relation = self._relation(entry, owner)
        labels = plan_label_release(budget, relation)
        solver = solver_budget(labels)
        self._check_solver_options(entry, pair, solver)  # the solver's refusals, before any charge
        _, index = np.unique(np.asarray(y), return_inverse=True)
        cost = (dp_accounting.GaussianDpEvent(labels.rest_multiplier()),)  # the solver's, checked up front
        with warnings.catch_warnings():  # the label stage's report: the one below warns
            warnings.simplefilter("ignore", PrivacyParameterWarning)
            rows = LabelRows(pair.classes, index.ravel())
            classes, stream = run(LabelSet(owner, cost, budget), labels, rows,
                                  RunSettings(self.accountant, self.random_state))
        k = self._n_components(int(classes.size), d, released=True)
        # the solver continues the same seeded stream (independent draws), or takes fresh OS entropy
        with warnings.catch_warnings():  # the solver's share of the budget: the report below warns once
            warnings.simplefilter("ignore", PrivacyParameterWarning)
            result = self._release(entry, pair, k, budget=solver, random_state=stream)
        assert result.privacy is not None
        events = [*labels.events, *result.privacy.events]
        privacy = certify_release(events, mechanism=result.privacy.mechanism, budget=budget,
                                  relation=relation, calibration=result.privacy.calibration,
                                  noise_source=result.privacy.noise_source,
                                  notes=(*result.privacy.notes, labels.note()),
                                  stacklevel=4)
        return dataclasses.replace(result, privacy=privacy), classes, k

    def _check_solver_options(self, entry: Method, pair: Any, solver: PrivacyBudget) -> None:
        """Run the solver's own checks (options, the pair, the plan) up to its charge, which a probe
        ledger stops: nothing is recorded or drawn. Its refusals then come before the label stage."""
        secure = isinstance(self.random_state, str)  # "secure": the secure source's own refusals
        try:
            self._release(entry, pair, 1, budget=solver, random_state="secure" if secure else 0,
                          accountant=_ProbeAccountant())
        except _ReachedTheCharge:
            return

    def _release(self, entry: Method, pair: Any, k: int, budget: PrivacyBudget | None = None,
                 random_state: Any = None, accountant: Accountant | None = None) -> GEPResult:
        """The private solver of the registry entry on the pair (charges the ledger); ``budget``,
        ``random_state`` and ``accountant`` (after a label release, or a probe) replace the estimator's."""
        options: dict[str, Any] = dict(self.method_params or {})
        options.update(calibration=self.calibration,
                       accountant=self.accountant if accountant is None else accountant,
                       random_state=self.random_state if budget is None else random_state)
        if "n_iter" in entry.options:  # the iterative solvers
            options.setdefault("n_iter", self.n_iter)
        epsilon = float(self.epsilon) if budget is None else budget.epsilon  # type: ignore[arg-type]
        delta = float(self.delta) if budget is None else budget.delta  # type: ignore[arg-type]
        return solve_pair(pair, k, method=entry.name, epsilon=epsilon, delta=delta,
                          regularization=self._xi(entry),
                          sparsity=self.sparsity, owner=type(self).__name__, **options)

    def _reference(self, entry: Method, pair: Any, k: int) -> tuple[GEPResult, PrivacyReport]:
        """The non-private reference (``"sr"``) and its privacy report (not certified, with a warning)."""
        owner = type(self).__name__
        result = solve_pair(pair, k, method=entry.name, regularization=self._xi(entry), owner=owner)
        message = (f"{owner}(method={entry.name!r}) is the NON-PRIVATE simultaneous reduction (a labelled "
                   "reference): nothing is differentially private.")
        warnings.warn(message, UncertifiedPrivacyWarning, stacklevel=3)
        privacy = PrivacyReport(
            mechanism=entry.name, relation=Relation.REPLACE_ONE, epsilon=math.inf,
            delta=float(self.delta) if self.delta is not None else 0.0,
            requested_epsilon=float(self.epsilon) if self.epsilon is not None else math.nan,
            requested_delta=float(self.delta) if self.delta is not None else math.nan,
            certified=False, calibration="none", events=(dp_accounting.NonPrivateDpEvent(),),
            notes=(message, *pair.notes),
            # nothing is drawn; the report states the source asked for (as the private solvers do)
            noise_source=noise_source(self.random_state).name,
        )
        return result, privacy

    def _store(self, result: GEPResult, privacy: PrivacyReport, classes: np.ndarray, k: int) -> None:
        """Keep the released quantities (and the public class list) as fitted attributes."""
        basis = self.__dict__.pop("_basis", None)
        if basis is not None:  # released in the public basis: directions lift as w -> B w
            result = _lift_gep(result, basis)
            privacy = dataclasses.replace(privacy, notes=(*privacy.notes, basis.note()))
        self.result_ = result
        self.scalings_ = np.ascontiguousarray(result.vectors)
        self.components_ = np.ascontiguousarray(result.vectors.T)
        self.eigenvalues_ = None if result.values is None else np.asarray(result.values)
        self.classes_ = classes
        self.n_components_ = k
        self.privacy_: PrivacyReport = privacy

    def _n_components(self, n_classes: int | None, n_features: int | None, released: bool = False) -> int:
        """``n_components`` (or its default) checked against ``min(n_classes - 1, n_features)``.

        ``n_classes``: the public ``classes``' length or (``released``) the number of labels the private
        label release kept; None (``classes=None``, before the fit): only ``n_features`` bounds it. No
        message quotes a number read from the data.
        """
        owner = type(self).__name__
        if n_classes is None:
            if self.n_components is None or n_features is None:
                return 1
            k = check_int(self.n_components, "n_components", 1, None, owner)
            if k > n_features:
                raise ValueError(f"The 'n_components' parameter of {owner} must be an int in "
                                 f"[1, n_features = {n_features}]. Got {self.n_components!r} instead.")
            return k
        source = ("labels kept by the private label release (classes=None; the release stays charged: pass "
                  "the public 'classes' to check this before the fit)" if released
                  else "classes in the public 'classes'")
        upper = n_classes - 1 if n_features is None else min(n_classes - 1, n_features)
        if self.n_components is None:
            return max(1, upper)
        k = check_int(self.n_components, "n_components", 1, None, owner)
        if k > upper:
            bound = (f"n_classes - 1 = {n_classes - 1}" if n_features is None
                     else f"min(n_classes - 1, n_features) = min({n_classes - 1}, {n_features})")
            raise ValueError(
                f"The 'n_components' parameter of {owner} must be an int in [1, {bound}] (Fisher "
                f"discriminant analysis has at most n_classes - 1 directions; {n_classes} {source}). "
                f"Got {self.n_components!r} instead."
            )
        return k
