"""`iowatt emulate`: a disk model mounted over a directory (FUSE, as root), what it refuses,
how it ends — Ctrl-C, SIGTERM, SIGHUP, SIGKILL — and that no mount is ever left behind."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.emulated import MountProcess as Mount
from support.emulated import mount_dirs, mounted
from support.wait import wait_for


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_mount_serves_backing_s_files_and_a_signal_unmounts_and_writes_the_run(
    dirs: tuple[Path, Path, Path], sig: int
) -> None:
    backing, mount, results = dirs
    (backing / "old").write_bytes(b"kept" * 1000)
    m = Mount(backing, mount, results, "--seed", "5")
    assert mounted(mount)
    assert (mount / "old").read_bytes() == b"kept" * 1000
    data = os.urandom(300_000)
    (mount / "sub").mkdir()
    (mount / "sub" / "new").write_bytes(data)
    assert (backing / "sub" / "new").read_bytes() == data
    assert sorted(p.name for p in mount.iterdir()) == ["old", "sub"], ".iowatt is never listed"
    ops = int((mount / ".iowatt" / "ops").read_text())
    code, out, err = m.stop(sig)
    assert code == 0, err
    assert not mounted(mount)
    assert (backing / "old").read_bytes() == b"kept" * 1000, "BACKING is never deleted from"
    (run,) = runs_in(results)
    assert manifest(run)["kind"] == "emulate" and manifest(run)["status"] == "complete"
    assert manifest(run)["seed"] == 5
    d = summary(run)["disk"]
    assert d["requests"] >= ops > 0
    assert d["write_ops"] > 0 and d["read_ops"] > 0
    assert f"run: {run}" in out


def test_a_killed_mount_is_unmounted_by_its_guardian_and_its_run_committed(
    dirs: tuple[Path, Path, Path],
) -> None:
    backing, mount, results = dirs
    m = Mount(backing, mount, results)
    (mount / "f").write_bytes(b"x" * 65536)

    def journaled() -> bool:
        # What the guardian commits: the counters the mount process journals once a second.
        found = list(results.glob(".tmp-*/journal.json"))
        return bool(found) and json.loads(found[0].read_text())["counters"]["write_ops"] >= 1

    wait_for(journaled, m.proc, what="the journal")
    code, _, err = m.stop(signal.SIGKILL)
    assert code == -signal.SIGKILL, err
    wait_for(lambda: not mounted(mount) and bool(runs_in(results)), what="the guardian")
    (run,) = runs_in(results)
    assert manifest(run)["status"] == "incomplete"
    assert "died" in manifest(run)["reason"]
    assert summary(run)["counters"]["write_ops"] >= 1
    assert (backing / "f").stat().st_size == 65536


def test_a_stale_mount_is_named_and_unmount_takes_it_down(
    dirs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    m = Mount(backing, mount, results)
    # Kill the guardian first, then the server: the mount is left stale.
    guardian = subprocess.run(
        ["pgrep", "-f", f"iowatt.emulate.guard .* {mount}"], capture_output=True, text=True
    ).stdout.split()
    assert guardian, "a guardian watches the mount"
    for pid in guardian:
        os.kill(int(pid), signal.SIGKILL)
    m.stop(signal.SIGKILL)
    assert mounted(mount)
    with pytest.raises(OSError, match="not connected"):
        os.stat(mount)
    r = iowatt(capsys, "emulate", "mount", backing, mount, "--results", results)
    assert_user_error(r, "stale", str(mount))
    assert f"iowatt emulate unmount {mount}" in r.err
    r = iowatt(capsys, "emulate", "unmount", mount)
    assert r.code == 0, r.err
    assert not mounted(mount)


def test_bad_input_is_one_line_and_mounts_nothing(
    dirs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    (backing / "keep").write_text("x")

    def refused(*args: str | Path, fragments: tuple[str, ...]) -> None:
        r = iowatt(capsys, "emulate", "mount", *args, "--results", results)
        assert_user_error(r, *fragments)
        assert not mounted(mount)

    refused(backing / "nope", mount, fragments=("BACKING", "does not exist"))
    refused(backing / "keep", mount, fragments=("BACKING", "is not a directory"))
    refused(backing, mount / "nope", fragments=("MOUNT", "does not exist"))
    refused(mount, backing, fragments=("MOUNT", "is not empty"))
    inner = backing / "inner"
    inner.mkdir()
    refused(backing, inner, fragments=("inside one another",))
    refused(backing, mount, "--disk-model", "floppy", fragments=("floppy", "is not a disk model"))
    refused(backing, mount, "--spin-down", "0s", fragments=("--spin-down", "above 0"))
    refused(backing, mount, "--spin-down", "soon", fragments=("--spin-down", "soon"))
    refused(backing, mount, "--disk-models", backing / "nope.toml", fragments=("nope.toml",))
    refused(backing, mount, "--serve", "no:port:here", fragments=("--serve",))
    r = iowatt(capsys, "emulate", "unmount", mount)
    assert_user_error(r, "is not an emulated disk")
    assert (backing / "keep").read_text() == "x"
    assert not runs_in(results) if results.exists() else True


def test_files_still_open_at_the_end_detach_the_mount_lazily_and_say_so(
    dirs: tuple[Path, Path, Path],
) -> None:
    backing, mount, results = dirs
    (backing / "f").write_bytes(b"y" * 8192)
    m = Mount(backing, mount, results)
    held = os.open(mount / "f", os.O_RDONLY)
    assert os.read(held, 4096) == b"y" * 4096
    code, _, err = m.stop()
    assert code == 0, err
    assert "still open" in err
    assert not mounted(mount), "detached at once, gone once the file closes"
    # Its server is gone: the close's release has no one to answer it (ENOTCONN).
    with contextlib.suppress(OSError):
        os.close(held)
    (run,) = runs_in(results)
    assert summary(run)["disk"]["lazy_unmount"] is True


def test_a_mount_that_served_nothing_still_writes_its_run(dirs: tuple[Path, Path, Path]) -> None:
    backing, mount, results = dirs
    code, _, err = Mount(backing, mount, results).stop()
    assert code == 0, err
    (run,) = runs_in(results)
    d = summary(run)["disk"]
    assert d["requests"] == 0 and d["latency_ns"]["p99"] == 0
    assert d["energy_j"] > 0, "an idle disk draws its idle watts"


def test_cfq_gives_each_reader_its_slice_and_counts_it_in_streams_json(
    dirs: tuple[Path, Path, Path],
) -> None:
    backing, mount, results = dirs
    (backing / "f").write_bytes(b"z" * (8 << 20))
    m = Mount(backing, mount, results, "--scheduler", "cfq", "--slice", "100ms")
    readers = [
        subprocess.Popen(["dd", f"if={mount}/f", "of=/dev/null", "bs=64k", "count=30",
                          f"skip={64 * half}", "iflag=direct"], stderr=subprocess.DEVNULL)
        for half in (0, 1)
    ]  # fmt: skip
    assert [r.wait(timeout=60) for r in readers] == [0, 0]
    streams = json.loads((mount / ".iowatt" / "streams.json").read_text())
    by_pid = {int(pid): c["read_ops"] for pid, c in streams.items()}
    assert {r.pid: by_pid.get(r.pid) for r in readers} == {r.pid: 30 for r in readers}
    code, _, err = m.stop()
    assert code == 0, err
    (run,) = runs_in(results)
    served = pq.read_table(run / "disk_requests.parquet").to_pylist()
    order = [r["stream"] for r in served if not r["write"]]
    switches = sum(a != b for a, b in itertools.pairwise(order))
    # 30 reads of a few ms each take about two slices per reader, not 60 turns.
    assert switches <= 8, order
    assert manifest(run)["config"]["slice_s"] == 0.1


def test_with_the_page_cache_a_file_read_again_after_reopening_does_not_reach_the_disk(
    dirs: tuple[Path, Path, Path],
) -> None:
    backing, mount, results = dirs
    (backing / "f").write_bytes(os.urandom(200_000))
    m = Mount(backing, mount, results, "--page-cache")
    assert len((mount / "f").read_bytes()) == 200_000
    first = json.loads(m.control("counters.json"))["read_ops"]
    for _ in range(2):
        # A web server opens the file afresh for each request: its pages are still cached.
        assert len((mount / "f").read_bytes()) == 200_000
    assert json.loads(m.control("counters.json"))["read_ops"] == first > 0
    m.finish()
