"""The README stays true: its method table is the registry's, its Python quick-start runs."""

from __future__ import annotations

import re
from pathlib import Path

from dpspectral.registry import methods_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_readme_method_table_matches_registry():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- methods-table:start -->\n(.*?)\n<!-- methods-table:end -->", text, re.S)
    assert m, "README lost its generated methods table"
    assert m.group(1).strip() == methods_markdown().strip()


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write files (a turnstile state)
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["Z"].shape == (1797, 10)
    assert namespace["pca"].privacy_.certified
    assert namespace["res"].components.shape == (64, 5)
    assert namespace["lr"].privacy_.certified and namespace["lr"].U_.shape == (500, 5)
    assert (tmp_path / "state.npz").exists()


def test_architecture_doc_names_existing_modules():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for path in re.findall(r"`(src/dpspectral/[\w/]+\.py)`", text):
        assert (ROOT / path).exists(), path
