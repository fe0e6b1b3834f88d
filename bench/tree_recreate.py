#!/usr/bin/env python3
"""How fast ``iowatt tree recreate --sparse`` makes the study's web-server tree, beside GNU tar
extracting an archive of the same tree, on the same fresh ext4 file system.

Usage (as root: loop devices and mounts)::

    python bench/tree_recreate.py                    # 500,000 files, the study's tree
    python bench/tree_recreate.py --files 50000      # the same proportions, scaled down
    python bench/tree_recreate.py --smoke            # 2,000 files, a check that it works

The manifest is generated, not snapshotted: the study's proportions (~509,000 files, ~44,000
directories, ~9,000 symlinks, ~47 GB) scaled to ``--files``: directories nest up to 8 deep
(each new one under a random earlier one, so a few are wide); files go to directories by a
Zipf-like weight (a few directories hold thousands, most a handful); sizes are a plausible web
server's: log-normal (median 6 KiB, sigma 2.2, so ~70 KB mean and ~47 GB for 509,000 files),
capped at 2 GiB; symlinks point at a random file by a relative path. Names are 24 hex digits,
as hashed names are, with a short extension on most files.

Steps: (1) a fresh ext4 (mkfs.ext4 with enough inodes) on a loop device over an image file in
``--img-dir`` (/dev/shm by default: in RAM, so other sessions' disk traffic does not add
noise); drop caches; time ``iowatt tree recreate MANIFEST MNT/tree --sparse`` then ``sync``;
(the programs themselves are read back into the page cache after dropping it, so
neither run pays for loading its tool from disk); (2) ``tar --sparse -cf`` an archive of that
tree (into --img-dir, outside the file system);
(3) unmount, mkfs again, mount, drop caches; time ``tar -xf ARCHIVE -C MNT/tree`` then ``sync``.
Each figure is files/s over the wall time of the command (and with its sync). Loop devices,
mounts, the image and the archive are removed at the end, on error and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import fmt, parse, ratio_line, render_table

# The study's tree (spec/replay-and-power.md, "Private file systems").
STUDY_FILES, STUDY_DIRS, STUDY_LINKS = 509_000, 44_000, 9_000
EXTENSIONS = [".html", ".gif", ".jpg", ".png", ".css", ".js", ".pdf", ".txt", ".ps", ""]
MAX_DEPTH = 8
T0 = 1_200_000_000 * 10**9


def name(rng: random.Random, ext: str = "") -> str:
    return f"{rng.getrandbits(96):024x}{ext}"


def generate(files: int, seed: int) -> dict[str, list]:
    """The manifest's columns for a tree of ``files`` files with the study's proportions."""
    rng = random.Random(seed)
    n_dirs = max(1, round(files * STUDY_DIRS / STUDY_FILES))
    n_links = round(files * STUDY_LINKS / STUDY_FILES)
    rows: dict[str, list] = {c: [] for c in ("path", "type", "size", "mode", "target")}

    def add(path: str, kind: str, size: int, mode: int, target: str | None = None) -> None:
        rows["path"].append(path)
        rows["type"].append(kind)
        rows["size"].append(size)
        rows["mode"].append(mode)
        rows["target"].append(target)

    dirs: list[str] = []
    depth: list[int] = []
    for _ in range(n_dirs):
        # Under a random earlier directory (or the top), as long as the depth allows.
        parent = rng.randrange(-1, len(dirs)) if dirs else -1
        while parent >= 0 and depth[parent] >= MAX_DEPTH:
            parent = rng.randrange(-1, parent)
        path = name(rng) if parent < 0 else f"{dirs[parent]}/{name(rng)}"
        dirs.append(path)
        depth.append(1 if parent < 0 else depth[parent] + 1)
        add(path, "dir", 0, 0o755)
    weights = [1.0 / (i + 1) ** 0.9 for i in range(n_dirs)]
    rng.shuffle(weights)
    homes = rng.choices(range(n_dirs), weights=weights, k=files)
    file_paths = []
    for d in homes:
        size = min(2 << 30, int(rng.lognormvariate(math.log(6144), 2.2)))
        path = f"{dirs[d]}/{name(rng, rng.choice(EXTENSIONS))}"
        file_paths.append(path)
        add(path, "file", size, 0o644)
    for _ in range(n_links):
        d = rng.randrange(n_dirs)
        target = rng.choice(file_paths)
        up = "../" * (depth[d])
        add(f"{dirs[d]}/{name(rng)}", "symlink", len(up + target), 0o777, up + target)
    n = len(rows["path"])
    rows["mtime_ns"] = [T0 + rng.randrange(10**17) for _ in range(n)]
    rows["atime_ns"] = [t + 10**9 for t in rows["mtime_ns"]]
    for c in ("allocated", "ctime_ns", "nlink"):
        rows[c] = [0] * n
    return rows


def sh(*args: str | Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=True, **kw)


class Disk:
    """A loop device with a fresh ext4 on it, mounted; undone by close() whatever happened."""

    def __init__(self, img_dir: Path, size: int, inodes: int) -> None:
        self.img = Path(
            tempfile.mkstemp(prefix="iowatt-tree-bench-", suffix=".img", dir=img_dir)[1]
        )
        self.mnt = Path(tempfile.mkdtemp(prefix="iowatt-tree-bench-mnt-"))
        self.size, self.inodes = size, inodes
        self.dev: str | None = None
        self.mounted = False

    def fresh(self) -> Path:
        self.unmount()
        os.truncate(self.img, 0)
        os.truncate(self.img, self.size)
        if self.dev is None:
            self.dev = sh(
                "losetup", "-f", "--show", self.img, capture_output=True, text=True
            ).stdout.strip()
        sh("mkfs.ext4", "-q", "-F", "-N", str(self.inodes), self.dev)
        sh("mount", self.dev, self.mnt)
        self.mounted = True
        sh("sync")
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        # Back in the page cache: the programs (python, pyarrow, iowatt's extension, tar), so
        # the timed runs measure the file system's work, not loading a tool from disk.
        sh(sys.executable, "-c", "import pyarrow.parquet, iowatt._core")
        sh("tar", "--version", stdout=subprocess.DEVNULL)
        return self.mnt

    def unmount(self) -> None:
        if self.mounted:
            sh("umount", self.mnt)
            self.mounted = False

    def close(self) -> None:
        try:
            self.unmount()
        finally:
            if self.dev is not None:
                subprocess.run(["losetup", "-d", self.dev], check=False)
            self.img.unlink(missing_ok=True)
            shutil.rmtree(self.mnt, ignore_errors=True)


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds of the command, and of the command then sync."""
    t0 = time.monotonic()
    sh(*args, stdout=subprocess.DEVNULL)
    t1 = time.monotonic()
    sh("sync")
    return t1 - t0, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=500_000, help="regular files in the tree")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated tree")
    ap.add_argument("--threads", type=int, help="iowatt's --threads (default: its own)")
    ap.add_argument("--img-dir", type=Path, default=Path("/dev/shm"),
                    help="where the image file and the tar archive go")  # fmt: skip
    ap.add_argument("--json-out", type=Path, help="write the figures here as JSON")
    args = parse(ap, {"files": 2000})
    if os.geteuid() != 0:
        sys.exit("run as root: the benchmark makes a loop device and mounts it")
    iowatt = shutil.which("iowatt")
    if iowatt is None or shutil.which("tar") is None:
        sys.exit("needs iowatt (pip install .) and GNU tar")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    from iowatt.tree import manifest

    t = time.monotonic()
    cols = generate(args.files, args.seed)
    n = len(cols["path"])
    counts = {k: cols["type"].count(k) for k in ("dir", "file", "symlink")}
    nbytes = sum(s for s, k in zip(cols["size"], cols["type"], strict=True) if k == "file")
    print(f"tree: {counts['file']:,} files, {counts['dir']:,} dirs, {counts['symlink']:,} "
          f"symlinks, {nbytes / 1e9:,.1f} GB (sparse) — generated in {time.monotonic() - t:.1f} s",
          file=sys.stderr)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="iowatt-tree-bench-", dir=args.img_dir))
    disk = Disk(args.img_dir, size=max(1 << 30, n * 6144), inodes=n + n // 4 + 1000)
    figures: dict[str, dict[str, float]] = {}
    try:
        man = work / "tree.parquet"
        manifest.write(cols, {"format": manifest.FORMAT, "key_id": "bench"}, man)
        del cols
        mnt = disk.fresh()
        cmd = [iowatt, "tree", "recreate", str(man), str(mnt / "tree"), "--sparse", "--quiet"]
        cmd += ["--threads", str(args.threads)] if args.threads else []
        figures["iowatt"] = dict(zip(("s", "s_sync"), timed(cmd), strict=True))
        archive = work / "tree.tar"
        sh("tar", "--sparse", "-cf", archive, "-C", mnt / "tree", ".")
        mnt = disk.fresh()
        (mnt / "tree").mkdir()
        tar = ["tar", "-xf", str(archive), "-C", str(mnt / "tree")]
        figures["tar"] = dict(zip(("s", "s_sync"), timed(tar), strict=True))
    finally:
        disk.close()
        shutil.rmtree(work, ignore_errors=True)
    files = counts["file"]
    rows = [["tool", "seconds", "files/s", "with sync: s", "files/s"]]
    for tool, f in figures.items():
        rows.append([tool, fmt(f["s"], 2), fmt(files / f["s"]), fmt(f["s_sync"], 2),
                     fmt(files / f["s_sync"])])  # fmt: skip
    print("\n".join(render_table(rows, right={1, 2, 3, 4})))
    ratio = figures["tar"]["s"] / figures["iowatt"]["s"]
    ratio_sync = figures["tar"]["s_sync"] / figures["iowatt"]["s_sync"]
    print(f"iowatt/tar files/s: {ratio:.2f}x ({ratio_sync:.2f}x with sync; goal >= 1.0)")
    ratio_line("files/s iowatt/tar", ratio, ">= 1.0")
    ratio_line("files/s iowatt/tar with sync", ratio_sync, ">= 1.0")
    if args.json_out:
        out = {"files": files, "dirs": counts["dir"], "links": counts["symlink"], **figures,
               "ratio": ratio, "ratio_sync": ratio_sync, "img_dir": str(args.img_dir)}  # fmt: skip
        args.json_out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
