//! The recorder opens every source, runs each on its own thread and collects readings and
//! events until Python drains them.
//!
//! Each thread polls at once, then on an absolute schedule `t0 + k/hz`: a poll that overruns
//! skips the ticks it missed instead of queueing them, so a slow source (ipmitool takes a
//! second) just achieves a lower rate and a fast one does not drift. Threads sleep on a
//! condition variable, so `stop()` wakes them at once; each then polls one last time, so the
//! recording has a reading at both edges of the work it brackets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iowatt_metrics::now_ns;

use crate::reading::{ChannelInfo, Event, EventKind, Reading, SourceStats};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{sources, PowerError, RecorderConfig, SourceConfig, SourceKind};

pub struct Recorder {
    anchor: ClockAnchor,
    channels: Vec<ChannelInfo>,
    slots: Vec<Arc<Slot>>,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// One source and the counters only the recorder can keep (it is the one calling `poll`).
struct Slot {
    name: String,
    hz: f64,
    /// Index of the source's first channel in the recorder's table.
    offset: u32,
    source: Mutex<Box<dyn Source>>,
    polls: AtomicU64,
    readings: AtomicU64,
    errors: AtomicU64,
}

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    readings: Mutex<Vec<Reading>>,
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    /// Opens every source; the first that fails aborts, its message prefixed with its name.
    pub fn open(config: &RecorderConfig) -> Result<Recorder, PowerError> {
        validate(config)?;
        let anchor = config.clock_anchor.unwrap_or_else(read_clock_anchor);
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            readings: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
        });
        let mut channels = Vec::new();
        let mut slots = Vec::new();
        for sc in &config.sources {
            let mut source = open_source(sc, anchor).map_err(|e| in_source(e, &sc.name))?;
            let offset = u32::try_from(channels.len()).expect("fewer than 2^32 channels");
            channels.extend(source.channels().iter().cloned());
            for message in source.warnings() {
                shared.event(&sc.name, EventKind::Warning, message);
            }
            slots.push(Arc::new(Slot {
                name: sc.name.clone(),
                hz: sc.hz,
                offset,
                source: Mutex::new(source),
                polls: AtomicU64::new(0),
                readings: AtomicU64::new(0),
                errors: AtomicU64::new(0),
            }));
        }
        Ok(Recorder {
            anchor,
            channels,
            slots,
            shared,
            threads: Mutex::new(Vec::new()),
        })
    }

    /// The global channel table: every source's channels in config order.
    /// `Reading::channel` indexes it.
    pub fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    pub fn clock_anchor(&self) -> ClockAnchor {
        self.anchor
    }

    /// Starts one sampling thread per source; does nothing if they already run.
    pub fn start(&self) {
        let mut threads = lock(&self.threads);
        if !threads.is_empty() {
            return;
        }
        *lock(&self.shared.stop) = false;
        for slot in &self.slots {
            let (slot, shared) = (Arc::clone(slot), Arc::clone(&self.shared));
            let handle = std::thread::Builder::new()
                .name(format!("power-{}", slot.name))
                .spawn(move || sample(&slot, &shared))
                .expect("spawning a sampler thread");
            threads.push(handle);
        }
    }

    /// Wakes every thread for its final poll and joins them.
    pub fn stop(&self) {
        let mut threads = lock(&self.threads);
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        for (handle, slot) in threads.drain(..).zip(&self.slots) {
            if handle.join().is_err() {
                self.shared.event(
                    &slot.name,
                    EventKind::Error,
                    "the sampler thread panicked; its readings end here".into(),
                );
            }
        }
    }

    /// Readings and events accumulated since the last drain, in arrival order per source.
    pub fn drain(&self) -> (Vec<Reading>, Vec<Event>) {
        let readings = std::mem::take(&mut *lock(&self.shared.readings));
        let events = std::mem::take(&mut *lock(&self.shared.events));
        (readings, events)
    }

    /// Per-source counters: polls, readings and failed polls as the recorder counted them, the
    /// rest (unusable lines, invalid readings, examples) from the source. Waits for a poll in
    /// progress to finish.
    pub fn stats(&self) -> Vec<SourceStats> {
        self.slots
            .iter()
            .map(|slot| {
                let mut stats = lock(&slot.source).stats();
                stats.source = slot.name.clone();
                stats.polls = slot.polls.load(Ordering::Relaxed);
                stats.readings = slot.readings.load(Ordering::Relaxed);
                stats.errors = slot.errors.load(Ordering::Relaxed);
                stats
            })
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Once every 1000 s at the slowest; 10 kHz at the fastest, far above any interface's update
/// rate (RAPL ~1 kHz, hwmon and meters ≤ 10 Hz).
const MIN_HZ: f64 = 0.001;
const MAX_HZ: f64 = 10_000.0;

fn validate(config: &RecorderConfig) -> Result<(), PowerError> {
    if config.sources.is_empty() {
        return Err(PowerError::invalid(
            "no power sources given",
            "name at least one source (rapl, hwmon, ipmi, meter, cmd or emulated)",
        ));
    }
    for (i, sc) in config.sources.iter().enumerate() {
        if !(MIN_HZ..=MAX_HZ).contains(&sc.hz) {
            return Err(PowerError::invalid(
                format!("source `{}`: rate `{}` Hz is out of range", sc.name, sc.hz),
                format!(
                    "give the polling rate in Hz between {MIN_HZ} and {MAX_HZ}, e.g. 10 \
                     (IPMI sources achieve at most about 1)"
                ),
            ));
        }
        if config.sources[..i].iter().any(|o| o.name == sc.name) {
            return Err(PowerError::invalid(
                format!("two sources are named `{}`", sc.name),
                "give each source its own name (`meter`, `meter2` …)",
            ));
        }
    }
    Ok(())
}

fn open_source(sc: &SourceConfig, anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    match &sc.kind {
        SourceKind::Rapl { .. } => sources::rapl::open(sc, anchor),
        SourceKind::Hwmon { .. } => sources::hwmon::open(sc, anchor),
        SourceKind::Ipmi { .. } => sources::ipmi::open(sc, anchor),
        SourceKind::Meter { format, .. } if format == "wattsup" => {
            sources::wattsup::open(sc, anchor)
        }
        SourceKind::Meter { .. } => sources::meter::open(sc, anchor),
        SourceKind::Cmd { .. } => sources::cmd::open(sc, anchor),
        SourceKind::Emulated { .. } => sources::emulated::open(sc, anchor),
    }
}

/// Prefixes an open error with the source's name, keeping its kind (and so its Python class).
fn in_source(e: PowerError, name: &str) -> PowerError {
    let prefix = |message: String| format!("source `{name}`: {message}");
    match e {
        PowerError::Invalid { message, hint } => PowerError::Invalid {
            message: prefix(message),
            hint,
        },
        PowerError::Unavailable { message, hint } => PowerError::Unavailable {
            message: prefix(message),
            hint,
        },
        PowerError::Format { message, hint } => PowerError::Format {
            message: prefix(message),
            hint,
        },
        // An I/O error at open means the interface cannot be read: the same class.
        e @ PowerError::Io { .. } => PowerError::unavailable(prefix(e.to_string()), ""),
    }
}

/// (CLOCK_REALTIME, CLOCK_MONOTONIC) at one instant: the realtime read is bracketed by two
/// monotonic reads and paired with their midpoint, so the pair is off by well under a µs.
pub fn read_clock_anchor() -> ClockAnchor {
    let before = now_ns() as i64;
    let real = realtime_ns();
    let after = now_ns() as i64;
    (real, before + (after - before) / 2)
}

fn realtime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// A thread that panicked while holding a lock leaves data that is still consistent here
/// (vectors of plain values), so poisoning is ignored rather than spreading the panic.
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn event(&self, source: &str, kind: EventKind, message: String) {
        lock(&self.events).push(Event {
            mono_ns: now_ns() as i64,
            source: source.to_string(),
            kind,
            message,
        });
    }

    /// Sleeps until `deadline` or until stop is requested; true when it is.
    fn wait_until(&self, deadline: Instant) -> bool {
        let mut stop = lock(&self.stop);
        loop {
            if *stop {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stop = self
                .wake
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

/// A sampling thread's loop.
fn sample(slot: &Slot, shared: &Shared) {
    let t0 = Instant::now();
    let mut poller = Poller {
        slot,
        shared,
        buf: Vec::with_capacity(64),
        failed_in_a_row: 0,
    };
    let mut tick: u64 = 0;
    poller.poll();
    loop {
        // The next tick still ahead: ticks missed during a slow poll are skipped, not queued.
        let behind = (t0.elapsed().as_secs_f64() * slot.hz) as u64;
        tick = (tick + 1).max(behind + 1);
        let deadline = t0 + Duration::from_secs_f64(tick as f64 / slot.hz);
        let stopping = shared.wait_until(deadline);
        poller.poll();
        if stopping {
            return;
        }
    }
}

struct Poller<'a> {
    slot: &'a Slot,
    shared: &'a Shared,
    /// Reused for every poll: readings cost no allocation once it has grown.
    buf: Vec<LocalReading>,
    failed_in_a_row: u64,
}

impl Poller<'_> {
    fn poll(&mut self) {
        let slot = self.slot;
        self.buf.clear();
        let (result, warnings) = {
            let mut source = lock(&slot.source);
            let result = source.poll(&mut self.buf);
            (result, source.warnings())
        };
        slot.polls.fetch_add(1, Ordering::Relaxed);
        // Readings a failed poll did produce (the zones that could be read) are kept.
        if !self.buf.is_empty() {
            let offset = slot.offset;
            lock(&self.shared.readings).extend(self.buf.iter().map(|r| Reading {
                mono_ns: r.mono_ns,
                channel: offset + r.channel as u32,
                value: r.value,
            }));
            slot.readings
                .fetch_add(self.buf.len() as u64, Ordering::Relaxed);
        }
        // One event per change of state, not one per failed poll: at 100 Hz a broken source
        // would otherwise bury everything else.
        match result {
            Err(e) => {
                slot.errors.fetch_add(1, Ordering::Relaxed);
                if self.failed_in_a_row == 0 {
                    self.shared
                        .event(&slot.name, EventKind::Error, e.to_string());
                }
                self.failed_in_a_row += 1;
            }
            Ok(()) if self.failed_in_a_row > 0 => {
                let n = self.failed_in_a_row;
                self.failed_in_a_row = 0;
                let polls = if n == 1 { "poll" } else { "polls" };
                self.shared.event(
                    &slot.name,
                    EventKind::Recovered,
                    format!("the source answers again after {n} failed {polls}"),
                );
            }
            Ok(()) => {}
        }
        for message in warnings {
            self.shared.event(&slot.name, EventKind::Warning, message);
        }
    }
}
