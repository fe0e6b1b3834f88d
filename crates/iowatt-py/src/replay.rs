//! `Replay`: a replay on its handle for Python — the plan's columns in, every request's record
//! and the window's histograms out.

use std::time::Duration;

use iowatt_metrics::Handle;
use iowatt_replay::{
    Config, ErrorKind, Histograms, Output, Plan, Progress, ReplayError, Status, TlsOptions,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::{column_bytes, values};
use crate::errors::raise;
use crate::histogram::{hist_dict, live_dict, so_far_dict};
use crate::job::engine_job;

fn from_replay(py: Python<'_>, e: &ReplayError) -> PyErr {
    let (class, kind) = match e {
        ReplayError::Plan(_) => ("ConfigError", "plan"),
        ReplayError::Target(_) => ("ConfigError", "target"),
        ReplayError::Unreachable { .. } => ("TargetError", "unreachable"),
        ReplayError::Io { .. } => ("TargetError", "io"),
    };
    let err = raise(py, class, e.to_string(), None);
    if let Err(set) = err.value(py).setattr("kind", kind) {
        return set;
    }
    err
}

#[pyclass(module = "iowatt._core", frozen)]
pub struct Replay {
    handle: Handle<iowatt_replay::Replay>,
}

engine_job!(Replay, "replay", start: once, progress: progress_dict, result: result_dict);

#[pymethods]
impl Replay {
    /// The plan as little-endian buffers of `n` rows: `due_ns` uint64 (non-decreasing),
    /// `method` uint8 codes into `methods`, `target_offsets` int64 (n + 1) over `target_data`,
    /// `client` uint32, `host_index` uint32 into `hosts` (the log's Host header per request,
    /// "" where a line has none; both empty when the log has none; `host` goes over them). Checked here, with the target URL, before anything is sent. An https
    /// target trusts the Mozilla roots and the PEM certificates of `ca_pem`, or with
    /// `insecure` any certificate.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (n, due_ns, method, methods, target_offsets, target_data, client, host_index, hosts, *, target, host, max_conns, keep_alive, timeout_s, threads, window, ca_pem=None, insecure=false))]
    fn new(
        py: Python<'_>,
        n: usize,
        due_ns: &[u8],
        method: &[u8],
        methods: Vec<String>,
        target_offsets: &[u8],
        target_data: &[u8],
        client: &[u8],
        host_index: &[u8],
        hosts: Vec<String>,
        target: String,
        host: Option<String>,
        max_conns: Option<usize>,
        keep_alive: bool,
        timeout_s: f64,
        threads: usize,
        window: (usize, usize),
        ca_pem: Option<Vec<u8>>,
        insecure: bool,
    ) -> PyResult<Self> {
        let shape = || {
            ReplayError::Plan("the plan's columns do not have the shape the engine takes".into())
        };
        let built = py.detach(|| {
            let offsets: Vec<i64> = values(target_offsets, n + 1).ok_or_else(shape)?;
            let plan = Plan {
                due_ns: values(due_ns, n).ok_or_else(shape)?,
                method: values(method, n).ok_or_else(shape)?,
                methods,
                target_offsets: offsets
                    .into_iter()
                    .map(|o| usize::try_from(o).map_err(|_| shape()))
                    .collect::<Result<_, _>>()?,
                target_data: target_data.to_vec(),
                client: values(client, n).ok_or_else(shape)?,
                host: if hosts.is_empty() {
                    Vec::new()
                } else {
                    values(host_index, n).ok_or_else(shape)?
                },
                hosts,
            };
            let config = Config {
                target,
                tls: TlsOptions { ca_pem, insecure },
                host,
                max_conns,
                keep_alive,
                timeout: Duration::try_from_secs_f64(timeout_s)
                    .map_err(|_| ReplayError::Plan(format!("timeout {timeout_s} s")))?,
                threads,
                window,
                ..Config::default()
            };
            iowatt_replay::Replay::new(plan, config)
        });
        Ok(Self {
            handle: Handle::new(built.map_err(|e| from_replay(py, &e))?),
        })
    }

    /// What a metrics scrape reads: requests ended (operations), body bytes, failures, the
    /// answered requests' completion times from their due time by the bands of `edges_ns`, and
    /// beside them (`beside`) their time to first byte from the due time (`ttfb`) and their
    /// completion from the send (`service`).
    fn live<'py>(&self, py: Python<'py>, edges_ns: Vec<u64>) -> PyResult<Bound<'py, PyDict>> {
        let progress = self.handle.progress();
        let p = progress.snapshot();
        let d = live_dict(
            py,
            (p.completed, p.bytes, p.failed),
            progress.live(),
            &edges_ns,
        )?;
        let beside = PyDict::new(py);
        for (name, so_far) in progress.live_beside(&edges_ns) {
            beside.set_item(name, so_far_dict(py, &so_far)?)?;
        }
        d.set_item("beside", beside)?;
        Ok(d)
    }
}

fn progress_dict<'py>(
    py: Python<'py>,
    replay: &iowatt_replay::Replay,
    progress: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let p = progress.snapshot();
    let d = PyDict::new(py);
    d.set_item("issued", p.issued)?;
    d.set_item("completed", p.completed)?;
    d.set_item("failed", p.failed)?;
    d.set_item("open", p.open)?;
    d.set_item("bytes", p.bytes)?;
    d.set_item("lateness_ns", p.lateness_ns)?;
    d.set_item("max_lateness_ns", p.max_lateness_ns)?;
    d.set_item("total", replay.plan().len())?;
    Ok(d)
}

/// Status, the schedule's zero on CLOCK_MONOTONIC, every request's record as column buffers
/// and the window's histograms (as a workload's); the replay's error if it failed.
fn result_dict<'py>(
    py: Python<'py>,
    _: &iowatt_replay::Replay,
    outcome: &Result<Output, ReplayError>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = outcome.as_ref().map_err(|e| from_replay(py, e))?;
    let d = PyDict::new(py);
    let status = match out.status {
        Status::Complete => "complete",
        Status::Cancelled => "cancelled",
    };
    d.set_item("status", status)?;
    d.set_item("t0_ns", out.t0_ns)?;
    d.set_item("elapsed_ns", out.elapsed_ns)?;
    let r = &out.records;
    let columns = PyDict::new(py);
    columns.set_item("due_ns", column_bytes(py, &r.due)?)?;
    columns.set_item("sent_ns", column_bytes(py, &r.sent)?)?;
    columns.set_item("connected_ns", column_bytes(py, &r.connected)?)?;
    columns.set_item("first_byte_ns", column_bytes(py, &r.first_byte)?)?;
    columns.set_item("done_ns", column_bytes(py, &r.done)?)?;
    columns.set_item("bytes", column_bytes(py, &r.bytes)?)?;
    columns.set_item("status", column_bytes(py, &r.status)?)?;
    columns.set_item("error", column_bytes(py, &r.error)?)?;
    d.set_item("columns", columns)?;
    d.set_item("errors", ErrorKind::NAMES.to_vec())?;
    d.set_item("histograms", histograms(py, &out.histograms)?)?;
    Ok(d)
}

fn histograms<'py>(py: Python<'py>, h: &Histograms) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, hist) in Histograms::NAMES.iter().zip(h.all()) {
        d.set_item(*name, hist_dict(py, hist)?)?;
    }
    Ok(d)
}
