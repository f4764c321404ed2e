"""Registration cannot be forgotten: every family factory and every Gibbs step is found,
and every class or function a package imports from its own modules is in its ``__all__``."""

import importlib
import inspect
import pkgutil
import sys

import inference.gibbs
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import registered_steps
from pp_models.registry import (
    CLIEntry,
    Family,
    NoCLIEntry,
    family_modules,
    list_families,
    list_models,
)


def missing_families(modules, registered):
    """Modules with a ``model`` factory that declare no registered :class:`Family` whose
    factory it is (with a CLI entry, or a :class:`NoCLIEntry` and its reason)."""
    missing = []
    for module in modules:
        if callable(getattr(module, "model", None)):
            family = getattr(module, "FAMILY", None)
            ok = (isinstance(family, Family) and family.name in registered
                  and family.factory is module.model)
            if not ok:
                missing.append(module.__name__)
    return missing


def test_every_family_with_a_factory_declares_its_record():
    registered = {family.name for family in list_families()}
    missing = missing_families(family_modules(), registered)
    assert not missing, f"model() factories without a FAMILY record: {missing}"
    # and a family ppzoo runs has its CLI fields, one it does not its reason
    for family in list_families():
        assert family.has_cli == (family in list_models())
        assert isinstance(family.cli, CLIEntry) or family.cli.reason.strip()


def test_the_family_check_sees_a_factory_without_one():
    import types

    def model():
        return None

    def other():
        return None

    declined = Family("declined", "not a posterior", model, NoCLIEntry("not a posterior"))
    wrong = Family("wrong", "another factory", other, NoCLIEntry("not a posterior"))
    bare = types.SimpleNamespace(__name__="bare", model=model)
    kept = types.SimpleNamespace(__name__="kept", model=model, FAMILY=declined)
    stray = types.SimpleNamespace(__name__="stray", model=model, FAMILY="bhc")
    mismatched = types.SimpleNamespace(__name__="mismatched", model=model, FAMILY=wrong)
    assert missing_families([bare, kept, stray, mismatched], {"declined", "wrong"}) == [
        "bare", "stray", "mismatched"]


def test_a_family_record_refuses_what_it_cannot_use():
    import pytest

    def model():
        return None

    with pytest.raises(TypeError, match="cli must be a CLIEntry or a NoCLIEntry"):
        Family("x", "y", model, cli="gibbs")
    with pytest.raises(ValueError, match="give plot and plot_name together"):
        Family("x", "y", model, NoCLIEntry("z"), plot=print)
    with pytest.raises(ValueError, match="give the reason"):
        NoCLIEntry(" ")
    with pytest.raises(ValueError, match="has no ppzoo entry: z"):
        Family("x", "y", model, NoCLIEntry("z")).build  # noqa: B018


def test_every_gibbs_step_class_is_registered():
    steps = registered_steps()
    names = [info.name for info in
             pkgutil.walk_packages(inference.gibbs.__path__, "inference.gibbs.")]
    # the walk reaches the steps in subpackages (the DPM's are in inference.gibbs.dpm),
    # and importing inference.gibbs imported every one of them (so every step registered)
    assert "inference.gibbs.dpm.crp_collapsed" in names
    missed = [name for name in names
              if name not in sys.modules and not name.rpartition(".")[2].startswith("_")]
    assert not missed, f"import inference.gibbs does not import {missed}"
    for module in map(importlib.import_module, names):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, ZooGibbsStep)
                and cls is not ZooGibbsStep
                and cls.__module__ == module.__name__
                and not inspect.isabstract(cls)
                and not cls.__name__.startswith("_")
            ):
                assert steps.get(cls.name) is cls, f"{cls.__qualname__} is not registered"


def test_every_family_has_a_test_worker_group():
    # tests/conftest.py sends a family's tests to one xdist worker so a cold run compiles
    # its kernels once; a family without test keywords would be compiled twice
    from pp_models.registry import list_family_summaries
    from tests.helpers.worker_groups import FAMILY_TEST_KEYWORDS, family_of

    names = {s.name for s in list_family_summaries()}
    assert set(FAMILY_TEST_KEYWORDS) <= names, "keywords for a family that does not exist"
    missing = [name for name in sorted(names) if not FAMILY_TEST_KEYWORDS.get(name)
               or any(family_of(f"tests/test_x.py::test_{key}") != name
                      for key in FAMILY_TEST_KEYWORDS[name])]
    assert not missing, ("give these families keywords of their own in "
                         f"tests/helpers/worker_groups.py's FAMILY_TEST_KEYWORDS: {missing}")


def test_every_family_is_named_by_its_folder_and_no_factory_types_the_name():
    # ZooModelInfo.family comes from the factory's module (family_of_module(__name__)),
    # so the record's name must be that folder, and no factory may spell it again
    import ast
    from pathlib import Path

    from pp_models.registry import family_of_module

    for family in list_families():
        assert family_of_module(family.factory.__module__) == family.name, family.name
    root = Path(__file__).resolve().parents[1] / "pp_models"
    typed = []
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "ZooModelInfo(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ZooModelInfo"
                    and any(k.arg == "family" and isinstance(k.value, ast.Constant)
                            for k in node.keywords)):
                typed.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert not typed, f"family=family_of_module(__name__), not the name typed: {typed}"


def test_every_class_and_function_a_package_imports_from_its_modules_is_in_its_all():
    # a name left out of __all__ is missing from ``from package import *`` and from the
    # package's documented surface although the package imports it for its users
    missing = {}
    for top in ("pp_models", "custom_ops", "inference"):
        root = importlib.import_module(top)
        packages = [root] + [importlib.import_module(info.name)
                             for info in pkgutil.walk_packages(root.__path__, f"{top}.")
                             if info.ispkg]
        for package in packages:
            exported = getattr(package, "__all__", None)
            if exported is None:  # no __all__: every public name is exported already
                continue
            imported = [
                name for name, value in vars(package).items()
                if not name.startswith("_")
                and (inspect.isclass(value) or inspect.isfunction(value))
                and getattr(value, "__module__", "").startswith(f"{package.__name__}.")
            ]
            if left_out := sorted(set(imported) - set(exported)):
                missing[package.__name__] = left_out
    assert not missing, f"add these names to their package's __all__: {missing}"
