//! JETC, joint energy, thermal and cooling control: one controller for the cores, memory and
//! fans. Tasks move from the hottest core to the coolest (swapping when it is busy); pages
//! cluster onto the fewest DIMMs that hold the working set and stay below their limit at the
//! fans' speed, the rest self-refresh; the fans run at the lowest speed whose steady state
//! keeps every core and active DIMM at its target. Disks are ignored. With `predict`, the
//! migrations act on the temperatures predicted a horizon ahead (FSTM's proactive actuators).

use super::{fan_for, spread, Policy, Server};
use crate::server::model::Model;

pub struct Jetc {
    predict: bool,
    every: u64,
    ticks: u64,
}

impl Jetc {
    pub fn new(model: &Model, predict: bool) -> Self {
        Self {
            predict,
            every: (model.policy.migrate_every_ms / model.control.tick_ms)
                .round()
                .max(1.0) as u64,
            ticks: 0,
        }
    }

    /// Moves the job of the hottest core to the coolest core when they differ by more than
    /// the policy's threshold.
    pub fn balance(&self, s: &mut Server) {
        let cores = s.model.socket.cores;
        let temp = |c: usize| {
            if self.predict {
                s.plant.predicted(c)
            } else {
                s.plant.temps[c]
            }
        };
        let hot = (0..cores)
            .filter(|&c| s.core_job[c].is_some())
            .max_by(|&a, &b| temp(a).total_cmp(&temp(b)));
        let cold = (0..cores).min_by(|&a, &b| temp(a).total_cmp(&temp(b)));
        if let (Some(hot), Some(cold)) = (hot, cold) {
            if temp(hot) - temp(cold) > s.model.policy.migrate_delta_c {
                let j = s.core_job[hot].expect("filtered on a job");
                s.place(j, cold);
            }
        }
    }

    /// The fewest DIMMs that hold the working set and whose share of the traffic keeps them
    /// below their limit at `pwm`.
    pub fn memory(&self, s: &mut Server, pwm: u8) {
        let m = &s.model.memory;
        let working: f64 = s.jobs.iter().filter(|j| j.active()).map(|j| j.mem_gb).sum();
        let least = ((working / m.dimm_gb).ceil() as usize).clamp(1, m.dimms);
        let (_, air) = s.plant.air(pwm, s.avg_disks_w, s.avg_dimms_w);
        let r = s.plant.dimm_r(pwm);
        let margin = 2.0;
        let k = (least..=m.dimms)
            .find(|&k| {
                air + r * (m.active_idle_w + s.avg_traffic_w / k as f64) <= m.target_c - margin
            })
            .unwrap_or(m.dimms);
        s.set_dimms(k);
    }

    /// The fan speed for the cores' and DIMMs' targets (`cpu_c` for the cores).
    pub fn fans(&self, s: &mut Server, cpu_c: f64) -> u8 {
        let for_cpu = fan_for(s, cpu_c, f64::INFINITY);
        self.memory(s, for_cpu);
        fan_for(s, cpu_c, s.model.memory.target_c)
    }
}

impl Policy for Jetc {
    fn start(&mut self, s: &mut Server) {
        spread(s);
    }

    fn tick(&mut self, s: &mut Server) {
        self.ticks += 1;
        if self.ticks.is_multiple_of(self.every) {
            self.balance(s);
        }
    }

    fn interval(&mut self, s: &mut Server) {
        let pwm = self.fans(s, s.model.control.cpu_target_c);
        s.set_pwm(pwm);
    }
}
