"""The guardian: a separate process that restores the stimulus if the sweep process dies.

A sweep that is killed outright (SIGKILL, the OOM killer, a crash in native code) cannot run
its own clean-up, and fans left at 10 % cook a server. So before it touches the stimulus, the
sweep starts ``python -m iowatt.sweep.guard`` in its own session (a Ctrl-C in the terminal is
for the sweep, not for it), hands it a plan on standard input, and keeps the pipe open. When
the sweep ends normally it writes ``done``; if the pipe closes without that, the sweep died:
the guardian runs the driver's restore commands (retrying while the BMC is unreachable),
removes the throttle cgroup, and commits what the sweep had journaled as an incomplete run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from iowatt import guardian
from iowatt.sweep.drivers import DriverError, GuardPlan, retry, run_command

DIED = "the sweep process died before it finished"


class Guardian(guardian.Guardian):
    """The sweep's handle on its guardian process.

    Started before the driver takes control (so it stays outside any throttle cgroup the
    driver then enters); :meth:`arm` hands it the plan once the driver knows what to undo.
    """

    def __init__(self, journal_dir: Path, report: bool) -> None:
        super().__init__(
            "iowatt.sweep.guard", str(journal_dir), *([] if report else ["--no-report"])
        )

    def arm(self, plan: GuardPlan) -> None:
        payload = asdict(plan)
        # The environment (a BMC password) goes on a line of its own: the plan may be shown in
        # messages, the pipe itself is private to the two processes.
        env = payload.pop("env")
        payload["env_names"] = sorted(env)
        self.write(json.dumps(payload))
        if env:
            self.write(json.dumps(env))


def main(argv: list[str]) -> int:
    journal, report = Path(argv[0]), "--no-report" not in argv
    lines = guardian.parent_lines()
    if lines is None:
        return 0
    ok = True
    if lines:
        plan: dict[str, Any] = json.loads(lines[0])
        if plan["env_names"] and len(lines) > 1:
            os.environ.update(json.loads(lines[1]))
        say(f"{DIED}; restoring what it changed")
        ok = restore(plan)
    if (journal / "sweep.json").exists():
        from iowatt.sweep.journal import finalize

        run_dir = finalize(journal, DIED, report=report)
        say(f"what it measured is in {run_dir}")
    return 0 if ok else 1


def restore(plan: dict[str, Any]) -> bool:
    """Runs the plan's restore commands and removals; returns whether all of them worked."""
    ok = True
    for argv in plan["restore"]:
        try:
            retry(partial(run_command, argv, plan["timeout_s"]), argv[0], plan["retry_s"])
            say(f"ran `{' '.join(argv)}`")
        except DriverError as e:
            ok = False
            say(f"FAILED: {e.message}. Restore it by hand: {' '.join(argv)}")
    for path in plan["rmdirs"]:
        _rmdir(Path(path))
    if plan.get("message"):
        say(plan["message"])
    return ok


def _rmdir(path: Path) -> None:
    # The dead sweep's cgroup empties once the kernel has reaped all its threads.
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    say(f"could not remove `{path}`; remove it with rmdir once it is empty")


def say(message: str) -> None:
    print(f"iowatt sweep guardian: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
