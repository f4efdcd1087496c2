"""One entry point per input kind: labelled rows (FDA), rows (PCA as a GEP), or a caller's pair.

The solvers are the registry's ``task="gep"`` entries (:mod:`dpspectral._registry`): their ``solver``
(the function on a pair) and ``sparse`` flag; the registry refers to this module lazily (no cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import _registry as registry
from .._constraints import renamed
from .._registry import Method
from .._validation import check_budget, check_choice
from ..privacy._budget import Relation
from ..privacy._clipping import NormViolation, row_norms
from ._common import NOISE_RIDGE, REGULARIZATION_PAPER_NAME, called_as, check_regularization
from ._moments import MOMENTS, moments_fda
from ._reduction import simultaneous_reduction
from ._result import GEPResult
from ._scatter import PairSensitivity, ScatterPair, build_fda_pair, build_pca_pair, build_user_pair

__all__ = ["GEP_METHODS", "GEPMethod", "fda_method", "private_fda", "private_gep", "private_pca_gep",
           "solve_pair"]


#: The metadata of one GEP solver is a registry entry (``task="gep"``): ``solver`` is the function on a
#: pair, ``sparse`` says whether it takes ``sparsity``. The old name is kept for callers.
GEPMethod = Method

#: The private GEP solvers, by name, read from the registry (``dpspectral.methods(task="gep")``).
GEP_METHODS: Mapping[str, Method] = MappingProxyType(
    {m.name: m for m in registry.methods(task="gep") if m.private})

#: The non-private references among the registry's GEP entries (``"sr"``).
_NONPRIVATE: tuple[str, ...] = tuple(m.name for m in registry.methods(task="gep") if not m.private)


@renamed(REGULARIZATION_PAPER_NAME)
def solve_pair(
    pair: ScatterPair,
    k: int,
    *,
    method: str = "dpsr",
    epsilon: float | None = None,
    delta: float | None = None,
    regularization: float | str | None = None,
    sparsity: int | None = None,
    owner: str = "solve_pair",
    **kwargs: Any,
) -> GEPResult:
    """Run the named solver on a pair (``"sr"``: the non-private simultaneous reduction).

    The solver's messages name ``owner`` (the entry point the user called), not the internal solver.
    ``regularization`` is xi in the paper (the old name ``xi`` still works, with a FutureWarning).
    """
    check_choice(method, "method", (*GEP_METHODS, *_NONPRIVATE), owner)
    regularization = default_regularization(method, regularization)
    with called_as(owner):
        if method == "sr":
            if kwargs:
                raise TypeError(f"method='sr' of {owner} takes no options; got {sorted(kwargs)}.")
            ratio = float(check_regularization(regularization, owner, allow_zero=True))  # no noise: a float
            return simultaneous_reduction(pair.A, pair.B, k, regularization=ratio)
        spec = GEP_METHODS[method]
        solver = spec.solver
        assert solver is not None, f"the registry's GEP entry {method!r} names no solver"
        if spec.sparse:
            if sparsity is None:
                raise ValueError(f"The 'sparsity' parameter of {owner} is required for method={method!r} "
                                 "(s, the number of non-zeros per vector, in [1, n_features]).")
            return solver(pair, k, sparsity, epsilon=epsilon, delta=delta, regularization=regularization,
                          **kwargs)
        if sparsity is not None:
            raise ValueError(f"The 'sparsity' parameter of {owner} applies only to the sparse methods "
                             f"({', '.join(n for n, m in GEP_METHODS.items() if m.sparse)}). Got "
                             f"sparsity={sparsity!r} with method={method!r}.")
        return solver(pair, k, epsilon=epsilon, delta=delta, regularization=regularization, **kwargs)


def default_regularization(method: str, regularization: Any) -> Any:
    """None -> the ridge from the noise (``"noise"``) for a private method, the paper's 0.01 for ``"sr"``."""
    if regularization is None:
        return 0.01 if method in _NONPRIVATE else NOISE_RIDGE
    return regularization


def _early_checks(method: str, epsilon: Any, delta: Any, regularization: Any, owner: str) -> Any:
    """Fail on bad public parameters before reading any data; the regularization, its default filled in."""
    check_choice(method, "method", (*GEP_METHODS, *_NONPRIVATE), owner)
    regularization = default_regularization(method, regularization)
    if method == MOMENTS and owner != "private_fda":
        raise ValueError(f"method='moments' of {owner} is not available: it releases the moments of "
                         "labelled rows (use private_fda or DPFisherDiscriminant). Nothing was charged.")
    check_regularization(regularization, owner, allow_zero=method == "sr")
    if method != "sr":
        check_budget(epsilon, delta, owner)
    return regularization


@renamed(REGULARIZATION_PAPER_NAME)
def private_fda(
    X: Any,
    y: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    method: str = "moments",
    regularization: float | str | None = None,
    sparsity: int | None = None,
    classes: Any = None,
    on_norm_violation: NormViolation = "clip",
    **kwargs: Any,
) -> GEPResult:
    """Private Fisher discriminant directions: :func:`fda_pair` then the named solver.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Private rows; never modified.
    y : array-like of shape (n_samples,)
        Private labels (part of the record).
    k : int
        Number of directions, in [1, n_features] (FDA has at most n_classes - 1 useful ones).
    epsilon, delta : float
    row_norm : float
        Public row bound C (rows clipped per row); never derived from the data.
    method : {"moments", "dpsr", "dpsrs", "sr_dp", "dp_rayleigh_flow", "dp_truncated_rayleigh_flow", "sr"}
        Default ``"moments"`` (the best certified method, docs/algorithms/gep.md; the default of
        :class:`~dpspectral.DPFisherDiscriminant` too). ``"sr"`` is the non-private reference (epsilon,
        delta ignored; ``privacy`` is None).
        ``"moments"``: one release of the clipped rows' moments (:func:`~dpspectral.gep._moments.moments_fda`;
        its options ``ridge``, ``relation``, ``budget_shares`` go in ``**kwargs``; ``regularization`` does
        not apply to it).
    regularization : float, "noise" or None
        The paper methods' ridge: a float is xi in the paper, the regularisation ratio added to B's
        eigenvalues (> 0 for the private methods; 0.01 is the paper's); ``"noise"``: a ridge set from
        the planned noise scale (a public function of epsilon, delta and the sensitivities;
        docs/algorithms/gep.md). None (default): ``"noise"`` for the private methods, 0.01 for ``"sr"``.
        The old name ``xi`` still works, with a FutureWarning.
    sparsity : int, optional
        s, for the sparse methods.
    classes : array-like, optional
        Public list of labels (at least 2): the class list comes from it, and a class absent from the
        data, a class with one member or a single class present is handled by the mechanism. Default
        None: ``method="moments"`` releases the label set privately first, in the same report
        (:mod:`dpspectral.gep._labels`; labels with few records are left out with their rows, fewer than
        2 kept is an error after that charge); a paper solver needs none (k is given and the scatter
        pair is the same whichever labels are named, so no label set is published).
    on_norm_violation : {"clip", "raise"}
    **kwargs
        Options of the solver (``n_iter``, ``step_sizes``, ``calibration``, ``accountant``,
        ``random_state``, ...).

    Returns
    -------
    GEPResult

    Privacy
    -------
    That of the solver, for replace-one neighbours where a record is a row and its label, with the
    sensitivities of :func:`fda_sensitivity`; ``method="moments"``: that of
    :func:`~dpspectral.gep._moments.release_moments` (replace-one or add/remove, Gaussian events; with
    ``classes=None`` preceded by the label set's release, charged in the same report).
    Validate, then charge: the whole input (rows and labels) is checked before the solver charges the
    ledger, and no message names a row, a value or a label read from ``y``.
    """
    owner = "private_fda"
    regularization = _early_checks(method, epsilon, delta, regularization, owner)
    if method == MOMENTS:  # one release of the rows' moments: no scatter pair is built
        if sparsity is not None:
            raise ValueError(f"The 'sparsity' parameter of {owner} applies only to the sparse methods; "
                             f"method='moments' is dense. Got sparsity={sparsity!r}.")
        with called_as(owner):  # its messages name private_fda
            return moments_fda(X, y, k, epsilon=epsilon, delta=delta, row_norm=row_norm, classes=classes,
                               on_norm_violation=on_norm_violation, **kwargs)
    pair = build_fda_pair(X, y, row_norm=row_norm, classes=classes, on_norm_violation=on_norm_violation,
                          owner=owner)
    return solve_pair(pair, k, method=method, epsilon=epsilon, delta=delta,
                      regularization=regularization, sparsity=sparsity, owner=owner, **kwargs)


@renamed(REGULARIZATION_PAPER_NAME)
def private_pca_gep(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    method: str = "dpsr",
    regularization: float | str | None = None,
    sparsity: int | None = None,
    on_norm_violation: NormViolation = "clip",
    **kwargs: Any,
) -> GEPResult:
    """PCA as the GEP ``(covariance, I)`` (Chen et al. §3): :func:`pca_pair` then the named solver.

    B = I is public, so DPSR's first phase is exact and free; the answer is the top-k eigenvectors
    of the centred covariance, scaled by ``1 / sqrt(1 + xi)`` (xi is ``regularization``; the old name
    ``xi`` still works, with a FutureWarning).

    Privacy
    -------
    That of the solver with :func:`pca_sensitivity` (replace-one).
    """
    owner = "private_pca_gep"
    regularization = _early_checks(method, epsilon, delta, regularization, owner)
    pair = build_pca_pair(X, row_norm=row_norm, on_norm_violation=on_norm_violation, owner=owner)
    return solve_pair(pair, k, method=method, epsilon=epsilon, delta=delta,
                      regularization=regularization, sparsity=sparsity, owner=owner, **kwargs)


@renamed(REGULARIZATION_PAPER_NAME)
def private_gep(
    A: Any,
    B: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    sensitivity: PairSensitivity,
    method: str = "dpsr",
    regularization: float | str | None = None,
    sparsity: int | None = None,
    n_samples: int | None = None,
    **kwargs: Any,
) -> GEPResult:
    """Private top-k generalized eigenvectors of a caller-supplied symmetric-definite pair.

    Parameters
    ----------
    A, B : array-like of shape (d, d)
        Symmetric; ``B + xi I`` positive definite (checked; a clear error otherwise).
    k : int
    epsilon, delta : float
    sensitivity : PairSensitivity
        The caller's bounds on ``||A - A'||`` and ``||B - B'||`` (Frobenius and spectral) over
        neighbouring data sets, for the relation it states. The guarantee rests on them.
    method, regularization, sparsity
        As :func:`private_fda` (``regularization`` is xi in the paper; the old name ``xi`` still works,
        with a FutureWarning).
    n_samples : int, optional
        Public n, needed only by ``calibration="paper"`` with explicit ``PaperCalibration.constants``.
    **kwargs
        The solver's options, as :func:`private_fda`.

    Returns
    -------
    GEPResult

    Raises
    ------
    ValueError
        A or B not symmetric, ``B + xi I`` not positive definite, ``regularization <= 0`` (private methods),
        ``sparsity`` outside [1, d], bad privacy parameters.

    Privacy
    -------
    That of the solver, with the stated sensitivities and relation.
    """
    owner = "private_gep"
    regularization = _early_checks(method, epsilon, delta, regularization, owner)
    pair = build_user_pair(A, B, sensitivity=sensitivity, regularization=regularization, n_samples=n_samples,
                           check_definite=True, owner=owner)
    return solve_pair(pair, k, method=method, epsilon=epsilon, delta=delta,
                      regularization=regularization, sparsity=sparsity, owner=owner, **kwargs)


def fda_method(method: str) -> Callable[..., GEPResult]:
    """:func:`private_fda` with ``method`` fixed: the callable of the registry's ``task="gep"`` entries.

    ``fit(X, y, k, *, epsilon, delta, row_norm, relation="replace_one", regularization=None, **options)``
    (``regularization`` is xi in the paper; the old name ``xi`` still works, with a FutureWarning). The
    only relation is replace-one, where a record is a row and its label (the sensitivities of
    :func:`fda_sensitivity`); another relation is a clear error. For ``method="sr"`` (non-private)
    ``epsilon``, ``delta``, ``row_norm`` are optional and the privacy options are ignored.

    Privacy
    -------
    ``method="sr"``: none, the non-private reference (labelled ``certified=False`` wherever it is
    reported). Otherwise replace-one neighbours (one labelled row changed): the release is that of the
    solver ``method`` (:mod:`dpspectral.gep`) on the scatter pair of the rows clipped at ``row_norm``,
    whose sensitivities :func:`private_fda` derives (its Privacy section); the classification that
    follows reads only released values.
    """
    check_choice(method, "method", (*GEP_METHODS, *_NONPRIVATE), "fda_method")

    def fit(X: Any, y: Any, k: int, *, epsilon: float | None = None, delta: float | None = None,
            row_norm: float | None = None, relation: Any = Relation.REPLACE_ONE,
            regularization: float | str | None = None,
            **options: Any) -> GEPResult:
        """:func:`~dpspectral.gep.private_fda` with its ``method`` fixed by :func:`fda_method`.

        Privacy
        -------
        As in :func:`~dpspectral.gep._solve.fda_method` (the solver's release on the clipped rows'
        scatter pair, replace-one; none for ``"sr"``).
        """
        owner = f"the registry method {method!r}"
        try:
            rel = Relation(relation)
        except ValueError:
            rel = None
        if rel is not Relation.REPLACE_ONE:
            raise ValueError(f"The 'relation' parameter of {owner} must be 'replace_one' (a record is a row "
                             f"and its label; the scatter sensitivities are derived for that relation). "
                             f"Got {relation!r}.")
        if method == "sr":
            for key in ("calibration", "accountant", "random_state"):
                options.pop(key, None)
            # the non-private reference: no clipping unless the caller gives a bound
            norm = (float(np.max(row_norms(X), initial=0.0)) or 1.0) if row_norm is None else row_norm
            return private_fda(X, y, k, epsilon=1.0, delta=0.0, row_norm=norm, method="sr",
                               regularization=regularization, **options)
        if epsilon is None or delta is None or row_norm is None:
            raise TypeError(f"{owner} needs epsilon, delta and row_norm.")
        return private_fda(X, y, k, epsilon=epsilon, delta=delta, row_norm=row_norm, method=method,
                           regularization=regularization, **options)

    fit.__name__ = fit.__qualname__ = f"fda_{method}"
    return renamed(REGULARIZATION_PAPER_NAME)(fit)  # after the name: its warning names fda_<method>
