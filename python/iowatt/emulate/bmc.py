"""An emulated disk whose stimulus follows a BMC's fan duty (``--at-from bmc``).

Every ``--poll`` a thread asks the BMC, through ipmitool, the duty its fans run at: read back
where the vendor has a command for it (``--vendor supermicro``: zone 0's duty), otherwise from
a fan tachometer of the SDR mapped linearly to duty (``--fan-rpm FAN1=600..10200``: 600 rpm is
0 %, 10200 rpm is 100 %). Each new value is handed to the disk (``Emulation.follow``, clamped
to the curve), which from the first one on refuses ``iowatt emulate set``. A BMC silent for
``--stale`` leaves the last value in force and says so, as an event; when it answers again, so
is that. Read only: nothing here sets a fan."""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iowatt.errors import ConfigError, IowattError, TargetError
from iowatt.power.sources import SourceSpec, parse_source
from iowatt.sweep.ipmi_fan import IPMI_TIMEOUT_S, VENDORS

SOURCES = ("bmc",)
_FAN_RPM_HINT = (
    "give the tachometer and its rpm at 0 and 100 % duty, e.g. --fan-rpm FAN1=600..10200"
)


@dataclass(frozen=True)
class FanRpm:
    """A tachometer of the SDR and the rpm it reads at 0 % and at 100 % duty."""

    sensor: str
    low: float
    high: float

    def duty(self, rpm: float) -> float:
        """The duty (%) at ``rpm``: linear between low and high, within 0..100."""
        return min(max((rpm - self.low) / (self.high - self.low) * 100, 0.0), 100.0)

    def __str__(self) -> str:
        return f"{self.sensor}={self.low:g}..{self.high:g}"


def parse_fan_rpm(text: str) -> FanRpm:
    """``SENSOR=LOW..HIGH`` (rpm at 0 % and 100 % duty), LOW below HIGH."""
    m = re.fullmatch(r"\s*([^=]*\S)\s*=\s*([^.]*?)\s*\.\.\s*(.*?)\s*", text)
    if m is None:
        raise ConfigError(f"--fan-rpm `{text}` is not SENSOR=LOW..HIGH", _FAN_RPM_HINT)
    try:
        low, high = float(m[2]), float(m[3])
    except ValueError:
        raise ConfigError(
            f"--fan-rpm `{text}`: `{m[2]}..{m[3]}` are not two rpm values", _FAN_RPM_HINT
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low >= 0):
        raise ConfigError(f"--fan-rpm `{text}`: rpm must be finite and 0 or more", _FAN_RPM_HINT)
    if not low < high:
        raise ConfigError(
            f"--fan-rpm `{text}`: the rpm at 0 % ({low:g}) is not below the rpm at 100 %"
            f" ({high:g})",
            "give LOW..HIGH with LOW below HIGH, e.g. FAN1=600..10200",
        )
    return FanRpm(m[1], low, high)


def parse_bmc(text: str) -> SourceSpec:
    """``--bmc OPTIONS`` as ``iowatt sweep`` and the ``ipmi`` power source take them."""
    bmc = parse_source(f"ipmi:{text}")
    if bmc.name == "ipmi":
        bmc.name = "bmc"
    bmc.options.setdefault("interface", "lanplus" if "host" in bmc.options else "open")
    return bmc


@dataclass(frozen=True)
class BmcFollow:
    """Where the stimulus comes from with ``--at-from bmc``: which BMC, how its duty is read,
    how often, and how long a silence is before it is said."""

    bmc: SourceSpec
    vendor: str
    poll_s: float = 1.0
    stale_s: float = 10.0
    fan_rpm: FanRpm | None = None

    def check(self) -> None:
        if self.vendor not in VENDORS:
            raise ConfigError(
                f"--vendor `{self.vendor}` is not a vendor", f"vendors: {', '.join(VENDORS)}"
            )
        for option, value in (("--poll", self.poll_s), ("--stale", self.stale_s)):
            if not (0 < value < math.inf):
                raise ConfigError(f"{option} `{value:g}s` must be above 0", "e.g. 1s and 10s")
        if self.fan_rpm is None and VENDORS[self.vendor].read_duty is None:
            raise ConfigError(
                f"--vendor {self.vendor} has no command that reads the fan duty back",
                "read it from a tachometer: --fan-rpm FAN1=LOW..HIGH (its rpm at 0 and 100 %)",
            )

    @property
    def reads(self) -> str:
        """What is asked: the vendor's read-back command or the tachometer."""
        if self.fan_rpm is not None:
            return f"tachometer {self.fan_rpm} rpm"
        read = VENDORS[self.vendor].read_duty
        assert read is not None
        return read

    def describe(self) -> dict[str, Any]:
        return {
            "bmc": self.bmc.describe()["options"],
            "vendor": self.vendor,
            "read": self.reads,
            "fan_rpm": None
            if self.fan_rpm is None
            else {
                "sensor": self.fan_rpm.sensor,
                "low": self.fan_rpm.low,
                "high": self.fan_rpm.high,
            },
            "poll_s": self.poll_s,
            "stale_s": self.stale_s,
        }


class DutyReader:
    """One reading of the BMC's duty (%) through ipmitool, within a timeout."""

    def __init__(self, follow: BmcFollow, timeout_s: float) -> None:
        from iowatt._engine import ipmitool_command

        bmc = follow.bmc
        # The connection's options are checked here (Rust, as for an ipmi power source).
        cl = ipmitool_command({"name": bmc.name, "kind": "ipmi", "hz": 1.0,
                               "ipmitool": "ipmitool", **bmc.options})  # fmt: skip
        self.prefix: list[str] = [cl["program"], *cl["args"]]
        if shutil.which(self.prefix[0]) is None:
            raise TargetError(
                f"`{self.prefix[0]}` is missing: the BMC is read through it",
                "install it: apt-get install ipmitool",
            )
        self.env = {**os.environ}
        if cl["password"] is not None:
            self.env["IPMI_PASSWORD"] = cl["password"]
        self.name: str = cl["bmc"]
        self.fan_rpm = follow.fan_rpm
        read = VENDORS[follow.vendor].read_duty
        self.args = (
            ["sensor", "reading", follow.fan_rpm.sensor]
            if follow.fan_rpm is not None
            else shlex.split(read or "")
        )
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._closed = False

    def read(self) -> float:
        """The duty now; :class:`IowattError` when the BMC does not answer or answers
        something else."""
        out = self._run()
        if self.fan_rpm is None:
            try:
                return float(int(out.split()[0], 16))
            except (IndexError, ValueError):
                raise IowattError(
                    f"{self.name} answered `{shlex.join(self.args)}` with `{out.strip()}`",
                    "this BMC may not be a Supermicro one; read a tachometer with --fan-rpm",
                ) from None
        fields = [f.strip() for f in out.split("|")]
        try:
            rpm = float(fields[1])
        except (IndexError, ValueError):
            raise IowattError(
                f"{self.name}: sensor `{self.fan_rpm.sensor}` has no reading (`{out.strip()}`)",
                "name a fan sensor of `ipmitool sdr elist full`",
            ) from None
        return self.fan_rpm.duty(rpm)

    def _run(self) -> str:
        argv = [*self.prefix, *self.args]
        with self._lock:
            if self._closed:
                raise IowattError("the BMC follower has stopped", None)
            try:
                self._proc = subprocess.Popen(
                    argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True, start_new_session=True,
                )  # fmt: skip
            except OSError as e:
                raise IowattError(f"cannot run `{argv[0]}`: {e.strerror}", None) from None
            proc = self._proc
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise IowattError(
                f"{self.name} did not answer `{shlex.join(self.args)}` within {self.timeout_s:g} s",
                None,
            ) from None
        finally:
            with self._lock:
                self._proc = None
        if proc.returncode != 0:
            last = (err.strip() or out.strip()).splitlines()[-1:] or ["no output"]
            raise IowattError(
                f"`ipmitool {shlex.join(self.args)}` exited with {proc.returncode}: {last[0]}",
                None,
            )
        return out

    def close(self) -> None:
        """Kills a reading under way; no other starts."""
        with self._lock:
            self._closed = True
            if self._proc is not None:
                self._proc.kill()


Event = dict[str, Any]  # mono_ns, source, kind, message


class Follower:
    """Polls the BMC on a thread of its own and hands each new duty to ``follow`` (the
    disk's); :meth:`check` (from the mount loop) says a silence of ``stale_s``."""

    def __init__(
        self,
        config: BmcFollow,
        follow: Callable[[float], float],
        say: Callable[[str], None],
        unit: str = "%",
    ) -> None:
        self.config, self.follow, self.say, self.unit = config, follow, say, unit
        self.reader = DutyReader(config, min(IPMI_TIMEOUT_S, max(config.stale_s, config.poll_s)))
        self.events: list[Event] = []
        self.last: float | None = None
        self.readings = 0
        self._lock = threading.Lock()
        self._last_ok = time.monotonic_ns()
        self._error: str | None = None
        self._stale = False
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._poll, name="iowatt-bmc", daemon=True)

    def start(self) -> None:
        self._last_ok = time.monotonic_ns()
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.reader.close()
        self.thread.join(timeout=5)

    def check(self) -> None:
        """Says (once per silence) that the BMC has not answered for ``stale_s``."""
        now = time.monotonic_ns()
        with self._lock:
            if self._stale or now - self._last_ok < self.config.stale_s * 1e9:
                return
            self._stale = True
            kept = "the curve's first point" if self.last is None else f"{self.last:g} {self.unit}"
            message = f"{self.reader.name} silent for {self.config.stale_s:g} s: keeping {kept}" + (
                "" if self._error is None else f" ({self._error})"
            )
            self.events.append(self._event(now, "stale", message))
        self.say(message)

    def _event(self, mono_ns: int, kind: str, message: str) -> Event:
        return {"mono_ns": mono_ns, "source": "bmc", "kind": kind, "message": message}

    def _poll(self) -> None:
        period_ns = round(self.config.poll_s * 1e9)
        due = time.monotonic_ns()
        while not self.stopped.is_set():
            try:
                duty = self.reader.read()
            except IowattError as e:
                with self._lock:
                    self._error = e.message
            else:
                self._take(duty)
            due = max(due + period_ns, time.monotonic_ns())
            if self.stopped.wait(max(due - time.monotonic_ns(), 0) / 1e9):
                return

    def _take(self, duty: float) -> None:
        now = time.monotonic_ns()
        with self._lock:
            self.readings += 1
            self._last_ok, self._error = now, None
            back = self._stale
            self._stale = False
        if back:
            message = f"{self.reader.name} answers again: {duty:g} {self.unit}"
            with self._lock:
                self.events.append(self._event(now, "answers", message))
            self.say(message)
        if duty == self.last or self.stopped.is_set():
            return
        try:
            self.follow(duty)
        except IowattError as e:
            self.say(f"the BMC's duty {duty:g} {self.unit} not followed: {e.message}")
            return
        self.last = duty
