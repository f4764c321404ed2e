"""Power posteriors of an all-continuous model on nutpie, one run per temperature.

The stepping-stone and thermodynamic estimators (:mod:`inference.tempering.evidence`)
need draws from ``p_beta(theta) ∝ p(theta) p(X | theta)^beta`` at each inverse
temperature of a ladder. For a model whose free variables are all continuous (no zoo
Gibbs step), each temperature's chains run on nutpie (compiled NUTS): one compile per
model, then ``beta`` is data.

**The tempered model.** :func:`tempered_model` rewrites the model (PyMC's
``fgraph_from_model`` / ``model_from_fgraph``): the free variables, their transforms and
deterministics are kept; the observed variables and the potentials are removed, and one
potential ``beta * L`` is added, where ``L`` is the original model's ``datalogp`` (the
observed variables' terms plus the potentials, :mod:`inference.tempering.power`) with the
original value variables replaced by the new ones, and ``beta`` a named shared variable
(:data:`BETA_NAME`). The new model's ``logp()`` is therefore ``varlogp + beta datalogp``
of the original, term for term (a test compares the two, and the compiled function nutpie
calls, at random points). Its nutpie compile is cached per model
(:func:`inference.nutpie_cache.compiled_model`) and each temperature is
``compiled.with_data(beta=beta_k)``: no new compile.

**The runs.** Temperatures are independent runs (no swaps): the stepping-stone ratio
``Z(beta_{k+1}) / Z(beta_k) = E_{beta_k}[p(X | theta)^(beta_{k+1} - beta_k)]`` only
needs draws from each ``p_{beta_k}`` (Xie et al. 2011 run them this way). At ``beta = 0``
the draws are exact prior draws (forward sampling, :class:`~inference.tempering.power.
PriorDraws`); the stepping stone needs none at ``beta = 1``. Each chain of each
temperature is a nutpie chain (its own step size and mass matrix adaptation, ``tune``
iterations); ``log p(X | theta)`` of every kept draw is the original model's
``datalogp`` at the draw's unconstrained values (one vectorised compiled call per run,
:func:`batched_log_likelihood`), so it is the quantity the parallel-tempering runs
record.

Parallel tempering (:mod:`inference.tempering.driver`) remains the way for models with
discrete or collapsed parts, and for multimodal power posteriors whose modes are not
exchangeable (independent runs do not move between such modes; swaps do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor
from pymc.model.fgraph import (
    ModelObservedRV,
    ModelPotential,
    fgraph_from_model,
    model_from_fgraph,
    model_named,
    model_potential,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph import graph_replace
from pytensor.tensor.random.type import RandomGeneratorType

from inference.sampling_core import model_cache
from inference.tempering.power import PriorDraws

__all__ = [
    "BETA_NAME",
    "LIKELIHOOD_NAME",
    "LadderDraws",
    "TemperedModel",
    "batched_log_likelihood",
    "nutpie_available",
    "run_ladder",
    "tempered_for",
    "tempered_model",
]

#: Name of the inverse temperature's shared variable in the tempered model.
BETA_NAME = "pp_models_tempering_beta"
#: Name of the tempered likelihood's potential in the tempered model.
LIKELIHOOD_NAME = "pp_models_tempered_likelihood"

_CACHE_KEY = "tempering_nutpie"


def nutpie_available() -> bool:
    try:
        import nutpie  # noqa: F401
    except ImportError:  # pragma: no cover - nutpie is a dependency
        return False
    return True


class _WithoutInitialValues:
    """``model`` as ``fgraph_from_model`` reads it, without user initial values (which
    it refuses): they only choose where chains start, and the runs' nutpie compile is
    given the numeric ones (:func:`_numeric_initial_values`)."""

    def __init__(self, model: pm.Model):
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    @property
    def rvs_to_initial_values(self):
        return dict.fromkeys(self._model.rvs_to_initial_values)


def _numeric_initial_values(model: pm.Model) -> dict:
    out = {}
    for rv, value in model.rvs_to_initial_values.items():
        if value is None or isinstance(value, str):
            continue
        try:
            out[rv.name] = np.asarray(value, dtype=rv.dtype)
        except (TypeError, ValueError):  # a symbolic initial value: start where nutpie does
            continue
    return out


def _underlying(var):
    """The variable a ``ModelVar`` dummy of PyMC's fgraph wraps."""
    from pymc.model.fgraph import ModelVar

    while var.owner is not None and isinstance(var.owner.op, ModelVar):
        var = var.owner.inputs[0]
    return var


@dataclass
class TemperedModel:
    """:func:`tempered_model`'s result: the tempered model and the pairs (original,
    copy) of the shared variables PyMC copied into it (synchronised before each use,
    so new data set on the original reach the runs)."""

    model: pm.Model
    shared_pairs: list
    initial_values: dict

    def sync_data(self) -> None:
        for original, copy in self.shared_pairs:
            copy.set_value(original.get_value(borrow=True), borrow=True)


def tempered_model(model: pm.Model) -> TemperedModel:
    """The model whose ``logp()`` is ``varlogp + beta * datalogp`` of ``model`` (module
    docstring), ``beta`` the shared variable :data:`BETA_NAME` (1 when built)."""
    for name in (BETA_NAME, LIKELIHOOD_NAME):
        if name in model.named_vars:
            raise ValueError(f"model: a variable is named {name!r}, the name the tempered "
                             "model gives its inverse temperature; rename it")
    source = (_WithoutInitialValues(model)
              if any(v is not None for v in model.rvs_to_initial_values.values()) else model)
    fgraph, memo = fgraph_from_model(source)
    replace = {}
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        replace[value] = memo[value]
    shared_pairs = []
    for original, new in memo.items():
        if isinstance(original, SharedVariable) and new is not original:
            replace[original] = new
            copy = _underlying(new)
            if isinstance(copy, SharedVariable) and not isinstance(copy.type,
                                                                   RandomGeneratorType):
                shared_pairs.append((original, copy))
    likelihood = graph_replace(model.datalogp, replace, strict=False)
    beta_shared = pytensor.shared(np.asarray(1.0, dtype=likelihood.dtype), name=BETA_NAME)
    # the observed variables and potentials leave: their terms are in the new potential;
    # a deterministic computed from an observed variable reads its data instead
    for i in reversed(range(len(fgraph.outputs))):
        out = fgraph.outputs[i]
        op = out.owner.op if out.owner is not None else None
        if isinstance(op, ModelObservedRV):
            fgraph.replace(out, out.owner.inputs[1], import_missing=True)
            fgraph.remove_output(i)
        elif isinstance(op, ModelPotential):
            fgraph.remove_output(i)
    beta_var = model_named(beta_shared, BETA_NAME)
    fgraph.add_output(beta_var, import_missing=True)
    fgraph.add_output(model_potential(beta_var * likelihood, LIKELIHOOD_NAME),
                      import_missing=True)
    tempered = model_from_fgraph(fgraph, mutate_fgraph=True)
    tempered.check_bounds = model.check_bounds
    return TemperedModel(tempered, shared_pairs, _numeric_initial_values(model))


def tempered_for(model: pm.Model) -> TemperedModel:
    """:func:`tempered_model` of ``model``, built once per model (again if the model's
    variables change), its data synchronised with the model's."""
    from inference.nutpie_cache import model_signature

    cache = model_cache(model)
    signature = model_signature(model)
    entry = cache.get(_CACHE_KEY)
    if entry is None or entry[0] != signature:
        entry = cache[_CACHE_KEY] = (signature, tempered_model(model))
    tempered = entry[1]
    tempered.sync_data()
    return tempered


def batched_log_likelihood(model: pm.Model):
    """``values -> (n,)``: ``log p(X | theta)`` (``model.datalogp``) at ``n`` points
    given as ``{value variable name: (n, *shape) array}``; one compiled call (the graph
    vectorised over a leading axis), or a loop over the points with
    :func:`~inference.tempering.power.log_likelihood_function` when an operation of the
    graph cannot be vectorised. Compiled once per model."""
    from inference.tempering.power import log_likelihood_function

    cache = model_cache(model)
    fn = cache.get("tempering_batched_loglik")
    if fn is not None:
        return fn
    import pytensor.tensor as pt
    from pymc.pytensorf import compile as compile_pymc
    from pytensor.graph.replace import vectorize_graph

    values = [model.rvs_to_values[rv] for rv in model.free_RVs]
    batched = [pt.tensor(dtype=v.dtype, shape=(None, *v.type.shape), name=v.name)
               for v in values]
    try:
        out = vectorize_graph(model.datalogp, dict(zip(values, batched, strict=True)))
        compiled = compile_pymc(batched, out, on_unused_input="ignore")
    except NotImplementedError:
        compiled = None
    names = [v.name for v in values]
    if compiled is not None:
        def fn(draws, _compiled=compiled, _names=names):
            return np.asarray(_compiled(*(draws[n] for n in _names)), dtype=np.float64)
    else:
        single = log_likelihood_function(model)

        def fn(draws, _single=single, _names=names):
            n = len(draws[_names[0]]) if _names else 0
            return np.array([_single({k: draws[k][i] for k in _names}) for i in range(n)])
    cache["tempering_batched_loglik"] = fn
    return fn


@dataclass
class LadderDraws:
    """What :func:`run_ladder` returns.

    Attributes
    ----------
    log_likelihood : (chains, draws, N) float64
        ``log p(X | theta)`` of each kept draw at each temperature (NaN at a temperature
        not run: ``beta = 1`` when it is not needed).
    divergences : (chains, N) int64
        nutpie's divergent transitions among the kept draws (0 at ``beta = 0``).
    """

    log_likelihood: np.ndarray
    divergences: np.ndarray


def _arrow_column(batch, name: str, n: int, shape) -> np.ndarray:
    import pyarrow

    column = pyarrow.array(batch.column(name))
    if hasattr(column, "flatten"):
        column = column.flatten()
    return column.to_numpy(zero_copy_only=False).reshape(n, *shape)


def run_ladder(model: pm.Model, ladder: np.ndarray, *, draws: int, tune: int, chains: int,
               cores: int | None, rng: np.random.Generator, last: bool,
               progressbar: bool = False) -> LadderDraws:
    """Draws at each temperature of ``ladder`` (module docstring): exact prior draws at
    ``beta = 0``, ``chains`` nutpie chains of ``draws`` kept draws after ``tune`` at
    every other temperature (``beta = 1`` only if ``last``)."""
    import nutpie

    from inference.nutpie_cache import compiled_model

    tempered = tempered_for(model)
    loglik = batched_log_likelihood(model)
    compiled = compiled_model(tempered.model, progressbar=progressbar, var_names=(),
                              initial_points=tempered.initial_values or None)
    names, _slices, shapes = compiled.shape_info
    value_names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
    dtypes = {model.rvs_to_values[rv].name: model.rvs_to_values[rv].dtype
              for rv in model.free_RVs}
    shape_of = dict(zip(names, shapes, strict=True))
    n = len(ladder)
    out = np.full((chains, draws, n), np.nan)
    divergences = np.zeros((chains, n), dtype=np.int64)
    streams = rng.spawn(n)
    for k, beta in enumerate(ladder):
        if k == n - 1 and not last:
            break
        if beta == 0.0:
            prior = PriorDraws.for_model(model)
            prior.seed(streams[k])
            for c in range(chains):
                points = [prior.draw() for _ in range(draws)]
                out[c, :, k] = loglik({name: np.stack([p[name] for p in points])
                                       for name in value_names})
            continue
        raw = nutpie.sample(compiled.with_data(**{BETA_NAME: float(beta)}), draws=draws,
                            tune=tune, chains=chains, cores=cores or chains,
                            seed=int(streams[k].integers(2**63)), progress_bar=False,
                            save_warmup=False, return_raw_trace=True)
        draw_batches, stat_batches = raw.get_arrow_trace()
        for c, (batch, stats) in enumerate(zip(draw_batches, stat_batches, strict=True)):
            rows = batch.num_rows
            kept = ~_arrow_column(stats, "tuning", rows, ()).astype(bool)
            values = {name: _arrow_column(batch, name, rows, shape_of[name])[kept]
                      .astype(dtypes[name], copy=False) for name in value_names}
            out[c, :, k] = loglik(values)
            divergences[c, k] = int(_arrow_column(stats, "diverging", rows, ())[kept].sum())
    return LadderDraws(out, divergences)
