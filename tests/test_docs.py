"""The README stays true: its method table is the registry's, its Python quick-start runs."""

from __future__ import annotations

import re
from pathlib import Path

from dpspectral._registry import methods_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_readme_method_table_matches_registry():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- methods-table:start -->\n(.*?)\n<!-- methods-table:end -->", text, re.S)
    assert m, "README lost its generated methods table"
    assert m.group(1).strip() == methods_markdown().strip()


def test_readme_choice_table_matches_registry():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- methods-choice:start -->\n(.*?)\n<!-- methods-choice:end -->", text, re.S)
    assert m, "README lost its generated table for choosing a method"
    assert m.group(1).strip() == methods_markdown(detailed=True).strip()


_NUMBER = r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?"  # "249." too: NumPy prints whole floats so


def _matches_stated_output(stated: str, printed: str) -> bool:
    """``printed`` matches ``stated``: the same text, "..." for any text, numbers to the digits shown.

    A number stated with ``k`` decimals matches a printed number within one unit of its last digit
    (e.g. ``0.12`` matches ``0.11508``), so a README rounded for reading still pins the value; an integer
    must be equal; ``~X`` (a value that varies from run to run) matches within 5 % of X.
    """
    def norm(text: str) -> str:  # NumPy pads printed arrays: "[ 1.5 12. ]" reads as "[1.5 12.]"
        return re.sub(r"\s+\]", "]", re.sub(r"\[\s+", "[", " ".join(text.split())))

    stated, printed = norm(stated), norm(printed)
    pattern, numbers = "", []
    for piece in re.split(rf"(\.\.\.|~?{_NUMBER})", stated):
        if piece == "...":
            pattern += ".*?"
        elif piece and re.fullmatch(f"~?{_NUMBER}", piece):
            pattern += f"({_NUMBER})"
            numbers.append(piece)
        else:
            pattern += re.escape(piece)
    m = re.fullmatch(pattern, printed)
    if not m:
        return False
    for want, got in zip(numbers, m.groups(), strict=True):
        if want.startswith("~"):
            if abs(float(got) - float(want[1:])) > 0.05 * abs(float(want[1:])):
                return False
            continue
        mantissa = want.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        scale = 10.0 ** int(want.lower().split("e")[1]) if "e" in want.lower() else 1.0
        tolerance = 10.0**-decimals * scale * (1 + 1e-9) if decimals else 0.0
        if abs(float(got) - float(want)) > tolerance:
            return False
    return True


def test_stated_output_matcher():
    assert _matches_stated_output("[0.72 0.12 0.12]", "[0.72151944 0.12224277 0.11508126]")
    assert not _matches_stated_output("[0.72 0.12 0.12]", "[0.72151944 0.12224277 0.14508126]")
    assert _matches_stated_output("a: (1, 1e-06)-DP (certified; ...)", "a: (1, 1e-06)-DP (certified; x, y)")
    assert not _matches_stated_output("(1, 1e-06)", "(1, 1e-05)")
    assert not _matches_stated_output("ParallelDpEvent 1342", "ParallelDpEvent 1343")
    assert not _matches_stated_output("True", "False")
    assert _matches_stated_output("priv2 ~0.48", "priv2 0.4905")
    assert not _matches_stated_output("priv2 ~0.48", "priv2 0.52")
    assert _matches_stated_output("[~266 ~242]", "[266.36 241.6 ]")
    assert _matches_stated_output("[1.5 12.]", "[ 1.5 12. ]")
    assert _matches_stated_output("[~249 ~242]", "[249.   241.66]")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _stated_outputs(block: str) -> list[str]:
    """The output stated for each print() of a block: ``# -> TEXT`` on its line or the next line.

    Text after " — " is commentary, not output.
    """
    lines = block.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not re.match(r"\s*print\(", line):
            continue
        here = line.split("# -> ", 1)
        if len(here) == 2:
            stated = here[1]
        else:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            assert nxt.lstrip().startswith("# -> "), f"README print() without a stated output: {line!r}"
            stated = nxt.split("# -> ", 1)[1]
        out.append(stated.split(" — ")[0].strip())
    return out


def test_readme_python_examples_run(tmp_path, monkeypatch):
    # Every print() in the README's Python blocks states its output (`# -> ...`); the test runs the
    # blocks and checks each printed line against it, so a README that says (1, 1e-06)-DP or
    # "ParallelDpEvent 1342" is held to it. The examples are seeded, so the values are fixed, except
    # those marked ~ (the low-rank sketches' seeds are public OS entropy): the relative error stated as
    # ~0.48 measured mean 0.482, sd 0.0047 over 40 runs, so its 5 % window is 4.6 sd away (false-failure
    # rate below 1e-5 for a normal spread); the turnstile's singular values vary by about 0.1 %.
    monkeypatch.chdir(tmp_path)  # the examples write files (a turnstile state)
    blocks = _python_blocks()
    assert len(blocks) >= 5
    namespace: dict = {}
    printed: list[str] = []

    def record(*args, **kwargs):
        printed.append(" ".join(str(a) for a in args))

    namespace["print"] = record
    stated: list[str] = []
    for block in blocks:
        stated += _stated_outputs(block)
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert len(printed) == len(stated) >= 8
    for want, got in zip(stated, printed, strict=True):
        assert _matches_stated_output(want, got), f"README states {want!r}, the code printed {got!r}"
    # what the prose around the examples says
    assert namespace["Z"].shape == (1797, 10)  # fit_transform of the digits, k = 10
    assert namespace["pca"].privacy_.certified
    assert namespace["res"].components.shape == (64, 5)
    assert namespace["lr"].privacy_.certified and namespace["lr"].U_.shape == (500, 5)
    assert (tmp_path / "state.npz").exists()
    spent_eps, spent_delta = namespace["ledger"].spent()
    assert spent_eps <= 1.0 and spent_delta == 1e-5  # one (1, 1e-6) fit, read at the ledger's delta


def test_readme_cli_quick_start_writes_what_it_says(tmp_path, monkeypatch):
    # the README's first CSV (the digits), then its `fit` and `transform` lines, as written
    import shlex
    import subprocess
    import sys

    import numpy as np

    from dpspectral import cli

    monkeypatch.chdir(tmp_path)
    text = (ROOT / "README.md").read_text()
    section = text.split("## CLI quick-start", 1)[1].split("\n## ", 1)[0]
    make_csv = re.search(r"^python -c (.*)$", section, re.M)
    assert make_csv, "the README no longer says where a first data.csv comes from"
    subprocess.run([sys.executable, "-c", shlex.split(make_csv.group(1))[0]], check=True)
    for verb in ("fit", "transform"):
        line = re.search(rf"^dpspectral {verb} (.*?)(?:\s+#.*)?$", section, re.M)
        assert line, verb
        assert cli.main([verb, *shlex.split(line.group(1))]) == 0
    for name in ("components.npy", "model.json", "privacy.json"):
        assert (tmp_path / "model" / name).is_file(), name
    assert np.load(tmp_path / "model" / "components.npy").shape == (10, 64)  # k x d
    assert np.load(tmp_path / "projected.npy").shape == (1797, 10)


def test_readme_dependency_list_names_every_runtime_dependency():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    text = " ".join((ROOT / "README.md").read_text().split())
    sentence = text.split("Runtime dependencies:", 1)[1].split("Extras:", 1)[0].lower()
    spelled = {"numpy": "numpy", "scipy": "scipy", "scikit-learn": "scikit-learn",
               "dp-accounting": "dp-accounting"}
    for dep in deps:
        name = re.split(r"[<>=!~\[ ]", dep, maxsplit=1)[0].lower()
        assert spelled.get(name, name) in sentence, f"README's dependency list omits {name}"


def test_readme_says_what_make_test_runs():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("make test "))
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    if "not slow" in addopts and not re.search(r"pytest\b.*\s-m\s", recipe):  # no marker option after pytest
        assert "except the tests marked slow" in line and "whole" not in line
        assert "\ntest-slow:" in makefile and "make test-slow" in readme
    else:
        assert "whole test suite" in line


def test_methods_command_uses_the_readme_words(capsys):
    # `dpspectral methods` must call optimal_space_lrf and sr what the README calls them (non-private
    # references, not "known not to be differentially private"): both use the registry's words
    import json

    from dpspectral import cli

    assert cli.main(["methods", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    table = (ROOT / "README.md").read_text()
    for name, row in rows.items():
        cell = re.search(rf"^\| `{name}` \|(?:[^|]*\|){{3}} ([^|]*) \|", table, re.M)
        assert cell, name
        assert row["privacy"].lower() == cell.group(1).replace("**", "").strip().lower(), name
    assert rows["optimal_space_lrf"]["privacy"] == "non-private reference"
    assert rows["sr"]["privacy"] == "non-private reference"
    assert cli.main(["methods"]) == 0
    printed = capsys.readouterr().out
    known_not = [ln for ln in printed.splitlines() if "known not to be" in ln]
    assert known_not and all("UNCERTIFIED" in ln for ln in known_not)
    assert "non-private reference: makes no privacy claim" in printed


def test_readme_documentation_links_exist():
    text = (ROOT / "README.md").read_text()
    docs = text.split("## Documentation", 1)[1]
    assert "docs/privacy-caveats.md" in docs
    for path in re.findall(r"`(docs/[\w./-]+)`", docs):
        assert (ROOT / path).exists(), path


def test_architecture_doc_names_existing_modules():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for path in re.findall(r"`(src/dpspectral(?:_reproduce)?/[\w/]+\.py)`", text):
        assert (ROOT / path).exists(), path
