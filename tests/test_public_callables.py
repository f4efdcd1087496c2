"""Every public callable rejects bad input clearly and charges nothing.

The public callables are enumerated from the ``__all__`` of the package and its subpackages: every one
that takes an ``epsilon`` must be covered here (registry methods through their entry, estimators and the
functions outside the registry through a caller below), so a new public mechanism cannot be added
without joining these checks. For each: a negative epsilon, a NaN in the data and an unknown option are
refused with a message naming the problem, and the ledger has no entry (not even a failed one).
The calibration helpers (no data) are checked for the negative epsilon only. Deterministic.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _neighbours import assert_exception_is_data_free, assert_message_is_data_free, observe
from test_nothing_charged import CLASSES, ESTIMATORS, N_SITES, D, K, N, _call, _clean

from dpspectral import methods

PUBLIC_MODULES = ("dpspectral", "dpspectral.pca", "dpspectral.lowrank", "dpspectral.gep",
                  "dpspectral.local", "dpspectral.distributed", "dpspectral.model_selection",
                  "dpspectral.privacy")

# Callables that take an epsilon but no data: checked for the negative epsilon only.
# (PrivacyReport is left out: a record of a finished release, built by the library, not a computation.)
NO_DATA = {"Accountant", "PrivacyBudget", "EpsilonDeltaDpEvent",
           "analytic_noise_multiplier", "classic_noise_multiplier", "calibrate", "paper_noise_scales",
           "rho_from_epsilon_delta", "gaussian_epsilon"}


def dp_accounting_gaussian(multiplier: float) -> Any:
    import dp_accounting

    return dp_accounting.GaussianDpEvent(multiplier)


def _public_with_epsilon() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not callable(obj):
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if "epsilon" in params:
                found.setdefault(name, obj)
    return found


def _X(nan: bool = False) -> np.ndarray:
    X, _ = _clean()
    if nan:
        X = X.copy()
        X[17, 1] = np.nan
    return X


def _fda(fn_name: str) -> Callable[..., Any]:
    def call(X, y, acc, **over):
        import dpspectral

        kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, classes=CLASSES, accountant=acc, random_state=0)
        kw.update(over)
        return getattr(dpspectral, fn_name)(X, y, K, **kw)
    return call


def _private_pca_gep(X, y, acc, **over):
    from dpspectral.gep import private_pca_gep

    kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, random_state=0)
    kw.update(over)
    return private_pca_gep(X, K, **kw)


def _streaming(cls_name: str) -> Callable[..., Any]:
    def call(X, y, acc, **over):
        from dpspectral import lowrank

        cls = getattr(lowrank, cls_name)
        kw = dict(epsilon=1.0, delta=1e-5, accountant=acc, random_state=0, sketch_seed=7)
        kw.update(over)
        if cls_name == "CovarianceLRF":
            state = cls(D, K, row_norm=1.0, **kw)
            state.insert_many(X)
        elif cls_name in ("ContinualLRF", "ContinualSpaceOptimalLRF"):
            # one cell of the data, as the caller holds it (not converted here)
            state = cls((N, D), K, 4, **kw)
            state.step(rows=[17], cols=[1], values=[X[17, 1]])
        else:
            state = cls((N, D), K, **kw)
            state.update(17, 1, X[17, 1])
        return state.release()
    return call


def _local_gaussian_report(X, y, acc, **over):
    from dpspectral.local import local_gaussian_report

    kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    kw.update(over)
    return local_gaussian_report(X[17], **kw)


def _sites(fn_name: str) -> Callable[..., Any]:
    def call(X, y, acc, **over):
        from dpspectral import distributed

        kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc, random_state=0)
        kw.update(over)
        return getattr(distributed, fn_name)([X[: N // N_SITES], X[N // N_SITES:]], K, **kw)
    return call


def _select_subspace(X, y, acc, **over):
    from dpspectral.model_selection import select_subspace

    candidates = [np.eye(D)[:, :K], np.eye(D)[:, K:2 * K]]
    kw = dict(epsilon=1.0, row_norm=1.0, accountant=acc, random_state=0)
    kw.update(over)
    return select_subspace(candidates, X, **kw)


def _private_select(X, y, acc, **over):
    from dpspectral.model_selection import private_select

    kw = dict(epsilon=1.0, sensitivity=1.0, accountant=acc, random_state=0)
    kw.update(over)
    data = X  # the score reads the data; a NaN must be refused, not scored
    return private_select([0, 1], lambda j: float(np.sum(data[:, j])), **kw)


def _standard_scaler(X, y, acc, **over):
    from dpspectral import DPStandardScaler

    kw = dict(bounds=(-1.0, 1.0), epsilon=1.0, delta=1e-5, accountant=acc, random_state=0)
    kw.update(over)
    return DPStandardScaler(**kw).fit(X)


def _estimator(name: str) -> Callable[..., Any]:
    fit = ESTIMATORS[name]

    def call(X, y, acc, **over):
        if over:
            pytest.skip("estimators are checked below through their constructor parameters")
        return fit(X, y, acc, None)
    return call


EXTRA: dict[str, Callable[..., Any]] = {
    "private_fda": _fda("private_fda"),
    "private_pca_gep": _private_pca_gep,
    "CovarianceLRF": _streaming("CovarianceLRF"),
    "TurnstileLRF": _streaming("TurnstileLRF"),
    "ContinualLRF": _streaming("ContinualLRF"),
    "ContinualSpaceOptimalLRF": _streaming("ContinualSpaceOptimalLRF"),
    "TurnstileSpaceOptimalLRF": _streaming("TurnstileSpaceOptimalLRF"),
    "local_gaussian_report": _local_gaussian_report,
    "local_pca": _sites("local_pca"),
    "pooled_pca": _sites("pooled_pca"),
    "select_subspace": _select_subspace,
    "private_select": _private_select,
    "DPStandardScaler": _standard_scaler,
}
# Public callables taking an epsilon that are reached through another entry point, with the reason.
REACHED_ELSEWHERE = {
    "private_gep": "takes a public pair (A, B) with a declared sensitivity; private_fda and the GEP "
                   "registry entries call it with data",
    "solve_pair": "the GEP registry entries call it; it takes a ScatterPair built by private_fda",
    "dpsr": "GEP registry entry (takes a ScatterPair)", "sr_dp": "GEP registry entry",
    "dpsrs": "GEP registry entry", "dp_rayleigh_flow": "GEP registry entry",
    "dp_truncated_rayleigh_flow": "GEP registry entry",
    "local_lrf_report": "one user's report inside private_local_lrf (registry entry)",
    "PrivacyReport": "a record of a finished release, built by the library, not a computation",
}


def _registry_callers() -> dict[str, Callable[..., Any]]:
    callers: dict[str, Callable[..., Any]] = {}
    for m in methods():
        if not m.private:
            continue

        def call(X, y, acc, _m=m, **over):
            return _call_with(_m, X, y, acc, over)
        callers[m.name] = call
    return callers


def _call_with(m, X, y, acc, over):
    import test_nothing_charged as tnc

    saved = dict(tnc.SETTINGS.get(m.name, {}))
    tnc.SETTINGS[m.name] = {**saved, **over}
    try:
        return _call(m, X, y, acc, None)
    finally:
        tnc.SETTINGS[m.name] = saved


CALLERS = {**_registry_callers(), **EXTRA, **{n: _estimator(n) for n in ESTIMATORS}}


def test_every_public_callable_with_an_epsilon_is_checked():
    registry_functions = {id(m.function) for m in methods()}
    registry_names = {m.function.__name__ for m in methods()}
    estimator_names = {n.split("[")[0] for n in ESTIMATORS}
    missing = [
        name for name, obj in _public_with_epsilon().items()
        if name not in NO_DATA and name not in EXTRA and name not in REACHED_ELSEWHERE
        and name not in estimator_names and id(obj) not in registry_functions
        and name not in registry_names
    ]
    assert not missing, f"public callables with an epsilon not covered by these checks: {missing}"


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_negative_epsilon_is_refused_and_nothing_charged(name):
    if name in ESTIMATORS:
        pytest.skip("estimators: see test_estimators_refuse_negative_epsilon_and_unknown_options")
    _, y = _clean()
    out = observe(lambda acc: CALLERS[name](_X(), y, acc, epsilon=-1.0))
    assert isinstance(out.exception, ValueError), f"{name}: {out.error}"
    assert "'epsilon'" in out.error[1], out.error[1]
    assert out.ledger == ()


# private_select takes no data: its score function is the caller's code reading the private data, so a
# failing score is a failed release that stays charged (tests/test_model_selection.py); refusing before
# the charge would run the caller's code on the data for free.
NO_DATA_ARGUMENT = {"private_select"}


# The streaming states charge their whole horizon when created (their noise is drawn then, before any
# data): a bad update is refused with nothing more charged and nothing marked failed.
CHARGED_AT_CREATION = {"CovarianceLRF", "TurnstileLRF", "ContinualLRF", "ContinualSpaceOptimalLRF",
                       "TurnstileSpaceOptimalLRF"}


@pytest.mark.parametrize("name", sorted(set(CALLERS) - NO_DATA_ARGUMENT))
def test_nan_is_refused_and_nothing_charged(name):
    _, y = _clean()
    out = observe(lambda acc: CALLERS[name](_X(nan=True), y, acc))
    assert isinstance(out.exception, ValueError), f"{name}: {out.error}"
    assert "NaN" in out.error[1] or "finite" in out.error[1], out.error[1]
    if name in CHARGED_AT_CREATION:
        assert len(out.ledger) == 1 and out.ledger[0][2] == "released", out.ledger
    else:
        assert out.ledger == ()


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_unknown_option_is_refused_and_nothing_charged(name):
    if name in ESTIMATORS:
        pytest.skip("estimators: see test_estimators_refuse_negative_epsilon_and_unknown_options")
    _, y = _clean()
    out = observe(lambda acc: CALLERS[name](_X(), y, acc, bogus_option=3))
    assert isinstance(out.exception, (TypeError, ValueError)), f"{name}: {out.error}"
    assert "bogus_option" in out.error[1], out.error[1]
    assert out.ledger == ()


@pytest.mark.parametrize("name", sorted(NO_DATA & set(_public_with_epsilon())))
def test_calibration_helpers_refuse_negative_epsilon(name):
    obj = _public_with_epsilon()[name]
    params = inspect.signature(obj).parameters
    kwargs: dict[str, Any] = {"epsilon": -1.0}
    if "delta" in params:
        kwargs["delta"] = 1e-5
    kwargs.update(HELPER_ARGS.get(name, {}))
    with pytest.raises(ValueError, match="'epsilon'"):
        obj(**kwargs)


HELPER_ARGS: dict[str, dict[str, Any]] = {
    "calibrate": {"make_event": dp_accounting_gaussian},
    "paper_noise_scales": {"n_iter": 5, "regularization": 0.1, "gradient_sensitivity_b": 1.0,
                           "gradient_sensitivity_a": 1.0},
}


@pytest.mark.parametrize("cls_name", ["DPPCA", "DPLowRank", "DPFisherDiscriminant", "DistributedDPPCA",
                                      "DPLinearDiscriminantAnalysis"])
def test_estimators_refuse_negative_epsilon_and_unknown_options(cls_name):
    import dpspectral

    cls = getattr(dpspectral, cls_name)
    with pytest.raises(TypeError, match="bogus_option"):
        cls(bogus_option=3)
    X, y = _clean()
    est = cls(K, epsilon=-1.0, delta=1e-5, row_norm=1.0)
    data = [X[: N // N_SITES], X[N // N_SITES:]] if cls_name == "DistributedDPPCA" else X
    if cls_name == "DistributedDPPCA":
        est.set_params(engine="inprocess")
    acc = dpspectral.Accountant()
    est.set_params(accountant=acc)
    with pytest.raises(ValueError, match="'epsilon'"):
        labelled = cls_name in ("DPFisherDiscriminant", "DPLinearDiscriminantAnalysis")
        est.fit(data, y) if labelled else est.fit(data)
    assert not acc.entries


# --- Input that is not a real 2-D numeric table: refused with a message that quotes no data ------------
#
# NumPy's and scikit-learn's own messages quote the data (``could not convert string to float: '...'``,
# ``Expected 2D array, got 1D array instead: array=[...]``, ``Complex data not supported\n[[...]]``), and
# so does an exception chained under a clean one. Each kind of bad input below is fed to every public
# callable that takes data; the refusal must name the problem, quote none of the data's distinctive
# values (neither in its text nor in its __cause__/__context__ chain nor in a warning), and charge nothing.
# polars is tested where it is installed (it is not a dependency); pandas where it is installed.

SECRET_NUMBER = 0.0314159  # in cell (0, 0) of every variant
SECRET_IMAG = 0.2718281  # the imaginary parts of the complex variant
SECRET_TEXT = "secret-cell"  # the text cell of the text variants, at (17, 1)
FORBIDDEN = ("0.0314", "314159", "0.2718", "271828", "secret-cell")

BAD_KINDS = ("text", "complex", "1-D", "pandas", "polars")
_FRAMES = ("pandas", "polars")

# What the message must name, by kind (the problem, in the library's words).
_NAMES_PROBLEM = {"text": ("numeric", "number"), "complex": ("complex",), "1-D": ("1-D", "2-D"),
                  "pandas": ("numeric",), "polars": ("numeric",)}

# Callers that take one cell or one row of the data (not a table): no 1-D or DataFrame variant.
_ONE_VALUE = {"TurnstileLRF", "ContinualLRF", "ContinualSpaceOptimalLRF", "TurnstileSpaceOptimalLRF",
              "local_gaussian_report"}


def _bad_table(kind: str) -> Any:
    X, _ = _clean()
    X = X.copy()
    X[0, 0] = SECRET_NUMBER
    names = [f"f{j}" for j in range(D)]
    if kind == "text":
        Z = X.astype(object)
        Z[17, 1] = SECRET_TEXT
        return Z
    if kind == "complex":
        Z = X.astype(complex)
        Z[0, 0] += 1j * SECRET_IMAG
        Z[17, 1] += 1j * SECRET_IMAG
        return Z
    if kind == "1-D":
        return X[:, 0].copy()
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        cols: dict[str, Any] = {n: X[:, j] for j, n in enumerate(names)}
        cols["f1"] = [SECRET_TEXT if i == 17 else float(v) for i, v in enumerate(X[:, 1])]
        return pd.DataFrame(cols)
    if kind == "polars":
        pl = pytest.importorskip("polars")
        cols = {n: X[:, j] for j, n in enumerate(names)}
        cols["f1"] = [SECRET_TEXT if i == 17 else repr(float(v)) for i, v in enumerate(X[:, 1])]
        return pl.DataFrame(cols)
    raise AssertionError(kind)


def assert_refusal_quotes_no_data(out: Any, what: str) -> None:
    assert out.raised, f"{what}: accepted the input"
    try:
        assert_exception_is_data_free(out.exception, forbidden_substrings=FORBIDDEN)
        for _, text in out.warnings:
            assert_message_is_data_free(text, forbidden_substrings=FORBIDDEN)
    except AssertionError as exc:
        raise AssertionError(f"{what}: {exc}") from None


def _bad_kind_cases():
    for name in sorted(set(CALLERS) - NO_DATA_ARGUMENT):
        for kind in BAD_KINDS:
            if name in _ONE_VALUE and (kind == "1-D" or kind in _FRAMES):
                continue
            yield pytest.param(name, kind, id=f"{name}-{kind}")


@pytest.mark.parametrize("name, kind", list(_bad_kind_cases()))
def test_non_numeric_or_1d_input_is_refused_with_a_data_free_message(name, kind):
    X = _bad_table(kind)
    _, y = _clean()
    out = observe(lambda acc: CALLERS[name](X, y, acc))
    assert_refusal_quotes_no_data(out, f"{name} on {kind} input")
    assert isinstance(out.exception, (TypeError, ValueError)), f"{name}: {out.error}"
    message = out.error[1]
    assert any(word in message for word in _NAMES_PROBLEM[kind]), f"{name}: {message!r}"
    if kind in _FRAMES:  # the text column is named by its public name, not by a cell
        assert "'f1'" in message, f"{name}: {message!r}"
    if name in CHARGED_AT_CREATION:
        assert len(out.ledger) == 1 and out.ledger[0][2] == "released", out.ledger
    else:
        assert out.ledger == (), f"{name} charged the ledger before refusing: {out.ledger}"


def _fitted(cls_name: str) -> Any:
    import dpspectral

    X, y = _clean()
    cls = getattr(dpspectral, cls_name)
    kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    if cls_name in ("DPFisherDiscriminant", "DPLinearDiscriminantAnalysis"):
        return cls(K, classes=CLASSES, **kw).fit(X, y)
    if cls_name == "DistributedDPPCA":
        return cls(K, engine="inprocess", **kw).fit([X[: N // N_SITES], X[N // N_SITES:]])
    return cls(K, **kw).fit(X)


# The methods of a fitted estimator that read new data (the projections and the classifier's scores).
READ_DATA = [("DPPCA", "transform"), ("DPPCA", "inverse_transform"), ("DPPCA", "score_samples"),
             ("DPFisherDiscriminant", "transform"),
             ("DPLinearDiscriminantAnalysis", "transform"), ("DPLinearDiscriminantAnalysis", "predict"),
             ("DPLinearDiscriminantAnalysis", "predict_proba"),
             ("DPLinearDiscriminantAnalysis", "decision_function"), ("DistributedDPPCA", "transform")]


@pytest.mark.parametrize("kind", ["text", "complex", "1-D", "pandas", "polars"])
@pytest.mark.parametrize("cls_name, method", READ_DATA, ids=[f"{c}.{m}" for c, m in READ_DATA])
def test_fitted_estimators_refuse_bad_new_data_with_a_data_free_message(cls_name, method, kind):
    est = _fitted(cls_name)
    X = _bad_table(kind)
    if method == "inverse_transform" and kind != "1-D":  # its input lives in the projected space
        X = X[:, :K] if kind not in _FRAMES else X[["f0", "f1"]]
    out = observe(lambda acc: getattr(est, method)(X))
    assert_refusal_quotes_no_data(out, f"{cls_name}.{method} on {kind} input")
    assert isinstance(out.exception, (TypeError, ValueError)), f"{cls_name}.{method}: {out.error}"
    assert any(word in out.error[1] for word in _NAMES_PROBLEM[kind]), out.error[1]


# Labels the classifiers cannot use: refused before the charge, quoting no label and no row count.
def _bad_labels(kind: str) -> Any:
    _, y = _clean()
    if kind == "complex":
        return y + 1j * SECRET_NUMBER
    if kind == "text-with-numbers":  # a text label among the public integer classes
        return np.array([SECRET_TEXT if i == 17 else int(v) for i, v in enumerate(y)], dtype=object)
    if kind == "2-D":
        return np.column_stack([y, y + SECRET_NUMBER])
    if kind == "not-a-class":
        z = y.astype(float)
        z[17] = SECRET_NUMBER
        return z
    raise AssertionError(kind)


LABELLED = ["DPFisherDiscriminant", "DPLinearDiscriminantAnalysis", "moments", "dpsr", "sr_dp",
            "private_fda"]


@pytest.mark.parametrize("kind", ["complex", "text-with-numbers", "2-D", "not-a-class"])
@pytest.mark.parametrize("name", LABELLED)
def test_bad_labels_are_refused_with_a_data_free_message(name, kind):
    X, _ = _clean()
    y = _bad_labels(kind)
    out = observe(lambda acc: CALLERS[name](X, y, acc))
    assert_refusal_quotes_no_data(out, f"{name} on {kind} labels")
    assert isinstance(out.exception, (TypeError, ValueError)), f"{name}: {out.error}"
    assert "'y'" in out.error[1] or "label" in out.error[1], out.error[1]
    assert out.ledger == (), f"{name} charged the ledger before refusing: {out.ledger}"
