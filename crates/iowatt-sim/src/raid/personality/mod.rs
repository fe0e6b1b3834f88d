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

use super::DAY_NS;

/// One disk's part of a request: contiguous bytes at a disk offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub disk: usize,
    pub offset: u64,
    pub bytes: u64,
}

/// What a personality's monitor asks of the array.
#[derive(Debug, Default)]
pub struct Actions {
    /// Disks to spin up now.
    pub wake: Vec<usize>,
    /// Copies the disks must make before anything queued after them (PARAID's replicas
    /// brought up to date before their home disks go off), and the bytes they copy.
    pub sync: Vec<Extent>,
    pub copied: u64,
}

pub trait Personality {
    /// The disk extents of `bytes` at array offset `offset` (a write when `write`), into `out`
    /// (cleared first).
    fn route(&mut self, offset: u64, bytes: u64, write: bool, out: &mut Vec<Extent>);
    /// How long `disk` may idle at `now_ns` before it is spun down (None: it is not).
    fn idle_timeout_ns(&self, disk: usize, now_ns: u64) -> Option<u64>;
    /// `disk` starts spinning down at `now_ns`.
    fn spinning_down(&mut self, _now_ns: u64, _disk: usize) {}
    /// How often [`Personality::monitor`] runs (None: never).
    fn monitor_every_ns(&self) -> Option<u64> {
        None
    }
    /// With each disk's busy share since the last call: what the array must do now.
    fn monitor(&mut self, _now_ns: u64, _busy: &[f64], _act: &mut Actions) {}
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
    /// `cycles_per_day`: spin-downs allowed a day per disk; None: no limit (the study's LRU).
    Lru {
        #[serde(default)]
        timeout_s: Option<f64>,
        #[serde(default)]
        cycles_per_day: Option<f64>,
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
            push_extent(out, disk, disk_offset, take);
            at += take;
        }
    }
}

/// Adds `bytes` at `offset` of `disk` to a request's extents: to the disk's extent it
/// continues, else as an extent of its own (a seek away).
pub(crate) fn push_extent(out: &mut Vec<Extent>, disk: usize, offset: u64, bytes: u64) {
    match out
        .iter_mut()
        .find(|e| e.disk == disk && e.offset + e.bytes == offset)
    {
        Some(e) => e.bytes += bytes,
        None => out.push(Extent {
            disk,
            offset,
            bytes,
        }),
    }
}

/// Spin-downs per disk counted by the day of the trace, and the most any disk made in a day.
#[derive(Debug, Clone)]
pub struct DailyCount {
    day: u64,
    today: Vec<u64>,
    most: Vec<u64>,
}

impl DailyCount {
    pub fn new(disks: usize) -> Self {
        Self {
            day: 0,
            today: vec![0; disks],
            most: vec![0; disks],
        }
    }

    /// `disk`'s spin-downs on the day of `now_ns`.
    pub fn on(&self, now_ns: u64, disk: usize) -> u64 {
        if now_ns / DAY_NS == self.day {
            self.today[disk]
        } else {
            0
        }
    }

    /// `disk` spins down at `now_ns`.
    pub fn count(&mut self, now_ns: u64, disk: usize) {
        if now_ns / DAY_NS != self.day {
            self.day = now_ns / DAY_NS;
            self.today.iter_mut().for_each(|u| *u = 0);
        }
        self.today[disk] += 1;
        self.most[disk] = self.most[disk].max(self.today[disk]);
    }

    /// Each disk's most spin-downs in any day so far.
    pub fn most(&self) -> &[u64] {
        &self.most
    }
}

/// Spin-downs a disk may make in a day of the trace: ⌊B⌋ of a budget of B a day (a disk rated
/// for 50,000 start/stops over five years may make 27, not 28), or any number.
#[derive(Debug, Clone)]
pub struct DailyBudget {
    allowed: Option<u64>,
    spent: DailyCount,
}

impl DailyBudget {
    pub fn new(per_day: Option<f64>, disks: usize) -> Self {
        Self {
            allowed: per_day.map(|b| b.floor() as u64),
            spent: DailyCount::new(disks),
        }
    }

    /// Whether `disk` may spin down once more on the day of `now_ns`.
    pub fn allows(&self, now_ns: u64, disk: usize) -> bool {
        self.allowed.is_none_or(|a| self.spent.on(now_ns, disk) < a)
    }

    /// `disk` spins down at `now_ns`.
    pub fn spend(&mut self, now_ns: u64, disk: usize) {
        self.spent.count(now_ns, disk);
    }
}
