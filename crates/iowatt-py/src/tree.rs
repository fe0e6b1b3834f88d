//! `TreeRecreate`: the tree recreation engine's [`RecreateHandle`] for Python — the manifest's
//! columns in, counts out; building the plan and waiting happen without the GIL.

use std::path::PathBuf;
use std::time::Duration;

use iowatt_tree::{Config, Entry, Kind, RecreateHandle, Recreation, Status, TreeError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::raise;

fn from_tree(py: Python<'_>, e: &TreeError) -> PyErr {
    let (class, kind) = match e {
        TreeError::Manifest { .. } => ("ConfigError", "manifest"),
        TreeError::NoSpace { .. } => ("TargetError", "no_space"),
        TreeError::Io { .. } => ("TargetError", "io"),
    };
    let err = raise(py, class, e.to_string(), None);
    if let Err(set) = err.value(py).setattr("kind", kind) {
        return set;
    }
    err
}

#[pyclass(module = "iowatt._core")]
pub struct TreeRecreate {
    handle: RecreateHandle,
}

#[pymethods]
impl TreeRecreate {
    /// The manifest as columns of equal length; checked here, before anything is made.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dest, path, kind, size, mode, mtime_ns, atime_ns, target, *, sparse, resume, threads, seed))]
    fn new(
        py: Python<'_>,
        dest: PathBuf,
        path: Vec<String>,
        kind: Vec<String>,
        size: Vec<u64>,
        mode: Vec<u32>,
        mtime_ns: Vec<i64>,
        atime_ns: Vec<i64>,
        target: Vec<Option<String>>,
        sparse: bool,
        resume: bool,
        threads: usize,
        seed: u64,
    ) -> PyResult<Self> {
        let n = path.len();
        let lengths = [
            kind.len(),
            size.len(),
            mode.len(),
            mtime_ns.len(),
            atime_ns.len(),
            target.len(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(raise(
                py,
                "ConfigError",
                "the manifest's columns differ in length".into(),
                None,
            ));
        }
        let mut entries = Vec::with_capacity(n);
        let columns = path.into_iter().zip(kind).zip(target).enumerate();
        for (row, ((path, kind), target)) in columns {
            let Some(k) = Kind::parse(&kind) else {
                let e = TreeError::Manifest {
                    row,
                    path,
                    reason: format!("has type `{kind}`, not dir, file or symlink"),
                };
                return Err(from_tree(py, &e));
            };
            entries.push(Entry {
                path,
                kind: k,
                size: size[row],
                mode: mode[row],
                mtime_ns: mtime_ns[row],
                atime_ns: atime_ns[row],
                target,
            });
        }
        let config = Config {
            dest,
            sparse,
            resume,
            threads,
            seed,
        };
        let rec = py
            .detach(|| Recreation::new(config, entries))
            .map_err(|e| from_tree(py, &e))?;
        Ok(Self {
            handle: RecreateHandle::new(rec),
        })
    }

    /// Bytes of all files (what a non-sparse recreation writes).
    fn total_bytes(&self) -> u64 {
        self.handle.recreation().total_bytes()
    }

    fn start(&self) -> PyResult<()> {
        if self.handle.start() {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(
                "the recreation was already started",
            ))
        }
    }

    fn cancel(&self) {
        self.handle.cancel();
    }

    /// Waits up to `timeout_s` for the run to end, without the GIL; true when it has ended.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> bool {
        let timeout = Duration::from_secs_f64(timeout_s.max(0.0));
        py.detach(|| self.handle.wait(timeout))
    }

    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.handle.progress();
        let d = counts_dict(py, &p.counts())?;
        d.set_item("phase", p.phase().as_str())?;
        d.set_item("total", self.handle.recreation().entries())?;
        d.set_item("total_bytes", self.handle.recreation().total_bytes())?;
        Ok(d)
    }

    /// The counts and status; raises the run's error if it failed.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.handle
            .with_outcome(|outcome| match outcome {
                Err(e) => Err(from_tree(py, e)),
                Ok(out) => {
                    let d = counts_dict(py, &out.counts)?;
                    let status = match out.status {
                        Status::Complete => "complete",
                        Status::Cancelled => "cancelled",
                    };
                    d.set_item("status", status)?;
                    d.set_item("elapsed_ns", out.elapsed_ns)?;
                    Ok(d)
                }
            })
            .unwrap_or_else(|| {
                Err(PyRuntimeError::new_err(
                    "the run has not ended; call wait()",
                ))
            })
    }
}

fn counts_dict<'py>(py: Python<'py>, c: &iowatt_tree::Counts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries", c.entries)?;
    d.set_item("files", c.files)?;
    d.set_item("dirs", c.dirs)?;
    d.set_item("links", c.links)?;
    d.set_item("bytes", c.bytes)?;
    d.set_item("skipped", c.skipped)?;
    Ok(d)
}
