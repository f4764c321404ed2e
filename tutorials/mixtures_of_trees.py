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
# # Which variables depend on which? Chow–Liu trees and mixtures of trees
#
# A tree-structured distribution over $V$ discrete variables is the richest model in
# which exact inference stays linear in $V$, and its maximum-likelihood structure can be
# found exactly: with empirical mutual informations $I(x_s; x_t)$, the log likelihood
# at the MLE is (Murphy 2012 Eqs. 26.9–26.12)
#
# $$\frac{1}{N}\log p(\mathcal D\mid\hat\theta, T)
#   = -\sum_t H(x_t) + \sum_{(s,t)\in T} I(x_s; x_t),$$
#
# so the ML tree is the maximum-weight spanning tree of the mutual informations (Chow &
# Liu 1968). A Dirichlet marginal likelihood (BDeu) can leave edges out: the MAP
# *forest* (Murphy §26.3.3). A *mixture* of trees $p(x) = \sum_k \lambda_k T_k(x)$
# captures dependence that differs between clusters (Meilă & Jordan 2000), and a
# Bayesian version puts a decomposable prior $P(T) \propto \prod_{uv\in T}\beta_{uv}$ on
# each tree, whose normaliser is a determinant (the matrix-tree theorem), so trees can
# be sampled exactly and edge posteriors computed in $O(V^3)$ (Meilă & Jaakkola 2006).
#
# The questions: which frequent words in Reuters stories go together (Murphy's Fig 26.4
# did this for newsgroups)? Do handwritten digits need different trees for different
# clusters? How sure are we about each edge?

# %%
import argparse
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from inference import fit
from pp_models import datasets, mixture_of_trees
from pp_models.mixture_of_trees.cli import binary_word_presence
from pp_models.model_info import posterior_with_labels
from pp_models.trees import maximum_spanning_tree, spanning_tree_edges

parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes (<= 60 s)")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
args, _ = parser.parse_known_args()
OUT = Path(args.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
FAST = args.fast

# %% [markdown]
# ## 1. A Chow–Liu tree over the most frequent Reuters words
#
# The bundled corpus has 395 stories. Each story becomes the presence (0/1) of the 40
# words found in most stories.

# %%
reuters = datasets.load("reuters")
X_words, words = binary_word_presence(reuters.data, reuters.feature_names, 40)
tree = mixture_of_trees.chow_liu(X_words, feature_names=words)
print(f"{X_words.shape[0]} stories x {X_words.shape[1]} words; "
      f"log likelihood {tree.log_likelihood:.1f}")
strongest = sorted(((tree.edge_weights[u, v], words[u], words[v]) for u, v in tree.edges),
                   reverse=True)[:8]
for mi, a, b in strongest:
    print(f"  {a:>10s} - {b:<10s} I = {mi:.3f} nats")

fig, ax = plt.subplots(figsize=(16, 6))
tree.plot(ax=ax, title="Chow-Liu tree of word presence in Reuters stories "
          "(line width = mutual information)")
fig.savefig(OUT / "mixtures_of_trees_reuters.png", dpi=100)
plt.show()

# %% [markdown]
# The ML tree keeps every edge, even those with almost no mutual information. The MAP
# forest drops edges whose score gain is negative: under BDeu, a Bayes factor below one;
# under BIC, $N I_{st} < \tfrac12 \log N$ for binary pairs.

# %%
for score in ("bdeu", "bic"):
    forest = mixture_of_trees.map_forest(X_words, score=score, ess=1.0, feature_names=words)
    print(f"MAP forest ({score}): {len(forest.edges)} of {len(tree.edges)} edges kept, "
          f"score {forest.log_score:.1f}")

# %% [markdown]
# ## 2. A mixture of trees on binarised digits (EM)
#
# scikit-learn ships 1,797 8 x 8 digits (values 0–16); a pixel is "on" above 8.
# Meilă–Jordan EM alternates responsibilities (E step, in log space) with a weighted
# Chow–Liu tree per component (M step); its log likelihood never decreases.

# %%
digits = load_digits()
pixels = (digits.data > 8).astype(np.int64)
rng = np.random.default_rng(0)
order = rng.permutation(len(pixels))
n_train = 600 if FAST else 1400
train, test = pixels[order[:n_train]], pixels[order[n_train:]]
K = 5 if FAST else 10
mix = mixture_of_trees.em(train, K, n_init=1 if FAST else 3, max_iter=50 if FAST else 200,
                          prior=1.0, random_seed=1)
single = mixture_of_trees.chow_liu(train, prior=1.0)
print(f"EM: {mix.n_iter} iterations, converged {mix.converged}")
print(f"held-out log likelihood per digit: one tree {single.logpdf(test).mean():.2f}, "
      f"mixture of {K} trees {mix.logpdf(test).mean():.2f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
axes[0].plot(mix.log_likelihood_trace)
axes[0].set(xlabel="EM iteration", ylabel="log likelihood", title="EM is monotone")
labels = digits.target[order[:n_train]]
component = mix.predict(train)
table = np.zeros((K, 10))
np.add.at(table, (component, labels), 1)
axes[1].imshow(table / table.sum(1, keepdims=True), aspect="auto", cmap="Greys")
axes[1].set(xlabel="true digit", ylabel="component", title="who goes where")
fig.tight_layout()
fig.savefig(OUT / "mixtures_of_trees_em.png", dpi=100)
plt.show()


# %% [markdown]
# Each component's tree drawn on the pixel grid: dependence follows the strokes.

# %%
def draw_on_grid(ax, edges, weights, image):
    ax.imshow(image.reshape(8, 8), cmap="Greys", alpha=0.4)
    top = max(weights[u, v] for u, v in edges) or 1.0
    for u, v in edges:
        if weights[u, v] < 0.02 * top:  # near-constant pixels join anywhere: not drawn
            continue
        ax.plot([u % 8, v % 8], [u // 8, v // 8], color="C3",
                lw=0.5 + 3 * weights[u, v] / top)
    ax.set_axis_off()


show = np.argsort(-mix.weights)[:5]
fig, axes = plt.subplots(1, len(show), figsize=(3 * len(show), 3))
for ax, k in zip(axes, show, strict=True):
    t = mix.trees[k]
    mean_image = train[component == k].mean(0) if np.any(component == k) else np.zeros(64)
    draw_on_grid(ax, t.edges, t.edge_weights, mean_image)
    ax.set_title(f"component {k}, weight {mix.weights[k]:.2f}")
fig.savefig(OUT / "mixtures_of_trees_digit_trees.png", dpi=100)
plt.show()

# %% [markdown]
# ## 3. The Bayesian mixture of trees: posterior edge probabilities
#
# $w \sim \mathrm{Dir}(\alpha)$, $T_k \sim \mathrm{SpanningTree}(\beta)$, BDeu
# Dirichlet CPTs integrated out, $z_i \sim \mathrm{Cat}(w)$. `inference.fit` runs the
# registered Gibbs step: collapsed assignments, each tree drawn *exactly* from its
# conditional posterior (decomposable: $\beta_{uv}$ times the edge's Bayes factor) by
# sequential matrix-tree sampling, then the weights; `split_merge=True` adds a move per
# pair of components that reallocates all their rows at once (a restricted-Gibbs
# proposal, accepted by Metropolis-Hastings with the trees integrated out by the
# matrix-tree theorem). To keep it quick we pool the digits to
# 4 x 4 (a pooled pixel is on when its 2 x 2 block has mean > 8).

# %%
pooled = digits.images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)
Xp = (pooled > 8).astype(np.int64)[order[: 300 if FAST else 800]]
model = mixture_of_trees.model(Xp, 3, alpha=1.0, ess=1.0, split_merge=True)
dt = fit(model, method="gibbs", draws=50 if FAST else 500, tune=50 if FAST else 200,
         chains=2, random_seed=3, progressbar=False)
print(az.summary(dt, var_names=["weights_sorted"], kind="diagnostics"))
# the number of occupied components is often the same in every draw, and R-hat of a
# constant is undefined (0/0), so we show its posterior as frequencies instead
occupied, counts = np.unique(dt["posterior"]["n_occupied"].values, return_counts=True)
print("posterior of the number of occupied components:",
      dict(zip(occupied.tolist(), (counts / counts.sum()).round(3).tolist())))
print("log p(X | z, trees) per draw, chain means:",
      dt["sample_stats"]["log_marginal"].mean("draw").values.round(1))

# %%
print("split-merge moves accepted per draw:",
      float(dt["sample_stats"]["split_merge_accepted"].mean()))

# %% [markdown]
# R-hat above 1.01 on the sorted weights means the chains sit in different modes of
# the assignment posterior, tens of nats apart in log p(X | z, trees): one-at-a-time
# updates of $z$ move slowly between partitions. Each chain starts from assignments
# drawn from the prior (PyMC's initial point, every row in component 0, left R-hat at
# 1.65-1.96 here; prior starts bring it to 1.1-1.4), and with hundreds of rows the
# split-merge move is rarely accepted (a few in a thousand). Starting from EM's
# solution does not help either: its partitions score ~100 nats *below* where the Gibbs
# chains go within a few sweeps (the collapsed posterior favours a different kind of
# partition than the maximum-likelihood fit). Read the edge probabilities per chain.
#
# Given a draw's assignments, each component's tree posterior is decomposable, so its
# edge marginals $P(uv \in T_k \mid z, X) = w_{uv} R_{uv}$ (weight times effective
# resistance) are exact; `fit` averages them over the draws (Rao-Blackwellised, in
# `tree_structure/edge_probability`; the plain frequencies of the sampled trees are in
# `edge_frequency`). With 800 rows the log edge weights span over 100 nats, more than a
# Laplacian in double precision holds: the effective conductances come from a Kron
# reduction that only adds and multiplies positive numbers, in log space.

# %%
prob = dt["tree_structure"]["edge_probability"].values[0]  # chain 0: (component, 16, 16)
w_mean = posterior_with_labels(dt)["w"].values[0].mean(0)
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
for k, ax in enumerate(axes):
    im = ax.imshow(prob[k], vmin=0, vmax=1, cmap="viridis")
    ax.set_title(f"component {k} (weight {w_mean[k]:.2f})")
    ax.set_xlabel("pooled pixel")
fig.colorbar(im, ax=axes, label="posterior P(edge)")
fig.savefig(OUT / "mixtures_of_trees_edge_probabilities.png", dpi=100)
plt.show()
sure = [(prob[k][u, v], k, u, v) for k in range(3)
        for u, v in spanning_tree_edges(maximum_spanning_tree(prob[k]))]
print(f"edges of the posterior-mode trees with P > 0.9: "
      f"{sum(p > 0.9 for p, *_ in sure)} of {len(sure)}")

# %% [markdown]
# ## 4. Real-valued data: a mixture of Gaussian trees
#
# With `kind="gaussian"` each component is a Gaussian whose covariance is Markov on its
# tree, under a hyper-Markov Normal-Inverse-Wishart prior (Dawid & Lauritzen 1993):
# every edge's pair and every node's single column get NIW marginals that agree on
# shared nodes, so with the parameters integrated out
#
# $$p(D \mid T) = \prod_v p(D_v) \prod_{uv \in T} \frac{p(D_{uv})}{p(D_u)\,p(D_v)},$$
#
# again decomposable: the same exact tree draws and edge marginals apply. The wine data
# (178 wines, 13 standardised chemical measurements, three cultivars):

# %%
from sklearn.datasets import load_wine

wine = load_wine()
Xw = (wine.data - wine.data.mean(0)) / wine.data.std(0)
gmodel = mixture_of_trees.model(Xw, 3, kind="gaussian", feature_names=wine.feature_names)
gdt = fit(gmodel, method="gibbs", draws=50 if FAST else 400, tune=50 if FAST else 200,
          chains=2, random_seed=5, progressbar=False)
print(az.summary(gdt, var_names=["weights_sorted"], kind="diagnostics"))
z_last = posterior_with_labels(gdt)["z"].values[0, -1]
table = np.zeros((3, 3), dtype=int)
np.add.at(table, (z_last, wine.target), 1)
print("components (rows) x cultivars (columns), last draw of chain 0:")
print(table)

# %%
gprob = gdt["tree_structure"]["edge_probability"].values[0]
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
short = [name[:10] for name in wine.feature_names]
for k, ax in enumerate(axes):
    im = ax.imshow(gprob[k], vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(13), short, rotation=90, fontsize=7)
    ax.set_yticks(range(13), short, fontsize=7)
    ax.set_title(f"component {k}")
fig.colorbar(im, ax=axes, label="posterior P(edge)")
fig.savefig(OUT / "mixtures_of_trees_wine.png", dpi=100)
plt.show()

# %% [markdown]
# ## What to try next
#
# * `ppzoo fit mixture_of_trees --dataset reuters` fits the Bayesian model from the
#   command line and saves `structure.png` with the posterior trees.
# * A structure prior: `edge_prior` ($\beta$) can favour neighbouring pixels.
# * `kind="gaussian"` in `chow_liu` and `em` fits Gaussian trees (closed-form tree-GGM
#   precision); `map_forest(..., score="bic", kind="gaussian")` a Gaussian forest; the
#   Gaussian Bayesian model's prior is set by `m0`, `kappa0`, `delta`, `S0`.
# * `benchmarks/bench_trees.py` compares `chow_liu` with pgmpy and a NumPy/SciPy baseline.
#
# ## References
#
# * Chow, C. & Liu, C. (1968). Approximating discrete probability distributions with
#   dependence trees. IEEE Trans. Information Theory 14(3).
# * Dawid, A. P. & Lauritzen, S. L. (1993). Hyper Markov laws in the statistical analysis
#   of decomposable graphical models. Annals of Statistics 21(3).
# * Jain, S. & Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for
#   the Dirichlet process mixture model. J. Comp. Graph. Stat. 13(1).
# * Meilă, M. & Jordan, M. I. (2000). Learning with mixtures of trees. JMLR 1.
# * Meilă, M. & Jaakkola, T. (2006). Tractable Bayesian learning of tree belief networks.
#   Statistics and Computing 16.
# * Murphy, K. P. (2012). Machine Learning: a Probabilistic Perspective, §26.3.
# * Wilson, D. B. (1996). Generating random spanning trees more quickly than the cover
#   time. STOC.
