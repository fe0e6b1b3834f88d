"""An emulated disk or array mounted for a bench script: `iowatt emulate mount` in the
background, ready once it says so, stopped with SIGTERM when the block ends."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn


@contextmanager
def mounted(
    iowatt: str,
    backing: Path,
    mount: Path,
    results: Path,
    *args: str,
    failed: Callable[[str], NoReturn],
    ready_s: float = 120.0,
) -> Iterator[dict[str, Path]]:
    """``iowatt emulate mount BACKING MOUNT ARGS`` until the block ends; then the run
    directory it wrote is in the yielded dict's ``run``. A mount not ready within ``ready_s``
    (an array walks BACKING first) or ending badly is handed to ``failed`` with what it said."""
    proc = subprocess.Popen(
        [iowatt, "emulate", "mount", str(backing), str(mount), "--results", str(results),
         "--no-report", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + ready_s
    while not any("mounted at" in line for line in err):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            reader.join(5)
            failed(f"`iowatt emulate mount` did not mount: {''.join(err).strip()}")
        time.sleep(0.02)
    out: dict[str, Path] = {}
    try:
        yield out
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=300)
        reader.join(5)
        found = re.search(r"^run: (.+)$", stdout, re.MULTILINE)
        if proc.returncode != 0 or found is None:
            failed(f"`iowatt emulate mount` ended with {proc.returncode}: {''.join(err).strip()}")
        out["run"] = Path(found.group(1))
