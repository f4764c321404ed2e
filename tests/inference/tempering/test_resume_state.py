"""A tempered chain stored as plain data continues draw for draw.

A tempered chain (:class:`~inference.tempering.driver.TemperedStep`) is stopped during
its tuning, its state goes through JSON exactly as a trace's commit record stores it
(``json.dumps`` with no fallback for other types), a new chain is built and set up the
way the chain loop resumes one (``inference.chains``), and it must then make the very
draws of the run that was never stopped: for PyMC's gradient-free steps (Metropolis
tuning, Slice, the two Gibbs label steps) and zoo Gibbs steps (the collapsed DP
mixture). NUTS replicas (step size and mass matrix adapting) beside a zoo step are
resumed through a real trace, after a real Ctrl-C, by
``test_parallel_tempering_dpm.test_interrupted_tempered_run_resumes_to_the_uninterrupted_run``.
No module whose state reaches a trace imports a pickler.
"""

import ast
import functools
import json
from pathlib import Path

import numpy as np
import pytest

from inference.sampling_core import initial_point
from inference.step_state import (
    from_data,
    sampling_state_from_data,
    sampling_state_to_data,
    to_data,
)
from inference.tempering import TemperedMetropolis
from inference.tempering.driver import TemperedStep
from inference.tempering.ladder import initial_ladder
from inference.tempering.steps import build_steps, plan_steps
from pp_models import dpm
from pp_models.model_info import get_info
from tests.inference.tempering.pymc_mixture import STEPS, mixture

ROOT = Path(__file__).resolve().parents[3]
TUNE, DRAWS, CUT = 12, 8, 7


def zoo_plan(model):
    return build_steps(
        model, plan_steps(model, get_info(model), []), initial_point=initial_point(model)
    )


@functools.cache
def pymc_steps():
    """The models and steps of ``test_tempered_pymc_steps`` (the same graphs, which a cold
    run has compiled by then): PyMC's four gradient-free steps. Metropolis tunes its
    scale every 3 iterations, so the cut falls between two tunings."""
    out = []
    for latent, (label, means) in STEPS.items():
        m = mixture(latent)
        with m:
            options = {"tune_interval": 3} if means is TemperedMetropolis else {}
            out.append((m, [label([m["z"]]), means([m["mu"]], **options)]))
    return out


def zoo_steps():
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(-1.5, 0.4, (2, 2)), rng.normal(1.5, 0.4, (3, 2))])
    m = dpm.model(X, likelihood="diag_gaussian", alpha=1.0)
    return [(m, zoo_plan(m))]


class Replicas:
    """PyMC's tempered steps as one replica of a tempered chain holds them (at beta
    0.3), with the chain-loop interface of :class:`TemperedStep`: the leaf contract
    (``replica``, ``setup_chain``, ``chain_state``) without compiling the model's
    log-likelihood for a ladder."""

    def __init__(self, model, steps, tune, draws):
        self.leaves = [s.replica() for s in steps]
        rngs = np.random.default_rng(11).spawn(len(self.leaves))
        for leaf, rng in zip(self.leaves, rngs, strict=True):
            leaf.setup_chain(rng, tune, draws)
            leaf.set_inverse_temperature(0.3)

    def step(self, point):
        for leaf in self.leaves:
            point, _stats = leaf.step(point)
        return point, []

    def stop_tuning(self):
        for leaf in self.leaves:
            leaf.stop_tuning()

    def chain_state(self):
        return [leaf.chain_state() for leaf in self.leaves]

    def restore_chain_state(self, states):
        for leaf, state in zip(self.leaves, states, strict=True):
            leaf.restore_chain_state(state)


def tempered_chain(model, steps, tune, draws):
    """A tempered chain set up as the chain loop sets one up (seeded alike)."""
    tempered = TemperedStep(steps, model=model, ladder=initial_ladder(3))
    tempered.setup_chain(np.random.default_rng(11), tune, draws)
    tempered.tune = bool(tune)
    return tempered


#: a zoo case is named for its family, so it runs beside that family's tests (whose
#: kernels a cold run compiles once, tests/conftest.py)
CASES = {"pymc_steps": (pymc_steps, Replicas), "dpm_zoo_steps": (zoo_steps, tempered_chain)}


def iterate(chain, point, start, stop, tune):
    """Iterations ``start:stop`` of the chain loop; the points made, flattened."""
    out = []
    for i in range(start, stop):
        if i == tune:
            chain.stop_tuning()
        point, _stats = chain.step(point)
        out.append(np.concatenate([np.ravel(point[k]).astype(float) for k in sorted(point)]))
    return point, out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resumed_tempered_chain_continues_draw_for_draw(case):
    models, chain = CASES[case]
    for model, steps in models():
        start = initial_point(model)
        whole = chain(model, steps, TUNE, DRAWS)
        _, expected = iterate(whole, dict(start), 0, TUNE + DRAWS, TUNE)

        first = chain(model, steps, TUNE, DRAWS)
        point, made = iterate(first, dict(start), 0, CUT, TUNE)
        # through JSON as the commit record stores it: no fallback for other types
        record = json.loads(json.dumps({"point": to_data(point), "state": first.chain_state()}))
        resumed = chain(model, steps, TUNE - CUT, DRAWS)
        resumed.restore_chain_state(record["state"])
        _, rest = iterate(resumed, from_data(record["point"]), 0, TUNE + DRAWS - CUT, TUNE - CUT)
        np.testing.assert_array_equal(np.array(made + rest), np.array(expected))


def test_plain_data_round_trips_exactly():
    value = {
        "a": np.array([[0.1, np.nan], [np.inf, -0.0]]),
        "b": np.float64(1 / 3),
        "c": (1, np.int32(2), "x"),
        "d": {3: [True, None]},
        "__type__": 1.0,
        "e": np.array([2**63 + 5], dtype=np.uint64),
        "f": np.float32(0.1),
    }
    back = from_data(json.loads(json.dumps(to_data(value))))
    assert back.keys() == value.keys()
    np.testing.assert_array_equal(back["a"], value["a"])
    assert back["a"].dtype == value["a"].dtype and np.signbit(back["a"][1, 1])
    for key in ("b", "f"):
        assert type(back[key]) is type(value[key]) and back[key] == value[key]
    assert back["c"] == value["c"] and type(back["c"][1]) is np.int32
    assert back["d"] == value["d"] and back["__type__"] == 1.0
    assert back["e"].dtype == np.uint64 and back["e"][0] == 2**63 + 5
    with pytest.raises(TypeError, match="Generator"):
        to_data(np.random.default_rng(0))


def test_a_sampling_state_is_rebuilt_on_the_live_step():
    """PyMC's dataclass state goes field by field (frozen settings left out) and comes
    back as the step's own classes; a state of another step class is refused."""
    (_m, (_label, slice_step)), (_m2, (_binary, metropolis)) = pymc_steps()
    data = json.loads(json.dumps(sampling_state_to_data(metropolis.sampling_state)))
    assert "mode" not in data and "discrete" not in data  # frozen
    rebuilt = sampling_state_from_data(data, metropolis.sampling_state)
    assert type(rebuilt) is type(metropolis.sampling_state)
    metropolis.sampling_state = rebuilt
    with pytest.raises(ValueError, match="fields"):
        sampling_state_from_data(data, slice_step.sampling_state)


PICKLERS = {"pickle", "cloudpickle", "dill", "marshal", "shelve", "base64"}


def picklers_imported(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & PICKLERS


def test_no_module_storing_step_state_imports_a_pickler():
    """Every module that hands a step's state to a trace (it defines ``chain_state``),
    the trace store and the state codec; a planted import is caught."""
    assert picklers_imported("import base64\nfrom pickle import dumps\n") == {"base64", "pickle"}
    storing = [
        p
        for p in sorted((ROOT / "inference").rglob("*.py"))
        if "def chain_state" in p.read_text() or p.name in ("trace_store.py", "step_state.py")
    ]
    assert len(storing) >= 5
    offenders = {str(p.relative_to(ROOT)): picklers_imported(p.read_text()) for p in storing}
    assert not {k: v for k, v in offenders.items() if v}, offenders
