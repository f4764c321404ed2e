# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Dirichlet-process mixtures: how many clusters, and which points go together?
#
# A finite mixture needs the number of components K up front. A Dirichlet-process
# mixture (DPM) lets the data decide: the prior allows any number of clusters, and the
# posterior says which partitions of the data are plausible (Murphy 2012 §25.2).
#
# We build one model three ways and fit it with three methods:
#
# | representation | latent variables | method |
# |---|---|---|
# | Chinese restaurant, parameters integrated out | partition `z` | collapsed Gibbs |
# | truncated stick-breaking | weights `w`, parameters | NUTS |
# | the same | the same | ADVI |
#
# (collapsed Gibbs: Neal 2000, Algorithm 3, with Jain & Neal 2004 split-merge moves)
#
# and look at what is identified: not the labels (they switch), but **which points go
# together** (the co-clustering matrix) and **how many clusters** there are.

# %%
import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

from inference import fit
from inference.testing import check_convergence
from pp_models import dpm, partitions
from pp_models.distributions import CRP

# `--fast` (the test suite's run) shrinks data and runs; without it: the full tutorial.
# parse_known_args lets Jupyter's own command-line arguments pass.
parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes for a quick test run")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
OPTIONS = parser.parse_known_args()[0]
FAST = OPTIONS.fast
OUT = Path(OPTIONS.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
SCALE = 0.25 if FAST else 1.0  # fraction of the data set's size
GIBBS_DRAWS = 300 if FAST else 2000
NUTS_DRAWS, NUTS_TUNE = (100, 150) if FAST else (300, 400)
ADVI_ITERATIONS = 1500 if FAST else 6000
SUMMARY_DRAWS = 30 if FAST else 200  # draws averaged by the predictive density

rng = np.random.default_rng(2026)

# %% [markdown]
# ## The Chinese restaurant process
#
# Customers enter one at a time; customer $i$ joins a table with $n_k$ people with
# probability $n_k/(\alpha + i - 1)$ and a new table with probability
# $\alpha/(\alpha + i - 1)$ (Murphy Eq. 25.28). The seating is a random partition; its
# probability (the Ewens formula, Eq. 25.60) does not depend on the order of the
# customers. `pp_models.distributions.CRP` is this distribution as a PyMC random
# variable over canonical labels (first customer at table 0, new tables numbered in
# order of opening). Its number of tables has mean $\sum_{i=1}^n \alpha/(\alpha+i-1)$:

# %%
n_items = 100
fig, ax = plt.subplots(figsize=(6, 3))
for alpha in (0.5, 2.0, 8.0):
    draws = pm.draw(CRP.dist(alpha=alpha, n=n_items), draws=2000, random_seed=1)
    K = draws.max(axis=1) + 1
    expected = sum(alpha / (alpha + i) for i in range(n_items))
    ax.hist(K, bins=np.arange(0.5, 40.5), alpha=0.5, label=f"alpha={alpha}")
    print(f"alpha = {alpha}: mean K of 2000 draws {K.mean():.2f}, formula {expected:.2f}")
ax.set_xlabel("number of clusters K among 100 items")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "crp_prior_K.png", dpi=80)
plt.show()

# %% [markdown]
# ## Data
#
# 200 points from four 2-D Gaussian clusters of unequal sizes.

# %%
sizes = [round(SCALE * n) for n in (80, 60, 40, 20)]
centers = np.array([[-3.0, 0.0], [2.5, 2.5], [2.5, -2.0], [0.0, 4.5]])
truth = np.repeat(np.arange(4), sizes)
X = centers[truth] + rng.normal(0, 0.8, (truth.size, 2))

# %% [markdown]
# ## 1. CRP with the component parameters integrated out: collapsed Gibbs
#
# `dpm.model` with `likelihood="diag_gaussian"` gives each cluster independent
# Normal-Gamma priors per column, so that its parameters can be integrated out
# analytically (the "collapsed" likelihood). `alpha=(1, 1)` puts a Gamma(1, 1) prior on
# the concentration. `fit(method="auto")` picks the collapsed Gibbs step for `z` and the
# Escobar & West (1995) update for `alpha`.

# %%
crp_model = dpm.model(X, likelihood="diag_gaussian", alpha=(1.0, 1.0))
# postprocess=False: `fit` would add `dpm.summarize`'s outputs with its defaults; the code
# below calls it with the settings it shows
gibbs = fit(crp_model, method="auto", draws=GIBBS_DRAWS, tune=200, chains=2, random_seed=1,
            progressbar=False, postprocess=False)
print("steps:", gibbs.attrs["pp_models_steps"])
print(check_convergence(gibbs, var_names=["n_clusters", "largest_cluster", "alpha"],
                        ess_bulk_min=100, ess_tail_min=100))

# %% [markdown]
# The diagnostics are computed on label-invariant statistics (the labels themselves are
# left out). Their effective sample sizes are much lower than the number of draws: the
# chain makes long excursions in which one large cluster is split in two, and single-item
# Gibbs moves undo such a split only slowly. The split-merge moves are what make these
# excursions end at all; sweeps are cheap, so run long chains.

# %% [markdown]
# ## 2. The same model by truncated stick-breaking, for NUTS and ADVI
#
# With `truncation=T` the model has $T$ explicit components: weights from
# `pm.StickBreakingWeights` (T - 1 breaks give T weights), a Normal-Gamma draw per
# component, and the assignments summed out of the likelihood, so everything is
# continuous. This is the same prior as above, truncated at T components.

# %%
sb_model = dpm.model(X, likelihood="diag_gaussian", alpha=(1.0, 1.0), truncation=10)
# many tiny stick-breaking weights make the geometry hard: a higher target acceptance
# reduces divergent transitions (a few may remain: the count is printed below)
nuts = fit(sb_model, method="auto", draws=NUTS_DRAWS, tune=NUTS_TUNE, chains=2, random_seed=1,
           progressbar=False, target_accept=0.95, postprocess=False)
advi = fit(sb_model, method="advi", draws=300, chains=2, random_seed=1, progressbar=False,
           n=ADVI_ITERATIONS, postprocess=False)
print("NUTS divergences:", int(nuts["sample_stats"]["diverging"].sum()))

# %% [markdown]
# ## Label switching, and why the co-clustering matrix is the thing to look at
#
# The components of a mixture are exchangeable: relabelling them gives the same model.
# So "the mean of component 3" is not a well-defined posterior quantity; two NUTS chains
# may put the big cluster in different components, and the raw weights disagree
# between chains, while their sorted version agrees:

# %%
w = nuts["posterior"]["w"].values
for c in range(w.shape[0]):
    print(f"chain {c}: mean weights by component {np.round(w[c].mean(0)[:5], 2)}, "
          f"sorted {np.round(nuts['posterior']['weights_sorted'].values[c].mean(0)[:5], 2)}")

# %% [markdown]
# What every method identifies is the **posterior similarity** $P_{ij} = \Pr(z_i = z_j
# \mid X)$, which is the same under any relabelling. `dpm.summarize` adds it to the
# result, with a point-estimate partition (minimising the posterior expected Binder
# loss), the posterior of the number of clusters, and the posterior predictive density on
# a grid. For the stick-breaking fits, the assignments are drawn from their conditional
# given each draw's weights and parameters.

# %%
results = {
    "collapsed Gibbs": dpm.summarize(gibbs, crp_model, max_draws=SUMMARY_DRAWS),
    # the predictive density is drawn for the collapsed fit only (below)
    "stick-breaking NUTS": dpm.summarize(nuts, sb_model, predictive=False),
    "stick-breaking ADVI": dpm.summarize(advi, sb_model, predictive=False),
}
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
for ax, (name, res) in zip(axes, results.items(), strict=True):
    ax.imshow(res["clustering"]["coclustering"].values, vmin=0, vmax=1, cmap="Greys")
    z_hat = res["clustering"]["point_estimate"].values
    ari = partitions.adjusted_rand_index(z_hat, truth)
    ax.set_title(f"{name}\nARI of point estimate {ari:.2f}")
    print(f"{name}: point-estimate cluster sizes {np.bincount(z_hat)}, ARI {ari:.3f}")
fig.suptitle("co-clustering matrices (items in true-cluster order)")
fig.savefig(OUT / "coclustering.png", dpi=80)
plt.show()

# %% [markdown]
# ## How many clusters?
#
# The posterior of K. A DPM often gives some mass to a few extra small clusters (the
# prior keeps creating them at rate alpha); the point estimate and the co-clustering
# matrix are much more stable than K itself. Under stick-breaking, K cannot exceed the
# truncation T (here 10): mass piling up at K = T says T is too small for this posterior.
# ADVI's mean-field approximation is usually more confident than the MCMC answers.

# %%
fig, ax = plt.subplots(figsize=(6, 3))
for offset, (name, res) in zip((-0.25, 0.0, 0.25), results.items(), strict=True):
    pmf = res["clustering"]["n_clusters_pmf"]
    ax.bar(pmf["n_clusters"].values + offset, pmf.values, width=0.25, label=name)
    print(f"{name}: P(K) =", pmf.to_series().round(3).to_dict())
ax.set_xlabel("K")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "posterior_K.png", dpi=80)
plt.show()

# %% [markdown]
# ## Posterior predictive density
#
# For the collapsed model the predictive of a new point given a partition is
# $\sum_k \frac{n_k}{n+\alpha} p(x \mid X_k) + \frac{\alpha}{n+\alpha} p(x)$ with Student-t
# predictives; averaged over draws it gives a density estimate with no K chosen anywhere.

# %%
dens = results["collapsed Gibbs"]["predictive"]["density"]
gx, gy = (dens.coords[c].values for c in dens.dims)
fig, ax = plt.subplots(figsize=(5, 4))
ax.contourf(gx, gy, dens.values.T, levels=20, cmap="viridis")
ax.scatter(X[:, 0], X[:, 1], s=3, c="white")
ax.set_title("posterior predictive density (collapsed Gibbs)")
fig.savefig(OUT / "predictive_density.png", dpi=80)
plt.show()
mass = np.trapezoid(np.trapezoid(dens.values, gy, axis=1), gx)
print(f"predictive mass on the plotted window: {mass:.3f}")

# %% [markdown]
# ## Cluster parameters
#
# With a conjugate prior, the parameters of each cluster of the point estimate come from
# the posterior in closed form:

# %%
params = dpm.cluster_parameters(crp_model, results["collapsed Gibbs"]["clustering"][
    "point_estimate"].values)
print(params[["size", "mean", "variance"]].to_dataframe().round(2))

# %% [markdown]
# ## Comparing models by LOO
#
# Is the DP mixture better than a finite mixture with K fixed in advance? PSIS-LOO
# (`az.loo`, `az.compare`) estimates each model's expected log predictive density of a
# new point from the pointwise log-likelihood. `fit(..., log_likelihood=True)` adds it
# (`inference.compute_log_likelihood(dt, model)` adds it afterwards). Its per-row term is
# what each model predicts for a row it did not see: for the collapsed DP mixture the
# conditional predictive $\log p(x_i \mid z_{-i}, X_{-i})$ (the row's table summed out
# under the CRP, the tables' parameters integrated out), for the finite mixture the
# mixture density $\log \sum_k w_k \prod_j N(x_{ij} \mid \mu_{kj}, \sigma_{kj})$.
# (`pm.compute_log_likelihood` would instead score each row given its own label, and on a
# `fit` result it does not find the labels, which `fit` keeps in `posterior_labels`.)

# %%
import arviz as az

from inference import compute_log_likelihood
from pp_models import finite_mixture

LOO_DRAWS = 100 if FAST else 500
candidates = {"DP mixture (collapsed Gibbs)": compute_log_likelihood(gibbs, crp_model)}
for K in (2, 4) if FAST else (2, 3, 4, 5):
    candidates[f"finite mixture, K = {K}"] = fit(
        finite_mixture.model(X, K), draws=LOO_DRAWS, tune=LOO_DRAWS, chains=2,
        random_seed=1, progressbar=False, log_likelihood=True)
comparison = az.compare(candidates)
print(comparison[["rank", "elpd", "p", "elpd_diff", "dse", "weight"]].round(2))

# %% [markdown]
# Fewer components than the data have clusters predict worse; from four components on
# (the data have four clusters) the finite mixtures and the DP mixture predict about
# equally well, within a few standard errors of the difference (`dse`), and the DP
# mixture did not need K. Two remarks on reading the table. The DP mixture's `p` is small
# next to a finite mixture's: its pointwise terms already leave row $i$ out of its table's
# statistics, so `p` only measures how much the partition of the other rows moves, not a
# number of parameters. And ArviZ warns about high Pareto $k$: under a discrete partition
# the importance ratios take few distinct values, which the Pareto fit reads as a heavy
# tail; a row's estimate still cannot leave the range of its terms across draws:

# %%
terms = candidates["DP mixture (collapsed Gibbs)"]["log_likelihood"]["X"]
spread = terms.max(("chain", "draw")) - terms.min(("chain", "draw"))
print(f"spread of a row's log predictive across draws: median {float(spread.median()):.2f}, "
      f"largest {float(spread.max()):.2f} nats")

# %% [markdown]
# ## Takeaways
#
# - Look at the co-clustering matrix, a point-estimate partition and the posterior of K,
#   not at component labels.
# - Compare models by LOO: `fit(..., log_likelihood=True)` then `az.compare`; draw
#   replicated data with `inference.sample_posterior_predictive(dt, model)` (PyMC's own
#   function would not find the labels in a `fit` result, and for a collapsed model would
#   draw the clusters' parameters from their prior).
# - The collapsed Gibbs sampler is exact for conjugate models and fast (Numba loops;
#   split-merge moves escape the "stuck with two clusters merged" states single-site
#   Gibbs is prone to). For non-conjugate components, `likelihood="normal"` or
#   `"poisson"` uses Neal's Algorithm 8 with NUTS on the cluster parameters.
# - Stick-breaking makes the model continuous for NUTS and ADVI, at the price of a
#   truncation level and label switching in the raw output.
# - The prior on the cluster parameters decides how many clusters real data get. For
#   full covariances, `likelihood="gaussian"`'s default (prior cluster covariance 1.5 x
#   the data's, weak `nu0`, vague means) was chosen on the real-data panel of
#   `benchmarks/bench_clustering.py` (docs/families/dpm.md), and `"diag_gaussian"` (used
#   here) takes the same scale per column; `hyperprior="wishart"` learns the base
#   measure instead (Rasmussen 2000), which suits iris but over-splits skewed data.
