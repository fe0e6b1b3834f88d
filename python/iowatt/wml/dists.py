"""FileBench's random variables as the engine's ``SizeDist``.

Two kinds exist (``fb_cvar.c`` with ``cvars/``, and ``fb_random.c``):

- ``cvar(type=cvar-gamma,parameters=mean:M;gamma:S)``: gamma with mean M and shape S (defaults
  4096 and 1.5); ``cvar-uniform`` takes ``lower:A;upper:B`` (defaults 0 and 1). ``min``/``max``
  clamp the draws and ``round`` rounds them.
- ``randvar(type=gamma|uniform|tabular, mean=, gamma=, min=, round=, randtable=...)``: the shape
  ``gamma`` is in thousandths (1500 is 1.5, the default); a gamma draw is ``min`` plus a gamma
  with mean ``mean - min``, and a gamma without ``mean`` has mean ``gamma / 1000``. A uniform
  draw lies in [min, 2 * mean - min]. A table row ``{pct, lo, hi}`` is picked with probability
  pct % and a value drawn uniformly in it; the whole table is then rescaled linearly so that its
  lowest value maps to ``min`` and its mean to ``mean`` (the table's own mean by default).

The engine draws fixed, gamma (mean, shape), uniform and tabular sizes; a variable it cannot
draw (a shifted gamma, clamped cvars, the other cvar types) becomes a :class:`Dist` with a
``problem``, reported only where it is used as a size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from iowatt.units import MAX_SIZE

CVAR_TYPES = ("cvar-gamma", "cvar-uniform")
_OTHER_CVAR_TYPES = ("cvar-erlang", "cvar-exponential", "cvar-lognormal", "cvar-normal",
                     "cvar-triangular", "cvar-weibull")  # fmt: skip
_CVAR_PARAMS = {
    "cvar-gamma": {"mean": 4096.0, "gamma": 1.5},
    "cvar-uniform": {"lower": 0.0, "upper": 1.0},
}
_RANDVAR_TYPES = ("gamma", "uniform", "tabular")
_UNSUPPORTED_HINT = "iowatt does not run this FileBench construct"


class DistError(Exception):
    """A random variable FileBench itself would refuse."""

    def __init__(self, what: str, hint: str | None = None) -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


@dataclass(frozen=True)
class Dist:
    """A random size: the engine's ``SizeDist`` JSON, or why iowatt cannot draw it."""

    spec: dict[str, Any] | None
    mean: float
    top: int  # the largest size to plan buffers for (the max, or 4x a gamma's mean)
    problem: str | None = None
    hint: str | None = None
    notes: tuple[str, ...] = field(default=())
    line: int = 0  # where the variable is defined
    text: str = ""  # as written, e.g. "cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)"


def fixed(n: int) -> dict[str, Any]:
    return {"fixed": n}


def _unsupported(what: str, hint: str = _UNSUPPORTED_HINT) -> Dist:
    return Dist(None, 0.0, 0, what, hint)


def _gamma(mean: float, shape: float, notes: tuple[str, ...], minimum: int = 0) -> Dist:
    """``minimum`` plus a gamma draw of ``mean`` (a randvar's ``min`` shifts it)."""
    if minimum + mean > MAX_SIZE:
        raise DistError(f"a gamma mean of {minimum + mean:g} bytes is beyond 2^62 bytes")
    top = min(MAX_SIZE, max(512, math.ceil((minimum + mean * 4) / 512) * 512))
    spec = {"gamma": {"mean": float(mean), "shape": float(shape), "min": minimum}}
    return Dist(spec, minimum + mean, top, notes=notes)


def _uniform(lo: int, hi: int, notes: tuple[str, ...]) -> Dist:
    if hi > MAX_SIZE:
        raise DistError(f"a uniform size up to {hi:,} bytes is beyond 2^62 bytes")
    return Dist({"uniform": {"min": lo, "max": hi}}, (lo + hi) / 2, hi, notes=notes)


def _round_note(round_to: float) -> tuple[str, ...]:
    if not round_to:
        return ()
    return (f"rounding draws to multiples of {round_to:g} is not supported; sizes are not rounded",)


def cvar(kind: str, parameters: str | None, clamps: Sequence[str], round_to: float) -> Dist:
    """A ``cvar(...)``; ``clamps`` names the ``min``/``max`` attributes given."""
    if kind in _OTHER_CVAR_TYPES:
        return _unsupported(
            f"cvar type `{kind}`", f"{_UNSUPPORTED_HINT}; it draws {' and '.join(CVAR_TYPES)}"
        )
    if kind not in CVAR_TYPES:
        known = ", ".join((*CVAR_TYPES, *_OTHER_CVAR_TYPES))
        raise DistError(f"unknown cvar type `{kind}`", f"FileBench's cvar types are {known}")
    params = dict(_CVAR_PARAMS[kind])
    for item in parameters.split(";") if parameters else []:
        key, sep, text = item.partition(":")
        if key not in params:
            raise DistError(
                f"unknown {kind} parameter `{key}`",
                f"{kind} takes {' and '.join(params)}, as in parameters="
                + ";".join(f"{k}:{v:g}" for k, v in params.items()),
            )
        try:
            params[key] = float(text) if sep else math.nan
        except ValueError:
            params[key] = math.nan
        if not math.isfinite(params[key]):
            raise DistError(
                f"{kind} parameter `{key}` needs a number, not `{text}`",
                "cvar parameters are plain numbers, without size suffixes: mean:16384",
            )
    if clamps:
        return _unsupported(f"clamping a cvar with {' and '.join(clamps)}")
    notes = _round_note(round_to)
    if kind == "cvar-gamma":
        if params["gamma"] <= 0 or params["mean"] < 0:
            raise DistError("cvar-gamma needs gamma > 0 and mean >= 0")
        return _gamma(params["mean"], params["gamma"], notes)
    lo, hi = params["lower"], params["upper"]
    if lo > hi or lo < 0:
        raise DistError(f"cvar-uniform needs 0 <= lower <= upper, not lower {lo:g}, upper {hi:g}")
    return _uniform(round(lo), round(hi), notes)


def randvar(
    kind: str | None,
    mean: int | None,
    gamma: int | None,
    minimum: int,
    round_to: int,
    table: list[tuple[int, int, int]] | None,
) -> Dist:
    """A ``randvar(...)`` (or ``define randvar``) with its attributes evaluated."""
    if kind is not None and kind not in _RANDVAR_TYPES:
        raise DistError(f"unknown randvar type `{kind}`", f"types are {', '.join(_RANDVAR_TYPES)}")
    notes = _round_note(round_to)
    if table is not None or kind == "tabular":
        if table is None:
            raise DistError("a tabular randvar needs randtable={{percent, min, max}, ...}")
        if kind not in (None, "tabular"):
            raise DistError(f"a randtable makes the randvar tabular, not `{kind}`")
        return _tabular(table, mean, minimum, notes)
    if kind == "uniform":
        top = 2 * (mean or 0) - minimum
        if top < minimum:
            raise DistError(
                f"a uniform randvar needs mean >= min, not mean {mean or 0}, min {minimum}"
            )
        return _uniform(minimum, top, notes)
    shape = (1500 if gamma is None else gamma) / 1000
    if shape <= 0:
        raise DistError("a gamma randvar needs gamma > 0 (in thousandths: 1500 is 1.5)")
    center: float = shape if mean is None else mean
    if center < minimum:
        raise DistError(f"a gamma randvar needs mean >= min, not mean {center:g}, min {minimum}")
    return _gamma(center - minimum, shape, notes, minimum)


def _tabular(
    table: list[tuple[int, int, int]], mean: int | None, minimum: int, notes: tuple[str, ...]
) -> Dist:
    total = sum(pct for pct, _, _ in table)
    if total != 100 or any(pct < 0 for pct, _, _ in table):
        raise DistError(f"randtable percentages must add up to 100, not {total}")
    if any(lo > hi for _, lo, hi in table):
        raise DistError("each randtable row needs {percent, min, max} with min <= max")
    table_mean = sum(pct * (lo + hi) / 2 for pct, lo, hi in table) / 100
    table_min = min(lo for _, lo, _ in table)
    target = float(mean) if mean else table_mean
    if table_mean == table_min:  # FileBench's "really a constant value"
        return Dist(fixed(minimum), minimum, minimum, notes=notes)
    if target < minimum:
        raise DistError(f"a tabular randvar needs mean >= min, not mean {target:g}, min {minimum}")
    scale = (target - minimum) / (table_mean - table_min)
    rows = [
        [
            float(pct),
            round(minimum + (lo - table_min) * scale),
            round(minimum + (hi - table_min) * scale),
        ]
        for pct, lo, hi in table
    ]
    top = max(int(r[2]) for r in rows if r[0] > 0)
    if top > MAX_SIZE:
        raise DistError(f"a tabular size up to {top:,} bytes is beyond 2^62 bytes")
    return Dist({"tabular": rows}, target, top, notes=notes)


def mean_of(spec: dict[str, Any]) -> float:
    """The mean of a ``SizeDist`` JSON value (as the engine's ``SizeDist::mean``)."""
    if "fixed" in spec:
        return float(spec["fixed"])
    if "gamma" in spec:
        return float(spec["gamma"]["mean"])
    if "uniform" in spec:
        return (spec["uniform"]["min"] + spec["uniform"]["max"]) / 2
    rows = spec["tabular"]
    total = sum(r[0] for r in rows)
    return sum(r[0] / total * (r[1] + r[2]) / 2 for r in rows)
