//! LRU RAID-0: RAID-0's striping, and a disk spins down once it has idled past its timeout
//! (by default its break-even time).

use super::{Extent, Personality, Striping};

pub struct Lru {
    pub striping: Striping,
    pub timeout_ns: u64,
}

impl Personality for Lru {
    fn route(&mut self, offset: u64, bytes: u64, _write: bool, out: &mut Vec<Extent>) {
        self.striping.route(offset, bytes, out);
    }

    fn idle_timeout_ns(&self, _disk: usize) -> Option<u64> {
        Some(self.timeout_ns)
    }
}
