//! The task-packing simulator against closed forms: the fluid disk of earlier versions, and the
//! disk serving requests — its accounting, CFQ's idle window, the command queue, the tasks'
//! spread and seeds.

use iowatt_sim::disk::{DiskModel, Kind, Power};
use iowatt_sim::tasks::{
    simulate, Config, Disk, FluidDisk, Node, Pattern, RequestDisk, Scheduler, TaskType, TasksRun,
};

fn node(disk: Disk) -> Node {
    Node {
        cores: 8,
        ht_gain: 0.25,
        memory_gb: 16.0,
        idle_w: 150.0,
        core_w: 15.0,
        disk,
    }
}

/// A 7200 rpm disk: 100 MB/s alone; 12 ms per switch between streams, 128 KiB readahead.
fn hdd() -> Disk {
    Disk::Fluid(FluidDisk {
        seq_mb_s: 100.0,
        switch_s: 0.012,
        slice_mb: 0.128,
        active_w: 4.0,
    })
}

fn task(name: &str, cpu_s: f64, input_mb: f64, memory_gb: f64) -> TaskType {
    TaskType {
        name: name.into(),
        cpu_s,
        input_mb,
        memory_gb,
        request_kb: 128.0,
        pattern: Pattern::Sequential,
    }
}

fn analysis() -> TaskType {
    task("analysis", 60.0, 360.0, 0.4)
}

fn simulation() -> TaskType {
    task("simulation", 100.0, 0.0, 0.9)
}

fn config(disk: Disk, queue: Vec<usize>, per_core: usize) -> Config {
    Config {
        node: node(disk),
        types: vec![analysis(), simulation()],
        queue,
        per_core,
        nodes: 1,
        chunk_mb: 4.0,
        spread: 0.0,
        seed: 1,
    }
}

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * b.abs().max(1.0), "{a} vs {b}");
}

fn w(w: f64) -> Power {
    Power {
        w: Some(w),
        a12: None,
        a5: None,
    }
}

/// The RAID tests' round numbers (100 GB, 100 MB/s at the outer edge, 0.5 ms a request, 12 W
/// busy, 8 W idle) at another speed and seek curve.
fn model(rpm: u32, [track, avg, full]: [f64; 3]) -> DiskModel {
    DiskModel {
        rpm,
        seek_track_ms: track,
        seek_avg_ms: avg,
        seek_full_ms: full,
        ..super::raid::model()
    }
}

fn served(model: DiskModel, scheduler: Scheduler) -> Disk {
    Disk::Requests(Box::new(RequestDisk {
        model,
        scheduler,
        readahead_kb: 128.0,
        drive_read_ahead: true,
    }))
}

fn cfq(idle_ms: f64) -> Scheduler {
    Scheduler::Cfq {
        slice_ms: 100.0,
        idle_ms,
    }
}

#[test]
fn one_task_alone_takes_its_profiles_time_and_energy() {
    let run = simulate(&config(hdd(), vec![0], 1)).unwrap();
    // 360 MB at 100 MB/s, then (interleaved) 60 s of CPU on a free core.
    close(run.makespan_s, 3.6 + 60.0, 1e-9);
    // Idle throughout, a core while computing, the disk while reading.
    close(run.energy_j, 150.0 * 63.6 + 15.0 * 60.0 + 4.0 * 3.6, 1e-9);
}

#[test]
fn a_cpu_bound_set_scales_with_cores_and_with_k_only_as_far_as_hyper_threading() {
    let sixteen = vec![1; 16];
    let k1 = simulate(&config(hdd(), sixteen.clone(), 1)).unwrap();
    let k2 = simulate(&config(hdd(), sixteen.clone(), 2)).unwrap();
    let k3 = simulate(&config(hdd(), sixteen, 3)).unwrap();
    close(k1.makespan_s, 200.0, 1e-9); // two rounds of 8 on 8 cores
    close(k2.makespan_s, 16.0 * 100.0 / 10.0, 1e-9); // 16 at once on 8 + 8 × 0.25 cores
    close(k3.makespan_s, k2.makespan_s, 1e-9); // no more threads than that to gain from
}

#[test]
fn an_io_bound_set_on_a_fluid_disk_gains_from_k_only_as_its_rate_says() {
    let mut c = config(hdd(), vec![0; 8], 1);
    c.types[0].cpu_s = 0.0; // pure reads: the disk decides
    let one = {
        let mut solo = c.clone();
        solo.node.cores = 1;
        simulate(&solo).unwrap()
    };
    let eight = simulate(&c).unwrap();
    // Events fall on whole nanoseconds: a few ns over 90 chunks each.
    close(one.makespan_s, 8.0 * 360.0 / 100.0, 1e-6); // one stream at a time
    let Disk::Fluid(d) = &c.node.disk else {
        unreachable!()
    };
    let x8 = d.rate_mb_s(8);
    close(eight.makespan_s, 8.0 * 360.0 / x8, 1e-6); // eight streams thrash
    assert!(x8 < 10.0, "128 KiB slices and 12 ms switches: {x8} MB/s");
}

#[test]
fn a_sequential_read_is_charged_request_by_request_and_the_disk_draws_its_own_power() {
    let m = model(6000, [1.0, 4.0, 10.0]);
    let mut c = config(served(m.clone(), cfq(8.0)), vec![0], 1);
    c.types[0] = task("reader", 10.0, 4.0, 0.1);
    let run = simulate(&c).unwrap();
    // 4 MB in requests of the 128 KiB readahead: 30 whole and 67,840 bytes; each starts where
    // the last ended, so none seeks or waits for the platter, from the first at byte 0.
    let mut busy = 0.0;
    let mut at = 0u64;
    for bytes in std::iter::repeat_n(131_072u64, 30).chain([67_840]) {
        let s = m.charge(at, at, bytes, 0.0);
        assert_eq!((s.seek_s, s.rotation_s), (0.0, 0.0));
        busy += (s.total_s() * 1e9).round() / 1e9;
        at += bytes;
    }
    assert_eq!(run.requests, 31);
    close(run.disk_busy_s, busy, 1e-12);
    close(run.makespan_s, busy + 10.0, 1e-9);
    // The node without its disk idles at 150 W, one core computes 10 s at 15 W; the disk
    // draws its model's 12 W serving and 8 W idle.
    let disk_j = 12.0 * busy + 8.0 * 10.0;
    close(run.disk_j, disk_j, 1e-9);
    close(
        run.energy_j,
        150.0 * run.makespan_s + 15.0 * 10.0 + disk_j,
        1e-9,
    );
    close(run.core_busy_s, 10.0, 1e-9);
}

#[test]
fn the_idle_draw_of_each_disk_shows_in_a_set_that_never_reads() {
    let hdd = model(7200, [1.0, 8.5, 17.0]);
    let mut ssd = hdd.clone();
    ssd.kind = Kind::Ssd;
    ssd.idle = w(0.075);
    ssd.standby = w(0.075);
    let energy = |m: DiskModel| simulate(&config(served(m, cfq(8.0)), vec![1; 8], 1)).unwrap();
    let (h, s) = (energy(hdd), energy(ssd));
    close(h.makespan_s, 100.0, 1e-9);
    close(h.energy_j - s.energy_j, (8.0 - 0.075) * 100.0, 1e-9);
}

/// Two tasks reading 100 chunks of one request each, thinking `think_s` on each; one core
/// (no hyper-threading), fast seeks and turns: their files are 13 MB apart.
fn thinkers(idle_ms: f64, think_s: f64, per_core: usize) -> TasksRun {
    let m = model(60_000, [0.1, 0.5, 1.0]);
    let mut c = config(served(m, cfq(idle_ms)), vec![0, 0], per_core);
    c.node.cores = 1;
    c.node.ht_gain = 0.0;
    c.chunk_mb = 0.131_072;
    c.types[0] = task("thinker", 100.0 * think_s, 100.0 * c.chunk_mb, 0.1);
    simulate(&c).unwrap()
}

#[test]
fn cfq_idling_forfeits_what_k_2_gains_once_the_idle_window_passes_the_think_time() {
    let think_s = 0.005;
    let k1 = thinkers(8.0, think_s, 1).makespan_s;
    // A window shorter than the tasks' think time: CFQ learns not to idle for them, the disk
    // serves one while the other computes, and two per core overlap reading and computing.
    let short = thinkers(0.8 * think_s * 1e3, think_s, 2).makespan_s;
    assert!(
        short < 0.9 * k1,
        "k = 2 with a short window: {short} s against {k1} s"
    );
    // A longer window: CFQ idles through each think while the other task waits for the slice
    // to end, so the two overlap only across the ends of the 100 ms slices, at most a think
    // each.
    let long = thinkers(1.2 * think_s * 1e3, think_s, 2).makespan_s;
    let slices = (k1 / 0.1).ceil() + 1.0;
    assert!(
        long >= k1 - slices * think_s,
        "k = 2 with a long window: {long} s against {k1} s"
    );
}

/// 16 tasks reading 40 MB each in scattered 64 KiB requests, no CPU, on a 1 GB disk whose
/// platters turn fast: the seeks between their files are what the order of service decides.
fn scattered(scheduler: Scheduler, seed: u64) -> TasksRun {
    let mut m = model(60_000, [1.0, 8.5, 17.0]);
    m.capacity_gb = 1.0;
    let mut c = config(served(m, scheduler), vec![0; 16], 2);
    c.types[0] = TaskType {
        pattern: Pattern::Scattered,
        request_kb: 64.0,
        ..task("scattered", 0.0, 40.0, 0.1)
    };
    c.seed = seed;
    simulate(&c).unwrap()
}

#[test]
fn a_deeper_command_queue_or_a_sorting_scheduler_shortens_the_seeks() {
    let fifo = scattered(Scheduler::None { ncq_depth: 1 }, 1).makespan_s;
    let ncq = scattered(Scheduler::None { ncq_depth: 32 }, 1).makespan_s;
    let deadline = scattered(Scheduler::Deadline, 1).makespan_s;
    assert!(ncq < 0.95 * fifo, "NCQ {ncq} s, FIFO {fifo} s");
    assert!(
        deadline < 0.95 * fifo,
        "deadline {deadline} s, FIFO {fifo} s"
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let a = scattered(cfq(8.0), 7);
    let b = scattered(cfq(8.0), 7);
    assert_eq!(a.makespan_s.to_bits(), b.makespan_s.to_bits());
    assert_eq!(a.energy_j.to_bits(), b.energy_j.to_bits());
    assert_eq!(a.tasks, b.tasks);
    assert_ne!(scattered(cfq(8.0), 8).makespan_s, a.makespan_s);
}

#[test]
fn each_task_draws_its_cpu_time_within_the_spread_of_its_types() {
    let mut c = config(hdd(), vec![1; 8], 1);
    let lengths = |c: &Config| -> Vec<f64> {
        let run = simulate(c).unwrap();
        run.tasks.iter().map(|t| t.end_s - t.start_s).collect()
    };
    assert!(lengths(&c).iter().all(|&s| (s - 100.0).abs() < 1e-9));
    c.spread = 0.2;
    let drawn = lengths(&c);
    assert!(
        drawn.iter().all(|&s| (80.0..=120.0).contains(&s)),
        "{drawn:?}"
    );
    let distinct: std::collections::BTreeSet<u64> = drawn.iter().map(|s| s.to_bits()).collect();
    assert_eq!(distinct.len(), 8, "every task draws its own: {drawn:?}");
    c.spread = 1.5;
    let e = simulate(&c).unwrap_err().to_string();
    assert!(e.contains("--task-spread 1.5"), "{e}");
}

#[test]
fn too_many_tasks_per_core_run_out_of_memory() {
    // 0.9 GB each: 16 slots hold 14.4 GB of 16; 24 would need 21.6.
    let c = config(hdd(), vec![1; 24], 2);
    assert!(simulate(&c).is_ok());
    let e = simulate(&config(hdd(), vec![1; 24], 3))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run out of memory") && e.contains("16 GB"),
        "{e}"
    );
}

#[test]
fn a_cluster_shares_one_queue_and_the_same_input_gives_the_same_run() {
    let m = model(7200, [1.0, 8.5, 17.0]);
    let mut c = config(served(m, cfq(8.0)), (0..200).map(|i| i % 2).collect(), 2);
    c.types[0].input_mb = 40.0;
    c.nodes = 4;
    c.spread = 0.1;
    let a = simulate(&c).unwrap();
    let b = simulate(&c).unwrap();
    assert_eq!(a.makespan_s.to_bits(), b.makespan_s.to_bits());
    assert_eq!(a.tasks, b.tasks);
    let used: std::collections::BTreeSet<usize> = a.tasks.iter().map(|t| t.node).collect();
    assert_eq!(used.len(), 4, "every node pulled from the queue");
    c.nodes = 1;
    let alone = simulate(&c).unwrap();
    assert!(a.makespan_s < alone.makespan_s / 3.0);
}

#[test]
fn a_run_of_centuries_ends_and_one_past_the_clock_is_refused() {
    // At 4·10⁹ s the clock's f64 seconds resolve 0.5 µs: a step still moves it forward.
    let mut c = config(hdd(), vec![1, 1], 1);
    c.types[1].cpu_s = 4e9;
    close(simulate(&c).unwrap().makespan_s, 4e9, 1e-12);
    c.types[1].cpu_s = 1e300;
    let e = simulate(&c).unwrap_err().to_string();
    assert!(e.contains("CPU seconds are more than"), "{e}");
}
