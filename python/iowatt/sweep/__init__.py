"""``iowatt sweep``: step a stimulus, hold every disk at saturation, record each disk's curve.

:func:`iowatt.sweep.plan.plan` checks what the user asked for and builds a
:class:`~iowatt.sweep.plan.SweepConfig`; :func:`iowatt.sweep.runner.run` runs it and returns
the committed run directory. The method and the outputs are in docs/sweep.md.
"""
