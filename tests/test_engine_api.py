"""The Python API over the engine: progress while it runs, and the GIL released."""

from __future__ import annotations

import threading

from iowatt._engine import WorkloadRun
from iowatt.bench import Options, plan


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
