"""Parsing and formatting of the units users type and read (sizes in powers of 1024, durations).

Parsing is done by the Rust core (one implementation for every engine); this module adds the
option name to the error. Formatting keeps three significant digits; wherever a rounded value is
shown, the exact one stays available (``--json``, ``data-ns`` attributes in reports).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from iowatt.errors import ConfigError

# The largest size iowatt accepts anywhere: the engine keeps sizes in u64 and file offsets in
# i64, and adds sizes up (a fileset's bytes, offsets plus an I/O); 4 EiB is beyond any device
# and leaves that arithmetic room.
MAX_SIZE = 1 << 62
MAX_SIZE_TEXT = "4 EiB (2^62 bytes)"
# The longest duration: the engine adds runtimes to a u64 nanosecond clock, and no measurement
# outlasts a year.
MAX_DURATION_S = 366 * 86400.0
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1


def parse_size(text: str | int, option: str = "size") -> int:
    """Bytes in ``text`` (``8k``, ``10g``), from 0 to :data:`MAX_SIZE`; a ConfigError naming
    ``option`` and the value if it does not parse or is out of range."""
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise ConfigError(f"{option} `{text}` is not a size", "e.g. 8k, 256m or 10g")
    if isinstance(text, int):
        n = text
    else:
        from iowatt import _engine  # the extension is only needed to parse, not to format

        try:
            n = _engine.parse_size(text)
        except ConfigError as e:
            raise ConfigError(f"{option}: {e.message}", e.hint) from None
    if n < 0:
        raise ConfigError(f"{option} `{text}` is negative", "sizes are 0 or more, e.g. 8k")
    if n > MAX_SIZE:
        raise ConfigError(
            f"{option} `{text}` is larger than {MAX_SIZE_TEXT}, the largest size iowatt takes",
            "give a size a device can hold, e.g. 10g or 2t",
        )
    return n


def parse_positive_size(text: str | int, option: str, example: str) -> int:
    """A size of at least one byte (an I/O, a file)."""
    n = parse_size(text, option)
    if n == 0:
        raise ConfigError(f"{option} `{text}` must be at least one byte", f"e.g. {example}")
    return n


def parse_duration(text: str | float, option: str = "duration") -> float:
    """Seconds in ``text`` (``500ms``, ``3s``, ``2m``; a bare number is seconds), from 0 to
    :data:`MAX_DURATION_S`."""
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ConfigError(f"{option} `{text}` is not a duration", "e.g. 500ms, 30s or 2m")
    if isinstance(text, int | float):
        seconds = float(text)
        if not seconds >= 0:  # NaN too
            raise ConfigError(f"{option} `{text}` must be 0 or more seconds", "e.g. 30s")
    else:
        from iowatt import _engine

        try:
            seconds = _engine.parse_duration_ns(text) / 1e9
        except ConfigError as e:
            raise ConfigError(f"{option}: {e.message}", e.hint) from None
    if seconds > MAX_DURATION_S:
        raise ConfigError(
            f"{option} `{text}` is longer than a year, the longest duration iowatt takes",
            "e.g. 30s, 10m or 24h",
        )
    return seconds


def check_finite(value: object, option: str, example: str) -> float:
    """``value`` as a float when it is a finite number (not NaN, not infinite, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{option} `{value}` is not a number", f"e.g. {example}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{option} `{value}` is not a finite number", f"e.g. {example}")
    try:
        return float(value)
    except OverflowError:  # an int beyond any float
        raise ConfigError(f"{option} `{value}` is out of range", f"e.g. {example}") from None


def check_int(value: object, option: str, lo: int, hi: int, example: str) -> int:
    """``value`` when it is a whole number from ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{option} `{value}` is not a whole number", f"e.g. {example}")
    if not lo <= value <= hi:
        bound = f"at least {lo:,}" if value < lo else f"at most {hi:,}"
        raise ConfigError(f"{option} `{value}` must be {bound}", f"e.g. {example}")
    return value


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


def format_offset(offset_ns: int, delay_ns: int) -> str:
    """A clock offset with its uncertainty, half the round trip it was measured over:
    ``+0.055 ± 0.528 ms``."""
    return f"{offset_ns / 1e6:+.3f} ± {delay_ns / 2e6:.3f} ms"


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
    return f"0 {unit}"  # a value that rounds to nothing has no sign: "-0 J" reads as a fault


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


# The most items a list option expands to: beyond any sweep or replication a user means.
MAX_LIST_ITEMS = 100_000
_RANGE_HINT = "e.g. W1..W10, 1,2,3, 1..4 or 0.5..2:0.5"


def _split_name(text: str) -> tuple[str, str]:
    """``W10`` → (``W``, ``10``): a name's text before its trailing digits, and the digits."""
    i = len(text)
    while i > 0 and text[i - 1].isdigit():
        i -= 1
    return text[:i], text[i:]


def _number(text: str) -> Any:
    """``text`` as a finite Decimal, or None when it is not a number."""
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _check_count(count: int, item: str, option: str) -> None:
    if count > MAX_LIST_ITEMS:
        raise ConfigError(
            f"{option} `{item}` has more than {MAX_LIST_ITEMS:,} items",
            "give a shorter range or a larger step",
        )


def _expand(item: str, option: str) -> list[str]:
    """``A..B[:STEP]``: numbers from A to B, or names with the same text before their numbers."""
    first, _, rest = item.partition("..")
    last, colon, step_text = rest.partition(":")
    first, last = first.strip(), last.strip()
    a, b = _number(first), _number(last)
    if a is not None and b is not None:
        step = _number(step_text.strip()) if colon else _number("1")
        if step is None or step <= 0:
            raise ConfigError(
                f"{option} `{item}` has step `{step_text.strip()}`, not a number above 0",
                "e.g. 0..100:10",
            )
        if b < a:
            raise ConfigError(f"{option} `{item}` runs backwards", f"e.g. {last}..{first}")
        count = int((b - a) / step) + 1
        _check_count(count, item, option)
        # Decimal arithmetic: 0.1 steps land on 0.3, not 0.30000000000000004.
        values = (a + step * i for i in range(count))
        return [str(v.normalize()) if v % 1 else str(int(v)) for v in values]
    (head, lo_digits), (tail, hi_digits) = _split_name(first), _split_name(last)
    if colon or not head or head != tail or not lo_digits or not hi_digits:
        raise ConfigError(
            f"{option} `{item}` is not a range: numbers, or names with the same text before "
            "their numbers",
            _RANGE_HINT,
        )
    lo, hi = int(lo_digits), int(hi_digits)
    if hi < lo:
        raise ConfigError(f"{option} `{item}` runs backwards", f"e.g. {last}..{first}")
    _check_count(hi - lo + 1, item, option)
    return [f"{head}{i}" for i in range(lo, hi + 1)]


def parse_list(text: str, option: str) -> list[str]:
    """The items of a list option, every simulator's ``--workloads``, ``--seed``, ``--policies``
    and the like: comma-separated items, each a name, a number, or a range — ``W1..W10`` (the
    same text, then numbers), ``1..4`` (whole steps) or ``a..b:step`` — expanded in order,
    repeats dropped. A ConfigError naming the option and the item otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{option} is empty", _RANGE_HINT)
    out: dict[str, None] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ConfigError(f"{option} `{text}` has an empty item", _RANGE_HINT)
        for value in _expand(item, option) if ".." in item else [item]:
            out[value] = None
        _check_count(len(out), text, option)
    return list(out)


MAX_SEED = 2**63 - 1


def parse_seeds(seed: str, seeds: int | None) -> list[int]:
    """The simulators' ``--seed LIST`` and ``--seeds N`` (that many seeds from the one
    ``--seed``), as seeds."""
    chosen = parse_int_list(seed, "--seed", 0, MAX_SEED)
    if seeds is None:
        return chosen
    check_int(seeds, "--seeds", 1, 1000, "--seeds 5")
    if len(chosen) != 1:
        raise ConfigError("--seeds takes one --seed to count from", "e.g. --seed 1 --seeds 5")
    return [chosen[0] + i for i in range(seeds)]


def parse_int_list(text: str, option: str, lo: int, hi: int) -> list[int]:
    """:func:`parse_list` of whole numbers from ``lo`` to ``hi`` (seeds, counts)."""
    out = []
    for item in parse_list(text, option):
        try:
            value = int(item)
        except ValueError:
            raise ConfigError(f"{option} `{item}` is not a whole number", "e.g. 1..5") from None
        out.append(check_int(value, option, lo, hi, "1..5"))
    return out
