"""``iowatt age``: fill and delete on real files, recreate from a manifest, clean up exactly what
was made; a percentage fill measured on a real small file system."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from iowatt import age as age_lib
from iowatt.errors import RunInterrupted, TargetError
from support.cli import Result, assert_user_error, iowatt
from support.wait import wait_for

KiB, MiB = 1024, 1024 * 1024
SMALL = ("--fill", "3m", "--sizes", "1k..256k", "--quiet")


def age(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Result:
    return iowatt(capsys, "age", *args)


def made(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "iowatt-age" / "manifest.json").read_text())


def on_disk(directory: Path) -> dict[str, int]:
    """The files under DIR/iowatt-age (the manifest left out), by path relative to it."""
    root = directory / "iowatt-age"
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }


def present(m: dict[str, Any]) -> dict[str, int]:
    """The files a manifest says exist: created and not deleted."""
    gone = set(m["deleted"])
    return {f["path"]: f["size"] for f in m["files"] if f["path"] not in gone}


def everything(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def used(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def test_an_absolute_fill_writes_that_much_in_files_of_the_asked_sizes(tmp_path, capsys):
    r = age(capsys, tmp_path, *SMALL, "--delete", "0", "--seed", "1", "--json")
    assert r.code == 0, r.err
    summary, m = json.loads(r.out), made(tmp_path)
    sizes = [f["size"] for f in m["files"]]
    assert sum(sizes) == summary["bytes_written"] == 3 * MiB
    assert all(KiB <= s <= 256 * KiB for s in sizes[:-1])
    assert 1 <= sizes[-1] <= 256 * KiB  # the last one cut to fit
    assert on_disk(tmp_path) == present(m)
    assert (m["status"], m["seed"], m["deleted"], m["pending"]) == ("complete", 1, [], [])
    assert m["fs"]["type"] and m["fs"]["before"]["size"] > 0 and m["fs"]["after"]["used"] > 0
    assert summary["files"] == len(sizes) and summary["fs"]["fill_after"] is not None
    biggest = max(m["files"], key=lambda f: f["size"])
    data = (tmp_path / "iowatt-age" / biggest["path"]).read_bytes()
    assert len(zlib.compress(data)) > 0.99 * len(data), "the data is incompressible"


def test_log_uniform_sizes_are_mostly_small(tmp_path, capsys):
    r = age(capsys, tmp_path, "--fill", "64m", "--sizes", "1k..1m", "--delete", "0", "--quiet")
    assert r.code == 0, r.err
    sizes = sorted(f["size"] for f in made(tmp_path)["files"])
    assert sizes[len(sizes) // 2] < 128 * KiB  # the median is far below the middle of the range


def test_deletion_frees_what_was_asked_among_files_of_the_window(tmp_path, capsys):
    r = age(capsys, tmp_path, *SMALL, "--delete", "25%", "--delete-sizes", "16k..128k",
            "--seed", "2", "--json")  # fmt: skip
    assert r.code == 0, r.err
    m, summary = made(tmp_path), json.loads(r.out)
    sizes = {f["path"]: f["size"] for f in m["files"]}
    freed = [sizes[p] for p in m["deleted"]]
    want = round(0.25 * 3 * MiB)
    assert sum(freed) == summary["bytes_deleted"] >= want
    assert sum(freed[:-1]) < want, "it stops once enough is freed"
    assert all(16 * KiB <= s <= 128 * KiB for s in freed)
    assert on_disk(tmp_path) == present(m)
    assert summary["files_present"] == len(sizes) - len(freed)


def test_the_same_seed_gives_the_same_files_and_deletions(tmp_path, capsys):
    listings = []
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        (tmp_path / name).mkdir()
        assert age(capsys, tmp_path / name, *SMALL, "--delete", "10%", "--seed", seed).code == 0
        m = made(tmp_path / name)
        listings.append((m["files"], m["deleted"]))
    assert listings[0] == listings[1]
    assert listings[0] != listings[2]


def test_files_are_spread_over_directories(tmp_path):
    config = replace(age_lib.AgeConfig.parse("1m", "1k..16k", "0", seed=3), files_per_dir=10)
    summary = age_lib.run(tmp_path, config)
    dirs = sorted((tmp_path / "iowatt-age").glob("d*"))
    assert len(dirs) == -(-summary["files"] // 10) > 1
    assert all(len(list(d.iterdir())) <= 10 for d in dirs)
    assert made(tmp_path)["dirs"] == [d.name for d in dirs]


def test_status_and_dry_run(tmp_path, capsys):
    r = age(capsys, tmp_path, *SMALL, "--seed", "4", "--dry-run", "--json")
    assert r.code == 0, r.err
    planned = json.loads(r.out)
    assert not (tmp_path / "iowatt-age").exists(), "a dry run writes nothing"
    assert age(capsys, tmp_path, *SMALL, "--seed", "4").code == 0
    r = age(capsys, tmp_path, "--status", "--json")
    status = json.loads(r.out)
    assert (status["files"], status["bytes_written"]) == (planned["files"], 3 * MiB)
    assert status["bytes_deleted"] >= round(0.07 * 3 * MiB)  # the default --delete 7%
    assert status["fs"]["fill_now"] is not None
    r = age(capsys, tmp_path, "--status")
    assert f"{status['files']} files written (3 MiB)" in r.out
    assert "manifest.json (seed 4)" in r.out


def test_recreate_reproduces_the_same_state_elsewhere(tmp_path, capsys):
    a, b, copy = tmp_path / "a", tmp_path / "b", tmp_path / "kept.json"
    a.mkdir(), b.mkdir()
    r = age(capsys, a, *SMALL, "--delete", "20%", "--seed", "5", "--manifest", copy)
    assert r.code == 0, r.err
    state = on_disk(a)
    assert json.loads(copy.read_text()) == made(a)

    assert age(capsys, b, "--recreate", a / "iowatt-age" / "manifest.json", "--quiet").code == 0
    assert on_disk(b) == state
    assert (made(b)["files"], made(b)["deleted"]) == (made(a)["files"], made(a)["deleted"])
    assert made(b)["recreated_from"] == str(a / "iowatt-age" / "manifest.json")
    some = next(iter(state))
    assert (a / "iowatt-age" / some).read_bytes() == (b / "iowatt-age" / some).read_bytes()

    # After a cleanup, the copy kept outside recreates the same state in place.
    assert age(capsys, a, "--cleanup", "--quiet").code == 0
    assert list(a.iterdir()) == [] and copy.exists()
    assert age(capsys, a, "--recreate", copy, "--quiet").code == 0
    assert on_disk(a) == state


def test_cleanup_removes_exactly_what_was_created(tmp_path, capsys):
    assert age(capsys, tmp_path, *SMALL).code == 0
    root = tmp_path / "iowatt-age"
    for user in (tmp_path / "mine", root / "mine-too", root / "d00000" / "mine-three"):
        user.write_text("the user's")
    r = age(capsys, tmp_path, "--cleanup", "--json")
    assert r.code == 0, r.err
    assert everything(tmp_path) == {
        "mine",
        "iowatt-age",
        "iowatt-age/mine-too",
        "iowatt-age/d00000",
        "iowatt-age/d00000/mine-three",
    }
    assert json.loads(r.out)["kept"] == [str(root / "d00000"), str(root)]
    assert all(p.read_text() == "the user's" for p in tmp_path.rglob("mine*"))
    # Under --json too, what was kept is said on stderr.
    kept = [line for line in r.err.splitlines() if line.startswith("warning: kept")]
    assert kept == [
        f"warning: kept `{root / 'd00000'}`: it is or holds what iowatt did not make",
        f"warning: kept `{root}`: it is or holds what iowatt did not make",
    ]


def test_cleanup_leaves_the_directory_as_it_was(tmp_path, capsys):
    assert age(capsys, tmp_path, *SMALL, "--delete", "30%").code == 0
    files = on_disk(tmp_path)
    r = age(capsys, tmp_path, "--cleanup", "--dry-run")
    assert r.code == 0 and f"would remove {len(files)} files" in r.out
    assert on_disk(tmp_path) == files
    r = age(capsys, tmp_path, "--cleanup")
    assert r.code == 0 and "removed" in r.out
    assert list(tmp_path.iterdir()) == []
    r = age(capsys, tmp_path, "--cleanup")
    assert r.code == 0 and "removed 0 files" in r.out, "nothing left to clean is not an error"


def test_an_interrupted_aging_leaves_an_incomplete_manifest_of_what_exists(tmp_path, capsys):
    def ctrl_c(phase: str, done: int, total: int) -> None:
        if phase == "writing" and done > 0:
            raise KeyboardInterrupt

    config = age_lib.AgeConfig.parse("64m", "1m..8m", seed=6)
    with pytest.raises(RunInterrupted):
        age_lib.run(tmp_path, config, progress=ctrl_c)
    m = made(tmp_path)
    assert (m["status"], m["reason"], m["pending"]) == ("incomplete", "interrupted", [])
    assert m["files"] and on_disk(tmp_path) == present(m)
    assert m["files"][-1]["size"] < 64 * MiB  # the file being written, at the size it reached
    assert age(capsys, tmp_path, "--status", "--json").code == 0
    assert age(capsys, tmp_path, "--cleanup", "--quiet").code == 0
    assert list(tmp_path.iterdir()) == []


def _start_slow_aging(directory: Path) -> subprocess.Popen[str]:
    """``iowatt age`` in a subprocess, returned once past its first thousand files. Many tiny
    files: slow enough to be stopped mid-way, light on the disk."""
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "age", str(directory),
           "--fill", "512m", "--sizes", "1k..2k", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for((directory / "iowatt-age" / "d00001").exists, proc,
             what="the aging to pass its first thousand files")  # fmt: skip
    return proc


@pytest.mark.slow
def test_ctrl_c_stops_the_aging_promptly_and_keeps_its_manifest(tmp_path):
    proc = _start_slow_aging(tmp_path)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    m = made(tmp_path)
    assert (m["status"], m["reason"]) == ("incomplete", "interrupted")
    assert on_disk(tmp_path) == present(m) and len(m["files"]) >= 1000


@pytest.mark.slow
def test_a_killed_aging_leaves_nothing_its_manifest_does_not_name(tmp_path, capsys):
    # SIGKILL gives no chance to write the manifest: the files being written were named ahead.
    proc = _start_slow_aging(tmp_path)
    proc.kill()
    proc.communicate(timeout=30)
    m = made(tmp_path)
    assert (m["status"], m["reason"]) == ("incomplete", "in progress")
    assert set(on_disk(tmp_path)) <= {f["path"] for f in m["files"]} | set(m["pending"])
    assert age(capsys, tmp_path, "--cleanup", "--quiet").code == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.needs_root
def test_a_percentage_fill_reaches_the_target_within_one_file(tmp_path, capsys, mounts):
    fs = mounts.mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", target=tmp_path / "fs")
    r = age(capsys, fs, "--fill", "90%", "--sizes", "4k..1m", "--delete", "0", "--json")
    assert r.code == 0, r.err
    target = 0.9 * 16 * MiB
    assert abs(used(fs) - target) <= MiB  # the largest file
    assert abs(json.loads(r.out)["fs"]["fill_after"] - 90) <= 100 / 16
    assert "tmpfs" in r.err  # warned: no on-disk layout to fragment


@pytest.mark.needs_root
def test_aging_an_ext4_file_system(tmp_path, capsys, loop_device, mounts, sh, need_tool):
    sh(need_tool("mkfs.ext4"), "-q", loop_device)
    fs = mounts.mount(loop_device, target=tmp_path / "fs")
    before = everything(fs)
    r = age(capsys, fs, "--fill", "80%", "--sizes", "4k..4m", "--delete", "10%",
            "--delete-sizes", "16k..2m", "--seed", "9", "--json")  # fmt: skip
    assert r.code == 0, r.err
    summary, m = json.loads(r.out), made(fs)
    assert m["fs"]["type"] == "ext4"
    filled = m["plan"]["target_used_bytes"]
    assert abs(used(fs) - (filled - summary["bytes_deleted"])) <= 4 * MiB
    assert summary["bytes_deleted"] >= 0.1 * summary["bytes_written"]
    assert on_disk(fs) == present(m)
    assert age(capsys, fs, "--cleanup", "--quiet").code == 0
    assert everything(fs) == before


@pytest.mark.needs_root
def test_a_full_file_system_leaves_an_incomplete_manifest(tmp_path, mounts):
    fs = mounts.mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", target=tmp_path / "fs")
    hog = fs / "hog"

    def someone_else_fills_it(phase: str, done: int, total: int) -> None:
        if not hog.exists():
            hog.write_bytes(b"\1" * (os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize - 256 * KiB))

    config = age_lib.AgeConfig.parse("8m", "64k..1m", "0", seed=10)
    with pytest.raises(TargetError, match="is full"):
        age_lib.run(fs, config, progress=someone_else_fills_it)
    m = made(fs)
    assert m["status"] == "incomplete" and "space" in m["reason"]
    assert on_disk(fs) == present(m)
    age_lib.cleanup(fs)
    assert everything(fs) == {"hog"}


@pytest.mark.needs_root
def test_a_fill_already_exceeded_or_out_of_reach_is_refused(tmp_path, capsys, mounts):
    fs = mounts.mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", target=tmp_path / "fs")
    (fs / "data").write_bytes(bytes(6 * MiB))
    for fill in ("50%", "100%", "4m"):
        assert_user_error(age(capsys, fs, "--fill", fill), f"`{fill}`", str(fs))
    assert everything(fs) == {"data"}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--fill", "ten"), "`ten`"),
        (("--fill", "150%"), "`150%`"),
        (("--fill", "0"), "`0`"),
        (("--fill", "3m", "--sizes", "1k"), "`1k`"),
        (("--fill", "3m", "--sizes", "64k..1k"), "`64k..1k`"),
        (("--fill", "3m", "--sizes", "1q..2k"), "`1q`"),
        (("--fill", "3m", "--delete", "120%"), "`120%`"),
        (("--fill", "3m", "--delete", "lots"), "`lots`"),
        (("--fill", "3m", "--delete-sizes", "1m..1k"), "`1m..1k`"),
        (
            ("--fill", "3m", "--seed", "1", "--delete", "50%", "--delete-sizes", "250k..256k"),
            "`50%`",
        ),
        (("--fill", "3m", "--seed", "-3"), "`-3`"),
        (("--sizes", "1k..2k"), "--fill"),
        (("--cleanup", "--fill", "3m"), "--fill"),
        (("--status", "--cleanup"), "--cleanup"),
    ],
)
def test_bad_values_are_named_with_a_hint(tmp_path, capsys, args, named):
    assert_user_error(age(capsys, tmp_path, *args), named)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", [SMALL, ("--cleanup",), ("--status",)])
def test_a_missing_or_non_directory_dir_is_refused(tmp_path, capsys, mode):
    assert_user_error(age(capsys, tmp_path / "nope", *mode), str(tmp_path / "nope"))
    (tmp_path / "file").write_text("x")
    assert_user_error(age(capsys, tmp_path / "file", *mode), str(tmp_path / "file"))


@pytest.mark.parametrize("mode", [SMALL, ("--cleanup",), ("--status",), ("--recreate", "m.json")])
def test_an_iowatt_age_directory_without_manifest_is_never_touched(tmp_path, capsys, mode):
    stranger = tmp_path / "iowatt-age" / "d00000" / "f00000000"
    stranger.parent.mkdir(parents=True)
    stranger.write_text("not ours")
    if mode[0] == "--recreate":
        (tmp_path / "m.json").write_text(_complete_manifest(tmp_path / "elsewhere"))
        mode = ("--recreate", str(tmp_path / "m.json"))
    assert_user_error(age(capsys, tmp_path, *mode), str(tmp_path / "iowatt-age"))
    assert stranger.read_text() == "not ours"


def _complete_manifest(directory: Path) -> str:
    directory.mkdir()
    age_lib.run(directory, age_lib.AgeConfig.parse("64k", "1k..8k", "0", seed=1))
    return (directory / "iowatt-age" / "manifest.json").read_text()


def test_an_aged_directory_is_not_aged_twice(tmp_path, capsys):
    assert age(capsys, tmp_path, *SMALL).code == 0
    files = on_disk(tmp_path)
    assert_user_error(age(capsys, tmp_path, *SMALL), "already aged")
    assert on_disk(tmp_path) == files


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: "{not json",
        lambda m: json.dumps({**m, "files": [{"path": "../../etc/passwd", "size": 1}]}),
        lambda m: json.dumps({**m, "deleted": ["d00000/f99999999"]}),
        lambda m: json.dumps({**m, "version": 99}),
        lambda m: json.dumps({**m, "status": "incomplete", "reason": "interrupted"}),
    ],
)
def test_recreate_refuses_a_malformed_manifest(tmp_path, capsys, edit):
    source = json.loads(_complete_manifest(tmp_path / "a"))
    bad = tmp_path / "bad.json"
    bad.write_text(edit(source))
    (tmp_path / "b").mkdir()
    assert_user_error(age(capsys, tmp_path / "b", "--recreate", bad), str(bad))
    assert list((tmp_path / "b").iterdir()) == []
    assert_user_error(age(capsys, tmp_path / "b", "--recreate", tmp_path / "none.json"), "none")


def test_cleanup_refuses_a_tampered_manifest_and_deletes_nothing(tmp_path, capsys):
    assert age(capsys, tmp_path, *SMALL).code == 0
    files = on_disk(tmp_path)
    manifest = tmp_path / "iowatt-age" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["files"].append({"path": "../outside", "size": 1})
    manifest.write_text(json.dumps(m))
    assert_user_error(age(capsys, tmp_path, "--cleanup"), str(manifest), "nothing was deleted")
    assert on_disk(tmp_path) == files
