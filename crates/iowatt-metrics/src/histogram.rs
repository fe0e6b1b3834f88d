//! Latency histograms: HDR (Gil Tene's High Dynamic Range histogram, via the `hdrhistogram`
//! crate) tracking 1 ns to 100 s at 3 significant digits, so every percentile has a relative
//! error of at most 0.1% over the whole range — fio's bins saturate near 17 s and FileBench has
//! none. A value above 100 s is clamped to 100 s and counted in `saturated`, never dropped.
//!
//! The bucket export is what makes stored results exact: `(value_ns, count)` pairs where
//! `value_ns` is the highest value equivalent to the bucket (HDR's own convention for
//! `value_at_quantile`), so a percentile recomputed from the buckets equals the engine's.

use hdrhistogram::Histogram;

/// Highest trackable latency: 100 s in ns.
pub const MAX_NS: u64 = 100_000_000_000;
const SIGFIG: u8 = 3;

/// One exported histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub value_ns: u64,
    pub count: u64,
}

#[derive(Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    saturated: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count())
            .field("saturated", &self.saturated)
            .finish()
    }
}

/// Latencies by band, as a live metrics scrape reads them ([`LatencyHistogram::so_far`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySoFar {
    /// Operations per band of the edges asked for ([`LatencyHistogram::counts_by_edges`]).
    pub bands: Vec<u64>,
    pub count: u64,
    pub sum_ns: f64,
}

impl LatencyHistogram {
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_NS, SIGFIG)
                .expect("static histogram bounds are valid"),
            saturated: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = if ns > MAX_NS {
            self.saturated += 1;
            MAX_NS
        } else {
            ns.max(1)
        };
        // Cannot fail: v is within the bounds the histogram was built with.
        let _ = self.hist.record(v);
    }

    /// Records the `n` values `low`, `low + step`, … a bucket at a time: an open-loop run's
    /// operations never issued are such a series, and a stalled device can leave millions.
    pub fn record_steps(&mut self, low: u64, step: u64, n: u64) {
        let mut i = 0;
        while i < n {
            let v = low.saturating_add(step.saturating_mul(i));
            let left = n - i;
            let k = if v > MAX_NS {
                self.saturated += left;
                left
            } else {
                let top = self.hist.highest_equivalent(v.max(1)).min(MAX_NS);
                match (top - v).checked_div(step) {
                    Some(q) => (q + 1).min(left),
                    None => left,
                }
            };
            // Cannot fail: the value is within the bounds the histogram was built with.
            let _ = self.hist.record_n(v.clamp(1, MAX_NS), k);
            i += k;
        }
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.hist
            .add(&other.hist)
            .expect("histograms share the same bounds");
        self.saturated += other.saturated;
    }

    pub fn reset(&mut self) {
        self.hist.reset();
        self.saturated = 0;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    pub fn min(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.hist.min()
        }
    }

    pub fn max(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.hist.highest_equivalent(self.hist.max())
        }
    }

    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.hist.mean()
        }
    }

    pub fn stdev(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.hist.stdev()
        }
    }

    /// Value at percentile `p` in [0, 100]: the smallest bucket value with at least
    /// ceil(p/100 · count) recorded values at or below it; 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count() == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count() as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for b in self.buckets() {
            seen += b.count;
            if seen >= rank {
                return b.value_ns;
            }
        }
        self.max()
    }

    /// Operations whose bucket value is above `threshold_ns`: the rule Python applies to the
    /// stored buckets, so per-interval counts add up to the run's exactly.
    pub fn count_above(&self, threshold_ns: u64) -> u64 {
        self.buckets()
            .iter()
            .filter(|b| b.value_ns > threshold_ns)
            .map(|b| b.count)
            .sum()
    }

    /// Operations per latency band bounded by `edges` (increasing): band 0 holds values up to
    /// `edges[0]`, band i those above `edges[i-1]` up to `edges[i]`, the last those above every
    /// edge — by the rule of [`Self::count_above`]. Empty without edges.
    pub fn counts_by_edges(&self, edges: &[u64]) -> Vec<u64> {
        if edges.is_empty() {
            return Vec::new();
        }
        let mut out = vec![0; edges.len() + 1];
        for b in self.buckets() {
            out[edges.partition_point(|&e| e < b.value_ns)] += b.count;
        }
        out
    }

    /// The latencies by the bands of `edges`, with their count and sum: what a metrics scrape
    /// reads.
    pub fn so_far(&self, edges: &[u64]) -> LatencySoFar {
        let count = self.count();
        LatencySoFar {
            bands: self.counts_by_edges(edges),
            count,
            sum_ns: self.mean() * count as f64,
        }
    }

    /// The non-empty buckets in increasing order of value.
    pub fn buckets(&self) -> Vec<Bucket> {
        self.hist
            .iter_recorded()
            .map(|v| Bucket {
                value_ns: self.hist.highest_equivalent(v.value_iterated_to()),
                count: v.count_at_value(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic long-tailed latencies (1 µs .. ~1 s), no external RNG needed.
    fn samples(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let exp = (x % 20) as u32;
                1_000 + (x >> 40) % (1u64 << exp) * 1_000 / 1_024
            })
            .collect()
    }

    fn brute_percentile(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1]
    }

    fn assert_close(got: u64, want: u64, what: &str) {
        let err = (got as f64 - want as f64).abs() / want as f64;
        assert!(err <= 0.001, "{what}: got {got}, exact {want}, error {err}");
    }

    #[test]
    fn percentiles_match_a_brute_force_sort() {
        let data = samples(7, 200_000);
        let mut h = LatencyHistogram::new();
        data.iter().for_each(|&v| h.record(v));
        let mut sorted = data.clone();
        sorted.sort_unstable();
        for p in [0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
            assert_close(
                h.percentile(p),
                brute_percentile(&sorted, p),
                &format!("p{p}"),
            );
        }
        assert_eq!(h.count(), data.len() as u64);
        assert_close(h.max(), *sorted.last().unwrap(), "max");
        assert_close(h.min(), sorted[0], "min");
    }

    #[test]
    fn a_series_recorded_at_once_equals_its_values_recorded_one_by_one() {
        for (low, step, n) in [
            (0, 1, 5_000),
            (1_000, 7, 100_000),
            (3, 5_000_000, 30_000),
            (MAX_NS - 10_000, 3_000, 20),
            (500, 0, 1_000),
        ] {
            let mut once = LatencyHistogram::new();
            once.record_steps(low, step, n);
            let mut each = LatencyHistogram::new();
            (0..n).for_each(|i| each.record(low + step * i));
            assert_eq!(
                once.buckets(),
                each.buckets(),
                "{low} + {step}·i, {n} values"
            );
            assert_eq!(once.saturated(), each.saturated());
            assert_eq!((once.min(), once.max()), (each.min(), each.max()));
        }
    }

    #[test]
    fn merged_histograms_equal_one_histogram_of_all_values() {
        let parts: Vec<Vec<u64>> = (1..=4).map(|s| samples(s * 11, 50_000)).collect();
        let mut merged = LatencyHistogram::new();
        let mut whole = LatencyHistogram::new();
        for part in &parts {
            let mut h = LatencyHistogram::new();
            part.iter().for_each(|&v| {
                h.record(v);
                whole.record(v);
            });
            merged.merge(&h);
        }
        assert_eq!(merged.buckets(), whole.buckets());
        let mut all: Vec<u64> = parts.concat();
        all.sort_unstable();
        for p in [50.0, 99.0, 99.9] {
            assert_close(merged.percentile(p), brute_percentile(&all, p), "merged");
        }
    }

    #[test]
    fn bucket_counts_sum_to_the_total() {
        let mut h = LatencyHistogram::new();
        samples(3, 10_000).iter().for_each(|&v| h.record(v));
        assert_eq!(h.buckets().iter().map(|b| b.count).sum::<u64>(), 10_000);
    }

    #[test]
    fn counts_by_edges_agree_with_count_above() {
        let mut h = LatencyHistogram::new();
        for v in [500, 1_000, 1_500, 3_000, 250_000_000, 250_000_000] {
            h.record(v);
        }
        let edges = [1_000, 2_000, 5_000, 100_000_000];
        let bands = h.counts_by_edges(&edges);
        assert_eq!(bands, vec![2, 1, 1, 0, 2]);
        // What lies above each edge is what count_above says.
        for (i, &e) in edges.iter().enumerate() {
            assert_eq!(bands[i + 1..].iter().sum::<u64>(), h.count_above(e));
        }
        assert!(h.counts_by_edges(&[]).is_empty());
    }

    #[test]
    fn count_above_counts_buckets_past_the_threshold() {
        let mut h = LatencyHistogram::new();
        for v in [1_000, 150_000_000, 150_000_000, 250_000_000] {
            h.record(v);
        }
        assert_eq!(h.count_above(100_000_000), 3);
        assert_eq!(h.count_above(200_000_000), 1);
        assert_eq!(h.count_above(MAX_NS), 0);
        let from_buckets: u64 = h
            .buckets()
            .iter()
            .filter(|b| b.value_ns > 100_000_000)
            .map(|b| b.count)
            .sum();
        assert_eq!(from_buckets, 3);
    }

    #[test]
    fn values_beyond_100s_saturate_and_are_counted() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        h.record(MAX_NS * 3);
        assert_eq!(h.count(), 2);
        assert_eq!(h.saturated(), 1);
        assert_close(h.max(), MAX_NS, "max");
    }

    #[test]
    fn an_empty_histogram_reports_zeros() {
        let h = LatencyHistogram::new();
        assert_eq!(
            (h.count(), h.min(), h.max(), h.percentile(99.0)),
            (0, 0, 0, 0)
        );
        assert!(h.buckets().is_empty());
    }
}
