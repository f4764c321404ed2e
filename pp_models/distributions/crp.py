"""The Chinese restaurant process as a PyMC distribution over partitions.

``z = CRP("z", alpha, n)`` (optionally ``discount=d`` for the two-parameter Pitman-Yor
process) is a random partition of ``n`` items stored as a canonical integer label
vector: ``z[0] == 0`` and each new block gets the next integer in order of first
appearance. Its ``logp`` is the exchangeable partition probability function (Pitman 2006
Eq. 3.6; Ewens: Murphy 2012 Eq. 25.60, Heller 2007 Eq. 3.9), which is invariant to
permuting the items; non-canonical label vectors have probability zero, so ``logp`` is
a proper probability mass function over label vectors and sums to one over the Bell
number ``B_n`` of partitions.

Prior draws (``pm.draw``, ``pm.sample_prior_predictive``) seat customers one at a time
(Murphy 2012 Eq. 25.28); they run as compiled Numba code.

The random variable's ``owner.op`` is a :class:`CRPRV`, which is what the zoo's
collapsed Gibbs step claims (``inference.gibbs``).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.dpm.crp import crp_draw, crp_logp_op
from custom_ops.jit import rv_draw_cache_key
from pp_models.validation import check_int

__all__ = ["CRP", "CRPRV", "crp"]


class CRPRV(RandomVariable):
    """Random variable of a Chinese-restaurant partition: params ``(alpha, discount, n)``."""

    name = "crp"
    signature = "(),(),()->(n)"
    dtype = "int64"
    _print_name = ("CRP", "\\operatorname{CRP}")

    def make_node(self, rng, size, alpha, discount, n):
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        discount = pt.as_tensor_variable(discount, dtype="float64")
        n = pt.as_tensor_variable(n)
        if not n.dtype.startswith(("int", "uint")):
            raise TypeError(f"n must be an integer, got dtype {n.dtype}")
        if not all(n.type.broadcastable):
            raise ValueError("n must be a scalar")
        return super().make_node(rng, size, alpha, discount, pt.cast(n, "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[2].squeeze(),)

    @classmethod
    def rng_fn(cls, rng, alpha, discount, n, size):
        n = int(np.asarray(n).reshape(-1)[0])
        alpha = np.asarray(alpha, dtype=np.float64)
        discount = np.asarray(discount, dtype=np.float64)
        batch = np.broadcast_shapes(alpha.shape, discount.shape)
        if size is not None:
            batch = tuple(size)
        alpha = np.broadcast_to(alpha, batch)
        discount = np.broadcast_to(discount, batch)
        out = np.empty((*batch, n), dtype=np.int64)
        for idx in np.ndindex(*batch):
            crp_draw(rng, float(alpha[idx]), float(discount[idx]), n, out[idx])
        return out


crp = CRPRV()


@numba_core_rv_funcify.register(CRPRV)
def _numba_core_crp(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, alpha, discount, n, out=None):
        size = int(n)
        if out is None:
            out = np.empty(size, dtype=np.int64)
        crp_draw(rng, float(alpha), float(discount), size, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


class CRP(Discrete):
    r"""Chinese restaurant process: a random partition of ``n`` items.

    .. math::

        p(z \mid \alpha, d) = \frac{\prod_{k=1}^{K-1} (\alpha + k d)}
        {\prod_{i=1}^{n-1} (\alpha + i)} \prod_{k=1}^{K} \frac{\Gamma(n_k - d)}{\Gamma(1 - d)}

    for a canonical label vector ``z`` with ``K`` blocks of sizes ``n_k`` (zero for
    non-canonical vectors). ``d = 0`` is the Ewens distribution of the Dirichlet process.

    ========  =====================================================================
    Support   canonical labels: ``z_0 = 0``, ``z_i <= max(z_{<i}) + 1``
    Mean K    :math:`\sum_{i=1}^{n} \alpha / (\alpha + i - 1)` for ``d = 0``
    ========  =====================================================================

    Parameters
    ----------
    alpha : tensor_like of float
        Concentration; ``alpha > 0`` (``alpha > -discount`` when ``discount > 0``).
    n : int
        Number of items (the length of ``z``); a constant.
    discount : tensor_like of float
        Pitman-Yor discount ``0 <= d < 1``; default 0 (Dirichlet process).

    References
    ----------
    Pitman, J. (2006). Combinatorial Stochastic Processes, §3.1-3.2, Eq. 3.6.
    Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
    models. JCGS 9(2), 249-265.
    """

    rv_op = crp

    @classmethod
    def dist(cls, alpha, n, discount=0.0, **kwargs):
        n = check_int(n, "n", minimum=1)
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        discount = pt.as_tensor_variable(discount, dtype="float64")
        return super().dist([alpha, discount, pt.constant(int(n), dtype="int64")], **kwargs)

    def support_point(rv, size, alpha, discount, n):
        # one block: canonical for every n
        shape = (n,) if rv_size_is_none(size) else pt.concatenate([size, [n]])
        return pt.zeros(shape, dtype="int64")

    def logp(value, alpha, discount, n):
        if value.ndim != 1:
            raise NotImplementedError("CRP logp is implemented for a single partition (1-D z)")
        logp = crp_logp_op(value, alpha, discount)
        logp = pt.switch(pt.eq(value.shape[0], n), logp, -np.inf)
        return check_parameters(
            logp,
            discount >= 0,
            discount < 1,
            alpha > -discount,
            msg="0 <= discount < 1, alpha > -discount",
        )
