"""numpydoc validation of the public API: every public name documented, its parameters as in its signature.

The checks enforced (``numpydoc.validate``): GL08 (no docstring), SS01 (no summary), PR02 (a documented
parameter the callable does not take), PR03 (parameters documented out of signature order), PR10 (a
parameter line without a space before its colon). They cover every function and class in the ``__all__``
of the public modules and the public methods those classes define. Other numpydoc rules (examples, see
also, a Returns section everywhere) are not enforced.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

PUBLIC_MODULES = (
    "dpspectral", "dpspectral.pca", "dpspectral.lowrank", "dpspectral.gep", "dpspectral.local",
    "dpspectral.distributed", "dpspectral.privacy", "dpspectral.preprocessing", "dpspectral.model_selection",
    "dpspectral.metrics", "dpspectral.datasets",
)
ENFORCED = {"GL08", "SS01", "PR02", "PR03", "PR10"}


def _public_objects() -> list[str]:
    names: list[str] = []
    seen: set[int] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            seen.add(id(obj))
            names.append(f"{module_name}.{name}")
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and inspect.isfunction(value):
                        names.append(f"{module_name}.{name}.{attr}")
    return names


def test_the_public_api_passes_numpydoc_validation() -> None:
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpydoc warns about the custom "Privacy" sections
        for name in _public_objects():
            errors = numpydoc_validate.validate(name)["errors"]
            problems += [f"{name}: {code} {message}" for code, message in errors if code in ENFORCED]
    assert not problems, "\n".join(problems)


def test_the_validation_can_fail() -> None:
    """Negative control: a function whose docstring documents a parameter it does not take."""

    def documented_wrong(a: int) -> int:
        """Return a.

        Parameters
        ----------
        b : int
            Not a parameter.
        """
        return a

    import sys
    import types

    module = types.ModuleType("_numpydoc_probe")
    module.documented_wrong = documented_wrong  # type: ignore[attr-defined]
    documented_wrong.__module__ = module.__name__
    sys.modules[module.__name__] = module
    try:
        codes = {code for code, _ in numpydoc_validate.validate("_numpydoc_probe.documented_wrong")["errors"]}
    finally:
        del sys.modules[module.__name__]
    assert "PR02" in codes
