"""One table of every algorithm: name, family, paper, model, relations, certified, callable.

The CLI, the estimators, the benchmarks and the contract tests all read this table, so an algorithm is
wired in by adding one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .distributed import protocol as distributed_protocol
from .gep.solve import fda_method
from .local import gaussian as local_gaussian_module
from .local import lowrank as local_lowrank_module
from .lowrank import factorization as lowrank_factorization
from .lowrank.continual import continual_lrf as _continual_lrf
from .lowrank.covariance import covariance_lrf as _covariance_lrf
from .lowrank.hardt_roth import hardt_roth as _hardt_roth
from .lowrank.streaming import turnstile_lrf as _turnstile_lrf
from .pca import covariance, exponential, oja, power, stochastic
from .privacy.budget import Relation

__all__ = ["Method", "get_method", "methods", "methods_markdown"]


@dataclass(frozen=True)
class Method:
    """Metadata of one registered algorithm.

    Attributes
    ----------
    name : str
        The string that ``method=`` takes.
    family : str
        e.g. ``"covariance"``.
    paper : str
        Where the algorithm comes from.
    model : str
        ``"central"``, ``"local"``, ``"streaming"``, ``"continual"`` or ``"distributed"``.
    relations : tuple of Relation
        Neighbouring relations it supports; the first is its default.
    certified : bool
        Whether its default calibration is certified by our accountant (False for known non-private
        baselines).
    calibrations : tuple of str
        Calibrations it accepts; the first is its default.
    function : callable
        ``function(X, k, *, epsilon, delta, row_norm, relation, calibration, ...) -> SubspaceResult``.
    summary : str
        One line for tables.
    needs_delta : bool
        False for pure epsilon-DP mechanisms.
    options : frozenset of str
        Optional keyword arguments the function accepts beyond the common ones (``X, k, epsilon,
        delta, row_norm, relation, calibration, accountant, random_state, on_norm_violation``), e.g.
        ``"centering"``; the estimator passes its matching parameters only to methods that take them.
    task : str
        ``"pca"`` (returns a :class:`~dpspectral.SubspaceResult`; used by :class:`~dpspectral.DPPCA`),
        ``"lowrank"`` (``function(A, k, *, epsilon, delta, relation, calibration, accountant,
        random_state, ...) -> LowRankResult``; used by :class:`~dpspectral.DPLowRank`) or ``"gep"``
        (``function(X, y, k, *, epsilon, delta, row_norm, relation, calibration, accountant,
        random_state, xi, ...) -> GEPResult``: Fisher discriminant directions of labelled rows; used by
        :class:`~dpspectral.DPFisherDiscriminant`).
    private : bool
        False for a non-private reference algorithm (it takes no privacy parameters).
    """

    name: str
    family: str
    paper: str
    model: str
    relations: tuple[Relation, ...]
    certified: bool
    calibrations: tuple[str, ...]
    function: Callable[..., Any]
    summary: str
    needs_delta: bool = True
    options: frozenset[str] = frozenset()
    task: str = "pca"
    private: bool = True

    @property
    def default_calibration(self) -> str:
        return self.calibrations[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


_R1, _AR = Relation.REPLACE_ONE, Relation.ADD_REMOVE
_COVARIANCE_OPTIONS = frozenset({"centering", "mean_share", "release_count", "accounting",
                                 "show_progress"})
_STOCHASTIC_OPTIONS = frozenset({"n_steps", "learning_rate", "sampling_rate", "accounting",
                                 "show_progress"})

_P1, _P2 = Relation.PRIV1, Relation.PRIV2
_LRF_OPTIONS = frozenset({"alpha", "t", "v", "bound", "sketch_failure_share", "sketch_seed"})

_OJA_OPTIONS = frozenset({"c1", "c2", "rank_method", "n_samples", "show_progress"})

_EXPONENTIAL_OPTIONS = frozenset({"envelope", "max_proposals", "show_progress"})

_GEP_COMMON = frozenset({"xi", "classes", "on_norm_violation"})
_SR_OPTIONS = _GEP_COMMON | {"n_iter", "eta_b", "eta_a", "basis_size", "budget_shares", "paper_formula",
                             "paper_constants", "init", "show_progress"}
_FLOW_OPTIONS = _GEP_COMMON | {"n_iter", "eta", "init", "a_share", "show_progress"}
_CHEN = "Chen, Huang, Lee, Chen, Tsai (paper 003)"
_HU = "Hu, Xiang, Liu, Wang (AISTATS 2023), as in paper 003"

_TABLE: tuple[Method, ...] = (
    Method(
        name="analyze_gauss",
        family="covariance",
        paper="Dwork, Talwar, Thakurta, Zhang (STOC 2014)",
        model="central",
        relations=(_R1, _AR),
        certified=True,
        calibrations=("tight", "paper"),
        function=covariance.analyze_gauss,
        summary="Symmetric Gaussian noise on X^T X, top-k eigenvectors",
        options=_COVARIANCE_OPTIONS,
    ),
    Method(
        name="mod_sulq",
        family="covariance",
        paper="Chaudhuri, Sarwate, Sinha (NIPS 2012)",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=covariance.mod_sulq,
        summary="Gaussian noise on X^T X / n with the paper's per-entry scale (or the tight one)",
        options=_COVARIANCE_OPTIONS,
    ),
    Method(
        name="wishart",
        family="covariance",
        paper="Jiang, Xie, Zhang (AAAI 2016)",
        model="central",
        relations=(_R1, _AR),
        certified=False,
        calibrations=("paper",),
        function=covariance.wishart,
        summary="Wishart noise on X^T X / n; known NOT differentially private (baseline only)",
        needs_delta=False,
        options=_COVARIANCE_OPTIONS,
    ),
    Method(
        name="noisy_power",
        family="power",
        paper="Hardt & Roth (STOC 2013); Hardt & Price (NIPS 2014)",
        model="central",
        relations=(_R1, _AR),
        certified=True,
        calibrations=("tight", "paper"),
        function=power.noisy_power,
        summary="Private power iteration: L noisy products A X + G, QR; top-k of the last release",
        options=frozenset({"n_iter", "block_size", "show_progress"}),
    ),
    Method(
        name="dp_spca",
        family="stochastic",
        paper="Shang, Zhang, Xu, Liu, Liu (UAI 2021), Alg. 1",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=stochastic.dp_spca,
        summary="Noisy Poisson-sampled stochastic power steps with polar retraction",
        options=_STOCHASTIC_OPTIONS | {"mu"},
    ),
    Method(
        name="dp_vrpca",
        family="stochastic",
        paper="Shang, Zhang, Xu, Liu, Liu (UAI 2021), Alg. 2",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=stochastic.dp_vrpca,
        summary="Variance-reduced noisy steps; the epoch's full gradient released with noise",
        options=_STOCHASTIC_OPTIONS | {"n_epochs", "full_gradient_share"},
    ),
    Method(
        name="private_oja",
        family="streaming",
        paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Alg. 2",
        model="streaming",
        relations=(_R1,),
        certified=True,
        calibrations=("tight",),
        function=oja.private_oja,
        summary="One clipped, noisy Oja step per row; single pass (parallel composition)",
        options=_OJA_OPTIONS | {"gradient_clip", "amplification"},
    ),
    Method(
        name="dp_pca",
        family="streaming",
        paper="Liu, Kong, Jain, Oh (NeurIPS 2022), Alg. 3-5",
        model="streaming",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=oja.dp_pca,
        summary="Minibatch Oja with private top-eigenvalue (range) and private mean estimation",
        options=_OJA_OPTIONS | {"batch_size", "batch_constant", "histogram", "half_width_mult", "K",
                                "a", "failure_probability", "n_groups", "histogram_share"},
    ),
    Method(
        name="local_gaussian",
        family="local",
        paper="Wang & Xu (TCS 2020)",
        model="local",
        relations=(Relation.LOCAL,),
        certified=True,
        calibrations=("tight", "paper"),
        function=local_gaussian_module.local_gaussian,
        summary="Each user sends upper(x x^T) + symmetric Gaussian noise; server averages, top-k",
        options=frozenset({"simulate_sum", "show_progress"}),
    ),
    Method(
        name="ppca",
        family="exponential",
        paper="Chaudhuri, Sarwate, Sinha (NIPS 2012); k > 1 by deflation",
        model="central",
        relations=(_R1, _AR),
        certified=True,
        calibrations=("tight",),
        function=exponential.ppca,
        summary="Pure eps-DP: exact Bingham sample of exp(c v^T A v); k > 1 deflated, eps/k each",
        needs_delta=False,
        options=_EXPONENTIAL_OPTIONS,
    ),
    Method(
        name="exponential",
        family="exponential",
        paper="Amin, Dick, Kulesza, Munoz Medina, Vassilvitskii (NeurIPS 2019)",
        model="central",
        relations=(_R1, _AR),
        certified=True,
        calibrations=("tight", "paper"),
        function=exponential.exponential_pca,
        summary="Pure eps-DP: Laplace eigenvalues + exponential-mechanism directions with deflation",
        needs_delta=False,
        options=_EXPONENTIAL_OPTIONS | {"eigenvalue_share", "vector_shares"},
    ),
    Method(
        name="dpdispca",
        family="distributed",
        paper="Imtiaz & Sarwate (ICASSP 2018)",
        model="distributed",
        relations=(_R1, _AR),
        certified=True,
        calibrations=("tight", "paper"),
        function=distributed_protocol.dpdispca,
        summary="Sites release Analyze Gauss once and send rank-R proxies; aggregator releases top-K",
        options=frozenset({"intermediate_rank", "n_sites", "variant", "weighting", "spectrum", "engine",
                           "site_timeout", "min_sites", "on_site_failure", "release_count", "accounting",
                           "show_progress"}),
    ),
    # -- low-rank factorization (Upadhyay, NeurIPS 2018): function(A, k, ...) -> LowRankResult --------
    Method(
        name="private_frobenius_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 4",
        model="central",
        relations=(_P2, _P1),
        certified=True,
        calibrations=("tight", "paper"),
        function=lowrank_factorization.private_frobenius_lrf,
        summary="Gaussian-noised sketches A Phi and S A (Priv2), closed-form rank-k solve",
        options=_LRF_OPTIONS,
        task="lowrank",
    ),
    Method(
        name="private_space_optimal_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 2",
        model="central",
        relations=(_P1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=lowrank_factorization.private_space_optimal_lrf,
        summary="Input-perturbed [A, sigma_min I] Omega plus noisy Psi A, S A T^T (Priv1); "
                "O((m+n)k/alpha) space",
        options=_LRF_OPTIONS | {"input_share"},
        task="lowrank",
    ),
    Method(
        name="turnstile_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 6",
        model="streaming",
        relations=(_P2, _P1),
        certified=True,
        calibrations=("tight", "paper"),
        function=_turnstile_lrf,
        summary="Turnstile updates A_ij += x on noisy sketches (TurnstileLRF: secret checkpoints, "
                "one publication)",
        options=_LRF_OPTIONS | {"batch_size"},
        task="lowrank",
    ),
    Method(
        name="continual_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 8",
        model="continual",
        relations=(_P2, _P1),
        certified=True,
        calibrations=("tight", "paper"),
        function=_continual_lrf,
        summary="Binary-tree continual release over the Priv2 sketches (one row per step; ContinualLRF)",
        options=_LRF_OPTIONS,
        task="lowrank",
    ),
    Method(
        name="covariance_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 7",
        model="streaming",
        relations=(_AR, _R1),
        certified=True,
        calibrations=("tight", "paper"),
        function=_covariance_lrf,
        summary="Rows inserted one at a time; rank-k factorization of A^T A (n x n) from Priv2 sketches",
        options=frozenset({"row_norm", "on_norm_violation", "alpha", "t", "v", "sketch_failure_share",
                           "sketch_seed", "batch_rows"}),
        task="lowrank",
    ),
    Method(
        name="hardt_roth",
        family="lowrank",
        paper="Hardt & Roth (STOC 2012), as used by Upadhyay (NeurIPS 2018)",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=_hardt_roth,
        summary="Baseline: noisy range finder A Omega, pruned Q, noisy Q^T A (row-level only, not Priv1)",
        options=frozenset({"row_norm", "oversampling", "prune", "stage_share", "sketch_failure_share",
                           "on_norm_violation"}),
        task="lowrank",
    ),
    Method(
        name="private_local_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 9",
        model="local",
        relations=(Relation.LOCAL,),
        certified=True,
        calibrations=("tight", "paper"),
        function=local_lowrank_module.private_local_lrf,
        summary="Each user sends a^T Phi + noise and S_i (T a)^T + noise (t + v^2 floats); left subspace U",
        options=frozenset({"row_norm", "alpha", "t", "v", "simulate_sum", "sketch_seed",
                           "sketch_failure_share", "on_norm_violation"}),
        task="lowrank",
    ),
    Method(
        name="optimal_space_lrf",
        family="lowrank",
        paper="Upadhyay (NeurIPS 2018), Fig. 2 without noise",
        model="central",
        relations=(),  # not private: it protects no neighbouring relation
        certified=False,
        calibrations=("none",),
        function=lowrank_factorization.optimal_space_lrf,
        summary="Non-private reference: three sketches and the closed-form rank-k solve",
        needs_delta=False,
        options=frozenset({"alpha", "t", "v", "sketch"}),
        task="lowrank",
        private=False,
    ),
    Method(
        name="dpsr",
        family="gep",
        paper=f"{_CHEN}, Alg. 2",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=fda_method("dpsr"),
        summary="Private Fisher discriminant: simultaneous reduction with noisy gradient steps (2 phases)",
        options=_SR_OPTIONS,
        task="gep",
    ),
    Method(
        name="dpsrs",
        family="gep",
        paper=f"{_CHEN}, Alg. 3",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=fda_method("dpsrs"),
        summary="DPSR with truncation to s non-zeros per vector after every step (sparse FDA)",
        options=_SR_OPTIONS | {"sparsity"},
        task="gep",
    ),
    Method(
        name="sr_dp",
        family="gep",
        paper=f"{_CHEN}, ablation SR+DP",
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=fda_method("sr_dp"),
        summary="Gaussian noise on the scatter pair (A, B), then simultaneous reduction",
        options=_GEP_COMMON | {"a_share"},
        task="gep",
    ),
    Method(
        name="dp_rayleigh_flow",
        family="gep",
        paper=_HU,
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=fda_method("dp_rayleigh_flow"),
        summary="Rayleigh flow on an input-perturbed pair (reconstructed; init='random' is private)",
        options=_FLOW_OPTIONS,
        task="gep",
    ),
    Method(
        name="dp_truncated_rayleigh_flow",
        family="gep",
        paper=_HU,
        model="central",
        relations=(_R1,),
        certified=True,
        calibrations=("tight", "paper"),
        function=fda_method("dp_truncated_rayleigh_flow"),
        summary="Truncated (sparse) Rayleigh flow on an input-perturbed pair (reconstructed)",
        options=_FLOW_OPTIONS | {"sparsity"},
        task="gep",
    ),
    Method(
        name="sr",
        family="gep",
        paper=f"{_CHEN}, Alg. 1",
        model="central",
        relations=(_R1,),
        certified=False,
        calibrations=("none",),
        function=fda_method("sr"),
        summary="Non-private reference: simultaneous reduction of (A, B + xi I) (Fisher discriminant)",
        needs_delta=False,
        options=_GEP_COMMON,
        task="gep",
        private=False,
    ),
)

_BY_NAME = {m.name: m for m in _TABLE}


def methods(
    *, model: str | None = None, family: str | None = None, certified: bool | None = None,
    task: str | None = None,
) -> list[Method]:
    """The registered algorithms, optionally filtered (``task``: ``"pca"``, ``"lowrank"`` or ``"gep"``)."""
    return [
        m
        for m in _TABLE
        if (model is None or m.model == model)
        and (family is None or m.family == family)
        and (certified is None or m.certified == certified)
        and (task is None or m.task == task)
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


def methods_markdown() -> str:
    """The registry as a Markdown table (the README's table is generated from this)."""
    lines = [
        "| method | family | model | relations | privacy | calibrations | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in _TABLE:
        status = ("certified" if m.certified else "**uncertified** (not DP)") if m.private else \
            "non-private reference"
        lines.append(
            f"| `{m.name}` | {m.family} | {m.model} | {', '.join(r.value for r in m.relations)} | "
            f"{status} | {', '.join(m.calibrations)} | {m.paper} |"
        )
    return "\n".join(lines)
