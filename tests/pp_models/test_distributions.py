"""The CRP and collapsed-likelihood distributions inside PyMC models."""

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special

from custom_ops.dpm.collapsed import collapsed_loglik_value
from pp_models.distributions import (
    CRP,
    CRPRV,
    CollapsedBernoulli,
    CollapsedDiagGaussian,
    CollapsedGaussian,
    CollapsedMultinomial,
)
from tests.oracles.mixtures import partitions


def test_crp_pymc_logp_sums_to_one_over_partitions():
    for n in range(1, 8):
        zv = pt.lvector("z")
        logp = pm.logp(CRP.dist(alpha=1.7, n=n, discount=0.25), zv)
        f = pm.compile([zv], logp)
        total = special.logsumexp([f(z) for z in partitions(n)])
        assert total == pytest.approx(0.0, abs=1e-12)


def test_crp_prior_draws_expected_number_of_blocks():
    alpha, n, S = 2.0, 30, 10_000
    draws = pm.draw(CRP.dist(alpha=alpha, n=n), draws=S, random_seed=4)
    assert draws.shape == (S, n) and draws.dtype == np.int64
    assert np.all(draws[:, 0] == 0)
    K = draws.max(1) + 1
    mean = sum(alpha / (alpha + i) for i in range(n))
    var = sum(alpha * i / (alpha + i) ** 2 for i in range(n))
    assert abs(K.mean() - mean) < 4 * math.sqrt(var / S)


def test_crp_in_a_model_support_point_and_op_type():
    with pm.Model() as m:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = CRP("z", alpha=alpha, n=5)
    assert isinstance(z.owner.op, CRPRV)
    np.testing.assert_array_equal(m.initial_point()["z"], np.zeros(5))
    lp = m.compile_logp(vars=[z])
    point = m.initial_point() | {"z": np.array([0, 1, 0, 2, 1])}
    a = float(np.exp(point["alpha_log__"]))
    ref = 3 * math.log(a) + special.gammaln([2, 2, 1]).sum() + special.gammaln(a) - special.gammaln(
        5 + a)
    assert lp(point) == pytest.approx(ref)
    assert lp(point | {"z": np.array([1, 0, 0, 0, 0])}) == -np.inf


def test_crp_batched_draws_and_bad_arguments():
    draws = pm.draw(CRP.dist(alpha=1.0, n=4, size=(3,)), random_seed=1)
    assert draws.shape == (3, 4)
    with pytest.raises(TypeError, match="n must be an integer, got 4.0"):
        CRP.dist(alpha=1.0, n=4.0)
    with pytest.raises(ValueError, match="n must be >= 1"):
        CRP.dist(alpha=1.0, n=0)
    bad = pm.logp(CRP.dist(alpha=-1.0, n=2), np.array([0, 1]))
    with pytest.raises(Exception, match="alpha > -discount"):
        bad.eval()


def _collapsed_model(z):
    rng = np.random.default_rng(0)
    n = z.size
    data = {
        "Xg": rng.normal(size=(n, 2)),
        "Xd": rng.normal(size=(n, 2)),
        "Xb": (rng.random((n, 3)) < 0.5).astype(float),
        "Xm": rng.multinomial(4, [0.2, 0.3, 0.5], size=n).astype(float),
    }
    hyper = {
        "Xg": [np.zeros(2), 0.5, 4.0, np.eye(2)],
        "Xd": [np.zeros(2), np.full(2, 1.0), np.full(2, 2.0), np.full(2, 1.0)],
        "Xb": [np.ones(3), np.full(3, 2.0)],
        "Xm": [np.ones(3)],
    }
    with pm.Model() as m:
        zz = pm.Data("z", z)
        CollapsedGaussian("Xg", zz, *hyper["Xg"], observed=data["Xg"])
        CollapsedDiagGaussian("Xd", zz, m0=0.0, kappa0=1.0, a0=2.0, b0=1.0, d=2,
                              observed=data["Xd"])
        CollapsedBernoulli("Xb", zz, a=np.ones(3), b=2.0, observed=data["Xb"])
        CollapsedMultinomial("Xm", zz, concentration=np.ones(3), n_trials=4, observed=data["Xm"])
    return m, data, hyper


def test_collapsed_logps_match_the_kernels():
    z = np.array([0, 1, 0, 2, 1, 1])
    m, data, hyper = _collapsed_model(z)
    families = {"Xg": "gaussian", "Xd": "diag_gaussian", "Xb": "bernoulli", "Xm": "multinomial"}
    for name, family in families.items():
        ref = collapsed_loglik_value(family, z, data[name], hyper[name])
        value = m.compile_logp(vars=[m[name]])(m.initial_point())
        assert value == pytest.approx(ref, rel=1e-12), name


def test_collapsed_support_checks():
    z = np.array([0, 1, 0])
    bern = pm.logp(CollapsedBernoulli.dist(z, a=np.ones(2), b=np.ones(2)),
                   np.array([[0.0, 1.0], [0.5, 1.0], [1.0, 1.0]]))
    assert bern.eval() == -np.inf
    mult = pm.logp(CollapsedMultinomial.dist(z, concentration=np.ones(2), n_trials=2),
                   np.array([[1.0, 1.0], [2.0, 1.0], [0.0, 2.0]]))
    assert mult.eval() == -np.inf


def test_collapsed_prior_draws_shapes():
    z = np.array([0, 0, 1, 2])
    # one compiled function draws all four (one Numba graph instead of four)
    g, d, b, mm = pm.draw([CollapsedGaussian.dist(z, np.zeros(3), 1.0, 5.0, np.eye(3)),
                           CollapsedDiagGaussian.dist(z, np.zeros(2), 1.0, 2.0, 1.0),
                           CollapsedBernoulli.dist(z, np.ones(5), np.ones(5)),
                           CollapsedMultinomial.dist(z, np.ones(4), n_trials=[1, 2, 3, 4])],
                          random_seed=1)
    assert g.shape == (4, 3) and d.shape == (4, 2) and b.shape == (4, 5) and mm.shape == (4, 4)
    assert set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_array_equal(mm.sum(1), [1, 2, 3, 4])


def test_collapsed_bad_arguments():
    with pytest.raises(ValueError, match="pass d="):
        CollapsedBernoulli.dist(np.array([0, 1]), a=1.0, b=1.0)
    with pytest.raises(TypeError, match="integer labels"):
        CollapsedBernoulli.dist(np.array([0.0, 1.0]), a=np.ones(2), b=np.ones(2))
    with pytest.raises(ValueError, match="S0 must be a"):
        CollapsedGaussian.dist(np.array([0, 1]), np.zeros(2), 1.0, 3.0, np.ones(2))


def test_zoo_random_variables_key_their_numba_code_on_the_kernel_sources():
    """PyTensor caches a compiled graph holding a RandomVariable's Numba draw under the
    key its ``numba_core_rv_funcify`` returns. A constant key (1, as before) let a graph
    compiled from other ``custom_ops`` sources (another checkout, an older install: seen
    when the PYDT kernels moved to ``custom_ops/pydt/``, 'No module named
    custom_ops.pydt.draws') be loaded and run; the key must change with the sources."""
    import pytensor.link.numba.dispatch.random as numba_random
    from pytensor.tensor.random.op import RandomVariable

    from pp_models.registry import list_models

    list_models()  # imports every family, so every zoo RandomVariable is registered
    zoo = [cls for cls in numba_random.numba_core_rv_funcify.registry
           if isinstance(cls, type) and issubclass(cls, RandomVariable)
           and cls.__module__.startswith("pp_models.")]
    assert len(zoo) >= 12, zoo
    for cls in zoo:
        source = numba_random.numba_core_rv_funcify.dispatch(cls)
        # the key is computed when the implementation is built; building it needs no node
        # for most of them, so read it off the function's code instead of calling it
        assert "rv_draw_cache_key" in source.__code__.co_names, cls
