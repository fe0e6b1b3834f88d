//! DLB, today's default: the scheduler balances run-queue lengths (one job per core here, so
//! nothing moves), every DIMM stays active, and an independent PI controller sets the fans
//! from the hottest on-board temperature with gains fixed at design time.

use super::{Policy, Server};
use crate::server::model::Model;

pub struct Dlb {
    integral: f64,
    bias: f64,
    started: bool,
}

impl Dlb {
    pub fn new(_model: &Model) -> Self {
        Self {
            integral: 0.0,
            bias: 50.0,
            started: false,
        }
    }
}

/// The PI law: from the error (K above target) and its integral (K·s), the PWM %, and
/// whether the integral may grow (no wind-up while the output is pinned at a limit).
pub fn pi(kp: f64, ki: f64, bias: f64, error: f64, integral: f64, min: f64) -> (f64, bool) {
    let out = bias + kp * error + ki * integral;
    let clamped = out.clamp(min, 100.0);
    let winding = (out > 100.0 && error > 0.0) || (out < min && error < 0.0);
    (clamped, !winding)
}

impl Policy for Dlb {
    fn start(&mut self, s: &mut Server) {
        for j in 0..s.jobs.len() {
            s.place(j, j);
        }
    }

    fn tick(&mut self, _s: &mut Server) {}

    fn interval(&mut self, s: &mut Server) {
        let (cpu, dimm) = super::hottest(s, &s.plant.temps);
        let p = &s.model.policy;
        let error = (cpu - s.model.control.cpu_target_c + p.pi_guard_c)
            .max(dimm - s.model.memory.target_c + p.pi_guard_c);
        let dt = s.model.control.fan_interval_s;
        let min = f64::from(s.model.fans.min_pwm);
        if !self.started {
            // Bumpless: take over at the fan speed the server runs at.
            self.started = true;
            if p.pi_ki > 0.0 {
                self.integral = (f64::from(s.plant.pwm) - self.bias - p.pi_kp * error) / p.pi_ki;
            }
        }
        let (_, integrate) = pi(
            p.pi_kp,
            p.pi_ki,
            self.bias,
            error,
            self.integral + error * dt,
            min,
        );
        if integrate {
            self.integral += error * dt;
        }
        let (out, _) = pi(p.pi_kp, p.pi_ki, self.bias, error, self.integral, min);
        s.set_pwm(out.round() as u8);
    }
}
