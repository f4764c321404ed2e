"""The hidden Markov model factory.

Generative model (Ghahramani & Roweis 1999; Ghahramani 2017, "HMMs"), ``K`` states, one
or more sequences stacked in ``y`` (``lengths``)::

    pi0 ~ Dirichlet(a0, ..., a0)                    initial distribution
    P[i] ~ Dirichlet(a + kappa e_i)                 transition row i (kappa: stickiness)
    theta_k ~ conjugate prior scaled to y           emission parameters (emissions.py)
    s ~ MarkovChain(pi0, P)                         each sequence starts from pi0
    y_t | s_t = k ~ F(theta_k)

``model(..., marginalize=False)`` (default) keeps the path ``s`` (named ``z``) as a free
variable: ``fit`` samples it by forward-filtering backward-sampling (an exact block draw
of the whole path, the ``hmm_ffbs`` step) and ``pi0``, ``P`` and the emission parameters
by their conjugate conditionals (the ``hmm_conjugate`` step). ``marginalize=True`` sums
the path out with the forward algorithm (:class:`custom_ops.hmm.ops.HMMLogEvidence`,
with its analytic gradient) for NUTS or ADVI; ``fit`` then draws a path per posterior
draw by FFBS afterwards (the model's post-processing), so both forms give paths.

The states are exchangeable: their labels are not identified. ``fit`` matches them across
draws and chains by their paths (``inference.relabel``, the ECR algorithm; the
marginalised form after its paths are drawn): ``z``, ``pi0``, the rows and columns of
``P`` and the emission parameters are permuted together. The label-invariant
statistics added after sampling are ``log_likelihood`` (``log p(y | theta)``, the path
summed out), ``stationary_sorted`` (the stationary distribution of ``P``, decreasing),
``occupancy_sorted`` (the fraction of time in each state, decreasing; in the
marginalised form its expectation given the draw's parameters) and
``emission_means_sorted`` (each state's emission mean, increasing).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from custom_ops.hmm.ops import hmm_log_evidence
from pp_models.distributions.markov_chain import MarkovChain
from pp_models.hmm import outputs
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.recursions import as_lengths, offsets_of
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
)
from pp_models.registry import family_of_module
from pp_models.validation import check_bool, check_int, check_positive, check_real

__all__ = ["STEP_PARAMETERS", "STEP_PATH", "HMMSpec", "get_spec", "model"]

#: Registry names of the two Gibbs steps (``inference.gibbs.hmm``).
STEP_PATH = "hmm_ffbs"
STEP_PARAMETERS = "hmm_conjugate"


@dataclass(frozen=True)
class HMMSpec:
    """What :func:`model` built: the emission family, the number of states, the
    sequences' ``offsets``, the prior's concentrations and the emission
    hyperparameters, and whether the path is summed out."""

    emission: str
    n_states: int
    offsets: np.ndarray
    initial_concentration: np.ndarray
    transition_concentration: np.ndarray
    hyper: dict
    marginalize: bool


def model(
    y,
    n_states: int,
    *,
    emission: str = "gaussian",
    lengths=None,
    marginalize: bool = False,
    initial_concentration: float = 1.0,
    transition_concentration: float = 1.0,
    stickiness: float = 0.0,
    n_categories: int | None = None,
) -> pm.Model:
    """Build a hidden Markov model of the series ``y``.

    Parameters
    ----------
    y : array-like, shape (T,)
        The observations, every one finite: reals (gaussian), counts (poisson), 0/1
        (bernoulli) or category codes ``0..C-1`` (categorical). Several sequences are
        stacked end to end (``lengths``).
    n_states : int
        Number of hidden states ``K >= 1``.
    emission : {"gaussian", "poisson", "bernoulli", "categorical"}
        The emission family (:mod:`pp_models.hmm.emissions`: priors scaled to ``y``).
    lengths : sequence of int, optional
        Lengths of the sequences, summing to ``T``; each starts afresh from ``pi0``.
        Default: one sequence.
    marginalize : bool
        Sum the path out with the forward algorithm (for ``method="nuts"`` / ``"advi"``)
        instead of sampling it.
    initial_concentration : float
        Symmetric Dirichlet parameter ``a0 > 0`` of ``pi0``.
    transition_concentration : float
        Symmetric Dirichlet parameter ``a > 0`` of each transition row.
    stickiness : float
        ``kappa >= 0`` added to the diagonal of the transition rows' Dirichlet
        parameters (favours staying in a state).
    n_categories : int, optional
        Number of categories ``C`` of a categorical emission (default ``max(y) + 1``).

    Returns
    -------
    pymc.Model
        Free variables ``pi0, P``, the emission parameters (``mu, tau`` | ``rate`` | ``p``
        | ``phi``) and, unless ``marginalize``, the path ``z``; observed ``y``.
    """
    spec_emission = get_emission(emission)
    K = check_int(n_states, "n_states", minimum=1)
    a0 = check_positive(initial_concentration, "initial_concentration")
    a = check_positive(transition_concentration, "transition_concentration")
    kappa = check_real(stickiness, "stickiness", minimum=0.0)
    marginalize = check_bool(marginalize, "marginalize")
    if n_categories is not None and emission != "categorical":
        raise ValueError("n_categories is for emission='categorical' only")
    y = spec_emission.check(y, "y", n_categories=n_categories)
    if y.shape[0] < 1:
        raise ValueError("y must hold at least one observation")
    offsets = offsets_of(as_lengths(lengths, y.shape[0]))
    hyper = spec_emission.hyper(y, n_categories=n_categories)
    spec = HMMSpec(
        emission=emission,
        n_states=K,
        offsets=offsets,
        initial_concentration=np.full(K, a0),
        transition_concentration=np.full((K, K), a) + kappa * np.eye(K),
        hyper=hyper,
        marginalize=marginalize,
    )

    T = y.shape[0]
    coords = {"state": np.arange(K), "state_to": np.arange(K), "time": np.arange(T)}
    if emission == "categorical":
        coords["category"] = np.arange(np.asarray(hyper["phi_concentration"]).size)
    with pm.Model(coords=coords) as m:
        pi0 = pm.Dirichlet("pi0", a=spec.initial_concentration, dims="state")
        P = pm.Dirichlet("P", a=spec.transition_concentration, dims=("state", "state_to"))
        params = spec_emission.priors(hyper)
        if marginalize:
            _marginal_observed(spec_emission, pi0, P, params, y, offsets)
        else:
            z = MarkovChain("z", pi0=pi0, P=P, offsets=offsets, dims="time")
            spec_emission.observed("y", params, z, y)

    names = spec_emission.parameters
    derived = (
        DerivedStatistic(
            "log_likelihood",
            partial(outputs.log_likelihood, spec=spec, y=y),
            "log p(y | pi0, P, theta), the path summed out",
        ),
        DerivedStatistic(
            "stationary_sorted",
            outputs.stationary_sorted,
            "stationary distribution of P, decreasing",
        ),
        DerivedStatistic(
            "occupancy_sorted",
            partial(outputs.occupancy_sorted, spec=spec, y=y),
            "fraction of time in each state, decreasing",
        ),
        DerivedStatistic(
            "emission_means_sorted",
            partial(outputs.emission_means_sorted, spec=spec),
            "each state's emission mean, increasing",
        ),
    )
    # the states are matched across draws by their paths (ECR); P is permuted on both axes
    relabelling = Relabelling(
        "state", allocations="z", label_valued=("z",), also_dims=("state_to",)
    )
    if marginalize:
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="nuts",
            derived=derived,
            label_variables=("pi0", "P", *names, "z"),
            relabelling=relabelling,
            postprocess=partial(outputs.recover_paths, spec=spec, y=y),
            notes="path summed out by the forward algorithm; z drawn by FFBS per draw "
            "afterwards. Labels are not identified.",
        )
    else:
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="gibbs",
            step_hints=(
                StepHint(STEP_PATH, ("z",), partial(_path_options, spec=spec)),
                StepHint(STEP_PARAMETERS, ("pi0", "P", *names), {"spec": spec}),
            ),
            derived=derived,
            label_variables=("pi0", "P", *names, "z"),
            relabelling=relabelling,
            notes="z: FFBS (exact block draw); pi0, P, emission parameters: conjugate "
            "draws. Labels are not identified.",
            continuous_form="marginalize=True (the path summed out by the forward "
            "algorithm, for NUTS or ADVI)",
        )
    object.__setattr__(m, "_pp_models_hmm_spec", spec)
    return attach_info(m, info)


def get_spec(m: pm.Model) -> HMMSpec | None:
    """The :class:`HMMSpec` of a model built by :func:`model`, else ``None``."""
    return getattr(m, "_pp_models_hmm_spec", None)


def _path_options(m: pm.Model, spec: HMMSpec) -> dict:
    """The FFBS step's options: the model's record, from which the step computes the
    initial, transition and emission log probabilities at each point in NumPy (a
    compiled function of the point would be one more graph to compile per model)."""
    return {"spec": spec}


def _marginal_observed(emission, pi0, P, params, y, offsets):
    names = emission.parameters

    # the last parameter, zeros of the series' length, only gives the draws their length
    # (a signature's output dims must appear among its inputs)
    def logp(value, pi0, P, *values):
        log_lik = emission.symbolic_log_lik(dict(zip(names, values[:-1], strict=True)), value)
        return hmm_log_evidence(pt.log(pi0), pt.log(P), log_lik, offsets)

    def random(pi0, P, *values, rng=None, size=None):
        return outputs.simulate(
            emission, rng, pi0, P, dict(zip(names, values[:-1], strict=True)), offsets
        )

    length = pt.constant(np.zeros(y.shape[0]))
    return pm.CustomDist(
        "y",
        pi0,
        P,
        *(params[n] for n in names),
        length,
        logp=logp,
        random=random,
        observed=y,
        dims="time",
        signature=_signature(emission),
        dtype=str(y.dtype),
    )


def _signature(emission):
    core = {"mu": "(k)", "tau": "(k)", "rate": "(k)", "p": "(k)", "phi": "(k,c)"}
    return "(k),(k,k)," + ",".join(core[n] for n in emission.parameters) + ",(t)->(t)"
