//! RAID-0 and LRU RAID-0 on a synthetic trace of N requests (4 disks of a 15k class model):
//! `raid [N]` prints the wall time per personality, for bench/ and a quick look.

use std::time::Instant;

use iowatt_sim::raid::{simulate, ArrayConfig, DiskModel, Kind, Power, Spec, Trace};
use iowatt_sim::Streams;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(3_500_000, |a| a.parse().expect("a count"));
    let w = |w| Power {
        w: Some(w),
        a12: None,
        a5: None,
    };
    let model = DiskModel {
        label: "15k class".into(),
        kind: Kind::Hdd,
        capacity_gb: 36.7,
        rpm: 15_000,
        seek_track_ms: 0.5,
        seek_avg_ms: 3.4,
        seek_full_ms: 7.2,
        outer_mb_s: 55.0,
        inner_mb_s: 36.6,
        overhead_ms: 0.1,
        active: w(13.5),
        idle: w(10.2),
        standby: w(2.5),
        spin_up_s: 10.9,
        spin_up_j: 135.0,
        spin_down_s: 1.5,
        spin_down_j: 13.0,
        start_stop_cycles: 50_000,
    };
    let array = ArrayConfig {
        model,
        model_name: "15k".into(),
        disks: 4,
        stripe_bytes: 64 << 10,
        bin_s: 15.0,
        cache_bytes: 0,
        spinup_stagger_s: 0.0,
        fs: None,
    };
    // A month at about 1.35 requests/s, exponential gaps, files of 4 KiB–1 MiB.
    let mut rng = Streams::new(1).stream(99);
    let (mut t, mut trace) = (0u64, Trace::default());
    for _ in 0..n {
        t += (-(1.0 - rng.unit()).ln() * 0.74e9) as u64;
        trace.t_ns.push(t);
        trace.offset.push(rng.below(100_000_000_000));
        trace.bytes.push(4096 << rng.below(9));
    }
    for spec in [
        Spec::Raid0,
        Spec::Lru {
            timeout_s: None,
            cycles_per_day: None,
        },
    ] {
        let start = Instant::now();
        let run = simulate(&array, &spec, &trace, 1).expect("runs");
        let energy: f64 = run.energy_j.iter().sum();
        println!(
            "{:5} {n} requests in {:.2} s: {:.1} MJ, spin cycles {:?}",
            spec.name(),
            start.elapsed().as_secs_f64(),
            energy / 1e6,
            run.spin_cycles
        );
    }
}
