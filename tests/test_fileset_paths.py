"""A fileset's files and directories are opened, stat'ed, created, deleted and listed by their
whole path, as FileBench does: the lookups from `/` are work the file system under test pays
for (on NFS, FUSE or a deep tree), so a tool that skips them is not at equal work."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

# Every call that names a file: the `*at` forms with the directory they resolve from.
CALLS = ("open,openat,creat,stat,lstat,newfstatat,statx,unlink,unlinkat,mkdir,mkdirat,rmdir,"
         "getdents64")  # fmt: skip
WORKLOAD = """\
set $dir={dir}
define fileset name=deep,path=$dir,size=4k,entries=400,dirwidth=4,prealloc=50
define fileset name=dirs,path=$dir,size=0,leafdirs=40,dirwidth=4,prealloc=50
define process name=p,instances=1
{{
  thread name=churn,memsize=1m,instances=2
  {{
    flowop createfile name=create,filesetname=deep,fd=1
    flowop closefile name=close1,fd=1
    flowop openfile name=open,filesetname=deep,fd=1
    flowop closefile name=close2,fd=1
    flowop statfile name=stat,filesetname=deep
    flowop deletefile name=delete,filesetname=deep
  }}
  thread name=tree,memsize=64k
  {{
    flowop makedir name=mkdir,filesetname=dirs
    flowop listdir name=list,filesetname=dirs
    flowop removedir name=rmdir,filesetname=dirs
  }}
}}
run 1
"""
# A syscall line of `strace -f -y`: the thread, the call, its arguments.
LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)")
# A fileset entry's name: eight digits (FileBench's "%08d"), as a path component.
ENTRY = re.compile(r"(^|/)\d{8}(/|$)")


@pytest.mark.slow
def test_fileset_entries_are_reached_by_their_whole_path(tmp_path: Path) -> None:
    if shutil.which("strace") is None:
        pytest.fail("strace is missing: `bash .ci/test` installs it (Debian package strace)")
    target = tmp_path / "target"
    target.mkdir()
    wml = tmp_path / "paths.f"
    wml.write_text(WORKLOAD.format(dir=target))
    log = tmp_path / "strace.log"
    cmd = ["strace", "-f", "-qq", "-y", "-s", "512", "-e", f"trace={CALLS}", "-o", str(log),
           "iowatt",
           "bench", str(wml), "--target", str(target), "--results", str(tmp_path / "results"),
           "--no-report", "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr

    lines = log.read_text().splitlines()
    main_tid = LINE.match(lines[0]).group(1)  # type: ignore[union-attr]
    made: dict[str, int] = {}
    for line in lines:
        m = LINE.match(line)
        # The main thread lays the filesets out and removes them afterwards; the workers run
        # the flowops.
        if m is None or m.group(1) == main_tid:
            continue
        call, args = m.group(2), m.group(3)
        quoted = re.findall(r'"([^"]*)"', args)
        named = [p for p in quoted if ENTRY.search(p)]
        if call == "getdents64":
            # A listing reads a directory the worker opened by its whole path (`-y` shows it).
            dirfd = re.match(r"\d+<([^>]*)>", args)
            if dirfd and ENTRY.search(dirfd.group(1)) and dirfd.group(1).startswith(str(target)):
                made["list"] = made.get("list", 0) + 1
            continue
        for path in named:
            assert path.startswith(f"{target}/"), f"not by its whole path: {line}"
            if call.endswith("at") or call == "statx":
                assert args.startswith("AT_FDCWD"), f"resolved from a held directory: {line}"
            kind = {"openat": "open", "open": "open", "creat": "open", "newfstatat": "stat",
                    "statx": "stat", "stat": "stat", "lstat": "stat", "unlink": "delete",
                    "unlinkat": "delete", "mkdir": "mkdir", "mkdirat": "mkdir",
                    "rmdir": "rmdir"}[call]  # fmt: skip
            if kind == "open" and "O_CREAT" in args:
                kind = "create"
            made[kind] = made.get(kind, 0) + 1
    for kind in ("create", "open", "stat", "delete", "mkdir", "rmdir", "list"):
        assert made.get(kind, 0) > 0, f"no {kind} by a whole path among the workers' calls: {made}"
