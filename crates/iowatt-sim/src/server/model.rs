//! The modelled server as data: every parameter docs/sim-server.md lists, with its source.
//! Python reads the shipped `server.toml` (and a user's overrides) and hands it over as JSON;
//! [`Model::check`] refuses what would make the physics meaningless.

use serde::{Deserialize, Serialize};

use super::ServerError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Chassis inlet air, °C.
    pub inlet_c: f64,
    pub socket: Socket,
    pub memory: Memory,
    pub fans: Fans,
    pub air: Air,
    pub storage: Storage,
    pub control: Control,
    pub policy: PolicyParams,
}

/// One die block (a core, the L3, the crossbar): its power and its RC to the spreader.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// W when fully busy at the top P-state.
    pub dynamic_w: f64,
    /// W when idle (clock-gated) at the top P-state's voltage.
    pub idle_w: f64,
    /// W of leakage at `socket.leakage_ref_c` and the top voltage.
    pub leakage_w: f64,
    /// Heat capacity, J/K.
    pub c_j_k: f64,
    /// Vertical resistance to the heat spreader (die + TIM), K/W.
    pub r_spreader_k_w: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Socket {
    pub cores: usize,
    /// Cores per row of the floorplan (lateral neighbours are left/right and up/down).
    pub columns: usize,
    /// [GHz, V], fastest first.
    pub pstates: Vec<[f64; 2]>,
    pub core: Block,
    pub l3: Block,
    pub crossbar: Block,
    /// Leakage grows as exp(β (T − T_ref)).
    pub leakage_beta: f64,
    pub leakage_ref_c: f64,
    pub r_core_lateral_k_w: f64,
    pub r_core_l3_k_w: f64,
    pub r_l3_crossbar_k_w: f64,
    pub spreader_c_j_k: f64,
    pub r_spreader_sink_k_w: f64,
    pub sink_c_j_k: f64,
    /// Sink to air at full airflow, K/W; scaled by airflow^−`fans.convection_exponent`.
    pub r_convection_k_w: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub dimms: usize,
    pub dimm_gb: f64,
    /// W of an active DIMM with no traffic.
    pub active_idle_w: f64,
    /// W of a DIMM in self-refresh (deactivated).
    pub self_refresh_w: f64,
    pub c_j_k: f64,
    /// DIMM to its local air at full airflow, K/W (scaled like the sink's).
    pub r_air_k_w: f64,
    /// The fan controllers' limit for DIMMs, °C.
    pub target_c: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fans {
    pub modules: usize,
    /// All modules at 100 % PWM: W and cfm.
    pub max_w: f64,
    pub max_cfm: f64,
    /// Fan power ∝ PWM^power_exponent (affinity laws: 3).
    pub power_exponent: f64,
    /// Convective resistance ∝ airflow^−n.
    pub convection_exponent: f64,
    /// The lowest PWM % the fans run at.
    pub min_pwm: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Air {
    /// Air heats by `k · P / Q` °C carrying P W at Q cfm (ρ c_p of air: 1.76 °C·cfm/W).
    pub k_c_cfm_w: f64,
    /// Share of the DIMMs' heat in the air that reaches the processor's sink.
    pub dimm_share_to_cpu: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drive {
    /// Unstimulated throughput of each pattern, MB/s (10^6 bytes).
    pub seq_mb_s: f64,
    pub random_mb_s: f64,
    pub active_w: f64,
    pub idle_w: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// SATA disks the database is striped over (each follows the fan curve).
    pub disks: usize,
    pub disk: Drive,
    pub ssd: Drive,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// The OS scheduling tick and the integrator's step, ms.
    pub tick_ms: f64,
    pub fan_interval_s: f64,
    /// The fan controllers' target for the hottest core, °C.
    pub cpu_target_c: f64,
    /// Emergency clock gating engages at this temperature, °C (cores and DIMMs).
    pub gating_c: f64,
    /// Gating grows (at or above `gating_c`) and shrinks (below) by this fraction per tick.
    pub gating_step: f64,
    pub predictor_horizon_ms: f64,
    pub predictor_cutoff_hz: f64,
    /// Each service phase's size varies by a uniform factor of this coefficient of variation,
    /// drawn per seed (the same for every policy).
    pub jitter_cv: f64,
    /// A run not done after this much simulated time stops, marked incomplete.
    pub max_sim_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyParams {
    /// DLB's PI fan controller: PWM % per K, and per K·s.
    pub pi_kp: f64,
    pub pi_ki: f64,
    /// DLB's PI aims this far below `control.cpu_target_c`: a reactive loop needs headroom for
    /// its overshoot on a load step, which a controller that predicts does not.
    pub pi_guard_c: f64,
    /// JETC: thermal task migration.
    pub migrate_every_ms: f64,
    pub migrate_delta_c: f64,
    pub migration_cost_us: f64,
    /// App-Oracle: a service phase with iowait above this announces heavy I/O.
    pub oracle_iowait: f64,
    /// FSTM: a curve segment steeper than this (normalised axes) is disk-driven.
    pub slope_threshold: f64,
    /// FSTM: the temperature guideline in a disk-driven zone, °C.
    pub relaxed_target_c: f64,
    /// FSTM: [PWM % from, cache size as a fraction of the table], ascending.
    pub cache_bands: Vec<[f64; 2]>,
}

fn positive(path: &str, v: f64) -> Result<(), ServerError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ServerError::Model(format!(
            "`{path}` = {v} must be above 0"
        )))
    }
}

fn non_negative(path: &str, v: f64) -> Result<(), ServerError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ServerError::Model(format!(
            "`{path}` = {v} must be 0 or more"
        )))
    }
}

fn fraction(path: &str, v: f64) -> Result<(), ServerError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ServerError::Model(format!(
            "`{path}` = {v} must be within 0..1"
        )))
    }
}

impl Block {
    fn check(&self, name: &str) -> Result<(), ServerError> {
        non_negative(&format!("socket.{name}.dynamic_w"), self.dynamic_w)?;
        non_negative(&format!("socket.{name}.idle_w"), self.idle_w)?;
        non_negative(&format!("socket.{name}.leakage_w"), self.leakage_w)?;
        positive(&format!("socket.{name}.c_j_k"), self.c_j_k)?;
        positive(
            &format!("socket.{name}.r_spreader_k_w"),
            self.r_spreader_k_w,
        )
    }
}

impl Drive {
    fn check(&self, name: &str) -> Result<(), ServerError> {
        positive(&format!("storage.{name}.seq_mb_s"), self.seq_mb_s)?;
        positive(&format!("storage.{name}.random_mb_s"), self.random_mb_s)?;
        non_negative(&format!("storage.{name}.active_w"), self.active_w)?;
        non_negative(&format!("storage.{name}.idle_w"), self.idle_w)
    }
}

impl Model {
    /// Refuses values that make the model meaningless, naming the parameter.
    pub fn check(&self) -> Result<(), ServerError> {
        let s = &self.socket;
        if s.cores == 0 || s.columns == 0 || s.cores > 256 {
            return Err(ServerError::Model(format!(
                "`socket.cores` = {} and `socket.columns` = {} must be 1..256 and above 0",
                s.cores, s.columns
            )));
        }
        if s.pstates.is_empty() {
            return Err(ServerError::Model("`socket.pstates` is empty".into()));
        }
        for (i, [ghz, v]) in s.pstates.iter().enumerate() {
            positive(&format!("socket.pstates[{i}] GHz"), *ghz)?;
            positive(&format!("socket.pstates[{i}] V"), *v)?;
            if i > 0 && *ghz >= s.pstates[i - 1][0] {
                return Err(ServerError::Model(
                    "`socket.pstates` must be fastest first, each slower than the one before"
                        .into(),
                ));
            }
        }
        s.core.check("core")?;
        s.l3.check("l3")?;
        s.crossbar.check("crossbar")?;
        non_negative("socket.leakage_beta", s.leakage_beta)?;
        for (path, v) in [
            ("socket.r_core_lateral_k_w", s.r_core_lateral_k_w),
            ("socket.r_core_l3_k_w", s.r_core_l3_k_w),
            ("socket.r_l3_crossbar_k_w", s.r_l3_crossbar_k_w),
            ("socket.spreader_c_j_k", s.spreader_c_j_k),
            ("socket.r_spreader_sink_k_w", s.r_spreader_sink_k_w),
            ("socket.sink_c_j_k", s.sink_c_j_k),
            ("socket.r_convection_k_w", s.r_convection_k_w),
        ] {
            positive(path, v)?;
        }
        let m = &self.memory;
        if m.dimms == 0 || m.dimms > 64 {
            return Err(ServerError::Model(format!(
                "`memory.dimms` = {} must be 1..64",
                m.dimms
            )));
        }
        positive("memory.dimm_gb", m.dimm_gb)?;
        non_negative("memory.active_idle_w", m.active_idle_w)?;
        non_negative("memory.self_refresh_w", m.self_refresh_w)?;
        positive("memory.c_j_k", m.c_j_k)?;
        positive("memory.r_air_k_w", m.r_air_k_w)?;
        let f = &self.fans;
        positive("fans.max_w", f.max_w)?;
        positive("fans.max_cfm", f.max_cfm)?;
        positive("fans.power_exponent", f.power_exponent)?;
        non_negative("fans.convection_exponent", f.convection_exponent)?;
        if f.min_pwm == 0 || f.min_pwm > 100 {
            return Err(ServerError::Model(format!(
                "`fans.min_pwm` = {} must be 1..100 (no airflow has no convection)",
                f.min_pwm
            )));
        }
        non_negative("air.k_c_cfm_w", self.air.k_c_cfm_w)?;
        fraction("air.dimm_share_to_cpu", self.air.dimm_share_to_cpu)?;
        if self.storage.disks == 0 {
            return Err(ServerError::Model(
                "`storage.disks` must be at least 1".into(),
            ));
        }
        self.storage.disk.check("disk")?;
        self.storage.ssd.check("ssd")?;
        let c = &self.control;
        positive("control.tick_ms", c.tick_ms)?;
        positive("control.fan_interval_s", c.fan_interval_s)?;
        if c.fan_interval_s * 1000.0 < c.tick_ms {
            return Err(ServerError::Model(format!(
                "`control.fan_interval_s` = {} s must be at least one tick (`control.tick_ms` = {})",
                c.fan_interval_s, c.tick_ms
            )));
        }
        positive("control.gating_step", c.gating_step)?;
        positive("control.predictor_horizon_ms", c.predictor_horizon_ms)?;
        positive("control.predictor_cutoff_hz", c.predictor_cutoff_hz)?;
        fraction("control.jitter_cv", c.jitter_cv)?;
        positive("control.max_sim_s", c.max_sim_s)?;
        let p = &self.policy;
        non_negative("policy.pi_kp", p.pi_kp)?;
        non_negative("policy.pi_ki", p.pi_ki)?;
        non_negative("policy.pi_guard_c", p.pi_guard_c)?;
        positive("policy.migrate_every_ms", p.migrate_every_ms)?;
        non_negative("policy.migrate_delta_c", p.migrate_delta_c)?;
        non_negative("policy.migration_cost_us", p.migration_cost_us)?;
        fraction("policy.oracle_iowait", p.oracle_iowait)?;
        if p.cache_bands.is_empty() {
            return Err(ServerError::Model("`policy.cache_bands` is empty".into()));
        }
        for (i, [pwm, share]) in p.cache_bands.iter().enumerate() {
            fraction(&format!("policy.cache_bands[{i}] size"), *share)?;
            if i > 0 && *pwm <= p.cache_bands[i - 1][0] {
                return Err(ServerError::Model(
                    "`policy.cache_bands` must ascend in PWM".into(),
                ));
            }
        }
        Ok(())
    }

    /// Node count of the thermal network: cores, L3, crossbar, spreader, sink, DIMMs.
    pub fn nodes(&self) -> usize {
        self.socket.cores + 4 + self.memory.dimms
    }
}
