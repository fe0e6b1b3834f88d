//! The simulation proper: nodes of processor-sharing CPU and disk stations, one batch queue.

use super::{Config, TasksError};
use crate::EventQueue;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Read,
    Compute,
}

#[derive(Debug, Clone)]
struct Task {
    id: usize,
    ty: usize,
    phase: Phase,
    /// MB left to read, or CPU seconds left, in the current chunk.
    left: f64,
    /// Input MB not yet read (beyond the current chunk), and the current chunk's MB.
    unread: f64,
    chunk: f64,
    start_s: f64,
}

#[derive(Debug, Default)]
struct Node {
    tasks: Vec<Task>,
    /// The time the node's state was last brought up to.
    at_s: f64,
    energy_j: f64,
    /// Invalidates a queued event when the node changed before it came.
    generation: u64,
}

/// What happened to one task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskRecord {
    pub ty: usize,
    pub node: usize,
    pub start_s: f64,
    pub end_s: f64,
}

#[derive(Debug, Clone, Default)]
pub struct TasksRun {
    pub makespan_s: f64,
    pub jobs_per_h: f64,
    pub avg_w: f64,
    pub wh_per_job: f64,
    pub energy_j: f64,
    pub tasks: Vec<TaskRecord>,
}

/// Event times are kept in ns for the shared queue; the fluid arithmetic is in seconds.
fn ns(s: f64) -> u64 {
    (s * 1e9).ceil() as u64
}

struct Sim<'a> {
    c: &'a Config,
    nodes: Vec<Node>,
    next_task: usize,
    records: Vec<TaskRecord>,
    events: EventQueue<(usize, u64)>,
}

impl Sim<'_> {
    /// (tasks computing, tasks reading) on node `n`.
    fn load(&self, n: usize) -> (usize, usize) {
        let tasks = &self.nodes[n].tasks;
        let computing = tasks.iter().filter(|t| t.phase == Phase::Compute).count();
        (computing, tasks.len() - computing)
    }

    /// (per-task CPU rate in cores, per-task read rate in MB/s) for a node's load.
    fn rates(&self, (computing, reading): (usize, usize)) -> (f64, f64) {
        let cpu = if computing > 0 {
            self.c.node.capacity(computing) / computing as f64
        } else {
            0.0
        };
        let disk = if reading > 0 {
            self.c.node.disk.rate_mb_s(reading) / reading as f64
        } else {
            0.0
        };
        (cpu, disk)
    }

    fn power_w(&self, (computing, reading): (usize, usize)) -> f64 {
        let node = &self.c.node;
        node.idle_w
            + node.core_w * node.capacity(computing)
            + if reading > 0 { node.disk.active_w } else { 0.0 }
    }

    /// Brings node `n` up to `t`: every task's work done meanwhile, and the energy spent.
    fn advance(&mut self, n: usize, t: f64) {
        let dt = t - self.nodes[n].at_s;
        if dt > 0.0 {
            let load = self.load(n);
            let (cpu, disk) = self.rates(load);
            let w = self.power_w(load);
            let node = &mut self.nodes[n];
            node.energy_j += w * dt;
            for task in &mut node.tasks {
                let rate = if task.phase == Phase::Compute {
                    cpu
                } else {
                    disk
                };
                task.left -= rate * dt;
            }
        }
        self.nodes[n].at_s = t;
    }

    /// Starts the next queued task on node `n`, if any.
    fn start(&mut self, n: usize, t: f64) -> bool {
        let Some(&ty) = self.c.queue.get(self.next_task) else {
            return false;
        };
        let id = self.next_task;
        self.next_task += 1;
        let kind = &self.c.types[ty];
        let mut task = Task {
            id,
            ty,
            phase: Phase::Compute,
            left: kind.cpu_s,
            unread: kind.input_mb,
            chunk: 0.0,
            start_s: t,
        };
        if kind.input_mb > 0.0 {
            let chunk = self.c.chunk_mb.min(kind.input_mb);
            task.phase = Phase::Read;
            task.left = chunk;
            task.chunk = chunk;
            task.unread = kind.input_mb - chunk;
        }
        self.nodes[n].tasks.push(task);
        true
    }

    /// Moves finished phases on: a chunk read → its share of the CPU; a chunk computed → the
    /// next chunk, or the task done (and the next queued task started in its slot).
    fn step(&mut self, n: usize, t: f64) {
        let c = self.c;
        let mut i = 0;
        let mut freed = 0;
        while i < self.nodes[n].tasks.len() {
            let task = &mut self.nodes[n].tasks[i];
            // Relative tolerance: the fluid arithmetic leaves crumbs of 1e-12.
            if task.left > 1e-9 {
                i += 1;
                continue;
            }
            let kind = &c.types[task.ty];
            let share = |mb: f64| {
                if kind.input_mb > 0.0 {
                    kind.cpu_s * mb / kind.input_mb
                } else {
                    kind.cpu_s
                }
            };
            match task.phase {
                Phase::Read => {
                    task.phase = Phase::Compute;
                    task.left = share(task.chunk);
                    i += 1;
                }
                Phase::Compute if task.unread > 0.0 => {
                    let chunk = c.chunk_mb.min(task.unread);
                    task.phase = Phase::Read;
                    task.left = chunk;
                    task.chunk = chunk;
                    task.unread -= chunk;
                    i += 1;
                }
                Phase::Compute => {
                    let done = self.nodes[n].tasks.swap_remove(i);
                    self.records[done.id] = TaskRecord {
                        ty: done.ty,
                        node: n,
                        start_s: done.start_s,
                        end_s: t,
                    };
                    freed += 1;
                }
            }
        }
        for _ in 0..freed {
            self.start(n, t);
        }
    }

    /// Queues node `n`'s next completion.
    fn schedule(&mut self, n: usize) {
        let (cpu, disk) = self.rates(self.load(n));
        let node = &mut self.nodes[n];
        node.generation += 1;
        let next = node
            .tasks
            .iter()
            .map(|t| {
                let rate = if t.phase == Phase::Compute { cpu } else { disk };
                if t.left <= 0.0 {
                    0.0
                } else if rate > 0.0 {
                    t.left / rate
                } else {
                    f64::INFINITY
                }
            })
            .fold(f64::INFINITY, f64::min);
        if next.is_finite() {
            let at = node.at_s + next;
            self.events.at(ns(at), (n, node.generation));
        }
    }
}

/// Runs the queue on the nodes, `per_core` tasks per core each, until every task is done.
pub fn simulate(c: &Config) -> Result<TasksRun, TasksError> {
    c.check()?;
    let peak = c.peak_memory_gb();
    if peak > c.node.memory_gb {
        return Err(TasksError::Invalid(format!(
            "{} tasks per core run out of memory: {} at once can hold {peak:.1} GB, the node has {} GB",
            c.per_core,
            c.slots(),
            c.node.memory_gb
        )));
    }
    let mut sim = Sim {
        c,
        nodes: (0..c.nodes).map(|_| Node::default()).collect(),
        next_task: 0,
        records: vec![
            TaskRecord {
                ty: 0,
                node: 0,
                start_s: 0.0,
                end_s: 0.0
            };
            c.queue.len()
        ],
        events: EventQueue::with_capacity(c.nodes),
    };
    // Slots fill node by node in turn, as a batch system hands out free slots.
    for _ in 0..c.slots() {
        for n in 0..c.nodes {
            sim.start(n, 0.0);
        }
    }
    for n in 0..c.nodes {
        sim.schedule(n);
    }
    let mut end = 0.0f64;
    while let Some((at_ns, (n, generation))) = sim.events.next() {
        if generation != sim.nodes[n].generation {
            continue;
        }
        let t = (at_ns as f64 / 1e9).max(sim.nodes[n].at_s);
        sim.advance(n, t);
        sim.step(n, t);
        end = end.max(t);
        sim.schedule(n);
    }
    // Every node draws at least its idle power until the last task ends.
    for n in 0..c.nodes {
        sim.advance(n, end);
    }
    let energy: f64 = sim.nodes.iter().map(|n| n.energy_j).sum();
    let jobs = c.queue.len() as f64;
    Ok(TasksRun {
        makespan_s: end,
        jobs_per_h: if end > 0.0 { jobs * 3600.0 / end } else { 0.0 },
        avg_w: if end > 0.0 { energy / end } else { 0.0 },
        wh_per_job: if jobs > 0.0 {
            energy / 3600.0 / jobs
        } else {
            0.0
        },
        energy_j: energy,
        tasks: sim.records,
    })
}
