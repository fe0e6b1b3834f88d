"""The shapes of a run's Parquet files (docs/run-store.md documents every column)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

INTERVAL_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("workload", pa.string()),
        ("t_s", pa.float64()),
        ("duration_s", pa.float64()),
        ("mono_ns", pa.int64()),
        ("ops", pa.int64()),
        ("bytes", pa.int64()),
        ("errors", pa.int64()),
        ("ops_s", pa.float64()),
        ("mib_s", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("p999_ns", pa.int64()),
        ("max_ns", pa.int64()),
        # Operations above each slow threshold (the run's ``slow_ns``, 100 and 200 ms by
        # default), counted from the interval's histogram by the rule latency.parquet follows.
        ("slow_ns", pa.list_(pa.int64())),
        ("slow_ops", pa.list_(pa.int64())),
        # Operations per band of iowatt.histogram.HEAT_EDGES_NS (1-2-5 per decade, 1 µs to
        # 100 s; one more band than edges), for the latency heatmap. Empty in older runs.
        ("heat_ops", pa.list_(pa.int64())),
    ]
)
# A replay's intervals add these to the bench columns (docs/run-store.md, "replay runs").
REPLAY_INTERVAL_COLUMNS = [
    pa.field("trace_s", pa.float64()),
    pa.field("intended", pa.int64()),
    pa.field("sent", pa.int64()),
    pa.field("failed", pa.int64()),
    pa.field("success", pa.int64()),
    pa.field("success_rate", pa.float64()),
    pa.field("open", pa.float64()),
]
# A replay's requests.parquet: the trace's request and what the replay saw of it. Times are ns
# after the run's t0 (its `replay.t0_ns`), spans in ns; null where the moment never came.
REQUEST_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("seq", pa.int64()),
        ("line", pa.int64()),
        ("log_time_s", pa.int64()),
        ("offset_ns", pa.int64()),
        ("method", pa.string()),
        ("target", pa.string()),
        ("log_status", pa.int32()),
        ("log_bytes", pa.int64()),
        ("phase", pa.string()),
        ("due_ns", pa.int64()),
        ("sent_ns", pa.int64()),
        ("connected_ns", pa.int64()),
        ("first_byte_ns", pa.int64()),
        ("done_ns", pa.int64()),
        ("lateness_ns", pa.int64()),
        ("ttfb_ns", pa.int64()),
        ("completion_ns", pa.int64()),
        ("ttfb_sent_ns", pa.int64()),
        ("completion_sent_ns", pa.int64()),
        ("status", pa.int32()),
        ("bytes", pa.int64()),
        ("error", pa.string()),
        ("success", pa.bool_()),
    ]
)
LATENCY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("workload", pa.string()),
        ("flowop", pa.string()),
        ("value_ns", pa.int64()),
        ("count", pa.int64()),
    ]
)
POWER_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),
        ("channel", pa.string()),
        ("scope", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("watts", pa.float64()),
        ("joules", pa.float64()),
    ]
)
SENSOR_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),
        ("channel", pa.string()),
        ("unit", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("value", pa.float64()),
    ]
)
EVENT_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("source", pa.string()),
        ("kind", pa.string()),
        ("message", pa.string()),
    ]
)
# A sweep's measurements: one row per pass, step and disk (the hold window of that step).
STEP_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("disk", pa.string()),
        ("stimulus", pa.string()),
        ("unit", pa.string()),
        ("pass_no", pa.int32()),
        ("step", pa.int32()),
        ("value", pa.float64()),
        ("start_mono_ns", pa.int64()),
        ("end_mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("hold_s", pa.float64()),
        ("ops", pa.int64()),
        ("bytes", pa.int64()),
        ("errors", pa.int64()),
        ("mib_s", pa.float64()),
        ("iops", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("p999_ns", pa.int64()),
        ("max_ns", pa.int64()),
    ]
)
# A sweep's curves: one row per disk and stimulus value, over every pass that measured it.
CURVE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("disk", pa.string()),
        ("stimulus", pa.string()),
        ("unit", pa.string()),
        ("value", pa.float64()),
        ("passes", pa.int32()),
        ("mib_s", pa.float64()),
        ("mib_s_min", pa.float64()),
        ("mib_s_max", pa.float64()),
        ("mib_s_std", pa.float64()),
        ("norm", pa.float64()),
        ("norm_min", pa.float64()),
        ("norm_max", pa.float64()),
        ("iops", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("max_ns", pa.int64()),
    ]
)

# The catalog's views over every run's files: view → the schema its files are written with.
# A server simulation (iowatt.sim.server): one row per workload × policy × seed, the time
# series, and the policies' decisions (docs/run-store.md).
POLICY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("workload", pa.string()),
        ("policy", pa.string()),
        ("seed", pa.int64()),
        ("status", pa.string()),
        ("service_s", pa.float64()),
        ("speedup_vs_dlb", pa.float64()),
        ("batch_speed", pa.float64()),
        ("batch_slowdown", pa.float64()),
        ("socket_j", pa.float64()),
        ("memory_j", pa.float64()),
        ("fans_j", pa.float64()),
        ("total_j", pa.float64()),
        ("disks_j", pa.float64()),
        ("saving_socket", pa.float64()),
        ("saving_memory", pa.float64()),
        ("saving_fans", pa.float64()),
        ("saving_total", pa.float64()),
        ("peak_core_c", pa.float64()),
        ("peak_dimm_c", pa.float64()),
        ("gating_s", pa.float64()),
        ("mean_pwm", pa.float64()),
        ("hdd_mb", pa.float64()),
        ("ssd_mb", pa.float64()),
        ("migrations", pa.int64()),
        ("events_total", pa.int64()),
    ]
)
SIM_SERIES_COLUMNS = (
    "core_max_c",
    "dimm_max_c",
    "sink_c",
    "pwm",
    "disk_frac",
    "disk_mb_s",
    "ssd_mb_s",
    "cache_gb",
    "gating",
    "socket_w",
    "memory_w",
    "fans_w",
    "disks_w",
    "active_dimms",
    "batch_speed",
)
_KEYS = [
    ("run_id", pa.string()),
    ("workload", pa.string()),
    ("policy", pa.string()),
    ("seed", pa.int64()),
]
SIM_SERIES_SCHEMA = pa.schema(
    [*_KEYS, ("t_s", pa.float64())] + [(c, pa.float64()) for c in SIM_SERIES_COLUMNS]
)
SIM_EVENT_SCHEMA = pa.schema(
    [
        *_KEYS,
        ("t_s", pa.float64()),
        ("kind", pa.string()),
        ("subject", pa.int64()),
        ("value", pa.float64()),
    ]
)


# A fleet run's hosts (docs/run-store.md, "fleet runs"): its merged workloads are in the bench
# files above; each host's own seconds and histograms are these, with the host's name.
HOST_INTERVAL_SCHEMA = pa.schema(
    [INTERVAL_SCHEMA.field(0), ("host", pa.string()), *list(INTERVAL_SCHEMA)[1:]]
)
HOST_LATENCY_SCHEMA = pa.schema(
    [LATENCY_SCHEMA.field(0), ("host", pa.string()), *list(LATENCY_SCHEMA)[1:]]
)
HOSTS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("host", pa.string()),
        ("worker", pa.string()),  # its Dask address
        ("target", pa.string()),
        ("workload", pa.string()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("ops", pa.int64()),
        ("bytes", pa.int64()),
        ("errors", pa.int64()),
        ("runtime_s", pa.float64()),
        ("ops_s", pa.float64()),
        ("mib_s", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("p999_ns", pa.int64()),
        ("max_ns", pa.int64()),
        # Its clock against the driver's (worker − driver) and the round trip that measured it.
        ("offset_ns", pa.int64()),
        ("delay_ns", pa.int64()),
        # When it started after the first host did (driver's clock), and after its own target.
        ("start_skew_ns", pa.int64()),
        ("late_ns", pa.int64()),
        ("layout_s", pa.float64()),
    ]
)
VIEW_SCHEMAS = {
    "intervals": INTERVAL_SCHEMA,
    "latency": LATENCY_SCHEMA,
    "power": POWER_SCHEMA,
    "sensors": SENSOR_SCHEMA,
    "events": EVENT_SCHEMA,
    "steps": STEP_SCHEMA,
    "sweep": CURVE_SCHEMA,
    "requests": REQUEST_SCHEMA,
    "policies": POLICY_SCHEMA,
    "sim_series": SIM_SERIES_SCHEMA,
    "sim_events": SIM_EVENT_SCHEMA,
    "hosts": HOSTS_SCHEMA,
    "host_intervals": HOST_INTERVAL_SCHEMA,
    "host_latency": HOST_LATENCY_SCHEMA,
    # A simulator grid's rows: these columns, then the grid's keys and the simulator's figures
    # (docs/run-store.md, "simulator grids").
    "grid": pa.schema([("run_id", pa.string()), ("point", pa.int64()), ("error", pa.string())]),
}


def event_table(run_id: str, t0_ns: int, events: Sequence[Mapping[str, Any]]) -> pa.Table:
    """events.parquet from event dicts (``mono_ns``, ``source``, ``kind``, ``message``)."""
    return pa.table(
        {
            "run_id": [run_id] * len(events),
            "mono_ns": [e["mono_ns"] for e in events],
            "t_s": [(e["mono_ns"] - t0_ns) / 1e9 for e in events],
            "source": [e["source"] for e in events],
            "kind": [e["kind"] for e in events],
            "message": [e["message"] for e in events],
        },
        schema=EVENT_SCHEMA,
    )


# A RAID simulation (iowatt.sim.raid): one row per personality × seed, power per 15 s bin per
# disk (and the array, disk null), every request's times (docs/run-store.md).
RAID_RUN_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("personality", pa.string()),
        ("seed", pa.int64()),
        ("requests", pa.int64()),
        ("cache_hits", pa.int64()),
        ("duration_s", pa.float64()),
        ("energy_j", pa.float64()),
        ("mean_w", pa.float64()),
        ("saving_vs_raid0", pa.float64()),
        ("latency_p50_s", pa.float64()),
        ("latency_p99_s", pa.float64()),
        ("latency_max_s", pa.float64()),
        ("completion_p50_s", pa.float64()),
        ("completion_p99_s", pa.float64()),
        ("completion_max_s", pa.float64()),
        ("success_rate", pa.float64()),
        ("timeouts", pa.int64()),
        ("spin_cycles", pa.list_(pa.int64())),
        # Each disk's most spin-downs in any day of the trace, against its rating's share a
        # day (rated start/stop cycles over five years).
        ("most_cycles_a_day", pa.list_(pa.int64())),
        ("rated_cycles_per_day", pa.float64()),
        ("gear_shifts", pa.int64()),
        ("synced_bytes", pa.int64()),
        # The file system's own metadata reads and inode/journal writes, in 4 KiB blocks.
        ("fs_reads", pa.int64()),
        ("fs_writes", pa.int64()),
    ]
)
RAID_POWER_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("personality", pa.string()),
        ("seed", pa.int64()),
        ("disk", pa.int64()),
        ("t_s", pa.float64()),
        # The bin's width: bin_s, less for the last when the run ends within it.
        ("width_s", pa.float64()),
        ("energy_j", pa.float64()),
        ("mean_w", pa.float64()),
        ("standby_s", pa.float64()),
        ("spinning", pa.float64()),
    ]
)
RAID_REQUEST_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("personality", pa.string()),
        ("seed", pa.int64()),
        ("seq", pa.int64()),
        ("t_s", pa.float64()),
        ("offset", pa.int64()),
        ("bytes", pa.int64()),
        ("latency_ns", pa.int64()),
        ("completion_ns", pa.int64()),
        ("ok", pa.bool_()),
    ]
)
VIEW_SCHEMAS.update(
    {
        "raid_runs": RAID_RUN_SCHEMA,
        "raid_power": RAID_POWER_SCHEMA,
        "raid_requests": RAID_REQUEST_SCHEMA,
    }
)


# An emulated disk (iowatt.emulate): every request it served, with what the model charged.
EMULATE_REQUEST_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("t_s", pa.float64()),
        ("offset", pa.int64()),
        ("bytes", pa.int64()),
        ("write", pa.bool_()),
        ("latency_ns", pa.int64()),
        ("queued_ns", pa.int64()),
        ("service_ns", pa.int64()),
        ("overhead_s", pa.float64()),
        ("seek_s", pa.float64()),
        ("rotation_s", pa.float64()),
        ("transfer_s", pa.float64()),
        ("slowdown_s", pa.float64()),
        ("drained", pa.bool_()),
        ("failed", pa.bool_()),
        # The thread that asked (FUSE's pid): a stream of --scheduler cfq.
        ("stream", pa.int64()),
    ]
)
VIEW_SCHEMAS["disk_requests"] = EMULATE_REQUEST_SCHEMA


# A task-packing simulation (iowatt.sim.tasks): one row per set × disk × tasks per core × seed.
# A job is one instance of the set (the study's unit); a task, one of its tasks.
TASKS_SIM_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("set", pa.string()),
        ("disk", pa.string()),
        ("disk_model", pa.string()),
        ("per_core", pa.int64()),
        ("nodes", pa.int64()),
        ("seed", pa.int64()),
        ("tasks", pa.int64()),
        ("jobs", pa.float64()),
        ("makespan_s", pa.float64()),
        ("tasks_per_h", pa.float64()),
        ("jobs_per_h", pa.float64()),
        ("avg_w", pa.float64()),
        ("wh_per_task", pa.float64()),
        ("wh_per_job", pa.float64()),
        # The data disk's mean draw, the share of time it served, and of the cores busy.
        ("disk_w", pa.float64()),
        ("disk_busy", pa.float64()),
        ("cpu_busy", pa.float64()),
        ("out_of_memory", pa.string()),
    ]
)
VIEW_SCHEMAS["tasks_sim"] = TASKS_SIM_SCHEMA

# `iowatt tasks`: one row per task of the run, and the node sampled every half second.
TASKS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("index", pa.int64()),
        ("type", pa.string()),
        ("batch", pa.int64()),
        ("status", pa.string()),
        ("exit_code", pa.int64()),
        ("start_s", pa.float64()),
        ("end_s", pa.float64()),
        ("start_ns", pa.int64()),  # wall clock (UTC ns), for a resumed run's tasks carried over
        ("end_ns", pa.int64()),
        ("wall_s", pa.float64()),
        ("cpu_s", pa.float64()),
        ("bytes_read", pa.int64()),  # the block layer's (ru_inblock)
        ("rchar", pa.int64()),  # read(2) and friends, on any file system (/proc/PID/io)
        ("syscr", pa.int64()),
        ("max_rss_bytes", pa.int64()),
        ("host", pa.string()),
        ("error", pa.string()),
        ("summary", pa.string()),
    ]
)
UTILISATION_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("t_s", pa.float64()),
        ("cpu_busy", pa.float64()),
        ("disk_util", pa.float64()),
        ("read_mb_s", pa.float64()),
        ("mem_used_gb", pa.float64()),
        ("tasks_busy", pa.float64()),
    ]
)
VIEW_SCHEMAS.update({"tasks": TASKS_SCHEMA, "utilisation": UTILISATION_SCHEMA})
