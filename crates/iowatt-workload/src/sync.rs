//! What FileBench's threads coordinate through: the event generator that rate-limiting flowops
//! consume, semaphores (semblock/sempost, with sempost's high-water back-pressure) and
//! condition variables (block/wakeup). Every wait wakes at least every [`TICK`] to see whether
//! the run is over, so no thread outlives the runtime waiting for a partner that has stopped.

use std::sync::atomic::{AtomicI64, AtomicU32, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use iowatt_metrics::now_ns;

use crate::recorder::Missed;

const TICK: Duration = Duration::from_millis(50);

/// A poisoned lock is still usable: the data it guards are counters and flags.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits on `cv` until `ready` holds, waking every [`TICK`] to ask `stopping`; `None` if the
/// run stopped first.
fn wait_until<'a, T>(
    cv: &Condvar,
    mut guard: MutexGuard<'a, T>,
    ready: impl Fn(&T) -> bool,
    stopping: &dyn Fn() -> bool,
) -> Option<MutexGuard<'a, T>> {
    while !ready(&guard) {
        if stopping() {
            return None;
        }
        guard = cv
            .wait_timeout(guard, TICK)
            .map_or_else(|e| e.into_inner().0, |r| r.0);
    }
    Some(guard)
}

/// `eventgen rate=N`: N events per second from the start of the run. Events not consumed
/// accumulate, as FileBench's event queue does; event k is available at start + k/N.
pub struct EventGen {
    start_ns: u64,
    period_ns: f64,
    taken: std::sync::atomic::AtomicU64,
}

impl EventGen {
    pub fn new(rate: f64, start_ns: u64) -> Self {
        Self {
            start_ns,
            period_ns: 1e9 / rate,
            taken: Default::default(),
        }
    }

    /// When event `k` (from 1) is generated.
    fn due(&self, k: u64) -> u64 {
        self.start_ns + (k as f64 * self.period_ns) as u64
    }

    /// The events generated before `cutoff`: how many were taken, and those never taken.
    pub fn backlog(&self, cutoff: u64) -> EventBacklog {
        if cutoff <= self.start_ns {
            return EventBacklog::default();
        }
        let mut n = ((cutoff - self.start_ns) as f64 / self.period_ns) as u64;
        while n > 0 && self.due(n) >= cutoff {
            n -= 1;
        }
        while self.due(n + 1) < cutoff {
            n += 1;
        }
        // Events are handed out in order, and a thread given one due before the cutoff gets
        // it (the run stops no earlier): every event claimed up to `n` was taken.
        let taken = self.taken.load(std::sync::atomic::Ordering::Relaxed).min(n);
        let missed = (taken < n).then(|| Missed {
            first: self.due(taken + 1),
            step: self.period_ns.round() as u64,
            n: n - taken,
        });
        EventBacklog { taken, missed }
    }

    /// Waits until `n` more events have been generated and takes them; false if the run
    /// stopped first.
    pub fn take(&self, n: u64, stopping: &dyn Fn() -> bool) -> bool {
        let last = self
            .taken
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
            + n;
        let due = self.start_ns + (last as f64 * self.period_ns) as u64;
        sleep_until(due, stopping)
    }
}

/// An event generator's events before a cutoff: how many were taken, and those never taken.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EventBacklog {
    pub taken: u64,
    pub missed: Option<Missed>,
}

/// Sleeps until CLOCK_MONOTONIC `due`; false if `stopping` said so first.
pub fn sleep_until(due: u64, stopping: &dyn Fn() -> bool) -> bool {
    loop {
        let now = now_ns();
        if now >= due {
            return true;
        }
        if stopping() {
            return false;
        }
        std::thread::sleep(Duration::from_nanos(due - now).min(TICK));
    }
}

/// One instance of a semblock flowop: `posted` counts posts not yet consumed; `room` is how far
/// posters may run ahead (the high-water mark), refilled by each block. Posts are atomic adds
/// and wake the blocked thread only once its `value` is reached, as a SysV semaphore does:
/// oltp's 20 shadows post to 11 of these per loop, and a wake-up per post cost it a third of
/// its throughput.
pub struct Sem {
    posted: AtomicI64,
    room: AtomicI64,
    /// The posts the thread in `block` waits for; 0 while it runs. One thread instance owns
    /// each Sem, so there is at most one.
    need: AtomicI64,
    /// Blocking posts waiting for room.
    full: AtomicU32,
    sleep: Mutex<()>,
    to_block: Condvar,
    to_post: Condvar,
}

/// Takes `value` from `n` if it holds that much.
fn take(n: &AtomicI64, value: i64) -> bool {
    n.fetch_update(SeqCst, SeqCst, |v| (v >= value).then_some(v - value))
        .is_ok()
}

impl Sem {
    pub fn new(highwater: u64) -> Self {
        Self {
            posted: AtomicI64::new(0),
            room: AtomicI64::new(highwater as i64),
            need: AtomicI64::new(0),
            full: AtomicU32::new(0),
            sleep: Mutex::new(()),
            to_block: Condvar::new(),
            to_post: Condvar::new(),
        }
    }

    /// semblock: give `value` of room back, then wait for `value` posts.
    pub fn block(&self, value: u64, stopping: &dyn Fn() -> bool) -> bool {
        let value = value as i64;
        self.room.fetch_add(value, SeqCst);
        if self.full.load(SeqCst) > 0 {
            let _g = lock(&self.sleep);
            self.to_post.notify_all();
        }
        if take(&self.posted, value) {
            return true;
        }
        // `need` is published before `posted` is read again and a post adds before it reads
        // `need` (all SeqCst), so one of the two sees the other; the notify under the lock
        // cannot fall between this check and the wait.
        let g = lock(&self.sleep);
        self.need.store(value, SeqCst);
        let woken = wait_until(&self.to_block, g, |_| take(&self.posted, value), stopping);
        self.need.store(0, SeqCst);
        woken.is_some()
    }

    /// sempost: add `value` posts; with `blocking`, first wait for that much room.
    pub fn post(&self, value: u64, blocking: bool, stopping: &dyn Fn() -> bool) -> bool {
        let value = value as i64;
        if blocking && !take(&self.room, value) {
            let g = lock(&self.sleep);
            self.full.fetch_add(1, SeqCst);
            let got = wait_until(&self.to_post, g, |_| take(&self.room, value), stopping);
            self.full.fetch_sub(1, SeqCst);
            if got.is_none() {
                return false;
            }
        }
        let posted = self.posted.fetch_add(value, SeqCst) + value;
        let need = self.need.load(SeqCst);
        if need > 0 && posted >= need {
            let _g = lock(&self.sleep);
            self.to_block.notify_one();
        }
        true
    }
}

/// One instance of a block flowop, woken by a wakeup naming it.
#[derive(Default)]
pub struct Gate {
    generation: Mutex<u64>,
    cv: Condvar,
}

impl Gate {
    pub fn wait(&self, stopping: &dyn Fn() -> bool) -> bool {
        let g = lock(&self.generation);
        let seen = *g;
        wait_until(&self.cv, g, |g| *g != seen, stopping).is_some()
    }

    pub fn wake(&self) {
        *lock(&self.generation) += 1;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_events_due_before_a_cutoff_were_taken_or_are_its_backlog() {
        let backlog = |taken, missed: Option<(u64, u64, u64)>| EventBacklog {
            taken,
            missed: missed.map(|(first, step, n)| Missed { first, step, n }),
        };
        // 3 events/s from t = 0: events 1 to 5 are due before 2 s (at 333 ms, 667 ms … 1.667 s).
        let events = EventGen::new(3.0, 0);
        assert_eq!(events.backlog(0), backlog(0, None));
        let period = 333_333_333;
        assert_eq!(
            events.backlog(2_000_000_000),
            backlog(0, Some((period, period, 5)))
        );
        events.taken.store(2, SeqCst);
        assert_eq!(
            events.backlog(2_000_000_000),
            backlog(2, Some((1_000_000_000, period, 3)))
        );
        // An event due exactly at the cutoff is not before it; one claimed after it never was.
        assert_eq!(events.backlog(1_000_000_000), backlog(2, None));
        events.taken.store(9, SeqCst);
        assert_eq!(events.backlog(2_000_000_000), backlog(5, None));
    }

    #[test]
    fn a_block_waits_for_enough_posts() {
        let sem = Arc::new(Sem::new(10));
        let never = || false;
        let s2 = sem.clone();
        let waiter = std::thread::spawn(move || s2.block(3, &|| false));
        for _ in 0..3 {
            assert!(sem.post(1, false, &never));
        }
        assert!(waiter.join().unwrap());
        assert_eq!(sem.posted.load(SeqCst), 0);
        assert_eq!(sem.room.load(SeqCst), 13);
    }

    #[test]
    fn a_blocking_post_stops_at_the_high_water_mark() {
        let sem = Sem::new(2);
        let never = || false;
        assert!(sem.post(1, true, &never));
        assert!(sem.post(1, true, &never));
        // No room left and nobody blocking: the post gives up only when the run stops.
        let t0 = now_ns();
        let stop_after = move || now_ns() - t0 > 120_000_000;
        assert!(!sem.post(1, true, &stop_after));
        assert!(sem.block(2, &never));
        assert!(sem.post(1, true, &never));
    }

    #[test]
    fn posts_and_blocks_balance_under_contention() {
        // 4 posters × 5,000 blocking posts against one thread blocking 400 × 50: every post is
        // consumed exactly once and the room comes out even.
        let sem = Arc::new(Sem::new(100));
        let posters: Vec<_> = (0..4)
            .map(|_| {
                let s = sem.clone();
                std::thread::spawn(move || (0..5_000).all(|_| s.post(1, true, &|| false)))
            })
            .collect();
        assert!((0..400).all(|_| sem.block(50, &|| false)));
        assert!(posters.into_iter().all(|p| p.join().unwrap()));
        assert_eq!(sem.posted.load(SeqCst), 0);
        assert_eq!(sem.room.load(SeqCst), 100 + 400 * 50 - 20_000);
    }

    #[test]
    fn events_arrive_at_the_rate() {
        let start = now_ns();
        let gen = EventGen::new(200.0, start);
        for _ in 0..20 {
            assert!(gen.take(1, &|| false));
        }
        // 20 events at 200/s are due 100 ms after the start, not before.
        assert!(now_ns() - start >= 100_000_000);
    }

    #[test]
    fn a_gate_opens_on_wake() {
        let gate = Arc::new(Gate::default());
        let g2 = gate.clone();
        let waiter = std::thread::spawn(move || g2.wait(&|| false));
        while Arc::strong_count(&gate) > 1 && !waiter.is_finished() {
            gate.wake();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(waiter.join().unwrap());
    }
}
