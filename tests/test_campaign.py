"""``iowatt campaign`` and ``iowatt bench --repeat``: the file, the order, a real campaign on
a throttled loop device, resuming, interruption, and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iowatt.campaign import load, schedule
from support.cli import assert_user_error, iowatt, manifest, runs_in
from support.wait import wait_for

V1_THROTTLE = Path("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device")
SMALL = """
[defaults]
runtime = "1s"
filesize = "8m"
iosize = "64k"
"""


def _file(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _envs(*names: str, extra: str = "") -> str:
    return "".join(f'\n[[env]]\nname = "{n}"\n{extra}' for n in names)


def test_interleaved_blocked_and_random_orders(tmp_path: Path) -> None:
    body = SMALL + '[[workload]]\nrun = "randomread"\n[[workload]]\nrun = "randomwrite"\n'
    body += _envs("a", "b")

    def order(kind: str) -> list[tuple[str, int, int]]:
        text = f'order = "{kind}"\nrepetitions = 3\nseed = 5\n' + body
        return [p.key for p in schedule(load(_file(tmp_path, text)))]

    interleaved = order("interleaved")
    assert [k[0] for k in interleaved] == ["a", "a", "b", "b"] * 3
    assert [k[1] for k in interleaved] == [1] * 4 + [2] * 4 + [3] * 4
    blocked = order("blocked")
    assert [k[0] for k in blocked] == ["a"] * 6 + ["b"] * 6
    shuffled = order("random")
    assert sorted(shuffled) == sorted(interleaved)
    for rep in (1, 2, 3):  # every repetition still visits each environment once
        assert sorted({k[0] for k in shuffled if k[1] == rep}) == ["a", "b"]
    assert shuffled == order("random")  # seeded


def _throttle_devno(device: Path) -> str:
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


@pytest.fixture
def throttle_reset(shm_loops: Callable[[], Path]) -> Iterator[Path]:
    """A loop device whose root-cgroup write limit is always removed afterwards."""
    if not V1_THROTTLE.exists():
        pytest.skip("needs cgroup v1 blkio (the CI machine has it)")
    device = shm_loops()
    try:
        yield device
    finally:
        V1_THROTTLE.write_text(f"{_throttle_devno(device)} 0\n")


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "throttle-campaign.toml"
CAP = 8 * 2**20  # the example's throttle, bytes/s: 128 writes of 64 KiB a second


@pytest.mark.needs_root
@pytest.mark.slow
def test_the_readme_campaign_finds_the_throttled_environment_slower_by_the_throttle(
    throttle_reset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert f"echo $IOWATT_DEVNO {CAP} > {V1_THROTTLE}" in EXAMPLE.read_text()
    results = tmp_path / "results"
    r = iowatt(capsys, "campaign", EXAMPLE, "--target", throttle_reset, "--results", results)
    assert r.code == 0, r
    assert "vs open" in r.out and "throttled" in r.out
    runs = runs_in(results)
    envs = [manifest(d)["labels"]["env"] for d in sorted(runs, key=_started)]
    assert envs == ["open", "throttled"] * 5
    assert all(manifest(d)["labels"]["campaign"] == "throttle-demo" for d in runs)
    assert (results / "campaign-throttle-demo.html").is_file()
    # The environment was torn down: no limit left on the device.
    assert _throttle_devno(throttle_reset) not in V1_THROTTLE.read_text()

    r = iowatt(capsys, "compare", "--results", results, "--control", "open", "--format", "json")
    doc = json.loads(r.out)
    (cell,) = [c for c in doc["cells"] if c["env"] == "throttled"]
    (open_cell,) = [c for c in doc["cells"] if c["env"] == "open"]
    expected_ops = CAP / (64 * 1024)
    assert cell["median"] == pytest.approx(expected_ops, rel=0.1)
    expected_pct = 100 * (expected_ops / open_cell["median"] - 1)
    assert cell["diff_pct"] == pytest.approx(expected_pct, abs=2)
    assert cell["diff_ci_high"] < 0 and cell["significant"] is True
    assert cell["p_value"] < 0.05 and cell["n"] == 5 and not cell["few_runs"]
    r = iowatt(capsys, "runs", "--results", results, "--label", "rack=metal", "--json")
    assert len(r.out.splitlines()) == 5


def _started(run_dir: Path) -> int:
    return int(manifest(run_dir)["started_ns"])


@pytest.mark.slow
def test_a_failed_setup_keeps_finished_runs_and_the_campaign_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = tmp_path / "rack-ready"
    log = tmp_path / "log"
    text = (
        'name = "resume"\nrepetitions = 2\n'
        + SMALL
        + '[[workload]]\nrun = "randomread"\n'
        + _envs(
            "quiet",
            extra=f'setup = "echo up quiet >> {log}"\nteardown = "echo down quiet >> {log}"\n',
        )
        + _envs("rack", extra=f'setup = "test -f {flag} || {{ echo no rack >&2; exit 1; }}"\n')
    )
    campaign = _file(tmp_path, text)
    results = tmp_path / "results"
    target = tmp_path / "target"
    target.mkdir()
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", results, "-q")
    assert_user_error(r, "setup of env `rack` failed (exit 1)", "no rack", "1 of 4 runs")
    assert len(runs_in(results)) == 1
    assert log.read_text().splitlines() == ["up quiet", "down quiet"]

    flag.touch()
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", results, "-q")
    assert r.code == 0, r
    assert "1 already finished: resuming" in r.err
    runs = sorted(runs_in(results), key=_started)
    assert len(runs) == 4
    keys = [(manifest(d)["labels"]["env"], manifest(d)["labels"]["rep"]) for d in runs]
    assert sorted(keys) == [("quiet", "1"), ("quiet", "2"), ("rack", "1"), ("rack", "2")]
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", results, "--dry-run")
    assert r.out.count("done") == 4 and "todo" not in r.out

    # The same name with other workloads is refused rather than mixed in.
    _file(tmp_path, text.replace('"randomread"', '"randomwrite"'))
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", results)
    assert_user_error(r, "campaign `resume`", "different plan")


@pytest.mark.slow
def test_ctrl_c_keeps_finished_runs_and_tears_the_environment_down(tmp_path: Path) -> None:
    log = tmp_path / "log"
    text = (
        'name = "stop"\nrepetitions = 3\n[defaults]\nruntime = "2s"\nfilesize = "8m"\n'
        '[[workload]]\nrun = "randomread"\n'
        + _envs("a", extra=f'setup = "echo up >> {log}"\nteardown = "echo down >> {log}"\n')
    )
    results = tmp_path / "results"
    target = tmp_path / "target"
    target.mkdir()
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "campaign",
           _file(tmp_path, text), "--target", target, "--results", results]  # fmt: skip
    proc = subprocess.Popen(
        [str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(lambda: bool(runs_in(results)) and any(target.glob("iowatt-*")), proc,
             what="the first run to be written and the second to start")  # fmt: skip
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "1 of 3 runs finished" in err or "2 of 3 runs finished" in err, err
    statuses = sorted(manifest(d)["status"] for d in runs_in(results))
    assert statuses.count("complete") >= 1 and "incomplete" in statuses
    assert log.read_text().splitlines() == ["up", "down"]


@pytest.mark.slow
def test_bench_repeat_labels_a_series_and_summarises_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = iowatt(capsys, "bench", "randomread", "--runtime", "1s", "--filesize", "8m",
               "--target", tmp_path, "--results", tmp_path / "r", "--repeat", "3",
               "--seed", "9", "--label", "env=lab")  # fmt: skip
    assert r.code == 0, r
    runs = sorted(runs_in(tmp_path / "r"), key=_started)
    labels = [manifest(d)["labels"] for d in runs]
    assert [lab["rep"] for lab in labels] == ["1", "2", "3"]
    assert len({lab["series"] for lab in labels}) == 1 and labels[0]["env"] == "lab"
    assert [manifest(d)["seed"] for d in runs] == [9, 10, 11]
    assert "randomread" in r.out and "n<5" in r.out
    assert "fewer than 5 runs" in r.err


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('runtme = "1s"\n[[workload]]\nrun = "randomread"\n[[env]]\nname = "a"\n',
         ["unknown key `runtme`", "the top level"]),
        ('[[workload]]\nrun = "randomread"\nblocksize = "4k"\n[[env]]\nname = "a"\n',
         ["unknown key `blocksize`", "[[workload]] #1"]),
        ('[[workload]]\nrun = "randomread"\n', ["no [[env]]"]),
        ('[[workload]]\nrun = "randomread"\n[[env]]\nname = "a"\nlabels = { env = "b" }\n',
         ["sets the label `env`"]),
        ('order = "abab"\n[[workload]]\nrun = "randomread"\n[[env]]\nname = "a"\n',
         ["unknown order `abab`"]),
        ('[[workload]]\nrun = "randomreed"\n[[env]]\nname = "a"\n', ["randomreed"]),
        ('[[workload]]\nrun = "randomread"\niosize = "4q"\n[[env]]\nname = "a"\n', ["4q"]),
        ("[[workload]\n", ["not valid TOML"]),
    ],
)  # fmt: skip
def test_bad_campaign_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragments: list[str]
) -> None:
    r = iowatt(capsys, "campaign", _file(tmp_path, text), "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert not (tmp_path / "r").exists()


def test_a_missing_campaign_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(iowatt(capsys, "campaign", tmp_path / "nope.toml"), "nope.toml")


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_campaign_on_a_fleet_runs_each_bench_on_every_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    log = tmp_path / "log"
    envs = _envs("quiet", "loud", extra=f'setup = "echo up $IOWATT_ENV >> {log}"\n')
    # drop_caches: dropped on the hosts the runs read on (here: this machine's workers).
    text = ('name = "rack"\nrepetitions = 1\ndrop_caches = true\n' + SMALL
            + '[[workload]]\nrun = "randomread"\n' + envs)  # fmt: skip
    campaign = _file(tmp_path, text)
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    r = iowatt(capsys, "campaign", campaign, "--cluster", "local:2", "--target", target,
               "--results", results, "-q", "--no-report")  # fmt: skip
    assert r.code == 0, r
    # The environments' commands run here, once each, in the campaign's order.
    assert log.read_text().splitlines() == ["up quiet", "up loud"]
    runs = runs_in(results)
    assert sorted(manifest(d)["labels"]["env"] for d in runs) == ["loud", "quiet"]
    for d in runs:
        hosts = pq.read_table(d / "hosts.parquet").to_pylist()
        assert sorted(h["host"] for h in hosts) == ["local-0", "local-1"]
        assert all(h["ops"] > 0 and h["target"] == str(target) for h in hosts)
    assert os.listdir(target) == []
    # The same file on one host measures something else: refused, not mixed in.
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", results)
    assert_user_error(r, "campaign `rack`", "different plan")


def test_environments_on_disjoint_hosts_are_independent(tmp_path: Path) -> None:
    from iowatt.campaign import lanes

    def envs(*hosts: str) -> str:
        return "".join(f'\n[[env]]\nname = "e{i}"\n' + (f"hosts = [{h}]\n" if h else "")
                       for i, h in enumerate(hosts))  # fmt: skip

    body = SMALL + '[[workload]]\nrun = "randomread"\n'
    c = load(_file(tmp_path, body + envs('"a"', '"b"', '"a", "c"')))
    assert [[e.name for e in g] for g in lanes(c)] == [["e0", "e2"], ["e1"]]
    # An environment without hosts uses every host: nothing runs beside it.
    c = load(_file(tmp_path, body + envs('"a"', '"b"', "")))
    assert [[e.name for e in g] for g in lanes(c)] == [["e0", "e1", "e2"]]


@pytest.mark.slow
def test_a_fleet_campaign_runs_environments_on_disjoint_hosts_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    envs = "".join(f'\n[[env]]\nname = "on{i}"\nhosts = ["local-{i}"]\n' for i in range(2))
    text = ('name = "lanes"\nrepetitions = 2\n' + SMALL.replace('"1s"', '"2s"')
            + '[[workload]]\nrun = "randomread"\n' + envs)  # fmt: skip
    campaign = _file(tmp_path, text)
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    r = iowatt(capsys, "campaign", campaign, "--cluster", "local:2", "--target", target,
               "--results", results, "-q", "--no-report")  # fmt: skip
    assert r.code == 0, r
    runs = runs_in(results)
    assert len(runs) == 4
    spans = {}
    for d in runs:
        m = manifest(d)
        env = m["labels"]["env"]
        hosts = [h["host"] for h in pq.read_table(d / "hosts.parquet").to_pylist()]
        assert hosts == [f"local-{env[-1]}"]  # each environment on its own host only
        spans[(env, m["labels"]["rep"])] = (m["started_ns"], m["ended_ns"])
    # The two environments' first runs overlapped in time: they ran at once.
    (a0, a1), (b0, b1) = spans[("on0", "1")], spans[("on1", "1")]
    assert max(a0, b0) < min(a1, b1)
    # Hosts named in a campaign file need a fleet.
    r = iowatt(capsys, "campaign", campaign, "--target", target, "--results", tmp_path / "x")
    assert_user_error(r, "on0", "--cluster")
