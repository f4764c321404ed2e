"""Hidden Markov models: a mixture whose states are coupled through time.

Ghahramani & Roweis (1999) and Ghahramani (2017): ``K`` hidden states follow a Markov
chain (initial distribution ``pi0``, transition matrix ``P``), each emitting an
observation from its own distribution (Gaussian, Poisson, Bernoulli or categorical).
:mod:`.model` builds the PyMC model (path sampled by FFBS, or summed out for NUTS);
:mod:`.recursions` holds exact inference for given parameters (forward-backward,
Viterbi, FFBS); :mod:`.em` the Baum-Welch estimator; :mod:`.outputs` what to read off a
fit.

>>> from pp_models import hmm
>>> from inference import fit
>>> dt = fit(hmm.model(y, 2))                        # FFBS + conjugate Gibbs  # doctest: +SKIP
>>> hmm.forward_backward(log_pi0, log_P, log_lik).marginals  # doctest: +SKIP
"""

from pp_models.hmm import outputs as _outputs
from pp_models.hmm import predictive as _predictive
from pp_models.hmm.em import EMResult, em
from pp_models.hmm.model import STEP_PARAMETERS, STEP_PATH, HMMSpec, get_spec, model
from pp_models.hmm.outputs import (
    plot_results,
    state_probabilities,
    stationary_distribution,
)
from pp_models.hmm.recursions import ForwardBackwardResult, ffbs, forward_backward, viterbi
from pp_models.registry import CLIEntry, Family

__all__ = [
    "FAMILY",
    "STEP_PARAMETERS",
    "STEP_PATH",
    "EMResult",
    "ForwardBackwardResult",
    "HMMSpec",
    "em",
    "ffbs",
    "forward_backward",
    "get_spec",
    "model",
    "plot_results",
    "state_probabilities",
    "stationary_distribution",
    "viterbi",
]


def _build(dataset, **options):
    import numpy as np

    data = np.asarray(dataset.data, dtype=np.float64)
    return model(data.reshape(-1) if data.ndim == 2 and data.shape[1] == 1 else data, **options)


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions, test keywords.
FAMILY = Family(
    name="hmm",
    description="hidden Markov model (Gaussian/Poisson/Bernoulli/categorical emissions; "
    "FFBS + conjugate Gibbs, or the path summed out for NUTS)",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto", "nuts", "advi"),
        build=_build,
        default_dataset="nile",
        defaults={"n_states": 2},
        fit_defaults={"draws": 1000, "tune": 500, "chains": 4},
    ),
    plot=_outputs.plot_results,
    plot_name="states",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
