//! The emulated array: the mount's requests fed, as they arrive, to the RAID simulator's own
//! engine ([`iowatt_sim::raid::Array`], the personality, disk model, file system model, spin
//! budget and staggered spin-up `iowatt sim raid` runs), and a timer thread that serves the
//! engine's events when the mount's clock reaches them and answers each request when the
//! engine has served its last extent.
//!
//! As for one disk ([`crate::Drive`]), the engine keeps its own time line: a late wake-up
//! delays an answer, never the disks.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use iowatt_sim::disk::{DiskModel, State};
use iowatt_sim::raid::{Array, DiskStatus, RaidRun, Request};

use crate::drive::{Answer, Pending};

/// A request the array answered: when it reached the array, when its first data extent and
/// its last were done (ns on the mount's clock), its array offset and bytes; a lookup has no
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayServed {
    pub arrived_ns: u64,
    pub first_ns: u64,
    pub done_ns: u64,
    pub offset: u64,
    pub bytes: u64,
    pub write: bool,
    /// Answered when the array stopped, before the engine had served it.
    pub drained: bool,
    pub stream: u32,
}

/// What the array has done up to `now_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayCounters {
    pub now_ns: u64,
    pub disks: Vec<DiskStatus>,
    /// The personality's gear (PARAID's powered disks), or None.
    pub gear: Option<usize>,
    pub read_ops: u64,
    pub write_ops: u64,
    pub lookups: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub drained: u64,
    /// Requests arrived and not yet answered.
    pub pending: usize,
    /// The file system model's reads and writes, in blocks.
    pub fs_reads: u64,
    pub fs_writes: u64,
}

impl ArrayCounters {
    pub fn energy_j(&self) -> f64 {
        self.disks.iter().map(|d| d.energy_j).sum()
    }

    pub fn cycles(&self) -> u64 {
        self.disks.iter().map(|d| d.cycles).sum()
    }
}

/// What the array did: every request answered, every disk's state change (ns, disk, state),
/// the engine's own account (energy, cycles, bins, gears) and the counters at the end.
#[derive(Debug, Clone)]
pub struct ArrayLog {
    pub served: Vec<ArrayServed>,
    pub changes: Vec<(u64, usize, State)>,
    pub run: RaidRun,
    pub counters: ArrayCounters,
}

struct Waiting<A> {
    pending: Pending<A>,
    offset: u64,
    bytes: u64,
}

struct Inner<A> {
    /// None once stopped: the engine's account is in `run`.
    array: Option<Array>,
    run: Option<RaidRun>,
    /// The disks and gear as they stood when stopped.
    closing: Vec<DiskStatus>,
    closing_gear: Option<usize>,
    waiting: HashMap<u64, Waiting<A>>,
    next_tag: u64,
    served: Vec<ArrayServed>,
    changes: Vec<(u64, usize, State)>,
    read_ops: u64,
    write_ops: u64,
    lookups: u64,
    read_bytes: u64,
    write_bytes: u64,
    drained: u64,
}

pub struct ArrayDrive<A> {
    model: DiskModel,
    personality: String,
    disks: usize,
    epoch: Instant,
    epoch_ns: u64,
    inner: Mutex<Inner<A>>,
    wake: Condvar,
}

impl<A: Answer> ArrayDrive<A> {
    /// Serves with `array` (as `iowatt_sim::raid::build` makes it under `personality`),
    /// started at the mount's clock zero; `model` is each disk's.
    pub fn new(array: Array, model: DiskModel, personality: &str) -> Self {
        let mut array = array.with_changes();
        array.start();
        ArrayDrive {
            model,
            personality: personality.to_string(),
            disks: array.disks(),
            epoch: Instant::now(),
            epoch_ns: iowatt_metrics::clock::now_ns(),
            inner: Mutex::new(Inner {
                array: Some(array),
                run: None,
                closing: Vec::new(),
                closing_gear: None,
                waiting: HashMap::new(),
                next_tag: 0,
                served: Vec::new(),
                changes: Vec::new(),
                read_ops: 0,
                write_ops: 0,
                lookups: 0,
                read_bytes: 0,
                write_bytes: 0,
                drained: 0,
            }),
            wake: Condvar::new(),
        }
    }

    pub fn model(&self) -> &DiskModel {
        &self.model
    }

    pub fn personality(&self) -> &str {
        &self.personality
    }

    pub fn disks(&self) -> usize {
        self.disks
    }

    /// Where the mount's clock starts, on CLOCK_MONOTONIC, ns.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// Where the mount's clock is: ns since the array was made.
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn lock_inner(&self) -> MutexGuard<'_, Inner<A>> {
        // Every update is made whole under the lock, so a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `request` (its tag is set here) arrives with `pending`'s answer: served by the engine
    /// and answered when it is done (at once once the array is stopped).
    pub fn submit(&self, pending: Pending<A>, request: Request) {
        let mut g = self.lock_inner();
        let Some(array) = g.array.as_mut() else {
            drop(g);
            return pending.reply.send();
        };
        // FUSE's threads may hand requests over out of their arrival order by a few µs: the
        // engine's clock never goes back.
        let now = pending.arrived_ns.max(array.now_ns());
        let pending = Pending {
            arrived_ns: now,
            ..pending
        };
        let tag = g.next_tag;
        g.next_tag += 1;
        let (offset, bytes) = (request.offset, request.bytes);
        g.waiting.insert(
            tag,
            Waiting {
                pending,
                offset,
                bytes,
            },
        );
        let array = g.array.as_mut().expect("running");
        array.arrive(now, Request { tag, ..request });
        let answers = Self::answered(&mut g);
        drop(g);
        self.wake.notify_one();
        answers.into_iter().for_each(A::send);
    }

    /// The answers of the requests the engine has completed, recorded.
    fn answered(g: &mut Inner<A>) -> Vec<A> {
        let Some(array) = g.array.as_mut() else {
            return Vec::new();
        };
        let done = array.take_completions();
        let changes = array.take_changes();
        g.changes.extend(changes);
        let mut replies = Vec::with_capacity(done.len());
        for c in done {
            let Some(w) = g.waiting.remove(&c.tag) else {
                continue;
            };
            let arrived_ns = w.pending.arrived_ns;
            Self::count(g, &w, false);
            g.served.push(ArrayServed {
                arrived_ns,
                first_ns: c.first_ns,
                done_ns: c.done_ns,
                offset: w.offset,
                bytes: w.bytes,
                write: w.pending.write,
                drained: false,
                stream: w.pending.stream,
            });
            replies.push(w.pending.reply);
        }
        replies
    }

    fn count(g: &mut Inner<A>, w: &Waiting<A>, drained: bool) {
        match (w.bytes, w.pending.write) {
            (0, _) => g.lookups += 1,
            (b, true) => {
                g.write_ops += 1;
                g.write_bytes += b;
            }
            (b, false) => {
                g.read_ops += 1;
                g.read_bytes += b;
            }
        }
        g.drained += u64::from(drained);
    }

    /// The timer thread's loop: serves the engine's events as the mount's clock reaches them
    /// and answers what they complete, until [`Self::stop`].
    pub fn run_timer(&self) {
        let mut g = self.lock_inner();
        loop {
            let now = self.now_ns();
            let Some(array) = g.array.as_mut() else {
                return;
            };
            array.advance_to(now);
            let next = array.next_event_ns();
            let answers = Self::answered(&mut g);
            if !answers.is_empty() {
                drop(g);
                answers.into_iter().for_each(A::send);
                g = self.lock_inner();
                continue;
            }
            g = match next {
                Some(due) => {
                    let at = self.epoch + Duration::from_nanos(due);
                    let left = at.saturating_duration_since(Instant::now());
                    self.wake
                        .wait_timeout(g, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.wake.wait(g).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// Stops the array: what is due is served, every request still waiting is answered at
    /// once (its data was read or written on arrival) and counted as drained, and the engine
    /// closes its account. Later requests are answered as they come.
    pub fn stop(&self) {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        let Some(array) = g.array.as_mut() else {
            return;
        };
        let now = now.max(array.now_ns());
        array.advance_to(now);
        let mut replies = Self::answered(&mut g);
        let mut left: Vec<_> = g.waiting.drain().collect();
        left.sort_by_key(|(tag, _)| *tag);
        for (_, w) in left {
            Self::count(&mut g, &w, true);
            g.served.push(ArrayServed {
                arrived_ns: w.pending.arrived_ns,
                first_ns: now,
                done_ns: now,
                offset: w.offset,
                bytes: w.bytes,
                write: w.pending.write,
                drained: true,
                stream: w.pending.stream,
            });
            replies.push(w.pending.reply);
        }
        let mut array = g.array.take().expect("running");
        g.closing = (0..array.disks()).map(|d| array.status(d, now)).collect();
        g.closing_gear = array.gear();
        let changes = array.take_changes();
        g.changes.extend(changes);
        g.run = Some(array.finish(now));
        drop(g);
        self.wake.notify_all();
        replies.into_iter().for_each(A::send);
    }

    /// What the array has done up to now (what is due served first).
    pub fn counters(&self) -> ArrayCounters {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        let replies = match g.array.as_mut() {
            Some(a) => {
                a.advance_to(now.max(a.now_ns()));
                Self::answered(&mut g)
            }
            None => Vec::new(),
        };
        let c = Self::counters_at(&g, now);
        drop(g);
        replies.into_iter().for_each(A::send);
        c
    }

    fn counters_at(g: &Inner<A>, now: u64) -> ArrayCounters {
        let (disks, gear, (fs_reads, fs_writes)) = match (&g.array, &g.run) {
            (Some(a), _) => {
                let at = now.max(a.now_ns());
                let disks = (0..a.disks()).map(|d| a.status(d, at)).collect();
                (disks, a.gear(), a.fs_blocks())
            }
            // Stopped: as the disks stood then.
            (None, run) => (
                g.closing.clone(),
                g.closing_gear,
                run.as_ref().map_or((0, 0), |r| (r.fs_reads, r.fs_writes)),
            ),
        };
        ArrayCounters {
            now_ns: now,
            disks,
            gear,
            read_ops: g.read_ops,
            write_ops: g.write_ops,
            lookups: g.lookups,
            read_bytes: g.read_bytes,
            write_bytes: g.write_bytes,
            drained: g.drained,
            pending: g.waiting.len(),
            fs_reads,
            fs_writes,
        }
    }

    /// After [`Self::stop`]: everything answered, every state change, the engine's account,
    /// taken, with the counters at the end (before it: an empty account).
    pub fn take_log(&self) -> ArrayLog {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        let counters = Self::counters_at(&g, now);
        ArrayLog {
            served: std::mem::take(&mut g.served),
            changes: std::mem::take(&mut g.changes),
            run: g.run.take().unwrap_or_default(),
            counters,
        }
    }
}
