"""The Python API over the engine: progress while it runs, and the GIL released."""

from __future__ import annotations

import json
import threading

import pytest

from iowatt._engine import WorkloadRun
from iowatt.bench import Options, filemacro, plan, run
from iowatt.errors import ConfigError
from iowatt.wml import builtin_path


@pytest.mark.slow
def test_progress_is_visible_and_python_keeps_running_during_a_run(tmp_path):
    config = plan("randomread", Options(runtime="1500ms", filesize="8m", seed=1),
                  results=tmp_path)  # fmt: skip
    (wl,) = config.workloads
    run = WorkloadRun.fileio(wl.engine_spec(tmp_path, device=False))
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    run.start()
    counter.start()
    seen = []
    while not run.wait(0.2):
        seen.append(run.progress()["ops"])
    stop.set()
    counter.join()
    assert ticks > 10_000, "a Python thread ran while the engine did"
    assert len(seen) >= 3 and seen[-1] > seen[0] > 0, seen
    result = run.result()
    assert result["status"] == "complete"
    assert sum(f["ops"] for f in result["flowops"]) > 0


def test_plan_checks_every_option_a_notebook_passes(tmp_path):
    with pytest.raises(ConfigError, match="--idle needs --power"):
        plan("randomread", Options(), results=tmp_path, idle="5s")
    with pytest.raises(ConfigError, match="unknown power source `nope`"):
        plan("randomread", Options(), results=tmp_path, power=["nope"])
    config = plan("randomread", Options(), results=tmp_path, power=["rapl"], idle="2s",
                  report=False)  # fmt: skip
    assert (config.power[0].kind, config.idle_s, config.report) == ("rapl", 2.0, False)


@pytest.mark.slow
def test_a_workload_file_is_parsed_once_per_run(tmp_path, monkeypatch):
    calls = []
    real = filemacro.parse_file

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(filemacro, "parse_file", counting)
    source = builtin_path("varmail")
    config = plan(str(source), Options(runtime="1s", sets=("nfiles=50",)), results=tmp_path,
                  target=tmp_path / "t", report=False)  # fmt: skip
    (tmp_path / "t").mkdir()
    run_dir = run(config)
    assert calls == [source]
    (wl,) = json.loads((run_dir / "manifest.json").read_text())["config"]["workloads"]
    # The filesets were moved from the planning stand-in into the run's work directory.
    assert all(fs["path"].startswith(str(tmp_path / "t")) for fs in wl["model"]["filesets"])
