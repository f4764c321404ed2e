"""The step that alternates Algorithm 7.1's two steps ``thin`` times per call
(``iomm_sweeps``) makes, with one generator, the draws of the two steps alternated with
that generator: the same ``Z``, parameters and ``alpha`` bit for bit, at beta = 1 and in
a tempered run (beta = 0.4), Bernoulli with random alpha and split-merge proposals, and
Gaussian. The two steps' own exactness, getting-it-right and tempering tests
(test_gir.py, test_tempered.py, tests/custom_ops/iomm/) then cover it."""

import numpy as np
import pytest

from inference import fit
from inference.gibbs.iomm import IOMMMemberships, IOMMParameters, IOMMSweeps
from pp_models import iomm

SWEEPS = 4
CALLS = 3


def _models():
    rng = np.random.default_rng(2)
    X = (rng.random((12, 5)) < 0.4).astype(float)
    yield iomm.model(X, alpha=(2.0, 1.0), capacity=8, split_merge=2, thin=SWEEPS)
    Xg = rng.normal(size=(10, 3))
    yield iomm.model(Xg, likelihood="gaussian", alpha=1.3, capacity=8, thin=SWEEPS)


@pytest.mark.parametrize("beta", [1.0, 0.4])
@pytest.mark.parametrize("case", [0, 1])
def test_sweeps_equal_the_two_steps_alternated(case, beta):
    m = list(_models())[case]
    [hint] = m._pp_models_info.step_hints
    assert hint.step == iomm.STEP_SWEEPS and hint.options["sweeps"] == SWEEPS
    spec = iomm.get_spec(m)
    combined = IOMMSweeps.from_model(m, hint.var_names, **hint.options)
    memberships = [n for n in hint.var_names if n in ("Z", "alpha")]
    params = list(iomm.parameter_names(spec.likelihood))
    zs = IOMMMemberships.from_model(m, memberships, spec=spec,
                                    split_merge=hint.options["split_merge"])
    ps = IOMMParameters.from_model(m, params, spec=spec)
    for step in (combined, zs, ps):
        step.set_inverse_temperature(beta)
    combined.rng = np.random.default_rng(9)
    zs.rng = ps.rng = np.random.default_rng(9)
    start = m.initial_point(random_seed=4)
    a, b = dict(start), dict(start)
    for _ in range(CALLS):
        a, [stats] = combined.step(a)
        for _ in range(SWEEPS):
            b, _ = zs.step(b)
            b, _ = ps.step(b)
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert stats["n_clusters"] == int((np.asarray(a["Z"]) != 0).any(axis=0).sum())


def test_a_tempered_fit_runs_the_step():
    """The step tempers (its replicas share the two steps, set per call); the plain fit
    runs it in tests/pp_models/iomm/test_cli.py."""
    X = (np.random.default_rng(3).random((8, 4)) < 0.5).astype(float)
    dt = fit(iomm.model(X, capacity=6, thin=3), draws=4, tune=2, chains=1, tempering=3,
             random_seed=1, progressbar=False)
    assert dt.posterior.sizes["draw"] == 4
    assert "iomm_sweeps" in dt.attrs["pp_models_steps"]


def test_thin_is_checked():
    with pytest.raises(ValueError, match="thin"):
        iomm.model(np.zeros((3, 2)), thin=0)
