"""When requests arrive: a non-homogeneous Poisson process whose rate follows the time of day
and the day of the week.

Web traffic has a strong daily cycle — quiet nights, busy days — and weekends below weekdays
(Arlitt & Williamson, "Web server workload characterization: the search for invariants",
SIGMETRICS 1996, §4; the thesis in ``spec/replay-and-power.md`` depends on exactly this
fluctuation). The rate is

    λ(t) = c · w(day of t) · exp(s · g(hour of t))
    g(h) = cos(2π(h − 15)/24) + 0.2 · cos(4π(h − 1)/24)

``g`` is a smooth daily curve, lowest around 4:30 and highest around 14:00, falling slowly
through the evening (the second harmonic skews it). ``s`` is solved so that the busiest hour's
mean rate is ``peak_ratio`` times the quietest hour's; ``w`` is 1 on Monday–Friday and
``weekend`` on Saturday and Sunday; ``c`` makes the mean rate over the whole log the one asked
for. All times are the server's local time, the one written in the log.

The rate is evaluated at the middle of each second; the number of requests in a second is then
Poisson with that mean (``--rate``), or, for a fixed total (``--requests``), the totals are
drawn multinomially — a Poisson process conditioned on its total count.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DAY = 86400
HOUR = 3600
SATURDAY = 5  # Monday is 0, as datetime.weekday() counts
PEAK_HOUR = 15.0  # where the first harmonic peaks
SKEW = 0.2  # weight of the second harmonic
SKEW_HOUR = 1.0


def _curve() -> npt.NDArray[np.float64]:
    """``g`` at the middle of each second of a day."""
    import numpy as np

    h = (np.arange(DAY, dtype=np.float64) + 0.5) / HOUR
    return np.cos(2 * np.pi * (h - PEAK_HOUR) / 24) + SKEW * np.cos(
        4 * np.pi * (h - SKEW_HOUR) / 24
    )


@functools.lru_cache(maxsize=4)
def daily_shape(peak_ratio: float) -> npt.NDArray[np.float64]:
    """The relative rate of each second of a day (mean 1), with its busiest hour
    ``peak_ratio`` times its quietest."""
    import numpy as np

    g = _curve()

    def ratio(s: float) -> float:
        hours = np.exp(s * (g - g.max())).reshape(24, HOUR).mean(axis=1)
        return float(hours.max() / hours.min())

    # The ratio grows with s from 1 (s = 0) without bound: bisect on it.
    lo, hi = 0.0, 1.0
    while ratio(hi) < peak_ratio:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ratio(mid) < peak_ratio else (lo, mid)
    shape = np.exp(hi * (g - g.max()))
    out: npt.NDArray[np.float64] = shape / shape.mean()
    out.flags.writeable = False  # shared by every caller through the cache
    return out


def hourly_shape(peak_ratio: float) -> npt.NDArray[np.float64]:
    """The mean relative rate of each hour of a day (mean 1): what a test compares counts to."""
    out: npt.NDArray[np.float64] = daily_shape(peak_ratio).reshape(24, HOUR).mean(axis=1)
    return out


def second_weights(
    start_local_s: int, seconds: int, peak_ratio: float, weekend: float
) -> npt.NDArray[np.float64]:
    """The relative rate of each second of a log that starts at ``start_local_s`` (local
    seconds since the epoch, a Thursday) and lasts ``seconds``."""
    import numpy as np

    shape = daily_shape(peak_ratio)
    t = start_local_s + np.arange(seconds, dtype=np.int64)
    # 1970-01-01 was a Thursday (weekday 3).
    weekday = (t // DAY + 3) % 7
    out: npt.NDArray[np.float64] = shape[t % DAY] * np.where(weekday >= SATURDAY, weekend, 1.0)
    return out


def scale_to_mean(weights: npt.NDArray[np.float64], mean_rate: float) -> float:
    """The factor that turns ``weights`` into rates averaging ``mean_rate`` per second."""
    total = float(weights.sum())
    return mean_rate * len(weights) / total if total > 0 else math.nan
