"""``DPFisherDiscriminant``: a scikit-learn transformer for private Fisher discriminant analysis."""

from __future__ import annotations

import math
import warnings
from typing import Any

import dp_accounting
import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..constraints import (
    CALIBRATION,
    DELTA,
    EPSILON,
    NONE,
    ON_NORM_VIOLATION,
    RANDOM_STATE,
    ROW_NORM,
    Interval,
)
from ..estimators import ACCOUNTANT, METHOD_PARAMS, N_COMPONENTS, _DPEstimator, method_names, require
from ..privacy.accounting import Accountant, PrivacyReport
from ..privacy.budget import PrivacyBudget, Relation, UncertifiedPrivacyWarning
from ..registry import Method, get_method, methods
from ._common import check_int, check_xi
from .result import GEPResult
from .scatter import ScatterPair, build_fda_pair, check_classes
from .solve import solve_pair

__all__ = ["DPFisherDiscriminant"]


class DPFisherDiscriminant(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _DPEstimator):
    """Differentially private Fisher discriminant analysis (dimension reduction).

    ``fit(X, y)`` builds the between-class and within-class scatter matrices of the clipped rows
    (:func:`~dpspectral.gep.fda_pair`) and solves the regularised generalized eigenproblem with a
    private solver (Chen et al.'s DPSR by default); only released quantities are stored.
    ``transform(X)`` is ``X @ scalings_``.

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
    method : {"dpsr", "dpsrs", "sr_dp", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow", "sr"}
        ``"dpsr"`` (Algorithm 2 of Chen et al., corrected as in ``docs/algorithms/gep.md``),
        ``"dpsrs"`` (sparse, needs ``sparsity``), ``"sr_dp"`` (noise on A and B, then SR),
        the DP-Rayleigh-Flow baselines, or ``"sr"``: the NON-PRIVATE simultaneous reduction (a labelled
        reference: ``privacy_.certified`` is False and an ``UncertifiedPrivacyWarning`` is raised).
    xi : float, default=0.01
        Regularisation ratio (added to the within-class eigenvalues), > 0.
    calibration : {"tight", "paper"}, default="tight"
        Accountant-calibrated noise, or the paper's formula (flagged when the accountant does not
        certify it).
    n_iter : int, default=15
        Iterations per phase (the paper's m) of the iterative methods.
    sparsity : int or None, default=None
        s, the non-zeros per direction, for the sparse methods.
    classes : array-like or None, default=None
        The public list of labels (at least 2). **Pass it for the full guarantee**: the class list,
        the default ``n_components`` and every output shape then come from it, and a class absent
        from the data, a class with one member, or a single class present are handled by the
        mechanism (no refusal that one record decides). None (scikit-learn's behaviour): the labels
        present in ``y`` are the classes; that set is read from the private labels and treated as
        public, i.e. NOT protected (``privacy_.notes`` says so), and fewer than 2 labels in ``y`` is
        an error.
    accountant : Accountant or None, default=None
        Shared ledger with a ceiling, shared by reference across ``clone``; a fit is refused before any
        noise is drawn when it would exceed it.
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Seeds the noise (keep a seed secret). ``"secure"`` draws the noise from OS entropy with exact
        discrete samplers (not reproducible); ``privacy_.noise_source`` says which source was used.
    on_norm_violation : {"clip", "raise"}, default="clip"
    method_params : dict or None, default=None
        Extra options of the solver (e.g. ``eta_b``, ``eta_a``, ``basis_size``, ``budget_shares`` for
        DPSR; ``eta``, ``init`` for the flows; ``a_share``).

    Attributes
    ----------
    scalings_ : ndarray of shape (n_features, n_components)
        Released discriminant directions (columns), normalised in the released within-class matrix.
    components_ : ndarray of shape (n_components, n_features)
        ``scalings_.T``.
    eigenvalues_ : ndarray of shape (n_components,) or None
        Released estimates of the generalized eigenvalues.
    classes_ : ndarray
        The public ``classes`` as given or, with ``classes=None``, the labels present in ``y``
        (read from the data and treated as public: not protected).
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
        method: str = "dpsr",
        xi: float = 0.01,
        calibration: str = "tight",
        n_iter: int = 15,
        sparsity: int | None = None,
        classes: Any = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        on_norm_violation: str = "clip",
        method_params: dict[str, Any] | None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.method = method
        self.xi = xi
        self.calibration = calibration
        self.n_iter = n_iter
        self.sparsity = sparsity
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.on_norm_violation = on_norm_violation
        self.method_params = method_params

    _task = "gep"
    _required_parameters = ("row_norm",)
    _parameter_constraints = {
        "n_components": N_COMPONENTS,  # <= min(n_classes - 1, n_features): _n_components
        "epsilon": [EPSILON, NONE],  # required by the private solvers only (not by "sr")
        "delta": [DELTA, NONE],
        "row_norm": ROW_NORM,
        "method": method_names("gep"),
        "xi": Interval(0, None, "left"),  # > 0 for the private solvers: check_xi, with the reason
        "calibration": CALIBRATION,
        "n_iter": Interval(1, None, "left", integer=True),
        "sparsity": [Interval(1, None, "left", integer=True), NONE],  # <= n_features: the solver's
        "accountant": ACCOUNTANT,
        "random_state": RANDOM_STATE,
        "on_norm_violation": ON_NORM_VIOLATION,
        "method_params": METHOD_PARAMS,
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
        check_xi(self.xi, owner, allow_zero=not entry.private)
        self._check_sparsity(entry, owner)
        return entry

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
        That of the chosen solver (:func:`~dpspectral.gep.private_fda`), for replace-one neighbours where a
        record is a row and its label. The whole input is validated before the solver charges the
        ledger; ``method="sr"`` releases nothing private (``privacy_.certified`` is False).
        """
        owner = type(self).__name__
        self._check_parameter_table()
        entry = self._validate_params_dp()
        public = None if self.classes is None else check_classes(self.classes, owner)
        if public is not None:  # public parameters first, before any data is read
            self._n_components(int(public.size), None)
        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                             reset=True)
        d = X.shape[1]
        if public is not None:
            self._n_components(int(public.size), d)
        # the whole input (rows and labels) is validated here, before the solver charges the ledger
        pair = build_fda_pair(X, y, row_norm=float(self.row_norm),  # type: ignore[arg-type]
                              classes=public, on_norm_violation=self.on_norm_violation, owner=owner)
        assert pair.classes is not None
        k = self._n_components(int(pair.classes.size), d)
        if entry.private:
            result = self._release(entry, pair, k)
            assert result.privacy is not None
            privacy = result.privacy
        else:
            result, privacy = self._reference(entry, pair, k)
        self._store(result, privacy, pair, k)
        return self

    def _release(self, entry: Method, pair: ScatterPair, k: int) -> GEPResult:
        """The private solver of the registry entry on the pair (charges the ledger)."""
        options: dict[str, Any] = dict(self.method_params or {})
        options.update(calibration=self.calibration, accountant=self.accountant,
                       random_state=self.random_state)
        if "n_iter" in entry.options:  # the iterative solvers
            options.setdefault("n_iter", self.n_iter)
        return solve_pair(pair, k, method=entry.name, epsilon=float(self.epsilon),  # type: ignore[arg-type]
                          delta=float(self.delta), regularization=float(self.xi),  # type: ignore[arg-type]
                          sparsity=self.sparsity, owner=type(self).__name__, **options)

    def _reference(self, entry: Method, pair: ScatterPair, k: int) -> tuple[GEPResult, PrivacyReport]:
        """The non-private reference (``"sr"``) and its privacy report (not certified, with a warning)."""
        owner = type(self).__name__
        result = solve_pair(pair, k, method=entry.name, regularization=float(self.xi), owner=owner)
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
            noise_source="secure" if isinstance(self.random_state, str) else "seeded",  # str: "secure"
        )
        return result, privacy

    def _store(self, result: GEPResult, privacy: PrivacyReport, pair: ScatterPair, k: int) -> None:
        """Keep the released quantities (and the public class list) as fitted attributes."""
        self.result_ = result
        self.scalings_ = np.ascontiguousarray(result.vectors)
        self.components_ = np.ascontiguousarray(result.vectors.T)
        self.eigenvalues_ = None if result.values is None else np.asarray(result.values)
        self.classes_ = pair.classes
        self.n_components_ = k
        self.privacy_: PrivacyReport = privacy

    def _n_components(self, n_classes: int, n_features: int | None) -> int:
        """``n_components`` (or its default) checked against ``min(n_classes - 1, n_features)``."""
        owner = type(self).__name__
        source = ("in the public 'classes'" if self.classes is not None
                  else "found in y (classes=None: read from the data, treated as public)")
        upper = n_classes - 1 if n_features is None else min(n_classes - 1, n_features)
        if self.n_components is None:
            return max(1, upper)
        k = check_int(self.n_components, "n_components", 1, None, owner)
        if k > upper:
            bound = (f"n_classes - 1 = {n_classes - 1}" if n_features is None
                     else f"min(n_classes - 1, n_features) = min({n_classes - 1}, {n_features})")
            raise ValueError(
                f"The 'n_components' parameter of {owner} must be an int in [1, {bound}] (Fisher "
                f"discriminant analysis has at most n_classes - 1 directions; {n_classes} classes "
                f"{source}). Got {self.n_components!r} instead."
            )
        return k

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def transform(self, X: Any) -> np.ndarray:
        """Project ``X`` on the released directions: ``X @ scalings_``."""
        check_is_fitted(self, "scalings_")
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                          reset=False)
        if sp.issparse(X):
            return np.asarray(X @ self.scalings_)
        return np.asarray(X @ self.scalings_)

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
