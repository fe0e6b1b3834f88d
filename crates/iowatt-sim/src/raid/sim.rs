//! One personality on one trace: every request split over the disks it touches, each disk a
//! FIFO queue with its head position and its power state, events in time order. A request's
//! latency is until its first extent is served, its completion until its last (a striped
//! request waits for its slowest member); energy is integrated state by state into bins.

use iowatt_metrics::Rng;

use super::cache::PageCache;
use super::personality::{Extent, Personality};
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
}

impl Trace {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// The request index of a disk's catch-up write (PARAID's stale blocks): no request's.
const SYNC: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrival(u32),
    Done(u16),
    SpunDown(u16),
    SpunUp(u16),
    /// A disk's idle timer (one pending per disk at most: the heap holds no dead timers).
    Idle(u16),
    /// The personality's monitor.
    Monitor,
}

/// A disk of the array: the shared state machine, with what the personality needs beside it.
struct Member {
    disk: Disk<u32>,
    /// Whether the disk's idle timer is in the queue.
    timer: bool,
    /// Busy ns since the personality's monitor last looked, and a wake-up asked for while it
    /// was spinning down.
    busy_ns: u64,
    busy_mark: u64,
    wake: bool,
}

/// What one run produced.
#[derive(Debug, Clone, Default)]
pub struct RaidRun {
    /// Per request: until its first extent was served, and until its last, ns.
    pub latency_ns: Vec<u64>,
    pub completion_ns: Vec<u64>,
    /// Per disk: J, spin-downs, and J and seconds spun down (or spinning down) per bin.
    pub energy_j: Vec<f64>,
    pub spin_cycles: Vec<u64>,
    pub bin_energy_j: Vec<Vec<f64>>,
    pub bin_standby_s: Vec<Vec<f64>>,
    /// From the trace's start to the last event, ns.
    pub end_ns: u64,
    /// (ns, disks powered) at every gear change, from the first monitor on (PARAID).
    pub gears: Vec<(u64, usize)>,
    /// Requests the page cache served.
    pub cache_hits: u64,
    /// Bytes written back to disks that came back up (PARAID's stale replicas' homes).
    pub synced_bytes: u64,
}

pub struct Array<'a> {
    model: &'a DiskModel,
    personality: &'a mut dyn Personality,
    disks: Vec<Member>,
    queue: EventQueue<Ev>,
    bin_ns: u64,
    out: RaidRun,
    remaining: Vec<u8>,
    served: usize,
    extents: Vec<Extent>,
    cache: PageCache,
}

impl<'a> Array<'a> {
    /// `streams(d)` is disk d's seeded stream (its rotational positions).
    pub fn new(
        model: &'a DiskModel,
        disks: usize,
        personality: &'a mut dyn Personality,
        bin_ns: u64,
        mut streams: impl FnMut(usize) -> Rng,
    ) -> Self {
        let disks = (0..disks)
            .map(|d| Member {
                disk: Disk::new(streams(d)),
                timer: false,
                busy_ns: 0,
                busy_mark: 0,
                wake: false,
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
            remaining: Vec::new(),
            served: 0,
            extents: Vec::new(),
            cache: PageCache::new(0),
        }
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
        let w = state.watts(self.model);
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
        let (span, started) = self.disks[d].disk.start_next(self.model, now, 1.0, || 1.0);
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

    /// Sets disk `d`'s idle timer to fire `timeout` after `from`, unless one is pending (it
    /// checks, when it fires, how long the disk has really idled).
    fn arm(&mut self, d: usize, from: u64) {
        if let Some(timeout) = self.personality.idle_timeout_ns(d) {
            if !self.disks[d].timer {
                self.disks[d].timer = true;
                self.queue.at(from + timeout, Ev::Idle(d as u16));
            }
        }
    }

    fn spin_up(&mut self, d: usize, now: u64) {
        let (span, up) = self.disks[d].disk.spin_up(self.model, now);
        self.charge(d, span, State::SpinningUp);
        self.queue.at(up, Ev::SpunUp(d as u16));
    }

    /// The personality looks at each disk's busy share since it last did, and may wake disks.
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
        let mut wake = Vec::new();
        self.personality.monitor(now, &busy, &mut wake);
        for d in wake {
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

    /// A page cache of `bytes` in front of the array.
    pub fn with_cache(mut self, bytes: u64) -> Self {
        self.cache = PageCache::new(bytes);
        self
    }

    fn arrive(&mut self, i: usize, now: u64, trace: &Trace) {
        let write = trace.write.get(i) == Some(&true);
        // A write goes to the disks whatever the cache holds (and leaves it cached).
        if self.cache.access(trace.offset[i], trace.bytes[i]) && !write {
            self.out.cache_hits += 1;
            self.out.latency_ns[i] = 0;
            self.out.completion_ns[i] = 0;
            self.served += 1;
            return;
        }
        let mut extents = std::mem::take(&mut self.extents);
        self.personality.route(
            trace.offset[i],
            trace.bytes[i],
            trace.write.get(i) == Some(&true),
            &mut extents,
        );
        self.remaining[i] = extents.len() as u8;
        for e in &extents {
            let d = e.disk;
            self.disks[d].disk.push(i as u32, e.offset, e.bytes);
            match self.disks[d].disk.state() {
                State::Idle => self.start_next(d, now),
                State::Standby => self.spin_up(d, now),
                // Busy, spinning up or down: the queue is served when the disk is ready.
                _ => {}
            }
        }
        self.extents = extents;
    }

    fn done(&mut self, d: usize, now: u64, trace: &Trace) {
        let serving = self.disks[d].disk.take_serving();
        let Some(req) = serving.filter(|&r| r != SYNC) else {
            return self.start_next(d, now);
        };
        let req = req as usize;
        let waited = now - trace.t_ns[req];
        if self.remaining[req] > 0 {
            if self.out.latency_ns[req] == u64::MAX {
                self.out.latency_ns[req] = waited;
            }
            self.remaining[req] -= 1;
            if self.remaining[req] == 0 {
                self.out.completion_ns[req] = waited;
                self.served += 1;
            }
        }
        self.start_next(d, now);
    }

    /// Serves the whole trace (arrivals in time order) and returns what happened.
    pub fn run(mut self, trace: &Trace) -> RaidRun {
        let n = trace.len();
        self.remaining = vec![0; n];
        self.out.latency_ns = vec![u64::MAX; n];
        self.out.completion_ns = vec![u64::MAX; n];
        if n > 0 {
            self.queue.at(trace.t_ns[0], Ev::Arrival(0));
        }
        for d in 0..self.disks.len() {
            self.start_next(d, 0); // idle from the start: LRU's timers run
        }
        if let Some(every) = self.personality.monitor_every_ns() {
            self.queue.at(every, Ev::Monitor);
            self.out
                .gears
                .extend(self.personality.gear().map(|g| (0, g)));
        }
        let mut end = 0;
        while let Some((now, ev)) = self.queue.next() {
            end = now;
            match ev {
                Ev::Arrival(i) => {
                    let i = i as usize;
                    if i + 1 < n {
                        self.queue.at(trace.t_ns[i + 1], Ev::Arrival(i as u32 + 1));
                    }
                    self.arrive(i, now, trace);
                }
                Ev::Done(d) => self.done(usize::from(d), now, trace),
                Ev::Idle(d) => {
                    let d = usize::from(d);
                    self.disks[d].timer = false;
                    if self.disks[d].disk.state() == State::Idle {
                        let since = self.disks[d].disk.since_ns();
                        match self.personality.idle_timeout_ns(d) {
                            Some(t) if now >= since + t => {
                                let (span, down) = self.disks[d].disk.spin_down(self.model, now);
                                self.charge(d, span, State::SpinningDown);
                                self.queue.at(down, Ev::SpunDown(d as u16));
                            }
                            // Idle again since the timer was set: wait out the rest.
                            Some(_) => self.arm(d, since),
                            None => {}
                        }
                    }
                }
                Ev::SpunDown(d) => {
                    let d = usize::from(d);
                    self.enter(d, now, State::Standby);
                    if self.disks[d].disk.queued() > 0 || std::mem::take(&mut self.disks[d].wake) {
                        self.spin_up(d, now);
                    }
                }
                Ev::SpunUp(d) => {
                    let d = usize::from(d);
                    let stale = self.personality.take_stale(d);
                    if stale > 0 {
                        // Brought up to date first, from the start of its data, in one pass.
                        self.disks[d].disk.push_front(SYNC, 0, stale);
                        self.out.synced_bytes += stale;
                    }
                    let before = self.personality.gear();
                    self.personality.spun_up(now, d);
                    self.note_gear(now, before);
                    self.start_next(d, now);
                }
                Ev::Monitor => self.monitor(now),
            }
            // Once every request is served, what is left (idle timers) would only act on an
            // empty array after the trace: stop.
            if self.served == n {
                break;
            }
        }
        for d in 0..self.disks.len() {
            let state = self.disks[d].disk.state();
            self.enter(d, end, state);
            self.out.spin_cycles[d] = self.disks[d].disk.cycles();
        }
        self.out.end_ns = end;
        self.out
    }
}
