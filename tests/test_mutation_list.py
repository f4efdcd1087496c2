"""The mechanism mutation list stays applicable: every listed line occurs exactly once in its file.

``tools/mechanism_mutations.py`` applies each mutation to a copy of ``src/`` and runs its test file (about 15
minutes, ``make mutation-mechanisms``). A refactor that moves or rewrites a listed line makes that mutation
inapplicable without anyone noticing until the next full run; this check is instant.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mutations() -> list:
    path = ROOT / "tools" / "mechanism_mutations.py"
    spec = importlib.util.spec_from_file_location("mechanism_mutations", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up in sys.modules
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module.MUTATIONS


def test_every_listed_line_occurs_exactly_once_and_its_test_file_exists() -> None:
    problems = []
    for m in _mutations():
        path = ROOT / "src" / "dpspectral" / m.file
        if not path.exists():
            problems.append(f"{m.name}: {m.file} does not exist")
            continue
        count = path.read_text("utf-8").count(m.old)
        if count != 1:
            problems.append(f"{m.name}: its line occurs {count} times in {m.file}")
        if m.old == m.new:
            problems.append(f"{m.name}: the mutation changes nothing")
        if not (ROOT / m.tests.split("::")[0]).exists():
            problems.append(f"{m.name}: {m.tests} does not exist")
    assert not problems, "\n".join(problems)
