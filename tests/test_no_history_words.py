"""What users read says what is and why, never which tracker issue changed it.

The package's sources (docstrings, comments, messages), the documentation pages (Markdown and HTML,
the generated reproduction reports included), the gallery's examples, the benchmark scripts and the
maintainers' tools (their docstrings, help, and the headings and labels they write), the README and the
changelog must not cite issue numbers ("issue 16", "issues 15, 23"): a reader has no tracker to look them
up in.
History belongs in CHANGELOG.md, in users' words. Data files (CSV, JSON run outputs) are not pages and
are not scanned.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\bissues?[ -][0-9]+", re.IGNORECASE)
SOURCE_SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt", ".html", ".toml", ".cfg", ".ini"}
PAGE_SUFFIXES = {".md", ".html", ".htm"}
SKIPPED_DIRS = {"__pycache__", "_build"}  # _build: the site built from the pages scanned here


def _files(folder: Path, suffixes: set[str]) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and p.suffix.lower() in suffixes
                  and not any(part in SKIPPED_DIRS or part.endswith(".egg-info")
                              for part in p.relative_to(folder).parts))


def _scanned() -> list[Path]:
    return [*_files(ROOT / "src", SOURCE_SUFFIXES), *_files(ROOT / "docs", PAGE_SUFFIXES),
            *_files(ROOT / "examples", SOURCE_SUFFIXES), *_files(ROOT / "benchmarks", SOURCE_SUFFIXES),
            *_files(ROOT / "tools", SOURCE_SUFFIXES), ROOT / "README.md", ROOT / "CHANGELOG.md"]


def test_the_scan_covers_sources_pages_readme_and_changelog() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in _scanned()}
    assert "README.md" in files and "CHANGELOG.md" in files
    assert "src/dpspectral/_registry.py" in files
    assert "docs/benchmarks.md" in files and "docs/reproductions/index.html" in files
    assert "examples/README.txt" in files  # the gallery's pages
    assert "benchmarks/bench_utility.py" in files and "benchmarks/peers/bench.py" in files
    assert "tools/mechanism_mutations.py" in files
    assert not any(f.endswith((".csv", ".json")) for f in files)


def test_pattern_catches_issue_numbers() -> None:
    for text in ("(issue 17; no paper)", "Issue 2 — covariance", "issues 15, 23, 25", "ISSUE 16's fix",
                 "the pre-issue-16 default"):
        assert ISSUE.search(text), text
    for text in ("no issue here", "an issue: 16 rows", "tissue 3"):
        assert not ISSUE.search(text), text


def test_no_issue_numbers_in_what_users_read() -> None:
    hits = []
    for path in _scanned():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ISSUE.search(line):
                hits.append(f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()[:120]}")
    assert not hits, "issue numbers in what users read (say what is and why instead):\n" + "\n".join(hits)
