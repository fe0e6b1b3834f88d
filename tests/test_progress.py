"""The progress bars every long verb draws: a bench's show where a run stopped, never more;
a row shows its amount in its unit; a log gets whole lines; --quiet draws nothing."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from iowatt.bench import Options, plan
from iowatt.cli.progress import BYTES, Bars, RichReporter
from support.cli import iowatt


def _finish(tmp_path, status: str, measured_s: float) -> tuple[float, float, str]:
    (wl,) = plan("randomread", Options(runtime="10s", ramp="2s"), results=tmp_path).workloads
    out = io.StringIO()
    reporter = RichReporter(Console(file=out, width=120, force_terminal=False))
    reporter.workload_started(wl)
    summary = {
        "status": status,
        "runtime_s": measured_s,
        "ops_s": 1000.0,
        "mib_s": 7.8,
        "latency_ns": {"p99": 120_000},
    }
    reporter.workload_finished(wl, summary)
    reporter.close()
    (task,) = reporter.bars.tasks
    return task.completed, task.total or 0.0, out.getvalue()


def test_a_finished_run_fills_its_bar(tmp_path):
    completed, total, _ = _finish(tmp_path, "complete", 10.0)
    assert completed == total == 12.0


def test_an_interrupted_run_leaves_its_bar_where_it_stopped(tmp_path):
    completed, total, text = _finish(tmp_path, "cancelled", 3.0)
    assert (completed, total) == (5.0, 12.0)
    assert "42%" in text and "cancelled after 3.0 s" in text
    completed, _, _ = _finish(tmp_path, "cancelled", 0.0)
    assert completed == 0.0, "stopped in the ramp or the layout: nothing measured"


# --- the one progress module every long verb draws with ---------------------------------------


def _drawn(rows: list[tuple[str, float | None, str | None, float]]) -> str:
    """What the rows write to a log (stderr not a terminal), each moved to its count."""
    out = io.StringIO()
    with Bars(console=Console(file=out, width=160, force_terminal=False)) as bars:
        for label, total, unit, done in rows:
            bars.bar(label, total, unit).update(done, live=f"{label} live")
    return out.getvalue()


def test_a_row_shows_its_amount_in_its_unit():
    text = _drawn(
        [
            ("percent", 12.0, None, 5.0),
            ("sizes", 4 << 30, BYTES, 1 << 30),
            ("counted", 5000, "lines", 1234),
            ("open-ended", None, "entries", 77),
        ]
    )
    lines = text.splitlines()
    assert len(lines) == 4, text
    assert "percent" in lines[0] and " 42%" in lines[0] and "percent live" in lines[0]
    assert "1 GiB/4 GiB" in lines[1]
    assert "1,234/5,000 lines" in lines[2]
    assert "77 entries" in lines[3]


def test_a_log_gets_each_row_once_in_its_final_state_and_no_control_codes():
    out = io.StringIO()
    with Bars(console=Console(file=out, width=160, force_terminal=False)) as bars:
        row = bars.bar("writing", 3, unit="lines")
        for _ in range(3):
            row.advance()
        bars.note("a line above the rows that is long enough to be folded at eighty columns " * 2)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    note, final = text.splitlines()
    assert note.startswith("a line above") and "3/3 lines" in final
    assert "lines/s" in final, "a finished row keeps its rate"


def test_quiet_draws_nothing_and_a_verb_refused_before_its_first_count_draws_nothing(capsys):
    with Bars(quiet=True) as bars:
        bars.bar("writing", 10, unit="lines").update(5)
        bars.note("said even so")
    out = io.StringIO()
    with Bars(console=Console(file=out, force_terminal=True)) as bars:
        bars.bar("replay", 10)
    assert out.getvalue() == ""
    assert capsys.readouterr().err == "said even so\n"


def _tasks_set(tmp_path: Path) -> list[str]:
    s = tmp_path / "set.toml"
    s.write_text(
        '[types.ok]\ncommand = "true"\n[types.bad]\ncommand = "echo broken >&2; exit 3"\n'
        '[sets]\nmix = { tasks = ["ok", "bad", "ok"] }\n'
    )
    (tmp_path / "data").mkdir()
    data = f"hdd={tmp_path / 'data'}"
    return ["tasks", str(s), "--cores", "1", "--data", data, "--results", str(tmp_path / "r")]


def test_tasks_piped_stderr_is_whole_lines_with_the_bar_once(capsys, monkeypatch, tmp_path):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    r = iowatt(capsys, *_tasks_set(tmp_path))
    assert r.code == 0, r.err
    assert "\r" not in r.err and "\x1b" not in r.err
    lines = r.err.splitlines()
    assert lines[0] == "mix on hdd, k=1, rep 1: 3 tasks, 1 × cores in flight"
    assert lines[1] == "  task 1 (bad): failed: broken"
    assert lines[2].startswith("running") and "3/3 tasks" in lines[2]
    assert lines[3].startswith("mix on hdd, k=1, rep 1: 2/3 tasks in ")


def _on_a_terminal(argv: list[str]) -> str:
    """What ``iowatt ARGV`` draws on stderr when stderr is a terminal (stdout a pipe)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(TERM="xterm", COLUMNS="120")
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from iowatt.cli import entry; entry()", *argv],
        stdout=subprocess.PIPE,
        stderr=child,
        env=env,
    )
    os.close(child)
    drawn = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    proc.communicate(timeout=60)
    assert proc.returncode == 0, drawn
    return drawn.decode()


@pytest.mark.slow
def test_tasks_draws_a_bar_on_a_terminal_and_nothing_under_quiet(tmp_path):
    argv = _tasks_set(tmp_path)
    drawn = _on_a_terminal(argv)
    assert "━" in drawn and "3/3 tasks" in drawn and "\r" in drawn
    assert "task 1 (bad): failed: broken" in drawn
    # Under --quiet no bar and no notes; a warning still shows, as every verb's does (other
    # load on a busy test machine, say).
    quiet = _on_a_terminal([*argv, "--quiet", "--no-resume"])
    assert all(line.startswith("warning: ") for line in quiet.splitlines()), quiet
