"""What a conjugate family is, outside its kernels: its integer code, its
hyperparameters as one flat vector, their validation, and its record.

* codes: :data:`FAMILY_CODES` (the module constants ``BERNOULLI`` ... that the jitted
  dispatchers of :mod:`custom_ops.conjugate.dispatch` compare against) and the ndim of
  each hyperparameter, :data:`HYPER_NDIMS`;
* packing: :func:`pack_hyper` (a hyperparameter tuple as one float64 vector ``hp``, in
  ``hyper_names`` order, S0 row-major), :func:`unpack_hyper`, :func:`flatten_hyper`
  (the same inside Numba), :func:`split_like` (symbolic, for an Op's ``pullback``) and
  the jitted views of a packed ``hp`` (``bernoulli_view``, ``gaussian_view``,
  ``diag_gaussian_view``; the multinomial ``hp`` is its concentration vector);
* validation in Python: the constructors ``bernoulli_hyper``, ``multinomial_hyper``,
  ``gaussian_hyper``, ``diag_gaussian_hyper`` (scalars broadcast; a bad value raises
  ``ValueError`` naming the argument) and :func:`check_data`;
* :class:`ConjugateFamily` and :data:`FAMILIES`, the record of each family's kernels.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import literal_unroll

from custom_ops.conjugate.bernoulli import (
    bernoulli_add,
    bernoulli_log_marginal,
    bernoulli_log_marginal_grad,
    bernoulli_log_predictive,
    bernoulli_point_stats,
    bernoulli_remove,
    bernoulli_stats,
    bernoulli_stats_size,
)
from custom_ops.conjugate.diag_gaussian import (
    diag_gaussian_add,
    diag_gaussian_log_marginal,
    diag_gaussian_log_marginal_grad,
    diag_gaussian_log_predictive,
    diag_gaussian_point_stats,
    diag_gaussian_remove,
    diag_gaussian_stats,
    diag_gaussian_stats_size,
)
from custom_ops.conjugate.gaussian import (
    gaussian_add,
    gaussian_log_marginal,
    gaussian_log_marginal_grad,
    gaussian_log_predictive,
    gaussian_point_stats,
    gaussian_remove,
    gaussian_stats,
    gaussian_stats_size,
)
from custom_ops.conjugate.multinomial import (
    multinomial_add,
    multinomial_log_marginal,
    multinomial_log_marginal_grad,
    multinomial_log_predictive,
    multinomial_point_stats,
    multinomial_remove,
    multinomial_stats,
    multinomial_stats_size,
)
from custom_ops.jit import njit_exact

__all__ = [
    "BERNOULLI",
    "DIAG_GAUSSIAN",
    "FAMILIES",
    "FAMILY_CODES",
    "GAUSSIAN",
    "HYPER_NDIMS",
    "MULTINOMIAL",
    "ConjugateFamily",
    "bernoulli_hyper",
    "bernoulli_view",
    "check_data",
    "diag_gaussian_hyper",
    "diag_gaussian_view",
    "family_code",
    "flatten_hyper",
    "gaussian_hyper",
    "gaussian_view",
    "multinomial_hyper",
    "pack_hyper",
    "split_like",
    "unpack_hyper",
]


# The dispatchers of custom_ops.conjugate.dispatch import these constants and compare
# ``fam`` against them.
BERNOULLI, MULTINOMIAL, GAUSSIAN, DIAG_GAUSSIAN = 0, 1, 2, 3
#: Integer code of each family, as the jitted dispatchers expect it.
FAMILY_CODES = {
    "bernoulli": BERNOULLI,
    "multinomial": MULTINOMIAL,
    "gaussian": GAUSSIAN,
    "diag_gaussian": DIAG_GAUSSIAN,
}
#: ndim of each hyperparameter, in ``hyper_names`` order (0: scalar, 1: (d,), 2: (d, d)).
HYPER_NDIMS = {
    "bernoulli": (1, 1),
    "multinomial": (1,),
    "gaussian": (1, 0, 0, 2),
    "diag_gaussian": (1, 1, 1, 1),
}


def family_code(family, name="family"):
    """The integer code of ``family``; ``ValueError`` naming ``name`` if it is unknown."""
    if not isinstance(family, str) or family not in FAMILY_CODES:
        raise ValueError(f"{name}: unknown {family!r}; choose one of {sorted(FAMILY_CODES)}")
    return FAMILY_CODES[family]


def pack_hyper(family, hyper, name="family"):
    """A family's hyperparameter tuple as one C-contiguous float64 vector (the layout of
    every dispatcher's ``hp`` and of the flat gradients)."""
    family_code(family, name)
    parts = [np.asarray(h, dtype=np.float64).reshape(-1) for h in hyper]
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0))


def unpack_hyper(family, flat, d):
    """Inverse of :func:`pack_hyper` for data with ``d`` columns: arrays shaped like the
    family's hyperparameters (scalars as 0-d arrays). Also splits flat gradients."""
    flat = np.asarray(flat, dtype=np.float64)
    out = []
    pos = 0
    for nd in HYPER_NDIMS[family]:
        size = (1, d, d * d)[nd]
        out.append(flat[pos : pos + size].reshape(((), (d,), (d, d))[nd]).copy())
        pos += size
    return tuple(out)


@njit_exact
def flatten_hyper(hyper):
    """:func:`pack_hyper` inside jitted code: a tuple of 0-d, 1-d and 2-d arrays (an Op's
    hyperparameter inputs, whatever the family) as one float64 vector."""
    size = 0
    for h in literal_unroll(hyper):
        size += h.size
    out = np.empty(size)
    pos = 0
    for h in literal_unroll(hyper):
        for v in np.asarray(h).ravel():
            out[pos] = v
            pos += 1
    return out


def split_like(flat, like):
    """Symbolic inverse of :func:`pack_hyper`: slices of the PyTensor vector ``flat``
    shaped like the tensors ``like`` (an Op's hyperparameter inputs). Ops return one flat
    gradient and their ``pullback`` splits it with this."""
    out = []
    pos = 0
    for h in like:
        out.append(flat[pos : pos + h.size].reshape(h.shape))
        pos = pos + h.size
    return out


@njit_exact
def bernoulli_view(hp):
    """The ``(a, b)`` tuple of a packed bernoulli ``hp`` (views, no copy)."""
    d = hp.shape[0] // 2
    return (hp[:d], hp[d : 2 * d])


@njit_exact
def gaussian_view(hp):
    """The ``(m0, kappa0, nu0, S0)`` tuple of a packed gaussian ``hp`` (views, no copy)."""
    d = int(math.sqrt(hp.shape[0] - 2))  # len(hp) = d^2 + d + 2
    return (hp[:d], hp[d], hp[d + 1], hp[d + 2 : d + 2 + d * d].reshape((d, d)))


@njit_exact
def diag_gaussian_view(hp):
    """The ``(m0, kappa0, a0, b0)`` tuple of a packed diag_gaussian ``hp`` (views)."""
    d = hp.shape[0] // 4
    return (hp[:d], hp[d : 2 * d], hp[2 * d : 3 * d], hp[3 * d : 4 * d])


# --------------------------------------------------------------------------------------
# validation (Python level)
# --------------------------------------------------------------------------------------
def _positive_vector(value, size, name):
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name}: expected a scalar or shape ({size},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name}: must be finite and > 0, got {arr}")
    return np.ascontiguousarray(arr)


def _finite_vector(value, size, name):
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name}: expected a scalar or shape ({size},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: must be finite, got {arr}")
    return np.ascontiguousarray(arr)


def _check_dim(d, name="d"):
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"{name}: must be a positive integer, got {d!r}")
    return int(d)


def bernoulli_hyper(d, a=1.0, b=1.0):
    """Validated Beta-Bernoulli hyperparameters ``(a, b)``, each float64 (d,)."""
    d = _check_dim(d)
    return (_positive_vector(a, d, "a"), _positive_vector(b, d, "b"))


def multinomial_hyper(K, concentration=1.0):
    """Validated Dirichlet hyperparameters ``(concentration,)``, float64 (K,)."""
    K = _check_dim(K, "K")
    return (_positive_vector(concentration, K, "concentration"),)


def gaussian_hyper(d, m0=0.0, kappa0=1.0, nu0=None, S0=None):
    """Validated NIW hyperparameters ``(m0, kappa0, nu0, S0)``.

    Defaults: ``nu0 = d + 2`` (finite prior mean of Σ), ``S0 = I``. ``S0`` may be a
    scalar (times the identity), a (d,) diagonal or a (d, d) symmetric positive definite
    matrix.
    """
    d = _check_dim(d)
    m0 = _finite_vector(m0, d, "m0")
    kappa0 = float(kappa0)
    if not np.isfinite(kappa0) or kappa0 <= 0:
        raise ValueError(f"kappa0: must be finite and > 0, got {kappa0}")
    nu0 = float(d + 2) if nu0 is None else float(nu0)
    if not np.isfinite(nu0) or nu0 <= d - 1:
        raise ValueError(f"nu0: must be finite and > d - 1 = {d - 1}, got {nu0}")
    S0 = np.eye(d) if S0 is None else np.asarray(S0, dtype=np.float64)
    if S0.ndim == 0:
        S0 = float(S0) * np.eye(d)
    elif S0.ndim == 1 and S0.shape == (d,):
        S0 = np.diag(S0)
    if S0.shape != (d, d):
        raise ValueError(f"S0: expected a scalar, shape ({d},) or ({d}, {d}), got {S0.shape}")
    if not np.all(np.isfinite(S0)):
        raise ValueError("S0: must be finite")
    if not np.allclose(S0, S0.T, rtol=1e-10, atol=1e-12):
        raise ValueError("S0: must be symmetric")
    try:
        np.linalg.cholesky(S0)
    except np.linalg.LinAlgError:
        raise ValueError("S0: must be positive definite") from None
    return (m0, kappa0, nu0, np.ascontiguousarray(S0))


def diag_gaussian_hyper(d, m0=0.0, kappa0=1.0, a0=1.0, b0=1.0):
    """Validated Normal-Gamma hyperparameters ``(m0, kappa0, a0, b0)``, each float64 (d,)."""
    d = _check_dim(d)
    return (
        _finite_vector(m0, d, "m0"),
        _positive_vector(kappa0, d, "kappa0"),
        _positive_vector(a0, d, "a0"),
        _positive_vector(b0, d, "b0"),
    )


def check_data(family, X, name="X"):
    """Validate a data matrix for ``family``; return it as C-contiguous float64 (n, d).

    Raises ``ValueError`` naming ``name`` for: not 2-D, no columns, NaN/inf, non-binary
    values (bernoulli), negative or non-integer counts (multinomial).
    """
    if family not in FAMILIES:
        raise ValueError(f"family: unknown {family!r}; choose one of {sorted(FAMILIES)}")
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(f"{name}: must be a numeric array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name}: must be 2-D (n_points, n_dims), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name}: needs at least one column")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    if family == "bernoulli" and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: the bernoulli likelihood needs binary (0/1) data")
    if family == "multinomial":
        if np.any(arr < 0):
            raise ValueError(f"{name}: the multinomial likelihood needs non-negative counts")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name}: the multinomial likelihood needs integer counts")
    return arr


class ConjugateFamily(NamedTuple):
    """The kernels of one conjugate family (see the module docstring for signatures)."""

    name: str
    hyper_names: tuple
    make_hyper: object
    stats_size: object
    stats: object
    point_stats: object
    add: object
    remove: object
    log_marginal: object
    log_marginal_grad: object
    log_predictive: object


FAMILIES: dict[str, ConjugateFamily] = {
    "bernoulli": ConjugateFamily(
        "bernoulli",
        ("a", "b"),
        bernoulli_hyper,
        bernoulli_stats_size,
        bernoulli_stats,
        bernoulli_point_stats,
        bernoulli_add,
        bernoulli_remove,
        bernoulli_log_marginal,
        bernoulli_log_marginal_grad,
        bernoulli_log_predictive,
    ),
    "multinomial": ConjugateFamily(
        "multinomial",
        ("concentration",),
        multinomial_hyper,
        multinomial_stats_size,
        multinomial_stats,
        multinomial_point_stats,
        multinomial_add,
        multinomial_remove,
        multinomial_log_marginal,
        multinomial_log_marginal_grad,
        multinomial_log_predictive,
    ),
    "gaussian": ConjugateFamily(
        "gaussian",
        ("m0", "kappa0", "nu0", "S0"),
        gaussian_hyper,
        gaussian_stats_size,
        gaussian_stats,
        gaussian_point_stats,
        gaussian_add,
        gaussian_remove,
        gaussian_log_marginal,
        gaussian_log_marginal_grad,
        gaussian_log_predictive,
    ),
    "diag_gaussian": ConjugateFamily(
        "diag_gaussian",
        ("m0", "kappa0", "a0", "b0"),
        diag_gaussian_hyper,
        diag_gaussian_stats_size,
        diag_gaussian_stats,
        diag_gaussian_point_stats,
        diag_gaussian_add,
        diag_gaussian_remove,
        diag_gaussian_log_marginal,
        diag_gaussian_log_marginal_grad,
        diag_gaussian_log_predictive,
    ),
}
