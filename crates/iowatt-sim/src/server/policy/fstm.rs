//! FSTM, full system thermal management (the study's proposal): JETC's actuators made
//! proactive with the temperature predictor, and two disk-aware parts. The characterization
//! curve is cut into zones by its slope: where it falls steeper than the threshold the zone is
//! disk-driven, and there the controller relaxes the temperature guideline and, between two of
//! the curve's fan steps, takes the lower (gating still protects the hardware). An SSD cache,
//! sized by the fan band, takes the I/O the slower disks would lose. FSTM-NoSSD: no cache.

use super::jetc::Jetc;
use super::{hottest, Policy, Server};
use crate::server::curve::{in_zone, Curve};
use crate::server::model::Model;

pub struct Fstm {
    jetc: Jetc,
    zones: Vec<[f64; 2]>,
    steps: Vec<f64>,
    cache: bool,
}

impl Fstm {
    pub fn new(model: &Model, curve: &Curve, cache: bool) -> Self {
        Self {
            jetc: Jetc::new(model, true),
            zones: curve.disk_zones(model.policy.slope_threshold),
            steps: curve.steps().collect(),
            cache,
        }
    }

    /// The fan speed: JETC's; in a disk-driven zone, the relaxed guideline's, taken down to
    /// the curve's step below when the steady state stays clear of gating there.
    fn choose(&self, s: &mut Server) -> u8 {
        let c = &s.model.control;
        let pwm = self.jetc.fans(s, c.cpu_target_c);
        if !in_zone(&self.zones, f64::from(pwm)) {
            return pwm;
        }
        let relaxed = self.jetc.fans(s, s.model.policy.relaxed_target_c);
        let step = self
            .steps
            .iter()
            .rev()
            .find(|&&x| x <= f64::from(relaxed))
            .map_or(relaxed, |&x| x.round() as u8)
            .max(s.model.fans.min_pwm);
        let mut temps = Vec::new();
        s.settle(step, &mut temps);
        let (cpu, dimm) = hottest(s, &temps);
        if cpu < c.gating_c - 1.0 && dimm < c.gating_c - 1.0 {
            step
        } else {
            relaxed
        }
    }

    /// The cache's share of the table for `pwm`: the band it falls in.
    fn cache_share(&self, s: &Server, pwm: u8) -> f64 {
        if !self.cache {
            return 0.0;
        }
        s.model
            .policy
            .cache_bands
            .iter()
            .rev()
            .find(|b| f64::from(pwm) >= b[0])
            .map_or(0.0, |b| b[1])
    }
}

impl Policy for Fstm {
    fn start(&mut self, s: &mut Server) {
        self.jetc.start(s);
    }

    fn tick(&mut self, s: &mut Server) {
        self.jetc.tick(s);
    }

    fn interval(&mut self, s: &mut Server) {
        let pwm = self.choose(s);
        s.set_pwm(pwm);
        let share = self.cache_share(s, pwm);
        s.set_cache(share);
    }
}
