//! One row per interval: what a workload did in each second of the measured phase.

use crate::histogram::LatencyHistogram;

/// A finished interval, ready for `intervals.parquet`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// Interval start, ns since the measured phase began.
    pub t_ns: u64,
    /// Interval length in ns (the last one may be short).
    pub duration_ns: u64,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// What one or more workers did in one interval, merged before it becomes a row.
#[derive(Debug, Clone, Default)]
pub struct IntervalAccum {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub hist: LatencyHistogram,
}

impl IntervalAccum {
    pub fn merge(&mut self, other: &IntervalAccum) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.hist.merge(&other.hist);
    }

    pub fn clear(&mut self) {
        self.ops = 0;
        self.bytes = 0;
        self.errors = 0;
        self.hist.reset();
    }

    pub fn to_row(&self, t_ns: u64, duration_ns: u64) -> IntervalRow {
        IntervalRow {
            t_ns,
            duration_ns,
            ops: self.ops,
            bytes: self.bytes,
            errors: self.errors,
            p50_ns: self.hist.percentile(50.0),
            p99_ns: self.hist.percentile(99.0),
            p999_ns: self.hist.percentile(99.9),
            max_ns: self.hist.max(),
        }
    }
}
