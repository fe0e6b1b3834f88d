//! `raid_simulate`: one personality of the storage power-policy simulator on one trace and
//! seed — the array and personality in as JSON, the trace as column buffers, every request's
//! times and every disk's energy out. The simulation runs without the GIL.

use iowatt_metrics::LatencyHistogram;
use iowatt_sim::raid::{simulate, ArrayConfig, RaidError, Spec, Trace};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::columns::{column_bytes, values};
use crate::errors::raise;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    array: ArrayConfig,
    spec: Spec,
}

fn config_error(py: Python<'_>, message: String) -> PyErr {
    raise(py, "ConfigError", message, None)
}

/// `(value_ns, count)` buckets of `ns` as two little-endian uint64 buffers.
fn histogram<'py>(
    py: Python<'py>,
    ns: &[u64],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let mut h = LatencyHistogram::new();
    ns.iter().for_each(|&v| h.record(v));
    let (values, counts): (Vec<u64>, Vec<u64>) =
        h.buckets().iter().map(|b| (b.value_ns, b.count)).unzip();
    Ok((column_bytes(py, &values)?, column_bytes(py, &counts)?))
}

/// Simulates the `n` requests (`t_ns`, `offset`, `bytes`: little-endian uint64 buffers;
/// `write`: a uint8 flag each, or empty when all read; `dir_at`, `inode_at`: each file's
/// metadata blocks, or empty for a block trace) on the array and personality of
/// `config_json` with `seed`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn raid_simulate<'py>(
    py: Python<'py>,
    config_json: &str,
    n: usize,
    t_ns: &[u8],
    offset: &[u8],
    bytes: &[u8],
    write: &[u8],
    dir_at: &[u8],
    inode_at: &[u8],
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let request: Request = serde_json::from_str(config_json)
        .map_err(|e| config_error(py, format!("the configuration: {e}")))?;
    let shape = || {
        config_error(
            py,
            "the trace's columns do not have the shape the engine takes".into(),
        )
    };
    let trace = Trace {
        t_ns: values(t_ns, n).ok_or_else(shape)?,
        offset: values(offset, n).ok_or_else(shape)?,
        bytes: values(bytes, n).ok_or_else(shape)?,
        write: if write.is_empty() {
            Vec::new()
        } else {
            values::<u8>(write, n)
                .ok_or_else(shape)?
                .into_iter()
                .map(|w| w != 0)
                .collect()
        },
        dir_at: if dir_at.is_empty() {
            Vec::new()
        } else {
            values(dir_at, n).ok_or_else(shape)?
        },
        inode_at: if inode_at.is_empty() {
            Vec::new()
        } else {
            values(inode_at, n).ok_or_else(shape)?
        },
    };
    let run = py
        .detach(|| simulate(&request.array, &request.spec, &trace, seed))
        .map_err(|e| match e {
            RaidError::Model(m) | RaidError::Config(m) => config_error(py, m),
        })?;
    let d = PyDict::new(py);
    d.set_item("latency_ns", column_bytes(py, &run.latency_ns)?)?;
    d.set_item("completion_ns", column_bytes(py, &run.completion_ns)?)?;
    d.set_item("energy_j", run.energy_j.clone())?;
    d.set_item("latency_hist", histogram(py, &run.latency_ns)?)?;
    d.set_item("completion_hist", histogram(py, &run.completion_ns)?)?;
    d.set_item("spin_cycles", run.spin_cycles.clone())?;
    d.set_item("most_cycles_a_day", run.most_cycles_a_day.clone())?;
    d.set_item("fs_reads", run.fs_reads)?;
    d.set_item("fs_writes", run.fs_writes)?;
    let bins = |b: &Vec<Vec<f64>>| -> PyResult<Vec<Bound<'py, PyBytes>>> {
        b.iter().map(|v| column_bytes(py, v)).collect()
    };
    d.set_item("bin_energy_j", bins(&run.bin_energy_j)?)?;
    d.set_item("bin_standby_s", bins(&run.bin_standby_s)?)?;
    d.set_item("gears", run.gears.clone())?;
    d.set_item("end_ns", run.end_ns)?;
    d.set_item("cache_hits", run.cache_hits)?;
    d.set_item("synced_bytes", run.synced_bytes)?;
    Ok(d)
}
