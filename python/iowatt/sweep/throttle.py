"""A block-I/O cgroup that holds this process and caps its write bytes/s per disk.

The emulated sweep driver slows a real device down with the kernel's blk-throttle: the iowatt
process (its Rust I/O threads included) moves into a cgroup of its own whose write limit per
device follows a disk profile. cgroup v1 ``blkio`` is used when mounted
(``blkio.throttle.write_bps_device``: ``MAJ:MIN BPS``, ``MAJ:MIN 0`` removes), else cgroup v2
with the ``io`` controller (``io.max``: ``MAJ:MIN wbps=N``, ``wbps=max`` removes).

Only I/O the process submits itself is throttled: O_DIRECT writes are, buffered writes are
written back by kernel threads outside the cgroup (under v1 always), so the generator must use
direct I/O, as the study's did. Limits apply to whole disks; the kernel refuses a partition.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from iowatt.errors import IowattError, SourceUnavailableError, TargetError
from iowatt.hostinfo import SYS, Mount, block_dir, read_mounts, read_text, whole_disk_dir

PROC_SELF_CGROUP = Path("/proc/self/cgroup")
V1_WRITE_BPS = "blkio.throttle.write_bps_device"
V2_IO_MAX = "io.max"
_NO_CONTROLLER_HINT = (
    "mount cgroup v1 blkio (mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio), or use a "
    "cgroup v2 host whose root lists `io` in cgroup.controllers"
)


@dataclass(frozen=True)
class Hierarchy:
    """The cgroup hierarchy that throttles: ``v1`` (blkio) or ``v2`` (io), and its mount."""

    version: str
    root: Path


def find_hierarchy(
    mounts: list[Mount] | None = None, v1_file: str = V1_WRITE_BPS, v2_controller: str = "io"
) -> Hierarchy | None:
    """cgroup v1 blkio if mounted, else cgroup v2 with the io controller, else ``None``; with
    ``v1_file`` and ``v2_controller``, another controller's (``memory.limit_in_bytes``,
    ``memory``)."""
    mounts = read_mounts() if mounts is None else mounts
    for m in mounts:
        if m.fs_type == "cgroup" and (Path(m.mount_point) / v1_file).exists():
            return Hierarchy("v1", Path(m.mount_point))
    for m in mounts:
        controllers = read_text(Path(m.mount_point) / "cgroup.controllers") or ""
        if m.fs_type == "cgroup2" and v2_controller in controllers.split():
            return Hierarchy("v2", Path(m.mount_point))
    return None


def whole_disk_devnum(devnum: int, sys_root: Path = SYS) -> int:
    """The device number of the disk that block device ``devnum`` is on (itself for a disk):
    blk-throttle limits whole disks only, and a partition's I/O is its disk's."""
    node = block_dir(devnum, sys_root)
    if node is None:
        raise TargetError(
            f"there is no block device {_majmin(devnum)}", "check the device still exists"
        )
    text = read_text(whole_disk_dir(node) / "dev") or ""
    major, _, minor = text.partition(":")
    if not (major.isdigit() and minor.isdigit()):
        raise TargetError(f"cannot find the disk of block device {_majmin(devnum)}", None)
    return os.makedev(int(major), int(minor))


class Throttle:
    """A cgroup holding this process, with per-disk write limits; see the module docstring.

    ``create`` makes it, ``enter`` moves the process in, ``set_write_bps`` caps a disk, and
    ``close`` undoes everything (limits, membership, directory) and may be called again.
    """

    def __init__(
        self,
        hierarchy: Hierarchy,
        path: Path,
        proc_cgroup: Path = PROC_SELF_CGROUP,
        sys_root: Path = SYS,
    ) -> None:
        self.hierarchy = hierarchy
        self._path = path
        self._proc_cgroup = proc_cgroup
        self._sys_root = sys_root
        self._limits: dict[int, int] = {}  # whole-disk devnum -> bytes/s
        self._original: Path | None = None  # where this process was before enter()
        self._removed = False

    @classmethod
    def create(
        cls,
        name: str,
        *,
        mounts: list[Mount] | None = None,
        proc_cgroup: Path = PROC_SELF_CGROUP,
        sys_root: Path = SYS,
    ) -> Throttle:
        """Make cgroup ``name`` at the root of the blkio (v1) or io (v2) hierarchy.

        ``mounts``, ``proc_cgroup`` and ``sys_root`` replace ``/proc/self/mountinfo``,
        ``/proc/self/cgroup`` and ``/sys`` (tests point them at a fake tree).
        """
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"cgroup name `{name}` is not a single directory name")
        hierarchy = find_hierarchy(mounts)
        if hierarchy is None:
            raise SourceUnavailableError(
                "no cgroup controller can throttle block I/O here: cgroup v1 blkio is not "
                "mounted and cgroup v2 has no io controller",
                _NO_CONTROLLER_HINT,
            )
        if hierarchy.version == "v2":
            # A v2 controller works in a child only once its parent delegates it. Left enabled
            # on close: other cgroups may have come to rely on it meanwhile, and it is harmless.
            control = hierarchy.root / "cgroup.subtree_control"
            if "io" not in (read_text(control) or "").split():
                _write(control, "+io", "enable the io controller")
        path = hierarchy.root / name
        try:
            make_cgroup(path)
        except OSError as e:
            raise _cgroup_error(e, f"cannot create cgroup `{path}`") from None
        return cls(hierarchy, path, proc_cgroup, sys_root)

    @property
    def path(self) -> Path:
        """The cgroup directory (a guardian removes it if this process dies)."""
        return self._path

    @property
    def version(self) -> str:
        """``v1`` (blkio) or ``v2`` (io)."""
        return self.hierarchy.version

    def enter(self) -> None:
        """Move this process, all its threads, into the cgroup; threads started later follow."""
        if self._original is not None:
            return
        original = self._current_cgroup()
        _write(self._path / "cgroup.procs", str(os.getpid()), "move this process into the cgroup")
        self._original = original

    def adopt(self, pids: list[int]) -> None:
        """Move other processes of this run (a local fleet's workers, which run the
        generators) into the cgroup too; they leave with this process."""
        for pid in pids:
            _write(self._path / "cgroup.procs", str(pid), f"move process {pid} into the cgroup")

    def set_write_bps(self, devnum: int, bps: int | None) -> int:
        """Cap writes to the disk of block device ``devnum`` at ``bps`` bytes/s (``None``
        removes the cap). A partition is mapped to its disk, so the cap covers the whole disk;
        returns the devnum that was throttled."""
        if bps is not None and bps <= 0:
            # 0 means "no limit" to the kernel, the opposite of what a caller would mean.
            raise ValueError(f"write limit `{bps}` must be positive; None removes the limit")
        disk = whole_disk_devnum(devnum, self._sys_root)
        v1 = self.version == "v1"
        if bps is None:
            line = f"{_majmin(disk)} 0" if v1 else f"{_majmin(disk)} wbps=max"
        else:
            line = f"{_majmin(disk)} {bps}" if v1 else f"{_majmin(disk)} wbps={bps}"
        what = f"limit writes to block device {_majmin(disk)}"
        try:
            _write(self._path / (V1_WRITE_BPS if v1 else V2_IO_MAX), line, what)
        except SourceUnavailableError as e:
            if isinstance(e.__cause__, OSError) and e.__cause__.errno == errno.ENODEV:
                raise TargetError(
                    f"the kernel cannot throttle block device {_majmin(disk)}",
                    "use a disk or loop device (not a partition or a device without a queue)",
                ) from None
            raise
        if bps is None:
            self._limits.pop(disk, None)
        else:
            self._limits[disk] = bps
        return disk

    def close(self) -> None:
        """Remove the limits, move the process back, delete the cgroup. Every step is tried;
        done steps are not redone, so calling it twice (or before ``enter``) is harmless.
        Raises :class:`SourceUnavailableError` naming what could not be undone."""
        problems: list[str] = []
        for disk in list(self._limits):
            try:
                self.set_write_bps(disk, None)
            except IowattError as e:
                problems.append(e.message)
        if self._original is not None:
            try:
                self._leave(self._original)
                self._original = None
            except IowattError as e:
                problems.append(e.message)
        if not self._removed:
            try:
                _remove_cgroup(self._path)
                self._removed = True
            except FileNotFoundError:
                self._removed = True
            except OSError as e:
                problems.append(f"cannot remove cgroup `{self._path}`: {e.strerror}")
        if problems:
            raise SourceUnavailableError(
                "; ".join(problems), f"once iowatt has ended: rmdir {self._path}"
            )

    def _leave(self, original: Path) -> None:
        # Children forked after enter() (a command run by a driver) inherited the cgroup and
        # would keep it from being removed: everything in it came from us, so all go back.
        pids = (read_text(self._path / "cgroup.procs") or "").split()
        for pid in dict.fromkeys([str(os.getpid()), *pids]):
            try:
                _write(original / "cgroup.procs", pid, "move this process back")
            except SourceUnavailableError as e:
                # A child that has exited meanwhile is not a problem.
                if pid == str(os.getpid()) or not isinstance(e.__cause__, ProcessLookupError):
                    raise

    def _current_cgroup(self) -> Path:
        """This process's cgroup directory in the throttling hierarchy."""
        for line in (read_text(self._proc_cgroup) or "").splitlines():
            hid, _, rest = line.partition(":")
            controllers, _, rel = rest.partition(":")
            v1_match = self.version == "v1" and "blkio" in controllers.split(",")
            v2_match = self.version == "v2" and hid == "0" and controllers == ""
            if v1_match or v2_match:
                path = self.hierarchy.root / rel.lstrip("/")
                if path.is_dir():
                    return path
                break
        raise SourceUnavailableError(
            f"cannot find this process's {self.version} cgroup under `{self.hierarchy.root}`",
            "run iowatt where /proc/self/cgroup and the cgroup mount agree (not in a nested "
            "namespace)",
        )


def _majmin(devnum: int) -> str:
    return f"{os.major(devnum)}:{os.minor(devnum)}"


def make_cgroup(path: Path) -> None:
    """Makes cgroup ``path``, first removing an empty one of that name an iowatt that was
    killed left behind."""
    try:
        path.mkdir()
    except FileExistsError:
        # Left by an iowatt that was killed before its guardian ran: empty, so removable.
        # One still holding processes is in use, and rmdir says so (EBUSY).
        _remove_cgroup(path)
        path.mkdir()


def _remove_cgroup(path: Path) -> None:
    # A cgroup directory is removed with rmdir although it lists control files.
    os.rmdir(path)


def _write(path: Path, text: str, what: str) -> None:
    """One ``write`` of ``text`` to a cgroup control file, as the kernel expects."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, f"{text}\n".encode())
        finally:
            os.close(fd)
    except OSError as e:
        raise _cgroup_error(e, f"cannot {what} (`{text}` > `{path}`)") from e


def _cgroup_error(e: OSError, message: str) -> SourceUnavailableError:
    if e.errno in (errno.EACCES, errno.EPERM):
        return SourceUnavailableError(f"{message}: permission denied", "run iowatt as root")
    if e.errno == errno.EROFS:
        return SourceUnavailableError(
            f"{message}: the cgroup filesystem is read-only",
            "in a container, run it privileged or with a writable /sys/fs/cgroup",
        )
    if e.errno == errno.EBUSY:
        return SourceUnavailableError(
            f"{message}: it is in use", "is another iowatt sweep running? if not, rmdir it"
        )
    return SourceUnavailableError(f"{message}: {e.strerror}", None)
