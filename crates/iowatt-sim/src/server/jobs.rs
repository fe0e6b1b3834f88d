//! Jobs and workload sets as data: a batch job computes until the service jobs are done (its
//! figure is its rate of progress); a service job (a database query) is a list of phases, each some CPU
//! work, some I/O and what an SSD cache does to it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ServerError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Service,
    Batch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Seq,
    Random,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub name: String,
    /// CPU seconds at the top P-state.
    pub cpu_s: f64,
    /// GB (10^9 bytes) read or written.
    #[serde(default)]
    pub io_gb: f64,
    #[serde(default = "seq")]
    pub pattern: Pattern,
    /// W of DRAM traffic while the phase computes at full speed.
    #[serde(default)]
    pub mem_w: f64,
    /// [cache size as a fraction of the table, share of the phase's I/O it serves], ascending.
    #[serde(default)]
    pub cache_hit: Vec<[f64; 2]>,
    /// Extra CPU, as a fraction of `cpu_s`, that running with the cache costs.
    #[serde(default)]
    pub cache_cpu: f64,
}

fn seq() -> Pattern {
    Pattern::Seq
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub kind: Kind,
    /// Working set, GB.
    pub mem_gb: f64,
    /// The core's dynamic power while it runs, as a fraction of `socket.core.dynamic_w`.
    #[serde(default = "one")]
    pub activity: f64,
    /// How much memory throttling slows it (0: not at all, 1: as much as it throttles).
    #[serde(default)]
    pub mem_sensitivity: f64,
    /// Batch: DRAM traffic W at full speed (a service job's phases carry their own).
    #[serde(default)]
    pub mem_w: f64,
    /// Service: the table the SSD cache's size is a fraction of, GB.
    #[serde(default)]
    pub table_gb: f64,
    #[serde(default)]
    pub phases: Vec<Phase>,
}

/// A named set of jobs run together (job names may repeat).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadSet {
    pub name: String,
    pub jobs: Vec<String>,
}

fn bad(job: &str, what: String) -> ServerError {
    ServerError::Workload(format!("job `{job}`: {what}"))
}

fn finite_at_least(job: &str, field: &str, v: f64, min: f64) -> Result<(), ServerError> {
    if v.is_finite() && v >= min {
        Ok(())
    } else {
        Err(bad(job, format!("`{field}` = {v} must be {min} or more")))
    }
}

impl Job {
    pub fn check(&self, name: &str) -> Result<(), ServerError> {
        finite_at_least(name, "mem_gb", self.mem_gb, 0.0)?;
        finite_at_least(name, "activity", self.activity, 0.0)?;
        finite_at_least(name, "mem_w", self.mem_w, 0.0)?;
        if !(0.0..=1.0).contains(&self.mem_sensitivity) {
            return Err(bad(name, "`mem_sensitivity` must be within 0..1".into()));
        }
        match self.kind {
            Kind::Batch => {
                if !self.phases.is_empty() {
                    return Err(bad(name, "a batch job has no `phases`".into()));
                }
            }
            Kind::Service => {
                if self.phases.is_empty() {
                    return Err(bad(name, "a service job needs at least one phase".into()));
                }
                finite_at_least(name, "table_gb", self.table_gb, 0.0)?;
                for p in &self.phases {
                    let at = |f: &str| format!("phases `{}`.{f}", p.name);
                    finite_at_least(name, &at("cpu_s"), p.cpu_s, 0.0)?;
                    finite_at_least(name, &at("io_gb"), p.io_gb, 0.0)?;
                    finite_at_least(name, &at("mem_w"), p.mem_w, 0.0)?;
                    finite_at_least(name, &at("cache_cpu"), p.cache_cpu, 0.0)?;
                    if p.cpu_s + p.io_gb <= 0.0 {
                        return Err(bad(name, format!("phase `{}` does no work", p.name)));
                    }
                    let mut last = -1.0;
                    for [size, hit] in &p.cache_hit {
                        if !(0.0..=1.0).contains(size) || !(0.0..=1.0).contains(hit) {
                            return Err(bad(
                                name,
                                format!("{} points within 0..1", at("cache_hit")),
                            ));
                        }
                        if *size <= last {
                            return Err(bad(
                                name,
                                format!("{} sizes must ascend", at("cache_hit")),
                            ));
                        }
                        last = *size;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Checks every job, and that each set names known jobs and has a service job to time.
pub fn check(jobs: &BTreeMap<String, Job>, sets: &[WorkloadSet]) -> Result<(), ServerError> {
    for (name, job) in jobs {
        job.check(name)?;
    }
    for set in sets {
        let mut service = false;
        for name in &set.jobs {
            let job = jobs.get(name).ok_or_else(|| {
                ServerError::Workload(format!(
                    "workload `{}` names job `{name}`, which is not defined",
                    set.name
                ))
            })?;
            service |= job.kind == Kind::Service;
        }
        if !service {
            return Err(ServerError::Workload(format!(
                "workload `{}` has no service job, so it has no service time to compare",
                set.name
            )));
        }
    }
    Ok(())
}

/// Piecewise-linear through ascending `[x, y]` points, flat beyond the ends; 0 without points.
pub fn interpolate(points: &[[f64; 2]], x: f64) -> f64 {
    match points {
        [] => 0.0,
        [first, ..] if x <= first[0] => first[1],
        [.., last] if x >= last[0] => last[1],
        _ => {
            let i = points.partition_point(|p| p[0] <= x);
            let ([x0, y0], [x1, y1]) = (points[i - 1], points[i]);
            y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        }
    }
}
