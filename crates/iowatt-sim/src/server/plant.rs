//! The server's physics: the thermal network (one exact step per fan PWM %, precomputed), the
//! air's preheating, leakage rising with temperature, emergency clock gating, the temperature
//! predictor, fan power and airflow.

use super::model::Model;
use super::ServerError;
use crate::thermal::{Network, Steady, Step, ThermalError};

/// The network's node order.
#[derive(Debug, Clone, Copy)]
pub struct Nodes {
    pub cores: usize,
    pub l3: usize,
    pub crossbar: usize,
    pub spreader: usize,
    pub sink: usize,
    pub dimm0: usize,
    pub dimms: usize,
}

impl Nodes {
    fn of(model: &Model) -> Self {
        let cores = model.socket.cores;
        Self {
            cores,
            l3: cores,
            crossbar: cores + 1,
            spreader: cores + 2,
            sink: cores + 3,
            dimm0: cores + 4,
            dimms: model.memory.dimms,
        }
    }

    /// Die blocks: cores, L3 and crossbar, the nodes that leak.
    pub fn die(&self) -> usize {
        self.cores + 2
    }

    pub fn len(&self) -> usize {
        self.dimm0 + self.dimms
    }
}

/// What one fan PWM % means: the network's step and steady state at its airflow, the air
/// conductances that carry preheated air in, and the fans' draw.
struct Level {
    step: Step,
    steady: Steady,
    g_sink: f64,
    g_dimm: f64,
    cfm: f64,
    fan_w: f64,
}

fn thermal(e: ThermalError) -> ServerError {
    ServerError::Model(e.to_string())
}

fn network(model: &Model, nodes: Nodes, airflow: f64) -> Result<Network, ServerError> {
    let s = &model.socket;
    let scale = airflow.powf(-model.fans.convection_exponent);
    let mut net = Network::new();
    for i in 0..s.cores {
        net.node(&format!("core{i}"), s.core.c_j_k)
            .map_err(thermal)?;
    }
    net.node("l3", s.l3.c_j_k).map_err(thermal)?;
    net.node("crossbar", s.crossbar.c_j_k).map_err(thermal)?;
    net.node("spreader", s.spreader_c_j_k).map_err(thermal)?;
    net.node("sink", s.sink_c_j_k).map_err(thermal)?;
    for j in 0..model.memory.dimms {
        net.node(&format!("dimm{j}"), model.memory.c_j_k)
            .map_err(thermal)?;
    }
    let link = |net: &mut Network, a, b, r| net.connect(a, b, r).map_err(thermal);
    for i in 0..s.cores {
        let col = i % s.columns;
        if col + 1 < s.columns && i + 1 < s.cores {
            link(&mut net, i, i + 1, s.r_core_lateral_k_w)?;
        }
        if i + s.columns < s.cores {
            link(&mut net, i, i + s.columns, s.r_core_lateral_k_w)?;
        }
        link(&mut net, i, nodes.l3, s.r_core_l3_k_w)?;
        link(&mut net, i, nodes.spreader, s.core.r_spreader_k_w)?;
    }
    link(&mut net, nodes.l3, nodes.crossbar, s.r_l3_crossbar_k_w)?;
    link(&mut net, nodes.l3, nodes.spreader, s.l3.r_spreader_k_w)?;
    link(
        &mut net,
        nodes.crossbar,
        nodes.spreader,
        s.crossbar.r_spreader_k_w,
    )?;
    link(&mut net, nodes.spreader, nodes.sink, s.r_spreader_sink_k_w)?;
    net.to_ambient(nodes.sink, s.r_convection_k_w * scale)
        .map_err(thermal)?;
    for j in 0..nodes.dimms {
        net.to_ambient(nodes.dimm0 + j, model.memory.r_air_k_w * scale)
            .map_err(thermal)?;
    }
    Ok(net)
}

pub struct Plant {
    pub nodes: Nodes,
    levels: Vec<Level>,
    /// °C per node, and the last tick's.
    pub temps: Vec<f64>,
    next: Vec<f64>,
    input: Vec<f64>,
    /// The predictor's low-passed dT/dt per node, K/s.
    slope: Vec<f64>,
    alpha: f64,
    horizon_s: f64,
    /// Gating share per node (only cores and DIMMs gate).
    pub gating: Vec<f64>,
    pub pwm: u8,
    inlet_c: f64,
    tick_s: f64,
    air_k: f64,
    dimm_share: f64,
    gating_c: f64,
    gating_step: f64,
}

impl Plant {
    pub fn new(model: &Model) -> Result<Self, ServerError> {
        let nodes = Nodes::of(model);
        let tick_s = model.control.tick_ms / 1e3;
        let min = f64::from(model.fans.min_pwm);
        let mut levels = Vec::with_capacity(101);
        for pwm in 0..=100u8 {
            let s = f64::from(pwm).max(min) / 100.0;
            let net = network(model, nodes, s)?;
            let scale = s.powf(-model.fans.convection_exponent);
            levels.push(Level {
                step: net.discretise(tick_s).map_err(thermal)?,
                steady: net.steady().map_err(thermal)?,
                g_sink: 1.0 / (model.socket.r_convection_k_w * scale),
                g_dimm: 1.0 / (model.memory.r_air_k_w * scale),
                cfm: model.fans.max_cfm * s,
                fan_w: model.fans.max_w * s.powf(model.fans.power_exponent),
            });
        }
        let n = nodes.len();
        let tau = 1.0 / (2.0 * std::f64::consts::PI * model.control.predictor_cutoff_hz);
        Ok(Self {
            nodes,
            levels,
            temps: vec![model.inlet_c; n],
            next: vec![0.0; n],
            input: vec![0.0; n],
            slope: vec![0.0; n],
            alpha: tick_s / (tick_s + tau),
            horizon_s: model.control.predictor_horizon_ms / 1e3,
            gating: vec![0.0; n],
            pwm: 100,
            inlet_c: model.inlet_c,
            tick_s,
            air_k: model.air.k_c_cfm_w,
            dimm_share: model.air.dimm_share_to_cpu,
            gating_c: model.control.gating_c,
            gating_step: model.control.gating_step,
        })
    }

    /// The fans' draw at `pwm` %.
    pub fn fan_w(&self, pwm: u8) -> f64 {
        self.levels[usize::from(pwm.min(100))].fan_w
    }

    /// A DIMM's resistance to its air at `pwm` %, K/W.
    pub fn dimm_r(&self, pwm: u8) -> f64 {
        1.0 / self.levels[usize::from(pwm.min(100))].g_dimm
    }

    /// (air at the sink, air at the DIMMs), °C: the inlet plus the disks' heat, and the sink's
    /// share of the DIMMs' heat, carried by the airflow at `pwm`.
    pub fn air(&self, pwm: u8, disks_w: f64, dimms_w: f64) -> (f64, f64) {
        let per_w = self.air_k / self.levels[usize::from(pwm.min(100))].cfm;
        let dimm = self.inlet_c + per_w * disks_w;
        (dimm + per_w * self.dimm_share * dimms_w, dimm)
    }

    /// `input` = `power` plus what the preheated air brings in, relative to the inlet.
    fn with_air(&mut self, pwm: u8, power: &[f64], air: (f64, f64)) {
        let level = &self.levels[usize::from(pwm.min(100))];
        self.input.copy_from_slice(power);
        let nd = self.nodes;
        self.input[nd.sink] += level.g_sink * (air.0 - self.inlet_c);
        for j in 0..nd.dimms {
            self.input[nd.dimm0 + j] += level.g_dimm * (air.1 - self.inlet_c);
        }
    }

    /// One tick under `power` (W per node, leakage included): the temperatures, then the
    /// gating and the predictor from them.
    pub fn advance(&mut self, power: &[f64], air: (f64, f64)) {
        let pwm = self.pwm;
        self.with_air(pwm, power, air);
        let level = &self.levels[usize::from(pwm)];
        level
            .step
            .advance(&self.temps, &self.input, self.inlet_c, &mut self.next);
        let nd = self.nodes;
        for i in 0..nd.len() {
            let rate = (self.next[i] - self.temps[i]) / self.tick_s;
            self.slope[i] += self.alpha * (rate - self.slope[i]);
        }
        std::mem::swap(&mut self.temps, &mut self.next);
        let gated = (0..nd.cores).chain(nd.dimm0..nd.len());
        for i in gated {
            let g = &mut self.gating[i];
            *g = if self.temps[i] >= self.gating_c {
                (*g + self.gating_step).min(1.0)
            } else {
                (*g - self.gating_step).max(0.0)
            };
        }
    }

    /// Node `i`'s temperature `horizon` ahead, from its low-passed rate of change.
    pub fn predicted(&self, i: usize) -> f64 {
        self.temps[i] + self.horizon_s * self.slope[i]
    }

    /// The temperatures the network settles at with the fans at `pwm` under `power` (W per
    /// node, leakage excluded), with leakage (`leak(i, T)`) and preheated air (`air`)
    /// iterated to a fixed point a few times.
    pub fn settle(
        &self,
        pwm: u8,
        power: &[f64],
        air: (f64, f64),
        leak: impl Fn(usize, f64) -> f64,
        out: &mut Vec<f64>,
    ) {
        let level = &self.levels[usize::from(pwm.min(100))];
        let nd = self.nodes;
        let mut input = power.to_vec();
        out.clear();
        out.extend_from_slice(&self.temps);
        for _ in 0..3 {
            for i in 0..nd.len() {
                input[i] = power[i] + if i < nd.die() { leak(i, out[i]) } else { 0.0 };
            }
            input[nd.sink] += level.g_sink * (air.0 - self.inlet_c);
            for j in 0..nd.dimms {
                input[nd.dimm0 + j] += level.g_dimm * (air.1 - self.inlet_c);
            }
            level.steady.solve(&input, self.inlet_c, out);
        }
    }
}
