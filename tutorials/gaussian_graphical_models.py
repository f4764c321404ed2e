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
# # Which proteins talk to each other? Gaussian graphical models on the Sachs data
#
# Sachs et al. (2005) measured 11 signalling proteins in 7466 single cells. If the
# measurements are jointly Gaussian, $x \sim N(\mu, \Omega^{-1})$, then two proteins are
# conditionally independent given all the others exactly when their entry of the
# precision matrix is zero, $\omega_{st} = 0$ (Murphy 2012 §19.4.4). Estimating a
# *sparse* $\Omega$ therefore estimates a graph: an undirected graphical model.
#
# This tutorial answers the question three ways and compares each with the consensus
# signalling network (usually quoted as 17 edges; the file shipped with `cdt`, which we
# use, lists 18 distinct pairs):
#
# 1. **Graphical lasso** (Friedman, Hastie & Tibshirani 2008; Murphy Eq. 26.70):
#    $\hat\Omega = \arg\min_{\Omega \succ 0} -\log\det\Omega + \mathrm{tr}(S\Omega) +
#    \lambda \sum_{j,k} |\omega_{jk}|$, reproducing Murphy's Fig. 26.18.
# 2. **Bayesian graphical lasso** (Wang 2012): the same penalty as a prior,
#    $p(\Omega \mid \lambda) \propto \prod_{i<j} \tfrac{\lambda}{2} e^{-\lambda
#    |\omega_{ij}|} \prod_i \tfrac{\lambda}{2} e^{-\lambda\omega_{ii}/2}\,1[\Omega \succ
#    0]$, with $\lambda \sim \mathrm{Gamma}(a, b)$: uncertainty on every partial
#    correlation.
# 3. **Spike-and-slab structure learning** (Wang 2015): $\omega_{ij} \mid z_{ij} \sim
#    N(0, v_1^2)$ if the edge is in ($z_{ij} = 1$), $N(0, v_0^2)$ otherwise, $z_{ij} \sim
#    \mathrm{Bern}(\pi)$: a posterior probability for every edge.
#
# Both Bayesian models are PyMC models (NUTS can sample them through a Cholesky
# parameterisation); `inference.fit` samples them by default with Wang's column-wise
# block Gibbs samplers, written in Numba.

# %%
import argparse
import time
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np

from inference import fit
from pp_models import datasets, ggm

parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes (about a minute)")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
args, _ = parser.parse_known_args()
OUT = Path(args.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
N_CELLS = 300 if args.fast else 1000  # cells used by the Bayesian fits
DRAWS = 300 if args.fast else 1000

sachs = datasets.load("sachs")
X = sachs.data
names = list(sachs.feature_names)
consensus = sachs.extras["consensus_adjacency"]
print(X.shape, f"{int(np.triu(consensus, 1).sum())} consensus edges")
print(sachs.provenance)

# %% [markdown]
# ## The graphical lasso path: Murphy's Fig. 26.18
#
# Murphy runs the graphical lasso on the *unbiased* sample covariance divided by 1000,
# penalising the diagonal too (the convention of ESL and of R's `glasso`;
# scikit-learn penalises only the off-diagonal). Our solver is block coordinate descent
# with a Numba coordinate-descent lasso inside; it never leaves the positive-definite
# cone (see the docstring of `ggm.graphical_lasso`), and reports its KKT gap.

# %%
S = np.cov(X, rowvar=False) / 1000
path = ggm.graphical_lasso_path(S, [36.0, 27.0, 7.0, 0.0])
for res in path.results:
    print(f"lambda = {res.lam:4.0f}: {res.n_edges:2d} edges, {res.iterations} sweeps, "
          f"KKT gap {res.kkt_gap:.1e}")

fig, axes = plt.subplots(1, 4, figsize=(16, 4.5))
for ax, res in zip(axes, path.results):
    ggm.plot_graph(res.adjacency, names, ax=ax, max_width=1.5,
                   title=f"lambda = {res.lam:.0f}, nedges = {res.n_edges}")
fig.tight_layout()
fig.savefig(OUT / "glasso_sachs_path.png", dpi=80)
plt.show()

# %% [markdown]
# The edge counts 8, 11, 18 and 55 are the panel titles of Murphy's Fig. 26.18. With
# scikit-learn's convention the same $\lambda = 27$ gives one edge fewer:

# %%
print("off-diagonal convention, lambda = 27:",
      ggm.graphical_lasso(S, 27.0, penalize_diagonal=False).n_edges, "edges")

# %% [markdown]
# ## How close is each graph to the consensus network?
#
# The consensus network is a *causal* (directed) graph; an undirected Gaussian graph
# also links co-parents ("moralisation") and cannot orient anything, so we compare
# skeletons and expect extra edges. Along a fine path, recall rises as edges enter:

# %%
def precision_recall(estimated, truth):
    est, true = np.triu(estimated, 1), np.triu(truth, 1)
    tp = np.count_nonzero(est & true)
    return tp / max(est.sum(), 1), tp / true.sum()


lams = ggm.lambda_max(S) * np.logspace(0, -3, 40)
fine = ggm.graphical_lasso_path(S, lams)
pr = np.array([precision_recall(r.adjacency, consensus) for r in fine.results])
for res in path.results:
    prec, rec = precision_recall(res.adjacency, consensus)
    print(f"lambda = {res.lam:4.0f}: precision {prec:.2f}, recall {rec:.2f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.semilogx(lams, pr[:, 0], label="precision")
ax.semilogx(lams, pr[:, 1], label="recall")
ax.set_xlabel("lambda")
ax.set_title("glasso path vs the consensus skeleton")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "glasso_consensus_pr.png", dpi=80)
plt.show()

# %% [markdown]
# ## The Bayesian view
#
# The Bayesian models work on standardised data (their priors are on the scale of unit
# variances). To keep the run short we use a random subset of the cells; the posterior
# of 7466 cells is very concentrated and every edge of the moral graph is "in".
#
# First the Bayesian graphical lasso with $\lambda \sim \mathrm{Gamma}(1, 0.1)$:
# `fit` picks the block Gibbs step the factory names (`bglasso_block_gibbs`), which
# also updates $\lambda$ from its Gamma conditional.

# %%
rng = np.random.default_rng(2005)
rows = rng.choice(X.shape[0], size=N_CELLS, replace=False)
Z = X[rows]
Z = (Z - Z.mean(0)) / Z.std(0)

bgl_model = ggm.model(Z, prior="bglasso", lam=(1.0, 0.1), feature_names=names)
t0 = time.perf_counter()
bgl = fit(bgl_model, draws=DRAWS, tune=200, chains=2, cores=1, random_seed=1,
          progressbar=False)
print(f"block Gibbs, 2 chains x {DRAWS + 200} sweeps: {time.perf_counter() - t0:.1f} s")
print(az.summary(bgl, var_names=["lam"]))

# %% [markdown]
# Diagnostics: $\lambda$ and the 55 partial correlations (the label-free quantities of
# this model) should have R-hat near 1 and enough effective draws.

# %%
rho_summary = az.summary(bgl, var_names=["partial_correlation"])
print(rho_summary[["mean", "sd", "ess_bulk", "r_hat"]].describe().loc[["min", "max"]])
az.plot_trace(bgl, var_names=["lam"])
plt.savefig(OUT / "bglasso_lam_trace.png", dpi=80)
plt.show()

# %% [markdown]
# One pair mixes slowly: praf and pmek have a partial correlation near 0.99, and the
# column-wise sampler moves such a strongly coupled pair in small steps (its bulk ESS
# is the minimum above, a few dozen per thousand draws). Run longer chains before
# trusting its interval; $\lambda$ and the other pairs mix well.
#
# The Bayesian lasso does not set entries to zero: its "graph" is read from the
# posterior, e.g. the edges whose 89% interval for the partial correlation excludes 0.

# %%
rho = bgl.posterior["partial_correlation"]
lower = rho.quantile(0.055, dim=("chain", "draw"))
upper = rho.quantile(0.945, dim=("chain", "draw"))
credible = ((lower > 0) | (upper < 0)).values
print(f"{int(credible.sum())} of {credible.size} pairs have an 89% interval excluding 0")

# %% [markdown]
# ## Spike-and-slab: a probability for every edge
#
# Wang's (2015) defaults: spike sd $v_0 = 0.02$, slab sd $v_1 = 1$, prior inclusion
# $\pi = 2/(p-1)$. `fit` adds a `graph` group with the posterior edge-inclusion
# probabilities (Rao-Blackwellised over the indicators).

# %%
ss_model = ggm.model(Z, prior="spike_slab", feature_names=names)
t0 = time.perf_counter()
ss = fit(ss_model, draws=DRAWS, tune=200, chains=2, cores=1, random_seed=2,
         progressbar=False)
print(f"SSSL block Gibbs: {time.perf_counter() - t0:.1f} s")
inclusion = ggm.edge_inclusion(ss).values
iu = np.triu_indices(len(names), 1)
print(f"{int((inclusion[iu] > 0.5).sum())} edges with inclusion probability > 0.5")


def auc(scores, truth):
    s, t = scores[iu], truth[iu]
    pos, neg = s[t], s[~t]
    return np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :])


entry = np.zeros_like(S)  # glasso: the largest lambda at which an edge is present
for lam, res in zip(lams, fine.results):
    entry = np.where(res.adjacency & (entry == 0), lam, entry)
abs_rho = np.abs(ggm.posterior_partial_correlation(bgl).values)
print(f"AUC against the consensus skeleton: spike-and-slab {auc(inclusion, consensus):.2f}, "
      f"glasso path (all cells) {auc(entry, consensus):.2f}, "
      f"Bayesian glasso |partial correlation| {auc(abs_rho, consensus):.2f}")

fig, axes = plt.subplots(1, 3, figsize=(15, 5))
ggm.plot_graph(inclusion, names, ax=axes[0], threshold=0.5, true_edges=consensus,
               title="spike-and-slab: P(edge) > 0.5")
credible_matrix = np.zeros((len(names), len(names)), dtype=bool)
credible_matrix[iu] = credible
credible_matrix |= credible_matrix.T
ggm.plot_graph(ggm.posterior_partial_correlation(bgl).values * credible_matrix,
               names, ax=axes[1], true_edges=consensus,
               title="Bayesian glasso: 89% interval excludes 0")
ggm.plot_graph(consensus.astype(float), names, ax=axes[2], title="consensus network")
fig.tight_layout()
fig.savefig(OUT / "bayesian_graphs_sachs.png", dpi=80)
plt.show()

# %% [markdown]
# Grey lines are the consensus edges. The agreement is partial (AUCs well short of 1,
# printed above): some extra edges are the moral edges between co-parents that any
# undirected model must add, and the rest is the cost of pooling cells measured under
# different interventions into one Gaussian (Murphy §26.6 fits a causal DAG that models
# them; Sachs et al. used them to orient edges).
#
# ## What to try next
#
# * `ggm.model(..., nonparanormal=True)`: the flow-cytometry margins are heavy-tailed;
#   Liu et al.'s (2009) normal scores give a Gaussian-copula graphical model.
# * `fit(bgl_model, method="nuts")`: NUTS on the same model (the test suite checks that
#   it agrees with the block Gibbs sampler within Monte Carlo error).
# * `ggm.covariance_selection(S, graph)`: the maximum-likelihood precision *given* a
#   graph (Hastie et al. 2009 Alg. 17.1), e.g. the consensus skeleton, and its
#   log-likelihood against the glasso graphs.
# * `benchmarks/bench_ggm.py`: the 20-penalty glasso path at p = 200 against
#   scikit-learn and gglasso.
#
# ## References
#
# * Sachs, Perez, Pe'er, Lauffenburger & Nolan (2005). Causal protein-signaling networks
#   derived from multiparameter single-cell data. *Science* 308, 523-529.
# * Friedman, Hastie & Tibshirani (2008). Sparse inverse covariance estimation with the
#   graphical lasso. *Biostatistics* 9(3), 432-441.
# * Wang (2012). Bayesian graphical lasso models and efficient posterior computation.
#   *Bayesian Analysis* 7(4), 867-886.
# * Wang (2015). Scaling it up: stochastic search structure learning in graphical
#   models. *Bayesian Analysis* 10(2), 351-377.
# * Murphy (2012). *Machine Learning: a Probabilistic Perspective*, §26.7.

plt.close("all")
