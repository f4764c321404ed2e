"""Sphinx configuration of the pp-models site.

Build (from the repository root):

    python -m sphinx -W --keep-going -b html docs docs/_build/html

executes every tutorial in full (``-D plot_gallery=0``: none; ``PP_DOCS_FAST=1``: each
with ``--fast``). Nothing is fetched from the network (no intersphinx inventories).
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import pp_docs  # noqa: E402

# The tutorials are jupytext (Markdown) scripts; the gallery reads rewritten copies.
pp_docs.write_gallery_sources(ROOT / "tutorials", DOCS / "_gallery_src")

project = "pp-models"
author = "pp-models developers"
copyright = "2026, pp-models developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "pp_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_gallery_src", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# API reference: one page per module, generated from the docstrings (numpy style).
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# Tutorial text cells are Markdown fragments under the page's title: their headings
# start at level 2. The Python domain reads every word of a numpydoc type ("(n, d)
# array") as a cross-reference and searches for it by suffix: a shape letter such as
# ``n`` or ``S`` that is also a field of two documented named tuples matches both, and
# Sphinx warns ("ref.python"); such a word is a shape, not a link.
suppress_warnings = ["myst.header", "ref.python"]

sphinx_gallery_conf = {
    "examples_dirs": ["_gallery_src"],
    "gallery_dirs": ["tutorials"],
    "filename_pattern": r".*\.py$",  # execute every tutorial, not only plot_*.py
    "reset_argv": "pp_docs.reset_argv",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "matplotlib_animations": False,
    "capture_repr": ("__repr__",),
}

html_theme = "pydata_sphinx_theme"
html_title = "pp-models"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_sidebars = {"index": [], "architecture": []}
