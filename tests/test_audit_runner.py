"""The privacy audit of the registry (``dpspectral audit``): its test's level and power, real methods, report.

The level and power tests run the audit's own procedure (pilot-chosen statistic and threshold, then a
Clopper-Pearson threshold test) on bare mechanisms whose privacy is known exactly:

* a Gaussian mechanism of sensitivity 1 and noise sigma = 1 (from the library's calibration) is
  exactly (0.5, DELTA_TIGHT)-DP with DELTA_TIGHT = Phi(0) - e^0.5 Phi(-1) and no better: the audit's
  threshold test can approach the claim, so this is the hardest case for its false-positive rate;
* randomized response with P[1] = e^eps / (1 + e^eps) is exactly eps-DP (delta = 0), tight at the
  threshold 1/2.

The false-positive rate is checked over seeded repetitions with a one-sided binomial test at rate
alpha (rejected only when the count of bounds above the claim is significant at 1e-3). Everything is
seeded, so every outcome here is deterministic.
"""

from __future__ import annotations

import dataclasses
import json
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

import dpspectral._registry as registry
from dpspectral import analyze_gauss
from dpspectral._audit_runner import (
    QUICK,
    AuditPlan,
    audit_methods,
    max_detectable_epsilon,
    threshold_audit,
)
from dpspectral.cli import main
from dpspectral.privacy import analytic_noise_multiplier, gaussian_epsilon
from dpspectral.privacy._audit import threshold_epsilon_bounds, threshold_epsilon_lower_bound

EPS_TIGHT = 0.5
DELTA_TIGHT = float(stats.norm.cdf(0.0) - math.exp(EPS_TIGHT) * stats.norm.cdf(-1.0))  # ~0.2384
_NORMAL = NormalDist()


def _gaussian(scale: float):
    """One Gaussian release: mean 1 on data set 0, 0 on data set 1, noise ``scale``.

    The noise is the normal quantile of the uniformly distributed 32-bit seed (exact, and much faster
    than a generator per run).
    """

    def sample(side: int, seed: int) -> np.ndarray:
        return np.array([(1.0 if side == 0 else 0.0) + scale * _NORMAL.inv_cdf((seed + 0.5) / 2**32)])

    return sample


def _randomized_response(epsilon: float):
    p = math.exp(epsilon) / (1 + math.exp(epsilon))

    def sample(side: int, seed: int) -> np.ndarray:
        u = (seed + 0.5) / 2**32
        return np.array([float(u < (p if side == 0 else 1 - p))])

    return sample


def _gaussian_picklable(side: int, seed: int) -> np.ndarray:  # module level: joblib sends it to workers
    return np.array([(2.0 if side == 0 else 0.0) + _NORMAL.inv_cdf((seed + 0.5) / 2**32)])


# ----------------------------------------------------------------------------------------------
# the test itself: level and power
# ----------------------------------------------------------------------------------------------


def test_the_bare_gaussian_is_calibrated_at_the_tight_point():
    # the library's calibration for (0.5, DELTA_TIGHT) is sigma = 1 (and never less)
    sigma = analytic_noise_multiplier(EPS_TIGHT, DELTA_TIGHT)
    assert 1.0 <= sigma < 1.0 + 1e-6


@pytest.mark.parametrize(
    ("name", "sample", "claim", "delta"),
    [
        ("gaussian", _gaussian(analytic_noise_multiplier(EPS_TIGHT, DELTA_TIGHT)), EPS_TIGHT, DELTA_TIGHT),
        ("randomized_response", _randomized_response(1.0), 1.0, 0.0),
    ],
)
def test_false_positive_rate_on_calibrated_mechanisms(name, sample, claim, delta):
    # 100 seeded audits at alpha = 0.1 of a mechanism that meets its claim exactly: the count of
    # bounds above the claim must not be significantly above 10% (one-sided binomial test at 1e-3).
    alpha, repeats = 0.1, 100
    bounds = np.array([
        threshold_audit(sample, ["t"], delta=delta, alpha=alpha, n_pilot=100, n_runs=500, seed=r)
        .epsilon_lower_bound
        for r in range(repeats)
    ])
    exceed = int(np.sum(bounds > claim))
    assert stats.binomtest(exceed, repeats, alpha, alternative="greater").pvalue > 1e-3, (name, exceed)
    # and the audit is sharp enough to mean something: its bounds come near the claim. Seeded, so
    # deterministic (randomized response: 90th percentile 0.90 of the claim, docs/privacy-audit.md);
    # 0.4 is a floor that a working audit clears, not a statistical acceptance region: an audit that
    # lost its power (e.g. a broken threshold search) falls to 0.
    assert np.quantile(bounds, 0.9) > 0.4 * claim, (name, np.quantile(bounds, 0.9))


def test_power_on_half_the_noise_at_the_tight_point():
    # the same claim with sigma / 2: flagged in (almost) every seeded repetition. Each audit's power
    # here is above 0.99 (median bound 1.92 against the claim 0.5, docs/privacy-audit.md), so fewer than
    # 19 flags in 20 has probability below 1.7 % under that power (binomial); the seeds are fixed, so the
    # test is deterministic and this rate is what a change of seeds would risk.
    half = _gaussian(analytic_noise_multiplier(EPS_TIGHT, DELTA_TIGHT) / 2)
    flagged = [
        threshold_audit(half, ["t"], delta=DELTA_TIGHT, alpha=0.1, n_pilot=200, n_runs=1000, seed=r)
        .epsilon_lower_bound > EPS_TIGHT
        for r in range(20)
    ]
    assert sum(flagged) >= 19, flagged


def test_power_on_half_the_noise_at_epsilon_1_delta_1e_5():
    # At a small delta the black-box test needs many runs: half the noise that (1, 1e-5) requires is
    # (2.15, 1e-5)-DP, and 60,000 runs per data set certify epsilon > 1 (alpha = 0.01).
    sigma = analytic_noise_multiplier(1.0, 1e-5)
    assert gaussian_epsilon(sigma / 2, 1e-5) > 2.0
    result = threshold_audit(_gaussian(sigma / 2), ["t"], delta=1e-5, alpha=0.01, n_pilot=5000,
                             n_runs=60000, seed=3)
    assert result.epsilon_lower_bound > 1.0, result
    calibrated = threshold_audit(_gaussian(sigma), ["t"], delta=1e-5, alpha=0.01, n_pilot=5000,
                                 n_runs=60000, seed=3)
    assert calibrated.epsilon_lower_bound <= 1.0, calibrated


def test_perfectly_separated_outputs_reach_the_largest_bound():
    def sample(side: int, seed: int) -> np.ndarray:
        return np.array([float(side == 0), 0.5])  # the second statistic carries no information

    res = threshold_audit(sample, ["separating", "constant"], delta=1e-5, alpha=0.01, n_pilot=20,
                          n_runs=300, seed=0)
    assert res.statistic == "separating" and res.frequencies in ((1.0, 0.0), (0.0, 1.0))
    assert res.epsilon_lower_bound == pytest.approx(max_detectable_epsilon(300, 1e-5, 0.01))
    assert res.empirical_epsilon == math.inf


def test_vectorised_bounds_match_the_threshold_test():
    rng = np.random.default_rng(0)
    k0, k1 = np.r_[0, 80, rng.integers(0, 81, 50)], np.r_[80, 0, rng.integers(0, 61, 50)]
    got = threshold_epsilon_bounds(k0, k1, 80, 60, 1e-3, 0.05)
    want = [threshold_epsilon_lower_bound((np.arange(80) < a) * 1.0, (np.arange(60) < b) * 1.0, 0.5,
                                          1e-3, 0.05) for a, b in zip(k0, k1, strict=True)]
    assert np.array_equal(got, want)


def test_seeded_and_independent_of_the_number_of_processes():
    kw = dict(delta=1e-5, alpha=0.01, n_pilot=50, n_runs=200, seed=5)
    one = threshold_audit(_gaussian_picklable, ["t"], **kw)
    assert threshold_audit(_gaussian_picklable, ["t"], **kw) == one
    assert threshold_audit(_gaussian_picklable, ["t"], n_jobs=2, **kw) == one


# ----------------------------------------------------------------------------------------------
# the registry audit
# ----------------------------------------------------------------------------------------------


def _register(monkeypatch, *extra: registry.Method) -> None:
    """Add methods to the registry for one test (the audit reads it at run time)."""
    monkeypatch.setattr(registry, "_TABLE", registry._TABLE + extra)
    monkeypatch.setattr(registry, "_BY_NAME", {**registry._BY_NAME, **{m.name: m for m in extra}})


def _tenth_of_the_noise(X, k, *, epsilon, delta, **kw):
    """Analyze Gauss with a tenth of the noise its claim needs, reporting the claim: a broken method."""
    run_epsilon = gaussian_epsilon(analytic_noise_multiplier(epsilon, delta) / 10, delta)
    res = analyze_gauss(X, k, epsilon=run_epsilon, delta=delta, **kw)
    p = dataclasses.replace(res.privacy, epsilon=epsilon, requested_epsilon=epsilon)
    return dataclasses.replace(res, privacy=p)


def test_quick_audit_of_real_methods_passes():
    report = audit_methods(["analyze_gauss", "local_gaussian", "private_frobenius_lrf", "hardt_roth"],
                           quick=True)
    assert [(r.method, r.relation) for r in report.rows] == [
        ("analyze_gauss", "replace_one"), ("analyze_gauss", "add_remove"), ("local_gaussian", "local"),
        ("private_frobenius_lrf", "priv2"), ("private_frobenius_lrf", "priv1"), ("hardt_roth", "replace_one"),
    ]
    assert not report.violations
    for r in report.rows:
        assert r.verdict == "OK" and r.certified
        assert r.n_runs == QUICK.n_runs and r.n_pilot == QUICK.n_pilot
        assert r.claimed_epsilon is not None and r.claimed_epsilon <= 1.0
        assert r.alpha == pytest.approx(0.01 / 6)  # Bonferroni over the six rows
        assert 0.0 <= r.epsilon_lower_bound <= r.claimed_epsilon < r.max_bound
    assert report.row_alpha == pytest.approx(0.01 / 6) and report.quick


def test_wishart_is_reported_uncertified_with_what_the_audit_finds():
    # Wishart noise is positive semi-definite, so the released matrix minus X1's scatter is never
    # indefinite on X1 but often is on X0: the audit finds epsilon well above the paper's claim of 1.
    report = audit_methods(["wishart"], quick=True)
    assert not report.violations  # uncertified methods never fail the audit ...
    assert {r.verdict for r in report.rows} == {"uncertified"}
    worst = max(report.rows, key=lambda r: r.epsilon_lower_bound or 0.0)
    assert worst.claimed_epsilon == 1.0 and worst.claimed_delta == 0.0  # ... but show what it found
    assert worst.epsilon_lower_bound > 1.0 and "NOT (1, 0)-DP" in worst.note
    assert "min_eig" in (worst.statistic or "")
    assert "uncertified: epsilon >= " in report.markdown()


def test_a_broken_certified_method_is_a_violation(monkeypatch, tmp_path, capsys):
    broken = dataclasses.replace(registry.get_method("analyze_gauss"), name="analyze_gauss_tenth_noise",
                                 function=_tenth_of_the_noise)
    _register(monkeypatch, broken)
    code = main(["audit", broken.name, "--quick", "--out", str(tmp_path)])
    assert code == 1
    captured = capsys.readouterr()
    assert "VIOLATION" in captured.err and broken.name in captured.err
    data = json.loads((tmp_path / "audit.json").read_text())
    assert data["violations"] == [f"{broken.name}/replace_one", f"{broken.name}/add_remove"]
    assert all(r["epsilon_lower_bound"] > 1.0 for r in data["rows"])
    assert "**VIOLATION**" in (tmp_path / "audit.md").read_text()


def test_methods_it_cannot_audit_are_listed_with_the_reason(monkeypatch):
    base = registry.get_method("analyze_gauss")

    def failing(X, k, **kw):
        raise RuntimeError("cannot run on two rows")

    other = dataclasses.replace(base, name="some_task", task="some_task")
    crash = dataclasses.replace(base, name="crashes", function=failing, relations=base.relations[:1])
    _register(monkeypatch, other, crash)
    report = audit_methods(["some_task", "crashes", "optimal_space_lrf"], quick=True)
    notes = {r.method: r.note for r in report.rows}
    assert all(r.verdict == "not audited" for r in report.rows)
    assert "task 'some_task'" in notes["some_task"]
    assert "error on the audit pair: RuntimeError: cannot run on two rows" in notes["crashes"]
    assert "non-private reference" in notes["optimal_space_lrf"]
    assert report.row_alpha is None and not report.violations
    assert report.markdown().count("| not audited: ") == 3


def test_every_registered_method_is_audited_or_explained():
    # no runs: build every case (dry runs only) by auditing with the smallest plan
    report = audit_methods(plan=AuditPlan(n_pilot=5, n_runs=5))
    listed = {r.method for r in report.rows}
    assert listed == {m.name for m in registry.methods()}
    for m in registry.methods():
        rows = [r for r in report.rows if r.method == m.name]
        if all(r.verdict == "not audited" for r in rows):
            assert all(r.note for r in rows), m.name
        else:
            assert {r.relation for r in rows} == {rel.value for rel in m.relations}, m.name
    assert {r.verdict for r in report.rows if r.method == "wishart"} == {"uncertified"}


@pytest.mark.parametrize("name", ["analyze_gauss", "private_oja", "private_frobenius_lrf", "covariance_lrf",
                                  "hardt_roth"])
def test_pairs_and_statistics_see_the_data_without_noise(name):
    # at epsilon = 1e4 (hardly any noise) every audited row reaches most of the largest possible bound:
    # the pair differs where the method looks and the statistics read the difference
    report = audit_methods([name], plan=AuditPlan(n_pilot=50, n_runs=150), epsilon=1e4)
    for r in report.rows:
        assert r.epsilon_lower_bound > 0.75 * r.max_bound, r


def test_report_structure_and_json():
    report = audit_methods(["mod_sulq", "optimal_space_lrf"], plan=AuditPlan(n_pilot=20, n_runs=60), seed=1)
    lines = report.markdown().strip().splitlines()
    assert lines[0] == ("| method | relation | claimed (ε, δ) | certified | runs per data set | "
                        "statistic (event) | ε lower bound | verdict |")
    assert len(lines) == 2 + len(report.rows) == 4
    assert lines[2].startswith("| `mod_sulq` | replace_one | (1, 1e-05) | yes | 60 (+20 pilot) | `")
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["n_runs"] == 60 and data["seed"] == 1 and data["violations"] == []
    row = data["rows"][0]
    for key in ("method", "relation", "claimed_epsilon", "claimed_delta", "certified", "statistic",
                "epsilon_lower_bound", "max_bound", "verdict", "pair", "alpha", "frequencies"):
        assert key in row
    assert "Audit: 1 (method, relation) rows audited" in report.summary()
    # a row's runs depend on its name and the seed only, not on the other rows audited
    alone = audit_methods(["mod_sulq"], plan=AuditPlan(n_pilot=20, n_runs=60), seed=1).rows[0]
    assert alone.frequencies == report.rows[0].frequencies and alone.statistic == report.rows[0].statistic


def test_cli_audit_writes_the_report(tmp_path, capsys):
    assert main(["audit", "mod_sulq", "--runs", "60", "--pilot", "20", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mod_sulq/replace_one" in out and "No certified method exceeds its claim." in out
    assert (tmp_path / "audit.md").read_text().count("| `mod_sulq` |") == 1
    assert json.loads((tmp_path / "audit.json").read_text())["rows"][0]["verdict"] == "OK"
    assert main(["audit", "mod_sulq", "--runs", "60", "--pilot", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_pilot"] == 20


def test_cli_audit_rejects_unknown_methods_and_bad_alpha(capsys):
    assert main(["audit", "no_such_method"]) == 2
    captured = capsys.readouterr()
    assert "no_such_method" in captured.err and captured.out == ""
    assert main(["audit", "--alpha", "1.5"]) == 2


def test_quick_audit_of_the_whole_registry():
    # What CI runs (`dpspectral audit --quick`): every registered method, every relation it supports.
    # About a minute on two idle cores, most of it DP-PCA (its accountant takes ~0.1 s a run).
    report = audit_methods(quick=True)
    assert not report.violations, report.markdown()
    for r in report.rows:
        if r.audited and r.certified:
            assert r.verdict == "OK" and r.epsilon_lower_bound <= r.claimed_epsilon, r
        elif not r.audited:
            assert r.note, r
    wishart = [r for r in report.rows if r.method == "wishart"]
    assert {r.verdict for r in wishart} == {"uncertified"}
    assert max(r.epsilon_lower_bound or 0.0 for r in wishart) > 1.0  # found not DP even in the quick run


def test_audit_settings_name_registered_methods_and_their_options():
    # The audit's own tuning only: every entry is a registered method, and every setting is one of the
    # method's options (read from the registry) or a setting of the audit's pair.
    from dpspectral._audit_runner import _PAIR_SETTINGS, AUDIT_SETTINGS

    for name, settings in AUDIT_SETTINGS.items():
        method = registry.get_method(name)
        assert method.private and method.task in ("pca", "lowrank", "gep")
        for key in settings:
            assert key in method.options or key in _PAIR_SETTINGS, (name, key)


def test_audit_statistics_alias_is_the_moved_module():
    import dpspectral.privacy._audit as alias
    import dpspectral.privacy._audit as moved

    assert alias.threshold_epsilon_lower_bound is moved.threshold_epsilon_lower_bound
    assert set(alias.__all__) == set(moved.__all__)
