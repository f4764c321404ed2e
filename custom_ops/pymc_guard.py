"""Collapsed likelihoods refuse PyMC's posterior functions instead of answering wrongly.

A collapsed likelihood (data given a partition or a tree, the cluster parameters or
internal locations integrated out) has a forward draw from the parameters' *prior* and a
``logp`` that is one joint number over the observations. Inside
:func:`pymc.sample_posterior_predictive` the first would give prior-predictive
replicates silently, and inside :func:`pymc.compute_log_likelihood` the second would
give one term per draw, not one per observation. Both functions build their graphs in
Python before evaluating anything, so the distribution can tell it is being built for
one of them and raise an error that names the zoo function that does it right: its
``logp`` (called while the log-likelihood graph is built), its forward draw (its Numba
implementation is made while the sampling function is compiled, its Python ``rng_fn`` runs
inside it), or, for a forward draw written as a symbolic graph (a ``pm.CustomDist`` with
``dist=``), :func:`forward_draw_guard` around the draw. Everywhere else (sampling, prior
and joint draws) nothing changes.
"""

from __future__ import annotations

import inspect

import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as numba_basic

from custom_ops.jit import register_numba_op

__all__ = [
    "CollapsedLikelihoodError",
    "ForwardDrawGuard",
    "forward_draw_guard",
    "refuse_pymc_log_likelihood",
    "refuse_pymc_posterior_predictive",
]

#: (function name, file name ending) of the PyMC functions that would go wrong
_PREDICTIVE = ("sample_posterior_predictive", "sampling/forward.py")
_LOG_LIKELIHOOD = ("compute_log_density", "stats/log_density.py")


class CollapsedLikelihoodError(NotImplementedError):
    """PyMC's posterior predictive or pointwise log-likelihood asked of a collapsed
    likelihood: the message names the zoo's function."""


def _inside(target) -> bool:
    name, filename = target
    # PyMC offers no hook that says which of its functions is building a graph: its
    # call stack does (tests/custom_ops/test_pymc_guard.py fails if PyMC renames them)
    frame = inspect.currentframe()
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
            "which draws them from their posterior."
        )


def refuse_pymc_log_likelihood(distribution: str) -> None:
    """Raise :class:`CollapsedLikelihoodError` when called while
    :func:`pymc.compute_log_likelihood` builds its graph (from the collapsed distribution
    ``distribution``'s ``logp``); return otherwise."""
    if _inside(_LOG_LIKELIHOOD):
        raise CollapsedLikelihoodError(
            f"{distribution}'s logp is one joint number over the observations (its "
            "parameters integrated out), not one term per observation. Use "
            "inference.compute_log_likelihood(dt, model) (or fit(..., "
            "log_likelihood=True)), which gives the conditional predictive of each."
        )


class ForwardDrawGuard(Op):
    """The identity on an integer draw, refusing :func:`pymc.sample_posterior_predictive`
    (:func:`refuse_pymc_posterior_predictive`) for the collapsed distribution named by
    ``distribution``: put around a forward draw written as a symbolic graph.

    Input and output: the same integer tensor. Not differentiable (integer values).
    """

    __props__ = ("distribution",)
    view_map = {0: [0]}

    def __init__(self, distribution: str):
        if not isinstance(distribution, str) or not distribution:
            raise TypeError("distribution must be a non-empty str naming the distribution")
        self.distribution = distribution

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        if not x.dtype.startswith(("int", "uint")):
            raise TypeError(f"x must be an integer draw, got dtype {x.dtype}")
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        refuse_pymc_posterior_predictive(self.distribution)
        output_storage[0][0] = inputs[0]

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def pullback(self, inputs, outputs, cotangents):
        return [grad_undefined(self, 0, inputs[0], "x is an integer draw")]


def forward_draw_guard(x, distribution: str):
    """``x`` (a symbolic integer forward draw of the collapsed distribution
    ``distribution``) through :class:`ForwardDrawGuard`."""
    return ForwardDrawGuard(distribution)(x)


@register_numba_op(ForwardDrawGuard)
def _numba_forward_draw_guard(op, node, **kwargs):
    # compiled while pm.sample_posterior_predictive builds its function: refuse there
    refuse_pymc_posterior_predictive(op.distribution)

    @numba_basic.numba_njit
    def identity(x):
        return x

    return identity
