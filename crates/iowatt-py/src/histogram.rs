//! A latency histogram as Python sees it: its buckets and the exact figures the engine keeps
//! beside them (every engine's results use this one shape).

use iowatt_metrics::{LatencyHistogram, LatencySoFar, LiveTally};
use pyo3::prelude::*;
use pyo3::types::PyDict;

pub fn hist_dict<'py>(py: Python<'py>, h: &LatencyHistogram) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let buckets = h.buckets();
    d.set_item(
        "value_ns",
        buckets.iter().map(|b| b.value_ns).collect::<Vec<_>>(),
    )?;
    d.set_item("count", buckets.iter().map(|b| b.count).collect::<Vec<_>>())?;
    d.set_item("min_ns", h.min())?;
    d.set_item("max_ns", h.max())?;
    d.set_item("mean_ns", h.mean())?;
    d.set_item("stdev_ns", h.stdev())?;
    d.set_item("saturated", h.saturated())?;
    Ok(d)
}

/// What a metrics scrape reads from a running engine: operations, bytes and errors so far,
/// the errors by kind and the latencies by the bands of `edges` (`_engine.LiveCounts`; one
/// shape for every engine).
pub fn live_dict<'py>(
    py: Python<'py>,
    (ops, bytes, errors): (u64, u64, u64),
    live: &LiveTally,
    edges: &[u64],
) -> PyResult<Bound<'py, PyDict>> {
    let d = so_far_dict(py, &live.latency_so_far(edges))?;
    d.set_item("ops", ops)?;
    d.set_item("bytes", bytes)?;
    d.set_item("errors", errors)?;
    d.set_item("errors_by_kind", live.errors_by_kind())?;
    Ok(d)
}

/// Latencies by band with their count and sum, as a scrape reads a histogram an engine keeps
/// beside its main one (`_engine.LiveLatency`).
pub fn so_far_dict<'py>(py: Python<'py>, s: &LatencySoFar) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bands", &s.bands)?;
    d.set_item("count", s.count)?;
    d.set_item("sum_ns", s.sum_ns)?;
    Ok(d)
}
