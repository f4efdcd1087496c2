"""Rounding in the statistic for the solvers of a scatter pair (:mod:`dpspectral.privacy._rounding`).

The pair's builders (:mod:`dpspectral.gep._scatter`) compute, from ``n`` clipped rows ``x_l`` (norm at
most ``C``), ``G = sum_l x_l x_l^T``, ``s = sum_l x_l``, the class sums ``s_c`` and counts ``n_c``,
``P = sum_c s_c s_c^T / n_c``, and with ``sym(M) = (M + M^T) / 2``:

* PCA: ``A = sym((G - s s^T / n) / n)`` (``B = I``, public);
* FDA: ``A = sym(((G - s s^T / n) - (G - P)) / n)``, ``B = sym((G - P) / n)``.

Expanded in the rows, each entry is a sum of signed terms (``x_li x_lj / n``, ``x_li x_l'j / n^2``,
``x_li x_l'j / (n_c n)``), and each term passes through at most ``k`` roundings (Higham, Lemma 3.1: the
computed entry is off by at most ``gamma_k`` times the same sum with every term replaced by its absolute
value). The sums over the rows take at most ``n + 1`` additions in any order (:class:`Summation`), the
products and quotients one each, the subtractions and ``sym`` one or two; adding a class sum that is 0
(an absent class) is exact, so at most ``n`` class sums count. Hence ``k_A = 2 n + 8`` for PCA;
``k_A = 4 n + 12`` and ``k_B = 3 n + 11`` for FDA. In the Frobenius norm the absolute-value sums are at
most ``|| |x| |x|^T ||_F <= C^2`` a row, ``|| (sum |x_l|) (sum |x_l|)^T ||_F / n <= n C^2`` and
``sum_c || sum_{l in c} |x_l| ||^2 / n_c <= n C^2``, all divided by ``n``: ``M_A = 2 C^2`` (PCA),
``M_A = 4 C^2``, ``M_B = 2 C^2`` (FDA). So ``||computed - exact||_F <= gamma_k M`` for either neighbour.

A solver's release built from the pair adds its own roundings: ``2 M V`` (``V`` public, ``d x k1``
orthonormal columns) ``d`` more and a factor ``||V||_F = sqrt(k1)``; ``diag(V^T B V)`` ``2 d + 1`` more and
``sqrt(k1)``; DPSR's phase 2, ``2 sym(Phi~^T A Phi~) V'`` (``Phi~`` ``d x k1`` and ``V'`` ``k1 x k``,
both public), ``2 d + 2 + k1`` more and ``||Phi~||_F^2 ||V'||_F <= k1 ||Phi~||_2^2 sqrt(k)`` (each column
of ``Phi~`` is a unit vector over ``sqrt(Lambda_j + xi)``). The norms of the public orthonormal
matrices are taken ``1 + 1e-6`` times their exact value (the rounding of the orthonormalisation).

A pair the caller built (:func:`~dpspectral.gep.symmetric_definite_pair`) is not computed here: the
caller's sensitivities cover it, and nothing is widened.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..privacy._clipping import sensitivity_norm
from ..privacy._pipeline import NoisyRelease
from ..privacy._rounding import gamma, unit_roundoff, widen_to_error
from ._scatter import ScatterPair

__all__ = ["PairRounding", "pair_rounding"]

#: The slack on the norm of a computed orthonormal matrix (as :func:`~dpspectral.privacy._rounding.
#: widen_projection` takes it).
_ORTHONORMAL_SLACK = 1.0 + 1e-6


@dataclass(frozen=True)
class PairRounding:
    """The rounding of a pair's computed ``A`` and ``B`` (module docstring): roundings ``k`` a term
    passes through and the absolute-value bound ``M`` (Frobenius), for each; ``M = 0``: not computed here.
    """

    d: int
    a_roundings: int = 0
    a_magnitude: float = 0.0
    b_roundings: int = 0
    b_magnitude: float = 0.0

    @staticmethod
    def _error(roundings: int, magnitude: float, factor: float = 1.0) -> float:
        if not magnitude > 0:
            return 0.0
        return gamma(roundings, unit_roundoff("float64")) * magnitude * factor

    def matrix(self, release: NoisyRelease) -> NoisyRelease:
        """The release of ``A`` or ``B`` itself (named ``"A"`` or ``"B"``), widened."""
        if release.name == "A":
            return widen_to_error(release, self._error(self.a_roundings, self.a_magnitude))
        return widen_to_error(release, self._error(self.b_roundings, self.b_magnitude))

    def gradient_b(self, release: NoisyRelease, k1: int) -> NoisyRelease:
        """The release of ``2 B V`` (``V``: ``d x k1``, orthonormal columns), widened."""
        factor = 2.0 * math.sqrt(k1) * _ORTHONORMAL_SLACK
        return widen_to_error(release, self._error(self.b_roundings + self.d, self.b_magnitude, factor))

    def diagonal_b(self, release: NoisyRelease, k1: int) -> NoisyRelease:
        """The release of ``diag(V^T B V)`` (``V``: ``d x k1``, orthonormal columns), widened."""
        factor = math.sqrt(k1) * _ORTHONORMAL_SLACK**2
        return widen_to_error(release, self._error(self.b_roundings + 2 * self.d + 1, self.b_magnitude,
                                                   factor))

    def whitened_gradient_share(self, sensitivity_per_norm: float, k1: int, k: int) -> float:
        """``r`` of DPSR's phase 2, ``2 sym(Phi~^T A Phi~) V'``, whose sensitivity is
        ``sensitivity_per_norm * ||Phi~||_2^2``: the error carries the same ``||Phi~||_2^2``, so ``r``
        does not depend on it (and holds for the planned bound and for the released one alike)."""
        if not sensitivity_per_norm > 0:
            return 0.0
        factor = 2.0 * k1 * math.sqrt(k) * _ORTHONORMAL_SLACK**3
        error = self._error(self.a_roundings + 2 * self.d + 2 + k1, self.a_magnitude, factor)
        return 2.0 * error / sensitivity_per_norm


def pair_rounding(pair: ScatterPair) -> PairRounding:
    """The rounding of ``pair``'s computed matrices (module docstring), from its public ``n`` and ``C``."""
    d = pair.n_features
    if pair.kind == "user" or pair.n_samples is None or pair.row_norm is None:
        return PairRounding(d)
    n, C2 = int(pair.n_samples), sensitivity_norm(float(pair.row_norm)) ** 2
    if pair.kind == "pca":
        return PairRounding(d, a_roundings=2 * n + 8, a_magnitude=2.0 * C2)
    return PairRounding(d, a_roundings=4 * n + 12, a_magnitude=4.0 * C2, b_roundings=3 * n + 11,
                        b_magnitude=2.0 * C2)
