//! One simulated run: a workload set on the server under one policy and one seed, ticked at
//! the OS tick until its service jobs are done.
//!
//! Each tick: the jobs progress (a phase's CPU and I/O proceed in proportion, so its length
//! follows the current clock, gating and disk throughput), their power and the disks' and
//! DIMMs' follow, leakage is added from the last temperatures, the network steps, and gating
//! and the predictor update. Every fan interval the policy decides the fans (and memory and
//! cache) and a new disk throughput is drawn from the curve's spread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iowatt_metrics::Rng;

use super::curve::Curve;
use super::jobs::{interpolate, Job, Kind, Pattern, WorkloadSet};
use super::model::{Drive, Model};
use super::plant::Plant;
use super::policy::{self, PolicyName};
use super::record::{EventKind, Events, Sample, Series};
use super::RunOutput;
use crate::Streams;

/// Most events a run keeps (the rest are counted).
pub const EVENT_CAP: usize = 20_000;

#[derive(Debug, Clone)]
struct PhaseWork {
    cpu_s: f64,
    io_mb: f64,
    pattern: Pattern,
    mem_w: f64,
    cache_hit: Vec<[f64; 2]>,
    cache_cpu: f64,
    /// iowait at the top P-state with ideal disks and no cache: what an application announces.
    iowait: f64,
}

#[derive(Debug, Clone)]
pub struct Running {
    pub kind: Kind,
    pub core: usize,
    pub mem_gb: f64,
    table_gb: f64,
    activity: f64,
    sensitivity: f64,
    mem_w: f64,
    phases: Vec<PhaseWork>,
    pub phase: usize,
    left: f64,
    pub done_ns: Option<u64>,
    /// Batch: CPU seconds of work done (at the top P-state's speed).
    pub work_s: f64,
    stall_s: f64,
}

impl Running {
    pub fn active(&self) -> bool {
        self.done_ns.is_none()
    }

    /// The announced iowait of the phase a service job is in (0 for batch jobs).
    pub fn iowait(&self) -> f64 {
        self.phases.get(self.phase).map_or(0.0, |p| p.iowait)
    }
}

/// The simulated server as a policy sees and steers it.
pub struct Server<'a> {
    pub model: &'a Model,
    pub curve: &'a Curve,
    pub plant: Plant,
    pub jobs: Vec<Running>,
    pub core_job: Vec<Option<usize>>,
    pub dimm_active: Vec<bool>,
    /// P-state index per core (0 is the fastest).
    pub pstate: Vec<usize>,
    /// SSD cache size as a fraction of the service job's table (0: no cache).
    pub cache_share: f64,
    /// The service jobs' table, GB (the largest, when there are several): what the cache's
    /// share is of.
    pub table_gb: f64,
    pub now_ns: u64,
    pub events: Events,
    /// Power per node excluding leakage, and the disks' and DIMMs', averaged over the last
    /// fan interval (what a controller predicts from).
    pub avg_power: Vec<f64>,
    pub avg_disks_w: f64,
    pub avg_dimms_w: f64,
    /// Memory traffic W averaged over the last fan interval.
    pub avg_traffic_w: f64,
    pub migrations: u64,
    power: Vec<f64>,
    /// Per core: the share of the tick it had a job to run (kept to spare an allocation).
    busy: Vec<f64>,
    sum_power: Vec<f64>,
    sum_disks_w: f64,
    sum_dimms_w: f64,
    sum_traffic_w: f64,
    sum_ticks: u64,
    disk_frac: f64,
    tick_s: f64,
}

fn drive_rate(d: &Drive, p: Pattern) -> f64 {
    match p {
        Pattern::Seq => d.seq_mb_s,
        Pattern::Random => d.random_mb_s,
    }
}

fn jitter(rng: &mut Rng, cv: f64) -> f64 {
    // A uniform factor with mean 1 and coefficient of variation `cv`.
    1.0 + cv * 3f64.sqrt() * (2.0 * rng.unit() - 1.0)
}

fn running(model: &Model, job: &Job, rng: &mut Rng) -> Running {
    let cv = model.control.jitter_cv;
    let phases = job
        .phases
        .iter()
        .map(|p| {
            let f = jitter(rng, cv);
            let (cpu_s, io_mb) = (p.cpu_s * f, p.io_gb * 1e3 * f);
            let ideal =
                io_mb / (model.storage.disks as f64 * drive_rate(&model.storage.disk, p.pattern));
            PhaseWork {
                cpu_s,
                io_mb,
                pattern: p.pattern,
                mem_w: p.mem_w,
                cache_hit: p.cache_hit.clone(),
                cache_cpu: p.cache_cpu,
                iowait: if cpu_s + ideal > 0.0 {
                    ideal / (cpu_s + ideal)
                } else {
                    0.0
                },
            }
        })
        .collect();
    Running {
        kind: job.kind,
        core: 0,
        mem_gb: job.mem_gb,
        table_gb: job.table_gb,
        activity: job.activity,
        sensitivity: job.mem_sensitivity,
        mem_w: job.mem_w,
        phases,
        phase: 0,
        left: 1.0,
        done_ns: None,
        work_s: 0.0,
        stall_s: 0.0,
    }
}

/// What the jobs did in one tick.
#[derive(Default)]
struct Tick {
    hdd_share: f64,
    ssd_share: f64,
    hdd_mb: f64,
    ssd_mb: f64,
    traffic_w: f64,
    batch_speed: f64,
    batch_jobs: usize,
}

impl<'a> Server<'a> {
    fn new(
        model: &'a Model,
        curve: &'a Curve,
        jobs: Vec<Running>,
    ) -> Result<Self, super::ServerError> {
        let plant = Plant::new(model)?;
        let table_gb = jobs
            .iter()
            .filter(|j| j.kind == Kind::Service)
            .map(|j| j.table_gb)
            .fold(0.0, f64::max);
        let n = plant.nodes.len();
        Ok(Self {
            model,
            curve,
            plant,
            jobs,
            core_job: vec![None; model.socket.cores],
            dimm_active: vec![true; model.memory.dimms],
            pstate: vec![0; model.socket.cores],
            cache_share: 0.0,
            table_gb,
            now_ns: 0,
            events: Events::with_cap(EVENT_CAP),
            avg_power: vec![0.0; n],
            avg_disks_w: 0.0,
            avg_dimms_w: 0.0,
            avg_traffic_w: 0.0,
            migrations: 0,
            power: vec![0.0; n],
            busy: vec![0.0; model.socket.cores],
            sum_power: vec![0.0; n],
            sum_disks_w: 0.0,
            sum_dimms_w: 0.0,
            sum_traffic_w: 0.0,
            sum_ticks: 0,
            disk_frac: 1.0,
            tick_s: model.control.tick_ms / 1e3,
        })
    }

    /// Puts job `j` on `core` (swapping with the job there, if any); a move costs each job
    /// moved the migration time.
    pub fn place(&mut self, j: usize, core: usize) {
        let from = self.jobs[j].core;
        if self.core_job[from] == Some(j) && from == core {
            return;
        }
        let cost = self.model.policy.migration_cost_us / 1e6;
        let other = self.core_job[core];
        if self.core_job[from] == Some(j) {
            self.core_job[from] = other;
            if let Some(o) = other {
                self.jobs[o].core = from;
                self.jobs[o].stall_s += cost;
                self.migrations += 1;
            }
            self.jobs[j].stall_s += cost;
            self.migrations += 1;
            self.events
                .push(self.now_ns, EventKind::Migrate, j as u32, core as f64);
        }
        self.core_job[core] = Some(j);
        self.jobs[j].core = core;
    }

    pub fn set_pwm(&mut self, pwm: u8) {
        let pwm = pwm.clamp(self.model.fans.min_pwm, 100);
        if pwm != self.plant.pwm {
            self.plant.pwm = pwm;
            self.events
                .push(self.now_ns, EventKind::Fan, 0, f64::from(pwm));
        }
    }

    /// Keeps `k` DIMMs active: those active now first, then by index.
    pub fn set_dimms(&mut self, k: usize) {
        let k = k.clamp(1, self.dimm_active.len());
        let now = self.dimm_active.iter().filter(|a| **a).count();
        if k == now {
            return;
        }
        let mut order: Vec<usize> = (0..self.dimm_active.len()).collect();
        order.sort_by_key(|&d| (!self.dimm_active[d], d));
        let mut active = vec![false; self.dimm_active.len()];
        for &d in order.iter().take(k) {
            active[d] = true;
        }
        self.dimm_active = active;
        self.events.push(self.now_ns, EventKind::Dimms, 0, k as f64);
    }

    pub fn set_cache(&mut self, share: f64) {
        if share != self.cache_share {
            self.cache_share = share;
            let gb = share * self.table_gb;
            self.events.push(self.now_ns, EventKind::Cache, 0, gb);
        }
    }

    /// Leakage of die node `i` at `t` °C, with its core's voltage.
    pub fn leakage(&self, i: usize, t: f64) -> f64 {
        let s = &self.model.socket;
        let nd = self.plant.nodes;
        let (w, v) = if i < nd.cores {
            let [_, v] = s.pstates[self.pstate[i]];
            (s.core.leakage_w, v / s.pstates[0][1])
        } else if i == nd.l3 {
            (s.l3.leakage_w, 1.0)
        } else if i == nd.crossbar {
            (s.crossbar.leakage_w, 1.0)
        } else {
            return 0.0;
        };
        // Past 130 °C silicon would long be gated (the plant never gets there); the cap keeps
        // a controller's fixed-point search from running away at fan speeds it then rejects.
        w * v * libm::exp(s.leakage_beta * (t.min(130.0) - s.leakage_ref_c))
    }

    /// The temperatures the server would settle at with the fans at `pwm` and the last
    /// interval's average power.
    pub fn settle(&self, pwm: u8, out: &mut Vec<f64>) {
        let air = self.plant.air(pwm, self.avg_disks_w, self.avg_dimms_w);
        self.plant
            .settle(pwm, &self.avg_power, air, |i, t| self.leakage(i, t), out);
    }
}

impl Server<'_> {
    /// The jobs' progress over one tick and the dynamic power it takes per node.
    fn jobs_tick(&mut self) -> Tick {
        let model = self.model;
        let s = &model.socket;
        let st = &model.storage;
        let nd = self.plant.nodes;
        let dt = self.tick_s;
        let mem_gating = (0..nd.dimms)
            .filter(|&d| self.dimm_active[d])
            .map(|d| self.plant.gating[nd.dimm0 + d])
            .fold(0.0, f64::max);
        let hdd_rate = st.disks as f64 * self.disk_frac;
        let mut t = Tick::default();
        let mut exec_sum = 0.0;
        self.power.iter_mut().for_each(|p| *p = 0.0);
        let mut busy = std::mem::take(&mut self.busy);
        busy.iter_mut().for_each(|b| *b = 0.0);
        let [f0, v0] = s.pstates[0];
        for j in 0..self.jobs.len() {
            let job = &mut self.jobs[j];
            if job.done_ns.is_some() {
                continue;
            }
            let c = job.core;
            let [f, _] = s.pstates[self.pstate[c]];
            let g = self.plant.gating[c];
            let speed = f / f0 * (1.0 - g) * (1.0 - job.sensitivity * mem_gating);
            // A migration stalls the job for part of a tick; the core stays busy meanwhile.
            let lost = job.stall_s.min(dt);
            job.stall_s -= lost;
            let avail = 1.0 - lost / dt;
            let run_s = dt * avail;
            busy[c] = 1.0 - avail;
            let mut exec = 0.0; // share of the tick the core executes this job
            if avail <= 0.0 {
                // stalled the whole tick
            } else if job.kind == Kind::Batch {
                job.work_s += run_s * speed;
                busy[c] = 1.0;
                exec = avail * (1.0 - g);
                t.traffic_w += job.mem_w * speed * avail;
                t.batch_speed += speed * avail;
                t.batch_jobs += 1;
            } else {
                let p = &job.phases[job.phase];
                let cached = self.cache_share > 0.0;
                let hit = if cached {
                    interpolate(&p.cache_hit, self.cache_share)
                } else {
                    0.0
                };
                let cpu = p.cpu_s * if cached { 1.0 + p.cache_cpu } else { 1.0 };
                let hdd_mb = p.io_mb * (1.0 - hit);
                let ssd_mb = p.io_mb * hit;
                let t_cpu = if cpu > 0.0 { cpu / speed } else { 0.0 };
                let t_hdd = if hdd_mb > 0.0 {
                    hdd_mb / (hdd_rate * drive_rate(&st.disk, p.pattern))
                } else {
                    0.0
                };
                let t_ssd = if ssd_mb > 0.0 {
                    ssd_mb / drive_rate(&st.ssd, p.pattern)
                } else {
                    0.0
                };
                let total = t_cpu + t_hdd + t_ssd;
                if total.is_finite() && total > 0.0 {
                    job.left -= run_s / total;
                    busy[c] += avail * t_cpu / total;
                    exec = avail * t_cpu / total * (1.0 - g);
                    t.hdd_share += avail * t_hdd / total;
                    t.ssd_share += avail * t_ssd / total;
                    t.hdd_mb += hdd_mb * run_s / total;
                    t.ssd_mb += ssd_mb * run_s / total;
                    t.traffic_w += p.mem_w * exec;
                } else if !t_cpu.is_finite() {
                    busy[c] = 1.0; // gated to a standstill
                }
                if job.left <= 0.0 {
                    job.phase += 1;
                    job.left = 1.0;
                    let now = self.now_ns + (dt * 1e9) as u64;
                    if job.phase == job.phases.len() {
                        job.done_ns = Some(now);
                        self.core_job[c] = None;
                        self.events.push(now, EventKind::Done, j as u32, 0.0);
                    } else {
                        self.events
                            .push(now, EventKind::Phase, j as u32, job.phase as f64);
                    }
                }
            }
            let [_, v] = s.pstates[self.pstate[c]];
            let fv2 = f / f0 * (v / v0) * (v / v0);
            self.power[c] += s.core.dynamic_w * job.activity * exec * fv2;
            exec_sum += exec;
        }
        for (c, b) in busy.iter().enumerate() {
            let [_, v] = s.pstates[self.pstate[c]];
            let idle = 1.0 - b * (1.0 - self.plant.gating[c]);
            self.power[c] += s.core.idle_w * (v / v0) * (v / v0) * idle.max(0.0);
        }
        self.busy = busy;
        let mean_exec = exec_sum / s.cores as f64;
        self.power[nd.l3] = s.l3.idle_w + s.l3.dynamic_w * mean_exec;
        self.power[nd.crossbar] = s.crossbar.idle_w + s.crossbar.dynamic_w * mean_exec;
        let m = &model.memory;
        let k = self.dimm_active.iter().filter(|a| **a).count().max(1) as f64;
        for d in 0..nd.dimms {
            self.power[nd.dimm0 + d] = if self.dimm_active[d] {
                let g = self.plant.gating[nd.dimm0 + d];
                m.active_idle_w + t.traffic_w / k * (1.0 - g)
            } else {
                m.self_refresh_w
            };
        }
        t
    }
}

/// Options of a batch of runs that are not the model's.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Series bin, s.
    pub resolution_s: f64,
}

/// A stable stream key for a workload's name (FNV-1a): the same draws for every policy and
/// whatever other workloads are simulated beside it.
fn key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Simulates `set` under `policy` with `seed`; `ticks` counts simulated ticks for progress.
#[allow(clippy::too_many_arguments)]
pub fn run(
    model: &Model,
    jobs: &std::collections::BTreeMap<String, Job>,
    set: &WorkloadSet,
    policy: PolicyName,
    curve: &Curve,
    seed: u64,
    options: RunOptions,
    cancel: &AtomicBool,
    ticks: &AtomicU64,
) -> Result<RunOutput, super::ServerError> {
    let streams = Streams::new(seed);
    let base = key(&set.name).wrapping_mul(4);
    let mut sizes = streams.stream(base);
    let mut noise = streams.stream(base + 1);
    let list = set
        .jobs
        .iter()
        .map(|name| running(model, &jobs[name], &mut sizes))
        .collect();
    let mut s = Server::new(model, curve, list)?;
    let mut pol = policy::build(policy, model, curve);
    let nd = s.plant.nodes;
    let tick_ns = (model.control.tick_ms * 1e6).round() as u64;
    let interval =
        ((model.control.fan_interval_s * 1e3 / model.control.tick_ms).round() as u64).max(1);
    let bin = ((options.resolution_s * 1e3 / model.control.tick_ms).round() as u64).max(1);
    let max_ticks = (model.control.max_sim_s * 1e3 / model.control.tick_ms).ceil() as u64;
    let mut series = Series::new(bin, bin as f64 * s.tick_s);
    let mut out = RunOutput::new(&set.name, policy, seed);
    // Uniform around the curve's value, as far as its nearer extreme: the mean stays the
    // curve's, and every draw within what the sweep saw.
    let draw = |rng: &mut Rng, s: &mut Server| {
        let (norm, lo, hi) = s.curve.at(f64::from(s.plant.pwm));
        let half = (norm - lo).min(hi - norm);
        s.disk_frac = norm + half * (2.0 * rng.unit() - 1.0);
    };
    pol.start(&mut s);
    s.warm_start();
    pol.interval(&mut s);
    draw(&mut noise, &mut s);
    let mut gated_before = vec![false; nd.len()];
    let mut k: u64 = 0;
    let status = loop {
        if k > 0 && k.is_multiple_of(interval) {
            s.end_interval();
            pol.interval(&mut s);
            draw(&mut noise, &mut s);
        }
        let t = s.jobs_tick();
        let dimms_w: f64 = s.power[nd.dimm0..].iter().sum();
        let dw = disks_w(model, &t);
        s.accumulate(dw, dimms_w, t.traffic_w);
        for i in 0..nd.die() {
            let leak = s.leakage(i, s.plant.temps[i]);
            s.power[i] += leak;
        }
        let air = s.plant.air(s.plant.pwm, dw, dimms_w);
        let power = std::mem::take(&mut s.power);
        s.plant.advance(&power, air);
        s.power = power;
        let socket_w: f64 = s.power[..nd.die()].iter().sum();
        let fans_w = s.plant.fan_w(s.plant.pwm);
        s.now_ns += tick_ns;
        k += 1;
        pol.tick(&mut s);
        let mut any_gated = false;
        for i in (0..nd.cores).chain(nd.dimm0..nd.len()) {
            let on = s.plant.gating[i] > 0.0;
            any_gated |= on;
            if on != gated_before[i] {
                let kind = if on {
                    EventKind::GatingOn
                } else {
                    EventKind::GatingOff
                };
                s.events.push(s.now_ns, kind, i as u32, s.plant.temps[i]);
                gated_before[i] = on;
            }
        }
        let sample = s.sample(&t, socket_w, fans_w, dimms_w, dw);
        series.add(&sample);
        out.add_tick(&sample, s.tick_s, any_gated, t.hdd_mb, t.ssd_mb);
        if s.jobs.iter().all(|j| j.kind == Kind::Batch || !j.active()) {
            break super::Status::Complete;
        }
        if k.is_multiple_of(1024) {
            ticks.fetch_add(1024, Ordering::Relaxed);
            if cancel.load(Ordering::Relaxed) {
                break super::Status::Cancelled;
            }
        }
        if k >= max_ticks {
            break super::Status::TimedOut;
        }
    };
    ticks.fetch_add(k % 1024, Ordering::Relaxed);
    series.flush();
    out.finish(&s, status, k as f64 * s.tick_s, series);
    Ok(out)
}

fn disks_w(model: &Model, t: &Tick) -> f64 {
    let st = &model.storage;
    let hdd = st.disks as f64
        * (st.disk.idle_w + (st.disk.active_w - st.disk.idle_w) * t.hdd_share.min(1.0));
    hdd + st.ssd.idle_w + (st.ssd.active_w - st.ssd.idle_w) * t.ssd_share.min(1.0)
}

impl Server<'_> {
    /// Puts the server at the steady state of the first tick's load with the fans at the
    /// speed that holds it at the targets, as if it had been running it: the same start for
    /// every policy (a cold chassis would favour whichever lets it heat up slowest). The tick
    /// only measures the load; the jobs start from where they were.
    fn warm_start(&mut self) {
        let (jobs, core_job) = (self.jobs.clone(), self.core_job.clone());
        let first = self.jobs_tick();
        (self.jobs, self.core_job) = (jobs, core_job);
        self.events = Events::with_cap(EVENT_CAP);
        let nd = self.plant.nodes;
        self.avg_power.copy_from_slice(&self.power);
        self.avg_disks_w = disks_w(self.model, &first);
        self.avg_dimms_w = self.power[nd.dimm0..].iter().sum();
        self.avg_traffic_w = first.traffic_w;
        let c = &self.model.control;
        self.plant.pwm = policy::fan_for(self, c.cpu_target_c, self.model.memory.target_c);
        let mut warm = Vec::new();
        self.settle(self.plant.pwm, &mut warm);
        self.plant.temps.copy_from_slice(&warm);
        self.events
            .push(0, EventKind::Fan, 0, f64::from(self.plant.pwm));
    }

    /// This tick's readings, as the series and the totals take them.
    fn sample(&self, t: &Tick, socket_w: f64, fans_w: f64, memory_w: f64, disks_w: f64) -> Sample {
        let nd = self.plant.nodes;
        let temps = &self.plant.temps;
        let hottest = |r: std::ops::Range<usize>| temps[r].iter().copied().fold(f64::MIN, f64::max);
        Sample {
            core_max_c: hottest(0..nd.cores),
            dimm_max_c: hottest(nd.dimm0..nd.len()),
            sink_c: temps[nd.sink],
            pwm: f64::from(self.plant.pwm),
            disk_frac: self.disk_frac,
            disk_mb_s: t.hdd_mb / self.tick_s,
            ssd_mb_s: t.ssd_mb / self.tick_s,
            cache_gb: self.cache_share * self.table_gb,
            gating: self.plant.gating[..nd.cores]
                .iter()
                .copied()
                .fold(0.0, f64::max),
            socket_w,
            memory_w,
            fans_w,
            disks_w,
            active_dimms: self.dimm_active.iter().filter(|a| **a).count() as f64,
            batch_speed: if t.batch_jobs > 0 {
                t.batch_speed / t.batch_jobs as f64
            } else {
                0.0
            },
        }
    }

    fn accumulate(&mut self, disks_w: f64, dimms_w: f64, traffic_w: f64) {
        // Before leakage is added: a controller adds it back for the temperatures it tries.
        for (s, p) in self.sum_power.iter_mut().zip(&self.power) {
            *s += p;
        }
        self.sum_disks_w += disks_w;
        self.sum_dimms_w += dimms_w;
        self.sum_traffic_w += traffic_w;
        self.sum_ticks += 1;
    }

    fn end_interval(&mut self) {
        let n = self.sum_ticks.max(1) as f64;
        for (a, s) in self.avg_power.iter_mut().zip(&mut self.sum_power) {
            *a = *s / n;
            *s = 0.0;
        }
        self.avg_disks_w = self.sum_disks_w / n;
        self.avg_dimms_w = self.sum_dimms_w / n;
        self.avg_traffic_w = self.sum_traffic_w / n;
        self.sum_disks_w = 0.0;
        self.sum_dimms_w = 0.0;
        self.sum_traffic_w = 0.0;
        self.sum_ticks = 0;
    }
}
