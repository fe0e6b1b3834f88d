"""``--cluster``: every spelling parsed or refused in one line, a LocalCluster of named worker
processes, batch clusters' job scripts from a cluster file, and `iowatt tasks` on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowatt.errors import ConfigError
from iowatt.fleet.cluster import connect, job_cluster
from iowatt.fleet.spec import parse
from support.cli import assert_user_error, iowatt


def cluster_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return str(path)


def test_addresses_and_local_clusters_parse():
    assert parse("local:3").kind == "local" and parse("local:3").workers == 3
    assert parse("tcp://head:8786").address == "tcp://head:8786"
    assert parse("10.0.0.5:8786").address == "tcp://10.0.0.5:8786"


def test_cluster_files_of_every_kind_parse(tmp_path):
    ssh = parse(cluster_file(tmp_path, 'kind = "ssh"\nhosts = ["head", "n1", "n2"]\nuser = "me"\n'))
    assert (ssh.kind, ssh.workers, ssh.options["user"]) == ("ssh", 2, "me")
    for kind in ("slurm", "sge", "pbs"):
        spec = parse(
            cluster_file(
                tmp_path,
                f'kind = "{kind}"\nworkers = 4\ncores = 8\n'
                'memory = "16GB"\nwalltime = "02:00:00"\n',
            )
        )
        assert (spec.kind, spec.workers, spec.options["cores"]) == (kind, 4, 8)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('kind = "kubernetes"\n', "'kubernetes' is not one of"),
        ('kind = "slurm"\ncores = 8\nmemory = "1GB"\nqueues = "x"\n', "unknown key `queues`"),
        ('kind = "slurm"\ncores = 8\n', "needs `memory`"),
        ('kind = "ssh"\nhosts = ["head"]\n', "hosts must list"),
        ('kind = "pbs"\ncores = 8\nmemory = "1GB"\nworkers = 0\n', "workers"),
        ("kind = [", "is not TOML"),
    ],
)
def test_a_bad_cluster_file_is_one_error_naming_what(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as e:
        parse(cluster_file(tmp_path, text))
    assert fragment in e.value.message and e.value.hint


@pytest.mark.parametrize("text", ["local:x", "local:0", "nowhere", "missing.toml"])
def test_a_bad_spec_is_one_error(text):
    with pytest.raises(ConfigError):
        parse(text)


@pytest.mark.parametrize(
    ("kind", "directive"),
    [("slurm", "#SBATCH --cpus-per-task=8"), ("pbs", "ncpus=8"), ("sge", "#$ -q all.q")],
)
def test_a_batch_cluster_file_gives_dask_jobqueue_s_job_script(tmp_path, kind, directive):
    spec = parse(
        cluster_file(
            tmp_path,
            f'kind = "{kind}"\nworkers = 2\ncores = 8\nmemory = "16GB"\n'
            'queue = "all.q"\nwalltime = "01:00:00"\n',
        )
    )
    cluster = job_cluster(spec, threads=16)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert directive in script
    assert script.count("--nthreads") == 1 and "--nthreads 16" in script


@pytest.mark.slow
def test_local_n_starts_named_worker_processes_of_this_version():
    notes: list[str] = []
    with connect(parse("local:2"), 3, notes.append) as client:
        workers = client.scheduler_info()["workers"].values()
        assert sorted(w["name"] for w in workers) == ["local-0", "local-1"]
        assert [w["nthreads"] for w in workers] == [3, 3]
        pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2
    assert "dashboard http://" in notes[0]


@pytest.mark.slow
def test_tasks_run_on_a_local_fleet(capsys, tmp_path):
    (tmp_path / "d").mkdir()
    s = tmp_path / "s.toml"
    s.write_text(
        '[types.nap]\ncommand = "sleep 0.2"\n[sets]\nnaps = { repeat = 6, tasks = ["nap"] }\n'
    )
    r = iowatt(
        capsys,
        "tasks",
        s,
        "--cores",
        "2",
        "--per-core",
        "2",
        "--cluster",
        "local:2",
        "--data",
        f"hdd={tmp_path / 'd'}",
        "--results",
        tmp_path / "r",
        "--json",
        "--quiet",
    )
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert (row["status"], row["done"], row["slots"]) == ("complete", 6, 4)


def test_an_unknown_or_unreachable_cluster_is_one_line(capsys, tmp_path):
    (tmp_path / "d").mkdir()
    base = ("tasks", "io", "--data", f"hdd={tmp_path / 'd'}", "--results", tmp_path / "r")
    assert_user_error(iowatt(capsys, *base, "--cluster", "nowhere"), "nowhere")
    r = iowatt(capsys, *base, "--scale", "0.001", "--rounds", "1", "--cluster", "tcp://127.0.0.1:9")
    assert_user_error(r, "tcp://127.0.0.1:9", "cannot start or reach")


def _prepare_then_start(args: dict, ready) -> dict:
    import time

    if args.get("fail"):
        raise RuntimeError("no such disk")
    time.sleep(args["prep_s"])
    ready_at = time.time_ns()
    started = ready()
    return {"ready_at": ready_at, "ran": started is not None}


@pytest.fixture(scope="module")
def fleet3():
    with connect(parse("local:3"), 1) as client:
        yield client, sorted(client.scheduler_info()["workers"])


@pytest.mark.slow
def test_workers_start_together_only_once_all_are_ready(fleet3):
    from iowatt.fleet.barrier import start_together

    client, addrs = fleet3
    out = start_together(
        client, _prepare_then_start, {a: {"prep_s": 0.3 * i} for i, a in enumerate(addrs)}
    ).hosts
    assert sorted(o["worker"] for o in out.values()) == ["local-0", "local-1", "local-2"]
    # One machine, one clock: no worker started before the slowest was ready, and the offsets
    # measured are within their round trip of zero.
    last_ready = max(o["result"]["ready_at"] for o in out.values())
    assert all(o["result"]["ran"] for o in out.values())
    assert min(o["start_ns"] for o in out.values()) > last_ready
    # Each worker waits for the instant in its own clock, as estimated from here: on one host
    # that estimate is off by at most its round trip.
    assert all(o["late_ns"] >= 0 for o in out.values())
    assert all(o["start_ns"] >= o["instant_ns"] - o["delay_ns"] for o in out.values())
    assert all(abs(o["offset_ns"]) <= o["delay_ns"] for o in out.values())


@pytest.mark.slow
def test_a_worker_that_fails_before_the_start_stops_it_and_is_named(fleet3):
    from iowatt.errors import SourceUnavailableError
    from iowatt.fleet.barrier import start_together

    client, addrs = fleet3
    args = {a: {"prep_s": 0.0, "fail": i == 1} for i, a in enumerate(addrs)}
    with pytest.raises(SourceUnavailableError) as e:
        start_together(client, _prepare_then_start, args)
    assert addrs[1] in e.value.message and "no such disk" in e.value.message


def _held_bench(args: dict, ready) -> dict:
    """A real engine run on the worker: laid out, held ready, released at the common start."""
    import time

    from iowatt._engine import WorkloadRun

    run = WorkloadRun.fileio(args["spec"])
    run.hold()
    run.start()
    while run.progress()["phase"] != "ready":
        assert not run.wait(0.005), "the run ended before it was ready"
    waited_ops = run.progress()["ops"]
    start = ready()
    mono_at_start = time.monotonic_ns() - (time.time_ns() - start)
    run.release(start)
    while not run.wait(0.1):
        pass
    result = run.result()
    ops = sum(f["ops"] for f in result["flowops"])
    return {
        "ops_while_held": waited_ops,
        "ops": ops,
        "status": result["status"],
        "measure_start_ns": result["measure_start_ns"],
        "start_mono_ns": mono_at_start,
    }


@pytest.mark.slow
def test_engines_on_every_worker_lay_out_then_measure_from_the_common_start(fleet3, tmp_path):
    from iowatt.fleet.barrier import start_together

    client, addrs = fleet3
    spec = {
        "name": "rr",
        "personality": "randomread",
        "iosize": 4096,
        "filesize": 4 << 20,
        "nthreads": 1,
        "directio": False,
        "dsync": False,
        "engine": "psync",
        "iodepth": 1,
        "runtime_ns": 300_000_000,
        "ramp_ns": 0,
        "rate": 2000.0,
        "seed": 1,
    }
    args = {}
    for i, a in enumerate(addrs):
        (tmp_path / f"w{i}").mkdir()
        args[a] = {"spec": {**spec, "target": str(tmp_path / f"w{i}")}}
    out = start_together(client, _held_bench, args).hosts
    for o in out.values():
        r = o["result"]
        assert r["ops_while_held"] == 0 and r["ops"] > 0 and r["status"] == "complete"
        # Measuring began at the common instant (one machine: one monotonic clock), give or
        # take the microseconds between reading the two clocks.
        assert r["measure_start_ns"] + 50_000 >= r["start_mono_ns"]
