"""Sphinx glue for pp-models' site: jupytext tutorials in a sphinx-gallery.

The tutorials are jupytext percent-format scripts whose text cells are Markdown;
sphinx-gallery reads reStructuredText. :func:`write_gallery_sources` rewrites every
``tutorials/*.py`` into a sphinx-gallery script (same code cells, first Markdown cell as
the docstring with an rST title) whose Markdown headings become rST section titles and
whose other Markdown is wrapped in the ``md`` directive defined here, which parses its
content with MyST. Nothing is hand-listed: a
new tutorial appears in the gallery on the next build.

The API reference is autosummary's recursive walk of the packages. A package's
``__init__`` often imports a function over the submodule of the same name
(``pp_models.bhc`` binds ``model`` to the factory ``pp_models.bhc.model.model``);
autosummary looks names up attribute-first, so it would document the module
``pp_models.bhc.model`` as that one function.
:func:`import_by_name_preferring_modules`, installed by :func:`setup`, resolves a dotted
name that is an importable module to the module, so every module's page lists its
members.

The notebooks sphinx-gallery offers for download get the Markdown back (the ``md``
wrapper is removed before its rST-to-Markdown conversion).

``PP_DOCS_FAST=1`` in the environment makes :func:`reset_argv` pass ``--fast`` to every
tutorial (a quick executed build); ``PP_DOCS_UPDATE_THUMBNAILS=1`` copies each executed
tutorial's thumbnail to ``docs/_static/thumbnails/<tutorial>.png`` (the family pages
under ``docs/families/`` show them).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shutil
import textwrap
from pathlib import Path

from docutils.utils import new_document
from sphinx.util.docutils import SphinxDirective

__all__ = ["Markdown", "reset_argv", "setup", "to_gallery_script", "write_gallery_sources"]

_HEADER = re.compile(r"\A# ---\n(?:#.*\n)*?# ---\n", re.M)
_CELL = re.compile(r"^# %%(.*)$", re.M)


def _cells(source: str) -> list[tuple[str, list[str]]]:
    """(kind, lines) of a percent-format script, without its jupytext header."""
    source = _HEADER.sub("", source, count=1)
    marks = list(_CELL.finditer(source))
    cells = []
    preamble = source[: marks[0].start()] if marks else source
    if preamble.strip():
        cells.append(("code", preamble.splitlines()))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(source)
        body = source[mark.end() + 1 : end].splitlines()
        if "[markdown]" not in mark.group(1):
            cells.append(("code", body))
            continue
        # A Markdown cell is its comment lines; code after them (no "# %%" in between)
        # still runs when the script runs, so it stays code.
        code_at = next((j for j, line in enumerate(body)
                        if line.strip() and not line.startswith("#")), len(body))
        cells.append(("markdown", [re.sub(r"^# ?", "", line) for line in body[:code_at]]))
        if code_at < len(body):
            cells.append(("code", body[code_at:]))
    return cells


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


_ADORNMENT = {1: "=", 2: "-", 3: "^", 4: '"', 5: "'", 6: "~"}
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _inline_rst(text: str) -> str:
    """Markdown inline code and math of a heading, as rST."""
    text = re.sub(r"^(\d+)\.", r"\1\\.", text)  # "1. Title" is not a list item
    text = re.sub(r"`([^`]+)`", r"``\1``", text)
    return re.sub(r"\$([^$]+)\$", r":math:`\1`", text)


def _rst_lines(lines: list[str]) -> list[str]:
    """Markdown lines as rST: headings become rST section titles (one adornment per
    level, so the page's sections nest as in the Markdown), the text between them an
    ``md`` directive."""
    out: list[str] = []
    text: list[str] = []
    fence = None

    def flush():
        block = _trim(text)
        if block:
            out.extend([".. md::", ""])
            out.extend(f"   {line}" if line.strip() else "" for line in block)
            out.append("")
        text.clear()

    for line in lines:
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        heading = _ATX.match(line) if fence is None else None
        if heading:
            flush()
            title = _inline_rst(heading.group(2))
            out.extend([title, _ADORNMENT[len(heading.group(1))] * len(title), ""])
        else:
            text.append(line)
    flush()
    return _trim(out)


def to_gallery_script(source: str, name: str) -> str:
    """A sphinx-gallery script equivalent to the percent-format ``source``."""
    cells = _cells(source)
    if not cells or cells[0][0] != "markdown":
        raise ValueError(f"tutorials/{name}: the first cell must be Markdown with a '# Title'")
    first = _trim(cells[0][1])
    if not first or not first[0].startswith("# "):
        raise ValueError(f"tutorials/{name}: the first Markdown cell must start with '# Title'")
    title = first[0][2:].strip()
    body = _trim(first[1:])
    doc = [title, "=" * len(title), "", *_rst_lines(body)]
    if any('"""' in line for line in doc):
        raise ValueError(f'tutorials/{name}: the first Markdown cell may not contain """')
    out = ['r"""', *doc, '"""', ""]
    for kind, lines in cells[1:]:
        lines = _trim(lines)
        if not lines:
            continue
        if kind == "markdown":
            out.append("# %%")
            out += [f"# {line}" if line.strip() else "#" for line in _rst_lines(lines)]
            out.append("")
        else:
            # The blank line keeps a code cell's leading comment in the code: sphinx-gallery
            # reads comment lines right after "# %%" as text.
            out += ["# %%", "", *lines, ""]
    return "\n".join(out) + "\n"


def write_gallery_sources(tutorials: Path, target: Path) -> list[Path]:
    """Rewrite every ``tutorials/*.py`` into ``target`` (which is emptied of scripts)."""
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.py"):
        old.unlink()
    written = []
    for path in sorted(tutorials.glob("*.py")):
        dest = target / path.name
        dest.write_text(to_gallery_script(path.read_text(), path.name))
        written.append(dest)
    (target / "README.rst").write_text(
        "Tutorial gallery\n================\n\n"
        "Every tutorial is a runnable script in the repository's ``tutorials/`` folder "
        "(jupytext percent format: open it as a notebook with jupytext, or run it with "
        "``python tutorials/NAME.py``; ``--fast`` runs a smaller version).\n"
    )
    return written


def reset_argv(gallery_conf, script_vars) -> list[str]:
    """Command-line arguments of each tutorial: ``--fast`` when ``PP_DOCS_FAST=1``."""
    return ["--fast"] if os.environ.get("PP_DOCS_FAST", "") not in ("", "0") else []


class Markdown(SphinxDirective):
    """``.. md::`` — parse the directive's content as MyST Markdown."""

    has_content = True

    def run(self):
        from myst_parser.parsers.sphinx_ import MystParser

        document = new_document(self.state.document["source"], self.state.document.settings)
        MystParser().parse("\n".join(self.content) + "\n", document)
        return list(document.children)


def _unwrap_md(text: str) -> str:
    """Replace every ``.. md::`` block of rST ``text`` by its dedented Markdown."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == ".. md::":
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
                block.append(lines[i])
                i += 1
            out.append(textwrap.dedent("\n".join(block)).strip("\n"))
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _patch_notebook_markdown() -> None:
    from sphinx_gallery import notebook

    original = notebook.rst2md
    if getattr(original, "_pp_docs", False):
        return

    def rst2md(text, *args, **kwargs):
        if ".. md::" not in text:
            return original(text, *args, **kwargs)
        head, _, rest = text.partition(".. md::")
        head = original(head, *args, **kwargs) if head.strip() else ""
        return (head + "\n\n" if head else "") + _unwrap_md(".. md::" + rest)

    rst2md._pp_docs = True
    notebook.rst2md = rst2md


def import_by_name_preferring_modules(name, prefixes=(None,), *, lookup=None):
    """Resolve ``name`` as autosummary's ``import_by_name`` does, but a module's name to
    the module.

    Parameters
    ----------
    name : str
        Dotted name, possibly relative to one of ``prefixes``.
    prefixes : sequence of str or None
        Module names to try ``name`` under, in order (``None``: ``name`` as given).
    lookup : callable, optional
        The attribute-first lookup to correct (default: autosummary's own).

    Returns
    -------
    tuple
        ``(full name, object, parent, module name)``, as autosummary's lookup returns.
    """
    if lookup is None:
        from sphinx.ext.autosummary import import_by_name as lookup
    full_name, obj, parent, modname = lookup(name, prefixes)
    if not inspect.ismodule(obj):
        try:
            # the package rebinds a submodule's name (``pp_models.bhc.model``) to an object
            # (the factory ``model``); the dotted name still imports the submodule
            module = importlib.import_module(full_name)
        except ImportError:
            pass
        else:
            return full_name, module, None, full_name
    return full_name, obj, parent, modname


def _patch_autosummary_lookup() -> None:
    # autosummary's directive and its stub generator each hold their own reference
    import sphinx.ext.autosummary as autosummary
    import sphinx.ext.autosummary.generate as generate

    original = autosummary.import_by_name
    if getattr(original, "_pp_docs", False):
        return

    def import_by_name(name, prefixes=(None,)):
        return import_by_name_preferring_modules(name, prefixes, lookup=original)

    import_by_name._pp_docs = True
    autosummary.import_by_name = import_by_name
    generate.import_by_name = import_by_name


def _copy_thumbnails(app, exception) -> None:
    if exception is not None or os.environ.get("PP_DOCS_UPDATE_THUMBNAILS", "") in ("", "0"):
        return
    if not app.config.sphinx_gallery_conf.get("plot_gallery"):
        return
    src_dir = Path(app.srcdir)
    thumbs = src_dir / "tutorials" / "images" / "thumb"
    dest = src_dir / "_static" / "thumbnails"
    dest.mkdir(parents=True, exist_ok=True)
    for thumb in thumbs.glob("sphx_glr_*_thumb.png"):
        stem = thumb.name.removeprefix("sphx_glr_").removesuffix("_thumb.png")
        shutil.copyfile(thumb, dest / f"{stem}.png")


def setup(app):
    app.add_directive("md", Markdown)
    _patch_notebook_markdown()
    _patch_autosummary_lookup()
    app.connect("build-finished", _copy_thumbnails)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
