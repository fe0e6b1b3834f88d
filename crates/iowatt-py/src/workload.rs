//! `WorkloadRun`: a workload on the engine's handle for Python — JSON in, Python data out.

use iowatt_metrics::Handle;
use iowatt_workload::{FileIo, Output, Progress, Status, Workload, WorkloadError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{from_workload, raise};
use crate::histogram::{hist_dict, live_dict};
use crate::job::engine_job;

#[pyclass(module = "iowatt._core")]
pub struct WorkloadRun {
    handle: Handle<Workload>,
}

engine_job!(WorkloadRun, "run", start: once, progress: progress_dict, result: result_dict);

#[pymethods]
impl WorkloadRun {
    /// Builds the workload of a FileIO personality given as JSON (see `iowatt.bench`).
    #[new]
    fn new(py: Python<'_>, fileio_json: &str) -> PyResult<Self> {
        let fileio: FileIo = serde_json::from_str(fileio_json)
            .map_err(|e| raise(py, "ConfigError", format!("invalid workload: {e}"), None))?;
        let workload = fileio.build().map_err(|e| from_workload(py, &e))?;
        Ok(Self {
            handle: Handle::new(workload),
        })
    }

    /// Takes a whole workload model as JSON (what `iowatt.wml` builds from a `.f` file).
    #[staticmethod]
    fn from_model(py: Python<'_>, model_json: &str) -> PyResult<Self> {
        let workload: Workload = serde_json::from_str(model_json).map_err(|e| {
            raise(
                py,
                "ConfigError",
                format!("invalid workload model: {e}"),
                None,
            )
        })?;
        Ok(Self {
            handle: Handle::new(workload),
        })
    }

    /// Checks the model as a run would before starting, without running it.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        iowatt_workload::validate(self.handle.work()).map_err(|e| from_workload(py, &e))
    }

    /// The workload model (files, threads, flowops) as JSON.
    fn model_json(&self) -> String {
        serde_json::to_string(self.handle.work()).expect("the model serializes")
    }

    /// Makes the run wait, once prepared, in phase "ready" until released; before start().
    fn hold(&self) {
        self.handle.progress().hold();
    }

    /// Starts a held run's measuring at `realtime_ns` (time.time_ns()'s clock).
    fn release(&self, realtime_ns: u64) {
        self.handle.progress().release(realtime_ns);
    }

    /// What a metrics scrape reads: operations, bytes and errors so far (ramp included), and
    /// the measured latencies by the bands of `edges_ns` with their count and sum.
    fn live<'py>(&self, py: Python<'py>, edges_ns: Vec<u64>) -> PyResult<Bound<'py, PyDict>> {
        let progress = self.handle.progress();
        let s = progress.snapshot();
        live_dict(py, (s.ops, s.bytes, s.errors), progress.live(), &edges_ns)
    }
}

fn progress_dict<'py>(
    py: Python<'py>,
    _: &Workload,
    progress: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let s = progress.snapshot();
    let d = PyDict::new(py);
    d.set_item("phase", s.phase.as_str())?;
    d.set_item("prepared_bytes", s.prepared_bytes)?;
    d.set_item("prepare_total", s.prepare_total)?;
    d.set_item("ops", s.ops)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("errors", s.errors)?;
    d.set_item("measure_start_ns", s.measure_start_ns)?;
    d.set_item("measure_end_ns", s.measure_end_ns)?;
    Ok(d)
}

/// The output as plain Python data; the run's error if it could not start.
fn result_dict<'py>(
    py: Python<'py>,
    workload: &Workload,
    outcome: &Result<Output, WorkloadError>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = outcome.as_ref().map_err(|e| from_workload(py, e))?;
    output_dict(py, out, &workload.slow_ns)
}

fn output_dict<'py>(
    py: Python<'py>,
    out: &Output,
    slow_ns: &[u64],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (status, reason) = match &out.status {
        Status::Complete => ("complete", None),
        Status::Cancelled => ("cancelled", Some("interrupted".to_string())),
        Status::Failed(r) => ("failed", Some(r.clone())),
    };
    d.set_item("name", &out.name)?;
    d.set_item("status", status)?;
    d.set_item("reason", reason)?;
    d.set_item("measure_start_ns", out.measure_start_ns)?;
    d.set_item("measured_ns", out.measured_ns)?;
    d.set_item("cpu_usr_ns", out.cpu_usr_ns)?;
    d.set_item("cpu_sys_ns", out.cpu_sys_ns)?;
    d.set_item("errors_by_kind", out.errors_by_kind.clone())?;
    d.set_item("histogram", hist_dict(py, &out.histogram())?)?;
    let flowops = out
        .flowops
        .iter()
        .map(|f| {
            let fd = hist_dict(py, &f.hist)?;
            fd.set_item("name", &f.name)?;
            fd.set_item("kind", f.kind.as_str())?;
            fd.set_item("io", f.is_io())?;
            fd.set_item("ops", f.ops)?;
            fd.set_item("bytes", f.bytes)?;
            fd.set_item("errors", f.errors)?;
            Ok(fd)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("flowops", flowops)?;
    let open_loop = out
        .open_loop
        .as_ref()
        .map(|o| {
            let od = PyDict::new(py);
            od.set_item("rate", o.rate)?;
            od.set_item("events", o.events)?;
            od.set_item("drained", o.drained)?;
            od.set_item("not_issued", o.not_issued)?;
            od.set_item("outstanding", o.outstanding)?;
            Ok::<_, PyErr>(od)
        })
        .transpose()?;
    d.set_item("open_loop", open_loop)?;
    let iv = PyDict::new(py);
    let rows = &out.intervals;
    iv.set_item("t_ns", rows.iter().map(|r| r.t_ns).collect::<Vec<_>>())?;
    iv.set_item(
        "duration_ns",
        rows.iter().map(|r| r.duration_ns).collect::<Vec<_>>(),
    )?;
    iv.set_item("ops", rows.iter().map(|r| r.ops).collect::<Vec<_>>())?;
    iv.set_item("bytes", rows.iter().map(|r| r.bytes).collect::<Vec<_>>())?;
    iv.set_item("errors", rows.iter().map(|r| r.errors).collect::<Vec<_>>())?;
    iv.set_item("p50_ns", rows.iter().map(|r| r.p50_ns).collect::<Vec<_>>())?;
    iv.set_item("p99_ns", rows.iter().map(|r| r.p99_ns).collect::<Vec<_>>())?;
    iv.set_item(
        "p999_ns",
        rows.iter().map(|r| r.p999_ns).collect::<Vec<_>>(),
    )?;
    iv.set_item("max_ns", rows.iter().map(|r| r.max_ns).collect::<Vec<_>>())?;
    iv.set_item("slow_ns", slow_ns)?;
    iv.set_item(
        "slow_ops",
        rows.iter().map(|r| r.slow_ops.clone()).collect::<Vec<_>>(),
    )?;
    iv.set_item(
        "heat_ops",
        rows.iter().map(|r| r.heat_ops.clone()).collect::<Vec<_>>(),
    )?;
    d.set_item("intervals", iv)?;
    Ok(d)
}
