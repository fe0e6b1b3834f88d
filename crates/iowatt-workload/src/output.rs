//! What a run returns: totals, per-flowop histograms, and the interval series.

use std::collections::BTreeMap;

use iowatt_metrics::{IntervalRow, LatencyHistogram};

use crate::spec::OpKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Complete,
    /// Stopped by [`crate::Progress::cancel`] before the runtime was up.
    Cancelled,
    /// Stopped by an I/O error that would recur on every operation (e.g. no space).
    Failed(String),
}

#[derive(Debug, Clone)]
pub struct FlowopOutput {
    pub name: String,
    pub kind: OpKind,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub hist: LatencyHistogram,
}

#[derive(Debug, Clone)]
pub struct Output {
    pub name: String,
    pub status: Status,
    /// CLOCK_MONOTONIC ns at the start of the measured phase (after the ramp).
    pub measure_start_ns: u64,
    /// Length of the measured phase actually run.
    pub measured_ns: u64,
    pub flowops: Vec<FlowopOutput>,
    pub intervals: Vec<IntervalRow>,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// CPU time of the worker threads during the measured phase.
    pub cpu_usr_ns: u64,
    pub cpu_sys_ns: u64,
    /// A run with a schedule: how it kept it. `None` for a closed loop.
    pub open_loop: Option<OpenLoop>,
}

/// How an open-loop run kept its schedule to its deadline. Drained operations are part of the
/// flowops' totals; those never issued or still outstanding when the drain ended are not, but
/// their lateness is in [`Output::histogram`] and in the last interval's latencies.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    /// Requested: I/O operations per second (a rate), or events per second (an event
    /// generator, when `events` is set).
    pub rate: f64,
    /// Events taken from the event generator before the deadline.
    pub events: Option<u64>,
    pub drained: u64,
    pub not_issued: u64,
    pub outstanding: u64,
    /// The lateness of the operations not issued or outstanding.
    pub late: LatencyHistogram,
}

impl FlowopOutput {
    /// Counts toward the run's totals (FileBench's IO Summary).
    pub fn is_io(&self) -> bool {
        self.kind.is_io()
    }
}

/// Whole-run figures count only I/O flowops, as FileBench's IO Summary does.
impl Output {
    fn io(&self) -> impl Iterator<Item = &FlowopOutput> {
        self.flowops.iter().filter(|f| f.is_io())
    }

    pub fn ops(&self) -> u64 {
        self.io().map(|f| f.ops).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.io().map(|f| f.bytes).sum()
    }

    pub fn errors(&self) -> u64 {
        self.flowops.iter().map(|f| f.errors).sum()
    }

    /// The I/O flowops merged, with an open loop's lateness of the operations it never
    /// completed: the workload's latency distribution.
    pub fn histogram(&self) -> LatencyHistogram {
        let mut all = LatencyHistogram::new();
        self.io().for_each(|f| all.merge(&f.hist));
        if let Some(open) = &self.open_loop {
            all.merge(&open.late);
        }
        all
    }
}
