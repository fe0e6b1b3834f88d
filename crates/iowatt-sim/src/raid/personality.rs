//! The RAID personalities behind one trait: where a request's bytes live, and when an idle
//! disk spins down. RAID-0 stripes over every disk and never spins down; LRU RAID-0 stripes
//! the same and spins a disk down once it has idled past its timeout.

use serde::{Deserialize, Serialize};

/// One disk's part of a request: contiguous bytes at a disk offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub disk: usize,
    pub offset: u64,
    pub bytes: u64,
}

pub trait Personality {
    /// The disk extents of `bytes` at array offset `offset`, into `out` (cleared first).
    fn route(&mut self, offset: u64, bytes: u64, out: &mut Vec<Extent>);
    /// How long `disk` may idle before it is spun down (None: it never is).
    fn idle_timeout_ns(&self, disk: usize) -> Option<u64>;
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
}

impl Spec {
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Raid0 => "raid0",
            Spec::Lru { .. } => "lru",
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

pub struct Raid0 {
    pub striping: Striping,
}

impl Personality for Raid0 {
    fn route(&mut self, offset: u64, bytes: u64, out: &mut Vec<Extent>) {
        self.striping.route(offset, bytes, out);
    }

    fn idle_timeout_ns(&self, _disk: usize) -> Option<u64> {
        None
    }
}

pub struct Lru {
    pub striping: Striping,
    pub timeout_ns: u64,
}

impl Personality for Lru {
    fn route(&mut self, offset: u64, bytes: u64, out: &mut Vec<Extent>) {
        self.striping.route(offset, bytes, out);
    }

    fn idle_timeout_ns(&self, _disk: usize) -> Option<u64> {
        Some(self.timeout_ns)
    }
}
