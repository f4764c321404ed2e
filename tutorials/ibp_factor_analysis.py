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
# # How many factors? Sparse factor analysis with the Indian buffet process
#
# Factor analysis explains $D$ measured variables (genes, probes, sensors) observed on
# $N$ samples by a few latent factors: $\mathbf y_n = G\mathbf x_n + \boldsymbol\epsilon_n$.
# Two questions are usually answered by hand: **how many factors**, and **which
# variables does each factor touch**. Knowles & Ghahramani's non-parametric sparse
# factor analysis (NSFA; Knowles 2012, ch. 3) answers both from the data: the pattern of
# non-zero loadings is a binary matrix $Z$ with an Indian buffet process (IBP) prior,
# which allows any number of factors and makes each one sparse.
#
# The model, with $Y$ a $D \times N$ matrix whose **rows are the measured variables**:
#
# $$Z \sim \mathrm{IBP}(\alpha),\quad G_{dk} \sim Z_{dk}\,N(0, \lambda_k^{-1}) + (1 -
# Z_{dk})\,\delta_0,\quad x_{kn} \sim N(0, 1),\quad y_{dn} \sim N\big((GX)_{dn},
# \psi_d\big),$$
#
# with Gamma priors on the precisions $\lambda_k$ and $\psi_d^{-1}$ (and optionally on
# $\alpha$). `pp_models.ibp_fa.model` builds it in PyMC and `inference.fit` samples it
# with Knowles' Algorithm 1 (Gibbs on $Z$ with the loading integrated out, a
# Metropolis-Hastings move that adds or removes a variable's *own* features with their
# factor values integrated out, $X$ jointly, conjugate hyperparameters), written in
# Numba.

# %%
import argparse
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
from scipy import stats
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import PCA, FactorAnalysis

from inference import fit, summary
from pp_models import ibp_fa
from pp_models.distributions import IndianBuffet
from pp_models.distributions.indian_buffet import left_ordered
from pp_models.model_info import posterior_with_labels

parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes (CI)")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
args, _ = parser.parse_known_args()
OUT = Path(args.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
FAST = args.fast

# %% [markdown]
# ## The Indian buffet
#
# Customers (the $D$ variables) enter a buffet with infinitely many dishes (factors).
# The first takes Poisson($\alpha$) dishes. Customer $i$ takes each dish already tried
# by $m_k$ customers with probability $m_k / i$, then Poisson($\alpha / i$) new ones.
# Popular dishes get more popular, every customer samples Poisson($\alpha$) dishes, and
# the number of dishes tried is Poisson($\alpha H_D$), $H_D = \sum_{j \le D} 1/j$: it
# grows only logarithmically with $D$.
#
# `IndianBuffet` is a PyMC distribution: `pm.draw` runs the buffet (in Numba), and its
# `logp` is the IBP probability (Knowles Eq. 2.12), invariant to the order of the
# columns. The pictures show draws in left-ordered form (features sorted by who took
# them first).

# %%
D_demo = 20
fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
for ax, alpha in zip(axes, (1.0, 3.0, 8.0)):
    Z = pm.draw(IndianBuffet.dist(alpha=alpha, n_rows=D_demo, k_max=80), random_seed=1)
    Z = left_ordered(Z)[:, : max(1, int(Z.any(0).sum()))]
    ax.imshow(Z, cmap="Greys", aspect="auto", interpolation="nearest")
    ax.set_title(f"alpha = {alpha}: {Z.shape[1]} features")
    ax.set_xlabel("feature (dish)")
    ax.set_ylabel("variable (customer)")
fig.tight_layout()
plt.savefig(OUT / "ibp_draws.png", dpi=80)
plt.show()

# %% [markdown]
# The number of features of many draws against its Poisson($\alpha H_D$) law:

# %%
alpha = 3.0
draws = pm.draw(IndianBuffet.dist(alpha=alpha, n_rows=D_demo, k_max=80),
                draws=500 if FAST else 3000, random_seed=2)
k_plus = draws.any(axis=1).sum(axis=1)
rate = alpha * np.sum(1.0 / np.arange(1, D_demo + 1))
grid = np.arange(k_plus.max() + 5)
fig, ax = plt.subplots(figsize=(5, 3))
ax.hist(k_plus, bins=np.arange(grid.max() + 1) - 0.5, density=True, alpha=0.6,
        label="buffet draws")
ax.plot(grid, stats.poisson.pmf(grid, rate), "o-", label=f"Poisson({rate:.2f})")
ax.set_xlabel("number of features K+")
ax.legend()
plt.savefig(OUT / "ibp_k_plus.png", dpi=80)
plt.show()
print(f"mean K+ {k_plus.mean():.2f} (theory {rate:.2f}); mean dishes per customer "
      f"{draws.sum(axis=2).mean():.2f} (theory {alpha})")

# %% [markdown]
# ## A sparse factor problem with a known answer
#
# Knowles §3.3.1: $D = 100$ variables, $N = 100$ samples, 16 factors each touching about
# 10 % of the variables, loadings and factors $N(0, 1)$, noise at a signal-to-noise
# ratio of 10. (`--fast` shrinks it.)

# %%
if FAST:
    D, N, K_true, density = 40, 60, 5, 0.2
    tune, draws_kept, chains = 300, 150, 2
else:
    D, N, K_true, density = 100, 100, 16, 0.1
    tune, draws_kept, chains = 1000, 500, 2
prob = ibp_fa.synthetic(D, N, K_true, density=density, snr=10.0, seed=7)
print("Y shape", prob.Y.shape, "| true features per variable:",
      np.bincount(prob.Z.sum(axis=1)))

# %%
model = ibp_fa.model(prob.Y)          # alpha = 1, diagonal noise, per-factor lambda
dt = fit(model, draws=draws_kept, tune=tune, chains=chains, random_seed=1,
         progressbar=False)
print(dt.attrs["pp_models_steps"])

# %% [markdown]
# ## Diagnostics on what is identified
#
# Features have no order (relabelling them changes nothing), so R-hat and ESS are
# computed on label-invariant statistics: the number of active features, the norm of
# the reconstruction $GX$, the sorted feature sizes, and the hyperparameters.
# `inference.summary` leaves the labelled variables ($Z$, $V$, $X$) out.

# %%
table = summary(dt, var_names=["n_features", "reconstruction_norm"])
print(table.to_string())
az.plot_trace_dist(dt, var_names=["n_features", "reconstruction_norm"])
plt.savefig(OUT / "ibp_trace.png", dpi=80)
plt.show()

# %% [markdown]
# ## How many factors?

# %%
k = dt["posterior"]["n_features"].values.reshape(-1)
values, counts = np.unique(k, return_counts=True)
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(values, counts / counts.sum())
ax.axvline(K_true, color="k", ls="--", label="truth")
ax.set_xlabel("number of active features")
ax.set_ylabel("posterior probability")
ax.legend()
plt.savefig(OUT / "ibp_n_features.png", dpi=80)
plt.show()
print(f"posterior mean K {k.mean():.2f} (sd {k.std():.2f}); truth {K_true}")

# %% [markdown]
# ## Which variables does each factor touch?
#
# The last draw's loadings, with its features matched to the true ones (by loading
# similarity, allowing a sign flip) for the picture. Grey is zero.

# %%
post = posterior_with_labels(dt)
Z_last = post["Z"].values[-1, -1] != 0
G_last = (Z_last * post["V"].values[-1, -1])[:, Z_last.any(axis=0)]
cost = np.minimum(((prob.G[:, :, None] - G_last[:, None, :]) ** 2).sum(0),
                  ((prob.G[:, :, None] + G_last[:, None, :]) ** 2).sum(0))
rows, cols = linear_sum_assignment(cost)
order = list(cols) + [c for c in range(G_last.shape[1]) if c not in cols]
fig, axes = plt.subplots(1, 2, figsize=(8, 5), sharey=True)
lim = np.abs(prob.G).max()
axes[0].imshow(prob.G, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
axes[0].set_title("true G")
axes[1].imshow(G_last[:, order], cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
axes[1].set_title("one posterior draw of G (matched)")
for ax in axes:
    ax.set_xlabel("factor")
axes[0].set_ylabel("variable")
fig.tight_layout()
plt.savefig(OUT / "ibp_loadings.png", dpi=80)
plt.show()

# %% [markdown]
# ## Against PCA and factor analysis with the true number of factors
#
# Knowles' Eq. 3.18 scores loadings: each true column against its closest estimated
# column (we also allow a sign flip). PCA and scikit-learn's `FactorAnalysis` are given
# the true $K$, which NSFA had to find; they still return dense, rotated loadings.

# %%
last = 10
eq318 = np.mean([
    ibp_fa.loading_error(prob.G, ((z != 0) * v)[:, (z != 0).any(0)])
    for z, v in zip(post["Z"].values[0, -last:], post["V"].values[0, -last:])
])
fa = FactorAnalysis(n_components=K_true, random_state=0).fit(prob.Y.T)
pca = PCA(n_components=K_true).fit(prob.Y.T)
rec = ibp_fa.reconstruction(dt)["mean"].values
rows = {
    "NSFA (K inferred)": (eq318, ibp_fa.reconstruction_error(prob.GX, rec)),
    "FactorAnalysis (true K)": (
        ibp_fa.loading_error(prob.G, fa.components_.T),
        ibp_fa.reconstruction_error(prob.GX, (fa.transform(prob.Y.T) @ fa.components_
                                              + fa.mean_).T)),
    "PCA (true K)": (
        ibp_fa.loading_error(prob.G, pca.components_.T * np.sqrt(pca.explained_variance_)),
        ibp_fa.reconstruction_error(prob.GX, pca.inverse_transform(pca.transform(prob.Y.T)).T)),
}
print(f"{'method':26s} {'Eq 3.18 loading error':>22s} {'|GX^ - GX|^2/|GX|^2':>20s}")
for name, (le, re) in rows.items():
    print(f"{name:26s} {le:22.4f} {re:20.4f}")

# %% [markdown]
# The reconstructions are comparable (all three explain the signal), but only NSFA
# recovers the *loadings*: sparse, unrotated, one column per true factor.
#
# ## Each variable's number of factors, and missing values
#
# `ibp_fa.summarize` adds the posterior of each row's number of features, the
# reconstruction's mean and sd, and the posterior of $K$. NaN entries of `Y` are
# treated as missing: the likelihood skips them and the reconstruction predicts them.

# %%
out = ibp_fa.summarize(dt)
counts = out["factors"]["row_feature_counts"].values
print("rows whose most probable feature count is the truth:",
      f"{np.mean(counts.argmax(axis=1) == prob.Z.sum(axis=1)):.2f}")

# %% [markdown]
# ## A fast first look: the finite approximation with ADVI
#
# With `k_max=K` the model becomes a finite, continuous **approximation**: $\pi_k \sim
# \mathrm{Beta}(\alpha/K, 1)$ and the point mass replaced by a narrow Gaussian spike,
# with $Z$ summed out. It runs with NUTS or ADVI; it is not the non-parametric model
# (K is capped and the spike has a width).

# %%
approx = fit(ibp_fa.model(prob.Y, k_max=K_true + 4), method="advi", draws=200, chains=1,
             random_seed=0, progressbar=False, n=800 if FAST else 3000,
             obj_optimizer=pm.adam(learning_rate=0.02))
rec_advi = ibp_fa.reconstruction(approx)["mean"].values
print(f"ADVI: reconstruction error {ibp_fa.reconstruction_error(prob.GX, rec_advi):.4f}, "
      f"median active features {np.median(approx['posterior']['n_features'].values)}")

# %% [markdown]
# ## What to try next
#
# * A Gamma prior on $\alpha$ (`alpha=(1.0, 1.0)`), isotropic noise, a shared $\lambda$.
# * The prior birth proposal (`birth_proposal="prior"`) against the tuned one, and
#   watch how fast the number of features burns in (Knowles §3.3.2).
# * Hide 10 % of the entries of `Y` (NaN) and score the held-out predictions.
# * Check the sampler yourself: `tests/inference/gibbs/ibp_fa/test_gir.py` runs
#   Knowles' getting-it-right test and catches two planted bugs (see the
#   `testing_your_sampler` tutorial).
#
# ## References
#
# * Knowles, D. A. (2012). *Bayesian non-parametric models and inference for sparse and
#   hierarchical latent structure*. PhD thesis, University of Cambridge, ch. 2.6 and 3.
# * Knowles, D. & Ghahramani, Z. (2011). Nonparametric Bayesian sparse factor models
#   with application to gene expression modeling. *Ann. Appl. Stat.* 5, 1534-1552.
# * Griffiths, T. L. & Ghahramani, Z. (2011). The Indian buffet process: an introduction
#   and review. *JMLR* 12, 1185-1224.
