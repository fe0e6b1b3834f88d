//! `Emulation`: the emulated disk on its handle for Python — the model and paths in; the
//! counters while mounted; every request's charge and every state change out.

use std::time::Duration;

use iowatt_emulate::{counters_json, Counters, EmulateError, Emulation as Work, Options, Progress};
use iowatt_metrics::Handle;
use iowatt_sim::disk::{DiskModel, State};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::column_bytes;
use crate::errors::raise;
use crate::job::engine_job;

#[pyclass(module = "iowatt._core", frozen)]
pub struct Emulation {
    handle: Handle<Work>,
}

engine_job!(Emulation, "emulated disk", start: once, progress: progress_dict, result: result_dict);

#[pymethods]
impl Emulation {
    /// BACKING served at MOUNT as a disk of `model_json` (a `DiskModel`, checked here):
    /// spinning down after `spin_down_s` idle (None: never), its rotational positions from
    /// `seed`, with the kernel's page cache above it only when `page_cache`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (backing, mount, model_json, *, name, spin_down_s, seed, page_cache))]
    fn new(
        py: Python<'_>,
        backing: std::path::PathBuf,
        mount: std::path::PathBuf,
        model_json: &str,
        name: &str,
        spin_down_s: Option<f64>,
        seed: u64,
        page_cache: bool,
    ) -> PyResult<Self> {
        let model: DiskModel = serde_json::from_str(model_json)
            .map_err(|e| raise(py, "ConfigError", format!("disk model `{name}`: {e}"), None))?;
        model
            .check(name)
            .map_err(|e| raise(py, "ConfigError", e.0, None))?;
        let spin_down = spin_down_s
            .map(|s| {
                Duration::try_from_secs_f64(s)
                    .map_err(|_| raise(py, "ConfigError", format!("--spin-down {s} s"), None))
            })
            .transpose()?;
        Ok(Self {
            handle: Handle::new(Work {
                options: Options {
                    backing,
                    mount,
                    model,
                    spin_down,
                    seed,
                    page_cache,
                },
            }),
        })
    }
}

fn counters_dict<'py>(
    py: Python<'py>,
    c: &Counters,
    model: &DiskModel,
) -> PyResult<Bound<'py, PyAny>> {
    let json = counters_json(c, model).to_string();
    py.import("json")?.call_method1("loads", (json,))
}

/// `{"ready": False}` until mounted, then the counters (`counters.json`'s keys) and ready.
fn progress_dict<'py>(
    py: Python<'py>,
    _: &Work,
    progress: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match (progress.counters(), progress.model()) {
        (Some(c), Some(m)) => {
            d.update(
                counters_dict(py, &c, m)?
                    .cast_into::<PyDict>()?
                    .as_mapping(),
            )?;
            d.set_item("ready", true)?;
        }
        _ => d.set_item("ready", false)?,
    }
    Ok(d)
}

/// The mount's zero on CLOCK_MONOTONIC, every request as column buffers (times in ns from
/// it; charges in s), the state changes and the counters at the end.
fn result_dict<'py>(
    py: Python<'py>,
    work: &Work,
    outcome: &Result<iowatt_emulate::Record, EmulateError>,
) -> PyResult<Bound<'py, PyDict>> {
    let r = outcome
        .as_ref()
        .map_err(|e| raise(py, "TargetError", e.to_string(), None))?;
    let d = PyDict::new(py);
    d.set_item("t0_ns", r.t0_ns)?;
    d.set_item("lazy_unmount", r.lazy_unmount)?;
    let s = &r.served;
    let col = |f: &dyn Fn(&iowatt_emulate::Served) -> u64| s.iter().map(f).collect::<Vec<_>>();
    let colf = |f: &dyn Fn(&iowatt_emulate::Served) -> f64| s.iter().map(f).collect::<Vec<_>>();
    let c = PyDict::new(py);
    c.set_item("arrived_ns", column_bytes(py, &col(&|x| x.arrived_ns))?)?;
    c.set_item("started_ns", column_bytes(py, &col(&|x| x.started_ns))?)?;
    c.set_item("done_ns", column_bytes(py, &col(&|x| x.done_ns))?)?;
    c.set_item("offset", column_bytes(py, &col(&|x| x.offset))?)?;
    c.set_item("bytes", column_bytes(py, &col(&|x| x.bytes))?)?;
    c.set_item("write", column_bytes(py, &col(&|x| u64::from(x.write)))?)?;
    c.set_item(
        "drained",
        column_bytes(py, &col(&|x| u64::from(x.drained)))?,
    )?;
    c.set_item(
        "overhead_s",
        column_bytes(py, &colf(&|x| x.charge.overhead_s))?,
    )?;
    c.set_item("seek_s", column_bytes(py, &colf(&|x| x.charge.seek_s))?)?;
    c.set_item(
        "rotation_s",
        column_bytes(py, &colf(&|x| x.charge.rotation_s))?,
    )?;
    c.set_item(
        "transfer_s",
        column_bytes(py, &colf(&|x| x.charge.transfer_s))?,
    )?;
    d.set_item("columns", c)?;
    let changes: Vec<(u64, &str)> = r
        .changes
        .iter()
        .map(|ch| (ch.t_ns, ch.state.name()))
        .collect();
    d.set_item("changes", changes)?;
    d.set_item(
        "states",
        State::ALL.iter().map(|s| s.name()).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "counters",
        counters_dict(py, &r.counters, &work.options.model)?,
    )?;
    Ok(d)
}
