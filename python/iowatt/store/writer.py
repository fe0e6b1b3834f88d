"""Writing a run: files kept in memory, then written to a hidden temporary directory and renamed
into place, so a reader never sees half a run and a full disk at the end loses nothing.

Before anything is measured the writer creates ``RESULTS/.tmp-<run-id>/`` with an owner record,
``owner.json``, and holds a lock on the directory while the run lasts. The record names what the
run will create outside the results directory (its work directory in the target), before it is
created, so ``iowatt runs --check`` can tell a run that is still going from one whose process
was killed, and remove what a killed run left, knowing iowatt created it. docs/run-store.md has
the details.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import StoreError
from iowatt.store.lock import try_lock
from iowatt.store.manifest import MANIFEST, SUMMARY, run_manifest, run_summary

if TYPE_CHECKING:
    import pyarrow as pa

OWNER = "owner.json"
MARKER = ".iowatt-run"  # in each directory a run creates in its target: the run's id
TMP_PREFIX = ".tmp-"
# Room a run needs in the results directory: its files are KBs to a few MBs; what is left after
# this much is the margin that keeps a nearly full disk from failing at the end.
MIN_FREE_BYTES = 16 * 2**20
# Where a run goes when the results directory cannot take it (first that works).
RESCUE_ENV = "IOWATT_RESCUE_DIR"
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)
# Owner locks this process holds, by temporary directory (a sweep's journal is resumed by the
# process that started it, and flock would refuse it a second lock on the same file).
_HELD: dict[Path, int] = {}


def new_run_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{kind}-{secrets.token_hex(3)}"


def make_marked(path: Path, run_id: str) -> Path:
    """Creates ``path`` as a directory of run ``run_id``'s, with the marker naming the run (on
    another host of a fleet, where no owner record of this machine's can list it)."""
    path.mkdir()
    (path / MARKER).write_text(run_id)
    return path


def write_atomic(path: Path, data: bytes) -> None:
    """Replaces ``path`` with ``data`` all at once: a reader sees the old file or the new one,
    and a crash leaves one of them, never half of either."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class RunWriter:
    """Holds a run's files until :meth:`commit` publishes them; owns ``.tmp-<run-id>``."""

    def __init__(self, results: Path, run_id: str) -> None:
        self.results = results
        self.run_id = run_id
        self.final = results / run_id
        self.tmp = results / f"{TMP_PREFIX}{run_id}"
        self.files: dict[str, bytes] = {}
        self._owner: dict[str, Any] = {"run_id": run_id, "pid": os.getpid(), "creates": []}
        _prepare(results)
        try:
            self.tmp.mkdir()
            # The lock is on the directory itself (the record in it is replaced as it grows),
            # taken before the record is written: `runs --check` leaves young unrecorded ones.
            fd = os.open(self.tmp, os.O_RDONLY | os.O_CLOEXEC)
            try_lock(fd)
            _HELD[self.tmp] = fd
            self._write_owner()
        except OSError as e:
            self.abandon()
            raise _unwritable(results, e) from None

    @classmethod
    def resume(cls, tmp: Path, run_id: str) -> RunWriter:
        """A writer for a temporary run directory that already exists (a sweep's journal),
        taking over its owner lock if its process is gone."""
        writer = cls.__new__(cls)
        writer.results = tmp.parent
        writer.run_id = run_id
        writer.final = tmp.parent / run_id
        writer.tmp = tmp
        writer.files = {}
        writer._owner = {"run_id": run_id, "pid": os.getpid(), "creates": created(tmp)}
        if tmp not in _HELD:
            fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
            while not try_lock(fd):  # the dying process's lock goes with it
                time.sleep(0.01)
            _HELD[tmp] = fd
        return writer

    def creates(self, path: Path) -> Path:
        """Records ``path``, then creates it as this run's directory in the target (with a
        marker naming the run): a killed run's leftovers are found, and known to be iowatt's."""
        self._owner["creates"].append(str(path.absolute()))
        self._write_owner()
        return make_marked(path, self.run_id)

    def finish(
        self,
        kind: str,
        reason: str | None,
        *,
        started_ns: int,
        seed: int | None,
        labels: Mapping[str, str],
        config: Mapping[str, Any],
        summary: Mapping[str, Any],
        clock_anchor: Sequence[int] | None = None,
        host: Mapping[str, Any] | None = None,
        ended_ns: int | None = None,
        manifest_extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Writes the run's manifest.json and summary.json: the common keys from these
        arguments (``reason`` None for a complete run), the verb's own from ``config``,
        ``summary`` (its sections) and ``manifest_extra``. Returns the summary as written."""
        manifest = run_manifest(
            self.run_id,
            kind,
            reason,
            started_ns,
            seed,
            labels,
            config,
            clock_anchor=clock_anchor,
            host=host,
            ended_ns=ended_ns,
            extra=manifest_extra,
        )
        written = run_summary(self.run_id, kind, reason, summary)
        self.write_json(MANIFEST, manifest)
        self.write_json(SUMMARY, written)
        return written

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        self.files[name] = _json(data)

    def write_table(self, name: str, table: pa.Table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        self.files[name] = sink.getvalue().to_pybytes()

    def write_text(self, name: str, text: str) -> None:
        self.files[name] = text.encode()

    def commit(self) -> Path:
        """Writes the files and renames the directory into place. A results directory that is
        full or has become unwritable gets nothing half-written: the run goes to a rescue
        directory instead, and :class:`StoreError` says where."""
        for path in self._owner["creates"]:
            remove_created(Path(path), self.run_id)  # gone already, unless its process died
        try:
            for name, data in self.files.items():
                _write_synced(self.tmp / name, data)
            for f in self.tmp.iterdir():  # a sweep's journal files, written as it went
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
            (self.tmp / OWNER).unlink()
            os.rename(self.tmp, self.final)
            fsync_dir(self.results)
        except OSError as e:
            if e.errno not in _NO_ROOM:
                raise
            raise self._rescue(e) from None
        finally:
            self.release()
        return self.final

    def abandon(self) -> None:
        """Drops the run: nothing of it is kept (an internal failure, not the user's)."""
        self.release()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def release(self) -> None:
        """Lets go of the owner lock (the run is committed, or abandoned)."""
        fd = _HELD.pop(self.tmp, None)
        if fd is not None:
            os.close(fd)

    def _write_owner(self) -> None:
        write_atomic(self.tmp / OWNER, json.dumps(self._owner).encode())

    def _rescue(self, cause: OSError) -> StoreError:
        why = cause.strerror or str(cause)
        for base in rescue_dirs():
            dest = base / self.run_id
            try:
                dest.mkdir(parents=True)
                for f in self.tmp.iterdir() if self.tmp.exists() else ():
                    if f.name not in self.files and f.name != OWNER:
                        shutil.copyfile(f, dest / f.name)
                for name, data in self.files.items():
                    _write_synced(dest / name, data)
            except OSError:
                shutil.rmtree(dest, ignore_errors=True)
                continue
            shutil.rmtree(self.tmp, ignore_errors=True)
            return StoreError(
                f"could not write run `{self.run_id}` to `{self.results}` ({why});"
                f" it is saved in `{dest}`",
                f"make room, then `mv {dest} {self.results}/`: the next `iowatt runs` indexes it",
            )
        return StoreError(
            f"could not write run `{self.run_id}` to `{self.results}` ({why}), nor to any"
            f" rescue directory ({', '.join(str(d) for d in rescue_dirs())})",
            f"free space and rerun; set {RESCUE_ENV}=DIR to name another place for rescued runs",
        )


def rewrite_summary(run_dir: Path, summary: Mapping[str, Any]) -> None:
    """Replaces a committed run's summary.json with ``summary`` (read from it, then changed:
    a meter log imported after the run), all at once."""
    write_atomic(run_dir / SUMMARY, _json(summary))


def created(tmp: Path) -> list[str]:
    """What the owner record in a run's temporary directory says the run created."""
    try:
        return list(json.loads((tmp / OWNER).read_bytes()).get("creates", []))
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def remove_created(path: Path, run_id: str) -> bool | None:
    """Removes a directory run ``run_id`` created, if it is sure to be the run's own: marked
    with its id, or empty (made, but not yet marked). True if removed, False if kept as not
    the run's, None if it is not there."""
    if not path.is_dir() or path.is_symlink():
        return None
    try:
        mine = (path / MARKER).read_text() == run_id
    except OSError:
        mine = not any(path.iterdir())
    if mine:
        shutil.rmtree(path, ignore_errors=True)
    return mine


def check_output(path: Path, option: str) -> None:
    """Refuses, before any work, an output file that cannot be written: a directory, a file in
    a directory that does not exist, or one iowatt may not write in."""
    parent = path.parent
    if path.is_dir():
        raise StoreError(f"{option} `{path}` is a directory", "name a file, e.g. DIR/out.html")
    if not parent.is_dir():
        raise StoreError(
            f"{option} `{path}`: the directory `{parent}` does not exist",
            "create it first, or name a file in an existing directory",
        )
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise StoreError(
            f"{option} `{path}` cannot be written (no permission, or a read-only file system)",
            "name a file in a directory you may write to",
        )


def rescue_dirs() -> list[Path]:
    """Where runs go that the results directory could not take: ``$IOWATT_RESCUE_DIR``, then
    the user's state directory, then /var/tmp and /tmp."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    dirs = [Path(state) / "iowatt" / "rescued", Path("/var/tmp/iowatt-rescued")]
    dirs.append(Path(tempfile.gettempdir()) / "iowatt-rescued")
    if os.environ.get(RESCUE_ENV):
        dirs.insert(0, Path(os.environ[RESCUE_ENV]))
    return dirs


def _json(data: Mapping[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, default=str) + "\n").encode()


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _prepare(results: Path) -> None:
    """Creates the results directory and checks it can take a run, before anything runs."""
    if results.exists() and not results.is_dir():
        raise StoreError(
            f"the results path `{results}` is not a directory",
            "pass --results DIR (a directory, created if missing)",
        )
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _unwritable(results, e) from None
    usage = shutil.disk_usage(results)
    if usage.free < MIN_FREE_BYTES:
        raise StoreError(
            f"the results directory `{results}` has {usage.free // 2**20} MiB free; a run needs"
            f" {MIN_FREE_BYTES // 2**20} MiB",
            "free space there, or pass --results DIR on another file system",
        )


def _unwritable(results: Path, e: OSError) -> StoreError:
    return StoreError(
        f"cannot write to the results directory `{results}` ({e.strerror or e})",
        "pass --results DIR on a writable file system",
    )
