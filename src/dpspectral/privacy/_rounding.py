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
  at a time; the mini-batch and stochastic methods' device sums, ``S = S + B^T B``): whatever the order
  inside a call, the accumulator is one of the ``r + 1`` summands of the call, so a term passes through
  at most ``r`` additions in its own call and at most ``r'`` in each later call of ``r'`` rows:
  ``h <= n`` in all, **for any block sizes and any BLAS**; ``n + 1`` with the addition of a group's sum
  to the total (below).
* **groups summed apart** (every CPU path, ``dpspectral._moments._Groups``: the rank-k updates and the
  pieces' sums of a group of rows go into buffers that start from zero, and each group is then added to
  the total; a group is closed once it holds ``s = 2**14`` rows, so it holds fewer than ``b`` rows, ``b``
  being ``s`` plus one piece: 17,408 rows at d = 784, at most ``2**14 + 2**18`` at d = 1): a term passes
  through at most ``b`` additions inside its group (its piece's product or sum from zero, then one into
  its run of pieces, one into the group and one per later piece or run: fewer than the group's rows),
  one into the total and one for each later group, of which there are fewer than ``n / s``:
  for ``X^T X`` ``h <= b + ceil(n / s)``, for the sum of the rows, counted twice over the group,
  ``h <= 2 b + ceil(n / s)``. The dense and the sparse rows, in memory or streamed, are summed so, and
  so are the scaler's sums and sums of squares and the GEP moments' class sums
  (``dpspectral._moments.sum_in_groups``: the sums of squares bounded as ``X^T X``).
* **groups on a device** (``dpspectral._moments.device_summation``): each block on the device cut into
  pieces of at most ``s = 2**14`` rows, each piece's ``B^T B`` and sum (a product from zero: fewer than
  its rows of additions, in any order) into the group's buffer, the group added to the total once it
  holds ``s`` rows: fewer than ``b = 2 s`` rows a group at every width, ``h <= b + ceil(n / s)`` (and
  ``2 b + ceil(n / s)`` for the sum of the rows) as above. The piece and group sizes are constants, the
  same for neighbours. The distributed sites sum their rows on the CPU, in the groups above.
* **Dask partials**: each of the ``p`` row chunks summed in groups as above, to a partial, then the
  partials added in a tree whose combines take at most ``f`` partials each (``split_every=4``): at most
  ``f - 1`` additions at each of its ``ceil(log_f p)`` levels, and one more for slack (counted at
  ``max(p, n)`` partials, so that a bound taken at a public ``n`` does not depend on how the rows are
  chunked); partials added in an order not known: ``p - 1``.
* **a sum then multiplied by a public matrix** (the noisy power method's ``A X``, ``X`` with ``d`` rows
  and orthonormal columns, the same for both neighbours): each term ``x_i x_i^T X`` passes through ``d``
  more roundings, and in the Frobenius norm ``|| |x| |x|^T |X| ||_F <= ||x||^2 ||X||_F``, so
  ``h = n + d`` (plus the product) with ``T = C^2 ||X||_F``.

Neighbours and ``n``
--------------------
The bound grows with ``n``. Under ``replace_one`` neighbours ``n`` is public and the bound uses it; under
``add_remove`` ``n`` is private, and the bound is taken at a public number of rows that depends only on
public facts, how the statistic is summed and the release's bounds (:func:`public_rows`): the noise
scale, which the report states, must not depend on ``n``. For a path summed in groups in float64 it is
the largest power of two up to ``PUBLIC_ROWS = 2**28`` rows at which the release's widening stays within
``MAX_WIDENING`` (0.5 %): ``2**28`` rows for ``X^T X`` at 8 features or more and for the sum of the rows
at 16 or more (a widening of about ``2e-3`` and ``3e-3`` at 784), fewer at smaller widths, whose groups
hold more rows (``2**25`` at one feature), and for a product with many public columns (the noisy power
method's ``A X``); a device's groups give ``2**28`` rows at every width (about ``2.9e-3`` and
``4.9e-3``). A path whose height grows with ``n`` (a sum not known to be grouped, float32) keeps
``UNGROUPED_PUBLIC_ROWS = 2**16`` rows (a widening below ``1e-6`` in float64). Above its
public number of rows the rounding of an add/remove release is covered only up to that many rows (a
residual stated in ``docs/noise.md``).

The widening is always added (it costs nothing where it is small): a release of sensitivity ``Delta`` and
noise scale ``sigma`` is drawn at ``(1 + r) Delta`` and ``(1 + r) sigma`` with
``r = (err(X) + err(X')) / Delta`` (:func:`widened`), so the noise multiplier, which the accounting event
records, is unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
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
    "MAX_WIDENING",
    "Summation",
    "UNGROUPED_PUBLIC_ROWS",
    "gamma",
    "public_rows",
    "rounding_share",
    "rows_bound",
    "statistic_error",
    "unit_roundoff",
    "widen_projection",
    "widen_release",
    "widen_to_error",
    "widened",
]

#: Under ``add_remove`` neighbours (``n`` private) the bound of a path summed in groups in float64 is taken
#: at most at this public number of rows (:func:`public_rows`: a widening of about ``2e-3`` at d = 784).
PUBLIC_ROWS = 1 << 28

#: ... and of a path whose height grows with ``n`` (summed in any order, in float32) at this
#: many (float64: a widening below ``1e-6``; at ``2**28`` rows it would be many times the noise).
UNGROUPED_PUBLIC_ROWS = 1 << 16

#: The most widening :func:`public_rows` accepts for a grouped path: its public rows are the largest power
#: of two (up to ``PUBLIC_ROWS``) whose widening stays within it.
MAX_WIDENING = 0.005


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
        The most rows of a group summed apart, from zero, before the group is added to the total
        (``dpspectral._moments._Groups``): ``h <= b + ceil(n / s)`` for ``X^T X``,
        ``2 b + ceil(n / s)`` for the sum of the rows (``s``: ``group_rows``); None: any grouping, any
        BLAS (``h <= n + 1``).
    followed_by : int
        The roundings after the sum: the sum multiplied by a public matrix of this inner dimension
        (``A X`` with ``X`` of ``d`` rows: ``d`` more, a product and ``d - 1`` additions); 0 otherwise.
    group_rows : int or None
        The fewest rows of every group but the last (a group is added to the total once it holds this
        many): at most ``ceil(n / s)`` groups. None: ``block_rows``.
    tree : int
        The most partials each combine of the tree that adds the ``partials`` takes (Dask's
        ``split_every``): ``(tree - 1) ceil(log_tree p) + 1`` additions, counted at ``max(p, n)``
        partials; 0: added in any order (``p - 1``).
    """

    dtype: str = "float64"
    partials: int = 1
    block_rows: int | None = None
    followed_by: int = 0
    group_rows: int | None = None
    tree: int = 0

    @property
    def grouped(self) -> bool:
        """Whether the height grows with ``n / s`` rather than ``n`` (rows summed in groups)."""
        return self.block_rows is not None

    def height(self, n: int, products: bool = True) -> int:
        """The most additions a term can pass through in a sum of ``n`` terms (module docstring): of
        ``X^T X`` (``products``) or of the rows."""
        n = max(int(n), 1)
        h = n + 1
        if self.block_rows is not None:
            b = max(int(self.block_rows), 1)
            s = max(int(self.group_rows or b), 1)
            h = min(h, (1 if products else 2) * b + -(-n // s))
        p = max(int(self.partials), 1)
        if p > 1:
            h += _tree_height(max(p, n), int(self.tree)) if self.tree > 1 else p - 1
        return h + max(int(self.followed_by), 0)


def _tree_height(leaves: int, fan_in: int) -> int:
    """``(fan_in - 1) ceil(log_fan_in leaves) + 1``: the most additions a leaf passes through in a tree
    whose nodes add at most ``fan_in`` children each, in any order, plus one for slack."""
    levels = 0
    while leaves > 1:
        leaves = -(-leaves // fan_in)
        levels += 1
    return (fan_in - 1) * levels + 1


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


def public_rows(summation: Summation | None = None, kind: Kind = "sums", ratio: float = 1.0) -> int:
    """The public number of rows the bound of an add/remove release is taken at (module docstring).

    For a path summed in groups in float64: the largest power of two up to ``PUBLIC_ROWS`` at which the
    widening of a release of this ``kind`` whose term bound is ``ratio`` times its sensitivity stays
    within ``MAX_WIDENING`` (``UNGROUPED_PUBLIC_ROWS`` at the least); for any other path (``summation``
    None: not known to be grouped) ``UNGROUPED_PUBLIC_ROWS``. A function of public facts only: the
    path, the release's kind and its bounds.
    """
    if summation is None or not summation.grouped or summation.dtype != "float64":
        return UNGROUPED_PUBLIC_ROWS
    return _grouped_public_rows(summation, kind, float(ratio))


@functools.lru_cache(maxsize=256)
def _grouped_public_rows(summation: Summation, kind: Kind, ratio: float) -> int:
    rows = PUBLIC_ROWS
    while rows > UNGROUPED_PUBLIC_ROWS and 2.0 * statistic_error(summation, rows, ratio,
                                                                  kind=kind) > MAX_WIDENING:
        rows //= 2
    return rows


def rows_bound(n: int | None, relation: Relation, summation: Summation | None = None, *,
               kind: Kind = "sums", ratio: float = 1.0) -> int:
    """The number of rows the bound is taken at (module docstring, "Neighbours and ``n``").

    ``replace_one`` (``n`` public): ``n``; ``add_remove`` (``n`` private) or ``n`` None (a stream not
    read yet; its plan is restated with ``n``): :func:`public_rows` of ``summation``, ``kind`` and
    ``ratio`` (the term bound over the sensitivity), a function of public facts only, so that nothing
    of the noise's scale (which the report states) depends on the private ``n``.
    """
    if n is None or not relation.n_is_public:
        return public_rows(summation, kind, ratio)
    return max(int(n), 1)


def rounding_share(summation: Summation, n: int | None, relation: Relation, term_bound: float,
                   sensitivity: float, *, kind: Kind) -> float:
    """``r = (err(X) + err(X')) / Delta``: the widening of a release of sensitivity ``Delta``.

    Both neighbours are bounded at :func:`rows_bound` rows (the bound grows with ``n``): under
    ``add_remove`` the public rows of ``summation``'s path.
    """
    if not sensitivity > 0:
        return 0.0
    rows = rows_bound(n, relation, summation, kind=kind, ratio=term_bound / sensitivity)
    err = statistic_error(summation, rows, term_bound, kind=kind)
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
