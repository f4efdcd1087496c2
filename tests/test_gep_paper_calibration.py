"""``calibration`` of DPSR and DPSRS: ``"tight"``, ``"paper"`` or a ``PaperCalibration`` (the paper's
formula with those settings); the separate ``paper_calibration`` keyword still works, with a
FutureWarning, and does exactly what it did."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpspectral import Accountant, DPFisherDiscriminant, UncertifiedPrivacyWarning
from dpspectral.gep import PaperCalibration, dpsr, dpsrs, fda_pair, private_fda

DELTA = 1e-5
KW = dict(epsilon=1.0, delta=DELTA, n_iter=3, random_state=0)
SOLVERS = {"dpsr": lambda pair, **kw: dpsr(pair, 2, **kw),
           "dpsrs": lambda pair, **kw: dpsrs(pair, 2, 3, **kw)}
SETTINGS = [None, PaperCalibration(formula="algorithm2"), PaperCalibration(constants=(4.0, 8.0))]


def _rows(n: int = 1500, d: int = 6, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) / 4 + np.eye(3, d)[y] / 2
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)), y


@pytest.fixture(scope="module")
def pair():
    X, y = _rows()
    return fda_pair(X, y, row_norm=1.0)


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.vectors, b.vectors)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.privacy == b.privacy and a.diagnostics.keys() == b.diagnostics.keys()


def _quiet(run, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)  # the paper's constants (4, 8)
        return run(**kw)


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("setting", SETTINGS, ids=["defaults", "algorithm2", "constants"])
def test_old_and_new_spellings_give_the_same_seeded_release(pair, name, setting):
    run = SOLVERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new spelling: no warning
        new = _quiet(run, pair=pair, calibration="paper" if setting is None else setting, **KW)
    with pytest.warns(FutureWarning, match=f"'paper_calibration' of {name} moved into 'calibration': pass "
                                           r"calibration=PaperCalibration\(...\)") as caught:
        old = _quiet(run, pair=pair, calibration="paper", paper_calibration=setting, **KW)
    assert {w.filename for w in caught if w.category is FutureWarning} == {__file__}  # the user's line
    _same(new, old)
    assert new.privacy.calibration == "paper"
    if setting is not None:  # the settings are read: not the defaults' release
        default = _quiet(run, pair=pair, calibration="paper", **KW)
        assert default.diagnostics["noise_std_phase1"] != new.diagnostics["noise_std_phase1"]


@pytest.mark.parametrize("name", SOLVERS)
def test_paper_calibration_with_the_tight_calibration_has_no_effect_as_before(pair, name):
    """``paper_calibration`` with ``calibration="tight"`` was checked and not read: it still is."""
    run = SOLVERS[name]
    tight = run(pair, **KW)
    for setting in (*SETTINGS, PaperCalibration(constants=(-1.0, 0.0))):  # constants: read by "paper" only
        with pytest.warns(FutureWarning, match="with calibration='tight' it has no effect: leave it out"):
            _same(tight, run(pair, calibration="tight", paper_calibration=setting, **KW))
    with pytest.warns(FutureWarning, match="no effect"):  # the default calibration is "tight"
        _same(tight, run(pair, paper_calibration=PaperCalibration(formula="algorithm2"), **KW))
    with pytest.warns(FutureWarning, match="'paper_formula' of .* no effect"):
        _same(tight, run(pair, paper_formula="algorithm2", **KW))


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_a_bad_paper_calibration_is_refused_as_before_with_either_calibration(pair, calibration):
    ledger = Accountant(10.0, 1e-3)
    kw = dict(KW, calibration=calibration, accountant=ledger)
    with pytest.warns(FutureWarning), pytest.raises(
            TypeError, match="The 'paper_calibration' parameter of dpsr must be a PaperCalibration or None"):
        dpsr(pair, 2, paper_calibration="algorithm2", **kw)
    with pytest.warns(FutureWarning), pytest.raises(
            ValueError, match="The 'paper_calibration.formula' parameter of dpsr must be one of"):
        dpsr(pair, 2, paper_calibration=PaperCalibration(formula="theorem13"), **kw)
    with pytest.warns(FutureWarning), pytest.raises(ValueError,
                                                    match="'paper_calibration.formula' .* of dpsrs"):
        dpsrs(pair, 2, 3, paper_formula="theorem13", **kw)
    assert not ledger.entries  # refused before anything was charged


def test_bad_calibration_values_are_refused_naming_the_parameter(pair):
    ledger = Accountant(10.0, 1e-3)
    kw = dict(KW, accountant=ledger)
    with pytest.raises(ValueError, match="The 'calibration' parameter of dpsr must be one of 'tight', "
                                         "'paper' or a PaperCalibration. Got 'loose' instead"):
        dpsr(pair, 2, calibration="loose", **kw)
    with pytest.raises(ValueError, match="The 'calibration.formula' parameter of dpsrs must be one of "
                                         "'theorem12', 'algorithm2'. Got 'theorem13'"):
        dpsrs(pair, 2, 3, calibration=PaperCalibration(formula="theorem13"), **kw)
    with pytest.raises(ValueError, match="The 'calibration.constants' parameter of dpsr must be"):
        dpsr(pair, 2, calibration=PaperCalibration(constants=(0.0, 8.0)), **kw)
    with pytest.raises(ValueError, match="The 'calibration.formula' parameter of private_fda"):
        X, y = _rows(300)
        private_fda(X, y, 2, epsilon=1.0, delta=DELTA, row_norm=1.0, method="dpsr",
                    calibration=PaperCalibration(formula="theorem13"))
    with pytest.warns(FutureWarning), pytest.raises(
            TypeError, match=r"dpsr\(\) got both calibration=PaperCalibration\(...\) and 'paper_"):
        dpsr(pair, 2, calibration=PaperCalibration(), paper_calibration=PaperCalibration(), **kw)
    assert not ledger.entries


def test_old_field_keywords_fold_into_the_calibration(pair):
    """``paper_formula`` and ``paper_constants`` still work: into ``calibration="paper"``, into a given
    ``PaperCalibration``, or into the old ``paper_calibration`` group, as before."""
    new = _quiet(dpsr, pair=pair, k=2, calibration=PaperCalibration("algorithm2", (4.0, 8.0)), **KW)
    with pytest.warns(FutureWarning, match=r"calibration=PaperCalibration\(formula=..., constants=...\)"):
        old = _quiet(dpsr, pair=pair, k=2, calibration="paper", paper_formula="algorithm2",
                     paper_constants=(4.0, 8.0), **KW)
    _same(new, old)
    with pytest.warns(FutureWarning, match="'paper_formula' of dpsr moved into 'calibration'"):
        _same(new, _quiet(dpsr, pair=pair, k=2, calibration=PaperCalibration(constants=(4.0, 8.0)),
                          paper_formula="algorithm2", **KW))
    with pytest.warns(FutureWarning, match="'paper_calibration', 'paper_formula' of dpsr moved"):
        _same(new, _quiet(dpsr, pair=pair, k=2, calibration="paper", paper_formula="algorithm2",
                          paper_calibration=PaperCalibration(constants=(4.0, 8.0)), **KW))


def test_private_fda_passes_either_spelling_on_and_the_warning_points_at_the_caller():
    X, y = _rows(600)
    kw = dict(epsilon=1.0, delta=DELTA, row_norm=1.0, method="dpsrs", sparsity=3, n_iter=3, random_state=1)
    new = private_fda(X, y, 2, calibration=PaperCalibration(formula="algorithm2"), **kw)
    with pytest.warns(FutureWarning, match="'paper_calibration' of dpsrs moved into 'calibration'") as caught:
        old = private_fda(X, y, 2, calibration="paper",
                          paper_calibration=PaperCalibration(formula="algorithm2"), **kw)
    assert {w.filename for w in caught if w.category is FutureWarning} == {__file__}
    _same(new, old)


def test_the_old_keywords_are_listed_for_the_estimators():
    assert dpsr.folded_parameters["paper_calibration"] == "calibration"
    assert dpsrs.folded_parameters["paper_formula"] == "calibration.formula"


def test_dp_fisher_discriminant_takes_a_paper_calibration():
    X, y = _rows(600)
    kw = dict(epsilon=1.0, delta=DELTA, row_norm=1.0, method="dpsr", classes=[0, 1, 2], n_iter=3,
              random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = DPFisherDiscriminant(2, calibration=PaperCalibration(formula="algorithm2"), **kw).fit(X, y)
    with pytest.warns(FutureWarning, match="'paper_calibration' of dpsr moved into 'calibration'") as caught:
        old = DPFisherDiscriminant(2, calibration="paper", **kw, method_params={
            "paper_calibration": PaperCalibration(formula="algorithm2")}).fit(X, y)
    assert {w.filename for w in caught if w.category is FutureWarning} == {__file__}  # through the estimator
    np.testing.assert_array_equal(new.scalings_, old.scalings_)
    assert new.privacy_ == old.privacy_ and new.privacy_.calibration == "paper"
    default = DPFisherDiscriminant(2, calibration="paper", **kw).fit(X, y)
    assert not np.array_equal(default.scalings_, new.scalings_)
    with pytest.raises(ValueError, match="The 'calibration' parameter of DPFisherDiscriminant takes a "
                                         r"PaperCalibration .* with method='dpsr' or 'dpsrs' only. Got "
                                         r"PaperCalibration\(.*\) with method='moments'"):
        DPFisherDiscriminant(2, calibration=PaperCalibration(), **{**kw, "method": "moments"}).fit(X, y)
    with pytest.raises(ValueError, match="The 'calibration' parameter of DPFisherDiscriminant must be"):
        DPFisherDiscriminant(2, calibration=1, **kw).fit(X, y)
