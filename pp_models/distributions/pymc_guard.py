"""Collapsed likelihoods refuse PyMC's posterior functions instead of answering wrongly.

A collapsed likelihood (data given a partition or a tree, the cluster parameters or
internal locations integrated out) has a forward draw from the parameters' *prior* and a
``logp`` that is one joint number over the observations. Inside
:func:`pymc.sample_posterior_predictive` the first would give prior-predictive
replicates silently, and inside :func:`pymc.compute_log_likelihood` the second would
give one term per draw, not one per observation. Both functions build their graphs in
Python before evaluating anything, so the distribution can tell it is being built for
one of them (its Op's ``make_node``, its ``logp``) and raise an error that names the zoo
function that does it right. Everywhere else (sampling, prior and joint draws) nothing
changes.
"""

from __future__ import annotations

import sys

__all__ = ["CollapsedLikelihoodError", "refuse_pymc_log_likelihood",
           "refuse_pymc_posterior_predictive"]

#: (function name, file name ending) of the PyMC functions that would go wrong
_PREDICTIVE = ("sample_posterior_predictive", "sampling/forward.py")
_LOG_LIKELIHOOD = ("compute_log_density", "stats/log_density.py")


class CollapsedLikelihoodError(NotImplementedError):
    """PyMC's posterior predictive or pointwise log-likelihood asked of a collapsed
    likelihood: the message names the zoo's function."""


def _inside(target) -> bool:
    name, filename = target
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == name and code.co_filename.replace("\\", "/").endswith(filename):
            return True
        frame = frame.f_back
    return False


def refuse_pymc_posterior_predictive(distribution: str) -> None:
    """Raise :class:`CollapsedLikelihoodError` when called while
    :func:`pymc.sample_posterior_predictive` builds its graph (from the collapsed
    distribution ``distribution``'s Op); return otherwise."""
    if _inside(_PREDICTIVE):
        raise CollapsedLikelihoodError(
            f"{distribution} integrates its parameters out, so its forward draw takes them "
            "from their prior: pymc.sample_posterior_predictive would return prior-"
            "predictive replicates. Use inference.sample_posterior_predictive(dt, model), "
            "which draws them from their posterior.")


def refuse_pymc_log_likelihood(distribution: str) -> None:
    """Raise :class:`CollapsedLikelihoodError` when called while
    :func:`pymc.compute_log_likelihood` builds its graph (from the collapsed distribution
    ``distribution``'s ``logp``); return otherwise."""
    if _inside(_LOG_LIKELIHOOD):
        raise CollapsedLikelihoodError(
            f"{distribution}'s logp is one joint number over the observations (its "
            "parameters integrated out), not one term per observation. Use "
            "inference.compute_log_likelihood(dt, model) (or fit(..., "
            "log_likelihood=True)), which gives the conditional predictive of each.")
