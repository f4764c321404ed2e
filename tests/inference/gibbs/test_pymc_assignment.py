"""``pm.sample`` on a zoo model assigns the zoo's steps (inference.gibbs.pymc_assignment)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import flatten_steps

import inference.gibbs  # noqa: F401  (registers the zoo's steps with PyMC)
from inference.gibbs.assignment import assign_steps
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.pymc_assignment import ZooAssignment
from pp_models import dpm
from pp_models.datasets import load
from pp_models.model_info import get_info
from pp_models.registry import list_models

FAMILIES = [entry.name for entry in list_models()]


def _tiny_model(name):
    entry = next(e for e in list_models() if e.name == name)
    dataset = load(entry.default_dataset)
    # the 40 rows tests/inference/test_arviz_on_fits.py fits, on the same family worker:
    # the same graphs, so a cold run compiles the steps' functions once
    data = dataset.data.iloc[:40] if hasattr(dataset.data, "iloc") else dataset.data[:40]
    return entry.build(dataclasses.replace(dataset, data=data), **entry.defaults)


def _zoo_updated(steps) -> set[str]:
    return {v.name for s in steps for leaf in flatten_steps(s) if isinstance(leaf, ZooGibbsStep)
            for v in leaf.vars}


@pytest.fixture(scope="module")
def fit_assignment():
    """family -> (its tiny model, the value variables fit's assignment gives zoo steps).

    Two tests compare with fit's choice; building the steps compiles their functions,
    so each family's are built once (the comparison itself is made in each test)."""
    cache = {}

    def get(family):
        if family not in cache:
            model = _tiny_model(family)
            cache[family] = model, _zoo_updated(assign_steps(model, get_info(model), [], None))
        return cache[family]

    return get


@pytest.mark.parametrize("spelling", ["with model", "model="])
@pytest.mark.parametrize("family", FAMILIES)
def test_pymc_assignment_picks_the_zoo_steps_fit_picks(fit_assignment, family, spelling):
    # pm.sample(model=m) sets no model context: PyMC asks about the variables alone
    model, expected = fit_assignment(family)
    with model if spelling == "with model" else contextlib.nullcontext():
        _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    chosen = {v.name for v in selected.get(ZooAssignment, [])}
    assert chosen == expected
    if chosen:
        with model:
            built = ZooAssignment(vars=selected[ZooAssignment], model=model)
        assert _zoo_updated([built]) == expected


def test_pm_sample_on_dpm_separates_two_clusters():
    # The case: PyMC's Metropolis on z stayed in one cluster for 200 iterations.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-5, 1, (40, 2)), rng.normal(5, 1, (40, 2))])
    with dpm.model(X), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "only 30 draws" remarks
        dt = pm.sample(draws=30, tune=20, chains=1, random_seed=1, progressbar=False,
                       compute_convergence_checks=False)
    z = dt["posterior"]["z"].values[0, -10:]
    for row in z:
        left, right = np.bincount(row[:40]).argmax(), np.bincount(row[40:]).argmax()
        # each true cluster is (nearly all) one cluster, and not the other's
        assert left != right
        assert np.mean(row[:40] == left) >= 0.9 and np.mean(row[40:] == right) >= 0.9
        assert not np.any(row[40:] == left) and not np.any(row[:40] == right)


@pytest.mark.parametrize("family", ["dpm", "finite_mixture"])
def test_both_spellings_of_pm_sample_choose_the_same_steps(family, caplog):
    # `pm.sample(model=m)` printed "Metropolis: [z]" where `with m: pm.sample()` printed
    # the zoo's step
    model = _tiny_model(family)
    options = dict(draws=2, tune=2, chains=1, random_seed=1, progressbar=False,
                   compute_convergence_checks=False)
    logged = {}
    for spelling in ("with model", "model="):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pymc"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "only 2 draws" remarks
            if spelling == "with model":
                with model:
                    pm.sample(**options)
            else:
                pm.sample(model=model, **options)
        logged[spelling] = sorted(r.getMessage() for r in caplog.records
                                  if r.getMessage().rstrip().endswith("]"))
    assert logged["model="] == logged["with model"]
    zoo_step = {"dpm": "CRPCollapsedGibbs: [z]", "finite_mixture": "CategoricalGibbs: [z]"}
    assert zoo_step[family] in " ".join(logged["model="])
    assert not any("Metropolis" in line for line in logged["model="])


def test_user_models_are_left_to_pymc():
    with pm.Model() as model:
        pm.Categorical("c", p=[0.5, 0.5])
        pm.Normal("x")
        _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    assert ZooAssignment not in selected


@pytest.mark.parametrize("family", FAMILIES)
def test_pp_models_alone_knows_which_variables_want_a_zoo_step(fit_assignment, family):
    # pp_models' warning (no access to inference's registry) must fire for exactly the
    # variables inference would give to a zoo step: no false alarm, nothing missed.
    from pp_models.step_assignment import _wants_zoo_step

    model, zoo_values = fit_assignment(family)
    info = get_info(model)
    by_value = {v.name: rv.name for v, rv in model.values_to_rvs.items()}
    expected = {by_value[v] for v in zoo_values}
    assert {rv.name for rv in model.free_RVs if _wants_zoo_step(rv, info)} == expected


def test_pymc_step_names_match_the_registry():
    from inference.gibbs.registry import PYMC_STEPS
    from pp_models.step_assignment import PYMC_STEP_NAMES

    assert set(PYMC_STEPS) == PYMC_STEP_NAMES


_SAMPLE_WITHOUT_INFERENCE = """
import importlib.metadata as metadata
import sys, warnings
import numpy as np
import pymc as pm
from pp_models import dpm

# the installed package's entry point, controlled here: none first (a source tree whose
# metadata predates it), then the one pyproject.toml declares
PROVIDERS = []
real_entry_points = metadata.entry_points
def entry_points(**kwargs):
    if kwargs.get("group") == "pp_models.step_providers":
        return list(PROVIDERS)
    return real_entry_points(**kwargs)
metadata.entry_points = entry_points

rng = np.random.default_rng(0)
X = np.vstack([rng.normal(-5, 1, (15, 2)), rng.normal(5, 1, (15, 2))])

def sample():
    with dpm.model(X):
        return pm.sample(draws=5, tune=5, chains=1, random_seed=1, progressbar=False,
                         compute_convergence_checks=False)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):
        dt = sample()
ours = [str(w.message) for w in caught if "zoo" in str(w.message)]
print("NO_PROVIDER_INFERENCE_IMPORTED", "inference" in sys.modules)
print("NO_PROVIDER_ZOO_STEP", "split_accepted" in dt["sample_stats"])
print("ZOO_WARNINGS", len(ours))
for m in ours:
    print(m)

PROVIDERS.append(metadata.EntryPoint(
    name="zoo", value="inference.gibbs.pymc_assignment:ZooAssignment",
    group="pp_models.step_providers"))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    # the spelling without a model context first: the stand-in must find the model
    dt = pm.sample(model=dpm.model(X), draws=5, tune=5, chains=1, random_seed=1,
                   progressbar=False, compute_convergence_checks=False)
print("PROVIDER_INFERENCE_IMPORTED", "inference" in sys.modules)
print("PROVIDER_ZOO_STEP", "split_accepted" in dt["sample_stats"])
print("PROVIDER_WARNINGS", len([w for w in caught if "zoo" in str(w.message)]))
"""


def test_pm_sample_with_only_pp_models_imported():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", _SAMPLE_WITHOUT_INFERENCE],
                          capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    # no provider installed: PyMC's own steps, one warning for two calls naming the fix,
    # and pp_models never imported inference (the layering)
    assert "NO_PROVIDER_INFERENCE_IMPORTED False" in out
    assert "NO_PROVIDER_ZOO_STEP False" in out
    assert "ZOO_WARNINGS 1" in out
    assert "import inference.gibbs" in out and "inference.fit" in out and "'z'" in out
    # the entry point installed: the next model built loads the provider, so the zoo's
    # collapsed CRP step, no warning
    assert "PROVIDER_INFERENCE_IMPORTED True" in out
    assert "PROVIDER_ZOO_STEP True" in out
    assert "PROVIDER_WARNINGS 0" in out


def test_the_entry_point_names_the_provider():
    import tomllib
    from pathlib import Path

    from pp_models.step_assignment import PROVIDER_GROUP

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml")
                              .read_text())
    (value,) = pyproject["project"]["entry-points"][PROVIDER_GROUP].values()
    module, name = value.split(":")
    assert getattr(__import__(module, fromlist=[name]), name) is ZooAssignment


def test_no_warning_once_inference_has_registered_the_steps(monkeypatch):
    from pp_models import step_assignment

    monkeypatch.setattr(step_assignment, "_warned", [])
    model = _tiny_model("dpm")
    with model, warnings.catch_warnings():
        warnings.simplefilter("error")
        _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    assert step_assignment.ZooStepsNotLoaded not in STEP_METHODS
    assert ZooAssignment in selected
    assert not step_assignment._warned
