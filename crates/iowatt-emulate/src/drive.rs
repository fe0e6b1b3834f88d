//! The disk behind the mount, in real time: iowatt-sim's [`Disk`] state machine fed with each
//! read and write as it arrives, and a timer thread that answers each one when the model says
//! the disk finished it, spins the idle disk down and records what every request was charged.
//!
//! The model keeps its own time line: a request starts when the previous one finished (or when
//! it arrived at an idle disk), by the model's clock, never when the timer thread happened to
//! wake. A late wake-up delays an answer, not the disk, so lateness never accumulates.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fuser::{FileAttr, ReplyAttr, ReplyData, ReplyEntry, ReplyWrite};
use iowatt_metrics::Rng;
use iowatt_sim::disk::{Charge, Discipline, Disk, DiskModel, Started, State};

/// What answers a request once the disk is done with it.
pub trait Answer: Send + 'static {
    fn send(self);
    /// The request failed (a stall held it past the cap): EIO.
    fn fail(self);
}

/// The kernel's request, answered through FUSE: a read's data, a write's count, or a name's
/// or a file's attributes once its metadata has been read.
pub enum Reply {
    Read(ReplyData, Vec<u8>),
    Write(ReplyWrite, u32),
    Entry(ReplyEntry, FileAttr),
    Attr(ReplyAttr, FileAttr),
}

impl Answer for Reply {
    fn send(self) {
        match self {
            Reply::Read(r, data) => r.data(&data),
            Reply::Write(r, n) => r.written(n),
            Reply::Entry(r, a) => r.entry(&crate::fs::TTL, &a, fuser::Generation(0)),
            Reply::Attr(r, a) => r.attr(&crate::fs::TTL, &a),
        }
    }

    fn fail(self) {
        match self {
            Reply::Read(r, _) => r.error(fuser::Errno::EIO),
            Reply::Write(r, _) => r.error(fuser::Errno::EIO),
            Reply::Entry(r, _) => r.error(fuser::Errno::EIO),
            Reply::Attr(r, _) => r.error(fuser::Errno::EIO),
        }
    }
}

/// A throughput curve, r(s): the fraction of its speed the disk keeps at stimulus s (fan PWM %,
/// g RMS, Hz), linear between points; and how long a stall (r = 0) may hold a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Vibration {
    /// (stimulus, r) in ascending stimulus, r within 0..1.
    pub curve: Vec<(f64, f64)>,
    /// The stimulus at the start.
    pub at: f64,
    pub stall_cap: Duration,
    /// Measured tails: per step's stimulus, ascending, the quantiles (at u = (i + ½) / n) of
    /// the multiplier a request's added time is scaled by, X / E[X] (mean 1). Empty: every
    /// request adds the constant S / r − S.
    pub tails: Vec<(f64, Vec<f64>)>,
}

impl Vibration {
    /// The stimulus values the curve covers.
    pub fn range(&self) -> (f64, f64) {
        let first = self.curve.first().map_or(0.0, |p| p.0);
        (first, self.curve.last().map_or(first, |p| p.0))
    }

    /// A draw `u` (0..1) from the tail of the step nearest stimulus `s`: the multiplier of the
    /// request's added time (1 without tails).
    pub fn scale(&self, s: f64, u: f64) -> f64 {
        let nearest = self
            .tails
            .iter()
            .min_by(|a, b| (a.0 - s).abs().total_cmp(&(b.0 - s).abs()));
        match nearest {
            Some((_, q)) if !q.is_empty() => q[((u * q.len() as f64) as usize).min(q.len() - 1)],
            _ => 1.0,
        }
    }

    /// r at stimulus `s` (within [`Self::range`]), linear between the curve's points.
    pub fn speed(&self, s: f64) -> f64 {
        let c = &self.curve;
        let i = c.partition_point(|p| p.0 < s);
        match (i.checked_sub(1).map(|j| c[j]), c.get(i)) {
            (_, Some(&(x, r))) if x == s => r,
            (Some((x0, r0)), Some(&(x1, r1))) => r0 + (r1 - r0) * (s - x0) / (x1 - x0),
            (Some((_, r)), None) | (None, Some(&(_, r))) => r,
            (None, None) => 1.0,
        }
    }
}

/// Why a stimulus was not set.
#[derive(Debug, Clone, PartialEq)]
pub enum SetError {
    NoCurve,
    /// Another source (a BMC being followed) sets it.
    Locked,
    OutOfRange {
        value: f64,
        low: f64,
        high: f64,
    },
}

/// The stimulus set at a time, and the speed it gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stimulus {
    pub t_ns: u64,
    pub value: f64,
    pub speed: f64,
}

/// A request in the disk's queue or being served.
pub struct Pending<A> {
    pub reply: A,
    pub arrived_ns: u64,
    pub write: bool,
    /// The process that asked (FUSE gives its pid): CFQ's stream.
    pub stream: u32,
}

/// One request as the disk served it, ns from the mount.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub arrived_ns: u64,
    pub started_ns: u64,
    pub done_ns: u64,
    /// Disk offset and bytes.
    pub offset: u64,
    pub bytes: u64,
    pub write: bool,
    pub charge: Charge,
    /// Answered at once when the disk was stopped, before the model finished it.
    pub drained: bool,
    /// Held by a stall past the cap, and failed with EIO.
    pub failed: bool,
    pub stream: u32,
}

/// What one stream (a process) had served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounts {
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
}

/// A power state entered, ns from the mount.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pub t_ns: u64,
    pub state: State,
}

/// What the disk has done so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub now_ns: u64,
    pub state: State,
    /// Requests queued, the one being served included.
    pub queue: usize,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub drained: u64,
    pub failed: u64,
    pub cycles: u64,
    /// Per state, in [`State::ALL`]'s order: time so far, ns.
    pub state_ns: [u64; 5],
    pub energy_j: f64,
    /// The stimulus in force (None without a curve), the speed it gives, and whether
    /// requests are held (speed 0 with requests queued).
    pub stimulus: Option<f64>,
    pub speed: f64,
    pub stalled: bool,
}

struct Inner<A> {
    disk: Disk<Pending<A>>,
    /// The request being served: when it started and what it costs.
    serving: Option<Started>,
    /// When the state under way ends (busy, spinning up or down).
    due_ns: u64,
    served: Vec<Served>,
    changes: Vec<Change>,
    stimuli: Vec<Stimulus>,
    speed: f64,
    /// The draws of the tails' multipliers.
    tail_rng: Rng,
    locked: bool,
    failed: u64,
    streams: std::collections::BTreeMap<u32, StreamCounts>,
    read_ops: u64,
    write_ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    drained: u64,
    stopped: bool,
}

pub struct Drive<A> {
    model: DiskModel,
    vibration: Option<Vibration>,
    spin_down_ns: Option<u64>,
    epoch: Instant,
    /// The epoch on CLOCK_MONOTONIC, ns: where the mount's clock starts for other tools.
    epoch_ns: u64,
    inner: Mutex<Inner<A>>,
    wake: Condvar,
}

impl<A: Answer> Drive<A> {
    /// An idle disk whose rotational positions come from the first of `rngs` (its tails'
    /// draws from the second), picking requests by
    /// `discipline`; with `spin_down`, it spins down after idling that long; with `vibration`,
    /// it runs at the curve's speed for the stimulus in force.
    pub fn new(
        model: DiskModel,
        spin_down: Option<Duration>,
        rngs: (Rng, Rng),
        discipline: Discipline,
        vibration: Option<Vibration>,
    ) -> Self {
        let (rng, tail_rng) = rngs;
        let speed = vibration.as_ref().map_or(1.0, |v| v.speed(v.at));
        let stimuli = vibration.iter().map(|v| Stimulus {
            t_ns: 0,
            value: v.at,
            speed,
        });
        Drive {
            model,
            spin_down_ns: spin_down.map(|d| d.as_nanos() as u64),
            epoch: Instant::now(),
            epoch_ns: iowatt_metrics::clock::now_ns(),
            inner: Mutex::new(Inner {
                disk: Disk::new(rng).with_discipline(discipline),
                serving: None,
                due_ns: 0,
                served: Vec::new(),
                changes: vec![Change {
                    t_ns: 0,
                    state: State::Idle,
                }],
                stimuli: stimuli.collect(),
                speed,
                tail_rng,
                locked: false,
                failed: 0,
                streams: Default::default(),
                read_ops: 0,
                write_ops: 0,
                read_bytes: 0,
                write_bytes: 0,
                drained: 0,
                stopped: false,
            }),
            wake: Condvar::new(),
            vibration,
        }
    }

    pub fn model(&self) -> &DiskModel {
        &self.model
    }

    /// Where the mount's clock starts, on CLOCK_MONOTONIC, ns.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// Where the mount's clock is: ns since the disk was made.
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The instant `t_ns` on the mount's clock stands for.
    pub fn instant(&self, t_ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(t_ns)
    }

    fn lock_inner(&self) -> MutexGuard<'_, Inner<A>> {
        // Every update is made whole under the lock, so a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request for `bytes` at disk offset `offset`: queued, and answered when served (at
    /// once once the disk is stopped). It reaches the disk when it reached the mount: the
    /// backing file's own I/O since then is hidden inside the model's service time.
    pub fn submit(&self, pending: Pending<A>, offset: u64, bytes: u64) {
        let now = pending.arrived_ns;
        let mut g = self.lock_inner();
        let answers = self.advance(&mut g, now);
        if g.stopped {
            drop(g);
            answers.send();
            pending.reply.send();
            return;
        }
        g.disk
            .push_from(now, pending.stream, pending, offset, bytes);
        match g.disk.state() {
            State::Idle => self.start_next(&mut g, now),
            State::Standby => self.spin_up(&mut g, now),
            _ => {}
        }
        drop(g);
        self.wake.notify_one();
        answers.send();
    }

    fn note(g: &mut Inner<A>, t_ns: u64, before: State) {
        let state = g.disk.state();
        if state != before {
            g.changes.push(Change { t_ns, state });
        }
    }

    fn start_next(&self, g: &mut Inner<A>, t: u64) {
        let before = g.disk.state();
        if g.speed <= 0.0 && g.disk.queued() > 0 {
            // A stall: the disk holds its queue until it speeds up again or the cap passes.
            g.disk.enter(t, State::Idle);
            Self::note(g, t, before);
            return;
        }
        let Inner {
            disk,
            stimuli,
            tail_rng,
            speed,
            ..
        } = g;
        // A tail's draw only for a request that starts slowed: one draw per such request.
        let scale = || match &self.vibration {
            Some(v) => v.scale(stimuli.last().map_or(v.at, |s| s.value), tail_rng.unit()),
            None => 1.0,
        };
        let (_, started) = disk.start_next(&self.model, t, *speed, scale);
        if let Some(s) = &started {
            g.due_ns = s.done_ns;
        }
        g.serving = started;
        Self::note(g, t, before);
    }

    fn spin_up(&self, g: &mut Inner<A>, t: u64) {
        let before = g.disk.state();
        let (_, up) = g.disk.spin_up(&self.model, t);
        g.due_ns = up;
        Self::note(g, t, before);
    }

    /// Brings the model up to `now`: finishes what is due, in the model's own time, and
    /// returns the answers to send (outside the lock).
    fn advance(&self, g: &mut Inner<A>, now: u64) -> Answers<A> {
        let mut replies = Vec::new();
        let mut failures = Vec::new();
        loop {
            let state = g.disk.state();
            match state {
                State::Busy if g.due_ns <= now => {
                    let t = g.due_ns;
                    self.finish(g, t, false, &mut replies);
                    self.start_next(g, t);
                }
                State::SpinningUp if g.due_ns <= now => {
                    let t = g.due_ns;
                    self.start_next(g, t);
                }
                State::SpinningDown if g.due_ns <= now => {
                    let t = g.due_ns;
                    g.disk.enter(t, State::Standby);
                    Self::note(g, t, state);
                    if g.disk.queued() > 0 && g.speed > 0.0 {
                        self.spin_up(g, t);
                    }
                }
                // CFQ idling for its slice's stream, with others' requests queued.
                State::Idle if g.disk.queued() > 0 && g.speed > 0.0 => {
                    match g.disk.waiting_until() {
                        Some(t) if t <= now => self.start_next(g, t),
                        _ => break,
                    }
                }
                State::Idle if g.disk.queued() > 0 => {
                    let cap = self.stall_cap_ns();
                    let gone = g.disk.take_expired(|q| q.tag.arrived_ns + cap <= now);
                    if gone.is_empty() {
                        break;
                    }
                    for q in gone {
                        let t = q.tag.arrived_ns + cap;
                        g.failed += 1;
                        g.served.push(Served {
                            arrived_ns: q.tag.arrived_ns,
                            started_ns: t,
                            done_ns: t,
                            offset: q.offset,
                            bytes: q.bytes,
                            write: q.tag.write,
                            charge: Charge::default(),
                            drained: false,
                            failed: true,
                            stream: q.stream,
                        });
                        failures.push(q.tag.reply);
                    }
                }
                State::Idle => match self.spin_down_ns {
                    Some(after) if g.disk.since_ns() + after <= now => {
                        let t = g.disk.since_ns() + after;
                        let (_, down) = g.disk.spin_down(&self.model, t);
                        g.due_ns = down;
                        Self::note(g, t, state);
                    }
                    _ => break,
                },
                _ => break,
            }
        }
        Answers { replies, failures }
    }

    fn stall_cap_ns(&self) -> u64 {
        self.vibration
            .as_ref()
            .map_or(u64::MAX / 2, |v| v.stall_cap.as_nanos() as u64)
    }

    /// Sets the stimulus: from now on requests start at the curve's speed for it.
    pub fn set_stimulus(&self, value: f64) -> Result<f64, SetError> {
        let v = self.vibration.as_ref().ok_or(SetError::NoCurve)?;
        let (low, high) = v.range();
        if !(low..=high).contains(&value) {
            return Err(SetError::OutOfRange { value, low, high });
        }
        self.set(value, v.speed(value), false)
    }

    /// Refuses [`Self::set_stimulus`] from now on (a BMC is followed instead), or lets it again.
    pub fn lock(&self, locked: bool) {
        self.lock_inner().locked = locked;
    }

    /// Sets the stimulus whoever holds the lock: the follower of a BMC.
    pub fn follow(&self, value: f64) -> Result<f64, SetError> {
        let v = self.vibration.as_ref().ok_or(SetError::NoCurve)?;
        let (low, high) = v.range();
        let clamped = value.clamp(low, high);
        self.set(clamped, v.speed(clamped), true)
    }

    fn set(&self, value: f64, speed: f64, owner: bool) -> Result<f64, SetError> {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        if g.locked && !owner {
            return Err(SetError::Locked);
        }
        let answers = self.advance(&mut g, now);
        g.speed = speed;
        g.stimuli.push(Stimulus {
            t_ns: now,
            value,
            speed,
        });
        if speed > 0.0 && g.disk.state() == State::Idle && g.disk.queued() > 0 {
            self.start_next(&mut g, now);
        }
        drop(g);
        self.wake.notify_one();
        answers.send();
        Ok(speed)
    }

    /// Records the request being served as done at `t` and hands back its answer.
    fn finish(&self, g: &mut Inner<A>, t: u64, drained: bool, replies: &mut Vec<A>) {
        let (Some(p), Some(s)) = (g.disk.take_serving(), g.serving.take()) else {
            return;
        };
        // Still busy with it: the state began when the request did.
        let started_ns = g.disk.since_ns();
        Self::count(g, &p, s.bytes, drained);
        g.served.push(Served {
            arrived_ns: p.arrived_ns,
            started_ns,
            done_ns: t,
            offset: s.offset,
            bytes: s.bytes,
            write: p.write,
            charge: s.charge,
            drained,
            failed: false,
            stream: p.stream,
        });
        replies.push(p.reply);
    }

    fn count(g: &mut Inner<A>, p: &Pending<A>, bytes: u64, drained: bool) {
        let stream = g.streams.entry(p.stream).or_default();
        if p.write {
            g.write_ops += 1;
            g.write_bytes += bytes;
            stream.write_ops += 1;
            stream.write_bytes += bytes;
        } else {
            g.read_ops += 1;
            g.read_bytes += bytes;
            stream.read_ops += 1;
            stream.read_bytes += bytes;
        }
        g.drained += u64::from(drained);
    }

    /// When the model next has something to do, on the mount's clock.
    fn next_due(&self, g: &Inner<A>) -> Option<u64> {
        match g.disk.state() {
            State::Busy | State::SpinningUp | State::SpinningDown => Some(g.due_ns),
            State::Idle if g.disk.queued() > 0 && g.speed > 0.0 => g.disk.waiting_until(),
            // Stalled: when the first held request reaches the cap.
            State::Idle if g.disk.queued() > 0 => {
                let first = g.disk.queue().map(|q| q.tag.arrived_ns).min()?;
                Some(first.saturating_add(self.stall_cap_ns()))
            }
            State::Idle => self.spin_down_ns.map(|after| g.disk.since_ns() + after),
            State::Standby => None,
        }
    }

    /// The timer thread's loop: answers requests as they come due until [`Self::stop`].
    pub fn run_timer(&self) {
        let mut g = self.lock_inner();
        while !g.stopped {
            let answers = self.advance(&mut g, self.now_ns());
            if !answers.is_empty() {
                drop(g);
                answers.send();
                g = self.lock_inner();
                continue;
            }
            g = match self.next_due(&g) {
                Some(due) => {
                    let left = self.instant(due).saturating_duration_since(Instant::now());
                    self.wake
                        .wait_timeout(g, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.wake.wait(g).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// Stops the disk: what is due is finished, and every request still queued or being
    /// served is answered at once (its data was read or written on arrival), counted as
    /// drained. Later requests are answered as they come.
    pub fn stop(&self) {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        let mut answers = self.advance(&mut g, now);
        let replies = &mut answers.replies;
        self.finish(&mut g, now, true, replies);
        let before = g.disk.state();
        let queued: Vec<_> = g.disk.drain().collect();
        for q in queued {
            Self::count(&mut g, &q.tag, q.bytes, true);
            g.served.push(Served {
                arrived_ns: q.tag.arrived_ns,
                started_ns: now,
                done_ns: now,
                offset: q.offset,
                bytes: q.bytes,
                write: q.tag.write,
                charge: Charge::default(),
                drained: true,
                failed: false,
                stream: q.stream,
            });
            replies.push(q.tag.reply);
        }
        if matches!(before, State::Busy) {
            g.disk.enter(now, State::Idle);
            Self::note(&mut g, now, before);
        }
        g.stopped = true;
        drop(g);
        self.wake.notify_all();
        answers.send();
    }

    /// What the disk has done up to now.
    pub fn counters(&self) -> Counters {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        let answers = self.advance(&mut g, now);
        let c = self.counters_at(&g, now);
        drop(g);
        answers.send();
        c
    }

    fn counters_at(&self, g: &Inner<A>, now: u64) -> Counters {
        let disk = &g.disk;
        let mut state_ns = [0; 5];
        for (i, s) in State::ALL.iter().enumerate() {
            state_ns[i] = disk.time_ns(*s);
            if *s == disk.state() {
                state_ns[i] += now.saturating_sub(disk.since_ns());
            }
        }
        Counters {
            now_ns: now,
            state: disk.state(),
            queue: disk.queued() + usize::from(g.serving.is_some()),
            read_ops: g.read_ops,
            write_ops: g.write_ops,
            read_bytes: g.read_bytes,
            write_bytes: g.write_bytes,
            drained: g.drained,
            failed: g.failed,
            cycles: disk.cycles(),
            state_ns,
            energy_j: disk.energy_j(&self.model, now),
            stimulus: g.stimuli.last().map(|s| s.value),
            speed: g.speed,
            stalled: g.speed <= 0.0 && disk.queued() > 0,
        }
    }

    /// Everything served, every state change and every stimulus set so far, taken, with the
    /// counters at the end.
    pub fn take_log(&self) -> Log {
        let now = self.now_ns();
        let mut g = self.lock_inner();
        Log {
            counters: self.counters_at(&g, now),
            served: std::mem::take(&mut g.served),
            changes: std::mem::take(&mut g.changes),
            stimuli: std::mem::take(&mut g.stimuli),
        }
    }

    /// What each stream (process) has had served so far.
    pub fn streams(&self) -> Vec<(u32, StreamCounts)> {
        let g = self.lock_inner();
        g.streams.iter().map(|(&k, &v)| (k, v)).collect()
    }

    /// The stimulus' range, without a curve None.
    pub fn stimulus_range(&self) -> Option<(f64, f64)> {
        self.vibration.as_ref().map(Vibration::range)
    }
}

/// What a disk did: the requests it served, its state changes and stimuli, its counters.
#[derive(Debug, Clone)]
pub struct Log {
    pub served: Vec<Served>,
    pub changes: Vec<Change>,
    pub stimuli: Vec<Stimulus>,
    pub counters: Counters,
}

/// Answers to send once the lock is let go: requests served, and requests failed.
struct Answers<A> {
    replies: Vec<A>,
    failures: Vec<A>,
}

impl<A: Answer> Answers<A> {
    fn is_empty(&self) -> bool {
        self.replies.is_empty() && self.failures.is_empty()
    }

    fn send(self) {
        self.replies.into_iter().for_each(A::send);
        self.failures.into_iter().for_each(A::fail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_is_linear_between_the_curve_s_points_and_tails_keep_their_mean() {
        let v = Vibration {
            curve: vec![(0.0, 1.0), (50.0, 0.5), (100.0, 0.0)],
            at: 0.0,
            stall_cap: Duration::from_secs(1),
            tails: vec![(50.0, vec![0.0, 0.5, 1.0, 2.5]), (100.0, vec![1.0; 4])],
        };
        assert_eq!(v.range(), (0.0, 100.0));
        assert_eq!(v.speed(25.0), 0.75);
        assert_eq!(v.speed(50.0), 0.5);
        assert_eq!(v.speed(100.0), 0.0);
        // The nearest step's quantiles, by u: their mean over uniform u is the table's mean.
        let mut rng = Rng::new(9);
        let n = 100_000;
        let mean = (0..n).map(|_| v.scale(60.0, rng.unit())).sum::<f64>() / n as f64;
        assert!((mean - 1.0).abs() < 0.02, "{mean}");
        assert_eq!(v.scale(90.0, 0.3), 1.0);
    }
}
