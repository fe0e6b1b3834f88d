"""FileBench's random variables as the engine's ``SizeDist``.

Two kinds exist (``fb_cvar.c`` with ``cvars/``, and ``fb_random.c``):

- ``cvar(type=cvar-gamma,parameters=mean:M;gamma:S)``: gamma with mean M and shape S (defaults
  4096 and 1.5); ``cvar-uniform`` takes ``lower:A;upper:B`` (defaults 0 and 1). ``round``
  rounds the draws to the nearest multiple, then ``min``/``max`` clamp them.
- ``randvar(type=gamma|uniform|tabular, mean=, gamma=, min=, round=, randtable=...)``: the shape
  ``gamma`` is in thousandths (1500 is 1.5, the default); a gamma draw is ``min`` plus a gamma
  with mean ``mean - min``, and a gamma without ``mean`` has mean ``gamma / 1000``. A uniform
  draw lies in [min, 2 * mean - min]. A table row ``{pct, lo, hi}`` is picked with probability
  pct % and a value drawn uniformly in it; the whole table is then rescaled linearly so that its
  lowest value maps to ``min`` and its mean to ``mean`` (the table's own mean by default).

The engine draws fixed, gamma (mean, shape), uniform and tabular sizes, rounded and clamped
(``bounded``); the other cvar types (erlang, exponential, lognormal, normal, triangular,
weibull) become tables of :data:`QUANTILE_PIECES` equally likely pieces between quantiles.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from iowatt.units import MAX_SIZE

# FileBench's cvars/ libraries with their parameters and defaults (cvars/cvar-*.c).
_CVAR_PARAMS = {
    "cvar-gamma": {"mean": 4096.0, "gamma": 1.5},
    "cvar-uniform": {"lower": 0.0, "upper": 1.0},
    "cvar-erlang": {"shape": 1.0, "rate": 1.0},  # `rate` is the mean (rds_erlang)
    "cvar-exponential": {"mean": 1.0},
    "cvar-lognormal": {"shape": 1.0, "scale": 1.0},  # exp(Normal(scale, shape))
    "cvar-normal": {"mean": 0.0, "sigma": 1.0},
    "cvar-triangular": {"lower": 0.0, "upper": 1.0, "mode": 0.5},
    "cvar-weibull": {"shape": 1.0, "scale": 1.0},
}
CVAR_TYPES = tuple(_CVAR_PARAMS)
# The engine draws the other cvar types from this many equally likely pieces of the
# distribution, each uniform between two of its quantiles.
QUANTILE_PIECES = 256
# Where the first and last pieces are cut: the distributions with infinite tails.
_TAIL = 1e-4
_RANDVAR_TYPES = ("gamma", "uniform", "tabular")


class DistError(Exception):
    """A random variable FileBench itself would refuse."""

    def __init__(self, what: str, hint: str | None = None) -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


@dataclass(frozen=True)
class Dist:
    """A random size: the engine's ``SizeDist`` JSON."""

    spec: dict[str, Any]
    mean: float
    top: int  # the largest size to plan buffers for (the max, or 4x a gamma's mean)
    line: int = 0  # where the variable is defined
    text: str = ""  # as written, e.g. "cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)"


def fixed(n: int) -> dict[str, Any]:
    return {"fixed": n}


def _gamma(mean: float, shape: float, minimum: int = 0) -> Dist:
    """``minimum`` plus a gamma draw of ``mean`` (a randvar's ``min`` shifts it)."""
    if minimum + mean > MAX_SIZE:
        raise DistError(f"a gamma mean of {minimum + mean:g} bytes is beyond 2^62 bytes")
    top = min(MAX_SIZE, max(512, math.ceil((minimum + mean * 4) / 512) * 512))
    spec = {"gamma": {"mean": float(mean), "shape": float(shape), "min": minimum}}
    return Dist(spec, minimum + mean, top)


def _uniform(lo: int, hi: int) -> Dist:
    if hi > MAX_SIZE:
        raise DistError(f"a uniform size up to {hi:,} bytes is beyond 2^62 bytes")
    return Dist({"uniform": {"min": lo, "max": hi}}, (lo + hi) / 2, hi)


def bounded(d: Dist, round_to: int, lo: int | None = None, hi: int | None = None) -> Dist:
    """``d``'s draws rounded to the nearest multiple of ``round_to`` (0: not rounded), then
    clamped to [lo, hi]."""
    if not round_to and lo is None and hi is None:
        return d
    lo_, hi_ = lo or 0, MAX_SIZE if hi is None else hi
    if lo_ > hi_:
        raise DistError(f"min {lo_:,} is above max {hi_:,}")
    spec = {"bounded": {"of": d.spec, "round": round_to, "min": lo_, "max": hi_}}
    mean = min(max(d.mean, lo_), hi_)
    return Dist(spec, mean, max(lo_, min(hi_, d.top + round_to)))


def cvar(kind: str, parameters: str | None, bounds: dict[str, int], round_to: int) -> Dist:
    """A ``cvar(...)``; ``bounds`` holds the ``min``/``max`` given."""
    if kind not in CVAR_TYPES:
        known = ", ".join(CVAR_TYPES)
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
    if kind == "cvar-gamma":
        if params["gamma"] <= 0 or params["mean"] < 0:
            raise DistError("cvar-gamma needs gamma > 0 and mean >= 0")
        d = _gamma(params["mean"], params["gamma"])
    elif kind == "cvar-uniform":
        lo, hi = params["lower"], params["upper"]
        if lo > hi or lo < 0:
            raise DistError(
                f"cvar-uniform needs 0 <= lower <= upper, not lower {lo:g}, upper {hi:g}"
            )
        d = _uniform(round(lo), round(hi))
    else:
        d = _quantiles(_inverse_cdf(kind, params))
    return bounded(d, round_to, bounds.get("min"), bounds.get("max"))


def _inverse_cdf(kind: str, p: dict[str, float]) -> Callable[[float], float]:
    """The quantile function of one of FileBench's other cvar types."""
    if kind == "cvar-exponential":
        _positive(kind, p, "mean")
        return lambda q: -p["mean"] * math.log1p(-q)
    if kind == "cvar-erlang":
        _positive(kind, p, "shape", "rate")
        order = max(1, round(p["shape"]))
        return lambda q: _erlang_quantile(q, order, p["rate"] / order)
    if kind == "cvar-lognormal":
        _positive(kind, p, "shape")
        normal = NormalDist(p["scale"], p["shape"])
        return lambda q: math.exp(min(normal.inv_cdf(q), 700.0))
    if kind == "cvar-normal":
        _positive(kind, p, "sigma")
        return NormalDist(p["mean"], p["sigma"]).inv_cdf
    if kind == "cvar-weibull":
        _positive(kind, p, "shape", "scale")
        return lambda q: p["scale"] * (-math.log1p(-q)) ** (1 / p["shape"])
    lo, hi, mode = p["lower"], p["upper"], p["mode"]
    if not lo <= mode <= hi or lo == hi:
        raise DistError("cvar-triangular needs lower <= mode <= upper and lower < upper")
    cut = (mode - lo) / (hi - lo)
    return lambda q: (
        lo + math.sqrt(q * (hi - lo) * (mode - lo))
        if q < cut
        else hi - math.sqrt((1 - q) * (hi - lo) * (hi - mode))
    )


def _positive(kind: str, p: dict[str, float], *keys: str) -> None:
    for k in keys:
        if p[k] <= 0:
            raise DistError(f"{kind} needs {k} > 0, not {p[k]:g}")


def _erlang_quantile(q: float, order: int, scale: float) -> float:
    """Where the Erlang(order, scale) CDF reaches q, by bisection (it has no closed form)."""

    def cdf(x: float) -> float:
        t = x / scale
        term, total = 1.0, 1.0
        for n in range(1, order):
            term *= t / n
            total += term
        return 1.0 - math.exp(-t) * total

    lo, hi = 0.0, scale * order
    while cdf(hi) < q:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def _quantiles(inverse: Callable[[float], float]) -> Dist:
    """A distribution as :data:`QUANTILE_PIECES` equally likely rows of a table, each uniform
    between consecutive quantiles (negative values, which are no size, at 0)."""
    cuts = [_TAIL + (1 - 2 * _TAIL) * i / QUANTILE_PIECES for i in range(QUANTILE_PIECES + 1)]
    values = [min(MAX_SIZE, max(0, round(inverse(q)))) for q in cuts]
    weight = 100 / QUANTILE_PIECES
    rows = [[weight, lo, hi] for lo, hi in itertools.pairwise(values)]
    mean = sum((lo + hi) / 2 for _, lo, hi in rows) / len(rows)
    return Dist({"tabular": rows}, mean, max(values))


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
    return bounded(_randvar(kind, mean, gamma, minimum, table), round_to)


def _randvar(
    kind: str | None,
    mean: int | None,
    gamma: int | None,
    minimum: int,
    table: list[tuple[int, int, int]] | None,
) -> Dist:
    if table is not None or kind == "tabular":
        if table is None:
            raise DistError("a tabular randvar needs randtable={{percent, min, max}, ...}")
        if kind not in (None, "tabular"):
            raise DistError(f"a randtable makes the randvar tabular, not `{kind}`")
        return _tabular(table, mean, minimum)
    if kind == "uniform":
        top = 2 * (mean or 0) - minimum
        if top < minimum:
            raise DistError(
                f"a uniform randvar needs mean >= min, not mean {mean or 0}, min {minimum}"
            )
        return _uniform(minimum, top)
    shape = (1500 if gamma is None else gamma) / 1000
    if shape <= 0:
        raise DistError("a gamma randvar needs gamma > 0 (in thousandths: 1500 is 1.5)")
    center: float = shape if mean is None else mean
    if center < minimum:
        raise DistError(f"a gamma randvar needs mean >= min, not mean {center:g}, min {minimum}")
    return _gamma(center - minimum, shape, minimum)


def _tabular(table: list[tuple[int, int, int]], mean: int | None, minimum: int) -> Dist:
    total = sum(pct for pct, _, _ in table)
    if total != 100 or any(pct < 0 for pct, _, _ in table):
        raise DistError(f"randtable percentages must add up to 100, not {total}")
    if any(lo > hi for _, lo, hi in table):
        raise DistError("each randtable row needs {percent, min, max} with min <= max")
    table_mean = sum(pct * (lo + hi) / 2 for pct, lo, hi in table) / 100
    table_min = min(lo for _, lo, _ in table)
    target = float(mean) if mean else table_mean
    if table_mean == table_min:  # FileBench's "really a constant value"
        return Dist(fixed(minimum), minimum, minimum)
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
    return Dist({"tabular": rows}, target, top)


def mean_of(spec: dict[str, Any]) -> float:
    """The mean of a ``SizeDist`` JSON value (as the engine's ``SizeDist::mean``)."""
    if "fixed" in spec:
        return float(spec["fixed"])
    if "gamma" in spec:
        return float(spec["gamma"]["mean"])
    if "uniform" in spec:
        return (spec["uniform"]["min"] + spec["uniform"]["max"]) / 2
    if "bounded" in spec:
        b = spec["bounded"]
        return float(min(max(mean_of(b["of"]), b["min"]), b["max"]))
    rows = spec["tabular"]
    total = sum(r[0] for r in rows)
    return sum(r[0] / total * (r[1] + r[2]) / 2 for r in rows)
