"""Descriptive public parameter names; the paper's symbol goes in the docstring.

Every public callable in the ``__all__`` of ``dpspectral``, of its subpackages and of the public modules
``dpspectral.metrics`` and ``dpspectral.datasets`` (functions, classes' ``__init__`` and public
methods) names its parameters descriptively. Single letters are the data / matrix conventions
(:data:`CONVENTIONS`), the names kept with a stated reason (:data:`KEPT`), or renames that wait for a
file another change owns (:data:`PENDING`, to empty). A renamed parameter keeps its old (paper) name
working through :func:`dpspectral._constraints.renamed`: with a FutureWarning and the same result, bit
for bit, for a fixed seed (:func:`test_old_name_warns_and_gives_the_same_result`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import dpspectral
from dpspectral import _registry as registry
from dpspectral import gep
from dpspectral.local import (
    local_gaussian_aggregate,
    local_gaussian_report,
    local_lrf_report,
    local_lrf_setup,
)
from dpspectral.lowrank import (
    optimal_space_lrf,
    sketch_sizes,
)
from dpspectral.pca import RangeEstimation, dp_spca
from dpspectral.pca._oja import (
    dp_pca,
    oja,
    private_mean,
    private_oja,
    private_top_eigenvalue,
    shuffle_amplified_epsilon,
)

#: Single-letter names that are conventions of the whole library: the data ``X`` and labels ``y``
#: (scikit-learn's), the matrix ``A`` (the second matrix ``B`` of a pair) and the rank ``k`` (the papers').
CONVENTIONS = frozenset({"X", "y", "k", "A", "B"})

_FORMULA = "a mathematical helper: the symbol of the formula its docstring states"
_FACTORS = "the factors of A ~ U diag(S) V^T: the symbols every low-rank result and metric shares"
_BASES = "two bases V, W of subspaces (columns), the symbols of the metric's formula"
_SHAPE = ("n rows, d features: the shape (n, d) every generator's docstring states; called positionally "
          "everywhere (n_samples / n_features would follow scikit-learn's make_*: a later, separate change)")

#: (callable, parameter) -> why the single letter stays.
KEPT: dict[tuple[str, str], str] = {
    **{(f"{cls}.__init__", p): _FACTORS + " (also the result's attributes)"
       for cls in ("LowRankResult", "GramResult", "RowSubspaceResult") for p in "USV"},
    **{("additive_error", p): _FACTORS for p in "USV"},
    **{("total_error", p): _FACTORS for p in "USV"},
    **{(f, p): _BASES for f in ("principal_angles", "projection_distance", "max_sin_theta") for p in "VW"},
    ("sin_theta", "v"): "two vectors v, w: the symbols of sin(v, w) in the docstring",
    ("sin_theta", "w"): "two vectors v, w: the symbols of sin(v, w) in the docstring",
    ("aligned_distance", "V"): _BASES,
    ("captured_energy", "V"): _BASES,
    ("captured_variance", "V"): _BASES,
    ("chi2_factor", "d"): _FORMULA + " (c_d(delta_s), d the number of rows of the sketch)",
    **{("rank_k_between", p): _FORMULA + " (argmin ||F - C X R||_F)" for p in "CFR"},
    **{("rank_k_left", p): _FORMULA + " (argmin ||F - C X||_F)" for p in "CF"},
    ("symmetric_gaussian", "d"): _FORMULA + " (a d x d symmetric Gaussian matrix)",
    ("BinghamSampler.__init__", "M"): "the parameter matrix M of the Bingham law exp(v^T M v)",
    ("sample_bingham", "M"): "the parameter matrix M of the Bingham law exp(v^T M v)",
    ("TurnstileLRF.update", "i"): "A[i, j] += delta: the entry's row, the matrix-entry convention of the "
                                  "docstring (update_many, the batch form, names them rows, cols)",
    ("TurnstileLRF.update", "j"): "A[i, j] += delta: the entry's column (see i)",
    ("TurnstileSpaceOptimalLRF.update", "i"): "A[i, j] += delta: as TurnstileLRF.update",
    ("TurnstileSpaceOptimalLRF.update", "j"): "A[i, j] += delta: as TurnstileLRF.update",
    ("local_gaussian_report", "x"): "one user's row: the lower-case x of the data convention X",
    ("random_orthonormal", "d"): _FORMULA + " (a d x k orthonormal matrix)",
    **{(f, p): _SHAPE for f in ("gaussian_data", "spiked_covariance", "decaying_spectrum") for p in "nd"},
}

#: (callable, parameter) -> the descriptive name it should take, in files another change edits now:
#: remove an entry with the rename (the test below fails on a stale entry). Empty: every rename is done.
PENDING: dict[tuple[str, str], str] = {}


#: Public modules whose functions no package ``__all__`` re-exports: the registry (``dpspectral.methods``)
#: names them (``dp_pca`` and its private building blocks).
_REGISTRY_ONLY_MODULES = ("dpspectral.pca._oja",)


def _public_modules() -> list[Any]:
    names = ["dpspectral"]
    names += [m.name for m in pkgutil.walk_packages(dpspectral.__path__, "dpspectral.")
              if m.ispkg and not any(part.startswith("_") for part in m.name.split("."))]
    names += ["dpspectral.metrics", "dpspectral.datasets"]
    names += list(_REGISTRY_ONLY_MODULES)
    return [importlib.import_module(name) for name in names]


def _public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """``(name, callable)`` for every function, class ``__init__`` and public method, each once."""
    seen: set[int] = set()
    for module in _public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                yield f"{name}.__init__", obj.__init__
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and callable(member):
                        yield f"{name}.{attr}", member
            else:
                yield name, obj


def _parameters(func: Callable[..., Any]) -> list[str]:
    try:
        return [p for p in inspect.signature(func).parameters if p not in ("self", "cls")]
    except (TypeError, ValueError):  # a builtin without a signature (an exception's __init__)
        return []


def _single_letters() -> set[tuple[str, str]]:
    return {(name, p) for name, func in _public_callables() for p in _parameters(func)
            if len(p) == 1 and p not in CONVENTIONS}


def test_public_parameters_are_descriptive():
    unexplained = _single_letters() - KEPT.keys() - PENDING.keys()
    assert not unexplained, (
        f"single-letter public parameters {sorted(unexplained)}: give them a descriptive name (the paper's "
        "symbol goes in the docstring; keep the old one with dpspectral._constraints.renamed), or list "
        "them in KEPT with the reason"
    )


def test_kept_and_pending_lists_are_not_stale():
    found = _single_letters()
    assert not KEPT.keys() - found, sorted(KEPT.keys() - found)
    assert not PENDING.keys() - found, f"renamed: remove {sorted(PENDING.keys() - found)} from PENDING"


def test_registry_options_are_parameters_of_their_function():
    # a renamed parameter is renamed in the registry too (the CLI, the estimators and the audit pass
    # options by name)
    for method in registry.methods():
        target = method.function.resolve() if hasattr(method.function, "resolve") else method.function
        params = inspect.signature(target).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            continue  # the GEP solvers forward their options
        assert method.options <= params.keys(), (method.name, sorted(method.options - params.keys()))


# -- the old names still work ----------------------------------------------------------------------------

_A = np.random.default_rng(2018).uniform(size=(12, 9))
_ROWS = _A / np.linalg.norm(_A, axis=1, keepdims=True)
_PRIVATE = {"epsilon": 1.0, "delta": 1e-6, "random_state": 0}
_SIZES_OLD = {"t": 4, "v": 6}
_SIZES_NEW = {"subspace_sketch_size": 4, "affine_sketch_size": 6}


def _factors(res: Any) -> tuple[np.ndarray, ...]:
    return res.U, res.S, res.V


def _spca(**share: Any) -> tuple[np.ndarray, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)  # the paper's formula
        res = dp_spca(_ROWS, 1, epsilon=1.0, delta=1e-3, row_norm=1.0, calibration="paper", n_steps=5,
                      random_state=0, **share)
    return (res.components, np.array([res.privacy.epsilon]))


def _local_setup(**names: Any) -> tuple[np.ndarray, ...]:
    setup = local_lrf_setup(k=2, seed=5, **names)
    return setup.Phi, setup.S, setup.T, np.array([setup.m, setup.n, setup.t, setup.v])


_LOCAL_SETUP = local_lrf_setup(*_ROWS.shape, 2, **_SIZES_NEW, seed=5)


def _local_report(**index: Any) -> tuple[np.ndarray, ...]:
    report = local_lrf_report(_ROWS[3], setup=_LOCAL_SETUP, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0,
                              **index)
    return report.y, report.Z, np.array([report.i])


def _local_gaussian(**n_features: Any) -> tuple[np.ndarray, ...]:
    reports = np.stack([local_gaussian_report(row, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=i)
                        for i, row in enumerate(_ROWS)])
    return local_gaussian_aggregate(reports, k=2, **n_features)


def _dp_pca(**tail: Any) -> tuple[np.ndarray, ...]:
    X = np.random.default_rng(7).standard_normal((400, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpspectral.UncertifiedPrivacyWarning)  # the paper's formula
        warnings.simplefilter("ignore", UserWarning)  # outside Theorem 5.1's range (privacy holds)
        res = dp_pca(X, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, batch_size=64,
                     range_estimation=RangeEstimation(n_groups=4, tail_scale=2.0, tail_exponent=0.7),
                     calibration="paper", random_state=0, **tail)
    return res.components, np.array([res.privacy.epsilon])


def _oja(**rates: Any) -> tuple[np.ndarray, ...]:
    X = np.random.default_rng(7).standard_normal((400, 4))
    return (oja(X / np.linalg.norm(X, axis=1, keepdims=True), 1, random_state=0, **rates).components,)


def _private_oja(**rates: Any) -> tuple[np.ndarray, ...]:
    X = np.random.default_rng(7).standard_normal((400, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # outside the analysis' range (privacy holds)
        res = private_oja(X, 1, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0, **rates)
    return res.components, np.array([res.privacy.epsilon])


_GRADIENTS = np.random.default_rng(3).uniform(-0.5, 0.5, size=(64, 3))


def _top_eigenvalue(**gradients: Any) -> tuple[np.ndarray, ...]:
    est = private_top_eigenvalue(**gradients, epsilon=1e3, delta=1e-6, bound=2.0, n_groups=4, random_state=0)
    return (np.array([np.nan if est is None else est]),)


def _mean(**gradients: Any) -> tuple[np.ndarray, ...]:
    mean, _ = private_mean(**gradients, radius=0.5, bound=1.0, hist_scale=0.1, hist_budget=None,
                           noise_std_per_sensitivity=1.0, random_state=0)
    return (np.full(3, np.nan) if mean is None else mean,)


_FDA_X = _ROWS
_FDA_Y = np.arange(12) % 3
_PAIR = gep.fda_pair(_FDA_X, _FDA_Y, row_norm=1.0)
_GEP_PRIVATE = {"epsilon": 1.0, "delta": 1e-6, "random_state": 0}
_XI_OLD, _XI_NEW = {"xi": 0.05}, {"regularization": 0.05}
#: The step size of the Rayleigh flows (eta in the paper), renamed too.
_STEP_OLD = {"dp_rayleigh_flow": {"eta": 0.5}, "dp_truncated_rayleigh_flow": {"eta": 0.5}}
_STEP_NEW = {"dp_rayleigh_flow": {"step_size": 0.5}, "dp_truncated_rayleigh_flow": {"step_size": 0.5}}


def _gep(res: Any) -> tuple[np.ndarray, ...]:
    return res.vectors, res.values


def _user_pair(**xi: Any) -> tuple[np.ndarray, ...]:
    sens = gep.PairSensitivity(a_frobenius=0.1, a_spectral=0.1, b_frobenius=0.1, b_spectral=0.1,
                               relation=dpspectral.Relation.REPLACE_ONE)
    return (gep.symmetric_definite_pair(_PAIR.A, _PAIR.B, sensitivity=sens, **xi).B,)


def _private_gep(**xi: Any) -> tuple[np.ndarray, ...]:
    sens = gep.PairSensitivity(a_frobenius=0.1, a_spectral=0.1, b_frobenius=0.1, b_spectral=0.1,
                               relation=dpspectral.Relation.REPLACE_ONE)
    return _gep(gep.private_gep(_PAIR.A, _PAIR.B, 2, sensitivity=sens, n_iter=3, **_GEP_PRIVATE, **xi))


#: The public GEP functions whose ``xi`` (paper 003) is now ``regularization``.
_GEP_CASES: list[tuple[str, Callable[..., tuple[np.ndarray, ...]]]] = [
    ("simultaneous_reduction", lambda **kw: _gep(gep.simultaneous_reduction(_PAIR.A, _PAIR.B, 2, **kw))),
    ("regularized_reduction", lambda **kw: gep.regularized_reduction(_PAIR.B, clamp=True, **kw)),
    ("paper_noise_scales", lambda **kw: (np.array(gep.paper_noise_scales(
        1.0, 1e-6, 5, gradient_sensitivity_b=1.0, gradient_sensitivity_a=1.0, **kw)),)),
    ("sr_dp", lambda **kw: _gep(gep.sr_dp(_PAIR, 2, **_GEP_PRIVATE, **kw))),
    ("dpsr", lambda **kw: _gep(gep.dpsr(_PAIR, 2, n_iter=3, **_GEP_PRIVATE, **kw))),
    ("dpsrs", lambda **kw: _gep(gep.dpsrs(_PAIR, 2, 3, n_iter=3, **_GEP_PRIVATE, **kw))),
    ("dp_rayleigh_flow", lambda **kw: _gep(gep.dp_rayleigh_flow(_PAIR, 2, n_iter=3, **_GEP_PRIVATE, **kw))),
    ("dp_truncated_rayleigh_flow",
     lambda **kw: _gep(gep.dp_truncated_rayleigh_flow(_PAIR, 2, 3, n_iter=3, **_GEP_PRIVATE, **kw))),
    ("solve_pair",
     lambda **kw: _gep(gep.solve_pair(_PAIR, 2, method="dpsr", n_iter=3, **_GEP_PRIVATE, **kw))),
    ("private_fda",
     lambda **kw: _gep(gep.private_fda(_FDA_X, _FDA_Y, 2, row_norm=1.0, method="dpsr", n_iter=3,
                                       **_GEP_PRIVATE, **kw))),
    ("private_pca_gep",
     lambda **kw: _gep(gep.private_pca_gep(_FDA_X, 2, row_norm=1.0, n_iter=3, **_GEP_PRIVATE, **kw))),
    ("private_gep", _private_gep),
    ("symmetric_definite_pair", _user_pair),
]


#: (callable name as enumerated, run(**names) -> arrays, old names -> values, new names -> values)
RENAMED_CASES: list[tuple[str, Callable[..., tuple[np.ndarray, ...]], dict[str, Any], dict[str, Any]]] = [
    ("optimal_space_lrf", lambda **kw: _factors(optimal_space_lrf(_A, 2, random_state=0, **kw)),
     _SIZES_OLD, _SIZES_NEW),
    ("sketch_sizes", lambda **kw: (np.array(dataclasses.astuple(sketch_sizes(2, 0.25, **kw))),),
     {"t_max": 7, "v_max": 8, "t": 3, "v": 5},
     {"max_subspace_sketch_size": 7, "max_affine_sketch_size": 8, "subspace_sketch_size": 3,
      "affine_sketch_size": 5}),
    ("dp_spca", _spca, {"mu": 0.3}, {"rdp_epsilon_share": 0.3}),
    ("local_lrf_setup", _local_setup, {"m": 12, "n": 9, **_SIZES_OLD},
     {"n_users": 12, "n_features": 9, **_SIZES_NEW}),
    ("local_lrf_report", _local_report, {"i": 3}, {"user_index": 3}),
    ("local_gaussian_aggregate", _local_gaussian, {"d": 9}, {"n_features": 9}),
    ("dp_pca", _dp_pca, {"c1": 3.0, "c2": 2.0}, {"learning_rate_scale": 3.0, "learning_rate_offset": 2.0}),
    ("oja", _oja, {"c1": 3.0, "c2": 2.0}, {"learning_rate_scale": 3.0, "learning_rate_offset": 2.0}),
    ("private_oja", _private_oja, {"c1": 3.0, "c2": 2.0},
     {"learning_rate_scale": 3.0, "learning_rate_offset": 2.0}),
    ("private_top_eigenvalue", _top_eigenvalue, {"G": _GRADIENTS}, {"gradients": _GRADIENTS}),
    ("private_mean", _mean, {"G": _GRADIENTS}, {"gradients": _GRADIENTS}),
    ("shuffle_amplified_epsilon",
     lambda **kw: (np.array(shuffle_amplified_epsilon(2.0, delta=1e-6, **kw)),), {"n": 10**5},
     {"n_steps": 10**5}),
    *((name, run, {**_XI_OLD, **_STEP_OLD.get(name, {})}, {**_XI_NEW, **_STEP_NEW.get(name, {})})
      for name, run in _GEP_CASES),
]


def _renamed_callables() -> dict[str, dict[str, str]]:
    out = {}
    for name, func in _public_callables():
        mapping = getattr(func, "renamed_parameters", None)
        if mapping:
            out[name] = dict(mapping)
    return out


def test_every_renamed_parameter_is_exercised():
    covered = {name: dict(zip(old, new, strict=True)) for name, _, old, new in RENAMED_CASES}
    assert covered == _renamed_callables()


@pytest.mark.parametrize(("name", "run", "old", "new"), RENAMED_CASES, ids=[c[0] for c in RENAMED_CASES])
def test_old_name_warns_and_gives_the_same_result(name, run, old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new names: no warning
        expected = run(**new)
    with pytest.warns(FutureWarning) as caught:
        got = run(**old)
    messages = " ".join(str(w.message) for w in caught if issubclass(w.category, FutureWarning))
    for old_name, new_name in zip(old, new, strict=True):
        assert f"'{old_name}' parameter" in messages and f"renamed '{new_name}'" in messages
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="both"):  # the old and the new name together: refused
        first_old, first_new = next(iter(old)), next(iter(new))
        run(**{**new, first_old: old[first_old], first_new: new[first_new]})
