"""Write the API reference pages from the public modules' ``__all__`` (called by conf.py at each build).

Every name is documented under its public path (``dpspectral.pca.analyze_gauss``), never under the
module that implements it, and grouped by kind: estimators and classes, functions, exceptions and
warnings, constants.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

#: The public modules, in the order of the reference's table of contents.
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
)

_KINDS = (
    ("Estimators and classes", "class"),
    ("Functions", "function"),
    ("Exceptions and warnings", "exception"),
    ("Constants", "data"),
)


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _summary(module) -> str:
    doc = inspect.getdoc(module) or ""
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ")


def module_page(name: str) -> str:
    """The reStructuredText page of one public module: its summary and an autosummary table per kind."""
    module = importlib.import_module(name)
    title = f"``{name}``"
    lines = [f".. _api-{name}:", "", title, "=" * len(title), "", f".. automodule:: {name}",
             "   :no-members:", "   :no-index:", "", _summary(module), "", f".. currentmodule:: {name}", ""]
    grouped: dict[str, list[str]] = {kind: [] for _, kind in _KINDS}
    for public in module.__all__:
        grouped[_kind(getattr(module, public))].append(public)
    for heading, kind in _KINDS:
        names = grouped[kind]
        if not names:
            continue
        # the pages' templates: docs/_templates/autosummary/{class,base}.rst
        lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: generated/", "",
                  *(f"   {n}" for n in names), ""]
    return "\n".join(lines)


def index_page() -> str:
    lines = ["API reference", "=============", "",
             "Every public name, under the module users import it from. The estimators follow "
             "scikit-learn's conventions; every function and estimator that releases something takes "
             "``epsilon``, ``delta`` and ``random_state`` (a secret: it draws the noise).", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {name}" for name in PUBLIC_MODULES]
    return "\n".join(lines) + "\n"


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:  # unchanged pages keep their time: no re-read
        path.write_text(text)


def write_api_pages(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _write_if_changed(folder / "index.rst", index_page())
    for name in PUBLIC_MODULES:
        _write_if_changed(folder / f"{name}.rst", module_page(name))
