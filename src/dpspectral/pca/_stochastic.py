"""Gradient-perturbation PCA: DP-SPCA and DP-VRPCA (Shang, Zhang, Xu, Liu and Liu, UAI 2021).

Both run projected stochastic gradient ascent on ``tr(V^T A V)`` over d x k orthonormal V, with
Gaussian noise on every step, and orthonormalise by the polar factor ``V (V^T V)^{-1/2}`` (for k = 1,
normalisation). Paper: ``../shared/papers/000_*.txt``; specification and the problems with the
paper's privacy claims: ``../shared/papers/spec-pca-gep.md`` §C.

Sampling. Every step uses a Poisson sample of the rows (each row independently with probability
``q``; ``q = 1/n`` is one row per step on average, like the paper's uniform index; the defaults use
full batches, ``q = 1``), so the accountant certifies exactly what runs. The update is
``V' = V + (eta / (q n)) (sum_{i in S} g_i(V) + N(0, (s Delta)^2))`` (plus, in DP-VRPCA, the released
full gradient), i.e. a step along an unbiased estimate of the mean gradient ``2 A V / n``.

Relation and accounting. Replace-one neighbours (the paper's "differ in only one row"; n is then
public, which the step scale ``1/(q n)`` needs). Sampled steps are
``PoissonSampledDpEvent(q, GaussianDpEvent(s))`` with ``s`` = noise std / the bound ``Delta`` on one
row's contribution; a replaced row moves a sampled sum by at most ``2 Delta``, which is how
``dp_accounting``'s PLD accountant reads sampled events under ``REPLACE_ONE``. Unsampled releases
(DP-VRPCA's full gradients, and every full-batch step, ``q = 1``, of both methods with the tight
calibration) are ``GaussianDpEvent(s)`` with the library's convention: std over the whole replace-one
shift between neighbours, e.g. ``||2 (x x^T - y y^T) V||_F <= 2 sqrt(2) C^2`` for a DP-SPCA step, not
the ``2 Delta = 4 C^2`` a Poisson event at ``q = 1`` is read as; ``SampledGaussianAccountant`` reads them
that way in its no-amplification bound and its PLD reads them as half the shift, which only overstates
their cost (sound).

Validate, then charge, then release. Both methods need random row access (an array, a memmap, a
sparse matrix; not a one-shot stream). The whole input is validated (numeric, 2-D, finite and, with
``on_norm_violation="raise"``, every row within the bound: :func:`~dpspectral.privacy._pipeline.
validate_rows`) *before* the ledger is charged, so whether a fit is refused never depends on which
rows a step happens to sample, and a refusal costs nothing. Errors name the kind of problem, never a
row, a value or a count.

Adaptive clipping (default with the tight calibration): a noisy norm histogram is released
first and the steps run on the rows clipped at the clip ``r <= C`` post-processed from it, every
sensitivity (and the default learning rate) at ``r``, the multipliers calibrated for the composition
with the histogram's event (:mod:`~dpspectral.privacy._adaptive`). The rows are in memory, so they are
read again at ``r``; the paper's calibration keeps its single release.

Device arrays (``docs/array-api.md``): with array API dispatch on, a PyTorch/CuPy array is
validated, clipped, multiplied, retracted (``xp.linalg``) and decomposed where it lives, the noise drawn
there by :class:`~dpspectral.privacy._device_noise.DeviceNoise`; the plan, the calibration and the
accountant stay on the host, and the random start and the Poisson samples (``q < 1``) are the host
generator's draws, as on the NumPy path.

Accounting. ``accounting="auto"`` or ``"pld"`` (the PLD accountant, which reads Poisson-sampled
Gaussian events under replace-one). ``dp_accounting``'s RDP accountant has no Poisson-sampled event
under replace-one, so ``"rdp"`` (and ``"gaussian"``, which has no sampling) are refused with a clear
error before anything is charged.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from .._array_api import (
    clip_rows_xp,
    from_numpy,
    get_namespace_and_device,
    is_device_array,
    isfinite_all,
    work_dtype,
)
from .._constraints import (
    NONE,
    PRIVACY_PARAMETERS,
    SHARE,
    Calibration,
    Interval,
    Table,
    Types,
    check_params,
    renamed,
    validated,
)
from .._linalg import fix_signs, orthonormalize
from .._moments import accumulate, accumulation_dtype, chained_summation
from .._options import AdaptiveClip, folded
from .._progress import progress
from .._results import SubspaceResult
from .._rows import (
    _page_releaser,
    as_numeric_array,
    check_numeric_layout,
    is_one_shot,
    not_finite_error,
    rows_at,
)
from .._validation import check_mechanism_inputs, check_n_components
from ..privacy._accounting import Accountant, AccountingMethod, calibrate
from ..privacy._adaptive import DEFAULT_CLIP_SHARE, RowClipPlan, at_released_clip, plan_row_clip
from ..privacy._budget import PrivacyBudget, Relation
from ..privacy._clipping import NormViolation, clip_rows, sensitivity_norm
from ..privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier
from ..privacy._pipeline import NoisyRelease, ReleasePlan, Releaser, validate_rows
from ..privacy._quantile import norm_histogram
from ..privacy._rounding import Summation, widen_projection, widen_release
from ..privacy._template import Drawn, Mechanism, Released, RunSettings, run
from ._inputs import PcaInputs

__all__ = ["dp_spca", "dp_vrpca"]

_G = 2.0  # Lipschitz constant of f_i(v) = -v^T x x^T v on the unit ball for ||x|| <= 1 (spec §C.1)


_COUNT = Interval(1, None, "left", integer=True)
_COMMON_PARAMS: Table = {
    **PRIVACY_PARAMETERS,
    "n_steps": [NONE, _COUNT], "learning_rate": [NONE, Interval(0, None, "neither")],
    "sampling_rate": [NONE, Interval(0, 1, "right")],
    "adaptive_clip": Types((bool, np.bool_, AdaptiveClip), "a bool or an AdaptiveClip"),
}
#: The parameters of :func:`dp_spca` and :func:`dp_vrpca`. ``k <= min(n_features, n_samples)``, the
#: relation and the accountant (``accounting``, with its reason) are checked inline.
_SPCA_PARAMS: Table = {**_COMMON_PARAMS, "rdp_epsilon_share": SHARE, "block_size": [NONE, _COUNT]}
_VRPCA_PARAMS: Table = {**_COMMON_PARAMS, "n_epochs": [NONE, _COUNT], "full_gradient_share": [NONE, SHARE],
                        "block_size": [NONE, _COUNT], "adaptive_noise": Types((bool, np.bool_), "a bool")}


def _load_rows(X: Any, owner: str) -> np.ndarray:
    """Random row access is needed: an in-memory array or a memmap (never modified)."""
    if hasattr(X, "toarray"):
        X = X.toarray()
    if isinstance(X, np.memmap) or (not isinstance(X, np.ndarray) and hasattr(X, "shape")
                                     and hasattr(X, "dtype")):
        # a memmap stays one (its pages are released as it is read) and is not read here, nor another
        # array with random row access (HDF5, zarr)
        check_numeric_layout(X, owner)
    else:  # arrays, lists, DataFrames
        X = as_numeric_array(X, owner, convert_object=False)
    if X.shape[0] == 0:
        raise ValueError(f"{owner}: the data are empty (0 rows); at least one row is required.")
    return X


@functools.lru_cache(maxsize=256)
def _calibrate_sampled(
    q: float, steps: int, epsilon: float, delta: float, accounting: str,
    full_multiplier: float | None, epochs: int, clip: RowClipPlan | None = None,
) -> float:
    """Noise multiplier of the sampled steps, given the (fixed) full-gradient releases and, with
    adaptive clipping, the norm histogram (the method's events composed after it)."""

    def make(s: float) -> dp_accounting.DpEvent:
        sampled = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), steps
        )
        if full_multiplier is None:
            return sampled
        full = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(full_multiplier), epochs)
        return dp_accounting.ComposedDpEvent([full, sampled])

    return calibrate(make if clip is None else clip.compose(make), epsilon, delta,
                     relation=Relation.REPLACE_ONE, accounting=accounting, tol=1e-4)  # type: ignore[arg-type]


def _step_events(q: float, multiplier: float, steps: int) -> dp_accounting.DpEvent:
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(multiplier)), steps
    )


class _Sampler:
    """Poisson row samples, clipped, drawn by the run's releaser (:meth:`Releaser.poisson_sample`: one
    exact ``Bernoulli(q)`` per row; with the float source a binomial count, then that many distinct
    indices).

    A device array (array API dispatch): the sample's indices are drawn on the host exactly as on the
    NumPy path, moved to the device, and the rows gathered (``xp.take``) and clipped there; with
    ``q = 1`` every row is the sample and nothing is drawn (the float source's NumPy path then draws a
    permutation it sorts back: the same rows).
    """

    def __init__(self, X: Any, q: float, C: float, on_norm_violation: NormViolation,
                 releaser: Releaser, owner: str) -> None:
        self.X, self.q, self.C, self.mode, self.releaser = X, q, C, on_norm_violation, releaser
        self.owner = owner
        self.n = int(X.shape[0])
        self.xp, self.device = get_namespace_and_device(X, owner)  # (None, None): the NumPy path

    def product(self, W: Any) -> Any:
        """``sum_{i in S} c(x_i) c(x_i)^T W`` over a fresh Poisson sample S (zeros when S is empty).

        The sampled rows are read in chunks of about 32 MB (:func:`_sampled_product`), never all at once.
        """
        if self.xp is None:
            idx = self.releaser.poisson_sample(self.n, self.q)
            if idx.size == 0:
                return np.zeros(W.shape)
            return _sampled_product(self.X, idx, W, self.C, self.mode, self.owner)
        if self.q == 1.0:  # every row: nothing to draw
            return _full_product_xp(self.X, W, self.C, self.xp, self.owner)
        idx = self.releaser.poisson_sample(self.n, self.q)
        if idx.size == 0:
            return self.xp.zeros_like(W)
        rows = from_numpy(idx, self.xp, self.device)  # the host's draw, moved once
        return _full_product_xp(self.X, W, self.C, self.xp, self.owner, rows=rows)

    def on_data(self, a: np.ndarray) -> Any:
        """A host array (the random start) on the data's device, in the dtype computed in: float64 unless
        the noise is float (:func:`~dpspectral._moments.accumulation_dtype`: the rounding of the sums)."""
        if self.xp is None:
            return a
        return from_numpy(a, self.xp, self.device, accumulation_dtype(self.X, self.xp))

    def on_input(self, V: Any) -> Any:
        """The result in the input's dtype (post-processing; a device path computes in float64)."""
        if self.xp is None:
            return V
        return self.xp.astype(V, work_dtype(self.X, self.xp))


def _retract(V: Any) -> Any:
    """The polar factor ``V (V^T V)^{-1/2}`` (one column: ``V / ||V||``), in ``V``'s namespace."""
    if V.shape[1] == 1:
        if is_device_array(V):
            import array_api_compat

            norm = float(array_api_compat.array_namespace(V).linalg.vector_norm(V))
        else:
            norm = float(np.linalg.norm(V))
        return V / norm if norm > 0 else V
    return orthonormalize(V, "polar")


def _top_left(Y: Any, k: int) -> Any:
    """The top-k left singular vectors of ``Y`` (post-processing), in ``Y``'s namespace."""
    if is_device_array(Y):
        import array_api_compat

        return array_api_compat.array_namespace(Y).linalg.svd(Y, full_matrices=False)[0][:, :k]
    return np.linalg.svd(Y, full_matrices=False)[0][:, :k]


def _spectral_norm(a: Any) -> float:
    """``||a||_2`` (the largest singular value) as a float, in ``a``'s namespace."""
    if is_device_array(a):
        import array_api_compat

        return float(array_api_compat.array_namespace(a).linalg.matrix_norm(a, ord=2))
    return float(np.linalg.norm(a, 2))


def _check_k(k: int, n: int, d: int, owner: str) -> None:
    """``k <= n_features`` and ``k <= n_samples`` (public shape)."""
    check_n_components(k, d, owner, name="k")
    if k > n:
        raise ValueError(
            f"The 'k' parameter of {owner} must be at most the number of rows ({n}): the "
            f"stochastic gradients cannot span more directions than the data. Got {k} instead."
        )


def _rows_validated(X: Any, C: float, on_norm_violation: str, owner: str) -> Any:
    """The whole input validated (numeric, 2-D, non-empty, finite; within C with ``"raise"``) before
    anything is charged, not only the rows a step happens to sample. A device array (array API
    dispatch) is checked where it lives (only a yes/no comes back) and returned as it is."""
    xp, _ = get_namespace_and_device(X, owner)
    if xp is not None:
        accumulate(X, row_norm=C, on_norm_violation=on_norm_violation,  # type: ignore[arg-type]
                   want_sum=False, want_second=False, owner=owner, xp=xp)  # refuses 0 rows
        return X
    X = _load_rows(X, owner)
    validate_rows(X, row_norm=C, on_norm_violation=on_norm_violation, owner=owner)
    return X


def _adaptive_clip(value: bool | AdaptiveClip, calibration: str, owner: str) -> AdaptiveClip | None:
    """The adaptive clipping in force, or None: on by default with the tight calibration (the paper's
    calibration keeps its one release). The clip comes from the balance rule, not a quantile."""
    if isinstance(value, AdaptiveClip) and value.quantile is not None:
        raise ValueError(
            f"The 'adaptive_clip' parameter of {owner} takes no quantile: the clip is chosen from the "
            "released norm histogram by the balance rule (noise against clipping bias). Pass "
            "AdaptiveClip(share=...) or True."
        )
    if isinstance(value, AdaptiveClip):
        check_params({"share": [NONE, SHARE]}, {"share": value.share}, f"{owner}'s AdaptiveClip")
    if not (isinstance(value, AdaptiveClip) or value) or calibration != "tight":
        return None  # off (False or NumPy's False), or the paper's calibration
    return value if isinstance(value, AdaptiveClip) else AdaptiveClip()


@dataclass(frozen=True)
class _StochasticInputs(PcaInputs):
    """The public inputs of :func:`dp_spca` and :func:`dp_vrpca` (as given; checked by
    :meth:`_Stochastic.check`); the last four are one method's own."""

    on_norm_violation: NormViolation
    accounting: str
    n_steps: int | None
    learning_rate: float | None
    sampling_rate: float | None
    block_size: int | None
    adaptive_clip: bool | AdaptiveClip
    rdp_epsilon_share: float = 0.5  # dp_spca
    n_epochs: int | None = None  # dp_vrpca
    full_gradient_share: float | None = None  # dp_vrpca
    adaptive_noise: bool = True  # dp_vrpca


@dataclass(frozen=True, eq=False)
class _Checked:
    """:class:`_StochasticInputs` checked: budget, relation, bound, the clip stage (if any) and its
    share, and the public shape of an in-memory array (None until read otherwise)."""

    inputs: _StochasticInputs
    budget: PrivacyBudget
    relation: Relation
    C: float
    calibration: str
    clip: RowClipPlan | None
    clip_share: float
    n: int | None
    d: int | None
    summation: Summation = Summation()  # how the products are summed (the rounding bound's path)


@dataclass(frozen=True)
class _Read:
    """The rows, validated whole before the charge (random row access), and their public shape."""

    n: int
    d: int
    X: Any


class _Stochastic(Mechanism[_StochasticInputs, SubspaceResult]):
    """DP-SPCA and DP-VRPCA as the release template runs them: the method's releases at the bound C,
    or (adaptive clipping) the norm histogram first, then the releases at the released clip. A subclass
    gives the method's plan, its noise per unit ``r^2`` (the balance rule), its steps and diagnostics."""

    #: The power of the clip each release's sensitivity scales with (:func:`at_clip`).
    powers: dict[str, int] = {}

    def __init__(self, show_progress: bool | None = None) -> None:
        super().__init__(show_progress)
        self._plans: dict[tuple[int, int], tuple[ReleasePlan, float]] = {}

    def check(self, inputs: _StochasticInputs, X: Any) -> _Checked:
        owner = self.label
        # replace-one only: the paper's relation, and the step scale uses n (public only under it)
        budget, rel, C = check_mechanism_inputs(
            epsilon=inputs.epsilon, delta=inputs.delta, row_norm=inputs.row_norm, relation=inputs.relation,
            calibration=inputs.calibration, on_norm_violation=inputs.on_norm_violation, owner=owner,
            allowed_relations=(Relation.REPLACE_ONE,),
        )
        if inputs.accounting not in ("auto", "pld"):
            raise ValueError(
                f"The 'accounting' parameter of {owner} must be 'auto' or 'pld'. Got {inputs.accounting!r} "
                "instead: the steps are Poisson-sampled Gaussian releases under replace-one, which only "
                "the PLD accountant covers (dp_accounting's RDP accountant supports Poisson sampling under "
                "add/remove only)."
            )
        options = _adaptive_clip(inputs.adaptive_clip, inputs.calibration, owner)
        if is_one_shot(X):
            raise TypeError(f"{owner} needs random access to the rows (an array, a memmap or a sparse "
                            "matrix): a one-shot stream of blocks cannot be sampled.")
        n = d = None
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[0] > 0:  # the public shape
            n, d = int(X.shape[0]), int(X.shape[1])
            _check_k(inputs.k, n, d, owner)
        share = DEFAULT_CLIP_SHARE if options is None or options.share is None else options.share
        clip = None if options is None else plan_row_clip(budget, rel, C, share)
        xp, _ = get_namespace_and_device(X, owner)  # a device path sums in accumulation_dtype
        summation = chained_summation(X, xp)
        return _Checked(inputs, budget, rel, C, inputs.calibration, clip, share, n, d, summation)

    def read(self, inputs: _Checked, X: Any) -> _Read:
        X = _rows_validated(X, inputs.C, inputs.inputs.on_norm_violation, self.label)
        n, d = (int(s) for s in X.shape)
        _check_k(inputs.inputs.k, n, d, self.label)
        return _Read(n, d, X)

    def _method(self, inputs: _Checked, n: int, d: int) -> tuple[ReleasePlan, float]:
        """The method's plan at the bound C and its noise multiplier (once per run)."""
        if (n, d) not in self._plans:
            self._plans[n, d] = self._method_plan(inputs, n, d)
        return self._plans[n, d]

    def _method_plan(self, inputs: _Checked, n: int, d: int) -> tuple[ReleasePlan, float]:
        raise NotImplementedError

    def _noise_per_clip2(self, inputs: _Checked, plan: ReleasePlan, n: int, d: int) -> float:
        raise NotImplementedError

    def _steps(self, inputs: _Checked, rows: _Read, clip: float, mode: NormViolation,
               releaser: Releaser) -> tuple[Any, float]:
        raise NotImplementedError

    def plan(self, inputs: _Checked, n: int | None, d: int | None) -> ReleasePlan | None:
        if n is None or d is None:
            return None
        plan = self._method(inputs, n, d)[0]
        return plan if inputs.clip is None else inputs.clip.first_in(plan)

    def is_staged(self, inputs: _Checked) -> bool:
        return inputs.clip is not None

    def stages(self, inputs: _Checked, plan: ReleasePlan) -> tuple[tuple[str, ...], ...]:
        names = tuple(r.name for r in plan.releases)
        return (names[:1], names[1:]) if inputs.clip is not None else (names,)

    def stage_events(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...]) -> tuple[Any, ...]:
        if inputs.clip is None:
            return tuple(plan.events)
        return (inputs.clip.event,) if names == ("norm_histogram",) else tuple(plan.events[1:])

    def stage_plan(self, inputs: _Checked, plan: ReleasePlan, names: tuple[str, ...],
                   released: Released) -> ReleasePlan:
        if inputs.clip is None or names == ("norm_histogram",):
            return super().stage_plan(inputs, plan, names, released)
        # the method's releases at the released clip r: the same events, sensitivities and scales at r
        rows: _Read = released.rows
        method = self._method(inputs, rows.n, rows.d)[0]
        r, stage = at_released_clip(inputs.clip, released["norm_histogram"], method, self.powers,
                                    inputs.clip_share, d=rows.d, n_public=rows.n,
                                    noise_per_clip2=self._noise_per_clip2(inputs, method, rows.n, rows.d))
        released["clip"] = r
        return stage

    def statistic(self, inputs: _Checked, rows: _Read, plan: ReleasePlan,
                  released: Released) -> dict[str, Any]:
        if plan.releases[0].name == "norm_histogram":
            assert inputs.clip is not None
            return {"norm_histogram": norm_histogram(rows.X, inputs.clip.edges, center=None, owner=self.label,
                                                     show_progress=self.show_progress)}
        # the rows' clip: C, or the released r (every row was checked at C before the charge)
        clip, mode = inputs.C, inputs.inputs.on_norm_violation
        if "clip" in released:
            clip, mode = released["clip"], "clip"
        # one draw makes every release of the stage (the steps interleave them), kept under the last
        return {plan.releases[-1].name: Drawn(lambda rel: self._steps(inputs, rows, clip, mode, rel))}

    def _clip_diagnostics(self, inputs: _Checked, released: Released) -> dict[str, float]:
        """``clip`` (released) and ``histogram_noise_std`` with adaptive clipping; nothing without."""
        if inputs.clip is None:
            return {}
        return {"clip": released["clip"], "histogram_noise_std": inputs.clip.release.scale}


def _learning_rate(learning_rate: float | None, q: float, n: int, clip: float) -> float:
    """The power-step learning rate at the rows' clip (C, or the released r: public), unless given."""
    return SPCA_POWER_STEP * q * n / clip**2 if learning_rate is None else float(learning_rate)


class _SPCA(_Stochastic):
    """DP-SPCA: T noisy (sampled or full-batch) power steps; one release, ``"step"``, per step."""

    label = "dp_spca"
    stacklevel = 7  # frames above run: _stochastic_call, dp_spca, the constraint check, the folding, the
    # renaming, the caller
    powers = {"step": 2}

    def _shape(self, inputs: _Checked, d: int) -> tuple[float, int, int]:
        """``(q, T, p)``: sampling rate, steps and columns of the iterate (public)."""
        ins = inputs.inputs
        # Defaults: full batches (q = 1), a few steps, and a learning rate that makes each step a power
        # step (the polar retraction of V + eta G is then ~ the polar factor of G): the paper's
        # experimental settings (T = n, eta = 1/(2n), q = 1/n) leave the iterate at its random start.
        q = SPCA_SAMPLING_RATE if ins.sampling_rate is None else float(ins.sampling_rate)
        T = SPCA_STEPS if ins.n_steps is None else int(ins.n_steps)
        block = ins.block_size if ins.block_size is not None or ins.sampling_rate is None else ins.k
        return q, T, _vrpca_block(ins.k, d, block, self.label)

    def _method_plan(self, inputs: _Checked, n: int, d: int) -> tuple[ReleasePlan, float]:
        q, T, p = self._shape(inputs, d)
        plan, s = _spca_plan(inputs.budget, inputs.relation, inputs.C, n=n, n_steps=T, q=q,
                             mu=float(inputs.inputs.rdp_epsilon_share), calibration=inputs.calibration,
                             accounting=inputs.inputs.accounting, clip=inputs.clip)
        # the step's 2 A_S V: a sample of at most n rows times the orthonormal d x p V (widen_projection),
        # doubled exactly: terms 2 C^2 sqrt(p), i.e. rows of norm sqrt(2) C
        step = widen_projection(plan["step"], n=n, relation=inputs.relation,
                                row_norm=math.sqrt(_G) * sensitivity_norm(inputs.C), d=d, columns=p,
                                summation=inputs.summation)
        return dataclasses.replace(plan, releases=(step,)), s

    def _noise_per_clip2(self, inputs: _Checked, plan: ReleasePlan, n: int, d: int) -> float:
        # ||Z_t||_2 per unit r^2 on A V (the step releases 2 A_S V + Z_t), over the 1/q steps of one pass
        q, _, p = self._shape(inputs, d)
        return plan["step"].scale / inputs.C**2 / _G * (math.sqrt(d) + math.sqrt(p)) / math.sqrt(q)

    def _steps(self, inputs: _Checked, rows: _Read, clip: float, mode: NormViolation,
               releaser: Releaser) -> tuple[Any, float]:
        q, T, p = self._shape(inputs, rows.d)
        eta = _learning_rate(inputs.inputs.learning_rate, q, rows.n, clip)
        sampler = _Sampler(rows.X, q, clip, mode, releaser, self.label)
        V = _spca_steps(rows.X, inputs.inputs.k, p, sampler, releaser, n_steps=T, scale=eta / (q * rows.n),
                        show_progress=self.show_progress, owner=self.label)
        return sampler.on_input(V), eta

    def post_process(self, inputs: _Checked, rows: _Read, released: Released, report: Any) -> SubspaceResult:
        """Canonical signs; diagnostics that are public or released values."""
        V, eta = released["step"]
        q, T, p = self._shape(inputs, rows.d)
        diagnostics = {"noise_multiplier": self._method(inputs, rows.n, rows.d)[1],
                       "noise_std": released.plan["step"].scale, "sampling_rate": q, "n_steps": T,
                       "learning_rate": eta, "block_size": p, **self._clip_diagnostics(inputs, released)}
        return SubspaceResult(components=fix_signs(V), values=None, privacy=report, n_samples=float(rows.n),
                              diagnostics=diagnostics)


class _VRPCA(_Stochastic):
    """DP-VRPCA: m epochs of a released full gradient (``"full_gradient"``, tight) and variance-reduced
    inner steps (``"step"``)."""

    label = "dp_vrpca"
    stacklevel = 6  # frames above run: _stochastic_call, dp_vrpca, the constraint check, the folding, the
    # caller
    powers = {"full_gradient": 2, "step": 2}

    def _shape(self, inputs: _Checked, d: int) -> tuple[float, int, int, float, int]:
        """``(q, T, m, share, p)``: sampling rate, steps per epoch, epochs, the full gradients' share and
        columns of the iterate (public)."""
        ins = inputs.inputs
        m = VRPCA_EPOCHS if ins.n_epochs is None else int(ins.n_epochs)
        T = VRPCA_STEPS if ins.n_steps is None else int(ins.n_steps)
        q = VRPCA_SAMPLING_RATE if ins.sampling_rate is None else float(ins.sampling_rate)
        share = (VRPCA_FULL_SHARE if q == 1.0 else VRPCA_SAMPLED_FULL_SHARE) \
            if ins.full_gradient_share is None else float(ins.full_gradient_share)
        return q, T, m, share, _vrpca_block(ins.k, d, ins.block_size, self.label)

    def _method_plan(self, inputs: _Checked, n: int, d: int) -> tuple[ReleasePlan, float]:
        q, T, m, share, p = self._shape(inputs, d)
        plan, s = _vrpca_plan(inputs.budget, inputs.relation, inputs.C, n=n, n_steps=T, n_epochs=m, q=q,
                              full_gradient_share=share, calibration=inputs.calibration,
                              accounting=inputs.inputs.accounting, clip=inputs.clip)
        return _vrpca_widened(plan, inputs, n, d, p), s

    def _noise_per_clip2(self, inputs: _Checked, plan: ReleasePlan, n: int, d: int) -> float:
        q, _, _, _, p = self._shape(inputs, d)
        return _vrpca_noise_per_clip2(plan, inputs.C, n=n, q=q, d=d, p=p)

    def _adaptive_noise(self, inputs: _Checked) -> bool:
        return bool(inputs.inputs.adaptive_noise) and inputs.calibration == "tight"

    def _steps(self, inputs: _Checked, rows: _Read, clip: float, mode: NormViolation,
               releaser: Releaser) -> tuple[Any, float]:
        q, T, m, _, p = self._shape(inputs, rows.d)
        eta = _learning_rate(inputs.inputs.learning_rate, q, rows.n, clip)
        sampler = _Sampler(rows.X, q, clip, mode, releaser, self.label)
        V = _vrpca_epochs(rows.X, inputs.inputs.k, p, sampler, releaser, C=clip, on_norm_violation=mode,
                          n_steps=T, n_epochs=m, learning_rate=eta, adaptive=self._adaptive_noise(inputs),
                          show_progress=self.show_progress, owner=self.label)
        return sampler.on_input(V), eta

    def post_process(self, inputs: _Checked, rows: _Read, released: Released, report: Any) -> SubspaceResult:
        """Canonical signs; diagnostics that are public or released values."""
        plan = released.plan
        V, eta = released[plan.releases[-1].name]
        q, T, m, _, p = self._shape(inputs, rows.d)
        s = self._method(inputs, rows.n, rows.d)[1]
        return SubspaceResult(
            components=fix_signs(V), values=None, privacy=report, n_samples=float(rows.n),
            diagnostics={"noise_multiplier": s if math.isfinite(s) else None,
                         "noise_std": plan["step"].scale if _has(plan, "step") else 0.0,
                         "full_gradient_noise_std": plan["full_gradient"].scale
                         if _has(plan, "full_gradient") else 0.0,
                         "sampling_rate": q, "n_steps": T, "n_epochs": m, "learning_rate": eta,
                         "block_size": p, "adaptive_noise": self._adaptive_noise(inputs),
                         **self._clip_diagnostics(inputs, released)},
        )


def _stochastic_call(mechanism: type[_Stochastic], X: Any, *, accountant: Accountant | None,
                     random_state: Any, show_progress: bool | None, **public: Any) -> SubspaceResult:
    """Run DP-SPCA or DP-VRPCA on the parameters of its function's call (every one as given): the public
    inputs as one record, the run's settings, then the release template."""
    inputs = _StochasticInputs(**public)
    settings = RunSettings(accountant=accountant, random_state=random_state, accounting=inputs.accounting,
                           show_progress=show_progress)
    return run(mechanism(show_progress), inputs, X, settings)


@renamed({"mu": "rdp_epsilon_share"})
@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@validated(_SPCA_PARAMS)
def dp_spca(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    n_steps: int | None = None,
    learning_rate: float | None = None,
    sampling_rate: float | None = None,
    rdp_epsilon_share: float = 0.5,
    block_size: int | None = None,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
) -> SubspaceResult:
    """DP-SPCA (Algorithm 1 of Shang et al. 2021): noisy stochastic power steps, block version.

    ``V_t = polar(V_{t-1} + (eta / (q n)) (sum_{i in S_t} 2 x_i x_i^T V_{t-1} + Z_t))``, ``S_t`` a
    Poisson sample with rate q, ``Z_t`` i.i.d. Gaussian. Defaults (measured in
    docs/algorithms/stochastic.md): full batches ``q = 1``, ``n_steps = 3`` and a learning rate
    ``100 q n / C^2`` that makes each step a (noisy) power step. The paper's experimental settings
    (``n_steps = n``, ``learning_rate = 1 / (2 n)``, ``sampling_rate = 1 / n``) leave the iterate near
    its random start (spec §C.3.7); pass them to reproduce the paper. ``block_size`` (p): the columns
    of the iterate, default ``min(d, 10 k)`` with full batches (free in privacy, as for
    :func:`dp_vrpca`; the top-k left singular vectors of the last step are returned: MNIST k = 10
    0.683 -> 0.751 at epsilon 0.25, 0.833 with the full-batch Gaussian event below) and k with a given
    ``sampling_rate`` (the paper's block version).
    ``rdp_epsilon_share`` (mu in the paper; the old name ``mu`` still works, with a FutureWarning) is
    used by ``calibration="paper"`` only: the share ``mu`` of epsilon its formula gives the Rényi-DP
    bound of the T steps, the rest ``(1 - mu) epsilon`` paying for the conversion to (epsilon, delta).

    Parameters
    ----------
    X : array-like or np.memmap of shape (n_samples, n_features)
        Private data (random row access is needed). Never modified. With array API dispatch on, a
        PyTorch or CuPy array (any namespace ``array-api-compat`` knows): computed on its device,
        ``components`` in its namespace, device and dtype (float32 or float64; integers in float64).
    k : int
        Dimension of the subspace, in [1, n_features].
    epsilon, delta : float
        Target (epsilon, delta); delta in (0, 1).
    row_norm : float
        Public bound C on each row's norm; rows above it are clipped (or rejected).
    relation : {"replace_one"}
    calibration : {"tight", "paper"}
        ``"tight"`` (default): the noise multiplier found by the accountant for (epsilon, delta)
        (sampled-Gaussian steps for ``sampling_rate < 1``, Gaussian ones with full batches).
        ``"paper"``: the paper's noise formula verbatim; the result reports what the accountant
        certifies for it and warns when that exceeds the request.
    n_steps : int, optional
        Number of steps T (default 3 with full batches).
    learning_rate : float, optional
        Default ``100 q n / C^2`` (a power step).
    sampling_rate : float, optional
        Poisson sampling rate q (default 1: full batches).
    rdp_epsilon_share : float, default=0.5
        ``calibration="paper"`` only: the paper's mu (the old name ``mu`` still works, with a
        FutureWarning).
    block_size : int, optional
        Columns of the iterate (default ``min(d, 10 k)`` with full batches, k with a given sampling rate).
    accountant : Accountant, optional
    random_state : None, int, SeedSequence, Generator or "secure"
        Secret: it draws the start, the samples and the noise. ``"secure"``: OS entropy and an exact
        discrete Gaussian sampler for the noise (the report's ``noise_source`` says which).
    on_norm_violation : {"clip", "raise"}
    accounting : {"auto", "pld"}
        The PLD accountant (tight; about a minute to calibrate for n = T = 60,000). ``"rdp"`` is
        refused: ``dp_accounting``'s RDP accountant has no Poisson-sampled event under replace-one.
    show_progress : bool or None
    adaptive_clip : bool or AdaptiveClip, default=True
        Clip the rows at a released clip (a noisy norm histogram, then the balance rule: noise against
        clipping bias) instead of at ``row_norm``; the noise and the default learning rate follow it.
        ``AdaptiveClip(share=...)`` sets the histogram's share of the budget (default 0.02; its
        ``quantile`` is not used). Off with ``calibration="paper"`` (one release, as in the paper).
        The keyword ``clip_share`` still works, with a FutureWarning.

    Returns
    -------
    SubspaceResult
        An orthonormal basis of the private subspace (``values`` is None: no eigenvalue is released,
        so the columns are not ordered by variance). With adaptive clipping the diagnostics add
        ``clip`` (the released clip) and ``histogram_noise_std``; ``noise_std`` is at the released clip.

    Privacy
    -------
    Relation: replace-one (the only one supported: the step scale ``1/(q n)`` needs a public n). One
    row's contribution to a step is ``2 x x^T V`` with ``||2 x x^T V||_F = 2 ||x|| ||V^T x|| <= 2 C^2 =
    Delta`` (V orthonormal; G = 2 for C = 1); a replaced row moves the sampled sum by at most
    ``2 Delta`` (for any number of orthonormal columns p).

    Sampled steps (``q < 1``, the paper's settings): each step is ``PoissonSampledDpEvent(q,
    GaussianDpEvent(s))`` with ``s = std / Delta`` (the PLD accountant reads it under replace-one as a
    shift of up to ``2 Delta``); T steps compose.

    Full batches (``q = 1``, the default; ``"tight"``): every row is in every step, so a step releases
    ``2 A V + Z`` (``A = X^T X``, V orthonormal, fixed by the released past) and replacing x by y moves it
    by ``||2 (x x^T - y y^T) V||_F <= 2 ||x x^T - y y^T||_F ||V||_2 = 2 sqrt(||x||^4 + ||y||^4 -
    2 (x.y)^2) <= 2 sqrt(2) C^2``, reached at ``x = C e_1``, ``y = C e_2``, ``V = [e_1, e_2, ...]``. Each
    step is therefore ``GaussianDpEvent(s)`` with ``s = std / (2 sqrt(2) C^2)``, over the real shift
    (``PoissonSampledDpEvent(1, .)`` over one row's ``Delta`` is read as a shift of ``2 Delta = 4 C^2``,
    sqrt 2 above it, so it would cost sqrt 2 more noise). The T Gaussian releases compose exactly
    (Gaussian DP) to one with multiplier ``s / sqrt(T)``: s is ``sqrt(T)`` times the multiplier of one
    Gaussian release of (epsilon, delta). (With one column, p = 1, the shift is at most ``2 C^2``: the
    eigenvalues of ``x x^T - y y^T`` lie in ``[-C^2, C^2]``; not used. Under add/remove one row's
    ``2 x x^T V``, ``Delta = 2 C^2``, would be the shift; the method supports replace-one only.)

    ``"tight"``: s is the smallest multiplier for which the accountant certifies (epsilon, delta).
    ``"paper"``: ``std = lambda_1 = sqrt(20 T alpha G^2 / (n^2 eps mu))``, ``alpha = log(1/delta) /
    ((1 - mu) eps) + 1`` (times C^2), accounted as the sampled steps above for any q (unchanged), which
    the accountant does not certify in the paper's own settings (spec §C.3): the result is then marked
    uncertified.

    Adaptive clipping (default with ``"tight"``; :mod:`dpspectral.privacy._adaptive`): a noisy histogram
    of the row norms is released first (``GaussianDpEvent(s_h)``, ``s_h = s_total / sqrt(share)``;
    one row moves one unit of count between two bins, L2 sensitivity ``sqrt(2)``), and the steps run on
    the rows clipped at the clip ``r <= C`` post-processed from it. ``r`` is public, so the bound above
    holds with C replaced by r: ``Delta = 2 r^2``, the full-batch shift ``2 sqrt(2) r^2`` (and the
    default learning rate is ``100 q n / r^2``). s is the smallest multiplier for which the accountant
    certifies the whole run, ``ComposedDpEvent([GaussianDpEvent(s_h), SelfComposedDpEvent(E, T)])`` with
    ``E = PoissonSampledDpEvent(q, GaussianDpEvent(s))`` (q < 1) or ``GaussianDpEvent(s)`` (q = 1: s is
    ``sqrt(T)`` times the multiplier of one Gaussian release composed with the histogram); both stages
    are declared (and checked against the ledger's ceiling) before the first, and every row is read and
    validated at C before anything is charged.

    Device arrays (array API dispatch, ``docs/array-api.md``): a PyTorch/CuPy/array-API array is
    validated (finite; within C with ``on_norm_violation="raise"``) on its device before anything is
    charged, and the clipped products, the retraction and the final SVD are computed in its
    namespace, on its device, in float64 whatever its dtype (the rounding of the sums, which the noise
    covers, would need hundreds of times the noise in float32; the components come back in its dtype);
    the plan and the accountant stay on the host. The same mechanism,
    sensitivities and events; each released step is noised on the host (exact, or ``"secure"``) and
    copied back to the data's device. The random start and, for ``q < 1``,
    each Poisson sample (one exact Bernoulli draw per row) are drawn on the host as on the NumPy path
    and moved to the device; with ``q = 1`` every row is in every step and nothing is
    drawn.

    Rounding: each step's noise std and sensitivity are both widened by ``1 + r`` for the rounding of
    the computed ``2 A_S V`` (a sum over at most n rows times the orthonormal V: ``r`` below ``1e-5`` at
    60,000 rows, d = 784, p = 100; docs/noise.md); the multiplier s and the events are unchanged.
    """
    return _stochastic_call(_SPCA, **locals())


#: DP-SPCA's defaults: full batches, three steps, each a power step, on an oversampled block
#: (MNIST k = 10 with p = 10k: 3 steps 0.833 / 0.948 / 0.987 at epsilon 0.25 / 0.5 / 1 with the Gaussian
#: full-batch event, 0.751 / 0.901 / 0.974 if accounted as a Poisson event at q = 1; 5 steps 0.707 /
#: 0.854 / 0.958 and p = k with 5 steps 0.683 / 0.821 / 0.940, both with the Poisson event).
SPCA_SAMPLING_RATE = 1.0
SPCA_STEPS = 3
SPCA_POWER_STEP = 100.0


def _spca_plan(budget: PrivacyBudget, relation: Relation, row_norm: float, *, n: int, n_steps: int,
               q: float, mu: float, calibration: str, accounting: str,
               clip: RowClipPlan | None = None) -> tuple[ReleasePlan, float]:
    """DP-SPCA's T Gaussian steps (and their noise multiplier), from public inputs: sampled (q < 1, or
    the paper's calibration) over one row's contribution, full batches (q = 1, tight) over the
    replace-one shift; with ``clip``, the multiplier is calibrated for the composition with the norm
    histogram."""
    Cs = sensitivity_norm(row_norm)
    delta_row = _G * Cs**2  # one row's contribution 2 x x^T V, the bound the multiplier refers to
    notes = ["Poisson sampling with rate q (each row independently per step)."]
    sens = delta_row
    if calibration == "tight" and q == 1.0:
        # full batches: a replaced row moves 2 A V by ||2 (x x^T - y y^T) V||_F <= 2 sqrt(2) C^2; the T
        # Gaussian releases compose exactly to one (Gaussian DP): s = sqrt(T) times the multiplier of one
        # release of the budget (or of what the norm histogram leaves)
        sens = math.sqrt(2.0) * delta_row
        s = split_noise_multiplier(_rest_multiplier(budget, accounting, clip) * math.sqrt(n_steps), [1.0])[0]
        events = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), n_steps)
        notes = ["Full batches (q = 1): every step reads every row."]
    elif calibration == "tight":
        s = _calibrate_sampled(q, n_steps, budget.epsilon, budget.delta, accounting, None, 0, clip)
        events = _step_events(q, s, n_steps)
    else:
        alpha = math.log(1.0 / budget.delta) / ((1.0 - mu) * budget.epsilon) + 1.0
        lam1 = math.sqrt(20.0 * n_steps * alpha * _G**2 / (n**2 * budget.epsilon * mu)) * Cs**2
        s = lam1 / delta_row
        events = _step_events(q, s, n_steps)
        notes.append(f"paper noise lambda_1 = {lam1:.6g} (alpha = {alpha:.6g}, mu = {mu:g}).")
    plan = ReleasePlan("dp_spca", relation, (events,), (NoisyRelease("step", "gaussian", s * sens, sens),),
                       tuple(notes))
    return plan, s


def _spca_steps(X: np.ndarray, k: int, p: int, sampler: _Sampler, releaser: Releaser, *, n_steps: int,
                scale: float, show_progress: bool | None, owner: str) -> np.ndarray:
    """Inside the release block: ``V_t = polar(V_{t-1} + scale (sum_S 2 x x^T V_{t-1} + Z_t))`` with p
    columns; the top-k left singular vectors of the last step's ``Y`` (post-processing) when p > k."""
    d = int(X.shape[1])
    V = sampler.on_data(orthonormalize(releaser.standard_normal((d, p)), "qr"))
    Y = V
    for _ in progress(range(n_steps), total=n_steps, desc=owner, enabled=show_progress,
                      min_total=2000):
        gradient = 2.0 * sampler.product(V)
        Y = V + scale * releaser.add("step", gradient)
        V = _retract(Y)
    if p == k:
        return V
    return _top_left(Y, k)


@folded("adaptive_clip", AdaptiveClip, {"clip_share": "share"})
@validated(_VRPCA_PARAMS)
def dp_vrpca(
    X: Any,
    k: int,
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    relation: Relation | str = "replace_one",
    calibration: Calibration = "tight",
    n_epochs: int | None = None,
    n_steps: int | None = None,
    learning_rate: float | None = None,
    sampling_rate: float | None = None,
    full_gradient_share: float | None = None,
    block_size: int | None = None,
    adaptive_noise: bool = True,
    accountant: Accountant | None = None,
    random_state: Any = None,
    on_norm_violation: NormViolation = "clip",
    accounting: AccountingMethod = "auto",
    show_progress: bool | None = None,
    adaptive_clip: bool | AdaptiveClip = True,
) -> SubspaceResult:
    """DP-VRPCA (Algorithm 2 of Shang et al. 2021): variance-reduced noisy steps, block version.

    Epoch s: a full gradient ``mu_s = 2 A V~ / n`` at the anchor ``V~``; inner steps
    ``V_t = polar(V_{t-1} + eta (mu_s + (1 / (q n)) (sum_{i in S_t} 2 x_i x_i^T (V_{t-1} - V~) + Z_t)))``;
    the anchor becomes the last iterate. Defaults (measured in docs/algorithms/stochastic.md):
    full batches (``q = 1``) and the power-step learning rate ``100 q n / C^2`` of :func:`dp_spca`,
    ``n_epochs = 3`` epochs of ``n_steps = 1`` step (each epoch's released full gradient then moves the
    iterate: a noisy power step; further inner steps are available and cost budget), an oversampled
    block of ``block_size = min(d, 10 k)`` columns (free in privacy; the top-k left singular vectors of
    the last step are returned); with inner steps, their noise follows ``||V - V~||_2``
    (``adaptive_noise``) and the full gradients get half of the budget. The paper's settings stay
    reachable: ``n_steps = n, learning_rate = 1 / n, sampling_rate = 1 / n, block_size = k, n_epochs =
    m`` (with ``calibration="paper"`` for its noise).

    Parameters
    ----------
    X, k, epsilon, delta, row_norm, relation, calibration
        As in :func:`dp_spca`.
    n_epochs : int, default=3
        Epochs (the paper's m); each releases one full gradient.
    n_steps : int, default=1
        Steps per epoch (the paper's n); the first follows the released full gradient (nothing else is
        released), each further one releases a variance-reduced term.
    learning_rate : float, optional
        Default ``100 q n / r^2`` (a power step; r the rows' clip: C, or the released clip with
        ``adaptive_clip``); the paper's is ``1 / n``.
    sampling_rate : float, optional
        Default 1 (full batches); the paper's is ``1 / n``.
    full_gradient_share : float, optional
        Default 1/2 of the Gaussian-DP mu^2 with full batches, 0.1 of (epsilon, delta) with sampled
        steps (tight only; all of the budget when no inner step is charged).
    block_size : int, optional
        Columns of the iterate, default ``min(d, 10 k)`` (the paper's k; oversampling is free in
        privacy); the top-k left singular vectors of the last step are returned when it exceeds k.
    adaptive_noise : bool, default=True
        Scale an inner step's noise to the public ``||V - V~||_2`` (tight only; the paper's is False).
    accountant, random_state, on_norm_violation, accounting, show_progress, adaptive_clip
        As in :func:`dp_spca`.

    Returns
    -------
    SubspaceResult
        As in :func:`dp_spca`; the diagnostics add ``full_gradient_noise_std``, ``n_epochs`` and
        ``adaptive_noise``.

    Privacy
    -------
    Relation: replace-one. A row's variance-reduced term ``2 x x^T (V - V~)`` has Frobenius norm at
    most ``2 C^2 ||V - V~||_2 <= 4 C^2`` (both orthonormal, any number of columns). ``"tight"``: sampled
    steps (``q < 1``) are ``PoissonSampledDpEvent(q, GaussianDpEvent(s))`` with ``s = std / (2 C^2 r)``,
    ``r = ||V - V~||_2`` (``r = 2``: the worst case, without ``adaptive_noise``); full-batch steps
    (``q = 1``) are ``GaussianDpEvent(s)`` over the replace-one shift ``2 ||x x^T - y y^T||_F r <= 2 sqrt(2)
    C^2 r``. ``r`` is computed from released values only (post-processing), and the noise follows it at
    the planned multiplier (``Releaser.adapted``): nothing is charged beyond the plan. The first step of
    an epoch has ``V = V~``: its term is zero whatever the data, nothing is released and nothing charged.
    Each epoch's full gradient is released with Gaussian noise: a replaced row moves ``2 A V~ / n`` by
    ``||2 (x x^T - y y^T) V~||_F / n <= 2 sqrt(2) C^2 / n``; the m releases together get the share
    ``full_gradient_share`` of the budget (with full batches: of the Gaussian-DP ``mu^2`` of (epsilon,
    delta), default 1/2, exact since every release is Gaussian; with sampled steps: of (epsilon, delta),
    default 0.1; all of it when no inner step is charged), and the steps' multiplier is the smallest for
    which the accountant certifies the whole run. ``"paper"``: inner
    noise ``lambda_2 = sqrt(G^2 T m log(1/delta) / (n^2 eps^2))`` (times C^2) on every step and the full
    gradient *un-noised* as in the paper; each step then releases ``mu_s + sampled term + Z`` with one
    noise, accounted soundly as two releases with noise ``lambda_2 / sqrt(2)`` each (their sum has the
    law of the step): an unsampled one of the full gradient (in the step's units ``q n mu_s``, replace-one
    shift ``q n * 4 C^2 / n = 4 q C^2``, multiplier ``(lambda_2 / sqrt 2) / (4 q C^2)``) and the sampled
    one. The accountant's epsilon for that is far above the request (spec §C.3.4): the result is marked
    uncertified. (``adaptive_noise`` applies to ``"tight"`` only.)

    Adaptive clipping (default with ``"tight"``; :mod:`dpspectral.privacy._adaptive`): a noisy histogram
    of the row norms is released first (``GaussianDpEvent(s_h)``, ``s_h = s_total / sqrt(share)``;
    L2 sensitivity ``sqrt(2)`` under replace-one), and every full product and sampled step reads the
    rows clipped at the clip ``r <= C`` post-processed from it. ``r`` is public, so every bound above
    holds with C replaced by r (the full gradient's shift ``2 sqrt(2) r^2 / n``, an inner step's ``4 r^2``
    or ``4 sqrt(2) r^2``; the default learning rate is ``100 q n / r^2``); the multipliers are those
    calibrated for the composition ``ComposedDpEvent([GaussianDpEvent(s_h), <the events above>])`` (the
    full gradients' share is then a share of what the histogram leaves). Both stages are declared (and
    checked against the ledger's ceiling) before the first; every row is validated at C before any charge.

    Device arrays: as in :func:`dp_spca`. Rounding: as in :func:`dp_spca`, for the full gradients
    ``2 A V~ / n`` and the steps ``2 A_S (V - V~)`` (``||V - V~||_F <= 2 sqrt(p)``).
    """
    return _stochastic_call(_VRPCA, **locals())


#: DP-VRPCA's defaults: full batches, 3 epochs of one power step (``SPCA_POWER_STEP``) on
#: the released full gradient, an oversampled block of 10 k columns; with inner steps, half of the
#: Gaussian-DP budget for the full gradients.
VRPCA_SAMPLING_RATE = 1.0
VRPCA_EPOCHS = 3
VRPCA_STEPS = 1
VRPCA_FULL_SHARE = 0.5  # of the Gaussian-DP mu^2 (full batches: every release is Gaussian)
VRPCA_SAMPLED_FULL_SHARE = 0.1  # of (epsilon, delta) with sampled steps
VRPCA_OVERSAMPLING = 10


def _vrpca_block(k: int, d: int, block_size: int | None, owner: str) -> int:
    """Columns of the iterate: ``min(d, 10 k)`` by default; at least k, at most d."""
    p = min(d, VRPCA_OVERSAMPLING * k) if block_size is None else int(block_size)
    if not k <= p <= d:
        raise ValueError(
            f"The 'block_size' parameter of {owner} must be in [k, n_features] = [{k}, {d}]. Got {p} "
            "instead."
        )
    return p


def _has(plan: ReleasePlan, name: str) -> bool:
    return any(r.name == name for r in plan.releases)


@functools.lru_cache(maxsize=256)
def _calibrate_vr_steps(q: float, steps: int, epsilon: float, delta: float, accounting: str,
                        full_multiplier: float, epochs: int, clip: RowClipPlan | None = None) -> float:
    """Multiplier of DP-VRPCA's charged inner steps, given the full gradients' (tight calibration) and,
    with adaptive clipping, the norm histogram."""
    if q < 1.0:
        return _calibrate_sampled(q, steps, epsilon, delta, accounting, full_multiplier, epochs, clip)

    def make(s: float) -> dp_accounting.DpEvent:
        return dp_accounting.ComposedDpEvent([
            dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(full_multiplier), epochs),
            dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), steps)])

    return calibrate(make if clip is None else clip.compose(make), epsilon, delta,
                     relation=Relation.REPLACE_ONE, accounting=accounting, tol=1e-4)  # type: ignore[arg-type]


def _vrpca_plan(budget: PrivacyBudget, relation: Relation, row_norm: float, *, n: int, n_steps: int,
                n_epochs: int, q: float, full_gradient_share: float, calibration: str,
                accounting: str, clip: RowClipPlan | None = None) -> tuple[ReleasePlan, float]:
    """DP-VRPCA's releases: m full gradients (tight only) and the inner steps, from public inputs;
    with ``clip``, calibrated for the composition with the norm histogram (what it leaves)."""
    Cs = sensitivity_norm(row_norm)
    delta_vr = 2.0 * _G * Cs**2  # one row's variance-reduced term 2 x x^T (V - V~), ||V - V~|| <= 2
    m, T = n_epochs, n_steps
    notes = ["Poisson sampling with rate q (each row independently per step)."]
    if calibration == "tight":
        # a replaced row moves 2 A V~ / n by ||2 (x x^T - y y^T) V~||_F / n <= 2 sqrt(2) C^2 / n
        shift_full = math.sqrt(2.0) * _G * Cs**2 / n
        s0 = _rest_multiplier(budget, accounting, clip)
        charged = m * (T - 1)  # the first step of an epoch has V = V~: its term is 0, nothing released
        if charged == 0 or q == 1.0:  # all Gaussian: the share of mu^2 is exact
            # (raised by split_noise_multiplier's rounding margin: m equal parts composed must not
            # certify an epsilon above the single release's; 0.5000000000000007 for 0.5 without it)
            share = 1.0 if charged == 0 else full_gradient_share
            s_full = split_noise_multiplier(s0 * math.sqrt(m / share), [1.0])[0]
        else:  # sampled steps: the m full gradients together spend (eps * share, delta * share)
            s_full = analytic_noise_multiplier(budget.epsilon * full_gradient_share,
                                               budget.delta * full_gradient_share) * math.sqrt(m)
        releases = [NoisyRelease("full_gradient", "gaussian", s_full * shift_full, shift_full)]
        full_events = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s_full), m)
        if charged == 0:  # no step is released: no "step" release is planned (nor drawn)
            return ReleasePlan("dp_vrpca", relation, (full_events,), tuple(releases), tuple(notes)), math.inf
        s = _calibrate_vr_steps(q, charged, budget.epsilon, budget.delta, accounting, s_full, m, clip)
        if q < 1.0:
            step_sens, step_events = delta_vr, _step_events(q, s, charged)
        else:  # full batches: the replace-one shift 2 ||x x^T - y y^T||_F ||V - V~||_2 <= 4 sqrt(2) C^2
            notes[0] = "Full batches (q = 1): every inner step reads every row."
            step_sens = math.sqrt(2.0) * delta_vr
            step_events = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), charged)
        releases.append(NoisyRelease("step", "gaussian", s * step_sens, step_sens))
        return ReleasePlan("dp_vrpca", relation, (full_events, step_events), tuple(releases),
                           tuple(notes)), s
    lam2 = math.sqrt(_G**2 * T * m * math.log(1.0 / budget.delta) / (n**2 * budget.epsilon**2))
    std = lam2 * Cs**2
    s = std / math.sqrt(2.0) / delta_vr
    # The step adds eta * full + (eta / (q n)) (sampled + Z): in the units of Z the full gradient
    # enters as q n * full, whose replace-one shift is q n * 2 * (2 C^2 / n).
    s_unsampled = std / math.sqrt(2.0) / (q * n * 2.0 * (_G * Cs**2 / n))
    events = [
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s_unsampled), m * T),
        _step_events(q, s, m * T),
    ]
    notes.append(
        f"paper noise lambda_2 = {std:.6g}; the full gradient enters every step un-noised "
        "(accounted as an unsampled release sharing the step's noise)."
    )
    step = NoisyRelease("step", "gaussian", std, delta_vr)
    return ReleasePlan("dp_vrpca", relation, tuple(events), (step,), tuple(notes)), s


def _vrpca_widened(plan: ReleasePlan, inputs: _Checked, n: int, d: int, p: int) -> ReleasePlan:
    """DP-VRPCA's releases widened for the rounding of their computed statistics (sums over at most the
    public n rows of ``x x^T`` times a public d x p matrix, :func:`widen_projection`'s derivation).

    The full gradient ``2 A V~ / n``: terms ``2 C^2 sqrt(p) / n``, one more rounding for the division.
    A step's ``2 A_S (V - V~)``: the computed ``V - V~`` is public (released values), of Frobenius norm
    at most ``sqrt(p) ||V - V~||_2 <= 2 sqrt(p)``: terms ``4 C^2 sqrt(p)``; with adaptive noise the scale
    and sensitivity follow ``||V - V~||_2 / 2`` and so does this bound, so the widening is the same.
    """
    Cs = sensitivity_norm(inputs.C)
    terms = {"full_gradient": (_G * Cs**2 * math.sqrt(p) * (1.0 + 1e-6) / n, d + 1),
             "step": (2.0 * _G * Cs**2 * math.sqrt(p) * (1.0 + 1e-6), d)}
    return dataclasses.replace(plan, releases=tuple(
        widen_release(r, n=n, relation=inputs.relation, kind="products", term_bound=terms[r.name][0],
                      summation=dataclasses.replace(inputs.summation, followed_by=terms[r.name][1]))
        for r in plan.releases))


def _rest_multiplier(budget: PrivacyBudget, accounting: str, clip: RowClipPlan | None) -> float:
    """The multiplier of one Gaussian release of the whole budget, or (adaptive clipping) of what the
    norm histogram leaves: calibrated for ``ComposedDpEvent([histogram, GaussianDpEvent(s)])``."""
    if clip is None:
        return analytic_noise_multiplier(budget.epsilon, budget.delta)
    return calibrate(clip.compose(dp_accounting.GaussianDpEvent), budget.epsilon, budget.delta,
                     relation=Relation.REPLACE_ONE, accounting=accounting)  # type: ignore[arg-type]


def _vrpca_noise_per_clip2(plan: ReleasePlan, row_norm: float, *, n: int, q: float, d: int,
                           p: int) -> float:
    """The balance rule's ``nu`` (public): the spectral norm of a release's noise on ``A V`` per unit
    ``r^2``, the largest over the release kinds (each sees every row once per epoch or pass). The full
    gradient releases ``2 A V~ / n + Z``; an inner step ``2 A_S (V - V~) + Z`` with ``||V - V~||_2 <= 2``
    (its noise scaled to that distance), over the 1/q steps of one pass."""
    per_unit = plan["step"].scale / row_norm**2 / (2.0 * _G) / math.sqrt(q) if _has(plan, "step") else 0.0
    if _has(plan, "full_gradient"):
        per_unit = max(per_unit, plan["full_gradient"].scale / row_norm**2 * n / _G)
    return per_unit * (math.sqrt(d) + math.sqrt(p))


def _vrpca_epochs(X: np.ndarray, k: int, p: int, sampler: _Sampler, releaser: Releaser, *, C: float,
                  on_norm_violation: NormViolation, n_steps: int, n_epochs: int, learning_rate: float,
                  adaptive: bool, show_progress: bool | None, owner: str) -> np.ndarray:
    """Inside the release block: m epochs of a full gradient and T variance-reduced steps; top-k."""
    n, d = (int(s) for s in X.shape)
    V = sampler.on_data(orthonormalize(releaser.standard_normal((d, p)), "qr"))
    scale = learning_rate / (sampler.q * n)
    total = n_epochs * n_steps
    steps = iter(progress(range(total), total=total, desc=owner, enabled=show_progress,
                          min_total=2000))
    tight = _has(releaser.plan, "full_gradient")
    Y = V
    for _ in range(n_epochs):
        anchor = V
        full = 2.0 * _full_product(X, anchor, C, on_norm_violation, owner) / n
        if tight:
            full = releaser.add("full_gradient", full)
        for t in range(n_steps):
            next(steps, None)
            if tight and t == 0:  # V = V~: the term is zero whatever the data; nothing is released
                Y = V + learning_rate * full
            else:
                term = 2.0 * sampler.product(V - anchor)
                Y = V + learning_rate * full + scale * _vr_noisy(releaser, term, V - anchor, adaptive)
            V = _retract(Y)
    if p == k:
        return V
    return _top_left(Y, k)  # post-processing of the last step


def _vr_noisy(releaser: Releaser, term: np.ndarray, diff: np.ndarray, adaptive: bool) -> np.ndarray:
    """The step's term plus its noise; with ``adaptive``, scaled to the public ``||V - V~||_2 / 2``."""
    if not adaptive:
        return releaser.add("step", term)
    ratio = _spectral_norm(diff) / 2.0  # V, V~ are functions of released values
    if ratio == 0.0:
        return term  # zero whatever the data
    if ratio >= 1.0:
        return releaser.add("step", term)
    spec = releaser.plan["step"]
    assert spec.sensitivity is not None
    with releaser.adapted("step", scale=spec.scale * ratio, sensitivity=spec.sensitivity * ratio) as r:
        return r.add("step", term)


#: Values per chunk of rows read at a time on the host (32 MB of float64): the products below hold one
#: chunk of rows (and its clipped copy), never the data or the sample whole.
_CHUNK_ELEMENTS = 1 << 22


def _chunk_rows(d: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(d, 1))


def _sampled_product(X: Any, idx: np.ndarray, W: np.ndarray, C: float, mode: NormViolation,
                     owner: str) -> np.ndarray:
    """``sum_{i in idx} c(x_i) c(x_i)^T W`` over the rows at the sorted indices ``idx``, read in chunks
    (:func:`~dpspectral._rows.rows_at`: a memmap's pages are released after every chunk). A sample
    within one chunk is one product, as computed before the chunking."""
    out: np.ndarray | None = None
    for _, raw in rows_at(X, idx, _chunk_rows(int(X.shape[1]))):
        block = np.asarray(raw, dtype=np.float64)  # a fresh copy of the rows (converted if needed)
        if not np.isfinite(block).all():  # validated before the charge; kept for a changed memmap
            raise not_finite_error(owner)
        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=False, owner=owner)
        part = block.T @ (block @ W)
        out = part if out is None else out + part
    assert out is not None  # idx is not empty
    return out


def _full_product(X: Any, V: Any, C: float, mode: NormViolation, owner: str = "dp_vrpca") -> Any:
    """``sum_i c(x_i) c(x_i)^T V`` over clipped rows, in blocks (never forms d x d); a device array's on
    its device (:func:`_full_product_xp`). A memmap's pages are released after every block."""
    if is_device_array(X):
        return _full_product_xp(X, V, C, get_namespace_and_device(X, owner)[0], owner)
    n, d = X.shape
    out = np.zeros((d, V.shape[1]))
    rows = _chunk_rows(d)
    release = _page_releaser(X)
    for a in range(0, n, rows):
        block = np.asarray(X[a : a + rows], dtype=np.float64)
        if not np.isfinite(block).all():  # validated before the charge; kept for a changed memmap
            raise not_finite_error(owner)
        # copy=True: the block may be a view of the caller's array (scaled rows go to a copy)
        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=True, first_row=a, owner=owner)
        out += block.T @ (block @ V)
        if release is not None:
            release(a, min(n, a + rows))
    return out



#: Values per chunk of rows on a device (array API dispatch): few, large kernels (as minibatch_oja).
_DEVICE_CHUNK_ELEMENTS = 1 << 24


def _full_product_xp(X: Any, V: Any, C: float, xp: Any, owner: str, rows: Any = None) -> Any:
    """``sum_i c(x_i) c(x_i)^T V`` on the device, over every row of ``X`` or over the rows ``rows`` (a
    device array of indices, gathered with ``xp.take``), in chunks of about 2^24 entries, each clipped at
    C (:func:`~dpspectral._array_api.clip_rows_xp`); the d x p sum never leaves the device. The data
    were validated before the charge (every row within C with ``"raise"``); a NaN/inf seen here (the
    array changed since) is refused as on the NumPy path."""
    n = int(X.shape[0]) if rows is None else int(rows.shape[0])
    dtype = V.dtype
    step = max(1, _DEVICE_CHUNK_ELEMENTS // max(int(X.shape[1]), 1))
    out = xp.zeros_like(V)
    for a in range(0, n, step):
        b = min(n, a + step)
        chunk = X[a:b, ...] if rows is None else xp.take(X, rows[a:b], axis=0)
        block, norms, _ = clip_rows_xp(xp.astype(chunk, dtype, copy=False), C, xp)
        if not isfinite_all(norms, xp):
            raise not_finite_error(owner)
        out = out + block.T @ (block @ V)
    return out
