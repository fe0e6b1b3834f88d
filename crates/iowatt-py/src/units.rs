use pyo3::prelude::*;

use crate::errors::from_unit;

/// Bytes in a size string such as `8k` or `10g` (powers of 1024).
#[pyfunction]
pub fn parse_size(py: Python<'_>, text: &str) -> PyResult<u64> {
    iowatt_metrics::parse_size(text).map_err(|e| from_unit(py, e))
}

/// Nanoseconds in a duration string such as `500ms`, `3s` or `120` (seconds).
#[pyfunction]
pub fn parse_duration_ns(py: Python<'_>, text: &str) -> PyResult<u64> {
    iowatt_metrics::parse_duration_ns(text).map_err(|e| from_unit(py, e))
}
