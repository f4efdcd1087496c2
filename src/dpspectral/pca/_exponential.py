"""Pure epsilon-DP PCA through the exponential mechanism, with an exact Bingham sampler that finishes.

Two mechanisms, both pure epsilon-DP (``delta = 0``):

* :func:`ppca` — Chaudhuri, Sarwate and Sinha (NIPS 2012 / JMLR 2013), "PPCA": one unit vector drawn
  with density proportional to ``exp(c v^T A v)``, ``A = sum_i c(x_i) c(x_i)^T`` the scatter matrix of
  the clipped rows (the exponential mechanism with utility ``v^T A v``). For k > 1 the directions are
  drawn one at a time on the orthogonal complement of the earlier ones (jointly accounted, the
  budget split from privately released eigenvalues; the paper's mechanism gives ``epsilon / k`` each).
* :func:`exponential_pca` — Amin, Dick, Kulesza, Munoz Medina and Vassilvitskii (NeurIPS 2019),
  Algorithm 1 restricted to PCA: Laplace-noised eigenvalues (the top k and the sum of the others) and
  k exponential-mechanism directions with deflation; the budget split is a parameter.

Both default to a jointly accounted deflation (the k draws cost ``(k + 1) c C^2``, not
``2 k c C^2``, under replace-one), a split of the directions' budget chosen from privately released
eigenvalues, and an optional choice of coordinates from a privately released diagonal (see "Joint
accounting" below). ``EpsilonSplit(allocation="equal", accounting="per_direction", coordinate_share=0)``
(and, for ppca, ``eigenvalue_share=0``) gives the papers' mechanisms with step-by-step accounting.

The sampler (:class:`BinghamSampler`, :func:`sample_bingham`) draws *exactly* from the vector Bingham
distribution ``p(v) ∝ exp(v^T M v)`` on the unit sphere by rejection from one of two envelopes, chosen
by their (computable) total masses, so that the expected number of proposals stays bounded as the
concentration grows (see ``docs/algorithms/exponential.md`` for the measured acceptance rates):

``"acg"``
    The angular central Gaussian envelope of Kent, Ganeiber and Mardia (2018) with their optimal
    ``b`` (one root-find on the eigenvalues). In the eigenbasis of ``M`` with ``beta_i = m_1 - m_i``
    (so ``beta_1 = 0``), ``Omega = I + 2 B / b``; a proposal is ``y / ||y||`` with
    ``y_i ~ N(0, 1 / omega_i)``. Since ``u^T Omega u = 1 + 2 z / b`` with ``z = u^T B u >= 0`` and
    ``max_z exp(-z) (1 + 2 z / b)^(d/2) = exp(-(d - b)/2) (d/b)^(d/2) =: M_b`` (at ``z = (d - b)/2``;
    valid for every ``0 < b <= d``), ``exp(-u^T B u) <= M_b (u^T Omega u)^(-d/2)`` on the sphere:
    accepting with probability ``exp(-z) (1 + 2z/b)^(d/2) / M_b`` is exact rejection sampling. Its
    acceptance tends to about ``sqrt(2 / (e d))`` at high concentration (0.086 at d = 100).
``"tangent"``
    For the concentrated regime: the upper hemisphere ``u_1 > 0`` in the chart ``s = (u_2..u_d)``,
    where ``u^T B u = sum_{i>=2} beta_i s_i^2`` exactly and the surface measure is
    ``ds / sqrt(1 - |s|^2)``. The target on the ball is ``p(s) = exp(-s^T B' s) (1 - |s|^2)^(-1/2)``.
    Envelope, for any ``0 < rho < 1`` and ``0 <= a <= min(1/2, beta_2 / 2)``::

        E(s) = K1 exp(-sum_i (beta_i - a) s_i^2)                      (a Gaussian on all of R^(d-1))
             + K2 (1 - |s|^2)^(-1/2) 1{rho <= |s| < 1}              (the uniform law on a band)
        K1 = exp(-a rho^2) (1 - rho^2)^(-1/2),   K2 = exp(-beta_2 rho^2)

    ``E >= p``: for ``|s| < rho``, ``exp(-a t) (1 - t)^(-1/2)`` is increasing in ``t = |s|^2`` (as
    ``a <= 1/2``), so it is at most K1; for ``|s| >= rho``, ``s^T B' s >= beta_2 |s|^2 >= beta_2
    rho^2``. Both pieces have closed-form masses (a Gaussian integral; the band's surface measure, a
    regularised incomplete beta function) and samplers, so proposals come from the mixture ``E / W``
    and are accepted with probability ``p(s) / E(s)``; the accepted ``s`` is lifted to
    ``u = (+-sqrt(1 - |s|^2), s)`` with a fair random sign (the Bingham law is antipodally
    symmetric). ``rho`` minimises the envelope mass. Its acceptance tends to 1 as ``beta_2`` grows.

Which envelope runs depends on the data (through ``M``), but both are exact, so the *output
distribution* does not: the choice only changes the running time (as does rejection sampling itself:
see the timing caveat in the docs). Proposals are drawn in vectorised batches, taken in order (the
first accepted proposals of a batch are exactly the ones sequential rejection sampling would return),
and capped by ``max_proposals`` per sample: past the cap :class:`BinghamSamplerError` is raised instead
of a hang.

Sensitivities (rows of norm <= C after clipping)
------------------------------------------------
For orthonormal ``V`` (d x j, j >= 1) the utility ``u(X, V) = tr(V^T X^T X V) = sum_i ||V^T x_i||^2``:

* add/remove x: ``u(X + x, V) - u(X, V) = ||V^T x||^2`` lies in ``[0, C^2]``: sensitivity ``C^2`` and
  the utility is *monotone* (adding a row never decreases it, for every V). For monotone utilities
  ``exp(epsilon u / Delta)`` is epsilon-DP (the normaliser moves in the same direction as the score,
  so the two factors of the density ratio cannot both be extreme): ``c = epsilon / C^2``.
* replace x by y: ``||V^T y||^2 - ||V^T x||^2`` lies in ``[-C^2, C^2]``: sensitivity ``C^2`` too, but
  the utility is not monotone and the standard ``exp(epsilon u / (2 Delta))`` is needed:
  ``c = epsilon / (2 C^2)`` (this is CSS12's ``exp((n eps / 2) v^T (X^T X / n) v)`` for C = 1). The
  factor 2 is necessary: a background concentrated on ``x``'s direction and ``v = y / ||y||`` reach
  ``exp(2 c C^2)`` in the limit.

In the deflated steps the utility is ``u^T P^T A P u`` with ``P`` (an orthonormal basis of the
complement of the released directions) a function of earlier releases, hence the same for both
neighbours: the bounds above hold with ``V = P u``, and the steps compose adaptively.

Joint accounting of the deflated directions (ours)
-------------------------------------------------
The k deflated draws have, on the Stiefel manifold, the density
``p_X(V) = prod_j exp(c_j v_j^T A v_j) / Z_j(X, v_<j)``, ``Z_j`` the normaliser of step j on the
complement of ``v_<j`` (``E_u exp(c_j u^T A u)``, u uniform there). For neighbours X, X' (replace x by
y) write ``a_j = (v_j^T x)^2``, ``b_j = (v_j^T y)^2``; V orthonormal gives ``sum a_j, sum b_j <= C^2``.
Then ``log p_X(V) / p_X'(V) = sum_j c_j (a_j - b_j) - sum_j log Z_j(X) / Z_j(X')``: the first sum lies
in ``[-C^2 max c, C^2 max c]``, and each ratio ``Z_j(X) / Z_j(X') = E_{q'_j} exp(c_j ((u^T x)^2 -
(u^T y)^2))`` lies in ``[exp(-c_j C^2), exp(c_j C^2)]``. Hence the k draws together are
``C^2 (max_j c_j + sum_j c_j)``-DP: ``(k + 1) c C^2`` for equal c, against ``2 k c C^2`` by composing
the steps one by one. The bound is attained (background of many copies of y, ``v_1 = x``, the other
v_j orthogonal to x and y: tests/test_exponential.py computes the exact loss). Under add/remove the
first sum lies in ``[0, C^2 max c]`` and the normaliser terms in ``[-C^2 sum c, 0]``: ``C^2 sum_j c_j``,
the same as step by step. A direction with ``c_j = 0`` (uniform on the complement) costs nothing. The
``c_j`` may be chosen from earlier releases (post-processing) as long as the bound equals the planned
``epsilon`` of the directions, which is what the adaptive split does; the event is one
``EpsilonDeltaDpEvent(epsilon_directions, 0)``. ``accounting="per_direction"`` keeps the step-by-step
constants (the papers' accounting).

The adaptive split and the coordinates (post-processing). With ``allocation="adaptive"`` the budget
goes to the first m directions at equal c (the others are free), m maximising the captured energy
predicted from the released eigenvalues (a Bingham draw of concentration c leaks ``(d - j) / (2 c g_j)``
of its mass away from a direction of gap ``g_j``). With ``coordinate_share > 0`` the diagonal
``diag(A) = sum_i x_i * x_i`` is released first with Laplace noise: it moves by ``x * x`` (L1 norm
``||x||^2 <= C^2``) when x is added, so its L1 sensitivity is ``C^2`` (add/remove) and ``2 C^2``
(replace-one). The coordinates holding all but ``COORDINATE_DROP`` of the released total form a
candidate set S; the eigenvalue release then carries the eigenvalues of A and of the block ``A_SS``
(each moves by a non-negative vector of L1 norm ``||x||^2``, resp. ``||x_S||^2``: twice the L1
sensitivity of one), and the directions are drawn inside S only if the split predicted there captures
more than the split predicted in all d coordinates. On data whose energy is spread over the
coordinates (e.g. after a random rotation) nothing is dropped; the price is the diagonal's share.

The eigenvalue release (Laplace): by Cauchy interlacing, adding a row x moves every eigenvalue of
``X^T X`` up by ``a_i >= 0`` with ``sum_i a_i = ||x||^2 <= C^2``. The released vector
``(lambda_1, ..., lambda_k, sum_{i>k} lambda_i)`` therefore moves by a non-negative vector of L1 norm
at most ``C^2`` (add/remove), and by the difference of two such vectors under replace-one (through the
data set without the row): L1 sensitivity ``2 C^2``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import dp_accounting
import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special

from .._constraints import (
    NONE,
    PRIVACY_PARAMETERS,
    Calibration,
    Interval,
    Options,
    Table,
    Types,
    check_params,
    validated,
)
from .._linalg import fix_signs
from .._moments import accumulate, summation_of
from .._options import folded
from .._results import SubspaceResult
from .._rows import n_features_of
from .._validation import as_generator, check_mechanism_inputs, check_n_components
from ..privacy._accounting import Accountant, EpsilonDeltaDpEvent
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, sensitivity_norm
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser
from ..privacy._rounding import Summation, widen_release
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run
from ._inputs import PcaInputs

__all__ = [
    "DEFAULT_MAX_PROPOSALS",
    "BinghamSampler",
    "BinghamSamplerError",
    "EpsilonSplit",
    "exponential_pca",
    "ppca",
    "sample_bingham",
]

Envelope = Literal["auto", "acg", "tangent"]
Allocation = Literal["adaptive", "equal"]
Accounting = Literal["joint", "per_direction"]

#: Default cap on the proposals spent per returned sample before :class:`BinghamSamplerError`.
DEFAULT_MAX_PROPOSALS = 1_000_000

_RELATIONS = (Relation.REPLACE_ONE, Relation.ADD_REMOVE)
_MIN_BATCH = 32
_MAX_BATCH_ELEMENTS = 1 << 21  # proposals x dimension per batch (16 MiB of float64)
# Budgets are shrunk by this relative amount so that the recorded guarantees never add up to more
# than the request through floating-point rounding (e.g. 10 x 0.09 + 0.1 = 1.0000000000000002).
_ROUNDING_GUARD = 1e-12


class _Draws(Protocol):
    """The draws the sampler makes: a NumPy Generator, or a releaser's named draws (secret)."""

    def standard_normal(self, size: Any) -> np.ndarray: ...

    def random(self, size: Any) -> np.ndarray: ...


class BinghamSamplerError(RuntimeError):
    """The Bingham sampler used up ``max_proposals`` proposals per sample without finishing."""


_ENVELOPE = Options(("auto", "acg", "tangent"))
_MAX_PROPOSALS = Interval(1, None, "left", integer=True)
_N_COMPONENTS = Interval(1, None, "left", integer=True)
_SHARE = Interval(0, 1, "left")

#: ppca's eigenvalue share when k > 1 and the allocation is adaptive (the released eigenvalues only
#: steer the split of the directions' budget, so a small share suffices).
PPCA_EIGENVALUE_SHARE = 0.05
#: exponential_pca's eigenvalue share (the eigenvalues are part of its output).
EXPONENTIAL_EIGENVALUE_SHARE = 0.1
#: Default share of epsilon spent on the diagonal of the scatter (the choice of coordinates).
COORDINATE_SHARE = 0.05


@dataclass(frozen=True)
class EpsilonSplit:
    """How :func:`ppca` and :func:`exponential_pca` split epsilon and account for the directions.

    ``epsilon = epsilon_diagonal + epsilon_0 + sum_j epsilon_j``: the Laplace diagonal that proposes
    coordinates (``coordinate_share``), the Laplace eigenvalues (``eigenvalue_share``: ``epsilon_0``)
    and the k directions (``epsilon_j``, split by ``allocation`` or ``vector_shares``). The defaults are
    the library's; ``EpsilonSplit(eigenvalue_share=0, allocation="equal", accounting="per_direction",
    coordinate_share=0)`` is the papers' mechanism with step-by-step accounting (``epsilon / k`` per
    direction).

    Parameters
    ----------
    eigenvalue_share : float in [0, 1) or None, default=None
        ``epsilon_0 / epsilon``. 0 releases no eigenvalues (``values=None``, ``total=None``) and spends
        everything on the directions (then equal parts: the adaptive split and the coordinate step need
        the eigenvalues). None: the method's default (:func:`exponential_pca`: 0.1; :func:`ppca`: 0.05
        when k > 1, the allocation is adaptive and the calibration "tight", else 0, as CSS12's
        mechanism releases no eigenvalues).
    vector_shares : sequence of k positive floats or None, default=None
        (:func:`exponential_pca` only) Relative budgets of the k directions (normalised); given, they
        replace the adaptive split.
    allocation : {"adaptive", "equal"}, default="adaptive"
        ``"adaptive"``: the directions' budget goes, in equal parts, to the first m directions, m chosen
        from the released eigenvalues (post-processing; the others are uniform on the complement, which
        costs nothing). ``"equal"``: all k directions, equal parts (the papers' split). Needs
        ``eigenvalue_share > 0``.
    accounting : {"joint", "per_direction"}, default="joint"
        ``"joint"``: the k draws certified together, ``C^2 (max c + sum c)`` under replace-one (module
        docstring); ``"per_direction"``: ``2 C^2 c_j`` each (step by step). The same under add/remove.
        ``calibration="paper"`` always uses per-direction budgets.
    coordinate_share : float in [0, 1), default=0.05
        Share of epsilon for a Laplace release of ``diag(A)`` that proposes coordinates to draw the
        directions in (used only where predicted to help; 0 disables it).
    """

    eigenvalue_share: float | None = None
    vector_shares: Sequence[float] | np.ndarray | None = None
    allocation: Allocation = "adaptive"
    accounting: Accounting = "joint"
    coordinate_share: float = COORDINATE_SHARE

    def __post_init__(self) -> None:
        table: Table = {"eigenvalue_share": [NONE, _SHARE], "allocation": Options(("adaptive", "equal")),
                        "accounting": Options(("joint", "per_direction")), "coordinate_share": _SHARE}
        check_params(table, {name: getattr(self, name) for name in table}, "EpsilonSplit")


#: The keywords of :func:`ppca` and :func:`exponential_pca` that became fields of :class:`EpsilonSplit`.
_SPLIT_FIELDS = {name: name for name in ("eigenvalue_share", "vector_shares", "allocation", "accounting",
                                         "coordinate_share")}
#: The parameters of :func:`ppca` and :func:`exponential_pca`; ``k <= n_features``, ``delta == 0`` and
#: ``vector_shares`` (k weights) are checked inline.
_PARAMS: Table = {
    **PRIVACY_PARAMETERS, "envelope": _ENVELOPE, "max_proposals": _MAX_PROPOSALS,
    "epsilon_split": [NONE, Types((EpsilonSplit,), "an EpsilonSplit")],
}
#: The candidate coordinates hold all but this fraction of the released diagonal's positive total.
COORDINATE_DROP = 0.02


def _check_envelope(envelope: Any, owner: str) -> str:
    check_params({"envelope": _ENVELOPE}, {"envelope": envelope}, owner)
    return str(envelope)


def _log_sphere_area(d: int) -> float:
    """log of the surface area of the unit sphere S^(d-1) in R^d."""
    return math.log(2.0) + 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d)


class BinghamSampler:
    """Exact sampler of the vector Bingham law ``p(v) ∝ exp(v^T M v)`` on the unit sphere of R^d.

    The factorisation (an eigendecomposition of ``M``) and both envelopes' constants are computed
    once; :meth:`sample` then draws batches of proposals. See the module docstring for the two
    envelopes and why each is exact.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        Symmetric (only its symmetric part matters: ``v^T M v`` is unchanged by ``(M + M^T) / 2``).
        Finite.
    envelope : {"auto", "acg", "tangent"}
        ``"auto"`` (default) picks the envelope of smaller total mass, i.e. of higher acceptance.
        ``"tangent"`` needs a simple top eigenvalue of ``M``.

    Attributes
    ----------
    d : int
    envelope : str
        The envelope in use (``"acg"``, ``"tangent"``, or ``"trivial"`` for d = 1 / ``M`` a multiple
        of the identity, where the law is uniform).
    eigenvalues : ndarray of shape (d,)
        Of the symmetric part of ``M``, descending.
    b : float
        Kent-Ganeiber-Mardia's ``b`` (the ACG envelope's parameter).
    log_mass_acg, log_mass_tangent : float
        Logarithms of the two envelopes' total masses on a common scale (Lebesgue measure of the
        upper-hemisphere chart); ``inf`` where an envelope does not apply. The acceptance rate of
        an envelope is ``Z / exp(log_mass)`` with ``Z`` the (unknown) normaliser of the target.
    proposals, accepted : int
        Counts over all calls to :meth:`sample` (the measured acceptance is their ratio).
    """

    def __init__(self, M: Any, *, envelope: Envelope = "auto") -> None:
        M = np.asarray(M, dtype=float)
        if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 1:
            raise ValueError(
                f"The 'M' parameter of BinghamSampler must be a square matrix. Got shape {M.shape}."
            )
        if not np.isfinite(M).all():
            raise ValueError("The 'M' parameter of BinghamSampler must be finite (no NaN or inf).")
        values, vectors = scipy.linalg.eigh(0.5 * (M + M.T), check_finite=False)
        self._setup(values[::-1].copy(), vectors[:, ::-1].copy(),
                    _check_envelope(envelope, "BinghamSampler"))

    @classmethod
    def from_eigh(
        cls, eigenvalues: np.ndarray, eigenvectors: np.ndarray, *, envelope: Envelope = "auto"
    ) -> BinghamSampler:
        """A sampler for ``M = Q diag(eigenvalues) Q^T`` from its eigendecomposition (Q orthogonal)."""
        w = np.asarray(eigenvalues, dtype=float)
        Q = np.asarray(eigenvectors, dtype=float)
        order = np.argsort(w)[::-1]
        self = cls.__new__(cls)
        self._setup(w[order].copy(), Q[:, order].copy(),
                    _check_envelope(envelope, "BinghamSampler"))
        return self

    # -- set-up ----------------------------------------------------------------------------------
    def _setup(self, values: np.ndarray, vectors: np.ndarray, envelope: str) -> None:
        d = values.shape[0]
        self.d = d
        self.eigenvalues = values
        self._Q = vectors
        self.proposals = 0
        self.accepted = 0
        beta = values[0] - values  # >= 0, beta[0] = 0
        beta[0] = 0.0
        beta = np.maximum(beta, 0.0)
        self._beta = beta
        self.b = float(d)
        self.log_mass_acg = math.inf
        self.log_mass_tangent = math.inf
        if d == 1 or beta[-1] == 0.0:
            self.envelope = "trivial"
            return
        self._setup_acg()
        self._setup_tangent()
        if envelope == "acg":
            self.envelope = "acg"
        elif envelope == "tangent":
            if not math.isfinite(self.log_mass_tangent):
                raise ValueError(
                    "envelope='tangent' needs a simple top eigenvalue of M (beta_2 > 0); the top "
                    "eigenvalue of this M is repeated. Use envelope='acg' or 'auto'."
                )
            self.envelope = "tangent"
        else:
            self.envelope = "tangent" if self.log_mass_tangent < self.log_mass_acg else "acg"

    def _setup_acg(self) -> None:
        d, beta = self.d, self._beta

        def excess(b: float) -> float:
            return float(np.sum(1.0 / (b + 2.0 * beta))) - 1.0

        # excess is decreasing, +inf at 0+ (beta_1 = 0) and <= 0 at b = d; any b in (0, d] gives a
        # valid envelope, so the root's accuracy affects only the acceptance rate.
        b = float(d) if excess(float(d)) >= 0 else float(
            scipy.optimize.brentq(excess, 1e-300, float(d), xtol=1e-12, rtol=1e-12)
        )
        b = min(max(b, 1e-300), float(d))
        self.b = b
        self._omega = 1.0 + 2.0 * beta / b
        self._acg_log_m = -(d - b) / 2.0 + (d / 2.0) * math.log(d / b)
        self._acg_scale = 1.0 / np.sqrt(self._omega)
        # mass of M_b * ACG on the hemisphere chart: (area / 2) * M_b * det(Omega)^(-1/2)
        self.log_mass_acg = (
            _log_sphere_area(d) - math.log(2.0) + self._acg_log_m - 0.5 * float(np.sum(np.log(self._omega)))
        )

    def _tangent_log_masses(self, rho: float) -> tuple[float, float]:
        d, beta, a = self.d, self._beta, self._a
        r2 = rho * rho
        log_k1 = -a * r2 - 0.5 * math.log1p(-r2)
        log_w1 = log_k1 + 0.5 * float(np.sum(np.log(math.pi / (beta[1:] - a))))
        band = float(scipy.special.betainc(0.5, 0.5 * (d - 1), 1.0 - r2))  # P(u_1^2 <= 1 - rho^2)
        log_w2 = -beta[1] * r2 + _log_sphere_area(d) - math.log(2.0) + (
            math.log(band) if band > 0 else -math.inf
        )
        return log_w1, log_w2

    def _setup_tangent(self) -> None:
        beta = self._beta
        if beta[1] <= 0.0:
            return
        self._a = min(0.5, 0.5 * float(beta[1]))

        def total(rho: float) -> float:
            return float(np.logaddexp(*self._tangent_log_masses(rho)))

        res = scipy.optimize.minimize_scalar(total, bounds=(1e-6, 1.0 - 1e-9), method="bounded",
                                             options={"xatol": 1e-10})
        rho = float(res.x)
        log_w1, log_w2 = self._tangent_log_masses(rho)
        self._rho = rho
        self._log_k1 = -self._a * rho * rho - 0.5 * math.log1p(-rho * rho)
        self._log_k2 = -float(beta[1]) * rho * rho
        self._p_gauss = float(1.0 / (1.0 + math.exp(min(log_w2 - log_w1, 700.0))))
        self._band_mass = float(scipy.special.betainc(0.5, 0.5 * (self.d - 1), 1.0 - rho * rho))
        self._gauss_scale = 1.0 / np.sqrt(2.0 * (beta[1:] - self._a))
        self.log_mass_tangent = float(np.logaddexp(log_w1, log_w2))

    # -- proposals (eigen-coordinates) -------------------------------------------------------------
    def _propose_acg(self, rng: _Draws, m: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.standard_normal((m, self.d)) * self._acg_scale
        u = y / np.linalg.norm(y, axis=1, keepdims=True)
        z = (u * u) @ self._beta
        log_ratio = -z + (self.d / 2.0) * np.log1p(2.0 * z / self.b) - self._acg_log_m
        return u, np.minimum(log_ratio, 0.0)

    def _propose_tangent(self, rng: _Draws, m: int) -> tuple[np.ndarray, np.ndarray]:
        d, beta = self.d, self._beta
        gauss = rng.random(m) < self._p_gauss
        s = np.empty((m, d - 1))
        n_g = int(gauss.sum())
        s[gauss] = rng.standard_normal((n_g, d - 1)) * self._gauss_scale
        n_b = m - n_g
        if n_b:
            # uniform on the band 0 < u_1 <= sqrt(1 - rho^2) of the upper hemisphere
            u1sq = scipy.special.betaincinv(0.5, 0.5 * (d - 1), rng.random(n_b) * self._band_mass)
            g = rng.standard_normal((n_b, d - 1))
            g /= np.linalg.norm(g, axis=1, keepdims=True)
            s[~gauss] = g * np.sqrt(np.maximum(1.0 - u1sq, 0.0))[:, None]
        t = np.einsum("ij,ij->i", s, s)
        inside = t < 1.0
        t_in = np.where(inside, t, 0.0)
        quad = (s * s) @ beta[1:]
        log_jac = -0.5 * np.log1p(-t_in)
        log_p = -quad + log_jac
        log_e1 = self._log_k1 - (quad - self._a * t)
        log_e2 = np.where(t >= self._rho * self._rho, self._log_k2 + log_jac, -np.inf)
        log_ratio = np.where(inside, log_p - np.logaddexp(log_e1, log_e2), -np.inf)
        u1 = np.sqrt(1.0 - t_in) * np.where(rng.random(m) < 0.5, -1.0, 1.0)
        u = np.concatenate([u1[:, None], s], axis=1)
        return u, np.minimum(log_ratio, 0.0)

    # -- sampling ----------------------------------------------------------------------------------
    def sample(
        self,
        size: int | None = None,
        *,
        random_state: Any = None,
        max_proposals: int = DEFAULT_MAX_PROPOSALS,
    ) -> np.ndarray:
        """Exact samples.

        Parameters
        ----------
        size : int or None
            Number of samples; None returns one vector of shape (d,).
        random_state : None, int, SeedSequence or Generator
        max_proposals : int
            Proposals allowed per requested sample (on average over the call); past
            ``max_proposals * size`` proposals :class:`BinghamSamplerError` is raised.

        Returns
        -------
        ndarray of shape (d,) or (size, d)
            Unit vectors.
        """
        n = 1 if size is None else int(size)
        if isinstance(size, bool) or n < 0:
            raise ValueError(f"The 'size' parameter must be None or an int >= 0. Got {size!r} instead.")
        check_params({"max_proposals": _MAX_PROPOSALS}, {"max_proposals": max_proposals},
                     "the Bingham sampler")
        return self._sample(size, as_generator(random_state), max_proposals)

    def _sample(self, size: int | None, rng: _Draws, max_proposals: int) -> np.ndarray:
        """:meth:`sample` with the draws of ``rng`` (a Generator, or a releaser's named draws)."""
        n = 1 if size is None else int(size)
        cap = int(max_proposals) * max(n, 1)
        d = self.d
        if self.envelope == "trivial":
            g = rng.standard_normal((n, d))
            u = g / np.linalg.norm(g, axis=1, keepdims=True)
            self.proposals += n
            self.accepted += n
        else:
            propose = self._propose_acg if self.envelope == "acg" else self._propose_tangent
            out: list[np.ndarray] = []
            got = 0
            used = 0
            batch_cap = max(_MIN_BATCH, _MAX_BATCH_ELEMENTS // d)
            while got < n:
                if used >= cap:
                    # No acceptance rate, count accepted or envelope chosen: they depend on M (the
                    # private data, in the mechanisms). Only public inputs are named.
                    raise BinghamSamplerError(
                        f"The Bingham sampler (d={d}) used max_proposals={max_proposals} proposals "
                        f"per sample for {n} sample(s) without finishing. Raise 'max_proposals' or "
                        "try another envelope ('envelope' parameter). In a private mechanism this "
                        "is a failed release: it stays charged (docs/privacy-caveats.md)."
                    )
                # proposals expected for the rest, from the acceptance seen so far (prior 1/2)
                rate = (self.accepted + 1.0) / (self.proposals + 2.0)
                m = int(min(max(_MIN_BATCH, math.ceil(1.2 * (n - got) / rate)), batch_cap, cap - used))
                u, log_ratio = propose(rng, m)
                keep = np.log(rng.random(m)) < log_ratio
                idx = np.flatnonzero(keep)[: n - got]
                # sequential semantics: proposals after the last one needed are not counted
                consumed = m if idx.size < n - got else int(idx[-1]) + 1
                used += consumed
                self.proposals += consumed
                self.accepted += idx.size
                got += idx.size
                out.append(u[idx])
            u = np.concatenate(out, axis=0) if out else np.empty((0, d))
        v = u @ self._Q.T
        return v[0] if size is None else v

    @property
    def acceptance_rate(self) -> float:
        """Accepted over proposed, over all calls so far (nan before the first call)."""
        return self.accepted / self.proposals if self.proposals else math.nan


def sample_bingham(
    M: Any,
    size: int | None = None,
    *,
    random_state: Any = None,
    envelope: Envelope = "auto",
    max_proposals: int = DEFAULT_MAX_PROPOSALS,
) -> np.ndarray:
    """Exact samples of the vector Bingham law ``p(v) ∝ exp(v^T M v)`` on the unit sphere.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        Symmetric, finite.
    size : int or None
        Number of samples (None: one vector of shape (d,)).
    random_state : None, int, SeedSequence or Generator
    envelope : {"auto", "acg", "tangent"}
        See :class:`BinghamSampler`.
    max_proposals : int
        Cap on the proposals per sample; :class:`BinghamSamplerError` past it.

    Returns
    -------
    ndarray of shape (d,) or (size, d)
    """
    return BinghamSampler(M, envelope=envelope).sample(
        size, random_state=random_state, max_proposals=max_proposals
    )


# ------------------------------------------------------------------------------------------------
# The mechanisms
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ExponentialPlan(ReleasePlan):
    """The releases of one run (a :class:`ReleasePlan`) and the directions' budgets.

    ``releases`` holds the Laplace release of the eigenvalues (``"eigenvalues"``) when one is made;
    the directions are exponential-mechanism draws (no additive noise). Their events are in
    ``events``; their concentrations ``c_j`` are fixed here, or (``adaptive``) chosen inside the
    release from the released eigenvalues, always with the same certified total
    ``directions_epsilon``.
    """

    concentrations: tuple[float, ...] = ()  # c_j in exp(c_j u^T A_j u); empty when adaptive
    vector_epsilons: tuple[float, ...] | None = ()  # per direction (per_direction accounting)
    eigen_epsilon: float = 0.0  # epsilon certified by the eigenvalue release
    diagonal_epsilon: float = 0.0  # epsilon certified by the release of the diagonal
    directions_epsilon: float = 0.0  # epsilon certified by all the directions together
    adaptive: bool = False  # the split is chosen from the released eigenvalues
    coordinates: bool = False  # a released diagonal proposes coordinates to draw the directions in
    n_sampled: int = 0  # directions drawn (k, or d - 1 when k = d)
    unit: float = 1.0  # C^2
    replace_one: bool = True
    joint: bool = True


def _n_sampled(k: int, d: int) -> int:
    """Directions that are sampled: when k = d the last one is the remaining line (no budget)."""
    return k if k < d else d - 1


def _split_budget(epsilon: float, eigenvalue_share: float, n_vec: int) -> tuple[float, float]:
    """``(epsilon_0, epsilon of all directions)``, shrunk by the rounding guard."""
    eps = epsilon * (1.0 - _ROUNDING_GUARD)
    eps_values = eps * eigenvalue_share
    eps_vectors = eps - eps_values
    if n_vec == 0:  # d = 1: nothing to sample
        eps_values = eps if eigenvalue_share > 0 else 0.0
        eps_vectors = 0.0
    return eps_values, eps_vectors


def _joint_concentrations(weights: np.ndarray, eps_vectors: float, C2: float,
                          replace_one: bool) -> list[float]:
    """``c_j = t w_j`` with the joint guarantee ``C^2 t (max w + sum w)`` (replace-one) or
    ``C^2 t sum w`` (add/remove) equal to ``eps_vectors`` (module docstring, "joint accounting")."""
    w = np.asarray(weights, dtype=float)
    if w.size == 0 or w.max() <= 0:
        return [0.0] * w.size
    units = w.sum() + (w.max() if replace_one else 0.0)
    return [float(eps_vectors * wj / (C2 * units)) for wj in w]


def _direction_budgets(
    kind: str, calibration: str, eps_vectors: float, vector_shares: np.ndarray | None, n_vec: int,
    C2: float, replace_one: bool, joint: bool,
) -> tuple[list[float], list[float] | None]:
    """Concentration ``c_j`` of every sampled direction and, per direction, the epsilon it certifies
    (None under joint accounting, where only the total is certified)."""
    weights = np.ones(n_vec) if vector_shares is None else np.asarray(vector_shares[:n_vec], float)
    if n_vec:
        weights = weights / weights.sum()
    if joint:
        return _joint_concentrations(weights, eps_vectors, C2, replace_one), None
    concentrations: list[float] = []
    guarantees: list[float] = []
    for e in (float(eps_vectors * w) for w in weights):
        if calibration == "tight":
            c = e / C2 if not replace_one else e / (2.0 * C2)
            guarantee = e
        elif kind == "exponential":  # Amin et al.: exp(eps_i / 4 u^T C u) for rows of norm <= 1
            c = e / (4.0 * C2)
            guarantee = c * C2 * (2.0 if replace_one else 1.0)
        else:  # ppca, paper: CSS12's exp((eps / 2) v^T X^T X v), rows of norm <= 1
            c = e / (2.0 * C2)
            guarantee = c * C2 * (2.0 if replace_one else 1.0)
        concentrations.append(c)
        guarantees.append(guarantee)
    return concentrations, guarantees


def _direction_events(guarantees: list[float] | None, total: float) -> list[dp_accounting.DpEvent]:
    """One pure-DP event per sampled direction (self-composed when the budgets are equal), or one
    event for all of them under joint accounting."""
    if guarantees is None:
        return [EpsilonDeltaDpEvent(total, 0.0)] if total > 0 else []
    if not guarantees:
        return []
    if len(set(guarantees)) == 1:
        event: dp_accounting.DpEvent = EpsilonDeltaDpEvent(guarantees[0], 0.0)
        if len(guarantees) > 1:
            event = dp_accounting.SelfComposedDpEvent(event, len(guarantees))
        return [event]
    return [EpsilonDeltaDpEvent(e, 0.0) for e in guarantees]


def _plan(
    kind: str,
    *,
    k: int,
    d: int,
    epsilon: float,
    relation: Relation,
    calibration: str,
    row_norm: float,
    eigenvalue_share: float,
    vector_shares: np.ndarray | None,
    allocation: str = "equal",
    accounting: str = "per_direction",
    coordinate_share: float = 0.0,
) -> _ExponentialPlan:
    """Every release of one run (diagonal, eigenvalues, directions), from public inputs only."""
    C2 = sensitivity_norm(row_norm) ** 2
    r1 = relation is Relation.REPLACE_ONE
    n_vec = _n_sampled(k, d)
    # The paper's calibration keeps the paper's per-direction budgets; joint accounting is ours.
    joint = accounting == "joint" and calibration == "tight"
    adaptive = (allocation == "adaptive" and vector_shares is None and eigenvalue_share > 0
                and n_vec > 1 and calibration == "tight")
    coordinates = (adaptive and coordinate_share > 0 and d > k + 1
                   and coordinate_share + eigenvalue_share < 1)
    eps_diag = epsilon * (1.0 - _ROUNDING_GUARD) * coordinate_share if coordinates else 0.0
    eps_values, eps_vectors = _split_budget(epsilon - eps_diag / (1.0 - _ROUNDING_GUARD),
                                            eigenvalue_share / (1.0 - coordinate_share)
                                            if coordinates else eigenvalue_share, n_vec)
    concentrations, guarantees = _direction_budgets(kind, calibration, eps_vectors, vector_shares,
                                                    n_vec, C2, r1, joint)
    if adaptive:  # the split follows the released eigenvalues; the certified total does not
        guarantees = None
    events = _direction_events(guarantees, eps_vectors if n_vec else 0.0)
    releases: tuple[NoisyRelease, ...] = ()
    eigen_epsilon = 0.0
    if eps_values > 0:
        # L1 sensitivity of the released eigenvalue vector (of A, and of A_SS when coordinates)
        l1 = (2.0 if r1 else 1.0) * C2 * (2.0 if coordinates else 1.0)
        scale = l1 / eps_values if calibration == "tight" else 2.0 * C2 / eps_values
        releases = (NoisyRelease("eigenvalues", "laplace", scale, l1),)
        eigen_epsilon = l1 / scale
        events.insert(0, dp_accounting.LaplaceDpEvent(scale / l1))
    if coordinates:
        l1_diag = (2.0 if r1 else 1.0) * C2  # L1 sensitivity of diag(A) = sum_i x_i * x_i
        releases = (NoisyRelease("diagonal", "laplace", l1_diag / eps_diag, l1_diag),) + releases
        events.insert(0, dp_accounting.LaplaceDpEvent(1.0 / eps_diag))
    notes: tuple[str, ...] = ()
    if calibration == "paper" and kind == "exponential":
        notes = (
            "Amin et al. (2019) constants: exp(eps_i / 4 u^T C u) per direction and Laplace(2 C^2 / "
            "eps_0) on the eigenvalues; the accountant certifies what they give (less than requested).",
        )
    directions_epsilon = float(sum(guarantees)) if guarantees is not None else eps_vectors
    return _ExponentialPlan(
        kind, relation, tuple(events), releases, notes,
        concentrations=() if adaptive else tuple(concentrations),
        vector_epsilons=None if guarantees is None else tuple(guarantees),
        eigen_epsilon=eigen_epsilon, directions_epsilon=directions_epsilon if n_vec else 0.0,
        adaptive=adaptive, n_sampled=n_vec, unit=C2, replace_one=r1, joint=joint,
        coordinates=coordinates, diagonal_epsilon=eps_diag)


def _equal_concentration(plan: _ExponentialPlan, m: int) -> float:
    """The concentration of m equal directions (the others free) that certifies the planned total."""
    if plan.joint:
        return _joint_concentrations(np.ones(m), plan.directions_epsilon, plan.unit, plan.replace_one)[0]
    return plan.directions_epsilon / (plan.unit * m * (2.0 if plan.replace_one else 1.0))


def _predicted_split(plan: _ExponentialPlan, released: np.ndarray, d: int,
                     k: int) -> tuple[float, list[float]]:
    """The split of the directions' budget, chosen from released eigenvalues (post-processing), and
    the energy it is predicted to capture above the mean of the other eigenvalues.

    ``released`` is ``(lambda_1..lambda_k, sum of the others)`` of the d x d matrix the directions are
    drawn from. m of the n sampled directions get the same concentration c(m), fixed by the certified
    total (joint or per-direction accounting), and the others none (a uniform direction in the
    complement: free). m maximises the predicted captured energy ``sum_{j<=m} g_j max(0, 1 - L_j)``,
    with ``g_j = lambda_j - mu`` the released eigenvalue above the mean ``mu`` of the others and
    ``L_j = (d - j) / (2 c(m) g_j)`` the mass a Bingham draw of concentration c leaks to the d - j
    other directions (Laplace's method; nothing is found when ``L_j >= 1``).
    """
    n = min(plan.n_sampled, d - 1) if d > 1 else 0
    if n == 0:
        return 0.0, []
    lam = np.sort(np.asarray(released[:k], dtype=float))[::-1][:n]
    mu = max(float(released[k]), 0.0) / (d - k) if d > k else 0.0
    gaps = np.maximum(lam - mu, 0.0)
    best_m, best = 1, -math.inf
    for m in range(1, n + 1):
        c = _equal_concentration(plan, m)
        j = np.arange(1, m + 1)
        leak = (d - j) / (2.0 * c * np.maximum(gaps[:m], 1e-300))
        gain = float(np.sum(gaps[:m] * np.clip(1.0 - leak, 0.0, None)))
        if gain > best * (1.0 + 1e-12):
            best_m, best = m, gain
    return best, [_equal_concentration(plan, best_m)] * best_m + [0.0] * (n - best_m)


def _adaptive_concentrations(plan: _ExponentialPlan, released: np.ndarray, d: int,
                             k: int) -> list[float]:
    """The concentrations of :func:`_predicted_split` for the n sampled directions."""
    cs = _predicted_split(plan, released, d, k)[1]
    return cs + [0.0] * (plan.n_sampled - len(cs))


def _select_coordinates(noisy_diagonal: np.ndarray, k: int) -> np.ndarray:
    """Candidate coordinates (post-processing of the released diagonal): by decreasing released
    energy, until they hold ``1 - COORDINATE_DROP`` of the released total (an unbiased estimate of
    the trace; the noise of the low coordinates cancels in it), and at least k + 1."""
    e = np.asarray(noisy_diagonal, dtype=float)
    order = np.argsort(-e, kind="stable")
    cum = np.cumsum(np.maximum(e[order], 0.0))  # non-decreasing
    target = (1.0 - COORDINATE_DROP) * float(e.sum())
    if target <= 0 or cum[-1] < target:
        return np.arange(e.size)
    m = int(np.searchsorted(cum, target)) + 1
    return np.sort(order[: min(max(m, k + 1), e.size)])


def _check_vector_shares(value: Any, k: int) -> np.ndarray | None:
    """None, or k positive finite weights (a constraint that depends on k: kept inline)."""
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = np.array([np.nan])
    if arr.shape != (k,) or not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(
            "The 'vector_shares' parameter of exponential_pca must be None or k positive finite "
            f"weights (k={k}). Got {value!r} instead."
        )
    return arr


def _householder_complement(u: np.ndarray) -> np.ndarray:
    """An m x (m - 1) orthonormal basis of the complement of the unit vector u."""
    m = u.shape[0]
    e = np.zeros(m)
    e[0] = 1.0
    sign = 1.0 if u[0] >= 0 else -1.0
    w = u + sign * e  # H = I - 2 w w^T / (w^T w) maps u to -sign e_1
    H = np.eye(m) - 2.0 * np.outer(w, w) / float(w @ w)
    return H[:, 1:]


def _sample_directions(
    A: np.ndarray,
    k: int,
    concentrations: Sequence[float],
    eigh_A: tuple[np.ndarray, np.ndarray],
    rng: _Draws,
    envelope: str,
    max_proposals: int,
) -> np.ndarray:
    """Directions v_1..v_k by the exponential mechanism with deflation (Amin et al., Alg. 1)."""
    d = A.shape[0]
    P = np.eye(d)
    A_j = A
    V = np.empty((d, k))
    w, Q = eigh_A
    for j in range(k):
        m = d - j
        if m == 1:  # the remaining line: determined by the earlier releases
            V[:, j] = P[:, 0]
            break
        c = concentrations[j]
        if j == 0:
            sampler = BinghamSampler.from_eigh(c * w, Q, envelope=envelope)  # type: ignore[arg-type]
        else:
            sampler = BinghamSampler(c * A_j, envelope=envelope)  # type: ignore[arg-type]
        u = sampler._sample(None, rng, max_proposals)
        V[:, j] = P @ u
        N = _householder_complement(u)
        P = P @ N
        A_j = N.T @ A_j @ N
        A_j = 0.5 * (A_j + A_j.T)
    return V


def _validate(
    kind: str, X: Any, k: Any, *, epsilon: float, delta: float, row_norm: float,
    relation: Relation | str, calibration: str, on_norm_violation: str, vector_shares: Any,
) -> tuple[PrivacyBudget, Relation, float, int, np.ndarray | None]:
    """The public inputs, checked before anything is read or charged (the table checked the rest)."""
    budget, rel, C = check_mechanism_inputs(
        epsilon=epsilon, delta=delta, row_norm=row_norm, relation=relation, calibration=calibration,
        on_norm_violation=on_norm_violation, owner=kind, allowed_relations=_RELATIONS,
        needs_delta=False,
    )
    if budget.delta != 0.0:
        # A pure-epsilon mechanism reported at delta > 0 would claim a weaker guarantee than it has
        # and mislead a ledger or a comparison; refuse rather than silently change the request.
        raise ValueError(
            f"The 'delta' parameter of {kind} must be 0: {kind} is a pure epsilon-DP mechanism "
            f"(the exponential mechanism), so it has no delta. Got {delta!r} instead."
        )
    d_known = n_features_of(X)
    if d_known is not None:
        k = check_n_components(k, d_known, kind, name="k")  # k <= n_features: a cross-check
    else:
        check_params({"k": _N_COMPONENTS}, {"k": k}, kind)
    return budget, rel, C, int(k), _check_vector_shares(vector_shares, int(k))


def _release_directions(
    plan: _ExponentialPlan, scatter: np.ndarray, k: int, releaser: Releaser, envelope: str,
    max_proposals: int,
) -> tuple[np.ndarray | None, float | None, np.ndarray, list[float], int]:
    """Inside the release block: the diagonal and the noisy eigenvalues (if planned), the choice of
    coordinates and of the split (post-processing), then the k directions. Returns the values, the
    total, the directions, the concentrations and the number of coordinates they were drawn in."""
    A = 0.5 * (scatter + scatter.T)
    d = A.shape[0]
    w, Q = scipy.linalg.eigh(A, check_finite=False)
    values: np.ndarray | None = None
    total: float | None = None
    concentrations = list(plan.concentrations)
    S = None
    if plan.releases:
        S = _select_coordinates(releaser.add("diagonal", np.diag(A).copy()), k) \
            if plan.coordinates else None
        full = np.append(w[::-1][:k], w[::-1][k:].sum())
        if S is not None and S.size < d:
            ws, Qs = scipy.linalg.eigh(A[np.ix_(S, S)], check_finite=False)
            released = releaser.add("eigenvalues", np.concatenate(
                [full, np.append(ws[::-1][:k], ws[::-1][k:].sum())]))
            gain_sub, split_sub = _predicted_split(plan, released[k + 1:], S.size, k)
            if plan.adaptive and gain_sub > _predicted_split(plan, released[: k + 1], d, k)[0]:
                concentrations = split_sub + [0.0] * (plan.n_sampled - len(split_sub))
                V = np.zeros((d, k))
                V[S] = _sample_directions(A[np.ix_(S, S)], k, concentrations, (ws, Qs),
                                          releaser, envelope, max_proposals)
                released = released[: k + 1]
                values, total = np.sort(released[:k])[::-1], float(released.sum())
                return values, total, V, concentrations, int(S.size)
            released = released[: k + 1]
        else:
            released = releaser.add("eigenvalues", full)
        values = np.sort(released[:k])[::-1]
        total = float(released.sum())
        if plan.adaptive:  # post-processing of the release above
            concentrations = _adaptive_concentrations(plan, released, d, k)
    V = _sample_directions(A, k, concentrations, (w, Q), releaser, envelope,
                           max_proposals)
    return values, total, V, concentrations, d


@dataclass(frozen=True)
class _ExponentialInputs(PcaInputs):
    """The public inputs of :func:`ppca` and :func:`exponential_pca` (``kind``: which of the two)."""

    kind: str
    eigenvalue_share: float
    vector_shares: Any
    allocation: str
    accounting: str
    coordinate_share: float
    on_norm_violation: NormViolation
    envelope: Envelope
    max_proposals: int


@dataclass(frozen=True, eq=False)
class _Checked:
    inputs: _ExponentialInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    k: int
    shares: np.ndarray | None
    d: int | None
    summation: Summation = Summation()  # how the scatter is summed (the diagonal's rounding bound)

    @property
    def calibration(self) -> str:
        return self.inputs.calibration


class _Exponential(Mechanism[_ExponentialInputs, SubspaceResult]):
    """The exponential mechanism with deflation as the release template runs it: the Laplace diagonal
    and eigenvalues (when planned), then the k directions, in one charge."""

    stacklevel = 3  # frames above run: ppca or exponential_pca, the constraint check, the caller

    def __init__(self, kind: str, show_progress: bool | None = None) -> None:
        super().__init__(show_progress)
        self.label = kind

    def check(self, inputs: _ExponentialInputs, X: Any) -> _Checked:
        budget, rel, C, k, shares = _validate(
            inputs.kind, X, inputs.k, epsilon=inputs.epsilon, delta=inputs.delta,
            row_norm=inputs.row_norm, relation=inputs.relation, calibration=inputs.calibration,
            on_norm_violation=inputs.on_norm_violation, vector_shares=inputs.vector_shares)
        return _Checked(inputs, budget, rel, C, k, shares, n_features_of(X), summation_of(X))

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> _ExponentialPlan | None:
        if d is None:  # the width of a stream is looked up before its charge
            return None
        check_n_components(inputs.k, d, self.label, name="k")
        i = inputs.inputs
        plan = _plan(i.kind, k=inputs.k, d=d, epsilon=inputs.budget.epsilon, relation=inputs.relation,
                     calibration=i.calibration, row_norm=inputs.C,
                     eigenvalue_share=float(i.eigenvalue_share), vector_shares=inputs.shares,
                     allocation=i.allocation, accounting=i.accounting,
                     coordinate_share=float(i.coordinate_share))
        # the diagonal sum_i x_i * x_i: terms of L1 norm ||x||^2 <= C^2, the scatter's path
        return dataclasses.replace(plan, releases=tuple(
            widen_release(r, n=n, relation=inputs.relation, kind="products",
                          term_bound=sensitivity_norm(inputs.C) ** 2, summation=inputs.summation)
            if r.name == "diagonal" else r for r in plan.releases))

    def read(self, inputs: _Checked, X: Any) -> Any:
        """The validating pass: the scatter of the rows clipped at C."""
        moments = accumulate(X, row_norm=inputs.C, on_norm_violation=inputs.inputs.on_norm_violation,
                             want_sum=False, want_second=True, owner=self.label,
                             show_progress=self.show_progress)
        check_n_components(inputs.k, moments.d, self.label, name="k")
        return moments

    def statistic(self, inputs: _Checked, rows: Any, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        # A failure after the charge (a bad block of a one-shot stream, the sampler's cap) is a
        # failed release: it stays charged.
        assert isinstance(plan, _ExponentialPlan) and rows.second is not None
        i = inputs.inputs
        return {"directions": Drawn(lambda releaser: _release_directions(
            plan, rows.second, inputs.k, releaser, i.envelope, i.max_proposals))}

    def post_process(self, inputs: _Checked, rows: Any, released: Released, report: Any) -> SubspaceResult:
        """Signs fixed; the diagnostics are public (fixed by the plan or by released values)."""
        values, total, V, concentrations, n_coordinates = released["directions"]
        plan = released.releaser.plan  # the plan charged, with the directions' budgets
        assert isinstance(plan, _ExponentialPlan)
        diagnostics: dict[str, Any] = {
            "sensitivity": sensitivity_norm(inputs.C) ** 2,
            "accounting": "joint" if plan.joint else "per_direction",
            "allocation": "adaptive" if plan.adaptive else (
                "shares" if inputs.shares is not None else "equal"),
            "directions_epsilon": plan.directions_epsilon,
            "vector_epsilons": None if plan.vector_epsilons is None else list(plan.vector_epsilons),
            "concentrations": concentrations,  # public: fixed by the plan or by the released eigenvalues
            "eigenvalue_epsilon": plan.eigen_epsilon,
            "diagonal_epsilon": plan.diagonal_epsilon,
            "eigenvalue_noise_scale": plan.releases[-1].scale if plan.releases else None,
            "coordinates": n_coordinates,  # public: a function of the released diagonal and eigenvalues
        }
        return SubspaceResult(
            components=fix_signs(V), values=values, total=total,
            n_samples=float(rows.n) if inputs.relation.n_is_public else None,
            privacy=report, diagnostics=diagnostics,
        )


@folded("epsilon_split", EpsilonSplit, {k: v for k, v in _SPLIT_FIELDS.items() if k != "vector_shares"})
@validated(_PARAMS)
def ppca(
    X: Any,
    k: int = 1,
    *,
    epsilon: float,
    delta: float = 0.0,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    epsilon_split: EpsilonSplit | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    envelope: Envelope = "auto",
    max_proposals: int = DEFAULT_MAX_PROPOSALS,
    show_progress: bool | None = None,
) -> SubspaceResult:
    """PPCA (Chaudhuri, Sarwate and Sinha, NIPS 2012): the exponential mechanism for the top direction.

    Draws ``v`` with density proportional to ``exp(c v^T A v)`` on the unit sphere, ``A`` the scatter
    matrix of the rows clipped to norm C, with the exact sampler of :class:`BinghamSampler`.
    For k > 1, CSS12's k-dimensional mechanism is a matrix Bingham law whose only known samplers are
    Gibbs chains (MCMC: private only at stationarity) or rejection samplers that do not finish on
    spread spectra; here the k directions are instead drawn one at a time, each on the orthogonal
    complement of the earlier ones (the deflation of Kapralov and Talwar 2013 and Amin et al. 2019),
    certified jointly, with the budget split steered by Laplace eigenvalues (5% of epsilon, returned
    as ``values``; k = 1 releases none, ``values=None``) and, where it helps, drawn in coordinates
    proposed by a released diagonal: the same mechanism as :func:`exponential_pca` with a smaller
    eigenvalue share.

    Parameters
    ----------
    X
        As in :func:`analyze_gauss`.
    k : int
        Number of components, in [1, n_features] (1 is CSS12's PPCA itself).
    epsilon : float
        In (0, inf).
    delta : float
        Must be 0 (the default): the mechanism is pure epsilon-DP; a delta > 0 is refused rather
        than reported as if it were spent.
    row_norm : float
        Public bound C on each row's Euclidean norm; rows above it are clipped per row, or rejected
        with ``on_norm_violation="raise"``. Never derived from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): ``c = epsilon_j / (2 C^2)`` under replace-one (the paper's own
        ``exp((n eps / 2) v^T (X^T X / n) v)``), ``epsilon_j / C^2`` under add/remove (monotone
        utility). ``"paper"``: the paper's ``epsilon_j / (2 C^2)`` under both relations (so under
        add/remove it certifies ``epsilon / 2``). The registry lists only ``"tight"``: under the
        paper's relation the two coincide.
    epsilon_split : EpsilonSplit or None, default=None
        How epsilon is split (k > 1; for k = 1 there is nothing to split): :class:`EpsilonSplit`, whose
        eigenvalues, here, only steer the split (then returned as ``values``). None: its defaults.
        ``EpsilonSplit(eigenvalue_share=0, allocation="equal", accounting="per_direction",
        coordinate_share=0)`` is CSS12's mechanism with ``epsilon / k`` per direction. The old keywords
        ``eigenvalue_share``, ``allocation``, ``accounting``, ``coordinate_share`` still work, with a
        FutureWarning.
    accountant, random_state, on_norm_violation, envelope, max_proposals, show_progress
        As for :func:`exponential_pca`.

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k) in the order drawn (signs fixed); ``values`` None;
        diagnostics ``sensitivity``, ``vector_epsilons``, ``concentrations``.

    Privacy
    -------
    Relation: replace-one (default; the paper's) or add/remove; pure epsilon-DP. The sensitivity of
    the directions' utility, their events (joint or per direction), the Laplace releases and the
    order of the charge (the input read and validated first; a one-shot stream charged first; the
    sampler's cap a failed release that stays charged) are those of :func:`exponential_pca`.
    """
    split = epsilon_split or EpsilonSplit()
    if split.vector_shares is not None:
        raise ValueError("ppca splits the directions' budget itself (adaptive or equal): "
                         "EpsilonSplit(vector_shares=...) is for exponential_pca.")
    eigenvalue_share = split.eigenvalue_share
    if eigenvalue_share is None:
        wide = isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k > 1
        steered = wide and split.allocation == "adaptive" and calibration == "tight"
        eigenvalue_share = PPCA_EIGENVALUE_SHARE if steered else 0.0
    return run(_Exponential("ppca", show_progress), _ExponentialInputs(
        k, epsilon, delta, row_norm, relation, calibration, "ppca", eigenvalue_share, None, split.allocation,
        split.accounting, split.coordinate_share, on_norm_violation, envelope, max_proposals,
    ), X, RunSettings(accountant, random_state))


@folded("epsilon_split", EpsilonSplit, _SPLIT_FIELDS)
@validated(_PARAMS)
def exponential_pca(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float = 0.0,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    epsilon_split: EpsilonSplit | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    envelope: Envelope = "auto",
    max_proposals: int = DEFAULT_MAX_PROPOSALS,
    show_progress: bool | None = None,
) -> SubspaceResult:
    """Amin, Dick, Kulesza, Munoz Medina, Vassilvitskii (NeurIPS 2019): eigenvalues + deflated EM.

    1. Release ``(lambda_1, ..., lambda_k, sum_{i>k} lambda_i)`` of ``A = sum_i c(x_i) c(x_i)^T``
       with i.i.d. Laplace noise (budget ``epsilon_0``, 0.1 epsilon by default).
    2. For ``j = 1..k``: with ``P_j`` an orthonormal basis of the complement of ``v_1..v_{j-1}``,
       draw ``u`` from ``exp(c_j u^T P_j^T A P_j u)`` (exact sampler) and set ``v_j = P_j u``
       (budget ``epsilon_j``, split as :class:`EpsilonSplit` says). When ``k = n_features``
       the last direction is the remaining line and costs nothing.
    3. ``values`` are the top-k noisy eigenvalues sorted in decreasing order, paired with
       ``v_1, v_2, ...`` in the order drawn (as in the paper); ``total`` is the sum of the released
       vector (the noisy trace).

    The paper releases all d eigenvalues (for a covariance estimate); PCA needs only the top k and the
    trace, which the same L1 sensitivity covers.

    Parameters
    ----------
    X, k
        As in :func:`analyze_gauss`.
    epsilon : float
        In (0, inf): the total, ``epsilon_0 + sum_j epsilon_j``.
    delta : float
        Must be 0 (the default): pure epsilon-DP; a delta > 0 is refused.
    row_norm : float
        Public bound C on each row's Euclidean norm (clipped per row above it). Never from the data.
    relation : {"replace_one", "add_remove"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): ``c_j = epsilon_j / (2 C^2)`` (replace-one) or ``epsilon_j / C^2``
        (add/remove), Laplace scale ``2 C^2 / epsilon_0`` (replace-one) or ``C^2 / epsilon_0``
        (add/remove). ``"paper"``: Amin et al.'s constants, ``c_j = epsilon_j / (4 C^2)`` and Laplace
        scale ``2 C^2 / epsilon_0``, which are more private than requested (the report certifies
        what they give: about half the requested epsilon).
    epsilon_split : EpsilonSplit or None, default=None
        How epsilon is split between the diagonal, the eigenvalues and the directions, and how the
        directions are accounted (:class:`EpsilonSplit`; None: its defaults). The old keywords
        ``eigenvalue_share``, ``vector_shares``, ``allocation``, ``accounting``, ``coordinate_share``
        still work, with a FutureWarning.
    accountant : Accountant, optional
        Ledger to spend against; the run is refused before the data are read if it would exceed the
        ceiling.
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the noise and the directions. ``"secure"``: OS entropy and an exact
        Laplace sampler for the eigenvalues (the Bingham sampler runs on a generator seeded from
        OS entropy); the report's ``noise_source`` says which.
    on_norm_violation : {"clip", "raise"}
    envelope : {"auto", "acg", "tangent"}
        The sampler's envelope (all exact; "auto" picks the faster one per step).
    max_proposals : int
        Cap on the sampler's proposals per direction; past it :class:`BinghamSamplerError`.
    show_progress : bool or None
        Progress bar over the blocks of X.

    Returns
    -------
    SubspaceResult
        ``components`` (n_features, k); ``values`` (k,) or None; ``total``; ``n_samples`` (public
        under replace-one); diagnostics ``sensitivity``, ``vector_epsilons``, ``concentrations``,
        ``eigenvalue_epsilon``, ``eigenvalue_noise_scale``.

    Privacy
    -------
    Relation: replace-one (default) or add/remove; pure epsilon-DP: ``epsilon = epsilon_diagonal +
    epsilon_0 + epsilon_directions`` (basic composition). Diagonal: L1 sensitivity ``2 C^2`` / ``C^2``
    (``sum_i x_i^2 = ||x||^2``). Directions: joint accounting as derived in the module docstring.
    Eigenvalues: the released
    vector moves by a non-negative vector of L1 norm at most ``C^2`` when a row is added (Cauchy
    interlacing: every eigenvalue rises, by ``||x||^2`` in total), hence L1 sensitivity ``C^2``
    (add/remove) and ``2 C^2`` (replace-one, through the data set without the row); event
    ``LaplaceDpEvent(scale / Delta_1)``.

    Sensitivity, for rows clipped to norm C: the utility ``u^T A u`` (and, after deflation,
    ``u^T P^T A P u`` with P fixed by earlier releases) changes by ``||P u . x||^2`` in ``[0, C^2]``
    when a row x is added (monotone) and by a value in ``[-C^2, C^2]`` when x is replaced: sensitivity
    ``C^2`` under both relations. The exponential mechanism ``exp(c u)`` is then
    ``epsilon_j``-DP for ``c = epsilon_j / C^2`` (add/remove, monotone utility) and
    ``c = epsilon_j / (2 C^2)`` (replace-one). Each sampled direction is recorded as
    ``EpsilonDeltaDpEvent(epsilon_j, 0)`` under ``accounting="per_direction"``; the directions compose
    adaptively (basic composition of pure DP). Under ``accounting="joint"`` (default) the k draws
    are one ``C^2 (max_j c_j + sum_j c_j)``-DP mechanism under replace-one (``C^2 sum_j c_j`` under
    add/remove; module docstring), one event; the certified epsilon at ``delta = 0`` is the sum
    of the events (Laplace releases included).

    The whole input is read (and validated) before the ledger is charged; a one-shot stream (an
    iterator of blocks) is charged first and read after, so a bad block of it is a failed release
    that stays charged. If the sampler exhausts ``max_proposals`` (:class:`BinghamSamplerError`,
    whose message names only public inputs), the run is a failed release that stays charged;
    whether that happens, like the running time of rejection sampling, depends on the data
    (docs/privacy-caveats.md).
    """
    split = epsilon_split or EpsilonSplit()
    eigenvalue_share = (EXPONENTIAL_EIGENVALUE_SHARE if split.eigenvalue_share is None
                        else split.eigenvalue_share)
    return run(_Exponential("exponential", show_progress), _ExponentialInputs(
        k, epsilon, delta, row_norm, relation, calibration, "exponential", eigenvalue_share,
        split.vector_shares, split.allocation, split.accounting, split.coordinate_share, on_norm_violation,
        envelope, max_proposals,
    ), X, RunSettings(accountant, random_state))
