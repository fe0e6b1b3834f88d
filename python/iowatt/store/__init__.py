"""The run store: one directory per run, written atomically, indexed in a DuckDB catalog.

Layout and schemas are documented in docs/run-store.md. ``runs`` finds and reads run
directories, ``writer`` assembles one under a hidden temporary name and renames it into place
(so readers never see half a run; a run that stopped early is still committed, with
``status: "incomplete"`` and the reason), ``manifest`` builds the keys every kind's
manifest.json and summary.json share, ``schemas`` are its Parquet tables' shapes, and
``catalog`` indexes runs in ``catalog.duckdb`` with views over every run's files.
"""
