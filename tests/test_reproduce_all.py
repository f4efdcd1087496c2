"""``dpspectral reproduce all``: the index's structure, failure handling, and images loading in a browser.

The browser tests render the index in headless Chromium (``chromium`` / ``chromium-browser`` /
``google-chrome`` on PATH) with a small script appended that records, once the page has loaded, which
images failed to load; they are skipped without a browser unless ``DPSPECTRAL_REQUIRE_BROWSER=1`` (CI).
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import os
import re
import shutil
import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dpspectral import cli
from dpspectral_reproduce import reproduce_all
from dpspectral_reproduce._registry import CLIError
from dpspectral_reproduce.reproduce_all import (
    EXPERIMENTS,
    build_index,
    certification,
    discover,
    run_all,
)

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "reproductions"
FAST = ("imtiaz2018", "upadhyay2018")  # the fastest quick runs (about 5 s each)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Images, links, ids and the summary table's rows of an index page."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.summary: list[list[str]] = []
        self.scripts = 0
        self._in_summary = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "img":
            self.images.append(str(a.get("src")))
        elif tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        elif tag == "script":
            self.scripts += 1
        elif tag == "table" and a.get("id") == "summary":
            self._in_summary = True
        elif tag == "tr" and self._in_summary:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self.summary.append(self._row)
            self._row = None
        elif tag == "table":
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text("utf-8"))
    return page


def _local(index: Path, url: str) -> Path:
    return index.parent / urllib.parse.unquote(url)


def _make_experiment(folder: Path, *, title: str, figures: int = 2, rows: int = 3) -> None:
    """A small experiment folder: report.md (a table, one image, raw HTML), PNGs and CSVs."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    folder.mkdir(parents=True)
    for i in range(figures):
        fig = Figure(figsize=(2, 1.5))
        fig.add_subplot().plot([0, 1, 2], [i, 1, 0])
        fig.savefig(folder / f"fig {i}.png", dpi=50)  # a space in the name: URLs must be quoted
    (folder / "report.md").write_text(
        f"# {title}\n\nParagraph with <script>alert('x')</script> & a [link](runs.csv).\n\n"
        "## Table 1\n\n| setting | paper | ours |\n|---|---|---|\n| eps = 1 | 0.50 | 0.52 |\n\n"
        "![first figure](fig%200.png)\n", encoding="utf-8")
    with (folder / "runs.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "calibration", "epsilon", "error", "certified"])
        for i in range(rows):
            w.writerow([f"m<{i}>", "tight", 1.0, 0.123456789, True])
        w.writerow(["non-private", "none", "", 0.1, False])
        w.writerow(["PCA (sklearn, non-private)", "", "", 0.1, False])
        w.writerow(["m-paper", "paper", 1.0, 0.2, False])


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


_PROBE = """
<pre id="dpspectral-image-check">not run</pre>
<script>
window.addEventListener("load", function () {
  var bad = [], imgs = document.images;
  for (var i = 0; i < imgs.length; i++) {
    if (!(imgs[i].complete && imgs[i].naturalWidth > 0)) { bad.push(imgs[i].getAttribute("src")); }
  }
  document.getElementById("dpspectral-image-check").textContent =
    JSON.stringify({images: imgs.length, broken: bad});
});
</script>
"""


def _images_in_browser(index: Path, tmp_path: Path) -> dict[str, object]:
    """Load a copy of ``index`` (same folder) with the probe appended; return ``{images, broken}``."""
    browser = _browser()
    if browser is None:
        if os.environ.get("DPSPECTRAL_REQUIRE_BROWSER") == "1":
            pytest.fail("DPSPECTRAL_REQUIRE_BROWSER=1 but none of chromium, chromium-browser, google-chrome "
                        "is on PATH")
        pytest.skip("no headless browser (chromium) on PATH")
    probe = index.with_name("_probe_" + index.name)
    probe.write_text(index.read_text("utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    profile = tmp_path / "chromium-profile"
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
           probe.resolve().as_uri()]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    finally:
        probe.unlink()
    match = re.search(r'<pre id="dpspectral-image-check">(.*?)</pre>', done.stdout, re.S)
    assert match, f"no result from the browser (exit {done.returncode}): {done.stderr[-2000:]}"
    result: dict[str, object] = json.loads(html.unescape(match.group(1)))
    return result


# ----------------------------------------------------------------------------------------------
# the index over made-up folders
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "reports"
    _make_experiment(root / "liu2022", title="Liu et al. (2022): DP-PCA — reproduction", rows=60)
    _make_experiment(root / "shang2021-n6000", title="Shang et al. (2021)")
    (root / "notes").mkdir()  # neither an experiment nor a report: not indexed
    return root


def test_build_index_structure(fake_root: Path) -> None:
    index = build_index(fake_root)
    assert index == fake_root / "index.html"
    page = _parse(index)
    text = index.read_text("utf-8")
    # summary: the experiments in EXPERIMENTS' order, the missing ones listed as such
    assert [row[0] for row in page.summary] == ["shang2021-n6000", "liu2022"] + [
        e for e in EXPERIMENTS if e not in ("shang2021", "liu2022")]
    by_folder = {row[0]: row for row in page.summary}
    assert by_folder["liu2022"][1] == "Liu et al. (2022): DP-PCA"  # the report's title, trimmed
    assert by_folder["liu2022"][2].startswith("ok")
    assert by_folder["liu2022"][4] == "some not (paper's noise only)"
    assert by_folder["liu2022"][5] == "tight: 60 of 60; paper: 0 of 1 (runs.csv)"
    assert by_folder["imtiaz2018"][2] == "missing" and by_folder["imtiaz2018"][4] == "n/a"
    assert "notes" not in text
    for folder in ("liu2022", "shang2021-n6000"):
        assert f"#x-{folder}" in page.links and f"x-{folder}" in page.ids
        # every PNG once (the report's own image in the report, the other under "Other figures")
        assert sorted(u for u in page.images if u.startswith(folder + "/")) == [
            f"{folder}/fig%200.png", f"{folder}/fig%201.png"]
        assert f"{folder}/runs.csv" in page.links  # the report's link, rewritten, and the CSV's
    for url in page.images:
        assert _local(index, url).is_file(), url
    # the report rendered: its table, headings one level down, its raw HTML escaped, no script at all
    assert "<th>paper</th>" in text and "<td>0.52</td>" in text
    assert "<h3>Table 1</h3>" in text
    assert page.scripts == 0 and "&lt;script&gt;alert(" in text
    # CSVs: escaped cells, rounded floats, truncated to CSV_PREVIEW_ROWS with the count given
    assert "<td>m&lt;0&gt;</td>" in text and "<td>0.123457</td>" in text
    assert f"the first {reproduce_all.CSV_PREVIEW_ROWS} of 63 rows" in text
    assert "<td>m&lt;55&gt;</td>" not in text
    assert "all 6 rows" in text


def test_certification_counts_private_runs_per_calibration(fake_root: Path, tmp_path: Path) -> None:
    cert = certification(fake_root / "shang2021-n6000")
    assert cert.headline == "some not (paper's noise only)"
    assert cert.groups == (("tight", 3, 3), ("paper", 0, 1))  # the non-private row left out
    assert certification(tmp_path / "nowhere").headline == "n/a"
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "summary.csv").write_text("method,certified\nA (tight),True\nB (tight),True\nC,\n")
    assert certification(folder).headline == "all"
    assert certification(folder).detail == "tight: 2 of 2 (summary.csv)"
    (folder / "summary.csv").write_text("method,certified\nA (tight),False\nB (paper),False\n")
    assert certification(folder).headline == "some not"
    # a private method with a non-private part is counted; a non-private reference is not
    (folder / "summary.csv").write_text("method,certified\nDPRF (non-private init),False\n"
                                        "SR (non-private),False\n")
    assert certification(folder).groups == (("", 0, 1),)


def test_discover_reads_the_runs_record(fake_root: Path) -> None:
    record = {"experiments": [{"name": "liu2022", "folder": "liu2022", "status": "failed", "exit_status": 2,
                               "seconds": 3.5, "error": "exit status 2: boom", "unknown_key": 1}]}
    (fake_root / reproduce_all.RUNS_FILE).write_text(json.dumps(record))
    entries = {e.folder: e for e in discover(fake_root)}
    assert entries["liu2022"].failed and entries["liu2022"].seconds == 3.5
    assert entries["shang2021-n6000"].status == "indexed"
    text = build_index(fake_root).read_text("utf-8")
    assert "exit status 2: boom" in text and "failed (exit status 2)" in text


def test_build_index_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to index"):
        build_index(tmp_path / "absent")


# ----------------------------------------------------------------------------------------------
# running: the fastest quick runs, and failures
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[reproduce_all.AllResult, str]:
    """``run_all --quick`` on the fastest experiments (once for the module), with its stdout."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("quick") / "all"
    buffer = io.StringIO()
    # run where no data folder is found (imtiaz2018 --quick would otherwise read MNIST and a9a from
    # $DPSPECTRAL_DATA: about a minute); the real-data path is tested in tests/test_reproduce_imtiaz2018.py
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(buffer):
        mp.delenv("DPSPECTRAL_DATA", raising=False)
        mp.setenv("HOME", str(root.parent))  # no ~/dpspectral_data
        mp.chdir(root.parent)
        result = run_all(root, quick=True, show_progress=False, experiments=FAST)
    return result, buffer.getvalue()


def test_run_all_quick_fast_subset(quick_run: tuple[reproduce_all.AllResult, str]) -> None:
    result, out = quick_run
    root = result.root
    assert result.ok and result.failed == [] and result.index == root / "index.html"
    for i, name in enumerate(FAST, 1):
        assert re.search(rf"^\[{i}/{len(FAST)}\] {name} \.\.\. done in [0-9.]+ s$", out, re.M), out
    page = _parse(result.index)
    rows = {row[0]: row for row in page.summary}
    for entry in result.entries:
        assert entry.status == "ok" and entry.exit_status == 0 and entry.seconds is not None
        assert "--quick" in entry.command and entry.stdout_tail
        assert rows[entry.name][2] == "ok" and rows[entry.name][3].endswith(" s")
        assert rows[entry.name][4] in ("all", "some not (paper's noise only)")
        pngs = sorted(p.name for p in (root / entry.name).glob("*.png"))
        assert pngs, entry.name
        shown = {u.split("/", 1)[1] for u in page.images if u.startswith(entry.name + "/")}
        assert {urllib.parse.quote(p) for p in pngs} <= shown
        for p in (root / entry.name).glob("*.csv"):
            assert f"{entry.name}/{p.name}" in page.links
    assert set(rows) == set(FAST)  # the index lists what was run
    record = json.loads((root / reproduce_all.RUNS_FILE).read_text())
    assert [e["name"] for e in record["experiments"]] == list(FAST) and record["quick"] is True
    # the record lets a later --index-only keep the statuses and times
    assert [e.status for e in discover(root)][:2] == ["ok", "ok"]


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug in the runner")


def _bad_input(*args: object, **kwargs: object) -> None:
    raise ValueError("bad input")


def test_failed_runner_is_recorded_and_the_rest_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from dpspectral_reproduce import liu2022, shang2021

    monkeypatch.setattr(liu2022, "run_liu2022", _boom)  # an exception escaping the runner
    monkeypatch.setattr(shang2021, "run_shang2021", _bad_input)  # a user error: exit status 2
    monkeypatch.setattr(reproduce_all, "EXPERIMENTS", ("liu2022", "shang2021", "imtiaz2018"))
    root = tmp_path / "all"
    status = cli.main(["reproduce", "all", "--quick", "--no-progress", "--out", str(root)])
    captured = capsys.readouterr()
    assert status == 1
    assert "failed: liu2022 (RuntimeError: a bug in the runner)" in captured.err
    assert "shang2021 (exit status 2" in captured.err
    assert re.search(r"^\[3/3\] imtiaz2018 \.\.\. done in", captured.out, re.M)
    rows = {row[0]: row for row in _parse(root / "index.html").summary}
    assert rows["liu2022"][2] == "failed" and rows["shang2021"][2] == "failed (exit status 2)"
    assert rows["imtiaz2018"][2] == "ok"
    text = (root / "index.html").read_text("utf-8")
    assert "RuntimeError: a bug in the runner" in text and "Traceback" in text  # the stderr tail
    assert "bad input" in text


def test_cli_rejects_per_paper_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flags in (["--tables", "3"], ["--datasets", "a9a"], ["--epsilons", "1"], ["--k", "2"],
                  ["--n-rows", "10"]):
        status = cli.main(["reproduce", "all", "--out", str(tmp_path / "x"), *flags])
        assert status == 2
        assert "not used by `reproduce all`" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_index_only(fake_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(index_only=True, quick=False, repeats=None, data=None, tables=None,
                              datasets=None, n_rows=None, epsilons=None, k=None, seed=0, no_progress=True)
    assert reproduce_all.cli_run(args, fake_root) == 0
    assert f"wrote {fake_root / 'index.html'}" in capsys.readouterr().out
    with pytest.raises(CLIError, match="--quick"):
        reproduce_all.cli_run(argparse.Namespace(**{**vars(args), "quick": True}), fake_root)
    with pytest.raises(CLIError, match="nothing to index"):
        reproduce_all.cli_run(args, tmp_path / "absent")


def test_argv_passes_flags_to_the_experiments_that_take_them() -> None:
    argv = reproduce_all._argv("upadhyay2018", Path("o"), quick=True, data_home="d", seed=3, repeats=2,
                               show_progress=False, jobs=4)
    assert argv == ["reproduce", "upadhyay2018", "--out", "o", "--seed", "3", "--quick", "--repeats", "2",
                    "--no-progress"]  # simulated inputs: no --data; no --jobs
    argv = reproduce_all._argv("chen2025", Path("o"), quick=False, data_home="d", seed=0, repeats=None,
                               show_progress=True, jobs=4)
    assert argv == ["reproduce", "chen2025", "--out", "o", "--seed", "0", "--data", "d", "--jobs", "4"]


def test_run_all_rejects_unknown_experiments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'experiments' parameter"):
        run_all(tmp_path, experiments=["nope"])


# ----------------------------------------------------------------------------------------------
# the committed full runs
# ----------------------------------------------------------------------------------------------


def test_committed_index_shows_every_committed_figure() -> None:
    """docs/reproductions/index.html is up to date: every figure of every committed run is in it."""
    index = DOCS / "index.html"
    assert index.is_file()
    page = _parse(index)
    shown = {urllib.parse.unquote(u) for u in page.images}
    folders = [p for p in sorted(DOCS.iterdir()) if p.is_dir()]
    assert folders
    stale = "regenerate it: dpspectral reproduce all --index-only --out docs/reproductions"
    for folder in folders:
        assert f"x-{folder.name}" in page.ids, f"{folder.name} is not in index.html; {stale}"
        for png in folder.glob("*.png"):
            assert f"{folder.name}/{png.name}" in shown, f"{png} is not in index.html; {stale}"
    for url in page.images:
        assert _local(index, url).is_file(), f"index.html shows a missing file {url}; {stale}"


# ----------------------------------------------------------------------------------------------
# in a browser
# ----------------------------------------------------------------------------------------------


def test_browser_loads_every_image(fake_root: Path, tmp_path: Path) -> None:
    index = build_index(fake_root)
    result = _images_in_browser(index, tmp_path)
    assert result == {"images": 4, "broken": []}


def test_browser_loads_a_quick_run(quick_run: tuple[reproduce_all.AllResult, str], tmp_path: Path) -> None:
    index = quick_run[0].index
    result = _images_in_browser(index, tmp_path)
    n_png = sum(1 for _ in index.parent.glob("*/*.png"))
    assert result == {"images": n_png, "broken": []} and n_png > 0


def test_browser_detects_a_broken_image(fake_root: Path, tmp_path: Path) -> None:
    """Negative control: the check fails when an image does not load."""
    index = build_index(fake_root)
    (fake_root / "liu2022" / "fig 1.png").unlink()
    result = _images_in_browser(index, tmp_path)
    assert result == {"images": 4, "broken": ["liu2022/fig%201.png"]}


def test_browser_loads_the_committed_reproductions(tmp_path: Path) -> None:
    """The index over the committed full runs (built afresh in a copy of the folder layout)."""
    root = tmp_path / "reproductions"
    root.mkdir()
    for folder in sorted(DOCS.iterdir()):
        if folder.is_dir():
            (root / folder.name).symlink_to(folder, target_is_directory=True)
    index = build_index(root)
    n_png = sum(1 for _ in DOCS.glob("*/*.png"))
    assert n_png > 0
    result = _images_in_browser(index, tmp_path)
    assert result["broken"] == []
    assert result["images"] == len(_parse(index).images) >= n_png
    # the committed index too, from a copy in the same layout
    shutil.copyfile(DOCS / "index.html", root / "committed.html")
    committed = _images_in_browser(root / "committed.html", tmp_path)
    assert committed["broken"] == [] and committed["images"] == result["images"]


def test_full_run_warns_that_it_takes_over_half_an_hour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # the full `reproduce all` took over half an hour without a word of warning
    class Stop(Exception):
        pass

    def stop(*args: object, **kwargs: object) -> None:
        raise Stop

    monkeypatch.setattr(reproduce_all, "run_all", stop)
    with pytest.raises(Stop):
        reproduce_all.cli_run(argparse.Namespace(quick=False, no_progress=True, seed=0, repeats=None,
                                                 data=None, jobs=None, index_only=False), tmp_path / "a")
    assert "over half an hour" in capsys.readouterr().err
    with pytest.raises(Stop):
        reproduce_all.cli_run(argparse.Namespace(quick=True, no_progress=True, seed=0, repeats=None,
                                                 data=None, jobs=None, index_only=False), tmp_path / "b")
    assert "half an hour" not in capsys.readouterr().err
    # and the help says so
    assert cli.main(["reproduce", "--help"]) == 0
    assert "half an hour" in " ".join(capsys.readouterr().out.split())
