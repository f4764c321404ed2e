"""The DPM's learned base measure: wiring of the hyperpriors into the model,
the collapsed step reading the current hyperparameters, and bad input."""

import numpy as np
import pytest
from scipy import stats

from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import crp_logp
from inference.gibbs import CRPCollapsedGibbs
from pp_models import dpm
from pp_models.model_info import get_info

RNG = np.random.default_rng(3)
X = RNG.normal(size=(12, 3)) * np.array([1.0, 2.0, 0.5])
Z = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 1, 2])


def test_true_learns_kappa0_nu0_and_scale_and_the_default_is_fixed():
    m = dpm.model(X, hyperprior=True)
    assert sorted(v.name for v in m.free_RVs) == ["S0_scale", "kappa0", "nu0_excess", "z"]
    assert [v.name for v in dpm.model(X).free_RVs] == ["z"]
    assert [v.name for v in dpm.model(X, hyperprior=False).free_RVs] == ["z"]
    partly = dpm.model(X, prior={"nu0": 7.0}, hyperprior=True)
    assert sorted(v.name for v in partly.free_RVs) == ["S0_scale", "kappa0", "z"]
    diag = dpm.model(X, likelihood="diag_gaussian", hyperprior=True)
    assert sorted(v.name for v in diag.free_RVs) == ["a0", "b0_scale", "kappa0", "z"]
    assert [v.name for v in dpm.model(X, likelihood="diag_gaussian", truncation=4)
            .free_RVs] == ["w", "tau", "mu_raw"]


def test_joint_density_is_the_hyperpriors_plus_the_collapsed_likelihood():
    """log p at a point = Gamma hyperpriors (scipy, with the log-transform Jacobians) +
    CRP + NIW collapsed likelihood with nu0 = d - 1 + e and S0 = s nu0 diag(var X)."""
    hp = {"kappa0": (2.0, 3.0), "nu0": (3.0, 0.5), "S0": (4.0, 2.0)}
    m = dpm.model(X, alpha=1.5, hyperprior=hp)
    k, e, s = 0.3, 2.5, 0.7
    point = m.initial_point()
    point.update(z=Z.astype(point["z"].dtype), kappa0_log__=np.log(k),
                 nu0_excess_log__=np.log(e), S0_scale_log__=np.log(s))
    got = m.compile_logp()(point)
    d = X.shape[1]
    nu0 = d - 1 + e
    S0 = s * nu0 * np.diag(X.var(axis=0))
    expected = collapsed_loglik_value("gaussian", Z, X, (X.mean(0), k, nu0, S0))
    expected += crp_logp(Z, 1.5, 0.0)
    for value, (a, b) in zip((k, e, s), hp.values(), strict=True):
        expected += stats.gamma.logpdf(value, a, scale=1 / b) + np.log(value)
    assert got == pytest.approx(expected, rel=1e-8)


def test_collapsed_step_reads_the_current_hyperparameters():
    m = dpm.model(X, hyperprior=True)
    step = CRPCollapsedGibbs([m["z"]], model=m)
    point = m.initial_point()
    point["z"] = Z.astype(point["z"].dtype)
    first = step.kernel_data(step._inputs_fn(point))[2]
    point["S0_scale_log__"] = point["S0_scale_log__"] + np.log(3.0)
    point["kappa0_log__"] = point["kappa0_log__"] + np.log(2.0)
    second = step.kernel_data(step._inputs_fn(point))[2]
    assert second[1] == pytest.approx(2.0 * first[1])
    np.testing.assert_allclose(second[3], 3.0 * first[3])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(hyperprior={"kappa0": (0.0, 1.0)}), r"hyperprior\['kappa0'\]"),
        (dict(hyperprior={"nu0": (2.0, -1.0)}), r"hyperprior\['nu0'\]"),
        (dict(hyperprior={"S0": (2.0,)}), r"hyperprior\['S0'\]"),
        (dict(hyperprior={"b0": (2.0, 1.0)}), r"hyperprior: unknown key"),
        (dict(hyperprior={"nu0": (2.0, 1.0)}, prior={"nu0": 6.0}), r"also fixed in prior"),
        (dict(prior={"S0": np.diag([1.0, -1.0, 1.0])}), r"S0: must be positive definite"),
        (dict(prior={"S0": np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]])}),
         r"S0: must be symmetric"),
        (dict(prior={"nu0": 2.0}), r"nu0: must be finite and > d - 1"),
        (dict(likelihood="diag_gaussian", hyperprior={"a0": (1.0, 0.0)}),
         r"hyperprior\['a0'\]"),
        (dict(likelihood="bernoulli", hyperprior={"a": (1.0, 1.0)}), r"hyperprior: a learned"),
        (dict(likelihood="diag_gaussian", truncation=3, hyperprior={}), r"hyperprior"),
    ],
)
def test_bad_hyperprior_input(kwargs, match):
    data = (X > 0).astype(float) if kwargs.get("likelihood") == "bernoulli" else X
    with pytest.raises(ValueError, match=match):
        dpm.model(data, **kwargs)


# --------------------------------------------------------------------------------------
# hyperprior="wishart": the conjugate hierarchy of Rasmussen (2000)
# --------------------------------------------------------------------------------------
def test_wishart_hierarchy_variables_and_step_hint():
    m = dpm.model(X, hyperprior="wishart")
    assert sorted(v.name for v in m.free_RVs) == ["S0", "kappa0", "m0", "z"]
    hints = {h.step: h.var_names for h in get_info(m).step_hints}
    assert hints["niw_hyper_gibbs"] == ("m0", "kappa0", "S0")
    partly = dpm.model(X, hyperprior="wishart", prior={"kappa0": 0.2, "m0": np.zeros(3)})
    assert sorted(v.name for v in partly.free_RVs) == ["S0", "z"]


def test_wishart_hierarchy_joint_density():
    """log p (no Jacobians) = Wishart + Gamma + normal hyperpriors (scipy) + CRP + NIW
    collapsed likelihood at those values, with the documented hyperprior parameters."""
    m = dpm.model(X, alpha=1.5, hyperprior="wishart", prior={"nu0": 6.0})
    d = X.shape[1]
    D = np.diag(X.var(axis=0))
    S0 = np.array([[1.0, 0.2, 0.0], [0.2, 2.0, 0.1], [0.0, 0.1, 0.5]])
    k0, m0 = 0.3, np.array([0.1, -0.2, 0.3])
    logp = m.compile_logp(jacobian=False, mode="FAST_COMPILE")  # the Wishart: slow to JIT
    point = m.initial_point()
    transform = m.rvs_to_transforms[m["S0"]]
    point.update(z=Z.astype(point["z"].dtype), kappa0_log__=np.log(k0), m0=m0)
    point["S0_cholesky-cov__"] = transform.forward(S0).eval()
    V = 1.5 * (6.0 - d - 1.0) * D / d
    expected = stats.wishart.logpdf(S0, d, V)
    expected += stats.gamma.logpdf(k0, 2.0, scale=0.01 / 2.0)
    expected += stats.multivariate_normal.logpdf(m0, X.mean(0), D)
    expected += crp_logp(Z, 1.5, 0.0)
    expected += collapsed_loglik_value("gaussian", Z, X, (m0, k0, 6.0, S0))
    assert logp(point) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(hyperprior="wishart", prior={"nu0": 2.0}), r"nu0: must be finite and > d - 1"),
        (dict(hyperprior="wishart", prior={"S0": -np.eye(3)}), r"S0: must be positive"),
        (dict(hyperprior="wishart", prior={"kappa0": -1.0}), r"kappa0: must be finite"),
        (dict(hyperprior="wishart", likelihood="diag_gaussian"), r"hyperprior='wishart'"),
        (dict(hyperprior="Wishart"), r"hyperprior: the only string value"),
    ],
)
def test_bad_wishart_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dpm.model(X, **kwargs)
