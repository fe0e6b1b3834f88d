"""What a sweep steps: the stimulus kind, its unit, and the values of every pass.

Three kinds, after the server vibration study (docs/sweep.md): ``fan`` duty cycle in % of PWM,
random-vibration ``amplitude`` in g RMS within a named frequency band (``--band 20-800``), and
sine ``frequency`` in Hz at a fixed amplitude (``--amplitude 0.17``), stepped down to 1 Hz.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iowatt.errors import ConfigError

KINDS = ("fan", "amplitude", "frequency")
UNITS = {"fan": "%", "amplitude": "grms", "frequency": "Hz"}
ORDERS = ("as-given", "up", "down", "alternate")
# The most steps a sweep takes, all passes together: at the shortest settle and hold that
# measure anything (a few seconds each) that is already days of running. Counted before any
# list of values is built.
MAX_STEPS = 10_000
_BAND = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*(?:hz)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Stimulus:
    """The stimulus of one sweep; ``band`` only for amplitude, ``amplitude_g`` for frequency."""

    kind: str
    band: str | None = None
    amplitude_g: float | None = None

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    def describe(self, value: float) -> str:
        """``fan 60 %``, ``0.63 grms (20-800 Hz)``, ``230 Hz at 0.17 g``."""
        v = f"{value:g}"
        if self.kind == "fan":
            return f"fan {v} %"
        if self.kind == "amplitude":
            return f"{v} grms ({self.band} Hz)" if self.band else f"{v} grms"
        at = f" at {self.amplitude_g:g} g" if self.amplitude_g is not None else ""
        return f"{v} Hz{at}"

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "unit": self.unit,
            "band": self.band,
            "amplitude_g": self.amplitude_g,
        }


def make_stimulus(kind: str, band: str | None, amplitude_g: float | None) -> Stimulus:
    """Checks the options that belong to each kind."""
    if kind not in KINDS:
        raise ConfigError(f"unknown stimulus `{kind}`", f"stimuli are: {', '.join(KINDS)}")
    if band is not None and kind != "amplitude":
        raise ConfigError("--band belongs to an amplitude sweep", "drop --band")
    if amplitude_g is not None and kind != "frequency":
        raise ConfigError("--amplitude belongs to a frequency sweep", "drop --amplitude")
    if band is not None:
        normal = normalize_band(band)
        if normal is None:
            raise ConfigError(f"--band `{band}` is not a frequency band", "e.g. --band 20-800")
        band = normal
    if amplitude_g is not None and not 0 < amplitude_g < math.inf:
        raise ConfigError(f"--amplitude `{amplitude_g:g}` must be positive", "e.g. 0.17 (g)")
    return Stimulus(kind, band, amplitude_g)


def normalize_band(band: str) -> str | None:
    """``20-800``, ``20 - 800 Hz`` → ``20-800``; ``None`` when ``band`` is not a band."""
    m = _BAND.match(band)
    if not m or not 0 < float(m[1]) < float(m[2]):
        return None
    return f"{float(m[1]):g}-{float(m[2]):g}"


def step_values(
    start: float | None, stop: float | None, step: float | None, listed: str | None
) -> list[float]:
    """The values of one pass: ``--from/--to/--step`` (both ends included) or ``--steps a,b,c``."""
    if listed is not None:
        if start is not None or stop is not None or step is not None:
            raise ConfigError("give --steps or --from/--to/--step, not both", "drop one of them")
        return _listed(listed)
    if start is None or stop is None or step is None:
        raise ConfigError(
            "a sweep needs --from, --to and --step", "e.g. --from 100 --to 0 --step 10"
        )
    for option, value in (("--from", start), ("--to", stop), ("--step", step)):
        _finite(value, option, "e.g. --from 100 --to 0 --step 10")
    if not step > 0:
        raise ConfigError(
            f"--step `{step:g}` must be positive", "e.g. --step 10 (also when going down)"
        )
    count = abs(stop - start) / step
    if count + 1 > MAX_STEPS:
        raise ConfigError(
            f"--step {step:g} from {start:g} to {stop:g} makes {_count(count + 1)} steps, more "
            f"than {MAX_STEPS:,}",
            f"use a larger --step, e.g. --step {abs(stop - start) / 10:g} for 11 steps",
        )
    if not math.isclose(count, round(count), abs_tol=1e-9):
        raise ConfigError(
            f"--step {step:g} does not divide the range {start:g} to {stop:g}",
            f"choose a step that divides {abs(stop - start):g}, or list values with --steps",
        )
    sign = 1 if stop >= start else -1
    return [round(start + sign * i * step, 9) for i in range(round(count) + 1)]


def _listed(listed: str) -> list[float]:
    items = [v for v in listed.split(",") if v.strip()]
    if len(items) > MAX_STEPS:
        raise ConfigError(
            f"--steps lists {len(items):,} values, more than {MAX_STEPS:,}", "list fewer values"
        )
    values = []
    for item in items:
        try:
            values.append(_finite(float(item), "--steps", "e.g. --steps 100,80,50"))
        except ValueError:
            raise ConfigError(
                f"--steps `{listed}` is not a list of numbers: `{item.strip()}`",
                "e.g. --steps 100,80,50",
            ) from None
    if not values:
        raise ConfigError("--steps is empty", "e.g. --steps 100,80,50")
    return values


def _count(n: float) -> str:
    return f"{n:,.0f}" if n < 1e15 else f"{n:.3g}"


def _finite(value: float, option: str, hint: str) -> float:
    if not math.isfinite(value):
        raise ConfigError(f"{option} `{value}` is not a finite number", hint)
    return value


def check_range(stim: Stimulus, values: list[float]) -> None:
    """Values the stimulus can take: 0..100 % of PWM, non-negative g, positive Hz."""
    for v in values:
        if stim.kind == "fan" and not 0 <= v <= 100:
            raise ConfigError(f"fan duty `{v:g}` is outside 0..100 %", "e.g. --from 100 --to 0")
        if stim.kind == "amplitude" and v < 0:
            raise ConfigError(f"amplitude `{v:g}` grms is negative", "e.g. --from 0.1 --to 1.8")
        if stim.kind == "frequency" and not v > 0:
            raise ConfigError(f"frequency `{v:g}` Hz must be positive", "e.g. --from 20 --to 2000")


def pass_values(values: list[float], passes: int, order: str) -> list[list[float]]:
    """The values of every pass: ``as-given``, ``up``, ``down``, or ``alternate`` (as given,
    then reversed, and so on, to expose hysteresis)."""
    if order not in ORDERS:
        raise ConfigError(f"unknown --order `{order}`", f"orders are: {', '.join(ORDERS)}")
    if passes < 1:
        raise ConfigError(f"--passes `{passes}` must be at least 1", "e.g. --passes 3")
    if passes * len(values) > MAX_STEPS:
        raise ConfigError(
            f"--passes {passes:,} of {len(values):,} steps make {passes * len(values):,} steps, "
            f"more than {MAX_STEPS:,}",
            f"at most {MAX_STEPS // len(values):,} passes of these {len(values):,} steps",
        )
    if order == "up":
        values = sorted(values)
    elif order == "down":
        values = sorted(values, reverse=True)
    return [values[::-1] if order == "alternate" and p % 2 else list(values) for p in range(passes)]
