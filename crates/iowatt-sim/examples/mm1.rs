//! The M/M/1 queue on the event core, for bench/sim_core.py (beside SimPy on the same model):
//! `mm1 CUSTOMERS SEED` prints `events seconds mean_sojourn_s`.

use std::collections::VecDeque;
use std::time::Instant;

use iowatt_sim::{exponential, EventQueue, Streams};

enum Event {
    Arrival,
    Departure,
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let customers = args.next().unwrap_or(1_000_000);
    let seed = args.next().unwrap_or(1);
    // λ = 1 per ms, μ = 2 per ms (ρ = 0.5): the mean time in the system is 1 ms.
    let (arrival_ns, service_ns) = (1e6, 0.5e6);
    let start = Instant::now();
    let streams = Streams::new(seed);
    let (mut arrivals, mut services) = (streams.stream(0), streams.stream(1));
    let mut q = EventQueue::with_capacity(4);
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let (mut arrived, mut events, mut total_ns) = (0u64, 0u64, 0u128);
    q.at(0, Event::Arrival);
    while let Some((now, event)) = q.next() {
        events += 1;
        match event {
            Event::Arrival => {
                arrived += 1;
                waiting.push_back(now);
                if waiting.len() == 1 {
                    q.after(
                        exponential(&mut services, service_ns) as u64,
                        Event::Departure,
                    );
                }
                if arrived < customers {
                    q.after(
                        exponential(&mut arrivals, arrival_ns) as u64,
                        Event::Arrival,
                    );
                }
            }
            Event::Departure => {
                total_ns += u128::from(now - waiting.pop_front().expect("in service"));
                if !waiting.is_empty() {
                    q.after(
                        exponential(&mut services, service_ns) as u64,
                        Event::Departure,
                    );
                }
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{events} {seconds} {}",
        total_ns as f64 / customers as f64 / 1e9
    );
}
