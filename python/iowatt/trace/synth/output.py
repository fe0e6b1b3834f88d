"""Writing a log all at once: text goes to a temporary file beside the output, gzip-compressed
when the name ends in ``.gz``, and is renamed into place only when complete.

Writing happens on a worker thread and compression on two more (zlib and file writes release
the GIL), so both overlap with drawing and formatting the next batch; a few batches at most wait
in between. Each batch is its own gzip member: a multi-member file is one gzip stream to gzip,
zcat, Python and iowatt's log reader (RFC 1952 §2.2), and lets batches compress in parallel.
"""

from __future__ import annotations

import gzip
import os
import queue
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import IO

GZIP_LEVEL = 6
_DONE = None


class AtomicOutput:
    """``with AtomicOutput(path) as out: out.write(chunk)`` — ``path`` appears complete or not
    at all (an exception, Ctrl-C included, removes the temporary file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: queue.Queue[tuple[memoryview | Future[bytes], object] | None] = queue.Queue(
            maxsize=2
        )
        self._gzip = path.name.endswith(".gz")
        self._pool = ThreadPoolExecutor(2, "log-gzip") if self._gzip else None
        self._error: BaseException | None = None
        self._tmp = ""
        self._raw: IO[bytes] | None = None
        self._worker: threading.Thread | None = None

    def __enter__(self) -> AtomicOutput:
        fd, self._tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )
        # mkstemp makes the file private; a log is as readable as any file the user creates.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        self._raw = os.fdopen(fd, "wb")
        self._worker = threading.Thread(target=self._drain, name="log-writer", daemon=True)
        self._worker.start()
        return self

    def write(self, data: memoryview, owner: object) -> None:
        """Queues ``data``; ``owner`` is kept alive until it is written (``data`` may be a view
        into it)."""
        if self._error is not None:
            raise self._error
        if self._pool is None:
            self._queue.put((data, owner))
        else:
            # No name and no time in the gzip header: the same log gives the same bytes.
            self._queue.put((self._pool.submit(gzip.compress, data, GZIP_LEVEL, mtime=0), owner))

    def _drain(self) -> None:
        assert self._raw is not None
        try:
            while (item := self._queue.get()) is not _DONE:
                data = item[0]
                self._raw.write(data.result() if isinstance(data, Future) else data)
            if self._gzip and self._raw.tell() == 0:
                self._raw.write(gzip.compress(b"", GZIP_LEVEL, mtime=0))  # an empty log
        except BaseException as e:
            self._error = e
            while self._queue.get() is not _DONE:  # let the producer finish and see the error
                pass

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._raw is not None and self._worker is not None
        try:
            self._queue.put(_DONE)
            self._worker.join()
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
            if error is None and self._error is not None:
                raise self._error
            if error is None:
                self._raw.flush()
                os.fsync(self._raw.fileno())
        except BaseException:
            self._raw.close()
            os.unlink(self._tmp)
            raise
        self._raw.close()
        if error is not None:
            os.unlink(self._tmp)
            return
        os.replace(self._tmp, self.path)
