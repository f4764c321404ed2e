"""Independent nutpie runs per temperature (``inference.tempering.nutpie_ladder``).

The model has three independent blocks whose power posteriors are known in closed form,
each reaching the likelihood another way, and every kind of transform:

- ``mu ~ N(0, 1)``, ``y_i ~ N(mu, 1)`` observed through ``pm.Data`` (a deterministic
  reads ``y``; ``mu`` has a numeric initial value): ``mu | beta ~ N(beta S / (1 + beta n),
  1 / (1 + beta n))``;
- ``p ~ Beta(2, 3)`` (log-odds transform), ``k ~ Binomial(12, p)`` observed: ``p | beta ~
  Beta(2 + beta k, 3 + beta (12 - k))``;
- ``w ~ Dirichlet(1, 1, 1)`` (simplex transform) and a potential ``sum_j c_j log w_j``
  (the zoo treats a potential as likelihood): ``w | beta ~ Dirichlet(1 + beta c)``.

Checked: the tempered model's density and gradient are ``varlogp + beta datalogp`` of
the model at random points, both as PyTensor compiles them and as the function nutpie
calls (its C callback, with beta set by ``with_data``); the vectorised log-likelihood is
the model's; new data reach the runs without a new compile; and the runs' draws have the
closed-form mean of ``log p(X | theta)`` at each temperature, within their Monte Carlo
error.
"""

import ctypes

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

from inference.tempering.nutpie_ladder import (
    BETA_NAME,
    batched_log_likelihood,
    run_ladder,
    tempered_model,
)
from inference.tempering.power import log_likelihood_function
from tests.helpers.stationary import compare_with_exact

Y = np.random.default_rng(1).normal(0.7, 1.0, 10)
K, N_TRIALS = 9, 12
COUNTS = np.array([3.0, 0.0, 5.0])
BETAS = (0.0, 0.02, 0.3, 1.0)


def blocks_model(y=Y):
    with pm.Model() as m:
        y_data = pm.Data("y_data", y)
        mu = pm.Normal("mu", 0.0, 1.0, initval=0.25)
        y_obs = pm.Normal("y", mu, 1.0, observed=y_data)
        pm.Deterministic("y_shift", y_obs.sum() - mu)
        p = pm.Beta("p", 2.0, 3.0)
        pm.Binomial("k", N_TRIALS, p, observed=K)
        w = pm.Dirichlet("w", np.ones(3))
        pm.Potential("counts", pt.sum(COUNTS * pt.log(w)))
    return m


def exact_mean_log_likelihood(beta, y=Y):
    """E_beta[log p(X | theta)], block by block (module docstring)."""
    n, total = y.size, y.sum()
    var = 1.0 / (1.0 + beta * n)
    mean = beta * total * var
    normal = -0.5 * n * np.log(2 * np.pi) - 0.5 * (np.sum((y - mean) ** 2) + n * var)
    a, b = 2.0 + beta * K, 3.0 + beta * (N_TRIALS - K)
    binomial = (np.log(special.comb(N_TRIALS, K)) + K * (special.digamma(a) - special.digamma(
        a + b)) + (N_TRIALS - K) * (special.digamma(b) - special.digamma(a + b)))
    alpha = 1.0 + beta * COUNTS
    dirichlet = COUNTS @ (special.digamma(alpha) - special.digamma(alpha.sum()))
    return float(normal + binomial + dirichlet)


@pytest.fixture(scope="module")
def model():
    return blocks_model()


@pytest.fixture(scope="module")
def compiled(model):
    from inference.nutpie_cache import compiled_model
    from inference.tempering.nutpie_ladder import tempered_for

    tempered = tempered_for(model)
    return compiled_model(tempered.model, var_names=(), initial_points=tempered.initial_values)


def random_points(model, n, seed):
    rng = np.random.default_rng(seed)
    ip = model.initial_point()
    return [{k: v + rng.normal(0.0, 0.8, np.shape(v)) for k, v in ip.items()} for _ in range(n)]


def original_density(model):
    """(value variables) -> varlogp + beta datalogp and its gradient, beta an input."""
    beta = pt.scalar("beta", dtype="float64")
    values = model.value_vars
    total = model.varlogp + beta * model.datalogp
    fn = pytensor.function([beta, *values], [total, *pt.grad(total, values)],
                           mode="FAST_COMPILE")
    return lambda b, point: fn(b, *(point[v.name] for v in values))


def test_tempered_model_is_varlogp_plus_beta_datalogp(model):
    tempered = tempered_model(model).model
    assert not tempered.observed_RVs and [p.name for p in tempered.potentials] == [
        "pp_models_tempered_likelihood"]
    assert sorted(rv.name for rv in tempered.free_RVs) == ["mu", "p", "w"]
    values = tempered.value_vars
    logp = tempered.logp()
    density = pytensor.function(values, [logp, *pt.grad(logp, values)], mode="FAST_COMPILE")
    reference = original_density(model)
    names = [v.name for v in model.value_vars]
    for beta in BETAS:
        tempered[BETA_NAME].set_value(beta)
        for point in random_points(model, 4, seed=int(beta * 100)):
            want, *grads = reference(beta, point)
            got, *got_grads = density(*(point[v.name] for v in values))
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
            for v, g in zip(values, got_grads, strict=True):
                np.testing.assert_allclose(g, grads[names.index(v.name)], rtol=1e-12,
                                           atol=1e-12)
    # the model itself is untouched
    assert [rv.name for rv in model.observed_RVs] == ["y", "k"] and len(model.potentials) == 1


def _nutpie_logp(compiled, x):
    """The C callback nutpie calls: (log density, gradient) at the flat point ``x``."""
    f = compiled.compiled_logp_func.ctypes
    x = np.ascontiguousarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    logp = np.empty(())
    dbl = ctypes.POINTER(ctypes.c_double)
    code = f(x.size, x.ctypes.data_as(dbl), grad.ctypes.data_as(dbl), logp.ctypes.data_as(dbl),
             ctypes.c_void_p(compiled.user_data.ctypes.data))
    assert code == 0
    return float(logp), grad


def _flat(compiled, point):
    names, slices, _shapes = compiled.shape_info
    x = np.empty(compiled.n_dim)
    for name, sl in zip(names, slices, strict=False):
        if name in point:
            x[sl] = np.ravel(point[name])
    return x


def test_nutpie_evaluates_the_tempered_density(model, compiled):
    reference = original_density(model)
    for beta in BETAS:
        at_beta = compiled.with_data(**{BETA_NAME: beta})
        for point in random_points(model, 3, seed=7):
            want, *grads = reference(beta, point)
            got, grad = _nutpie_logp(at_beta, _flat(compiled, point))
            assert got == pytest.approx(want, rel=1e-13, abs=1e-13)
            np.testing.assert_allclose(grad, _flat(compiled, {
                v.name: g for v, g in zip(model.value_vars, grads, strict=True)}),
                rtol=1e-12, atol=1e-12)


def test_batched_log_likelihood_is_the_models(model):
    points = random_points(model, 5, seed=3)
    batched = batched_log_likelihood(model)({k: np.stack([p[k] for p in points])
                                             for k in points[0]})
    single = log_likelihood_function(model)
    np.testing.assert_allclose(batched, [single(p) for p in points], rtol=1e-13)


def test_runs_sample_the_power_posteriors(model, compiled, monkeypatch):
    """The mean log-likelihood of each temperature's draws is the closed form's; new
    data set on the model reach the runs without a new compile."""
    import nutpie

    ladder = np.array(BETAS)
    runs = run_ladder(model, ladder, draws=600, tune=300, chains=2, cores=2,
                      rng=np.random.default_rng(5), last=True)
    assert runs.log_likelihood.shape == (2, 600, 4) and runs.divergences.sum() == 0
    draws = {f"beta={b}": runs.log_likelihood[:, :, t].ravel() for t, b in enumerate(BETAS)}
    exact = {f"beta={b}": exact_mean_log_likelihood(b) for b in BETAS}
    check = compare_with_exact(draws, exact, n_comparisons=2 * len(BETAS))
    print(check)
    assert check.passed

    def compiles(*args, **kwargs):
        raise AssertionError("new data made a new compile")

    monkeypatch.setattr(nutpie, "compile_pymc_model", compiles)
    y_new = Y[::-1] + 1.5
    with model:
        pm.set_data({"y_data": y_new})
    try:
        runs = run_ladder(model, ladder[:3], draws=600, tune=300, chains=2, cores=2,
                          rng=np.random.default_rng(6), last=True)
    finally:
        with model:
            pm.set_data({"y_data": Y})
    draws = {f"beta={b}": runs.log_likelihood[:, :, t].ravel() for t, b in enumerate(BETAS[:3])}
    exact = {f"beta={b}": exact_mean_log_likelihood(b, y_new) for b in BETAS[:3]}
    check = compare_with_exact(draws, exact, n_comparisons=2 * len(BETAS))
    print(check)
    assert check.passed


def test_a_variable_named_like_the_inverse_temperature_is_refused():
    with pm.Model() as m:
        mu = pm.Normal(BETA_NAME, 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.1])
    with pytest.raises(ValueError, match=f"a variable is named '{BETA_NAME}'"):
        tempered_model(m)
