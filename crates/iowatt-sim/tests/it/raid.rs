//! The storage power-policy simulator against hand computation.

use iowatt_sim::raid::{
    simulate, ArrayConfig, DiskModel, Extent, Kind, ParaidParams, Power, Spec, Striping, Trace,
};
use iowatt_sim::Streams;

fn w(w: f64) -> Power {
    Power {
        w: Some(w),
        a12: None,
        a5: None,
    }
}

/// Round numbers, so every figure can be worked out by hand.
pub fn model() -> DiskModel {
    DiskModel {
        label: "test disk".into(),
        kind: Kind::Hdd,
        capacity_gb: 100.0,
        rpm: 6000, // 10 ms a revolution
        seek_track_ms: 1.0,
        seek_avg_ms: 4.0,
        seek_full_ms: 10.0,
        outer_mb_s: 100.0,
        inner_mb_s: 50.0,
        overhead_ms: 0.5,
        active: w(12.0),
        idle: w(8.0),
        standby: w(2.0),
        spin_up_s: 6.0,
        spin_up_j: 120.0,
        spin_down_s: 2.0,
        spin_down_j: 10.0,
        start_stop_cycles: 50_000,
    }
}

pub fn array(disks: usize) -> ArrayConfig {
    ArrayConfig {
        model: model(),
        model_name: "test".into(),
        disks,
        stripe_bytes: 64 << 10,
        bin_s: 15.0,
        cache_bytes: 0,
        spinup_stagger_s: 0.0,
        fs: None,
    }
}

pub fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn a_requests_service_time_is_seek_rotation_and_zoned_transfer() {
    let m = model();
    // A quarter of the stroke (a short seek), half a turn, 1 MB where the rate is 87.5 MB/s.
    let quarter = 25_000_000_000;
    let want = 0.5e-3 + (1.0 + 3.0 * 0.75f64.sqrt()) * 1e-3 + 5e-3 + 1e6 / 87.5e6;
    close(m.service_s(0, quarter, 1_000_000, 0.5), want);
    // Two thirds of the stroke (a long seek): 4 ms + (10 − 4) ms × (2/3 − 1/3) × 1.5 = 7 ms.
    close(m.seek_s(2.0 / 3.0), 7e-3);
    close(m.seek_s(1.0), 10e-3);
    close(m.seek_s(1.0 / 3.0), 4e-3);
    assert_eq!(m.seek_s(0.0), 0.0);
}

#[test]
fn break_even_is_the_formula_and_the_36z15_gives_15_seconds() {
    // (E_down + E_up − P_sb (t_down + t_up)) / (P_idle − P_sb) = (10 + 120 − 2·8) / 6 = 19 s.
    close(model().break_even_s(), 19.0);
    let mut m = model();
    (
        m.idle,
        m.standby,
        m.spin_up_s,
        m.spin_up_j,
        m.spin_down_s,
        m.spin_down_j,
    ) = (w(10.2), w(2.5), 10.9, 135.0, 1.5, 13.0);
    // shared/reference/sim-models.md §2.2: 15.2 s.
    close(m.break_even_s(), (13.0 + 135.0 - 2.5 * 12.4) / 7.7);
    assert!((m.break_even_s() - 15.2).abs() < 0.05);
    // Cheap spin cycles: never below the round trip itself.
    m.spin_up_j = 0.0;
    m.spin_down_j = 0.0;
    close(m.break_even_s(), 12.4);
}

#[test]
fn striping_gives_each_disk_one_contiguous_extent() {
    let s = Striping {
        disks: 4,
        unit: 64 << 10,
    };
    let mut out = Vec::new();
    // 60 KiB in: 4 KiB of disk 0's first unit, all of disks 1–3's, then 4 KiB of disk 0's
    // second row, which follows its first on the disk: 8 KiB from 60 KiB on disk 0.
    s.route(60 << 10, 200 << 10, &mut out);
    let k = 1 << 10;
    let e = |disk, offset, bytes| Extent {
        disk,
        offset,
        bytes,
    };
    let want = vec![
        e(0, 60 * k, 8 * k),
        e(1, 0, 64 * k),
        e(2, 0, 64 * k),
        e(3, 0, 64 * k),
    ];
    assert_eq!(out, want);
    assert_eq!(out.iter().map(|e| e.bytes).sum::<u64>(), 200 * k);
}

#[test]
fn one_request_costs_idle_then_active_power_and_its_service_time() {
    let trace = Trace {
        t_ns: vec![1_000_000_000],
        offset: vec![0],
        bytes: vec![1_000_000],
        ..Trace::default()
    };
    let run = simulate(&array(1), &Spec::Raid0, &trace, 7).unwrap();
    // The head is at 0: no seek; the rotation is disk 0's first draw of seed 7.
    let u = Streams::new(7).stream(0).unit();
    let service = 0.5e-3 + u * 10e-3 + 1e6 / 100e6;
    close(run.completion_ns[0] as f64 / 1e9, service);
    assert_eq!(
        run.latency_ns[0], run.completion_ns[0],
        "one extent: first is last"
    );
    close(run.end_ns as f64 / 1e9, 1.0 + service);
    close(run.energy_j[0], 8.0 * 1.0 + 12.0 * service);
    assert_eq!(run.spin_cycles, vec![0]);
}

#[test]
fn an_idle_disk_spins_down_once_and_the_next_request_pays_the_spin_up() {
    let trace = Trace {
        t_ns: vec![0, 100_000_000_000],
        offset: vec![0, 0],
        bytes: vec![4096, 4096],
        ..Trace::default()
    };
    let lru = Spec::Lru {
        timeout_s: Some(10.0),
        cycles_per_day: None,
    };
    let run = simulate(&array(1), &lru, &trace, 1).unwrap();
    assert_eq!(run.spin_cycles, vec![1]);
    let rng_draws = {
        let mut r = Streams::new(1).stream(0);
        (r.unit(), r.unit())
    };
    let service = |u: f64| 0.5e-3 + u * 10e-3 + 4096.0 / 100e6;
    // The second seeks back 4 KiB from where the first left the head: a track-to-track seek.
    let back = model().seek_s(4096.0 / 1e11);
    let (first, last) = (service(rng_draws.0), back + service(rng_draws.1));
    close(run.completion_ns[0] as f64 / 1e9, first);
    close(run.completion_ns[1] as f64 / 1e9, 6.0 + last);
    // Energy: idle until 10 s after the first request, 2 s spinning down, standby until the
    // second request, 6 s spinning up, then the service.
    let standby = 100.0 - (first + 10.0 + 2.0);
    let want = 12.0 * first + 8.0 * 10.0 + 10.0 + 2.0 * standby + 120.0 + 12.0 * last;
    close(run.energy_j[0], want);
    // The bins hold the spin-down and standby seconds, and all the energy.
    close(run.bin_standby_s[0].iter().sum(), 2.0 + standby);
    close(run.bin_energy_j[0].iter().sum(), want);
    assert_eq!(run.bin_energy_j[0].len(), 8, "106 s: eight 15 s bins");
    // Under RAID-0 the same trace idles throughout and never waits.
    let raid0 = simulate(&array(1), &Spec::Raid0, &trace, 1).unwrap();
    assert_eq!(raid0.spin_cycles, vec![0]);
    assert!(raid0.completion_ns[1] < 1_000_000_000 / 10);
}

#[test]
fn a_striped_request_to_sleeping_disks_waits_for_the_slowest() {
    // Four disks spun down (timeout 1 s, then 30 s of quiet); a 256 KiB read touches all four,
    // which spin up in parallel: its completion is a spin-up plus the slowest service.
    let trace = Trace {
        t_ns: vec![0, 30_000_000_000],
        offset: vec![0, 0],
        bytes: vec![256 << 10, 256 << 10],
        ..Trace::default()
    };
    let run = simulate(
        &array(4),
        &Spec::Lru {
            timeout_s: Some(1.0),
            cycles_per_day: None,
        },
        &trace,
        3,
    )
    .unwrap();
    assert_eq!(run.spin_cycles, vec![1; 4]);
    let c = run.completion_ns[1] as f64 / 1e9;
    assert!((6.0..6.1).contains(&c), "{c}");
    assert!(run.latency_ns[1] <= run.completion_ns[1]);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let n = 2000u64;
    let trace = Trace {
        t_ns: (0..n).map(|i| i * 7_000_000).collect(),
        offset: (0..n).map(|i| (i * 7919 % 1000) * (1 << 20)).collect(),
        bytes: (0..n).map(|i| 4096 * (1 + i % 16)).collect(),
        ..Trace::default()
    };
    let a = simulate(&array(4), &Spec::Raid0, &trace, 11).unwrap();
    let b = simulate(&array(4), &Spec::Raid0, &trace, 11).unwrap();
    let c = simulate(&array(4), &Spec::Raid0, &trace, 12).unwrap();
    assert_eq!(a.completion_ns, b.completion_ns);
    assert_eq!(
        a.energy_j.iter().map(|e| e.to_bits()).collect::<Vec<_>>(),
        b.energy_j.iter().map(|e| e.to_bits()).collect::<Vec<_>>()
    );
    assert_ne!(
        a.completion_ns, c.completion_ns,
        "another seed, other rotations"
    );
}

#[test]
fn bad_models_and_arrays_are_refused_by_name() {
    let mut m = model();
    m.standby = w(9.0);
    let e = m.check("x").unwrap_err().to_string();
    assert!(e.contains("standby 9 W is above idle 8 W"), "{e}");
    let mut m = model();
    m.spin_up_s = -1.0;
    assert!(m
        .check("x")
        .unwrap_err()
        .to_string()
        .contains("`spin_up_s` = -1"));
    let trace = Trace {
        t_ns: vec![0],
        offset: vec![400_000_000_000],
        bytes: vec![1],
        ..Trace::default()
    };
    let e = simulate(&array(4), &Spec::Raid0, &trace, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("beyond the array"), "{e}");
}

/// Requests of 256 KiB every `gap_ms` from `from_s` for `for_s` seconds, at offsets spread
/// over the array's first 8 GB.
fn load(trace: &mut Trace, from_s: u64, for_s: u64, gap_ms: u64) {
    let (from, until) = (from_s * 1_000_000_000, (from_s + for_s) * 1_000_000_000);
    let mut t = from;
    let mut i = trace.len() as u64;
    while t < until {
        trace.t_ns.push(t);
        trace.offset.push(i * 7919 % 32_768 * (256 << 10));
        trace.bytes.push(256 << 10);
        t += gap_ms * 1_000_000;
        i += 1;
    }
}

fn paraid(cycles_per_day: Option<f64>) -> Spec {
    Spec::Paraid(ParaidParams {
        cycles_per_day,
        ..ParaidParams::default()
    })
}

#[test]
fn paraid_under_constant_high_load_stays_in_the_top_gear_as_raid0() {
    let mut trace = Trace::default();
    load(&mut trace, 0, 1200, 6);
    let p = simulate(&array(4), &paraid(None), &trace, 5).unwrap();
    let r = simulate(&array(4), &Spec::Raid0, &trace, 5).unwrap();
    assert_eq!(p.gears, vec![(0, 4)], "never shifted");
    assert_eq!(p.completion_ns, r.completion_ns);
    for (a, b) in p.energy_j.iter().zip(&r.energy_j) {
        assert_eq!(a.to_bits(), b.to_bits());
    }
    assert_eq!(p.spin_cycles, vec![0; 4]);
}

#[test]
fn paraid_shifts_with_busy_and_quiet_half_hours_within_its_spin_budget() {
    // Busy, quiet, busy, quiet, busy, quiet: 30 minutes each.
    let mut trace = Trace::default();
    for k in 0..6 {
        let gap = if k % 2 == 0 { 6 } else { 10_000 };
        load(&mut trace, k * 1800, 1800, gap);
    }
    let params = ParaidParams::default();
    let run = simulate(&array(4), &paraid(Some(2.0)), &trace, 9).unwrap();
    let downs: Vec<u64> = run
        .gears
        .windows(2)
        .filter(|w| w[1].1 < w[0].1)
        .map(|w| w[1].0)
        .collect();
    let ups: Vec<u64> = run
        .gears
        .windows(2)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| w[1].0)
        .collect();
    // Two down-shifts, in the first two quiet half hours; the third is past the daily budget.
    assert_eq!(downs.len(), 2, "{:?}", run.gears);
    for (d, quiet) in downs.iter().zip([1u64, 3]) {
        let s = *d as f64 / 1e9;
        assert!(
            (quiet as f64 * 1800.0..(quiet + 1) as f64 * 1800.0).contains(&s),
            "{s}"
        );
    }
    // Each down-shift waits out the dwell after the shift before it.
    for w in run.gears.windows(2) {
        if w[1].1 < w[0].1 && w[0].0 > 0 {
            assert!((w[1].0 - w[0].0) as f64 / 1e9 >= params.min_dwell_s);
        }
    }
    // The next busy half hour shifts back up within a minute (the spin-up included).
    for (u, busy) in ups.iter().zip([2u64, 4]) {
        let s = *u as f64 / 1e9 - busy as f64 * 1800.0;
        assert!(
            (0.0..60.0).contains(&s),
            "up-shift {s} s into busy half hour {busy}"
        );
    }
    assert_eq!(run.spin_cycles, vec![0, 0, 2, 2]);
    // Powered off for part of the quiet time, PARAID spends less than RAID-0.
    let raid0 = simulate(&array(4), &Spec::Raid0, &trace, 9).unwrap();
    let (e, e0): (f64, f64) = (run.energy_j.iter().sum(), raid0.energy_j.iter().sum());
    assert!(e < 0.95 * e0, "{e} vs {e0}");
}

#[test]
fn a_paraid_gear_larger_than_the_array_is_refused() {
    let spec = Spec::Paraid(ParaidParams {
        gears: vec![2, 6],
        ..ParaidParams::default()
    });
    let e = simulate(&array(4), &spec, &Trace::default(), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("gear of 6 disks is larger than the array's 4"),
        "{e}"
    );
}

#[test]
fn a_page_cache_serves_re_reads_without_the_disks() {
    let trace = Trace {
        t_ns: vec![0, 1_000_000_000, 2_000_000_000],
        offset: vec![0, 0, 1 << 20],
        bytes: vec![4096, 4096, 4096],
        ..Trace::default()
    };
    let mut a = array(1);
    a.cache_bytes = 1 << 20;
    let run = simulate(&a, &Spec::Raid0, &trace, 2).unwrap();
    assert_eq!(run.cache_hits, 1);
    assert_eq!(run.completion_ns[1], 0, "from memory");
    assert!(run.completion_ns[2] > 0);
    let uncached = simulate(&array(1), &Spec::Raid0, &trace, 2).unwrap();
    assert_eq!(uncached.cache_hits, 0);
    assert!(uncached.completion_ns[1] > 0);
}

#[test]
fn paraid_refuses_data_its_lowest_gear_cannot_hold_with_the_replicas() {
    // Data over three quarters of the array: 2 of 4 disks cannot also hold the other two's.
    let trace = Trace {
        t_ns: vec![0],
        offset: vec![300_000_000_000],
        bytes: vec![4096],
        ..Trace::default()
    };
    let e = simulate(&array(4), &paraid(None), &trace, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("replicas do not fit") && e.contains("at most 2/4"),
        "{e}"
    );
}

#[test]
fn paraid_copies_back_what_was_written_while_a_disk_was_off_when_it_comes_back() {
    // Quiet (a request a minute) until the array shifts down, ten 256 KiB writes, then a busy
    // stretch that shifts it back up: disks 2 and 3 first catch up on their halves of them.
    let quick = ParaidParams {
        long_s: 5.0,
        min_dwell_s: 10.0,
        ..ParaidParams::default()
    };
    let mut trace = Trace::default();
    for k in 0..10u64 {
        trace.t_ns.push(k * 60_000_000_000);
        trace.offset.push(k * (1 << 20));
        trace.bytes.push(4096);
        trace.write.push(false);
    }
    for k in 0..10u64 {
        trace.t_ns.push(600_000_000_000 + k * 1_000_000_000);
        trace.offset.push(k * (256 << 10));
        trace.bytes.push(256 << 10);
        trace.write.push(true);
    }
    let from = trace.len();
    load(&mut trace, 700, 120, 3);
    trace.write.resize(trace.len(), false);
    assert!(trace.len() > from);
    let run = simulate(&array(4), &Spec::Paraid(quick.clone()), &trace, 4).unwrap();
    let shifts: Vec<usize> = run.gears.iter().map(|g| g.1).collect();
    assert_eq!(shifts, vec![4, 2, 4], "{:?}", run.gears);
    assert!(run.gears[1].0 < 600_000_000_000, "down before the writes");
    assert_eq!(
        run.synced_bytes,
        10 * (128 << 10),
        "disks 2 and 3's halves of each write"
    );
    // The same requests as reads leave nothing to copy back.
    trace.write.iter_mut().for_each(|w| *w = false);
    let reads = simulate(&array(4), &Spec::Paraid(quick), &trace, 4).unwrap();
    assert_eq!(reads.synced_bytes, 0);
}
