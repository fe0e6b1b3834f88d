//! The task-packing simulator on a cluster: `tasks [NODES] [TASKS]` runs a mixed set (3
//! analysis : 2 simulation) two per core and prints the metrics and the wall time.

use std::time::Instant;

use iowatt_sim::tasks::{simulate, Config, Disk, Node, TaskType};

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a count"));
    let nodes = args.next().unwrap_or(1000);
    let tasks = args.next().unwrap_or(100_000);
    let config = Config {
        node: Node {
            cores: 8,
            ht_gain: 0.25,
            memory_gb: 16.0,
            idle_w: 150.0,
            core_w: 15.0,
            disk: Disk {
                seq_mb_s: 100.0,
                switch_s: 0.012,
                slice_mb: 8.0,
                active_w: 4.0,
            },
        },
        types: vec![
            TaskType {
                name: "analysis".into(),
                cpu_s: 99.0,
                input_mb: 360.0,
                memory_gb: 0.37,
            },
            TaskType {
                name: "simulation".into(),
                cpu_s: 449.0,
                input_mb: 0.0,
                memory_gb: 0.86,
            },
        ],
        queue: (0..tasks).map(|i| usize::from(i % 5 >= 3)).collect(),
        per_core: 2,
        nodes,
        chunk_mb: 4.0,
    };
    let start = Instant::now();
    let run = simulate(&config).expect("runs");
    println!(
        "{nodes} nodes, {tasks} tasks: makespan {:.0} s, {:.0} jobs/h, {:.0} W, {:.2} Wh/job in {:.2} s",
        run.makespan_s,
        run.jobs_per_h,
        run.avg_w,
        run.wh_per_job,
        start.elapsed().as_secs_f64()
    );
}
