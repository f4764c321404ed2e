"""``ppzoo describe`` / ``ppzoo fit NAME --help``, --param key checks, FAILED advice."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import xarray as xr

from inference.cli import main
from inference.convergence import check_convergence
from inference.model_help import factory_of, model_parameters
from pp_models.registry import list_models

FAMILIES = [entry.name for entry in list_models()]


@pytest.mark.parametrize("family", FAMILIES)
def test_describe_lists_every_factory_option_with_its_default(family, capsys):
    assert main(["describe", family]) == 0
    printed = capsys.readouterr().out
    entry = next(e for e in list_models() if e.name == family)
    signature = inspect.signature(factory_of(entry))
    options = list(signature.parameters.values())[1:]
    assert options, "a family with no options to describe"
    for p in options:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        line = next((ln for ln in printed.splitlines() if ln.strip().startswith(p.name + " ")),
                    None)
        assert line is not None, f"{p.name} not listed"
        shown = (repr(entry.defaults[p.name]) if p.name in entry.defaults
                 else "required" if p.default is p.empty else repr(p.default))
        assert line.rstrip().endswith((shown, f"{shown} (ppzoo's default)")), line


def test_describe_reads_the_docstring():
    entry = next(e for e in list_models() if e.name == "finite_mixture")
    params = {p.name: p for p in model_parameters(entry)}
    assert params["weight_concentration"].type == "float"
    assert "Dirichlet" in params["weight_concentration"].description


def test_fit_name_help_shows_the_options(capsys):
    assert main(["fit", "finite_mixture", "--help"]) == 0
    printed = capsys.readouterr().out
    assert "--draws" in printed and "n_components" in printed and "weight_concentration" in printed


def test_misspelt_param_names_the_valid_keys_before_any_work(capsys, tmp_path):
    code = main(["fit", "finite_mixture", "--param", "n_component=2", "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "did you mean 'n_components'" in err
    assert "weight_concentration" in err and "feature_names" in err
    assert not (tmp_path / "out").exists()


def _posterior(values):
    return xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"x": (("chain", "draw"), values)},
        coords={"chain": np.arange(values.shape[0]), "draw": np.arange(values.shape[1])})})


def test_failed_verdict_says_which_statistic_and_what_to_try():
    rng = np.random.default_rng(0)
    apart = rng.normal(size=(4, 500)) + np.arange(4)[:, None] * 3.0  # chains disagree
    advice = check_convergence(_posterior(apart)).advice()
    assert "x: R-hat above 1.01" in advice and "--chains" in advice and "--draws" in advice

    sticky = np.cumsum(rng.normal(size=(4, 200)), axis=1) * 0.02  # slow random walks
    report = check_convergence(_posterior(sticky))
    assert not report.passed and "x:" in report.advice()

    fine = check_convergence(_posterior(rng.normal(size=(4, 1000))))
    assert fine.passed and fine.advice() == ""


def test_few_effective_draws_advise_more_draws():
    rng = np.random.default_rng(1)
    report = check_convergence(_posterior(rng.normal(size=(2, 100))))
    assert not report.passed
    advice = report.advice()
    assert "too few effective draws" in advice and "--draws" in advice
