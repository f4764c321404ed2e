"""Every docstring of ``pp_models``, ``custom_ops`` and ``inference`` is valid
reStructuredText once napoleon has turned its numpy sections into rST, so a bad docstring
fails here, in seconds, instead of in the ``sphinx -W`` docs build of ``.ci/run``.

Each docstring goes through what the docs build does to it: napoleon's ``NumpyDocstring``
with the site's ``napoleon_*`` settings (read from ``docs/conf.py``), then docutils'
parser and transforms. Docutils' warnings (level 2) and errors fail the test: with ``-W``
they fail the docs build too. So does a section title outside a module docstring (autodoc
parses the others inside a ``py:function``/``py:class``/... directive, where Sphinx
rejects titles). Sphinx's own roles and directives (``:func:``, ``.. seealso::``, ...)
are registered with docutils as no-ops, the prose directives still parsing their content,
so only what Sphinx would also reject is reported. Every module is imported (no kernel is
compiled by an import); the test reads ``__doc__``, as autodoc does.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path

import docutils.core
import docutils.frontend
import docutils.parsers.rst
import docutils.readers.standalone
from docutils import nodes
from docutils.parsers.rst import Directive, directives, roles
from numba.core.dispatcher import Dispatcher
from sphinx.domains.math import MathDomain
from sphinx.domains.python import PythonDomain
from sphinx.domains.std import StandardDomain
from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import NumpyDocstring
from sphinx.roles import generic_docroles, specific_docroles
from sphinx.util.docstrings import prepare_docstring
from sphinx.util.docutils import docutils_namespace

PACKAGES = ("pp_models", "custom_ops", "inference")
CONF_PY = Path(__file__).resolve().parents[1] / "docs" / "conf.py"


def _napoleon_settings(conf_py: Path) -> dict:
    """The ``napoleon_*`` assignments of the Sphinx configuration, read without running
    it (conf.py writes the tutorial gallery's sources when executed)."""
    settings = {}
    for node in ast.parse(conf_py.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("napoleon_"):
                settings[target.id] = ast.literal_eval(node.value)
    return settings


NAPOLEON = Config(**_napoleon_settings(CONF_PY))

# --------------------------------------------------------------------------------------
# Sphinx markup, unknown to plain docutils, registered as no-ops
# --------------------------------------------------------------------------------------
# Roles of the domains a docstring can reach without a prefix (py is the default domain,
# std and math are searched too) plus Sphinx's generic roles, bare and prefixed.
_DOMAINS = {"py": PythonDomain, "std": StandardDomain, "math": MathDomain}
SPHINX_ROLES = sorted(
    {f"{prefix}{name}" for domain, cls in _DOMAINS.items() for name in cls.roles
     for prefix in ("", f"{domain}:")}
    | set(generic_docroles) | set(specific_docroles) | {"eq"}
)
# Sphinx directives whose content is code or a list of names: accepted, not parsed.
OPAQUE_DIRECTIVES = ("code-block", "sourcecode", "highlight", "literalinclude", "toctree",
                     "index", "tabularcolumns", "sectionauthor", "moduleauthor",
                     "codeauthor", "acks", "default-role", "default-domain", "autosummary",
                     "productionlist", "std:productionlist")
# Directives whose content is rST (object descriptions, admonitions, version notes):
# their content is parsed, so an error inside them still counts.
PROSE_DIRECTIVES = sorted(
    ({f"{prefix}{name}" for domain, cls in _DOMAINS.items() if domain != "math"
      for name in cls.directives for prefix in ("", f"{domain}:")}
     | {"deprecated", "versionadded", "versionchanged", "versionremoved",
        "version-added", "version-changed", "version-deprecated", "version-removed",
        "only", "hlist", "centered", "describe", "object"})
    - set(OPAQUE_DIRECTIVES)
)


class _AnyOption(dict):
    """An option spec accepting every option (``:type:``, ``:noindex:``, ...); true
    although empty, else docutils reads the options as arguments."""

    def __bool__(self):
        return True

    def __missing__(self, key):
        return directives.unchanged


class _ProseDirective(Directive):
    """A Sphinx directive stood in for: arguments and options accepted, rST content
    parsed without section titles (as Sphinx parses it)."""

    optional_arguments = 100
    final_argument_whitespace = True
    option_spec = _AnyOption()
    has_content = True

    def run(self):
        node = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _Admonition(_ProseDirective):
    """``seealso``: no arguments, the text after ``::`` is content (docutils' rule)."""

    optional_arguments = 0


class _OpaqueDirective(_ProseDirective):
    def run(self):
        return []


@contextlib.contextmanager
def sphinx_markup():
    """Sphinx's roles and directives known to docutils while inside (docutils' global
    registries are restored on exit, as Sphinx itself does)."""
    with docutils_namespace():
        for name in SPHINX_ROLES:
            roles.register_generic_role(name, nodes.literal)
        for name in PROSE_DIRECTIVES:
            directives.register_directive(name, _ProseDirective)
        directives.register_directive("seealso", _Admonition)
        for name in OPAQUE_DIRECTIVES:
            directives.register_directive(name, _OpaqueDirective)
        yield


# --------------------------------------------------------------------------------------
# the checker
# --------------------------------------------------------------------------------------
@functools.cache
def _settings():
    """Docutils' settings for :func:`rst_problems`, built once (building them took a
    third of the time of a small document): report warnings and errors, never halt, no
    files."""
    settings = docutils.frontend.get_default_settings(
        docutils.parsers.rst.Parser, docutils.readers.standalone.Reader)
    settings.report_level = 2
    settings.halt_level = 5
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.doctitle_xform = False  # a lone first title stays a section
    return settings


_MESSAGE = re.compile(r"^<string>:?(\d*): \((?:WARNING|ERROR|SEVERE)/\d\) (.*)$", re.M)


def rst_problems(docstring: str | None, what: str = "function", name: str = "",
                 obj=None) -> list[str]:
    """Docutils' warnings and errors on ``docstring`` as the docs build would read it.

    ``what`` is autodoc's object type ("module", "class", "function", "method", ...):
    a module's docstring may hold section titles, the others may not.
    """
    if not docstring:
        return []
    text = str(NumpyDocstring(prepare_docstring(docstring), NAPOLEON, what=what,
                              name=name, obj=obj))
    stream = io.StringIO()
    settings = copy.copy(_settings())
    settings.warning_stream = stream
    with sphinx_markup():
        doctree = docutils.core.publish_doctree(text, settings=settings)
    problems = [f"line {line or '?'}: {message}"
                for line, message in _MESSAGE.findall(stream.getvalue())]
    if what != "module":
        # autodoc parses these inside a directive, where Sphinx rejects a section title
        # ("Unexpected section title"); parsed here as a document of their own (wrapped
        # in a directive, the walk took 3.2 CPU-s instead of 2.0), the titles are sought
        # in the tree
        problems += [f"line {section.line or '?'}: Unexpected section title "
                     f"{section[0].astext()!r} (only a module docstring may have one)"
                     for section in doctree.findall(nodes.section)]
    return problems


# --------------------------------------------------------------------------------------
# the walk
# --------------------------------------------------------------------------------------
def _modules():
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            yield importlib.import_module(info.name)


def _defined_in(obj, module_name: str) -> bool:
    if isinstance(obj, Dispatcher):
        obj = obj.py_func
    return getattr(obj, "__module__", None) == module_name


def documented_objects(module):
    """(qualified name, autodoc type, object, docstring) of the module and of every
    function, kernel, class and class member defined in it."""
    yield module.__name__, "module", module, module.__doc__
    for name, obj in vars(module).items():
        if not _defined_in(obj, module.__name__):
            continue
        qualified = f"{module.__name__}.{name}"
        if isinstance(obj, Dispatcher):
            yield qualified, "function", obj.py_func, obj.py_func.__doc__
        elif inspect.isfunction(obj):
            yield qualified, "function", obj, obj.__doc__
        elif inspect.isclass(obj):
            yield qualified, "class", obj, obj.__doc__
            for member_name, member in vars(obj).items():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    yield (f"{qualified}.{member_name}", "property", member,
                           member.__doc__)
                elif inspect.isfunction(member) and member.__doc__:
                    yield f"{qualified}.{member_name}", "method", member, member.__doc__


def test_every_docstring_is_valid_rst():
    problems = []
    n_docstrings = 0
    for module in _modules():
        for qualified, what, obj, doc in documented_objects(module):
            n_docstrings += bool(doc)
            problems += [(qualified, message)
                         for message in rst_problems(doc, what, qualified, obj)]
    assert not problems, "docstrings that are not valid rST:\n" + "\n".join(
        f"{name}: {message}" for name, message in problems)
    # the walk found the docstrings (it cannot pass by finding none)
    assert n_docstrings > 800


# --------------------------------------------------------------------------------------
# the checker catches what the docs build caught
# --------------------------------------------------------------------------------------
def test_a_substitution_like_bar_pair_is_reported():
    doc = """Sum over the columns.

    Costs O(|cols|) per call.

    Parameters
    ----------
    cols : ndarray
        The columns.
    """
    (problem,) = rst_problems(doc)
    assert "Undefined substitution referenced" in problem and "cols" in problem


def test_a_broken_section_underline_and_indentation_are_reported():
    short_underline = """Short underline.

    Details
    -----
    Text.
    """
    assert any("Title underline too short" in p or "Unexpected section title" in p
               for p in rst_problems(short_underline, "module"))
    bad_indent = """Bad indentation.

    Notes
    -----
    A paragraph of two lines,
    whose third line
        is indented by mistake.
    """
    assert any("Unexpected indentation" in p for p in rst_problems(bad_indent))
    list_unindent = """A list item's continuation dedented by one.

    - first item,
      its second line
     and a third out of line
    """
    assert any("Bullet list ends without a blank line; unexpected unindent" in p
               for p in rst_problems(list_unindent))
    title_in_function = """A function docstring may not hold a section title.

    Algorithm
    ---------
    Text.
    """
    assert rst_problems(title_in_function, "module") == []
    assert any("Unexpected section title" in p for p in rst_problems(title_in_function))


def test_sphinx_markup_is_accepted_and_its_content_still_checked():
    doc = """See :func:`numpy.sum`, :class:`pp_models.trees.DiffusionTree`, :math:`x^2`.

    .. math::

       a = b

    .. seealso:: :py:meth:`object.__init__`

    Attributes
    ----------
    n : int
        A count, see :attr:`n`.

    Notes
    -----
    Eq. :eq:`foo` from [1]_.

    References
    ----------
    .. [1] A reference.
    """
    assert rst_problems(doc) == []
    assert rst_problems(doc.replace("seealso:: :py:meth:`object.__init__`",
                                    "seealso:: costs |cols|"))
