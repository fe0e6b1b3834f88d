//! Sampling the sizes FileBench draws from its random variables: fileset file sizes and
//! per-operation I/O sizes.

use crate::spec::SizeDist;
use iowatt_metrics::Rng;

impl SizeDist {
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            SizeDist::Fixed(n) => *n,
            // FileBench's cvar-gamma: shape `gamma`, scale mean/gamma, so the mean is `mean`.
            SizeDist::Gamma { mean, shape, min } => {
                min + rng.gamma(*shape, mean / shape).round() as u64
            }
            SizeDist::Uniform { min, max } => min + rng.below(max.saturating_sub(*min) + 1),
            SizeDist::Tabular(rows) => {
                let total: f64 = rows.iter().map(|r| r.0).sum();
                let mut pick = rng.unit() * total;
                for &(weight, min, max) in rows {
                    if pick < weight {
                        return min + rng.below(max.saturating_sub(min) + 1);
                    }
                    pick -= weight;
                }
                rows.last().map_or(0, |r| r.2)
            }
            SizeDist::Bounded {
                of,
                round,
                min,
                max,
            } => {
                let v = of.sample(rng);
                let v = if *round > 0 {
                    v.saturating_add(round / 2) / round * round
                } else {
                    v
                };
                v.clamp(*min, *max)
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::Gamma { mean, min, .. } => *min as f64 + mean,
            SizeDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            SizeDist::Tabular(rows) => {
                let total: f64 = rows.iter().map(|r| r.0).sum();
                rows.iter()
                    .map(|&(w, min, max)| w / total * (min as f64 + max as f64) / 2.0)
                    .sum()
            }
            // Near enough for sizing a layout: rounding moves each draw by less than `round`.
            SizeDist::Bounded { of, min, max, .. } => of.mean().clamp(*min as f64, *max as f64),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok = match self {
            SizeDist::Fixed(_) => true,
            SizeDist::Gamma { mean, shape, .. } => *mean >= 0.0 && *shape > 0.0,
            SizeDist::Uniform { min, max } => min <= max,
            SizeDist::Tabular(rows) => {
                !rows.is_empty()
                    && rows.iter().all(|r| r.0 >= 0.0 && r.1 <= r.2)
                    && rows.iter().any(|r| r.0 > 0.0)
            }
            SizeDist::Bounded { of, min, max, .. } => min <= max && of.validate().is_ok(),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("size distribution {self:?} is not valid"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(d: &SizeDist, n: usize) -> f64 {
        let mut rng = Rng::new(7);
        (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn bounded_draws_are_rounded_to_the_nearest_multiple_then_clamped() {
        let d = SizeDist::Bounded {
            of: Box::new(SizeDist::Uniform {
                min: 0,
                max: 10_000,
            }),
            round: 1024,
            min: 2048,
            max: 8192,
        };
        let mut rng = Rng::new(3);
        let draws: Vec<u64> = (0..10_000).map(|_| d.sample(&mut rng)).collect();
        assert!(draws
            .iter()
            .all(|v| v % 1024 == 0 && (2048..=8192).contains(v)));
        // Nearest, not down: 1,500 rounds to 1,024 (then clamped to 2,048), 1,600 to 2,048;
        // 9,000 rounds to 9,216, above max.
        assert!(draws.contains(&2048) && draws.contains(&8192));
        let mut one = |v| {
            SizeDist::Bounded {
                of: Box::new(SizeDist::Fixed(v)),
                round: 1000,
                min: 0,
                max: u64::MAX,
            }
            .sample(&mut rng)
        };
        assert_eq!((one(1499), one(1500), one(2501)), (1000, 2000, 3000));
    }

    #[test]
    fn samples_average_to_the_distribution_mean() {
        for d in [
            SizeDist::Gamma {
                mean: 131072.0,
                shape: 1.5,
                min: 0,
            },
            SizeDist::Gamma {
                mean: 16384.0,
                shape: 0.5,
                min: 1024,
            },
            SizeDist::Uniform {
                min: 1024,
                max: 9216,
            },
            SizeDist::Tabular(vec![(90.0, 1024, 2048), (10.0, 1 << 20, 2 << 20)]),
        ] {
            let m = mean_of(&d, 200_000);
            assert!(
                (m / d.mean() - 1.0).abs() < 0.02,
                "{d:?}: {m} vs {}",
                d.mean()
            );
        }
    }

    #[test]
    fn gamma_has_the_variance_of_its_shape() {
        // Var = shape·scale² = mean²/shape: FileBench's 1.5 gives a coefficient of variation 0.816.
        let d = SizeDist::Gamma {
            mean: 1000.0,
            shape: 1.5,
            min: 0,
        };
        let mut rng = Rng::new(3);
        let xs: Vec<f64> = (0..200_000).map(|_| d.sample(&mut rng) as f64).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((var.sqrt() / m - (1.0f64 / 1.5).sqrt()).abs() < 0.02);
    }

    #[test]
    fn uniform_and_tabular_stay_in_bounds() {
        let mut rng = Rng::new(1);
        let t = SizeDist::Tabular(vec![(1.0, 10, 20), (1.0, 100, 100)]);
        for _ in 0..10_000 {
            let x = t.sample(&mut rng);
            assert!((10..=20).contains(&x) || x == 100);
            let u = SizeDist::Uniform { min: 5, max: 6 }.sample(&mut rng);
            assert!((5..=6).contains(&u));
        }
    }
}
