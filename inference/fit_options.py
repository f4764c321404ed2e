"""What ``inference.fit`` accepts in ``**method_kwargs``, checked before anything compiles.

The MCMC methods pass these options to ``pm.sample`` and the ADVI method to
``pm.fit`` / ``Inference.fit``; both would reject an unknown option, a ``var_names``
or ``initvals`` naming no variable, only after compiling the model (or with a bare
``AssertionError``). :func:`check_method_options` reads what each method takes from
those functions' signatures and raises first. :func:`pop_step_options` moves the options
of the steps PyMC would assign (``target_accept``, ``nuts={...}``, ``step_kwargs``) to
:func:`inference.gibbs.assignment.assign_steps`, because ``fit`` builds every step itself.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence

import pymc as pm

from pp_models.validation import check_real

__all__ = ["check_method_options", "known_options", "pop_step_options"]


#: Options of ``pm.sample`` that ``fit`` sets itself (its own arguments).
_FIT_OWNED = frozenset({"draws", "tune", "chains", "cores", "random_seed", "progressbar",
                        "step", "model", "trace"})
#: ``fit``'s own ADVI options (:func:`inference.advi.fit_advi`); the rest go to
#: ``Inference.fit``.
_ADVI_OPTIONS = frozenset({"n", "learning_rate", "fullrank", "obj_optimizer"})


def known_options(chosen: str) -> set[str]:
    """The ``**method_kwargs`` names that ``chosen`` passes on and understands."""
    if chosen == "advi":
        from pymc.variational.inference import Inference
        from pymc.variational.opvi import ObjectiveFunction

        known = set(_ADVI_OPTIONS)
        for function in (Inference.fit, ObjectiveFunction.step_function):
            known.update(p.name for p in inspect.signature(function).parameters.values()
                         if p.kind is not p.VAR_KEYWORD)
        return known - {"self"}
    from pymc.step_methods import STEP_METHODS

    known = {p.name for p in inspect.signature(pm.sample).parameters.values()
             if p.kind is not p.VAR_KEYWORD}
    # pm.sample's **kwargs: target_accept, and per-step-method options by step name
    known |= {"target_accept", "step_kwargs"}
    known |= {getattr(m, "name", "") for m in STEP_METHODS}
    return known - _FIT_OWNED


def check_method_options(model: pm.Model, chosen: str, kwargs: dict) -> dict:
    """Check ``fit``'s ``**method_kwargs`` for ``model`` and the method ``chosen``.

    Parameters
    ----------
    model : pymc.Model
    chosen : str
        The resolved method (``"gibbs"``, ``"nuts"`` or ``"advi"``).
    kwargs : dict
        The options as the user passed them.

    Returns
    -------
    dict
        A copy, with ``var_names`` given as one string turned into a list of it (PyMC
        would read the string as a sequence of names).

    Raises
    ------
    TypeError, ValueError
        An option ``chosen`` does not take (with the closest known name), a
        ``target_accept`` outside (0, 1), ``var_names`` or ``initvals`` naming no variable
        of ``model``; PyMC would raise these only after compiling, or assert.
    """
    known = known_options(chosen)
    for key in kwargs:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = ("ADVI options (n, learning_rate, fullrank, obj_optimizer, callbacks, "
                     "pm.fit options)" if chosen == "advi" else
                     "pm.sample options, target_accept, or step options by step name such "
                     "as nuts={...}")
            raise TypeError(f"fit got an unknown option {key!r} for method={chosen!r}{hint}; "
                            f"it takes {where}")
    kwargs = dict(kwargs)
    target_accept = kwargs.get("target_accept")
    if target_accept is not None:
        # PyMC takes any value; NUTS then adapts its step size towards an impossible rate
        kwargs["target_accept"] = check_real(target_accept, "target_accept", above=0.0,
                                             below=1.0)
    traced = [rv.name for rv in model.unobserved_RVs]
    var_names = kwargs.get("var_names")
    if isinstance(var_names, str):
        # PyMC would read a string as a sequence and keep variables named by its substrings
        var_names = kwargs["var_names"] = [var_names]
    if var_names is not None:
        if not isinstance(var_names, Sequence) or not all(isinstance(v, str) for v in var_names):
            raise TypeError(f"var_names must be a list of variable names, got {var_names!r}")
        unknown = [v for v in var_names if v not in traced]
        if unknown:
            raise ValueError(f"var_names: {', '.join(map(repr, unknown))} not in the model; "
                             f"its variables are {', '.join(traced)}")
    initvals = kwargs.get("initvals")
    if initvals is not None:
        settable = {rv.name for rv in model.free_RVs} | {v.name for v in model.value_vars}
        per_chain = [initvals] if isinstance(initvals, dict) else initvals
        if not isinstance(per_chain, Sequence) or not all(
                d is None or isinstance(d, dict) for d in per_chain):
            raise TypeError("initvals must be a dict {variable name: value} or a list of "
                            f"them (one per chain), got {type(initvals).__name__}")
        for d in per_chain:
            unknown = sorted(set(d or ()) - settable)
            if unknown:
                raise ValueError(f"initvals: {', '.join(map(repr, unknown))} not in the "
                                 "model; its free variables are "
                                 f"{', '.join(rv.name for rv in model.free_RVs)}")
    return kwargs


def pop_step_options(kwargs: dict) -> dict | None:
    """Pop the options of the steps PyMC assigns out of ``kwargs``: ``step_kwargs``,
    ``target_accept`` and options by step name (``nuts={...}``).

    ``pm.sample`` applies these only to the steps it assigns itself; ``fit`` hands it
    every step already built, so they must reach :func:`assign_steps` instead (PyMC
    would reject them as options for no step).
    """
    from pymc.step_methods import STEP_METHODS

    options = {name: dict(values) for name, values in (kwargs.pop("step_kwargs", None)
                                                         or {}).items()}
    for name in {getattr(m, "name", None) for m in STEP_METHODS} & set(kwargs):
        options.setdefault(name, {}).update(kwargs.pop(name))
    if "target_accept" in kwargs:
        options.setdefault("nuts", {})["target_accept"] = kwargs.pop("target_accept")
    return options or None
