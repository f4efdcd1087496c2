"""The privacy audit of every registered method (``dpspectral audit``).

For each method of :func:`dpspectral._registry.methods` and each neighbouring relation it supports, the
audit runs the mechanism many times on the two data sets of a worst-case neighbouring pair, picks a
scalar statistic and a threshold on a separate *pilot* set of runs, and turns the *audit* runs into a
lower confidence bound on epsilon with :func:`dpspectral.privacy._audit.threshold_epsilon_lower_bound`
(Clopper-Pearson, black box). The bound is compared with the method's claim:

* ``OK``: a certified method whose bound does not exceed its claimed epsilon;
* ``VIOLATION``: a certified method whose bound exceeds its claim (exit status 1 in the CLI);
* ``uncertified``: a method that the registry marks as not certified (a known non-private baseline),
  shown with what the audit finds against the paper's claim;
* ``not audited``: a method the audit has no pair or statistic for yet (another task, an unknown
  relation, a non-private reference, an error on the audit pair), with the reason.

Neighbouring pairs (``C`` = ``row_norm`` = 1, ``b`` = the Priv bound = 1):

* PCA, replace-one and local: ``n - 1`` zero rows and a last row ``C e_1`` versus ``C e_2`` in ``d = 2``
  (:func:`dpspectral.privacy._audit.covariance_pair`, the maximal ``||x x^T - y y^T||_F = sqrt(2) C^2``);
  add/remove: the row ``C e_1`` present or absent. The row comes last, so that a single-pass method
  adds as little noise after it as possible.
* Low-rank methods on ``A`` (2 x 3) itself (linear sketches): rows ``(c e_1, c e_1)`` versus
  ``(c e_1, -c e_1)``, i.e. the last row flipped: ``||A - A'||_F = 2c`` with ``c = C`` under replace-one
  and local (the largest change of a row of norm ``C``) and ``c = b / 2`` under Priv1 / Priv2 (then
  ``A - A' = b e_2 e_1^T``, a unit rank-one change). Methods that factorize ``A^T A`` (detected from
  the shape of a dry run's output) get the second-moment pairs above in ``d = 3``.
* Fisher discriminant (GEP, replace-one, a record is a row and its label): the same 4 rows of norm ``C``
  (``±C e_1``, ``±C e_2``) in each of classes 0 and 1 (class means 0, within-class scatter ∝ I), and a
  last record ``(C e_1, 0)`` versus ``(C e_2, 1)`` in ``d = 2``: the top discriminant direction is
  ``e_1`` on one side and ``e_2`` on the other.

Statistics (each also negated, so both tails are events): the alignment
``<u, a_0>^2 - <u, a_1>^2`` of the first released component ``u`` with the top singular vectors
``a_j`` of the two targets (the scatter matrices for PCA, ``A`` or ``A^T A`` for low-rank, ``e_1`` and
``e_2`` for the Fisher pair, with ``u`` the first discriminant direction normalised); when the
whole released matrix is recoverable (PCA with ``d - k <= 1`` and released ``values`` and ``total``;
low-rank with a right factor), its projection ``<M, D> / ||D||_F`` on the targets' difference ``D`` (the
likelihood-ratio statistic of a Gaussian release); for PCA also the smallest eigenvalue of ``M - S_j``
(which catches mechanisms with positive semi-definite noise such as Wishart: ``M - S_1`` is never
indefinite on ``X_1``). The pilot runs choose one (statistic, direction, threshold) by the bound it
would give at the audit's run count; the audit runs, drawn with other seeds, are used for that single
test only, so its Clopper-Pearson bound keeps its level.

Confidence: the whole audit has family-wise false-positive rate ``alpha`` (default 0.01), split evenly
(Bonferroni) over the (method, relation) rows audited in one invocation; inside a row the level is
split by :func:`~dpspectral.privacy._audit.threshold_epsilon_lower_bound` over its two proportions and two
directions. Every run has its own seed from one ``SeedSequence``, so an audit is deterministic.
"""

from __future__ import annotations

import math
import time
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._registry import Method, methods
from .lowrank._sketch_options import Sketch
from .pca._schedule import WarmupSchedule
from .privacy._audit import (
    clopper_pearson,
    covariance_pair,
    released_matrix_statistic,
    threshold_epsilon_bounds,
    threshold_epsilon_lower_bound,
)
from .privacy._budget import Relation

__all__ = [
    "AUDIT_SETTINGS",
    "FULL",
    "QUICK",
    "AuditCase",
    "AuditPlan",
    "AuditReport",
    "AuditRow",
    "NotAuditedError",
    "ThresholdAudit",
    "audit_case",
    "audit_methods",
    "build_case",
    "max_detectable_epsilon",
    "threshold_audit",
]

#: The privacy parameters every method is run at (the claim audited is what the method then reports).
AUDIT_EPSILON = 1.0
AUDIT_DELTA = 1e-5
#: Public bounds of the pairs: the row norm C and the Priv1/Priv2 change b.
ROW_NORM = 1.0
PRIV_BOUND = 1.0
#: The public sketch seed of the sketching low-rank methods in every audit run.
AUDIT_SKETCH_SEED = 20_251_126
#: Family-wise false-positive rate of a whole audit (Bonferroni over its rows).
FAMILY_ALPHA = 0.01
#: Rows of the PCA pairs unless a method's settings say otherwise.
DEFAULT_ROWS = 2
#: Rows of the Fisher-discriminant (GEP) pairs: spread background rows of two classes + the differing one.
GEP_ROWS = 9

#: Public settings per method: ``n_rows`` (rows of the PCA pair), ``n_isotropic`` (how many of its
#: leading background rows are spread evenly over directions, norm C, instead of zero) and keyword
#: options of the method (passed only when listed in ``method.options``). They make the differing row's
#: influence on the output as visible as the method allows: one full-batch step with a large step size
#: for the stochastic methods; for Private Oja, which shuffles its rows, a single row (the differing one)
#: and a large step size (its noise scales with the step); for
#: DP-PCA one minibatch of the size its private top-eigenvalue histogram needs at epsilon = 1, whose
#: first half (the eigenvalue estimate, which fails on zero rows) is spread and whose second half (the
#: private mean) holds only the differing row, and a large step size.
AUDIT_SETTINGS: dict[str, dict[str, Any]] = {
    "dp_spca": {"sampling_rate": 1.0, "n_steps": 1, "learning_rate": 1000.0},
    "dp_vrpca": {"sampling_rate": 1.0, "n_steps": 1, "n_epochs": 1, "learning_rate": 1000.0},
    "private_oja": {"n_rows": 1, "learning_rate_scale": 1e4},  # one row: its position cannot move (shuffled)
    "dp_pca": {"n_rows": 256, "n_isotropic": 128, "batch_size": 256, "learning_rate_scale": 1e4},
    # one batch: the whole pass is one noisy batch sum of the pair's rows (each batch of a longer pass is
    # the same release on other rows, in parallel composition)
    "minibatch_oja": {"schedule": WarmupSchedule(n_batches=1)},
    "dpsrs": {"sparsity": 1},
    "dp_truncated_rayleigh_flow": {"sparsity": 1},
}
_PAIR_SETTINGS = ("n_rows", "n_isotropic")

#: The registry's tasks (:data:`dpspectral._registry.TASKS`) the audit has pairs and statistics for; the
#: distributed entries are registered under "pca" (DPdisPCA runs on the PCA pairs as one site).
_KNOWN_TASKS = ("pca", "lowrank", "gep")


@dataclass(frozen=True)
class AuditPlan:
    """Run counts of an audit: ``n_pilot`` and ``n_runs`` runs on *each* data set of a pair.

    Not a release plan: the audit itself releases nothing and charges no ledger. Every run calls a
    registered method, which plans, charges (no accountant here) and draws its noise through the
    release pipeline like any other call (:mod:`dpspectral.privacy._pipeline`), seeded with the run's
    own seed so that the audit is reproducible. What the audit knows of a method (its task, relations,
    options, calibrations, whether it needs delta and is certified) is read from the registry
    (:mod:`dpspectral._registry`); :data:`AUDIT_SETTINGS` holds only the audit's own tuning.
    """

    n_pilot: int
    n_runs: int


#: ``dpspectral audit --quick`` (CI): a few hundred runs per data set.
QUICK = AuditPlan(n_pilot=100, n_runs=300)
#: ``dpspectral audit``: thousands of runs per data set (the run recorded in docs/privacy-audit.md).
FULL = AuditPlan(n_pilot=1000, n_runs=5000)


class NotAuditedError(Exception):
    """A (method, relation) the audit has no pair or statistic for; the message is the reason."""


# ----------------------------------------------------------------------------------------------
# the threshold test with a pilot-chosen statistic and threshold
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThresholdAudit:
    """The outcome of :func:`threshold_audit`.

    Attributes
    ----------
    statistic : str
        The chosen statistic; the event is ``sign * T > threshold``.
    sign : int
        +1 (upper tail) or -1 (lower tail).
    threshold : float
    epsilon_lower_bound : float
        ``threshold_epsilon_lower_bound`` of the audit runs at level ``alpha``.
    empirical_epsilon : float
        The same ratio from the raw frequencies of the audit runs (no confidence; may be inf).
    pilot_bound : float
        The bound the pilot runs predicted at the audit's run count (used to choose).
    max_bound : float
        The largest bound ``n_runs`` runs can give (perfectly separated outputs).
    n_pilot, n_runs : int
        Runs per data set.
    alpha, delta : float
    frequencies : tuple of float
        ``(P0[event], P1[event])`` in the audit runs.
    """

    statistic: str
    sign: int
    threshold: float
    epsilon_lower_bound: float
    empirical_epsilon: float
    pilot_bound: float
    max_bound: float
    n_pilot: int
    n_runs: int
    alpha: float
    delta: float
    frequencies: tuple[float, float]

    @property
    def event(self) -> str:
        """The tested event, e.g. ``"alignment > 0.3"``."""
        return f"{self.statistic} {'>' if self.sign > 0 else '<'} {self.sign * self.threshold:.4g}"


def max_detectable_epsilon(n_runs: int, delta: float, alpha: float) -> float:
    """The bound of :func:`~dpspectral.privacy._audit.threshold_epsilon_lower_bound` on separated runs.

    No audit with ``n_runs`` runs per data set at level ``alpha`` can certify more than this.
    """
    lo, _ = clopper_pearson(n_runs, n_runs, alpha / 4)
    _, hi = clopper_pearson(0, n_runs, alpha / 4)
    return math.log((lo - delta) / hi) if lo > delta else 0.0


def _seeds(seed: np.random.SeedSequence, n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct seeds for ``n_runs`` runs on each data set (as :func:`dpspectral.privacy._audit.run_pair`)."""
    s = seed.generate_state(2 * n_runs)
    return s[:n_runs], s[n_runs:]


def _evaluate(sample: Callable[[int, int], np.ndarray], side: int, seeds: np.ndarray) -> np.ndarray:
    return np.array([np.asarray(sample(side, int(s)), dtype=float) for s in seeds], dtype=float)


def _sample_both(sample: Callable[[int, int], np.ndarray], seed: np.random.SeedSequence, n_runs: int,
                 n_jobs: int) -> tuple[np.ndarray, np.ndarray]:
    seeds0, seeds1 = _seeds(seed, n_runs)
    if n_jobs == 1:
        return _evaluate(sample, 0, seeds0), _evaluate(sample, 1, seeds1)
    from joblib import Parallel, delayed

    jobs = [(side, c) for side, s in ((0, seeds0), (1, seeds1)) for c in np.array_split(s, n_jobs) if c.size]
    parts = Parallel(n_jobs=n_jobs)(delayed(_evaluate)(sample, side, c) for side, c in jobs)
    out = [np.concatenate([p for p, (side, _) in zip(parts, jobs, strict=True) if side == j]) for j in (0, 1)]
    return out[0], out[1]


def _candidate_thresholds(a: np.ndarray, b: np.ndarray, max_count: int = 4000) -> np.ndarray:
    """Midpoints between consecutive distinct pooled values (thinned evenly in rank to ``max_count``)."""
    pooled = np.unique(np.concatenate([a, b]))
    if pooled.size < 2:
        return pooled
    mids = (pooled[:-1] + pooled[1:]) / 2
    if mids.size > max_count:
        mids = mids[np.unique(np.linspace(0, mids.size - 1, max_count).round().astype(int))]
    return mids


def _plug_in_epsilon(q0: np.ndarray, q1: np.ndarray, delta: float) -> np.ndarray:
    """``max(ln((q0 - delta) / q1), ln((q1 - delta) / q0), 0)`` for positive frequencies."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.clip(q0 - delta, 1e-300, None) / q1)
        b = np.log(np.clip(q1 - delta, 1e-300, None) / q0)
    return np.maximum(np.maximum(np.where(q0 > delta, a, 0.0), np.where(q1 > delta, b, 0.0)), 0.0)


def _empirical_epsilon(p0: float, p1: float, delta: float) -> float:
    best = 0.0
    for hi, lo in ((p0, p1), (p1, p0)):
        if hi - delta > 0:
            best = max(best, math.inf if lo == 0 else math.log((hi - delta) / lo))
    return best


def _choose_event(p0: np.ndarray, p1: np.ndarray, *, n_runs: int, delta: float,
                  alpha: float) -> tuple[float, int, int, float]:
    """``(projected bound, statistic, sign, threshold)`` of the event the pilot runs favour.

    Every statistic (column) in both directions, at thresholds between the pooled pilot values: the
    smoothed pilot frequencies of ``{sign T > t}``, projected to ``n_runs`` runs, give the bound it would
    reach; the plug-in epsilon breaks ties among events whose projected bound is 0.
    """
    n_pilot = p0.shape[0]
    best: tuple[float, float, int, int, float] | None = None
    for j in range(p0.shape[1]):
        a, b = p0[:, j], p1[:, j]
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            continue
        for sign in (1, -1):
            sa, sb = np.sort(sign * a), np.sort(sign * b)
            ts = _candidate_thresholds(sa, sb)
            if ts.size == 0:
                continue
            q0 = (n_pilot - np.searchsorted(sa, ts, side="right") + 0.5) / (n_pilot + 1)
            q1 = (n_pilot - np.searchsorted(sb, ts, side="right") + 0.5) / (n_pilot + 1)
            bounds = threshold_epsilon_bounds(np.rint(q0 * n_runs), np.rint(q1 * n_runs), n_runs, n_runs,
                                              delta, alpha)
            plug_in = _plug_in_epsilon(q0, q1, delta)
            i = int(np.lexsort((-plug_in, -bounds))[0])
            key = (float(bounds[i]), float(plug_in[i]), j, sign, float(ts[i]))
            if best is None or key[:2] > best[:2]:
                best = key
    if best is None:  # no finite statistic: any fixed event is still a valid test
        best = (0.0, 0.0, 0, 1, 0.0)
    return best[0], best[2], best[3], best[4]


def threshold_audit(
    sample: Callable[[int, int], np.ndarray],
    names: Sequence[str],
    *,
    delta: float,
    alpha: float,
    n_pilot: int,
    n_runs: int,
    seed: int | np.random.SeedSequence = 0,
    n_jobs: int = 1,
) -> ThresholdAudit:
    """Lower confidence bound on epsilon with a statistic and threshold chosen on pilot runs.

    Parameters
    ----------
    sample : callable(side, seed) -> array of shape (len(names),)
        One run of the mechanism on data set ``side`` (0 or 1) with the integer ``seed``; returns the
        candidate statistics of its output.
    names : sequence of str
        Names of the candidate statistics.
    delta : float
        The claimed delta.
    alpha : float
        Level of the bound: it exceeds the mechanism's true epsilon (at ``delta``) with probability at
        most ``alpha``.
    n_pilot, n_runs : int
        Runs per data set for choosing and for the test.
    seed : int or SeedSequence
        The pilot and audit runs get disjoint seeds from it.
    n_jobs : int
        Processes (joblib); the result does not depend on it.

    Returns
    -------
    ThresholdAudit

    Notes
    -----
    Every candidate statistic is tried in both directions (``T`` and ``-T``) at thresholds between the
    pooled pilot values; the one whose pilot frequencies, projected to ``n_runs`` runs, give the
    largest bound is tested on the audit runs. The audit runs play no part in the choice, so the
    single test keeps its level ``alpha``.
    """
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    pilot_ss, audit_ss = ss.spawn(2)
    p0, p1 = _sample_both(sample, pilot_ss, n_pilot, n_jobs)
    p0, p1 = p0.reshape(n_pilot, -1), p1.reshape(n_pilot, -1)
    if p0.shape[1] != len(names):
        raise ValueError(f"sample returned {p0.shape[1]} statistics for {len(names)} names.")
    pilot_bound, j, sign, threshold = _choose_event(p0, p1, n_runs=n_runs, delta=delta, alpha=alpha)
    a0, a1 = _sample_both(sample, audit_ss, n_runs, n_jobs)
    t0 = sign * a0.reshape(n_runs, -1)[:, j]
    t1 = sign * a1.reshape(n_runs, -1)[:, j]
    bound = threshold_epsilon_lower_bound(t0, t1, threshold, delta, alpha)
    f0, f1 = float(np.mean(t0 > threshold)), float(np.mean(t1 > threshold))
    return ThresholdAudit(
        statistic=names[j], sign=sign, threshold=threshold, epsilon_lower_bound=bound,
        empirical_epsilon=_empirical_epsilon(f0, f1, delta), pilot_bound=pilot_bound,
        max_bound=max_detectable_epsilon(n_runs, delta, alpha), n_pilot=n_pilot, n_runs=n_runs,
        alpha=alpha, delta=delta, frequencies=(f0, f1),
    )


# ----------------------------------------------------------------------------------------------
# worst-case pairs and statistics for registered methods
# ----------------------------------------------------------------------------------------------


class _Pair(NamedTuple):
    """Two neighbouring data sets, the directions ``a_0``, ``a_1`` that tell their outputs apart (top
    singular vectors of what the method estimates on each), and a description."""

    data0: np.ndarray
    data1: np.ndarray
    directions: tuple[np.ndarray, np.ndarray]
    description: str


@dataclass(frozen=True)
class AuditCase:
    """One (method, relation) ready to audit: its pair, keyword arguments, statistics and claim."""

    method: Method
    relation: Relation
    data: tuple[Any, Any]
    targets: tuple[np.ndarray, np.ndarray]
    directions: tuple[np.ndarray, np.ndarray]
    kwargs: dict[str, Any]
    k: int
    statistics: tuple[str, ...]
    pair: str
    claimed_epsilon: float
    claimed_delta: float
    certified: bool
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``"method/relation"``."""
        return f"{self.method.name}/{self.relation.value}"

    def run(self, side: int, seed: int) -> Any:
        """The method on data set ``side`` with ``random_state=seed``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _call(self.method, self.data[side], self.k, seed, self.kwargs)

    def sample(self, side: int, seed: int) -> np.ndarray:
        """The candidate statistics of one run (``threshold_audit``'s ``sample``)."""
        return _statistics(self.method.task, self.run(side, seed), self.targets, self.directions,
                           self.statistics)


def _call(method: Method, data: Any, k: int, seed: int, kwargs: dict[str, Any]) -> Any:
    """``method`` on one data set of a pair (for ``task="gep"``, the pair's data are ``(X, y)``)."""
    if method.task == "gep":
        X, y = data
        return method.function(X, y, k, random_state=seed, **kwargs)
    return method.function(data, k, random_state=seed, **kwargs)


def _released_pca_matrix(result: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Full eigenvectors and eigenvalues of the released matrix, when the result determines them
    (``k = d``, or ``k = d - 1`` with the released trace ``total``)."""
    V, values = np.asarray(result.components), result.values
    d, k = V.shape
    if values is None:
        return None
    values = np.asarray(values, dtype=float)
    if k == d:
        return V, values
    if k == d - 1 and result.total is not None:
        rest = np.linalg.svd(V, full_matrices=True)[0][:, k:]  # the orthogonal complement
        return np.hstack([V, rest]), np.r_[values, float(result.total) - float(np.sum(values))]
    return None


def _statistics(task: str, result: Any, targets: tuple[np.ndarray, np.ndarray],
                directions: tuple[np.ndarray, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    T0, T1 = targets
    a0, a1 = directions
    D = T0 - T1
    out: dict[str, float] = {}
    if task == "gep":
        w = np.asarray(result.vectors)[:, 0]
        u = w / max(float(np.linalg.norm(w)), 1e-300)
        out["alignment"] = float((u @ a0) ** 2 - (u @ a1) ** 2)
    elif task == "pca":
        u = np.asarray(result.components)[:, 0]
        out["alignment"] = float((u @ a0) ** 2 - (u @ a1) ** 2)
        full = _released_pca_matrix(result)
        if full is not None:
            V, values = full
            out["projection"] = released_matrix_statistic(D)(V, values)
            M = (V * values) @ V.T
            out["min_eig(M - S0)"] = float(np.linalg.eigvalsh(M - T0)[0])
            out["min_eig(M - S1)"] = float(np.linalg.eigvalsh(M - T1)[0])
    else:
        u = _left_factor(result)[:, 0]
        out["alignment"] = float((u @ a0) ** 2 - (u @ a1) ** 2)
        if result.V is not None and result.U is not None:
            R = result.gram() if hasattr(result, "gram") else result.reconstruct()  # A^T A methods
            out["projection"] = float(np.sum(R * D) / np.linalg.norm(D))
    return np.array([out.get(n, np.nan) for n in names])


def _left_factor(result: Any) -> np.ndarray:
    """U, or V for a subspace-only release (hardt_roth: V of ``A``, the directions of ``A^T A``)."""
    return np.asarray(result.U if result.U is not None else result.V)


def _isotropic_rows(count: int, norm: float) -> np.ndarray:
    """``count`` rows of norm ``norm`` at angles ``pi j / count`` in a scrambled order: their scatter is
    ``count norm^2 / 2`` times the identity (no preferred direction), and consecutive rows differ."""
    step = max(1, round(count * 0.618))
    while math.gcd(step, count) != 1:
        step += 1
    theta = np.pi * ((np.arange(count) * step) % count) / count
    return norm * np.c_[np.cos(theta), np.sin(theta)]


def _pca_pair(relation: Relation, n_rows: int, n_isotropic: int = 0) -> _Pair:
    rows_relation = Relation.ADD_REMOVE if relation is Relation.ADD_REMOVE else Relation.REPLACE_ONE
    X0, X1, _ = covariance_pair(rows_relation, d=2, row_norm=ROW_NORM, n_background=n_rows - 1)
    X0, X1 = X0[::-1].copy(), X1[::-1].copy()  # the differing row last
    n_zero = n_rows - 1 - n_isotropic
    bg = f"{n_zero} zero row{'s' if n_zero != 1 else ''}"
    if n_isotropic:
        spread = _isotropic_rows(n_isotropic, ROW_NORM)
        X0[:n_isotropic] = spread
        X1[:n_isotropic] = spread
        bg = f"{n_isotropic} spread rows (scatter ∝ I) + " + bg
    if rows_relation is Relation.ADD_REMOVE:
        desc = f"{bg} + last row C e1 present / absent (d = 2)"
    else:
        desc = f"{bg} + last row C e1 / C e2 (d = 2)"
    e = np.eye(2)
    return _Pair(X0, X1, (e[0], e[1]), desc)


def _gep_pair(relation: Relation, n_rows: int) -> _Pair:
    """Fisher-discriminant pair (d = 2): the same ``h`` spread rows of norm C and their negatives in each
    of classes 0 and 1 (class means 0, within-class scatter ∝ I), and a last record (C e1, class 0) /
    (C e2, class 1): replace-one, label included. The background has no between-class scatter, so the
    top discriminant direction is e1 on one side and e2 on the other."""
    if relation is not Relation.REPLACE_ONE:
        raise NotAuditedError(f"no Fisher-discriminant pair for relation {relation.value!r} "
                              "(replace-one only)")
    half = max(1, (n_rows - 1) // 4)
    spread = _isotropic_rows(half, ROW_NORM)
    spread = np.vstack([spread, -spread])  # mean 0: the differing record alone sets the class means apart
    h = 2 * half
    bg, labels = np.vstack([spread, spread]), np.r_[np.zeros(h, int), np.ones(h, int)]
    e = np.eye(2)
    X0, X1 = np.vstack([bg, ROW_NORM * e[0]]), np.vstack([bg, ROW_NORM * e[1]])
    y0, y1 = np.r_[labels, 0], np.r_[labels, 1]
    return _Pair((X0, y0), (X1, y1), (e[0], e[1]),  # type: ignore[arg-type]
                 f"the same {h} spread rows in classes 0 and 1 + last record (C e1, 0) / (C e2, 1) (d = 2)")


def _lowrank_pair(relation: Relation, quadratic: bool) -> _Pair:
    """Pairs of 2 x 3 matrices (m != n, so the shape of a factor tells A from A^T A)."""
    e3 = np.eye(3)
    if relation in (Relation.PRIV1, Relation.PRIV2):
        if quadratic:  # A^T A changes by b^2 e1 e1^T
            A0 = np.zeros((2, 3))
            A1 = A0.copy()
            A1[1, 0] = PRIV_BOUND
            return _Pair(A0, A1, (e3[1], e3[0]), "A = 0 / b e2 e1^T (2 x 3); target A^T A")
        c = PRIV_BOUND / 2
        A0 = np.array([[c, 0.0, 0.0], [c, 0.0, 0.0]])
        A1 = np.array([[c, 0.0, 0.0], [-c, 0.0, 0.0]])
        return _Pair(A0, A1, (np.array([1.0, 1.0]) / math.sqrt(2), np.array([1.0, -1.0]) / math.sqrt(2)),
                     "rows (b/2 e1, b/2 e1) / (b/2 e1, -b/2 e1): A - A' = b e2 e1^T (2 x 3)")
    if relation in (Relation.REPLACE_ONE, Relation.LOCAL, Relation.ADD_REMOVE):
        if quadratic:
            rows = Relation.ADD_REMOVE if relation is Relation.ADD_REMOVE else Relation.REPLACE_ONE
            X0, X1, _ = covariance_pair(rows, d=3, row_norm=ROW_NORM, n_background=1)
            if rows is Relation.ADD_REMOVE:
                return _Pair(X0[::-1].copy(), X1.copy(), (e3[0], e3[1]),
                             "zero row + last row C e1 present / absent (n = 3); target A^T A")
            return _Pair(X0[::-1].copy(), X1[::-1].copy(), (e3[0], e3[1]),
                         "zero row + last row C e1 / C e2 (n = 3); target A^T A")
        if relation is Relation.ADD_REMOVE:
            raise NotAuditedError("add/remove changes the number of rows of A, so the factors of the two "
                                  "data sets cannot be compared")
        A0 = np.array([[ROW_NORM, 0.0, 0.0], [ROW_NORM, 0.0, 0.0]])
        A1 = np.array([[ROW_NORM, 0.0, 0.0], [-ROW_NORM, 0.0, 0.0]])
        return _Pair(A0, A1, (np.array([1.0, 1.0]) / math.sqrt(2), np.array([1.0, -1.0]) / math.sqrt(2)),
                     "rows (C e1, C e1) / (C e1, -C e1): the last row flipped (2 x 3)")
    raise NotAuditedError(f"no worst-case pair for relation {relation.value!r} yet")


def _method_kwargs(method: Method, relation: Relation, epsilon: float,
                   delta: float) -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs: dict[str, Any] = {"epsilon": epsilon, "relation": relation,
                              "calibration": method.default_calibration}
    if method.needs_delta:
        kwargs["delta"] = delta
    if method.task in ("pca", "gep") or "row_norm" in method.options:
        kwargs["row_norm"] = ROW_NORM
    if method.task == "lowrank" and "bound" in method.options:
        kwargs["bound"] = PRIV_BOUND
    if method.task == "gep":  # the pair's labels are the public classes (no label-set release to audit)
        kwargs["classes"] = (0, 1)
    if "sketch" in method.options and method.needs_delta:  # not optimal_space_lrf's sketch kind
        # the sketches' randomness is public (the adversary knows it): one fixed seed for every run, so
        # that the runs differ only in the secret noise and the audit is reproducible
        kwargs["sketch"] = Sketch(seed=AUDIT_SKETCH_SEED)
    used: dict[str, Any] = {}
    for key, value in AUDIT_SETTINGS.get(method.name, {}).items():
        if key in method.options:
            kwargs[key] = value
            used[key] = value
        elif key in _PAIR_SETTINGS:
            used[key] = value
    return kwargs, used


def _claim(result: Any, method: Method) -> tuple[float, float, bool]:
    p = getattr(result, "privacy", None)
    if p is None:
        raise NotAuditedError("the result carries no privacy report")
    certified = bool(method.certified and p.certified)
    if certified:
        return float(p.epsilon), float(p.delta), True
    return float(p.requested_epsilon), float(p.requested_delta), False


def _unsupported(method: Method) -> str | None:
    """Why the audit cannot handle ``method`` at all (None when it can try)."""
    if not method.private:
        return "non-private reference (it makes no privacy claim)"
    if method.task not in _KNOWN_TASKS:
        return f"task {method.task!r} has no audit pair or statistic yet (known: {', '.join(_KNOWN_TASKS)})"
    return None


def build_case(method: Method, relation: Relation | None = None, *, seed: int = 0,
               epsilon: float = AUDIT_EPSILON, delta: float = AUDIT_DELTA) -> AuditCase:
    """The audit case of ``method`` under ``relation`` (default: its first), run at (epsilon, delta).

    Two dry runs (one per data set) find the statistics the output supports and the claim (what the
    method then reports; for an uncertified method, the requested (epsilon, delta), its paper's claim).

    Raises
    ------
    NotAuditedError
        With the reason, when the method cannot be audited yet.
    """
    rel = method.relations[0] if relation is None else relation
    reason = _unsupported(method)
    if reason is not None:
        raise NotAuditedError(reason)
    kwargs, used = _method_kwargs(method, rel, epsilon, delta)
    k = 1
    dry_seed = int(np.random.SeedSequence([seed, 0xD27]).generate_state(1)[0])

    def call(data: np.ndarray) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _call(method, data, k, dry_seed, kwargs)

    try:
        if method.task == "gep":
            pair = _gep_pair(rel, int(used.get("n_rows", GEP_ROWS)))
            quadratic = True
        elif method.task == "pca":
            pair = _pca_pair(rel, int(used.get("n_rows", DEFAULT_ROWS)), int(used.get("n_isotropic", 0)))
            quadratic = True
        else:
            # which matrix does the method factorize? A (m = 2 rows of U) or A^T A (n = 3 rows)
            probe = call(np.array([[ROW_NORM, 0.0, 0.0], [ROW_NORM, 0.0, 0.0]]))
            rows = int(_left_factor(probe).shape[0])
            if rows not in (2, 3):
                raise NotAuditedError(f"its left factor has {rows} rows on a 2 x 3 matrix "
                                      "(neither A nor A^T A)")
            quadratic = rows == 3
            pair = _lowrank_pair(rel, quadratic)
        data = (pair.data0, pair.data1)
        mats = tuple(x[0] if method.task == "gep" else x for x in data)
        targets = (mats[0].T @ mats[0], mats[1].T @ mats[1]) if quadratic else data
        results = [call(x) for x in data]
    except NotAuditedError:
        raise
    except Exception as exc:  # a method that cannot run on the pair is reported, not hidden
        raise NotAuditedError(f"error on the audit pair: {type(exc).__name__}: "
                              f"{' '.join(str(exc).split())[:200]}") from exc
    names = ["alignment"]
    if method.task == "pca":
        if all(_released_pca_matrix(r) is not None for r in results):
            names += ["projection", "min_eig(M - S0)", "min_eig(M - S1)"]
    elif method.task == "lowrank" and \
            all(r.V is not None and r.V.shape[0] == targets[0].shape[1] for r in results) and \
            all(r.U is not None and np.asarray(r.U).shape[0] == targets[0].shape[0] for r in results):
        names.append("projection")
    claims = [_claim(r, method) for r in results]
    eps = max(c[0] for c in claims)
    dlt = max(c[1] for c in claims)
    return AuditCase(
        method=method, relation=rel, data=data, targets=targets, directions=pair.directions,
        kwargs=kwargs, k=k, statistics=tuple(names), pair=pair.description, claimed_epsilon=eps,
        claimed_delta=dlt, certified=all(c[2] for c in claims), settings=used,
    )


# ----------------------------------------------------------------------------------------------
# rows and the report
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditRow:
    """One line of the report: a (method, relation) and what the audit found."""

    method: str
    task: str
    model: str
    relation: str
    certified: bool
    verdict: str
    note: str
    claimed_epsilon: float | None = None
    claimed_delta: float | None = None
    n_pilot: int = 0
    n_runs: int = 0
    statistic: str | None = None
    epsilon_lower_bound: float | None = None
    max_bound: float | None = None
    empirical_epsilon: float | None = None
    frequencies: tuple[float, float] | None = None
    alpha: float | None = None
    pair: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def audited(self) -> bool:
        """Whether the row was audited (OK, VIOLATION or uncertified), not skipped."""
        return self.verdict in ("OK", "VIOLATION", "uncertified")

    def cell(self) -> str:
        """The verdict column of the Markdown table."""
        if self.verdict == "not audited":
            return f"not audited: {self.note}"
        if self.verdict == "uncertified":
            return f"uncertified: {self.note}"
        return f"**{self.verdict}**" if self.verdict == "VIOLATION" else self.verdict


def _case_seed(seed: int, method: str, relation: str) -> np.random.SeedSequence:
    # stable across subsets and orderings of the registry: a row's runs depend on its name only
    return np.random.SeedSequence([seed, zlib.crc32(method.encode()), zlib.crc32(relation.encode())])


def audit_case(case: AuditCase, *, plan: AuditPlan, alpha: float, seed: int = 0,
               n_jobs: int = 1) -> AuditRow:
    """Audit one case at level ``alpha`` (this row's share of the family-wise rate)."""
    start = time.perf_counter()
    m = case.method
    result = threshold_audit(
        case.sample, case.statistics, delta=case.claimed_delta, alpha=alpha, n_pilot=plan.n_pilot,
        n_runs=plan.n_runs, seed=_case_seed(seed, m.name, case.relation.value), n_jobs=n_jobs,
    )
    lb = result.epsilon_lower_bound
    if case.certified:
        verdict = "VIOLATION" if lb > case.claimed_epsilon else "OK"
        note = (f"epsilon >= {lb:.3g} > claimed {case.claimed_epsilon:.3g}" if verdict == "VIOLATION"
                else "")
    else:
        verdict = "uncertified"
        if lb > case.claimed_epsilon:
            note = (f"epsilon >= {lb:.3g} found: NOT ({case.claimed_epsilon:g}, "
                    f"{case.claimed_delta:g})-DP as its paper claims")
        else:
            note = (f"epsilon >= {lb:.3g} found, below the paper's claimed {case.claimed_epsilon:g} "
                    "(no violation detected at this run count)")
    return AuditRow(
        method=m.name, task=m.task, model=m.model, relation=case.relation.value, certified=case.certified,
        verdict=verdict, note=note, claimed_epsilon=case.claimed_epsilon, claimed_delta=case.claimed_delta,
        n_pilot=plan.n_pilot, n_runs=plan.n_runs, statistic=result.event, epsilon_lower_bound=lb,
        max_bound=result.max_bound, empirical_epsilon=result.empirical_epsilon,
        frequencies=result.frequencies, alpha=alpha, pair=case.pair, settings=dict(case.settings),
        seconds=time.perf_counter() - start,
    )


@dataclass(frozen=True)
class AuditReport:
    """Every row of one audit, with its settings."""

    rows: tuple[AuditRow, ...]
    quick: bool
    plan: AuditPlan
    family_alpha: float
    row_alpha: float | None
    epsilon: float
    delta: float
    seed: int
    seconds: float

    @property
    def violations(self) -> list[AuditRow]:
        """Certified rows whose lower bound exceeds their claim."""
        return [r for r in self.rows if r.verdict == "VIOLATION"]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (non-finite floats as strings)."""
        return {
            "quick": self.quick,
            "n_pilot": self.plan.n_pilot,
            "n_runs": self.plan.n_runs,
            "family_alpha": self.family_alpha,
            "row_alpha": self.row_alpha,
            "requested_epsilon": self.epsilon,
            "requested_delta": self.delta,
            "seed": self.seed,
            "seconds": self.seconds,
            "violations": [f"{r.method}/{r.relation}" for r in self.violations],
            "rows": [_jsonable(asdict(r)) for r in self.rows],
        }

    def markdown(self) -> str:
        """The report's Markdown table, one line per (method, relation)."""
        lines = [
            "| method | relation | claimed (ε, δ) | certified | runs per data set | statistic (event) | "
            "ε lower bound | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            if r.audited:
                claim = f"({r.claimed_epsilon:.4g}, {r.claimed_delta:g})"
                runs = f"{r.n_runs:,} (+{r.n_pilot:,} pilot)"
                stat = f"`{r.statistic}`"
                bound = f"{r.epsilon_lower_bound:.3f} (max {r.max_bound:.2f})"
            else:
                claim = runs = stat = bound = "—"
            cert = "yes" if r.certified else "no"
            lines.append(f"| `{r.method}` | {r.relation} | {claim} | {cert} | {runs} | {stat} | {bound} | "
                         f"{r.cell()} |")
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        """One paragraph: what was audited, at which confidence, and the outcome."""
        audited = [r for r in self.rows if r.audited]
        skipped = [r for r in self.rows if not r.audited]
        kind = "Quick audit" if self.quick else ("Full audit" if self.plan == FULL else "Audit")
        text = (f"{kind}: {len(audited)} (method, relation) rows audited "
                f"with {self.plan.n_runs:,} runs per data set (+{self.plan.n_pilot:,} pilot runs), requested "
                f"(epsilon, delta) = ({self.epsilon:g}, {self.delta:g}); family-wise false-positive rate "
                f"{self.family_alpha:g}")
        if self.row_alpha is not None:
            text += f" (Bonferroni: {self.row_alpha:.3g} per row)"
        text += f"; {len(skipped)} not audited; {self.seconds:.1f} s. "
        v = self.violations
        text += (f"VIOLATIONS: {', '.join(f'{r.method}/{r.relation}' for r in v)}." if v
                 else "No certified method exceeds its claim.")
        return text


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, np.generic):
        return _jsonable(obj.item())
    return obj


def _not_audited(method: Method, relation: Relation | None, reason: str) -> AuditRow:
    return AuditRow(method=method.name, task=method.task, model=method.model,
                    relation="—" if relation is None else relation.value,
                    certified=method.certified, verdict="not audited", note=reason)


def audit_methods(
    names: Sequence[str] | None = None,
    *,
    quick: bool = False,
    plan: AuditPlan | None = None,
    alpha: float = FAMILY_ALPHA,
    seed: int = 0,
    n_jobs: int = 1,
    epsilon: float = AUDIT_EPSILON,
    delta: float = AUDIT_DELTA,
    on_row: Callable[[AuditRow], None] | None = None,
) -> AuditReport:
    """Audit registered methods (all of them by default), every relation each supports.

    Parameters
    ----------
    names : sequence of str, optional
        Registry names; default every registered method (read at call time).
    quick : bool
        :data:`QUICK` run counts (CI) instead of :data:`FULL`.
    plan : AuditPlan, optional
        Explicit run counts (overrides ``quick``).
    alpha : float
        Family-wise false-positive rate, split evenly over the audited rows.
    seed : int
        Base seed; each row's runs are seeded from it and the row's name.
    n_jobs : int
        Processes per row (joblib); results do not depend on it.
    epsilon, delta : float
        What every method is asked for (delta only where it takes one).
    on_row : callable(AuditRow), optional
        Called as each row is finished (progress).

    Returns
    -------
    AuditReport
    """
    from ._registry import get_method

    if not 0 < alpha < 1:
        raise ValueError(f"The 'alpha' parameter of audit_methods must be in (0, 1). Got {alpha!r} instead.")
    chosen = methods() if not names else [get_method(n, owner="dpspectral audit") for n in names]
    plan = plan or (QUICK if quick else FULL)
    start = time.perf_counter()
    slots: list[AuditCase | AuditRow] = []
    for m in chosen:
        reason = _unsupported(m)
        if reason is not None:
            slots.append(_not_audited(m, None, reason))
            continue
        for rel in m.relations:
            try:
                slots.append(build_case(m, rel, seed=seed, epsilon=epsilon, delta=delta))
            except NotAuditedError as exc:
                slots.append(_not_audited(m, rel, str(exc)))
    n_cases = sum(isinstance(s, AuditCase) for s in slots)
    row_alpha = alpha / n_cases if n_cases else None
    rows: list[AuditRow] = []
    for s in slots:
        if isinstance(s, AuditCase):
            assert row_alpha is not None
            row = audit_case(s, plan=plan, alpha=row_alpha, seed=seed, n_jobs=n_jobs)
        else:
            row = s
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return AuditReport(
        rows=tuple(rows), quick=quick and plan == QUICK, plan=plan, family_alpha=alpha, row_alpha=row_alpha,
        epsilon=epsilon, delta=delta, seed=seed, seconds=time.perf_counter() - start,
    )
