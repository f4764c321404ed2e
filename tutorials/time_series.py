# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Time series: hidden Markov models and linear dynamical systems
#
# Ghahramani & Roweis (1999) and Ghahramani's MLSS slides present the two classic
# time-series models as the dynamic versions of two static ones the zoo already has:
#
# - a **mixture model** draws a discrete label, $s \sim \pi$, $y \mid s = k \sim F(\theta_k)$;
#   the **hidden Markov model** (`pp_models.hmm`) lets the label follow a Markov chain,
#   $s_t \mid s_{t-1} \sim P_{s_{t-1}, \cdot}$;
# - **factor analysis** draws a continuous factor, $x \sim N(0, I)$, $y = C x + v$; the
#   **linear dynamical system** (`pp_models.lds`) lets it follow a linear Gaussian
#   recursion, $x_t = A x_{t-1} + w_t$, $y_t = C x_t + v_t$.
#
# In both, the latent variables form a chain, so inference for given parameters is a
# forward pass and a backward pass that are linear in the length $T$: forward-backward
# (HMM) and the Kalman filter with the Rauch-Tung-Striebel smoother (LDS). In both, EM
# alternates that E step with closed-form updates (Baum-Welch; Shumway & Stoffer).
#
# One real series serves both: the annual flow of the Nile at Aswan, 1871-1970
# (`pp_models.datasets.load("nile")`), which fell when a dam was built in 1898 and
# rainfall changed. An HMM reads it as a switch between regimes, an LDS as a slowly
# wandering level.

# %%
import argparse
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from hmmlearn import hmm as hmmlearn
from statsmodels.tsa.statespace.structural import UnobservedComponents

from inference import evidence, fit
from pp_models import datasets, hmm, lds
from pp_models.hmm.emissions import get_emission

# `--fast` (the test suite's run) shrinks the runs; without it: the full tutorial.
# parse_known_args lets Jupyter's own command-line arguments pass.
parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes for a quick test run")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
OPTIONS = parser.parse_known_args()[0]
FAST = OPTIONS.fast
OUT = Path(OPTIONS.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
KS = (1, 2, 3) if FAST else (1, 2, 3, 4)
# a tempered Gibbs run per K: temperatures, draws, tuning and chains; its cold chain
# is the posterior (for LOO) and its ladder gives the evidence (stepping stone)
TEMPERED = (dict(tempering=4, draws=150, tune=100, chains=2) if FAST
            else dict(tempering=10, draws=1000, tune=500, chains=4))
HORIZON = 10  # years forecast by the LDS

nile = datasets.load("nile")
y = np.asarray(nile.data, dtype=float).ravel()
years = np.asarray(nile.extras["year"])
print(f"{y.size} years, {years[0]}-{years[-1]}; flow {y.min():.0f}-{y.max():.0f} (10^8 m^3)")

# %% [markdown]
# ## A hidden Markov model: EM, decoding, and hmmlearn beside it
#
# `hmm.em` is Baum-Welch with the seed's updates (the log-likelihood never decreases);
# `hmm.forward_backward` gives the smoothed state probabilities
# $p(s_t = k \mid y)$ and `hmm.viterbi` the single most probable path. hmmlearn fits the
# same model by the same algorithm: their maxima should agree, and our forward
# algorithm must give hmmlearn's `score` at the same parameters.

# %%
em2 = hmm.em(y, 2, random_seed=0)
order = np.argsort(em2.params["mu"])  # states by mean: labels are arbitrary
log_lik = get_emission("gaussian").log_lik(em2.params, y)
fb = hmm.forward_backward(np.log(em2.pi0), np.log(em2.P), log_lik)
path, _ = hmm.viterbi(np.log(em2.pi0), np.log(em2.P), log_lik)

theirs = hmmlearn.GaussianHMM(n_components=2, covariance_type="diag", n_iter=500,
                              tol=1e-8, random_state=0).fit(y[:, None])
at_ours = hmmlearn.GaussianHMM(n_components=2, covariance_type="diag", init_params="",
                               params="")
at_ours.startprob_, at_ours.transmat_ = em2.pi0, em2.P
at_ours.means_, at_ours.covars_ = em2.params["mu"][:, None], 1 / em2.params["tau"][:, None]
print(pd.DataFrame({
    "log-likelihood": [em2.log_likelihood, theirs.score(y[:, None])],
    "means": [np.round(np.sort(em2.params["mu"])), np.round(np.sort(theirs.means_.ravel()))],
}, index=["pp_models.hmm.em", "hmmlearn GaussianHMM.fit"]))
print(f"hmmlearn's score at our EM estimate: {at_ours.score(y[:, None]):.6f} "
      f"(ours {fb.log_evidence:.6f})")
marginal = fb.marginals[:, order[1]]  # p(high state | y)
change = years[np.argmax(path != path[0])]
print(f"Viterbi path: one switch, in {change}; marginal p(high) falls below 1/2 in "
      f"{years[np.argmax(marginal < 0.5)]}; years where the two decodings disagree: "
      f"{int(np.sum((marginal > 0.5) != (path == order[1])))}")

# %% [markdown]
# ## The Bayesian HMM: FFBS and conjugate Gibbs
#
# `fit(hmm.model(y, K))` samples the whole state path in one exact block draw (forward
# filtering, backward sampling) and the initial distribution, the transitions and the
# state means and precisions from their conjugate conditionals. `stickiness` adds to
# the prior's diagonal of each transition row: regimes that persist. The posterior
# carries what EM's single point does not: how sure we are of each year's regime and of
# each parameter. Labels switch freely between chains; the label-invariant statistics
# (`emission_means_sorted`, `stationary_sorted`, ...) are what to read.

# %%
fits, results, loo = {}, {}, {}
for K in KS:
    m = hmm.model(y, K, stickiness=5.0)
    fits[K] = fit(m, random_seed=K, progressbar=False, log_likelihood=True, **TEMPERED)
    results[K] = evidence(m, dt=fits[K])
    loo[f"K = {K}"] = fits[K]

post2 = fits[2]["posterior"]
means = post2["emission_means_sorted"].values.reshape(-1, 2)
print("K = 2, posterior means of the state means (sorted):",
      np.round(means.mean(axis=0)), "sd", np.round(means.std(axis=0)),
      "| EM:", np.round(np.sort(em2.params["mu"])))
probs = hmm.state_probabilities(fits[2])  # (T, K), states ranked by mean per draw

fig, axes = plt.subplots(2, 1, figsize=(9, 5), sharex=True,
                         gridspec_kw={"height_ratios": [2, 1]})
axes[0].plot(years, y, "k.-", lw=0.7, ms=3, label="Nile flow")
axes[0].plot(years, np.sort(em2.params["mu"])[(path == order[1]).astype(int)], "C3",
             label="Viterbi path's state means (EM)")
axes[0].set(ylabel="10^8 m^3", title="Nile at Aswan: a two-state Gaussian HMM")
axes[0].legend(fontsize=8)
axes[1].plot(years, marginal, "C3", label="EM: p(high | y), forward-backward")
axes[1].plot(years, probs[:, 1], "C0--", label="Bayes: p(high | y), posterior")
axes[1].set(ylabel="probability", xlabel="year", ylim=(-0.05, 1.05))
axes[1].legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / "time_series_hmm.png", dpi=80)

# %% [markdown]
# ## How many states? The evidence and LOO for K = 1..4
#
# Each K is its own model. The runs above were tempered (`fit(..., tempering=N)`):
# replicas at a ladder of temperatures from the prior to the posterior, whose
# log-likelihoods give the **evidence** $\log p(y \mid K)$ by the stepping stone
# (`evidence(model, dt=...)`, with a standard error from the chains' spread), and
# whose cold chain is the posterior, from which PSIS-LOO estimates how well each year
# is predicted from the others (the HMM's pointwise term is
# $\log p(y_t \mid y_{-t}, \theta)$, the path summed out).

# %%
table = pd.DataFrame({
    "log evidence": [results[K].log_evidence for K in KS],
    "se": [results[K].se for K in KS],
}, index=[f"K = {K}" for K in KS])
comparison = az.compare(loo)
table = table.join(comparison[["rank", "elpd", "dse"]])
print(table.round(2))
best_evidence = table["log evidence"].idxmax()
gap = table["log evidence"].sort_values().iloc[-2:]
print(f"largest evidence: {best_evidence}; ahead of {gap.index[0]} by "
      f"{gap.iloc[1] - gap.iloc[0]:.1f} nats (se {table.loc[best_evidence, 'se']:.1f}); "
      f"LOO ranks first: {comparison.index[0]}")

# %% [markdown]
# What the numbers say. In the `--fast` run (K = 1..3, 4 temperatures, 2 chains of 150
# draws) the log evidences were -660.1 (se 0.3), -643.0 (0.7) and -646.3 (0.5): one
# state, a constant mean, is 17 nats behind, so the series has (at least) two regimes;
# two states beat three by 3.3 nats, several standard errors. LOO agrees that one state
# is far worse (elpd 30 lower) but puts two and three states within one standard error
# of their difference (`dse`): a third state neither helps nor hurts the prediction of
# a held-out year. Two caveats: the se is the spread between chains only (a stepping
# stone over few temperatures can be biased by more, see the model-comparison
# tutorial), and PSIS warns that some years' Pareto k exceed 0.6 (the extreme years
# are influential), so those years' LOO terms are rough. The full run (K = 1..4, 10
# temperatures, 4 chains) prints its own table; we have not quoted it here.
#
# ## A linear dynamical system: the Nile's local level
#
# The textbook LDS for this series (Durbin & Koopman 2012, ch. 2) is the local-level
# model, a random walk seen through noise: $A = C = 1$,
# $x_t = x_{t-1} + w_t$, $w_t \sim N(0, Q)$, $y_t = x_t + v_t$, $v_t \sim N(0, R)$.
# `lds.em` fits $Q$ and $R$ with $A$, $C$ and the initial state held fixed;
# statsmodels' `UnobservedComponents("llevel")` maximises the same likelihood
# numerically, under the same initialisation.

# %%
m0, P0 = np.array([y[0]]), np.array([[1e4]])
res = lds.em(y, 1, init={"A": 1.0, "C": 1.0, "m0": m0, "P0": P0, "Q": 1000.0, "R": 10000.0},
             fixed=("A", "C", "m0", "P0"), max_iter=300 if FAST else 5000, tol=1e-12)
uc = UnobservedComponents(y, "llevel")
uc.ssm.initialize_known(m0, P0)
uc.loglikelihood_burn = uc.ssm.loglikelihood_burn = 0
uc_fit = uc.fit(disp=False, method="nm", maxiter=5000)
print(pd.DataFrame({
    "Q (level)": [res.Q[0, 0], uc_fit.params[1]],
    "R (noise)": [res.R[0, 0], uc_fit.params[0]],
    "log-likelihood": [res.log_likelihood, uc_fit.llf],
}, index=[f"pp_models.lds.em ({res.n_iter} iterations)", "statsmodels"]).round(1))
ours = lds.kalman_filter(y, res.A, res.C, uc_fit.params[1] * np.eye(1),
                         uc_fit.params[0] * np.eye(1), m0, P0).total_log_likelihood
print(f"our Kalman filter at statsmodels' estimate: {ours:.6f} (theirs {uc_fit.llf:.6f})")

# %% [markdown]
# EM climbs slowly near the maximum of a random walk's variances (a long ridge), so its
# log-likelihood approaches statsmodels' from below with the iterations.
#
# ## Smoothed states and a forecast with bands
#
# The Kalman filter gives $p(x_t \mid y_{1:t})$, the RTS smoother
# $p(x_t \mid y_{1:T})$. A forecast runs the filter's prediction on without data:
# $m_{T+h} = A^h m_T$, $P_{T+h} = A P_{T+h-1} A' + Q$, and the observation adds $R$.

# %%
A, C, Q, R = res.A, res.C, res.Q, res.R
smooth = lds.rts_smoother(y, A, C, Q, R, m0, P0)
mean_s = smooth.smoothed_mean[:, 0]
sd_s = np.sqrt(smooth.smoothed_cov[:, 0, 0])
mean_f, cov_f = smooth.filter.filtered_mean[-1], smooth.filter.filtered_cov[-1]
forecast, band = [], []
for _ in range(HORIZON):
    mean_f, cov_f = A @ mean_f, A @ cov_f @ A.T + Q
    forecast.append((C @ mean_f)[0])
    band.append(np.sqrt((C @ cov_f @ C.T + R)[0, 0]))
forecast, band = np.array(forecast), np.array(band)
theirs_f = uc_fit.get_forecast(HORIZON)
future = years[-1] + 1 + np.arange(HORIZON)
print(pd.DataFrame({"ours": forecast, "ours sd": band,
                    "statsmodels": theirs_f.predicted_mean,
                    "statsmodels sd": np.sqrt(theirs_f.var_pred_mean)},
                   index=future).round(1).head(3))

fig, ax = plt.subplots(figsize=(9, 3.8))
ax.plot(years, y, "k.", ms=3, label="Nile flow")
ax.plot(years, mean_s, "C0", label="smoothed level (RTS)")
ax.fill_between(years, mean_s - 1.96 * sd_s, mean_s + 1.96 * sd_s, color="C0", alpha=0.25,
                label="95% band of the level")
ax.plot(future, forecast, "C1", label="forecast")
ax.fill_between(future, forecast - 1.96 * band, forecast + 1.96 * band, color="C1",
                alpha=0.25, label="95% band of a new year's flow")
ax.plot(future, theirs_f.predicted_mean, "k:", lw=1, label="statsmodels forecast")
ax.set(xlabel="year", ylabel="10^8 m^3", title="Nile at Aswan: the local-level LDS")
ax.legend(fontsize=7, ncol=2)
fig.tight_layout()
fig.savefig(OUT / "time_series_lds.png", dpi=80)

# %% [markdown]
# ## Takeaways
#
# - An HMM is a mixture whose component labels form a Markov chain; an LDS is factor
#   analysis whose factors follow a linear Gaussian recursion. Forward-backward and the
#   Kalman filter + RTS smoother are the same two-pass computation for a discrete and a
#   Gaussian latent chain.
# - `pp_models.hmm`: `em`, `forward_backward`, `viterbi` equal hmmlearn's likelihood;
#   `fit(hmm.model(...))` samples paths exactly (FFBS) and gives each year's regime
#   probability with its uncertainty; Viterbi's single path and the marginal
#   probabilities agree here because the regimes are well separated.
# - Choosing K: `fit(..., tempering=N)` then `evidence(model, dt=...)` and `az.compare`
#   from the same runs. On the Nile both reject one state; beyond two the differences
#   are within their errors.
# - `pp_models.lds`: `kalman_filter`, `rts_smoother` and `em` give statsmodels' local
#   level, smoothed states and forecasts.
