"""What every bench/ script shares so that CI can run it in seconds and read its result: the
``--smoke`` flag, the peer lookup that lets a script go on without its peer, the ``ratio:``
lines the runner (``smoke.py``) looks for, the alternating order of the tools, and the medians,
ratios and plain text tables they print.

A smoke run proves the script still works end to end, not that a figure is right: it uses sizes
small enough to finish in seconds, so its ratios are not to be quoted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar

T = TypeVar("T")

RATIO_PREFIX = "ratio: "
_UNSET = object()


def fail(message: str, hint: str) -> NoReturn:
    """One refusal on stderr, exit 2, as iowatt's own CLI refuses bad input."""
    print(f"error: {message}", file=sys.stderr)
    print(f"hint: {hint}", file=sys.stderr)
    raise SystemExit(2)


def parse(
    parser: argparse.ArgumentParser,
    small: dict[str, Any],
    argv: Sequence[str] | None = None,
    narrow: dict[str, Any] | None = None,
) -> argparse.Namespace:
    """Parse with a ``--smoke`` flag that sets each option of ``small`` (by dest) to its value,
    and each of ``narrow`` unless it was given.

    An option of ``small`` given together with ``--smoke`` is refused rather than silently
    replaced, so nobody reads a smoke figure as the size they asked for; ``narrow`` is for
    choices (which targets, which jobs) a smoke run may keep.
    """
    parser.add_argument(
        "--smoke", action="store_true", help="seconds, small sizes: a check that it runs, for CI"
    )
    args = parser.parse_args(argv)
    if not args.smoke:
        return args
    # Parsing again with the defaults set to a marker finds what was given on the command line,
    # abbreviations and --opt=value included.
    narrow = narrow or {}
    saved = {dest: parser.get_default(dest) for dest in (*small, *narrow)}
    parser.set_defaults(**dict.fromkeys(saved, _UNSET))
    given = parser.parse_args(argv)
    parser.set_defaults(**saved)
    for dest, value in narrow.items():
        if getattr(given, dest) is _UNSET:
            setattr(args, dest, value)
    for dest, value in small.items():
        if getattr(given, dest) is not _UNSET:
            option = _option_of(parser, dest)
            fail(
                f"`--smoke` sets `{option}` itself; `{option} {getattr(given, dest)}` conflicts",
                f"drop `{option}` for a smoke run, or drop `--smoke` for a measured one",
            )
        setattr(args, dest, value)
    return args


def _option_of(parser: argparse.ArgumentParser, dest: str) -> str:
    for action in parser._actions:
        if action.dest == dest and action.option_strings:
            return max(action.option_strings, key=len)
    return dest


def peer(name: str, path: str | Path | None = None) -> str | None:
    """The peer's executable, or None after printing ``peer missing: NAME``.

    A named ``path`` must be an executable file: a wrong path is a mistake to point out, not a
    missing peer to skip.
    """
    if path is not None:
        p = Path(path)
        if not (p.is_file() and os.access(p, os.X_OK)):
            fail(
                f"`{path}` is not an executable file ({name})",
                f"pass the {name} binary itself, e.g. PREFIX/bin/{name}",
            )
        return str(p)
    found = shutil.which(name)
    if found is None:
        print(f"peer missing: {name}", flush=True)
    return found


def python_peer(module: str) -> bool:
    """Whether a Python package the script compares with imports; says so when it does not."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        print(f"peer missing: {module}", flush=True)
        return False
    return True


def ratio_line(
    label: str,
    value: float | None,
    goal: str,
    missing: str | None = None,
    file: TextIO | None = None,
) -> None:
    """Print ``ratio: LABEL = VALUE (goal GOAL)``; the runner requires one per script.

    ``missing`` names the peer whose absence leaves no value; any other absent value prints
    ``n/a (no figure)``, which the runner counts as a failure.
    """
    if value is not None:
        shown = f"{value:.3g}"
    elif missing is not None:
        shown = f"n/a (peer missing: {missing})"
    else:
        shown = "n/a (no figure)"
    print(f"{RATIO_PREFIX}{label} = {shown} (goal {goal})", file=file or sys.stdout, flush=True)


def alternate(rep: int, sides: Sequence[T]) -> list[T]:
    """The sides in the order of repeat ``rep``: as given on even repeats, reversed on odd, so
    a slow drift of the machine favours neither tool."""
    return list(sides) if rep % 2 == 0 else list(reversed(sides))


def timed_runs(
    commands: dict[str, str],
    runs: int,
    warmup: int,
    tool: str | None,
    shell: bool = False,
    after_round: Callable[[], None] | None = None,
) -> dict[str, list[float]]:
    """Each command's wall times in seconds, one run of each per round, the order alternating
    from round to round; measured by hyperfine (``tool``) or, where it is missing, by a plain
    loop. ``shell`` runs the commands through a shell (for quoting, as awk programs need).
    ``after_round`` is called after each round, untimed: a command that overwrites its own
    output file can have each round's copy read there (warm-up runs come before the timed run,
    so the file holds the timed run's)."""
    import json
    import subprocess
    import tempfile
    import time

    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="iowatt-bench-times-") as tmp:
        out = Path(tmp) / "hyperfine.json"
        for rnd in range(runs):
            names = alternate(rnd, list(commands))
            if tool is not None:
                args = [tool, "--runs", "1", "--export-json", str(out)]
                args += ["--warmup", str(warmup if rnd == 0 else 0), *([] if shell else ["-N"])]
                for name in names:
                    args += ["--command-name", name, commands[name]]
                subprocess.run(args, check=True, stdout=sys.stderr)
                for r in json.loads(out.read_text())["results"]:
                    times[r["command"]] += r["times"]
            else:
                for name in names:
                    cmd: str | list[str] = commands[name] if shell else commands[name].split()
                    for n in range((warmup if rnd == 0 else 0) + 1):
                        t = time.perf_counter()
                        subprocess.run(cmd, shell=shell, check=True, stdout=subprocess.DEVNULL)
                        if n == (warmup if rnd == 0 else 0):
                            times[name].append(time.perf_counter() - t)
            if after_round is not None:
                after_round()
    return times


# The plain text tables and figures of the side-by-side scripts.


def median_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


def fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def render_table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths).rstrip())
    return lines


def service_time(m: dict[str, Any]) -> Callable[[int, int, int, float], float]:
    """A disk model's request charge (crates/iowatt-sim/src/disk/model.rs `charge`), ported for
    the SimPy peers: seconds for `nbytes` at byte `to` with the head at `head`, `rotation` the
    share of a turn waited; the model's constants read once."""
    cap = int(m["capacity_gb"] * 1e9)
    overhead, revolution = m["overhead_ms"] / 1e3, 60.0 / m["rpm"] if m["rpm"] else 0.0
    track, avg, full = m["seek_track_ms"] / 1e3, m["seek_avg_ms"] / 1e3, m["seek_full_ms"] / 1e3
    outer, inner = m["outer_mb_s"] * 1e6, m["inner_mb_s"] * 1e6

    def service_s(head: int, to: int, nbytes: int, rotation: float) -> float:
        x = min(abs(head - to) / cap, 1.0)
        if x == 0.0:
            seek = 0.0
        elif x <= 1.0 / 3.0:
            seek = track + (avg - track) * math.sqrt(3.0 * x)
        else:
            seek = avg + (full - avg) * (x - 1.0 / 3.0) * 1.5
        rate = outer + (inner - outer) * min(to / cap, 1.0)
        return overhead + seek + rotation * revolution + nbytes / rate

    return service_s


def tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def busy_jiffies() -> tuple[int, int] | None:
    """(busy, all) CPU jiffies of the whole machine from /proc/stat, None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guests are in user)
    return total - fields[3] - fields[4], total


@contextmanager
def mounted(
    iowatt: str,
    backing: Path,
    mount: Path,
    results: Path,
    *args: str,
    failed: Callable[[str], NoReturn],
    ready_s: float = 120.0,
) -> Iterator[dict[str, Path]]:
    """``iowatt emulate mount BACKING MOUNT ARGS`` until the block ends; then the run
    directory it wrote is in the yielded dict's ``run``. A mount not ready within ``ready_s``
    (an array walks BACKING first) or ending badly is handed to ``failed`` with what it said."""
    proc = subprocess.Popen(
        [iowatt, "emulate", "mount", str(backing), str(mount), "--results", str(results),
         "--no-report", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + ready_s
    while not any("mounted at" in line for line in err):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            reader.join(5)
            failed(f"`iowatt emulate mount` did not mount: {''.join(err).strip()}")
        time.sleep(0.02)
    out: dict[str, Path] = {}
    try:
        yield out
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=300)
        reader.join(5)
        found = re.search(r"^run: (.+)$", stdout, re.MULTILINE)
        if proc.returncode != 0 or found is None:
            failed(f"`iowatt emulate mount` ended with {proc.returncode}: {''.join(err).strip()}")
        out["run"] = Path(found.group(1))
