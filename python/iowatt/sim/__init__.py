"""The simulators of iowatt's "decide" step, one verb each (``iowatt sim server|raid|tasks``):

- server cooling: :mod:`~iowatt.sim.model` (the server model and workload files),
  :mod:`~iowatt.sim.curves` (fan–disk curves from sweeps, files or profiles),
  :mod:`~iowatt.sim.server` (plan, run, write) and :mod:`~iowatt.sim.tables` (the policy table);
- RAID power policies: :mod:`~iowatt.sim.disks` (disk models), :mod:`~iowatt.sim.requests`
  (traces: access logs, replay runs; block traces through :mod:`~iowatt.sim.block_traces`),
  :mod:`~iowatt.sim.fs_layout` (where a file system keeps a web site's metadata),
  :mod:`~iowatt.sim.raid` and :mod:`~iowatt.sim.raid_tables`;
- task packing: :mod:`~iowatt.sim.tasks`;
- :mod:`~iowatt.sim.record`, the manifest every simulation's run shares.
"""
