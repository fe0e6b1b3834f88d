//! The task-packing simulator: a node — cores with hyper-threading,
//! memory, one disk whose throughput depends on how many streams it serves — running a set of
//! independent tasks with k of them per core, and a cluster of such nodes fed by one batch
//! queue. Predicts the study's metrics: makespan, jobs per hour, average watts, Wh per job.
//!
//! A task is a CPU part and a read of its input, interleaved in chunks (read a chunk, compute
//! on it); the CPU and the disk are processor-sharing stations, so between events every task's
//! rate is known exactly and the simulation steps from one completion to the next.

mod node;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use node::{simulate, TaskRecord, TasksRun};

#[derive(Debug, Error, Clone, PartialEq)]
pub enum TasksError {
    #[error("{0}")]
    Invalid(String),
}

/// A disk as the tasks see it: one stream at its sequential rate; several, each switch between
/// streams costs `switch_s` per `slice_mb` served (the I/O scheduler's slice: readahead-sized
/// for a plain elevator, several MB under CFQ), so `X(n ≥ 2) = X₁·q / (q + X₁·t_switch)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disk {
    pub seq_mb_s: f64,
    pub switch_s: f64,
    pub slice_mb: f64,
    /// W while serving, above the node's idle power.
    pub active_w: f64,
}

impl Disk {
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
        let bad = |m: String| Err(TasksError::Invalid(m));
        if self.cores == 0 {
            return bad("a node needs at least one core".into());
        }
        for (k, v) in [
            ("ht_gain", self.ht_gain),
            ("memory_gb", self.memory_gb),
            ("idle_w", self.idle_w),
            ("core_w", self.core_w),
            ("disk.switch_s", self.disk.switch_s),
            ("disk.active_w", self.disk.active_w),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("node `{k}` = {v} must be 0 or more"));
            }
        }
        for (k, v) in [
            ("disk.seq_mb_s", self.disk.seq_mb_s),
            ("disk.slice_mb", self.disk.slice_mb),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("node `{k}` = {v} must be above 0"));
            }
        }
        Ok(())
    }
}

/// One task type: CPU seconds on a free core, MB of input read, GB of memory held.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskType {
    pub name: String,
    pub cpu_s: f64,
    #[serde(default)]
    pub input_mb: f64,
    pub memory_gb: f64,
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
}

impl Config {
    pub fn slots(&self) -> usize {
        self.node.cores * self.per_core
    }

    pub fn check(&self) -> Result<(), TasksError> {
        self.node.check()?;
        let bad = |m: String| Err(TasksError::Invalid(m));
        if self.per_core == 0 {
            return bad("--per-core must be at least 1".into());
        }
        if self.nodes == 0 {
            return bad("--nodes must be at least 1".into());
        }
        if !(self.chunk_mb.is_finite() && self.chunk_mb > 0.0) {
            return bad(format!("chunk {} MB must be above 0", self.chunk_mb));
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
            if t.cpu_s + t.input_mb <= 0.0 {
                return bad(format!("task `{}` does no work", t.name));
            }
            if t.memory_gb > self.node.memory_gb {
                return bad(format!(
                    "task `{}` holds {} GB, more than the node's {} GB",
                    t.name, t.memory_gb, self.node.memory_gb
                ));
            }
        }
        if let Some(&i) = self.queue.iter().find(|&&i| i >= self.types.len()) {
            return bad(format!(
                "the queue names task type {i}, which is not defined"
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
