"""Conjugate-exponential-family kernels: sufficient statistics, marginal likelihoods,
posterior predictives and hyperparameter gradients, jitted with Numba.

Shared by Bayesian hierarchical clustering (``custom_ops.bhc.evidence``) and the collapsed
samplers of Dirichlet-process mixtures. Formulas: Heller (2007) §2.1.1 (Eqs. 2.12-2.14)
and the standard forms given in ``specs/heller-bhc.md`` §1.2.

Families
--------
======================  ==========================  ======================================
name                    data row ``x``              hyperparameter tuple ``hyper``
======================  ==========================  ======================================
``"bernoulli"``         binary vector, length d     ``(a, b)``: Beta(a_j, b_j) per dim,
                                                    both float64 arrays (d,)
``"multinomial"``       count vector, length K      ``(concentration,)``: Dirichlet
                        (one-hot = categorical)     parameters, float64 array (K,)
``"gaussian"``          real vector, length d       ``(m0, kappa0, nu0, S0)``: Normal-
                        (full covariance)           Inverse-Wishart; m0 (d,), kappa0 > 0,
                                                    nu0 > d - 1 (floats), S0 (d, d) SPD
                                                    inverse-Wishart scale
``"diag_gaussian"``     real vector, length d       ``(m0, kappa0, a0, b0)``: independent
                        (independent dims)          Normal-Gamma per dim, all arrays (d,):
                                                    mu|tau ~ N(m0, 1/(kappa0 tau)),
                                                    tau ~ Gamma(shape a0, rate b0)
======================  ==========================  ======================================

Build ``hyper`` with the validating constructors ``bernoulli_hyper(d, a, b)``,
``multinomial_hyper(K, concentration)``, ``gaussian_hyper(d, m0, kappa0, nu0, S0)``,
``diag_gaussian_hyper(d, m0, kappa0, a0, b0)`` (scalars broadcast; a bad value raises
``ValueError`` naming the argument). Validate data with ``check_data(family, X)``.
The jitted kernels do **not** validate: they trust their inputs.

Kernels (``F`` = ``bernoulli`` | ``multinomial`` | ``gaussian`` | ``diag_gaussian``,
one module each), all ``@numba.njit`` and callable from Python or from other jitted code:

``F_stats(X) -> stats``
    Sufficient statistics of the rows of ``X`` (n, d) as one float64 vector. Statistics
    are **additive**: ``stats(A ∪ B) == stats(A) + stats(B)``, and ``stats[0]`` is the
    number of points. The empty set has all-zero statistics (``np.zeros(F_stats_size(d))``).
    Layouts: bernoulli ``[n, m_1..m_d]``; multinomial ``[n, Σ_i log multinomial
    coefficient(x_i), m_1..m_K]``; gaussian ``[n, Σx (d), Σxxᵀ (d*d, row-major)]``;
    diag_gaussian ``[n, Σx (d), Σx² (d)]``.
``F_point_stats(X) -> (n, S)``
    One row of statistics per data point (BHC leaves).
``F_add(stats, x)`` / ``F_remove(stats, x)``
    In-place update by one point: O(d) (O(d^2) for gaussian).
``F_log_marginal(stats, hyper) -> float``
    log p(D) of the set, θ integrated out; exact, in log space (lgamma throughout).
    O(d) except gaussian, O(d^3) (two Cholesky factorisations); gaussian gives NaN (and
    ``F_log_marginal_grad`` NaN gradients) where the posterior scale is numerically not
    positive definite, at extreme legal hyperparameters, instead of raising.
``F_log_marginal_grad(stats, hyper) -> (value, grads)``
    ``grads`` is a tuple shaped like ``hyper`` holding ∂ log p(D) / ∂ each hyperparameter
    (for gaussian ``S0`` the gradient of the symmetrised matrix, so it is symmetric).
``F_log_predictive(x, stats, hyper) -> float``
    log p(x | D) of one new point: O(d) except gaussian, O(d^3) from raw statistics.
``F_log_predictive_columns(points, cols, stats, hyper, out)`` (Gaussian families)
    ``out[g]`` = the predictive's marginal log density on the columns ``cols`` at
    ``points[g]``; parameters once, then O(len(cols)) (diag) or O(len(cols)^2) per point.

The multinomial model scores count vectors *with* their multinomial coefficients, so a
single count vector's marginal equals ``scipy.stats.dirichlet_multinomial``; for one-hot
rows the coefficient is 1 and the model is the Dirichlet-categorical.

Gaussian (NIW) incremental posterior, for O(d^2) collapsed Gibbs updates:

``gaussian_state(stats, hyper) -> state``
    Packed posterior ``[n, kappa_n, nu_n, m_n (d), L_n (d*d)]`` where ``L_n`` is the lower
    Cholesky factor of the posterior scale S_n. O(d^3) once.
``gaussian_state_add(state, x)`` / ``gaussian_state_remove(state, x)``
    In place, O(d^2) by a rank-1 Cholesky update / downdate.
``gaussian_state_log_predictive(x, state) -> float``
    Multivariate Student-t log density, O(d^2) (one triangular solve).
``gaussian_state_log_marginal(state, hyper) -> float``
    log p(D) from a state, O(d) plus one O(d^3) factorisation of S0.

``gaussian_state_size(d)``.

For generic code, ``FAMILIES[name]`` is a :class:`ConjugateFamily` record of these
functions (Numba accepts jitted functions as arguments, so a sampler kernel can be written
once and specialised per family).

One interface over the families (what BHC, the CRP samplers and the collapsed Ops call):
an integer code ``fam`` (:data:`FAMILY_CODES`) and all hyperparameters in one float64
vector ``hp`` (:func:`pack_hyper`; :func:`unpack_hyper`, :func:`flatten_hyper` inside
Numba, :func:`split_like` for symbolic gradients). Jitted dispatchers ``stats_size``,
``point_stats``, ``add``, ``remove``, ``log_marginal``, ``log_marginal_grad`` (flat
gradient, same layout as ``hp``), ``log_predictive``, ``log_predictive_columns``,
``data_error`` and ``hyper_error``
(error codes, messages in :data:`DATA_ERRORS` / :data:`HYPER_ERRORS`); block states for
collapsed samplers ``state_size``, ``state_table``, ``state_init``, ``state_add``,
``state_remove``, ``state_log_predictive``, ``state_log_marginal`` (the NIW state keeps
its Cholesky factor and Student-t constants, O(d^2) per update); in NumPy,
:func:`posterior_parameters` and :func:`student_t_predictive`.

Modules
-------
The package re-exports every public name; callers import from ``custom_ops.conjugate``.

=================  =====================================================================
``special``        digamma, log multivariate gamma and its derivative
``bernoulli``      Beta-Bernoulli kernels
``multinomial``    Dirichlet-multinomial kernels
``gaussian``       Normal-Inverse-Wishart kernels and the rank-1 Cholesky state
``diag_gaussian``  independent Normal-Gamma kernels
``categorical``    Dirichlet-categorical tables by counts (mixtures of trees, BDeu):
                   ``dirichlet_categorical_log_marginal``, ``..._table_log_marginal``,
                   ``..._log_predictive``, ``dirichlet_posterior``
``families``       codes, hyperparameter packing and views, validating constructors
                   ``F_hyper``, ``check_data``, the :data:`FAMILIES` records
``dispatch``       the jitted dispatchers over family codes, error codes, block states
``posterior``      :func:`posterior_parameters`, :func:`student_t_predictive` (NumPy)
=================  =====================================================================

Adding a family
---------------
1. a module ``custom_ops/conjugate/F.py`` with its jitted kernels (``F_stats_size``,
   ``F_stats``, ``F_point_stats``, ``F_add`` / ``F_remove``, ``F_log_marginal``,
   ``F_log_marginal_grad``, ``F_log_predictive``; shared special functions from
   ``special``);
2. in ``families.py``: its code (a module constant, in :data:`FAMILY_CODES`) with its
   :data:`HYPER_NDIMS`, a jitted ``F_view`` of the packed ``hp`` if it has several
   hyperparameters, the validating constructor ``F_hyper``, its support check in
   :func:`check_data`, and its :class:`ConjugateFamily` record in :data:`FAMILIES`;
3. in ``dispatch.py``: one branch in each dispatcher (``stats_size``, ``point_stats``,
   ``add``, ``remove``, ``log_marginal``, ``log_marginal_grad``, ``log_predictive``,
   ``data_error``, ``hyper_error``, and the ``state_*`` functions when the statistics
   vector is not the fastest block state; ``log_predictive_columns`` for a continuous
   family the DPM predictive density should show); in ``posterior.py``, one branch of
   :func:`posterior_parameters`;
4. its public names re-exported here, and tests in
   ``tests/custom_ops/test_conjugate.py`` (values against scipy / brute force,
   gradients).

Every Op and sampler then accepts it.

Raw-moment statistics lose precision when the data sit far from the origin relative to
their spread (cancellation in Σxxᵀ - n x̄x̄ᵀ); centre or standardise Gaussian data first.
"""

from __future__ import annotations

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
from custom_ops.conjugate.categorical import (
    dirichlet_categorical_log_marginal,
    dirichlet_categorical_log_predictive,
    dirichlet_categorical_table_log_marginal,
    dirichlet_posterior,
)
from custom_ops.conjugate.diag_gaussian import (
    diag_gaussian_add,
    diag_gaussian_log_marginal,
    diag_gaussian_log_marginal_grad,
    diag_gaussian_log_predictive,
    diag_gaussian_log_predictive_columns,
    diag_gaussian_point_stats,
    diag_gaussian_remove,
    diag_gaussian_stats,
    diag_gaussian_stats_size,
)
from custom_ops.conjugate.dispatch import (
    DATA_ERRORS,
    HYPER_ERRORS,
    add,
    data_error,
    hyper_error,
    log_marginal,
    log_marginal_grad,
    log_predictive,
    log_predictive_columns,
    point_stats,
    remove,
    state_add,
    state_init,
    state_log_marginal,
    state_log_predictive,
    state_remove,
    state_size,
    state_table,
    stats_size,
)
from custom_ops.conjugate.families import (
    BERNOULLI,
    DIAG_GAUSSIAN,
    FAMILIES,
    FAMILY_CODES,
    GAUSSIAN,
    HYPER_NDIMS,
    MULTINOMIAL,
    ConjugateFamily,
    bernoulli_hyper,
    bernoulli_view,
    check_data,
    diag_gaussian_hyper,
    diag_gaussian_view,
    family_code,
    flatten_hyper,
    gaussian_hyper,
    gaussian_view,
    multinomial_hyper,
    pack_hyper,
    split_like,
    unpack_hyper,
)
from custom_ops.conjugate.gaussian import (
    gaussian_add,
    gaussian_log_marginal,
    gaussian_log_marginal_grad,
    gaussian_log_predictive,
    gaussian_log_predictive_columns,
    gaussian_point_stats,
    gaussian_posterior,
    gaussian_remove,
    gaussian_state,
    gaussian_state_add,
    gaussian_state_log_marginal,
    gaussian_state_log_predictive,
    gaussian_state_remove,
    gaussian_state_size,
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
from custom_ops.conjugate.posterior import posterior_parameters, student_t_predictive
from custom_ops.conjugate.special import digamma

__all__ = [
    "BERNOULLI",
    "DATA_ERRORS",
    "DIAG_GAUSSIAN",
    "FAMILIES",
    "FAMILY_CODES",
    "GAUSSIAN",
    "HYPER_ERRORS",
    "HYPER_NDIMS",
    "MULTINOMIAL",
    "ConjugateFamily",
    "add",
    "bernoulli_add",
    "bernoulli_hyper",
    "bernoulli_log_marginal",
    "bernoulli_log_marginal_grad",
    "bernoulli_log_predictive",
    "bernoulli_point_stats",
    "bernoulli_remove",
    "bernoulli_stats",
    "bernoulli_stats_size",
    "bernoulli_view",
    "check_data",
    "data_error",
    "diag_gaussian_add",
    "diag_gaussian_hyper",
    "diag_gaussian_log_marginal",
    "diag_gaussian_log_marginal_grad",
    "diag_gaussian_log_predictive",
    "diag_gaussian_log_predictive_columns",
    "diag_gaussian_point_stats",
    "diag_gaussian_remove",
    "diag_gaussian_stats",
    "diag_gaussian_stats_size",
    "diag_gaussian_view",
    "digamma",
    "dirichlet_categorical_log_marginal",
    "dirichlet_categorical_log_predictive",
    "dirichlet_categorical_table_log_marginal",
    "dirichlet_posterior",
    "family_code",
    "flatten_hyper",
    "gaussian_add",
    "gaussian_hyper",
    "gaussian_log_marginal",
    "gaussian_log_marginal_grad",
    "gaussian_log_predictive",
    "gaussian_log_predictive_columns",
    "gaussian_point_stats",
    "gaussian_posterior",
    "gaussian_remove",
    "gaussian_state",
    "gaussian_state_add",
    "gaussian_state_log_marginal",
    "gaussian_state_log_predictive",
    "gaussian_state_remove",
    "gaussian_state_size",
    "gaussian_stats",
    "gaussian_stats_size",
    "gaussian_view",
    "hyper_error",
    "log_marginal",
    "log_marginal_grad",
    "log_predictive",
    "log_predictive_columns",
    "multinomial_add",
    "multinomial_hyper",
    "multinomial_log_marginal",
    "multinomial_log_marginal_grad",
    "multinomial_log_predictive",
    "multinomial_point_stats",
    "multinomial_remove",
    "multinomial_stats",
    "multinomial_stats_size",
    "pack_hyper",
    "point_stats",
    "posterior_parameters",
    "remove",
    "split_like",
    "state_add",
    "state_init",
    "state_log_marginal",
    "state_log_predictive",
    "state_remove",
    "state_size",
    "state_table",
    "stats_size",
    "student_t_predictive",
    "unpack_hyper",
]
