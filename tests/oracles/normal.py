"""The conjugate Normal model, whose evidence is closed form: y_i ~ N(mu, 1),
mu ~ N(0, 1), i = 1..20, so y ~ N(0, I + 11') (the anchors' model)."""

import numpy as np
import pymc as pm
from scipy import stats

__all__ = ["EXACT", "Y", "normal_model"]

Y = np.random.default_rng(0).normal(0.5, 1.0, 20)
#: log p(y), from the marginal y ~ N(0, I + 11')
EXACT = float(stats.multivariate_normal(np.zeros(20), np.eye(20) + 1.0).logpdf(Y))


def normal_model():
    """The model as PyMC writes it, ``y`` observed."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y)
    return m
