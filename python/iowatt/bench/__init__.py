"""``iowatt bench``: FileIO personalities, suites and FileBench workload files, run and stored.

:func:`plan` resolves and checks everything a run needs into a :class:`BenchConfig`; :func:`run`
executes it and returns the committed run directory. They are what ``iowatt bench`` calls, so
``run(plan(...))`` in a notebook gives the same run.

>>> from iowatt.bench import Options, plan, run
>>> run_dir = run(plan("randomread", Options(runtime="5s"), target=Path("/mnt/disk"), results=R))
"""

from iowatt.bench.config import BenchConfig, Options, WorkloadConfig
from iowatt.bench.execute import run
from iowatt.bench.plan import plan

__all__ = ["BenchConfig", "Options", "WorkloadConfig", "plan", "run"]
