"""The infinite overlapping mixture's pointwise log-likelihood (a point given its
memberships) against the model's own elementwise density (pp_models.iomm.predictive)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytest
import xarray as xr

from pp_models import iomm
from pp_models.iomm import predictive
from tests.helpers.backends import PYTHON_MODE

N, D, C = 6, 3, 3


@pytest.mark.parametrize("likelihood", ["bernoulli", "gaussian"])
def test_point_density_is_the_models_elementwise_density_summed_over_features(likelihood):
    rng = np.random.default_rng(0)
    X = (rng.random((N, D)) < 0.5).astype(float) if likelihood == "bernoulli" \
        else rng.normal(size=(N, D))
    m = iomm.model(X, likelihood=likelihood, capacity=C)
    Z = np.array([[[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 1, 1]]] * 2)
    Z[1, 1] = [0, 0, 1]
    if likelihood == "bernoulli":
        params = {"theta": rng.uniform(0.1, 0.9, (2, C, D))}
        values = {"theta_logodds__": lambda s: np.log(params["theta"][s] /
                                                      (1 - params["theta"][s]))}
    else:
        params = {"mu": rng.normal(size=(2, C, D)), "tau": rng.uniform(0.5, 3, (2, C, D))}
        values = {"mu": lambda s: params["mu"][s],
                  "tau_log__": lambda s: np.log(params["tau"][s])}
    post = xr.Dataset({
        "Z": (("chain", "draw", "point", "cluster"), Z[None]),
        **{k: (("chain", "draw", "cluster", "feature"), v[None]) for k, v in params.items()},
    })
    got = predictive.pointwise_log_likelihood(post, m)["X"].values[0]
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        elementwise = m.compile_fn(m.logp(vars=[m["X"]], sum=False)[0],
                                   on_unused_input="ignore")
    for s in range(2):
        point = {"Z": Z[s], **{k: f(s) for k, f in values.items()}}
        np.testing.assert_allclose(got[s], elementwise(point).sum(1), rtol=1e-10)
