"""``DPLinearDiscriminantAnalysis``: a private LDA classifier from one release of the moments."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import expit, softmax
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._constraints import DELTA, EPSILON, NONE, ON_NORM_VIOLATION, RANDOM_STATE, ROW_NORM, SHARE, Interval
from .._estimators import ACCOUNTANT, BOOL, N_COMPONENTS, PUBLIC_BASIS, RELATION, _DPEstimator
from .._validation import validated_data
from ..privacy._accounting import Accountant, PrivacyReport
from ..privacy._budget import Relation, as_relation
from ._directions import _ReleasedDirections
from ._labelled import _LabelledFit
from ._moments import DEFAULT_RIDGE, ReleasedMoments, fisher_from_moments, lda_from_moments, prepare_moments
from ._scatter import check_classes

__all__ = ["DPLinearDiscriminantAnalysis"]


class DPLinearDiscriminantAnalysis(_ReleasedDirections, LinearClassifierMixin, _LabelledFit, _DPEstimator):
    """Differentially private linear discriminant analysis (classifier and dimension reduction).

    ``fit(X, y)`` releases, ONCE, the second moment, the class sums and the class counts of the clipped
    rows (:func:`~dpspectral.gep._moments.release_moments`; by default the rows are clipped at a released
    clip ``r <= row_norm``, from a noisy norm histogram released first), and builds everything from
    the released values: class means, the shared within-class covariance (projected onto the PSD cone,
    plus a ridge set from the public noise scale), priors from the released counts, and the Fisher
    directions of ``transform``. The whole classifier is therefore
    private, not only a projection. As epsilon grows it tends to scikit-learn's
    ``LinearDiscriminantAnalysis(solver="lsqr")`` on the clipped rows.

    Parameters
    ----------
    n_components : int or None, default=None
        Directions kept by ``transform``, in ``[1, min(n_classes - 1, n_features)]`` (a larger value is
        refused, as scikit-learn's LDA does); None: ``min(n_classes - 1, n_features)``.
    epsilon : float
        In (0, inf). Required.
    delta : float
        In (0, 1). Required.
    row_norm : float
        Public bound on each row's Euclidean norm; rows above it are clipped per row (or refused with
        ``on_norm_violation="raise"``). Required: chosen without looking at the data.
    classes : array-like or None, default=None
        The public list of labels (at least 2). A public class with no rows (or one row) is not an
        error: its released count is floored at the public ``max(1, sigma_T sqrt(d) / row_norm)`` and
        its mean is the released sum over that count, projected onto the row-norm ball (mostly noise:
        such a class gets a small prior and is rarely predicted). None: the set of labels is released
        privately first (:mod:`dpspectral.gep._labels`, charged in the same report): a label present is
        kept iff its noisy count passes a public threshold (about 145 rows at epsilon = 1, delta =
        1e-6; in ``privacy_.notes``), the rows of a label not kept are left out, and fewer than 2
        labels kept is an error after that charge. Pass ``classes`` to keep every public label.
    relation : {"replace_one", "add_remove"} or None, default=None
        A record is a row and its label. None: replace-one (n public); under add/remove n and the counts
        are private.
    ridge : float or None, default=None
        Ridge added to the released within-class scatter, in units of the public noise scale
        ``sigma_S sqrt(d)`` (> 0); None: 1.0 (measured on four data sets, docs/algorithms/gep.md).
    priors : array-like of shape (n_classes,) or None, default=None
        Public class priors (positive, summing to 1, in the order of ``classes``; they need the public
        ``classes``); None: from the released counts.
    accountant : Accountant or None, default=None
        Shared ledger with a ceiling (by reference across ``clone``); a fit over it is refused before any
        noise is drawn.
    random_state : None, int, SeedSequence, Generator or "secure", default=None
        Seeds the noise (keep a seed secret). ``"secure"``: OS entropy and exact discrete samplers.
    on_norm_violation : {"clip", "raise"}, default="clip"
    adaptive_clip : bool, default=True
        Clip the rows at a released clip instead of at ``row_norm``: a noisy histogram of the row norms
        (``clip_share`` of the budget), the clip post-processed from it by the balance rule, then the
        moments of the rows clipped there (:mod:`dpspectral.privacy._adaptive`). Under a loose bound it
        cuts the noise by ``(r / row_norm)^2`` (second moment) and ``r / row_norm`` (class sums); rows
        already at the bound keep it (1 % more noise for the histogram's share). False: the one release at
        ``row_norm``.
    clip_share : float in (0, 1) or None, default=None
        The norm histogram's share of the budget (None: 0.02).
    public_basis : PublicBasis, ndarray, tuple or None, default=None
        A public orthonormal basis (as ``DPPCA``'s): each row is projected onto its d' atoms before it is
        clipped, the moments are released in d' dimensions, and ``coef_``, ``scalings_``, ``means_`` are
        lifted back (``w -> B w``: ``w^T (B^T x) = (B w)^T x``); ``covariance_`` is ``B Sigma' B^T``
        (rank d', nothing off the basis); ``moments_`` stays in the basis. ``docs/public-basis.md``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_features), or (1, n_features) for two classes
    intercept_ : ndarray of shape (n_classes,), or (1,) for two classes
    means_ : ndarray of shape (n_classes, n_features)
        Released class means.
    covariance_ : ndarray of shape (n_features, n_features)
        Released shared covariance (PSD-projected, plus the ridge over n).
    priors_ : ndarray of shape (n_classes,)
    scalings_ : ndarray of shape (n_features, n_components)
        Fisher directions (the eigenvectors of the released pair).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Released generalized eigenvalues over their sum.
    n_components_, n_features_in_ : int
    privacy_ : PrivacyReport
        Two Gaussian events (norm histogram, moments; one with ``adaptive_clip=False``), preceded with
        ``classes=None`` by the label set's two (its Gaussian counts and the threshold's
        ``EpsilonDeltaDpEvent``); the relation, epsilon, delta, certified.
    moments_ : ReleasedMoments
        The release itself (every value in it is noisy or public).

    Notes
    -----
    Every fitted attribute is post-processing of the release. ``transform`` is ``X @ scalings_``
    (no centring, no clipping); the scores take the rows as given (the released clip is
    ``moments_.clip``). ``decision_function`` and ``predict_proba`` follow scikit-learn's LDA
    (softmax of the class scores; for two classes the logistic of their difference).

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral import DPLinearDiscriminantAnalysis
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 3000)
    >>> X = rng.normal(size=(3000, 5)) / 4 + np.eye(3, 5)[y] / 2
    >>> clf = DPLinearDiscriminantAnalysis(epsilon=1.0, delta=1e-6, row_norm=1.5, classes=[0, 1, 2],
    ...                                    random_state=0).fit(X, y)
    >>> round(clf.score(X, y), 2), clf.privacy_.certified  # non-private LDA: 0.87
    (0.86, True)
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        row_norm: float | None = None,
        classes: Any = None,
        relation: Any = None,
        ridge: float | None = None,
        priors: Any = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
        on_norm_violation: str = "clip",
        adaptive_clip: bool = True,
        clip_share: float | None = None,
        public_basis: Any = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.classes = classes
        self.relation = relation
        self.ridge = ridge
        self.priors = priors
        self.accountant = accountant
        self.random_state = random_state
        self.on_norm_violation = on_norm_violation
        self.adaptive_clip = adaptive_clip
        self.clip_share = clip_share
        self.public_basis = public_basis

    _task = "gep"
    _required_parameters = ("epsilon", "delta", "row_norm")
    _parameter_constraints = {
        "n_components": N_COMPONENTS,  # <= min(n_classes - 1, n_features): _n_components
        "epsilon": [EPSILON, NONE],  # None: "is required" (_required_parameters)
        "delta": [DELTA, NONE],
        "row_norm": ROW_NORM,
        "relation": RELATION,  # replace-one or add/remove: prepare_moments
        "ridge": [Interval(0, None, "neither"), NONE],
        "accountant": ACCOUNTANT,
        "random_state": RANDOM_STATE,
        "on_norm_violation": ON_NORM_VIOLATION,
        "adaptive_clip": BOOL,
        "clip_share": [NONE, SHARE],
        "public_basis": PUBLIC_BASIS,
    }
    _parameters_checked_elsewhere = {
        "classes": "a public list of at least 2 labels or None: check_classes at fit, before the data",
        "priors": "public priors (positive, summing to 1, one per class): _priors at fit, before the data",
    }

    def fit(self, X: Any, y: Any) -> DPLinearDiscriminantAnalysis:
        """Fit from one release of the moments of the clipped rows.

        Validate (public parameters, then the whole input) -> one release (charged to ``accountant``)
        -> class means, covariance, priors, directions (post-processing).

        Privacy
        -------
        :func:`~dpspectral.gep._moments.release_moments`: replace-one sensitivities ``sqrt(2) C^2``
        (second moment), ``2 C`` (class sums), ``sqrt(2)`` (counts); add/remove ``C^2``, ``C``, ``1``; with
        adaptive clipping (default) C is the clip released by a first Gaussian release (the norm
        histogram: ``sqrt(2)`` replace-one, ``1`` add/remove), the two events composing to the budget.
        With ``classes=None`` the label set is released before them (a Gaussian stability histogram:
        counts of L2 sensitivity ``sqrt(2)`` / ``1``, a threshold a one-record label passes with
        probability at most ``delta_L / 2`` / ``delta_L``; :mod:`dpspectral.gep._labels`) and the
        Gaussian stages share ``(epsilon, delta - delta_L)``; the rows of a label not kept are left out
        (a per-row map of the released set). Everything stored is post-processing. Nothing is charged
        when a check on public inputs fails; a check on the released label set (fewer than 2 labels,
        ``n_components`` too large) fails after the label stage, which stays charged.
        """
        owner = type(self).__name__
        self._check_parameter_table()
        public = None if self.classes is None else check_classes(self.classes, owner)
        if public is not None:
            self._n_components(int(public.size), None)
        self._priors(None if public is None else int(public.size))
        X, y = self._labelled_rows(X, y, self._relation(), owner, classification=True)
        prepared = prepare_moments(X, y, epsilon=self.epsilon, delta=self.delta, row_norm=self.row_norm,
                                   classes=public, relation=self._relation(), random_state=self.random_state,
                                   on_norm_violation=self.on_norm_violation, adaptive_clip=self.adaptive_clip,
                                   clip_share=self.clip_share, owner=owner)
        d = int(X.shape[1])
        if public is None:
            self._n_components(None, d)  # classes=None: n_components <= n_features before the charge
        moments, k = self._release_moments(prepared, public, d)
        self._store(moments, k, None if public is None else self._priors(int(public.size)))
        return self

    def _relation(self) -> Any:
        """The relation asked (None: replace-one); an unknown one is refused by ``prepare_moments``."""
        if self.relation is None:
            return Relation.REPLACE_ONE
        try:
            return as_relation(self.relation)
        except (ValueError, TypeError):
            return self.relation

    def _priors(self, n_classes: int | None) -> np.ndarray | None:
        """The public priors, checked: positive, summing to 1, one per class (None: from the release).

        ``n_classes`` None (``classes=None``): priors are refused before anything is read (they are
        given in the order of a public class list)."""
        if self.priors is None:
            return None
        if n_classes is None:
            raise ValueError(f"The 'priors' parameter of {type(self).__name__} needs the public 'classes' "
                             "(priors are given in their order; with classes=None the label set is "
                             "released privately during the fit). Pass 'classes', or priors=None.")
        p = np.asarray(self.priors, dtype=float) if np.ndim(self.priors) == 1 else np.array([np.nan])
        if p.shape != (n_classes,) or not np.all(np.isfinite(p)) or np.any(p <= 0) or \
                not np.isclose(p.sum(), 1.0):
            raise ValueError(f"The 'priors' parameter of {type(self).__name__} must be {n_classes} positive "
                             f"floats summing to 1 (one per class). Got {self.priors!r} instead.")
        return p

    def _n_components(self, n_classes: int | None, n_features: int | None, released: bool = False) -> int:
        """``n_components`` (or its default) in ``[1, min(n_classes - 1, n_features)]``, as sklearn's LDA.

        ``n_classes``: the public ``classes``' length or (``released``) the number of labels the private
        label release kept; None (``classes=None``, before the fit): only ``n_features`` bounds it. No
        message quotes a number read from the data."""
        if n_classes is None:
            if self.n_components is not None and n_features is not None and self.n_components > n_features:
                raise ValueError(f"The 'n_components' parameter of {type(self).__name__} must be an int in "
                                 f"[1, n_features = {n_features}]. Got {self.n_components!r} instead.")
            return 1
        upper = n_classes - 1 if n_features is None else min(n_classes - 1, n_features)
        if self.n_components is None:
            return max(1, upper)
        if self.n_components > upper:
            where = (" n_classes is the number of labels the private label release kept (classes=None; "
                     "pass the public 'classes' to fix it before the fit), and the release stays charged."
                     if released else "")
            raise ValueError(f"The 'n_components' parameter of {type(self).__name__} must be an int in "
                             f"[1, min(n_classes - 1, n_features) = {upper}] (as scikit-learn's "
                             f"LinearDiscriminantAnalysis).{where} Got {self.n_components!r} instead.")
        return int(self.n_components)

    def _store(self, moments: ReleasedMoments, k: int, priors: np.ndarray | None) -> None:
        """Post-processing of the release: the classifier, the directions, the report."""
        ridge = DEFAULT_RIDGE if self.ridge is None else float(self.ridge)
        lda = lda_from_moments(moments, ridge=ridge, priors=priors)
        fisher = fisher_from_moments(moments, k, ridge=ridge)
        self.classes_ = moments.classes
        self.means_, self.covariance_, self.priors_ = lda.means, lda.covariance, lda.priors
        coef, intercept = lda.coef, lda.intercept
        if coef.shape[0] == 2:  # binary: one score, as scikit-learn's LDA
            coef, intercept = coef[1:] - coef[:1], intercept[1:] - intercept[:1]
        self.coef_, self.intercept_ = coef, intercept
        self.scalings_ = np.ascontiguousarray(fisher.vectors)
        total = float(np.sum(fisher.values))
        self.explained_variance_ratio_ = fisher.values / total if total > 0 else np.zeros_like(fisher.values)
        self.n_components_ = k
        self.moments_ = moments
        self.privacy_: PrivacyReport = moments.privacy
        basis = self.__dict__.pop("_basis", None)
        # released in the public basis: lift (w^T B^T x = (B w)^T x); moments_ stay in it
        if basis is not None:
            self.coef_ = self.coef_ @ basis.matrix.T
            self.scalings_ = np.ascontiguousarray(basis.lift(self.scalings_))
            self.means_ = self.means_ @ basis.matrix.T
            self.covariance_ = basis.matrix @ self.covariance_ @ basis.matrix.T  # rank d': 0 off the basis
            self.privacy_ = dataclasses.replace(self.privacy_, notes=(*self.privacy_.notes, basis.note()))

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``X @ coef_.T + intercept_`` (one score per row for two classes)."""
        check_is_fitted(self, "coef_")
        X = validated_data(self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32), reset=False)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: softmax of the class scores (logistic of the score for two classes)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = expit(scores)
            return np.column_stack([1.0 - p1, p1])
        return np.asarray(softmax(scores, axis=1))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
