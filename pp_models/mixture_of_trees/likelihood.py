"""The data of a mixture of trees given assignments and trees, CPTs integrated out.

``X ~ TreeMixtureData(z, trees, n_categories, ess)``: rows with ``z_i = k`` follow tree
``trees[k]`` whose CPTs have BDeu Dirichlet priors (equivalent sample size ``ess``)
integrated out; ``logp`` is ``sum_k log p(D_k | T_k)``
(:mod:`custom_ops.mixture_of_trees.discrete`). Draws sample every component's CPTs from
their priors, then the rows (Numba).

``X ~ GaussianTreeMixtureData(z, trees, m0, kappa0, delta, S0)``: the Gaussian
counterpart, hyper-Markov Normal-Inverse-Wishart parameters integrated out
(:mod:`custom_ops.mixture_of_trees.gaussian`); draws are Pólya-urn draws of the marginal.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous, Discrete
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.jit import rv_draw_cache_key
from custom_ops.mixture_of_trees.discrete import TreeMixtureLogp, sample_tree_mixture_data
from custom_ops.mixture_of_trees.gaussian import (
    GaussianTreeMixtureLogp,
    sample_gaussian_tree_mixture_data,
)
from custom_ops.pymc_guard import (
    refuse_pymc_log_likelihood,
    refuse_pymc_posterior_predictive,
)

__all__ = ["GaussianTreeMixtureData", "GaussianTreeMixtureDataRV", "TreeMixtureData",
           "TreeMixtureDataRV"]


class TreeMixtureDataRV(RandomVariable):
    """Params ``(z (n,), trees (K, V), n_categories (V,), ess ())``; value codes (n, V)."""

    name = "tree_mixture_data"
    signature = "(n),(k,v),(v),()->(n,v)"
    dtype = "int64"
    _print_name = ("TreeMixtureData", "\\operatorname{TreeMixtureData}")

    @classmethod
    def rng_fn(cls, rng, z, trees, n_categories, ess, size):
        refuse_pymc_posterior_predictive("TreeMixtureData")
        if size is not None and tuple(size) != ():
            raise NotImplementedError("TreeMixtureData draws one data set at a time")
        z = np.asarray(z, dtype=np.int64)
        trees = np.asarray(trees, dtype=np.int64)
        out = np.zeros((z.shape[0], trees.shape[1]), dtype=np.int64)
        return sample_tree_mixture_data(rng, z, trees, np.asarray(n_categories, np.int64),
                                        float(ess), out)


tree_mixture_data = TreeMixtureDataRV()


@numba_core_rv_funcify.register(TreeMixtureDataRV)
def _numba_core_tree_mixture_data(op, node):
    refuse_pymc_posterior_predictive("TreeMixtureData")
    @numba_basic.numba_njit
    def random_fn(rng, z, trees, n_categories, ess):
        out = np.zeros((z.shape[0], trees.shape[1]), dtype=np.int64)
        return sample_tree_mixture_data(rng, np.ascontiguousarray(z).astype(np.int64),
                                        np.ascontiguousarray(trees).astype(np.int64),
                                        np.ascontiguousarray(n_categories).astype(np.int64),
                                        float(ess), out)

    return random_fn, rv_draw_cache_key(__file__)


class TreeMixtureData(Discrete):
    """Data of a mixture of trees given ``z`` and the trees, BDeu CPTs integrated out."""

    rv_op = tree_mixture_data

    @classmethod
    def dist(cls, z, trees, n_categories, ess, **kwargs):
        return super().dist([pt.as_tensor_variable(z), pt.as_tensor_variable(trees),
                             pt.as_tensor_variable(np.asarray(n_categories, dtype=np.int64)),
                             pt.as_tensor_variable(float(ess))], **kwargs)

    def support_point(rv, size, z, trees, n_categories, ess):
        return pt.zeros((z.shape[0], trees.shape[-1]), dtype="int64")

    def logp(value, z, trees, n_categories, ess):
        refuse_pymc_log_likelihood("TreeMixtureData")
        return TreeMixtureLogp()(value, z, trees, n_categories, ess)


class GaussianTreeMixtureDataRV(RandomVariable):
    """Params ``(z (n,), trees (K, V), m0 (V,), kappa0 (), delta (), S0 (V, V))``;
    value X (n, V)."""

    name = "gaussian_tree_mixture_data"
    signature = "(n),(k,v),(v),(),(),(v,v)->(n,v)"
    dtype = "float64"
    _print_name = ("GaussianTreeMixtureData", "\\operatorname{GaussianTreeMixtureData}")

    @classmethod
    def rng_fn(cls, rng, z, trees, m0, kappa0, delta, S0, size):
        refuse_pymc_posterior_predictive("GaussianTreeMixtureData")
        if size is not None and tuple(size) != ():
            raise NotImplementedError("GaussianTreeMixtureData draws one data set at a time")
        z = np.asarray(z, dtype=np.int64)
        trees = np.asarray(trees, dtype=np.int64)
        out = np.zeros((z.shape[0], trees.shape[1]))
        return sample_gaussian_tree_mixture_data(
            rng, z, trees, np.asarray(m0, np.float64), float(kappa0), float(delta),
            np.asarray(S0, np.float64), out)


gaussian_tree_mixture_data = GaussianTreeMixtureDataRV()


@numba_core_rv_funcify.register(GaussianTreeMixtureDataRV)
def _numba_core_gaussian_tree_mixture_data(op, node):
    refuse_pymc_posterior_predictive("GaussianTreeMixtureData")
    @numba_basic.numba_njit
    def random_fn(rng, z, trees, m0, kappa0, delta, S0):
        out = np.zeros((z.shape[0], trees.shape[1]))
        return sample_gaussian_tree_mixture_data(
            rng, np.ascontiguousarray(z).astype(np.int64),
            np.ascontiguousarray(trees).astype(np.int64), np.ascontiguousarray(m0),
            float(kappa0), float(delta), np.ascontiguousarray(S0), out)

    return random_fn, rv_draw_cache_key(__file__)


class GaussianTreeMixtureData(Continuous):
    """Data of a mixture of Gaussian trees given ``z`` and the trees, the hyper-Markov
    NIW parameters integrated out (:mod:`custom_ops.mixture_of_trees.gaussian`)."""

    rv_op = gaussian_tree_mixture_data

    @classmethod
    def dist(cls, z, trees, m0, kappa0, delta, S0, **kwargs):
        return super().dist([pt.as_tensor_variable(z), pt.as_tensor_variable(trees),
                             pt.as_tensor_variable(np.asarray(m0, dtype=np.float64)),
                             pt.as_tensor_variable(float(kappa0)),
                             pt.as_tensor_variable(float(delta)),
                             pt.as_tensor_variable(np.asarray(S0, dtype=np.float64))],
                            **kwargs)

    def support_point(rv, size, z, trees, m0, kappa0, delta, S0):
        return pt.zeros((z.shape[0], trees.shape[-1])) + m0

    def logp(value, z, trees, m0, kappa0, delta, S0):
        refuse_pymc_log_likelihood("GaussianTreeMixtureData")
        return GaussianTreeMixtureLogp()(value, z, trees, m0, kappa0, delta, S0)
