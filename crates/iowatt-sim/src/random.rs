//! Seeded random streams, one per component, and the draws the simulators need.

use iowatt_metrics::Rng;

/// A seed's independent streams: `stream(n)` is the same generator for the same seed and `n`
/// whatever else is drawn, on any machine.
#[derive(Debug, Clone, Copy)]
pub struct Streams {
    seed: u64,
}

impl Streams {
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    pub fn stream(&self, n: u64) -> Rng {
        Rng::stream(self.seed, n)
    }
}

/// An exponential draw with the given mean (in any unit). `1 − u` keeps `ln` away from 0, and
/// libm's `log` is the same code everywhere (the platform's libm is not).
pub fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -libm::log(1.0 - rng.unit()) * mean
}
