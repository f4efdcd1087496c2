"""The declared public API: a few public modules, their ``__all__``, the registry rule, moved paths.

Implementation modules are private (``_name.py``, scikit-learn's convention); users import from the
packages listed in ``PUBLIC_MODULES``. The old module paths keep working for one release through stand-ins
that warn (``dpspectral._moved``).
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import dpspectral

SRC = Path(__file__).resolve().parents[1] / "src" / "dpspectral"

PUBLIC_MODULES = (
    "dpspectral",
    "dpspectral.pca",
    "dpspectral.lowrank",
    "dpspectral.gep",
    "dpspectral.local",
    "dpspectral.distributed",
    "dpspectral.privacy",
    "dpspectral.preprocessing",
    "dpspectral.model_selection",
    "dpspectral.metrics",
    "dpspectral.datasets",
    "dpspectral.cli",
)


def _public_files() -> list[str]:
    files = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if any(p.startswith("_") and p != "__init__" for p in parts):
            continue
        files.append(".".join(p for p in parts if p != "__init__"))
    return files


def test_public_module_files_are_the_declared_ones() -> None:
    files = _public_files()
    assert sorted(files) == sorted(PUBLIC_MODULES)
    assert len(files) <= 15


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_declares_all_and_every_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    assert names, f"{name} has no __all__"
    assert len(set(names)) == len(names), f"{name}.__all__ repeats a name"
    for attr in names:
        obj = getattr(module, attr)
        home = getattr(obj, "__module__", None) or ""
        # a public name is defined in the library (not re-exported from a dependency)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert home.startswith("dpspectral"), f"{name}.{attr} comes from {home}"


def test_every_registry_method_is_exported_by_one_rule() -> None:
    """PCA and low-rank methods: their function at the top level and in their package; GEP methods:
    the ``method=`` values of :func:`dpspectral.private_fda`."""
    from dpspectral.gep import GEP_METHODS

    for method in dpspectral.methods():
        if method.task == "gep":
            assert method.name in GEP_METHODS or not method.private, method.name
            continue
        function = method.function
        assert function.__name__ in dpspectral.__all__, method.name
        assert getattr(dpspectral, function.__name__) is function
        package = importlib.import_module(function.__module__.rsplit(".", 1)[0])
        assert function.__name__ in package.__all__, f"{method.name} not in {package.__name__}.__all__"


def test_a_moved_module_path_still_works_and_warns() -> None:
    from dpspectral.pca import analyze_gauss

    old_path = "dpspectral.pca" + ".covariance"  # the old public path (written so that no rewrite touches it)
    with pytest.warns(DeprecationWarning, match="import 'analyze_gauss' from 'dpspectral.pca'"):
        old = importlib.import_module(old_path).analyze_gauss
    assert old is analyze_gauss
    with pytest.warns(DeprecationWarning, match="not part of the public API"):
        importlib.import_module("dpspectral.privacy" + ".pipeline").ReleasePlan  # noqa: B018
    with pytest.warns(DeprecationWarning, match="import 'DPPCA' from 'dpspectral'"):
        assert getattr(dpspectral, "estimators").DPPCA is dpspectral.DPPCA  # noqa: B009


def test_a_stand_in_never_hides_a_public_function_of_the_same_name() -> None:
    import types

    from dpspectral import lowrank

    assert not isinstance(lowrank.hardt_roth, types.ModuleType)
    assert lowrank.hardt_roth is dpspectral.hardt_roth


def test_the_library_itself_uses_no_moved_path() -> None:
    """Importing every public module and running the registry's lookups raises no moved-path warning."""
    code = (
        "import warnings\n"
        "warnings.filterwarnings('error', message='the module', category=DeprecationWarning)\n"
        + "".join(f"import {name}\n" for name in PUBLIC_MODULES)
        + "import dpspectral\n"
        "[m.function for m in dpspectral.methods()]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_stand_in_check_can_fail() -> None:
    """Negative control: using an old path under the same filter is an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="the module", category=DeprecationWarning)
        with pytest.raises(DeprecationWarning):
            dpspectral.registry.get_method  # noqa: B018
