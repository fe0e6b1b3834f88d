//! What a running engine keeps for a live metrics scrape beside its atomic counters: the
//! latencies so far and the failures by kind. Each sits behind a lock the engine takes rarely —
//! once an interval per worker (the workload engine), once per answered request (the replayer),
//! once per failure — and a scrape reads them without stopping the run.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::histogram::{LatencyHistogram, LatencySoFar};

#[derive(Debug, Default)]
pub struct LiveTally {
    latency: Mutex<LatencyHistogram>,
    errors_by_kind: Mutex<BTreeMap<String, u64>>,
}

impl LiveTally {
    /// Adds a worker's histogram (an interval's latencies).
    pub fn merge_latency(&self, hist: &LatencyHistogram) {
        if hist.count() > 0 {
            lock(&self.latency).merge(hist);
        }
    }

    pub fn record_latency(&self, ns: u64) {
        lock(&self.latency).record(ns);
    }

    /// One failure more of this kind (`EIO`, `timeout` …).
    pub fn add_error(&self, kind: &str) {
        let mut by_kind = lock(&self.errors_by_kind);
        match by_kind.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                by_kind.insert(kind.to_string(), 1);
            }
        }
    }

    /// The latencies so far, by the bands of `edges`.
    pub fn latency_so_far(&self, edges: &[u64]) -> LatencySoFar {
        lock(&self.latency).so_far(edges)
    }

    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        lock(&self.errors_by_kind).clone()
    }
}

/// A reader that panicked while holding a lock leaves counts that are still counts.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_adds_latencies_and_failures_by_kind() {
        let tally = LiveTally::default();
        let mut hist = LatencyHistogram::new();
        hist.record(5_000);
        tally.merge_latency(&hist);
        tally.record_latency(50_000);
        tally.add_error("EIO");
        tally.add_error("EIO");
        tally.add_error("ENOSPC");
        let so_far = tally.latency_so_far(&[10_000]);
        assert_eq!((so_far.bands, so_far.count), (vec![1, 1], 2));
        let kinds: Vec<_> = tally.errors_by_kind().into_iter().collect();
        assert_eq!(kinds, [("EIO".to_string(), 2), ("ENOSPC".to_string(), 1)]);
    }
}
