//! Every shipped workload under every policy on the SATA curve: the policy table and the time
//! it took (`cargo run --release -p iowatt-sim --example server [W1 W4 …]`).

#[path = "../tests/it/shipped.rs"]
mod shipped;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use iowatt_sim::server::{run, PolicyName, Progress};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all: Vec<String> = (1..=10).map(|i| format!("W{i}")).collect();
    let names: Vec<&str> = if args.is_empty() { &all } else { &args }
        .iter()
        .map(String::as_str)
        .collect();
    let config = shipped::config(&names, &PolicyName::ALL);
    let start = Instant::now();
    let progress = Progress::default();
    let out = run(&config, &progress, &AtomicBool::new(false)).expect("runs");
    let wall = start.elapsed().as_secs_f64();
    let simulated: f64 = out.iter().map(|o| o.service_s).sum();
    println!(
        "{:5} {:11} {:>9} {:>6} {:>7} {:>9} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6}",
        "set",
        "policy",
        "service_s",
        "pwm",
        "batch",
        "socket_kJ",
        "mem_kJ",
        "fans_kJ",
        "peak_c",
        "gate_s",
        "dimm_c",
        "migr"
    );
    for o in &out {
        println!(
            "{:5} {:11} {:>9.1} {:>6.1} {:>7.3} {:>9.1} {:>8.1} {:>8.1} {:>7.1} {:>6.2} {:>6.1} {:>6}",
            o.workload, o.policy.as_str(), o.service_s, o.mean_pwm, o.batch_speed,
            o.energy.socket / 1e3, o.energy.memory / 1e3, o.energy.fans / 1e3,
            o.peak_core_c, o.gating_s, o.peak_dimm_c, o.migrations,
        );
    }
    println!(
        "{} runs, {:.0} simulated s in {wall:.2} s wall ({:.2} s per simulated hour per thread)",
        out.len(),
        simulated,
        wall * 3600.0 * config.threads as f64 / simulated
    );
}
