"""The shape of the code: short functions, documented public functions.

* No function in ``src/`` has more than ``MAX_LINES`` lines of code (its docstring not counted) unless
  the first line of its body is a comment starting with ``# long:`` that says why it is clearer whole.
* Every public function or class of the library's public modules has a docstring.
Deterministic (reads the source with ``ast``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 80


def _functions():
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node, lines


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    start = node.lineno
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = body[0]
        assert doc.end_lineno is not None
        return (node.end_lineno or start) - start + 1 - (doc.end_lineno - doc.lineno + 1)
    return (node.end_lineno or start) - start + 1


def _has_reason(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
        after = first.end_lineno or first.lineno
    else:
        after = node.body[0].lineno - 1
    following = lines[after:after + 2]
    return any(line.strip().startswith("# long:") for line in following)


def test_no_long_function_without_a_stated_reason():
    long = [
        f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({_code_lines(node)} lines)"
        for path, node, lines in _functions()
        if _code_lines(node) > MAX_LINES and not _has_reason(node, lines)
    ]
    assert not long, "functions over 80 lines of code without a '# long:' reason:\n" + "\n".join(long)


PUBLIC_MODULES = ("dpspectral", "dpspectral.pca", "dpspectral.lowrank", "dpspectral.gep",
                  "dpspectral.local", "dpspectral.distributed", "dpspectral.model_selection",
                  "dpspectral.privacy", "dpspectral.metrics", "dpspectral.datasets",
                  "dpspectral._constraints", "dpspectral.privacy._pipeline", "dpspectral.privacy._noise")


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_public_callables_have_docstrings(modname):
    mod = importlib.import_module(modname)
    missing = [name for name in getattr(mod, "__all__", ())
               if (inspect.isfunction(getattr(mod, name)) or inspect.isclass(getattr(mod, name)))
               and not inspect.getdoc(getattr(mod, name))]
    assert not missing, f"{modname}: public callables without a docstring: {missing}"


def test_every_mechanism_states_its_privacy():
    """Every registered private method's docstring has a Privacy section (relation, sensitivity, events)."""
    from dpspectral import methods

    missing = []
    for m in methods():
        if not m.private:
            continue
        fn = m.function
        doc = inspect.getdoc(fn) or ""
        inner = getattr(fn, "__wrapped__", None)
        if "Privacy" not in doc and inner is not None:
            doc = inspect.getdoc(inner) or ""
        if "Privacy" not in doc:
            missing.append(m.name)
    assert not missing, f"registered mechanisms without a Privacy section: {missing}"
