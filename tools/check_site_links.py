"""Check the built site's internal links offline: every local href and src, and every #anchor.

Usage: ``python tools/check_site_links.py docs/_build/html``. Links to other sites (http, https,
mailto) are not followed: the build machine has no network. Exits 1 and lists each broken link (the
page, the link, what is missing); 0 when all resolve.
"""

from __future__ import annotations

import argparse
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

_EXTERNAL = ("http", "https", "mailto", "data", "javascript", "ftp", "tel")


class _Page(HTMLParser):
    """The ids a page defines and the local links it makes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        for name in ("id", "name"):
            if attributes.get(name) and (name == "id" or tag == "a"):
                self.ids.add(attributes[name] or "")
        if tag in ("a", "link", "area") and attributes.get("href") is not None:
            self.links.append(attributes["href"] or "")
        if tag in ("img", "script", "source", "iframe") and attributes.get("src"):
            self.links.append(attributes["src"] or "")


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(root: Path) -> list[str]:
    """Each broken internal link of the HTML pages under ``root``, as ``page: link (why)``."""
    root = root.resolve()
    cache: dict[Path, _Page] = {}
    problems = []
    for page_path in sorted(root.rglob("*.html")):
        if page_path.relative_to(root).parts[0] == "_static":  # the theme's templates, not pages
            continue
        page = _parse(page_path, cache)
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme in _EXTERNAL or link.startswith("//"):
                continue
            if parts.scheme:
                problems.append(f"{page_path.relative_to(root)}: {link} (unknown scheme)")
                continue
            target = page_path if not parts.path else (page_path.parent / unquote(parts.path)).resolve()
            if target.is_dir():  # its index page, if any (not the figure folders)
                target = target / "index.html" if (target / "index.html").exists() else target
            where = page_path.relative_to(root)
            if not target.is_relative_to(root):
                problems.append(f"{where}: {link} (outside the site)")
                continue
            if not target.exists():
                problems.append(f"{where}: {link} (no such file)")
                continue
            anchor = unquote(parts.fragment)
            if anchor and target.suffix == ".html" and anchor not in _parse(target, cache).ids:
                problems.append(f"{where}: {link} (no #{anchor} in {target.relative_to(root)})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the built site, e.g. docs/_build/html")
    args = parser.parse_args(argv)
    if not (args.root / "index.html").is_file():
        print(f"no site at {args.root} (index.html missing): run `make docs` first", file=sys.stderr)
        return 2
    problems = broken_links(args.root)
    pages = sum(1 for p in args.root.rglob("*.html") if p.relative_to(args.root).parts[0] != "_static")
    for problem in problems:
        print(problem)
    print(f"{pages} pages, {len(problems)} broken internal links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
