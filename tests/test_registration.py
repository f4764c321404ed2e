"""Registration cannot be forgotten: every family factory and every Gibbs step is found,
and every class or function a package imports from its own modules is in its ``__all__``."""

import importlib
import inspect
import pkgutil
import sys

import inference.gibbs
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import registered_steps
from pp_models.registry import ModelEntry, NoCLIEntry, family_modules, list_models


def missing_cli_entries(modules, registered):
    """Modules with a ``model`` factory whose ``CLI_ENTRY`` is neither a registered
    :class:`ModelEntry` nor a :class:`NoCLIEntry` with its reason."""
    missing = []
    for module in modules:
        if callable(getattr(module, "model", None)):
            entry = getattr(module, "CLI_ENTRY", None)
            ok = (isinstance(entry, ModelEntry) and entry.name in registered) or (
                isinstance(entry, NoCLIEntry) and entry.reason.strip())
            if not ok:
                missing.append(module.__name__)
    return missing


def test_every_family_with_a_factory_declares_a_cli_entry():
    registered = {entry.name for entry in list_models()}
    missing = missing_cli_entries(family_modules(), registered)
    assert not missing, f"model() factories without a CLI_ENTRY (or a NoCLIEntry): {missing}"


def test_the_cli_entry_check_sees_a_factory_without_one():
    import types

    def model():
        return None

    bare = types.SimpleNamespace(__name__="bare", model=model)
    declined = types.SimpleNamespace(__name__="declined", model=model,
                                     CLI_ENTRY=NoCLIEntry("declined", "not a posterior"))
    stray = types.SimpleNamespace(__name__="stray", model=model, CLI_ENTRY="bhc")
    assert missing_cli_entries([bare, declined, stray], {"bhc"}) == ["bare", "stray"]


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
    # its kernels once; a family missing from FAMILY_KEYWORDS would be compiled twice
    from tests.conftest import family_of

    missing = [entry.name for entry in list_models() if family_of(entry.name) is None]
    assert not missing, f"add these families to FAMILY_KEYWORDS in tests/conftest.py: {missing}"


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
