"""The finite mixture's pointwise log-likelihood (the row's label summed out) against
the model's own densities (pp_models.finite_mixture_predictive)."""

from __future__ import annotations

import numpy as np
import pytensor
import xarray as xr
from scipy.special import logsumexp

from pp_models import finite_mixture, finite_mixture_predictive
from tests.helpers.backends import PYTHON_MODE


def test_row_density_sums_the_models_joint_over_the_rows_label():
    # log p(x_i | w, mu, sigma) = logsumexp_k [log p(z_i = k | w) + log p(x_i | z_i = k,
    # mu, sigma)], each term from the model's own elementwise logp graph
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 2))
    m = finite_mixture.model(X, 3)
    w = rng.dirichlet(np.ones(3), size=2)
    mu = rng.normal(size=(2, 3, 2))
    sigma = rng.uniform(0.5, 2, (2, 3, 2))
    post = xr.Dataset({"w": (("chain", "draw", "k"), w[None]),
                       "mu": (("chain", "draw", "k", "f"), mu[None]),
                       "sigma": (("chain", "draw", "k", "f"), sigma[None])})
    got = finite_mixture_predictive.pointwise_log_likelihood(post, m)["X"].values[0]
    from pymc.model.transform.conditioning import remove_value_transforms

    um = remove_value_transforms(m)  # points on the variables' own scale
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        elementwise = um.compile_fn(um.logp(vars=[um["z"], um["X"]], sum=False),
                                    on_unused_input="ignore")
    for s in range(2):
        terms = []
        for k in range(3):
            point = {"w": w[s], "mu": mu[s], "sigma": sigma[s], "z": np.full(5, k)}
            lp_z, lp_x = elementwise(point)
            terms.append(lp_z + lp_x.sum(1))
        np.testing.assert_allclose(got[s], logsumexp(np.stack(terms), axis=0), rtol=1e-10)
