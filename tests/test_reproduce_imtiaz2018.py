"""End-to-end checks of the reproduction of paper 004 (Imtiaz and Sarwate 2018), quick settings."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dpspectral_reproduce import imtiaz2018

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_quick_reproduction(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "imtiaz"
    result = imtiaz2018.run_imtiaz2018(out, data_home=shared_data, quick=True, datasets=("synthetic", "a9a"),
                                       show_progress=False, seed=0)
    assert result.datasets == ("synthetic", "a9a") and result.skipped["mnist"] == "not requested"
    for name in ("runs.csv", "summary.csv", "report.md"):
        assert (out / name).is_file(), name
    for name in ("figure1.png", "figure2.png", "figure_paper_noise.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name

    runs = _rows(out / "runs.csv")
    assert set(runs[0]) == set(imtiaz2018._RUN_COLUMNS)
    assert {r["sweep"] for r in runs} == set(imtiaz2018.SWEEPS)
    assert {r["method"] for r in runs} == set(imtiaz2018.METHODS)
    assert {r["calibration"] for r in runs if r["sweep"] == "epsilon"} == {"tight", "paper"}
    for r in runs:
        q = float(r["q_ratio"])
        assert 0.0 <= q <= 1.0 + 1e-9  # q_o is the best rank-K energy
    # every setting has its repeats (2 in quick mode)
    counts: dict[tuple[str, ...], int] = {}
    for r in runs:
        key = (r["dataset"], r["sweep"], r["calibration"], r["method"], r["x"])
        counts[key] = counts.get(key, 0) + 1
    assert set(counts.values()) == {2}

    S = result.summary

    def mean(name: str, method: str, x: float, sweep: str = "epsilon", cal: str = "tight") -> float:
        row = imtiaz2018._find(S, dataset=name, sweep=sweep, calibration=cal, method=method, x=x)
        assert row is not None
        return float(row["q_ratio_mean"])

    for name in ("synthetic", "a9a"):
        # the paper's qualitative findings, on the means of 2 runs (differences far above the spread)
        assert mean(name, imtiaz2018.POOLED, 10.0) > mean(name, imtiaz2018.POOLED, 0.01) + 0.5
        assert mean(name, imtiaz2018.DPDIS, 10.0) > mean(name, imtiaz2018.LOCAL, 10.0) + 0.1
        assert mean(name, imtiaz2018.POOLED, 0.5) > mean(name, imtiaz2018.FULL, 0.5) > mean(
            name, imtiaz2018.DPDIS, 0.5)
        assert mean(name, imtiaz2018.DPDIS, 2.0, sweep="sites") > mean(name, imtiaz2018.DPDIS, 10.0, "sites")
        pooled = imtiaz2018.POOLED
        assert mean(name, pooled, 0.05, sweep="delta") > mean(name, pooled, 0.001, sweep="delta")
    # the paper's noise is not certified at epsilon = 10 (delta = 0.01); the sound one always is
    paper10 = imtiaz2018._find(S, dataset="synthetic", sweep="epsilon", calibration="paper",
                               method=imtiaz2018.DPDIS, x=10.0)
    tight10 = imtiaz2018._find(S, dataset="synthetic", sweep="epsilon", calibration="tight",
                               method=imtiaz2018.DPDIS, x=10.0)
    assert paper10 is not None and tight10 is not None
    assert paper10["certified"] is False and paper10["certified_epsilon"] > 15
    assert tight10["certified"] is True and tight10["certified_epsilon"] <= 10.0
    # the sweeps' fast path is dpdispca, bit for bit
    assert result.checks["inprocess_identical"] is True and result.checks["dask"] is None

    text = (out / "report.md").read_text()
    assert "a9a stands in for it" in text and "non-private" in text
    assert "Figure 1" in text and "✗" in text


def test_cli_run_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspectral.cli import main

    status = main(["reproduce", "imtiaz2018", "--quick", "--repeats", "1", "--seed", "3", "--no-progress",
                   "--datasets", "synthetic", "--epsilons", "0.5", "5", "--out", str(tmp_path / "cli")])
    assert status == 0
    printed = capsys.readouterr().out
    assert "Imtiaz & Sarwate" in printed and "eps=5" in printed and "finished in" in printed
    assert "engine check (synthetic): in-process identical" in printed
    runs = _rows(tmp_path / "cli" / "runs.csv")
    assert {r["dataset"] for r in runs} == {"synthetic"}
    assert {float(r["x"]) for r in runs if r["sweep"] == "epsilon"} == {0.5, 5.0}


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Unknown sweep"):
        imtiaz2018.run_imtiaz2018(tmp_path, quick=True, sweeps=("gamma",), show_progress=False)
    with pytest.raises(ValueError, match="Unknown data set"):
        imtiaz2018.run_imtiaz2018(tmp_path, quick=True, datasets=("covtype",), show_progress=False)
    with pytest.raises(ValueError, match="'repeats' parameter"):
        imtiaz2018.run_imtiaz2018(tmp_path, quick=True, repeats=0, show_progress=False)


def test_synthetic_rows_follow_the_authors_covariance() -> None:
    X = imtiaz2018.synthetic_rows(20000, random_state=1)
    var = X.var(axis=0)
    assert X.shape == (20000, 200)
    assert np.allclose(var[:50], np.linspace(10, 1, 50), rtol=0.05)
    assert var[50:].max() < 0.55 and math.isclose(float(X.mean()), 0.0, abs_tol=0.01)


def test_cli_rejects_options_of_other_experiments(tmp_path: Path) -> None:
    from dpspectral.cli import EXIT_USAGE, main

    assert main(["reproduce", "imtiaz2018", "--tables", "3", "--out", str(tmp_path)]) == EXIT_USAGE
    assert main(["reproduce", "shang2021", "--datasets", "synthetic", "--out", str(tmp_path)]) == EXIT_USAGE


def test_quick_mode_uses_the_default_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `reproduce imtiaz2018 --quick` must not skip MNIST / a9a ("no data folder") when the default
    # folder exists: quick mode resolves the folder like the full run: $DPSPECTRAL_DATA,
    # else ~/dpspectral_data (never the working directory itself).
    class Stop(Exception):
        pass

    seen: list[object] = []

    def fake_load(name: str, data_dir: object, *, seed: int = 0):
        seen.append(data_dir)
        raise Stop  # stop at the first load: only the folder it was given matters here

    monkeypatch.setattr(imtiaz2018, "load_imtiaz_dataset", fake_load)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DPSPECTRAL_DATA", str(home))
    with pytest.raises(Stop):
        imtiaz2018.run_imtiaz2018(tmp_path / "o", quick=True, show_progress=False)
    assert seen == [home]

    monkeypatch.delenv("DPSPECTRAL_DATA")
    user = tmp_path / "user"
    (user / "dpspectral_data").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    (tmp_path / "checkout" / "data").mkdir(parents=True)  # a data/ in the working directory is ignored
    monkeypatch.chdir(tmp_path / "checkout")
    with pytest.raises(Stop):
        imtiaz2018.run_imtiaz2018(tmp_path / "o2", quick=True, show_progress=False)
    assert seen[-1] == user / "dpspectral_data"
