"""Open pages of the built site in headless Chromium: their rendered DOM, and a screenshot of each.

Usage: ``python tools/site_screenshots.py docs/_build/html --out reports/ci``. Renders the home page, the
API page of :class:`dpspectral.DPPCA` and the first gallery example, writes ``<name>.png`` and
``<name>.html`` (the DOM after the page's scripts ran) for each into ``--out``, and exits 1 when a page
does not render its key text. ``tests/test_docs_site.py`` uses :func:`render` too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--hide-scrollbars", "--window-size=1280,1600")


def chromium() -> str | None:
    """The Chromium executable, or None where there is none."""
    return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


def gallery_page(site: Path) -> Path | None:
    """The first gallery example's page (``auto_examples/plot_*.html``), or None without a gallery."""
    pages = sorted((site / "auto_examples").glob("plot_*.html"))
    return pages[0] if pages else None


def pages(site: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """The pages checked, by name: their file and the text each must show once rendered."""
    checked = {
        "home": (site / "index.html", ("Differentially private spectral methods", "Getting started",
                                       "API reference", "User guide")),
        "api": (site / "api" / "generated" / "dpspectral.DPPCA.html", ("dpspectral.DPPCA", "Parameters",
                                                                       "epsilon", "inverse_transform")),
    }
    example = gallery_page(site)
    if example is not None:
        checked["gallery"] = (example, ("Total running time of the script", "DPPCA"))
    return checked


def render(page: Path, screenshot: Path | None = None, timeout: float = 120) -> str:
    """The DOM of ``page`` after Chromium ran its scripts; a PNG of it at ``screenshot`` when given."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        base = [exe, *_FLAGS, f"--user-data-dir={profile}"]
        url = page.resolve().as_uri()
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([*base, f"--screenshot={screenshot.resolve()}", url], check=True, timeout=timeout,
                           capture_output=True)
        done = subprocess.run([*base, "--dump-dom", url], check=True, timeout=timeout, capture_output=True,
                              text=True)
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site, e.g. docs/_build/html")
    parser.add_argument("--out", type=Path, default=Path("reports/ci"), help="where the PNGs and DOMs go")
    args = parser.parse_args(argv)
    if chromium() is None:
        print(f"no Chromium at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, (page, key_text) in pages(args.site).items():
        if not page.is_file():
            print(f"{name}: {page} is missing (run `make docs`)")
            failed += 1
            continue
        dom = render(page, args.out / f"site-{name}.png")
        (args.out / f"site-{name}.html").write_text(dom)
        missing = [text for text in key_text if text not in dom]
        print(f"{name}: {page.relative_to(args.site)} -> {args.out / f'site-{name}.png'}"
              + (f"; MISSING {missing}" if missing else "; renders its key text"))
        failed += bool(missing)
    if "gallery" not in pages(args.site):
        print("gallery: no example page (auto_examples/plot_*.html)")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
