//! The RAID personalities behind one trait, one module each: where a request's bytes live,
//! when an idle disk spins down, and (PARAID) which disks a gear powers. A new personality is a
//! module here implementing [`Personality`], and a [`Spec`] variant.

mod lru;
mod paraid;
mod raid0;

pub use lru::Lru;
pub use paraid::{Paraid, ParaidParams};
pub use raid0::Raid0;

use serde::{Deserialize, Serialize};

/// One disk's part of a request: contiguous bytes at a disk offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub disk: usize,
    pub offset: u64,
    pub bytes: u64,
}

pub trait Personality {
    /// The disk extents of `bytes` at array offset `offset` (a write when `write`), into `out`
    /// (cleared first).
    fn route(&mut self, offset: u64, bytes: u64, write: bool, out: &mut Vec<Extent>);
    /// How long `disk` may idle before it is spun down (None: it never is).
    fn idle_timeout_ns(&self, disk: usize) -> Option<u64>;
    /// How often [`Personality::monitor`] runs (None: never).
    fn monitor_every_ns(&self) -> Option<u64> {
        None
    }
    /// With each disk's busy share since the last call: the disks to spin up now, into `wake`.
    fn monitor(&mut self, _now_ns: u64, _busy: &[f64], _wake: &mut Vec<usize>) {}
    /// `disk` has spun up (its queue is served next).
    fn spun_up(&mut self, _now_ns: u64, _disk: usize) {}
    /// Bytes `disk` must bring up to date before it serves (written while it was off), taken.
    fn take_stale(&mut self, _disk: usize) -> u64 {
        0
    }
    /// The state a report shows over time: the gear's disks, or None.
    fn gear(&self) -> Option<usize> {
        None
    }
}

/// What a user chooses, with its parameters (TOML or the command line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "personality", rename_all = "lowercase", deny_unknown_fields)]
pub enum Spec {
    Raid0,
    /// `timeout_s`: the idle time before a spin-down; None: the disk's break-even time.
    Lru {
        #[serde(default)]
        timeout_s: Option<f64>,
    },
    Paraid(ParaidParams),
}

impl Spec {
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Raid0 => "raid0",
            Spec::Lru { .. } => "lru",
            Spec::Paraid(_) => "paraid",
        }
    }
}

/// Uniform striping: stripe unit `unit` bytes round-robin over `disks`.
#[derive(Debug, Clone, Copy)]
pub struct Striping {
    pub disks: usize,
    pub unit: u64,
}

impl Striping {
    /// The extents of a request: each disk's units of it are consecutive on that disk (one
    /// stripe row apart in the array), so each disk gets at most one extent.
    pub fn route(&self, offset: u64, bytes: u64, out: &mut Vec<Extent>) {
        out.clear();
        let (n, unit) = (self.disks as u64, self.unit);
        let (mut at, end) = (offset, offset + bytes.max(1));
        while at < end {
            let stripe = at / unit;
            let disk = (stripe % n) as usize;
            let within = at % unit;
            let take = (unit - within).min(end - at);
            let disk_offset = (stripe / n) * unit + within;
            match out.iter_mut().find(|e| e.disk == disk) {
                Some(e) => e.bytes = disk_offset + take - e.offset,
                None => out.push(Extent {
                    disk,
                    offset: disk_offset,
                    bytes: take,
                }),
            }
            at += take;
        }
    }
}
