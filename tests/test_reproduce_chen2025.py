"""End-to-end checks of the reproduction of paper 003 (Chen et al. 2025, DPSR), quick settings."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpspectral.cli import main
from dpspectral_reproduce import chen2025

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"  # as conftest's

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _mean(rows: list[dict[str, str]], metric: str = "accuracy", **match: str) -> float:
    vals = [float(r[metric]) for r in rows if all(r[k] == v for k, v in match.items())]
    assert vals, match
    return float(np.mean(vals))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} not present")
    shared_data = SHARED_DATA
    out = tmp_path_factory.mktemp("chen2025") / "quick"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["reproduce", "chen2025", "--quick", "--data", str(shared_data), "--out", str(out),
                       "--no-progress", "--seed", "0"])
    assert status == 0
    return out, buf.getvalue()


def test_quick_run_writes_every_file(quick_run: tuple[Path, str]) -> None:
    out, printed = quick_run
    for name in ("report.md", "runs.csv", "summary.csv", "table2.csv", "table3.csv", "config.json"):
        assert (out / name).is_file(), name
    for name in ("accuracy_f1_mnist.png", "accuracy_f1_a9a.png", "accuracy_f1_rt-iot2022.png",
                 "xi_grid.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name
    assert "wrote" in printed and "DPSR" in printed and "NOT certified" in printed
    text = (out / "report.md").read_text()
    for needle in ("Table 2", "Table 3", "non-private init", "Fashion-MNIST, CIFAR-10, Dota2",
                   "best certified method", "ridge from the noise",
                   "NOT differentially private".lower(), "on TEST data", "iterations", "macro"):
        assert needle.lower() in text.lower(), needle


def test_quick_run_structure_and_values(quick_run: tuple[Path, str]) -> None:
    out, _ = quick_run
    runs = _rows(out / "runs.csv")
    assert set(runs[0]) == set(chen2025._RUN_COLUMNS)
    assert {r["dataset"] for r in runs} == {"mnist", "a9a", "rt-iot2022"}
    assert {r["classifier"] for r in runs} == set(chen2025.CLASSIFIERS)
    methods = {r["method"] for r in runs}
    expected = {chen2025.DPSR, chen2025.SRDP, chen2025.DPRF, chen2025.DPRF_NP, chen2025.SR, chen2025.LDA}
    assert expected <= methods
    assert chen2025.DPSR + chen2025.PAPER_SUFFIX in methods
    # the noise-ridge rows and the registry's best certified method, certified, at epsilon = 1
    best = [r for r in runs if r["part"] == "best"]
    assert {chen2025.DPSR_NOISE, chen2025.SRDP_NOISE} <= {r["method"] for r in best}
    if chen2025.best_certified_method() == "moments":
        assert any(r["method"].startswith(chen2025.BEST) for r in best)
    assert all(r["certified"] == "True" and r["epsilon"] == "1.0" for r in best)
    for r in runs:
        for m in (*chen2025.METRICS, "f1_weighted"):
            assert 0.0 <= float(r[m]) <= 1.0, (r["method"], m, r[m])
        if r["part"] == "reference":
            assert r["certified"] == "" and r["epsilon"] == "inf"
        elif r["init"] == "nonprivate_optimum":  # the paper's DPRF start: never private
            assert r["certified"] == "False" and float(r["certified_epsilon"]) == math.inf
        elif r["calibration"] == "tight":  # the sound calibration certifies exactly what was asked
            assert r["certified"] == "True"
            assert float(r["certified_epsilon"]) <= float(r["requested_epsilon"]) * (1 + 1e-6)
        # delta = n^-1.1 with n the rows in the fit
        assert math.isclose(float(r["delta"]), float(r["n_fit"]) ** -1.1)
    # repeats: 2 at epsilon = 1 (Tables 2-3), 1 elsewhere in quick mode
    at1 = [r for r in runs if r["method"] == chen2025.DPSR and r["epsilon"] == "1.0" and r["xi"] == "0.01"
           and r["dataset"] == "mnist" and r["classifier"] == "linear SVM"]
    low = [r for r in runs if r["method"] == chen2025.DPSR and r["epsilon"] == repr(2.0 ** -10)
           and r["dataset"] == "mnist" and r["classifier"] == "linear SVM"]
    assert len(at1) == 2 and len(low) == 1
    # sane values: the non-private SR is far above chance (10 classes) on the MNIST subsample, and the
    # DPRF started at the non-private optimum stays near it while the private methods lose most of it
    sr = _mean(runs, dataset="mnist", method=chen2025.SR, part="reference", classifier="linear SVM")
    lda = _mean(runs, dataset="mnist", method=chen2025.LDA, classifier="linear SVM")
    assert sr > 0.7 and lda > 0.7
    np_init = _mean(runs, dataset="mnist", method=chen2025.DPRF_NP, epsilon="1.0", classifier="linear SVM")
    dprf = _mean(runs, dataset="mnist", method=chen2025.DPRF, epsilon="1.0", classifier="linear SVM")
    dpsr = _mean(runs, dataset="mnist", method=chen2025.DPSR, epsilon="1.0", xi="0.01",
                 classifier="linear SVM")
    assert np_init > dprf + 0.1 and np_init > dpsr + 0.1
    assert 0.15 < dpsr < sr  # private, certified noise: worse than SR, better than chance
    # a9a is binary: LDA keeps 1 component; its accuracy is above the majority class (76%)
    assert _mean(runs, dataset="a9a", method=chen2025.LDA, classifier="linear SVM") > 0.8


def test_quick_tables(quick_run: tuple[Path, str]) -> None:
    out, _ = quick_run
    t2 = _rows(out / "table2.csv")
    dpsr_mnist = [r for r in t2 if r["dataset"] == "mnist" and r["method"] == chen2025.DPSR]
    assert len(dpsr_mnist) == 3
    svm = next(r for r in dpsr_mnist if r["classifier"] == "linear SVM")
    assert float(svm["paper_f1"]) == 84 and float(svm["paper_precision"]) == 85  # the paper's Table 2
    assert svm["certified"] == "True" and int(svm["n_runs"]) == 2
    np_rows = [r for r in t2 if r["method"] == chen2025.DPRF_NP]
    assert np_rows and all(r["certified"] == "False" for r in np_rows)
    t3 = _rows(out / "table3.csv")
    assert {r["comparison"] for r in t3} == {"paper's (DPRF from the non-private optimum)",
                                             "private (DPRF from a random start)"}
    assert len(t3) == 2 * 3 * 3
    for r in t3:
        assert int(r["n_pairs"]) == 2 and int(r["pooled_n_pairs"]) == 3  # 2 at eps = 1, 1 at 2^-10
        assert r["p_value"] == "" or 0 < float(r["p_value"]) <= 1


def test_rebuild_report_gives_the_same_tables(quick_run: tuple[Path, str], tmp_path: Path) -> None:
    import shutil

    out, _ = quick_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    chen2025.rebuild_report(copy)
    assert (copy / "table3.csv").read_text() == (out / "table3.csv").read_text()
    assert (copy / "table2.csv").read_text() == (out / "table2.csv").read_text()


def _write_csv(path: Path, *, n: int = 240, classes: int = 3, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, 4)) + 2.0 * np.eye(classes, 4)[y]
    colour = np.where(rng.random(n) < 0.5, "red", "blue")
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["", "f1", "f2", "colour", "f3", "f4", "kind"])
        for i in range(n):
            w.writerow([i, *X[i, :2].round(4), colour[i], *X[i, 2:].round(4), f"class_{y[i]}"])


def test_data_set_added_by_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "toy.csv"
    _write_csv(data)
    out = tmp_path / "toy_out"
    status = main(["reproduce", "chen2025", "--quick", "--data-file", f"{data}:csv", "--label-column",
                   "kind", "--out", str(out), "--no-progress", "--epsilons", "1", "0.5"])
    assert status == 0, capsys.readouterr().err
    runs = _rows(out / "runs.csv")
    assert {r["dataset"] for r in runs} == {"toy"}
    cfg = (out / "config.json").read_text()
    assert '"d": 6' in cfg and '"k": 6' in cfg  # 4 numbers + colour one-hot (2), no index; k = min(10, d)
    assert "dropped 1 unnamed column" in cfg and "one-hot" in cfg
    # well-separated classes: the non-private SR classifies far above chance (1/3)
    assert _mean(runs, method=chen2025.SR, part="reference", classifier="linear SVM") > 0.8
    assert {r["epsilon"] for r in runs if r["part"] == "sweep"} == {"1.0", "0.5"}
    assert (out / "accuracy_f1_toy.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--label-column", "nope"], "nope"),
        (["--label-column", "kind", "--k", "5"], "--k"),
        ([], "--label-column"),
    ],
)
def test_bad_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                           message: str) -> None:
    data = tmp_path / "toy.csv"
    _write_csv(data, n=60)
    status = main(["reproduce", "chen2025", "--quick", "--data-file", str(data), "--out",
                   str(tmp_path / "o"), "--no-progress", *extra])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o" / "runs.csv").exists()


def test_one_class_data_set_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "one.csv"
    _write_csv(data, n=60, classes=1)
    status = main(["reproduce", "chen2025", "--quick", "--data-file", str(data), "--label-column", "kind",
                   "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and "single class" in err and "class_0" in err


def test_label_column_rejected_for_libsvm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "toy.libsvm"
    data.write_text("".join(f"{i % 2} 1:{i}.0 2:1.0\n" for i in range(20)))
    status = main(["reproduce", "chen2025", "--quick", "--data-file", str(data), "--label-column", "0",
                   "--out", str(tmp_path / "o"), "--no-progress"])
    assert status == 2 and "--label-column applies to CSV" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# Table 3 on constructed inputs


def _runs(values_a: list[float], values_b: list[float], *, epsilon: float = 1.0,
          dataset: str = "d") -> list[dict[str, Any]]:
    rows = []
    for method, vals in (("A", values_a), ("B", values_b)):
        for r, v in enumerate(vals):
            rows.append({"dataset": dataset, "classifier": "linear SVM", "method": method, "epsilon": epsilon,
                         "repeat": r, "accuracy": v, "part": "sweep"})
    return rows


def test_wilcoxon_all_wins_exact_p_value() -> None:
    a = [0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97]
    b = [0.80, 0.815, 0.82, 0.835, 0.83, 0.84, 0.86, 0.85]
    (row,) = chen2025.wilcoxon_table(_runs(a, b), "A", "B")
    assert row["n_pairs"] == 8 and row["wins_a"] == 8 and row["wins_b"] == 0
    assert row["p_value"] == pytest.approx(2 / 2 ** 8)  # exact two-sided: only the all-positive signs
    assert row["statistic"] == 0.0 and row["better"] == "A"
    assert row["mean_diff"] == pytest.approx(np.mean(np.array(a) - np.array(b)))
    (swapped,) = chen2025.wilcoxon_table(_runs(a, b), "B", "A")
    assert swapped["p_value"] == pytest.approx(row["p_value"]) and swapped["better"] == "A"


def test_wilcoxon_pairs_by_repeat_and_handles_edge_cases() -> None:
    # mixed signs: p well above 0.05
    a = [0.5, 0.6, 0.4, 0.55, 0.45, 0.52]
    b = [0.52, 0.58, 0.41, 0.53, 0.47, 0.5]
    (row,) = chen2025.wilcoxon_table(_runs(a, b), "A", "B")
    assert row["p_value"] > 0.3
    # identical results: p = 1, a tie
    (tie,) = chen2025.wilcoxon_table(_runs([0.7, 0.8, 0.9], [0.7, 0.8, 0.9]), "A", "B")
    assert tie["p_value"] == 1.0 and tie["better"] == "tie"
    # one pair: no test
    (one,) = chen2025.wilcoxon_table(_runs([0.7], [0.6]), "A", "B")
    assert one["n_pairs"] == 1 and math.isnan(one["p_value"])
    # unpaired repeats are dropped; other epsilons are ignored unless pooled (epsilon=None)
    rows = _runs([0.9, 0.8, 0.7], [0.6, 0.5]) + _runs([0.3, 0.3], [0.2, 0.1], epsilon=0.5)
    (at1,) = chen2025.wilcoxon_table(rows, "A", "B")
    assert at1["n_pairs"] == 2
    (pooled,) = chen2025.wilcoxon_table(rows, "A", "B", epsilon=None)
    assert pooled["n_pairs"] == 4 and pooled["wins_a"] == 4


def test_split_noise_multiplier_never_overshoots_by_rounding() -> None:
    """Regression (found by the chen2025 full run): two halves of the analytic multiplier at
    epsilon = 2^-7, delta = 32561^-1.1 certified epsilon 5e-14 (relative) above the request, so SR+DP
    and DPRF with the tight calibration reported ``certified=False``."""
    import dp_accounting

    from dpspectral.privacy._accounting import epsilon_of
    from dpspectral.privacy._gaussian import analytic_noise_multiplier, split_noise_multiplier

    delta = 32561 ** -1.1
    for i in range(11):
        eps = 2.0 ** -i
        p = analytic_noise_multiplier(eps, delta)
        for w in (0.5, 0.45, 0.1):
            parts = split_noise_multiplier(p, [w, 1 - w])
            got = epsilon_of([dp_accounting.GaussianDpEvent(s) for s in parts], delta)
            assert got <= eps, (i, w, got / eps - 1)
            assert got == pytest.approx(eps, rel=1e-6)  # still spends (essentially) the whole budget
