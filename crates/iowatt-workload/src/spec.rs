//! The workload model, in FileBench's terms: files, threads with instances, and flowops.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// pread/pwrite, one operation in flight per thread.
    Psync,
    /// io_uring, `iodepth` operations in flight per thread.
    IoUring,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Write,
}

/// A file (or whole block device) the workload reads and writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSpec {
    pub name: String,
    pub path: PathBuf,
    /// Size in bytes; 0 creates an empty file that sequential writes grow.
    pub size: u64,
    /// Create the file and fill it with incompressible data before the clock starts.
    pub prealloc: bool,
    /// Keep an existing file of the right size instead of rewriting it.
    pub reuse: bool,
    /// The path is a block device: never created, truncated or filled; writes wrap at `size`.
    #[serde(default)]
    pub device: bool,
}

/// One operation in a thread's loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flowop {
    pub name: String,
    pub kind: OpKind,
    /// Index into [`Workload::files`].
    pub file: usize,
    pub iosize: u64,
    /// Random iosize-aligned offsets within the working set; otherwise sequential.
    pub random: bool,
    pub directio: bool,
    pub dsync: bool,
    /// Bytes at the start of the file random offsets are drawn from; 0 means the whole file.
    #[serde(default)]
    pub workingset: u64,
}

/// A thread definition; `instances` copies of it run, each with its own offsets and fds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSpec {
    pub name: String,
    pub instances: u32,
    pub flowops: Vec<Flowop>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    pub files: Vec<FileSpec>,
    pub threads: Vec<ThreadSpec>,
    pub engine: Engine,
    pub iodepth: u32,
    /// Measured time, after the ramp.
    pub runtime_ns: u64,
    /// Warm-up before the measured phase; its operations are not recorded.
    pub ramp_ns: u64,
    /// Total intended operations per second across all threads (open loop); `None` runs flat out.
    pub rate: Option<f64>,
    pub seed: u64,
    #[serde(default = "default_interval_ns")]
    pub interval_ns: u64,
    /// Latency thresholds each interval counts the operations above (the study's 100 and
    /// 200 ms by default): a second's slow share, against its throughput.
    #[serde(default = "default_slow_ns")]
    pub slow_ns: Vec<u64>,
}

fn default_interval_ns() -> u64 {
    1_000_000_000
}

pub fn default_slow_ns() -> Vec<u64> {
    vec![100_000_000, 200_000_000]
}

impl Workload {
    pub fn total_threads(&self) -> u32 {
        self.threads.iter().map(|t| t.instances).sum()
    }
}
