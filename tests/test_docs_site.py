"""The built documentation site (``make docs``): its pages render their key text, its API pages list
every public name, and its internal links resolve.

Skipped, with the reason, when the site is not built (docs/_build/html) or, for the rendering test,
when Chromium is absent; CI builds the site before the tests run and sets ``DPSPECTRAL_REQUIRE_SITE=1``
and ``DPSPECTRAL_REQUIRE_BROWSER=1``, which turn those skips into failures.
"""

from __future__ import annotations

import importlib.util
import os
import re
from html import unescape
from pathlib import Path

import pytest

import dpspectral

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


screenshots = _tool("site_screenshots")
links = _tool("check_site_links")



def _missing(what: str, required_by: str) -> None:
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{required_by}=1 but {what}")
    pytest.skip(what)


@pytest.fixture
def site() -> Path:
    if not (SITE / "index.html").is_file():
        _missing("the documentation site is not built (run `make docs`)", "DPSPECTRAL_REQUIRE_SITE")
    return SITE


def _text(path: Path) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", ["home", "api", "gallery"])
def test_page_renders_its_key_text(name, site, tmp_path):
    if screenshots.chromium() is None:
        _missing("Chromium is absent (apt-get install chromium)", "DPSPECTRAL_REQUIRE_BROWSER")
    pages = screenshots.pages(site)
    assert name in pages, f"the site has no {name} page"
    page, key_text = pages[name]
    assert page.is_file(), page
    dom = screenshots.render(page, tmp_path / f"{name}.png")
    missing = [text for text in key_text if text not in dom]
    assert not missing, f"{page.relative_to(SITE)} rendered without {missing}"
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000  # a screenshot with content, not a blank


def test_every_top_level_name_is_on_the_api_pages(site):
    reference = _text(site / "api" / "dpspectral.html")
    missing = [name for name in dpspectral.__all__ if f"dpspectral.{name}" not in reference
               and not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", reference)]
    assert not missing, f"not on the API page of dpspectral: {missing}"
    for name in dpspectral.__all__:
        assert (site / "api" / "generated" / f"dpspectral.{name}.html").is_file(), name


def test_every_public_module_has_its_api_page(site):
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from _api import PUBLIC_MODULES
    finally:
        sys.path.remove(str(ROOT / "docs"))
    for module_name in PUBLIC_MODULES:
        page = site / "api" / f"{module_name}.html"
        assert page.is_file(), module_name
        for name in importlib.import_module(module_name).__all__:
            assert (site / "api" / "generated" / f"{module_name}.{name}.html").is_file(), (module_name, name)


def test_internal_links_resolve(site):
    assert links.broken_links(site) == []


def test_link_checker_finds_a_broken_link_and_a_missing_anchor(tmp_path):
    (tmp_path / "index.html").write_text('<a href="a.html#here">ok</a><a href="gone.html">x</a>'
                                         '<a href="a.html#nowhere">y</a><a href="https://x.org">z</a>')
    (tmp_path / "a.html").write_text('<h1 id="here">A</h1><img src="img/p.png">')
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "p.png").write_bytes(b"png")
    problems = links.broken_links(tmp_path)
    assert len(problems) == 2
    assert any("gone.html (no such file)" in p for p in problems)
    assert any("#nowhere" in p for p in problems)
