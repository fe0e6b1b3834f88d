//! What every thread instance of a FileMacro run shares: the filesets, the event generator,
//! the semaphores and gates of semblock/block, and the counts limit and finish flowops watch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

use crate::fileset::FilesetState;
use crate::spec::{OpKind, Quit, Workload};
use crate::sync::{EventBacklog, EventGen, Gate, Sem};

/// Counts a limit or finish flowop can watch.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) ops: AtomicU64,
    pub(super) bytes: AtomicU64,
}

/// What all thread instances share.
pub struct Shared {
    pub filesets: Vec<FilesetState>,
    pub(super) events: Option<EventGen>,
    /// Per semblock/block flowop name, every instance: what sempost/wakeup signal.
    pub(super) sems: HashMap<String, Vec<Arc<Sem>>>,
    pub(super) gates: HashMap<String, Vec<Arc<Gate>>>,
    /// Per (flowop id, thread instance): the semaphore or gate that instance waits on.
    pub(super) own: HashMap<(usize, usize), Waiter>,
    /// Per workload-wide flowop id.
    pub(super) per_flowop: Vec<Counts>,
    pub(super) ids: HashMap<String, Vec<usize>>,
    /// FileBench's controlstats: all I/O flowops, and those that move data (reads and writes).
    pub(super) io: Counts,
    pub(super) rw: Counts,
    /// Keep the counts at all: only when some flowop reads them.
    pub(super) track: bool,
    pub(super) quit: Quit,
    pub(super) done: AtomicU32,
    pub(super) workers: u32,
}

impl Shared {
    pub fn new(w: &Workload, filesets: Vec<FilesetState>, start_ns: u64) -> Self {
        let mut sems: HashMap<String, Vec<Arc<Sem>>> = HashMap::new();
        let mut gates: HashMap<String, Vec<Arc<Gate>>> = HashMap::new();
        let mut own = HashMap::new();
        let mut ids: HashMap<String, Vec<usize>> = HashMap::new();
        let mut id = 0;
        for t in &w.threads {
            for f in &t.flowops {
                ids.entry(f.name.clone()).or_default().push(id);
                for instance in 0..t.instances as usize {
                    let own_waiter = match f.kind {
                        OpKind::SemBlock => {
                            let sem = Arc::new(Sem::new(f.highwater));
                            sems.entry(f.name.clone()).or_default().push(sem.clone());
                            Waiter::Sem(sem)
                        }
                        OpKind::Block => {
                            let gate = Arc::new(Gate::default());
                            gates.entry(f.name.clone()).or_default().push(gate.clone());
                            Waiter::Gate(gate)
                        }
                        _ => continue,
                    };
                    own.insert((id, instance), own_waiter);
                }
                id += 1;
            }
        }
        let track = w.threads.iter().flat_map(|t| &t.flowops).any(|f| {
            matches!(
                f.kind,
                OpKind::OpsLimit
                    | OpKind::IopsLimit
                    | OpKind::BwLimit
                    | OpKind::FinishOnCount
                    | OpKind::FinishOnBytes
            )
        });
        Shared {
            filesets,
            events: w
                .eventgen_rate
                .filter(|r| *r > 0.0)
                .map(|r| EventGen::new(r, start_ns)),
            sems,
            gates,
            own,
            per_flowop: (0..id).map(|_| Counts::default()).collect(),
            ids,
            io: Counts::default(),
            rw: Counts::default(),
            track,
            quit: w.quit,
            done: AtomicU32::new(0),
            workers: w.total_threads(),
        }
    }
}

impl Shared {
    /// The event generator's events before `cutoff` (see [`EventGen::backlog`]); `None`
    /// without a generator.
    pub fn event_backlog(&self, cutoff: u64) -> Option<EventBacklog> {
        self.events.as_ref().map(|e| e.backlog(cutoff))
    }
}

#[derive(Clone)]
pub(super) enum Waiter {
    Sem(Arc<Sem>),
    Gate(Arc<Gate>),
}
