"""``fit(method="advi")``: ADVI (mean-field or full-rank) optimised with Adam, then draws
from the approximation laid out as MCMC draws, dims ``(chain, draw, ...)``."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from inference.gibbs.assignment import untransformed
from pp_models.validation import check_int, check_positive

__all__ = ["fit_advi"]


def fit_advi(model: pm.Model, *, draws: int, chains: int, random_seed, progressbar: bool,
             options: dict) -> tuple[xr.DataTree, dict[str, list[str]], str]:
    """Fit ``model`` by ADVI and draw ``chains * draws`` from the approximation.

    Parameters
    ----------
    model : pymc.Model
        An all-continuous model.
    draws, chains : int
        The draws are laid out as ``chains`` chains of ``draws`` (independent draws).
    random_seed : int, sequence of int or numpy Generator, optional
        Seeds both the optimisation and the draws.
    progressbar : bool
        PyMC's bar with the running loss.
    options : dict
        ``fit``'s ``**method_kwargs``: ``n`` (iterations, default 30000),
        ``learning_rate`` (default 0.01), ``fullrank``, ``obj_optimizer`` (replaces the
        two Adam phases) and any other ``Inference.fit`` option.

    Returns
    -------
    tuple
        The DataTree (the negative ELBO per iteration in ``fit_history``), the step
        assignment (``{"ADVI": names}`` or ``{"FullRankADVI": names}``) and the sampler's
        name (``"advi"`` or ``"fullrankadvi"``).
    """
    kwargs = dict(options)
    n = check_int(kwargs.pop("n", 30_000), "n", minimum=1)
    learning_rate = kwargs.pop("learning_rate", 0.01)
    learning_rate = check_positive(learning_rate, "learning_rate")
    fullrank = bool(kwargs.pop("fullrank", False))
    user_optimizer = kwargs.pop("obj_optimizer", None)
    rng = np.random.default_rng(random_seed)
    fit_seed, sample_seed = (int(s) for s in rng.integers(2**31, size=2))
    with model:
        inference = pm.FullRankADVI(random_seed=fit_seed) if fullrank else pm.ADVI(
            random_seed=fit_seed
        )
        if user_optimizer is not None:
            approx = inference.fit(n, obj_optimizer=user_optimizer, progressbar=progressbar,
                                   **kwargs)
        else:
            # Adam's last iterate jitters around the optimum by about the step size; a
            # second, shorter phase at a tenth of the rate settles it (a two-step
            # learning-rate schedule), so the returned approximation is the optimum's.
            # The rate is a shared variable: both phases build the same graph, so the
            # second loads the first's compiled step function from PyTensor's cache
            # instead of compiling one with another constant.
            rate = pytensor.shared(np.float64(learning_rate), name="advi_learning_rate")
            inference.fit(n, obj_optimizer=pm.adam(learning_rate=rate),
                          progressbar=progressbar, **kwargs)
            rate.set_value(np.float64(learning_rate / 10))
            approx = inference.fit(max(n // 5, 1), obj_optimizer=pm.adam(learning_rate=rate),
                                   progressbar=progressbar, **kwargs)
        sampled = approx.sample(draws * chains, random_seed=sample_seed)

    dt = xr.DataTree()
    dt["posterior"] = xr.DataTree(_as_chains(sampled["posterior"].to_dataset(), chains, draws))
    for group in sampled.children:
        if group != "posterior":
            dt[group] = sampled[group].copy()
    hist = np.asarray(approx.hist, dtype=np.float64)
    dt["fit_history"] = xr.DataTree(
        xr.Dataset(
            {"loss": (("iteration",), hist)},
            coords={"iteration": np.arange(hist.size)},
            attrs={"description": "negative ELBO per iteration (Monte Carlo estimate)"},
        )
    )
    kind = "FullRankADVI" if fullrank else "ADVI"
    names = [untransformed(v.name) for v in model.value_vars]
    return dt, {kind: names}, kind.lower()


def _as_chains(posterior: xr.Dataset, chains: int, draws: int) -> xr.Dataset:
    """The approximation's one chain of ``chains * draws`` draws as ``chains`` chains."""
    reshaped = {}
    for name, arr in posterior.data_vars.items():
        values = arr.values.reshape(chains, draws, *arr.shape[2:])
        reshaped[name] = (("chain", "draw", *arr.dims[2:]), values)
    coords = {k: v for k, v in posterior.coords.items() if k not in ("chain", "draw")}
    coords.update(chain=np.arange(chains), draw=np.arange(draws))
    return xr.Dataset(reshaped, coords=coords, attrs=posterior.attrs)
