//! LRU RAID-0: RAID-0's striping, and a disk spins down once it has idled past its timeout
//! (by default its break-even time), within a daily budget of spin-downs if it is given one.

use super::{DailyBudget, Extent, Personality, Striping};

pub struct Lru {
    pub striping: Striping,
    pub timeout_ns: u64,
    pub budget: DailyBudget,
}

impl Personality for Lru {
    fn route(&mut self, offset: u64, bytes: u64, _write: bool, out: &mut Vec<Extent>) {
        self.striping.route(offset, bytes, out);
    }

    fn idle_timeout_ns(&self, disk: usize, now_ns: u64) -> Option<u64> {
        self.budget.allows(now_ns, disk).then_some(self.timeout_ns)
    }

    fn spinning_down(&mut self, now_ns: u64, disk: usize) {
        self.budget.spend(now_ns, disk);
    }
}
