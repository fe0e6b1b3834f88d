"""Fan duty through IPMI: vendor OEM commands sent with ipmitool, fans read back from the SDR.

Setting a fan duty is not part of the IPMI standard; each vendor has its own raw commands.
The built-in templates (``--vendor``) are the widely published ones:

- ``dell`` (iDRAC 7/8/9 era PowerEdge): ``raw 0x30 0x30 0x01 0x00`` takes manual control,
  ``raw 0x30 0x30 0x02 0xff DUTY`` sets every fan, ``raw 0x30 0x30 0x01 0x01`` gives control
  back to the firmware. There is no published way to read the mode, so the original mode is
  taken to be automatic.
- ``supermicro`` (X10 and later): ``raw 0x30 0x45 0x00`` reads the fan mode, ``raw 0x30 0x45
  0x01 0x01`` selects "full" (the mode in which zone duties hold), ``raw 0x30 0x70 0x66 0x01
  ZONE DUTY`` sets zones 0 (CPU) and 1 (peripheral); the mode read first is set back at the
  end; ``raw 0x30 0x70 0x66 0x00 0x00`` reads zone 0's duty back (``read_duty``, what
  ``iowatt emulate mount --at-from bmc`` follows). Duty is 0..100 (X9 boards used 0..255:
  give your own template there).
- ``generic``: your own ``--set`` template of ipmitool arguments (``{value}`` is the duty,
  ``{value:#04x}`` the same as a hex byte), with ``--reset`` giving control back.

Every template is ipmitool's arguments after the connection options, which come from
``--bmc`` exactly as for the ``ipmi`` power source (password in the environment or a file,
never on the command line). The safe setting is 100 % through the same set commands.
"""

from __future__ import annotations

import os
import shlex
import string
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from iowatt._engine import ipmitool_command
from iowatt.errors import ConfigError
from iowatt.power.sources import SourceSpec
from iowatt.sweep.drivers import (
    DriverError,
    GuardPlan,
    check_template,
    fill,
    retry,
    run_command,
    split_command,
)

SAFE_DUTY = 100.0
# The IPMI timeout for driver commands: ipmitool retries itself within it.
IPMI_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Vendor:
    """ipmitool argument templates; ``{value}`` is the duty in %, ``{mode}`` the mode read;
    ``read_duty`` reads back the duty the fans run at (one hex byte, %) where the vendor has a
    command for it."""

    take: list[str] = field(default_factory=list)
    set: list[str] = field(default_factory=list)
    restore: list[str] = field(default_factory=list)
    read_mode: str | None = None
    read_duty: str | None = None


VENDORS: dict[str, Vendor] = {
    "dell": Vendor(
        take=["raw 0x30 0x30 0x01 0x00"],
        set=["raw 0x30 0x30 0x02 0xff {value:#04x}"],
        restore=["raw 0x30 0x30 0x01 0x01"],
    ),
    "supermicro": Vendor(
        take=["raw 0x30 0x45 0x01 0x01"],
        set=[
            "raw 0x30 0x70 0x66 0x01 0x00 {value:#04x}",
            "raw 0x30 0x70 0x66 0x01 0x01 {value:#04x}",
        ],
        restore=["raw 0x30 0x45 0x01 {mode:#04x}"],
        read_mode="raw 0x30 0x45 0x00",
        read_duty="raw 0x30 0x70 0x66 0x00 0x00",
    ),
    "generic": Vendor(),
}


class IpmiFanDriver:
    """Fan duty over IPMI; see the module docstring."""

    name = "ipmi"

    def __init__(
        self,
        bmc: SourceSpec,
        vendor: str,
        set_template: str | None = None,
        reset: str | None = None,
        *,
        timeout_s: float = IPMI_TIMEOUT_S,
    ) -> None:
        if vendor not in VENDORS:
            raise ConfigError(
                f"unknown vendor `{vendor}`",
                f"vendors are: {', '.join(VENDORS)} (generic takes your own --set template)",
            )
        if vendor == "generic" and set_template is None:
            raise ConfigError(
                "--vendor generic needs --set with ipmitool arguments",
                "e.g. --set 'raw 0x30 0x30 0x02 0xff {value:#04x}' "
                "--reset 'raw 0x30 0x30 0x01 0x01'",
            )
        self.vendor = vendor
        self.bmc = bmc
        self.timeout_s = timeout_s
        v = VENDORS[vendor]
        self.set_argvs = (
            [check_template(set_template, "--set")]
            if set_template is not None
            else [shlex.split(t) for t in v.set]
        )
        self.take_argvs = [] if set_template is not None else [shlex.split(t) for t in v.take]
        self.restore_templates = (
            [reset] if reset is not None else ([] if set_template is not None else v.restore)
        )
        self.read_mode = None if set_template is not None else v.read_mode
        if reset is not None:
            _check_reset(reset, self.read_mode is not None)
        # The options of an ``ipmi`` source also check the connection (Rust, like the sampler).
        options = {"ipmitool": "ipmitool", **bmc.options}
        config = {"name": bmc.name, "kind": "ipmi", "hz": 1.0, **options}
        cl = ipmitool_command(config)
        self.prefix: list[str] = [cl["program"], *cl["args"]]
        self.env = {"IPMI_PASSWORD": cl["password"]} if cl["password"] is not None else {}
        self.bmc_name: str = cl["bmc"]
        self.restore_argvs: list[list[str]] = []
        self._lock = threading.Lock()
        self._safe = False

    def describe(self) -> dict[str, Any]:
        return {
            "driver": self.name,
            "vendor": self.vendor,
            "bmc": self.bmc.describe()["options"],
            "set": [shlex.join(a) for a in self.set_argvs],
            "restore": [shlex.join(a) for a in self.restore_argvs],
        }

    def sensor_sources(self) -> list[SourceSpec]:
        """The BMC's SDR (fan rpm, temperatures) and, when it has one, its DCMI power reading:
        what the fans cost is part of the curve."""
        return [SourceSpec("ipmi", self.bmc.name, self.bmc.hz, {**self.bmc.options, "sdr": True})]

    def prepare(self) -> None:
        mode = None
        if self.read_mode is not None:
            out = self._ipmitool(shlex.split(self.read_mode))
            try:
                mode = int(out.split()[0], 16)
            except (IndexError, ValueError) as e:
                raise DriverError(
                    f"{self.bmc_name} answered `{self.read_mode}` with `{out.strip()}`",
                    "this BMC may not be a Supermicro one; try --vendor generic",
                ) from e
        self.restore_argvs = [shlex.split(t.format(mode=mode)) for t in self.restore_templates]
        for argv in self.take_argvs:
            self._ipmitool(argv)

    def apply(self, value: float) -> None:
        with self._lock:
            if self._safe:
                raise DriverError("the fans are held at full speed by the watchdog", None)
            for argv in self.set_argvs:
                self._ipmitool(fill(argv, value))

    def safe(self) -> None:
        with self._lock:
            self._safe = True

            def full() -> None:
                for argv in self.take_argvs:
                    self._ipmitool(argv)
                for argv in self.set_argvs:
                    self._ipmitool(fill(argv, SAFE_DUTY))

            retry(full, f"setting the fans of {self.bmc_name} to full")

    def restore(self) -> None:
        if self._safe:
            return  # after a watchdog trip the fans stay at full; the user decides what next
        for argv in self.restore_argvs:
            retry(partial(self._ipmitool, argv), f"restoring the fan mode of {self.bmc_name}")

    def restore_hint(self) -> str:
        """The command that gives fan control back to the firmware, for messages."""
        if not self.restore_argvs:
            return "set the fans back with your vendor's command"
        return " && ".join(shlex.join([*self.prefix, *a]) for a in self.restore_argvs)

    def guard_plan(self) -> GuardPlan:
        return GuardPlan(
            restore=[[*self.prefix, *a] for a in self.restore_argvs],
            timeout_s=self.timeout_s,
            env=self.env,
        )

    def _ipmitool(self, args: list[str]) -> str:
        return run_command([*self.prefix, *args], self.timeout_s, env={**os.environ, **self.env})


def _check_reset(reset: str, reads_mode: bool) -> None:
    """A ``--reset`` is filled in with ``{mode}`` (the fan mode read at the start, for vendors
    that read one) only when the sweep ends: a template that cannot be filled is refused now."""
    hint = "give ipmitool's arguments, e.g. --reset 'raw 0x30 0x30 0x01 0x01'"
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(reset) if f is not None}
        if fields - {"mode"} or ("mode" in fields and not reads_mode):
            name = sorted(fields - {"mode"} or {"mode"})[0]
            raise ConfigError(f"--reset `{reset}` names {{{name}}}, which is not filled in", hint)
        text = reset.format(mode=0)
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
        raise ConfigError(f"--reset `{reset}` cannot be filled in: {e}", hint) from None
    split_command(text, "--reset")
