//! App-Oracle: JETC, plus a contingency plan while a service job announces heavy I/O (its
//! phase's iowait above the threshold, known ahead with oracle knowledge): the fans drop to
//! the highest speed at which the disks keep their best throughput (the curve's knee), and
//! batch jobs' cores step down one P-state per tick while the hottest core is above target,
//! up one per tick below it. Batch jobs pay; monitoring costs nothing (an oracle).

use super::jetc::Jetc;
use super::{Policy, Server};
use crate::server::curve::Curve;
use crate::server::jobs::Kind;
use crate::server::model::Model;
use crate::server::record::EventKind;

pub struct AppOracle {
    jetc: Jetc,
    knee: Option<u8>,
    on: bool,
    pstate_sum: f64,
    pstate_ticks: u64,
}

impl AppOracle {
    pub fn new(model: &Model, curve: &Curve) -> Self {
        let zones = curve.disk_zones(model.policy.slope_threshold);
        Self {
            jetc: Jetc::new(model, false),
            knee: zones.first().map(|z| z[0].round().clamp(0.0, 100.0) as u8),
            on: false,
            pstate_sum: 0.0,
            pstate_ticks: 0,
        }
    }

    fn announced(&self, s: &Server) -> bool {
        s.jobs.iter().any(|j| {
            j.kind == Kind::Service && j.active() && j.iowait() > s.model.policy.oracle_iowait
        })
    }
}

impl Policy for AppOracle {
    fn start(&mut self, s: &mut Server) {
        self.jetc.start(s);
    }

    fn tick(&mut self, s: &mut Server) {
        self.jetc.tick(s);
        let target = s.model.control.cpu_target_c;
        let slowest = s.model.socket.pstates.len() - 1;
        let hottest = s.plant.temps[..s.model.socket.cores]
            .iter()
            .copied()
            .fold(f64::MIN, f64::max);
        let mut sum = 0.0;
        let mut n = 0;
        for c in 0..s.model.socket.cores {
            let Some(j) = s.core_job[c] else { continue };
            if s.jobs[j].kind != Kind::Batch {
                continue;
            }
            let p = &mut s.pstate[c];
            if self.on && hottest > target {
                *p = (*p + 1).min(slowest);
            } else if *p > 0 && (!self.on || hottest < target - 1.0) {
                *p -= 1;
            }
            sum += *p as f64;
            n += 1;
        }
        if n > 0 {
            self.pstate_sum += sum / n as f64;
            self.pstate_ticks += 1;
        }
    }

    fn interval(&mut self, s: &mut Server) {
        let on = self.knee.is_some() && self.announced(s);
        if on != self.on {
            self.on = on;
            s.events
                .push(s.now_ns, EventKind::Oracle, 0, f64::from(u8::from(on)));
        }
        if self.pstate_ticks > 0 {
            let mean = self.pstate_sum / self.pstate_ticks as f64;
            if mean > 0.0 {
                s.events.push(s.now_ns, EventKind::Dvfs, 0, mean);
            }
            (self.pstate_sum, self.pstate_ticks) = (0.0, 0);
        }
        match (self.on, self.knee) {
            (true, Some(knee)) => {
                let pwm = self.jetc.fans(s, s.model.control.cpu_target_c);
                s.set_pwm(pwm.min(knee));
            }
            _ => self.jetc.interval(s),
        }
    }
}
