"""Private-Covariance-LRF (Upadhyay, NeurIPS 2018, Appendix F, Figure 7; Theorem 49 / Corollary 4).

Rows ``a_1, a_2, ...`` of a matrix A (n_features columns) arrive one at a time; the state is the turnstile
Priv2 sketch pair (Figure 6, :mod:`.streaming`) of the covariance ``C = A^T A`` (n_features x n_features):
a row a adds the rank-one ``a a^T`` to C, i.e. ``Y_c += a (a^T Phi)`` and ``Z += (S a) a^T``. The release is
the rank-k factorization of C (spec §6, ``../shared/papers/spec-lowrank.md``), with target
``||A^T A - M_k||_F <= (1 + alpha) ||A^T A - [A^T A]_k||_F + O(sqrt(n k) sigma)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._constraints import ON_NORM_VIOLATION, ROW_NORM, Constraint, Interval, validated
from .._rows import as_numeric_array, not_finite_error
from .._validation import check_mechanism_inputs
from ..privacy._accounting import Accountant
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, clip_rows, sensitivity_norm
from ..privacy._pipeline import ReleasePlan, validate_rows
from ..privacy._template import RunSettings
from ._factorization import (
    PRIVATE_LRF_TABLE,
    Calibration,
    FrobeniusNoise,
    _seed,
    check_matrix,
    check_rank,
    frobenius_release,
)
from ._one_call import state_keywords
from ._sketch_options import Sketch, failure_share_of, sketch_keywords, sketch_options, sketch_plan
from ._sketches import SketchSizes
from ._streaming import NONE, SketchState, _shrink_sigma, charge_sketch_noise, sketch_state_plan
from ._subspace import GramResult

__all__ = ["CovarianceLRF", "covariance_lrf"]

#: The parameters of the covariance variant: those of every private factorization but ``bound`` (here
#: derived from ``row_norm``), and the row bound.
_TABLE: dict[str, Constraint | list[Constraint] | None] = {
    **{name: c for name, c in PRIVATE_LRF_TABLE.items() if name != "bound"},
    "row_norm": ROW_NORM,
    "on_norm_violation": ON_NORM_VIOLATION,
}


class CovarianceLRF(SketchState):
    """Private-Covariance-LRF: streaming rank-k factorization of ``A^T A`` from rows inserted one at a time.

    The state is ``Y_c = C Phi + N1`` (d x t) and ``Z = S C + N2`` (v x d) for ``C = sum_r a_r a_r^T`` over
    the (clipped) rows inserted so far, with Gaussian noise drawn at initialisation. A release runs the
    Private-Frobenius-LRF solve (:func:`~dpspectral.lowrank._factorization.frobenius_release`) on the state:
    ``U diag(S) V^T`` approximates C; C is symmetric, so U and V agree up to signs and noise.

    Parameters
    ----------
    n_features : int
        d, the number of columns of A (public).
    rank : int
        k in [1, d].
    epsilon, delta : float
        The target; delta in (0, 1).
    relation : {"add_remove", "replace_one"}
        Neighbouring data sets: one row added or removed (default), or one row replaced.
    row_norm : float
        Public bound C_r on the Euclidean norm of every row.
    on_norm_violation : {"clip", "raise"}
        Rows above ``row_norm`` are scaled down to it (default) or refused with a ValueError.
    calibration : {"tight", "paper"}
        As in :func:`~dpspectral.lowrank._factorization.frobenius_noise`.
    alpha : float in (0, 1)
        Default sketch sizes ``t = ceil(k/alpha)``, ``v = ceil(k/alpha^2)``, capped by d.
    sketch : Sketch, optional
        The sketches (:class:`~dpspectral.lowrank.Sketch`): t the columns of ``Y_c = C Phi`` (Phi:
        d x t), v the rows of ``Z = S C`` (S: v x d) of the rank-k solve, both at most d; the seed is
        not shown before the state is published.
    accountant : Accountant, optional
        Ledger; the release is recorded at initialisation, before any noise is drawn.
    random_state : None, int, SeedSequence, Generator or "secure"
        Source of the noise only (secret). ``"secure"``: OS entropy and exact discrete Gaussian noise.

    Attributes
    ----------
    privacy : PrivacyReport
    published : bool
        Whether a snapshot of the state was published (:meth:`release`, :attr:`Y_c`, :attr:`Z`).
    sigma, sensitivity : float
    bound : float
        The Frobenius bound on the change of C between neighbours (see Privacy).

    Privacy
    -------
    Relation ``add_remove`` or ``replace_one`` on the rows of A, each of norm at most ``C_r`` after
    clipping (a per-row map, so neighbours stay neighbours). Sensitivity of C = A^T A in Frobenius norm:
    adding or removing a row a changes C by ``a a^T``, with ``||a a^T||_F = ||a||^2 <= C_r^2``; replacing a by
    a' changes it by ``E = a' a'^T - a a^T`` with
    ``||E||_F^2 = ||a'||^4 + ||a||^4 - 2 (a^T a')^2 <= 2 C_r^4``, so ``||E||_F <= sqrt(2) C_r^2`` (attained
    for orthogonal rows of norm C_r). So neighbouring data sets give Priv2-neighbouring covariances
    with bound ``b = C_r^2`` (add/remove) or ``b = sqrt(2) C_r^2`` (replace-one); C_r is taken with the
    library's rounding slack (:func:`~dpspectral.privacy._clipping.sensitivity_norm`). The Priv2 sketch
    pair then has L2 sensitivity ``b sqrt(c_t + c_v)`` (factor 1 for an identity sketch, t = d or v = d)
    except with probability ``2 delta_s``
    (:func:`~dpspectral.lowrank._factorization.frobenius_noise` with ``bound=b``): events
    ``GaussianDpEvent(sigma / Delta)`` and ``EpsilonDeltaDpEvent(0, 2 delta_s)``, spent at
    initialisation. As for :class:`~dpspectral.lowrank._streaming.TurnstileLRF`, the guarantee covers one
    snapshot of the state, for rows that do not depend on the drawn sketch (non-adaptive stream: the
    sketch is not shown before the state is published): :meth:`release` (and reading :attr:`Y_c` or
    :attr:`Z`) publishes the current snapshot, and a publication after further inserts raises
    :class:`~dpspectral.lowrank._streaming.RepublicationError`. The number of rows inserted is not
    exposed (it is private under ``add_remove``; under ``replace_one`` it is public and reported).
    With ``random_state="secure"`` a publication rounds the state to the secure noise's grid, as for
    :class:`~dpspectral.lowrank._streaming.TurnstileLRF`.
    """

    _change_words = "had rows inserted"
    _instead = "a new state (a new release, charged anew) for new data"

    mechanism = "covariance_lrf"

    @sketch_keywords
    @validated({**_TABLE, "n_features": Interval(1, None, "left", integer=True)}, owner="CovarianceLRF")
    def __init__(
        self,
        n_features: int,
        rank: int,
        *,
        epsilon: float,
        delta: float,
        relation: Relation | str = "add_remove",
        row_norm: float = 1.0,
        on_norm_violation: NormViolation = "clip",
        calibration: Calibration = "tight",
        alpha: float = 0.25,
        sketch: Sketch | None = None,
        accountant: Accountant | None = None,
        random_state: Any = None,
    ) -> None:
        owner = type(self).__name__
        budget, rel, C_r = check_mechanism_inputs(
            epsilon=epsilon,
            delta=delta,
            row_norm=row_norm,
            relation=relation,
            calibration=calibration,
            on_norm_violation=on_norm_violation,
            owner=owner,
            allowed_relations=(Relation.ADD_REMOVE, Relation.REPLACE_ONE),
        )
        d = int(n_features)
        k = check_rank(rank, d, d, owner)
        options, sizes = sketch_plan(sketch, k, alpha, d, d, owner)
        noise, b, plan = self._plan(budget, rel, C_r, d, sizes, calibration=calibration, alpha=float(alpha),
                                    sketch_failure_share=failure_share_of(options))
        self._sketch_seed = _seed(options.seed, owner=owner)
        self.n_features = d
        self.rank = k
        self.sizes = sizes
        self.row_norm = C_r
        self.on_norm_violation: NormViolation = on_norm_violation
        self.relation = rel
        self.bound = b
        self.sigma = noise.sigma
        self.sensitivity = noise.sensitivity
        self._set_sketches(d, d)
        self._Y, self._ZT, self.privacy = charge_sketch_noise(
            plan, RunSettings(accountant, random_state), (d, d), sizes,
            facts={"mechanism": self.mechanism, "budget": budget, "calibration": calibration})
        self._use_grid(self.privacy.noise_source, noise.sigma)
        self._n_rows = 0
        self._publication = NONE

    def _plan(self, budget: PrivacyBudget, rel: Relation, C_r: float, d: int, sizes: SketchSizes, *,
              calibration: str, alpha: float,
              sketch_failure_share: float) -> tuple[FrobeniusNoise, float, ReleasePlan]:
        """The Priv2 noise for the covariance bound b of ``rel`` (class's Privacy section) and its plan."""
        scale = math.sqrt(2.0) if rel is Relation.REPLACE_ONE else 1.0
        b = scale * sensitivity_norm(C_r) ** 2
        note = (f"Rows clipped to norm {C_r:g}; C = A^T A changes by at most {b:.6g} in Frobenius norm "
                f"between {rel.value} neighbours.")
        fro, plan = sketch_state_plan(self.mechanism, budget, rel, sizes, (d, d), bound=b,
                                      calibration=calibration, alpha=alpha,
                                      sketch_failure_share=sketch_failure_share, owner=type(self).__name__,
                                      notes=(note,))
        return fro, b, plan

    def insert(self, row: Any) -> None:
        """Insert one row a (length d): ``C += a a^T`` (after clipping to ``row_norm``)."""
        a = np.asarray(row.toarray() if sp.issparse(row) else row)
        if a.ndim != 1 and not (a.ndim == 2 and a.shape[0] == 1):
            raise ValueError(f"{type(self).__name__}.insert: a row must be 1-D. Got shape {a.shape}.")
        self.insert_many(a.reshape(1, -1))

    def insert_many(self, rows: Any) -> None:
        """Insert the rows of a (b, d) array (dense or sparse), in one batch.

        Rows are checked (finite, d columns) and clipped to ``row_norm`` (or refused with
        ``on_norm_violation="raise"``) before anything is applied: on an error the state is unchanged,
        and the message names no row, value or count. Inserting after a publication makes the state
        unpublishable (class's Privacy section).
        """
        owner = f"{type(self).__name__}.insert_many"
        X = rows.toarray() if sp.issparse(rows) else rows
        X = np.asarray(as_numeric_array(X, owner, name="rows"), dtype=np.float64)  # quotes no cell
        if X.shape[1] != self.n_features:
            raise ValueError(f"{owner}: rows must have shape (b, {self.n_features}). Got {X.shape[1]} "
                             "columns.")
        if X.shape[0] == 0:
            return
        if not np.isfinite(X).all():
            raise not_finite_error(owner)
        Xc, _ = clip_rows(X, self.row_norm, on_norm_violation=self.on_norm_violation, owner=owner)
        Xc = np.asarray(Xc)
        Y = self._Y + Xc.T @ (Xc @ self._Phi)  # C Phi gains a (a^T Phi) per row
        ZT = self._ZT + Xc.T @ (Xc @ self._ST)  # (S C)^T gains a (S a)^T per row
        if not (np.isfinite(Y).all() and np.isfinite(ZT).all()):  # pragma: no cover - needs a huge row_norm
            raise ValueError(f"{owner}: the batch overflows float64 in the sketches. Nothing was applied.")
        self._Y, self._ZT = Y, ZT
        self._n_rows += int(X.shape[0])
        self._changed()

    def release(self, singular_values: str = "shrink") -> GramResult:
        """The rank-k factorization ``A^T A ~ U diag(S) V^T`` from the current state (post-processing).

        A :class:`~dpspectral.lowrank._subspace.GramResult`: ``gram()`` is the d x d approximation of
        ``A^T A``; ``reconstruct(A)`` the data owner's ``A V V^T``; ``reconstruct()`` alone raises.
        Publishes the current snapshot (any number of times); after inserts that follow a publication
        it raises :class:`~dpspectral.lowrank._streaming.RepublicationError`.

        Parameters
        ----------
        singular_values : {"shrink", "raw"}
            As in :meth:`~dpspectral.lowrank.TurnstileLRF.release`.

        Returns
        -------
        GramResult
            U (d, k), S (k,), V (d, k); diagnostics ``t``, ``v``, ``sigma``, ``sensitivity``, ``bound``,
            ``sketch_seed`` and, under ``replace_one`` only, ``n_rows``.
        """
        sigma = _shrink_sigma(singular_values, self.sigma, "CovarianceLRF.release")
        Y, Z = self._published_sketches()
        U, s, V = frobenius_release(Y, Z, self._S, self.rank, sigma)
        diag = self._diagnostics({"bound": self.bound, "sketch_seed": self._sketch_seed})
        if self.relation is Relation.REPLACE_ONE:  # n is public under replace-one only
            diag["n_rows"] = self._n_rows
        return GramResult(U=U, S=s, V=V, privacy=self.privacy, diagnostics=diag)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_features={self.n_features}, rank={self.rank}, t={self.sizes.t}, "
            f"v={self.sizes.v}, {self.relation.value}, epsilon={self.privacy.epsilon:.4g})"
        )


@sketch_keywords
@validated(_TABLE)
def covariance_lrf(
    A: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    relation: Relation | str = "add_remove",
    row_norm: float = 1.0,
    on_norm_violation: NormViolation = "clip",
    calibration: Calibration = "tight",
    alpha: float = 0.25,
    sketch: Sketch | None = None,
    batch_rows: int = 10_000,
    accountant: Accountant | None = None,
    random_state: Any = None,
) -> GramResult:
    """Private-Covariance-LRF in one call: the rows of A inserted in blocks, a rank-k factorization of A^T A.

    The result factorizes the n x n matrix ``A^T A`` (U and V are n x k): a
    :class:`~dpspectral.lowrank._subspace.GramResult`, whose ``gram()`` is that n x n approximation and
    whose ``reconstruct(A)`` is the data owner's ``A V V^T`` (``reconstruct()`` alone raises). Privacy
    as :class:`CovarianceLRF` (row-level, add/remove or replace-one, rows clipped to ``row_norm``). The
    whole matrix is validated (finite; with ``on_norm_violation="raise"``, every row within
    ``row_norm``) before the ledger is charged: a refusal costs nothing and its message names no row.

    Privacy
    -------
    As :class:`CovarianceLRF`: rows clipped to ``row_norm``; one snapshot (the final state) released.
    ``random_state="secure"`` draws the state's noise from the secure source.
    """
    owner = "covariance_lrf"
    sketch = sketch_options(sketch, owner)  # its fields refused under this function's name
    M = check_matrix(A, owner)
    validate_rows(M, row_norm=float(row_norm), on_norm_violation=on_norm_violation, owner=owner)
    state = CovarianceLRF(M.shape[1], k, **state_keywords(CovarianceLRF.__init__, locals()))
    step = max(1, int(batch_rows))
    for a in range(0, M.shape[0], step):
        block = M[a : a + step]
        state.insert_many(block.toarray() if sp.issparse(block) else block)
    return state.release()
