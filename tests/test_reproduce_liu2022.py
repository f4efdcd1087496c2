"""End-to-end checks of ``dpspectral reproduce liu2022`` (paper 001) and of its Figure 1 data."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dpspectral import cli
from dpspectral_reproduce import liu2022

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUN_COLUMNS = {"part", "dataset", "d", "k", "n", "sigma", "epsilon", "delta", "repeat", "method", "algorithm",
               "status", "sin_theta", "captured_variance_ratio", "max_sin_theta", "certified",
               "certified_epsilon", "batch_size", "n_steps", "skipped_steps", "seconds"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_reproduce_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    # no --data, no DPSPECTRAL_DATA and no ~/dpspectral_data: the real data are skipped
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPSPECTRAL_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "tmp"
    status = cli.main(["reproduce", "liu2022", "--quick", "--out", str(out), "--no-progress"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "finished in" in printed and "Figure 1" in printed

    for name in ("runs.csv", "summary.csv", "figure1.csv", "algorithm4.csv", "report.md"):
        assert (out / name).is_file(), name
    for name in ("figure1.png", "gaussian_sin_vs_n.png", "example41_sin_vs_sigma.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name

    runs = _rows(out / "runs.csv")
    assert RUN_COLUMNS <= set(runs[0])
    assert {r["part"] for r in runs} == {"gaussian", "example41"}
    expected = {*liu2022.NON_PRIVATE, *liu2022.GAUSSIAN_METHODS}
    for part in ("gaussian", "example41"):
        assert {r["method"] for r in runs if r["part"] == part} == expected
    eps_grid = {float(e) for e in liu2022.EPSILONS}
    for r in runs:
        if r["method"] in liu2022.NON_PRIVATE:
            assert float(r["epsilon"]) == math.inf and r["status"] == "ok"
        elif r["part"] == "gaussian":
            assert float(r["epsilon"]) in eps_grid
        if r["status"] == "ok":
            sin = float(r["sin_theta"])
            assert math.isfinite(sin) and 0.0 <= sin <= 1.0
            if r["method"] not in liu2022.NON_PRIVATE:
                # every private run that ran is certified at (at most) the requested epsilon
                assert r["certified"] == "True"
                assert float(r["certified_epsilon"]) <= float(r["epsilon"]) * (1 + 1e-9)
        else:
            assert r["status"].startswith("not run") and r["sin_theta"] == ""
    # DP-PCA's histogram needs a large minibatch: at n = 1e4 it cannot run, at n = 1e5 it does
    dp = {(int(r["n"]), float(r["epsilon"])): r["status"] for r in runs
          if r["part"] == "gaussian" and r["method"] == liu2022.DP_PCA}
    assert dp[(10_000, 0.5)] == liu2022.NOT_RUN_N
    assert dp[(100_000, 2.0)] == "ok"
    # the library-default rows and minibatch Oja run next to the paper's versions;
    # minibatch Oja beats a random direction (sin ~ 0.95 in d = 10) by far at n = 1e5 (seeded run)
    mb = [float(r["sin_theta"]) for r in runs if r["part"] == "gaussian" and r["n"] == "100000"
          and r["method"] == liu2022.MINIBATCH_OJA and float(r["epsilon"]) == 2.0]
    assert mb and mb[0] < 0.3
    assert {liu2022.PRIVATE_OJA_DEFAULT, liu2022.DP_PCA_DEFAULT} <= {r["method"] for r in runs}
    # the exact sample eigenvector is close to the population one at n = 1e5, d = 10
    sample = [float(r["sin_theta"]) for r in runs if r["part"] == "gaussian" and r["n"] == "100000"
              and r["method"] == liu2022.SAMPLE_PCA]
    assert sample and max(sample) < 0.1

    summary = _rows(out / "summary.csv")
    assert {"sin_theta_mean", "sin_theta_sd", "method", "part", "status", "certified"} <= set(summary[0])
    fig = _rows(out / "figure1.csv")
    ratio = {r["panel"]: float(r["range_over_mean"]) for r in fig}
    assert ratio["gaussian"] > 1.0 > ratio["example41"]

    text = (out / "report.md").read_text()
    assert "no experiments" in text and "Example 4.1" in text and "i.i.d." in text
    assert "not run (n too small)" in text and "skipped: no --data given" in text
    assert "theory rate" not in text or "shape only" in text


def test_figure1_range_versus_mean() -> None:
    gauss = liu2022.figure1_gradients("gaussian", random_state=1)
    assert gauss.gradients.shape == (liu2022.FIGURE1_BATCH, 2)
    np.testing.assert_allclose(gauss.mean, gauss.gradients.mean(axis=0))
    assert gauss.range > gauss.mean_norm  # Remark 3.4: the mean is smaller than the range
    ex = liu2022.figure1_gradients("example41", sigma=0.02, random_state=1)
    assert ex.range < ex.mean_norm  # Example 4.1: the range is much smaller than the mean
    assert ex.range < 0.5 * ex.mean_norm
    # the range is the largest pairwise distance
    G = ex.gradients[:50]
    brute = max(float(np.linalg.norm(a - b)) for a in G for b in G)
    assert liu2022.gradient_range(G) == pytest.approx(brute, rel=1e-9)
    with pytest.raises(ValueError, match="Figure 1 panel"):
        liu2022.figure1_gradients("uniform")


def test_synthetic_rows_have_norm_at_most_one_and_the_stated_gap() -> None:
    X, v, gap = liu2022.spiked_gaussian_rows(20_000, 10, random_state=3)
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    vals, vecs = np.linalg.eigh(X.T @ X / X.shape[0])
    assert vals[-1] - vals[-2] == pytest.approx(gap, rel=0.15)
    assert abs(float(vecs[:, -1] @ v)) > 0.99
    X, v, gap = liu2022.example41_rows(20_000, 10, 0.05, random_state=3)
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    vals, vecs = np.linalg.eigh(X.T @ X / X.shape[0])
    assert vals[-1] - vals[-2] == pytest.approx(gap, rel=0.05)
    assert abs(float(vecs[:, -1] @ v)) > 0.999


def test_missing_data_dir_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["reproduce", "liu2022", "--quick", "--data", str(tmp_path / "nope"),
                       "--out", str(tmp_path / "o"), "--no-progress"])
    assert status == 2
    assert "a9a" in capsys.readouterr().err


def test_quick_mode_reads_the_default_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `reproduce liu2022 --quick` promises real data, so it must not skip them when a data folder
    # exists. Quick mode resolves the folder as the full run does, in scikit-learn's convention:
    # --data, else $DPSPECTRAL_DATA, else ~/dpspectral_data; never the working directory.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DPSPECTRAL_DATA", str(home))
    assert liu2022._resolve_data(None, True, liu2022.DATASETS) == (home, "")
    (tmp_path / "x").mkdir()
    assert liu2022._resolve_data(tmp_path / "x", True, liu2022.DATASETS) == (tmp_path / "x", "")

    monkeypatch.delenv("DPSPECTRAL_DATA")
    user = tmp_path / "user"
    (user / "dpspectral_data").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    (tmp_path / "checkout" / "a9a").mkdir(parents=True)  # data in the working directory are not read
    monkeypatch.chdir(tmp_path / "checkout")
    found, note = liu2022._resolve_data(None, True, liu2022.DATASETS)
    assert found == user / "dpspectral_data" and note == ""

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/dpspectral_data: skipped, with a note saying how
    found, note = liu2022._resolve_data(None, True, liu2022.DATASETS)
    assert found is None and "DPSPECTRAL_DATA" in note and "~/dpspectral_data" in note and "--data" in note


def test_data_home_that_does_not_exist_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPSPECTRAL_DATA", str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="does not exist.*DPSPECTRAL_DATA="):
        liu2022._resolve_data(None, True, liu2022.DATASETS)
    monkeypatch.delenv("DPSPECTRAL_DATA")
    with pytest.raises(FileNotFoundError, match="the folder given"):
        liu2022._resolve_data(tmp_path / "also-nope", True, liu2022.DATASETS)


def test_help_states_the_default_data_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["reproduce", "liu2022", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "$DPSPECTRAL_DATA" in text and "~/dpspectral_data" in text
    assert "never the working directory" in text
    assert "../shared/data" not in text
