"""Ctrl-C and SIGTERM: the run stops promptly, is written as incomplete, and test files go."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.wait import wait_for


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "bench", "randomread",
           "--runtime", "60s", "--filesize", "16m", "--target", str(target),
           "--results", str(results), "--quiet"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, target, results


def _wait_until_running(target: Path, proc: subprocess.Popen[str]) -> None:
    def laid_out() -> bool:
        files = list(target.glob("iowatt-*/largefile1"))
        return bool(files) and files[0].stat().st_size == 16 << 20

    wait_for(laid_out, proc, what="the run to lay out its file")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_a_signal_stops_the_run_and_keeps_what_was_measured(tmp_path, sig, code):
    proc, target, results = _start(tmp_path)
    _wait_until_running(target, proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    stopped_after = time.monotonic() - sent
    assert proc.returncode == code, err
    assert "interrupted" in err and "Traceback" not in err
    assert stopped_after < 5, f"took {stopped_after:.1f} s to stop"
    (run_dir,) = [p.parent for p in results.glob("*/manifest.json")]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["status"], manifest["reason"]) == ("incomplete", "interrupted")
    workload = json.loads((run_dir / "summary.json").read_text())["workloads"]["randomread"]
    assert workload["ops"] > 0 and 0 < workload["runtime_s"] < 60
    assert list(target.iterdir()) == [], "test files are removed"
