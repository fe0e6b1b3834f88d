"""Dask clusters iowatt runs on: ``--cluster`` parsed (:mod:`iowatt.fleet.spec`) and started
or reached (:mod:`iowatt.fleet.cluster`); docs/fleets.md."""
