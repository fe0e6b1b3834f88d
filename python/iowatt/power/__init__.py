"""Power and energy: sources sampled beside a workload, energy arithmetic, meter maps.

``sources`` parses what users name; ``recording`` samples them; ``energy`` integrates;
``meter_map`` derives per-disk watts from a shunt rig's log; ``summary`` is the power section of
a run's summary.json; ``record``, ``merge`` and ``compare`` are ``iowatt power record``,
``iowatt power import`` and ``iowatt energy compare``.
"""
