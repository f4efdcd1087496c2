"""``dpspectral reproduce all``: every paper's reproduction, and one HTML index of them.

``dpspectral reproduce all [--quick] [--data DIR] [--out DIR] [--repeats R] [--seed S] [--jobs N]``

runs ``dpspectral reproduce NAME`` for every paper (:data:`EXPERIMENTS`) into ``DIR/NAME/`` and writes
``DIR/index.html``: one page that opens in a browser from the file system (no server, no network, no
script), with

* a summary table: experiment, paper, status (ok / failed), wall time, and whether the accountant
  certified every private run at its requested epsilon (from the ``certified`` column of the
  experiment's ``*runs.csv``, else ``summary.csv``), linking to the experiment's section;
* per experiment: its ``report.md`` rendered to HTML (the report's tables put the paper's numbers
  beside ours), every figure of the folder, every CSV as an HTML table (the first
  :data:`CSV_PREVIEW_ROWS` rows, with a link to the whole file), and, for a failed run, its error and
  the tail of its output.

Figures are referenced by relative paths (``NAME/figure.png``), so the index and the experiment folders
move together. A runner that fails (an exception, or a non-zero exit status) is recorded in the index
and the others still run; the command then exits with status 1 and names the failed ones.

:func:`build_index` indexes folders that already exist without running anything (``dpspectral
reproduce all --index-only --out DIR``); ``docs/reproductions/index.html`` is made that way from the
committed full runs, whose folder names may carry a suffix (``shang2021-n6000``): a folder belongs to
the experiment whose name starts it.

Privacy
-------
Nothing here touches data: the index only formats the files the experiments wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import html
import io
import json
import re
import sys
import time
import traceback
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from ._registry import PAPERS, CLIError

__all__ = [
    "CSV_PREVIEW_ROWS",
    "EXPERIMENTS",
    "AllResult",
    "Certification",
    "ExperimentEntry",
    "build_index",
    "certification",
    "cli_run",
    "discover",
    "run_all",
    "write_index",
]

#: Rows of each CSV shown in the index (the whole file is linked).
CSV_PREVIEW_ROWS = 50
#: Lines of a run's stdout / stderr kept in the index.
TAIL_LINES = 40
#: The file ``run_all`` records its runs in (read back by :func:`build_index`).
RUNS_FILE = "reproduce_all.json"
INDEX_FILE = "index.html"
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
#: Experiments that take no ``--data`` (their inputs are simulated).
_NO_DATA = frozenset({"upadhyay2018"})
#: Flags of ``dpspectral reproduce`` that mean something different to each paper.
_PER_PAPER_FLAGS = (("tables", "--tables"), ("datasets", "--datasets"), ("n_rows", "--n-rows"),
                    ("epsilons", "--epsilons"), ("k", "--k"), ("data_file", "--data-file"),
                    ("label_column", "--label-column"), ("clf_rows", "--clf-rows"),
                    ("table_repeats", "--table-repeats"))
#: Experiments that take ``--jobs`` (worker processes).
_TAKES_JOBS = frozenset({"chen2025"})

#: Printed (stderr) before a full ``reproduce all``: the recorded full runs took 6-15 min per paper.
FULL_RUN_WARNING = ("dpspectral reproduce all: the full runs of every paper take over half an hour "
                    "(about 45 min on two cores; chen2025 alone about 15 min). Add --quick for a run of "
                    "a few minutes.")


#: Every paper's experiment, in the order run and shown (``dpspectral reproduce`` minus ``all``).
EXPERIMENTS: tuple[str, ...] = PAPERS


@dataclass
class ExperimentEntry:
    """One experiment of the index.

    Attributes
    ----------
    name : str
        The experiment (``"shang2021"``).
    folder : str
        Its folder, relative to the index's folder (``"shang2021"`` or ``"shang2021-n6000"``).
    status : str
        ``"ok"``, ``"failed"``, ``"not run"`` (interrupted before it), ``"indexed"`` (found on disk by
        :func:`build_index`, not run now) or ``"missing"`` (no folder).
    exit_status : int or None
        The exit status of ``dpspectral reproduce NAME`` (None: not run, or it raised).
    seconds : float or None
        Wall time of the run.
    error : str
        Why it failed (one line), empty otherwise.
    command : str
        The command line it ran.
    stdout_tail, stderr_tail : str
        The last :data:`TAIL_LINES` lines of its output.
    """

    name: str
    folder: str
    status: str
    exit_status: int | None = None
    seconds: float | None = None
    error: str = ""
    command: str = ""
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def failed(self) -> bool:
        """Whether the run failed."""
        return self.status == "failed"


@dataclass
class AllResult:
    """What :func:`run_all` did.

    Attributes
    ----------
    root : Path
        The output folder.
    entries : list of ExperimentEntry
        One per experiment, in the order run.
    index : Path
        ``root / "index.html"``.
    seconds : float
        Total wall time.
    """

    root: Path
    entries: list[ExperimentEntry]
    index: Path
    seconds: float

    @property
    def failed(self) -> list[str]:
        """Names of the experiments that failed."""
        return [e.name for e in self.entries if e.failed]

    @property
    def ok(self) -> bool:
        """Whether every experiment ran and succeeded."""
        return all(e.status == "ok" for e in self.entries)


@dataclass(frozen=True)
class Certification:
    """Whether an experiment's private runs were certified at their requested epsilon.

    Attributes
    ----------
    headline : str
        ``"all"``, ``"some not"``, ``"some not (paper's noise only)"`` (every uncertified run uses the
        paper's own noise formula, calibration ``"paper"``) or ``"n/a"`` (no ``certified`` column, or
        no private run).
    groups : tuple of (str, int, int)
        ``(calibration, certified, total)`` per calibration (``""`` when the file has no
        ``calibration`` column), counting private rows only (non-private rows are left out).
    source : str
        The file(s) counted.
    """

    headline: str
    groups: tuple[tuple[str, int, int], ...] = ()
    source: str = ""

    @property
    def detail(self) -> str:
        """The counts in words, e.g. ``"tight: 192 of 192; paper: 72 of 144 (runs.csv)"``."""
        if not self.groups:
            return "no certified column" if not self.source else f"no private run ({self.source})"
        parts = [f"{cal + ': ' if cal else ''}{ok:,} of {n:,}" for cal, ok, n in self.groups]
        return f"{'; '.join(parts)} ({self.source})"


# ----------------------------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------------------------


class _Tee(io.TextIOBase):
    """Writes to a stream and keeps a copy."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, s: str) -> int:
        self.copy.write(s)
        return self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``, each as a terminal shows it (progress-bar redraws dropped)."""
    shown = [line.rsplit("\r", 1)[-1] for line in text.replace("\r\n", "\n").split("\n")]
    shown = [line for line in shown if line.strip()]
    return "\n".join(shown[-lines:])


def _argv(name: str, folder: Path, *, quick: bool, data_home: str | Path | None, seed: int,
          repeats: int | None, show_progress: bool, jobs: int | None = None) -> list[str]:
    argv = ["reproduce", name, "--out", str(folder), "--seed", str(seed)]
    if quick:
        argv.append("--quick")
    if repeats is not None:
        argv += ["--repeats", str(repeats)]
    if data_home is not None and name not in _NO_DATA:
        argv += ["--data", str(data_home)]
    if jobs is not None and name in _TAKES_JOBS:
        argv += ["--jobs", str(jobs)]
    if not show_progress:
        argv.append("--no-progress")
    return argv


def _run_one(name: str, argv: list[str]) -> ExperimentEntry:
    """Run ``dpspectral ARGV`` in this process, keeping its exit status, wall time and output."""
    from . import papers

    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    entry = ExperimentEntry(name=name, folder=name, status="failed",
                            command="dpspectral " + " ".join(argv))
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                entry.exit_status = int(papers.main(argv[1:]))  # argv[0] is 'reproduce'
            except Exception as exc:  # a runner's bug must not stop the others
                traceback.print_exc()
                entry.error = f"{type(exc).__name__}: {papers.one_line(exc)}"
    finally:
        entry.seconds = time.perf_counter() - t0
        entry.stdout_tail = _tail(out.copy.getvalue())
        entry.stderr_tail = _tail(err.copy.getvalue())
    if entry.exit_status == 0:
        entry.status = "ok"
    elif not entry.error:
        lines = [ln for ln in entry.stderr_tail.splitlines() if "error" in ln.lower()]
        why = lines[-1].split("error:", 1)[-1].strip() if lines else ""
        entry.error = f"exit status {entry.exit_status}" + (f": {why}" if why else "")
    return entry


def run_all(out: str | Path, *, quick: bool = False, data_home: str | Path | None = None, seed: int = 0,
            repeats: int | None = None, show_progress: bool = True,
            experiments: Sequence[str] | None = None, jobs: int | None = None) -> AllResult:
    """Run every paper's reproduction into ``out/NAME/`` and write ``out/index.html``.

    Each experiment runs as ``dpspectral reproduce NAME --out OUT/NAME`` (in this process, through
    :func:`dpspectral_reproduce.papers.main`, so it takes exactly the flags of the single-paper command). One
    that
    fails -- an exception or a non-zero exit status -- is recorded and the next one runs.

    Parameters
    ----------
    out : str or Path
        Output folder (created). Existing experiment folders in it are written over.
    quick : bool, default=False
        ``--quick`` for every experiment.
    data_home : str or Path, optional
        ``--data`` for the experiments that read data sets (default: ``$DPSPECTRAL_DATA``, else
        ``~/dpspectral_data``, as each one finds it).
    seed : int, default=0
    repeats : int, optional
        ``--repeats`` for every experiment (default: each one's own).
    show_progress : bool, default=True
        Progress bars of the experiments (the one line per experiment is always printed).
    experiments : sequence of str, optional
        A subset of :data:`EXPERIMENTS`, run in the order given (default: all of them).
    jobs : int, optional
        ``--jobs`` (worker processes) for the experiments that take it (chen2025).

    Returns
    -------
    AllResult
        The entries, the path of ``index.html`` and the total wall time. The runs are also recorded
        in ``out/reproduce_all.json``.
    """
    names = list(EXPERIMENTS if experiments is None else experiments)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown or not names:
        raise ValueError(f"The 'experiments' parameter of run_all must be a non-empty subset of "
                         f"{list(EXPERIMENTS)}. Got {list(names)} instead.")
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise ValueError(f"--out {str(root)!r} exists and is not a folder.")
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    entries: list[ExperimentEntry] = []
    try:
        for i, name in enumerate(names, 1):
            argv = _argv(name, root / name, quick=quick, data_home=data_home, seed=seed, repeats=repeats,
                         show_progress=show_progress, jobs=jobs)
            print(f"[{i}/{len(names)}] {name}: dpspectral {' '.join(argv)}", flush=True)
            entry = _run_one(name, argv)
            entries.append(entry)
            if entry.status == "ok":
                print(f"[{i}/{len(names)}] {name} ... done in {entry.seconds:.1f} s", flush=True)
            else:
                print(f"[{i}/{len(names)}] {name} ... FAILED in {entry.seconds:.1f} s ({entry.error})",
                      flush=True)
    finally:  # an interrupt still leaves an index of what ran
        done = {e.name for e in entries}
        entries += [ExperimentEntry(name=n, folder=n, status="not run", error="interrupted before it ran")
                    for n in names if n not in done]
        record = {"command": "dpspectral reproduce all", "quick": quick, "seed": seed, "repeats": repeats,
                  "data_dir": None if data_home is None else str(data_home),
                  "seconds": time.perf_counter() - t0, "experiments": [asdict(e) for e in entries]}
        (root / RUNS_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        index = write_index(root, entries, title_note="quick runs" if quick else "full runs")
    return AllResult(root=root, entries=entries, index=index, seconds=time.perf_counter() - t0)


# ----------------------------------------------------------------------------------------------
# finding results
# ----------------------------------------------------------------------------------------------


def _experiment_of(folder_name: str) -> str | None:
    """The experiment a folder belongs to: the longest experiment name that starts the folder's name."""
    hits = [e for e in EXPERIMENTS if folder_name == e or folder_name.startswith(e)]
    return max(hits, key=len) if hits else None


def discover(root: str | Path) -> list[ExperimentEntry]:
    """The experiment folders under ``root``, without running anything.

    A sub-folder belongs to the experiment whose name starts its own (``shang2021-n6000`` ->
    ``shang2021``); other sub-folders that hold a ``report.md`` are indexed under their own name.
    Status and wall time come from ``root/reproduce_all.json`` when :func:`run_all` wrote one;
    otherwise a folder's status is ``"indexed"``, and an experiment without a folder is ``"missing"``.

    Parameters
    ----------
    root : str or Path

    Returns
    -------
    list of ExperimentEntry
        In the order of :data:`EXPERIMENTS`, then other folders by name.
    """
    root = Path(root)
    recorded: dict[str, dict[str, Any]] = {}
    runs_file = root / RUNS_FILE
    if runs_file.is_file():
        try:
            recorded = {str(e["folder"]): e for e in json.loads(runs_file.read_text("utf-8"))["experiments"]}
        except (ValueError, KeyError, TypeError):
            recorded = {}
    found: list[tuple[int, str, ExperimentEntry]] = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        name = _experiment_of(sub.name)
        if name is None and not (sub / "report.md").is_file():
            continue
        rank = EXPERIMENTS.index(name) if name is not None else len(EXPERIMENTS)
        rec = recorded.get(sub.name)
        if rec is not None:
            known = set(ExperimentEntry.__dataclass_fields__)
            entry = ExperimentEntry(**{k: v for k, v in rec.items() if k in known})
        else:
            entry = ExperimentEntry(name=name or sub.name, folder=sub.name, status="indexed")
        found.append((rank, sub.name, entry))
    entries = [e for _, _, e in sorted(found, key=lambda t: (t[0], t[1]))]
    present = {e.name for e in entries}
    entries += [ExperimentEntry(name=n, folder=n, status="missing", error="no results folder")
                for n in EXPERIMENTS if n not in present]
    return entries


def build_index(root: str | Path) -> Path:
    """Write ``root/index.html`` over the experiment folders already under ``root`` (nothing is run).

    Parameters
    ----------
    root : str or Path
        A folder written by :func:`run_all`, or one holding experiment folders (e.g.
        ``docs/reproductions``).

    Returns
    -------
    Path
        The index written.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"--out {str(root)!r} is not a folder: there is nothing to index.")
    note = "indexed from existing result folders; nothing was re-run"
    if (root / RUNS_FILE).is_file():
        try:
            quick = json.loads((root / RUNS_FILE).read_text("utf-8")).get("quick")
            note = "quick runs" if quick else "full runs"
        except (ValueError, AttributeError):
            pass
    return write_index(root, discover(root), title_note=note)


# ----------------------------------------------------------------------------------------------
# certification
# ----------------------------------------------------------------------------------------------

_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _is_private(row: dict[str, str]) -> bool:
    """False for a non-private reference run: calibration "none", or a method named "... (non-private)".

    A private method with a non-private part (``"DPRF (non-private init)"``) stays counted.
    """
    method = (row.get("method") or row.get("label") or "").strip().lower()
    if (row.get("calibration") or "").strip().lower() == "none":
        return False
    return re.search(r"non-private\)?$", method) is None


def _calibration(row: dict[str, str]) -> str:
    """The row's ``calibration``, else the one its method's name ends with (``"DP-SPCA (paper)"``)."""
    if row.get("calibration"):
        return row["calibration"]
    match = re.search(r"\((tight|paper)\)\s*$", row.get("method") or "")
    return match.group(1) if match else ""


def certification(folder: str | Path) -> Certification:
    """Count the private runs of an experiment folder certified at their requested epsilon.

    Reads the ``certified`` column of every ``*runs.csv`` in the folder that has one, else of
    ``summary.csv``. Rows whose ``certified`` cell is empty (not applicable) and non-private rows
    (``method`` ending in "non-private" or "non-private)", or ``calibration`` "none") are left out;
    the rest are
    counted per ``calibration`` (read from the method's name, e.g. ``"DP-SPCA (paper)"``, when there is
    no such column; ``"paper"`` rows run the paper's own noise formula, which the
    accountant need not certify).

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    Certification
    """
    folder = Path(folder)
    if not folder.is_dir():
        return Certification("n/a")
    candidates = sorted(folder.glob("*runs.csv"))
    files = [p for p in candidates if "certified" in _csv_header(p)]
    if not files and "certified" in _csv_header(folder / "summary.csv"):
        files = [folder / "summary.csv"]
    if not files:
        return Certification("n/a")
    counts: dict[str, list[int]] = {}
    for path in files:
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                value = (row.get("certified") or "").strip().lower()
                if value not in _TRUE | _FALSE or not _is_private(row):
                    continue
                c = counts.setdefault(_calibration(row), [0, 0])
                c[0] += value in _TRUE
                c[1] += 1
    source = ", ".join(p.name for p in files)
    groups = tuple((cal, ok, n) for cal, (ok, n) in counts.items())
    if not groups:
        return Certification("n/a", (), source)
    short = [cal for cal, ok, n in groups if ok < n]
    if not short:
        return Certification("all", groups, source)
    headline = "some not (paper's noise only)" if short == ["paper"] else "some not"
    return Certification(headline, groups, source)


def _csv_header(path: Path) -> list[str]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh), [])


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 1.5em 4em; line-height: 1.45; color: #1d1d1f; }
h1 { margin-top: 1em; } h2 { margin-top: 2.5em; border-bottom: 2px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: .85em; margin: .6em 0; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
.scroll { overflow-x: auto; max-width: 100%; }
.csv { max-height: 32em; overflow: auto; }
img { max-width: 100%; height: auto; }
figure { margin: 1em 0; } figcaption { font-size: .85em; color: #555; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .8em; }
code { background: #f2f2f2; padding: 0 .2em; }
.ok { color: #176f2c; font-weight: 600; } .failed { color: #b00020; font-weight: 600; }
.muted { color: #666; font-size: .9em; }
.error { border-left: 4px solid #b00020; padding: .3em .8em; background: #fff4f4; }
.report { border-left: 3px solid #e2e2e2; padding-left: 1em; }
"""

_STATUS_TEXT = {"ok": "ok", "failed": "failed", "not run": "not run", "indexed": "ok (existing results)",
                "missing": "missing"}


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _href(folder: str, name: str = "") -> str:
    """A relative URL for ``folder/name``, escaped for an attribute."""
    path = folder + ("/" + name if name else "")
    return _esc(urllib.parse.quote(path))


def _anchor(folder: str) -> str:
    return "x-" + re.sub(r"[^A-Za-z0-9_-]", "-", folder)


def _report_html(folder: str, text: str) -> tuple[str, str, set[str]]:
    """Render a report.md: (its first level-1 heading, the HTML, the local files it shows as images).

    Raw HTML in the Markdown is escaped, not passed through; relative links and images are rewritten to
    point into ``folder``; headings move down one level (the report's title becomes the section's).
    """
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    title, shown, keep = "", set[str](), []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not title and tok.type == "heading_open" and tok.tag == "h1" and i + 2 < len(tokens):
            title = tokens[i + 1].content
            i += 3
            continue
        if tok.type in ("heading_open", "heading_close"):
            tok.tag = f"h{min(int(tok.tag[1]) + 1, 6)}"
        for child in tok.children or ():
            attr = "src" if child.type == "image" else "href" if child.type == "link_open" else None
            if attr is None:
                continue
            url = str(child.attrGet(attr) or "")
            parts = urllib.parse.urlsplit(url)
            if url and not parts.scheme and not parts.netloc and not url.startswith(("#", "/")):
                local = urllib.parse.unquote(parts.path)
                if child.type == "image":
                    shown.add(local)
                child.attrSet(attr, f"{urllib.parse.quote(folder)}/{url}")
        keep.append(tok)
        i += 1
    body = md.renderer.render(keep, md.options, {})
    body = body.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")
    return title, body, shown


def _short_title(title: str) -> str:
    """A report's title without the words saying it is a reproduction."""
    title = re.sub(r"^\s*reproduction\s*:\s*", "", title, flags=re.IGNORECASE)
    return re.sub(r"\s*[—–-]+\s*reproduction\s*$", "", title, flags=re.IGNORECASE).strip()


def _fmt_cell(value: str) -> str:
    try:
        f = float(value)
    except ValueError:
        return value
    if re.fullmatch(r"[+-]?\d+", value.strip()) or not any(c in value for c in ".eE"):
        return value
    return f"{f:.6g}"


def _csv_html(folder: Path, rel: str, path: Path) -> str:
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        rows: list[list[str]] = []
        total = 0
        for row in reader:
            total += 1
            if len(rows) < CSV_PREVIEW_ROWS:
                rows.append(row)
    shown = f"all {total:,} rows" if total <= CSV_PREVIEW_ROWS else f"the first {len(rows)} of {total:,} rows"
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{_esc(_fmt_cell(c))}</td>" for c in row) + "</tr>"
                     for row in rows)
    return (f'<details class="csvfile"><summary><a href="{_href(rel, path.name)}">{_esc(path.name)}</a> '
            f'<span class="muted">{len(header)} columns, {shown}</span></summary>\n'
            f'<div class="csv"><table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>'
            f"</details>")


def _figure_html(rel: str, name: str) -> str:
    return (f'<figure><img src="{_href(rel, name)}" alt="{_esc(name)}">'
            f"<figcaption>{_esc(name)}</figcaption></figure>")


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _section(root: Path, entry: ExperimentEntry, cert: Certification) -> tuple[str, str]:
    """(the section's HTML, the paper's title)."""
    folder = root / entry.folder
    parts: list[str] = []
    title, report, shown = "", "", set[str]()
    if (folder / "report.md").is_file():
        title, report, shown = _report_html(entry.folder, (folder / "report.md").read_text("utf-8",
                                                                                             errors="replace"))
    title = _short_title(title) or entry.name
    cls = "ok" if entry.status in ("ok", "indexed") else "failed"
    meta = [f'experiment <code>{_esc(entry.name)}</code>',
            (f'folder <a href="{_href(entry.folder)}/">{_esc(entry.folder)}/</a>' if folder.is_dir()
             else f"folder {_esc(entry.folder)}/ (absent)"),
            f'status <span class="{cls}">{_esc(_STATUS_TEXT.get(entry.status, entry.status))}</span>']
    if entry.seconds is not None:
        meta.append(f"wall time {_esc(_fmt_seconds(entry.seconds))}")
    meta.append(f"certified: {_esc(cert.headline)} ({_esc(cert.detail)})")
    parts.append(f'<h2 id="{_anchor(entry.folder)}">{_esc(title)}</h2>')
    parts.append(f'<p class="muted">{" · ".join(meta)}</p>')
    if entry.command:
        parts.append(f"<p class=\"muted\">command: <code>{_esc(entry.command)}</code></p>")
    if entry.status in ("failed", "not run", "missing"):
        parts.append(f'<div class="error"><p><strong>{_esc(entry.status)}</strong>: {_esc(entry.error)}</p>')
        for label, tail in (("stdout", entry.stdout_tail), ("stderr", entry.stderr_tail)):
            if tail:
                parts.append(f"<p>last lines of {label}:</p><pre>{_esc(tail)}</pre>")
        parts.append("</div>")
    if not folder.is_dir():
        parts.append("<p>No results folder.</p>")
        return "\n".join(parts), title
    if report:
        parts.append(f'<div class="report">\n{report}</div>')
    else:
        parts.append("<p>No <code>report.md</code> in this folder.</p>")
    files = sorted(p for p in folder.iterdir() if p.is_file())
    figures = [p.name for p in files if p.suffix.lower() in _IMAGE_SUFFIXES and p.name not in shown]
    if figures:
        parts.append("<h3>Other figures</h3>" if shown else "<h3>Figures</h3>")
        parts += [_figure_html(entry.folder, name) for name in figures]
    csvs = [p for p in files if p.suffix.lower() == ".csv"]
    if csvs:
        parts.append("<h3>Tables (CSV)</h3>")
        parts += [_csv_html(folder, entry.folder, p) for p in csvs]
    others = [p.name for p in files
              if p.suffix.lower() not in (*_IMAGE_SUFFIXES, ".csv") and p.name != "report.md"]
    links = [f'<a href="{_href(entry.folder, "report.md")}">report.md</a>'] if report else []
    links += [f'<a href="{_href(entry.folder, name)}">{_esc(name)}</a>' for name in others]
    if links:
        parts.append(f"<p>Other files: {', '.join(links)}</p>")
    return "\n".join(parts), title


def write_index(root: str | Path, experiments: Iterable[ExperimentEntry], *, title_note: str = "") -> Path:
    """Write ``root/index.html`` for the given experiments (folders relative to ``root``).

    The page is one self-contained HTML file (inline CSS, no script, no network) whose figures and
    links are relative paths into the experiment folders, so it opens from the file system.

    Parameters
    ----------
    root : str or Path
        The folder of the index; ``entry.folder`` of every experiment is relative to it.
    experiments : iterable of ExperimentEntry
    title_note : str, optional
        Shown after the page's title (e.g. "quick runs").

    Returns
    -------
    Path
        ``root / "index.html"``.
    """
    from dpspectral import __version__

    root = Path(root)
    entries = list(experiments)
    certs = [certification(root / e.folder) for e in entries]
    sections, titles = [], []
    for entry, cert in zip(entries, certs, strict=True):
        body, title = _section(root, entry, cert)
        sections.append(body)
        titles.append(title)
    rows = []
    for entry, cert, title in zip(entries, certs, titles, strict=True):
        cls = "ok" if entry.status in ("ok", "indexed") else "failed"
        status = _STATUS_TEXT.get(entry.status, entry.status)
        if entry.failed and entry.exit_status is not None:
            status += f" (exit status {entry.exit_status})"
        rows.append(
            f'<tr><td><a href="#{_anchor(entry.folder)}">{_esc(entry.folder)}</a></td><td>{_esc(title)}</td>'
            f'<td class="{cls}">{_esc(status)}</td><td>{_esc(_fmt_seconds(entry.seconds))}</td>'
            f"<td>{_esc(cert.headline)}</td><td>{_esc(cert.detail)}</td></tr>")
    n_ok = sum(e.status in ("ok", "indexed") for e in entries)
    n_bad = [e.folder for e in entries if e.status not in ("ok", "indexed")]
    heading = "Reproductions" + (f" ({title_note})" if title_note else "")
    summary = f"{n_ok} of {len(entries)} experiments with results"
    if n_bad:
        summary += f"; without: {', '.join(n_bad)}"
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(heading)} — dpspectral</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{_esc(heading)}</h1>
<p>Every paper's reproduction by <code>dpspectral</code> {_esc(__version__)}
(<code>dpspectral reproduce all</code>): {_esc(summary)}. Each section holds the experiment's
report (its tables put the paper's numbers beside ours), its figures and its CSV files.</p>
<div class="scroll"><table id="summary">
<thead><tr><th>experiment</th><th>paper</th><th>status</th><th>wall time</th><th>certified</th>
<th>private runs certified at the requested ε</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></div>
<p class="muted"><em>certified</em>: whether the privacy accountant certifies each private run at the
ε it asked for, counted per calibration from the <code>certified</code> column of the runs (non-private
reference runs left out). <em>tight</em> is the library's calibrated noise; <em>paper</em> runs the
paper's published noise formula as is, which the accountant need not certify (the reports say by how
much).</p>
{chr(10).join(sections)}
</body>
</html>
"""
    path = root / INDEX_FILE
    path.write_text(page, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------


def cli_run(args: argparse.Namespace, out: str | Path) -> int:
    """``dpspectral reproduce all``: run every paper (or only index, with ``--index-only``).

    Returns 0 when every experiment succeeded, 1 otherwise (the failed ones are named on stderr).
    """
    used = [flag for attr, flag in _PER_PAPER_FLAGS if getattr(args, attr, None) is not None]
    if used:
        raise CLIError(f"{', '.join(used)}: not used by `reproduce all`, which runs each paper with its own "
                       "grid; run `dpspectral reproduce NAME` to change them.")
    root = Path(out)
    if getattr(args, "index_only", False):
        extra = [flag for attr, flag in (("quick", "--quick"), ("repeats", "--repeats"), ("data", "--data"),
                                         ("jobs", "--jobs"))
                 if getattr(args, attr, None) not in (None, False)]
        if extra:
            raise CLIError(f"{', '.join(extra)}: --index-only runs nothing; it indexes the folders in --out.")
        if not root.is_dir():
            raise CLIError(f"--out {str(root)!r} is not a folder: there is nothing to index.")
        index = build_index(root)
        entries = discover(root)
        print(f"dpspectral reproduce all --index-only: indexed {root}")
        for e in entries:
            print(f"  {e.folder:24s} {_STATUS_TEXT.get(e.status, e.status)}")
        print(f"wrote {index}")
        return 0
    if root.exists() and not root.is_dir():
        raise CLIError(f"--out {str(root)!r} exists and is not a folder.")
    if not getattr(args, "quick", False):
        print(FULL_RUN_WARNING, file=sys.stderr, flush=True)
    result = run_all(root, quick=bool(getattr(args, "quick", False)), data_home=getattr(args, "data", None),
                     seed=int(getattr(args, "seed", 0) or 0), repeats=getattr(args, "repeats", None),
                     show_progress=not getattr(args, "no_progress", False), jobs=getattr(args, "jobs", None))
    print(f"dpspectral reproduce all: {len(result.entries)} experiments in {result.seconds:.1f} s")
    for e in result.entries:
        cert = certification(root / e.folder)
        print(f"  {e.name:14s} {e.status:8s} {_fmt_seconds(e.seconds):>9s}  certified: {cert.headline}"
              + (f"  ({e.error})" if e.error else ""))
    print(f"wrote {result.index}")
    if result.failed or not result.ok:
        bad = [f"{e.name} ({e.error})" for e in result.entries if e.status != "ok"]
        print(f"dpspectral reproduce all: failed: {'; '.join(bad)}", file=sys.stderr)
        return 1
    return 0
