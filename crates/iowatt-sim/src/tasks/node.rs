//! The simulation proper: nodes of a processor-sharing CPU and a disk serving requests, one
//! batch queue.

use iowatt_metrics::Rng;

use super::{Config, Disk, Pattern, RequestDisk, Scheduler, TasksError};
use crate::disk::{self, Discipline, DiskModel, Kind, State};
use crate::EventQueue;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Read,
    Compute,
}

/// One task's own draw of its type's profile.
#[derive(Debug, Clone, Copy)]
struct Drawn {
    cpu_s: f64,
    input_mb: f64,
}

#[derive(Debug, Clone)]
struct Task {
    id: usize,
    ty: usize,
    drawn: Drawn,
    phase: Phase,
    /// CPU seconds left in the current chunk; a fluid disk's MB left to read in it.
    left: f64,
    /// Input MB not yet in a chunk, and the current chunk's MB.
    unread: f64,
    chunk: f64,
    /// Bytes of the chunk not yet read, and those of the request at the disk.
    chunk_left: u64,
    asked: u64,
    /// Where the task's input file starts on the disk, its bytes and how far it has read.
    file: u64,
    file_bytes: u64,
    read: u64,
    start_s: f64,
}

/// What a node's disk serving requests keeps besides the disk itself.
struct Drive {
    spec: RequestDisk,
    disk: disk::Disk<usize>,
    /// Where the next task's input file goes, bytes.
    cursor: u64,
    /// Scattered offsets.
    rng: Rng,
    /// A request is being served (the disk stays busy until its next is started).
    serving: bool,
}

#[derive(Default)]
struct Node {
    tasks: Vec<Task>,
    /// The time the node's state was last brought up to.
    at_s: f64,
    /// Idle, cores and a fluid disk's active draw (a served disk's energy is its own).
    energy_j: f64,
    core_s: f64,
    fluid_busy_s: f64,
    /// Invalidates a queued CPU event when the node changed before it came.
    generation: u64,
    /// When the queued CPU event comes, exactly (its ns are rounded up).
    cpu_at_s: f64,
    drive: Option<Drive>,
}

/// What happened to one task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskRecord {
    pub ty: usize,
    pub node: usize,
    pub start_s: f64,
    pub end_s: f64,
}

/// A run's figures, summed over the nodes.
#[derive(Debug, Clone, Default)]
pub struct TasksRun {
    pub makespan_s: f64,
    pub energy_j: f64,
    /// The disks' share of `energy_j`.
    pub disk_j: f64,
    /// Seconds the disks were serving, and busy core-seconds (a core with a task on it).
    pub disk_busy_s: f64,
    pub core_busy_s: f64,
    pub requests: u64,
    pub tasks: Vec<TaskRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The node's next CPU (or fluid disk) completion, if its generation still holds.
    Cpu(u64),
    /// The disk's request is done.
    Served,
    /// The disk's CFQ idle window ended.
    Wake,
}

/// Event times are kept in ns for the shared queue; the fluid arithmetic is in seconds.
fn ns(s: f64) -> u64 {
    (s * 1e9).ceil() as u64
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

struct Sim<'a> {
    c: &'a Config,
    drawn: Vec<Drawn>,
    nodes: Vec<Node>,
    next_task: usize,
    records: Vec<TaskRecord>,
    events: EventQueue<(usize, Event)>,
    requests: u64,
}

impl Sim<'_> {
    /// (tasks computing, tasks reading a fluid disk) on node `n`.
    fn load(&self, n: usize) -> (usize, usize) {
        let tasks = &self.nodes[n].tasks;
        let computing = tasks.iter().filter(|t| t.phase == Phase::Compute).count();
        let fluid = match self.c.node.disk {
            Disk::Fluid(_) => tasks.len() - computing,
            Disk::Requests(_) => 0,
        };
        (computing, fluid)
    }

    /// (per-task CPU rate in cores, per-task fluid read rate in MB/s) for a node's load.
    fn rates(&self, (computing, reading): (usize, usize)) -> (f64, f64) {
        let cpu = if computing > 0 {
            self.c.node.capacity(computing) / computing as f64
        } else {
            0.0
        };
        let disk = match &self.c.node.disk {
            Disk::Fluid(d) if reading > 0 => d.rate_mb_s(reading) / reading as f64,
            _ => 0.0,
        };
        (cpu, disk)
    }

    /// Brings node `n` up to `t`: every task's work done meanwhile, and the energy spent.
    fn advance(&mut self, n: usize, t: f64) {
        let dt = t - self.nodes[n].at_s;
        if dt > 0.0 {
            let load = self.load(n);
            let (cpu, disk) = self.rates(load);
            let node_c = &self.c.node;
            let cores = node_c.capacity(load.0);
            let mut w = node_c.idle_w + node_c.core_w * cores;
            if let Disk::Fluid(d) = &node_c.disk {
                if load.1 > 0 {
                    w += d.active_w;
                }
            }
            let node = &mut self.nodes[n];
            node.energy_j += w * dt;
            node.core_s += load.0.min(node_c.cores) as f64 * dt;
            if load.1 > 0 {
                node.fluid_busy_s += dt;
            }
            for task in &mut node.tasks {
                match task.phase {
                    Phase::Compute => task.left -= cpu * dt,
                    Phase::Read if disk > 0.0 => task.left -= disk * dt,
                    Phase::Read => {}
                }
            }
        }
        self.nodes[n].at_s = t;
    }

    /// CPU seconds for `mb` of a task's input (all of them for a task without input).
    fn cpu_share(task: &Task, mb: f64) -> f64 {
        if task.drawn.input_mb > 0.0 {
            task.drawn.cpu_s * mb / task.drawn.input_mb
        } else {
            task.drawn.cpu_s
        }
    }

    /// Starts the task's next chunk: a fluid read, or its first request to the disk.
    fn read_chunk(&mut self, n: usize, i: usize, now: u64) {
        let task = &mut self.nodes[n].tasks[i];
        let chunk = self.c.chunk_mb.min(task.unread);
        task.phase = Phase::Read;
        task.left = chunk;
        task.chunk = chunk;
        task.unread -= chunk;
        task.chunk_left = (chunk * 1e6).round().max(1.0) as u64;
        if self.nodes[n].drive.is_some() {
            self.ask(n, i, now);
        }
    }

    /// Queues the task's next request: the rest of its chunk, up to one request's size, next
    /// in the file or somewhere in it.
    fn ask(&mut self, n: usize, i: usize, now: u64) {
        let ty = &self.c.types[self.nodes[n].tasks[i].ty];
        let node = &mut self.nodes[n];
        let drive = node.drive.as_mut().expect("a served disk");
        let task = &mut node.tasks[i];
        let request = (ty.request_kb * 1024.0).round().max(1.0) as u64;
        let (unit, offset) = match ty.pattern {
            Pattern::Sequential => {
                let ahead = (drive.spec.readahead_kb * 1024.0).round() as u64;
                (request.max(ahead), task.file + task.read % task.file_bytes)
            }
            Pattern::Scattered => {
                let blocks = task.file_bytes.saturating_sub(request) / 4096 + 1;
                (request, task.file + drive.rng.below(blocks) * 4096)
            }
        };
        let bytes = unit.min(task.chunk_left);
        task.asked = bytes;
        drive
            .disk
            .push_from(now, task.id as u32, task.id, offset, bytes);
    }

    /// Gives the node's disk its next request, if it is free: schedules its completion, or
    /// the end of the idle window CFQ keeps for the slice's stream.
    fn serve(&mut self, n: usize, now: u64) {
        let drive = self.nodes[n].drive.as_mut().expect("a served disk");
        if drive.serving {
            return;
        }
        let (_, started) = drive.disk.start_next(&drive.spec.model, now, 1.0, || 1.0);
        drive.serving = started.is_some();
        if let Some(s) = started {
            self.events.at(s.done_ns, (n, Event::Served));
        } else if let Some(at) = drive.disk.waiting_until() {
            self.events.at(at, (n, Event::Wake));
        }
    }

    /// The disk's request is done: its task asks for the next, or computes on its chunk
    /// (true: the CPU's load changed).
    fn served(&mut self, n: usize, now: u64) -> bool {
        self.requests += 1;
        let drive = self.nodes[n].drive.as_mut().expect("a served disk");
        drive.serving = false;
        let id = drive
            .disk
            .take_serving()
            .expect("a request was being served");
        let i = self.nodes[n]
            .tasks
            .iter()
            .position(|t| t.id == id)
            .expect("a served task is running");
        let task = &mut self.nodes[n].tasks[i];
        task.chunk_left -= task.asked;
        task.read += task.asked;
        let computes = task.chunk_left == 0;
        if computes {
            task.phase = Phase::Compute;
            task.left = Self::cpu_share(task, task.chunk);
        } else {
            self.ask(n, i, now);
        }
        self.serve(n, now);
        computes
    }

    /// Starts the next queued task on node `n`, if any.
    fn start(&mut self, n: usize, t: f64) -> bool {
        let Some(&ty) = self.c.queue.get(self.next_task) else {
            return false;
        };
        let id = self.next_task;
        self.next_task += 1;
        let drawn = self.drawn[id];
        let file_bytes = (drawn.input_mb * 1e6).round() as u64;
        let file = match self.nodes[n].drive.as_mut() {
            Some(d) => {
                let capacity = d.spec.model.capacity_bytes();
                if d.cursor + file_bytes > capacity {
                    d.cursor = 0;
                }
                let at = d.cursor;
                d.cursor += file_bytes.div_ceil(4096) * 4096;
                at
            }
            None => 0,
        };
        let task = Task {
            id,
            ty,
            drawn,
            phase: Phase::Compute,
            left: drawn.cpu_s,
            unread: drawn.input_mb,
            chunk: 0.0,
            chunk_left: 0,
            asked: 0,
            file,
            file_bytes: file_bytes.max(1),
            read: 0,
            start_s: t,
        };
        self.nodes[n].tasks.push(task);
        if drawn.input_mb > 0.0 {
            let i = self.nodes[n].tasks.len() - 1;
            self.read_chunk(n, i, ns(t));
            if self.nodes[n].drive.is_some() {
                self.serve(n, ns(t));
            }
        }
        true
    }

    /// Moves finished phases on: a chunk computed → the next chunk, or the task done (and the
    /// next queued task started in its slot); a fluid chunk read → its share of the CPU.
    fn step(&mut self, n: usize, t: f64) {
        let mut i = 0;
        let mut freed = 0;
        let fluid = matches!(self.c.node.disk, Disk::Fluid(_));
        while i < self.nodes[n].tasks.len() {
            let task = &mut self.nodes[n].tasks[i];
            // Relative tolerance: the fluid arithmetic leaves crumbs of 1e-12.
            if task.left > 1e-9 || (task.phase == Phase::Read && !fluid) {
                i += 1;
                continue;
            }
            match task.phase {
                Phase::Read => {
                    task.phase = Phase::Compute;
                    task.left = Self::cpu_share(task, task.chunk);
                    i += 1;
                }
                Phase::Compute if task.unread > 0.0 => {
                    self.read_chunk(n, i, ns(t));
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
        if self.nodes[n].drive.is_some() {
            self.serve(n, ns(t));
        }
    }

    /// Queues node `n`'s next CPU (or fluid read) completion.
    fn schedule(&mut self, n: usize) {
        let (cpu, disk) = self.rates(self.load(n));
        let node = &mut self.nodes[n];
        node.generation += 1;
        let next = node
            .tasks
            .iter()
            .filter_map(|t| match t.phase {
                Phase::Compute => Some((t.left, cpu)),
                Phase::Read if disk > 0.0 => Some((t.left, disk)),
                Phase::Read => None,
            })
            .map(|(left, rate)| {
                if left <= 0.0 {
                    0.0
                } else if rate > 0.0 {
                    left / rate
                } else {
                    f64::INFINITY
                }
            })
            .fold(f64::INFINITY, f64::min);
        if next.is_finite() {
            // Always a step forward, though what is left be below the clock's resolution.
            let at = (node.at_s + next).max(node.at_s.next_up());
            node.cpu_at_s = at;
            self.events.at(ns(at), (n, Event::Cpu(node.generation)));
        }
    }
}

/// The discipline a scheduler gives the disk model.
fn discipline(scheduler: Scheduler, model: &DiskModel) -> Discipline {
    match scheduler {
        Scheduler::Cfq { slice_ms, idle_ms } => Discipline::Cfq {
            slice_ns: disk::ns(slice_ms / 1e3),
            idle_ns: if model.kind == Kind::Ssd {
                0
            } else {
                disk::ns(idle_ms / 1e3)
            },
        },
        Scheduler::Deadline => Discipline::Elevator,
        Scheduler::None { ncq_depth } => Discipline::Ncq { depth: ncq_depth },
    }
}

/// Each queued task's CPU time and input: its type's, times 1 ± spread drawn uniformly,
/// in queue order from the seed (so k, disks and nodes see the same tasks).
fn draw(c: &Config) -> Vec<Drawn> {
    let mut rng = Rng::stream(c.seed, 0);
    let mut factor = move || 1.0 + c.spread * (2.0 * rng.unit() - 1.0);
    c.queue
        .iter()
        .map(|&ty| {
            let t = &c.types[ty];
            let cpu_s = t.cpu_s * factor();
            let input_mb = t.input_mb * factor();
            Drawn { cpu_s, input_mb }
        })
        .collect()
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
    let drive = |n: usize| match &c.node.disk {
        Disk::Requests(spec) => {
            let disk = disk::Disk::new(Rng::stream(c.seed, 1 + 2 * n as u64))
                .with_discipline(discipline(spec.scheduler, &spec.model));
            let disk = if spec.drive_read_ahead {
                disk.with_read_ahead()
            } else {
                disk
            };
            Some(Drive {
                spec: RequestDisk::clone(spec),
                disk,
                cursor: 0,
                rng: Rng::stream(c.seed, 2 + 2 * n as u64),
                serving: false,
            })
        }
        Disk::Fluid(_) => None,
    };
    let mut sim = Sim {
        c,
        drawn: draw(c),
        nodes: (0..c.nodes)
            .map(|n| Node {
                drive: drive(n),
                ..Node::default()
            })
            .collect(),
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
        events: EventQueue::with_capacity(2 * c.nodes),
        requests: 0,
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
    while let Some((at_ns, (n, event))) = sim.events.next() {
        let t = match event {
            Event::Cpu(_) => sim.nodes[n].cpu_at_s,
            _ => seconds(at_ns).max(sim.nodes[n].at_s),
        };
        // A request served between chunks leaves the CPU's load, and its queued event, as is.
        let cpu_changed = match event {
            Event::Cpu(generation) if generation != sim.nodes[n].generation => continue,
            Event::Cpu(_) => {
                sim.advance(n, t);
                sim.step(n, t);
                true
            }
            Event::Served => {
                sim.advance(n, t);
                sim.served(n, at_ns)
            }
            Event::Wake => {
                sim.advance(n, t);
                sim.serve(n, at_ns);
                false
            }
        };
        end = end.max(t);
        if cpu_changed {
            sim.schedule(n);
        }
    }
    // Every node draws at least its idle power until the last task ends.
    let mut run = TasksRun {
        makespan_s: end,
        requests: sim.requests,
        ..TasksRun::default()
    };
    for n in 0..c.nodes {
        sim.advance(n, end);
        let node = &mut sim.nodes[n];
        run.energy_j += node.energy_j;
        run.core_busy_s += node.core_s;
        run.disk_busy_s += node.fluid_busy_s;
        if let Some(d) = node.drive.as_mut() {
            d.disk.enter(ns(end), State::Idle);
            let disk_j = d.disk.energy_j(&d.spec.model, ns(end));
            run.energy_j += disk_j;
            run.disk_j += disk_j;
            run.disk_busy_s += seconds(d.disk.time_ns(State::Busy));
        }
    }
    run.tasks = sim.records;
    Ok(run)
}
