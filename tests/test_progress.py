"""The progress bars a bench draws: they show where a run stopped, never more."""

from __future__ import annotations

import io

from rich.console import Console

from iowatt.bench import Options, plan
from iowatt.cli.progress import RichReporter


def _finish(tmp_path, status: str, measured_s: float) -> tuple[float, float, str]:
    (wl,) = plan("randomread", Options(runtime="10s", ramp="2s"), results=tmp_path).workloads
    out = io.StringIO()
    reporter = RichReporter(Console(file=out, width=120, force_terminal=False))
    reporter.workload_started(wl)
    summary = {"status": status, "runtime_s": measured_s, "ops_s": 1000.0, "mib_s": 7.8,
               "latency_ns": {"p99": 120_000}}  # fmt: skip
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
