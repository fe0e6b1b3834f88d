//! The event core on the M/M/1 queue, whose mean time in the system is known: 1 / (μ − λ).

use iowatt_sim::mm1::mm1;

#[test]
fn the_mean_time_in_an_mm1_system_is_one_over_mu_minus_lambda() {
    // λ = 1 per ms, μ = 2 per ms: ρ = 0.5 and W = 1 / (2 − 1) ms = 1 ms.
    let run = mm1(42, 400_000, 1e6, 0.5e6);
    assert_eq!(run.sojourn_ns.len(), 400_000, "every customer left");
    assert_eq!(run.events, 800_000, "an arrival and a departure each");
    let mean_ns = run.sojourn_ns.iter().map(|&s| s as f64).sum::<f64>() / 400_000.0;
    assert!(
        (mean_ns / 1e6 - 1.0).abs() < 0.02,
        "mean time in system {mean_ns} ns"
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let a = mm1(7, 20_000, 1e6, 0.8e6).sojourn_ns;
    assert_eq!(a, mm1(7, 20_000, 1e6, 0.8e6).sojourn_ns);
    assert_ne!(a, mm1(8, 20_000, 1e6, 0.8e6).sojourn_ns);
}
