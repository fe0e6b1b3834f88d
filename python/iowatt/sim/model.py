"""The server simulator's inputs as data: the model (``server.toml``) and the jobs and workload
sets (``workloads.toml``), both shipped beside this module and overridable by a user's file.

A model file overrides values of the shipped model: a key the shipped model does not have is
refused (with its dotted path), so a typo cannot silently leave a default in place. A workload
file adds jobs and sets, or replaces those of the same name. The engine checks the values
(a negative resistance, a set naming an unknown job) and names what it refuses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.tomlfile import read_toml, tomllib

MODEL = "server.toml"
WORKLOADS = "workloads.toml"


def shipped(name: str) -> dict[str, Any]:
    """A TOML file shipped beside this module, read."""
    return tomllib.loads(resources.files("iowatt.sim").joinpath(name).read_text("utf-8"))


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "text"
    return "number"


def _same_type(base: Any, value: Any) -> bool:
    if isinstance(value, bool) or isinstance(base, bool):
        return isinstance(value, bool) and isinstance(base, bool)
    if isinstance(base, int | float):
        return isinstance(value, int | float)
    return isinstance(value, type(base))


def overlay(
    base: dict[str, Any], extra: Mapping[str, Any], path: str, source: Path, option: str
) -> None:
    for key, value in extra.items():
        where = f"{path}.{key}" if path else key
        if key not in base:
            known = ", ".join(f"`{k}`" for k in base) or "none"
            raise ConfigError(
                f"{option} `{source}` has an unknown key `{where}`",
                f"keys here are {known}; docs/sim-server.md lists every parameter",
            )
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{option} `{source}`: `{where}` must be a table",
                    "the shipped file beside iowatt.sim shows the layout",
                )
            overlay(base[key], value, where, source, option)
        else:
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(
                    f"{option} `{source}`: `{where}` = {value} is not a finite number",
                    f"the shipped value is {base[key]!r}",
                )
            if not _same_type(base[key], value):
                raise ConfigError(
                    f"{option} `{source}`: `{where}` = {value!r} is not a {_kind(base[key])}",
                    f"the shipped value is {base[key]!r}",
                )
            base[key] = value


def load_overridden(name: str, path: Path | None, option: str) -> dict[str, Any]:
    """The shipped TOML file ``name``, with the values of the file ``path`` (given as
    ``option``) over it: keys it does not have, values of another type and non-finite numbers
    refused with their dotted path."""
    data = shipped(name)
    if path is not None:
        overlay(data, read_toml(path, option), "", path, option)
    return data


def load_model(path: Path | None = None) -> dict[str, Any]:
    """The shipped server model, with the values of the TOML file ``path`` over it."""
    return load_overridden(MODEL, path, "--model")


def load_extended(
    name: str, path: Path | None, option: str, tables: tuple[str, str], what: str, kind: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two tables of the shipped file ``name`` (definitions, then sets of them), each
    extended — same names replaced — by the file ``path``'s (``what`` names it in errors,
    ``kind`` in hints)."""
    data = shipped(name)
    first, second = dict(data[tables[0]]), dict(data[tables[1]])
    if path is not None:
        extra = read_toml(path, option)
        unknown = set(extra) - set(tables)
        if unknown:
            raise ConfigError(
                f"{what} `{path}` has unknown tables {', '.join(sorted(unknown))}",
                f"{kind} has [{tables[0]}.NAME] tables and a [{tables[1]}] table",
            )
        for table, into in zip(tables, (first, second), strict=True):
            if not isinstance(extra.get(table, {}), dict):
                raise ConfigError(
                    f"{what} `{path}`: `{table}` must be a table",
                    f"e.g. [{tables[0]}.NAME] and [{tables[1]}]",
                )
            into.update(extra.get(table, {}))
    return first, second


def load_workloads(path: Path | None = None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(jobs by name, workload sets by name): the shipped ones, then the file's."""
    jobs, sets = load_extended(
        WORKLOADS, path, "--jobs", ("jobs", "workloads"), "--jobs", "a workload file"
    )
    for name, members in sets.items():
        if not (isinstance(members, list) and all(isinstance(m, str) for m in members)):
            raise ConfigError(
                f"workload `{name}` is not a list of job names", 'e.g. W1 = ["bzip2", "q1"]'
            )
    return jobs, sets
