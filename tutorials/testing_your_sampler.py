# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Testing your sampler: getting it right, then calibration
#
# A Gibbs sampler with a subtle bug still runs, still "converges" (R-hat is happy: every
# chain converges to the same *wrong* distribution) and still gives plausible numbers.
# Two checks catch what convergence diagnostics cannot:
#
# 1. **Getting it right** (Geweke 2004): draw (parameters, data) from the prior
#    independently, and again by alternating one sampler step with fresh data. A correct
#    sampler leaves the joint distribution invariant, so both samples agree.
# 2. **Simulation-based calibration** (Talts et al. 2018): fit many data sets simulated
#    from the prior; the rank of the true parameter among the posterior draws must be
#    uniform.
#
# We write a Gibbs step for a Normal model with unknown mean and variance, plant the
# kind of bug people really make, find it, fix it and confirm the fix.

# %%
import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

from inference import fit
from inference.gibbs import ZooGibbsStep
from inference.testing import check_convergence, getting_it_right, sbc

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
DRAWS = 200 if FAST else 1000
GIR_SAMPLES = 1000 if FAST else 4000
N_SIMULATIONS = 10 if FAST else 60

# %% [markdown]
# ## The model
#
# $\mu \sim N(0, 2^2)$, $\sigma^2 \sim \text{InvGamma}(6, 5)$,
# $y_i \mid \mu, \sigma^2 \sim N(\mu, \sigma^2)$ for $i = 1..5$. Its full conditionals are
# $\mu \mid \sigma^2, y \sim N(m, 1/p)$ with $p = 1/4 + n/\sigma^2$,
# $m = (\sum_i y_i/\sigma^2)/p$, and
# $\sigma^2 \mid \mu, y \sim \text{InvGamma}(6 + n/2,\; 5 + \sum_i (y_i-\mu)^2/2)$.

# %%
N = 5


def normal_model(observed=None):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma2 = pm.InverseGamma("sigma2", alpha=6.0, beta=5.0)
        pm.Normal("y", mu, pm.math.sqrt(sigma2), shape=N, observed=observed)
    return model


# %% [markdown]
# ## A Gibbs step, the zoo way
#
# Subclass `ZooGibbsStep`: it stores the value variables (note `sigma2` lives on the log
# scale in PyMC's point, as `sigma2_log__`), gives `self.rng` (re-seeded per chain by
# PyMC), and `compile_point_fn` reads the data from the point whether they are observed
# (fitting) or free (getting it right). This first version has a bug.


# %%
class NormalGibbs(ZooGibbsStep):
    name = "tutorial_normal_gibbs"
    stats_dtypes_shapes = {}

    def __init__(self, *, model=None, rng=None, shape_offset=0):
        model = pm.modelcontext(model)
        super().__init__([model["mu"], model["sigma2"]], model=model, rng=rng)
        self.shape_offset = shape_offset
        self._y = self.compile_point_fn(model["y"])

    def step(self, point):
        y = np.asarray(self._y(point))
        n = y.size
        sigma2 = float(np.exp(point["sigma2_log__"]))
        precision = 1 / 4 + n / sigma2
        mu = (y.sum() / sigma2) / precision + precision**-0.5 * self.rng.normal()
        # The bug: "n - 1" sneaks in from the unbiased-variance formula.
        shape = 6.0 + (n - 1 + self.shape_offset) / 2
        sigma2 = (5.0 + 0.5 * np.sum((y - mu) ** 2)) / self.rng.gamma(shape)
        return self.updated(point, mu=np.asarray(mu), sigma2_log__=np.asarray(np.log(sigma2))), [{}]


# %% [markdown]
# ## It converges...
#
# On data from the model, four chains agree with each other: convergence diagnostics see
# nothing wrong.

# %%
rng = np.random.default_rng(1)
y_obs = rng.normal(0.5, 1.0, size=N)
model = normal_model(observed=y_obs)
with model:
    buggy = NormalGibbs()
dt = fit(model, method="gibbs", step=buggy, draws=DRAWS, tune=200, chains=4, cores=1,
         random_seed=2, progressbar=False)
print(check_convergence(dt))

# %% [markdown]
# ## ...but it does not get it right
#
# `getting_it_right` builds the step on a copy of the model with the data free (pass a
# callable), runs 4,000 draws of each kind and compares every parameter, its square and
# data summaries: a z test on the means that accounts for the chain's autocorrelation,
# and a KS test on the thinned chain, Holm-corrected.

# %%
gir = getting_it_right(normal_model(), data_vars=["y"],
                       step=lambda m: NormalGibbs(model=m), n_samples=GIR_SAMPLES, random_seed=3)
print("passed:", gir.passed(alpha=0.01))
print(gir)
gir.plot().savefig(OUT / "gir_buggy.png")
plt.show()

# %% [markdown]
# The statistics of `sigma2` are off: the sampler's $\sigma^2$ is too large, because the
# inverse-gamma shape counts one observation too few. Fix the count and test again.

# %%
gir_fixed = getting_it_right(normal_model(), data_vars=["y"],
                             step=lambda m: NormalGibbs(model=m, shape_offset=1),
                             n_samples=GIR_SAMPLES, random_seed=3)
print("passed:", gir_fixed.passed(alpha=0.01))
print(gir_fixed)

# %% [markdown]
# ## Confirm with simulation-based calibration
#
# SBC checks the whole inference (the step inside `fit`, with its tuning and thinning).
# Pass `executor=` a `ProcessPoolExecutor` or a Dask client's `get_executor()` to spread
# the simulations; ranks are the same as in the serial run for the same seed.


# %%
class FixedStep:
    def __call__(self, m):
        return NormalGibbs(model=m, shape_offset=1)


calibration = sbc(normal_model(), data_vars=["y"], n_simulations=N_SIMULATIONS,
                  fit_kwargs=dict(method="gibbs", step=FixedStep(), draws=200, tune=50,
                                  chains=2),
                  random_seed=4)
print("passed:", calibration.passed(alpha=0.01))
print(calibration)
calibration.plot().savefig(OUT / "sbc_fixed.png")
plt.show()
