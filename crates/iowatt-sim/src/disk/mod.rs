//! One disk as both the RAID simulator and the emulated disk (crates/iowatt-emulate) see it: a
//! datasheet's model ([`DiskModel`]) and the disk's own state machine ([`Disk`]) — its head,
//! its FIFO queue, its power state and its spin cycles, with the time spent in each state.
//!
//! The state machine has no clock of its own: its caller says when things happen. The
//! simulator drives it from its event queue; the emulator from a timer thread at the times the
//! machine itself returned, so both charge a request the same seek, rotation and transfer.

mod model;

use std::collections::{HashMap, VecDeque};

use iowatt_metrics::Rng;

pub use model::{Charge, DiskModel, Kind, ModelError, Power};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum State {
    /// Spinning, nothing to serve: where a disk starts.
    #[default]
    Idle,
    Busy,
    SpinningDown,
    Standby,
    SpinningUp,
}

impl State {
    pub const ALL: [State; 5] = [
        State::Idle,
        State::Busy,
        State::SpinningDown,
        State::Standby,
        State::SpinningUp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Busy => "busy",
            State::SpinningDown => "spinning_down",
            State::Standby => "standby",
            State::SpinningUp => "spinning_up",
        }
    }

    /// The state's draw, W: spinning up and down spread their joules over their time.
    pub fn watts(self, m: &DiskModel) -> f64 {
        match self {
            State::Idle => m.idle.watts(),
            State::Busy => m.active.watts(),
            State::Standby => m.standby.watts(),
            State::SpinningDown if m.spin_down_s > 0.0 => m.spin_down_j / m.spin_down_s,
            State::SpinningUp if m.spin_up_s > 0.0 => m.spin_up_j / m.spin_up_s,
            _ => 0.0,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a disk picks the next request from its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discipline {
    /// In arrival order.
    #[default]
    Fifo,
    /// By position, as a drive reorders its command queue: the nearest request at or beyond
    /// the head, else the lowest (one sweep up, then back to the start: C-LOOK).
    Elevator,
    /// A drive's command queue (NCQ) in front of a scheduler that passes requests on in
    /// arrival order (`none`): the first `depth` queued are reordered by position, as
    /// [`Discipline::Elevator`]; the rest wait their turn. Depth 1 is [`Discipline::Fifo`].
    Ncq { depth: usize },
    /// Linux's CFQ: one stream (a process) at a time for a slice, its requests in arrival
    /// order; when it has none queued the disk idles up to `idle_ns` for its next one
    /// (`slice_idle`) before the slice goes to the stream of the oldest request — unless the
    /// stream is seeky or thinks longer than the window, when CFQ does not idle for it
    /// ([`History`]).
    Cfq { slice_ns: u64, idle_ns: u64 },
}

/// What CFQ learns of one stream (block/cfq-iosched.c, Linux 2.6.33): its think time, from
/// the end of its last request to the arrival of its next, as a mean decaying by 7/8 per
/// request (`__cfq_update_io_thinktime`, gaps capped at twice the idle window), and whether
/// more than 4 of its last 32 requests jumped over `SEEK_THRESHOLD` (`CFQQ_SEEKY`).
#[derive(Debug, Clone, Copy, Default)]
struct History {
    samples: f64,
    total_ns: f64,
    last_done_ns: Option<u64>,
    last_end: u64,
    seeks: u32,
}

/// CFQQ_SEEK_THR: 800 sectors of 512 bytes.
const SEEK_THRESHOLD: u64 = 800 * 512;

impl History {
    fn arrive(&mut self, now: u64, offset: u64, idle_ns: u64) {
        if let Some(done) = self.last_done_ns {
            let gap = now.saturating_sub(done).min(2 * idle_ns) as f64;
            self.samples = (7.0 * self.samples + 256.0) / 8.0;
            self.total_ns = (7.0 * self.total_ns + 256.0 * gap) / 8.0;
            let jumped = offset.abs_diff(self.last_end) > SEEK_THRESHOLD;
            self.seeks = (self.seeks << 1) | u32::from(jumped);
        }
    }

    /// Whether CFQ idles for the stream's next request (`cfq_update_idle_window`): not when
    /// it is seeky, nor when its think time, once known (`sample_valid`), exceeds the window.
    fn idles(&self, idle_ns: u64) -> bool {
        let seeky = self.seeks.count_ones() > 32 / 8;
        let thinks_long = self.samples > 80.0 && self.think_ns() > idle_ns as f64;
        !seeky && !thinks_long
    }

    fn think_ns(&self) -> f64 {
        (self.total_ns + 128.0) / self.samples
    }
}

/// The stream a CFQ slice belongs to, until when, and since when it has had nothing queued.
#[derive(Debug, Clone, Copy)]
struct Slice {
    stream: u32,
    until_ns: u64,
    idle_from: Option<u64>,
}

/// Time spent in one state, from its start to the change that ended it, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub state: State,
    pub from_ns: u64,
    pub to_ns: u64,
}

/// A request waiting in a disk's queue: the caller's tag, the disk offset and size in bytes.
#[derive(Debug)]
pub struct Queued<R> {
    pub tag: R,
    pub offset: u64,
    pub bytes: u64,
    /// Who asked (a process): what CFQ gives slices to.
    pub stream: u32,
}

/// The request a disk started serving: where, what it costs, and when it is done.
#[derive(Debug)]
pub struct Started {
    pub offset: u64,
    pub bytes: u64,
    pub charge: Charge,
    pub done_ns: u64,
}

/// One disk: head position, FIFO queue, power state (since when), spin cycles, the request
/// being served, the time in each state so far, and its own seeded stream of rotational
/// positions.
pub struct Disk<R> {
    state: State,
    since_ns: u64,
    head: u64,
    queue: VecDeque<Queued<R>>,
    serving: Option<R>,
    cycles: u64,
    time_ns: [u64; 5],
    rng: Rng,
    discipline: Discipline,
    slice: Option<Slice>,
    /// Idling for the slice's stream until then, with other requests queued (CFQ).
    waiting: Option<u64>,
    histories: HashMap<u32, History>,
    read_ahead: bool,
}

/// Seconds as whole ns.
pub(crate) fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

impl<R> Disk<R> {
    /// An idle disk at time 0 with its head at byte 0.
    pub fn new(rng: Rng) -> Self {
        Disk {
            state: State::Idle,
            since_ns: 0,
            head: 0,
            queue: VecDeque::new(),
            serving: None,
            cycles: 0,
            time_ns: [0; 5],
            rng,
            discipline: Discipline::Fifo,
            slice: None,
            waiting: None,
            histories: HashMap::new(),
            read_ahead: false,
        }
    }

    /// The same disk with its read-ahead: a request that starts where the last one ended pays
    /// no rotation, the drive having read on into its cache.
    pub fn with_read_ahead(mut self) -> Self {
        self.read_ahead = true;
        self
    }

    /// The same disk picking its requests by `discipline`.
    pub fn with_discipline(mut self, discipline: Discipline) -> Self {
        self.discipline = discipline;
        self
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn since_ns(&self) -> u64 {
        self.since_ns
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    /// Spin-downs so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Time in `state` up to the last change, ns (the state under way counts from
    /// [`Self::since_ns`]).
    pub fn time_ns(&self, state: State) -> u64 {
        self.time_ns[state.index()]
    }

    /// Energy up to `now`, J: each state's watts times its time, the state under way included.
    pub fn energy_j(&self, model: &DiskModel, now: u64) -> f64 {
        State::ALL
            .iter()
            .map(|&s| {
                let under_way = if s == self.state {
                    now.saturating_sub(self.since_ns)
                } else {
                    0
                };
                s.watts(model) * (self.time_ns(s) + under_way) as f64 / 1e9
            })
            .sum()
    }

    /// Moves to `next` at `now`; returns the span of the state left.
    pub fn enter(&mut self, now: u64, next: State) -> Span {
        let span = Span {
            state: self.state,
            from_ns: self.since_ns,
            to_ns: now.max(self.since_ns),
        };
        self.time_ns[span.state.index()] += span.to_ns - span.from_ns;
        self.state = next;
        self.since_ns = span.to_ns;
        span
    }

    pub fn push(&mut self, tag: R, offset: u64, bytes: u64) {
        self.push_from(0, 0, tag, offset, bytes);
    }

    /// Queues a request of `stream`'s, arriving at `now`.
    pub fn push_from(&mut self, now: u64, stream: u32, tag: R, offset: u64, bytes: u64) {
        if let Discipline::Cfq { idle_ns, .. } = self.discipline {
            let history = self.histories.entry(stream).or_default();
            history.arrive(now, offset, idle_ns);
        }
        self.queue.push_back(Queued {
            tag,
            offset,
            bytes,
            stream,
        });
    }

    /// Until when the disk idles for its CFQ slice's stream though others have requests
    /// queued; None when it is not.
    pub fn waiting_until(&self) -> Option<u64> {
        self.waiting
    }

    /// Queues a request ahead of every other (a catch-up the disk must do first).
    pub fn push_front(&mut self, tag: R, offset: u64, bytes: u64) {
        self.queue.push_front(Queued {
            tag,
            offset,
            bytes,
            stream: 0,
        });
    }

    /// The queue's next request by the disk's discipline at `now`.
    fn next_index(&mut self, now: u64) -> Option<usize> {
        self.waiting = None;
        match self.discipline {
            Discipline::Fifo => (!self.queue.is_empty()).then_some(0),
            Discipline::Elevator => self.c_look(self.queue.len()),
            Discipline::Ncq { depth } => self.c_look(depth.max(1)),
            Discipline::Cfq { slice_ns, idle_ns } => {
                if let Some(slice) = self.slice.as_mut().filter(|s| now < s.until_ns) {
                    if let Some(i) = self.queue.iter().position(|q| q.stream == slice.stream) {
                        slice.idle_from = None;
                        return Some(i);
                    }
                    let idles = self
                        .histories
                        .get(&slice.stream)
                        .is_none_or(|h| h.idles(idle_ns));
                    let window = if idles { idle_ns } else { 0 };
                    let wait = (slice.idle_from.get_or_insert(now).saturating_add(window))
                        .min(slice.until_ns);
                    if now < wait {
                        self.waiting = (!self.queue.is_empty()).then_some(wait);
                        return None;
                    }
                }
                let stream = self.queue.front()?.stream;
                self.slice = Some(Slice {
                    stream,
                    until_ns: now.saturating_add(slice_ns),
                    idle_from: None,
                });
                Some(0)
            }
        }
    }

    /// Of the first `depth` queued, the nearest at or beyond the head, else the lowest (C-LOOK).
    fn c_look(&self, depth: usize) -> Option<usize> {
        let window = self.queue.iter().take(depth).enumerate();
        let by_offset = |(_, q): &(usize, &Queued<R>)| q.offset;
        let ahead = window
            .clone()
            .filter(|(_, q)| q.offset >= self.head)
            .min_by_key(by_offset);
        ahead
            .or_else(|| window.min_by_key(by_offset))
            .map(|(i, _)| i)
    }

    /// Serves the next request from `now`: busy, the head moved past it, its rotational
    /// position drawn. At `speed` r below 1 (a disk slowed by vibration) its service S takes
    /// S / r, what that adds multiplied by `scale()` (a draw from a measured tail, mean 1; only
    /// called then). With nothing queued the disk idles and no request is started.
    pub fn start_next(
        &mut self,
        model: &DiskModel,
        now: u64,
        speed: f64,
        scale: impl FnOnce() -> f64,
    ) -> (Span, Option<Started>) {
        let Some(q) = self.next_index(now).and_then(|i| self.queue.remove(i)) else {
            return (self.enter(now, State::Idle), None);
        };
        let span = self.enter(now, State::Busy);
        let rotation = if self.read_ahead && q.offset == self.head {
            0.0
        } else {
            self.rng.unit()
        };
        let mut charge = model.charge(self.head, q.offset, q.bytes, rotation);
        if speed != 1.0 {
            charge.slowdown_s = (charge.model_s() / speed - charge.model_s()) * scale();
        }
        self.head = q.offset + q.bytes;
        self.serving = Some(q.tag);
        let started = Started {
            offset: q.offset,
            bytes: q.bytes,
            charge,
            done_ns: self.since_ns + ns(charge.total_s()),
        };
        if let Some(history) = self.histories.get_mut(&q.stream) {
            history.last_done_ns = Some(started.done_ns);
            history.last_end = self.head;
        }
        (span, Some(started))
    }

    /// The request being served, taken (when it is done).
    pub fn take_serving(&mut self) -> Option<R> {
        self.serving.take()
    }

    /// Starts spinning up at `now`; returns the span left and when the disk is up.
    pub fn spin_up(&mut self, model: &DiskModel, now: u64) -> (Span, u64) {
        let span = self.enter(now, State::SpinningUp);
        (span, self.since_ns + ns(model.spin_up_s))
    }

    /// Starts spinning down at `now` (one more cycle); returns the span left and when the
    /// disk is down.
    pub fn spin_down(&mut self, model: &DiskModel, now: u64) -> (Span, u64) {
        let span = self.enter(now, State::SpinningDown);
        self.cycles += 1;
        (span, self.since_ns + ns(model.spin_down_s))
    }

    /// Every queued request, taken (a disk stopped before serving them).
    pub fn drain(&mut self) -> impl Iterator<Item = Queued<R>> + '_ {
        self.queue.drain(..)
    }

    /// The queued requests, in arrival order.
    pub fn queue(&self) -> impl Iterator<Item = &Queued<R>> {
        self.queue.iter()
    }

    /// The queued requests `expired` says to give up on, taken.
    pub fn take_expired(&mut self, expired: impl Fn(&Queued<R>) -> bool) -> Vec<Queued<R>> {
        let mut gone = Vec::new();
        for q in std::mem::take(&mut self.queue) {
            if expired(&q) {
                gone.push(q);
            } else {
                self.queue.push_back(q);
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> DiskModel {
        let text = include_str!("../../../../python/iowatt/sim/disks.toml");
        let mut all: std::collections::HashMap<String, DiskModel> =
            toml::from_str(text).expect("the shipped models parse");
        all.remove("ultrastar-36z15").expect("shipped")
    }

    #[test]
    fn a_request_is_charged_the_models_service_time_from_the_head() {
        let m = model();
        let mut d: Disk<u32> = Disk::new(Rng::new(7));
        let mut check = Rng::new(7);
        d.push(1, 1 << 30, 4096);
        let (idle, started) = d.start_next(&m, 1_000, 1.0, || 1.0);
        assert_eq!(
            (idle.state, idle.from_ns, idle.to_ns),
            (State::Idle, 0, 1_000)
        );
        let s = started.expect("queued");
        let want = m.service_s(0, 1 << 30, 4096, check.unit());
        assert_eq!(s.charge.total_s(), want);
        assert_eq!(s.done_ns, 1_000 + (want * 1e9).round() as u64);
        assert_eq!(d.head(), (1 << 30) + 4096);
        assert_eq!(d.take_serving(), Some(1));
    }

    #[test]
    fn a_slowed_disk_takes_the_service_time_over_its_speed() {
        let m = model();
        let (mut slow, mut full): (Disk<u32>, Disk<u32>) =
            (Disk::new(Rng::new(2)), Disk::new(Rng::new(2)));
        slow.push(1, 5 << 30, 65536);
        full.push(1, 5 << 30, 65536);
        let s = slow.start_next(&m, 0, 0.25, || 1.0).1.unwrap();
        let f = full.start_next(&m, 0, 1.0, || 1.0).1.unwrap();
        assert_eq!(s.charge.model_s(), f.charge.total_s());
        assert!((s.charge.total_s() - 4.0 * f.charge.total_s()).abs() < 1e-12);
        assert_eq!(f.charge.slowdown_s, 0.0);
    }

    #[test]
    fn the_elevator_serves_up_from_the_head_then_wraps_to_the_lowest() {
        let m = model();
        let mut d: Disk<u32> = Disk::new(Rng::new(1)).with_discipline(Discipline::Elevator);
        d.push(0, 5_000_000, 4096);
        let first = d.start_next(&m, 0, 1.0, || 1.0).1.unwrap();
        assert_eq!(first.offset, 5_000_000);
        for (tag, offset) in [
            (1, 9_000_000),
            (2, 1_000_000),
            (3, 6_000_000),
            (4, 3_000_000),
        ] {
            d.push(tag, offset, 4096);
        }
        let mut order = Vec::new();
        while let (_, Some(s)) = d.start_next(&m, 0, 1.0, || 1.0) {
            order.push(s.offset);
        }
        assert_eq!(order, [6_000_000, 9_000_000, 1_000_000, 3_000_000]);
    }

    #[test]
    fn cfq_serves_one_stream_per_slice_and_idles_briefly_for_its_next_request() {
        let m = model();
        let cfq = Discipline::Cfq {
            slice_ns: 100,
            idle_ns: 8,
        };
        let mut d: Disk<u32> = Disk::new(Rng::new(1)).with_discipline(cfq);
        for (tag, stream) in [(1, 7), (2, 9), (3, 7), (4, 9)] {
            d.push_from(0, stream, tag, 4096 * u64::from(tag), 4096);
        }
        let served = |d: &mut Disk<u32>, now| {
            d.start_next(&m, now, 1.0, || 1.0)
                .1
                .map(|_| d.take_serving().unwrap())
        };
        // Stream 7 has the oldest request: its slice, both its requests first.
        assert_eq!(served(&mut d, 0), Some(1));
        assert_eq!(served(&mut d, 10), Some(3));
        // It has nothing queued: the disk idles for it up to 8 ns, though 9 is waiting.
        assert_eq!(served(&mut d, 20), None);
        assert_eq!(d.waiting_until(), Some(28));
        // It asks again within the window: still its slice.
        d.push_from(25, 7, 5, 0, 4096);
        assert_eq!(served(&mut d, 25), Some(5));
        // The window passes: the slice goes to stream 9.
        assert_eq!(served(&mut d, 30), None);
        assert_eq!(served(&mut d, 38), Some(2));
        assert_eq!(d.waiting_until(), None);
        // Its slice ends at 138: a new one goes to the oldest request's stream (9's again).
        d.push_from(138, 7, 6, 0, 4096);
        assert_eq!(served(&mut d, 138), Some(4));
        let left = served(&mut d, 140);
        assert_eq!(left, None, "7's request waits out 9's idle window");
        assert_eq!(served(&mut d, 148), Some(6));
    }

    /// Serves one request of stream 7 at `offset`, arriving at `at` ns; returns when it ends.
    fn serve_one(d: &mut Disk<u32>, m: &DiskModel, at: u64, offset: u64) -> u64 {
        d.push_from(at, 7, 0, offset, 4096);
        let started = d.start_next(m, at, 1.0, || 1.0).1.expect("queued");
        d.take_serving();
        started.done_ns
    }

    /// Whether CFQ, after `d`'s history, idles for stream 7 while stream 9 waits.
    fn idles_for_7(d: &mut Disk<u32>, m: &DiskModel, now: u64) -> bool {
        d.push_from(now, 9, 1, 1 << 30, 4096);
        let (_, started) = d.start_next(m, now, 1.0, || 1.0);
        started.is_none() && d.waiting_until().is_some()
    }

    #[test]
    fn cfq_stops_idling_for_a_stream_that_thinks_longer_than_the_window() {
        let m = model();
        let idle_ns = 8_000_000;
        let cfq = Discipline::Cfq {
            slice_ns: 10_000_000_000,
            idle_ns,
        };
        for (think_ns, idles) in [(6_000_000, true), (10_000_000, false)] {
            let mut d: Disk<u32> = Disk::new(Rng::new(1)).with_discipline(cfq);
            let mut at = 0;
            // Sequential requests, each `think_ns` after the last ended: once CFQ has seen a
            // few (its mean is valid past 80/256 of a full weight), it judges the think time.
            for k in 0..6 {
                let done = serve_one(&mut d, &m, at, k * 4096);
                at = done + think_ns;
            }
            let now = at - think_ns;
            assert_eq!(idles_for_7(&mut d, &m, now), idles, "think {think_ns} ns");
        }
    }

    #[test]
    fn cfq_does_not_idle_for_a_seeky_stream() {
        let m = model();
        let cfq = Discipline::Cfq {
            slice_ns: 10_000_000_000,
            idle_ns: 8_000_000,
        };
        for (stride, idles) in [(4096u64, true), (1 << 20, false)] {
            let mut d: Disk<u32> = Disk::new(Rng::new(1)).with_discipline(cfq);
            let mut at = 0;
            // Back to back; a stride over 400 KiB (800 sectors) is a seek each time.
            for k in 0..6 {
                at = serve_one(&mut d, &m, at, k * stride);
            }
            assert_eq!(idles_for_7(&mut d, &m, at), idles, "stride {stride}");
        }
    }

    #[test]
    fn with_read_ahead_a_request_where_the_last_ended_pays_no_rotation() {
        let m = model();
        let mut d: Disk<u32> = Disk::new(Rng::new(3)).with_read_ahead();
        d.push(0, 1 << 20, 65536);
        let first = d.start_next(&m, 0, 1.0, || 1.0).1.unwrap();
        assert!(
            first.charge.rotation_s > 0.0,
            "a jump waits for the platter"
        );
        d.take_serving();
        d.push(1, (1 << 20) + 65536, 65536);
        let next = d.start_next(&m, first.done_ns, 1.0, || 1.0).1.unwrap();
        assert_eq!((next.charge.seek_s, next.charge.rotation_s), (0.0, 0.0));
    }

    #[test]
    fn a_command_queue_reorders_only_the_requests_it_holds() {
        let m = model();
        let mut d: Disk<u32> = Disk::new(Rng::new(1)).with_discipline(Discipline::Ncq { depth: 2 });
        for (tag, offset) in [(0, 9_000_000), (1, 5_000_000), (2, 1_000_000)] {
            d.push(tag, offset, 4096);
        }
        let mut order = Vec::new();
        while let (_, Some(s)) = d.start_next(&m, 0, 1.0, || 1.0) {
            order.push(s.offset);
        }
        // From the head at 0 it holds 9 M and 5 M: 5 M first; then 9 M and 1 M: 9 M is ahead.
        assert_eq!(order, [5_000_000, 9_000_000, 1_000_000]);
    }

    #[test]
    fn energy_is_each_states_watts_times_its_time_spin_joules_included() {
        let m = model();
        let mut d: Disk<u32> = Disk::new(Rng::new(1));
        let (_, down) = d.spin_down(&m, 2_000_000_000);
        d.enter(down, State::Standby);
        let (_, up) = d.spin_up(&m, down + 5_000_000_000);
        d.enter(up, State::Idle);
        assert_eq!(d.cycles(), 1);
        let want = m.idle.watts() * 2.0
            + m.spin_down_j
            + m.standby.watts() * 5.0
            + m.spin_up_j
            + m.idle.watts() * 1.0;
        let got = d.energy_j(&m, up + 1_000_000_000);
        assert!((got - want).abs() < 1e-9, "{got} J, want {want} J");
    }
}
