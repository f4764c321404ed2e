"""Dirichlet-process mixture models (Murphy 2012 §25.2; Neal 2000).

Generative model (Murphy Eqs. 25.29-25.32), in the Chinese-restaurant representation::

    alpha                    fixed, or ~ Gamma(a, rate b)
    z ~ CRP(alpha, n)        partition of the n rows (Pitman-Yor with discount d)
    theta_k ~ H              one parameter per block
    x_i ~ F(theta_{z_i})

:func:`model` builds it in one of three forms:

- **collapsed CRP** (``likelihood`` conjugate, ``truncation=None``): ``z`` is a
  :class:`~pp_models.distributions.CRP` and the data a collapsed likelihood with
  ``theta`` integrated out. ``fit(method="auto")`` uses Neal's Algorithm 3 with Jain-Neal
  split-merge (``crp_collapsed_gibbs``) and, for a random ``alpha``, the Escobar-West
  update (``escobar_west``). While tuning, each chain starts from the best of several
  candidate partitions (greedy seating, k-means with k = 2-16, one cluster) by the
  collapsed log joint after a 10-iteration pilot.
- **non-conjugate CRP** (``likelihood="normal"`` or ``"poisson"``): explicit parameters in
  ``n`` slots (one per possible block); ``z`` by Neal's Algorithm 8
  (``crp_auxiliary_gibbs``), occupied parameters by NUTS.
- **truncated stick-breaking** (``truncation=T``): ``w ~ StickBreakingWeights(alpha,
  T - 1)`` (T weights, Ishwaran & James 2001), explicit component parameters with the same
  priors as above, assignments summed out: all continuous, for NUTS and ADVI. For
  ``"gaussian"`` the precision is ``U U'`` with ``U`` from Bartlett's decomposition of its
  Wishart prior and the mean whitened by the component's covariance
  (:func:`pp_models.dpm.stick_breaking.niw_components`).

Likelihoods and their priors ``H`` (keys of ``prior``; defaults scale with the data):

==================  ========================================  =============================
``likelihood``      component F and prior H                   ``prior`` keys (defaults)
==================  ========================================  =============================
``"gaussian"``      N(mu, Sigma), Normal-Inverse-Wishart      ``m0`` (column means),
                    (stick-breaking: Bartlett, see below)     ``kappa0`` (0.01), ``nu0``
                                                              (d + 2), ``S0`` (1.5 x
                                                              (nu0 - d - 1) x diag of
                                                              column variances)
``diag_gaussian``   N(mu_j, 1/tau_j) per column,              ``m0``, ``kappa0`` (0.01),
                    tau_j ~ Gamma(a0, b0), mu_j | tau_j ~     ``a0`` (2), ``b0`` (1.5 x
                    N(m0_j, 1/(kappa0 tau_j))                 (a0 - 1) x column variances)
``"bernoulli"``     Bernoulli(p_j), p_j ~ Beta(a, b)          ``a`` (1), ``b`` (1)
``"multinomial"``   Multinomial(N_i, p), p ~ Dirichlet        ``concentration`` (1)
``"normal"``        N(mu_j, sigma_j), mu_j ~ N(m_j, s_j),     ``mu_loc``, ``mu_scale``
                    sigma_j ~ LogNormal(l_j, r) (non-conj.)   (means, 2 x sds),
                                                              ``sigma_loc`` (log 0.3 sd),
                                                              ``sigma_scale`` (1)
``"poisson"``       Poisson(lambda_j), lambda_j ~             ``rate_loc`` (log mean),
                    LogNormal(l_j, r) (non-conjugate)         ``rate_scale`` (1.5)
==================  ========================================  =============================

The ``"gaussian"`` defaults (a prior cluster covariance of 1.5 times the data's, weak
``nu0``, vague cluster means; :data:`~pp_models.dpm.spec.GAUSSIAN_SCALE`) are chosen on a
panel of real and synthetic data sets (``benchmarks/bench_clustering.py``; its figures
are on the family's page of the documentation, ``docs/families/dpm.md``). A much smaller
prior cluster covariance makes every tight group of points cheap to model as its own
cluster and splits real data into many clusters. ``"diag_gaussian"`` takes the same
scale per column (a prior mean cluster variance ``b0 / (a0 - 1)`` of 1.5 times the
column's, ``kappa0`` = 0.01): with the older 0.1 and 0.05 its collapsed Gibbs sampler put
K at 7-10 on iris (mean 8.3, alpha 1.6; 3 with these defaults), so a stick-breaking fit
truncated at T = 10 had K piled at T.

Learned base measures are not the default: a learned cluster scale follows the tightest
clusters the sampler has found and makes more of them cheap, so they find small,
well-separated clusters (the three iris species) but split data whose classes are broad
and overlap (breast cancer, digits), even under a Gamma hyperprior centred on the
default; no fixed scale suits both kinds either. The default merges versicolor with
virginica on iris, as the BIC-selected Gaussian mixture does, and that merge is the
posterior's, not the sampler's: the two-cluster partition has a higher collapsed log
joint than the species under every Normal-inverse-Wishart prior of a wide grid, and
chains started at the species move to it (``benchmarks/bench_clustering_modes.py``).
Pass ``hyperprior=True`` (or ``"wishart"``) where small, well-separated clusters are
expected.

- ``hyperprior="wishart"`` (``"gaussian"``, CRP form): the conjugate hierarchy of
  Rasmussen (2000) and Gorur & Rasmussen (2010), ``S0 ~ Wishart``, ``kappa0 ~ Gamma``,
  ``m0 ~ N`` centred on the data (:func:`default_wishart_hyperprior`, ``nu0`` fixed),
  updated exactly by the ``niw_hyper_gibbs`` step (``inference/gibbs/dpm/niw_hyper.py``:
  cluster parameters instantiated, then conjugate draws).
- ``hyperprior=True`` or a dict (``"gaussian"`` and ``"diag_gaussian"``, CRP form):
  ``kappa0``, the degrees of freedom (``nu0`` / ``a0``) and the scale of ``S0`` / ``b0``
  get Gamma hyperpriors (:func:`default_hyperprior`, :data:`LEARNABLE`) and are sampled
  by NUTS in the same ``fit`` as ``z`` (the collapsed likelihood has gradients in every
  hyperparameter; the collapsed Gibbs step reads their current values at every step).

In both, the values in the table above are only a starting point for the learned keys;
keys given in ``prior`` stay fixed.

After sampling, :func:`summarize` adds the label-invariant outputs to the DataTree: the
co-clustering matrix, a point-estimate partition (Binder or VI loss), the posterior of
the number of clusters, optionally the cluster parameters from the conjugate posterior,
and the posterior predictive density on a 1-D/2-D grid.

The outputs are in :mod:`pp_models.dpm.outputs`.

The likelihood names, prior keys and :class:`DPMSpec` are in :mod:`pp_models.dpm.spec`,
the learned base measures (``hyperprior=``) in :mod:`pp_models.dpm.hyperpriors`.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from custom_ops import conjugate as cj
from custom_ops.conjugate import FAMILY_CODES, pack_hyper
from custom_ops.dpm.gibbs import sequential_map_partition
from pp_models import partitions
from pp_models.distributions import (
    CRP,
    CollapsedBernoulli,
    CollapsedDiagGaussian,
    CollapsedGaussian,
    CollapsedMultinomial,
)
from pp_models.dpm import outputs
from pp_models.dpm.hyperpriors import (
    LEARNABLE,
    at_hyperprior_mean,
    check_hyperprior,
    check_wishart_hyperprior,
    check_wishart_kind,
    default_hyperprior,
    default_wishart_hyperprior,
    learned_hyperparameters,
    learned_variable_names,
    wishart_nu0,
)
from pp_models.dpm.spec import (
    CONJUGATE,
    GAUSSIAN_KAPPA0,
    GAUSSIAN_SCALE,
    LIKELIHOODS,
    NONCONJUGATE,
    PRIOR_KEYS,
    SPEC_ATTRIBUTE,
    DPMSpec,
    get_spec,
)
from pp_models.dpm.start import stick_breaking_start
from pp_models.dpm.stick_breaking import (
    niw_components,
    normal_logp,
    sb_assignments,
    sb_n_clusters,
    warn_if_truncated,
)
from pp_models.model_info import (
    DerivedStatistic,
    StepHint,
    ZooModelInfo,
    attach_info,
    posterior_with_labels,
    weights_sorted,
)
from pp_models.registry import family_of_module
from pp_models.validation import (
    as_data_matrix,
    check_feature_names,
    check_fixed_or_gamma,
    check_gamma_prior,
    check_int,
    check_real,
    rng_from_seed,
)

__all__ = [
    "CONJUGATE",
    "LEARNABLE",
    "LIKELIHOODS",
    "NONCONJUGATE",
    "DPMSpec",
    "default_hyperprior",
    "default_wishart_hyperprior",
    "get_spec",
    "initial_partition",
    "learned_hyperparameters",
    "learned_variable_names",
    "model",
]

def model(
    X,
    *,
    likelihood: str = "gaussian",
    alpha=1.0,
    truncation: int | None = None,
    prior: dict | None = None,
    discount: float = 0.0,
    feature_names=None,
    split_merge_every: int = 1,
    auxiliary: int = 3,
    hyperprior: dict | bool | str | None = None,
) -> pm.Model:
    """Build a Dirichlet-process mixture over the rows of ``X``.

    Parameters
    ----------
    X : array-like, shape (n, d)
        Data, n >= 2 rows; finite. Binary for ``"bernoulli"``, non-negative integer counts
        for ``"multinomial"`` (one-hot rows for categorical data) and ``"poisson"``.
    likelihood : str
        One of :data:`LIKELIHOODS` (module docstring).
    alpha : float, (a, b) tuple or ``pm.Gamma.dist(a, b)``
        DP concentration: a fixed value > 0, or a Gamma(a, rate b) prior.
    truncation : int, optional
        ``None``: the CRP representation. ``T >= 2``: truncated stick-breaking with T
        components, all continuous (``fit`` samples it with NUTS; ``"gaussian"`` through
        Bartlett's decomposition of the precision, see
        :func:`~pp_models.dpm.stick_breaking.niw_components`).
    prior : dict, optional
        Hyperparameters of H fixed at these values (module docstring for the defaults).
        With a learned base measure (``hyperprior``), the keys not given here are learned.
    hyperprior : dict, bool, "wishart" or None
        ``"wishart"``: the conjugate hierarchy (module docstring), ``"gaussian"`` only.
        Otherwise: learned base measure with Gamma hyperpriors, ``"gaussian"`` and
        ``"diag_gaussian"`` with ``truncation=None`` only. ``None`` / ``False`` (default):
        the fixed defaults of the module docstring; ``True``: learn every key of
        :data:`LEARNABLE` not fixed by ``prior``, with the default Gamma hyperpriors of
        :func:`default_hyperprior`; a dict ``{key: (shape, rate)}``: learn, overriding
        some of those hyperpriors. The learned quantities are free
        variables sampled in the same ``fit`` as ``z`` (NUTS, through the gradients of the
        collapsed likelihood); see :data:`LEARNABLE` for their parametrisation.
    discount : float
        Pitman-Yor discount ``0 <= d < 1`` of the CRP (CRP representations only; 0 is
        the Dirichlet process).
    feature_names : sequence of str, optional
    split_merge_every : int
        Collapsed Gibbs: split-merge proposals every this many sweeps (0: off).
    auxiliary : int
        Algorithm 8: number of auxiliary components m.
    Returns
    -------
    pymc.Model
        Never samples. Free variables: ``z`` (and ``alpha`` when random) for the collapsed
        CRP; plus the slot parameters for the non-conjugate CRP; ``w`` and the component
        parameters for stick-breaking. Observed: ``X``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: NaN/inf or 1-D ``X``, n < 2, ``alpha <= 0``,
        ``truncation < 2``, data outside the likelihood's support, unknown options.
    """
    if not isinstance(likelihood, str) or likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {', '.join(LIKELIHOODS)}; got {likelihood!r}")
    columns = list(X.columns) if hasattr(X, "columns") else None
    X = as_data_matrix(X, "X", min_rows=2)
    n, d = X.shape
    _check_support(likelihood, X)
    alpha_value, alpha_prior = _check_alpha(alpha)
    if truncation is not None:
        truncation = check_int(truncation, "truncation", minimum=2)
    discount = check_real(discount, "discount", minimum=0.0, below=1.0)
    if discount > 0 and truncation is not None:
        raise ValueError("discount: Pitman-Yor is available in the CRP representation only "
                         "(truncation=None)")
    if discount > 0 and alpha_prior is not None:
        raise ValueError("discount: a Gamma prior on alpha (Escobar-West) needs discount=0")
    split_merge_every = check_int(split_merge_every, "split_merge_every", minimum=0)
    auxiliary = check_int(auxiliary, "auxiliary", minimum=1)
    hyper = _prior(likelihood, X, prior)
    kind = "wishart" if isinstance(hyperprior, str) else "gamma"
    if kind == "wishart":
        check_wishart_kind(hyperprior, likelihood, truncation)
        if "nu0" not in (prior or {}):
            hyper = _prior(likelihood, X, dict(prior or {}, nu0=wishart_nu0(d)))
        learned = check_wishart_hyperprior(hyperprior, likelihood, X, truncation, prior,
                                            hyper["nu0"])
    else:
        learned = check_hyperprior(hyperprior, likelihood, d, truncation, prior)
    hyper = at_hyperprior_mean(hyper, learned, X, kind)
    names = check_feature_names(feature_names if feature_names is not None else columns, d)
    names = names if names is not None else [f"x{j}" for j in range(d)]

    spec = DPMSpec(X, likelihood, hyper, alpha_value, alpha_prior, discount, truncation,
                   tuple(names), learned, kind)
    coords = {"obs": np.arange(n), "feature": names}
    if truncation is None:
        built = _crp_model(spec, coords, split_merge_every, auxiliary)
    else:
        built = _stick_breaking_model(spec, coords)
    object.__setattr__(built, SPEC_ATTRIBUTE, spec)
    return built


# --------------------------------------------------------------------------------------
# validation and defaults
# --------------------------------------------------------------------------------------
def _check_support(likelihood, X):
    if likelihood == "bernoulli":
        cj.check_data("bernoulli", X, "X")
    elif likelihood in ("multinomial", "poisson"):
        if np.any(X < 0):
            raise ValueError(f"X: the {likelihood} likelihood needs non-negative counts")
        if not np.all(X == np.round(X)):
            raise ValueError(f"X: the {likelihood} likelihood needs integer counts")
        if likelihood == "multinomial" and np.any(X.sum(axis=1) == 0):
            raise ValueError("X: every row of multinomial counts needs at least one count")


def _check_alpha(alpha):
    """(fixed value or None, (a, b) Gamma prior or None)."""
    if hasattr(alpha, "owner") and alpha.owner is not None:
        from pytensor.compile.mode import Mode
        from pytensor.tensor.random.basic import GammaRV

        if not isinstance(alpha.owner.op, GammaRV):
            raise TypeError("alpha: a distribution for alpha must be pm.Gamma.dist(a, b)")
        shape, scale = alpha.owner.op.dist_params(alpha.owner)
        # evaluated by the Python linker: two constants, where the default (Numba) linker
        # would compile a new function for every pair of values
        python_mode = Mode(linker="py", optimizer=None)
        try:
            a = float(shape.eval(mode=python_mode))
            b = 1.0 / float(scale.eval(mode=python_mode))
        except Exception as err:
            raise ValueError(
                f"alpha: the Gamma prior's parameters must be constants ({err})"
            ) from None
        return None, check_gamma_prior((a, b), "alpha")
    try:
        checked = check_fixed_or_gamma(alpha, "alpha")
    except TypeError as err:
        raise TypeError(f"{err}; or pm.Gamma.dist(a, b)") from None
    return (None, checked) if isinstance(checked, tuple) else (checked, None)


def _prior(likelihood, X, prior):
    prior = {} if prior is None else dict(prior)
    if not isinstance(prior, dict):
        raise TypeError("prior must be a dict")
    unknown = set(prior) - set(PRIOR_KEYS[likelihood])
    if unknown:
        raise ValueError(
            f"prior: unknown key(s) {sorted(unknown)} for likelihood={likelihood!r}; "
            f"allowed: {list(PRIOR_KEYS[likelihood])}"
        )
    d = X.shape[1]
    mean = X.mean(axis=0)
    var = X.var(axis=0)
    var = np.where(var > 0, var, 1.0)
    if likelihood == "gaussian":
        nu0 = prior.get("nu0", d + 2.0)
        m0, k0, nu0, S0 = cj.gaussian_hyper(
            d, prior.get("m0", mean), prior.get("kappa0", GAUSSIAN_KAPPA0), nu0,
            prior.get("S0", GAUSSIAN_SCALE * np.diag(var) * max(float(nu0) - d - 1.0, 1.0)),
        )
        return {"m0": m0, "kappa0": k0, "nu0": nu0, "S0": S0}
    if likelihood == "diag_gaussian":
        a0 = prior.get("a0", 2.0)
        m0, k0, a0, b0 = cj.diag_gaussian_hyper(
            d, prior.get("m0", mean), prior.get("kappa0", GAUSSIAN_KAPPA0), a0,
            prior.get("b0", GAUSSIAN_SCALE * var
                      * np.maximum(np.asarray(a0, dtype=float) - 1.0, 1.0)),
        )
        return {"m0": m0, "kappa0": k0, "a0": a0, "b0": b0}
    if likelihood == "bernoulli":
        a, b = cj.bernoulli_hyper(d, prior.get("a", 1.0), prior.get("b", 1.0))
        return {"a": a, "b": b}
    if likelihood == "multinomial":
        (conc,) = cj.multinomial_hyper(d, prior.get("concentration", 1.0))
        return {"concentration": conc}
    sd = np.sqrt(var)
    if likelihood == "normal":
        out = {
            "mu_loc": prior.get("mu_loc", mean),
            "mu_scale": prior.get("mu_scale", 2.0 * sd),
            "sigma_loc": prior.get("sigma_loc", np.log(0.3 * sd)),
            "sigma_scale": prior.get("sigma_scale", 1.0),
        }
    else:
        out = {
            "rate_loc": prior.get("rate_loc", np.log(mean + 0.5)),
            "rate_scale": prior.get("rate_scale", 1.5),
        }
    for key, value in out.items():
        arr = np.asarray(value, dtype=np.float64)
        arr = np.full(d, float(arr)) if arr.ndim == 0 else arr
        if arr.shape != (d,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"prior: {key} must be finite, a scalar or shape ({d},)")
        if key.endswith("scale") and np.any(arr <= 0):
            raise ValueError(f"prior: {key} must be > 0")
        out[key] = arr
    return out


# --------------------------------------------------------------------------------------
# CRP representations
# --------------------------------------------------------------------------------------
def _alpha_variable(spec):
    if spec.alpha_prior is None:
        return spec.alpha
    a, b = spec.alpha_prior
    return pm.Gamma("alpha", alpha=a, beta=b)


def initial_partition(m: pm.Model, *, seed: int = 0) -> np.ndarray:
    """A starting partition for the collapsed CRP sampler of a model from :func:`model`.

    Seats the rows one by one in a pseudo-random order (``seed``), each at the table with
    the largest weight of Murphy (2012) Eq. 25.33 given the rows seated before it: a
    greedy one-pass version of sequential posterior seating, O(nK). It often starts the
    chain near a good clustering, but can start it in a local mode. Use it as
    ``fit(m, initvals={"z": dpm.initial_partition(m)})``. Without ``initvals`` chains
    start from a single cluster, and while they tune the collapsed Gibbs step replaces
    that start by the best of several candidates (this greedy seating in a random order,
    k-means partitions, the incoming one), each scored by the collapsed log joint after a
    short pilot run (``crp_collapsed_gibbs``, ``greedy_start``).
    """
    rng = rng_from_seed(seed, "seed")
    spec = get_spec(m)
    if spec is None or spec.truncation is not None or spec.likelihood not in CONJUGATE:
        raise ValueError("initial_partition needs a collapsed CRP model from dpm.model "
                         "(a conjugate likelihood, truncation=None)")
    n = spec.X.shape[0]
    alpha = spec.alpha if spec.alpha is not None else spec.alpha_prior[0] / spec.alpha_prior[1]
    hyper = [spec.prior[k] for k in PRIOR_KEYS[spec.likelihood]]
    order = rng.permutation(n)
    seated = sequential_map_partition(
        spec.X[order], float(alpha), spec.discount, FAMILY_CODES[spec.likelihood],
        pack_hyper(spec.likelihood, hyper),
    )
    z = np.empty(n, dtype=np.int64)
    z[order] = seated
    return partitions.canonical_labels(z)


def _crp_model(spec, coords, split_merge_every, auxiliary):
    X, lik, h = spec.X, spec.likelihood, spec.prior
    n, d = X.shape
    hints = []
    labels = ["z"]
    with pm.Model(coords=coords) as m:
        alpha = _alpha_variable(spec)
        z = CRP("z", alpha=alpha, n=n, discount=spec.discount, dims="obs")
        if spec.hyperprior_kind == "wishart":
            h = dict(h)
            for key, params in spec.hyperprior.items():
                if key == "S0":
                    h[key] = pm.Wishart("S0", nu=int(params[0]), V=params[1],
                                        initval=params[0] * params[1])
                elif key == "kappa0":
                    h[key] = pm.Gamma("kappa0", alpha=params[0], beta=params[1])
                else:
                    h[key] = pm.MvNormal("m0", mu=params[0], cov=params[1])
        elif spec.hyperprior:
            free = {}
            for key, (shape, rate) in spec.hyperprior.items():
                name = LEARNABLE[lik][key]
                free[name] = pm.Gamma(name, alpha=shape, beta=rate)
            h = learned_hyperparameters(spec, free)
            if "nu0" in spec.hyperprior:
                pm.Deterministic("nu0", h["nu0"])
            if lik == "gaussian":
                h["S0"] = pt.as_tensor_variable(h["S0"])
        if lik == "gaussian":
            CollapsedGaussian("X", z, m0=h["m0"], kappa0=h["kappa0"], nu0=h["nu0"], S0=h["S0"],
                              observed=X, dims=("obs", "feature"))
        elif lik == "diag_gaussian":
            CollapsedDiagGaussian("X", z, m0=h["m0"], kappa0=h["kappa0"], a0=h["a0"],
                                  b0=h["b0"], observed=X, dims=("obs", "feature"))
        elif lik == "bernoulli":
            CollapsedBernoulli("X", z, a=h["a"], b=h["b"], observed=X, dims=("obs", "feature"))
        elif lik == "multinomial":
            CollapsedMultinomial("X", z, concentration=h["concentration"],
                                 n_trials=X.sum(axis=1), observed=X, dims=("obs", "feature"))
        elif lik == "normal":
            mu = pm.Normal("mu", mu=h["mu_loc"], sigma=h["mu_scale"], shape=(n, d))
            sigma = pm.LogNormal("sigma", mu=h["sigma_loc"], sigma=h["sigma_scale"], shape=(n, d))
            pm.Normal("X", mu=mu[z], sigma=sigma[z], observed=X, dims=("obs", "feature"))
            labels += ["mu", "sigma"]
        else:
            rate = pm.LogNormal("rate", mu=h["rate_loc"], sigma=h["rate_scale"], shape=(n, d))
            pm.Poisson("X", mu=rate[z], observed=X, dims=("obs", "feature"))
            labels += ["rate"]
    if lik in CONJUGATE:
        hints.append(StepHint("crp_collapsed_gibbs", ("z",),
                              {"split_merge_every": split_merge_every}))
        notes = ("z: collapsed Gibbs (Neal 2000 Algorithm 3) with Jain-Neal split-merge; "
                 "component parameters integrated out.")
    else:
        params = ("mu", "sigma") if lik == "normal" else ("rate",)
        hints.append(StepHint("crp_auxiliary_gibbs", ("z",),
                              {"component": lik, "params": params, "data": "X",
                               "m": auxiliary}))
        notes = (f"z: Neal 2000 Algorithm 8 (m={auxiliary} auxiliary components); occupied "
                 f"{', '.join(params)}: NUTS.")
    if spec.alpha_prior is not None:
        hints.append(StepHint("escobar_west", ("alpha",)))
        notes += " alpha: Escobar-West auxiliary-variable Gibbs."
    if spec.hyperprior_kind == "wishart" and spec.hyperprior:
        hints.append(StepHint("niw_hyper_gibbs", tuple(spec.hyperprior)))
        notes += (f" Base measure ({', '.join(spec.hyperprior)}): conjugate Gibbs given the "
                  "instantiated cluster parameters (Rasmussen 2000).")
    elif spec.hyperprior:
        notes += (" Base-measure hyperparameters "
                  f"({', '.join(LEARNABLE[lik][k] for k in spec.hyperprior)}): NUTS.")
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        step_hints=tuple(hints),
        derived=(
            DerivedStatistic("n_clusters", _n_clusters, "number of occupied clusters"),
            DerivedStatistic("largest_cluster", _largest_cluster,
                             "size of the largest cluster"),
        ),
        label_variables=tuple(labels),
        postprocess=_Summarize(m),
        notes=notes,
        continuous_form="truncation=T (truncated stick-breaking with T components, "
                        "e.g. truncation=20: all continuous, for NUTS and ADVI)",
    )
    return attach_info(m, info)


class _Summarize:
    """``fit``'s post-fit hook: :func:`summarize` with its defaults."""

    def __init__(self, m: pm.Model):
        self.model = m

    def __call__(self, dt: xr.DataTree) -> xr.DataTree:
        posterior = posterior_with_labels(dt)
        if "z" not in posterior.data_vars:
            return dt  # labels not traced: nothing to summarise
        spec = get_spec(self.model)
        if spec.truncation is not None and "n_clusters" in posterior.data_vars:
            warn_if_truncated(posterior["n_clusters"].values, spec.truncation)
        return outputs.summarize(dt, self.model)


def _n_clusters(posterior: xr.Dataset) -> xr.DataArray:
    z = posterior["z"].values
    flat = z.reshape(-1, z.shape[-1])
    return xr.DataArray(partitions.n_blocks(flat).reshape(z.shape[:2]), dims=("chain", "draw"))


def _largest_cluster(posterior: xr.Dataset) -> xr.DataArray:
    z = posterior["z"].values
    flat = z.reshape(-1, z.shape[-1]).astype(np.int64)
    out = np.array([np.bincount(row).max() for row in flat])
    return xr.DataArray(out.reshape(z.shape[:2]), dims=("chain", "draw"))


# --------------------------------------------------------------------------------------
# truncated stick-breaking
# --------------------------------------------------------------------------------------
def _stick_breaking_model(spec, coords):
    X, lik, h, T = spec.X, spec.likelihood, spec.prior, spec.truncation
    coords = dict(coords, component=np.arange(T), feature_=list(spec.feature_names))
    # components start from a partition of the data (start.py), not all at the prior mean
    start = stick_breaking_start(spec) if lik in ("gaussian", "diag_gaussian") else {}
    with pm.Model(coords=coords) as m:
        alpha = _alpha_variable(spec)
        w = pm.StickBreakingWeights("w", alpha=alpha, K=T - 1, dims="component",
                                    initval=start.get("w"))
        Xc = pt.as_tensor_variable(X)
        if lik == "gaussian":
            comp = niw_components(h, Xc, T, start)
        elif lik == "diag_gaussian":
            # same prior as the collapsed Normal-Gamma model; the mean whitened by the
            # component's sd (not by the prior's, 1/sqrt(kappa0) times wider), so a unit
            # of mu_raw, e.g. the start's jitter, is one sd of the component
            tau = pm.Gamma("tau", alpha=h["a0"], beta=h["b0"], dims=("component", "feature"),
                           initval=start.get("tau"))
            mu_raw = pm.Normal("mu_raw", 0.0, 1.0 / np.sqrt(h["kappa0"]),
                               dims=("component", "feature"), initval=start.get("mu_raw"))
            mu = pm.Deterministic("mu", h["m0"] + mu_raw / pt.sqrt(tau),
                                  dims=("component", "feature"))
            sigma = pm.Deterministic("sigma", 1.0 / pt.sqrt(tau), dims=("component", "feature"))
            comp = normal_logp(Xc, mu, sigma)
        elif lik == "normal":
            mu = pm.Normal("mu", mu=h["mu_loc"], sigma=h["mu_scale"],
                           dims=("component", "feature"))
            sigma = pm.LogNormal("sigma", mu=h["sigma_loc"], sigma=h["sigma_scale"],
                                 dims=("component", "feature"))
            comp = normal_logp(Xc, mu, sigma)
        elif lik == "bernoulli":
            p = pm.Beta("p", alpha=h["a"], beta=h["b"], dims=("component", "feature"))
            comp = (Xc[:, None, :] * pt.log(p)[None] + (1 - Xc[:, None, :])
                    * pt.log1p(-p)[None]).sum(-1)
        elif lik == "multinomial":
            p = pm.Dirichlet("p", a=h["concentration"], dims=("component", "feature"))
            coef = special.gammaln(X.sum(1) + 1) - special.gammaln(X + 1).sum(1)
            comp = (Xc[:, None, :] * pt.log(p)[None]).sum(-1) + coef[:, None]
        else:
            rate = pm.LogNormal("rate", mu=h["rate_loc"], sigma=h["rate_scale"],
                                dims=("component", "feature"))
            comp = (Xc[:, None, :] * pt.log(rate)[None] - rate[None]
                    - pt.gammaln(Xc[:, None, :] + 1)).sum(-1)
        # assignments summed out: log p(x_i) = logsumexp_k (log w_k + log F(x_i | theta_k))
        pm.Potential("X_loglik", pm.math.logsumexp(pt.log(w)[None, :] + comp, axis=1).sum())
    param_names = {"gaussian": ("mu", "precision_chol"),
                   "diag_gaussian": ("mu", "sigma"), "normal": ("mu", "sigma"),
                   "bernoulli": ("p",), "multinomial": ("p",), "poisson": ("rate",)}[lik]
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="nuts",
        derived=(
            DerivedStatistic("z", partial(sb_assignments, spec=spec, params=param_names),
                             "assignments drawn from p(z | w, theta, X), seeded per draw"),
            DerivedStatistic("n_clusters", partial(sb_n_clusters, spec=spec,
                                                   params=param_names),
                             "occupied components among the drawn assignments"),
            DerivedStatistic("weights_sorted", weights_sorted,
                             "stick-breaking weights in decreasing order"),
        ),
        # z: one drawn assignment per row and draw, for the outputs; per-row R-hat of
        # it means nothing, so it sits with the labels, out of the summary
        label_variables=("w", "mu_raw", "tau", "bartlett_diag", "bartlett_offdiag",
                         *param_names, "z"),
        postprocess=_Summarize(m),
        notes=(f"truncated stick-breaking (T={T}); assignments summed out; NUTS or ADVI. "
               "Component labels are not identified."),
    )
    return attach_info(m, info)


