"""Every use of PyMC's private internals in the packages, in one place.

PyMC offers no public way to give a new distribution a default transform (its own
distributions register theirs in a private registry), nor to run ``pm.sample``'s chains
somewhere else than its own processes. The zoo needs both (the GGM precision priors'
Cholesky transform; ``fit(..., executor=...)``, :mod:`inference.executors`); this module
wraps the PyMC internals listed in :data:`PRIVATE_NAMES`, each with the reason, and
nothing else in ``custom_ops``, ``pp_models`` or ``inference`` touches a private name of
PyMC (``tests/test_private_names.py``). ``tests/pp_models/test_pymc_internals.py`` checks
that every name exists in the installed PyMC, with the signature used here, and that its
version is one of :data:`CHECKED_VERSIONS`.

The inference layer uses the sampling loop functions (``pp_models`` never samples): they
live here because one library's internals have one home, below every user of them.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "CHECKED_VERSIONS",
    "PRIVATE_NAMES",
    "iter_chain",
    "register_default_transform",
    "replace_sequential_chains",
    "sequential_chains",
]

#: The PyMC releases (major.minor) this module was checked against.
CHECKED_VERSIONS = ("6.4",)

#: Each private name of PyMC used here -> why (no public route gives it).
PRIVATE_NAMES = {
    "pymc.distributions.transforms._default_transform": (
        "the registry (a singledispatch function of the random variable's Op) PyMC "
        "reads a distribution's default transform from"
    ),
    "pymc.sampling.mcmc._sample_many": (
        "pm.sample's loop over the chains when it samples them one after the other "
        "(cores=1): replaced while an executor runs the chains, so PyMC prepares "
        "everything else as for a local run"
    ),
    "pymc.sampling.mcmc._iter_sample": (
        "the iterator running one chain's draws into its trace (what _sample_many calls"
        " per chain), run on the executor's worker"
    ),
}


def register_default_transform(*ops: type) -> Callable:
    """Decorator: ``function(op, rv) -> Transform`` becomes the default transform of the
    random variables of each Op class in ``ops`` (as PyMC's own distributions declare
    theirs)."""
    from pymc.distributions.transforms import _default_transform

    def decorator(function):
        for op in ops:
            _default_transform.register(op)(function)
        return function

    return decorator


def sequential_chains() -> Callable:
    """PyMC's loop over the chains of a ``cores=1`` ``pm.sample`` (called with keyword
    arguments ``draws, chains, traces, start, rngs, step, callback`` and the rest of
    ``pm.sample``'s, one trace per chain)."""
    import pymc.sampling.mcmc as mcmc

    return mcmc._sample_many


def replace_sequential_chains(loop: Callable) -> None:
    """Make ``loop`` the function ``pm.sample`` calls for its chains with ``cores=1``
    (:func:`sequential_chains`'s signature); put the original back the same way."""
    import pymc.sampling.mcmc as mcmc

    mcmc._sample_many = loop


def iter_chain(*, draws, step, start, trace, chain, tune, model, rng):
    """Run one chain of ``pm.sample`` (what its sequential loop runs per chain): an
    iterator over the draws, which it records in ``trace``."""
    from pymc.sampling.mcmc import _iter_sample

    return _iter_sample(
        draws=draws,
        step=step,
        start=start,
        trace=trace,
        chain=chain,
        tune=tune,
        model=model,
        rng=rng,
    )
