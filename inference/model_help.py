"""What a family's ``--param`` options are: names, defaults and one line each, read from
the factory's signature and numpy-style docstring (``ppzoo describe NAME``)."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

__all__ = ["ModelParameter", "data_parameter", "describe_model", "factory_of",
           "model_parameters"]


@dataclass(frozen=True)
class ModelParameter:
    """One keyword of a family's factory."""

    name: str
    default: object  # inspect.Parameter.empty when required
    type: str
    description: str

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


def factory_of(entry):
    """The ``model`` factory of the family ``entry`` (a :class:`pp_models.registry.Family`)."""
    return entry.factory


def data_parameter(entry) -> str:
    """The name of the factory's data argument (its first), which ``--data`` /
    ``--dataset`` fill."""
    return next(iter(inspect.signature(factory_of(entry)).parameters))


def model_parameters(entry) -> list[ModelParameter]:
    """The factory's options a user can set with ``--param`` (its data argument, the
    first, comes from ``--data`` / ``--dataset``)."""
    factory = factory_of(entry)
    params = list(inspect.signature(factory).parameters.values())[1:]
    docs = _documented(inspect.getdoc(factory) or "")
    return [
        ModelParameter(p.name, p.default, *docs.get(p.name, ("", "")))
        for p in params
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def describe_model(entry) -> str:
    """A few lines: the family, its methods, data set and every option with its default
    (the CLI's own default, when it sets one, shown as such)."""
    lines = [f"{entry.name}: {entry.description}",
             f"  methods: {', '.join(entry.methods)}; default data set: {entry.default_dataset}",
             "  options (--param KEY=VALUE):"]
    for p in model_parameters(entry):
        if p.name in entry.defaults:
            default = f"{entry.defaults[p.name]!r} (ppzoo's default)"
        elif p.required:
            default = "required"
        else:
            default = repr(p.default)
        kind = f" : {p.type}" if p.type else ""
        lines.append(f"    {p.name}{kind} = {default}")
        if p.description:
            lines.append(f"        {p.description}")
    return "\n".join(lines)


def _documented(doc: str) -> dict[str, tuple[str, str]]:
    """``name -> (type, first line of description)`` from a numpy-style Parameters
    section."""
    match = re.search(r"^Parameters\n-+\n(.*?)(?:^\S[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
    if not match:
        return {}
    out: dict[str, tuple[str, str]] = {}
    lines = match.group(1).splitlines()
    for i, line in enumerate(lines):
        head = re.match(r"^(\w+(?:\s*,\s*\w+)*)\s*(?::\s*(.*))?$", line)
        if not head or line.startswith(" "):
            continue
        indented = i + 1 < len(lines) and lines[i + 1].startswith(" ")
        following = lines[i + 1].strip() if indented else ""
        for name in re.split(r"\s*,\s*", head.group(1)):
            out[name] = ((head.group(2) or "").strip(), following)
    return out
