//! The page cache in front of the array: least recently used, by request (a web server reads
//! whole files, so a request for the same bytes again is a hit), up to a capacity in bytes.

use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default)]
pub struct PageCache {
    capacity: u64,
    used: u64,
    clock: u64,
    /// offset → (bytes, last use)
    entries: HashMap<u64, (u64, u64)>,
    /// last use → offset, oldest first
    order: BTreeMap<u64, u64>,
}

impl PageCache {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            ..Self::default()
        }
    }

    /// Whether `bytes` at `offset` are cached; either way they are the most recently used
    /// after this (a miss reads them in, evicting the least recently used as needed; what is
    /// larger than the whole cache passes by).
    pub fn access(&mut self, offset: u64, bytes: u64) -> bool {
        self.clock += 1;
        if let Some((cached, used)) = self.entries.get_mut(&offset) {
            self.order.remove(used);
            *used = self.clock;
            self.order.insert(self.clock, offset);
            if *cached >= bytes {
                return true;
            }
            self.used += bytes - *cached;
            *cached = bytes;
        } else {
            if bytes > self.capacity {
                return false;
            }
            self.entries.insert(offset, (bytes, self.clock));
            self.order.insert(self.clock, offset);
            self.used += bytes;
        }
        while self.used > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((b, _)) = self.entries.remove(&oldest) {
                self.used -= b;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::PageCache;

    #[test]
    fn re_reads_hit_and_the_least_recently_used_goes_first() {
        let mut c = PageCache::new(10);
        assert!(!c.access(0, 4));
        assert!(!c.access(100, 4));
        assert!(c.access(0, 4), "a re-read");
        assert!(
            !c.access(200, 4),
            "10 bytes hold two of these: 100 is evicted"
        );
        assert!(!c.access(100, 4));
        assert!(c.access(200, 4));
        assert!(!c.access(300, 11), "larger than the cache");
        assert!(!c.access(300, 11));
        let mut none = PageCache::new(0);
        assert!(!none.access(0, 1) && !none.access(0, 1));
    }
}
