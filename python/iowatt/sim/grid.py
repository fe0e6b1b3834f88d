"""``--grid KEY=A..B:STEP``: a simulator's model parameters swept over a grid.

KEY is a dotted path into the simulator's model file (server.toml, node.toml, raid.toml; the
RAID simulator also takes ``disk.FIELD`` for its disk model and ``disks``), and must name a
number there. Values are ``A..B:STEP`` (A, A + STEP, … up to B, both ends included when STEP
lands on B) or a list ``V1,V2,…``. Several ``--grid`` options make the grid of every
combination. Each point is the model with its values put in, simulated on its own.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from iowatt.errors import ConfigError

MAX_POINTS = 10_000
_RANGE = re.compile(r"^\s*([^.][^:]*?)\s*\.\.\s*([^:]+?)\s*:\s*(\S+)\s*$")
_EXAMPLE = "e.g. --grid node.ht_gain=0..0.5:0.1 or --grid lru.timeout_s=5,10,30"


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple[float, ...]


def parse_grid(texts: Sequence[str], model: Mapping[str, Any]) -> list[Axis]:
    """The grid's axes, each key checked against ``model`` (it must name a number there)."""
    axes: list[Axis] = []
    for text in texts:
        key, sep, spec = text.partition("=")
        key = key.strip()
        if not sep or not key or not spec.strip():
            raise ConfigError(f"--grid `{text}` is not KEY=A..B:STEP or KEY=V1,V2", _EXAMPLE)
        _check_key(key, model)
        if any(a.key == key for a in axes):
            raise ConfigError(f"--grid `{key}` is given twice", "give each key one --grid")
        axes.append(Axis(key, _values(text, spec)))
    total = math.prod(len(a.values) for a in axes)
    if total > MAX_POINTS:
        raise ConfigError(
            f"--grid: {total:,} points is more than {MAX_POINTS:,}",
            "use larger steps or fewer keys",
        )
    return axes


def _number(text: str, whole: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ConfigError(f"--grid `{whole}`: `{text.strip()}` is not a number", _EXAMPLE) from None
    if not value.is_finite():
        raise ConfigError(f"--grid `{whole}`: `{text.strip()}` is not a finite number", _EXAMPLE)
    return value


def _values(text: str, spec: str) -> tuple[float, ...]:
    m = _RANGE.match(spec)
    if m is None:
        # Decimal steps, so 0..0.5:0.1 gives 0.3, not 0.30000000000000004.
        return tuple(float(_number(v, text)) for v in spec.split(","))
    start, stop, step = (_number(g, text) for g in m.groups())
    if step <= 0:
        raise ConfigError(f"--grid `{text}`: the step must be above zero", _EXAMPLE)
    if stop < start:
        raise ConfigError(f"--grid `{text}`: the range runs backwards", "write it A..B with A ≤ B")
    count = int((stop - start) / step) + 1
    if count > MAX_POINTS:
        raise ConfigError(f"--grid `{text}` has {count:,} values", "use a larger step")
    return tuple(float(start + i * step) for i in range(count))


def _check_key(key: str, model: Mapping[str, Any]) -> None:
    node: Any = model
    walked: list[str] = []
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            here = ".".join(walked)
            known = ", ".join(f"`{k}`" for k in node) if isinstance(node, Mapping) else "none"
            raise ConfigError(
                f"--grid `{key}`: the model has no `{part}`" + (f" under `{here}`" if here else ""),
                f"keys there are {known}",
            )
        walked.append(part)
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ConfigError(
            f"--grid `{key}` is not a number in the model (it is {node!r})",
            "a grid varies numbers; --model changes the rest",
        )


def points(axes: Sequence[Axis]) -> list[dict[str, float]]:
    """Every combination, the last axis varying fastest."""
    return [
        dict(zip([a.key for a in axes], combo, strict=True))
        for combo in itertools.product(*(a.values for a in axes))
    ]


def with_values(model: Mapping[str, Any], point: Mapping[str, float]) -> dict[str, Any]:
    """A copy of ``model`` with the point's values in place (an integer stays an integer when
    the value is whole)."""
    out = copy.deepcopy(dict(model))
    for key, value in point.items():
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node[part]
        node[last] = int(value) if isinstance(node[last], int) and value == int(value) else value
    return out
