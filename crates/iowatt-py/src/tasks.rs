//! `tasks_simulate`: the task-packing simulator on one configuration (JSON in, the metrics
//! out), without the GIL.

use iowatt_sim::tasks::{simulate, Config, TasksError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::raise;

#[pyfunction]
pub fn tasks_simulate<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let config: Config = serde_json::from_str(config_json)
        .map_err(|e| raise(py, "ConfigError", format!("the configuration: {e}"), None))?;
    let run = py
        .detach(|| simulate(&config))
        .map_err(|TasksError::Invalid(m)| raise(py, "ConfigError", m, None))?;
    let d = PyDict::new(py);
    d.set_item("makespan_s", run.makespan_s)?;
    d.set_item("energy_j", run.energy_j)?;
    d.set_item("disk_j", run.disk_j)?;
    d.set_item("disk_busy_s", run.disk_busy_s)?;
    d.set_item("core_busy_s", run.core_busy_s)?;
    d.set_item("requests", run.requests)?;
    d.set_item("tasks", run.tasks.len())?;
    Ok(d)
}
