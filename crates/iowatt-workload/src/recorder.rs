//! A worker's private bookkeeping: per-flowop totals and histograms, the current interval, and
//! batched progress. Nothing here is shared, so recording an operation costs a few adds and
//! two histogram increments; the interval is handed to the collector once per interval.

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;

use iowatt_metrics::{IntervalAccum, LatencyHistogram};

use crate::error::errno_name;
use crate::progress::Progress;

const PUBLISH_EVERY: u64 = 64;

/// A worker's contribution to interval `index`; `last` says the worker has finished.
pub struct IntervalMsg {
    pub worker: usize,
    pub index: u64,
    pub accum: IntervalAccum,
    pub last: bool,
}

pub struct FlowopTotals {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub hist: LatencyHistogram,
}

pub struct Recorder {
    worker: usize,
    measure_start: u64,
    measure_end: u64,
    interval_ns: u64,
    index: u64,
    next_boundary: u64,
    interval: IntervalAccum,
    pub flowops: Vec<FlowopTotals>,
    pub errors_by_kind: BTreeMap<String, u64>,
    tx: Sender<IntervalMsg>,
    progress: Progress,
    unpublished: (u64, u64, u64),
}

impl Recorder {
    pub fn new(
        worker: usize,
        nflowops: usize,
        measure_start: u64,
        measure_end: u64,
        interval_ns: u64,
        tx: Sender<IntervalMsg>,
        progress: Progress,
    ) -> Self {
        Self {
            worker,
            measure_start,
            measure_end,
            interval_ns,
            index: 0,
            next_boundary: measure_start + interval_ns,
            interval: IntervalAccum::default(),
            flowops: (0..nflowops)
                .map(|_| FlowopTotals {
                    ops: 0,
                    bytes: 0,
                    errors: 0,
                    hist: LatencyHistogram::new(),
                })
                .collect(),
            errors_by_kind: BTreeMap::new(),
            tx,
            progress,
            unpublished: (0, 0, 0),
        }
    }

    /// Records one completed operation. `started` is the intended issue time, so a
    /// rate-limited run charges queueing delay to latency instead of hiding it.
    #[inline]
    pub fn ok(&mut self, flowop: usize, started: u64, done: u64, bytes: u64) {
        self.unpublished.0 += 1;
        self.unpublished.1 += bytes;
        if self.unpublished.0 >= PUBLISH_EVERY {
            self.publish();
        }
        if done < self.measure_start || done >= self.measure_end {
            return; // ramp, or I/O drained after the deadline
        }
        if done >= self.next_boundary {
            self.roll(done);
        }
        let lat = done.saturating_sub(started);
        let f = &mut self.flowops[flowop];
        f.ops += 1;
        f.bytes += bytes;
        f.hist.record(lat);
        self.interval.ops += 1;
        self.interval.bytes += bytes;
        self.interval.hist.record(lat);
    }

    /// Records a flowop that is not I/O (a wait, a limit, CPU work): it has its own statistics
    /// but adds nothing to the run's ops, intervals or progress, as in FileBench's IO Summary.
    #[inline]
    pub fn ok_other(&mut self, flowop: usize, started: u64, done: u64, bytes: u64) {
        if done < self.measure_start || done >= self.measure_end {
            return;
        }
        let f = &mut self.flowops[flowop];
        f.ops += 1;
        f.bytes += bytes;
        f.hist.record(done.saturating_sub(started));
    }

    pub fn failed(&mut self, flowop: usize, done: u64, errno: i32) {
        self.unpublished.2 += 1;
        let kind = errno_name(errno);
        self.progress.live().add_error(&kind);
        if done < self.measure_start || done >= self.measure_end {
            return;
        }
        if done >= self.next_boundary {
            self.roll(done);
        }
        self.flowops[flowop].errors += 1;
        self.interval.errors += 1;
        *self.errors_by_kind.entry(kind).or_insert(0) += 1;
    }

    /// Hands the finished interval(s) to the collector and moves to the one containing `now`.
    fn roll(&mut self, now: u64) {
        let index = (now - self.measure_start) / self.interval_ns;
        self.send(false);
        // A slow run's counts reach the progress at least once an interval, not only every
        // PUBLISH_EVERY operations (a scrape would see its operations seconds late).
        self.publish();
        self.index = index;
        self.next_boundary = self.measure_start + (index + 1) * self.interval_ns;
    }

    fn send(&mut self, last: bool) {
        let accum = self.interval.clone();
        self.interval.clear();
        // The collector outlives every worker; a send error only means the run is being torn down.
        let _ = self.tx.send(IntervalMsg {
            worker: self.worker,
            index: self.index,
            accum,
            last,
        });
    }

    fn publish(&mut self) {
        let (ops, bytes, errors) = std::mem::take(&mut self.unpublished);
        self.progress.publish(ops, bytes, errors);
    }

    /// Flushes everything; the recorder keeps only its totals.
    pub fn finish(&mut self) {
        self.publish();
        self.send(true);
    }
}
