"""``iowatt tasks``: run a set of independent tasks k per core on Dask, with their input data on
the locations named (a hard disk, an SSD), and measure jobs per hour, watts and Wh per job — the
high-throughput computing study's runner (docs/tasks.md). The simulator that predicts the same
figures is :mod:`iowatt.sim.tasks`; :mod:`iowatt.tasks.validate` sets one against the other.
"""
