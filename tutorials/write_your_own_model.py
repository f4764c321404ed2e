# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Write your own model from the zoo's pieces, and your own Gibbs step
#
# **The question:** the zoo's factories (`dpm.model`, `lda.model`, ...) cover the
# standard cases; how do I write a model *nobody packaged*, in a plain
# `with pm.Model():` block, and still get the zoo's exact Gibbs moves, NUTS for the
# rest, a proof that the combined sampler is right, and ArviZ diagnostics? And when no
# zoo step fits a piece of my model, how do I write one and prove it correct?
#
# Two halves:
#
# 1. **A new model from zoo pieces.** A Dirichlet-process mixture whose clusters' typical
#    width is *learned*, not guessed: the partition is a `CRP`, the data a collapsed
#    Normal-Gamma likelihood (cluster means and precisions integrated out), and two
#    continuous hyperparameters (the concentration and the within-cluster scale) get
#    priors of their own, as in Rasmussen's (2000) infinite Gaussian mixture.
#    `inference.fit` gives the partition the zoo's collapsed Gibbs step and the
#    hyperparameters NUTS; `getting_it_right` proves the combination leaves the joint
#    distribution invariant.
# 2. **A new Gibbs step.** A conjugate update for a Poisson rate, registered with
#    `@register_step`, named in a model's `StepHint`, proven right by
#    `getting_it_right`, and a twin with a planted bug that the same test catches.
# 3. **A mixture in plain PyMC** (`pm.Categorical` labels), fitted with `inference.fit`,
#    its components matched across chains by `inference.relabel`, checked with
#    `check_convergence`, and two numbers of components compared by LOO (`az.compare`)
#    and by their evidence (`inference.evidence`).

# %%
import argparse
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import xarray as xr

from inference import fit, summary
from inference.gibbs import ZooGibbsStep, register_step
from inference.testing import check_convergence, getting_it_right
from pp_models import datasets, partitions
from pp_models.distributions import CRP, CollapsedDiagGaussian
from pp_models.model_info import DerivedStatistic, StepHint, ZooModelInfo, attach_info

parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes (the test run)")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
args, _ = parser.parse_known_args()  # Jupyter passes its own arguments: ignore them
OUT = Path(args.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
FAST = args.fast
DRAWS, TUNE, CHAINS = (200, 100, 2) if FAST else (2500, 500, 4)
GIR_SAMPLES = 500 if FAST else 4000

# %% [markdown]
# ## 1. A Dirichlet-process mixture that learns how wide its clusters are
#
# ### The model
#
# For the rows $x_i \in \mathbb{R}^d$ of a standardised data matrix:
#
# $$
# \begin{aligned}
# \alpha &\sim \mathrm{Gamma}(2, 1), \qquad s_j \sim \mathrm{HalfNormal}(1),
#   \quad j = 1..d,\\
# z &\sim \mathrm{CRP}(\alpha, n),\\
# \tau_{kj} &\sim \mathrm{Gamma}\big(a_0,\ \text{rate } b_{0j}\big), \qquad
#   b_{0j} = (a_0 - 1)\, s_j^2,\\
# \mu_{kj} \mid \tau_{kj} &\sim N\big(0,\ 1/(\kappa_0 \tau_{kj})\big),\\
# x_{ij} \mid z, \mu, \tau &\sim N\big(\mu_{z_i j},\ 1/\tau_{z_i j}\big).
# \end{aligned}
# $$
#
# $s_j$ is the typical within-cluster standard deviation of feature $j$
# ($E[1/\tau_{kj}] = b_{0j}/(a_0 - 1) = s_j^2$). The canned `dpm.model` fixes it at a
# guess (a tenth of the data's variance); here the data decide. The cluster parameters
# $\mu, \tau$ are integrated out analytically: `CollapsedDiagGaussian` is
# $\log p(X \mid z, s) = \sum_k \log \int \prod_{i: z_i = k} N(x_i \mid \mu, \tau^{-1})
# \, NG(\mu, \tau)\, d\mu\, d\tau$ (Murphy 2012 Eq. 25.36; Heller 2007 Eq. 2.14), an Op
# with gradients with respect to every hyperparameter, so NUTS can move $s$ and
# $\alpha$ (the `CRP`'s log probability, the Ewens formula, has a gradient in $\alpha$
# too).
#
# ### The code
#
# Nothing but PyMC and two zoo distributions. The one zoo-specific line is optional:
# `attach_info` declares the label-invariant statistics `fit` should add to the
# posterior (the labels `z` themselves switch meaning between draws, so diagnostics on
# them are meaningless).

# %%
A0, KAPPA0 = 3.0, 0.1


def n_clusters(posterior: xr.Dataset) -> xr.DataArray:
    z = posterior["z"].values
    counts = partitions.n_blocks(z.reshape(-1, z.shape[-1]))
    return xr.DataArray(counts.reshape(z.shape[:2]), dims=("chain", "draw"))


def largest_cluster(posterior: xr.Dataset) -> xr.DataArray:
    z = posterior["z"].values
    flat = z.reshape(-1, z.shape[-1])
    sizes = np.array([np.bincount(row).max() for row in flat])
    return xr.DataArray(sizes.reshape(z.shape[:2]), dims=("chain", "draw"))


def learned_width_dpm(X: np.ndarray) -> pm.Model:
    n, d = X.shape
    coords = {"obs": np.arange(n), "feature": [f"x{j}" for j in range(d)]}
    with pm.Model(coords=coords) as model:
        alpha = pm.Gamma("alpha", alpha=2.0, beta=1.0)
        cluster_sd = pm.HalfNormal("cluster_sd", sigma=1.0, dims="feature")
        z = CRP("z", alpha=alpha, n=n, dims="obs")
        CollapsedDiagGaussian("X", z, m0=np.zeros(d), kappa0=np.full(d, KAPPA0),
                              a0=np.full(d, A0), b0=(A0 - 1.0) * cluster_sd**2,
                              observed=X, dims=("obs", "feature"))
    return attach_info(model, ZooModelInfo(
        family="learned_width_dpm",
        preferred_method="gibbs",
        derived=(DerivedStatistic("n_clusters", n_clusters),
                 DerivedStatistic("largest_cluster", largest_cluster)),
        label_variables=("z",),
    ))


# %% [markdown]
# ### The data
#
# Fisher's iris measurements (150 flowers, 4 features, 3 species), standardised. The
# species are not given to the model; we use them only to look at the answer.

# %%
iris = datasets.load("iris")
X = (iris.data - iris.data.mean(axis=0)) / iris.data.std(axis=0)
species = iris.target
model = learned_width_dpm(X)
print(model.str_repr())

# %% [markdown]
# ### Inference
#
# `fit(method="gibbs")` assigns a step to every free variable: the registered zoo step
# whose `competence` claims a `CRP` variable with one collapsed likelihood
# (`crp_collapsed_gibbs`: Neal 2000 Algorithm 3 with Jain-Neal split-merge moves), and
# PyMC's NUTS for the continuous rest. `dt.attrs["pp_models_steps"]` says which step
# updated what.

# %%
dt = fit(model, method="gibbs", draws=DRAWS, tune=TUNE, chains=CHAINS, random_seed=7,
         progressbar=False)
print("steps:", dt.attrs["pp_models_steps"])

# %% [markdown]
# ### Diagnostics
#
# `inference.summary` is `arviz.summary` restricted to what is identified: the
# hyperparameters and the declared label-invariant statistics, not the raw labels.

# %%
print(summary(dt).to_string())
print(check_convergence(dt, ess_bulk_min=100, ess_tail_min=100))

# %% [markdown]
# The trace and marginal posterior of each identified quantity, with ArviZ 1.x's
# `plot_trace_dist`:

# %%
pc = az.plot_trace_dist(dt, var_names=["alpha", "cluster_sd", "n_clusters"])
pc.savefig(OUT / "trace_dist.png")
plt.show()

# %% [markdown]
# ### What the model learned
#
# Left: the posterior co-clustering matrix $\Pr(z_i = z_j \mid X)$ with the flowers in
# species order (setosa, versicolor, virginica), the quantity every relabelling leaves
# unchanged. Right: the learned within-cluster standard deviation of each feature
# against the guess `dpm.model` would have fixed (a tenth of the standardised variance,
# i.e. $\sqrt{0.1}$).

# %%
# sphinx_gallery_thumbnail_number = 2
z_draws = dt["posterior"]["z"].values.reshape(-1, X.shape[0])
coclustering = partitions.coclustering(z_draws)
z_hat, _expected_loss = partitions.point_estimate(z_draws, P=coclustering)
print("point-estimate cluster sizes:", np.bincount(z_hat),
      f"adjusted Rand index vs species: {partitions.adjusted_rand_index(z_hat, species):.2f}")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.imshow(coclustering[np.ix_(np.argsort(species, kind="stable"),
                               np.argsort(species, kind="stable"))],
           cmap="Greys", vmin=0, vmax=1)
ax1.set_title("co-clustering (flowers in species order)")
sd = dt["posterior"]["cluster_sd"].values.reshape(-1, X.shape[1])
ax2.boxplot(sd, tick_labels=list(iris.feature_names))
ax2.axhline(np.sqrt(0.1), color="C3", ls="--", label="dpm.model's fixed guess")
ax2.set_ylabel("within-cluster sd (standardised units)")
ax2.legend()
fig.tight_layout()
fig.savefig(OUT / "learned_width.png", dpi=80)
plt.show()

# %% [markdown]
# The data disagree with the canned guess in both directions: the petal features vary
# much less within a cluster than $\sqrt{0.1} \approx 0.32$ standardised units, the
# sepal features more. With clusters that narrow in the petal directions, setosa stays
# one cluster but versicolor and virginica are each covered by several small clusters,
# so the point estimate has more clusters than there are species and only partly
# matches them (the adjusted Rand index printed above). That is a finding about the
# *model*, not a sampler failure: within a species the four measurements are
# correlated (larger flowers are larger in every direction), and a diagonal Gaussian
# covers an elongated, tilted cloud only with several clusters along it. The
# co-clustering matrix shows exactly that: crisp setosa, blurred blocks inside the other
# two species. The diagnostics above show the price: the label-invariant statistics
# (number of clusters, size of the largest cluster) move slowly between such coverings,
# so theirs are the R-hat and effective sample sizes to watch, and the convergence
# report flags whichever has not settled: run more or longer chains before trusting
# them. The hyperparameters mix well in the full run (the short `--fast` chains may
# still flag one).

# %% [markdown]
# ### Prove the sampler right
#
# Two samplers (a collapsed Gibbs step and NUTS) now share one model: each leaves its own
# conditional invariant, but did we wire them together correctly? `getting_it_right`
# (Geweke 2004) checks the whole transition: it alternates one sweep of the assigned
# steps with fresh data drawn from the model, and compares the joint draws with
# independent draws from the prior, statistic by statistic (every hyperparameter and
# its square, the data's moments, and the declared `n_clusters` and
# `largest_cluster`). It uses `fit`'s own step assignment, on a copy of the model with
# the data free, so it tests exactly what `fit` runs. A small data shape (8 x 2) keeps
# it quick; the transition is the same code.

# %%
gir = getting_it_right(learned_width_dpm(np.zeros((8, 2))), data_vars=["X"],
                       n_samples=GIR_SAMPLES, random_seed=3)
print("steps under test:", gir.step_description)
print("passed:", gir.passed(alpha=0.01))
print(gir)
gir.plot().savefig(OUT / "gir_learned_width.png", dpi=70)
plt.show()
gir.assert_passed(0.01)

# %% [markdown]
# ## 2. The other direction: writing and registering a Gibbs step
#
# Suppose part of your model is a Poisson rate with a Gamma prior,
#
# $$
# \lambda \sim \mathrm{Gamma}(a, \text{rate } b), \qquad
# y_i \mid \lambda \sim \mathrm{Poisson}(\lambda), \quad i = 1..n,
# $$
#
# whose full conditional is conjugate (Gelman et al. 2013 §2.6):
#
# $$
# \lambda \mid y \sim \mathrm{Gamma}\Big(a + \sum_i y_i,\ \text{rate } b + n\Big).
# $$
#
# An exact draw beats any gradient-based move. A zoo step subclasses `ZooGibbsStep`:
#
# - `name` is its registry key, `@register_step` makes it reachable from a model's
#   `StepHint` (and from `inference.gibbs.get_step`);
# - the constructor validates the model structure and raises a `ValueError` naming the
#   problem before anything samples;
# - `compile_point_fn` turns expressions in the model's random variables into functions
#   of PyMC's point, so the step reads the prior's parameters and the data from the
#   point whether they are constants, random, observed (in `fit`) or free (in
#   `getting_it_right`);
# - `step(point)` returns a new point (the incoming one is not mutated) and its stats,
#   drawing all randomness from `self.rng`, which PyMC re-seeds per chain;
# - `lambda` lives on the log scale in the point (`rate_log__`), as PyMC transforms it.

# %%
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.random.basic import GammaRV, PoissonRV


def is_broadcast_of(expression, rv) -> bool:
    """``expression`` is ``rv`` itself, or ``rv`` broadcast to the data's shape."""
    while expression is not rv:
        if expression.owner is None or not isinstance(expression.owner.op, DimShuffle):
            return False
        expression = expression.owner.inputs[0]
    return True


@register_step
class GammaPoissonRate(ZooGibbsStep):
    """Exact conjugate update of a Gamma rate whose only child is a Poisson likelihood."""

    name = "tutorial_gamma_poisson"
    stats_dtypes_shapes = {"rate_shape": (np.float64, [])}

    def __init__(self, vars, *, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        (value,) = self.vars
        rate_rv = self.model.values_to_rvs[value]
        if not isinstance(rate_rv.owner.op, GammaRV):
            raise ValueError(f"vars: {rate_rv.name} must have a Gamma prior")
        children = [rv for rv in self.model.basic_RVs if rv is not rate_rv and any(
            is_broadcast_of(p, rate_rv) for p in rv.owner.op.dist_params(rv.owner))]
        if len(children) != 1 or not isinstance(children[0].owner.op, PoissonRV):
            raise ValueError(f"vars: {rate_rv.name} must be the rate of exactly one "
                             f"Poisson likelihood, found {[c.name for c in children]}")
        shape, scale = rate_rv.owner.op.dist_params(rate_rv.owner)  # PyTensor: scale=1/b
        self._inputs = self.compile_point_fn([shape, scale, children[0]])
        self._value_name = value.name

    def posterior(self, a, b, y):
        """Shape and rate of the full conditional of the rate."""
        return a + y.sum(), b + y.size

    def step(self, point):
        a, scale, y = self._inputs(point)
        shape, rate = self.posterior(float(a), 1.0 / float(scale), np.asarray(y))
        draw = self.rng.gamma(shape, 1.0 / rate)
        new = self.updated(point, **{self._value_name: np.asarray(np.log(draw))})
        return new, [{"rate_shape": shape}]


class ForgetsPriorRate(GammaPoissonRate):
    """The planted bug: the posterior rate drops the prior's b (a plausible slip)."""

    def posterior(self, a, b, y):
        return a + y.sum(), float(y.size)


# %% [markdown]
# A model names the step in a `StepHint`; `fit` and `getting_it_right` resolve it by its
# registered name.

# %%
def counts_model(y):
    with pm.Model() as m:
        rate = pm.Gamma("rate", alpha=3.0, beta=2.0)
        pm.Poisson("y", mu=rate, observed=y)
    return attach_info(m, ZooModelInfo(
        family="counts", preferred_method="gibbs",
        step_hints=(StepHint("tutorial_gamma_poisson", ("rate",)),)))


y_obs = np.array([4, 2, 6, 3])
counts_dt = fit(counts_model(y_obs), draws=DRAWS, tune=50, chains=CHAINS, random_seed=1,
                progressbar=False)
print("steps:", counts_dt.attrs["pp_models_steps"])
print(az.summary(counts_dt, var_names=["rate"]))
print(f"exact posterior mean {(3 + y_obs.sum()) / (2 + y_obs.size):.3f}")

# %% [markdown]
# `getting_it_right` passes for the step, and catches the twin with the planted bug.
# Without the prior's $b$ each update centres the rate on its current value plus $a/n$
# (fresh data have $\sum_i y_i \approx n\lambda$), so the successive-conditional chain
# drifts upwards without bound instead of staying in the prior.

# %%
correct = getting_it_right(counts_model(y_obs), data_vars=["y"], n_samples=GIR_SAMPLES,
                           random_seed=5)
twin = getting_it_right(counts_model(y_obs), data_vars=["y"],
                        step=lambda m: ForgetsPriorRate([m["rate"]], model=m),
                        n_samples=GIR_SAMPLES, random_seed=5)
print("correct step:", correct.step_description, "passed:", correct.passed(0.01))
print("planted bug passed:", twin.passed(0.01))
print(twin.failures(0.01)[["mean_marginal", "mean_successive", "p_mean_holm", "p_ks_holm"]])
correct.assert_passed(0.01)
assert not twin.passed(0.01)

fig, ax = plt.subplots(figsize=(6, 3.5))
low, high = np.quantile(correct.marginal["rate"], [0.005, 0.995])
ax.axhspan(low, high, color="0.9", label="99% of the prior")
ax.plot(correct.successive["rate"].to_numpy(), lw=0.6, label="chain, correct step")
ax.plot(twin.successive["rate"].to_numpy(), lw=0.6, label="chain, planted bug")
ax.set_yscale("log")
ax.set_xlabel("successive-conditional iteration")
ax.set_ylabel("rate")
ax.legend(loc="upper left")
fig.tight_layout()
fig.savefig(OUT / "gir_gamma_poisson.png", dpi=80)
plt.show()

# %% [markdown]
# ## 3. A mixture in plain PyMC: fitted, relabelled, checked, compared
#
# The last piece needs nothing from the zoo but `inference`: a two-component Gaussian
# mixture written as a PyMC user would, with one `pm.Categorical` label per point.
#
# $$w \sim \mathrm{Dirichlet}(1, \dots, 1),\quad \mu_k \sim N(0, 5^2),\quad
#   \sigma_k \sim \mathrm{HalfNormal}(2),\quad z_i \sim \mathrm{Cat}(w),\quad
#   y_i \mid z_i \sim N(\mu_{z_i}, \sigma_{z_i}^2).$$
#
# `fit` gives the labels PyMC's own Gibbs step and the rest NUTS. The components are
# exchangeable, so chains may find them in different orders (label switching);
# `inference.relabel` matches them across draws and chains by their allocations (the ECR
# algorithm, Papastamoulis & Iliopoulos 2010) once told which dimension holds the labels
# and which variable allocates the points.

# %%
from inference import check_convergence, evidence, relabel
from pp_models.model_info import Relabelling

rng_mix = np.random.default_rng(7)
n_mix = 30 if FAST else 120
y_mix = np.concatenate([rng_mix.normal(-2.0, 0.7, n_mix // 2),
                        rng_mix.normal(2.5, 1.0, n_mix - n_mix // 2)])


def hand_mixture(y, K):
    coords = {"component": np.arange(K), "obs": np.arange(len(y))}
    with pm.Model(coords=coords) as m:
        w = pm.Dirichlet("w", a=np.ones(K), dims="component")
        mu = pm.Normal("mu", 0.0, 5.0, dims="component")
        sigma = pm.HalfNormal("sigma", 2.0, dims="component")
        z = pm.Categorical("z", p=w, dims="obs")
        pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=y, dims="obs")
    return m


MIX_DRAWS, MIX_TUNE = (150, 100) if FAST else (1500, 500)
LABELS = Relabelling("component", allocations="z", label_valued=("z",))
mixture_fits = {}
for K in (2, 3):
    raw = fit(hand_mixture(y_mix, K), draws=MIX_DRAWS, tune=MIX_TUNE, chains=CHAINS,
              random_seed=K, progressbar=False)
    mixture_fits[K] = relabel(raw, relabelling=LABELS)
print("steps:", mixture_fits[2].attrs["pp_models_steps"])
print(az.summary(mixture_fits[2], var_names=["w", "mu", "sigma"]))

# %% [markdown]
# `check_convergence` reads R-hat and ESS of every posterior variable (the relabelled
# `w`, `mu`, `sigma` are now comparable between chains) and says which failure it is
# when one fails; the short `--fast` chains may not pass.

# %%
print(check_convergence(mixture_fits[2], var_names=["w", "mu", "sigma"]))

# %% [markdown]
# **LOO.** PyMC's `compute_log_likelihood` would score $y_i$ given its own label
# $z_i$, a parameter that only $y_i$ informs: leaving $y_i$ out then leaves its label
# with nothing but the prior, and the importance ratios of PSIS-LOO blow up. The term
# that leave-one-out needs has the point's own label summed out,
# $\log \sum_k w_k N(y_i \mid \mu_k, \sigma_k^2)$ (Vehtari, Gelman & Gabry 2017, who
# integrate observation-specific latents out the same way), written here in a few lines
# as the `log_likelihood` group ArviZ reads.

# %%
from scipy import stats as sps


def add_mixture_log_likelihood(dt, y):
    post = dt["posterior"]
    dens = sps.norm.logpdf(y[None, None, :, None], post["mu"].values[:, :, None, :],
                           post["sigma"].values[:, :, None, :])
    terms = np.logaddexp.reduce(np.log(post["w"].values)[:, :, None, :] + dens, axis=-1)
    dt["log_likelihood"] = xr.DataTree(xr.Dataset(
        {"y": (("chain", "draw", "obs"), terms)},
        coords={"chain": post["chain"].values, "draw": post["draw"].values}))
    return dt


for dt_K in mixture_fits.values():
    add_mixture_log_likelihood(dt_K, y_mix)
comparison = az.compare({f"K = {K}": dt_K for K, dt_K in mixture_fits.items()})
print(comparison[["rank", "elpd", "se", "elpd_diff", "dse", "weight"]])

# %% [markdown]
# **Evidence.** `inference.evidence` runs the model at inverse temperatures
# $\beta \in [0, 1]$ (the likelihood to the power $\beta$) and estimates
# $\log p(y)$ by the stepping stone. PyMC's label step is swapped for its tempered
# version (`TemperedBinaryGibbsMetropolis` for two categories,
# `TemperedCategoricalGibbsMetropolis` for more), NUTS for `TemperedNUTS`, so the
# hand-written model needs no change.

# %%
EVIDENCE_SIZES = (dict(n_temperatures=4, draws=40, tune=30, chains=2) if FAST
                  else dict(n_temperatures=10, draws=500, tune=300, chains=4))
log_evidence = {K: evidence(hand_mixture(y_mix, K), random_seed=10 + K, **EVIDENCE_SIZES)
                for K in (2, 3)}
for K, result in log_evidence.items():
    print(f"K = {K}: log p(y) = {result.log_evidence:.1f} ± {result.se:.1f}")
print(f"log Bayes factor, K = 2 over K = 3: "
      f"{log_evidence[2].log_evidence - log_evidence[3].log_evidence:.1f}")

# %% [markdown]
# ## What to try next
#
# - Put the step in a package: `inference/gibbs/<family>.py` is imported by
#   `inference.gibbs`, so `@register_step` runs on import (`docs/architecture.md`,
#   "Writing a Gibbs step").
# - Let a step claim variables without a hint: set `distributions = (YourRV,)` (or
#   override `competence`) as `crp_collapsed_gibbs` does for `CRP`.
# - Replace `CollapsedDiagGaussian` by `CollapsedGaussian` (full covariance) and put a
#   prior on its `kappa0`; or give the `CRP` a Pitman-Yor `discount` with a Beta prior.
# - Run `inference.testing.sbc` on the learned-width model to check the whole `fit`
#   (tuning included), as `tutorials/testing_your_sampler.py` does.
#
# ## References
#
# - Geweke, J. (2004). Getting it right: joint distribution tests of posterior
#   simulators. *JASA* 99, 799-804.
# - Rasmussen, C. E. (2000). The infinite Gaussian mixture model. *NIPS* 12.
# - Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture
#   models. *JCGS* 9, 249-265.
# - Jain, S. & Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for
#   the Dirichlet process mixture model. *JCGS* 13, 158-182.
# - Murphy, K. P. (2012). *Machine Learning: A Probabilistic Perspective*, ch. 25.
# - Heller, K. A. (2007). *Efficient Bayesian methods for clustering*, PhD thesis, §2.1.
# - Papastamoulis, P. & Iliopoulos, G. (2010). An artificial allocations based solution
#   to the label switching problem in Bayesian analysis of mixtures of distributions.
#   *JCGS* 19, 313-331.
# - Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation
#   using leave-one-out cross-validation and WAIC. *Statistics and Computing* 27,
#   1413-1432.
# - Gelman, A. et al. (2013). *Bayesian Data Analysis*, 3rd ed., §2.6.
