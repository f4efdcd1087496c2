"""scikit-learn estimators over the registry.

Every estimator states its parameters once, in a class attribute ``_parameter_constraints`` (a table of
:mod:`dpspectral.constraints` entries), checked by :meth:`_DPEstimator._check_parameter_table` at the
start of ``fit`` (scikit-learn checks parameters at fit time, never in ``__init__``). The checks that
relate several parameters (a relation the chosen method supports, ``n_components <= n_features``, an
option only some methods take) stay in each estimator's ``_validate_params_dp``, next to their reason.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._array_api import (
    COVERED_METHODS,
    config_context,
    get_namespace_and_device,
    is_device_array,
    like,
    same_space,
    to_numpy,
)
from ._device_stream import DEVICE, stream_to_device
from ._validation import as_numeric_array, check_choice, check_n_components, validated_data
from .constraints import (
    CALIBRATION,
    DELTA,
    EPSILON,
    NONE,
    ON_NORM_VIOLATION,
    RANDOM_STATE,
    ROW_NORM,
    SHARE,
    Interval,
    Options,
    Types,
    check_params,
)
from .linalg import UnresolvedVarianceWarning, released_variances
from .moments import is_dask_array, n_features_of
from .privacy.accounting import Accountant, PrivacyReport
from .privacy.budget import (
    PrivacyBudget,
    PureEpsilonWarning,
    Relation,
    UncertifiedPrivacyWarning,
    as_relation,
)
from .registry import ESTIMATORS, Method, choose_lowrank_method, choose_method, get_method, methods

__all__ = ["DPLowRank", "DPPCA"]

#: Shared table entries of the estimators (the privacy entries come from :mod:`dpspectral.constraints`).
ACCOUNTANT = [Types((Accountant,), "a dpspectral.Accountant"), NONE]
METHOD_PARAMS = [Types((dict,), "a dict"), NONE]
#: A relation's name (aliases such as ``"add-remove"`` admitted) or a Relation; its value is parsed, and
#: checked against the chosen method's relations, by :func:`supported_relation`.
RELATION = [Types((str, Relation), "a str or Relation"), NONE]
N_COMPONENTS = [Interval(1, None, "left", integer=True), NONE]
BOOL = Types((bool, np.bool_), "a bool")

#: Why a required public parameter has no default (said when it is None).
_REQUIRED_WHY = {
    "epsilon": "a public privacy parameter",
    "delta": "a public privacy parameter",
    "row_norm": "a public bound on the Euclidean norm of each row, chosen without looking at the data",
}


def method_names(task: str) -> Options:
    """The registry's names of ``task`` (``methods(task=...)``) as a table entry."""
    return Options(tuple(m.name for m in methods(task=task)))


def require(values: Mapping[str, Any], names: Iterable[str], owner: str, *,
            method: str | None = None) -> None:
    """Each public parameter of ``names`` is given (the data never supply a privacy parameter).

    Raises ``ValueError("The 'epsilon' parameter of DPPCA is required (...). Got None instead.")``;
    ``method`` names the method that needs it when only some methods do.
    """
    for name in names:
        if values.get(name) is None:
            needed_by = "" if method is None else f" for method={method!r}"
            raise ValueError(f"The '{name}' parameter of {owner} is required{needed_by} "
                             f"({_REQUIRED_WHY[name]}). Got None instead.")


def supported_relation(method: Method, relation: Any, owner: str) -> Relation:
    """``relation`` parsed (None: the method's default, its first listed relation), one ``method`` protects.

    A method's privacy proof holds only for its listed relations: another one is refused, naming them.
    """
    parsed = method.relations[0] if relation is None else as_relation(relation, owner=owner)
    if parsed not in method.relations:
        allowed = ", ".join(repr(r.value) for r in method.relations)
        raise ValueError(
            f"The 'relation' parameter of {owner} must be one of {allowed} for "
            f"method={method.name!r}. Got {relation!r} instead."
        )
    return parsed


def check_task(name: Any, task: str, owner: str) -> None:
    """A registered method of another task is refused with the estimator that runs it.

    (The table's ``Options`` would refuse it too; this message says where the method belongs.)
    """
    if not isinstance(name, str):
        return
    try:
        method = get_method(name, owner=owner)
    except ValueError:
        return  # not registered: the table's message lists the names
    if task not in method.tasks:
        kind = {"pca": "PCA", "lowrank": "low-rank"}.get(task, task)
        raise ValueError(
            f"The 'method' parameter of {owner} must be a {kind} method; {method.name!r} is a "
            f"{method.task} method (use {ESTIMATORS[method.task]}). {kind[0].upper() + kind[1:]} methods: "
            + ", ".join(repr(m.name) for m in methods(task=task)) + "."
        )


class _DPEstimator(BaseEstimator):
    """The parameter table of a dpspectral estimator, checked at the start of ``fit``.

    A subclass sets ``_parameter_constraints`` (``{parameter: constraint or [constraints]}``, only
    ``__init__`` parameters), ``_required_parameters`` (public privacy parameters that every method
    needs: None is refused with "is required"), ``_parameters_checked_elsewhere`` (``{parameter:
    where and why}`` for the ``__init__`` parameters not in the table) and ``_task`` (the registry task
    whose methods it runs). A test holds every estimator to this.
    """

    _parameter_constraints: ClassVar[dict[str, Any]] = {}
    _required_parameters: ClassVar[tuple[str, ...]] = ()
    _parameters_checked_elsewhere: ClassVar[dict[str, str]] = {}
    _task: ClassVar[str] = ""

    def _check_parameter_table(self) -> dict[str, Any]:
        """Check every parameter against the table (before any data is read); the values checked."""
        cls = type(self)
        owner = cls.__name__
        values = self.get_params(deep=False)
        require(values, cls._required_parameters, owner)
        if cls._task in ("pca", "lowrank"):  # estimators with a sibling for the other task
            check_task(values.get("method"), cls._task, owner)
        check_params(cls._parameter_constraints, values, owner)
        return values


def _pure_epsilon_note(method: str, delta: float) -> str:
    """The warning (and report note) for a delta given to a pure epsilon-DP method."""
    return (f"method={method!r} is pure epsilon-DP: it ran at delta = 0 (a stronger guarantee, the one "
            f"its privacy report states); the delta={delta:g} given was not used. Pass delta=0 to say so.")


def _is_array_like_for_sklearn(X: Any) -> bool:
    """In-memory data that sklearn's validation may convert (not a memmap, Dask array or stream)."""
    if isinstance(X, np.memmap) or is_dask_array(X):
        return False
    return hasattr(X, "shape") or hasattr(X, "__array__") or (
        isinstance(X, (list, tuple)) and not (X and hasattr(X[0], "ndim") and X[0].ndim == 2)
    )


class DPPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _DPEstimator):
    """Differentially private principal component analysis.

    A scikit-learn transformer whose ``fit`` runs one registered private algorithm
    (``dpspectral.methods()``) and stores only released quantities.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components k; None keeps all ``n_features``.
    epsilon : float
        Privacy parameter in (0, inf). Required (no default is read from anywhere).
    delta : float
        In [0, 1); must be > 0 for the Gaussian mechanisms. Required. The pure epsilon-DP methods
        (``"ppca"``, ``"exponential"``) have no delta: it is not passed to them, and ``privacy_``
        reports ``delta = 0`` (what they guarantee), never the delta given here; with a positive
        delta, ``fit`` warns (:class:`~dpspectral.PureEpsilonWarning`) and the report notes it.
    row_norm : float
        Public bound on each row's Euclidean norm (after centring). Rows above it are clipped per
        row (``x * min(1, row_norm / ||x||)``), or rejected with ``on_norm_violation="raise"``.
        Required: it must be chosen without looking at the data.
    method : str, default="auto"
        A name from ``dpspectral.methods(task="pca")`` (the registry states each one's model, relations,
        pure or approximate DP, passes, memory and when to choose it), or ``"auto"``: chosen at ``fit``
        from public facts only — the relation, delta = 0 or not, d and whether the data are a stream
        (:func:`dpspectral.registry.choose_method`; ``docs/choosing-a-method.md``). The choice and its
        reason are ``method_`` and ``method_reason_``, and a note of the privacy report.
        ``"oja"`` is the non-private reference (never on private data): it takes no privacy
        parameters (epsilon, delta, relation, calibration and accountant are not used, nothing is
        charged) and ``fit`` warns (:class:`~dpspectral.UncertifiedPrivacyWarning`).
    relation : {"replace_one", "add_remove", "local"} or None, default=None
        The neighbouring relation protected; None takes the method's default (its first listed
        relation: replace-one for the central methods, "local" for the local ones).
    calibration : {"tight", "paper"} or None, default=None
        Sound accountant-calibrated noise, or the paper's own formula (flagged when uncertified).
        None takes the method's default, its first listed calibration: ``"tight"`` for every
        certified method, ``"paper"`` for the non-private Wishart baseline (``method="wishart"``,
        which then warns that it is not certified). The one used is ``calibration_``.
    centering : None, array of shape (n_features,), or "private", default=None
        None: PCA of the second-moment matrix (as the papers do). An array: a public centre.
        ``"private"``: a DP mean, spending ``mean_share`` of the budget.
    mean_share : float, default=0.1
        Share of the Gaussian budget spent on the private mean (``centering="private"``).
    adaptive_clip : bool or None, default=None
        (covariance methods) Clip the rows at a released quantile of their norms instead of at
        ``row_norm``: a staged release (noisy norm histogram, then the scatter at the released clip;
        ``docs/algorithms/covariance.md``). None takes the method's default (on for ``analyze_gauss``
        and ``mod_sulq`` with ``calibration="tight"``); False keeps the one-release mechanism.
    clip_quantile : float in (0, 1) or None, default=None
        The quantile of the norms the adaptive clip estimates; None: the method's default (for
        uncentred rows, or rows centred at a public centre, the balance rule, which picks the clip from
        the released histogram and the noise instead of a fixed quantile; 0.1 for privately centred
        rows).
    clip_share : float in (0, 1) or None, default=None
        Share of the Gaussian budget spent on the norm histogram; None: the method's default (0.02
        uncentred, 0.05 centred).
    noise_shape : {"goe", "iid"} or None, default=None
        (covariance and local Gaussian methods) The symmetric noise's shape; None: the method's default.
    accountant : Accountant or None, default=None
        A shared ledger with a ceiling; fits are refused before any noise is drawn when it would be
        exceeded. Shared by reference across ``clone``, so every fit ``GridSearchCV`` makes is
        charged to it; the cross-validation scores and the choice of the best model are computed
        from the private data outside the ledger and are not private. For an accounted choice use
        :func:`dpspectral.model_selection.select_subspace` (or ``private_select``).
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Seeds the noise (keep a seed secret: it determines the noise). ``"secure"`` draws the noise from
        OS entropy with exact discrete samplers (:mod:`dpspectral.privacy.noise`; not reproducible);
        ``privacy_.noise_source`` says which source was used.
    copy : bool, default=True
        The caller's array is never modified; with ``copy=False`` only row blocks are copied.
    on_norm_violation : {"clip", "raise"}, default="clip"
    method_params : dict or None, default=None
        Extra keyword arguments of the chosen method (see its docstring).
    device : None, str, torch.device or an array, default=None
        Out-of-core on a device (``analyze_gauss``, ``mod_sulq``, ``noisy_power``): host rows (an array,
        a memmap, an iterable of row blocks) are copied to ``device`` one block at a time, clipped and
        summed there; the noise is drawn there and the fitted arrays live there (``dpspectral.to_numpy``
        gives NumPy; ``transform`` also takes host data, moved to the device). A string or
        ``torch.device`` means PyTorch ("cuda", "cuda:1", "cpu"); an array means its namespace and
        device. None: compute where the data live. ``docs/array-api.md``, "Out-of-core on a device".

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Released principal axes, by decreasing released eigenvalue.
    explained_variance_ : ndarray of shape (n_components,)
        Released eigenvalues divided by n (public under replace-one) or by a released noisy count
        (add/remove); ``n - 1`` when centred. Where the method reports its noise's spectral norm (the
        covariance methods), each eigenvalue is debiased at that edge, and one at or below it is not
        resolved by the release: 0, with an :class:`~dpspectral.UnresolvedVarianceWarning`. Only for
        methods that release eigenvalues (reading it otherwise raises an AttributeError that says so).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Those eigenvalues over the larger of the released trace and their sum: in [0, 1], summing to
        at most 1, never NaN. Post-processing of released quantities: it costs nothing.
    mean_ : ndarray of shape (n_features,)
        The centre subtracted (zeros when uncentred; public or released otherwise).
    n_samples_ : float
        n when public (replace-one), else the released noisy count.
    n_components_ : int
    n_features_in_ : int
    privacy_ : PrivacyReport
        ``epsilon``, ``delta``, ``relation``, ``certified``, ``events`` of this fit.
    result_ : SubspaceResult
        The full result of the algorithm.

    Notes
    -----
    How many rows were clipped is data-dependent and is not exposed. ``transform`` applies the
    released projection to any data; it does not clip.

    Array API: with ``dpspectral.config_context(array_api_dispatch=True)`` (or scikit-learn's switch),
    a PyTorch or CuPy array is fitted where it lives by ``analyze_gauss``, ``mod_sulq`` or
    ``noisy_power`` (others are refused), the fitted arrays are of its namespace and device, and
    ``transform`` takes data of the same namespace and device only; ``dpspectral.to_numpy`` gives NumPy
    back (``docs/array-api.md``). The noise is then drawn on the device (same law, another stream).

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral import DPPCA
    >>> X = np.random.default_rng(0).normal(size=(1000, 5)) / 3
    >>> pca = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    >>> pca.components_.shape
    (2, 5)
    >>> pca.privacy_.certified
    True
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        row_norm: float | None = None,
        method: str = "auto",
        relation: str | None = None,
        calibration: str | None = None,
        centering: Any = None,
        mean_share: float = 0.1,
        adaptive_clip: bool | None = None,
        clip_quantile: float | None = None,
        clip_share: float | None = None,
        noise_shape: str | None = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        copy: bool = True,
        on_norm_violation: str = "clip",
        method_params: dict[str, Any] | None = None,
        device: Any = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.method = method
        self.relation = relation
        self.calibration = calibration
        self.centering = centering
        self.mean_share = mean_share
        self.adaptive_clip = adaptive_clip
        self.clip_quantile = clip_quantile
        self.clip_share = clip_share
        self.noise_shape = noise_shape
        self.accountant = accountant
        self.random_state = random_state
        self.copy = copy
        self.on_norm_violation = on_norm_violation
        self.method_params = method_params
        self.device = device

    _task = "pca"
    _required_parameters = ("epsilon", "delta", "row_norm")
    _parameter_constraints = {
        "n_components": N_COMPONENTS,
        "epsilon": EPSILON,
        "delta": DELTA,
        "row_norm": ROW_NORM,
        "method": Options(("auto", *method_names("pca").values)),
        "relation": RELATION,
        "calibration": [NONE, CALIBRATION],
        "mean_share": SHARE,
        "adaptive_clip": [NONE, BOOL],
        "clip_quantile": [NONE, SHARE],
        "clip_share": [NONE, SHARE],
        "noise_shape": [NONE, Options(("goe", "iid"))],
        "accountant": ACCOUNTANT,
        "random_state": RANDOM_STATE,
        "copy": BOOL,
        "on_norm_violation": ON_NORM_VIOLATION,
        "method_params": METHOD_PARAMS,
        "device": [NONE, DEVICE],
    }
    #: Method options that are also estimator parameters: passed on when not None, and refused (named)
    #: for a method that does not take them.
    _method_options = ("adaptive_clip", "clip_quantile", "clip_share", "noise_shape")
    _parameters_checked_elsewhere = {
        "centering": "None, 'private' or a public centre of length n_features: checked by the method, "
                     "once n_features is known (and refused here for a method that does not centre)",
    }

    def _choose_method(self, X: Any) -> None:
        """``method_`` and ``method_reason_``: the named method, or auto's choice from public facts."""
        if self.method != "auto":
            self.method_, self.method_reason_ = self.method, "named by the caller"
            return
        in_memory = hasattr(X, "shape") or isinstance(X, (list, tuple))
        relation = None if self.relation is None else as_relation(self.relation,
                                                                  owner=type(self).__name__)
        choice = choose_method(relation=relation, delta=self.delta, n_features=n_features_of(X),
                               stream=not in_memory)
        self.method_, self.method_reason_ = choice.method, choice.reason
        entry = get_method(choice.method)
        unknown = sorted(set(self.method_params or {}) - set(entry.options))
        if unknown:
            raise ValueError(
                f"method='auto' chose {choice.method!r} ({choice.reason}), which does not take the "
                f"method_params {unknown}. Name the method these parameters belong to (method=...)."
            )
        if self.centering is not None and "centering" not in entry.options:
            raise ValueError(
                f"method='auto' chose {choice.method!r} ({choice.reason}), which does not centre the "
                f"data; centering={self.centering!r} needs a covariance method (method='analyze_gauss')."
            )
        for name in self._method_options:
            if getattr(self, name) is not None and name not in entry.options:
                raise ValueError(
                    f"method='auto' chose {choice.method!r} ({choice.reason}), which does not take "
                    f"{name}={getattr(self, name)!r}; name a method that does (method='analyze_gauss')."
                )

    def _validate_params_dp(self) -> tuple[PrivacyBudget, float, Method, Relation]:
        """The checks that relate parameters (after the table): (budget, row_norm, entry, relation)."""
        owner = type(self).__name__
        method = get_method(self.method_, owner=owner)
        if not method.private:  # a non-private reference (oja): no relation, calibration or budget
            if self.on_norm_violation != "clip":
                raise ValueError(f"The 'on_norm_violation' parameter of {owner} must be 'clip' for "
                                 f"method={method.name!r}, which clips rows at row_norm. Got "
                                 f"{self.on_norm_violation!r} instead.")
            self._check_method_options(method, owner)
            self.calibration_ = method.default_calibration
            budget = PrivacyBudget(float(self.epsilon), 0.0)  # type: ignore[arg-type]
            return budget, float(self.row_norm), method, Relation.REPLACE_ONE  # type: ignore[arg-type]
        relation = supported_relation(method, self.relation, owner)
        calibration = method.default_calibration if self.calibration is None else self.calibration
        self.calibration_ = calibration
        if (not method.certified and calibration == "tight"
                and "tight" not in method.calibrations):
            raise ValueError(
                f"The 'calibration' parameter of {owner} must be 'paper' for method={method.name!r}: "
                "that method is known not to be differentially private and has no sound ('tight') "
                "calibration; it exists only as a labelled, uncertified baseline. Pass "
                "calibration='paper' to run it as such (the result says certified=False, epsilon=inf)."
            )
        check_choice(calibration, "calibration", method.calibrations, owner)
        budget = PrivacyBudget(float(self.epsilon), float(self.delta))  # type: ignore[arg-type]
        if method.needs_delta:
            budget.require_delta(owner)
        else:
            # Pure epsilon-DP methods (and the non-private baseline) have no delta: it is not
            # passed on, and the privacy report says delta = 0 (what the method guarantees).
            if budget.delta > 0 and method.private and method.certified:
                warnings.warn(_pure_epsilon_note(method.name, budget.delta), PureEpsilonWarning,
                              stacklevel=3)
            budget = PrivacyBudget(budget.epsilon, 0.0)
        self._check_method_options(method, owner)
        return budget, float(self.row_norm), method, relation  # type: ignore[arg-type]

    def _check_method_options(self, method: Method, owner: str) -> None:
        """Refuse an estimator parameter the method does not take (centering, adaptive clipping...)."""
        if "centering" not in method.options and self.centering is not None:
            raise ValueError(
                f"The 'centering' parameter of {owner} must be None for method={method.name!r}, "
                f"which does not centre the data. Got {self.centering!r} instead."
            )
        for name in self._method_options:
            if getattr(self, name) is not None and name not in method.options:
                raise ValueError(
                    f"The '{name}' parameter of {owner} must be None for method={method.name!r}, "
                    f"which does not take it. Got {getattr(self, name)!r} instead."
                )

    def fit(self, X: Any, y: Any = None) -> DPPCA:
        """Fit the private principal subspace.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), np.memmap, Dask array,
            an iterable of row blocks, or (array API dispatch on) a PyTorch or CuPy array
            Private data; never modified.
        y : ignored

        Returns
        -------
        self
        """
        owner = type(self).__name__
        self._check_parameter_table()
        self._choose_method(X)
        budget, row_norm, method, relation = self._validate_params_dp()
        if self.device is not None:
            X = self._stream_to_device(X)  # out-of-core on the named device (docs/array-api.md)
        elif self._fit_on_device(X):
            pass  # array API dispatch: X stays in its namespace, on its device (docs/array-api.md)
        elif _is_array_like_for_sklearn(X):
            X = validated_data(
                self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                # finiteness is checked block by block (with the row index) in dpspectral.moments
                ensure_all_finite=False, copy=False, reset=True,
            )
        d = n_features_of(X)
        k = self.n_components
        if k is not None and d is not None:
            check_n_components(k, d, owner)
        if k is None:
            if d is None:
                raise ValueError(
                    f"The 'n_components' parameter of {owner} must be given when the data are a "
                    "stream of blocks (n_features is not known in advance)."
                )
            k = d
        options: dict[str, Any] = {}
        if "centering" in method.options:
            options.update(centering=self.centering, mean_share=self.mean_share)
        if "release_count" in method.options:
            options["release_count"] = True
        options.update({name: getattr(self, name) for name in self._method_options
                        if getattr(self, name) is not None})
        twice = sorted(set(options) & set(self.method_params or {}))
        if twice:
            raise ValueError(f"{owner}: {twice} given both as parameters and in method_params; give "
                             "each once (as a parameter).")
        privacy: dict[str, Any] = dict(
            epsilon=budget.epsilon, delta=budget.delta, relation=relation, calibration=self.calibration_,
            accountant=self.accountant, on_norm_violation=self.on_norm_violation,
        ) if method.private else {}
        if not method.private:  # epsilon, delta, relation, calibration and accountant are not used
            warnings.warn(f"{owner}(method={method.name!r}) is a NON-PRIVATE reference: nothing is "
                          "differentially private and nothing is charged.", UncertifiedPrivacyWarning,
                          stacklevel=2)
        result = method.function(X, k, row_norm=row_norm, random_state=self.random_state, **privacy,
                                 **options, **(self.method_params or {}))
        self._store(result)
        return self

    def _fit_on_device(self, X: Any) -> bool:
        """Whether ``X`` is fitted in its own array namespace (array API dispatch; refusals first)."""
        owner = type(self).__name__
        xp, _ = get_namespace_and_device(X, owner)
        if xp is None:
            return False
        if self.method_ not in COVERED_METHODS:
            raise ValueError(
                f"{owner}: method={self.method_!r} does not run on device arrays; array API dispatch "
                f"covers {', '.join(COVERED_METHODS)} (docs/array-api.md says why the row-by-row streaming "
                "methods are not covered). Name one of them, or convert the data with "
                "dpspectral.to_numpy(X). Nothing was charged."
            )
        self.n_features_in_ = int(X.shape[1])
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return True

    #: The methods ``device=`` streams host rows through (out-of-core on a device).
    _DEVICE_METHODS = ("analyze_gauss", "mod_sulq", "noisy_power")

    def _stream_to_device(self, X: Any) -> Any:
        """``device=``: ``X`` (host rows, or an array on that device) as a stream of blocks onto it."""
        owner = type(self).__name__
        if self.method_ not in self._DEVICE_METHODS:
            raise ValueError(
                f"{owner}: method={self.method_!r} does not stream data to a device; device= covers "
                f"{', '.join(self._DEVICE_METHODS)} (docs/array-api.md). Name one of them, or leave "
                "device=None. Nothing was charged.")
        if not isinstance(X, np.ndarray) and not is_device_array(X) and not sp.issparse(X) \
                and _is_array_like_for_sklearn(X):  # a DataFrame or nested lists: sklearn's conversion
            X = validated_data(self, X, dtype=(np.float64, np.float32), ensure_all_finite=False,
                              copy=False, reset=True)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        X = stream_to_device(X, self.device, owner)
        if X.shape is not None:
            self.n_features_in_ = int(X.shape[1])
        return X

    def _store_on_device(self, result: Any) -> None:
        """The fitted attributes in the components' namespace and device (array API dispatch)."""
        import array_api_compat

        V = result.components
        xp, device = array_api_compat.array_namespace(V), array_api_compat.device(V)
        d, k = (int(s) for s in V.shape)
        self.n_features_in_ = d
        self.components_ = xp.asarray(V.T, copy=True)
        mean = xp.zeros((d,), dtype=V.dtype, device=device) if result.mean is None else result.mean
        self.mean_ = xp.asarray(mean, dtype=V.dtype, device=device)
        if result.n_samples is not None:
            self.n_samples_ = float(result.n_samples)
        self._store_variances(result, lambda a: xp.asarray(a, dtype=V.dtype, device=device))

    def _store(self, result: Any) -> None:
        V = result.components
        d, k = V.shape
        self.result_ = result
        if is_device_array(V):
            self.n_components_ = int(k)
            self._store_on_device(result)
            self.privacy_ = self._report(result.privacy)
            return
        self.components_ = np.ascontiguousarray(V.T)
        self.n_components_ = k
        if not hasattr(self, "n_features_in_"):
            self.n_features_in_ = d
        self.mean_ = np.zeros(d) if result.mean is None else np.asarray(result.mean, dtype=float)
        if result.n_samples is not None:
            self.n_samples_ = float(result.n_samples)
        self._store_variances(result, np.asarray)
        self.privacy_ = self._report(result.privacy)

    def _store_variances(self, result: Any, convert: Any) -> None:
        """``explained_variance_`` and ``explained_variance_ratio_`` from released quantities only.

        The released eigenvalues are debiased at the noise's public spectral norm where the method
        reports it (an eigenvalue at or below it is not resolved: 0, with a warning), and the ratios
        divide by the larger of the released trace and their sum (:func:`released_variances`): in
        [0, 1], summing to at most 1, never NaN. A method that releases no eigenvalues leaves both
        unset (reading them raises an AttributeError that says so).
        """
        self._variances = None
        if result.values is None or result.total is None and result.n_samples is None:
            return
        variances = released_variances(to_numpy(result.values), None if result.total is None
                                       else float(result.total), result.diagnostics.get("noise_edge"))
        if not variances.resolved.all():
            warnings.warn(
                f"{type(self).__name__}: the release does not resolve the variance of "
                f"{int((~variances.resolved).sum())} of the {variances.resolved.size} components at "
                "this epsilon (their released eigenvalues lie within the noise): their "
                "explained_variance_ and explained_variance_ratio_ are 0.",
                UnresolvedVarianceWarning, stacklevel=3)
        n = result.n_samples
        denom = max(float(n) - (1.0 if result.mean is not None else 0.0), 1.0) if n is not None else None
        ratio = convert(variances.ratios) if result.total is not None else None
        self._variances = (None if denom is None else convert(variances.values / denom), ratio)

    def _released_variance(self, which: int, name: str) -> Any:
        stored = self.__dict__.get("_variances")
        if stored is None or stored[which] is None:
            method = self.__dict__.get("method_", self.method)
            raise AttributeError(
                f"{type(self).__name__}(method={method!r}) has no {name}: the method releases "
                + ("no eigenvalues" if stored is None else "no total variance or row count")
                + "; a covariance method (method='analyze_gauss') releases them."
            )
        return stored[which]

    @property
    def explained_variance_(self) -> Any:
        """Released variance along each component (eigenvalue over n, or n - 1 when centred)."""
        return self._released_variance(0, "explained_variance_")

    @property
    def explained_variance_ratio_(self) -> Any:
        """Share of the released total variance along each component: in [0, 1], sum <= 1."""
        return self._released_variance(1, "explained_variance_ratio_")

    def _report(self, report: PrivacyReport) -> PrivacyReport:
        """The privacy report, with auto's choice as a note (and a delta given but not used)."""
        if self.method == "auto" and report is not None:
            note = f"method='auto' chose {self.method_!r}: {self.method_reason_}."
            report = dataclasses.replace(report, notes=(*report.notes, note))
        method = get_method(self.method_)
        if report is not None and not method.needs_delta and method.private and method.certified \
                and self.delta:
            note = _pure_epsilon_note(method.name, float(self.delta))  # type: ignore[arg-type]
            report = dataclasses.replace(report, notes=(*report.notes, note))
        return report

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def transform(self, X: Any) -> np.ndarray:
        """Project ``X`` on the released components: ``(X - mean_) @ components_.T``."""
        check_is_fitted(self, "components_")
        if is_device_array(self.components_) or is_device_array(X):
            return self._device_product(X, "transform") @ self.components_.T
        X = validated_data(self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                          reset=False)
        if sp.issparse(X):
            return np.asarray(X @ self.components_.T) - self.mean_ @ self.components_.T
        return (X - self.mean_) @ self.components_.T

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Map projected data back: ``X @ components_ + mean_``."""
        check_is_fitted(self, "components_")
        if is_device_array(self.components_) or is_device_array(X):
            return self._device_product(X, "inverse_transform") @ self.components_ + self.mean_
        owner = f"{type(self).__name__}.inverse_transform"
        Z = np.asarray(as_numeric_array(X, owner, name="X"), dtype=float)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"{owner} expects shape (n_samples, {self.n_components_}); got {Z.shape[1]} columns."
            )
        return Z @ self.components_ + self.mean_

    def _device_product(self, X: Any, method: str) -> Any:
        """``X - mean_`` (transform) or ``X`` (inverse_transform) in the fitted namespace and dtype."""
        owner = type(self).__name__
        if self.device is not None and is_device_array(self.components_) and not is_device_array(X):
            X = like(np.asarray(X), self.components_)  # device=: host data moved to the fitted device
        with config_context(array_api_dispatch=True if self.device is not None else None):
            same_space(self.components_, X, owner, method)  # device= needs no dispatch switch
        import array_api_compat

        xp = array_api_compat.array_namespace(X)
        width = self.n_features_in_ if method == "transform" else self.n_components_
        if X.ndim != 2 or int(X.shape[1]) != width:
            raise ValueError(f"{owner}.{method} expects shape (n_samples, {width}); got {tuple(X.shape)}.")
        Z = xp.astype(X, self.components_.dtype)
        return Z - self.mean_ if method == "transform" else Z

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class DPLowRank(_DPEstimator):
    """Differentially private rank-k factorization ``A ~ U diag(S) V^T`` of one private matrix.

    The whole matrix A (m x n) is the data set; the neighbouring relation is Upadhyay's Priv1
    (``A - A' = b u v^T``, unit u, v) or Priv2 (``||A - A'||_F <= b``), with the public scale
    ``b = bound`` (``method_params={"bound": ...}``, default 1), or row-level / local for the methods
    that protect those. ``fit`` runs one registered low-rank method
    (``dpspectral.methods(task="lowrank")``) and stores only released quantities.

    Parameters
    ----------
    rank : int
        k, in [1, min(m, n)].
    epsilon, delta : float
        Required privacy parameters (delta in (0, 1)); ignored by the non-private reference.
    relation : str or None, default=None
        None takes the method's default (its first listed relation; with ``method="auto"``: Priv2).
        The relation also picks auto's method (below).
    method : str, default="auto"
        A name from ``dpspectral.methods(task="lowrank")``, or ``"auto"``: chosen at ``fit`` from the
        relation asked for, which it never changes (:func:`dpspectral.registry.choose_lowrank_method`):
        None or Priv1/Priv2 -> ``private_frobenius_lrf`` (relation None keeps Priv2, the default before
        "auto": same release), ``"replace_one"`` -> ``hardt_roth``, ``"add_remove"`` -> ``covariance_lrf``,
        ``"local"`` -> ``private_local_lrf``. The choice and its reason are ``method_`` and
        ``method_reason_``, and a note of the privacy report.
    calibration : {"tight", "paper"}, default="tight"
    alpha : float, default=0.25
        Multiplicative-error target in (0, 1); sets the sketch sizes (methods that sketch).
    row_norm : float or None, default=None
        Public bound on each row's norm, required by the row-level and local methods
        (``hardt_roth``, ``private_local_lrf``), whose neighbours differ in one row; ignored otherwise.
    accountant : Accountant or None
        Shared ledger (by reference across ``clone``); a fit is refused before any noise is drawn
        when it would exceed its ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Seeds the secret noise only: keep it secret. ``"secure"`` draws the noise from OS entropy with
        exact discrete samplers (not reproducible; ``privacy_.noise_source == "secure"``). The public
        sketches come from OS entropy unless a public ``sketch_seed`` is declared in ``method_params``
        (a fit is reproducible only then, and never with ``"secure"``).
    method_params : dict or None
        Extra keyword arguments of the method (``t``, ``v``, ``bound``, ``sketch_seed``, ...).

    Attributes
    ----------
    U_ : ndarray of shape (m, k) or None
        None for a subspace-only release (``hardt_roth``'s default power iteration: V_ and S_ only).
    S_ : ndarray of shape (k,)
    V_ : ndarray of shape (n, k) or None
        None for methods that release only the left subspace (Private-Local-LRF's sketch protocol).
    method_, method_reason_ : str
        The method run and why (``"named by the caller"``, or auto's reason).
    privacy_ : PrivacyReport or None
        None only for the non-private reference.
    result_ : LowRankResult
        The method's result; its diagnostics hold public settings and released quantities only
        (no data-derived count such as the number of non-zero entries).

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral import DPLowRank
    >>> A = np.random.default_rng(0).uniform(size=(200, 40))
    >>> lr = DPLowRank(5, epsilon=1.0, delta=1e-6, random_state=0).fit(A)
    >>> lr.U_.shape, lr.V_.shape, lr.reconstruct().shape
    ((200, 5), (40, 5), (200, 40))
    """

    def __init__(
        self,
        rank: int = 1,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        relation: str | None = None,
        method: str = "auto",
        calibration: str = "tight",
        alpha: float = 0.25,
        row_norm: float | None = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        method_params: dict[str, Any] | None = None,
    ) -> None:
        self.rank = rank
        self.row_norm = row_norm
        self.epsilon = epsilon
        self.delta = delta
        self.relation = relation
        self.method = method
        self.calibration = calibration
        self.alpha = alpha
        self.accountant = accountant
        self.random_state = random_state
        self.method_params = method_params

    _task = "lowrank"
    _parameter_constraints = {
        "rank": Interval(1, None, "left", integer=True),  # k <= min(m, n): the method's, once A is read
        "epsilon": [EPSILON, NONE],  # required by the private methods only (see _privacy_kwargs)
        "delta": [DELTA, NONE],
        "relation": RELATION,
        "method": Options(("auto", *method_names("lowrank").values)),
        "calibration": CALIBRATION,
        "alpha": Interval(0, 1, "neither"),
        "row_norm": [ROW_NORM, NONE],  # required by the row-level and local methods only
        "accountant": ACCOUNTANT,
        "random_state": RANDOM_STATE,
        "method_params": METHOD_PARAMS,
    }

    def _validate_params_dp(self) -> tuple[Method, dict[str, Any]]:
        """The checks that relate parameters (after the table): the entry and its keyword arguments."""
        owner = type(self).__name__
        if self.method == "auto":
            choice = choose_lowrank_method(relation=self.relation)
            self.method_, self.method_reason_ = choice.method, choice.reason
        else:
            self.method_, self.method_reason_ = self.method, "named by the caller"
        method = get_method(self.method_, owner=owner)
        kwargs: dict[str, Any] = {"random_state": self.random_state}
        if "alpha" in method.options:
            kwargs["alpha"] = self.alpha
        if "row_norm" in method.options:  # neighbours differ in one row: a public bound on its norm
            require({"row_norm": self.row_norm}, ("row_norm",), owner, method=method.name)
            kwargs["row_norm"] = float(self.row_norm)  # type: ignore[arg-type]
        if method.private:
            kwargs.update(self._privacy_kwargs(method, owner))
        return method, kwargs

    def _privacy_kwargs(self, method: Method, owner: str) -> dict[str, Any]:
        """epsilon, delta, relation, calibration, accountant of a private method, checked."""
        require({"epsilon": self.epsilon, "delta": self.delta}, ("epsilon", "delta"), owner)
        relation = supported_relation(method, self.relation, owner)
        check_choice(self.calibration, "calibration", method.calibrations, owner)
        return dict(epsilon=self.epsilon, delta=self.delta, relation=relation,
                    calibration=self.calibration, accountant=self.accountant)

    def fit(self, A: Any, y: Any = None) -> DPLowRank:
        """Factorize the private matrix A (array-like or sparse, m x n; never modified).

        Validate the public parameters -> the input's structure (scikit-learn's checks for in-memory
        arrays; finiteness and norms are the method's, before its charge) -> release with the registry
        entry's function -> store the released factors.

        Parameters
        ----------
        A : array-like or sparse matrix of shape (m, n)
            The private matrix (the whole data set).
        y : ignored

        Returns
        -------
        self

        Privacy
        -------
        That of the chosen method, for its relation (Priv1, Priv2, row-level or local); nothing is
        read from ``A`` before the method has validated it and charged the ledger.
        """
        self._check_parameter_table()
        method, kwargs = self._validate_params_dp()
        if _is_array_like_for_sklearn(A):
            A = validated_data(
                self, A, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                # finiteness (and row norms) are checked by the method itself, before its charge
                ensure_all_finite=False, copy=False, reset=True,
            )
        result = method.function(A, self.rank, **kwargs, **(self.method_params or {}))
        self.result_ = result
        self.U_, self.S_, self.V_ = result.U, result.S, result.V
        self.privacy_ = result.privacy
        if self.method == "auto" and result.privacy is not None:
            note = f"method='auto' chose {self.method_!r}: {self.method_reason_}."
            self.privacy_ = dataclasses.replace(result.privacy, notes=(*result.privacy.notes, note))
        self.n_components_ = result.rank
        if len(getattr(A, "shape", ())) == 2:  # also for memmaps and Dask arrays (not validated above)
            self.n_features_in_ = int(A.shape[1])
        return self

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def reconstruct(self, A: Any = None) -> np.ndarray:
        """The released rank-k matrix ``U_ diag(S_) V_^T`` (m x n).

        A subspace-only release (``hardt_roth``'s default, no ``U_``) and a factorization of ``A^T A``
        (``covariance_lrf``) need the data owner's matrix: ``reconstruct(A)`` is ``A V_ V_^T``, computed
        locally; without A they raise, naming what is missing. A is ignored by the other methods.
        """
        check_is_fitted(self, "S_")
        if A is not None and getattr(self.result_, "needs_data", False):
            return self.result_.reconstruct(A)  # type: ignore[call-arg]
        return self.result_.reconstruct()
