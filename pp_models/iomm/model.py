"""The infinite overlapping mixture model (IOMM; Heller 2007 ch. 7).

Each of ``N`` points may belong to several clusters; a point's density is the normalised
product of its clusters' densities (Eq. 7.2), and the memberships have an Indian buffet
prior over the points (§7.3)::

    Z ~ IBP(alpha)                      N x C binary, C slots (unused slots: zero columns)
    theta_k ~ prior                     every slot k (unused slots: prior draws)
    x_i | z_i, Theta ~ prod_k p(x_i | theta_k)^{z_ik} / c(z_i, Theta)    (Eq. 7.2)

For exponential-family experts the product is in the same family with the natural
parameters summed (Eq. 7.4):

- ``likelihood="bernoulli"``: ``x_id ~ Bernoulli(theta~_id)`` with ``logit theta~_id =
  sum_k z_ik logit theta_kd``, which is Eq. 7.7; ``theta_kd ~ Beta(a, b)``. A point in no
  cluster has ``theta~ = 1/2`` (Eq. 7.7's empty products): uniform on ``{0, 1}^D``.
- ``likelihood="gaussian"``, diagonal experts: ``x_id ~ N(mu~_id, 1/tau~_id)`` with the
  summed precision ``tau~_id = sum_k z_ik tau_kd`` and the precision-weighted mean
  ``mu~_id = sum_k z_ik tau_kd mu_kd / tau~_id`` (Eq. 7.5 with diagonal covariances);
  ``mu_kd ~ N(m_d, s_d^2)``, ``tau_kd ~ Gamma(shape_d, rate_d)``. The empty product is
  the improper flat density; a point in no cluster gets the background
  ``N(background mean, background sd^2)``, the broad Gaussian the thesis puts for the
  uniform (footnote to Eq. 7.14).
- ``alpha`` fixed, or ``alpha ~ Gamma(a, rate b)``.

``fit(model)`` runs Algorithm 7.1: the step ``"iomm_memberships"`` (Gibbs on the shared
memberships, Metropolis-Hastings on each point's own clusters, and ``alpha`` when
random) and the step ``"iomm_parameters"`` (Metropolis-Hastings on every used cluster's
parameters, Eq. 7.13; unused slots redrawn from the prior); with ``thin > 1`` the step
``"iomm_sweeps"`` alternates the two ``thin`` times per recorded draw. Which slot a cluster
occupies is arbitrary; the derived statistics are label-invariant. With the default
capacity each chain starts from a prior draw of ``Z`` (``initval="prior"``): from the
empty matrix, clusters appear only through the moves on points' own clusters, whose
prior-drawn parameters rarely fit, and short runs stay near empty. With a capacity of
the caller's, chains start empty (a prior draw might need more slots).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pp_models.distributions import IndianBuffet
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
)
from pp_models.registry import family_of_module
from pp_models.validation import (
    as_binary_matrix,
    as_data_matrix,
    check_feature_names,
    check_fixed_or_gamma,
    check_int,
    check_positive,
    check_positive_vector,
)

__all__ = [
    "DEFAULT_OMEGA",
    "LIKELIHOODS",
    "STEP_MEMBERSHIPS",
    "STEP_PARAMETERS",
    "STEP_SWEEPS",
    "IOMMSpec",
    "default_capacity",
    "get_spec",
    "model",
    "parameter_names",
]

LIKELIHOODS = ("bernoulli", "gaussian")

#: Registry names of the two steps of Algorithm 7.1, and of the step that alternates
#: them ``thin`` times per draw.
STEP_MEMBERSHIPS = "iomm_memberships"
STEP_PARAMETERS = "iomm_parameters"
STEP_SWEEPS = "iomm_sweeps"

#: Default width parameter omega of the parameter proposals (Eq. 7.13): the Beta
#: proposal's concentration (Bernoulli), the inverse variance of the random walks in the
#: expert's own units (Gaussian).
DEFAULT_OMEGA = {"bernoulli": 20.0, "gaussian": 4.0}

#: Default Gaussian priors, in units of each column's standard deviation ``s``: cluster
#: means ``N(column mean, s^2)``; precisions ``Gamma(2, rate 2 s^2 / 4)``, i.e. an expert's
#: sd about half the column's a priori; background ``N(column midpoint, range^2)``.
GAUSSIAN_PRECISION_SHAPE = 2.0
GAUSSIAN_EXPERT_SCALE = 0.5

#: Split-merge proposals per sweep over the points (``model(split_merge=...)``).
DEFAULT_SPLIT_MERGE = 0

_SPEC_ATTRIBUTE = "_pp_models_iomm_spec"


@dataclass(frozen=True, eq=False)
class IOMMSpec:
    """What :func:`model` built; the steps receive it as an option."""

    likelihood: str
    N: int
    D: int
    slots: int
    alpha: float | None  # the fixed value, None when random
    alpha_prior: tuple[float, float] | None  # Gamma (shape, rate) when random
    prior: dict  # bernoulli: a, b; gaussian: mean, sd, shape, rate (each a (D,) array)
    background: np.ndarray | None  # (D, 2) mean and sd (gaussian)
    omega: float

    @property
    def random_alpha(self) -> bool:
        return self.alpha is None


def parameter_names(likelihood: str) -> tuple[str, ...]:
    """The cluster-parameter variables of the model: ``("theta",)`` or ``("mu", "tau")``."""
    return ("theta",) if likelihood == "bernoulli" else ("mu", "tau")


def default_capacity(alpha_mean: float, N: int) -> int:
    """Slots of ``Z``: ``max(20, 2 E[K+] + 5 sd + 10)`` under the prior ``K+ ~
    Poisson(alpha H_N)``; a posterior needing more is counted in the membership step's
    ``capacity_rejections``."""
    mean_k = alpha_mean * float(np.sum(1.0 / np.arange(1, N + 1)))
    return int(max(20, np.ceil(2 * mean_k + 5 * np.sqrt(mean_k) + 10)))


def _alpha_spec(alpha):
    checked = check_fixed_or_gamma(alpha, "alpha")
    return (None, checked) if isinstance(checked, tuple) else (checked, None)


def _pair(value, name, D):
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (two numbers, or two vectors of {D}), got "
                        f"{value!r}")
    return value


def model(
    X,
    *,
    likelihood: str = "bernoulli",
    alpha=1.0,
    capacity: int | None = None,
    theta_prior=None,
    mean_prior=None,
    precision_prior=None,
    background=None,
    omega: float | None = None,
    split_merge: int = DEFAULT_SPLIT_MERGE,
    thin: int = 1,
    feature_names=None,
) -> pm.Model:
    """Build the infinite overlapping mixture model of ``X`` (points x features).

    Parameters
    ----------
    X : array-like, shape (N, D)
        One point per row; binary (0/1) for ``likelihood="bernoulli"``.
    likelihood : {"bernoulli", "gaussian"}
        The experts: multivariate Bernoulli (Eqs 7.6-7.7) or Gaussian with a diagonal
        covariance (Eq. 7.5).
    alpha : float or (a, b)
        IBP concentration (the expected number of clusters per point): fixed (> 0), or
        a Gamma(a, rate b) prior.
    capacity : int, optional
        Slots of ``Z``, the most clusters a state can hold. Default
        :func:`default_capacity` at the prior mean of alpha, and each chain starts from
        a prior draw of ``Z``; with a capacity given, chains start from the empty matrix.
    theta_prior : (a, b), optional
        Beta prior of the Bernoulli experts' ``theta_kd`` (numbers or vectors of D).
        Default ``(1, 1)``, uniform.
    mean_prior : (m, s), optional
        Normal prior of the Gaussian experts' means (numbers or vectors of D). Default:
        each column's mean and standard deviation.
    precision_prior : (shape, rate), optional
        Gamma prior of the Gaussian experts' precisions. Default: shape 2 and the rate
        that puts an expert's sd at half the column's sd a priori.
    background : (mean, sd), optional
        The Gaussian density of a point in no cluster. Default: each column's midpoint
        and range (broad over the data).
    omega : float, optional
        Width parameter of the parameter proposals (Eq. 7.13; larger is narrower).
        Default :data:`DEFAULT_OMEGA` of the likelihood.
    split_merge : int
        Split-merge proposals on whole clusters after each sweep over the points
        (:mod:`custom_ops.iomm.split_merge`: a split proposes the new cluster's members
        and its expert, fitted to them; a merge frees a slot; 0: Algorithm 7.1's
        single-site moves only).
    thin : int
        Sweeps per recorded draw: with ``thin > 1`` one step (``"iomm_sweeps"``)
        alternates the membership and parameter sweeps ``thin`` times per draw, so a run
        of ``draws`` explores ``thin`` times as far for the per-draw cost of one.
    feature_names : sequence of str, optional
        Names of the columns (coordinates of the ``feature`` dimension).

    Returns
    -------
    pymc.Model
        Never samples. Free ``Z`` (IndianBuffet, N x C), ``theta`` (C x D) or ``mu`` and
        ``tau`` (C x D), and ``alpha`` when random; observed ``X``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: ``X`` not 2-D, with fewer than 2 rows, non-finite values,
        or non-binary values for the Bernoulli likelihood; an unknown ``likelihood``;
        ``alpha <= 0``; non-positive prior parameters; ``capacity < 1``; options of the
        other likelihood; ``split_merge < 0``; ``thin < 1``. Nothing is compiled.
    """
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
    if likelihood == "bernoulli":
        data = as_binary_matrix(X, "X", min_rows=2)
        data = np.asarray(data.toarray() if hasattr(data, "toarray") else data,
                          dtype=np.float64)
    else:
        data = as_data_matrix(X, "X", min_rows=2)
    N, D = data.shape
    if likelihood == "bernoulli":
        for name, value in (("mean_prior", mean_prior), ("precision_prior", precision_prior),
                            ("background", background)):
            if value is not None:
                raise ValueError(f"{name} is an option of likelihood='gaussian'; the "
                                 "bernoulli model takes theta_prior")
        a, b = _pair((1.0, 1.0) if theta_prior is None else theta_prior, "theta_prior", D)
        prior = {"a": check_positive_vector(a, "theta_prior[0] (Beta a)", D),
                 "b": check_positive_vector(b, "theta_prior[1] (Beta b)", D)}
        bg = None
    else:
        if theta_prior is not None:
            raise ValueError("theta_prior is an option of likelihood='bernoulli'; the "
                             "gaussian model takes mean_prior and precision_prior")
        sd = data.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        if mean_prior is None:
            mean_prior = (data.mean(axis=0), sd)
        m0, s0 = _pair(mean_prior, "mean_prior", D)
        m0 = np.asarray(m0, dtype=np.float64)
        if m0.ndim > 1 or (m0.ndim == 1 and m0.size != D) or not np.all(np.isfinite(m0)):
            raise ValueError(f"mean_prior[0] must be a finite number or {D} of them, got "
                             f"{mean_prior[0]!r}")
        if precision_prior is None:
            rate = GAUSSIAN_PRECISION_SHAPE * (GAUSSIAN_EXPERT_SCALE * sd) ** 2
            precision_prior = (GAUSSIAN_PRECISION_SHAPE, rate)
        shape, rate = _pair(precision_prior, "precision_prior", D)
        prior = {"mean": np.ascontiguousarray(np.broadcast_to(m0, (D,)), dtype=np.float64),
                 "sd": check_positive_vector(s0, "mean_prior[1] (sd)", D),
                 "shape": check_positive_vector(shape, "precision_prior[0] (shape)", D),
                 "rate": check_positive_vector(rate, "precision_prior[1] (rate)", D)}
        if background is None:
            span = data.max(axis=0) - data.min(axis=0)
            background = (0.5 * (data.max(axis=0) + data.min(axis=0)),
                          np.where(span > 0, span, 1.0))
        bg_mean, bg_sd = _pair(background, "background", D)
        bg_mean = np.asarray(bg_mean, dtype=np.float64)
        if (bg_mean.ndim > 1 or (bg_mean.ndim == 1 and bg_mean.size != D)
                or not np.all(np.isfinite(bg_mean))):
            raise ValueError(f"background[0] must be a finite number or {D} of them, got "
                             f"{background[0]!r}")
        bg = np.column_stack([np.broadcast_to(bg_mean, (D,)),
                              check_positive_vector(bg_sd, "background[1] (sd)", D)])
    alpha_fixed, alpha_prior = _alpha_spec(alpha)
    omega = DEFAULT_OMEGA[likelihood] if omega is None else check_positive(omega, "omega")
    split_merge = check_int(split_merge, "split_merge", minimum=0)
    thin = check_int(thin, "thin", minimum=1)
    if capacity is None:
        mean_alpha = alpha_fixed if alpha_prior is None else alpha_prior[0] / alpha_prior[1]
        slots = default_capacity(mean_alpha, N)
    else:
        slots = check_int(capacity, "capacity", minimum=1)
    names = check_feature_names(feature_names, D)
    spec = IOMMSpec(likelihood=likelihood, N=N, D=D, slots=slots, alpha=alpha_fixed,
                    alpha_prior=alpha_prior, prior=prior, background=bg, omega=omega)

    coords = {"point": np.arange(N), "feature": names if names else np.arange(D),
              "cluster": np.arange(slots)}
    with pm.Model(coords=coords) as m:
        if alpha_prior is None:
            alpha_var = alpha_fixed
        else:
            alpha_var = pm.Gamma("alpha", alpha_prior[0], alpha_prior[1])
        Z = IndianBuffet("Z", alpha=alpha_var, n_rows=N, k_max=slots,
                         dims=("point", "cluster"),
                         initval="prior" if capacity is None else None)
        Zf = pt.cast(Z, "float64")
        if likelihood == "bernoulli":
            theta = pm.Beta("theta", prior["a"], prior["b"], dims=("cluster", "feature"))
            # Eq. 7.7 in natural parameters: logit theta~ = Z logit(theta)
            eta = pt.dot(Zf, pt.log(theta) - pt.log1p(-theta))
            pm.Bernoulli("X", logit_p=eta, observed=data.astype(np.int64),
                         dims=("point", "feature"))
        else:
            mu = pm.Normal("mu", prior["mean"], prior["sd"], dims=("cluster", "feature"))
            tau = pm.Gamma("tau", prior["shape"], prior["rate"], dims=("cluster", "feature"))
            precision = pt.dot(Zf, tau)  # Eq. 7.5: summed precisions
            weighted = pt.dot(Zf, tau * mu)
            empty = pt.eq(Zf.sum(axis=1), 0)[:, None]
            safe = pt.switch(empty, 1.0, precision)
            mean = pt.switch(empty, bg[:, 0], weighted / safe)
            sd = pt.switch(empty, bg[:, 1], 1.0 / pt.sqrt(safe))
            pm.Normal("X", mean, sd, observed=data, dims=("point", "feature"))

    params = parameter_names(likelihood)
    memberships = ("Z",) if alpha_prior is None else ("Z", "alpha")
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        step_hints=((StepHint(STEP_MEMBERSHIPS, memberships,
                              {"spec": spec, "split_merge": split_merge}),
                     StepHint(STEP_PARAMETERS, params, {"spec": spec}))
                    if thin == 1 else
                    (StepHint(STEP_SWEEPS, (*memberships, *params),
                              {"spec": spec, "split_merge": split_merge, "sweeps": thin}),)),
        derived=DERIVED,
        label_variables=("Z", *params),
        relabelling=Relabelling("cluster", allocations="Z", kind="memberships"),
        notes=f"IOMM ({likelihood} experts; Heller 2007 Algorithm 7.1); slot order of Z "
              "and the cluster parameters is arbitrary",
    )
    object.__setattr__(m, _SPEC_ATTRIBUTE, spec)
    return attach_info(m, info)


def get_spec(m: pm.Model) -> IOMMSpec | None:
    """The :class:`IOMMSpec` of a model built by :func:`model`, else ``None``."""
    return getattr(m, _SPEC_ATTRIBUTE, None)


# --------------------------------------------------------------------------------------
# label-invariant statistics (functions of the posterior Dataset)
# --------------------------------------------------------------------------------------
#: Cluster sizes reported per draw (the largest ones).
CLUSTER_SIZE_RANKS = 10


def _on(posterior: xr.Dataset) -> np.ndarray:
    return np.asarray(posterior["Z"].values) != 0  # chain, draw, point, cluster


def _n_clusters(posterior: xr.Dataset) -> xr.DataArray:
    return xr.DataArray(_on(posterior).any(axis=2).sum(axis=-1), dims=("chain", "draw"))


def _mean_memberships(posterior: xr.Dataset) -> xr.DataArray:
    return xr.DataArray(_on(posterior).sum(axis=-1).mean(axis=-1), dims=("chain", "draw"))


def _unassigned(posterior: xr.Dataset) -> xr.DataArray:
    return xr.DataArray((~_on(posterior).any(axis=-1)).mean(axis=-1), dims=("chain", "draw"))


def _mean_shared(posterior: xr.Dataset) -> xr.DataArray:
    on = _on(posterior)
    N = on.shape[2]
    m = on.sum(axis=2).astype(np.float64)
    # mean over pairs i != j of (Z Z^T)_ij = (sum_k m_k^2 - sum_i |z_i|) / (N (N - 1))
    shared = ((m * m).sum(axis=-1) - on.sum(axis=(2, 3))) / (N * (N - 1))
    return xr.DataArray(shared, dims=("chain", "draw"))


def _cluster_sizes(posterior: xr.Dataset) -> xr.DataArray:
    m = _on(posterior).sum(axis=2)
    top = -np.sort(-m, axis=-1)[..., :CLUSTER_SIZE_RANKS]
    return xr.DataArray(top, dims=("chain", "draw", "by_size"))


DERIVED = (
    DerivedStatistic("n_clusters", _n_clusters, "number of clusters with a member"),
    DerivedStatistic("mean_memberships", _mean_memberships,
                     "mean number of clusters a point belongs to"),
    DerivedStatistic("unassigned", _unassigned, "fraction of points in no cluster"),
    DerivedStatistic("mean_shared", _mean_shared,
                     "mean number of clusters two points share (off-diagonal mean of Z Z^T)"),
    DerivedStatistic("cluster_sizes", _cluster_sizes,
                     f"the {CLUSTER_SIZE_RANKS} largest cluster sizes, sorted"),
)
