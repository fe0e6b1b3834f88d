//! The task-packing simulator against closed forms and the study's expected shape.

use iowatt_sim::tasks::{simulate, Config, Disk, Node, TaskType};

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
    Disk {
        seq_mb_s: 100.0,
        switch_s: 0.012,
        slice_mb: 0.128,
        active_w: 4.0,
    }
}

fn ssd() -> Disk {
    Disk {
        seq_mb_s: 250.0,
        switch_s: 0.0001,
        slice_mb: 0.128,
        active_w: 2.0,
    }
}

fn analysis() -> TaskType {
    TaskType {
        name: "analysis".into(),
        cpu_s: 60.0,
        input_mb: 360.0,
        memory_gb: 0.4,
    }
}

fn simulation() -> TaskType {
    TaskType {
        name: "simulation".into(),
        cpu_s: 100.0,
        input_mb: 0.0,
        memory_gb: 0.9,
    }
}

fn config(disk: Disk, queue: Vec<usize>, per_core: usize) -> Config {
    Config {
        node: node(disk),
        types: vec![analysis(), simulation()],
        queue,
        per_core,
        nodes: 1,
        chunk_mb: 4.0,
    }
}

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * b.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn one_task_alone_takes_its_profiles_time_and_energy() {
    let run = simulate(&config(hdd(), vec![0], 1)).unwrap();
    // 360 MB at 100 MB/s, then (interleaved) 60 s of CPU on a free core.
    close(run.makespan_s, 3.6 + 60.0, 1e-9);
    // Idle throughout, a core while computing, the disk while reading.
    close(run.energy_j, 150.0 * 63.6 + 15.0 * 60.0 + 4.0 * 3.6, 1e-9);
    close(run.wh_per_job, run.energy_j / 3600.0, 1e-12);
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
fn an_io_bound_set_on_the_hdd_gains_from_k_only_as_the_disk_model_says() {
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
    let x8 = c.node.disk.rate_mb_s(8);
    close(eight.makespan_s, 8.0 * 360.0 / x8, 1e-6); // eight streams thrash
    assert!(x8 < 10.0, "128 KiB slices and 12 ms switches: {x8} MB/s");
}

#[test]
fn the_studys_shape_on_io_cpu_and_mixed_sets() {
    let io: Vec<usize> = vec![0; 48];
    let cpu: Vec<usize> = vec![1; 32];
    let mixed: Vec<usize> = (0..16).flat_map(|_| [0, 0, 0, 1, 1]).collect();
    let run = |disk: Disk, q: &[usize], k: usize| {
        let mut c = config(disk, q.to_vec(), k);
        // CFQ-like slices: 8 MB per stream switch, so multitasking keeps the disk streaming.
        c.node.disk.slice_mb = 8.0;
        simulate(&c).unwrap()
    };
    // Multitasking raises throughput and lowers energy per job on the I/O set.
    let (a, b) = (run(hdd(), &io, 1), run(hdd(), &io, 2));
    assert!(b.jobs_per_h > a.jobs_per_h && b.wh_per_job < a.wh_per_job);
    // The SSD helps the I/O set a lot, the mixed set a little, the CPU set barely, never hurts.
    let gain = |q: &[usize]| run(ssd(), q, 1).jobs_per_h / run(hdd(), q, 1).jobs_per_h - 1.0;
    let (g_io, g_mixed, g_cpu) = (gain(&io), gain(&mixed), gain(&cpu));
    assert!(
        g_io > g_mixed && g_mixed > g_cpu && g_cpu >= 0.0,
        "{g_io} {g_mixed} {g_cpu}"
    );
    // A faster disk raises average power a little but lowers energy per job.
    let (h, s) = (run(hdd(), &io, 1), run(ssd(), &io, 1));
    assert!(s.wh_per_job < h.wh_per_job);
    // Mixing (the mixed set is the I/O and CPU sets' tasks interleaved) beats running them
    // back to back.
    assert_eq!(mixed.len(), io.len() + cpu.len());
    let apart = run(hdd(), &io, 1).makespan_s + run(hdd(), &cpu, 1).makespan_s;
    assert!(run(hdd(), &mixed, 1).makespan_s < apart);
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
    let mut c = config(hdd(), (0..200).map(|i| i % 2).collect(), 2);
    c.nodes = 4;
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
