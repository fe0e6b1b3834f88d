"""Helpers shared by the tests: fixtures of fake runs, the simulated BMC, waiting, masking."""
