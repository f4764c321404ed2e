"""The PyMC internals :mod:`pp_models.pymc_internals` uses exist in the installed PyMC, with
the parameters the adapter passes, and its version is one the module was checked on: a
PyMC upgrade that changes one fails here, by name."""

import importlib
import inspect

import pymc

from pp_models import pymc_internals


def test_pymc_is_a_checked_version():
    major_minor = ".".join(pymc.__version__.split(".")[:2])
    assert major_minor in pymc_internals.CHECKED_VERSIONS, (
        f"PyMC {pymc.__version__} is not among the versions pp_models.pymc_internals was "
        f"checked on {pymc_internals.CHECKED_VERSIONS}: check each name in its "
        "PRIVATE_NAMES against this PyMC, then add the version"
    )


def test_every_private_name_the_adapter_uses_exists():
    for dotted in pymc_internals.PRIVATE_NAMES:
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), f"PyMC lacks {dotted}"


def test_the_chain_loops_take_the_arguments_the_adapter_passes():
    from pymc.sampling import mcmc

    loop = inspect.signature(pymc_internals.sequential_chains()).parameters
    assert {"draws", "chains", "traces", "start", "rngs", "step", "callback"} <= set(loop)
    one = inspect.signature(mcmc._iter_sample).parameters
    assert {"draws", "step", "start", "trace", "chain", "tune", "model", "rng"} <= set(one)


def test_the_sequential_loop_is_replaced_and_put_back():
    original = pymc_internals.sequential_chains()
    calls = []
    pymc_internals.replace_sequential_chains(lambda **kw: calls.append(kw))
    try:
        assert pymc_internals.sequential_chains() is not original
    finally:
        pymc_internals.replace_sequential_chains(original)
    assert pymc_internals.sequential_chains() is original


def test_a_registered_default_transform_is_the_one_pymc_uses():
    from pymc.distributions.transforms import CholeskyCovTransform

    from pp_models.distributions import BayesianGLassoPrecision

    with pymc.Model() as model:
        BayesianGLassoPrecision("omega", lam=1.0, p=3)
    assert isinstance(model.rvs_to_transforms[model["omega"]], CholeskyCovTransform)
