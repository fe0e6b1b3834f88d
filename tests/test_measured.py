"""After a bench: what was measured (target, device, page cache), the report, the next step."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowatt.measured import measured
from support.cli import iowatt, manifest, runs_in
from support.wmlfile import one_thread

QUICK = ("--runtime", "300ms", "--filesize", "4m", "--no-report")


def _lines(out: str) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line for line in out.splitlines() if " " in line}


@pytest.mark.parametrize(
    ("flag", "cache"),
    [("--directio", "O_DIRECT, the page cache bypassed"),
     ("--buffered", "buffered I/O, through the page cache")],
)  # fmt: skip
def test_a_bench_says_whether_its_results_went_through_the_page_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, cache: str
) -> None:
    target = Path("/var/tmp")  # ext4 here: O_DIRECT works, unlike on tmpfs
    r = iowatt(capsys, "bench", "randomread", flag, "--target", target, *QUICK,
               "--results", tmp_path / "results")  # fmt: skip
    assert r.code == 0, r.err
    said = _lines(r.out)
    assert said["measured"].startswith(f"measured {target} on ")
    assert said["measured"].endswith(cache)
    if flag == "--buffered":
        assert "--directio measures the device without the page cache" in said["next:"]
    else:
        assert "iowatt compare" in said["next:"]


def test_a_bench_on_memory_or_the_scratch_directory_suggests_a_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = iowatt(capsys, "bench", "randomread", "--target", "/dev/shm", *QUICK,
               "--results", tmp_path / "results")  # fmt: skip
    assert r.code == 0, r.err
    said = _lines(r.out)
    assert said["measured"] == (
        "measured /dev/shm on memory (tmpfs): no device, the files live in the page cache"
    )
    assert "--target DIR" in said["next:"]
    r = iowatt(capsys, "bench", "randomread", *QUICK, "--results", tmp_path / "results")
    assert "--target DIR" in _lines(r.out)["next:"]


def test_a_workload_file_mixing_direct_and_buffered_flowops_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "mixed.f"
    f.write_text(
        "set $dir=/tmp\n"
        "define fileset name=a,path=$dir,entries=2,dirwidth=2,size=64k,prealloc\n"
        + one_thread(
            "read name=direct,filesetname=a,iosize=4k,random,directio",
            "read name=cached,filesetname=a,iosize=4k,random",
        )
        + "run 1\n"
    )
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", f, "--target", "/var/tmp", "--runtime", "300ms", "--no-report",
               "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    what = measured(manifest(run_dir))
    assert what is not None and what.cached is None
    assert what.cache == "partly: some operations O_DIRECT, others buffered"
