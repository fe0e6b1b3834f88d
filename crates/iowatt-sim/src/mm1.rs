//! The M/M/1 queue on the event core: the model whose answer is known (mean time in the
//! system 1 / (μ − λ)), shared by the core's tests and bench/sim_core.py (beside SimPy).

use std::collections::VecDeque;

use crate::{exponential, EventQueue, Streams};

enum Event {
    Arrival,
    Departure,
}

/// What a run of the queue gives: each customer's time in the system (ns), and the events
/// taken.
pub struct Mm1 {
    pub sojourn_ns: Vec<u64>,
    pub events: u64,
}

/// `customers` arrivals (mean gap `arrival_mean_ns`) served FIFO by one server (mean
/// `service_mean_ns`), arrivals and services each from their own stream of `seed`.
pub fn mm1(seed: u64, customers: usize, arrival_mean_ns: f64, service_mean_ns: f64) -> Mm1 {
    let streams = Streams::new(seed);
    let (mut arrivals, mut services) = (streams.stream(0), streams.stream(1));
    let mut q = EventQueue::with_capacity(4);
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let mut out = Mm1 {
        sojourn_ns: Vec::with_capacity(customers),
        events: 0,
    };
    let mut arrived = 0;
    if customers > 0 {
        q.at(0, Event::Arrival);
    }
    while let Some((now, event)) = q.next() {
        out.events += 1;
        let service = |s: &mut _| exponential(s, service_mean_ns) as u64;
        match event {
            Event::Arrival => {
                arrived += 1;
                waiting.push_back(now);
                if waiting.len() == 1 {
                    q.after(service(&mut services), Event::Departure);
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
                out.sojourn_ns.push(now - came);
                if !waiting.is_empty() {
                    q.after(service(&mut services), Event::Departure);
                }
            }
        }
    }
    out
}
