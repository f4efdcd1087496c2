"""Sphinx configuration of the dpspectral site (``make docs`` builds it into docs/_build/html).

The API reference is generated from the public modules' ``__all__`` at every build
(:func:`write_api_pages`), so a public name cannot be missing from it. Environment variables:

``DPSPECTRAL_DOCS_INTERSPHINX=1``
    Link to NumPy's, SciPy's and scikit-learn's documentation (needs the network to fetch their
    inventories). Off by default: offline, a failed fetch is a warning, and the build treats warnings
    as errors.
``DPSPECTRAL_GALLERY_QUICK=1``
    The gallery's examples run in their quick mode (each example reads the variable and shrinks its
    data and repeats); CI builds the site so.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from _api import write_api_pages  # noqa: E402

import dpspectral  # noqa: E402

project = "dpspectral"
author = "dpspectral developers"
copyright = "dpspectral developers"  # noqa: A001
release = version = dpspectral.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
]

INTERSPHINX = os.environ.get("DPSPECTRAL_DOCS_INTERSPHINX") == "1"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
}
if INTERSPHINX:
    extensions.append("sphinx.ext.intersphinx")

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    # the reproductions' own reports: the site links their HTML index (copied as it is, see below)
    "reproductions/**",
    # sphinx-gallery's by-products that are not pages
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
    "auto_examples/*.codeobj.json",
    "sg_execution_times.rst",
]
templates_path = ["_templates"]

# --- Markdown (the existing pages stay Markdown) ---
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
# A page links the repository's files (benchmarks/*.py, src/...) by relative path: on the site these are
# not pages. Such links stay plain text instead of warnings; links between pages are still checked by
# tools/check_site_links.py over the built HTML.
suppress_warnings = ["myst.xref_missing", "myst.header"]

# --- API reference ---
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"inherited-members": False}
autodoc_typehints = "none"
# A method documents itself: the docstrings of dp_accounting's and scikit-learn's base classes are
# written for their own sites (their cross-references do not resolve here).
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
# The mechanisms' docstrings have a "Privacy" section (what is released, under which relation); numpydoc
# renders it as a rubric and would otherwise print a note for each.
warnings.filterwarnings("ignore", message="Unknown section Privacy", category=UserWarning)

# --- gallery ---
QUICK = os.environ.get("DPSPECTRAL_GALLERY_QUICK") == "1"
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": str(HERE / "auto_examples"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "write_computation_times": False,
    "reset_modules": ("matplotlib",),
    "image_scrapers": ("matplotlib",),
    # "Examples using X" on each API page
    "backreferences_dir": str(HERE / "api" / "backreferences"),
    "doc_module": ("dpspectral",),
}

# --- HTML ---
html_theme = "pydata_sphinx_theme"
html_title = f"dpspectral {version}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "changelog": []}
html_copy_source = False
html_show_sourcelink = False


def _copy_reproductions(app, exception):
    """Copy the reproductions' HTML index and its figures beside the site (reproductions/index.html)."""
    if exception is not None or app.builder.format != "html":
        return
    src = HERE / "reproductions"
    if src.is_dir():
        shutil.copytree(src, Path(app.outdir) / "reproductions", dirs_exist_ok=True)


def _public_paths_only() -> None:
    """Document each class under its public path only: no ``:canonical:`` implementation module.

    autodoc names a re-exported class's defining module as its canonical name; a class exported by two
    public modules (``dpspectral.DPPCA`` ...) would then be described twice under that private name, and
    the implementation modules are not part of the public interface.
    """
    try:  # Sphinx >= 9: the properties of the object being documented
        from sphinx.ext.autodoc._property_types import _ClassDefProperties

        _ClassDefProperties.canonical_full_name = property(lambda self: None)
    except ImportError:  # Sphinx 8
        from sphinx.ext.autodoc import ClassDocumenter

        ClassDocumenter.get_canonical_fullname = lambda self: None


def _skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing methods (``set_fit_request`` ...)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    write_api_pages(HERE / "api")
    _public_paths_only()
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("build-finished", _copy_reproductions)
    return {"parallel_read_safe": True}
