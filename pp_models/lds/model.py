"""The linear dynamical system factory.

Generative model (Ghahramani & Roweis 1999, "Hidden Markov Models/Linear Dynamical
Systems"), ``n`` states, ``p`` observed dimensions, ``T`` steps::

    A ~ Normal(I, 0.5^2) entrywise         (or fixed, ``A=``)
    C ~ Normal(0, s_y^2) entrywise          (or fixed, ``C=``)
    sigma_state_i ~ HalfNormal(s_x),  Q = diag(sigma_state^2)
    sigma_obs_j ~ HalfNormal(s_y),    R = diag(sigma_obs^2)
    x_1 ~ N(m0, P0),  x_t = A x_{t-1} + N(0, Q),  y_t = C x_t + N(0, R),

with ``s_y`` the data's standard deviation and ``s_x`` that of its first differences
(averaged over the observed dimensions), ``m0, P0`` given or, by default, centred on the
first observation (``m0 = C^+ y_1``, ``P0 = s_y^2 I`` when ``C`` is fixed; ``0, I``
otherwise). ``A = C = 1`` with ``n = p = 1`` is the local-level model (Durbin & Koopman
2012, ch. 2).

``marginalize=True`` (default) sums the states out with the Kalman filter
(:class:`custom_ops.lds.ops.KalmanLogLikelihood`, with its analytic gradient), so NUTS
samples the parameters; ``fit`` then draws one state path per posterior draw with the
simulation smoother (the model's post-processing). ``marginalize=False`` keeps the path
``x`` as a free variable, drawn whole and exactly by the simulation smoother (the
``lds_simulation_smoother`` step, Carter & Kohn 1994) while NUTS samples the parameters
given it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from custom_ops.lds.ops import kalman_log_likelihood
from custom_ops.pymc_guard import refuse_pymc_log_likelihood
from pp_models.lds import outputs
from pp_models.lds.checks import as_series, check_parameters
from pp_models.lds.distributions import lds_observations, lds_state_path
from pp_models.model_info import StepHint, ZooModelInfo, attach_info
from pp_models.registry import family_of_module
from pp_models.validation import check_bool, check_int, check_positive

__all__ = ["STEP_PATH", "LDSSpec", "get_spec", "model", "parameters_of"]

#: Registry name of the path's Gibbs step (``inference.gibbs.lds``).
STEP_PATH = "lds_simulation_smoother"


@dataclass(frozen=True)
class LDSSpec:
    """What :func:`model` built: the dimensions, the fixed ``A`` and ``C`` (``None``
    when estimated), the initial state's moments, the prior scales and the form."""

    state_dim: int
    obs_dim: int
    A: np.ndarray | None
    C: np.ndarray | None
    initial_mean: np.ndarray
    initial_cov: np.ndarray
    state_scale: float
    obs_scale: float
    marginalize: bool


def _fixed(value, name, shape):
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array or None: {err}") from None
    if arr.size == 1 and shape == (1, 1):
        arr = arr.reshape(1, 1)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite entries")
    return np.ascontiguousarray(arr)


def _scales(y):
    """``(s_y, s_x)``: the data's standard deviation and that of its first differences,
    averaged over the observed dimensions (NaN skipped; 1 where undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.nanstd(y, axis=0) if y.shape[0] > 1 else np.ones(y.shape[1])
        diff = np.nanstd(np.diff(y, axis=0), axis=0) if y.shape[0] > 2 else sd
    s_y = float(np.nanmean(sd)) if np.any(np.isfinite(sd)) else 1.0
    s_x = float(np.nanmean(diff)) if np.any(np.isfinite(diff)) else s_y
    return (s_y if s_y > 0 else 1.0), (s_x if s_x > 0 else s_y if s_y > 0 else 1.0)


def model(
    y,
    state_dim: int = 1,
    *,
    A=None,
    C=None,
    initial_mean=None,
    initial_cov=None,
    marginalize: bool = True,
    state_scale: float | None = None,
    obs_scale: float | None = None,
) -> pm.Model:
    """Build a linear dynamical system (linear-Gaussian state-space model) of ``y``.

    Parameters
    ----------
    y : array-like, shape (T,) or (T, p)
        The series; NaN marks a missing entry (``marginalize=True`` only).
    state_dim : int
        ``n >= 1``, the dimension of the state.
    A : array-like (n, n), optional
        The transition matrix, fixed; default: estimated, prior ``Normal(I, 0.5^2)``.
    C : array-like (p, n), optional
        The observation matrix, fixed; default: estimated, prior ``Normal(0, s_y^2)``.
    initial_mean, initial_cov : array-like (n,), (n, n), optional
        ``m0, P0`` of the first state (defaults in the module docstring).
    marginalize : bool
        Sum the states out with the Kalman filter (for NUTS or ADVI), drawing paths
        after the fit; else keep the path ``x`` for the simulation-smoother step.
    state_scale, obs_scale : float, optional
        Scales ``s_x``, ``s_y`` of the half-normal priors on the noise standard
        deviations (default: from the data).

    Returns
    -------
    pymc.Model
        Free ``sigma_state`` (n,), ``sigma_obs`` (p,), ``A`` and ``C`` unless fixed, and
        the path ``x`` (T, n) unless ``marginalize``; observed ``y`` (T, p).

    Raises
    ------
    ValueError, TypeError
        Bad data, shapes that do not match, a non-symmetric or non-PSD ``initial_cov``,
        missing entries with ``marginalize=False``, naming the argument.
    """
    y = as_series(y)
    T, p = y.shape
    n = check_int(state_dim, "state_dim", minimum=1)
    marginalize = check_bool(marginalize, "marginalize")
    if not marginalize and np.isnan(y).any():
        raise ValueError(
            "y has missing entries (NaN); they need marginalize=True (the Kalman filter skips them)"
        )
    if np.all(np.isnan(y)):
        raise ValueError("y has no observed entry")
    A = _fixed(A, "A", (n, n))
    C = _fixed(C, "C", (p, n))
    s_y, s_x = _scales(y)
    s_y = s_y if obs_scale is None else check_positive(obs_scale, "obs_scale")
    s_x = s_x if state_scale is None else check_positive(state_scale, "state_scale")
    if initial_mean is None:
        if C is None:
            initial_mean = np.zeros(n)
        else:
            first = np.where(np.isnan(y[0]), np.nanmean(y, axis=0), y[0])
            initial_mean = np.linalg.pinv(C) @ np.nan_to_num(first)
    if initial_cov is None:
        initial_cov = (s_y**2 if C is not None else 1.0) * np.eye(n)
    # the parameter checks of the filter, on the initial state (A, C, Q, R stand-ins)
    checked = check_parameters(
        y,
        np.eye(n) if A is None else A,
        np.zeros((p, n)) if C is None else C,
        np.eye(n),
        np.eye(p),
        initial_mean,
        initial_cov,
    )
    spec = LDSSpec(
        state_dim=n,
        obs_dim=p,
        A=A,
        C=C,
        initial_mean=checked.m0,
        initial_cov=checked.P0,
        state_scale=s_x,
        obs_scale=s_y,
        marginalize=marginalize,
    )
    coords = {
        "time": np.arange(T),
        "state": np.arange(n),
        "state_from": np.arange(n),
        "obs": np.arange(p),
    }
    with pm.Model(coords=coords) as m:
        if A is None:
            pm.Normal("A", mu=np.eye(n), sigma=0.5, dims=("state", "state_from"))
        if C is None:
            pm.Normal("C", mu=0.0, sigma=s_y, dims=("obs", "state"))
        pm.HalfNormal("sigma_state", sigma=s_x, dims="state")
        pm.HalfNormal("sigma_obs", sigma=s_y, dims="obs")
        par = parameters_of(m, spec)
        if marginalize:
            _marginal_observed(par, y)
        else:
            x = pm.CustomDist(
                "x",
                par["A"],
                par["Q"],
                par["m0"],
                par["P0"],
                pt.constant(np.zeros(T)),
                dist=_path_dist,
                logp=_path_logp,
                support_point=_path_support_point,
                signature="(n,n),(n,n),(n),(n,n),(t)->(t,n)",
                dims=("time", "state"),
            )
            pm.Normal(
                "y", mu=x @ par["C"].T, sigma=m["sigma_obs"], observed=y, dims=("time", "obs")
            )

    estimated = tuple(name for name, v in (("A", A), ("C", C)) if v is None)
    if marginalize:
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="nuts",
            postprocess=partial(outputs.recover_paths, spec=spec, y=y),
            notes="states summed out by the Kalman filter; x drawn by the simulation "
            "smoother per draw afterwards"
            + (
                f"; {', '.join(estimated)} not identified up to a change of state basis"
                if estimated
                else ""
            ),
        )
    else:
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="gibbs",
            step_hints=(StepHint(STEP_PATH, ("x",), partial(path_options, spec=spec)),),
            postprocess=partial(outputs.add_signal, spec=spec),
            notes="x: simulation smoother (an exact block draw); the parameters: NUTS "
            "given the path",
            continuous_form="marginalize=True (the states summed out by the Kalman "
            "filter, for NUTS or ADVI)",
        )
    object.__setattr__(m, "_pp_models_lds_spec", spec)
    return attach_info(m, info)


def get_spec(m: pm.Model) -> LDSSpec | None:
    """The :class:`LDSSpec` of a model built by :func:`model`, else ``None``."""
    return getattr(m, "_pp_models_lds_spec", None)


def parameters_of(m: pm.Model, spec: LDSSpec) -> dict:
    """``A, C, Q, R, m0, P0`` as tensors in terms of ``m``'s variables."""
    A = m["A"] if spec.A is None else pt.constant(spec.A)
    C = m["C"] if spec.C is None else pt.constant(spec.C)
    return {
        "A": A,
        "C": C,
        "Q": pt.diag(m["sigma_state"] ** 2),
        "R": pt.diag(m["sigma_obs"] ** 2),
        "m0": pt.constant(spec.initial_mean),
        "P0": pt.constant(spec.initial_cov),
    }


def path_options(m: pm.Model, spec: LDSSpec) -> dict:
    """The simulation-smoother step's options: ``A, C, Q, R, m0, P0`` in terms of
    ``m``'s variables (a copy's, as getting-it-right makes)."""
    return parameters_of(m, spec)


def _marginal_observed(par, y):
    # The states are summed out: the forward draw takes them from their prior given the
    # parameters, and the log-density is one number for the series. PyMC's posterior
    # predictive and pointwise log-likelihood would be wrong, so they are refused (the
    # draw's refusal is in pp_models.lds.distributions), naming the zoo functions
    # (pp_models.lds.predictive).
    def logp(value, A, C, Q, R, m0, P0, _length):
        refuse_pymc_log_likelihood("the LDS's Kalman likelihood (states summed out)")
        return kalman_log_likelihood(value, A, C, Q, R, m0, P0)

    def dist(A, C, Q, R, m0, P0, length, size):
        return _draw(lds_observations, A, C, Q, R, m0, P0, length, size=size)

    return pm.CustomDist(
        "y",
        par["A"],
        par["C"],
        par["Q"],
        par["R"],
        par["m0"],
        par["P0"],
        pt.constant(np.zeros(y.shape[0])),
        dist=dist,
        logp=logp,
        observed=pt.constant(y),
        signature="(n,n),(p,n),(n,n),(p,p),(n),(n,n),(t)->(t,p)",
        dims=("time", "obs"),
    )


def _path_logp(value, A, Q, m0, P0, _length):
    first = pm.logp(pm.MvNormal.dist(mu=m0, cov=P0), value[0])
    steps = pm.logp(pm.MvNormal.dist(mu=pt.zeros_like(m0), cov=Q), value[1:] - value[:-1] @ A.T)
    return first + steps.sum()


def _draw(rv_op, *params, size):
    # PyMC's own distributions call their random variables so: a shared generator of
    # their own (CustomDist collects its update), the next-generator output explicit
    _, draw = rv_op(*params, size=size, rng=pt.random.shared_rng(seed=None), return_next_rng=True)
    return draw


def _path_dist(A, Q, m0, P0, length, size):
    return _draw(lds_state_path, A, Q, m0, P0, length, size=size)


def _path_support_point(rv, size, A, Q, m0, P0, length):
    return pt.zeros_like(rv)
