"""The ``dpspectral`` command: methods, fit, transform, demo, error paths, and the report helpers."""

from __future__ import annotations

import csv
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpspectral import methods
from dpspectral.cli import COMMANDS, main
from dpspectral_reproduce import report
from dpspectral_reproduce.demo import NON_PRIVATE, run_demo

FIT = ["--epsilon", "1.0", "--delta", "1e-6", "--row-norm", "1.0", "--seed", "0"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def small_data(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """400 x 6 rows of norm < 1 with a clear spectral gap, saved as .npy and as .csv with a label."""
    rng = np.random.default_rng(7)
    basis, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    X = (rng.normal(size=(400, 6)) * [3.0, 2.0, 0.3, 0.2, 0.1, 0.1]) @ basis.T
    X /= 1.01 * np.linalg.norm(X, axis=1).max()
    y = (X @ basis[:, 0] > 0).astype(int)
    npy = tmp_path / "data.npy"
    np.save(npy, X)
    csv_path = tmp_path / "data.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"f{i}" for i in range(6)] + ["label"])
        for row, label in zip(X, y, strict=True):
            w.writerow([repr(float(v)) for v in row] + [int(label)])
    return npy, csv_path, X, y


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# ----------------------------------------------------------------------------------------------
# methods
# ----------------------------------------------------------------------------------------------


def test_methods_table_lists_registry_and_marks_wishart(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for m in methods():
        assert m.name in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "UNCERTIFIED" in lines["wishart"]
    assert "UNCERTIFIED" not in lines["analyze_gauss"] and "certified" in lines["analyze_gauss"]


def test_methods_json(capsys):
    assert main(["methods", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == [m.name for m in methods()]
    by_name = {r["name"]: r for r in rows}
    assert by_name["wishart"]["certified"] is False
    assert by_name["analyze_gauss"]["certified"] is True
    assert by_name["analyze_gauss"]["relations"][0] == "replace_one"


# ----------------------------------------------------------------------------------------------
# fit and transform
# ----------------------------------------------------------------------------------------------


def test_fit_npy_then_transform(small_data, tmp_path, capsys):
    npy, _, X, _ = small_data
    out = tmp_path / "model"
    assert main(["fit", str(npy), "--k", "2", *FIT, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "(1, 1e-06)-DP under replace_one" in printed and "certified" in printed

    C = np.load(out / "components.npy")
    assert C.shape == (2, 6)
    assert np.allclose(C @ C.T, np.eye(2), atol=1e-10)
    model = json.loads((out / "model.json").read_text())
    assert model["method"] == "analyze_gauss" and model["n_components"] == 2 and model["n_features"] == 6
    assert model["params"]["row_norm"] == 1.0 and model["mean"] is None
    assert len(model["explained_variance_ratio"]) == 2
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["certified"] is True
    assert privacy["requested_epsilon"] == 1.0 and privacy["epsilon"] == pytest.approx(1.0)
    assert privacy["delta"] == 1e-6 and privacy["relation"] == "replace_one"

    # The top direction of this data is well separated: the private subspace must find it.
    top = np.linalg.eigh(X.T @ X)[1][:, -1]
    assert np.linalg.norm(C @ top) > 0.9

    z = tmp_path / "z.npy"
    assert main(["transform", str(npy), "--model", str(out), "--out", str(z)]) == 0
    Z = np.load(z)
    assert Z.shape == (400, 2)
    assert np.allclose(Z, X @ C.T)


def test_fit_csv_with_label_private_centering_then_transform_csv(small_data, tmp_path):
    _, csv_path, X, _ = small_data
    out = tmp_path / "model_csv"
    args = ["fit", str(csv_path), "--label-column", "label", "--k", "3", "--epsilon", "0.5", "--delta",
            "1e-6", "--row-norm", "1", "--relation", "add_remove", "--centering", "private", "--seed", "3",
            "--out", str(out)]
    assert main(args) == 0
    C = np.load(out / "components.npy")
    assert C.shape == (3, 6)  # the label column is not a feature
    assert np.allclose(C @ C.T, np.eye(3), atol=1e-10)
    model = json.loads((out / "model.json").read_text())
    assert model["centered"] is True and len(model["mean"]) == 6
    assert model["feature_names"] == [f"f{i}" for i in range(6)]
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["certified"] is True and privacy["relation"] == "add_remove"
    assert privacy["requested_epsilon"] == 0.5 and privacy["epsilon"] <= 0.5 + 1e-9

    z = tmp_path / "z.csv"
    args = ["transform", str(csv_path), "--label-column", "-1", "--model", str(out), "--out", str(z)]
    assert main(args) == 0
    with z.open() as f:
        header = f.readline().strip()
    assert header == "pc1,pc2,pc3"
    Z = np.loadtxt(z, delimiter=",", skiprows=1)
    assert Z.shape == (400, 3)
    # the centred rows are clipped at the model's --row-norm before the projection, as in the fit
    R = X - np.asarray(model["mean"])
    R *= np.minimum(1.0, 1.0 / np.linalg.norm(R, axis=1))[:, None]
    assert np.allclose(Z, R @ C.T, atol=1e-8)


def test_fit_is_deterministic_under_a_seed(small_data, tmp_path):
    npy, *_ = small_data
    for name in ("a", "b"):
        assert main(["fit", str(npy), "--k", "2", *FIT, "--out", str(tmp_path / name)]) == 0
    a, b = (np.load(tmp_path / name / "components.npy") for name in ("a", "b"))
    assert np.array_equal(a, b)


def test_fit_uncertified_method_says_so(small_data, tmp_path, capsys):
    npy, *_ = small_data
    out = tmp_path / "w"
    assert main(["fit", str(npy), "--k", "2", *FIT, "--method", "wishart", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "NOT certified" in captured.out
    assert "warning" in captured.err
    assert json.loads((out / "privacy.json").read_text())["certified"] is False


# ----------------------------------------------------------------------------------------------
# error paths: exit status 2, one line naming the problem, no traceback
# ----------------------------------------------------------------------------------------------


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def test_missing_file_exits_2_and_names_the_file(tmp_path, capsys):
    missing = tmp_path / "no_such_file.npy"
    assert main(["fit", str(missing), "--k", "2", *FIT, "--out", str(tmp_path / "m")]) == 2
    line = _error_line(capsys)
    assert "no_such_file.npy" in line and line.startswith("dpspectral fit: error:")
    assert not (tmp_path / "m").exists()


def test_negative_epsilon_exits_2_and_names_epsilon(small_data, tmp_path, capsys):
    npy, *_ = small_data
    args = ["fit", str(npy), "--k", "2", "--epsilon", "-1", "--delta", "1e-6", "--row-norm", "1",
            "--out", str(tmp_path / "m")]
    assert main(args) == 2
    assert "epsilon" in _error_line(capsys)


def test_missing_row_norm_is_an_argparse_error(small_data, tmp_path, capsys):
    npy, *_ = small_data
    args = ["fit", str(npy), "--k", "2", "--epsilon", "1", "--delta", "1e-6", "--out", str(tmp_path / "m")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--row-norm" in err and "required" in err and "usage:" in err


@pytest.mark.parametrize(
    ("data", "override", "needle"),
    [
        ("npy", {"--method": "no_such_method"}, "'method'"),
        ("npy", {"--method": "mod_sulq", "--relation": "add_remove"}, "--relation"),
        ("npy", {"--method": "wishart", "--calibration": "tight"}, "--calibration"),
        ("npy", {"--k": "9"}, "n_components"),
        ("npy", {"--method": "analyze_gauss", "--delta": "0"}, "'delta'"),
        ("npy", {"--epsilon": "nan"}, "'epsilon'"),
        ("npy", {"--row-norm": "inf"}, "'row_norm'"),
        ("npy", {"--row-norm": "0.001", "--on-norm-violation": "raise"}, "row_norm"),
        ("csv", {"--label-column": "17"}, "label_column"),
        ("npy", {"--n-features": "3"}, "--n-features"),
    ],
)
def test_bad_fit_inputs_exit_2(small_data, tmp_path, capsys, data, override, needle):
    npy, csv_path, *_ = small_data
    opts = {"--k": "2", "--epsilon": "1", "--delta": "1e-6", "--row-norm": "1", **override}
    args = ["fit", str(npy if data == "npy" else csv_path), *[t for kv in opts.items() for t in kv]]
    assert main([*args, "--out", str(tmp_path / "m")]) == 2
    assert needle in _error_line(capsys)


def test_transform_errors(small_data, tmp_path, capsys):
    npy, csv_path, *_ = small_data
    out = tmp_path / "model"
    assert main(["fit", str(npy), "--k", "2", *FIT, "--out", str(out)]) == 0
    capsys.readouterr()
    z = str(tmp_path / "z.npy")
    assert main(["transform", str(npy), "--model", str(tmp_path / "nomodel"), "--out", z]) == 2
    assert "nomodel" in _error_line(capsys)
    assert main(["transform", str(npy), "--model", str(out), "--out", str(tmp_path / "z.txt")]) == 2
    assert ".npy or .csv" in _error_line(capsys)
    # 7 columns (label kept as a feature) against a 6-feature model
    assert main(["transform", str(csv_path), "--model", str(out), "--out", str(tmp_path / "z.npy")]) == 2
    assert "6" in _error_line(capsys)


def test_no_command_and_help(capsys):
    assert main([]) == 2
    assert "command is required" in capsys.readouterr().err
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in COMMANDS:
        assert cmd.name in out


PAPERS = ("shang2021", "liu2022", "upadhyay2018", "imtiaz2018", "chen2025")


def test_every_help_text_names_all_five_papers(capsys):
    from dpspectral.cli import REPRODUCE_PAPERS
    from dpspectral_reproduce._registry import PAPERS as REGISTERED

    assert tuple(REPRODUCE_PAPERS.split(", ")) == REGISTERED == PAPERS
    for argv in (["--help"], ["reproduce", "--help"]):
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert all(paper in text for paper in PAPERS), (argv, text)
    assert "all" in text.split()  # reproduce --help lists `all` with the papers


# Options that belong to one paper (or to `all`) only: (option and a value, the papers that take it).
_OWN_OPTIONS = {
    "--tables": ("upadhyay2018",),
    "--data-file": ("chen2025",),
    "--label-column": ("chen2025",),
    "--clf-rows": ("chen2025",),
    "--table-repeats": ("chen2025",),
    "--jobs": ("chen2025", "all"),
    "--index-only": ("all",),
    "--k": ("shang2021", "liu2022"),
    "--n-rows": ("shang2021", "liu2022", "chen2025"),
    "--data": ("shang2021", "liu2022", "imtiaz2018", "chen2025", "all"),
}


@pytest.mark.parametrize("paper", [*PAPERS, "all"])
def test_reproduce_paper_help_shows_only_its_own_options(paper, capsys):
    assert main(["reproduce", paper, "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--quick", "--out", "--repeats", "--seed", "--no-progress"):  # the common ones
        assert option in text
    for option, takers in _OWN_OPTIONS.items():
        shown = option in text.split() or f"[{option}" in text
        assert shown == (paper in takers), (paper, option)


def test_reproduce_refuses_another_papers_option_naming_its_paper(tmp_path, capsys):
    assert main(["reproduce", "imtiaz2018", "--tables", "3", "--out", str(tmp_path)]) == 2
    assert "--tables applies to upadhyay2018 only, not to imtiaz2018" in capsys.readouterr().err
    assert main(["reproduce", "upadhyay2018", "--data", "x", "--out", str(tmp_path)]) == 2
    assert "not used by upadhyay2018" in capsys.readouterr().err
    assert main(["reproduce", "shang2021", "--jobs", "2", "--out", str(tmp_path)]) == 2
    assert "--jobs applies to chen2025, all only" in capsys.readouterr().err
    assert main(["reproduce"]) == 2
    assert "PAPER" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_bench_is_a_script_not_a_subcommand(capsys):
    assert main(["bench", "--quick"]) == 2
    assert "invalid choice: 'bench'" in capsys.readouterr().err


def test_installed_entry_point_help():
    exe = Path(sys.executable).with_name("dpspectral")
    if not exe.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "usage: dpspectral" in proc.stdout
    for name in ("methods", "fit", "transform", "demo"):
        assert name in proc.stdout


# ----------------------------------------------------------------------------------------------
# demo
# ----------------------------------------------------------------------------------------------


def test_demo_cli_quick(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--repeats", "1", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    certified = [m.name for m in methods(model="central", certified=True, task="pca")]
    for name in certified:
        assert name in printed
    assert "wishart" not in printed and NON_PRIVATE in printed

    rows = report.read_runs(out / "runs.csv")
    private = [r for r in rows if r["method"] != NON_PRIVATE]
    expected = {(m, e) for m in certified for e in (0.1, 0.5, 1.0, 2.0)}
    assert len(private) == len(expected)
    assert {(r["method"], r["epsilon"]) for r in private} == expected
    assert all(r["certified"] is True for r in private)
    assert all(0.0 <= r["captured_energy"] <= 1.0 + 1e-9 for r in private)
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in private)
    ref = [r for r in rows if r["method"] == NON_PRIVATE]
    assert len(ref) == 1 and ref[0]["captured_energy"] == pytest.approx(1.0)
    assert ref[0]["projection_distance"] == pytest.approx(0.0, abs=1e-9)

    summary = report.read_runs(out / "summary.csv")
    assert len(summary) == len(expected) + 1

    text = (out / "report.md").read_text()
    assert "-DP under replace_one neighbours (certified" in text
    assert "public choice" in text and "not private" in text
    assert "![" in text and "utility_vs_epsilon.png" in text
    w, h = _png_size(out / "utility_vs_epsilon.png")
    assert w > 300 and h > 200
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["repeats"] == 1 and len(config["privacy"]) == len(expected)


def test_demo_function_tiny_grid_and_utility_ordering():
    res = run_demo(None, repeats=2, epsilons=(0.1, 50.0), methods=["analyze_gauss"], k=5, seed=1,
                   show_progress=False)
    assert res.files == {}
    private = [r for r in res.runs if r["method"] != NON_PRIVATE]
    assert len(private) == 4
    mean = {e: np.mean([r["captured_energy"] for r in private if r["epsilon"] == e]) for e in (0.1, 50.0)}
    assert mean[50.0] > mean[0.1]  # more budget, less noise
    assert mean[50.0] > 0.95
    assert "analyze_gauss" in res.table()
    with pytest.raises(ValueError, match="epsilon"):
        run_demo(None, epsilons=(-1.0,), show_progress=False)
    with pytest.raises(ValueError, match="method"):
        run_demo(None, methods=["nope"], show_progress=False)


def test_demo_is_deterministic_under_a_seed():
    kw = dict(repeats=1, epsilons=(1.0,), methods=["analyze_gauss"], k=3, seed=5, show_progress=False)
    a, b = run_demo(None, **kw), run_demo(None, **kw)
    assert [r["captured_energy"] for r in a.runs] == [r["captured_energy"] for r in b.runs]


# ----------------------------------------------------------------------------------------------
# report helpers
# ----------------------------------------------------------------------------------------------


def test_report_helpers_roundtrip_and_summary(tmp_path):
    rows = [
        {"method": "a", "epsilon": 1.0, "repeat": r, "score": float(r), "ok": True} for r in range(3)
    ] + [{"method": "b", "epsilon": math.inf, "repeat": 0, "score": 2.0, "ok": None}]
    p = report.write_runs(rows, tmp_path / "runs.csv")
    back = report.read_runs(p)
    assert back[0] == rows[0] and back[-1]["epsilon"] == math.inf and back[-1]["ok"] is None
    report.write_runs(rows, tmp_path / "runs.json")
    assert json.loads((tmp_path / "runs.json").read_text())[-1]["epsilon"] == "inf"
    with pytest.raises(ValueError, match="csv or .json"):
        report.write_runs(rows, tmp_path / "runs.txt")

    summary = report.summarize(rows, ("method", "epsilon"), ("score",))
    assert summary[0]["score_mean"] == pytest.approx(1.0) and summary[0]["score_sd"] == pytest.approx(1.0)
    assert summary[0]["n_runs"] == 3 and math.isnan(summary[1]["score_sd"])
    md = report.markdown_table(summary, ("method", "score"), formatters={
        "score": lambda r: report.format_mean_sd(r["score_mean"], r["score_sd"])})
    assert md.splitlines()[0] == "| method | score |" and "1.000 ± 1.000" in md and "| b | 2.000 |" in md
    txt = report.text_table(summary, ("method", "n_runs"))
    assert txt.splitlines()[2].split() == ["a", "3"]


def test_plot_metric_vs_epsilon_writes_png(tmp_path):
    rows = [{"method": m, "epsilon": e, "score": e * (1 + 0.1 * r) + (m == "b")}
            for m in ("a", "b") for e in (0.1, 1.0, 10.0) for r in range(3)]
    fig = report.plot_metric_vs_epsilon(rows, "score", tmp_path / "one.png", reference=12.0)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "1", "10"]
    assert {line.get_label() for line in ax.get_lines()} >= {"non-private"}
    assert _png_size(tmp_path / "one.png")[0] > 100
    p = report.plot_metrics_vs_epsilon(rows, ("score", "epsilon"), tmp_path / "two.png",
                                       references={"score": {"ceiling": 12.0}})
    w, h = _png_size(p)
    assert w > h > 100


# ----------------------------------------------------------------------------------------------
# privacy of what `fit` / `transform` print and save: each test fails on the old code
# ----------------------------------------------------------------------------------------------


def _write_rows(path: Path, header: list[str] | None, rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        if header is not None:
            w.writerow(header)
        w.writerows(rows)
    return path


def _all_output_text(out: Path, captured) -> str:
    parts = [captured.out, captured.err]
    for f in sorted(out.rglob("*")) if out.exists() else []:
        if f.suffix == ".npy":
            parts.append(" ".join(repr(float(v)) for v in np.load(f).ravel()))
        elif f.is_file():
            parts.append(f.read_text())
    return "\n".join(parts)


def test_fit_refuses_an_undeclared_text_column_without_quoting_it(tmp_path, capsys):
    # Old code: one-hot encoded by default; model.json listed name=patient_000, name=patient_001, ...
    rng = np.random.default_rng(0)
    rows = [[f"patient_{i:03d}", *np.round(rng.uniform(-0.3, 0.3, 3), 6)] for i in range(50)]
    data = _write_rows(tmp_path / "p.csv", ["name", "a", "b", "c"], rows)
    out = tmp_path / "m"
    assert main(["fit", str(data), "--k", "2", *FIT, "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "column 'name' (position 0)" in line and "--categories name=" in line
    assert "patient" not in line
    assert not out.exists()


def test_fit_declared_categories_are_the_only_names_saved(tmp_path, capsys):
    rng = np.random.default_rng(1)
    protos = ["tcp", "udp", "secret_proto_x"]  # the last is not declared: private
    rows = [[protos[i % 3], *np.round(rng.uniform(-0.3, 0.3, 2), 6), f"lab_{i}"] for i in range(60)]
    data = _write_rows(tmp_path / "c.csv", ["proto", "a", "b", "label"], rows)
    out = tmp_path / "m"
    args = ["fit", str(data), "--label-column", "label", "--categories", "proto=udp,tcp,icmp", "--k", "2",
            *FIT, "--out", str(out)]
    assert main(args) == 0
    model = json.loads((out / "model.json").read_text())
    assert model["feature_names"] == ["proto=udp", "proto=tcp", "proto=icmp", "a", "b"]
    assert model["n_features"] == 5 and model["data"]["categories"] == {"proto": ["udp", "tcp", "icmp"]}
    text = _all_output_text(out, capsys.readouterr())
    assert "secret_proto_x" not in text and "lab_" not in text
    # transform re-applies the fitted declaration (the width matches without --categories).
    z = tmp_path / "z.npy"
    assert main(["transform", str(data), "--label-column", "label", "--model", str(out),
                 "--out", str(z)]) == 0
    assert np.load(z).shape == (60, 2)
    # A --schema file declares the same; a contradiction between the two is refused.
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"header": True, "categories": {"proto": ["udp", "tcp", "icmp"]}}))
    out2 = tmp_path / "m2"
    assert main(["fit", str(data), "--label-column", "label", "--schema", str(schema), "--k", "2", *FIT,
                 "--out", str(out2)]) == 0
    assert np.array_equal(np.load(out / "components.npy"), np.load(out2 / "components.npy"))
    assert main(["fit", str(data), "--label-column", "label", "--schema", str(schema), "--no-header",
                 "--k", "2", *FIT, "--out", str(tmp_path / "m3")]) == 2
    assert "contradicts" in _error_line(capsys)
    for bad in ("proto", "proto=", "=a,b"):
        args = ["fit", str(data), "--categories", bad, "--k", "2", *FIT, "--out", str(tmp_path / "x")]
        assert main(args) == 2
        assert "--categories" in _error_line(capsys)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((3, 2)))
    assert main(["fit", str(npy), "--categories", "0=a", "--k", "1", *FIT, "--out", str(tmp_path / "x")]) == 2
    assert "CSV and Parquet" in _error_line(capsys)


def test_fit_stray_cell_is_an_error_naming_the_column_only(small_data, tmp_path, capsys):
    # Old code: one stray "abc" made the column 50 indicator columns and the fit exited 0.
    _, csv_path, *_ = small_data
    lines = csv_path.read_text().splitlines()
    cells = lines[137].split(",")
    cells[2] = "abc"
    lines[137] = ",".join(cells)
    bad = tmp_path / "stray.csv"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m"
    assert main(["fit", str(bad), "--label-column", "label", "--k", "2", *FIT, "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "column 'f2' (position 2)" in line and "not numeric" in line
    assert "abc" not in line and "137" not in line and "136" not in line
    assert not out.exists()


def test_fit_header_option(tmp_path, capsys):
    # Old code: a numeric header row was fitted as data and there was no option to declare one.
    rows = [[0.1, 0.2], [0.3, -0.1], [-0.2, 0.05]]
    data = _write_rows(tmp_path / "h.csv", ["10", "20"], rows)
    assert main(["fit", str(data), "--k", "1", *FIT, "--out", str(tmp_path / "a")]) == 2
    assert "--no-header" in _error_line(capsys)
    assert main(["fit", str(data), "--header", "--k", "1", *FIT, "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "model.json").read_text())["feature_names"] == ["10", "20"]
    assert main(["fit", str(data), "--no-header", "--k", "1", *FIT, "--out", str(tmp_path / "c")]) == 0
    model = json.loads((tmp_path / "c" / "model.json").read_text())
    assert model["feature_names"] == ["x0", "x1"] and model["n_samples"] == 4.0  # the header row is data
    capsys.readouterr()
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((3, 2)))
    assert main(["fit", str(npy), "--no-header", "--k", "1", *FIT, "--out", str(tmp_path / "d")]) == 2
    assert "CSV data only" in _error_line(capsys)


def test_fit_prints_no_timing_no_row_count_and_saves_no_seed(small_data, tmp_path, capsys):
    # Old code: "fitted analyze_gauss on 400 x 6 data (dense) in 0.012 s", and "seed": 0 in model.json.
    npy, *_ = small_data
    out = tmp_path / "m"
    assert main(["fit", str(npy), "--k", "2", *FIT, "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "400" not in printed.out and " s:" not in printed.out and " in " not in printed.out.split("\n")[0]
    model = json.loads((out / "model.json").read_text())
    assert model["params"]["seed"] == "given (secret, not saved)"
    z = tmp_path / "z.npy"
    assert main(["transform", str(npy), "--model", str(out), "--out", str(z)]) == 0
    assert "400" not in capsys.readouterr().out


def test_fit_add_remove_without_a_released_count(small_data, tmp_path, capsys):
    # Old code: AttributeError (a traceback) because DPPCA has no n_samples_ when n is not released.
    npy, *_ = small_data
    out = tmp_path / "m"
    args = ["fit", str(npy), "--k", "2", *FIT, "--method", "noisy_power", "--relation", "add_remove",
            "--out", str(out)]
    assert main(args) == 0
    assert json.loads((out / "model.json").read_text())["n_samples"] is None
    assert "400" not in capsys.readouterr().out


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_model_json_saves_the_exact_n_only_where_n_is_public(small_data, tmp_path, relation):
    # replace-one: n is a public input (neighbours have the same n), saved exactly; add/remove: n is
    # private, and model.json holds the released noisy count (charged with the fit), never the exact n
    npy, *_ = small_data
    out = tmp_path / "m"
    assert main(["fit", str(npy), "--k", "2", *FIT, "--relation", relation, "--out", str(out)]) == 0
    model = json.loads((out / "model.json").read_text())
    events = json.loads((out / "privacy.json").read_text())["events"]
    if relation == "replace_one":
        assert model["n_samples"] == 400.0
        assert len(events) == 2  # the norm histogram, the scatter
    else:
        assert model["n_samples"] is not None and model["n_samples"] != 400.0
        assert len(events) == 3  # and the count, released with noise under the same budget


def test_fit_drops_data_dependent_warnings_keeps_privacy_warnings(small_data, tmp_path, capsys, monkeypatch):
    # Old code: every warning raised while the private data were processed reached stderr, e.g.
    # NumPy's overflow warnings, whose occurrence depends on the values.
    import warnings as _warnings

    from dpspectral._estimators import DPPCA

    fit = DPPCA.fit

    def noisy_fit(self, X, y=None):
        _warnings.warn("overflow encountered in row 17 (value 3.25e308)", RuntimeWarning, stacklevel=1)
        return fit(self, X, y)

    monkeypatch.setattr(DPPCA, "fit", noisy_fit)
    npy, *_ = small_data
    assert main(["fit", str(npy), "--k", "2", *FIT, "--method", "wishart", "--out", str(tmp_path / "w")]) == 0
    err = capsys.readouterr().err
    assert "overflow" not in err and "3.25e308" not in err
    assert "warning" in err and "certif" in err  # the UncertifiedPrivacyWarning is public and shown
    assert main(["--debug", "fit", str(npy), "--k", "2", *FIT, "--out", str(tmp_path / "d")]) == 0
    assert "overflow" in capsys.readouterr().err  # --debug shows everything (not private)


def test_fit_libsvm_width_is_a_public_input(tmp_path, capsys):
    # Old code: the width was the largest feature index present in the private file, and with
    # --n-features too small scikit-learn's message quoted that index.
    data = tmp_path / "d.svm"
    data.write_text("1 1:0.5 7:0.25\n-1 2:0.1\n1 3:0.2\n")
    out = tmp_path / "m"
    assert main(["fit", str(data), "--k", "1", *FIT, "--out", str(out)]) == 2
    assert "--n-features" in _error_line(capsys)
    assert main(["fit", str(data), "--n-features", "3", "--k", "1", *FIT, "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "n_features=3" in line and "7" not in line.replace(str(data), "")
    assert main(["fit", str(data), "--n-features", "9", "--k", "1", *FIT, "--out", str(out)]) == 0
    assert json.loads((out / "model.json").read_text())["n_features"] == 9
    z = tmp_path / "z.npy"
    assert main(["transform", str(data), "--model", str(out), "--out", str(z)]) == 0
    assert np.load(z).shape == (3, 1)


def test_fit_method_auto_says_what_it_chose(small_data, tmp_path, capsys):
    npy, *_ = small_data
    base = ["fit", str(npy), "--k", "2", "--epsilon", "1", "--row-norm", "1"]
    assert main([*base, "--delta", "1e-6", "--out", str(tmp_path / "a")]) == 0
    assert "--method auto chose analyze_gauss:" in capsys.readouterr().out
    assert main([*base, "--delta", "0", "--out", str(tmp_path / "b")]) == 0  # pure epsilon: ppca
    out = capsys.readouterr().out
    assert "--method auto chose ppca: delta=0" in out
