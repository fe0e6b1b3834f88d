//! Ticks of a thermal RC network, for bench/sim_core.py (beside NumPy on the same matrices):
//! `thermal NODES TICKS` prints `ticks seconds checksum`.

use std::time::Instant;

use iowatt_sim::thermal::Network;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a number"));
    let nodes = args.next().unwrap_or(30).max(2);
    let ticks = args.next().unwrap_or(1_000_000);
    let net = chain(nodes);
    let step = net.discretise(1e-3).expect("a valid network");
    let power: Vec<f64> = (0..nodes)
        .map(|i| if i % 3 == 0 { 5.0 } else { 0.5 })
        .collect();
    let (mut t, mut next) = (vec![45.0; nodes], vec![0.0; nodes]);
    let start = Instant::now();
    for _ in 0..ticks {
        step.advance(&t, &power, 45.0, &mut next);
        std::mem::swap(&mut t, &mut next);
    }
    let seconds = start.elapsed().as_secs_f64();
    println!("{ticks} {seconds} {}", t.iter().sum::<f64>());
}

/// The network bench/sim_core.py builds too: blocks in a row, each to its neighbour (0.5 K/W)
/// and every third to the air (2 K/W), heat capacities 0.05–0.5 J/K.
pub fn chain(nodes: usize) -> Network {
    let mut net = Network::new();
    for i in 0..nodes {
        net.node(&format!("n{i}"), 0.05 + 0.45 * (i % 4) as f64 / 3.0)
            .unwrap();
    }
    for i in 1..nodes {
        net.connect(i - 1, i, 0.5).unwrap();
    }
    for i in (0..nodes).step_by(3) {
        net.to_ambient(i, 2.0).unwrap();
    }
    net
}
