"""``ppzoo`` answers what needs no model without importing PyMC, PyTensor or Numba.

Importing a family costs seconds (PyMC, PyTensor, Numba); these run the command line in a
fresh interpreter and look at what it imported, not at a clock.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pymc", "pytensor", "numba", "pandas", "scipy", "xarray", "matplotlib", "dask",
         "distributed")

_RUN = """
import contextlib, io, json, sys
from inference.cli import main
err = io.StringIO()
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.stdin.read())))
print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue(), "heavy": heavy}))
"""


def _run(*argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True,
                          input=json.dumps(HEAVY), text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_list_imports_no_family():
    result = _run("list")
    assert result["code"] == 0
    assert result["heavy"] == []
    for name in ("bhc", "dpm", "finite_mixture", "ggm", "ibp_fa", "lda", "mixture_of_trees",
                 "pydt", "iris", "reuters", "sachs"):
        assert name in result["out"]


def test_list_prints_each_check_note_without_importing_the_family():
    # a family whose default run does not pass `ppzoo check` says why in `ppzoo list`;
    # the note is a literal, read from the source like the other fields
    from pp_models.registry import list_model_summaries

    noted = {s.name: s.check_note for s in list_model_summaries() if s.check_note}
    # the measured defaults of LDA (local modes of the topics) cannot pass
    assert "lda" in noted
    result = _run("list")
    assert result["code"] == 0 and result["heavy"] == []
    # one block per listed name: its line and the indented note lines under it
    blocks = re.split(r"\n  (?=\S)", result["out"])
    for name, note in noted.items():
        (block,) = [b for b in blocks if b.startswith(name + " ")]
        assert " ".join(f"default run does not pass `ppzoo check`: {note}".split()) in (
            " ".join(block.split()))
    for block in blocks:
        if block.split(" ")[0] not in noted:
            assert "does not pass" not in block


@pytest.mark.parametrize("argv", [
    ("fit", "dmp"),
    ("describe", "dmp"),
    ("fit", "dpm", "--draws", "0"),
    ("fit", "dpm", "--method", "magic"),
    ("fit", "dpm", "--data", "no-such-file.csv"),
])
def test_argument_errors_import_no_family(argv):
    result = _run(*argv)
    assert result["code"] == 2
    assert result["err"].startswith("ppzoo: error: ") and result["err"].count("\n") == 1
    assert result["heavy"] == []
    if "dmp" in argv:
        assert "did you mean 'dpm'" in result["err"]


def test_summaries_read_from_the_source_match_the_families():
    # `ppzoo list` and the report's file names read each FAMILY's literal fields without
    # importing it; they must be the imported records' values
    from pp_models.registry import list_families, list_family_summaries, no_cli_entries

    summaries = {s.name: s for s in list_family_summaries()}
    families = list_families()
    assert sorted(summaries) == [f.name for f in families]
    for family in families:
        s = summaries[family.name]
        assert (s.description, s.plot_name, s.has_cli) == (
            family.description, family.plot_name, family.has_cli)
        if family.has_cli:
            assert (s.methods, s.default_dataset, s.defaults, s.fit_defaults,
                    s.check_note) == (
                tuple(family.methods), family.default_dataset, dict(family.defaults),
                dict(family.fit_defaults), family.cli.check_note)
        else:
            assert s.reason == family.cli.reason
        assert sys.modules[s.module].FAMILY is family
    assert [s.name for s in no_cli_entries()] == [f.name for f in families if not f.has_cli]


def test_the_package_attributes_are_the_functions():
    # a plain module (PEP 562 laziness, no class of its own), and importing the modules
    # that define the lazy names must not replace them
    import pkgutil
    import types

    import inference
    import inference.fitting
    import inference.relabelling
    import inference.summary_table

    assert type(sys.modules["inference"]) is types.ModuleType
    submodules = {m.name for m in pkgutil.iter_modules(inference.__path__)}
    assert submodules.isdisjoint(inference.__all__)
    assert callable(inference.fit) and inference.fit.__name__ == "fit"
    assert callable(inference.summary) and inference.summary.__name__ == "summary"
    assert callable(inference.relabel) and inference.relabel.__name__ == "relabel"
    from inference import METHODS, fit

    assert fit is sys.modules["inference.fitting"].fit and "gibbs" in METHODS
