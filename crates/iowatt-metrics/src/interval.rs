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
    /// Operations above each of the run's slow thresholds, in the same order.
    pub slow_ops: Vec<u64>,
    /// Operations per band of the run's heatmap edges (`LatencyHistogram::counts_by_edges`).
    pub heat_ops: Vec<u64>,
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

    pub fn to_row(
        &self,
        t_ns: u64,
        duration_ns: u64,
        slow_ns: &[u64],
        heat_ns: &[u64],
    ) -> IntervalRow {
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
            slow_ops: slow_ns.iter().map(|&t| self.hist.count_above(t)).collect(),
            heat_ops: self.hist.counts_by_edges(heat_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_counts_operations_above_each_slow_threshold() {
        let mut accum = IntervalAccum::default();
        for ns in [2_000_000, 120_000_000, 230_000_000, 240_000_000] {
            accum.ops += 1;
            accum.hist.record(ns);
        }
        let row = accum.to_row(
            0,
            1_000_000_000,
            &[100_000_000, 200_000_000],
            &[100_000_000],
        );
        assert_eq!(row.slow_ops, vec![3, 2]);
        assert_eq!(row.heat_ops, vec![1, 3]);
        let empty = IntervalAccum::default().to_row(0, 1_000_000_000, &[100_000_000], &[]);
        assert_eq!(empty.slow_ops, vec![0]);
        assert!(empty.heat_ops.is_empty());
    }
}
