"""Getting it right (Geweke 2004): does a sampler leave the joint distribution invariant?

Two ways to draw from the joint p(theta, y) of a generative model:

- marginal-conditional: independent draws theta ~ p(theta), y ~ p(y | theta);
- successive-conditional: start from one such draw, then alternate one sampler transition
  theta' ~ Q(theta' | theta, y) and fresh data y' ~ p(y | theta').

If Q leaves p(theta | y) invariant, the successive-conditional chain is stationary at
p(theta, y) and the two samples agree in distribution; any test statistic g(theta, y)
has the same distribution under both. A bug in Q shows up as a difference (Geweke 2004,
"Getting it right", JASA 99:799-804; Knowles 2012 §3.2.1 uses it for the IBP sampler).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from pymc.step_methods.compound import BlockedStep, CompoundStep, flatten_steps
from scipy import stats as sps

from inference.gibbs.assignment import assign_steps, describe_steps
from inference.testing.generative import GenerativeModel, check_data_vars
from inference.testing.statistics import (
    Statistic,
    default_statistics,
    derived_statistics,
    evaluate_statistics,
    holm,
)
from pp_models.model_info import get_info
from pp_models.validation import check_executor, check_int, check_model

__all__ = ["GIRResult", "getting_it_right", "run_pickled"]


@dataclass
class GIRResult:
    """Outcome of a getting-it-right run.

    Attributes
    ----------
    marginal, successive : pandas.DataFrame
        One column per statistic; rows are the marginal-conditional draws and the
        successive-conditional chain.
    table : pandas.DataFrame
        Per statistic: the two raw means, the chain's effective sample size, the Pareto
        k-hat of the independent draws, and three tests (see ``_two_sample``): raw-mean
        z test (``z``, ``p_mean``), rank-normalised mean z test (``z_rank``, ``p_rank``),
        KS test on the thinned chain (``ks``, ``p_ks``), each with Holm-adjusted
        p-values over all tests of all statistics (``*_holm``).
    seconds : float
        Wall time of the successive-conditional chain.
    """

    marginal: pd.DataFrame
    successive: pd.DataFrame
    table: pd.DataFrame
    seconds: float
    step_description: dict[str, list[str]] = field(default_factory=dict)

    def passed(self, alpha: float = 0.01) -> bool:
        """True when no Holm-adjusted p-value is below ``alpha`` (family-wise level)."""
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        adjusted = self.table[[f"{c}_holm" for c in _TESTS]].to_numpy()
        return bool(np.all(adjusted >= alpha))

    def failures(self, alpha: float = 0.01) -> pd.DataFrame:
        """The statistics with an adjusted p-value below ``alpha``."""
        adjusted = self.table[[f"{c}_holm" for c in _TESTS]].to_numpy()
        return self.table[(adjusted < alpha).any(axis=1)]

    def assert_passed(self, alpha: float = 0.01) -> None:
        """Raise ``AssertionError`` with the table when the test rejects."""
        if not self.passed(alpha):
            raise AssertionError(f"getting-it-right rejected at alpha={alpha}:\n{self}")

    def to_dataframe(self) -> pd.DataFrame:
        return self.table.copy()

    def __str__(self) -> str:
        with pd.option_context("display.width", 140, "display.max_columns", 20):
            return self.table.to_string(float_format=lambda v: f"{v:.4g}")

    def plot(self, *, statistics: Sequence[str] | None = None):
        """PP plot per statistic: ECDF of the chain against ECDF of independent draws.

        A correct sampler's curves hug the diagonal; the shaded band is a pointwise 99 %
        band for the chain's thinned sample size.
        """
        import matplotlib.pyplot as plt

        names = list(statistics or self.table.index)
        ncols = min(4, len(names))
        nrows = math.ceil(len(names) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows),
                                 squeeze=False)
        grid = np.linspace(0, 1, 201)
        for ax, name in zip(axes.flat, names):
            a = np.sort(self.marginal[name].to_numpy())
            b = self.successive[name].to_numpy()
            thin = int(self.table.loc[name, "thin"])
            cuts = np.quantile(a, grid)
            pa = np.searchsorted(a, cuts, side="right") / a.size
            pb = np.searchsorted(np.sort(b[::thin]), cuts, side="right") / b[::thin].size
            n_eff = b[::thin].size
            half = 2.576 * np.sqrt(grid * (1 - grid) / n_eff)
            ax.fill_between(grid, grid - half, grid + half, color="0.85")
            ax.plot([0, 1], [0, 1], color="0.4", lw=0.8)
            ax.plot(pa, pb, lw=1.5)
            p = min(self.table.loc[name, f"{c}_holm"] for c in _TESTS)
            ax.set_title(f"{name}\nadj. p = {p:.3g}", fontsize=9)
            ax.set_xlabel("marginal-conditional")
            ax.set_ylabel("successive-conditional")
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        fig.tight_layout()
        return fig


def getting_it_right(
    model: pm.Model,
    *,
    data_vars: Sequence[str],
    statistics: Mapping[str, Statistic] | None = None,
    method: str | None = "gibbs",
    step=None,
    n_samples: int = 10_000,
    thin: int = 1,
    tune: int | None = None,
    random_seed=None,
    executor=None,
) -> GIRResult:
    """Run Geweke's getting-it-right test of a sampler on a generative model.

    Parameters
    ----------
    model : pymc.Model
        The generative model; ``data_vars`` may be observed (their values are ignored)
        or free.
    data_vars : sequence of str
        Names of the data variables; every other free variable is a parameter the
        sampler must update.
    statistics : mapping name -> function(state) -> float, optional
        Test statistics of the joint state, a dict of variable name -> value (parameters
        on their natural scale, and the data). Default: every parameter element (or the
        mean of a large parameter) and its square, the mean and mean square of each data
        variable, and the label-invariant statistics a zoo factory declares.
    method : {"gibbs", "auto", "nuts"}, optional
        Without ``step``: ``"gibbs"`` lets ``inference.fit``'s assignment choose the steps
        for the parameters (zoo steps from the factory's hints and the registry, PyMC's
        choice for the rest); ``"nuts"`` updates every parameter with ``pm.NUTS`` (all
        must be continuous); ``"auto"`` is ``"nuts"`` when the factory prefers NUTS
        (``ZooModelInfo.preferred_method``), else ``"gibbs"``. Ignored when ``step`` is
        given.
    step : step method, list of them, or callable ``model -> step(s)``
        The transition under test. An instance must be built on ``model`` with the data
        variables free; a callable is handed the model (with the data variables free)
        inside its context, which works for any model.
    n_samples : int
        Draws of each kind (>= 2).
    thin : int
        Successive-conditional iterations per recorded draw.
    tune : int, optional
        Adaptation iterations (discarded) before recording; default 0 for steps without
        adaptation, 500 otherwise. Adaptation is switched off afterwards: an adapting
        transition is not Markov and would fail the test.
    random_seed : int or Generator, optional
    executor : concurrent.futures.Executor, optional
        Run the test as one task there (a process pool, a Dask
        ``Client.get_executor()``): the model and ``step`` are pickled to the worker and
        the result is the serial one for the same seed. Many runs (seeds x steps) spread
        over the workers with :func:`inference.testing.campaign.getting_it_right_campaign`,
        one task per run.

    Returns
    -------
    GIRResult
        ``.passed(alpha)`` applies, per statistic, z tests on the difference of raw and
        of rank-normalised means, with standard errors from the chain's effective
        sample size, and a two-sample Kolmogorov-Smirnov test against the chain thinned
        to roughly independent draws, with Holm's correction over all of these tests.
    """
    check_model(model)
    data_vars = check_data_vars(model, data_vars)
    n_samples = check_int(n_samples, "n_samples", minimum=2)
    thin = check_int(thin, "thin", minimum=1)
    if tune is not None:
        tune = check_int(tune, "tune", minimum=0)
    if step is None and method not in ("gibbs", "auto", "nuts"):
        raise ValueError(f"method must be 'gibbs', 'auto' or 'nuts' (or pass step), got {method!r}")
    if executor is not None:
        from inference.executors import pickled

        executor = check_executor(executor)
        kwargs = dict(data_vars=data_vars, statistics=statistics, method=method, step=step,
                      n_samples=n_samples, thin=thin, tune=tune, random_seed=random_seed)
        payload = pickled((model, kwargs), "the model, step and statistics")
        return executor.submit(run_pickled, payload).result()

    gen = GenerativeModel(model, data_vars)
    transition = _resolve_step(gen, model, step, method)
    rng = np.random.default_rng(random_seed)
    gen.seed(rng)
    first = gen.draw_prior()
    stats = _resolve_statistics(statistics, gen, first)
    names = list(stats)

    marginal = np.empty((n_samples, len(names)))
    marginal[0] = evaluate_statistics(stats, first)
    for i in range(1, n_samples):
        marginal[i] = evaluate_statistics(stats, gen.draw_prior())

    adaptive = any(getattr(s, "tune", False) for s in flatten_steps(transition))
    tune = (500 if adaptive else 0) if tune is None else tune
    transition.setup_chain(rng.spawn(1)[0], tune, n_samples * thin)
    start = time.perf_counter()
    successive = _successive_chain(gen, transition, stats, first, n_samples, thin, tune)
    seconds = time.perf_counter() - start

    marginal_df = pd.DataFrame(marginal, columns=names)
    successive_df = pd.DataFrame(successive, columns=names)
    table = _compare(marginal_df, successive_df)
    return GIRResult(marginal_df, successive_df, table, seconds, describe_steps([transition]))


def run_pickled(payload: bytes, **overrides) -> GIRResult:
    """On a worker: :func:`getting_it_right` of a cloudpickled ``(model, kwargs)``
    (updated with ``overrides``); the model may be a ``pymc.Model`` or a function of no
    argument that builds one."""
    import cloudpickle

    model, kwargs = cloudpickle.loads(payload)
    if callable(model) and not isinstance(model, pm.Model):
        model = model()
    return getting_it_right(model, **{**kwargs, **overrides})


def _resolve_step(gen: GenerativeModel, original: pm.Model, step, method="gibbs"):
    model = gen.model
    if step is None:
        info = get_info(model)
        if method == "auto":
            method = "nuts" if info is not None and info.preferred_method == "nuts" else "gibbs"
        if method == "nuts":
            params = [model[name] for name in gen.param_names]
            discrete = [rv.name for rv in params if rv.type.dtype.startswith(("int", "uint"))]
            if discrete:
                raise ValueError(
                    f"method='nuts' needs continuous parameters; {', '.join(discrete)} "
                    "are discrete (use method='gibbs' or pass step)"
                )
            with model:
                steps = [pm.NUTS(vars=params)]
        else:
            with model:
                steps = assign_steps(model, info, [], None, only=set(gen.param_names))
    elif callable(step) and not isinstance(step, BlockedStep | CompoundStep):
        with model:
            built = step(model)
        steps = list(built) if isinstance(built, Sequence) else [built]
    else:
        steps = list(step) if isinstance(step, Sequence) else [step]
    for s in steps:
        if not isinstance(s, BlockedStep | CompoundStep):
            raise TypeError(
                f"step must be a PyMC step method (or a callable making one), got {s!r}"
            )
    owned = [v for s in steps for v in s.vars]
    if any(v not in model.value_vars for v in owned):
        raise ValueError(
            "step was built on a model whose data variables are observed; build it on a "
            "model with the data variables free, or pass step as a callable "
            "`lambda model: pm.Metropolis([model['mu']])` that builds it on the model given"
        )
    data_values = {model.rvs_to_values[model[name]] for name in gen.data_names}
    if data_values.intersection(owned):
        raise ValueError("step must not update the data variables; they are drawn fresh")
    param_values = {model.rvs_to_values[model[name]] for name in gen.param_names}
    missing = param_values.difference(owned)
    if missing:
        raise ValueError(
            "step leaves these parameters unsampled: "
            + ", ".join(sorted(model.values_to_rvs[v].name for v in missing))
        )
    return steps[0] if len(steps) == 1 else CompoundStep(steps)


def _resolve_statistics(statistics, gen: GenerativeModel, state) -> dict[str, Statistic]:
    if statistics is None:
        shapes = {name: np.shape(state[name]) for name in gen.param_names}
        stats = default_statistics(shapes, gen.data_names)
        stats.update(derived_statistics(gen.model, state))
    else:
        if not isinstance(statistics, Mapping) or not statistics:
            raise TypeError("statistics must be a non-empty dict of name -> function(state)")
        for name, fn in statistics.items():
            if not callable(fn):
                raise TypeError(f"statistics: {name!r} is not callable")
        stats = dict(statistics)
    evaluate_statistics(stats, state)  # a non-scalar statistic fails here, before any work
    return stats


def _successive_chain(gen, transition, stats, first, n_samples, thin, tune):
    point = gen.to_point(first)
    data_keys = gen.data_value_names()
    direct = data_keys == gen.data_names  # untransformed data: write them straight in
    out = np.empty((n_samples, len(stats)))
    total = tune + n_samples * thin
    for it in range(total):
        if it == tune:
            transition.stop_tuning()
        point, _ = transition.step(point)
        params = gen.params_from_point(point)
        data = gen.draw_data(params)
        if direct:
            point = dict(point)
            point.update(data)
        else:
            point = gen.to_point({**params, **data})
        recorded = it - tune
        if recorded >= 0 and (recorded + 1) % thin == 0:
            out[recorded // thin] = evaluate_statistics(stats, {**params, **data})
    return out


_TESTS = ("p_mean", "p_rank", "p_ks")

#: Pareto k-hat above which a statistic is too heavy-tailed for the raw-mean z test:
#: k < 1/4 means about four finite moments, enough for the mean's sampling distribution
#: to be close to normal at these sizes (Vehtari et al. 2024, "Pareto smoothed
#: importance sampling", §3); finite-sample k-hat runs high, hence 0.3.
HEAVY_TAIL_KHAT = 0.3


def _compare(marginal: pd.DataFrame, successive: pd.DataFrame) -> pd.DataFrame:
    rows = [
        _two_sample(name, marginal[name].to_numpy(), successive[name].to_numpy())
        for name in marginal.columns
    ]
    table = pd.DataFrame(rows).set_index("statistic")
    adjusted = holm(np.concatenate([table[col].to_numpy() for col in _TESTS]))
    for i, col in enumerate(_TESTS):
        table[f"{col}_holm"] = adjusted[i * len(table):(i + 1) * len(table)]
    return table


def _two_sample(name, a, b) -> dict:
    """Compare independent draws ``a`` with the autocorrelated chain ``b``.

    Three tests, each valid under the null for a stationary chain:

    - ``p_mean``: z test on the difference of raw means. Its standard error uses the
      variance of the independent draws (the common variance under the null) and the
      chain's effective sample size, so a drifting chain (a transition that is not even
      stationary) cannot hide its drift behind its own inflated variance. Skipped
      (p = 1) for heavy-tailed statistics, whose raw mean obeys no useful central limit
      theorem (Pareto k-hat of the independent draws >= ``HEAVY_TAIL_KHAT``).
    - ``p_rank``: the same z test on rank-normalised values (pooled ranks mapped to
      normal scores, as in Vehtari et al. 2021's R-hat): valid for any tails.
    - ``p_ks``: two-sample Kolmogorov-Smirnov against the chain thinned to about two
      effective draws per kept draw.
    """
    m = a.size
    base = dict(statistic=name, mean_marginal=a.mean(), mean_successive=b.mean())
    if np.ptp(b) == 0:
        # A chain that never moves while independent draws vary is stuck, whatever its
        # value; if both are constant they must agree.
        ok = float(np.ptp(a) == 0 and a[0] == b[0])
        return dict(base, ess_successive=float(b.size) if ok else 0.0, khat=np.nan,
                    z=0.0 if ok else np.inf, p_mean=ok, z_rank=0.0 if ok else np.inf,
                    p_rank=ok, thin=1, ks=1.0 - ok, p_ks=ok)

    ess_raw, _ = _ess(b)
    khat = _khat(a)
    if np.ptp(a) > 0 and khat < HEAVY_TAIL_KHAT:
        var = a.var(ddof=1)
        z = (b.mean() - a.mean()) / math.sqrt(var / m + var / max(ess_raw, 1.0))
        p_mean = float(2 * sps.norm.sf(abs(z)))
    else:
        z, p_mean = np.nan, 1.0

    pooled = np.concatenate([a, b])
    scores = sps.norm.ppf((sps.rankdata(pooled) - 0.375) / (pooled.size + 0.25))
    sa, sb = scores[:m], scores[m:]
    ess_rank, ess_bulk = _ess(sb)
    var = sa.var(ddof=1) if np.ptp(sa) > 0 else sb.var(ddof=1)
    z_rank = (sb.mean() - sa.mean()) / math.sqrt(var / m + var / max(ess_rank, 1.0))
    p_rank = float(2 * sps.norm.sf(abs(z_rank)))

    thin = max(1, math.ceil(2 * b.size / max(ess_bulk, 1.0)))
    ks = sps.ks_2samp(a, b[::thin])
    return dict(base, ess_successive=ess_raw, khat=khat, z=z, p_mean=p_mean, z_rank=z_rank,
                p_rank=p_rank, thin=thin, ks=float(ks.statistic), p_ks=float(ks.pvalue))


def _khat(x: np.ndarray) -> float:
    import warnings

    from arviz_stats.base.array import BaseArray

    if np.ptp(x) == 0 or np.unique(x).size < 20:
        return 0.0  # (nearly) discrete: bounded in practice, no tail to fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            k = float(BaseArray().pareto_khat(x[None, :], chain_axis=0, draw_axis=1,
                                              tail="both"))
        except ValueError:
            # "All tail values are the same": a tail made of ties is bounded (a discrete
            # statistic such as a mean of labels), not heavy
            return 0.0
    return k if np.isfinite(k) else np.inf


def _ess(x: np.ndarray) -> tuple[float, float]:
    import warnings

    import arviz as az

    if np.ptp(x) == 0:
        return 1.0, 1.0
    da = xr.DataArray(x[None, :], dims=("chain", "draw"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ess_mean = float(az.ess(da, method="mean"))
        ess_bulk = float(az.ess(da, method="bulk"))
    ess_mean = ess_mean if np.isfinite(ess_mean) else 1.0
    ess_bulk = ess_bulk if np.isfinite(ess_bulk) else 1.0
    return ess_mean, ess_bulk
