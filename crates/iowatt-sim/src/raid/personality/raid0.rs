//! RAID-0: uniform striping over every disk, never spun down; the baseline.

use super::{Extent, Personality, Striping};

pub struct Raid0 {
    pub striping: Striping,
}

impl Personality for Raid0 {
    fn route(&mut self, offset: u64, bytes: u64, _write: bool, out: &mut Vec<Extent>) {
        self.striping.route(offset, bytes, out);
    }

    fn idle_timeout_ns(&self, _disk: usize, _now_ns: u64) -> Option<u64> {
        None
    }
}
