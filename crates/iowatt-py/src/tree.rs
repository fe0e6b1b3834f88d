//! `TreeRecreate`: a tree recreation on its handle for Python — the manifest's columns in,
//! counts out; building the plan happens without the GIL.

use std::path::PathBuf;

use iowatt_metrics::Handle;
use iowatt_tree::{Config, Entry, Kind, Output, Progress, Recreation, Status, TreeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::values;
use crate::errors::raise;
use crate::job::engine_job;

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
    handle: Handle<Recreation>,
}

engine_job!(TreeRecreate, "recreation", start: once, progress: progress_dict, result: result_dict);

#[pymethods]
impl TreeRecreate {
    /// The manifest as Arrow buffers of `n` rows (no nulls, offset 0): string columns as
    /// int64 offsets and UTF-8 data, `kind` as int8 codes (0 dir, 1 file, 2 symlink), `size`,
    /// `mtime_ns`, `atime_ns` as int64 and `mode` as int32, little-endian; an empty target is
    /// none. Checked here, before anything is made.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dest, n, path_offsets, path_data, kind, size, mode, mtime_ns, atime_ns, target_offsets, target_data, *, sparse, resume, threads, seed))]
    fn new(
        py: Python<'_>,
        dest: PathBuf,
        n: usize,
        path_offsets: &[u8],
        path_data: &[u8],
        kind: &[u8],
        size: &[u8],
        mode: &[u8],
        mtime_ns: &[u8],
        atime_ns: &[u8],
        target_offsets: &[u8],
        target_data: &[u8],
        sparse: bool,
        resume: bool,
        threads: usize,
        seed: u64,
    ) -> PyResult<Self> {
        let config = Config {
            dest,
            sparse,
            resume,
            threads,
            seed,
        };
        let built = py.detach(|| {
            let paths = Strings::new(path_offsets, path_data, n)?;
            let targets = Strings::new(target_offsets, target_data, n)?;
            let (size, mtime, atime) = (i64s(size, n)?, i64s(mtime_ns, n)?, i64s(atime_ns, n)?);
            let mode: Vec<i32> = values(mode, n).ok_or(Bad::Shape)?;
            if kind.len() != n {
                return Err(Bad::Shape);
            }
            let mut entries = Vec::with_capacity(n);
            for row in 0..n {
                let kind = match kind[row] {
                    0 => Kind::Dir,
                    1 => Kind::File,
                    2 => Kind::Symlink,
                    _ => return Err(Bad::Shape),
                };
                let target = targets.get(row)?;
                entries.push(Entry {
                    path: paths.get(row)?.to_owned(),
                    kind,
                    size: size[row].max(0) as u64,
                    mode: mode[row] as u32,
                    mtime_ns: mtime[row],
                    atime_ns: atime[row],
                    target: (!target.is_empty()).then(|| target.to_owned()),
                });
            }
            Recreation::new(config, entries).map_err(Bad::Tree)
        });
        let rec = built.map_err(|e| match e {
            Bad::Tree(e) => from_tree(py, &e),
            Bad::Shape => raise(
                py,
                "ConfigError",
                "the manifest's columns do not have the shape the engine takes".into(),
                None,
            ),
        })?;
        Ok(Self {
            handle: Handle::new(rec),
        })
    }

    /// Bytes of all files (what a non-sparse recreation writes).
    fn total_bytes(&self) -> u64 {
        self.handle.work().total_bytes()
    }
}

fn progress_dict<'py>(
    py: Python<'py>,
    rec: &Recreation,
    p: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let d = counts_dict(py, &p.counts())?;
    d.set_item("phase", p.phase().as_str())?;
    d.set_item("total", rec.entries())?;
    d.set_item("total_bytes", rec.total_bytes())?;
    Ok(d)
}

/// The counts and status; the run's error if it failed.
fn result_dict<'py>(
    py: Python<'py>,
    _: &Recreation,
    outcome: &Result<Output, TreeError>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = outcome.as_ref().map_err(|e| from_tree(py, e))?;
    let d = counts_dict(py, &out.counts)?;
    let status = match out.status {
        Status::Complete => "complete",
        Status::Cancelled => "cancelled",
    };
    d.set_item("status", status)?;
    d.set_item("elapsed_ns", out.elapsed_ns)?;
    Ok(d)
}

enum Bad {
    Shape,
    Tree(TreeError),
}

fn i64s(b: &[u8], n: usize) -> Result<Vec<i64>, Bad> {
    values(b, n).ok_or(Bad::Shape)
}

/// An Arrow large-string column: offsets and data.
struct Strings<'a> {
    offsets: Vec<i64>,
    data: &'a [u8],
}

impl<'a> Strings<'a> {
    fn new(offsets: &[u8], data: &'a [u8], n: usize) -> Result<Self, Bad> {
        Ok(Self {
            offsets: i64s(offsets, n + 1)?,
            data,
        })
    }

    fn get(&self, row: usize) -> Result<&'a str, Bad> {
        let (a, b) = (self.offsets[row], self.offsets[row + 1]);
        let bytes = usize::try_from(a)
            .ok()
            .zip(usize::try_from(b).ok())
            .and_then(|(a, b)| self.data.get(a..b))
            .ok_or(Bad::Shape)?;
        std::str::from_utf8(bytes).map_err(|_| Bad::Shape)
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
