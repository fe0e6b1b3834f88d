//! One long run of the full server, for bench/sim_core.py: the shipped model and SATA curve,
//! workload set W2 under FSTM on one thread, its service job's phases scaled up until the run
//! covers at least `HOURS` simulated hours (default 1), every tick of 1 ms simulated.
//! `server_hour [HOURS]` prints `simulated_seconds wall_seconds` of that run.
//!
//! The scale comes from one unscaled run first (not timed): every phase's `cpu_s` and `io_gb`
//! are multiplied by 1.05 × the target over its service time, so the timed run ends, complete,
//! a little past the target.

#[path = "../tests/it/shipped.rs"]
mod shipped;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use iowatt_sim::server::{run, Config, PolicyName, Progress, RunOutput, Status};

fn once(config: &Config) -> RunOutput {
    let mut out = run(config, &Progress::default(), &AtomicBool::new(false)).expect("runs");
    assert_eq!(out.len(), 1, "one set under one policy with one seed");
    out.pop().expect("one run")
}

fn main() {
    let hours: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |a| a.parse().expect("a number of hours"));
    let target_s = hours * 3600.0;
    let mut config = shipped::config(&["W2"], &[PolicyName::Fstm]);
    config.threads = 1;
    let base = once(&config).service_s;
    let factor = 1.05 * target_s / base;
    for job in config.jobs.values_mut() {
        for p in &mut job.phases {
            p.cpu_s *= factor;
            p.io_gb *= factor;
        }
    }
    config.model.control.max_sim_s = config.model.control.max_sim_s.max(2.0 * target_s);
    let start = Instant::now();
    let out = once(&config);
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(out.status, Status::Complete, "the run ends by itself");
    assert!(
        out.service_s >= target_s,
        "{} s simulated, short of {target_s} s",
        out.service_s
    );
    println!("{} {wall}", out.service_s);
}
