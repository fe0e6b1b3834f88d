//! The task-packing simulator: a node — cores with hyper-threading, memory, one data disk —
//! running a set of independent tasks with k of them per core, and a cluster of such nodes fed
//! by one batch queue. Predicts the study's metrics: makespan, throughput, average watts and
//! energy, with the node's power by its parts.
//!
//! A task is a CPU part and a read of its input, interleaved in chunks (read a chunk, compute
//! on it). The CPU is a processor-sharing station, so between events every computing task's
//! rate is known exactly. The disk serves the reading tasks request by request: the shared
//! [`crate::disk`] model charges each its seek, rotation and transfer, under the node's I/O
//! scheduler (CFQ with its slices and idle window, deadline's elevator, or the drive's own
//! command queue). Tasks are a population: each draws its CPU time and input around its type's
//! profile, seeded.

mod node;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::disk::DiskModel;

pub use node::{simulate, TaskRecord, TasksRun};

#[derive(Debug, Error, Clone, PartialEq)]
pub enum TasksError {
    #[error("{0}")]
    Invalid(String),
}

/// The most CPU seconds a set may hold.
const MAX_CPU_S: f64 = 1e10;

fn bad<T>(m: String) -> Result<T, TasksError> {
    Err(TasksError::Invalid(m))
}

/// The node's data disk: served request by request (`requests`), or as the fluid rate of
/// earlier versions (`fluid`: node files with `seq_mb_s`, `switch_s` and `slice_mb`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disk {
    Requests(Box<RequestDisk>),
    Fluid(FluidDisk),
}

/// A disk model under an I/O scheduler; sequential readers get the device's readahead.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestDisk {
    pub model: DiskModel,
    pub scheduler: Scheduler,
    /// The block device's `read_ahead_kb`: what a sequential reader's request grows to.
    pub readahead_kb: f64,
    /// The drive reads on into its cache: a request starting where the last ended pays no
    /// seek and no rotation. Off, every request pays its rotation, as the emulated disk's do.
    #[serde(default = "drive_read_ahead")]
    pub drive_read_ahead: bool,
}

fn drive_read_ahead() -> bool {
    true
}

/// How requests of concurrent tasks reach the disk.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase", deny_unknown_fields)]
pub enum Scheduler {
    /// One task's requests at a time for a slice, idling up to `idle_ms` for its next one
    /// (never on an SSD: Linux's CFQ does not idle on a non-rotational device).
    Cfq { slice_ms: f64, idle_ms: f64 },
    /// Sorted by position, every queued request (deadline's elevator, read deadlines never
    /// reached by one request per task).
    Deadline,
    /// Arrival order to the drive, which reorders its command queue of `ncq_depth`.
    None { ncq_depth: usize },
}

/// The rate model of earlier versions: one stream at its sequential rate; several, each
/// switch between streams costs `switch_s` per `slice_mb` served, so
/// `X(n ≥ 2) = X₁·q / (q + X₁·t_switch)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluidDisk {
    pub seq_mb_s: f64,
    pub switch_s: f64,
    pub slice_mb: f64,
    /// W while serving, above the node's idle power.
    pub active_w: f64,
}

impl FluidDisk {
    /// Aggregate MB/s with `streams` readers.
    pub fn rate_mb_s(&self, streams: usize) -> f64 {
        match streams {
            0 => 0.0,
            1 => self.seq_mb_s,
            _ => self.seq_mb_s * self.slice_mb / (self.slice_mb + self.seq_mb_s * self.switch_s),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub cores: usize,
    /// What a second thread on a busy core adds (0.2–0.3 of a core).
    pub ht_gain: f64,
    pub memory_gb: f64,
    /// W of the idle node without its data disk (whose idle draw its model gives; a fluid
    /// disk's is counted here).
    pub idle_w: f64,
    /// W per fully busy core above idle.
    pub core_w: f64,
    pub disk: Disk,
}

impl Node {
    /// CPU capacity, in cores, for `n` runnable tasks: one core each up to the cores, then
    /// `ht_gain` for each second thread, up to one per core.
    pub fn capacity(&self, n: usize) -> f64 {
        let c = self.cores;
        n.min(c) as f64 + self.ht_gain * n.saturating_sub(c).min(c) as f64
    }

    fn check(&self) -> Result<(), TasksError> {
        if self.cores == 0 {
            return bad("a node needs at least one core".into());
        }
        let mut at_least_0 = vec![
            ("ht_gain", self.ht_gain),
            ("memory_gb", self.memory_gb),
            ("idle_w", self.idle_w),
            ("core_w", self.core_w),
        ];
        let mut above_0 = vec![];
        match &self.disk {
            Disk::Fluid(d) => {
                at_least_0.extend([("disk.switch_s", d.switch_s), ("disk.active_w", d.active_w)]);
                above_0.extend([("disk.seq_mb_s", d.seq_mb_s), ("disk.slice_mb", d.slice_mb)]);
            }
            Disk::Requests(d) => {
                d.model
                    .check(&d.model.label)
                    .map_err(|e| TasksError::Invalid(e.0))?;
                above_0.push(("disk.readahead_kb", d.readahead_kb));
                match d.scheduler {
                    Scheduler::Cfq { slice_ms, idle_ms } => {
                        above_0.push(("disk.slice_ms", slice_ms));
                        at_least_0.push(("disk.idle_ms", idle_ms));
                    }
                    Scheduler::None { ncq_depth: 0 } => {
                        return bad("node `disk.ncq_depth` = 0 must be at least 1".into());
                    }
                    _ => {}
                }
            }
        }
        for (k, v) in at_least_0 {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("node `{k}` = {v} must be 0 or more"));
            }
        }
        for (k, v) in above_0 {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("node `{k}` = {v} must be above 0"));
            }
        }
        Ok(())
    }
}

/// How a task reads its input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// On through the file: readahead makes each request at least `readahead_kb`.
    #[default]
    Sequential,
    /// Requests at random places of the file (readahead stays off for them).
    Scattered,
}

fn default_request_kb() -> f64 {
    128.0
}

/// One task type: CPU seconds on a free core, MB of input read (in requests of `request_kb`,
/// by `pattern`), GB of memory held.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskType {
    pub name: String,
    pub cpu_s: f64,
    #[serde(default)]
    pub input_mb: f64,
    pub memory_gb: f64,
    #[serde(default = "default_request_kb")]
    pub request_kb: f64,
    #[serde(default)]
    pub pattern: Pattern,
}

/// What to run: the tasks in queue order (indices into `types`), k per core on `nodes` nodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub node: Node,
    pub types: Vec<TaskType>,
    pub queue: Vec<usize>,
    pub per_core: usize,
    pub nodes: usize,
    /// Chunk a task reads before computing on it, MB.
    pub chunk_mb: f64,
    /// Each task's CPU time and input are its type's times a factor drawn uniformly from
    /// 1 ± `spread` (0: identical tasks).
    #[serde(default)]
    pub spread: f64,
    #[serde(default)]
    pub seed: u64,
}

impl Config {
    pub fn slots(&self) -> usize {
        self.node.cores * self.per_core
    }

    pub fn check(&self) -> Result<(), TasksError> {
        self.node.check()?;
        if self.per_core == 0 {
            return bad("--per-core must be at least 1".into());
        }
        if self.nodes == 0 {
            return bad("--nodes must be at least 1".into());
        }
        if !(self.chunk_mb.is_finite() && self.chunk_mb > 0.0) {
            return bad(format!("chunk {} MB must be above 0", self.chunk_mb));
        }
        if !(0.0..=1.0).contains(&self.spread) {
            return bad(format!("--task-spread {} is outside 0..1", self.spread));
        }
        for t in &self.types {
            for (k, v) in [
                ("cpu_s", t.cpu_s),
                ("input_mb", t.input_mb),
                ("memory_gb", t.memory_gb),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return bad(format!("task `{}`: `{k}` = {v} must be 0 or more", t.name));
                }
            }
            if !(t.request_kb.is_finite() && t.request_kb >= 0.5) {
                return bad(format!(
                    "task `{}`: `request_kb` = {} must be at least 0.5 (a 512-byte sector)",
                    t.name, t.request_kb
                ));
            }
            if t.cpu_s + t.input_mb <= 0.0 {
                return bad(format!("task `{}` does no work", t.name));
            }
            if t.memory_gb > self.node.memory_gb {
                return bad(format!(
                    "task `{}` holds {} GB, more than the node's {} GB",
                    t.name, t.memory_gb, self.node.memory_gb
                ));
            }
            if let Disk::Requests(d) = &self.node.disk {
                let largest = t.input_mb * (1.0 + self.spread) * 1e6;
                if largest > d.model.capacity_bytes() as f64 {
                    return bad(format!(
                        "task `{}` reads {} MB, more than the disk's {} GB",
                        t.name, t.input_mb, d.model.capacity_gb
                    ));
                }
            }
        }
        if let Some(&i) = self.queue.iter().find(|&&i| i >= self.types.len()) {
            return bad(format!(
                "the queue names task type {i}, which is not defined"
            ));
        }
        // The clock counts whole ns in 64 bits: a run must end within 584 years.
        let cpu_s: f64 = self.queue.iter().map(|&i| self.types[i].cpu_s).sum();
        if cpu_s * (1.0 + self.spread) > MAX_CPU_S {
            return bad(format!(
                "the set's {cpu_s:.3e} CPU seconds are more than {MAX_CPU_S:.0e} (300 years)"
            ));
        }
        Ok(())
    }

    /// The most memory `slots` tasks of the set can hold at once: the largest footprints.
    pub fn peak_memory_gb(&self) -> f64 {
        let mut m: Vec<f64> = self
            .queue
            .iter()
            .map(|&i| self.types[i].memory_gb)
            .collect();
        m.sort_by(|a, b| b.total_cmp(a));
        m.iter().take(self.slots()).sum()
    }
}
