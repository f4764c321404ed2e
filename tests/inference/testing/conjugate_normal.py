"""A conjugate Normal model with a hand-written Gibbs step and planted-bug twins.

    mu ~ Normal(M0, S0),  sigma2 ~ InverseGamma(A0, B0),  y_i ~ Normal(mu, sqrt(sigma2))

A0 = 6 keeps the fourth moment of sigma2 finite, so the default statistic sigma2^2 has a
finite variance (the mean test needs a central limit theorem). The full conditionals are
standard (Gelman et al. 2013 §3.3 and §11.1):

    mu | sigma2, y ~ Normal(m, 1 / p),  p = 1/S0^2 + n/sigma2,  m = (M0/S0^2 + sum(y)/sigma2)/p
    sigma2 | mu, y ~ InverseGamma(A0 + n/2, B0 + sum((y - mu)^2)/2)

Each twin plants one realistic bug; the correct step and every twin are used by the
harness's own tests and by the false-alarm / power measurement.
"""

import numpy as np
import pymc as pm
from pytensor.tensor.variable import TensorConstant

from inference.gibbs.base import ZooGibbsStep

M0, S0, A0, B0 = 0.0, 2.0, 6.0, 5.0
N_OBS = 5

BUGS = ("variance", "count", "prior")


def generative_model(n=N_OBS, observed=None):
    with pm.Model() as model:
        mu = pm.Normal("mu", M0, S0)
        sigma2 = pm.InverseGamma("sigma2", alpha=A0, beta=B0)
        pm.Normal("y", mu, pm.math.sqrt(sigma2), shape=n, observed=observed)
    return model


class NormalGibbs(ZooGibbsStep):
    """Exact Gibbs sweep over (mu, sigma2); ``bug`` plants a mistake.

    bug : None | "variance" | "count" | "prior"
        - "variance": the posterior variance of mu is used where its sd belongs;
        - "count": the inverse-gamma shape uses (n - 1)/2 (an off-by-one in n);
        - "prior": the prior's precision and mean are dropped from mu's update.
    """

    name = "test_normal_gibbs"
    stats_dtypes_shapes = {"sigma2": (np.float64, [])}

    def __init__(self, vars=None, *, model=None, rng=None, bug=None, blocked=True):
        model = pm.modelcontext(model)
        super().__init__([model["mu"], model["sigma2"]], model=model, rng=rng)
        if bug not in (None, *BUGS):
            raise ValueError(f"bug must be one of {BUGS}, got {bug!r}")
        self.bug = bug
        # y as the point has it (free, as in getting-it-right) or the observed data (a
        # constant, as in SBC's conditioned models), read without compiling a function:
        # a compiled one holds the data as a constant, one Numba graph per data set (60
        # per SBC run of test_sbc.py)
        y_value = model.rvs_to_values[model["y"]]
        self._y_data = np.asarray(y_value.data) if isinstance(y_value, TensorConstant) else None
        self._y_name = y_value.name

    def _y(self, point):
        return self._y_data if self._y_data is not None else point[self._y_name]

    def step(self, point):
        y = np.asarray(self._y(point))
        n = y.size
        sigma2 = float(np.exp(point["sigma2_log__"]))
        precision = 1 / S0**2 + n / sigma2
        mean = (M0 / S0**2 + y.sum() / sigma2) / precision
        if self.bug == "prior":
            precision = n / sigma2
            mean = (y.sum() / sigma2) / precision
        sd = 1 / precision if self.bug == "variance" else precision**-0.5
        mu = mean + sd * self.rng.normal()
        shape = A0 + (n - 1 if self.bug == "count" else n) / 2
        rate = B0 + 0.5 * np.sum((y - mu) ** 2)
        sigma2 = rate / self.rng.gamma(shape)
        new = self.updated(point, mu=np.asarray(mu), sigma2_log__=np.asarray(np.log(sigma2)))
        return new, [{"sigma2": sigma2}]
