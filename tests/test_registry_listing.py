"""What the user reads about the methods agrees with the code.

* ``dpspectral methods`` prints one row per registry entry, named exactly (a substring match would let
  ``oja`` hide inside ``private_oja``);
* the non-private references the documents name are registered, so they are listed;
* the user guide's choice table calls only the code's default the default Fisher discriminant;
* every docstring of ``adaptive_clip`` states the code's default quantile;
* the installation page lists every optional dependency (extra) of ``pyproject.toml``.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import dpspectral
from dpspectral import DPFisherDiscriminant, methods
from dpspectral.cli import main
from dpspectral.pca._covariance import DEFAULT_CLIP_QUANTILE

ROOT = Path(__file__).resolve().parents[1]


def test_methods_command_prints_one_row_per_registry_entry(capsys):
    assert main(["methods"]) == 0
    names = [m.name for m in methods()]
    first = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    listed = [word for word in first if word in set(names)]
    assert listed == names  # each once, in table order (oja included)


def test_the_documented_non_private_references_are_registered():
    caveats = (ROOT / "docs" / "privacy-caveats.md").read_text()
    line = re.search(r"\*\*Non-private references and uncertified formulas\.\*\* (.*?) are\s+non-private",
                     caveats, re.S)
    assert line, "privacy-caveats.md lost its list of non-private references"
    documented = set(re.findall(r"`(\w+)`", line.group(1)))
    assert documented == {m.name for m in methods() if not m.private} == {"optimal_space_lrf", "sr", "oja"}


def test_choice_table_names_the_code_default_fisher_discriminant():
    text = (ROOT / "docs" / "user-guide" / "private-pca.md").read_text()
    default = DPFisherDiscriminant().method
    assert default == "moments"
    rows = [ln for ln in text.splitlines() if "DPFisherDiscriminant |" in ln and "The default" in ln]
    assert [re.match(r"\| `(\w+)`", ln).group(1) for ln in rows] == [default]


def test_clip_quantile_docstrings_state_the_code_default():
    assert DEFAULT_CLIP_QUANTILE == 0.1
    # mod_sulq documents adaptive_clip "as in analyze_gauss" (one place for the shared parameters)
    mod_sulq_doc = inspect.getdoc(dpspectral.mod_sulq) or ""
    i = mod_sulq_doc.index("adaptive_clip")
    assert "As in :func:`analyze_gauss`" in mod_sulq_doc[i:i + 400]
    for owner in (dpspectral.DPPCA, dpspectral.analyze_gauss):
        doc = inspect.getdoc(owner) or ""
        i = doc.index("adaptive_clip :")
        part = doc[i:i + 900]
        assert f"{DEFAULT_CLIP_QUANTILE:g}" in part and "balance rule" in part, owner
        assert "0.9" not in part, owner


def test_install_page_lists_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text()
    sentence = page.split("Extras:", 1)[1].split("```", 1)[0]
    missing = [name for name in extras if f"`{name}`" not in sentence]
    assert not missing, f"install.md's list of extras omits {missing}"
