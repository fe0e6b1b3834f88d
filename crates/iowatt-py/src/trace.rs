//! Access logs and private names: reading a log into columns, key derivation and keyed name
//! hashing.

use iowatt_trace::keys::{hash_name, Keys};
use iowatt_trace::{read_log as read, LogFormat};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::raise;

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

fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to: fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&to(v));
    }
    PyBytes::new(py, &out)
}

/// A whole access log, parsed without the GIL: counts, the first bad lines, and the requests
/// in time order as little-endian column buffers (Arrow's layout: strings as offsets + data).
#[pyfunction]
pub fn read_log<'py>(py: Python<'py>, path: &str, format: &str) -> PyResult<Bound<'py, PyDict>> {
    let format = LogFormat::parse(format).map_err(|e| {
        let mut err = raise(py, "ConfigError", e.to_string(), None);
        if let Err(set) = err.value(py).setattr("kind", "format") {
            err = set;
        }
        err
    })?;
    let parsed = py
        .detach(|| read(std::path::Path::new(path), &format))
        .map_err(|e| {
            raise(
                py,
                "ConfigError",
                format!("`{path}` cannot be read: {e}"),
                None,
            )
        })?;
    let r = &parsed.requests;
    let d = PyDict::new(py);
    d.set_item("lines", parsed.lines)?;
    d.set_item("bad", parsed.bad)?;
    d.set_item("bad_lines", parsed.bad_lines.clone())?;
    d.set_item("out_of_order", parsed.out_of_order)?;
    d.set_item("count", r.len())?;
    d.set_item("time", le_bytes(py, &r.time, i64::to_le_bytes))?;
    d.set_item("zone", le_bytes(py, &r.zone, i32::to_le_bytes))?;
    d.set_item("line", le_bytes(py, &r.line, u64::to_le_bytes))?;
    d.set_item("status", le_bytes(py, &r.status, u16::to_le_bytes))?;
    d.set_item("bytes", le_bytes(py, &r.bytes, i64::to_le_bytes))?;
    for (name, strings) in [
        ("host", &r.host),
        ("method", &r.method),
        ("target", &r.target),
    ] {
        let offsets = le_bytes(py, &strings.offsets, i64::to_le_bytes);
        d.set_item(name, (offsets, PyBytes::new(py, &strings.data)))?;
    }
    Ok(d)
}
