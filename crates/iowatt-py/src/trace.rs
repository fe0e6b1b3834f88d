//! Access logs and private names: reading a log into columns, key derivation and keyed name
//! hashing.

use std::io;
use std::path::PathBuf;

use iowatt_metrics::Handle;
use iowatt_trace::keys::{hash_name, Keys};
use iowatt_trace::{LogFile, LogFormat, Parsed, Requests};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::columns::column_bytes;
use crate::errors::raise;
use crate::job::engine_job;

fn key32(py: Python<'_>, key: &[u8]) -> PyResult<[u8; 32]> {
    key.try_into()
        .map_err(|_| raise(py, "ConfigError", "a derived key has 32 bytes".into(), None))
}

/// (names key, addresses key, key id) derived from a key file's bytes.
#[pyfunction]
pub fn derive_keys<'py>(
    py: Python<'py>,
    secret: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, String)> {
    let keys = Keys::derive(secret).map_err(|e| raise(py, "ConfigError", e.to_string(), None))?;
    Ok((
        PyBytes::new(py, &keys.names),
        PyBytes::new(py, &keys.addresses),
        keys.id,
    ))
}

/// Each name (bytes, as the file system has it) hashed with the names key.
#[pyfunction]
pub fn hash_names(
    py: Python<'_>,
    key: &[u8],
    names: Vec<Vec<u8>>,
    keep_extensions: bool,
) -> PyResult<Vec<String>> {
    let key = key32(py, key)?;
    Ok(py.detach(|| {
        names
            .iter()
            .map(|n| hash_name(&key, n, keep_extensions))
            .collect()
    }))
}

/// A whole access log, parsed on a thread of its own (so Python can import what it needs
/// meanwhile): counts, the first bad lines, and the requests in time order, in blocks of
/// little-endian column buffers (Arrow's layout: strings as offsets + data), each block a
/// record batch on the Python side.
#[pyclass(module = "iowatt._core", frozen)]
pub struct LogRead {
    handle: Handle<LogFile>,
}

engine_job!(LogRead, "log read", start: idempotent, result: result_dict);

#[pymethods]
impl LogRead {
    /// Checks the format (a ConfigError of kind `format` names the directive).
    #[new]
    fn new(py: Python<'_>, path: PathBuf, format: &str) -> PyResult<Self> {
        let format = LogFormat::parse(format).map_err(|e| {
            let err = raise(py, "ConfigError", e.to_string(), None);
            match err.value(py).setattr("kind", "format") {
                Ok(()) => err,
                Err(set) => set,
            }
        })?;
        Ok(Self {
            handle: Handle::new(LogFile { path, format }),
        })
    }
}

/// The parsed log; RunInterrupted if it was cancelled, ConfigError if the file could not be
/// read.
fn result_dict<'py>(
    py: Python<'py>,
    log: &LogFile,
    outcome: &io::Result<Parsed>,
) -> PyResult<Bound<'py, PyDict>> {
    match outcome {
        Ok(parsed) => log_dict(py, parsed),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            Err(raise(py, "RunInterrupted", "interrupted".into(), None))
        }
        Err(e) => Err(raise(
            py,
            "ConfigError",
            format!("`{}` cannot be read: {e}", log.path.display()),
            None,
        )),
    }
}

fn log_dict<'py>(py: Python<'py>, parsed: &Parsed) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("lines", parsed.lines)?;
    d.set_item("bad", parsed.bad)?;
    d.set_item("bad_lines", parsed.bad_lines.clone())?;
    d.set_item("out_of_order", parsed.out_of_order)?;
    let blocks = parsed
        .blocks
        .iter()
        .map(|r| block_dict(py, r))
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("blocks", blocks)?;
    Ok(d)
}

fn block_dict<'py>(py: Python<'py>, r: &Requests) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", r.len())?;
    d.set_item("time", column_bytes(py, &r.time)?)?;
    d.set_item("zone", column_bytes(py, &r.zone)?)?;
    d.set_item("line", column_bytes(py, &r.line)?)?;
    d.set_item("status", column_bytes(py, &r.status)?)?;
    d.set_item("bytes", column_bytes(py, &r.bytes)?)?;
    for (name, strings) in [
        ("host", &r.host),
        ("method", &r.method),
        ("target", &r.target),
        ("vhost", &r.vhost),
    ] {
        let offsets = column_bytes(py, &strings.offsets)?;
        d.set_item(name, (offsets, PyBytes::new(py, &strings.data)))?;
    }
    Ok(d)
}
