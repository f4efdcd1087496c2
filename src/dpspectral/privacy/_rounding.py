"""Rounding in the statistic: how far a sum computed in floating point can be from the exact one.

A sensitivity bounds how far the *exact* statistics of two neighbouring data sets are apart. The library
releases *computed* statistics, each off its exact value by rounding, and that error differs between
neighbours: an adversary who chooses the rows can make the computed statistics of two neighbours further
apart than the sensitivity (Casacuberta, Shoemate, Vadhan and Wagaman, CCS 2022). With ``err(X)`` a bound
on ``|computed(X) - exact(X)|`` in the sensitivity's norm, the computed statistics of neighbours are at
most ``Delta + err(X) + err(X')`` apart, and the noise is calibrated to that.

The bound
---------
A sum of ``n`` terms ``t_i`` computed by any sequence of floating-point additions in which no term passes
through more than ``h`` additions (a tree of height ``h``; recursive summation has ``h = n - 1``) is
``sum_i t_i (1 + theta_i)`` with ``|theta_i| <= gamma_h = h u / (1 - h u)`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, Lemma 3.1; ``u`` the unit roundoff: ``2**-53`` in float64,
``2**-24`` in float32), and a term that is itself a product (an entry of ``x x^T``) one rounding more:
``gamma_{h+1}``. So, entry by entry, ``|computed - exact| <= gamma * sum_i |t_i|``, and in the release's
norm (L2 for a sum of rows, Frobenius for ``X^T X``: ``|| |x| |x|^T ||_F = ||x||^2``) the error is at
most ``gamma * sum_i ||t_i|| <= gamma * n * T`` with ``T`` the bound on a term's norm (``C`` for a row
clipped to ``C``, ``C^2`` for its outer product). Counts are integers, exact in floating point below
``2**53`` (float64): no error.

The height ``h`` of each computation path (:class:`Summation`):

* **rows added block by block** (the CPU path: a BLAS rank-``r`` update ``S += B^T B`` per block of ``r``
  rows, in an order inside BLAS that is not known; the streaming and one-shot paths, one block or one row
  at a time; the device path, ``S = S + B^T B``): whatever the order inside a call, the accumulator is one
  of the ``r + 1`` summands of the call, so a term passes through at most ``r`` additions in its own call
  and at most ``r'`` in each later call of ``r'`` rows: ``h <= n`` in all, **for any block sizes and any
  BLAS**; ``n + 1`` with the addition of a group's sum to the total (below).
* **groups summed apart** (dense rows on the CPU: the rank-k updates and the pieces' sums of a group of
  at most ``b`` rows go into buffers that start from zero, and each group is then added to the total):
  for ``X^T X`` ``b`` additions inside the group, one into the total, and one for each later group,
  ``h <= b + ceil(n / b)``; for the sum of the rows, whose pieces (at most ``b`` rows) are summed first,
  ``h <= 2 b + ceil(n / b)`` (``b`` is ``2**14`` rows plus one piece: 17,408 at d = 784).
* **Dask partials**: each of the ``p`` row chunks summed as above, then the ``p`` partials added in a tree
  (of height at most ``p - 1``): ``h <= n + p - 1``.
* **a sum then multiplied by a public matrix** (the noisy power method's ``A X``, ``X`` with ``d`` rows
  and orthonormal columns, the same for both neighbours): each term ``x_i x_i^T X`` passes through ``d``
  more roundings, and in the Frobenius norm ``|| |x| |x|^T |X| ||_F <= ||x||^2 ||X||_F``, so
  ``h = n + d`` (plus the product) with ``T = C^2 ||X||_F``.

Neighbours and ``n``
--------------------
The bound grows with ``n``. Under ``replace_one`` neighbours ``n`` is public and the bound uses it; under
``add_remove`` ``n`` is private, and the bound is taken at the public ``PUBLIC_ROWS`` rows
(:func:`rows_bound`): the noise scale, which the report states, must not depend on ``n``. Above
``PUBLIC_ROWS`` rows the rounding of an add/remove release is therefore covered only up to that many
rows (a residual of relative order ``n^2 u``, stated in ``docs/noise.md``).

The widening is always added (it costs nothing where it is small): a release of sensitivity ``Delta`` and
noise scale ``sigma`` is drawn at ``(1 + r) Delta`` and ``(1 + r) sigma`` with
``r = (err(X) + err(X')) / Delta`` (:func:`widened`), so the noise multiplier, which the accounting event
records, is unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, Protocol, TypeVar, cast

import numpy as np

from ._budget import Relation


class _Calibrated(Protocol):
    """A planned release (:class:`~dpspectral.privacy._pipeline.NoisyRelease`): a scale, a sensitivity."""

    @property
    def scale(self) -> float: ...

    @property
    def sensitivity(self) -> float | None: ...


Release = TypeVar("Release", bound=_Calibrated)
Kind = Literal["products", "sums", "counts"]

__all__ = [
    "PUBLIC_ROWS",
    "Kind",
    "Summation",
    "gamma",
    "rounding_share",
    "rows_bound",
    "statistic_error",
    "unit_roundoff",
    "widen_projection",
    "widen_release",
    "widen_to_error",
    "widened",
]

#: Under ``add_remove`` neighbours (``n`` private) the bound is taken at this public number of rows
#: (float64, ``2**16`` rows: a widening below ``1e-6``).
PUBLIC_ROWS = 1 << 16


def unit_roundoff(dtype: Any) -> float:
    """The unit roundoff ``u`` of a floating dtype (half its machine epsilon): ``2**-53`` for float64."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2.0


def gamma(k: int, u: float) -> float:
    """``gamma_k = k u / (1 - k u)``, rounded up (computed in exact rationals); refused when ``k u >= 1``."""
    if k < 0:
        raise ValueError(f"gamma_k needs k >= 0; got {k}.")
    ku = Fraction(k) * Fraction(u)
    if ku >= 1:
        raise ValueError(
            f"No rounding bound for a sum of this length in this precision (k u = {float(ku):.3g} >= 1): "
            "accumulate in a wider type."
        )
    value = ku / (1 - ku)
    out = float(value)
    return out if Fraction(out) >= value else math.nextafter(out, math.inf)


@dataclass(frozen=True)
class Summation:
    """How a statistic's sum over the rows is computed: public facts of the code path, not of the data.

    Attributes
    ----------
    dtype : str
        The floating type the terms are formed and added in (``"float64"``, ``"float32"``).
    partials : int
        The number of partial sums added together at the end (Dask's row chunks; 1 otherwise).
    block_rows : int or None
        The most rows of a group summed apart, from zero, before the group is added to the total (the
        CPU path's groups of dense rows, ``dpspectral._moments._Groups``): ``h <= b + ceil(n / b)`` for
        ``X^T X``, ``2 b + ceil(n / b)`` for the sum of the rows (its pieces' sums, at most ``b``, are
        added one by one into the group); None: any grouping, any BLAS (``h <= n + 1``).
    followed_by : int
        The roundings after the sum: the sum multiplied by a public matrix of this inner dimension
        (``A X`` with ``X`` of ``d`` rows: ``d`` more, a product and ``d - 1`` additions); 0 otherwise.
    """

    dtype: str = "float64"
    partials: int = 1
    block_rows: int | None = None
    followed_by: int = 0

    def height(self, n: int, products: bool = True) -> int:
        """The most additions a term can pass through in a sum of ``n`` terms (module docstring): of
        ``X^T X`` (``products``) or of the rows."""
        n = max(int(n), 1)
        h = n + 1
        if self.block_rows is not None:
            b = max(int(self.block_rows), 1)
            h = min(h, (1 if products else 2) * b + -(-n // b))
        return h + max(int(self.partials), 1) - 1 + max(int(self.followed_by), 0)


def statistic_error(summation: Summation, n: int, term_bound: float, *,
                    kind: Kind) -> float:
    """A bound on ``||computed - exact||`` for one data set of (at most) ``n`` rows.

    ``term_bound``: the bound ``T`` on each row's term in the release's norm (``C`` for a clipped row,
    ``C^2`` for its outer product). ``kind``: ``"products"`` (``X^T X``: each term one product),
    ``"sums"`` (a sum of rows), ``"counts"`` (integers: exact below ``2**p``, ``p`` the mantissa bits).
    """
    u = unit_roundoff(summation.dtype)
    if kind == "counts":
        if n * max(term_bound, 1.0) < 0.5 / u:  # integers below 2**(p) add exactly
            return 0.0
        return gamma(summation.height(n, products=False), u) * n * term_bound
    products = kind == "products"
    h = summation.height(n, products=products) + (1 if products else 0)
    return gamma(h, u) * n * term_bound


def rows_bound(n: int | None, relation: Relation) -> int:
    """The number of rows the bound is taken at (module docstring, "Neighbours and ``n``").

    ``replace_one`` (``n`` public): ``n``; ``add_remove`` (``n`` private) or ``n`` None (a stream not
    read yet; its plan is restated with ``n``): ``PUBLIC_ROWS``, a public constant, so that nothing of
    the noise's scale (which the report states) depends on the private ``n``.
    """
    if n is None or not relation.n_is_public:
        return PUBLIC_ROWS
    return max(int(n), 1)


def rounding_share(summation: Summation, n: int | None, relation: Relation, term_bound: float,
                   sensitivity: float, *, kind: Kind) -> float:
    """``r = (err(X) + err(X')) / Delta``: the widening of a release of sensitivity ``Delta``.

    Both neighbours are bounded at :func:`rows_bound` rows (the bound grows with ``n``).
    """
    if not sensitivity > 0:
        return 0.0
    err = statistic_error(summation, rows_bound(n, relation), term_bound, kind=kind)
    return 2.0 * err / sensitivity


def widened(scale: float, sensitivity: float, share: float) -> tuple[float, float]:
    """``(scale, sensitivity)`` both times ``1 + share``: the noise multiplier (the event) unchanged."""
    if not share > 0:
        return scale, sensitivity
    factor = 1.0 + share
    return math.nextafter(scale * factor, math.inf), sensitivity * factor  # the multiplier not below plan


def widen_release(release: Release, *, n: int | None, relation: Relation, kind: Kind,
                  term_bound: float | None = None, summation: Summation | None = None) -> Release:
    """``release`` widened for the rounding of its statistic, a sum over ``n`` rows computed by
    ``summation`` (the CPU path by default): scale and sensitivity both times ``1 + r``.

    ``term_bound``: the bound on one row's term in the release's norm; by default the release's
    sensitivity (an upper bound for a sum over rows: one row's term is at most what adding it moves).
    A release without a sensitivity (an uncertified paper calibration) is returned as it is.
    """
    sensitivity = release.sensitivity
    if sensitivity is None or not sensitivity > 0:
        return release
    share = rounding_share(summation or Summation(), n, relation,
                           sensitivity if term_bound is None else term_bound, sensitivity, kind=kind)
    scale, widened_sensitivity = widened(release.scale, sensitivity, share)
    out = dataclasses.replace(cast(Any, release), scale=scale, sensitivity=widened_sensitivity)
    return cast(Release, out)


def widen_projection(release: Release, *, n: int | None, relation: Relation, row_norm: float, d: int | None,
                     columns: int, summation: Summation | None = None) -> Release:
    """``release`` of ``sum_i x_i x_i^T W`` (rows of norm ``<= row_norm``, ``W`` a public ``d x columns``
    matrix with orthonormal columns, the same for both neighbours), widened for its rounding.

    However it is grouped (``(X^T X) W`` or ``X^T (X W)``), each term passes through the ``n`` roundings
    of the sum over rows and the ``d`` of the product with ``W`` (module docstring), and its entrywise
    absolute value has Frobenius norm at most ``||x||^2 ||W||_F = row_norm^2 sqrt(columns)`` (times
    ``1 + 1e-6`` for the rounding of ``W``'s orthonormalisation). ``d`` None (not known yet: a plan
    restated once it is) counts no product.
    """
    summation = dataclasses.replace(summation or Summation(), followed_by=d or 0)
    term = row_norm**2 * math.sqrt(columns) * (1.0 + 1e-6)
    return widen_release(release, n=n, relation=relation, kind="products", term_bound=term,
                         summation=summation)


def widen_to_error(release: Release, error: float) -> Release:
    """``release`` widened for a computed statistic within ``error`` of its exact value (in the
    sensitivity's norm) for either neighbour: ``r = 2 error / Delta``, scale and sensitivity both times
    ``1 + r`` (:func:`widened`). For a statistic that is not one sum over the rows (a difference of
    such sums, a product of one by a public matrix, a quotient by a public count): its caller derives
    ``error = gamma_k * M``, ``k`` the most roundings one term of the exact expression passes through and
    ``M`` the norm of the same expression with every term replaced by its absolute value (Higham,
    Lemma 3.1, as in the module docstring). A release without a sensitivity is returned as it is.
    """
    sensitivity = release.sensitivity
    if sensitivity is None or not sensitivity > 0 or not error > 0:
        return release
    scale, widened_sensitivity = widened(release.scale, sensitivity, 2.0 * error / sensitivity)
    out = dataclasses.replace(cast(Any, release), scale=scale, sensitivity=widened_sensitivity)
    return cast(Release, out)
