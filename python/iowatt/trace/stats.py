"""``iowatt trace stats``: what a log holds — requests and bytes, the busiest second, requests
per hour, the status and method mix, the most requested targets — and its daily profile (mean
requests in each hour of the day, local time) drawn as a small bar chart."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from iowatt.units import format_bytes

if TYPE_CHECKING:
    import pyarrow as pa

TOP = 10
BAR = 40


def stats(table: pa.Table, top: int = TOP) -> dict[str, Any]:
    """The figures of ``table`` (a log's requests), as plain JSON-ready values."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    time_s = table["time_s"].to_numpy()
    local = time_s + table["zone_s"].to_numpy().astype(np.int64)
    sent = pc.sum(table["bytes"]).as_py() or 0
    per_second = np.bincount(time_s - time_s[0]) if n else np.zeros(0, np.int64)
    hours = np.bincount(local // 3600 - local.min() // 3600) if n else np.zeros(0, np.int64)
    first_day = int(local.min() // 86400) if n else 0
    per_day = np.bincount(local // 86400 - first_day) if n else np.zeros(0, np.int64)
    days = int(np.count_nonzero(per_day))
    hour_of_day = np.bincount((local // 3600) % 24, minlength=24) if n else np.zeros(24)

    def mix(column: str) -> dict[str, int]:
        counts = pc.value_counts(table[column])
        pairs = zip(
            counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
        )
        return {str(k): int(v) for k, v in sorted(pairs, key=lambda kv: (-kv[1], str(kv[0])))}

    targets = pc.value_counts(table["target"])
    order = np.argsort(-targets.field("counts").to_numpy(), kind="stable")[:top]
    top_targets = [
        {
            "target": targets.field("values")[int(i)].as_py(),
            "requests": int(targets.field("counts")[int(i)].as_py()),
        }
        for i in order
    ]
    status = table["status"].to_numpy()
    return {
        "requests": n,
        "bytes": int(sent),
        "start_s": int(time_s[0]) if n else None,
        "end_s": int(time_s[-1]) if n else None,
        "duration_s": len(per_second),
        "mean_per_s": n / len(per_second) if n else 0.0,
        "peak_per_s": int(per_second.max()) if n else 0,
        "per_hour": [int(h) for h in hours],
        # Local dates, so a week shows its weekdays and weekend.
        "per_day": {
            (dt.date(1970, 1, 1) + dt.timedelta(days=first_day + i)).isoformat(): int(c)
            for i, c in enumerate(per_day)
        },
        # Mean requests in each hour of the day over the days the log covers.
        "daily_profile": [float(h) / max(days, 1) for h in hour_of_day],
        "days": days,
        "status_classes": {
            f"{c}xx": int(np.count_nonzero(status // 100 == c)) for c in range(1, 6)
        },
        "status": mix("status"),
        "methods": mix("method"),
        "top_targets": top_targets,
        "distinct_targets": len(targets),
    }


def render(figures: dict[str, Any], counts: dict[str, Any]) -> str:
    """The figures as a short text report."""
    n = figures["requests"]
    lines = [
        f"{counts['lines']:,} lines: {n:,} requests, {counts['bad']:,} bad, "
        f"{counts['out_of_order']:,} out of order",
    ]
    for bad in counts["bad_lines"][:3]:
        lines.append(f"  line {bad['line']}: {bad['reason']}")
    lines.append(
        f"{format_bytes(figures['bytes'])} sent over {figures['duration_s']:,} s; "
        f"{figures['mean_per_s']:.2f} requests/s on average, {figures['peak_per_s']} at the peak"
    )
    classes = ", ".join(
        f"{k} {v / max(n, 1):.1%}" for k, v in figures["status_classes"].items() if v
    )
    lines.append(f"status: {classes}")
    methods = ", ".join(f"{k} {v:,}" for k, v in figures["methods"].items())
    lines.append(f"methods: {methods}")
    lines.append(f"top {len(figures['top_targets'])} of {figures['distinct_targets']:,} targets:")
    for t in figures["top_targets"]:
        lines.append(f"  {t['requests']:>10,}  {t['target']}")
    per_hour = figures["per_hour"]
    if len(per_hour) <= 48:
        lines.append("requests per hour: " + " ".join(f"{h:,}" for h in per_hour))
    elif len(figures["per_day"]) <= 62:
        lines.append("requests per day:")
        for day, count in figures["per_day"].items():
            weekday = dt.date.fromisoformat(day).strftime("%a")
            lines.append(f"  {weekday} {day} {count:>12,}")
    lines.append(
        f"daily profile (mean requests per hour of the day, local time, {figures['days']} day(s)):"
    )
    profile = figures["daily_profile"]
    peak = max(profile) or 1.0
    for hour, value in enumerate(profile):
        bar = "█" * round(BAR * value / peak)
        lines.append(f"  {hour:02d}h {bar:<{BAR}} {value:,.0f}")
    return "\n".join(lines)
