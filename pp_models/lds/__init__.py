"""Linear dynamical systems (linear-Gaussian state-space models): Kalman filtering and
smoothing, the simulation smoother, EM, and a PyMC model with the states summed out or
drawn exactly (Ghahramani & Roweis 1999, "Hidden Markov Models/Linear Dynamical
Systems", "LDS Pseudocode").

- :mod:`pp_models.lds.kalman`: :func:`kalman_filter`, :func:`rts_smoother`,
  :func:`simulation_smoother`;
- :mod:`pp_models.lds.em`: :func:`em`, maximum likelihood by EM;
- :mod:`pp_models.lds.model`: :func:`model`, the PyMC model;
- :mod:`pp_models.lds.outputs`: forward draws, paths after a fit, the picture;
- :mod:`pp_models.lds.predictive`: LOO terms and posterior predictive replicates;
- :mod:`pp_models.lds.checks`: the argument checks.

>>> from pp_models import lds
>>> from inference import fit
>>> dt = fit(lds.model(y, 1, A=1.0, C=1.0))     # local level, NUTS  # doctest: +SKIP
"""

from pp_models.lds import outputs as _outputs
from pp_models.lds import predictive as _predictive
from pp_models.lds.em import LDSEMResult, em
from pp_models.lds.kalman import (
    KalmanFilterResult,
    RTSSmootherResult,
    kalman_filter,
    rts_smoother,
    simulation_smoother,
)
from pp_models.lds.model import STEP_PATH, LDSSpec, get_spec, model
from pp_models.lds.outputs import plot_results
from pp_models.registry import CLIEntry, Family

__all__ = [
    "FAMILY",
    "STEP_PATH",
    "KalmanFilterResult",
    "LDSEMResult",
    "LDSSpec",
    "RTSSmootherResult",
    "em",
    "get_spec",
    "kalman_filter",
    "model",
    "plot_results",
    "rts_smoother",
    "simulation_smoother",
]


def _build(dataset, **options):
    import numpy as np

    data = np.asarray(dataset.data, dtype=np.float64)
    return model(data, **options)


#: The family's record (pp_models.registry): factory, ppzoo entry, picture.
FAMILY = Family(
    name="lds",
    description="linear dynamical system (linear-Gaussian state space; states summed "
    "out by the Kalman filter for NUTS, or drawn by the simulation smoother)",
    factory=model,
    cli=CLIEntry(
        methods=("nuts", "auto", "advi"),
        build=_build,
        default_dataset="nile",
        defaults={"state_dim": 1, "A": 1.0, "C": 1.0},
        fit_defaults={"draws": 1000, "tune": 500, "chains": 4},
    ),
    plot=_outputs.plot_results,
    plot_name="states",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
