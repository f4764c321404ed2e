"""The HMM family: the factory's variables and bad input, the public recursions against
enumeration, Baum-Welch's monotone log-likelihood, the marginalised form's density, the
pointwise log-likelihood against its definition, and one fit through ``fit``."""

import numpy as np
import pytest
from scipy.special import logsumexp

from pp_models import hmm
from tests.helpers.backends import PYTHON_MODE
from tests.oracles.hmm import exact_posterior, random_hmm

Y = np.array([0.1, -0.3, 0.2, 3.9, 4.2, 4.0, 0.0, 3.8])


@pytest.mark.parametrize(
    ("emission", "y", "names"),
    [
        ("gaussian", Y, {"mu", "tau"}),
        ("poisson", np.array([0, 2, 1, 7, 9]), {"rate"}),
        ("bernoulli", np.array([0, 1, 1, 0]), {"p"}),
        ("categorical", np.array([0, 2, 1, 2]), {"phi"}),
    ],
)
def test_factory_variables(emission, y, names):
    m = hmm.model(y, 3, emission=emission)
    assert {rv.name for rv in m.free_RVs} == {"pi0", "P", "z"} | names
    marginal = hmm.model(y, 3, emission=emission, marginalize=True)
    assert {rv.name for rv in marginal.free_RVs} == {"pi0", "P"} | names


def test_marginalised_density_sums_the_sampled_one():
    """The marginalised model's log density is the sampled model's with z summed out."""
    y = Y[:5]
    sampled = hmm.model(y, 2, lengths=[3, 2])
    marginal = hmm.model(y, 2, lengths=[3, 2], marginalize=True)
    # a point in value space written out (initial_point would compile a Numba graph)
    point = {
        "pi0_simplex__": np.array([0.3]),
        "P_simplex__": np.array([[0.5], [-0.2]]),
        "mu": np.array([0.0, 4.0]),
        "tau_log__": np.array([0.1, -0.3]),
    }
    f_marginal = marginal.compile_logp(mode=PYTHON_MODE)
    f_sampled = sampled.compile_logp(mode=PYTHON_MODE)
    paths = np.array(np.meshgrid(*[[0, 1]] * 5, indexing="ij")).reshape(5, -1).T
    total = logsumexp([f_sampled(dict(point, z=z)) for z in paths])
    np.testing.assert_allclose(f_marginal(point), total, rtol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y": np.array([1.0, np.nan, 2.0, np.nan])}, r"y has 2 NaN.*positions 1, 3"),
        ({"n_states": 0}, "n_states"),
        ({"n_states": 2.5}, "n_states"),
        ({"lengths": [3, 3]}, "lengths must sum"),
        ({"lengths": [8, 0]}, "lengths must be positive"),
        ({"emission": "student"}, "emission"),
        ({"y": np.array([1, -1, 2]), "emission": "poisson"}, "counts must be >= 0"),
        ({"y": np.array([1.5, 1, 2]), "emission": "poisson"}, "whole numbers"),
        (
            {"y": np.array([0, 3, 1]), "emission": "categorical", "n_categories": 3},
            "< n_categories",
        ),
        ({"y": np.array([0, 2]), "emission": "bernoulli"}, "0 or 1"),
        ({"y": np.zeros((3, 2))}, "1-D"),
        ({"n_categories": 3}, "n_categories is for"),
        ({"transition_concentration": -1.0}, "transition_concentration"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = {"y": Y, "n_states": 2}
    args.update(kwargs)
    y, n = args.pop("y"), args.pop("n_states")
    with pytest.raises((ValueError, TypeError), match=match):
        hmm.model(y, n, **args)


def test_public_recursions_match_enumeration():
    rng = np.random.default_rng(3)
    log_pi0, log_P, log_lik = random_hmm(rng, 3, 6)
    result = hmm.forward_backward(log_pi0, log_P, log_lik, lengths=[2, 4])
    evidence, gamma, xi, _initial = exact_posterior(log_pi0, log_P, log_lik, [0, 2, 6])
    np.testing.assert_allclose(result.log_evidence, evidence.sum(), rtol=1e-12)
    np.testing.assert_allclose(result.marginals, gamma, atol=1e-10)
    np.testing.assert_allclose(result.expected_transitions, xi, atol=1e-10)
    path, log_prob = hmm.viterbi(log_pi0, log_P, log_lik, lengths=[2, 4])
    assert path.shape == (6,) and log_prob <= evidence.sum()
    assert hmm.ffbs(log_pi0, log_P, log_lik, random_seed=1).shape == (6,)
    with pytest.raises(ValueError, match="log_P"):
        hmm.forward_backward(log_pi0, log_P[:2], log_lik)
    with pytest.raises(ValueError, match="lengths"):
        hmm.viterbi(log_pi0, log_P, log_lik, lengths=[5])


@pytest.mark.parametrize(
    ("emission", "y"),
    [
        ("gaussian", np.r_[Y, Y + 0.5, Y[::-1]]),
        ("poisson", np.array([0, 1, 0, 7, 9, 8, 1, 0, 10, 2, 0, 9])),
        ("categorical", np.array([0, 0, 1, 2, 2, 2, 0, 1, 2, 2, 0, 0])),
    ],
)
def test_em_log_likelihood_is_monotone(emission, y):
    result = hmm.em(y, 2, emission=emission, lengths=[len(y) - 4, 4], random_seed=0)
    assert np.all(np.diff(result.history) >= -1e-9 * np.abs(result.history[1:]))
    assert result.iterations >= 1
    spec_ll = hmm.forward_backward(
        np.log(result.pi0),
        np.log(result.P),
        _log_lik(emission, result.params, y),
        lengths=[len(y) - 4, 4],
    ).log_evidence
    np.testing.assert_allclose(result.log_likelihood, spec_ll, rtol=1e-10)


def _log_lik(emission, params, y):
    from pp_models.hmm.emissions import get_emission

    return get_emission(emission).log_lik(params, get_emission(emission).check(y))


def test_em_recovers_separated_states():
    rng = np.random.default_rng(0)
    z = np.repeat([0, 1, 0, 1], 50)
    y = np.where(z == 0, 0.0, 5.0) + rng.normal(size=z.size)
    result = hmm.em(y, 2, random_seed=1)
    np.testing.assert_allclose(np.sort(result.params["mu"]), [0.0, 5.0], atol=0.3)
    assert result.converged


def test_pointwise_log_likelihood_is_the_leave_one_out_predictive():
    """log p(y_t | y_-t, theta) = log p(y | theta) - log p(y_-t | theta), the latter by
    forward-backward with y_t's likelihood set to 1."""
    import xarray as xr

    from pp_models.hmm.emissions import get_emission
    from pp_models.hmm.predictive import pointwise_log_likelihood

    y = np.array([0, 3, 1, 6, 7, 0])
    m = hmm.model(y, 2, emission="poisson", lengths=[4, 2])
    rng = np.random.default_rng(2)
    pi0 = rng.dirichlet(np.ones(2), size=(1, 2))
    P = rng.dirichlet(np.ones(2), size=(1, 2, 2))
    rate = rng.gamma(2.0, 2.0, size=(1, 2, 2))
    posterior = xr.Dataset(
        {
            "pi0": (("chain", "draw", "state"), pi0),
            "P": (("chain", "draw", "state", "state_to"), P),
            "rate": (("chain", "draw", "state"), rate),
        },
        coords={"chain": [0], "draw": [0, 1]},
    )
    got = pointwise_log_likelihood(posterior, m)["y"].values
    for s in range(2):
        log_lik = get_emission("poisson").log_lik({"rate": rate[0, s]}, y)
        full = hmm.forward_backward(
            np.log(pi0[0, s]), np.log(P[0, s]), log_lik, lengths=[4, 2]
        ).log_evidence
        for t in range(6):
            held = log_lik.copy()
            held[t] = 0.0
            rest = hmm.forward_backward(
                np.log(pi0[0, s]), np.log(P[0, s]), held, lengths=[4, 2]
            ).log_evidence
            np.testing.assert_allclose(got[0, s, t], full - rest, rtol=1e-10)


def test_stationary_distribution():
    P = np.array([[0.9, 0.1], [0.3, 0.7]])
    pi = hmm.stationary_distribution(P)
    np.testing.assert_allclose(pi @ P, pi, atol=1e-14)
    np.testing.assert_allclose(pi, [0.75, 0.25])


def test_fit_gibbs_and_picture(tmp_path):
    from inference import fit

    y = np.r_[np.zeros(10), np.full(10, 5.0)] + np.random.default_rng(1).normal(0, 0.5, 20)
    dt = fit(
        hmm.model(y, 2, stickiness=2.0),
        draws=200,
        tune=100,
        chains=2,
        random_seed=3,
        progressbar=False,
        log_likelihood=True,
    )
    post = dt["posterior"]
    for name in (
        "log_likelihood",
        "stationary_sorted",
        "occupancy_sorted",
        "emission_means_sorted",
    ):
        assert name in post
    means = post["emission_means_sorted"].mean(("chain", "draw")).values
    np.testing.assert_allclose(means, [0.0, 5.0], atol=0.6)
    assert dt["log_likelihood"]["y"].shape == (2, 200, 20)
    probs = hmm.state_probabilities(dt)
    assert probs.shape == (20, 2) and probs[:10, 0].mean() > 0.9 and probs[10:, 1].mean() > 0.9
    hmm.plot_results(dt, tmp_path / "states.png")
    assert (tmp_path / "states.png").stat().st_size > 0


def test_nuts_on_the_sampled_path_names_the_marginalised_form():
    from inference import fit

    with pytest.raises(ValueError, match="marginalize=True"):
        fit(hmm.model(Y, 2), method="nuts", draws=10, tune=10, chains=1)


@pytest.mark.slow  # a NUTS compile; the Op's value and gradient are tested by default
def test_nuts_on_the_marginalised_model_recovers_states_and_paths():
    from inference import fit

    y = np.r_[np.zeros(15), np.full(15, 5.0)] + np.random.default_rng(2).normal(0, 0.5, 30)
    dt = fit(
        hmm.model(y, 2, marginalize=True, stickiness=2.0),
        method="nuts",
        draws=300,
        tune=300,
        chains=2,
        random_seed=4,
        progressbar=False,
    )
    means = dt["posterior"]["emission_means_sorted"].mean(("chain", "draw")).values
    np.testing.assert_allclose(means, [0.0, 5.0], atol=0.6)
    assert dt["posterior"]["z"].shape == (2, 300, 30)
    assert dt.attrs["pp_models_relabelled"] == 1  # after the paths were drawn
    probs = hmm.state_probabilities(dt)
    assert probs[:15, 0].mean() > 0.9 and probs[15:, 1].mean() > 0.9
