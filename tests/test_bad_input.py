"""Every input a user can get wrong: one line naming the value, a hint, exit code 2."""

from __future__ import annotations

import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in

SHORT = ("--runtime", "1s", "--filesize", "8m", "--quiet")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("randomread", "--iosize", "4q"), "`4q`"),
        (("randomread", "--filesize", "ten"), "`ten`"),
        (("randomread", "--runtime", "3parsecs"), "`3parsecs`"),
        (("randomread", "--ramp", "-1s"), "`-1s`"),
        (("randomsideways",), "`randomsideways`"),
        (("randomread", "--engine", "libaio"), "`libaio`"),
        (("randomread", "--iodepth", "8"), "`8`"),
        (("--suite", "nosuch"), "`nosuch`"),
        (("randomread", "--label", "novalue"), "`novalue`"),
        (("randomread", "--nthreads", "0"), "`0`"),
        (("randomread", "--rate", "nan"), "`nan`"),
        (("randomread", "--filesize", "0"), "`0`"),
    ],
)
def test_bad_values_are_named_with_a_hint(tmp_path, capsys, args, named):
    r = iowatt(capsys, "bench", *args, "--target", tmp_path, "--results", tmp_path / "r")
    assert_user_error(r, named)


@pytest.mark.parametrize(
    ("args", "named", "hint"),
    [
        (("randomread", "--rate", "100", "--drain", "-1s"), "`-1s`", "--drain 10s"),
        (("randomread", "--rate", "100", "--drain", "soon"), "`soon`", "--drain 10s"),
        (("randomread", "--drain", "10s"), "`10s`", "--rate"),
        (("flat.f", "--drain", "5s"), "`5s`", "eventgen rate=N"),
    ],
)
def test_a_drain_that_cannot_apply_is_refused_before_any_work(tmp_path, capsys, args, named, hint):
    """--drain waits for what a schedule left in flight: negative, not a duration, or on a
    bench without a schedule (a workload file without an event generator) it is refused."""
    flat = tmp_path / "flat.f"
    flat.write_text(
        "define fileset name=s,path=$dir,size=4k,entries=4,prealloc=100\n"
        "define process name=p { thread name=t { flowop statfile name=st,filesetname=s } }\n"
        "run 1\n"
    )
    args = tuple(str(flat) if a == "flat.f" else a for a in args)
    r = iowatt(capsys, "bench", *args, "--target", tmp_path, "--results", tmp_path / "r")
    assert_user_error(r, named)
    assert hint in r.err
    assert not (tmp_path / "r").exists()


def test_a_missing_target_is_named_and_the_attempt_recorded(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "dir"
    r = iowatt(capsys, "bench", "randomread", *SHORT, "--target", missing,
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, str(missing))
    (run_dir,) = runs_in(tmp_path / "r")
    assert manifest(run_dir)["status"] == "incomplete"


@pytest.mark.needs_root
def test_a_read_only_target_is_refused(tmp_path, capsys, mounts):
    ro = mounts.mount("-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", target=tmp_path / "ro")
    r = iowatt(capsys, "bench", "randomread", *SHORT, "--target", ro, "--results", tmp_path / "r")
    assert_user_error(r, str(ro))


@pytest.mark.needs_root
def test_a_file_system_too_small_for_the_file_is_refused_before_writing(tmp_path, capsys, mounts):
    small = mounts.mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", target=tmp_path / "small")
    r = iowatt(capsys, "bench", "randomread", "--runtime", "1s", "--filesize", "64m",
               "--target", small, "--results", tmp_path / "r", "--quiet")  # fmt: skip
    assert_user_error(r, str(small), "64 MiB")
    assert list(small.iterdir()) == []


@pytest.mark.needs_root
def test_running_out_of_space_mid_run_keeps_the_run_and_says_so(tmp_path, capsys, mounts):
    small = mounts.mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", target=tmp_path / "small")
    # A sequential write grows its file until the file system is full.
    r = iowatt(capsys, "bench", "singlestreamwrite", "--runtime", "30s", "--target", small,
               "--results", tmp_path / "r", "--quiet")  # fmt: skip
    assert_user_error(r, "singlestreamwrite", "No space left")
    (run_dir,) = runs_in(tmp_path / "r")
    m = manifest(run_dir)
    assert m["status"] == "incomplete" and "No space left" in m["reason"]
    assert list(small.iterdir()) == [], "the partial file was removed"


@pytest.mark.slow
@pytest.mark.needs_root
def test_o_direct_unsupported_suggests_buffered(tmp_path, capsys, mounts):
    ramfs = mounts.mount("-t", "ramfs", "ramfs", target=tmp_path / "ramfs")
    r = iowatt(capsys, "bench", "randomread", "--directio", *SHORT, "--target", ramfs,
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, str(ramfs), "O_DIRECT")
    assert "--buffered" in r.err
    r = iowatt(capsys, "bench", "randomread", "--buffered", *SHORT, "--target", ramfs,
               "--results", tmp_path / "r2")  # fmt: skip
    assert r.code == 0, r.err


@pytest.mark.slow
@pytest.mark.needs_root
def test_a_block_device_with_a_file_system_is_refused_without_destroy_data(
    tmp_path, capsys, loop_device, sh
):
    sh("mkfs.ext4", "-q", "-F", loop_device)
    r = iowatt(capsys, "bench", "randomwrite", *SHORT, "--target", loop_device,
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, str(loop_device), "ext4")
    assert "--destroy-data" in r.err
    r = iowatt(capsys, "bench", "randomwrite", *SHORT, "--target", loop_device,
               "--results", tmp_path / "r", "--destroy-data")  # fmt: skip
    assert r.code == 0, r.err
    runs = [manifest(d) for d in runs_in(tmp_path / "r")]
    assert sorted(m["status"] for m in runs) == ["complete", "incomplete"]
