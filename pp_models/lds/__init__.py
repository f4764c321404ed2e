"""Linear dynamical systems (linear-Gaussian state-space models): Kalman filtering and
smoothing, EM, and the Kalman log-likelihood for gradient-based samplers (Ghahramani &
Roweis 1999, "Hidden Markov Models/Linear Dynamical Systems", "LDS Pseudocode").

- :mod:`pp_models.lds.kalman`: :func:`kalman_filter`, :func:`rts_smoother`;
- :mod:`pp_models.lds.em`: :func:`em`, maximum likelihood by EM;
- :mod:`pp_models.lds.checks`: the argument checks.
"""

from pp_models.lds.em import LDSEMResult, em
from pp_models.lds.kalman import (
    KalmanFilterResult,
    RTSSmootherResult,
    kalman_filter,
    rts_smoother,
)

__all__ = [
    "KalmanFilterResult",
    "LDSEMResult",
    "RTSSmootherResult",
    "em",
    "kalman_filter",
    "rts_smoother",
]
