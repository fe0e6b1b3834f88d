//! The storage power-policy simulator: an array of disks modelled from
//! their datasheets ([`DiskModel`]) serving a request trace under a RAID personality — RAID-0,
//! or RAID-0 whose idle disks spin down (LRU) — with each request's latency and completion
//! time, each disk's energy and spin cycles, and power over time in bins. docs/sim-raid.md
//! gives the models and their sources.

mod cache;
mod fs;
mod personality;
mod sim;

use thiserror::Error;

pub use crate::disk::{DiskModel, Kind, Power, State};
pub use fs::{Atime, Fs, FsConfig};
pub use personality::{
    Actions, DailyBudget, DailyCount, Extent, Lru, Paraid, ParaidParams, Personality, Raid0, Spec,
    Striping,
};
pub use sim::{Array, Completion, DiskStatus, RaidRun, Request, Trace};

use crate::Streams;

/// A day of the trace, ns: what spin budgets and relatime count by.
pub(crate) const DAY_NS: u64 = 86_400_000_000_000;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum RaidError {
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Config(String),
}

impl From<crate::disk::ModelError> for RaidError {
    fn from(e: crate::disk::ModelError) -> Self {
        RaidError::Model(e.0)
    }
}

/// An array: `disks` of `model`, striped in units of `stripe_bytes`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayConfig {
    pub model: DiskModel,
    pub model_name: String,
    pub disks: usize,
    pub stripe_bytes: u64,
    /// Power bins, s (the study's 15 s).
    pub bin_s: f64,
    /// The page cache in front of the array, bytes (0: none).
    pub cache_bytes: u64,
    /// Spin-ups start at least this far apart (a controller limiting inrush current), s.
    #[serde(default)]
    pub spinup_stagger_s: f64,
    /// The file system's own traffic, for a trace that gives its files' metadata blocks.
    #[serde(default)]
    pub fs: Option<FsConfig>,
}

impl ArrayConfig {
    /// Refuses an array that cannot be built, naming the value.
    pub fn check_array(&self) -> Result<(), RaidError> {
        self.model.check(&self.model_name)?;
        if !(1..=64).contains(&self.disks) {
            return Err(RaidError::Config(format!(
                "--disks {} must be 1..64",
                self.disks
            )));
        }
        if self.stripe_bytes == 0 {
            return Err(RaidError::Config(
                "the stripe unit must be at least one byte".into(),
            ));
        }
        if !(self.bin_s.is_finite() && self.bin_s > 0.0) {
            return Err(RaidError::Config(format!(
                "bin {} s must be above 0",
                self.bin_s
            )));
        }
        if !(self.spinup_stagger_s.is_finite() && self.spinup_stagger_s >= 0.0) {
            return Err(RaidError::Config(format!(
                "spinup_stagger_s = {} must be 0 or more",
                self.spinup_stagger_s
            )));
        }
        if let Some(fs) = &self.fs {
            fs.check()?;
        }
        Ok(())
    }

    /// Refuses the array, or a trace it cannot serve: out of time order, or past its end.
    pub fn check(&self, trace: &Trace) -> Result<(), RaidError> {
        self.check_array()?;
        if trace.len() >= u32::MAX as usize {
            return Err(RaidError::Config(format!(
                "{} requests: the simulator takes at most {} at once",
                trace.len(),
                u32::MAX
            )));
        }
        for (name, len) in [
            ("write flags", trace.write.len()),
            ("directory blocks", trace.dir_at.len()),
            ("inode blocks", trace.inode_at.len()),
        ] {
            if len != 0 && len != trace.len() {
                return Err(RaidError::Config(format!(
                    "the trace's {name} do not match its requests"
                )));
            }
        }
        let capacity = self.model.capacity_bytes() as u128 * self.disks as u128;
        for i in 0..trace.len() {
            if u128::from(trace.offset[i]) + u128::from(trace.bytes[i]) > capacity {
                return Err(RaidError::Config(format!(
                    "request {i} ends at byte {}, beyond the array's {capacity} ({} × {})",
                    u128::from(trace.offset[i]) + u128::from(trace.bytes[i]),
                    self.disks,
                    self.model_name
                )));
            }
            if i > 0 && trace.t_ns[i] < trace.t_ns[i - 1] {
                return Err(RaidError::Config(format!(
                    "request {i} arrives before request {}: the trace must be in time order",
                    i - 1
                )));
            }
        }
        Ok(())
    }

    fn striping(&self) -> Striping {
        Striping {
            disks: self.disks,
            unit: self.stripe_bytes,
        }
    }
}

/// Runs `trace` on the array under `spec` with `seed` (each disk's rotational positions come
/// from its own stream, the same for every personality).
pub fn simulate(
    array: &ArrayConfig,
    spec: &Spec,
    trace: &Trace,
    seed: u64,
) -> Result<RaidRun, RaidError> {
    array.check(trace)?;
    let used = (0..trace.len())
        .map(|i| trace.offset[i] + trace.bytes[i])
        .max()
        .unwrap_or(0);
    let metadata = !trace.inode_at.is_empty();
    Ok(build(array, spec, used, seed, metadata)?.run(trace))
}

/// The array under `spec` with `seed`, its data reaching `used` bytes of it (PARAID's replicas
/// start after), with the file system's traffic when `metadata` (its requests name their
/// files' metadata blocks): what the simulator runs a trace on and the emulated array serves a
/// mount with.
pub fn build(
    array: &ArrayConfig,
    spec: &Spec,
    used: u64,
    seed: u64,
    metadata: bool,
) -> Result<Array, RaidError> {
    array.check_array()?;
    let streams = Streams::new(seed);
    let striping = array.striping();
    let personality: Box<dyn Personality + Send> = match spec {
        Spec::Raid0 => Box::new(Raid0 { striping }),
        Spec::Lru {
            timeout_s,
            cycles_per_day,
        } => {
            let t = timeout_s.unwrap_or_else(|| array.model.break_even_s());
            if t.is_nan() || t <= 0.0 {
                return Err(RaidError::Config(format!(
                    "LRU's idle timeout {t} s must be above 0"
                )));
            }
            check_budget("lru", *cycles_per_day)?;
            Box::new(Lru {
                striping,
                timeout_ns: (t.min(1e9) * 1e9) as u64,
                budget: DailyBudget::new(*cycles_per_day, array.disks),
            })
        }
        Spec::Paraid(p) => {
            check_paraid(p, array.disks)?;
            let budget = p
                .cycles_per_day
                .unwrap_or(array.model.start_stop_cycles as f64 / (5.0 * 365.0));
            // Replicas fill the free space right after the data each disk holds.
            let rows = used.div_ceil(array.stripe_bytes * array.disks as u64);
            let replica_base = rows * array.stripe_bytes;
            // The lowest gear holds the most replicas: (n − m) / m of a disk's data again.
            let (n, m) = (array.disks as u64, p.gears[0] as u64);
            let needed = replica_base + (replica_base * (n - m)).div_ceil(m);
            if needed > array.model.capacity_bytes() {
                return Err(RaidError::Config(format!(
                    "PARAID's replicas do not fit: the data use {used} bytes of the array, \
                     and a gear of {m} of {n} disks needs them to use at most {m}/{n} of it"
                )));
            }
            Box::new(Paraid::new(striping, p.clone(), replica_base, budget))
        }
    };
    let bin_ns = (array.bin_s * 1e9).round() as u64;
    let fs = array.fs.clone().filter(|_| metadata).map(Fs::new);
    Ok(
        Array::new(array.model.clone(), array.disks, personality, bin_ns, |d| {
            streams.stream(d as u64)
        })
        .with_cache(array.cache_bytes)
        .with_fs(fs)
        .with_stagger((array.spinup_stagger_s * 1e9).round() as u64),
    )
}

fn check_budget(personality: &str, cycles_per_day: Option<f64>) -> Result<(), RaidError> {
    match cycles_per_day {
        Some(b) if !(b.is_finite() && b >= 0.0) => Err(RaidError::Config(format!(
            "[{personality}] cycles_per_day = {b} must be 0 or more"
        ))),
        _ => Ok(()),
    }
}

fn check_paraid(p: &ParaidParams, disks: usize) -> Result<(), RaidError> {
    let bad = |m: String| Err(RaidError::Config(m));
    if p.gears.is_empty() || p.gears.windows(2).any(|w| w[0] >= w[1]) || p.gears[0] == 0 {
        return bad(format!(
            "PARAID's gears {:?} must ascend from at least one disk",
            p.gears
        ));
    }
    let top = *p.gears.last().expect("not empty");
    if top > disks {
        return bad(format!(
            "PARAID's gear of {top} disks is larger than the array's {disks}"
        ));
    }
    if top < disks {
        return bad(format!(
            "PARAID's top gear ({top} disks) must be the whole array ({disks})"
        ));
    }
    for (k, v) in [
        ("sample_s", p.sample_s),
        ("short_s", p.short_s),
        ("long_s", p.long_s),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return bad(format!("PARAID's `{k}` = {v} must be above 0"));
        }
    }
    if !(0.0..=1.0).contains(&p.up) || !(0.0..=1.0).contains(&p.down) || p.down > p.up {
        return bad(format!(
            "PARAID's thresholds down {} and up {} must be within 0..1, down below up",
            p.down, p.up
        ));
    }
    check_budget("paraid", p.cycles_per_day)?;
    if !(p.min_dwell_s.is_finite() && p.min_dwell_s >= 0.0) {
        return bad(format!(
            "PARAID's `min_dwell_s` = {} must be 0 or more",
            p.min_dwell_s
        ));
    }
    Ok(())
}
