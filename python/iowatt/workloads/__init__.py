"""iowatt's built-in FileMacro personalities as FileBench workload files (see :mod:`iowatt.wml`).

Each `.f` file follows the FileBench file of the same name (``filebench/filebench:workloads/``)
statement for statement; its header says which version.
"""
