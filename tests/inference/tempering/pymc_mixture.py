"""The case the tempered PyMC steps are tested on: a mixture of two Gaussian components
(means ``mu_k ~ N(m0_k, S0)``, known sigma) on three points, with a ``pm.Categorical`` or
a ``pm.Bernoulli`` label per point, and the two tempered steps that sample each."""

import numpy as np
import pymc as pm

from inference.tempering import (
    TemperedBinaryGibbsMetropolis,
    TemperedCategoricalGibbsMetropolis,
    TemperedMetropolis,
    TemperedSlice,
)

__all__ = ["M0", "S0", "SIGMA", "STEPS", "WEIGHTS", "X3", "mixture"]

X3 = np.array([-1.2, 0.2, 1.5])
M0 = np.array([-1.0, 1.0])
S0, SIGMA = 1.0, 0.8
WEIGHTS = np.array([0.35, 0.65])


def mixture(latent: str) -> pm.Model:
    with pm.Model() as m:
        mu = pm.Normal("mu", mu=M0, sigma=S0)
        if latent == "categorical":
            z = pm.Categorical("z", p=WEIGHTS, shape=3)
        else:
            z = pm.Bernoulli("z", p=WEIGHTS[1], shape=3)
        pm.Normal("X", mu=mu[z], sigma=SIGMA, observed=X3)
    return m


STEPS = {
    "categorical": (TemperedCategoricalGibbsMetropolis, TemperedSlice),
    "bernoulli": (TemperedBinaryGibbsMetropolis, TemperedMetropolis),
}
