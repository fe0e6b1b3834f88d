//! A latency histogram as Python sees it: its buckets and the exact figures the engine keeps
//! beside them (every engine's results use this one shape).

use iowatt_metrics::LatencyHistogram;
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
