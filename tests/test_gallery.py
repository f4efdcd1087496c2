"""The executed examples of the documentation (``examples/plot_*.py``, rendered by sphinx-gallery).

Each example runs in its own subprocess in quick mode (``DPSPECTRAL_GALLERY_QUICK=1``, smaller data
and fewer repetitions) with the Agg backend, under a wrapper that counts the matplotlib figures left
open at the end: it must exit with status 0 and draw at least one figure. The subprocesses run two at
a time (this machine's cores), so the whole gallery takes about two minutes; deselect it with
``-m "not gallery"``. The examples must also use the public API only: they import from the packages
and the few public modules (never an implementation module), and every name they import is in its
module's ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.gallery

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
#: The public modules that are not packages; every package of dpspectral is public through its
#: ``__init__`` (its implementation modules are not).
PUBLIC_MODULES = {"dpspectral.datasets", "dpspectral.metrics", "dpspectral.model_selection",
                  "dpspectral.preprocessing"}
TIMEOUT_S = 240  # per example, in quick mode; they take 5-20 s each (most of it importing)

WRAPPER = """
import runpy, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
runpy.run_path(sys.argv[1], run_name="__main__")
print("GALLERY-FIGURES", len(plt.get_fignums()))
"""


def _run(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DPSPECTRAL_GALLERY_QUICK="1", MPLBACKEND="Agg")
    # Two examples run at once on two cores: one BLAS thread each (unless the caller chose otherwise);
    # more threads than cores make the small solves of the examples many times slower.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else src
    return subprocess.run([sys.executable, "-c", WRAPPER, str(path)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def gallery_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run every example once, two at a time, each in a fresh empty working directory."""
    def one(path: Path) -> tuple[str, subprocess.CompletedProcess[str]]:
        return path.name, _run(path, tmp_path_factory.mktemp(path.stem))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, EXAMPLES))


def test_there_are_at_least_ten_examples() -> None:
    assert len(EXAMPLES) >= 10, [p.name for p in EXAMPLES]
    assert (ROOT / "examples" / "README.txt").is_file()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_draws_a_figure(
    path: Path, gallery_runs: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    run = gallery_runs[path.name]
    assert run.returncode == 0, f"{path.name} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    counts = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("GALLERY-FIGURES")]
    assert counts, f"{path.name}: the wrapper did not finish:\n{run.stdout[-2000:]}"
    assert int(counts[-1]) >= 1, f"{path.name} drew no figure"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_has_a_gallery_header(path: Path) -> None:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{path.name} has no module docstring"
    lines = doc.splitlines()
    assert len(lines) >= 3 and lines[0].strip(), f"{path.name}: the docstring must start with a title"
    assert set(lines[1].strip()) == {"="} and len(lines[1].strip()) >= len(lines[0].strip()), (
        f"{path.name}: the title must be underlined with '=' at least as long as it")
    assert any(line.strip() for line in lines[2:]), f"{path.name}: a paragraph must follow the title"
    assert "# %%" in path.read_text(encoding="utf-8"), f"{path.name} has no '# %%' cell"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_uses_the_public_api_only(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        modules: list[tuple[str, list[str] | None]]
        if isinstance(node, ast.Import):
            modules = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [(node.module, [alias.name for alias in node.names])]
        else:
            continue
        for module, names in modules:
            if module.split(".")[0] not in ("dpspectral", "dpspectral_reproduce"):
                continue
            assert not any(part.startswith("_") for part in module.split(".")), (
                f"{path.name} imports the private module {module}")
            imported = importlib.import_module(module)
            assert hasattr(imported, "__path__") or module in PUBLIC_MODULES, (
                f"{path.name} imports {module}, an implementation module: import from its package")
            public = getattr(imported, "__all__", None)
            assert public is not None, f"{path.name} imports {module}, which declares no public API"
            for name in names or ():
                assert name in public, f"{path.name} imports {name} from {module}, not in its __all__"
