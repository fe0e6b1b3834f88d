"""The emulated disk (``iowatt emulate``): a directory served through FUSE as a disk of the
simulators' own model, with its power states and energy, and the ``emulate`` run it leaves.
docs/emulate.md has the design and its limits."""
