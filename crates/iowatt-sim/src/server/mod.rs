//! The server cooling simulator: one socket, DIMMs, fans, SATA disks following a measured
//! fan–disk curve and an SSD, under the thermal and cooling policies the server vibration
//! study compared (DLB, JETC, App-Oracle, FSTM, FSTM-NoSSD), on workload sets of service and
//! batch jobs. docs/sim-server.md gives every parameter and its source.
//!
//! [`run`] simulates every (workload, policy, seed) of a [`Config`] on a pool of threads; the
//! outputs come back in that order whatever the threads did, each run bit-identical for the
//! same inputs. A configuration is [`Work`] for [`iowatt_metrics::Handle`], which runs it on
//! its own thread for callers that poll.

mod curve;
mod jobs;
mod model;
mod plant;
pub mod policy;
mod record;
mod sim;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use iowatt_metrics::Work;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use curve::{in_zone, Curve};
pub use jobs::{interpolate, Job, Kind, Pattern, Phase, WorkloadSet};
pub use model::Model;
pub use plant::Plant;
pub use policy::PolicyName;
pub use record::{Event, EventKind, Sample, Series, SERIES_COLUMNS};
pub use sim::EVENT_CAP;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ServerError {
    #[error("server model: {0}")]
    Model(String),
    #[error("{0}")]
    Workload(String),
    #[error("curve {0}")]
    Curve(String),
    #[error("{0}")]
    Config(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub model: Model,
    pub jobs: BTreeMap<String, Job>,
    pub workloads: Vec<WorkloadSet>,
    pub policies: Vec<PolicyName>,
    pub curve: Curve,
    pub seeds: Vec<u64>,
    /// Time series bin, s.
    pub resolution_s: f64,
    pub threads: usize,
}

impl Config {
    pub fn check(&self) -> Result<(), ServerError> {
        self.model.check()?;
        jobs::check(&self.jobs, &self.workloads)?;
        self.curve.check()?;
        for set in &self.workloads {
            if set.jobs.len() > self.model.socket.cores {
                return Err(ServerError::Workload(format!(
                    "workload `{}` has {} jobs for {} cores; the simulator runs one job per core",
                    set.name,
                    set.jobs.len(),
                    self.model.socket.cores
                )));
            }
        }
        if self.workloads.is_empty() || self.policies.is_empty() || self.seeds.is_empty() {
            return Err(ServerError::Config(
                "nothing to simulate: no workload, policy or seed".into(),
            ));
        }
        if !(self.resolution_s.is_finite() && self.resolution_s * 1e3 >= self.model.control.tick_ms)
        {
            return Err(ServerError::Config(format!(
                "resolution {} s is shorter than a tick (`control.tick_ms` = {})",
                self.resolution_s, self.model.control.tick_ms
            )));
        }
        Ok(())
    }

    /// The runs in output order: workload, then policy, then seed.
    pub fn runs(&self) -> Vec<(usize, PolicyName, u64)> {
        let mut out = Vec::new();
        for w in 0..self.workloads.len() {
            for &p in &self.policies {
                for &seed in &self.seeds {
                    out.push((w, p, seed));
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Complete,
    Cancelled,
    /// The service jobs were not done within `control.max_sim_s`.
    TimedOut,
}

/// Energy by component over a run, J.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Energy {
    pub socket: f64,
    pub memory: f64,
    pub fans: f64,
    pub disks: f64,
}

#[derive(Debug, Clone)]
pub struct RunOutput {
    pub workload: String,
    pub policy: PolicyName,
    pub seed: u64,
    pub status: Status,
    /// When the last service job finished (or the run stopped), s.
    pub service_s: f64,
    /// Batch work done per batch job per second, as a share of a top-P-state core.
    pub batch_speed: f64,
    pub energy: Energy,
    pub peak_core_c: f64,
    pub peak_dimm_c: f64,
    pub gating_s: f64,
    pub mean_pwm: f64,
    pub hdd_mb: f64,
    pub ssd_mb: f64,
    pub migrations: u64,
    pub events: Vec<Event>,
    pub events_total: u64,
    pub series: Series,
}

impl RunOutput {
    fn new(workload: &str, policy: PolicyName, seed: u64) -> Self {
        Self {
            workload: workload.to_owned(),
            policy,
            seed,
            status: Status::Complete,
            service_s: 0.0,
            batch_speed: 0.0,
            energy: Energy::default(),
            peak_core_c: f64::MIN,
            peak_dimm_c: f64::MIN,
            gating_s: 0.0,
            mean_pwm: 0.0,
            hdd_mb: 0.0,
            ssd_mb: 0.0,
            migrations: 0,
            events: Vec::new(),
            events_total: 0,
            series: Series::default(),
        }
    }

    fn add_tick(&mut self, s: &Sample, dt: f64, gated: bool, hdd_mb: f64, ssd_mb: f64) {
        self.energy.socket += s.socket_w * dt;
        self.energy.memory += s.memory_w * dt;
        self.energy.fans += s.fans_w * dt;
        self.energy.disks += s.disks_w * dt;
        self.peak_core_c = self.peak_core_c.max(s.core_max_c);
        self.peak_dimm_c = self.peak_dimm_c.max(s.dimm_max_c);
        if gated {
            self.gating_s += dt;
        }
        self.mean_pwm += s.pwm * dt;
        self.hdd_mb += hdd_mb;
        self.ssd_mb += ssd_mb;
    }

    fn finish(&mut self, s: &sim::Server, status: Status, elapsed_s: f64, series: Series) {
        self.status = status;
        self.service_s = s
            .jobs
            .iter()
            .filter(|j| j.kind == Kind::Service)
            .map(|j| j.done_ns.map_or(elapsed_s, |ns| ns as f64 / 1e9))
            .fold(0.0, f64::max);
        let batch: Vec<_> = s.jobs.iter().filter(|j| j.kind == Kind::Batch).collect();
        self.batch_speed = if batch.is_empty() || elapsed_s <= 0.0 {
            0.0
        } else {
            batch.iter().map(|j| j.work_s).sum::<f64>() / (batch.len() as f64 * elapsed_s)
        };
        if elapsed_s > 0.0 {
            self.mean_pwm /= elapsed_s;
        }
        self.migrations = s.migrations;
        self.events = s.events.kept.clone();
        self.events_total = s.events.total;
        self.series = series;
    }
}

/// Progress of a batch of runs, shared with whoever polls it.
#[derive(Debug, Default)]
pub struct Progress {
    pub runs_done: AtomicUsize,
    pub ticks: AtomicU64,
    /// Set by a handle's cancel: [`run`] stops on the flag it is given, and a handle gives it
    /// this one, so that cancelling needs nothing but the progress the handle shares.
    cancel: AtomicBool,
}

/// Simulates every run of `config` on `config.threads` threads (at least one); stops early,
/// keeping the runs done and marking the ones cut short, when `cancel` is set.
pub fn run(
    config: &Config,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Result<Vec<RunOutput>, ServerError> {
    config.check()?;
    let runs = config.runs();
    let next = AtomicUsize::new(0);
    let threads = config.threads.clamp(1, runs.len().max(1));
    let options = sim::RunOptions {
        resolution_s: config.resolution_s,
    };
    let mut outputs: Vec<Option<Result<RunOutput, ServerError>>> = vec![None; runs.len()];
    let slots: Vec<std::sync::Mutex<Option<Result<RunOutput, ServerError>>>> = (0..runs.len())
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(w, policy, seed)) = runs.get(i) else {
                    break;
                };
                if cancel.load(Ordering::Relaxed) {
                    break;
                }
                let out = sim::run(
                    &config.model,
                    &config.jobs,
                    &config.workloads[w],
                    policy,
                    &config.curve,
                    seed,
                    options,
                    cancel,
                    &progress.ticks,
                );
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(out);
                progress.runs_done.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    for (o, slot) in outputs.iter_mut().zip(slots) {
        *o = slot.into_inner().unwrap_or_else(|p| p.into_inner());
    }
    outputs.into_iter().flatten().collect()
}

impl Work for Config {
    type Progress = Progress;
    type Outcome = Result<Vec<RunOutput>, ServerError>;

    fn run(self: Arc<Self>, progress: &Progress) -> Self::Outcome {
        run(&self, progress, &progress.cancel)
    }

    fn cancel(progress: &Progress) {
        progress.cancel.store(true, Ordering::Relaxed);
    }

    fn panicked() -> Self::Outcome {
        Err(ServerError::Config(
            "the simulator failed (a bug: please report it)".into(),
        ))
    }
}
