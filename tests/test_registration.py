"""Registration cannot be forgotten: every family factory and every Gibbs step is found."""

import importlib
import inspect
import pkgutil

import inference.gibbs
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import registered_steps
from pp_models.registry import family_modules, list_models


def test_every_family_with_a_factory_declares_a_cli_entry():
    registered = {entry.name for entry in list_models()}
    for module in family_modules():
        if callable(getattr(module, "model", None)):
            entry = getattr(module, "CLI_ENTRY", None)
            assert entry is not None, f"{module.__name__} has a model() factory but no CLI_ENTRY"
            assert entry.name in registered


def test_every_gibbs_step_class_is_registered():
    steps = registered_steps()
    for info in pkgutil.iter_modules(inference.gibbs.__path__):
        module = importlib.import_module(f"inference.gibbs.{info.name}")
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
