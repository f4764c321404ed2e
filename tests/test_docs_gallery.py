"""The documentation gallery's rewrite of the jupytext tutorials keeps every line of code.

docs/_ext/pp_docs.py turns each ``tutorials/*.py`` (Markdown cells) into a sphinx-gallery
script (Markdown wrapped in an ``md`` directive). The site build (CI) checks the text;
this checks the code: the rewritten script compiles, runs the same statements in the
same order, and carries the tutorial's title. It also checks, on a one-page Sphinx build,
that the API reference gives a module its package shadows with a same-name function
(a family's ``model``) a page of the module's members, not of that function alone.
"""

import ast
import io
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import pp_docs  # noqa: E402

TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))


def _statements(source: str) -> list[str]:
    return [ast.dump(node) for node in ast.parse(source).body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str))]


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_gallery_script_keeps_the_code(path):
    source = path.read_text()
    script = pp_docs.to_gallery_script(source, path.name)
    assert _statements(script) == _statements(source)
    title = next(line[4:].strip() for line in source.splitlines() if line.startswith("# # "))
    docstring = ast.get_docstring(ast.parse(script))
    assert docstring.splitlines()[:2] == [title, "=" * len(title)]


def test_markdown_cells_become_md_directives():
    source = ("# %% [markdown]\n# # Title\n#\n# Some *text*.\n\n# %%\n# a comment\nx = 1\n\n"
              "# %% [markdown]\n# ## Part\n#\n# $a^2$\n")
    script = pp_docs.to_gallery_script(source, "t.py")
    assert 'r"""\nTitle\n=====\n\n.. md::\n\n   Some *text*.\n"""' in script
    # the code cell's leading comment stays code (a blank line after "# %%")
    assert "# %%\n\n# a comment\nx = 1\n" in script
    assert "# %%\n# Part\n# ----\n#\n# .. md::\n#\n#    $a^2$\n" in script
    assert pp_docs._unwrap_md(".. md::\n\n   ## Part\n\n   $a^2$\n") == "## Part\n\n$a^2$"


def test_headings_nest_and_fenced_code_is_not_a_heading():
    source = ("# %% [markdown]\n# # Title\n#\n# ## A `x` and $y$\n# text\n# ### B\n"
              "# ```python\n# # not a heading\n# ```\n")
    script = pp_docs.to_gallery_script(source, "t.py")
    assert "A ``x`` and :math:`y`\n---------------------\n" in script
    assert "B\n^\n" in script
    assert "   # not a heading" in script


def test_a_tutorial_without_a_title_is_refused():
    with pytest.raises(ValueError, match="first cell must be Markdown"):
        pp_docs.to_gallery_script("# %%\nx = 1\n", "t.py")


def test_api_page_of_a_module_shadowed_by_its_package_lists_its_members(tmp_path, monkeypatch):
    # a package that imports a function over the submodule of the same name, as
    # a family's __init__ does with model: the submodule's page must document the module
    # (its other members too), not only the function; a one-page Sphinx build with the
    # site's autosummary template and extension, ~1 s
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    package = "pp_docs_shadowed_fixture"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text(
        f'"""A package."""\n\nfrom {package}.fit import fit\n')
    (tmp_path / package / "fit.py").write_text(
        '"""The module."""\n\n\ndef fit():\n    """The function."""\n\n\n'
        'class FitResult:\n    """Another member."""\n')
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "conf.py").write_text(
        'extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "pp_docs"]\n'
        f'templates_path = [{str(ROOT / "docs" / "_templates")!r}]\n'
        "autosummary_generate = True\n")
    (docs / "index.rst").write_text(
        f"API\n===\n\n.. autosummary::\n   :toctree: api\n   :recursive:\n\n   {package}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith(package)]:
        monkeypatch.delitem(sys.modules, name)
    warnings = io.StringIO()
    try:
        with patch_docutils(docs), docutils_namespace():
            app = Sphinx(docs, docs, tmp_path / "out", tmp_path / "doctrees", "text",
                         status=None, warning=warnings, freshenv=True)
            app.build()
    finally:
        for name in [m for m in sys.modules if m.startswith(package)]:
            del sys.modules[name]
    assert warnings.getvalue() == ""
    page = (tmp_path / "out" / "api" / f"{package}.fit.txt").read_text()
    assert "The module." in page
    assert f"class {package}.fit.FitResult" in page
    assert f"{package}.fit.fit()" in page
