"""End-to-end checks of ``dpspectral reproduce shang2021`` on tiny subsamples of the shared data."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpspectral import cli
from dpspectral_reproduce import shang2021

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUN_COLUMNS = {"dataset", "n", "k", "epsilon", "repeat", "method", "algorithm", "calibration",
               "aligned_distance", "projection_distance", "certified", "certified_epsilon", "seconds"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _check_outputs(out: Path, datasets: tuple[str, ...], epsilons: tuple[float, ...]) -> None:
    runs = _rows(out / "runs.csv")
    assert RUN_COLUMNS <= set(runs[0])
    labels = {shang2021.NON_PRIVATE, *(m[0] for m in shang2021.METHODS)}
    seen = {(r["dataset"], r["method"], float(r["epsilon"])) for r in runs}
    for ds in datasets:
        for label in labels:
            for e in epsilons:
                assert (ds, label, e) in seen
    for r in runs:
        if r["method"] == shang2021.NON_PRIVATE:
            assert float(r["aligned_distance"]) == 0.0
        else:
            assert 0.0 <= float(r["projection_distance"]) <= 2 * float(r["k"]) ** 0.5 + 1e-9
            assert r["certified"] in ("True", "False")
    # the paper's DP-VRPCA noise is never certified for these epsilons; the tight ones always are
    assert all(r["certified"] == "False" for r in runs if r["method"] == "DP-VRPCA (paper)")
    assert all(r["certified"] == "True" for r in runs if r["calibration"] == "tight")
    assert {"accuracy_mean", "accuracy_sd", "method", "dataset"} <= set(_rows(out / "table3.csv")[0])
    for ds in datasets:
        for metric in ("aligned_distance", "projection_distance"):
            png = out / f"{ds}_{metric}.png"
            assert png.read_bytes()[:8] == PNG_MAGIC
    text = (out / "report.md").read_text()
    assert "NOT certified" in text and "| certified |" in text
    assert "DP-VRPCA (paper)" in text and "CIFAR-10" in text and "per-row" in text
    paper = {"a9a": "82.5539", "mnist": "98.3500"}
    assert all(paper[ds] in text for ds in datasets)  # the paper's Table 3 numbers are next to ours


def test_quick_run_end_to_end(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = shang2021.run_shang2021(out, data_home=shared_data, quick=True, n_rows=300,
                                     epsilons=(1.0,), ks=(1,), datasets=("a9a",), show_progress=False)
    _check_outputs(out, ("a9a",), (1.0,))
    assert result.files["report"].exists()
    assert len(result.table3) == 1 + len(shang2021.METHODS)


def test_paper_settings_are_passed_only_to_the_paper_rows() -> None:
    # the library's defaults of PPI, DP-SPCA and DP-VRPCA are not the paper's: the rows that mean the paper's
    # algorithms pass its settings explicitly, the "library defaults" rows pass nothing
    n, k = 2000, 3
    spca = shang2021.paper_settings("dp_spca", n, k)
    assert spca["n_steps"] == n and spca["sampling_rate"] == 1 / n and spca["block_size"] == k
    assert shang2021.paper_settings("dp_vrpca", n, k)["n_epochs"] == shang2021.VRPCA_EPOCHS
    assert shang2021.paper_settings("noisy_power", n, k) == {"n_iter": shang2021.PPI_ITERATIONS,
                                                              "block_size": k, "adaptive_clip": False}
    # the library's adaptive clipping does not leak into the rows of the paper's settings
    assert spca["adaptive_clip"] is False
    assert shang2021.paper_settings("dp_vrpca", n, k)["adaptive_clip"] is False
    assert shang2021.paper_settings("analyze_gauss", n, k) == {}
    settings = {(m[1], m[3]) for m in shang2021.METHODS}
    for name in ("noisy_power", "dp_spca", "dp_vrpca"):
        assert {(name, shang2021.PAPER), (name, shang2021.DEFAULTS)} <= settings
    assert all(label in shang2021.PAPER_TABLE3 for label, *_ in shang2021.METHODS)


def test_missing_data_dir_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["reproduce", "shang2021", "--quick", "--data", str(tmp_path / "nope"),
                       "--out", str(tmp_path / "o"), "--no-progress"])
    assert status == 2
    assert "a9a" in capsys.readouterr().err


def test_cli_reproduce_quick(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    # without --data the folder is $DPSPECTRAL_DATA (else ~/dpspectral_data), whatever the working
    # directory: run from an empty folder
    monkeypatch.setenv("DPSPECTRAL_DATA", str(shared_data))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tmp"
    status = cli.main(["reproduce", "shang2021", "--quick", "--out", str(out), "--n-rows", "240",
                       "--epsilons", "2", "--k", "1", "--datasets", "mnist",
                       "--no-progress"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "NOT certified" in printed and "finished in" in printed
    _check_outputs(out, ("mnist",), (2.0,))


def test_no_data_folder_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("DPSPECTRAL_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/dpspectral_data
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a9a").mkdir()  # a folder in the working directory is never read
    status = cli.main(["reproduce", "shang2021", "--quick", "--out", str(tmp_path / "o"), "--no-progress"])
    assert status == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "No data folder found" in err and "~/dpspectral_data" in err
    assert "--data DIR" in err and "DPSPECTRAL_DATA" in err
