"""Every kind of run writes the common keys of manifest.json and summary.json (docs/run-store.md)
with one meaning each: one run of each kind, made the quickest way its own tests make it."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import iowatt
from support.cli import iowatt as cli
from support.cli import manifest, runs_in, summary
from support.tool_output import FILEBENCH_15, run_fio

MANIFEST_KEYS = [
    "run_id",
    "kind",
    "status",
    "reason",
    "iowatt_version",
    "started_ns",
    "ended_ns",
    "clock_anchor",
    "seed",
    "labels",
    "config",
    "host",
]
SUMMARY_KEYS = ["run_id", "kind", "status", "reason"]
TINY = ("--runtime", "0.1s", "--filesize", "1m", "--quiet", "--no-report")
SWEEP = (
    "sweep --stimulus frequency --steps 300 --allow-boot-disk --size 1m --driver cmd"
    " --settle 0.1s --hold 0.2s --iosize 64k --no-report"
)

Make = Callable[[pytest.CaptureFixture[str], Path, Path], None]


def _ok(capsys: pytest.CaptureFixture[str], words: str, *args: str | Path) -> None:
    """Runs ``iowatt`` with ``words`` (split at spaces), then ``args``; it must succeed."""
    r = cli(capsys, *words.split(), *args)
    assert r.code == 0, r.err


def _target(tmp_path: Path) -> Path:
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    return target


def bench(capsys, tmp_path, results):
    target = _target(tmp_path)
    _ok(capsys, "bench randomread --label env=lab", *TINY, "--target", target, "--results", results)


def campaign(capsys, tmp_path, results):
    plan = tmp_path / "c.toml"
    plan.write_text(
        'name = "kinds"\nrepetitions = 1\n[defaults]\nruntime = "0.1s"\nfilesize = "1m"\n'
        '[[workload]]\nrun = "randomread"\n[[env]]\nname = "a"\n'
    )
    target = _target(tmp_path)
    _ok(capsys, "campaign --no-report -q", plan, "--target", target, "--results", results)


def fleet(capsys, tmp_path, results):
    target = _target(tmp_path)
    words = "bench randomread --cluster local:1"
    _ok(capsys, words, *TINY, "--target", target, "--results", results)


def sweep(capsys, tmp_path, results):
    target = _target(tmp_path)
    _ok(capsys, SWEEP, "--disk", target, "--set", "true {value}", "--results", results)
    # A step that fails ends the sweep: its run is written incomplete, with the reason.
    failing = ("--disk", target, "--set", "false {value}", "--results", results)
    r = cli(capsys, *SWEEP.split(), *failing)
    assert r.code != 0 and "`false 300` exited with 1" in r.err, r.err


def replay(capsys, tmp_path, results):
    log = tmp_path / "web.log"
    _ok(capsys, "trace generate --duration 1m --rate 2 --seed 1 -q -o", log)
    with _http_server(tmp_path) as url:
        words = "replay --speedup 300 --no-report -q"
        _ok(capsys, words, log, "--target", url, "--results", results)


def import_fio(capsys, tmp_path, results):
    out = run_fio(
        tmp_path, "json+", "randread", extra=("--runtime=200ms", "--time_based"), size="1m"
    )
    _ok(capsys, "import", out, "--results", results)


def import_filebench(capsys, tmp_path, results):
    text = tmp_path / "rw-run1.txt"
    text.write_text(FILEBENCH_15)
    _ok(capsys, "import", text, "--workload", "randomrw8k", "--results", results)


def power(capsys, tmp_path, results):
    words = "power record --no-report --hz 50 --results"
    _ok(capsys, words, results, "--source", "cmd:command=echo 5", "--", "sleep", "0.3")
    # A meter log imported afterwards rewrites the summary: its common keys stay.
    (run,) = runs_in(results)
    start = manifest(run)["started_ns"] / 1e9
    log, table = tmp_path / "wall.csv", tmp_path / "wall.toml"
    table.write_text('[watts]\nwall = "W"\n')
    log.write_text("time,W\n" + "".join(f"{start + i / 20:.3f},230\n" for i in range(40)))
    meter = f"meter:name=wall,path={log},map={table}"
    _ok(capsys, "power import", run, "--source", meter, "--results", results)
    assert "wall/wall" in summary(run)["power"]["work"]


def sim_server(capsys, tmp_path, results):
    _ok(capsys, "sim server --workloads W4 --policies DLB --no-report --json --results", results)


def sim_raid(capsys, tmp_path, results):
    log = tmp_path / "day.log"
    _ok(capsys, "trace generate --duration 1h --rate 0.5 -q -o", log)
    _ok(capsys, "sim raid --personalities raid0 --no-report --json", log, "--results", results)


def sim_tasks(capsys, tmp_path, results):
    _ok(capsys, "sim tasks io --disk hdd --per-core 1 --json --results", results)


def sim_grid(capsys, tmp_path, results):
    grid = "--grid node.ht_gain=0,0.5 --cluster local:1"
    _ok(capsys, f"sim tasks io --disk hdd --per-core 1 {grid} --json --results", results)


def tasks(capsys, tmp_path, results):
    plan, data = tmp_path / "set.toml", tmp_path / "data"
    plan.write_text(
        '[types.nap]\ncommand = "true"\n[sets]\nnaps = { repeat = 1, tasks = ["nap"] }\n'
    )
    data.mkdir()
    words = "tasks --per-core 1 --cores 1 --json --quiet"
    _ok(capsys, words, plan, "--data", f"hdd={data}", "--results", results)


@contextmanager
def _http_server(tmp_path: Path) -> Iterator[str]:
    """A loopback server answering every request of the log (404s: the tree is empty)."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


slow = pytest.mark.slow


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (bench, "bench"),
        pytest.param(campaign, "bench", marks=slow),
        pytest.param(fleet, "bench", marks=slow),
        pytest.param(sweep, "sweep", marks=slow),
        (replay, "replay"),
        (import_fio, "import"),
        (import_filebench, "import"),
        (power, "power"),
        (sim_server, "sim-server"),
        (sim_raid, "sim-raid"),
        (sim_tasks, "sim-tasks"),
        pytest.param(sim_grid, "sim-grid", marks=slow),
        pytest.param(tasks, "tasks", marks=slow),
    ],
    ids=lambda v: v.__name__ if callable(v) else None,
)
def test_every_kind_of_run_writes_the_common_keys_with_one_meaning(
    make: Make, kind: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    before = time.time_ns()
    make(capsys, tmp_path, results)
    runs = runs_in(results)
    assert runs
    for run in runs:
        m, s = manifest(run), summary(run)
        assert list(m)[: len(MANIFEST_KEYS)] == MANIFEST_KEYS, run
        assert (m["run_id"], m["kind"]) == (run.name, kind)
        assert m["status"] in ("complete", "incomplete")
        assert (m["reason"] is None) == (m["status"] == "complete")
        assert m["reason"] is None or (isinstance(m["reason"], str) and m["reason"])
        assert m["iowatt_version"] == iowatt.__version__
        started, ended = m["started_ns"], m["ended_ns"]
        assert _is_int(started) and _is_int(ended) and started <= ended
        # An import's run ended when its file says; every other kind ran in this test.
        assert kind == "import" or before <= started <= ended <= time.time_ns()
        anchor = m["clock_anchor"]
        assert anchor is None or (len(anchor) == 2 and all(_is_int(t) for t in anchor))
        assert m["seed"] is None or _is_int(m["seed"])
        assert isinstance(m["labels"], dict)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in m["labels"].items())
        assert isinstance(m["host"], dict) and isinstance(m["config"], dict)
        assert list(s)[: len(SUMMARY_KEYS)] == SUMMARY_KEYS, run
        assert {k: s[k] for k in SUMMARY_KEYS} == {k: m[k] for k in SUMMARY_KEYS}
    if kind == "sweep":
        assert sorted(manifest(r)["status"] for r in runs) == ["complete", "incomplete"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
