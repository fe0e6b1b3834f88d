//! Access logs and private names: key derivation and keyed name hashing.

use iowatt_trace::keys::{hash_name, Keys};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

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
