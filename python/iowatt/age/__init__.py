"""``iowatt age``: fill a file system with files of random sizes, then delete a random share of
them, so benchmarks run on aged, fragmented free space rather than on a blank disk.

The storage-workloads study (``spec/storage-workloads.md``) filled 570 GB with files of 1 kB–75
GB, then deleted ~400 files of 50 kB–1 GB to free 37 GB. This module does the same from a seed:
sizes come from a log-uniform (or uniform) distribution, the files to delete are drawn at random
among those in a size window until enough bytes are freed, and every file is listed in
``DIR/iowatt-age/manifest.json``, so the state can be recreated elsewhere (:func:`recreate`) and
removed exactly (:func:`cleanup`).

The manifest is rewritten atomically as files are written and always names every file that may
exist: the next batch of files is listed as ``pending`` before it is written. A run stopped by
Ctrl-C, SIGTERM or a full file system leaves it with ``"status": "incomplete"`` and the reason.
The file system is synced once between the fill and the deletions (so that deleted files held
real blocks: with delayed allocation, a file deleted before writeback leaves no hole) and once at
the end.
"""

from iowatt.age.cleanup import cleanup, status
from iowatt.age.params import DEFAULT_DELETE, DEFAULT_SIZES, DISTS, AgeConfig
from iowatt.age.plan import plan
from iowatt.age.writer import recreate, run

__all__ = [
    "DEFAULT_DELETE",
    "DEFAULT_SIZES",
    "DISTS",
    "AgeConfig",
    "cleanup",
    "plan",
    "recreate",
    "run",
    "status",
]
