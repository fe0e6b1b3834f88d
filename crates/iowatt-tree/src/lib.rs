//! Recreating a file tree from its manifest (what `iowatt tree snapshot` records): the same
//! directories, files of the same sizes (random content, or sparse), symlinks, modes and
//! times, made by a pool of threads so the file system, not the tool, sets the pace.
//!
//! Public surface: [`Recreation`] (a checked manifest and the options), [`run`] with a shared
//! [`Progress`], and its [`Output`]; a recreation is [`Work`] for [`iowatt_metrics::Handle`],
//! which runs it on a thread of its own for callers that poll. Nothing is ever made outside
//! the destination: paths are checked up front, and every entry is made relative to a
//! directory opened beneath it without following symlinks.

mod create;
mod error;
mod plan;
mod progress;
mod sys;

use std::path::PathBuf;
use std::sync::Arc;

use iowatt_metrics::Work;

pub use error::TreeError;
pub use plan::{Entry, Kind};
pub use progress::{Counts, Phase, Progress};

/// How to recreate a tree.
#[derive(Debug, Clone)]
pub struct Config {
    /// An existing directory; the caller decides whether it must be empty.
    pub dest: PathBuf,
    /// Files as sparse files (ftruncate) instead of random content.
    pub sparse: bool,
    /// Keep entries that already match (type, size, mtime; a symlink's target too) and make
    /// or replace the others.
    pub resume: bool,
    pub threads: usize,
    /// Seed of the files' content: a file's bytes depend on it and the file's row only.
    pub seed: u64,
}

/// A manifest checked and grouped by directory, ready to run.
pub struct Recreation {
    dest: PathBuf,
    sparse: bool,
    resume: bool,
    threads: usize,
    seed: u64,
    plan: plan::Plan,
}

impl Recreation {
    /// Checks every entry (see [`TreeError::Manifest`]) before anything is made.
    pub fn new(config: Config, entries: Vec<Entry>) -> Result<Self, TreeError> {
        Ok(Self {
            dest: config.dest,
            sparse: config.sparse,
            resume: config.resume,
            threads: config.threads,
            seed: config.seed,
            plan: plan::Plan::new(entries)?,
        })
    }

    pub fn entries(&self) -> usize {
        self.plan.entries.len()
    }

    /// Bytes of all files (what a non-sparse recreation writes).
    pub fn total_bytes(&self) -> u64 {
        self.plan.total_bytes
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Complete,
    /// Stopped by [`Progress::cancel`]: what was made stays, and a resumed run finishes it.
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct Output {
    pub status: Status,
    /// Made in this run (entries found complete by a resumed run count as `skipped`).
    pub counts: Counts,
    pub elapsed_ns: u64,
}

/// Recreates the tree; returns when it is complete, cancelled, or at the first error (the
/// other threads stop within one entry).
pub fn run(recreation: &Recreation, progress: &Progress) -> Result<Output, TreeError> {
    create::run(recreation, progress)
}

impl Work for Recreation {
    type Progress = Progress;
    type Outcome = Result<Output, TreeError>;

    fn run(self: Arc<Self>, progress: &Progress) -> Self::Outcome {
        run(&self, progress)
    }

    /// Entries already made stay; a resumed run finishes the tree.
    fn cancel(progress: &Progress) {
        progress.cancel();
    }

    fn panicked() -> Self::Outcome {
        Err(TreeError::Io {
            op: "recreate",
            path: String::new(),
            source: std::io::Error::other("a recreation thread panicked"),
        })
    }
}
