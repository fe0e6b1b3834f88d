//! Data of a chosen compressibility: the FSL fork of FileBench's `datasource=entro,entropy=E`
//! fileset attribute. Bytes are drawn independently from a distribution over ⌈2^E⌉ byte values
//! whose Shannon entropy is E bits per byte (all values equally likely, but for one pair moved
//! apart to hit E exactly), so an order-0 compressor gets about 8/E : 1. E = 8 is
//! incompressible, E = 0 is a constant byte (the fork's `datasource=constant`).

use iowatt_metrics::Rng;

/// Entries of the lookup table a byte is drawn from (the fork's 16 KiB table).
const TABLE: usize = 1 << 14;

pub struct DataSource {
    table: Vec<u8>,
}

impl DataSource {
    pub fn new(entropy: f64, rng: &mut Rng) -> Self {
        let probs = distribution(entropy.clamp(0.0, 8.0));
        // The symbols are byte values in a random order, as the fork permutes them.
        let mut values: Vec<u8> = (0..=255).collect();
        for i in (1..values.len()).rev() {
            values.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut table = Vec::with_capacity(TABLE);
        let mut cumulative = 0.0;
        for (p, &value) in probs.iter().zip(&values) {
            cumulative += p;
            let upto = ((cumulative * TABLE as f64).round() as usize).min(TABLE);
            table.resize(upto.max(table.len()), value);
        }
        table.resize(TABLE, values[probs.len() - 1]);
        DataSource { table }
    }

    /// Fills `buf` with independent draws.
    pub fn fill(&self, buf: &mut [u8], rng: &mut Rng) {
        for chunk in buf.chunks_mut(4) {
            let mut bits = rng.next_u64();
            for b in chunk {
                *b = self.table[(bits as usize) & (TABLE - 1)];
                bits >>= 16;
            }
        }
    }
}

/// Probabilities of ⌈2^e⌉ symbols with entropy `e`: uniform, then probability moved from the
/// last symbol to the first until the entropy falls to `e` (by bisection).
fn distribution(e: f64) -> Vec<f64> {
    let n = (2f64.powf(e).ceil() as usize).clamp(1, 256);
    let uniform = 1.0 / n as f64;
    let with = |eps: f64| {
        let mut p = vec![uniform; n];
        if n > 1 {
            p[0] += eps;
            p[n - 1] -= eps;
        }
        p
    };
    let (mut lo, mut hi) = (0.0, uniform);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if shannon(&with(mid)) > e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    with((lo + hi) / 2.0)
}

fn shannon(p: &[f64]) -> f64 {
    -p.iter()
        .filter(|&&x| x > 0.0)
        .map(|x| x * x.log2())
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(e: f64) -> f64 {
        let mut rng = Rng::new(9);
        let src = DataSource::new(e, &mut rng);
        let mut buf = vec![0u8; 1 << 22];
        src.fill(&mut buf, &mut rng);
        let mut counts = [0u64; 256];
        buf.iter().for_each(|&b| counts[b as usize] += 1);
        let p: Vec<f64> = counts
            .iter()
            .map(|&c| c as f64 / buf.len() as f64)
            .collect();
        shannon(&p)
    }

    #[test]
    fn filled_bytes_have_the_entropy_asked_for() {
        for e in [0.5, 1.0, 2.9, 4.0, 6.3, 7.99] {
            let got = measured(e);
            assert!((got - e).abs() < 0.02, "asked {e} bits per byte, got {got}");
        }
        assert!(measured(8.0) > 7.99);
    }

    #[test]
    fn zero_entropy_is_one_byte_value() {
        let mut rng = Rng::new(1);
        let src = DataSource::new(0.0, &mut rng);
        let mut buf = vec![1u8; 4096];
        src.fill(&mut buf, &mut rng);
        assert!(buf.iter().all(|&b| b == buf[0]));
    }
}
