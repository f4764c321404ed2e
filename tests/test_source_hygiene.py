"""Source says what the code does, not how it got here.

No line of ``pp_models``, ``custom_ops``, ``inference``, ``tests``, ``benchmarks`` or
``tutorials`` names one of the project's
issues (``issue #11``, a bare ``#11``), a work session (``the ninth session``) or a date
(``2026-11-26``): that history belongs in commit messages, and the measurements and
reasoning that still matter in the docs pages (``docs/families/``, ``docs/benchmarks.md``,
``docs/development.md``). A reference to another project's tracker, ``owner/repo#N``
(e.g. ``numba/numba#10128`` where it explains a workaround), is allowed, and so is a
year in a citation (``Knowles 2012``).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("pp_models", "custom_ops", "inference", "tests", "benchmarks", "tutorials")

_ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    "thirteenth|fourteenth|fifteenth|[0-9]+(?:st|nd|rd|th)|this|that|previous|last|next|"
    "earlier|later|same|another|one"
)
_MONTHS = (
    "Jan|January|Feb|February|Mar|March|Apr|April|May|Jun|June|Jul|July|Aug|August|"
    "Sep|Sept|September|Oct|October|Nov|November|Dec|December"
)
#: (what the line names, pattern)
HISTORY = (
    ("an issue of ours", re.compile(r"\b(?:issues?|PR|pull request)\s*#?\s*[0-9]+\b", re.I)),
    # '#' and digits not glued to a repository name (owner/repo#N is another project's)
    ("an issue of ours", re.compile(r"(?<![\w/.-])#[0-9]+\b")),
    ("a session", re.compile(rf"\b(?:{_ORDINALS})\s+(?:work\s+)?sessions?\b"
                             r"|\bsessions?\s+[0-9]+\b", re.I)),
    ("a date", re.compile(r"\b(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])"
                          r"(?:-(?:0[1-9]|[12][0-9]|3[01]))?\b")),
    ("a date", re.compile(rf"\b(?:[0-9]{{1,2}}\s+(?:{_MONTHS})\.?,?\s+(?:19|20)[0-9]{{2}}"
                          rf"|(?:{_MONTHS})\.?\s+[0-9]{{1,2}},?\s+(?:19|20)[0-9]{{2}})\b")),
)


def history_named(line: str) -> list[str]:
    """What history ``line`` names, each kind once (empty when none)."""
    return list(dict.fromkeys(what for what, pattern in HISTORY if pattern.search(line)))


def _source_files():
    for package in PACKAGES:
        # this file's own examples of what is refused are not history
        yield from (path for path in sorted((ROOT / package).rglob("*.py"))
                    if path != Path(__file__).resolve())


@pytest.mark.parametrize("line, expected", [
    ("    ``benchmarks/bench_clustering.py`` (issue #11; README): a prior", ["an issue of ours"]),
    ("# see Issue 9 for the numbers", ["an issue of ours"]),
    ("# fixed in #42", ["an issue of ours"]),
    ("    marginal (seen in the eleventh session: a fixed exception", ["a session"]),
    ("        first session's sweep) is not invariant", ["a session"]),
    ("    posterior (measured 2026-11-26, N = 200, D = 5).", ["a date"]),
    ("# re-run on 27 November 2026", ["a date"]),
    ("# since Nov 26, 2026", ["a date"]),
    ("    (numba/numba#10128). Two processes compiling the same function", []),
    ("# pytest-dev/pytest-xdist#1386: --dist loadgroup is ignored", []),
    ("    Neal (2000) Algorithm 3 (Murphy 2012 §25.2.4, Algorithm 25.1)", []),
    ("    a test run or a user's session uses a handful", []),
    ("    x = counts[#, 0]", []),
])
def test_the_patterns_tell_history_from_code(line, expected):
    assert history_named(line) == expected


def test_no_source_line_names_an_issue_a_session_or_a_date():
    found = []
    for path in _source_files():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for what in history_named(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()}")
    assert not found, (
        "source lines naming project history (put it in the commit message, and the "
        "reasoning or figures that still matter on the family's docs page):\n"
        + "\n".join(found)
    )
