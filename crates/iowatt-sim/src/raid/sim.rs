//! An array under one personality: every request split over the disks it touches, each disk a
//! FIFO queue with its head position and its power state, events in time order. A request's
//! first byte is when its first data extent is served, its completion when its last is (a
//! striped request waits for its slowest member, a file first for its metadata); energy is
//! integrated state by state into bins. The file system's own reads and writes ([`Fs`]) and
//! PARAID's copies queue on the disks behind the requests, counted in no request's times.
//!
//! The array keeps no clock of its own: requests arrive when its caller says, and it serves
//! its events up to the time it is asked to. The simulator feeds it a trace ([`Array::run`]);
//! the emulated array (crates/iowatt-emulate) feeds it a mount's requests as they come.

use std::collections::VecDeque;

use iowatt_metrics::Rng;

use super::cache::PageCache;
use super::fs::{Fs, FsWrite, BLOCK};
use super::personality::{Actions, DailyCount, Extent, Personality};
use crate::disk::{Disk, DiskModel, Span, State};
use crate::EventQueue;

/// Requests at the array: arrival (ns from the trace's start), array offset and size in bytes.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub t_ns: Vec<u64>,
    pub offset: Vec<u64>,
    pub bytes: Vec<u64>,
    /// Whether each request writes (empty: every request reads).
    pub write: Vec<bool>,
    /// A web trace's files: the array offsets of each request's directory block and inode
    /// block (u64::MAX: none), which the file system model reads and writes (empty: a block
    /// trace, whose requests are the file system's already).
    pub dir_at: Vec<u64>,
    pub inode_at: Vec<u64>,
}

impl Trace {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// What a disk serves (requests by their slot in the array's table of requests in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// A request's data.
    Data(u32),
    /// A request's metadata, read before its data.
    Meta(u32),
    /// The file system's writes and PARAID's copies: no request's.
    Background,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Done(u16),
    SpunDown(u16),
    /// A staggered spin-up's turn has come.
    SpinUp(u16),
    SpunUp(u16),
    /// A disk's idle timer (one pending per disk at most: the heap holds no dead timers).
    Idle(u16),
    /// The personality's monitor.
    Monitor,
    /// The file system's flusher, and its journal's commit.
    Writeback,
    Commit,
}

/// A disk of the array: the shared state machine, with what the personality needs beside it.
struct Member {
    disk: Disk<Job>,
    /// Background work (offset, bytes), served when nothing else is queued: Linux's I/O
    /// schedulers let synchronous reads pass asynchronous writes.
    background: VecDeque<(u64, u64)>,
    /// Whether the disk's idle timer is in the queue.
    timer: bool,
    /// Busy ns since the personality's monitor last looked, and a wake-up asked for while it
    /// was spinning down.
    busy_ns: u64,
    busy_mark: u64,
    wake: bool,
    /// Waiting in standby for its turn to spin up (staggered).
    turn: bool,
}

/// A request at the array: the caller's tag, array offset and bytes, whether it writes, and
/// a web trace's file's metadata blocks (u64::MAX: none). A request of 0 bytes is a lookup:
/// its file's metadata blocks read (those not cached), no data, no access time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub tag: u64,
    pub offset: u64,
    pub bytes: u64,
    pub write: bool,
    pub dir_at: u64,
    pub inode_at: u64,
}

/// A request served: its tag, when it arrived, when its first data extent and its last were
/// done, ns (all three equal for a page-cache hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub tag: u64,
    pub arrived_ns: u64,
    pub first_ns: u64,
    pub done_ns: u64,
}

/// A request in flight: its extents still queued, and when its first data extent was done.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    request: Request,
    arrived_ns: u64,
    remaining: u16,
    first_ns: Option<u64>,
}

/// What one run produced.
#[derive(Debug, Clone, Default)]
pub struct RaidRun {
    /// Per request: until its first extent was served, and until its last, ns.
    pub latency_ns: Vec<u64>,
    pub completion_ns: Vec<u64>,
    /// Per disk: J, spin-downs (in all, and the most in any day of the trace), and J and
    /// seconds spun down (or spinning down) per bin.
    pub energy_j: Vec<f64>,
    pub spin_cycles: Vec<u64>,
    pub most_cycles_a_day: Vec<u64>,
    pub bin_energy_j: Vec<Vec<f64>>,
    pub bin_standby_s: Vec<Vec<f64>>,
    /// From the trace's start to the last event, ns.
    pub end_ns: u64,
    /// (ns, disks powered) at every gear change, from the first monitor on (PARAID).
    pub gears: Vec<(u64, usize)>,
    /// Requests the page cache served.
    pub cache_hits: u64,
    /// Bytes PARAID copied: to disks that came back up, and to replicas before a down-shift.
    pub synced_bytes: u64,
    /// The file system's reads (metadata) and writes (inodes, journal), in blocks.
    pub fs_reads: u64,
    pub fs_writes: u64,
}

pub struct Array {
    model: DiskModel,
    personality: Box<dyn Personality + Send>,
    disks: Vec<Member>,
    queue: EventQueue<Ev>,
    bin_ns: u64,
    out: RaidRun,
    /// Requests in flight by slot, the free slots, and what was served since last taken.
    flight: Vec<Option<InFlight>>,
    free: Vec<u32>,
    completions: Vec<Completion>,
    extents: Vec<Extent>,
    cache: PageCache,
    fs: Option<Fs>,
    /// Spin-ups start at least this far apart, and when the next may.
    stagger_ns: u64,
    next_turn_ns: u64,
    /// Spin-downs per disk by day, for the most in any day.
    spins: DailyCount,
    /// Every disk's state changes (ns, disk, state entered), kept when asked for.
    changes: Option<Vec<(u64, usize, State)>>,
}

/// One disk of the array as it stands: its state, energy, time in each state
/// ([`State::ALL`]'s order), spin cycles and the requests it has queued or is serving.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskStatus {
    pub state: State,
    pub energy_j: f64,
    pub state_ns: [u64; 5],
    pub cycles: u64,
    pub queued: usize,
}

impl Array {
    /// `streams(d)` is disk d's seeded stream (its rotational positions).
    pub fn new(
        model: DiskModel,
        disks: usize,
        personality: Box<dyn Personality + Send>,
        bin_ns: u64,
        mut streams: impl FnMut(usize) -> Rng,
    ) -> Self {
        let disks = (0..disks)
            .map(|d| Member {
                disk: Disk::new(streams(d)),
                background: VecDeque::new(),
                timer: false,
                busy_ns: 0,
                busy_mark: 0,
                wake: false,
                turn: false,
            })
            .collect::<Vec<_>>();
        let n = disks.len();
        Self {
            model,
            personality,
            disks,
            queue: EventQueue::with_capacity(64),
            bin_ns: bin_ns.max(1),
            out: RaidRun {
                energy_j: vec![0.0; n],
                spin_cycles: vec![0; n],
                bin_energy_j: vec![Vec::new(); n],
                bin_standby_s: vec![Vec::new(); n],
                ..RaidRun::default()
            },
            flight: Vec::new(),
            free: Vec::new(),
            completions: Vec::new(),
            extents: Vec::new(),
            cache: PageCache::new(0),
            fs: None,
            stagger_ns: 0,
            next_turn_ns: 0,
            spins: DailyCount::new(n),
            changes: None,
        }
    }

    /// Keeps every disk's state changes, for [`Array::take_changes`].
    pub fn with_changes(mut self) -> Self {
        self.changes = Some(Vec::new());
        self
    }

    /// The state changes (ns, disk, state entered) since this was last called.
    pub fn take_changes(&mut self) -> Vec<(u64, usize, State)> {
        self.changes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The file system's reads and writes so far, in blocks.
    pub fn fs_blocks(&self) -> (u64, u64) {
        (self.out.fs_reads, self.out.fs_writes)
    }

    /// How many disks.
    pub fn disks(&self) -> usize {
        self.disks.len()
    }

    /// The personality's gear (PARAID's disks powered), or None.
    pub fn gear(&self) -> Option<usize> {
        self.personality.gear()
    }

    /// Disk `d` at `now` (at or after the last event served).
    pub fn status(&self, d: usize, now: u64) -> DiskStatus {
        let member = &self.disks[d];
        let disk = &member.disk;
        let mut state_ns = [0; 5];
        for (i, s) in State::ALL.iter().enumerate() {
            state_ns[i] = disk.time_ns(*s);
            if *s == disk.state() {
                state_ns[i] += now.saturating_sub(disk.since_ns());
            }
        }
        let serving = usize::from(disk.state() == State::Busy);
        DiskStatus {
            state: disk.state(),
            energy_j: disk.energy_j(&self.model, now),
            state_ns,
            cycles: disk.cycles(),
            queued: disk.queued() + serving + member.background.len(),
        }
    }

    /// A page cache of `bytes` in front of the array.
    pub fn with_cache(mut self, bytes: u64) -> Self {
        self.cache = PageCache::new(bytes);
        self
    }

    /// The file system's traffic (for a trace with its files' metadata).
    pub fn with_fs(mut self, fs: Option<Fs>) -> Self {
        self.fs = fs;
        self
    }

    /// Spin-ups at least `ns` apart, as a controller staggers them.
    pub fn with_stagger(mut self, ns: u64) -> Self {
        self.stagger_ns = ns;
        self
    }

    /// Moves disk `d` to `next` at `now`, charging the state it left.
    fn enter(&mut self, d: usize, now: u64, next: State) {
        let span = self.disks[d].disk.enter(now, next);
        self.charge(d, span, next);
    }

    /// Charges disk `d` a state's power over `span`, bin by bin; `next` is the state the disk
    /// went to (the monitor counts busy time).
    fn charge(&mut self, d: usize, span: Span, next: State) {
        let (state, since, now) = (span.state, span.from_ns, span.to_ns);
        if let Some(changes) = self.changes.as_mut().filter(|_| state != next) {
            changes.push((now, d, next));
        }
        let w = state.watts(&self.model);
        let down = matches!(state, State::Standby | State::SpinningDown);
        let mut t = since;
        while t < now {
            let bin = (t / self.bin_ns) as usize;
            let until = ((bin as u64 + 1) * self.bin_ns).min(now);
            let s = (until - t) as f64 / 1e9;
            let (energy, standby) = (
                &mut self.out.bin_energy_j[d],
                &mut self.out.bin_standby_s[d],
            );
            if energy.len() <= bin {
                energy.resize(bin + 1, 0.0);
                standby.resize(bin + 1, 0.0);
            }
            energy[bin] += w * s;
            if down {
                standby[bin] += s;
            }
            self.out.energy_j[d] += w * s;
            t = until;
        }
        let member = &mut self.disks[d];
        if state == State::Busy {
            member.busy_ns += now - member.busy_mark;
        }
        if next == State::Busy {
            member.busy_mark = now;
        }
    }

    fn start_next(&mut self, d: usize, now: u64) {
        let member = &mut self.disks[d];
        if member.disk.queued() == 0 {
            if let Some((offset, bytes)) = member.background.pop_front() {
                member.disk.push(Job::Background, offset, bytes);
            }
        }
        let (span, started) = self.disks[d].disk.start_next(&self.model, now, 1.0, || 1.0);
        match started {
            None => {
                self.charge(d, span, State::Idle);
                self.arm(d, now);
            }
            Some(s) => {
                self.charge(d, span, State::Busy);
                self.queue.at(s.done_ns, Ev::Done(d as u16));
            }
        }
    }

    /// Queues `job` on disk `d` (background work behind every request), waking the disk if
    /// it needs to.
    fn submit(&mut self, d: usize, job: Job, offset: u64, bytes: u64, now: u64) {
        match job {
            Job::Background => self.disks[d].background.push_back((offset, bytes)),
            _ => self.disks[d].disk.push(job, offset, bytes),
        }
        match self.disks[d].disk.state() {
            State::Idle => self.start_next(d, now),
            State::Standby => self.spin_up(d, now),
            // Busy, spinning up or down: the queue is served when the disk is ready.
            _ => {}
        }
    }

    /// Sets disk `d`'s idle timer to fire `timeout` after `from`, unless one is pending (it
    /// checks, when it fires, how long the disk has really idled).
    fn arm(&mut self, d: usize, from: u64) {
        if let Some(timeout) = self.personality.idle_timeout_ns(d, from) {
            if !self.disks[d].timer {
                self.disks[d].timer = true;
                self.queue.at(from + timeout, Ev::Idle(d as u16));
            }
        }
    }

    /// Spins disk `d` up now, or when the controller's stagger lets it.
    fn spin_up(&mut self, d: usize, now: u64) {
        if self.disks[d].turn {
            return; // its turn is coming
        }
        let turn = now.max(self.next_turn_ns);
        self.next_turn_ns = turn + self.stagger_ns;
        if turn > now {
            self.disks[d].turn = true;
            self.queue.at(turn, Ev::SpinUp(d as u16));
            return;
        }
        let (span, up) = self.disks[d].disk.spin_up(&self.model, now);
        self.charge(d, span, State::SpinningUp);
        self.queue.at(up, Ev::SpunUp(d as u16));
    }

    fn spin_down(&mut self, d: usize, now: u64) {
        self.personality.spinning_down(now, d);
        self.spins.count(now, d);
        let (span, down) = self.disks[d].disk.spin_down(&self.model, now);
        self.charge(d, span, State::SpinningDown);
        self.queue.at(down, Ev::SpunDown(d as u16));
    }

    /// The personality looks at each disk's busy share since it last did, and may wake disks
    /// or have them copy.
    fn monitor(&mut self, now: u64) {
        let Some(every) = self.personality.monitor_every_ns() else {
            return;
        };
        let busy: Vec<f64> = self
            .disks
            .iter_mut()
            .map(|member| {
                // The busy period under way counts up to now, and from now on next time.
                if member.disk.state() == State::Busy {
                    member.busy_ns += now - member.busy_mark;
                    member.busy_mark = now;
                }
                let share = member.busy_ns as f64 / every as f64;
                member.busy_ns = 0;
                share.min(1.0)
            })
            .collect();
        let before = self.personality.gear();
        let mut act = Actions::default();
        self.personality.monitor(now, &busy, &mut act);
        self.out.synced_bytes += act.copied;
        for e in act.sync {
            self.submit(e.disk, Job::Background, e.offset, e.bytes, now);
        }
        for d in act.wake {
            match self.disks[d].disk.state() {
                State::Standby => self.spin_up(d, now),
                State::SpinningDown => self.disks[d].wake = true,
                _ => {
                    // Spinning already: it joins as soon as asked.
                    self.personality.spun_up(now, d);
                }
            }
        }
        self.note_gear(now, before);
        // Disks the gear just left spin down once idle: arm their timers.
        for d in 0..self.disks.len() {
            if self.disks[d].disk.state() == State::Idle {
                self.arm(d, now);
            }
        }
        self.queue.at(now + every, Ev::Monitor);
    }

    fn note_gear(&mut self, now: u64, before: Option<usize>) {
        let after = self.personality.gear();
        if after != before {
            self.out.gears.extend(after.map(|g| (now, g)));
        }
    }

    /// The array's part of bytes at `offset` under `job`, queued on each disk it touches;
    /// returns how many extents.
    fn route(&mut self, job: Job, offset: u64, bytes: u64, write: bool, now: u64) -> u16 {
        let mut extents = std::mem::take(&mut self.extents);
        self.personality.route(offset, bytes, write, &mut extents);
        for e in &extents {
            self.submit(e.disk, job, e.offset, e.bytes, now);
        }
        let n = extents.len() as u16;
        self.extents = extents;
        n
    }

    /// The file system writes these blocks (through the personality, as any write).
    fn fs_write(&mut self, writes: &[FsWrite], now: u64) {
        for &(offset, bytes) in writes {
            self.out.fs_writes += bytes.div_ceil(BLOCK);
            self.route(Job::Background, offset, bytes, true, now);
        }
    }

    /// A slot for a request arriving at `now`.
    fn admit(&mut self, request: Request, now: u64) -> u32 {
        let entry = Some(InFlight {
            request,
            arrived_ns: now,
            remaining: 0,
            first_ns: None,
        });
        match self.free.pop() {
            Some(slot) => {
                self.flight[slot as usize] = entry;
                slot
            }
            None => {
                self.flight.push(entry);
                (self.flight.len() - 1) as u32
            }
        }
    }

    fn complete(&mut self, slot: u32, done_ns: u64) {
        let f = self.flight[slot as usize]
            .take()
            .expect("a request in flight");
        self.free.push(slot);
        self.completions.push(Completion {
            tag: f.request.tag,
            arrived_ns: f.arrived_ns,
            first_ns: f.first_ns.unwrap_or(done_ns),
            done_ns,
        });
    }

    /// `request` arrives at `now` (events before it served first).
    pub fn arrive(&mut self, now: u64, request: Request) {
        self.advance_before(now);
        let Request {
            offset,
            bytes,
            write,
            dir_at,
            inode_at,
            ..
        } = request;
        let lookup = bytes == 0;
        if let Some(fs) = self.fs.as_mut().filter(|_| !write && !lookup) {
            // Even a read the page cache serves sets the file's access time.
            fs.read(now, offset, inode_at);
        }
        let slot = self.admit(request, now);
        // A write goes to the disks whatever the cache holds (and leaves it cached).
        if !lookup && self.cache.access(offset, bytes) && !write {
            self.out.cache_hits += 1;
            return self.complete(slot, now);
        }
        let mut blocks = Vec::new();
        if let Some(fs) = self.fs.as_mut() {
            fs.lookup(dir_at, inode_at, &mut blocks);
        }
        let n = if blocks.is_empty() {
            if lookup {
                return self.complete(slot, now);
            }
            self.route(Job::Data(slot), offset, bytes, write, now)
        } else {
            self.out.fs_reads += blocks.len() as u64;
            blocks
                .into_iter()
                .map(|at| self.route(Job::Meta(slot), at, BLOCK, false, now))
                .sum()
        };
        self.in_flight(slot).remaining = n;
    }

    fn in_flight(&mut self, slot: u32) -> &mut InFlight {
        self.flight[slot as usize]
            .as_mut()
            .expect("a request in flight")
    }

    fn done(&mut self, d: usize, now: u64) {
        match self.disks[d].disk.take_serving() {
            Some(Job::Data(slot)) => {
                let f = self.in_flight(slot);
                f.first_ns.get_or_insert(now);
                f.remaining -= 1;
                if f.remaining == 0 {
                    self.complete(slot, now);
                }
            }
            Some(Job::Meta(slot)) => {
                let f = self.in_flight(slot);
                f.remaining -= 1;
                if f.remaining == 0 {
                    let r = f.request;
                    if r.bytes == 0 {
                        self.complete(slot, now);
                        return self.start_next(d, now);
                    }
                    let n = self.route(Job::Data(slot), r.offset, r.bytes, r.write, now);
                    self.in_flight(slot).remaining = n;
                }
            }
            Some(Job::Background) | None => {}
        }
        self.start_next(d, now);
    }

    /// Sets the array going at time 0: every disk idle (LRU's timers run), the personality's
    /// monitor and the file system's flusher scheduled.
    pub fn start(&mut self) {
        for d in 0..self.disks.len() {
            self.start_next(d, 0);
        }
        if let Some(every) = self.personality.monitor_every_ns() {
            self.queue.at(every, Ev::Monitor);
            self.out
                .gears
                .extend(self.personality.gear().map(|g| (0, g)));
        }
        if let Some(fs) = &self.fs {
            self.queue.at(fs.writeback_every_ns(), Ev::Writeback);
            if let Some(every) = fs.commit_every_ns() {
                self.queue.at(every, Ev::Commit);
            }
        }
    }

    /// When the next event is due (a disk done, a timer, the monitor), if any.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.queue.next_at()
    }

    /// Serves every event due before `t`.
    pub fn advance_before(&mut self, t: u64) {
        while self.queue.next_at().is_some_and(|at| at < t) {
            self.step();
        }
    }

    /// Serves every event due at or before `t`.
    pub fn advance_to(&mut self, t: u64) {
        while self.queue.next_at().is_some_and(|at| at <= t) {
            self.step();
        }
    }

    /// The requests served since this was last called.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Requests arrived and not yet served.
    pub fn pending(&self) -> usize {
        self.flight.len() - self.free.len()
    }

    /// The time of the last event served, ns.
    pub fn now_ns(&self) -> u64 {
        self.queue.now_ns()
    }

    /// Serves the next event.
    fn step(&mut self) {
        let Some((now, ev)) = self.queue.next() else {
            return;
        };
        match ev {
            Ev::Done(d) => self.done(usize::from(d), now),
            Ev::Idle(d) => {
                let d = usize::from(d);
                self.disks[d].timer = false;
                if self.disks[d].disk.state() == State::Idle {
                    let since = self.disks[d].disk.since_ns();
                    match self.personality.idle_timeout_ns(d, now) {
                        Some(t) if now >= since + t => self.spin_down(d, now),
                        // Idle again since the timer was set: wait out the rest.
                        Some(_) => self.arm(d, since),
                        None => {}
                    }
                }
            }
            Ev::SpunDown(d) => {
                let d = usize::from(d);
                self.enter(d, now, State::Standby);
                let member = &mut self.disks[d];
                let work = member.disk.queued() > 0 || !member.background.is_empty();
                if work || std::mem::take(&mut member.wake) {
                    self.spin_up(d, now);
                }
            }
            Ev::SpinUp(d) => {
                let d = usize::from(d);
                self.disks[d].turn = false;
                let (span, up) = self.disks[d].disk.spin_up(&self.model, now);
                self.charge(d, span, State::SpinningUp);
                self.queue.at(up, Ev::SpunUp(d as u16));
            }
            Ev::SpunUp(d) => {
                let d = usize::from(d);
                let stale = self.personality.take_stale(d);
                if stale > 0 {
                    // Brought up to date first, from the start of its data, in one pass.
                    self.disks[d].disk.push_front(Job::Background, 0, stale);
                    self.out.synced_bytes += stale;
                }
                let before = self.personality.gear();
                self.personality.spun_up(now, d);
                self.note_gear(now, before);
                self.start_next(d, now);
            }
            Ev::Monitor => self.monitor(now),
            Ev::Writeback => {
                let mut writes = Vec::new();
                let fs = self.fs.as_mut().expect("only with a file system");
                fs.expired(now, &mut writes);
                let every = fs.writeback_every_ns();
                self.fs_write(&writes, now);
                self.queue.at(now + every, Ev::Writeback);
            }
            Ev::Commit => {
                let fs = self.fs.as_mut().expect("only with a journal");
                let commit = fs.commit();
                let every = fs.commit_every_ns().expect("a journal");
                self.fs_write(commit.as_slice(), now);
                self.queue.at(now + every, Ev::Commit);
            }
        }
    }

    /// What the array did up to `end`: each disk's energy to then, its spin cycles, bins.
    pub fn finish(mut self, end: u64) -> RaidRun {
        for d in 0..self.disks.len() {
            let state = self.disks[d].disk.state();
            self.enter(d, end, state);
            self.out.spin_cycles[d] = self.disks[d].disk.cycles();
        }
        self.out.most_cycles_a_day = self.spins.most().to_vec();
        self.out.end_ns = end;
        self.out
    }

    /// Serves the whole trace (arrivals in time order) and returns what happened: once every
    /// request is served, what is left (idle timers, the file system's periodic work) would
    /// only act on an array after the trace, and the run ends.
    pub fn run(mut self, trace: &Trace) -> RaidRun {
        let n = trace.len();
        let mut latency = vec![u64::MAX; n];
        let mut completion = vec![u64::MAX; n];
        let mut end = 0;
        self.start();
        for i in 0..n {
            let request = Request {
                tag: i as u64,
                offset: trace.offset[i],
                bytes: trace.bytes[i],
                write: trace.write.get(i) == Some(&true),
                dir_at: trace.dir_at.get(i).copied().unwrap_or(u64::MAX),
                inode_at: trace.inode_at.get(i).copied().unwrap_or(u64::MAX),
            };
            self.arrive(trace.t_ns[i], request);
            end = end.max(self.now_ns()).max(trace.t_ns[i]);
            self.record(&mut latency, &mut completion, &mut end);
        }
        while self.pending() > 0 && self.next_event_ns().is_some() {
            self.step();
            end = end.max(self.now_ns());
            self.record(&mut latency, &mut completion, &mut end);
        }
        let mut out = self.finish(end);
        out.latency_ns = latency;
        out.completion_ns = completion;
        out
    }

    /// The trace's requests served since the last call, into its columns (tags are indices).
    fn record(&mut self, latency: &mut [u64], completion: &mut [u64], end: &mut u64) {
        for c in self.completions.drain(..) {
            let i = c.tag as usize;
            latency[i] = c.first_ns - c.arrived_ns;
            completion[i] = c.done_ns - c.arrived_ns;
            *end = (*end).max(c.done_ns);
        }
    }
}
