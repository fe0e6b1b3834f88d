"""``iowatt import``: results other tools already produced, stored as iowatt runs.

Each input file becomes one run of kind ``import`` with the same files and catalog rows as a
run iowatt measured, so ``iowatt runs``, ``compare`` and DuckDB queries treat both alike. The
mapping of every format and what it keeps exactly is in docs/import.md.

Every file is parsed into a :class:`Parsed` before anything is written, so a bad file among
many imports nothing; the input files are only read.
"""

from iowatt.imports.files import FORMATS, import_file, import_files, parse

__all__ = ["FORMATS", "import_file", "import_files", "parse"]
