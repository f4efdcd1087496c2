"""One typed table of every algorithm, for every task: PCA, low-rank, GEP (Fisher discriminant), distributed.

Each entry (:class:`Method`, a frozen dataclass) states what a user needs to choose it: the task and the
estimator that runs it, the trust model, the neighbouring relations it protects, pure or approximate DP
(whether it needs ``delta``), whether our accountant certifies it, its calibrations, how many passes it
makes over the data, the order of its memory, and when to choose it; then the callable.

The estimators (:class:`~dpspectral.DPPCA`, :class:`~dpspectral.DPLowRank`,
:class:`~dpspectral.DPFisherDiscriminant`, :class:`~dpspectral.DistributedDPPCA`), the GEP entry points
(:mod:`dpspectral.gep._solve`), the CLI, the audit, the demo, the benchmarks, the contract tests and the
README's table all read this table, so an algorithm is wired in by adding one entry here.

This module is a leaf: it imports no mechanism. Every callable is a :class:`FunctionRef` (module and
attribute), imported the first time the entry's ``function`` (or ``solver``) is read, so any module,
``gep/solve.py`` included, may import the registry without an import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .privacy._budget import Relation

__all__ = ["AUTO_MATRIX_BYTES", "ESTIMATORS", "MODELS", "TASKS", "Choice", "FunctionRef", "Method",
           "choose_method", "get_method", "methods", "methods_markdown"]

Task = Literal["pca", "lowrank", "gep", "distributed"]
Model = Literal["central", "local", "streaming", "continual", "distributed"]
PrivacyKind = Literal["pure", "approximate", "none"]

#: The tasks, in the order of the table.
TASKS: tuple[str, ...] = ("pca", "lowrank", "gep", "distributed")
#: The trust models.
MODELS: tuple[str, ...] = ("central", "local", "streaming", "continual", "distributed")
#: The scikit-learn estimator that runs each task's methods.
ESTIMATORS: dict[str, str] = {"pca": "DPPCA", "lowrank": "DPLowRank", "gep": "DPFisherDiscriminant",
                              "distributed": "DistributedDPPCA"}


class FunctionRef:
    """A callable named by its module and attribute, imported when first used.

    ``FunctionRef("dpspectral.pca._covariance", "analyze_gauss")`` is that function;
    ``FunctionRef("dpspectral.gep._solve", "fda_method", "dpsr")`` is ``fda_method("dpsr")`` (a factory
    called with the extra arguments). A :class:`Method` replaces its references by their targets the
    first time they are read, so callers see the function itself (no extra frame: the mechanisms'
    warning ``stacklevel`` still points at the caller).
    """

    __slots__ = ("module", "attribute", "args")

    def __init__(self, module: str, attribute: str, *args: Any) -> None:
        self.module = module
        self.attribute = attribute
        self.args = args

    def resolve(self) -> Callable[..., Any]:
        """Import the module and return the target (the factory's result when ``args`` are given)."""
        target = getattr(importlib.import_module(self.module), self.attribute)
        return target(*self.args) if self.args else target  # type: ignore[no-any-return]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        args = f"({', '.join(map(repr, self.args))})" if self.args else ""
        return f"FunctionRef({self.module}.{self.attribute}{args})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FunctionRef, (self.module, self.attribute, *self.args))


@dataclass(frozen=True)
class Method:
    """One registered algorithm: what a user needs to choose it, and its callable.

    Attributes
    ----------
    name : str
        The string that ``method=`` takes.
    family : str
        e.g. ``"covariance"``.
    paper : str
        Where the algorithm comes from.
    model : {"central", "local", "streaming", "continual", "distributed"}
        The trust model: a curator holds the data (central), each user randomises their own record
        (local), one pass over a stream (streaming), a release after every update (continual), or
        sites that keep their rows (distributed).
    relations : tuple of Relation
        Neighbouring relations it protects; the first is its default. Empty for a non-private reference.
    certified : bool
        Whether its default calibration is certified by our accountant (False for known non-private
        baselines).
    calibrations : tuple of str
        Calibrations it accepts; the first is its default.
    function : callable
        The entry point; its signature depends on ``task`` (below). Stored as a :class:`FunctionRef`
        and replaced by the imported function the first time it is read.
    summary : str
        One line for tables: what the algorithm does.
    needs_delta : bool
        False for pure epsilon-DP mechanisms (and the non-private ones): ``delta`` is not required.
    options : frozenset of str
        Optional keyword arguments the function accepts beyond the common ones (``X, k, epsilon,
        delta, row_norm, relation, calibration, accountant, random_state, on_norm_violation``), e.g.
        ``"centering"``; the estimator passes its matching parameters only to methods that take them.
    task : {"pca", "lowrank", "gep", "distributed"}
        The calling convention of ``function``: ``"pca"`` (``function(X, k, *, epsilon, delta,
        row_norm, relation, calibration, accountant, random_state, ...) -> SubspaceResult``; used by
        :class:`~dpspectral.DPPCA`), ``"lowrank"`` (``function(A, k, *, epsilon, delta, relation,
        calibration, accountant, random_state, ...) -> LowRankResult``; used by
        :class:`~dpspectral.DPLowRank`) or ``"gep"`` (``function(X, y, k, *, epsilon, delta, row_norm,
        relation, calibration, accountant, random_state, regularization, ...) -> GEPResult``: Fisher
        discriminant directions of labelled rows; used by :class:`~dpspectral.DPFisherDiscriminant`).
    private : bool
        False for a non-private reference algorithm (it takes no privacy parameters).
    passes : str
        Passes over the private data (``"1"``; ``"n_epochs"``; ``"1 per site"``; ...).
    memory : str
        Order of the working memory in the data's dimensions (d features; m x n for a low-rank matrix;
        sketch sizes t ~ k/alpha, v ~ k/alpha^2), e.g. ``"O(d^2)"``, ``"O(dk)"``.
    regime : str
        One line: when to choose it.
    other_tasks : tuple of str
        Further tasks whose estimator also runs ``function`` (``"distributed"`` for DPdisPCA: the same
        callable takes one matrix split into ``n_sites`` sites, or the sites themselves).
    solver : callable or None
        ``task="gep"`` only: the solver on a scatter pair, ``solver(pair, k, [sparsity,] *, epsilon,
        delta, regularization, calibration, accountant, random_state, ...) -> GEPResult`` (used by
        :func:`~dpspectral.gep.solve_pair`); a :class:`FunctionRef` until first read.
    sparse : bool
        ``task="gep"`` only: the solver needs ``sparsity`` (s, non-zeros per direction) as its third
        argument.
    """

    name: str
    family: str
    paper: str
    model: Model
    relations: tuple[Relation, ...]
    certified: bool
    calibrations: tuple[str, ...]
    function: Callable[..., Any] = field(compare=False)
    summary: str
    needs_delta: bool = True
    options: frozenset[str] = frozenset()
    task: Task = "pca"
    private: bool = True
    passes: str = "1"
    memory: str = ""
    regime: str = ""
    other_tasks: tuple[Task, ...] = ()
    solver: Callable[..., Any] | None = field(default=None, compare=False)
    sparse: bool = False

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if type(value) is FunctionRef:  # first read of a lazy callable: import it once, keep the target
            value = value.resolve()
            object.__setattr__(self, name, value)
        return value

    @property
    def default_calibration(self) -> str:
        """The first listed calibration."""
        return self.calibrations[0]

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every task whose estimator runs this entry (``task`` first)."""
        return (self.task, *self.other_tasks)

    @property
    def estimators(self) -> tuple[str, ...]:
        """Names of the scikit-learn estimators that run this entry."""
        return tuple(ESTIMATORS[t] for t in self.tasks if t in ESTIMATORS)

    @property
    def privacy_kind(self) -> PrivacyKind:
        """``"pure"`` (epsilon-DP, no delta), ``"approximate"`` ((epsilon, delta)-DP) or ``"none"``.

        ``"none"`` for a non-private reference and for a known non-private baseline (not certified).
        """
        if not self.private or not self.certified:
            return "none"
        return "approximate" if self.needs_delta else "pure"

    @property
    def privacy_label(self) -> str:
        """The words of the README's table: certified, uncertified (not DP), or non-private reference."""
        if not self.private:
            return "non-private reference"
        return "certified" if self.certified else "**uncertified** (not DP)"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready row (``dpspectral methods --json``): every field but the callables."""
        return {
            "name": self.name, "task": self.task, "tasks": list(self.tasks),
            "estimators": list(self.estimators), "family": self.family, "model": self.model,
            "relations": [r.value for r in self.relations],
            "default_relation": self.relations[0].value if self.relations else None,
            "private": self.private, "certified": self.certified, "privacy_kind": self.privacy_kind,
            "needs_delta": self.needs_delta, "calibrations": list(self.calibrations),
            "default_calibration": self.default_calibration, "passes": self.passes,
            "memory": self.memory, "regime": self.regime, "options": sorted(self.options),
            "sparse": self.sparse, "paper": self.paper, "summary": self.summary,
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def _ref(module: str, attribute: str, *args: Any) -> Callable[..., Any]:
    """A :class:`FunctionRef` under ``dpspectral.``, typed as the callable it stands for."""
    return FunctionRef(f"dpspectral.{module}", attribute, *args)


def _fda(name: str) -> Callable[..., Any]:
    """The registry callable of a GEP entry: ``fda_method(name)`` (:func:`dpspectral.gep.fda_method`)."""
    return _ref("gep._solve", "fda_method", name)


def _reference(*, summary: str, measures: str, relations: tuple[Relation, ...] = (),
               **fields: Any) -> Method:
    """The entry of a non-private reference algorithm: no privacy parameters, never certified, never for
    private data (``measures``: what it is the reference for, ending the entry's ``regime``)."""
    return Method(relations=relations, certified=False, calibrations=("none",), needs_delta=False,
                  private=False, summary=f"Non-private reference: {summary}",
                  regime=f"Never on private data: the non-private reference {measures}", **fields)


def _certified(name: str, module: str, *, attribute: str | None = None,
               calibrations: tuple[str, ...] = ("tight", "paper"), **fields: Any) -> Method:
    """The entry of a private algorithm our accountant certifies: ``module``'s function ``name`` (or
    ``attribute``), with the tight calibration first and, unless ``calibrations`` says otherwise, the
    paper's."""
    return Method(name=name, certified=True, calibrations=calibrations,
                  function=_ref(module, attribute or name), **fields)


def _lowrank(name: str, module: str, **fields: Any) -> Method:
    """A certified low-rank factorization: ``function(A, k, ...) -> LowRankResult``, run by DPLowRank."""
    return _certified(name, module, family="lowrank", task="lowrank", **fields)


_R1, _AR = Relation.REPLACE_ONE, Relation.ADD_REMOVE
_P1, _P2 = Relation.PRIV1, Relation.PRIV2
_COVARIANCE_OPTIONS = frozenset({"centering", "mean_share", "release_count", "accounting",
                                 "show_progress"})
#: analyze_gauss and mod_sulq also clip the rows (uncentred or privately centred) at a private quantile of
#: their norms, and take the noise's shape.
_ADAPTIVE_OPTIONS = _COVARIANCE_OPTIONS | {"adaptive_clip", "noise_shape"}
_ADAPTIVE_PASSES = ("2 with adaptive clipping (checks that also count the norms, scatter; 3 privately "
                    "centred: sum, centred norms, scatter); 1 with adaptive_clip=False (2 privately "
                    "centred) or a one-shot stream")
_STOCHASTIC_OPTIONS = frozenset({"n_steps", "learning_rate", "sampling_rate", "accounting",
                                 "show_progress"})
#: What the two noisy stochastic power-step entries share.
_SHANG = "Shang, Zhang, Xu, Liu, Liu (UAI 2021)"
_STOCHASTIC: dict[str, Any] = dict(family="stochastic", model="central", relations=(_R1,))
_SKETCH_SIZES = frozenset({"subspace_sketch_size", "affine_sketch_size"})  # t, v in Upadhyay (2018)
_LRF_OPTIONS = frozenset({"alpha", "bound", "sketch"})  # sketch: a lowrank.Sketch (t, v, seed, failure share)
_OJA_OPTIONS = frozenset({"learning_rate_scale", "learning_rate_offset", "rank_method", "n_samples",
                          "show_progress"})  # eta_t = c1 / (c2 + t): c1 the scale, c2 the offset
_EXPONENTIAL_OPTIONS = frozenset({"envelope", "max_proposals", "show_progress"})
#: What the two pure epsilon-DP exponential-mechanism entries share.
_PURE_EXPONENTIAL: dict[str, Any] = dict(family="exponential", model="central", relations=(_R1, _AR),
                                         needs_delta=False, options=_EXPONENTIAL_OPTIONS | {"epsilon_split"},
                                         memory="O(d^2)")
_GEP_COMMON = frozenset({"regularization", "classes", "on_norm_violation"})  # xi in paper 003
_SR_OPTIONS = _GEP_COMMON | {"n_iter", "step_sizes", "basis_size", "budget_shares", "init",
                             "show_progress"}
_FLOW_OPTIONS = _GEP_COMMON | {"n_iter", "step_size", "init", "a_share", "show_progress"}
_CHEN = "Chen, Huang, Lee, Chen, Tsai (paper 003)"
_HU = "Hu, Xiang, Liu, Wang (AISTATS 2023), as in paper 003"
_SKETCH_MEMORY = "O(m t + v n)"
_UPADHYAY = "Upadhyay (NeurIPS 2018)"
#: What the turnstile entries share (each update read once), and the continual ones (one row per step).
_TURNSTILE: dict[str, Any] = dict(model="streaming", passes="1 (each update once)")
_CONTINUAL: dict[str, Any] = dict(model="continual", passes="1 (one row per step)")
#: the scatter pair's d x d matrices and a class index per row (measured: benchmarks/bench_memory.py)
_GEP_MEMORY = "O(d^2) + O(n)"
#: the row-by-row methods read an array or memmap in a secret order: O(n) indices besides the state
_PERMUTED_MEMORY = "O(dk) + O(n) (a secret permutation; a stream: O(dk))"

_PCA: tuple[Method, ...] = (
    _certified(
        "analyze_gauss", "pca._covariance", family="covariance",
        paper="Dwork, Talwar, Thakurta, Zhang (STOC 2014)", model="central", relations=(_R1, _AR),
        summary="Symmetric Gaussian noise on X^T X, top-k eigenvectors",
        options=_ADAPTIVE_OPTIONS, memory="O(d^2)", passes=_ADAPTIVE_PASSES,
        regime="The default for (epsilon, delta) central PCA: one release (a norm histogram, then the "
               "scatter at the released clip), best accuracy while d^2 fits in memory; add/remove too",
    ),
    _certified(
        "mod_sulq", "pca._covariance", family="covariance", paper="Chaudhuri, Sarwate, Sinha (NIPS 2012)",
        model="central", relations=(_R1,),
        summary="Gaussian noise on X^T X / n with the paper's per-entry scale (or the tight one)",
        options=_ADAPTIVE_OPTIONS, memory="O(d^2)", passes=_ADAPTIVE_PASSES,
        regime="To compare with Chaudhuri et al.'s MOD-SULQ; otherwise prefer analyze_gauss (the same "
               "kind of release, and add/remove neighbours too)",
    ),
    Method(
        name="wishart", family="covariance", paper="Jiang, Xie, Zhang (AAAI 2016)",
        model="central", relations=(_R1, _AR), certified=False, calibrations=("paper",),
        function=_ref("pca._covariance", "wishart"),
        summary="Wishart noise on X^T X / n; known NOT differentially private (baseline only)",
        needs_delta=False, options=_COVARIANCE_OPTIONS, memory="O(d^2)",
        regime="Never for privacy: a labelled non-DP baseline, for comparison with the literature",
    ),
    _certified(
        "noisy_power", "pca._power", family="power",
        paper="Hardt & Roth (STOC 2013); Hardt & Price (NIPS 2014)", model="central", relations=(_R1, _AR),
        summary="Private power iteration: L noisy products A X + G, QR; top-k of the last release",
        options=frozenset({"n_iter", "block_size", "show_progress", "adaptive_clip"}),
        memory="O(d^2)", passes=("2 by default (checks that also count the norms, then X^T X at the released "
                                 "clip); 1 with adaptive_clip=False or a one-shot stream"),
        regime="Large d with a clear spectral gap at k: noise of size d x k per iteration instead of d x d",
    ),
    _certified(
        "dp_spca", "pca._stochastic", paper=f"{_SHANG}, Alg. 1", **_STOCHASTIC,
        summary="Noisy stochastic power steps with polar retraction (full batches by default; Poisson "
                "samples with a sampling_rate)",
        options=_STOCHASTIC_OPTIONS | {"rdp_epsilon_share", "adaptive_clip", "block_size"},
        passes="1 norm histogram + n_steps (full batches by default; Poisson samples with a sampling_rate)",
        memory="O(dk) + O(n) (each step's row indices)",
        regime="Large d where a d x d matrix does not fit; data with random row access (array, memmap)",
    ),
    _certified(
        "dp_vrpca", "pca._stochastic", paper=f"{_SHANG}, Alg. 2", **_STOCHASTIC,
        summary="Variance-reduced noisy steps; the epoch's full gradient released with noise (defaults: "
                "3 noisy power steps on an oversampled block)",
        options=_STOCHASTIC_OPTIONS | {"n_epochs", "full_gradient_share", "block_size", "adaptive_noise",
                                       "adaptive_clip"},
        passes="n_epochs (one full gradient each) + inner steps (none by default)",
        memory="O(dp) + O(n) (row indices), p = min(d, 10k)",
        regime="As dp_spca, when several full passes are affordable and fewer noisy steps are wanted",
    ),
    _certified(
        "private_oja", "pca._oja", family="streaming", paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Alg. 2",
        model="streaming", relations=(_R1,), calibrations=("tight",),
        summary="One clipped, noisy Oja step per row; single pass (parallel composition)",
        options=_OJA_OPTIONS | {"gradient_clip", "amplification", "adaptive_clip"},
        passes="1 (a one-shot stream, amplification); 2 by default otherwise (norm histogram, then steps)",
        memory=_PERMUTED_MEMORY,
        regime="A one-pass stream of many rows with a public gradient clip; O(dk) memory",
    ),
    _certified(
        "dp_pca", "pca._oja", family="streaming", paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Alg. 3-5",
        model="streaming", relations=(_R1,),
        summary="Minibatch Oja with private top-eigenvalue (range) and private mean estimation",
        options=_OJA_OPTIONS | {"batch_size", "batch_constant", "range_estimation", "schedule",
                                "block_size", "adaptive_clip"},
        memory=_PERMUTED_MEMORY,
        regime="A one-pass stream of many rows without a known gradient bound (estimated privately)",
    ),
    _certified(
        "minibatch_oja", "pca._minibatch", family="streaming",
        paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Eq. (7)",
        model="streaming", relations=(_R1,), calibrations=("tight",),
        summary="Few noisy block-power steps on disjoint minibatches; single pass (parallel composition)",
        options=frozenset({"schedule", "block_size", "n_samples", "show_progress", "adaptive_clip"}),
        passes="1 (a one-shot stream); 2 by default otherwise (the norm histogram, then the batches)",
        memory=_PERMUTED_MEMORY,
        regime="A one-pass stream of many rows, bounded norms; near Analyze Gauss without a d x d matrix",
    ),
    _reference(
        name="oja", family="streaming", paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Alg. 1 (Oja's algorithm)",
        model="streaming", function=_ref("pca._oja", "oja"),
        summary="one Oja step per row, no noise; single pass",
        options=_OJA_OPTIONS, memory="O(dk)", measures="the streaming methods are measured against",
    ),
    _certified(
        "local_gaussian", "local._gaussian", family="local", paper="Wang & Xu (TCS 2020)",
        model="local", relations=(Relation.LOCAL,),
        summary="Each user sends upper(x x^T) + symmetric Gaussian noise; server averages, top-k",
        options=frozenset({"simulate_sum", "show_progress", "noise_shape"}), passes="1 (one report per user)",
        memory="O(d^2)",
        regime="No trusted curator: every user randomises their own row (needs many users)",
    ),
    _certified(
        "ppca", "pca._exponential", paper="Chaudhuri, Sarwate, Sinha (NIPS 2012); k > 1 by deflation",
        calibrations=("tight",), **_PURE_EXPONENTIAL,
        summary="Pure eps-DP: exact Bingham sample of exp(c v^T A v); k > 1 deflated, jointly accounted, "
                "budget split from private eigenvalues",
        regime="Pure epsilon-DP (delta = 0) with small k and moderate d (exact sampler cost grows with d)",
    ),
    _certified(
        "exponential", "pca._exponential", attribute="exponential_pca",
        paper="Amin, Dick, Kulesza, Munoz Medina, Vassilvitskii (NeurIPS 2019)", **_PURE_EXPONENTIAL,
        summary="Pure eps-DP: Laplace eigenvalues + exponential-mechanism directions with deflation",
        regime="Pure epsilon-DP (delta = 0) when the eigenvalues are wanted too",
    ),
    _certified(
        "dpdispca", "distributed._protocol", family="distributed", paper="Imtiaz & Sarwate (ICASSP 2018)",
        model="distributed", relations=(_R1, _AR),
        summary="Sites release Analyze Gauss once and send rank-R proxies; aggregator releases top-K",
        options=frozenset({"intermediate_rank", "n_sites", "variant", "weighting", "spectrum", "engine",
                           "site_failure", "release_count", "accounting",
                           "show_progress"}),
        other_tasks=("distributed",), passes="1 per site", memory="O(d^2) per site, O(d R S) aggregator",
        regime="Data held by several sites that may not pool their rows; each site's guarantee is the "
               "release's",
    ),
)

# -- low-rank factorization (Upadhyay, NeurIPS 2018): function(A, k, ...) -> LowRankResult ------------
# memory in the m x n matrix's sizes and the sketch sizes t ~ k / alpha, v ~ k / alpha^2
_LOWRANK: tuple[Method, ...] = (
    _lowrank(
        "private_frobenius_lrf", "lowrank._factorization", paper=f"{_UPADHYAY}, Fig. 4",
        model="central", relations=(_P2, _P1),
        summary="Gaussian-noised sketches A Phi and S A (Priv2), closed-form rank-k solve",
        options=_LRF_OPTIONS | {"singular_values"}, memory=_SKETCH_MEMORY,
        regime="The default private rank-k factorization of one matrix (entries' change bounded in "
               "Frobenius norm)",
    ),
    _lowrank(
        "private_space_optimal_lrf", "lowrank._factorization", paper=f"{_UPADHYAY}, Fig. 2",
        model="central", relations=(_P1,),
        summary="Input-perturbed [A, sigma_min I] Omega plus noisy Psi A, S A T^T (Priv1); "
                "O((m+n)k/alpha) space",
        options=_LRF_OPTIONS | {"input_share", "singular_values"},
        memory="O((m + n) k / alpha)",
        regime="Priv1 neighbours (a rank-one change) and the least space",
    ),
    _lowrank(
        "turnstile_lrf", "lowrank._streaming", paper=f"{_UPADHYAY}, Fig. 6",
        relations=(_P2, _P1), **_TURNSTILE,
        summary="Turnstile updates A_ij += x on noisy sketches (TurnstileLRF: secret checkpoints, "
                "one publication)",
        options=_LRF_OPTIONS | {"batch_size"}, memory=_SKETCH_MEMORY,
        regime="The matrix arrives as entry updates (turnstile stream) and is published once",
    ),
    _lowrank(
        "turnstile_space_optimal_lrf", "lowrank._turnstile_space_optimal",
        paper=f"{_UPADHYAY}, Fig. 5", relations=(_P1,), **_TURNSTILE,
        summary="Turnstile updates on input-perturbed [A, sigma_min I] Omega, noisy Psi A, S A T^T (Priv1; "
                "TurnstileSpaceOptimalLRF: secret checkpoints, one publication)",
        options=_LRF_OPTIONS | {"input_share", "singular_values", "batch_size"},
        memory="O((m + n) k / alpha + v^2)",
        regime="Priv1 neighbours, the matrix arrives as entry updates and is published once; the least "
               "state (Thm 47)",
    ),
    _lowrank(
        "continual_lrf", "lowrank._continual", paper=f"{_UPADHYAY}, Fig. 8",
        relations=(_P2, _P1), **_CONTINUAL,
        summary="Binary-tree continual release over the Priv2 sketches (one row per step; ContinualLRF)",
        options=_LRF_OPTIONS, memory="O(log T (m t + v n))",
        regime="A factorization is published after every one of T row updates",
    ),
    _lowrank(
        "continual_space_optimal_lrf", "lowrank._continual_space_optimal",
        paper=f"{_UPADHYAY}, Thm 51", relations=(_P1,), **_CONTINUAL,
        summary="Binary-tree continual release over Figure 5's Priv1 sketches, Omega shared by the nodes "
                "(one row per step; ContinualSpaceOptimalLRF)",
        options=_LRF_OPTIONS | {"input_share"},
        memory="O(log T ((m + n) t + v^2))",
        regime="Priv1 neighbours, a factorization published after every one of T row updates",
    ),
    _lowrank(
        "covariance_lrf", "lowrank._covariance", paper=f"{_UPADHYAY}, Fig. 7",
        model="streaming", relations=(_AR, _R1),
        summary="Rows inserted one at a time; rank-k factorization of A^T A (n x n) from Priv2 sketches",
        options=frozenset({"row_norm", "on_norm_violation", "alpha", "sketch", "batch_rows"}),
        passes="1 (rows inserted once)", memory="O((t + v) n)",
        regime="Row-level privacy for the covariance A^T A of rows streamed once",
    ),
    _lowrank(
        "hardt_roth", "lowrank._hardt_roth",
        paper=f"Hardt & Roth (STOC 2012), as used by {_UPADHYAY}",
        model="central", relations=(_R1,),
        summary="Row-level: noisy subspace iteration on A^T A (STOC 2013; releases V and S, not U); the "
                "STOC 2012 range finder (A Omega, pruned Q, Q^T A) as algorithm='range_finder'",
        options=frozenset({"row_norm", "range_finder", "power", "on_norm_violation", "algorithm",
                           "singular_values"}),
        passes="2 per iteration (3 iterations)",
        memory="O(m n) (a clipped copy of A) + O(n min(n, 10 k))",
        regime="Row-level neighbours (one person per row): the right subspace V at Analyze Gauss's level "
               "(MNIST 20,000 x 784, k = 10, eps = 1: 1.10 x the best subspace error); U is not released",
    ),
    _lowrank(
        "private_local_lrf", "local._lowrank", paper=f"{_UPADHYAY}, Fig. 9",
        model="local", relations=(Relation.LOCAL,),
        summary="Default protocol='gram': each user sends iso(a a^T) + noise, V and S (the local model's "
                "limit); protocol='sketch': the paper's a^T Phi, S_i (T a)^T reports, left subspace U",
        options=frozenset({"row_norm", "alpha", "sketch", "simulate_sum", "on_norm_violation", "protocol",
                           "row_change"}),
        passes="1 (one report per user)", memory="O(n^2) (gram); O(m t + v^2) (sketch)",
        regime="No trusted curator: every user (row) randomises their own report; beats a random V when "
               "the top eigenvalues of A^T A / m exceed about s(eps, delta) sqrt(n / m) (MNIST 20,000 rows: "
               "eps >= 4)",
    ),
    _reference(
        name="optimal_space_lrf", family="lowrank", paper=f"{_UPADHYAY}, Fig. 2 without noise",
        model="central", function=_ref("lowrank._factorization", "optimal_space_lrf"),
        summary="three sketches and the closed-form rank-k solve",
        options=_SKETCH_SIZES | {"alpha", "sketch"}, task="lowrank", memory="O((m + n) k / alpha)",
        measures="the private methods are measured against",
    ),
)

def _fda_solver(name: str, module: str, **fields: Any) -> Method:
    """The entry of a private solver of paper 003 on a scatter pair (``module``'s ``name``), run on
    labelled rows as ``fda_method(name)``: central, replace-one, certified, tight or the paper's
    calibration."""
    return Method(name=name, family="gep", model="central", relations=(Relation.REPLACE_ONE,),
                  certified=True, calibrations=("tight", "paper"), function=_fda(name),
                  solver=_ref(module, name), task="gep", memory=_GEP_MEMORY, **fields)


# -- generalized eigenproblems (paper 003): function(X, y, k, ...) -> GEPResult; solver(pair, k, ...) --
# one pass builds the scatter pair (A, B) of the clipped rows; the solvers then read only the pair
_GEP: tuple[Method, ...] = (
    Method(
        name="moments", family="gep", paper="sufficient-statistics perturbation (no paper)",
        model="central", relations=(_R1, _AR), certified=True, calibrations=("tight",),
        function=_ref("gep._moments", "moments_fda"), solver=_ref("gep._moments", "moments_pair_solver"),
        summary="One Gaussian release of X^T X, class sums and counts (rows clipped at a released clip); "
                "Fisher GEP with a noise-scaled ridge",
        options=frozenset({"ridge", "budget_shares", "classes", "on_norm_violation", "adaptive_clip"}),
        task="gep",
        memory="O(n d) (a clipped copy of the rows) + O(d^2)",
        passes="2 by default (norm histogram, then the moments); 1 with adaptive_clip=False",
        regime="The default private Fisher discriminant (and DPLinearDiscriminantAnalysis): one release of "
               "the moments (after a norm histogram); replace-one or add/remove",
    ),
    _fda_solver(
        "dpsr", "gep._reduction", paper=f"{_CHEN}, Alg. 2",
        summary="Private Fisher discriminant: simultaneous reduction with noisy gradient steps (2 phases)",
        options=_SR_OPTIONS,
        regime="The paper's private Fisher discriminant (labelled rows, dense directions; the default of "
               "DPFisherDiscriminant is moments); the default solver of private_gep for a given pair",
    ),
    _fda_solver(
        "dpsrs", "gep._reduction", paper=f"{_CHEN}, Alg. 3", sparse=True,
        summary="DPSR with truncation to s non-zeros per vector after every step (sparse FDA)",
        options=_SR_OPTIONS | {"sparsity"},
        regime="As dpsr when the directions should use at most s features (sparse, interpretable)",
    ),
    _fda_solver(
        "sr_dp", "gep._reduction", paper=f"{_CHEN}, ablation SR+DP",
        summary="Gaussian noise on the scatter pair (A, B), then simultaneous reduction",
        options=_GEP_COMMON | {"a_share"},
        regime="Small d and a large budget: one release of the pair, no step sizes to tune",
    ),
    _fda_solver(
        "dp_rayleigh_flow", "gep._rayleigh", paper=_HU,
        summary="Rayleigh flow on an input-perturbed pair (reconstructed; init='random' is private)",
        options=_FLOW_OPTIONS,
        regime="Baseline of paper 003 (a reconstruction); prefer dpsr",
    ),
    _fda_solver(
        "dp_truncated_rayleigh_flow", "gep._rayleigh", paper=_HU, sparse=True,
        summary="Truncated (sparse) Rayleigh flow on an input-perturbed pair (reconstructed)",
        options=_FLOW_OPTIONS | {"sparsity"},
        regime="Sparse baseline of paper 003 (a reconstruction); prefer dpsrs",
    ),
    _reference(
        name="sr", family="gep", paper=f"{_CHEN}, Alg. 1",
        model="central", relations=(_R1,),
        function=_fda("sr"), solver=_ref("gep._reduction", "simultaneous_reduction"),
        summary="simultaneous reduction of (A, B + xi I) (Fisher discriminant)",
        options=_GEP_COMMON, task="gep", memory=_GEP_MEMORY, measures="(Fisher discriminant of the pair)",
    ),
)

_TABLE: tuple[Method, ...] = (*_PCA, *_LOWRANK, *_GEP)

_BY_NAME = {m.name: m for m in _TABLE}


def methods(
    *, model: str | None = None, family: str | None = None, certified: bool | None = None,
    task: str | None = None,
) -> list[Method]:
    """The registered algorithms in table order, optionally filtered.

    ``task`` (``"pca"``, ``"lowrank"``, ``"gep"`` or ``"distributed"``) keeps the entries that the
    task's estimator runs (:attr:`Method.tasks`: DPdisPCA is a ``"pca"`` entry that
    :class:`~dpspectral.DistributedDPPCA` runs too); ``model``, ``family``, ``certified`` match the field.
    """
    return [
        m
        for m in _TABLE
        if (model is None or m.model == model)
        and (family is None or m.family == family)
        and (certified is None or m.certified == certified)
        and (task is None or task in m.tasks)
    ]


def get_method(name: str, *, owner: str = "dpspectral") -> Method:
    """The entry called ``name``; a clear error listing the names otherwise."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        names = ", ".join(repr(n) for n in _BY_NAME)
        raise ValueError(
            f"The 'method' parameter of {owner} must be one of {names}. Got {name!r} instead."
        ) from None


#: ``method="auto"`` assumes a d x d float64 matrix fits in memory up to this size (2 GiB: d <= 16,384).
AUTO_MATRIX_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Choice:
    """What ``method="auto"`` chose, and why (from public facts only)."""

    method: str
    reason: str


def choose_method(*, relation: Relation | str | None = None, delta: float | None = None,
                  n_features: int | None = None, stream: bool = False, public_basis: bool = False) -> Choice:
    """The PCA method for ``method="auto"``, from public facts only (docs/choosing-a-method.md).

    The decision table, first match wins:

    1. ``relation="local"`` (no trusted curator) -> ``local_gaussian``;
    2. ``delta == 0`` (pure epsilon-DP) -> ``ppca``;
    3. a ``d x d`` matrix larger than :data:`AUTO_MATRIX_BYTES` -> ``minibatch_oja`` (single pass,
       O(d p) memory with ``p = min(d, 20 k)``; replace-one only), for a stream or an array;
    4. otherwise -> ``analyze_gauss``: the most accurate certified central method wherever
       ``d x d`` fits (measured: docs/choosing-a-method.md), replace-one or add/remove, any epsilon.

    With ``public_basis=True`` the release runs in the basis's ``d'`` dimensions, so the size of a
    ``d x d`` matrix does not matter (rule 3 is skipped) and the reason says so: ``ppca`` (pure
    epsilon) or ``analyze_gauss`` inside the basis (docs/public-basis.md). Under pure epsilon ``ppca``
    is chosen inside a basis too: on all of MNIST inside 32-150 DCT atoms ``exponential_pca`` is within
    0.005 of it and never above it.

    Parameters
    ----------
    relation : str, Relation or None
        The neighbouring relation asked for (None: replace-one).
    delta : float or None
        The delta asked for (0: pure epsilon-DP).
    n_features : int or None
        d when known before reading (None for a stream of blocks).
    stream : bool
        Whether the data are a one-shot stream of blocks.
    public_basis : bool
        Whether a public basis was given (the method then runs inside it, in ``d'`` dimensions).

    Privacy
    -------
    None by itself: it reads no data; every input is public (the relation, the budget, the shape and
    kind of the input), so the choice reveals nothing.
    """
    from .privacy._budget import as_relation

    rel = Relation.REPLACE_ONE if relation is None else as_relation(relation, owner="method='auto'")
    if rel is Relation.LOCAL:
        return Choice("local_gaussian", "relation='local': no trusted curator, every user randomises "
                      "their own row")
    inside = (" inside the public basis (the release is d' x d': with few rows or a small epsilon the "
              "basis keeps the noise of a d'-dimensional problem)") if public_basis else ""
    if delta is not None and float(delta) == 0.0:
        return Choice("ppca", f"delta=0: pure epsilon-DP, the exponential mechanism (ppca){inside}")
    if public_basis:
        return Choice("analyze_gauss", f"central (epsilon, delta)-DP: Analyze Gauss{inside}")
    too_big = n_features is not None and 8 * n_features * n_features > AUTO_MATRIX_BYTES
    if too_big and rel is Relation.REPLACE_ONE:
        return Choice("minibatch_oja", f"d={n_features}: a d x d matrix exceeds "
                      f"{AUTO_MATRIX_BYTES // 2**30} GiB: single-pass minibatch Oja in O(d k) memory")
    reason = ("central (epsilon, delta)-DP with a d x d matrix in memory: Analyze Gauss, the most "
              "accurate certified method measured")
    if too_big:
        reason += f" (d={n_features} is large, but no O(dk) method supports {rel.value} neighbours)"
    return Choice("analyze_gauss", reason)


def choose_lowrank_method(*, relation: Relation | str | None = None) -> Choice:
    """The low-rank method for ``DPLowRank(method="auto")``, from the relation asked for (public).

    The relation decides what is protected, so auto never changes it: the best method measured for
    each one (``docs/algorithms/lowrank.md``, "Regimes on real data"; "DPLowRank's default"):

    * None (not given) -> ``private_frobenius_lrf`` under Priv2 (any change of Frobenius norm <= bound
      anywhere in the matrix), the estimator's documented relation and its default before "auto";
    * ``"priv2"`` or ``"priv1"`` -> ``private_frobenius_lrf`` (Priv2 contains Priv1);
    * ``"replace_one"`` (rows are the records) -> ``hardt_roth`` (noisy subspace iteration, V and S,
      within 0.01-0.09 of Analyze Gauss's subspace error on MNIST/a9a from epsilon 0.5);
    * ``"add_remove"`` -> ``covariance_lrf`` (the one row-level method for it; V from ``A^T A``);
    * ``"local"`` -> ``private_local_lrf`` (its default ``protocol="gram"``: the local model's limit).

    Privacy
    -------
    None by itself: it reads no data; the relation is public.
    """
    from .privacy._budget import as_relation

    if relation is None:
        return Choice("private_frobenius_lrf", "relation not given: Priv2 (any change of Frobenius norm <= "
                      "bound in the matrix), DPLowRank's documented relation; rows as records: pass "
                      "relation='replace_one' and row_norm (hardt_roth, far more accurate on row data)")
    rel = as_relation(relation, owner="method='auto'")
    table = {
        Relation.PRIV2: ("private_frobenius_lrf", "relation='priv2': Private-Frobenius-LRF"),
        Relation.PRIV1: ("private_frobenius_lrf", "relation='priv1': Private-Frobenius-LRF (its Priv2 "
                         "guarantee contains Priv1; as accurate as Private-Space-Optimal-LRF or more)"),
        Relation.REPLACE_ONE: ("hardt_roth", "relation='replace_one' (rows are the records): Hardt-Roth's "
                               "noisy subspace iteration on A^T A, V and S only, near Analyze Gauss"),
        Relation.ADD_REMOVE: ("covariance_lrf", "relation='add_remove' (rows are the records): "
                              "Private-Covariance-LRF, V from A^T A"),
        Relation.LOCAL: ("private_local_lrf", "relation='local': Private-Local-LRF's Gram protocol, "
                         "each user randomises its own row (V and S)"),
    }
    if rel not in table:
        names = ", ".join(repr(r.value) for r in table)
        raise ValueError(f"The 'relation' parameter of method='auto' must be one of {names} for a low-rank "
                         f"factorization. Got {rel.value!r} instead.")
    return Choice(*table[rel])


def methods_markdown(*, detailed: bool = False) -> str:
    """The registry as a Markdown table (the README's table is generated from this).

    ``detailed=True`` adds what a user needs to choose: the estimator, pure or approximate DP, passes
    over the data, memory order and when to choose the method.
    """
    if detailed:
        lines = [
            "| method | estimator | model | relations | privacy | DP | passes | memory | when to choose it |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m in _TABLE:
            dp = {"pure": "pure ε", "approximate": "(ε, δ)", "none": "none"}[m.privacy_kind]
            lines.append(
                f"| `{m.name}` | {', '.join(m.estimators)} | {m.model} | "
                f"{', '.join(r.value for r in m.relations) or '—'} | {m.privacy_label} | {dp} | {m.passes} | "
                f"{m.memory} | {m.regime} |"
            )
        return "\n".join(lines)
    lines = [
        "| method | family | model | relations | privacy | calibrations | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in _TABLE:
        lines.append(
            f"| `{m.name}` | {m.family} | {m.model} | {', '.join(r.value for r in m.relations)} | "
            f"{m.privacy_label} | {', '.join(m.calibrations)} | {m.paper} |"
        )
    return "\n".join(lines)
