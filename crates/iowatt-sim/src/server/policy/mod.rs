//! The thermal and cooling policies, each a module behind [`Policy`]: what it does at the
//! start, every OS tick and every fan interval. Their shared actuators live here: the
//! steady-state fan choice, the memory actuator and thermal task migration.

mod dlb;
mod fstm;
mod jetc;
mod oracle;

use serde::{Deserialize, Serialize};

use super::curve::Curve;
use super::model::Model;
use super::sim::Server;

pub trait Policy {
    /// Places the jobs before the first tick (the first `interval` follows, once the server
    /// is warm).
    fn start(&mut self, s: &mut Server);
    /// After every tick's temperatures.
    fn tick(&mut self, s: &mut Server);
    /// Every fan control interval.
    fn interval(&mut self, s: &mut Server);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicyName {
    #[serde(rename = "DLB")]
    Dlb,
    #[serde(rename = "JETC")]
    Jetc,
    #[serde(rename = "App-Oracle")]
    AppOracle,
    #[serde(rename = "FSTM")]
    Fstm,
    #[serde(rename = "FSTM-NoSSD")]
    FstmNoSsd,
}

impl PolicyName {
    pub const ALL: [PolicyName; 5] = [
        PolicyName::Dlb,
        PolicyName::Jetc,
        PolicyName::AppOracle,
        PolicyName::Fstm,
        PolicyName::FstmNoSsd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::Dlb => "DLB",
            PolicyName::Jetc => "JETC",
            PolicyName::AppOracle => "App-Oracle",
            PolicyName::Fstm => "FSTM",
            PolicyName::FstmNoSsd => "FSTM-NoSSD",
        }
    }
}

pub fn build(name: PolicyName, model: &Model, curve: &Curve) -> Box<dyn Policy> {
    match name {
        PolicyName::Dlb => Box::new(dlb::Dlb::new(model)),
        PolicyName::Jetc => Box::new(jetc::Jetc::new(model, false)),
        PolicyName::AppOracle => Box::new(oracle::AppOracle::new(model, curve)),
        PolicyName::Fstm => Box::new(fstm::Fstm::new(model, curve, true)),
        PolicyName::FstmNoSsd => Box::new(fstm::Fstm::new(model, curve, false)),
    }
}

/// The lowest PWM % at which the server settles with its hottest core at or below `cpu_c`
/// and its hottest active DIMM at or below `dimm_c` (100 when none does): the temperatures
/// fall as the fans speed up, so a bisection over the whole-percent levels finds it.
pub fn fan_for(s: &Server, cpu_c: f64, dimm_c: f64) -> u8 {
    let mut temps = Vec::new();
    let fits = |pwm: u8, temps: &mut Vec<f64>| {
        s.settle(pwm, temps);
        let (cpu, dimm) = hottest(s, temps);
        cpu <= cpu_c && dimm <= dimm_c
    };
    let (mut lo, mut hi) = (s.model.fans.min_pwm, 100u8);
    if fits(lo, &mut temps) {
        return lo;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid, &mut temps) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// (hottest core, hottest active DIMM) in `temps`.
pub fn hottest(s: &Server, temps: &[f64]) -> (f64, f64) {
    let nd = s.plant.nodes;
    let cpu = temps[..nd.cores].iter().copied().fold(f64::MIN, f64::max);
    let dimm = (0..nd.dimms)
        .filter(|&d| s.dimm_active[d])
        .map(|d| temps[nd.dimm0 + d])
        .fold(f64::MIN, f64::max);
    (cpu, dimm)
}

/// Spreads the jobs over the cores in a checkerboard of the floorplan, so neighbours of a
/// busy core idle first.
pub fn spread(s: &mut Server) {
    let cols = s.model.socket.columns;
    let mut order: Vec<usize> = (0..s.model.socket.cores).collect();
    order.sort_by_key(|&c| ((c / cols + c % cols) % 2, c));
    for j in 0..s.jobs.len() {
        let core = order[j % order.len()];
        s.place(j, core);
    }
}
