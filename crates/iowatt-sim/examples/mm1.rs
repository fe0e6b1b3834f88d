//! The M/M/1 queue on the event core, for bench/sim_core.py (beside SimPy on the same model):
//! `mm1 CUSTOMERS SEED` prints `events seconds mean_sojourn_s`.

use std::time::Instant;

use iowatt_sim::mm1::mm1;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a number"));
    let customers = args.next().unwrap_or(1_000_000);
    let seed = args.next().unwrap_or(1) as u64;
    // λ = 1 per ms, μ = 2 per ms (ρ = 0.5): the mean time in the system is 1 ms.
    let start = Instant::now();
    let run = mm1(seed, customers, 1e6, 0.5e6);
    let seconds = start.elapsed().as_secs_f64();
    let total: u128 = run.sojourn_ns.iter().map(|&s| u128::from(s)).sum();
    let mean_s = total as f64 / customers.max(1) as f64 / 1e9;
    println!("{} {seconds} {mean_s}", run.events);
}
