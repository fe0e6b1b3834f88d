//! What every engine handle's binding does the same way: start once, wait without the GIL,
//! and refuse a result before the end.

use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// `Ok` when `first` (the handle's `start` returned true), else the error naming `what`.
pub(crate) fn started(first: bool, what: &str) -> PyResult<()> {
    if first {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(format!(
            "the {what} was already started"
        )))
    }
}

/// Calls the handle's `wait` with up to `timeout_s` seconds, without the GIL.
pub(crate) fn wait_detached(
    py: Python<'_>,
    timeout_s: f64,
    wait: impl FnOnce(Duration) -> bool + Send,
) -> bool {
    let timeout = Duration::from_secs_f64(timeout_s.max(0.0));
    py.detach(|| wait(timeout))
}

/// The error of asking for `what`'s result before it has ended.
pub(crate) fn not_ended(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("the {what} has not ended; call wait()"))
}
