"""Parsing and formatting of the units users type and read (sizes in powers of 1024, durations).

Parsing is done by the Rust core (one implementation for every engine); this module adds the
option name to the error. Formatting keeps three significant digits; wherever a rounded value is
shown, the exact one stays available (``--json``, ``data-ns`` attributes in reports).
"""

from __future__ import annotations

from collections.abc import Iterable

from iowatt.errors import ConfigError


def parse_size(text: str | int, option: str = "size") -> int:
    """Bytes in ``text`` (``8k``, ``10g``); a ConfigError naming ``option`` if it does not parse."""
    if isinstance(text, int):
        return text
    from iowatt import _engine  # the extension is only needed to parse, not to format

    try:
        return _engine.parse_size(text)
    except ConfigError as e:
        raise ConfigError(f"{option}: {e.message}", e.hint) from None


def parse_duration(text: str | float, option: str = "duration") -> float:
    """Seconds in ``text`` (``500ms``, ``3s``, ``2m``; a bare number is seconds)."""
    if isinstance(text, int | float):
        return float(text)
    from iowatt import _engine

    try:
        return _engine.parse_duration_ns(text) / 1e9
    except ConfigError as e:
        raise ConfigError(f"{option}: {e.message}", e.hint) from None


def parse_thresholds(text: str, option: str = "--slow") -> list[int]:
    """Latency thresholds in ns from ``100ms,200ms`` (sorted, distinct, each above zero)."""
    out = set()
    for item in text.split(","):
        ns = round(parse_duration(item.strip(), option) * 1e9)
        if ns <= 0:
            raise ConfigError(f"{option} `{item.strip()}` must be above zero", "e.g. 100ms,200ms")
        out.add(ns)
    return sorted(out)


# Largest unit first: a value takes the first unit it reaches once rounded.
_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
_BYTE_UNITS = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))


def _three_digits(value: float) -> str:
    """``value`` at three significant digits without an exponent or trailing zeros."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_ns(ns: float) -> str:
    """A latency in ns as ``850 ns``, ``12.3 µs``, ``4.56 ms`` or ``1.2 s``."""
    # Round first, so 999,950 ns reads "1 ms" rather than "1e+03 µs".
    rounded = float(f"{ns:.3g}")
    for scale, unit in _TIME_UNITS:
        if rounded >= scale:
            return f"{_three_digits(rounded / scale)} {unit}"
    return f"{_three_digits(rounded)} ns"


def format_duration(seconds: float) -> str:
    """A run or phase length: ``3 s``, ``2.5 s``, ``12 min 5 s``, ``2 h 3 min``."""
    if seconds < 60:
        return f"{_three_digits(seconds)} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    return f"{minutes // 60} h {minutes % 60} min"


def format_bytes(n: float) -> str:
    """A size in bytes with binary prefixes, e.g. ``62.7 GiB``."""
    for scale, unit in _BYTE_UNITS:
        if n >= scale:
            return f"{_three_digits(n / scale)} {unit}"
    return f"{_three_digits(n)} B"


def format_rate(value: float) -> str:
    """A rate (ops/s, MiB/s): whole numbers with separators, small ones to three digits."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_watts(watts: float | None) -> str:
    """A power, e.g. ``12.3 W``, ``1.2 kW``, ``850 mW``; ``–`` when unknown."""
    return _si(watts, "W")


def format_joules(joules: float | None) -> str:
    """An energy, e.g. ``1.25 kJ``, ``350 J``, ``12.3 mJ``; ``–`` when unknown."""
    return _si(joules, "J")


def _si(value: float | None, unit: str) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    sign, x = ("-", -value) if value < 0 else ("", value)
    for scale, prefix in ((1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ")):
        if float(f"{x:.3g}") >= scale:
            return f"{sign}{_three_digits(x / scale)} {prefix}{unit}"
    return f"{sign}0 {unit}"


def parse_pairs(items: Iterable[str], option: str, example: str) -> dict[str, str]:
    """``("env=rack", ...)`` → ``{"env": "rack"}``: KEY=VALUE options (labels, ``--set``); a
    ConfigError naming the malformed entry."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise ConfigError(f"{option} `{item}` is not KEY=VALUE", f"e.g. {example}")
        out[key] = value.strip()
    return out


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``--label KEY=VALUE`` options."""
    return parse_pairs(items, "--label", "--label env=rack-a")
