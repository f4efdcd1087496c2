"""scikit-learn estimators over the registry.

Every estimator states its parameters once, in a class attribute ``_parameter_constraints`` (a table of
:mod:`dpspectral._constraints` entries), checked by :meth:`_DPEstimator._check_parameter_table` at the
start of ``fit`` (scikit-learn checks parameters at fit time, never in ``__init__``). The checks that
relate several parameters (a relation the chosen method supports, ``n_components <= n_features``, an
option only some methods take) stay in each estimator's ``_validate_params_dp``, next to their reason.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if
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
from ._constraints import (
    CALIBRATION,
    NOISE_SHAPE,
    NONE,
    OPTIONAL_BUDGET_PARAMETERS,
    PRIVACY_PARAMETERS,
    RANDOM_STATE,
    ROW_NORM,
    SHARE,
    Interval,
    Options,
    Types,
    check_params,
)
from ._device_stream import DEVICE, stream_to_device
from ._linalg import UnresolvedVarianceWarning, released_variances
from ._options import ADAPTIVE_CLIP, AdaptiveClip, folded
from ._projection import Projection, _ReleasedSubspace
from ._public_basis import PublicBasis, as_public_basis, counts_rows, resolve_for, with_public_basis
from ._registry import ESTIMATORS, Method, choose_lowrank_method, choose_method, get_method, methods
from ._rows import is_dask_array, is_one_shot, n_features_of
from ._validation import check_choice, check_n_components, validated_data
from .privacy._accounting import Accountant, PrivacyReport
from .privacy._budget import (
    PrivacyBudget,
    PureEpsilonWarning,
    Relation,
    UncertifiedPrivacyWarning,
    as_relation,
)

__all__ = ["DPLowRank", "DPPCA", "UncentredWarning"]

#: Shared table entries of the estimators (the privacy entries come from :mod:`dpspectral._constraints`).
ACCOUNTANT = [Types((Accountant,), "a dpspectral.Accountant"), NONE]
METHOD_PARAMS = [Types((dict,), "a dict"), NONE]
#: A relation's name (aliases such as ``"add-remove"`` admitted) or a Relation; its value is parsed, and
#: checked against the chosen method's relations, by :func:`supported_relation`.
RELATION = [Types((str, Relation), "a str or Relation"), NONE]
N_COMPONENTS = [Interval(1, None, "left", integer=True), NONE]
#: DPPCA's n_components: k, a fraction of the released variance in (0, 1), or None (all the features).
PCA_N_COMPONENTS = [Interval(1, None, "left", integer=True), Interval(0, 1, "neither"), NONE]
BOOL = Types((bool, np.bool_), "a bool")
#: A public basis (:mod:`dpspectral._public_basis`): its orthonormality and dimension are checked at fit.
PUBLIC_BASIS = [NONE, Types((PublicBasis, np.ndarray, tuple, list),
                            "a PublicBasis, an orthonormal matrix or ('dct2', shape[, n_atoms])")]

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

    def _with_auto_note(self, report: Any) -> Any:
        """The privacy report, with what ``method="auto"`` chose, and why, as a note."""
        if getattr(self, "method", None) != "auto" or report is None:
            return report
        note = f"method='auto' chose {self.method_!r}: {self.method_reason_}."
        return dataclasses.replace(report, notes=(*report.notes, note))


class UncentredWarning(UserWarning):
    """The fit ran uncentred because no private mean could be released.

    ``centering="private"`` is DPPCA's default; where no private mean can be released (a method that
    cannot centre, the paper's calibration, a one-shot stream) the fit runs on the second-moment matrix.
    ``centering=None`` asks for that release and silences the warning.
    """


def _asks_private_centre(centering: Any) -> bool:
    """Whether ``centering`` is the string ``"private"`` (not an array, which is never compared)."""
    return isinstance(centering, str) and centering == "private"


def _uncentred_note(why: str) -> str:
    """The warning (and report note) for ``centering="private"`` where no private mean is released."""
    return (f"centering='private' but {why}: the fit ran uncentred and computed the principal axes of "
            "the second-moment matrix (X^T X / n), not of the covariance (a private mean needs "
            "method='analyze_gauss' or 'mod_sulq' with calibration='tight' on data that can be read "
            "twice). Pass centering=None to run uncentred without this warning.")


def _why_uncentred(method: Method, calibration: str | None, X: Any) -> str | None:
    """Why ``centering="private"`` cannot release a private mean here (None: it can)."""
    if "centering" not in method.options:
        return f"method={method.name!r} cannot centre the data"
    if calibration != "tight":
        return f"calibration={calibration!r} (the paper's mechanism) has no private mean"
    if is_one_shot(X):
        return "a one-shot stream is read once, and a private mean needs a pass of its own"
    return None


def _pure_epsilon_note(method: str, delta: float) -> str:
    """The warning (and report note) for a delta given to a pure epsilon-DP method."""
    return (f"method={method!r} is pure epsilon-DP: it ran at delta = 0 (a stronger guarantee, the one "
            f"its privacy report states); the delta={delta:g} given was not used. Pass delta=0 to say so.")


def _is_fraction(n_components: Any) -> bool:
    """``n_components`` given as a fraction of the variance (a float in (0, 1); the table checked it)."""
    return (isinstance(n_components, numbers.Real) and not isinstance(n_components, numbers.Integral)
            and 0 < float(n_components) < 1)


def _has_generative_model(est: Any) -> bool:
    """Whether a fitted DPPCA has ``noise_variance_`` (else the AttributeError says why); True unfitted.

    Gates ``get_covariance``, ``get_precision``, ``score_samples`` and ``score``: a release without
    eigenvalues and a total has none of them (``hasattr`` is False), as scikit-learn's ``available_if``.
    """
    if "components_" in vars(est):
        est.noise_variance_  # noqa: B018 - raises the AttributeError that names what is missing
    return True


def _is_array_like_for_sklearn(X: Any) -> bool:
    """In-memory data that sklearn's validation may convert (not a memmap, Dask array or stream)."""
    if isinstance(X, np.memmap) or is_dask_array(X):
        return False
    return hasattr(X, "shape") or hasattr(X, "__array__") or (
        isinstance(X, (list, tuple)) and not (X and hasattr(X[0], "ndim") and X[0].ndim == 2)
    )


class DPPCA(_ReleasedSubspace, _DPEstimator):
    """Differentially private principal component analysis.

    A scikit-learn transformer whose ``fit`` runs one registered private algorithm
    (``dpspectral.methods()``) and stores only released quantities.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        Number of components k; None keeps all ``n_features``. A float in (0, 1) is a fraction of
        the variance, as in scikit-learn: the method releases all ``n_features`` eigenvalues and the
        total variance, and k is the smallest number of components whose cumulative released
        ``explained_variance_ratio_`` exceeds the fraction (all of them when none does). The choice is
        post-processing of that one release (it costs nothing more than fitting k = ``n_features``)
        and is ``n_components_``. Only for the methods whose single release of a noisy
        ``n_features x n_features`` matrix gives every eigenvalue and its trace at the same cost for
        any k (``"analyze_gauss"``, ``"mod_sulq"``, ``"wishart"``, ``"local_gaussian"``), and only when
        ``n_features`` is known before reading the data (not for a stream of blocks); refused before
        anything is charged otherwise.
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
        (:func:`dpspectral._registry.choose_method`; ``docs/choosing-a-method.md``). The choice and its
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
    centering : "private", None or array of shape (n_features,), default="private"
        ``"private"``: centred PCA (of the covariance, as scikit-learn's ``PCA``) wherever a private
        mean can be released: around a DP mean released in the same privacy report, spending
        ``mean_share`` of the budget; the rows are clipped to ``row_norm`` after centring. That needs
        ``"analyze_gauss"`` or ``"mod_sulq"`` with ``calibration="tight"`` on data that can be read
        twice (``method="auto"`` chooses ``"analyze_gauss"`` unless delta = 0, the relation is
        "local" or a d x d matrix does not fit in memory). Elsewhere (any other method, the paper's
        calibration, a one-shot stream) the fit runs uncentred, on the second-moment matrix, with an
        :class:`~dpspectral.UncentredWarning` and a note in the privacy report. None: PCA of the
        second-moment matrix ``X^T X`` (as the papers do, and as the function API computes by
        default). An array: a public centre (refused, before anything is charged, for a method that
        cannot centre).
    mean_share : float, default=0.1
        Share of the Gaussian budget spent on the private mean (``centering="private"``).
    adaptive_clip : bool, AdaptiveClip or None, default=None
        Clip the rows at a clip released from a noisy histogram of their norms instead of at
        ``row_norm``: a staged release (noisy norm histogram, then the release at the released clip;
        ``docs/algorithms/covariance.md``). None takes the method's default (on for ``analyze_gauss``
        and ``mod_sulq`` with ``calibration="tight"``); False keeps the one-release mechanism. An
        :class:`~dpspectral.AdaptiveClip` sets the histogram's ``share`` of the budget (None: 0.02
        uncentred, 0.05 centred) and the ``quantile`` of the norms to clip at (None: the balance rule
        for uncentred rows, or rows centred at a public centre, which picks the clip from the released
        histogram and the noise instead of a fixed quantile; 0.1 for privately centred rows).
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
        OS entropy with exact discrete samplers (:mod:`dpspectral.privacy._noise`; not reproducible);
        ``privacy_.noise_source`` says which source was used.
    copy : bool, default=True
        The caller's array is never modified; with ``copy=False`` only row blocks are copied.
    whiten : bool, default=False
        As in scikit-learn: ``transform`` divides each projected coordinate by the square root of its
        released ``explained_variance_`` (at least the dtype's eps; a component whose variance the
        release does not resolve has variance 0, and so a huge scale), and ``inverse_transform``
        multiplies it back. Post-processing of released quantities: it costs nothing. Needs a method
        that releases eigenvalues (``"analyze_gauss"``, ``"mod_sulq"``, ``"wishart"``,
        ``"local_gaussian"``, ``"ppca"`` and ``"exponential"`` with k > 1 and a positive
        ``EpsilonSplit.eigenvalue_share``, ``"dpdispca"``); refused for the others before anything is
        charged.
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
    public_basis : PublicBasis, ndarray, tuple or None, default=None
        A public orthonormal basis of the features (``dpspectral.PublicBasis.dct2(shape)``,
        ``PublicBasis.from_matrix(B)``, ``PublicBasis.from_public_data(X_public, n_atoms)``, an
        orthonormal ``n_features x d'`` matrix, or ``("dct2", (height, width)[, n_atoms])``). Each row is
        projected onto its first d' atoms before it is clipped, the method releases in d' dimensions,
        and the fitted components and mean are lifted back (``B V``, ``B mu``): with few rows or a small
        epsilon this keeps the noise of a d'-dimensional problem (MNIST, 1,000 rows, epsilon 0.5: 0.71
        of the top-10 energy against 0.43). ``n_atoms="auto"`` chooses d' from public facts
        (:func:`dpspectral._public_basis.choose_n_atoms`; under add/remove neighbours, where n is
        private, from a noisy count of the rows that spends 2 % of the budget). The privacy
        report notes the basis and d'; ``explained_variance_ratio_`` is then a share of the released
        energy INSIDE the basis (what lies outside it is not released). ``docs/public-basis.md``.

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
    singular_values_ : ndarray of shape (n_components,)
        The square roots of the released (debiased) eigenvalues of the scatter of the clipped rows
        (centred when ``mean_`` is): scikit-learn's singular values of the centred data, i.e.
        ``sqrt(explained_variance_ * (n - 1))`` (``n`` when uncentred). Post-processing of released
        quantities: it costs nothing. Only for methods that release eigenvalues (an AttributeError
        otherwise, as for ``explained_variance_``).
    noise_variance_ : float
        scikit-learn's probabilistic PCA estimate of the noise variance: the average variance of the
        ``n_features - n_components_`` components not kept, from the released total variance minus
        the released variance of the kept components, divided by ``n_features - n_components_``,
        floored at 0 (0 when every component is kept). Post-processing of released quantities: it
        costs nothing. Only for methods that release eigenvalues and a total (an AttributeError
        otherwise). It makes ``get_covariance``, ``get_precision``, ``score_samples`` and ``score``
        available: scikit-learn's PCA formulas on these released quantities (also free); the scores
        read the data passed to them, as ``transform`` does.
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

    float32 data give a float32 model (``components_``, ``mean_``, the variances; ``transform`` of
    float32 data is float32): the release itself is computed in float64 and then rounded, which is
    post-processing. ``transform`` of a Dask array is a Dask array: the projection of each block of
    rows, lazily (nothing is computed until the caller asks).

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

    @folded("adaptive_clip", AdaptiveClip, {"clip_quantile": "quantile", "clip_share": "share"})
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
        centering: Any = "private",
        mean_share: float = 0.1,
        adaptive_clip: bool | AdaptiveClip | None = None,
        noise_shape: str | None = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        copy: bool = True,
        whiten: bool = False,
        on_norm_violation: str = "clip",
        method_params: dict[str, Any] | None = None,
        device: Any = None,
        public_basis: Any = None,
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
        self.noise_shape = noise_shape
        self.accountant = accountant
        self.random_state = random_state
        self.copy = copy
        self.whiten = whiten
        self.on_norm_violation = on_norm_violation
        self.method_params = method_params
        self.device = device
        self.public_basis = public_basis

    _task = "pca"
    _required_parameters = ("epsilon", "delta", "row_norm")
    _parameter_constraints = {
        "n_components": PCA_N_COMPONENTS,  # <= n_features, and a fraction only for some methods: fit
        **PRIVACY_PARAMETERS,
        "calibration": [NONE, CALIBRATION],  # None: the method's own
        "method": Options(("auto", *method_names("pca").values)),
        "relation": RELATION,
        "mean_share": SHARE,
        "adaptive_clip": [NONE, ADAPTIVE_CLIP],
        "noise_shape": NOISE_SHAPE,
        "accountant": ACCOUNTANT,
        "copy": BOOL,
        "whiten": BOOL,  # and a method that releases eigenvalues: _check_variance_options
        "method_params": METHOD_PARAMS,
        "device": [NONE, DEVICE],
        "public_basis": PUBLIC_BASIS,
    }
    #: Method options that are also estimator parameters: passed on when not None, and refused (named)
    #: for a method that does not take them.
    _method_options = ("adaptive_clip", "noise_shape")
    _parameters_checked_elsewhere = {
        "centering": "'private', None or a public centre of length n_features: checked by the method, "
                     "once n_features is known ('private' runs uncentred, with a warning, and a public "
                     "centre is refused here, for a method that does not centre)",
    }
    #: The methods whose release includes eigenvalues (``explained_variance_``; ``whiten=True``), except
    #: ppca with k = 1 and ppca or exponential with an ``eigenvalue_share`` of 0
    #: (:meth:`_check_variance_options`).
    _EIGENVALUE_METHODS = ("analyze_gauss", "mod_sulq", "wishart", "local_gaussian", "ppca", "exponential",
                           "dpdispca")
    #: The methods whose one release (a noisy d x d matrix) gives every eigenvalue and its trace at the
    #: same cost for any k: ``n_components`` may be a fraction of the released variance.
    _FRACTION_METHODS = ("analyze_gauss", "mod_sulq", "wishart", "local_gaussian")

    def _check_variance_options(self, method: Method) -> None:
        """``whiten`` and a fractional ``n_components`` need released eigenvalues: else refused, uncharged."""
        owner = type(self).__name__
        if _is_fraction(self.n_components) and method.name not in self._FRACTION_METHODS:
            raise ValueError(
                f"The 'n_components' parameter of {owner} must be an int or None for "
                f"method={method.name!r}: a fraction of the variance (here {self.n_components!r}) is "
                "chosen from the released eigenvalues and total variance of all the features, which only "
                f"{', '.join(repr(m) for m in self._FRACTION_METHODS)} release at no extra cost. "
                "Nothing was charged.")
        params = self.method_params or {}
        split = params.get("epsilon_split")
        share = params.get("eigenvalue_share") if split is None else split.eigenvalue_share
        no_values = (method.name not in self._EIGENVALUE_METHODS
                     or (method.name in ("ppca", "exponential") and share is not None and share == 0)
                     or (method.name == "ppca" and self.n_components == 1))
        if self.whiten and no_values:
            raise ValueError(
                f"The 'whiten' parameter of {owner} must be False for method={method.name!r} (with these "
                "options): whitening divides by the released explained variances, and this release has "
                f"no eigenvalues. Name a method that releases them ({', '.join(self._FRACTION_METHODS)}). "
                "Nothing was charged.")

    def _n_components_for(self, d: int | None) -> int:
        """The k the method runs with: ``n_components``, or ``n_features`` (None, or a fraction)."""
        owner = type(self).__name__
        k = self.n_components
        if _is_fraction(k):
            if d is None:
                raise ValueError(
                    f"The 'n_components' parameter of {owner} must be an int when the data are a stream "
                    "of blocks: a fraction of the variance needs n_features before the data are read. "
                    "Nothing was charged.")
            return d
        if k is not None and d is not None:
            check_n_components(k, d, owner)
        if k is None:
            if d is None:
                raise ValueError(
                    f"The 'n_components' parameter of {owner} must be given when the data are a "
                    "stream of blocks (n_features is not known in advance)."
                )
            k = d
        return int(k)

    def _keep_fraction(self, result: Any) -> Any:
        """The result cut to the smallest k whose cumulative released ratio exceeds the fraction.

        As scikit-learn chooses (``searchsorted(cumsum(ratios), fraction, side="right") + 1``), from the
        released eigenvalues and total only (post-processing); all of them when the released ratios
        never exceed the fraction (they sum to at most 1).
        """
        if not _is_fraction(self.n_components):
            return result
        variances = released_variances(to_numpy(result.values), None if result.total is None
                                       else float(result.total), result.diagnostics.get("noise_edge"))
        d = int(variances.ratios.size)
        fraction = float(self.n_components)  # type: ignore[arg-type]
        k = min(int(np.searchsorted(np.cumsum(variances.ratios), np.float64(fraction), side="right")) + 1, d)
        return dataclasses.replace(result, components=result.components[:, :k], values=result.values[:k])

    def _choose_method(self, X: Any) -> None:
        """``method_`` and ``method_reason_``: the named method, or auto's choice from public facts."""
        if self.method != "auto":
            self.method_, self.method_reason_ = self.method, "named by the caller"
            return
        in_memory = hasattr(X, "shape") or isinstance(X, (list, tuple))
        relation = None if self.relation is None else as_relation(self.relation,
                                                                  owner=type(self).__name__)
        choice = choose_method(relation=relation, delta=self.delta, n_features=n_features_of(X),
                               stream=not in_memory, public_basis=self.public_basis is not None)
        self.method_, self.method_reason_ = choice.method, choice.reason
        entry = get_method(choice.method)
        # the method's options, and for one release the keywords that moved into its option groups
        known = set(entry.options) | set(getattr(entry.function, "folded_parameters", {}))
        unknown = sorted(set(self.method_params or {}) - known)
        if unknown:
            raise ValueError(
                f"method='auto' chose {choice.method!r} ({choice.reason}), which does not take the "
                f"method_params {unknown}. Name the method these parameters belong to (method=...)."
            )
        for name in self._options_not_taken(entry)[:1]:
            given = f"{name}={getattr(self, name)!r}"
            what = (f"does not centre the data; {given} needs a covariance method" if name == "centering"
                    else f"does not take {given}; name a method that does")
            raise ValueError(f"method='auto' chose {choice.method!r} ({choice.reason}), which {what} "
                             "(method='analyze_gauss').")

    def _options_not_taken(self, method: Method) -> list[str]:
        """The parameters set here that ``method`` does not take: a public centre (``"private"`` runs it
        uncentred, with a warning) and the method options."""
        centre = (self.centering is not None and not _asks_private_centre(self.centering)
                  and "centering" not in method.options)
        return ["centering"] * centre + [name for name in self._method_options
                                         if getattr(self, name) is not None and name not in method.options]

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
        """Refuse an estimator parameter the method does not take (centering, adaptive clipping...).

        ``centering="private"`` (the default) with a method that cannot centre is not refused: ``fit``
        runs it uncentred, with an :class:`UncentredWarning` (and a note in the privacy report).
        """
        for name in self._options_not_taken(method)[:1]:
            what = (f"None or 'private' for method={method.name!r}, which does not centre the data "
                    "('private' runs it uncentred, with a warning)" if name == "centering"
                    else f"None for method={method.name!r}, which does not take it")
            raise ValueError(f"The '{name}' parameter of {owner} must be {what}. Got {getattr(self, name)!r} "
                             "instead.")

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
        self._check_variance_options(method)
        if self.device is not None:
            X = self._stream_to_device(X)  # out-of-core on the named device (docs/array-api.md)
        elif self._fit_on_device(X):
            pass  # array API dispatch: X stays in its namespace, on its device (docs/array-api.md)
        elif _is_array_like_for_sklearn(X):
            X = validated_data(
                self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                # finiteness is checked block by block (with the row index) in dpspectral._moments
                ensure_all_finite=False, copy=False, reset=True,
            )
        basis = self._resolve_basis(X, budget, relation, method)
        d_fit = n_features_of(X)
        if basis is not None:  # d' (or, chosen in the fit from a noisy count, at most the atoms there are)
            d_fit = basis.n_atoms if isinstance(basis.n_atoms, int) else min(
                int(basis.available or d_fit or 0), int(d_fit or 0))
        k = self._n_components_for(d_fit)
        centering, uncentred = self.centering, None
        if _asks_private_centre(centering):
            why = _why_uncentred(method, self.calibration_, X)
            if why is not None:
                centering, uncentred = None, _uncentred_note(why)
                warnings.warn(uncentred, UncentredWarning, stacklevel=2)
        options: dict[str, Any] = {}
        if "centering" in method.options:
            options.update(centering=centering, mean_share=self.mean_share)
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
        dtype = np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64
        function = method.function if basis is None else with_public_basis(method, basis)
        result = function(X, k, row_norm=row_norm, random_state=self.random_state, **privacy,
                                 **options, **(self.method_params or {}))
        if uncentred is not None and result.privacy is not None:
            result = dataclasses.replace(result, privacy=dataclasses.replace(
                result.privacy, notes=(*result.privacy.notes, uncentred)))
        self._store(self._keep_fraction(result), dtype)
        return self

    def _resolve_basis(self, X: Any, budget: PrivacyBudget, relation: Relation, method: Method) -> Any:
        """``public_basis`` for this fit, d' from public facts (refusals before anything is charged)."""
        if self.public_basis is None:
            return None
        owner = type(self).__name__
        if self.device is not None:
            raise ValueError(f"{owner}: public_basis does not combine with device= (the rows are projected "
                             "on the host). Leave device=None. Nothing was charged.")
        k = self.n_components if isinstance(self.n_components, numbers.Integral) else 1
        options = {"epsilon": budget.epsilon, "delta": budget.delta, "relation": relation,
                   **(self.method_params or {})}
        public = as_public_basis(self.public_basis, owner)
        if counts_rows(public, options, pure=not method.needs_delta):  # d' from a noisy count, in the fit
            d = n_features_of(X)
            if d is not None:
                public.check_features(int(d), owner)
            return public
        return resolve_for(public, X, int(k), options, owner, pure=not method.needs_delta)

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

    def _store(self, result: Any, dtype: Any = np.float64) -> None:
        """The fitted attributes, from the released ``result``, in ``dtype`` (float32 data: float32)."""
        V = result.components
        d, k = V.shape
        self.result_ = result
        if is_device_array(V):
            self.n_components_ = int(k)
            self._store_on_device(result)
            self.privacy_ = self._report(result.privacy)
            return
        self.components_ = np.ascontiguousarray(V.T, dtype=dtype)
        self.n_components_ = k
        if not hasattr(self, "n_features_in_"):
            self.n_features_in_ = d
        self.mean_ = np.zeros(d, dtype=dtype) if result.mean is None else np.asarray(result.mean, dtype=dtype)
        if result.n_samples is not None:
            self.n_samples_ = float(result.n_samples)
        self._store_variances(result, functools.partial(np.asarray, dtype=dtype))
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
        d, k = (int(s) for s in result.components.shape)
        d = int(result.diagnostics.get("public_basis", {}).get("n_atoms", d))  # the release's dimension
        noise = None
        if denom is not None and result.total is not None:  # probabilistic PCA: the average left over
            noise = max(float(result.total) - float(variances.values.sum()), 0.0) / denom / (d - k) \
                if k < d else 0.0
        self._variances = (None if denom is None else convert(variances.values / denom), ratio,
                           convert(np.sqrt(variances.values)), noise)

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

    @property
    def singular_values_(self) -> Any:
        """Square roots of the released eigenvalues of the (centred) scatter, as scikit-learn's."""
        return self._released_variance(2, "singular_values_")

    @property
    def noise_variance_(self) -> float:
        """Probabilistic PCA's noise variance: the released variance left over, per component not kept."""
        return self._released_variance(3, "noise_variance_")  # type: ignore[no-any-return]

    def _report(self, report: PrivacyReport) -> PrivacyReport:
        """The privacy report, with auto's choice as a note (and a delta given but not used)."""
        report = self._with_auto_note(report)
        method = get_method(self.method_)
        if report is not None and not method.needs_delta and method.private and method.certified \
                and self.delta:
            note = _pure_epsilon_note(method.name, float(self.delta))  # type: ignore[arg-type]
            report = dataclasses.replace(report, notes=(*report.notes, note))
        return report

    def _projection(self) -> Projection:
        """``(X - mean_) @ components_.T``, divided by the whitening scale with ``whiten=True``."""
        return Projection(self.components_.T, self.mean_, self._whiten_scale() if self.whiten else None)

    def _inverse_rows(self) -> Any:
        """``components_``, times sqrt(explained_variance_) with ``whiten=True``."""
        return self._back_components()

    def transform(self, X: Any) -> Any:
        """Project ``X`` on the released components: ``(X - mean_) @ components_.T``.

        With ``whiten=True``, each coordinate is then divided by ``sqrt(explained_variance_)`` (at
        least the dtype's eps), as scikit-learn does. A Dask array gives a Dask array (lazy: the
        projection of each block of rows). Post-processing of the released model: it costs nothing.
        """
        check_is_fitted(self, "components_")
        if is_device_array(self.components_) or is_device_array(X):
            Z = self._device_product(X, "transform") @ self.components_.T
            return Z / self._whiten_scale() if self.whiten else Z
        return super().transform(X)

    def inverse_transform(self, X: Any) -> Any:
        """Map projected data back: ``X @ components_ + mean_`` (undoing the whitening with ``whiten``).

        A Dask array gives a Dask array (lazy). Post-processing of the released model: it costs nothing.
        """
        check_is_fitted(self, "components_")
        if is_device_array(self.components_) or is_device_array(X):
            return self._device_product(X, "inverse_transform") @ self._back_components() + self.mean_
        return super().inverse_transform(X)

    def _whiten_scale(self) -> Any:
        """``sqrt(explained_variance_)``, at least the dtype's eps (scikit-learn's whitening scale)."""
        variance = self.explained_variance_
        xp = _namespace(variance)
        scale = xp.sqrt(variance)
        eps = float(xp.finfo(scale.dtype).eps)
        return xp.where(scale < eps, xp.full_like(scale, eps), scale)

    def _back_components(self) -> Any:
        """The rows ``inverse_transform`` maps back with: ``components_``, times sqrt(variance) if whiten."""
        if not self.whiten:
            return self.components_
        xp = _namespace(self.components_)
        return xp.sqrt(self.explained_variance_)[:, None] * self.components_

    @available_if(_has_generative_model)
    def get_covariance(self) -> Any:
        """The covariance of the data under the released model (scikit-learn's PCA formula).

        ``components_.T * (explained_variance_ - noise_variance_) @ components_ + noise_variance_ * I``
        (a difference below 0 counts as 0; the components scaled by ``sqrt(explained_variance_)``
        first with ``whiten``, as scikit-learn does). Post-processing of released quantities: it costs
        nothing. Needs ``noise_variance_``.

        Returns
        -------
        cov : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self, "components_")
        components, diff, noise = self._generative_model()
        cov = (components.T * diff) @ components
        return cov + noise * _eye(int(cov.shape[0]), cov)

    @available_if(_has_generative_model)
    def get_precision(self) -> Any:
        """The inverse of :meth:`get_covariance`, by the matrix inversion lemma (scikit-learn's formula).

        A component whose variance does not exceed ``noise_variance_`` adds nothing to the covariance
        and is left out of the lemma (scikit-learn would divide by 0 there). A ``noise_variance_`` of 0
        with fewer components than features (a released total at or below the kept variance) leaves
        the covariance singular: the dtype's eps times the largest released variance (at least the
        eps) stands in for it, as whitening floors its scale. Post-processing of released quantities:
        it costs nothing. Needs ``noise_variance_``.

        Returns
        -------
        precision : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self, "components_")
        components, diff, noise = self._generative_model()
        xp = _namespace(components)
        if noise == 0.0:
            if int(xp.sum(xp.astype(diff > 0, xp.int64))) == int(components.shape[1]):
                return xp.linalg.inv(self.get_covariance())  # full rank: the covariance is invertible
            eps = float(xp.finfo(diff.dtype).eps)
            noise = eps * max(1.0, float(xp.max(diff)) if int(diff.shape[0]) else 1.0)
        identity = _eye(int(components.shape[1]), components)
        kept = diff > 0  # the others: a zero row (no term), and 1 on the diagonal instead of 1 / 0
        components = xp.where(kept[:, None], components, xp.zeros_like(components))
        diff = xp.where(kept, diff, xp.ones_like(diff))
        inner = components @ components.T / noise + _eye(int(diff.shape[0]), components) / diff
        precision = components.T @ xp.linalg.inv(inner) @ components
        return precision / -(noise**2) + identity / noise

    def _generative_model(self) -> tuple[Any, Any, float]:
        """(components, max(explained_variance_ - noise_variance_, 0), noise_variance_); whiten as sklearn."""
        noise = float(self.noise_variance_)
        variance = self.explained_variance_
        xp = _namespace(variance)
        components = self.components_
        if self.whiten:
            components = components * xp.sqrt(variance)[:, None]
        diff = xp.where(variance > noise, variance - noise, xp.zeros_like(variance))
        return components, diff, noise

    @available_if(_has_generative_model)
    def score_samples(self, X: Any) -> Any:
        """The log-likelihood of each row of ``X`` under the released model (scikit-learn's formula).

        The Gaussian density with mean ``mean_`` and covariance :meth:`get_covariance`. It reads the
        ``X`` given here (your use of the released model, as ``transform`` is); the model itself is
        post-processing of released quantities and costs nothing. Needs ``noise_variance_``.

        Returns
        -------
        ll : ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "components_")
        if is_device_array(self.components_) or is_device_array(X):
            Xr = self._device_product(X, "transform")
        else:
            X = validated_data(self, X, dtype=(np.float64, np.float32), reset=False)
            Xr = X - self.mean_
        precision = self.get_precision()
        xp = _namespace(precision)
        sign, logdet = xp.linalg.slogdet(precision)
        logdet = logdet if float(sign) > 0 else -float("inf")
        log_like = -0.5 * xp.sum(Xr * (Xr @ precision), axis=1)
        return log_like - 0.5 * (int(precision.shape[0]) * math.log(2.0 * math.pi) - logdet)

    @available_if(_has_generative_model)
    def score(self, X: Any, y: Any = None) -> float:
        """The average log-likelihood of the rows of ``X`` (:meth:`score_samples`); ``y`` is ignored."""
        return float(np.mean(to_numpy(self.score_samples(X))))

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
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _namespace(a: Any) -> Any:
    """NumPy for a NumPy array, else the array's namespace (array API dispatch)."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    import array_api_compat

    return array_api_compat.array_namespace(a)


def _eye(n: int, like_array: Any) -> Any:
    """The n x n identity in the namespace, dtype and device of ``like_array``."""
    if isinstance(like_array, np.ndarray):
        return np.eye(n, dtype=like_array.dtype)
    import array_api_compat

    xp = array_api_compat.array_namespace(like_array)
    return xp.eye(n, dtype=like_array.dtype, device=array_api_compat.device(like_array))


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
        relation asked for, which it never changes (:func:`dpspectral._registry.choose_lowrank_method`):
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
        sketches come from OS entropy unless a public seed is declared in ``method_params``
        (``{"sketch": Sketch(seed=...)}``; a fit is reproducible only then, and never with ``"secure"``).
    method_params : dict or None
        Extra keyword arguments of the method (``sketch`` (a :class:`~dpspectral.lowrank.Sketch`),
        ``bound``, ...).

    Attributes
    ----------
    U_ : ndarray of shape (m, k) or None
        None for a subspace-only release (``hardt_roth``'s default power iteration: ``V_`` and ``S_`` only).
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
        **OPTIONAL_BUDGET_PARAMETERS,  # required by the private methods only (see _privacy_kwargs)
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
        self.privacy_ = self._with_auto_note(result.privacy)
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
