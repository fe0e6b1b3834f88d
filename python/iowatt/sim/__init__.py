"""The simulators of iowatt's "decide" step, one module per part:

- :mod:`iowatt.sim.model` — the server model and the workload files (shipped TOML, a user's
  overrides), read and checked;
- :mod:`iowatt.sim.curves` — the fan–disk curve a simulation follows, from `iowatt sweep` runs,
  curve files or the built-in SATA profiles;
- :mod:`iowatt.sim.server` — ``iowatt sim server``: plan, run on the engine, write the run;
- :mod:`iowatt.sim.tables` — the policy table (speed-up, batch slowdown, energy against DLB)
  and the run's Parquet tables.
"""
