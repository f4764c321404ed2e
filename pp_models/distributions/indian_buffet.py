"""The Indian buffet process as a PyMC distribution over binary feature matrices.

``Z = IndianBuffet("Z", alpha, n_rows=D, k_max=C)`` is a binary ``D x C`` matrix: row
``d`` is customer ``d``, column ``k`` a dish (a latent feature), and an all-zero column
an unused slot. Prior draws (``pm.draw``) run the buffet in Numba (Knowles 2012
§2.6.3): customer ``i`` takes each dish already tried by ``m_k`` customers with
probability ``m_k / i``, then Poisson(alpha / i) new dishes; the dishes are then placed
in uniformly random slots. A draw that needs more than ``k_max`` dishes raises a
``ValueError`` saying how to raise ``k_max``.

``logp`` is the probability of the matrix under that draw: the left-ordered-form class
probability of Eq. 2.12 (Griffiths & Ghahramani 2011) times the probability
``(C - K+)! prod_h K_h! / C!`` of its arrangement in the slots. It is invariant to
permuting the columns and sums to ``P(K+ <= k_max)`` over all binary matrices, 1 up to
the truncation. The class probability itself (which sums to 1 over classes) is
:func:`custom_ops.ibp_fa.ibp.ibp_log_lof`. Both have the gradient ``K+ / alpha - H_D``.
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

from custom_ops.ibp_fa.ibp import ibp_draw, ibp_logp_op
from custom_ops.jit import rv_draw_cache_key
from pp_models.validation import check_int

__all__ = ["IndianBuffet", "IndianBuffetRV", "indian_buffet", "left_ordered"]


class IndianBuffetRV(RandomVariable):
    """Random variable of an IBP feature matrix: params ``(alpha, n_rows, k_max)``."""

    name = "indian_buffet"
    signature = "(),(),()->(n,k)"
    dtype = "int8"
    _print_name = ("IndianBuffet", "\\operatorname{IBP}")

    def make_node(self, rng, size, alpha, n_rows, k_max):
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        n_rows = pt.as_tensor_variable(n_rows)
        k_max = pt.as_tensor_variable(k_max)
        for name, v in (("n_rows", n_rows), ("k_max", k_max)):
            if not v.dtype.startswith(("int", "uint")):
                raise TypeError(f"{name} must be an integer, got dtype {v.dtype}")
        return super().make_node(rng, size, alpha, pt.cast(n_rows, "int64"),
                                 pt.cast(k_max, "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[1].squeeze(), dist_params[2].squeeze())

    @classmethod
    def rng_fn(cls, rng, alpha, n_rows, k_max, size):
        D = int(np.asarray(n_rows).reshape(-1)[0])
        C = int(np.asarray(k_max).reshape(-1)[0])
        alpha = np.asarray(alpha, dtype=np.float64)
        batch = tuple(size) if size is not None else alpha.shape
        alpha = np.broadcast_to(alpha, batch)
        out = np.empty((*batch, D, C), dtype=np.int8)
        for idx in np.ndindex(*batch):
            ibp_draw(rng, float(alpha[idx]), C, out[idx])
        return out


indian_buffet = IndianBuffetRV()


@numba_core_rv_funcify.register(IndianBuffetRV)
def _numba_core_indian_buffet(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, alpha, n_rows, k_max, out=None):
        if out is None:
            out = np.empty((int(n_rows), int(k_max)), dtype=np.int8)
        ibp_draw(rng, float(alpha), int(k_max), out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


class IndianBuffet(Discrete):
    r"""Indian buffet process: a random binary feature matrix with ``k_max`` slots.

    .. math::

        P(Z \mid \alpha) = \alpha^{K_+} e^{-\alpha H_D}
        \prod_{k: m_k > 0} \frac{(D - m_k)!\,(m_k - 1)!}{D!}
        \cdot \frac{(C - K_+)!}{C!}

    for a binary ``D x C`` matrix with column sums ``m_k`` and ``K+`` non-zero columns
    (Knowles 2012 Eq. 2.12 times the probability of the arrangement of the ``K+``
    columns in ``C`` slots; the ``prod_h K_h!`` of Eq. 2.12 cancels).

    ========  =====================================================================
    Support   binary ``n_rows x k_max`` matrices
    K+        :math:`\mathrm{Poisson}(\alpha H_D)`, :math:`H_D = \sum_{j \le D} 1/j`
    Row sum   :math:`\mathrm{Poisson}(\alpha)`
    ========  =====================================================================

    Parameters
    ----------
    alpha : tensor_like of float
        Mass (strength) parameter, ``alpha > 0``.
    n_rows : int
        Number of customers ``D`` (rows); a constant.
    k_max : int
        Number of feature slots ``C`` (columns); a constant. Choose it well above
        ``alpha H_D``: a draw needing more raises an error.

    References
    ----------
    Griffiths, T. L. & Ghahramani, Z. (2011). The Indian buffet process: an introduction
    and review. JMLR 12, 1185-1224.
    Knowles, D. A. (2012). PhD thesis, University of Cambridge, §2.6.
    """

    rv_op = indian_buffet

    @classmethod
    def dist(cls, alpha, n_rows, k_max, **kwargs):
        n_rows = check_int(n_rows, "n_rows", minimum=1)
        k_max = check_int(k_max, "k_max", minimum=1)
        if isinstance(alpha, int | float | np.number) and not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        return super().dist(
            [alpha, pt.constant(int(n_rows), dtype="int64"),
             pt.constant(int(k_max), dtype="int64")],
            **kwargs,
        )

    def support_point(rv, size, alpha, n_rows, k_max):
        shape = (n_rows, k_max) if rv_size_is_none(size) else pt.concatenate(
            [size, [n_rows, k_max]])
        return pt.zeros(shape, dtype="int8")

    def logp(value, alpha, n_rows, k_max):
        if value.ndim != 2:
            raise NotImplementedError("IndianBuffet logp is implemented for one matrix (2-D Z)")
        logp = ibp_logp_op(value, alpha)
        logp = pt.switch(pt.eq(value.shape[0], n_rows) & pt.eq(value.shape[1], k_max), logp,
                         -np.inf)
        return check_parameters(logp, alpha > 0, msg="alpha > 0")


def left_ordered(Z) -> np.ndarray:
    """``Z`` in left-ordered form: active columns first, sorted by their binary history
    read from the first row down (largest first), unused slots last (for pictures)."""
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must be 2-D, got shape {Z.shape}")
    D = Z.shape[0]
    keys = [tuple(-(Z[:, k] != 0).astype(int)) for k in range(Z.shape[1])]
    order = sorted(range(Z.shape[1]), key=lambda k: keys[k])
    del D
    return Z[:, order]
