//! `ServerSim`: the server cooling simulator on its handle for Python — the whole
//! configuration in as JSON, each run's figures, decisions and series out.

use iowatt_metrics::Handle;
use iowatt_sim::server::{Config, EventKind, Progress, RunOutput, ServerError, SERIES_COLUMNS};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::column_bytes;
use crate::errors::raise;
use crate::job::engine_job;

fn from_sim(py: Python<'_>, e: &ServerError) -> PyErr {
    let kind = match e {
        ServerError::Model(_) => "model",
        ServerError::Workload(_) => "workload",
        ServerError::Curve(_) => "curve",
        ServerError::Config(_) => "config",
    };
    let err = raise(py, "ConfigError", e.to_string(), None);
    if let Err(set) = err.value(py).setattr("kind", kind) {
        return set;
    }
    err
}

#[pyclass(module = "iowatt._core", frozen)]
pub struct ServerSim {
    handle: Handle<Config>,
}

engine_job!(ServerSim, "simulation", start: once, progress: progress_dict, result: result_dicts);

#[pymethods]
impl ServerSim {
    /// The configuration as `iowatt_sim::server::Config`'s JSON; checked here, before
    /// anything runs.
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let config: Config = serde_json::from_str(config_json)
            .map_err(|e| from_sim(py, &ServerError::Config(format!("the configuration: {e}"))))?;
        py.detach(|| config.check()).map_err(|e| from_sim(py, &e))?;
        Ok(Self {
            handle: Handle::new(config),
        })
    }
}

fn progress_dict<'py>(
    py: Python<'py>,
    config: &Config,
    p: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    use std::sync::atomic::Ordering::Relaxed;
    let d = PyDict::new(py);
    d.set_item("runs_done", p.runs_done.load(Relaxed))?;
    d.set_item("runs", config.runs().len())?;
    d.set_item(
        "simulated_s",
        p.ticks.load(Relaxed) as f64 * config.model.control.tick_ms / 1e3,
    )?;
    Ok(d)
}

/// One dict per run, in the order workload, policy, seed; the simulator's error if it failed.
fn result_dicts<'py>(
    py: Python<'py>,
    _: &Config,
    outcome: &Result<Vec<RunOutput>, ServerError>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let runs = outcome.as_ref().map_err(|e| from_sim(py, e))?;
    runs.iter().map(|r| run_dict(py, r)).collect()
}

fn run_dict<'py>(py: Python<'py>, r: &RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("workload", &r.workload)?;
    d.set_item("policy", r.policy.as_str())?;
    d.set_item("seed", r.seed)?;
    let status = match r.status {
        iowatt_sim::server::Status::Complete => "complete",
        iowatt_sim::server::Status::Cancelled => "cancelled",
        iowatt_sim::server::Status::TimedOut => "timed_out",
    };
    d.set_item("status", status)?;
    d.set_item("service_s", r.service_s)?;
    d.set_item("batch_speed", r.batch_speed)?;
    let e = PyDict::new(py);
    e.set_item("socket", r.energy.socket)?;
    e.set_item("memory", r.energy.memory)?;
    e.set_item("fans", r.energy.fans)?;
    e.set_item("disks", r.energy.disks)?;
    d.set_item("energy_j", e)?;
    d.set_item("peak_core_c", r.peak_core_c)?;
    d.set_item("peak_dimm_c", r.peak_dimm_c)?;
    d.set_item("gating_s", r.gating_s)?;
    d.set_item("mean_pwm", r.mean_pwm)?;
    d.set_item("hdd_mb", r.hdd_mb)?;
    d.set_item("ssd_mb", r.ssd_mb)?;
    d.set_item("migrations", r.migrations)?;
    d.set_item("events_total", r.events_total)?;
    let t: Vec<u64> = r.events.iter().map(|e| e.t_ns).collect();
    let kind: Vec<u8> = r.events.iter().map(|e| e.kind.code()).collect();
    let subject: Vec<u32> = r.events.iter().map(|e| e.subject).collect();
    let value: Vec<f64> = r.events.iter().map(|e| e.value).collect();
    let ev = PyDict::new(py);
    ev.set_item("t_ns", column_bytes(py, &t)?)?;
    ev.set_item("kind", column_bytes(py, &kind)?)?;
    ev.set_item("subject", column_bytes(py, &subject)?)?;
    ev.set_item("value", column_bytes(py, &value)?)?;
    ev.set_item("kinds", EventKind::NAMES.to_vec())?;
    d.set_item("events", ev)?;
    let series = PyDict::new(py);
    series.set_item("t_s", column_bytes(py, &r.series.t_s)?)?;
    for (name, column) in SERIES_COLUMNS.iter().zip(&r.series.columns) {
        series.set_item(*name, column_bytes(py, column)?)?;
    }
    d.set_item("series", series)?;
    Ok(d)
}
