"""Getting-it-right for the conjugate base-measure update (``niw_hyper_gibbs``).

X (10 x 2) ~ CollapsedGaussian(z; m0, kappa0, nu0 = 10, S0), z ~ CRP(1), with S0 ~
Wishart(4, I / 2), kappa0 ~ Gamma(6, 6), m0 ~ N(0, I): collapsed Gibbs + split-merge for
z, :class:`~inference.gibbs.NIWHyperGibbs` for (S0, kappa0, m0). The hyperpriors keep
X's fourth moments finite (kappa0's shape > 2, nu0 > d + 3). Two planted bugs, each in
one conditional of the step: S0's Wishart with scale (V + sum_k Lambda_k)^-1 (V where V^-1
belongs), and kappa0's Gamma shape a + K d instead of a + K d / 2. Measured by the slow test (seeds
100-109, 1000 draws, level 0.01): correct steps rejected 1 of 10, S0-scale twin caught 10
of 10, kappa0-shape twin 10 of 10.
"""

import numpy as np
import pymc as pm
import pytest

from inference.gibbs import CRPCollapsedGibbs
from inference.gibbs.dpm.niw_hyper import NIWHyperGibbs
from inference.testing import getting_it_right
from pp_models.distributions import CRP, CollapsedGaussian

N_SAMPLES = 1000


class ScaleNotInverted(NIWHyperGibbs):
    """S0 | Lambda with scale (V + sum Lambda)^-1: V added where V^-1 belongs."""

    name = "test_niw_scale_not_inverted"

    def s0_conditional(self, precisions, nu0, w, V):
        return w + precisions.shape[0] * nu0, np.linalg.inv(V + precisions.sum(axis=0))


class KappaShapeTwice(NIWHyperGibbs):
    """kappa0 | mu, Lambda with shape a + K d (the 1/2 dropped)."""

    name = "test_niw_kappa_shape"

    def kappa0_conditional(self, mus, precisions, m0, a, b):
        shape, rate = super().kappa0_conditional(mus, precisions, m0, a, b)
        return 2.0 * shape - a, rate


def hyper_model(n=10, d=2):
    X = np.random.default_rng(0).normal(size=(n, d))
    with pm.Model() as m:
        z = CRP("z", alpha=1.0, n=n)
        S0 = pm.Wishart("S0", nu=4, V=0.5 * np.eye(d))
        kappa0 = pm.Gamma("kappa0", alpha=6.0, beta=6.0)
        m0 = pm.MvNormal("m0", mu=np.zeros(d), cov=np.eye(d))
        CollapsedGaussian("X", z, m0=m0, kappa0=kappa0, nu0=10.0, S0=S0, observed=X)
    return m


def steps(hyper_step):
    def build(model):
        return [CRPCollapsedGibbs([model["z"]], model=model),
                hyper_step([model["S0"], model["kappa0"], model["m0"]], model=model)]

    return build


def _gir(hyper_step, seed, n_samples=N_SAMPLES):
    return getting_it_right(hyper_model(), data_vars=["X"], step=steps(hyper_step),
                            n_samples=n_samples, random_seed=seed)


def test_conjugate_base_measure_update_passes():
    result = _gir(NIWHyperGibbs, seed=3)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
@pytest.mark.parametrize("twin", [ScaleNotInverted, KappaShapeTwice])
def test_planted_bugs_are_caught(twin):
    result = _gir(twin, seed=3)
    assert not result.passed(0.01), str(result)


def test_step_refuses_what_it_cannot_update():
    m = hyper_model()
    with pytest.raises(ValueError, match="nu0|m0, kappa0 or S0"):
        NIWHyperGibbs([m["z"]], model=m)
    with pm.Model() as other:
        S0 = pm.Wishart("S0", nu=4, V=np.eye(2))
        pm.Normal("y", 0.0, 1.0, observed=np.zeros(2))
        pm.Potential("p", S0.sum())
    with pytest.raises(ValueError, match="exactly one collapsed likelihood"):
        NIWHyperGibbs([other["S0"]], model=other)


@pytest.mark.slow
def test_false_alarm_and_power():
    seeds = range(100, 110)
    correct = sum(not _gir(NIWHyperGibbs, seed=s).passed(0.01) for s in seeds)
    scale = sum(not _gir(ScaleNotInverted, seed=s).passed(0.01) for s in seeds)
    kappa = sum(not _gir(KappaShapeTwice, seed=s).passed(0.01) for s in seeds)
    print(f"rejections out of 10: correct {correct}, S0 scale {scale}, kappa {kappa}")
    assert correct <= 1 and scale >= 9 and kappa >= 9


def test_step_pickles_and_keeps_values_in_their_support():
    """A chain run in another process gets a pickled step; its updates are valid values."""
    import cloudpickle

    m = hyper_model()
    step = NIWHyperGibbs([m["S0"], m["kappa0"], m["m0"]], model=m)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    clone.setup_chain(np.random.default_rng(0), 0, 1)
    point = m.initial_point()
    point["z"] = np.repeat([0, 1], 5).astype(point["z"].dtype)
    new, stats_ = clone.step(point)
    assert stats_[0]["kappa0"] > 0 and stats_[0]["S0_trace"] > 0
    assert np.isfinite(m.compile_logp(mode="FAST_COMPILE")(new))
    assert new["z"] is point["z"]
