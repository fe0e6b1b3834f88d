//! A worker's private bookkeeping: per-flowop totals and histograms, the current interval, and
//! batched progress. Nothing here is shared, so recording an operation costs a few adds and
//! two histogram increments; the interval is handed to the collector once per interval.
//!
//! A run with a schedule (open loop) accounts for every operation due before its deadline:
//! one completing within the drain after it is measured in the last interval, and one never
//! issued, or still outstanding when the drain ends, counts its lateness at that moment, as a
//! request still waiting would. A closed loop drops what completes after the deadline.

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

/// An open-loop worker's operations that did not simply complete before the deadline, and the
/// lateness of those that never completed.
#[derive(Default)]
pub struct Backlog {
    /// Completed (or failed) after the deadline, within the drain.
    pub drained: u64,
    /// Due before the deadline and never issued.
    pub not_issued: u64,
    /// Issued, and still in flight when the drain ended.
    pub outstanding: u64,
    /// The lateness of the operations not issued or outstanding.
    pub late: LatencyHistogram,
}

impl Backlog {
    pub fn merge(&mut self, other: &Backlog) {
        self.drained += other.drained;
        self.not_issued += other.not_issued;
        self.outstanding += other.outstanding;
        self.late.merge(&other.late);
    }
}

/// Operations due at `first`, `first + step`, … (`n` of them, at least one) that were never
/// issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missed {
    pub first: u64,
    pub step: u64,
    pub n: u64,
}

impl Missed {
    /// Records each one's lateness at `cutoff` (cutoff − due) in `hist`.
    pub fn record_late(&self, cutoff: u64, hist: &mut LatencyHistogram) {
        // The latest due is the least late.
        let last = self
            .first
            .saturating_add(self.step.saturating_mul(self.n - 1));
        hist.record_steps(cutoff.saturating_sub(last), self.step, self.n);
    }
}

/// The measured phase a recorder counts in and, with a schedule, the drain after it.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start: u64,
    pub end: u64,
    pub drain_ns: Option<u64>,
}

/// When an operation that completed at some instant is counted.
enum When {
    /// In the ramp, or after the deadline of a closed loop: not measured.
    Unmeasured,
    Measured,
    /// After the deadline, within the drain.
    Drained,
    /// After the drain: it counts as outstanding at the drain's end.
    Outstanding(u64),
}

pub struct Recorder {
    worker: usize,
    measure_start: u64,
    measure_end: u64,
    /// Open loop: the end of the drain after the deadline.
    drain_end: Option<u64>,
    pub backlog: Backlog,
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
        window: Window,
        interval_ns: u64,
        tx: Sender<IntervalMsg>,
        progress: Progress,
    ) -> Self {
        Self {
            worker,
            measure_start: window.start,
            measure_end: window.end,
            drain_end: window.drain_ns.map(|d| window.end.saturating_add(d)),
            backlog: Backlog::default(),
            interval_ns,
            index: 0,
            next_boundary: window.start + interval_ns,
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

    /// Whether the worker keeps a schedule: then it drains after the deadline and counts what
    /// it never issued.
    pub fn open_loop(&self) -> bool {
        self.drain_end.is_some()
    }

    fn when(&self, done: u64) -> When {
        if done < self.measure_start {
            return When::Unmeasured;
        }
        if done < self.measure_end {
            return When::Measured;
        }
        match self.drain_end {
            None => When::Unmeasured,
            Some(end) if done <= end => When::Drained,
            Some(end) => When::Outstanding(end),
        }
    }

    /// Moves to the interval an operation counted at `at` belongs to; after the deadline, the
    /// last interval.
    fn interval_at(&mut self, at: u64) {
        let at = at.min(self.measure_end - 1);
        if at >= self.next_boundary {
            self.roll(at);
        }
    }

    /// Counts an operation due at `due` that ended at `done` where the window puts it; true if
    /// it is measured (the current interval is then the one it belongs to).
    #[inline]
    fn measured(&mut self, due: u64, done: u64) -> bool {
        match self.when(done) {
            When::Unmeasured => return false,
            When::Measured => {}
            When::Drained => self.backlog.drained += 1,
            When::Outstanding(end) => {
                self.outstanding(due, end);
                return false;
            }
        }
        self.interval_at(done);
        true
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
        if !self.measured(started, done) {
            return;
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

    pub fn failed(&mut self, flowop: usize, started: u64, done: u64, errno: i32) {
        self.unpublished.2 += 1;
        let kind = errno_name(errno);
        self.progress.live().add_error(&kind);
        if !self.measured(started, done) {
            return;
        }
        self.flowops[flowop].errors += 1;
        self.interval.errors += 1;
        *self.errors_by_kind.entry(kind).or_insert(0) += 1;
    }

    /// An operation due at `due` still in flight at `at`, when the drain ended.
    pub fn outstanding(&mut self, due: u64, at: u64) {
        if at < self.measure_start {
            return;
        }
        self.interval_at(at);
        let lat = at.saturating_sub(due);
        self.backlog.outstanding += 1;
        self.backlog.late.record(lat);
        self.interval.hist.record(lat);
    }

    /// Operations due before `cutoff` (the deadline, or the moment the run was stopped) that
    /// were never issued: each counts its lateness at `cutoff`.
    pub fn not_issued(&mut self, missed: Missed, cutoff: u64) {
        if cutoff <= self.measure_start {
            return;
        }
        self.interval_at(cutoff - 1);
        self.backlog.not_issued += missed.n;
        missed.record_late(cutoff, &mut self.backlog.late);
        missed.record_late(cutoff, &mut self.interval.hist);
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    const S: u64 = 1_000_000_000;

    /// A one-flowop recorder measuring [10 s, 13 s) in 1 s intervals, with a 2 s drain if open.
    fn recorder(drain: Option<u64>) -> (Recorder, mpsc::Receiver<IntervalMsg>) {
        let (tx, rx) = mpsc::channel();
        let window = Window {
            start: 10 * S,
            end: 13 * S,
            drain_ns: drain,
        };
        let r = Recorder::new(0, 1, window, S, tx, Progress::new());
        (r, rx)
    }

    fn intervals(mut r: Recorder, rx: mpsc::Receiver<IntervalMsg>) -> Vec<(u64, u64, u64)> {
        r.finish();
        drop(r);
        rx.iter()
            .map(|m| (m.index, m.accum.ops, m.accum.hist.count()))
            .collect()
    }

    #[test]
    fn a_closed_loop_drops_what_completes_after_the_deadline() {
        let (mut r, rx) = recorder(None);
        r.ok(0, 12 * S, 12 * S + 5, 4096);
        r.ok(0, 12 * S + 9, 13 * S + 1, 4096);
        assert_eq!(r.flowops[0].ops, 1);
        assert_eq!(r.backlog.drained, 0);
        assert_eq!(intervals(r, rx), [(0, 0, 0), (2, 1, 1)]);
    }

    #[test]
    fn an_open_loop_measures_the_drain_in_the_last_interval_and_counts_the_rest_late() {
        let (mut r, rx) = recorder(Some(2 * S));
        r.ok(0, 11 * S, 11 * S + 5, 4096);
        // In flight at the deadline: one answered within the drain, one after it.
        r.ok(0, 12 * S + 500, 14 * S, 4096);
        r.ok(0, 12 * S + 900, 20 * S, 4096);
        // Due 300 ms and 100 ms before the deadline, never issued.
        let missed = Missed {
            first: 12 * S + 700_000_000,
            step: 200_000_000,
            n: 2,
        };
        r.not_issued(missed, 13 * S);
        assert_eq!(r.flowops[0].ops, 2);
        // The drained one's latency runs from its due time.
        assert!(r.flowops[0].hist.max() >= 2 * S - 500);
        let b = &r.backlog;
        assert_eq!((b.drained, b.outstanding, b.not_issued), (1, 1, 2));
        // Outstanding since its due time until the drain ended: 3 s late.
        let late = b.late.buckets();
        assert_eq!(late.len(), 3);
        assert!(late[2].value_ns >= 3 * S - 900 && late[2].value_ns <= 3 * S + 3 * S / 1000);
        assert!(late[0].value_ns >= 100_000_000 && late[0].value_ns < 100_200_000);
        assert_eq!(intervals(r, rx), [(0, 0, 0), (1, 1, 1), (2, 1, 4)]);
    }

    #[test]
    fn nothing_counts_before_the_measured_phase() {
        let (mut r, rx) = recorder(Some(S));
        let missed = Missed {
            first: 9 * S,
            step: S,
            n: 1,
        };
        r.not_issued(missed, 10 * S);
        r.failed(0, 9 * S, 9 * S + 1, libc::EIO);
        assert_eq!(r.backlog.not_issued, 0);
        assert_eq!(r.flowops[0].errors, 0);
        assert_eq!(intervals(r, rx), [(0, 0, 0)]);
    }
}
