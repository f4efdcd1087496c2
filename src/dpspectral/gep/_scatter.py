"""Symmetric-definite pairs ``(A, B)`` built from private data, and their sensitivities.

Two builders follow Chen et al. (paper 003, §3), with rows clipped per row to the public bound C
(``x -> x min(1, C / ||x||)``, a per-record map):

* PCA (:func:`pca_pair`): ``A = (1/n) sum_i (x_i - mu)(x_i - mu)^T`` (centred covariance), ``B = I``
  (public: it does not depend on the data).
* Fisher discriminant analysis (:func:`fda_pair`): between-class
  ``A = (1/n) sum_k n_k (mu_k - mu)(mu_k - mu)^T`` and within-class
  ``B = (1/n) sum_k sum_{i in C_k} (x_i - mu_k)(x_i - mu_k)^T``.

:func:`symmetric_definite_pair` wraps a pair the caller computed, with sensitivities the caller states.

Sensitivities (replace-one neighbours, the label part of the record; DERIVED, spec-pca-gep.md §B.8)
-----------------------------------------------------------------------------------------------------
A record is ``(x, label)``; neighbours differ in one record, which may change both the row and its
class. n is the same for both neighbours (public). All rows have norm <= C after clipping.

*Scatter identity.* For points ``P`` with mean ``m`` and scatter ``S(P)``, adding a point x gives
``S(P + x) = S(P) + (|P| / (|P| + 1)) (x - m)(x - m)^T``, and ``||x - m|| <= 2C``. So adding or removing
one point changes a scatter by a PSD rank-one matrix of spectral (= Frobenius) norm <= 4 C^2.
The identity holds for ``|P| = 0`` (the first point of an empty class adds a zero scatter) and
``|P| = 1``, so the bounds below cover neighbours in which a class is empty, has one member, or is the
only class present (then ``A = 0``): none of these is an error when ``classes`` is given, and the
class list, the number of components and every shape come from the public ``classes``. With
``classes=None`` the labels present index the classes: A and B are those of any public list holding
them (an absent class contributes 0), so the bounds hold as well; the set itself is private and is
published only through a private release (:mod:`dpspectral.gep._labels`).

*B (within-class).* ``n B = sum_k S(C_k)``. Replacing ``(x, a)`` by ``(x', b)`` removes x from class a
and adds x' to class b (the same class or not): ``n dB = P - Q`` with P, Q PSD rank one, each of norm
<= 4 C^2. Hence ``||n dB||_2 <= 4 C^2`` (``-Q <= n dB <= P``) and
``||n dB||_F^2 = ||P||_F^2 + ||Q||_F^2 - 2 <P, Q> <= 32 C^4`` (``<P, Q> >= 0`` for PSD matrices):

    ||dB||_2 <= 4 C^2 / n,      ||dB||_F <= 4 sqrt(2) C^2 / n.

(Tight as n_a grows: x = C e1 in a class whose other members sit at -C e1, x' = C e2 into a class
whose other members sit at -C e2.)

*A (between-class).* ``n A = T - n B`` with T the total scatter ``S(all rows)``, and replacing one row
changes T by ``P' - Q'`` of the same kind. So ``n dA = (P' - Q') - (P - Q)``:

    ||dA||_2 <= 8 C^2 / n,      ||dA||_F <= 8 sqrt(2) C^2 / n       (triangle inequality).

The spectral bound is tight: with N rows at -C e1 in a third class, class a's other members and
class b's q other members at +C e1, replacing (C e1, a) by (-C e1, b) changes n A by
``4 C^2 (2q + 1) / (q + 1) - O(q / N)`` along e1, which tends to 8 C^2 (``tests/test_gep.py`` builds it).
The Frobenius bound is the triangle inequality and may be loose (up to sqrt 2).

*PCA.* ``n dA = P' - Q'``: ``||dA||_2 <= 4 C^2 / n``, ``||dA||_F <= 4 sqrt(2) C^2 / n``; B = I does not
change (sensitivity 0).

Sensitivities of derived releases (in :class:`PairSensitivity`)
---------------------------------------------------------------
For V with k orthonormal columns, ``||dM V||_F <= min(||dM||_F, sqrt(k) ||dM||_2)``
(``||dM V||_F <= ||dM||_F ||V||_2`` and ``<= ||dM||_2 ||V||_F``). The gradient ``2 M V`` of
``tr(V^T M V)`` therefore moves by at most ``2 min(||dM||_F, sqrt(k) ||dM||_2)``; for FDA's B that is
``8 min(sqrt(2), sqrt(k)) C^2 / n``, the paper's ``C1 / n`` with ``C1 = 8 min(sqrt(2), sqrt(k)) C^2``.
For ``A~ = Phi^T A Phi`` with a released (public) ``Phi``, ``||dA~|| <= ||Phi||_2^2 ||dA||`` in both norms,
and ``||Phi||_2^2 <= 1 / xi`` after regularisation, hence the paper's ``C2 / (n xi)`` with
``C2 = 16 min(sqrt(2), sqrt(k)) C^2`` (FDA).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from .._constraints import NONE, ON_NORM_VIOLATION, ROW_NORM, Interval, Options, Types, check_params, renamed
from .._moments import accumulate
from .._rows import as_label_array, as_numeric_2d
from ..privacy._budget import Relation, as_relation
from ..privacy._clipping import NormViolation, check_row_norm, clip_rows, row_norms, sensitivity_norm
from ..privacy._pipeline import validate_rows

__all__ = [
    "PAIR_TABLE",
    "PairSensitivity",
    "ScatterPair",
    "fda_pair",
    "fda_sensitivity",
    "pca_pair",
    "pca_sensitivity",
    "symmetric_definite_pair",
    "USER_PAIR_TABLE",
]

PairKind = Literal["pca", "fda", "user"]

#: The parameters of :func:`fda_pair` and :func:`pca_pair` (``row_norm`` is checked first by
#: :func:`~dpspectral.privacy._clipping.check_row_norm`, whose message says why it is required).
PAIR_TABLE: dict[str, Any] = {"row_norm": ROW_NORM, "on_norm_violation": ON_NORM_VIOLATION}


@dataclass(frozen=True)
class PairSensitivity:
    """L2 sensitivities of a symmetric pair ``(A, B)`` under a stated neighbouring relation.

    Attributes
    ----------
    a_frobenius, b_frobenius : float
        Bounds on ``||A - A'||_F`` and ``||B - B'||_F`` over neighbouring data sets (>= 0; 0 means
        the matrix does not depend on the data, e.g. ``B = I`` for PCA).
    a_spectral, b_spectral : float
        Bounds on the spectral norms ``||A - A'||_2``, ``||B - B'||_2`` (at most the Frobenius ones).
    relation : Relation
        The neighbouring relation the bounds are derived for.
    """

    a_frobenius: float
    b_frobenius: float
    a_spectral: float
    b_spectral: float
    relation: Relation = Relation.REPLACE_ONE

    def __post_init__(self) -> None:
        for name in ("a_frobenius", "b_frobenius", "a_spectral", "b_spectral"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
                math.isfinite(float(value)) and float(value) >= 0
            ):
                raise ValueError(
                    f"The '{name}' sensitivity must be a float in [0, inf). Got {value!r} instead."
                )
        if self.a_spectral > self.a_frobenius * (1 + 1e-12) or (
            self.b_spectral > self.b_frobenius * (1 + 1e-12)
        ):
            raise ValueError(
                "A spectral-norm sensitivity cannot exceed the Frobenius one (||M||_2 <= ||M||_F). "
                f"Got a=({self.a_spectral!r}, {self.a_frobenius!r}), "
                f"b=({self.b_spectral!r}, {self.b_frobenius!r}) (spectral, Frobenius)."
            )
        object.__setattr__(self, "relation", as_relation(self.relation))

    @staticmethod
    def block(frobenius: float, spectral: float, k: int) -> float:
        """Bound on ``||dM V||_F`` for V with k orthonormal columns."""
        return min(frobenius, math.sqrt(k) * spectral)

    def gradient_b(self, k: int) -> float:
        """Return the Frobenius sensitivity of ``2 B V`` (V: k orthonormal columns)."""
        return 2.0 * self.block(self.b_frobenius, self.b_spectral, k)

    def gradient_a(self, k: int) -> float:
        """Return the Frobenius sensitivity of ``2 A V`` (V: k orthonormal columns).

        Times ``||Phi||_2^2`` for ``2 Phi^T A Phi V``.
        """
        return 2.0 * self.block(self.a_frobenius, self.a_spectral, k)

    def diagonal_b(self, k: int) -> float:
        """L2 sensitivity of ``diag(V^T B V)`` (V: k orthonormal columns).

        ``||diag(V^T dB V)||_2 <= ||V^T dB V||_F <= ||dB||_F`` and ``<= sqrt(k) ||dB||_2``.
        """
        return self.block(self.b_frobenius, self.b_spectral, k)


def fda_sensitivity(n_samples: int, row_norm: float) -> PairSensitivity:
    """Return the sensitivities of the FDA pair for n rows of norm <= ``row_norm`` (module docstring)."""
    C2 = sensitivity_norm(row_norm) ** 2
    return PairSensitivity(
        a_frobenius=8.0 * math.sqrt(2.0) * C2 / n_samples,
        b_frobenius=4.0 * math.sqrt(2.0) * C2 / n_samples,
        a_spectral=8.0 * C2 / n_samples,
        b_spectral=4.0 * C2 / n_samples,
        relation=Relation.REPLACE_ONE,
    )


def pca_sensitivity(n_samples: int, row_norm: float) -> PairSensitivity:
    """Return the sensitivities of the PCA pair (``B = I`` is public: 0)."""
    C2 = sensitivity_norm(row_norm) ** 2
    return PairSensitivity(
        a_frobenius=4.0 * math.sqrt(2.0) * C2 / n_samples,
        b_frobenius=0.0,
        a_spectral=4.0 * C2 / n_samples,
        b_spectral=0.0,
        relation=Relation.REPLACE_ONE,
    )


@dataclass(frozen=True, repr=False)
class ScatterPair:
    """A symmetric-definite pair ``(A, B)`` computed from private data, with its sensitivities.

    **Not a release**: ``A`` and ``B`` are exact functions of the private data. Pass the pair to a
    private solver (:func:`~dpspectral.gep.dpsr`, ...); never publish its matrices.

    Attributes
    ----------
    A, B : ndarray of shape (d, d)
        Symmetric; ``B`` positive semi-definite for the builders here.
    sensitivity : PairSensitivity
    kind : {"pca", "fda", "user"}
    n_samples : int or None
        n (public under replace-one), when the pair comes from rows.
    row_norm : float or None
        The public row bound C used for the sensitivities.
    classes : ndarray or None
        The labels (FDA): the public ``classes`` or, when not given, the labels present (private, like
        A and B: never released as they are).
    notes : tuple of str
    """

    A: np.ndarray
    B: np.ndarray
    sensitivity: PairSensitivity
    kind: PairKind
    n_samples: int | None = None
    row_norm: float | None = None
    classes: np.ndarray | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n_features(self) -> int:
        """The dimension d of A and B (public)."""
        return int(self.A.shape[0])

    @property
    def b_is_public(self) -> bool:
        """True when B does not depend on the data (its sensitivity is 0)."""
        return self.sensitivity.b_frobenius == 0.0

    def __repr__(self) -> str:
        return (
            f"ScatterPair(kind={self.kind!r}, n_features={self.n_features}, "
            f"n_samples={self.n_samples}) [private matrices: not a release]"
        )


# ------------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------------


def _check_rows(X: Any, owner: str, row_norm: float, on_norm_violation: str) -> Any:
    """A float64 2-D array or CSR matrix, validated WHOLE before anything is charged: numeric, 2-D,
    non-empty (n and d are public), finite, and (``on_norm_violation="raise"``) no row above the bound.

    The errors name the kind of problem, never a row or a value (:func:`~dpspectral.privacy._pipeline.
    validate_rows`). The caller's buffer is never written to.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = as_numeric_2d(X, owner).astype(np.float64, copy=False)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{owner}: the data are empty (shape {X.shape}); at least one row and one "
                         "column are required.")
    validate_rows(X, row_norm=row_norm, on_norm_violation=on_norm_violation, owner=owner)
    return X


def _clip(X: Any, C: float) -> Any:
    """Rows clipped per row to C, on a copy. The rows were validated first (:func:`_check_rows`), so
    with ``on_norm_violation="raise"`` none is over the bound and clipping changes nothing."""
    Xc, _ = clip_rows(X, C, on_norm_violation="clip", copy=True, norms=row_norms(X))
    return Xc


def _labels(y: Any, n: int, classes: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """(class index of every row, the classes), before anything is charged.

    With public ``classes`` the class list, and so every shape, comes from them: a class absent from
    the data, a class with one member, or a single class present are all handled by the mechanism (the
    sensitivity proof covers them; module docstring). With ``classes=None`` the labels present in ``y``
    (any number, none included) index the rows: private, never an output here and never a refusal. The
    scatter pair is the same as with any public list holding them (an absent class contributes 0), and
    a caller that publishes the label set releases it first (:mod:`dpspectral.gep._labels`). No message
    quotes a label read from ``y``.
    """
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    y = as_label_array(y, owner)  # 1-D (a column vector raveled), not complex; quotes no label
    if y.shape[0] != n:
        raise ValueError(f"The 'y' parameter of {owner} must hold one label per row of X; the numbers differ "
                         "(neither is quoted: the number of rows is private under add/remove).")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"The 'y' parameter of {owner} contains NaN or infinity.")
    if classes is None:
        cls, idx = np.unique(y, return_inverse=True)
        return idx.ravel(), cls
    cls = check_classes(classes, owner)
    order = np.argsort(cls, kind="stable")
    try:
        pos = np.clip(np.searchsorted(cls[order], y), 0, cls.size - 1)
        ok = np.asarray(cls[order][pos] == y, dtype=bool)
    except (TypeError, ValueError):
        ok = None  # raised below, outside the handler: NumPy's error is not chained as its context
    if ok is None:
        raise TypeError(f"The 'y' parameter of {owner}: the labels cannot be compared with the public "
                        "'classes' (different types).") from None
    if not ok.all():
        raise ValueError(
            f"The 'y' parameter of {owner} contains a label that is not in the public 'classes' "
            f"[{', '.join(_show(c) for c in cls)}]. Which label, and where, is not reported (a fact "
            "about the private data); add it to 'classes' or remove those records."
        )
    return order[pos].ravel(), cls


def check_classes(classes: Any, owner: str) -> np.ndarray:
    """The public list of labels: 1-D, at least 2 distinct labels (public input: may be quoted)."""
    cls = np.asarray(classes)
    if cls.ndim != 1 or cls.size < 2 or np.unique(cls).size != cls.size:
        raise ValueError(f"The 'classes' parameter of {owner} must be a 1-D list of at least 2 "
                         f"distinct labels. Got {classes!r} instead.")
    return cls


def _show(label: Any) -> str:
    """A label as the user wrote it (``2``, ``'cat'``), not as a NumPy scalar's repr."""
    return repr(label.item() if isinstance(label, np.generic) else label)


def _symmetrize(M: np.ndarray) -> np.ndarray:
    out = (M + M.T) / 2.0
    return np.ascontiguousarray(out)


# ------------------------------------------------------------------------------------------------
# builders
# ------------------------------------------------------------------------------------------------


def fda_pair(
    X: Any,
    y: Any,
    *,
    row_norm: float,
    classes: Any = None,
    on_norm_violation: NormViolation = "clip",
) -> ScatterPair:
    """Between-class A and within-class B of Fisher discriminant analysis (Chen et al. §3).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Private rows; never modified (clipping works on a copy).
    y : array-like of shape (n_samples,)
        Private labels (part of each record).
    row_norm : float
        Public bound C on each row's Euclidean norm; rows above it are clipped per row, or rejected
        with ``on_norm_violation="raise"``. Never derived from the data.
    classes : array-like or None
        The public list of labels (at least 2). A class absent from the data, a class with one
        member and a single class present are handled by the mechanism (the sensitivities cover
        them). None: the labels present in ``y`` (any number) index the classes; the pair is the same
        as with any public list that holds them (an absent class contributes 0), so the sensitivities
        hold. ``ScatterPair.classes`` is then private (never released by the solvers);
        :class:`~dpspectral.DPFisherDiscriminant` releases the label set before publishing it.
    on_norm_violation : {"clip", "raise"}

    Returns
    -------
    ScatterPair
        ``A = (1/n) sum_k n_k (mu_k - mu)(mu_k - mu)^T``, ``B = (1/n) sum_k S(C_k)``, with
        :func:`fda_sensitivity`.

    Raises
    ------
    ValueError
        A label outside the public ``classes``,
        NaN/inf, a row over the bound with ``on_norm_violation="raise"``, empty data. No message
        names a row, a value or a label read from ``y``.

    Privacy
    -------
    Nothing is released here. Relation: replace-one (a record is a row and its label, the label in
    the public ``classes``); sensitivities ``||dA||_F <= 8 sqrt(2) C^2 / n``,
    ``||dA||_2 <= 8 C^2 / n``, ``||dB||_F <= 4 sqrt(2) C^2 / n``, ``||dB||_2 <= 4 C^2 / n`` (module
    docstring; they hold for empty and one-member classes). The refusals above are about the input's
    domain (a label outside ``classes``, NaN, a row over the bound with "raise"), not about a
    property of one in-domain record.
    """
    return build_fda_pair(X, y, row_norm=row_norm, classes=classes, on_norm_violation=on_norm_violation,
                          owner="fda_pair")


def build_fda_pair(X: Any, y: Any, *, row_norm: float, classes: Any, on_norm_violation: Any,
                   owner: str) -> ScatterPair:
    """:func:`fda_pair`, with the messages naming ``owner`` (what the user called)."""
    C = check_row_norm(row_norm, owner)
    check_params(PAIR_TABLE, {"row_norm": C, "on_norm_violation": on_norm_violation}, owner)
    X = _check_rows(X, owner, C, on_norm_violation)
    n, d = X.shape
    idx, cls = _labels(y, n, classes, owner)
    Xc = _clip(X, C)
    moments = accumulate(Xc, row_norm=C, on_norm_violation="clip", want_sum=False, want_second=True,
                         owner=owner)
    assert moments.second is not None
    G = moments.second  # sum_i x_i x_i^T of the clipped rows
    K = cls.size
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), idx)), shape=(n, K))
    sums = np.asarray((onehot.T @ Xc).toarray() if sp.issparse(Xc) else onehot.T @ Xc)  # K x d
    # One code path for every class: an absent class has s_k = 0 and contributes 0 (n_k -> max(n_k, 1)),
    # a one-member class has an empty within-class scatter; neither is an error (module docstring).
    counts = np.maximum(np.bincount(idx, minlength=K), 1).astype(float)
    total = sums.sum(axis=0)
    class_part = (sums.T / counts) @ sums  # sum_k s_k s_k^T / n_k
    T = G - np.outer(total, total) / n
    W = G - class_part
    A = _symmetrize((T - W) / n)
    B = _symmetrize(W / n)
    return ScatterPair(
        A=A, B=B, sensitivity=fda_sensitivity(n, C), kind="fda", n_samples=n, row_norm=C,
        classes=cls,
    )


def pca_pair(X: Any, *, row_norm: float, on_norm_violation: NormViolation = "clip") -> ScatterPair:
    """Build the PCA pair of Chen et al.: the centred covariance ``A`` and ``B = I``.

    ``A = (1/n) sum_i (x_i - mu)(x_i - mu)^T``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Private rows; never modified.
    row_norm : float
        Public bound C (rows clipped per row, before centring).
    on_norm_violation : {"clip", "raise"}

    Returns
    -------
    ScatterPair

    Privacy
    -------
    Nothing is released here. Replace-one: ``||dA||_F <= 4 sqrt(2) C^2 / n``,
    ``||dA||_2 <= 4 C^2 / n`` (scatter identity, ``||x - m|| <= 2C``); B is public. The whole input is
    validated here (before any solver charges the ledger); the errors name no row and no value.
    """
    return build_pca_pair(X, row_norm=row_norm, on_norm_violation=on_norm_violation, owner="pca_pair")


def build_pca_pair(X: Any, *, row_norm: float, on_norm_violation: Any, owner: str) -> ScatterPair:
    """:func:`pca_pair`, with the messages naming ``owner`` (what the user called)."""
    C = check_row_norm(row_norm, owner)
    check_params(PAIR_TABLE, {"row_norm": C, "on_norm_violation": on_norm_violation}, owner)
    X = _check_rows(X, owner, C, on_norm_violation)
    n, d = X.shape
    Xc = _clip(X, C)
    moments = accumulate(Xc, row_norm=C, on_norm_violation="clip", want_sum=True, want_second=True,
                         owner=owner)
    assert moments.second is not None and moments.sum is not None
    T = moments.second - np.outer(moments.sum, moments.sum) / n
    return ScatterPair(A=_symmetrize(T / n), B=np.eye(d), sensitivity=pca_sensitivity(n, C), kind="pca",
                       n_samples=n, row_norm=C)


#: The parameters of :func:`symmetric_definite_pair` (A and B are data: checked in the function).
USER_PAIR_TABLE: dict[str, Any] = {
    "sensitivity": Types((PairSensitivity,), "a PairSensitivity"),
    "regularization": [Interval(0, None, "left"), Options(("noise",))],
    "n_samples": [NONE, Interval(1, None, "left", integer=True)],
}


@renamed({"xi": "regularization"})
def symmetric_definite_pair(
    A: Any,
    B: Any,
    *,
    sensitivity: PairSensitivity,
    regularization: float | str = 0.0,
    n_samples: int | None = None,
    check_definite: bool = True,
) -> ScatterPair:
    """A caller-supplied symmetric pair ``(A, B)`` with caller-stated sensitivities.

    Parameters
    ----------
    A, B : array-like of shape (d, d)
        Symmetric (up to rounding: ``||M - M^T||_max <= 1e-10 ||M||_max``); ``B + xi I`` must be
        positive definite.
    sensitivity : PairSensitivity
        Bounds on how much A and B move between neighbouring data sets, for the stated relation.
        The guarantee is only as good as these bounds: they are the caller's responsibility.
    regularization : float or "noise"
        ``regularization`` (xi in the paper): what the solver will add to B (>= 0), for the
        definiteness check. ``"noise"``: the private solvers' noise-scaled ridge (> 0, known only to
        the solver), so no definiteness check is needed or made. The old name ``xi`` still works, with
        a FutureWarning.
    n_samples : int, optional
        The (public) number of records, needed only by ``calibration="paper"`` with explicit
        ``PaperCalibration.constants``.
    check_definite : bool
        Check that ``B + xi I`` is positive definite (one eigenvalue computation).

    Returns
    -------
    ScatterPair

    Raises
    ------
    ValueError
        Non-square or mismatched shapes, NaN/inf, a non-symmetric A or B, or ``B + xi I`` not
        positive definite. The messages quote no entry and no eigenvalue of A or B.

    Privacy
    -------
    Nothing is released here. The checks read A and B: a refusal says only that the pair is malformed
    (NaN, not symmetric) or that ``B + xi I`` is not positive definite, one bit about the caller's
    matrices (a documented caveat, docs/privacy-caveats.md). ``check_definite=False`` skips the
    definiteness check (every private solver clamps the released B's eigenvalues at 0 before adding
    xi, so it never needs B definite; the non-private ``method="sr"`` does).
    """
    return build_user_pair(A, B, sensitivity=sensitivity, regularization=regularization, n_samples=n_samples,
                           check_definite=check_definite, owner="symmetric_definite_pair")


def build_user_pair(A: Any, B: Any, *, sensitivity: PairSensitivity, regularization: float | str,
                    n_samples: int | None, check_definite: bool, owner: str) -> ScatterPair:
    """:func:`symmetric_definite_pair`, with the messages naming ``owner`` (what the user called)."""
    check_params(USER_PAIR_TABLE, {"sensitivity": sensitivity, "regularization": regularization,
                                   "n_samples": n_samples}, owner)
    xi = regularization
    mats = []
    for name, M in (("A", A), ("B", B)):
        M = np.asarray(M)
        if M.dtype.kind not in "biuf":
            raise TypeError(f"The '{name}' parameter of {owner} must be a numeric matrix. Got dtype "
                            f"{M.dtype}.")
        M = M.astype(np.float64, copy=True)
        if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
            raise ValueError(f"The '{name}' parameter of {owner} must be a non-empty square matrix. "
                             f"Got shape {M.shape}.")
        if not np.isfinite(M).all():
            raise ValueError(f"The '{name}' parameter of {owner} contains NaN or infinity.")
        scale = float(np.max(np.abs(M))) if M.size else 0.0
        asym = float(np.max(np.abs(M - M.T)))
        if asym > 1e-10 * max(scale, np.finfo(float).tiny):
            raise ValueError(f"The '{name}' parameter of {owner} must be symmetric (up to a relative "
                             "1e-10 of its largest entry).")
        mats.append(_symmetrize(M))
    A_, B_ = mats
    if A_.shape != B_.shape:
        raise ValueError(f"A and B of {owner} must have the same shape. Got {A_.shape} and {B_.shape}.")
    if check_definite and not isinstance(xi, str):  # "noise": the solver's ridge is > 0
        low = float(np.linalg.eigvalsh(B_)[0])
        if not low + float(xi) > 0:
            raise ValueError(
                f"The 'B' parameter of {owner} is not positive definite after regularisation: B + xi I "
                f"(xi={float(xi):g}) must be positive definite. (Its eigenvalues are not reported: they "
                "are facts about the private data.)"
            )
    return ScatterPair(A=A_, B=B_, sensitivity=sensitivity, kind="user",
                       n_samples=None if n_samples is None else int(n_samples))


for _function, _table in ((fda_pair, PAIR_TABLE), (pca_pair, PAIR_TABLE),
                          (symmetric_definite_pair, USER_PAIR_TABLE)):
    _function.parameter_constraints = dict(_table)  # type: ignore[union-attr]
