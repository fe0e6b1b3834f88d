//! The fan–disk characterization curve: the disks' throughput, as a fraction of their best,
//! against fan PWM — and FSTM's zones, cut where the curve falls steeper than the threshold.

use serde::{Deserialize, Serialize};

use super::jobs::interpolate;
use super::ServerError;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Curve {
    /// Where it came from (a run id, a file, a built-in profile), for the record.
    pub source: String,
    /// [PWM %, fraction of the best throughput, lowest, highest] with PWM ascending; the
    /// fraction a run draws each fan interval is uniform between the lowest and the highest.
    pub points: Vec<[f64; 4]>,
}

impl Curve {
    /// A curve every point of which is within 0..1 (the spread too), with PWM ascending.
    pub fn check(&self) -> Result<(), ServerError> {
        if self.points.is_empty() {
            return Err(ServerError::Curve(format!(
                "`{}` has no points",
                self.source
            )));
        }
        let mut last = f64::NEG_INFINITY;
        for &[pwm, norm, lo, hi] in &self.points {
            let inside = |v: f64| (0.0..=1.0).contains(&v);
            if !(inside(norm) && inside(lo) && inside(hi) && lo <= norm && norm <= hi) {
                return Err(ServerError::Curve(format!(
                    "`{}` at {pwm} % PWM has throughput {norm} ({lo}..{hi}), not within 0..1",
                    self.source
                )));
            }
            if !(pwm.is_finite() && pwm > last) {
                return Err(ServerError::Curve(format!(
                    "`{}` has PWM values out of order at {pwm} %",
                    self.source
                )));
            }
            last = pwm;
        }
        Ok(())
    }

    fn column(&self, k: usize) -> Vec<[f64; 2]> {
        self.points.iter().map(|p| [p[0], p[k]]).collect()
    }

    /// The fraction of the disks' best throughput at `pwm` %, and its spread.
    pub fn at(&self, pwm: f64) -> (f64, f64, f64) {
        (
            interpolate(&self.column(1), pwm),
            interpolate(&self.column(2), pwm),
            interpolate(&self.column(3), pwm),
        )
    }

    /// FSTM's disk-driven zones: the PWM ranges [from, to] of segments whose slope, with both
    /// axes normalised to 0..1, is below `threshold` (adjacent segments merged).
    pub fn disk_zones(&self, threshold: f64) -> Vec<[f64; 2]> {
        let mut zones: Vec<[f64; 2]> = Vec::new();
        for w in self.points.windows(2) {
            let ([x0, y0, ..], [x1, y1, ..]) = (w[0], w[1]);
            let slope = (y1 - y0) / ((x1 - x0) / 100.0);
            if slope < threshold {
                match zones.last_mut() {
                    Some(z) if z[1] == x0 => z[1] = x1,
                    _ => zones.push([x0, x1]),
                }
            }
        }
        zones
    }

    /// The PWM values the curve was measured at (FSTM's "fan steps").
    pub fn steps(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().map(|p| p[0])
    }
}

/// Whether `pwm` lies in one of `zones` (a zone's lower end belongs to the temperature-driven
/// side: the disk loses nothing until the fans pass it).
pub fn in_zone(zones: &[[f64; 2]], pwm: f64) -> bool {
    zones.iter().any(|z| pwm > z[0] && pwm <= z[1])
}
