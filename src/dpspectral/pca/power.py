"""The private (noisy) power method of Hardt and Roth (STOC 2013) and Hardt and Price (NIPS 2014).

Row-level variant (``../shared/papers/spec-pca-gep.md`` §B.5, DERIVED): the scatter matrix of the
clipped rows ``A = sum_i c(x_i) c(x_i)^T`` is computed once (in chunks); from a random orthonormal
start ``X_0`` (d x p), every iteration releases ``Y_l = A X_{l-1} + G_l`` with ``G_l`` i.i.d.
``N(0, sigma^2)`` and continues from ``X_l = QR(Y_l)``. Everything after a release reads only released
quantities (``X_l`` is a function of ``Y_l``), so the L releases compose adaptively.

Sensitivity of one iteration (rows of norm <= C after clipping; X orthonormal, ``||X||_2 = 1``)
--------------------------------------------------------------------------------------------
``||M X||_F <= ||M||_F ||X||_2 = ||M||_F`` for every d x d matrix M, so

* replace x by y: ``||(x x^T - y y^T) X||_F <= ||x x^T - y y^T||_F <= sqrt(2) C^2`` (because
  ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``; tight for orthogonal x, y of
  norm C lying in the span of X);
* add/remove x: ``||x x^T X||_F = ||x|| ||X^T x|| <= C^2`` (tight for x in the span of X).

The bound does not depend on the iteration or on ``X_{l-1}`` (which is the same for both neighbours:
it is computed from earlier releases), so each iteration is a Gaussian mechanism with multiplier
``s = sigma / Delta`` and the run is ``SelfComposedDpEvent(GaussianDpEvent(s), L)``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Literal

import dp_accounting
import numpy as np

from .._progress import progress
from .._validation import as_generator, check_mechanism_inputs, check_n_components
from ..linalg import fix_signs, orthonormalize
from ..moments import accumulate, n_features_of
from ..privacy.accounting import Accountant, calibrate, certify_release
from ..privacy.budget import Relation
from ..privacy.clipping import NormViolation, sensitivity_norm
from ..privacy.pipeline import charge
from ..results import SubspaceResult

__all__ = ["hardt_price_sigma", "noisy_power"]

Calibration = Literal["tight", "paper"]

_OWNER = "noisy_power"
_RELATIONS = (Relation.REPLACE_ONE, Relation.ADD_REMOVE)


def _iteration_sensitivity(relation: Relation, row_norm: float) -> float:
    """L2 (Frobenius) sensitivity of ``A X`` for orthonormal X (see the module docstring)."""
    return (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * row_norm**2


def _events(noise_multiplier: float, n_iter: int) -> list[dp_accounting.DpEvent]:
    return [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), n_iter)]


def hardt_price_sigma(epsilon: float, delta: float, block_size: int, n_iter: int) -> float:
    """Hardt and Price's per-iteration noise scale ``sqrt(4 p L ln(1/delta)) / epsilon``.

    RECONSTRUCTED from memory in the spec (§B.5; no copy of the paper was available): check against
    the paper if one turns up. In the paper it multiplies ``||X_{l-1}||_inf`` (entry-level
    neighbours); the row-level variant here multiplies the row-level sensitivity instead.
    """
    return math.sqrt(4.0 * block_size * n_iter * math.log(1.0 / delta)) / epsilon


def _check_int(value: Any, name: str, low: int, high: int | None, owner: str) -> int:
    bounds = f"[{low}, {'inf' if high is None else high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"The '{name}' parameter of {owner} must be an int in {bounds}. Got {value!r} instead."
        )
    if not low <= int(value) <= (math.inf if high is None else high):
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in {bounds}. Got {value!r} instead."
        )
    return int(value)


def _check_block_size(block_size: Any, k: int, d: int | None, owner: str) -> int:
    if block_size is None:
        return k
    high = "n_features" if d is None else f"n_features={d}"
    message = (
        f"The 'block_size' parameter of {owner} must be None or an int in [k={k}, {high}]. "
        f"Got {block_size!r} instead."
    )
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral):
        raise TypeError(message)
    if not k <= int(block_size) <= (math.inf if d is None else d):
        raise ValueError(message)
    return int(block_size)


def noisy_power(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    n_iter: int = 20,
    block_size: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Private power iteration (Hardt and Roth 2013; Hardt and Price 2014), row-level variant.

    ``A = sum_i c(x_i) c(x_i)^T`` for the rows clipped to norm C; ``X_0`` a random orthonormal
    d x p matrix (p = ``block_size``, default k); for ``l = 1..L`` (L = ``n_iter``)::

        Y_l = A X_{l-1} + G_l,   G_l i.i.d. N(0, sigma^2) of shape (d, p),   X_l = QR(Y_l)

    The result is the top-k left singular subspace of the last release ``Y_L`` (ordered by singular
    value, signs fixed). For ``p = k`` it spans the same subspace as the paper's ``X_L``; for
    ``p > k`` it is a Rayleigh-Ritz-like choice within the released block instead of the paper's
    first k columns of ``X_L``. Both are post-processing of released quantities. Eigenvalues are
    not released (``values=None``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), np.memmap, sparse matrix, Dask array, or
        an iterable of row blocks
        The private data. Never modified. Read once (``A`` is computed in chunks).
    k : int
        Number of components, in [1, n_features].
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).
    row_norm : float
        Public bound C on the Euclidean norm of each row; rows above it are clipped per row, or
        rejected with ``on_norm_violation="raise"``. Never derived from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): the smallest per-iteration noise multiplier whose L-fold composition
        is (epsilon, delta)-DP under the exact Gaussian accountant. ``"paper"``: Hardt and Price's
        ``sigma = sqrt(4 p L ln(1/delta)) / epsilon`` (recalled from memory in the spec, not checked
        against the paper) times the row-level sensitivity; the accountant certifies what it gives
        (an :class:`UncertifiedPrivacyWarning` when that is not the requested epsilon).
    n_iter : int
        Number of iterations L >= 1 (public; never computed from the spectrum). The noise grows
        like ``sqrt(L)``; convergence needs about ``log(d) / log(lambda_k / lambda_{k+1})``.
    block_size : int, optional
        Block size p in [k, n_features] (default k).
    accountant : Accountant, optional
        Ledger to spend against; the run is refused before any noise is drawn if it would exceed
        the ceiling.
    random_state : None, int, SeedSequence or Generator
    on_norm_violation : {"clip", "raise"}
    show_progress : bool or None
        Progress bars over blocks and iterations (None: on a terminal, for long work).

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); ``values`` None; diagnostics ``noise_std``,
        ``noise_multiplier``, ``sensitivity``, ``n_iter``, ``block_size``.

    Privacy
    -------
    Relation: replace-one (default) or add/remove. Each iteration releases ``Y_l``, whose
    Frobenius (L2) sensitivity for a fixed orthonormal ``X_{l-1}`` is ``sqrt(2) C^2`` under
    replace-one (``||(x x^T - y y^T) X||_F <= ||x x^T - y y^T||_F ||X||_2`` and
    ``||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 C^4``) and ``C^2`` under add/remove
    (``||x x^T X||_F = ||x|| ||X^T x|| <= C^2``). ``X_{l-1}`` is computed from earlier releases (and
    the data-independent start), so it is the same for both neighbours and the L releases compose
    adaptively. Event: ``SelfComposedDpEvent(GaussianDpEvent(sigma / Delta), L)``. The final SVD
    is post-processing of ``Y_L``. The data are read (an in-memory input validated whole: finite,
    and within the bound with ``on_norm_violation="raise"``) before the ledger is charged, so a
    refusal costs nothing; a failure after the charge is a failed release that stays charged.
    ``random_state`` is secret (it draws the noise).
    """
    owner = _OWNER
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=owner, allowed_relations=_RELATIONS,
    )
    L = _check_int(n_iter, "n_iter", 1, None, owner)
    d_known = n_features_of(X)
    if d_known is not None:
        k = check_n_components(k, d_known, owner, name="k")
    else:
        k = _check_int(k, "k", 1, None, owner)
    p = _check_block_size(block_size, k, d_known, owner)
    rng = as_generator(random_state)

    # Plan every release before reading the data or drawing any randomness.
    sens = _iteration_sensitivity(rel, sensitivity_norm(C))
    notes: list[str] = []
    if calibration == "tight":
        s = calibrate(
            lambda m: dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(m), L),
            budget.epsilon, budget.delta, relation=rel,
        )
    else:
        s = hardt_price_sigma(budget.epsilon, budget.delta, p, L)
        notes.append(
            "Private power method with Hardt and Price's sigma = sqrt(4 p L ln(1/delta))/epsilon "
            "(constant recalled from memory in the spec, not checked against the paper) times the "
            "row-level sensitivity; certified only for the epsilon the accountant confirms."
        )
    events = _events(s, L)
    noise_std = s * sens
    if accountant is not None:
        accountant.check(events[0], rel)  # fail fast, before reading the data

    moments = accumulate(X, row_norm=C, on_norm_violation=on_norm_violation, want_sum=False,
                         want_second=True, owner=owner, show_progress=show_progress)
    d, n = moments.d, moments.n
    k = check_n_components(k, d, owner, name="k")
    p = _check_block_size(block_size, k, d, owner)
    assert moments.second is not None
    A = moments.second

    # The pass above read (and, for an in-memory input, validated) every row before the charge.
    with charge(accountant, events, rel, owner):
        Xl = orthonormalize(rng.standard_normal((d, p)))
        Y = Xl
        for _ in progress(range(L), total=L, desc=owner, enabled=show_progress, min_total=50):
            Y = A @ Xl
            Y += rng.normal(0.0, noise_std, size=(d, p))
            Xl = orthonormalize(Y)
    # Post-processing of the last release: its top-k left singular vectors, ordered.
    U, _, _ = np.linalg.svd(Y, full_matrices=False)
    components = fix_signs(U[:, :k])

    report = certify_release(
        events, mechanism=owner, budget=budget, relation=rel, calibration=calibration,
        notes=notes, stacklevel=3,
    )
    diagnostics: dict[str, Any] = {
        "noise_std": noise_std,
        "noise_multiplier": s,
        "sensitivity": sens,
        "n_iter": L,
        "block_size": p,
    }
    return SubspaceResult(
        components=components,
        values=None,
        privacy=report,
        n_samples=float(n) if rel.n_is_public else None,
        diagnostics=diagnostics,
    )
