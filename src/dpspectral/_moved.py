"""Module paths that became private: the old public paths keep working for one release, with a warning.

The library's implementation modules are private (``dpspectral.pca._covariance``); users import from the
packages (``dpspectral.pca.analyze_gauss``). An old path such as ``dpspectral.pca.covariance`` resolves to a
stand-in module that forwards every attribute to the private module and emits a ``DeprecationWarning``
naming the public place to import from.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any

__all__ = ["register_moved_modules"]


class _MovedModule(types.ModuleType):
    """A stand-in for a module that moved: attribute access imports the new module and warns."""

    def __init__(self, old: str, new: str, public: str) -> None:
        super().__init__(old)
        self.__dict__["_moved_to"] = (new, public)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in ("__all__", "__doc__"):
            raise AttributeError(name)
        new, public = self.__dict__["_moved_to"]
        warnings.warn(
            f"the module {self.__name__!r} is private now and its old path will be removed in the next "
            f"release; {_where(name, public)}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__dict__["_moved_to"][0]))


def _where(name: str, public: str) -> str:
    """Where ``name`` is public now, or that it is internal."""
    for package in (public, "dpspectral"):
        if name in getattr(importlib.import_module(package), "__all__", ()):
            return f"import {name!r} from {package!r} instead"
    return f"{name!r} is not part of the public API (see the API reference for the public names)"


def register_moved_modules(package: str, moved: dict[str, str], public: str | None = None) -> None:
    """Make ``package.<old>`` resolve to ``package.<new>`` with a ``DeprecationWarning`` on use.

    Parameters
    ----------
    package : str
        The package's dotted name (``__name__`` of its ``__init__``).
    moved : dict of str to str
        Old module name to new module name, both relative to ``package`` (the new one may be dotted,
        e.g. ``"privacy._audit"``).
    public : str, optional
        Where users should import from instead (default: ``package``).
    """
    for old, new in moved.items():
        full = f"{package}.{old}"
        if full not in sys.modules:
            stand_in = _MovedModule(full, f"{package}.{new}", public or package)
            sys.modules[full] = stand_in
            parent = sys.modules[package]
            if not hasattr(parent, old):  # a public function of the same name keeps its place
                setattr(parent, old, stand_in)
