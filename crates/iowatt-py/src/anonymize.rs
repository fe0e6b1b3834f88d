//! `LogAnonymizer`: an access log rewritten for sharing, handed to Python a chunk at a time
//! (the Python side writes the output file), each chunk made without the GIL.

use std::path::PathBuf;
use std::sync::Mutex;

use iowatt_trace::anonymize::{Anonymizer, Config, LogAnonymizer as Reader};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::raise;

#[pyclass(module = "iowatt._core", frozen)]
pub struct LogAnonymizer {
    reader: Mutex<Reader>,
    path: PathBuf,
}

fn key32(py: Python<'_>, key: &[u8]) -> PyResult<[u8; 32]> {
    key.try_into()
        .map_err(|_| raise(py, "ConfigError", "a derived key has 32 bytes".into(), None))
}

fn io_error(py: Python<'_>, path: &std::path::Path, e: &std::io::Error) -> PyErr {
    raise(
        py,
        "ConfigError",
        format!("the log `{}` cannot be read: {e}", path.display()),
        Some("check that it is a readable access log, plain or gzip, and complete"),
    )
}

#[pymethods]
impl LogAnonymizer {
    /// Opens the log at `path` (plain or gzip) in `format` (a name or a format string).
    #[new]
    #[pyo3(signature = (path, format, names_key, addresses_key, keep_extensions, hash_agents))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        names_key: &[u8],
        addresses_key: &[u8],
        keep_extensions: bool,
        hash_agents: bool,
    ) -> PyResult<Self> {
        let config = Config {
            format: format.to_owned(),
            names_key: key32(py, names_key)?,
            addresses_key: key32(py, addresses_key)?,
            keep_extensions,
            hash_agents,
        };
        let anonymizer = Anonymizer::new(&config).map_err(|e| {
            let e = raise(py, "ConfigError", e.to_string(), None);
            let _ = e.value(py).setattr("kind", "format");
            e
        })?;
        let reader = Reader::open(&path, anonymizer).map_err(|e| io_error(py, &path, &e))?;
        Ok(Self {
            reader: Mutex::new(reader),
            path,
        })
    }

    /// The next anonymised lines, at least `min_bytes` of them unless the log ends; None once
    /// it has ended.
    fn read<'py>(
        &self,
        py: Python<'py>,
        min_bytes: usize,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut out = Vec::with_capacity(min_bytes + (64 << 10));
        let (more, error) = py.detach(|| {
            let mut reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
            match reader.next_chunk(&mut out, min_bytes) {
                Ok(more) => (more, None),
                Err(e) => (false, Some(e)),
            }
        });
        if let Some(e) = error {
            return Err(raise(
                py,
                "ConfigError",
                format!(
                    "the log `{}` stops being readable: {e}",
                    self.path.display()
                ),
                Some("a gzip log may be truncated; check it with `gzip -t`"),
            ));
        }
        Ok((more || !out.is_empty()).then(|| PyBytes::new(py, &out)))
    }

    /// Lines read, written, blank and bad (with the first bad lines' numbers and reasons),
    /// distinct addresses anonymised and host names hashed.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        let s = reader.stats();
        let d = PyDict::new(py);
        d.set_item("lines", s.lines)?;
        d.set_item("written", s.written)?;
        d.set_item("blank", s.blank)?;
        d.set_item("bad", s.bad)?;
        d.set_item("bad_lines", s.bad_lines.clone())?;
        d.set_item("addresses", s.addresses)?;
        d.set_item("host_names", s.host_names)?;
        Ok(d)
    }
}
