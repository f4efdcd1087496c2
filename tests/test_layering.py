"""The library stands on its own: layers import one way, CLI -> reproductions -> library.

* ``import dpspectral`` loads neither matplotlib, markdown-it-py nor :mod:`dpspectral_reproduce`;
* no module of ``src/dpspectral`` imports :mod:`dpspectral_reproduce`, except ``cli.py`` inside its
  functions (lazily, when it builds or runs ``demo`` and ``reproduce``);
* no module of ``src/dpspectral_reproduce`` imports :mod:`dpspectral.cli`;
* the modules the CLI imports to build its parsers load no plotting library;
* the modules of ``src/dpspectral`` import one another without a cycle, imports inside functions
  included (``docs/architecture.md``, "Layers").

Each check has a negative control on a synthetic module, so a walker that found nothing would fail.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("matplotlib", "markdown_it", "dpspectral_reproduce")


def _loaded_after(code: str) -> list[str]:
    """Top-level packages of ``HEAVY`` in sys.modules after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    return [m for m in json.loads(out.strip().splitlines()[-1]) if m in HEAVY]


def test_import_dpspectral_loads_no_plotting_and_no_reproductions() -> None:
    assert _loaded_after("import dpspectral") == []
    # also every public submodule the estimators and the registry pull in
    modules = "dpspectral, dpspectral._estimators, dpspectral._registry, dpspectral.datasets"
    assert _loaded_after(f"import {modules}") == []


def test_cli_parser_loads_no_plotting() -> None:
    """Building every parser (``dpspectral --help``) reads only the argparse side of the reproductions."""
    loaded = _loaded_after("from dpspectral.cli import build_parser\nbuild_parser()")
    assert "matplotlib" not in loaded and "markdown_it" not in loaded


def test_the_probe_sees_a_heavy_import() -> None:
    """Negative control: the probe reports a plotting library when one is loaded."""
    assert "matplotlib" in _loaded_after("import matplotlib")


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """Every imported module of ``tree`` (absolute names) with whether the import is inside a function."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, inside))
                found.extend((f"{child.module}.{alias.name}", inside) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def _violations(root: Path, package: str) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        for name, in_function in _imports(ast.parse(path.read_text("utf-8"))):
            if package == "dpspectral" and name.split(".")[0] == "dpspectral_reproduce":
                if not (rel == "dpspectral/cli.py" and in_function):
                    bad.append(f"{rel} imports {name}" + ("" if in_function else " at module level"))
            if package == "dpspectral_reproduce" and name.split(".")[:2] == ["dpspectral", "cli"]:
                bad.append(f"{rel} imports {name}")
    return bad


def test_the_library_does_not_import_the_reproductions() -> None:
    assert _violations(SRC / "dpspectral", "dpspectral") == []


def test_the_reproductions_do_not_import_the_cli() -> None:
    assert _violations(SRC / "dpspectral_reproduce", "dpspectral_reproduce") == []
    # relative imports stay inside the package (no ``from .. import``)
    for path in (SRC / "dpspectral_reproduce").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, f"{path.name} climbs out of dpspectral_reproduce"


def test_the_walker_finds_forbidden_imports(tmp_path: Path) -> None:
    """Negative control: a module-level import of the reproductions, and one of the CLI, are reported."""
    lib = tmp_path / "dpspectral"
    lib.mkdir()
    (lib / "synthetic.py").write_text("def f():\n    from dpspectral_reproduce import demo\n")
    (lib / "cli.py").write_text("import dpspectral_reproduce.papers\n"
                                "def g():\n    from dpspectral_reproduce.commands import run_reproduce\n")
    assert _violations(lib, "dpspectral") == [
        "dpspectral/cli.py imports dpspectral_reproduce.papers at module level",
        "dpspectral/synthetic.py imports dpspectral_reproduce",
        "dpspectral/synthetic.py imports dpspectral_reproduce.demo",
    ]
    rep = tmp_path / "dpspectral_reproduce"
    rep.mkdir()
    (rep / "x.py").write_text("def h():\n    from dpspectral.cli import main\n")
    assert _violations(rep, "dpspectral_reproduce") == [
        "dpspectral_reproduce/x.py imports dpspectral.cli",
        "dpspectral_reproduce/x.py imports dpspectral.cli.main",
    ]


def _import_graph(root: Path) -> dict[str, set[str]]:
    """The modules of the package at ``root`` and the modules of it each one imports, every import
    counted (at module level or inside a function): ``tools/xflow.py``'s graph, whose layers it uses."""
    spec = importlib.util.spec_from_file_location("xflow", Path(__file__).resolve().parents[1] / "tools"
                                                  / "xflow.py")
    assert spec is not None and spec.loader is not None
    xflow = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("xflow", xflow)
    spec.loader.exec_module(xflow)
    return xflow.import_graph(root)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    """The library's modules form layers: no module imports, even lazily, one that imports it back."""
    graph = _import_graph(SRC / "dpspectral")
    assert len(graph) > 50 and graph["dpspectral._moments"]  # the walker saw the package
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    """Negative control: two modules that import each other (one of them inside a function, through a
    relative ``from . import``) are reported as one cycle; a chain of imports is not."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub.b import g\n")
    (pkg / "sub" / "b.py").write_text("def g():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("import pkg.a\nfrom pkg.sub import b\n")
    graph = _import_graph(pkg)
    assert graph["pkg.c"] == {"pkg.a", "pkg.sub.b"}
    assert _cycles(graph) == [["pkg.a", "pkg.sub.b"]]
    (pkg / "sub" / "b.py").write_text("def g():\n    return 1\n")
    assert _cycles(_import_graph(pkg)) == []


@pytest.mark.parametrize("command", ["demo", "reproduce"])
def test_a_missing_extra_is_a_one_line_error_naming_the_install(command: str, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from dpspectral.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    argv = ["demo", "--quick"] if command == "demo" else ["reproduce", "upadhyay2018", "--quick"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"dpspectral {command}: error:" in err and "pip install 'dpspectral[reproduce]'" in err
    assert "matplotlib" in err
