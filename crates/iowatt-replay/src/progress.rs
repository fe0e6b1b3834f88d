//! Live counts a caller polls while the replay runs (monitoring never touches the schedule:
//! relaxed atomics the scheduler and requests bump, read from another thread).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use iowatt_metrics::{LatencyHistogram, LatencySoFar, LiveTally};

use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Counters {
    issued: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    open: AtomicI64,
    bytes: AtomicU64,
    lateness_ns: AtomicI64,
    max_lateness_ns: AtomicI64,
    cancelled: AtomicBool,
    /// Wakes the replay's waits when it is cancelled (from any thread, runtime or not).
    cancel: Notify,
    /// The answered requests' completion times from their due time and the failures by kind
    /// (`timeout`, `reset` …), for a metrics scrape; warm-up and cool-down are in, since a
    /// scrape has no window.
    live: LiveTally,
    /// Beside them, the same requests' time to first byte from the due time and completion
    /// from the send (the server's service time).
    beside: Mutex<Beside>,
}

#[derive(Debug, Default)]
struct Beside {
    ttfb: LatencyHistogram,
    service: LatencyHistogram,
}

#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Counters>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressSnapshot {
    /// Requests sent so far (the schedule's position).
    pub issued: u64,
    /// Requests ended, with a response or an error.
    pub completed: u64,
    /// Requests ended by a transport error or a timeout (no response).
    pub failed: u64,
    /// Requests in flight (each on an open connection).
    pub open: i64,
    /// Response body bytes received.
    pub bytes: u64,
    /// Send time minus due time of the last request sent, and the most so far.
    pub lateness_ns: i64,
    pub max_lateness_ns: i64,
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.0.cancelled.store(true, Relaxed);
        self.0.cancel.notify_waiters();
    }

    /// Returns once the replay is cancelled.
    pub(crate) async fn until_cancelled(&self) {
        let notified = self.0.cancel.notified();
        let mut notified = std::pin::pin!(notified);
        // Registered before the flag is read, so a cancel in between is not missed.
        notified.as_mut().enable();
        if !self.cancelled() {
            notified.await;
        }
    }

    pub fn cancelled(&self) -> bool {
        self.0.cancelled.load(Relaxed)
    }

    pub(crate) fn sent(&self, lateness_ns: i64) {
        let c = &self.0;
        c.issued.fetch_add(1, Relaxed);
        c.open.fetch_add(1, Relaxed);
        c.lateness_ns.store(lateness_ns, Relaxed);
        c.max_lateness_ns.fetch_max(lateness_ns, Relaxed);
    }

    /// A request ended: answered with its latencies (`Ok`, as `records::latencies` gives
    /// them), or failed for a reason (`Err(kind)`).
    pub(crate) fn ended(&self, bytes: u64, took: Result<[u64; 4], &'static str>) {
        let c = &self.0;
        c.open.fetch_sub(1, Relaxed);
        c.completed.fetch_add(1, Relaxed);
        c.bytes.fetch_add(bytes, Relaxed);
        match took {
            Ok([ttfb, completion, _, service]) => {
                c.live.record_latency(completion);
                let mut beside = c.beside.lock().unwrap_or_else(|e| e.into_inner());
                beside.ttfb.record(ttfb);
                beside.service.record(service);
            }
            Err(kind) => {
                c.failed.fetch_add(1, Relaxed);
                c.live.add_error(kind);
            }
        }
    }

    /// The latencies and failures by kind a metrics scrape reads.
    pub fn live(&self) -> &LiveTally {
        &self.0.live
    }

    /// The histograms a scrape reads beside [`Self::live`]'s, by name (`ttfb`, `service`), in
    /// the bands of `edges`.
    pub fn live_beside(&self, edges: &[u64]) -> [(&'static str, LatencySoFar); 2] {
        let beside = self.0.beside.lock().unwrap_or_else(|e| e.into_inner());
        [
            ("ttfb", beside.ttfb.so_far(edges)),
            ("service", beside.service.so_far(edges)),
        ]
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let c = &self.0;
        ProgressSnapshot {
            issued: c.issued.load(Relaxed),
            completed: c.completed.load(Relaxed),
            failed: c.failed.load(Relaxed),
            open: c.open.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            lateness_ns: c.lateness_ns.load(Relaxed),
            max_lateness_ns: c.max_lateness_ns.load(Relaxed),
        }
    }
}
