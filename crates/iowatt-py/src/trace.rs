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

/// A column's values as the bytes Python builds an Arrow buffer from, copied once.
fn column_bytes<'py, T: Copy + ToLe>(
    py: Python<'py>,
    values: &[T],
) -> PyResult<Bound<'py, PyBytes>> {
    let size = std::mem::size_of::<T>();
    PyBytes::new_with(py, std::mem::size_of_val(values), |out| {
        for (chunk, v) in out.chunks_exact_mut(size).zip(values) {
            v.write_le(chunk);
        }
        Ok(())
    })
}

/// Little-endian bytes of a column value (Arrow buffers are little-endian).
trait ToLe {
    fn write_le(self, out: &mut [u8]);
}

macro_rules! to_le {
    ($($t:ty),*) => {$(
        impl ToLe for $t {
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
to_le!(i64, i32, u64, u16);

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
    d.set_item("time", column_bytes(py, &r.time)?)?;
    d.set_item("zone", column_bytes(py, &r.zone)?)?;
    d.set_item("line", column_bytes(py, &r.line)?)?;
    d.set_item("status", column_bytes(py, &r.status)?)?;
    d.set_item("bytes", column_bytes(py, &r.bytes)?)?;
    for (name, strings) in [
        ("host", &r.host),
        ("method", &r.method),
        ("target", &r.target),
    ] {
        let offsets = column_bytes(py, &strings.offsets)?;
        d.set_item(name, (offsets, PyBytes::new(py, &strings.data)))?;
    }
    Ok(d)
}
