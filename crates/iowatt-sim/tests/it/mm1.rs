//! The event core on the M/M/1 queue, whose mean time in the system is known: 1 / (μ − λ).

use std::collections::VecDeque;

use iowatt_sim::{exponential, EventQueue, Streams};

enum Event {
    Arrival,
    Departure,
}

/// Each customer's time in the system (ns), FIFO, one server; arrivals and services each from
/// their own stream.
fn mm1(seed: u64, customers: usize, arrival_mean_ns: f64, service_mean_ns: f64) -> Vec<u64> {
    let streams = Streams::new(seed);
    let (mut arrivals, mut services) = (streams.stream(0), streams.stream(1));
    let mut q = EventQueue::with_capacity(4);
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let mut sojourn = Vec::with_capacity(customers);
    let mut arrived = 0;
    q.at(0, Event::Arrival);
    while let Some((now, event)) = q.next() {
        match event {
            Event::Arrival => {
                arrived += 1;
                waiting.push_back(now);
                if waiting.len() == 1 {
                    q.after(
                        exponential(&mut services, service_mean_ns) as u64,
                        Event::Departure,
                    );
                }
                if arrived < customers {
                    q.after(
                        exponential(&mut arrivals, arrival_mean_ns) as u64,
                        Event::Arrival,
                    );
                }
            }
            Event::Departure => {
                let came = waiting.pop_front().expect("a customer was being served");
                sojourn.push(now - came);
                if !waiting.is_empty() {
                    q.after(
                        exponential(&mut services, service_mean_ns) as u64,
                        Event::Departure,
                    );
                }
            }
        }
    }
    sojourn
}

#[test]
fn the_mean_time_in_an_mm1_system_is_one_over_mu_minus_lambda() {
    // λ = 1 per ms, μ = 2 per ms: ρ = 0.5 and W = 1 / (2 − 1) ms = 1 ms.
    let sojourn = mm1(42, 400_000, 1e6, 0.5e6);
    assert_eq!(sojourn.len(), 400_000, "every customer left");
    let mean_ns = sojourn.iter().map(|&s| s as f64).sum::<f64>() / sojourn.len() as f64;
    assert!(
        (mean_ns / 1e6 - 1.0).abs() < 0.02,
        "mean time in system {mean_ns} ns"
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let a = mm1(7, 20_000, 1e6, 0.8e6);
    assert_eq!(a, mm1(7, 20_000, 1e6, 0.8e6));
    assert_ne!(a, mm1(8, 20_000, 1e6, 0.8e6));
}
