"""``iowatt replay``: a web trace replayed open-loop against a real server.

Every request of the trace goes out at its original relative time divided by the speed-up, on
an absolute schedule, whatever the server does; latency counts from that due time, so a server
stall shows instead of hiding. The run holds every request (``requests.parquet``), one row per
second (``intervals.parquet``), the latency and completion-time histograms of the measured
window (warm-up and cool-down cut by log time) and, with ``--power``, the power beside them.
"""

from iowatt.replay.plan import ReplayConfig, plan
from iowatt.replay.run import run

__all__ = ["ReplayConfig", "plan", "run"]
