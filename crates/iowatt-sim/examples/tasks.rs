//! The task-packing simulator on a cluster: `tasks [NODES] [TASKS]` runs a mixed set (3
//! analysis : 2 simulation) two per core, the analysis tasks reading scattered 128 KiB
//! requests from a 7200 rpm disk under CFQ, and prints the metrics and the wall time.

use std::time::Instant;

use iowatt_sim::disk::DiskModel;
use iowatt_sim::tasks::{simulate, Config, Disk, Node, Pattern, RequestDisk, Scheduler, TaskType};

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a count"));
    let nodes = args.next().unwrap_or(1000);
    let tasks = args.next().unwrap_or(100_000);
    let models: std::collections::HashMap<String, DiskModel> =
        toml::from_str(include_str!("../../../python/iowatt/sim/disks.toml"))
            .expect("the shipped models parse");
    let task = |name: &str, cpu_s, input_mb, memory_gb| TaskType {
        name: name.into(),
        cpu_s,
        input_mb,
        memory_gb,
        request_kb: 128.0,
        pattern: Pattern::Scattered,
    };
    let config = Config {
        node: Node {
            cores: 8,
            ht_gain: 0.25,
            memory_gb: 16.0,
            idle_w: 142.0,
            core_w: 12.5,
            disk: Disk::Requests(Box::new(RequestDisk {
                model: models["barracuda-es2"].clone(),
                scheduler: Scheduler::Cfq {
                    slice_ms: 100.0,
                    idle_ms: 8.0,
                },
                readahead_kb: 128.0,
                drive_read_ahead: true,
            })),
        },
        types: vec![
            task("analysis", 80.4, 360.0, 0.37),
            task("simulation", 449.0, 0.0, 0.86),
        ],
        queue: (0..tasks).map(|i| usize::from(i % 5 >= 3)).collect(),
        per_core: 2,
        nodes,
        chunk_mb: 4.0,
        spread: 0.1,
        seed: 1,
    };
    let start = Instant::now();
    let run = simulate(&config).expect("runs");
    let took = start.elapsed().as_secs_f64();
    println!(
        "{nodes} nodes, {tasks} tasks: makespan {:.0} s, {:.0} tasks/h, {:.0} W, {} requests \
         ({:.1} M/s) in {took:.2} s",
        run.makespan_s,
        tasks as f64 * 3600.0 / run.makespan_s,
        run.energy_j / run.makespan_s,
        run.requests,
        run.requests as f64 / took / 1e6,
    );
}
