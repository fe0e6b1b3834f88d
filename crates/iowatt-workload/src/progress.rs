//! A handle shared between the engine and whoever watches it (the Python progress bar, the
//! metrics endpoint): cheap counters the workers publish in batches, the measured latencies
//! merged once per interval, the phase, and the cancel flag.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use iowatt_metrics::{now_ns, LiveTally};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    Idle = 0,
    Preparing = 1,
    Ramp = 2,
    Running = 3,
    Finishing = 4,
    Done = 5,
    /// Held: prepared, waiting to be released at an instant (a fleet's common start).
    Ready = 6,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Preparing => "preparing",
            Phase::Ramp => "ramp",
            Phase::Running => "running",
            Phase::Finishing => "finishing",
            Phase::Done => "done",
            Phase::Ready => "ready",
        }
    }

    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Preparing,
            2 => Phase::Ramp,
            3 => Phase::Running,
            4 => Phase::Finishing,
            5 => Phase::Done,
            6 => Phase::Ready,
            _ => Phase::Idle,
        }
    }
}

#[derive(Default)]
struct Shared {
    phase: AtomicU8,
    cancel: AtomicBool,
    /// Set by a worker that hit a fatal error, so the others stop too.
    abort: AtomicBool,
    /// CLOCK_MONOTONIC ns of the first cancel or abort (0: none): where a run with a schedule
    /// stops counting operations due.
    stopped_ns: AtomicU64,
    prepared_bytes: AtomicU64,
    prepare_total: AtomicU64,
    ops: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    /// CLOCK_MONOTONIC ns when the measured phase starts (0 until known).
    measure_start_ns: AtomicU64,
    measure_end_ns: AtomicU64,
    /// Held runs wait, once prepared, until `release_at` (CLOCK_REALTIME ns, 0: not yet).
    held: AtomicBool,
    release_at: AtomicU64,
    /// Every measured operation's latency so far (the workers' interval histograms, merged as
    /// the collector receives them: once a second per worker, never per operation) and every
    /// failure by kind, ramp included.
    live: LiveTally,
}

#[derive(Clone, Default)]
pub struct Progress(Arc<Shared>);

#[derive(Debug, Clone, Copy)]
pub struct ProgressSnapshot {
    pub phase: Phase,
    pub prepared_bytes: u64,
    pub prepare_total: u64,
    /// Operations completed so far, ramp included.
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub measure_start_ns: u64,
    pub measure_end_ns: u64,
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask the engine to stop; it finishes in-flight I/O and returns what it measured.
    pub fn cancel(&self) {
        self.mark_stopped();
        self.0.cancel.store(true, Relaxed);
    }

    fn mark_stopped(&self) {
        let _ = self
            .0
            .stopped_ns
            .compare_exchange(0, now_ns(), Relaxed, Relaxed);
    }

    /// When the run was asked to stop before its deadline; `u64::MAX` if it was not.
    pub(crate) fn stopped_at(&self) -> u64 {
        match self.0.stopped_ns.load(Relaxed) {
            0 => u64::MAX,
            t => t,
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.load(Relaxed)
    }

    /// Makes the run wait, once its files are laid out, in phase `ready` until released.
    pub fn hold(&self) {
        self.0.held.store(true, Relaxed);
    }

    /// Releases a held run: it starts at `realtime_ns` (CLOCK_REALTIME), or at once if that
    /// has passed.
    pub fn release(&self, realtime_ns: u64) {
        self.0.release_at.store(realtime_ns.max(1), Relaxed);
    }

    pub(crate) fn is_held(&self) -> bool {
        self.0.held.load(Relaxed)
    }

    pub(crate) fn release_at(&self) -> u64 {
        self.0.release_at.load(Relaxed)
    }

    pub(crate) fn abort(&self) {
        self.mark_stopped();
        self.0.abort.store(true, Relaxed);
    }

    #[inline]
    pub(crate) fn is_stopping(&self) -> bool {
        self.0.cancel.load(Relaxed) || self.0.abort.load(Relaxed)
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let s = &self.0;
        ProgressSnapshot {
            phase: Phase::from_u8(s.phase.load(Relaxed)),
            prepared_bytes: s.prepared_bytes.load(Relaxed),
            prepare_total: s.prepare_total.load(Relaxed),
            ops: s.ops.load(Relaxed),
            bytes: s.bytes.load(Relaxed),
            errors: s.errors.load(Relaxed),
            measure_start_ns: s.measure_start_ns.load(Relaxed),
            measure_end_ns: s.measure_end_ns.load(Relaxed),
        }
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        self.0.phase.store(phase as u8, Relaxed);
    }

    pub(crate) fn set_prepare_total(&self, bytes: u64) {
        self.0.prepare_total.store(bytes, Relaxed);
    }

    pub(crate) fn add_prepared(&self, bytes: u64) {
        self.0.prepared_bytes.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn set_window(&self, start_ns: u64, end_ns: u64) {
        self.0.measure_start_ns.store(start_ns, Relaxed);
        self.0.measure_end_ns.store(end_ns, Relaxed);
    }

    /// The latencies and failures by kind a metrics scrape reads.
    pub fn live(&self) -> &LiveTally {
        &self.0.live
    }

    pub(crate) fn publish(&self, ops: u64, bytes: u64, errors: u64) {
        let s = &self.0;
        s.ops.fetch_add(ops, Relaxed);
        s.bytes.fetch_add(bytes, Relaxed);
        if errors > 0 {
            s.errors.fetch_add(errors, Relaxed);
        }
    }
}
