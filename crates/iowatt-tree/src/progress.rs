//! Counters the workers publish and a watcher polls (the Python progress bar), and the cancel
//! flag.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    Idle = 0,
    /// Making directories, files and symlinks.
    Creating = 1,
    /// Setting the directories' modes and times, deepest first.
    Finishing = 2,
    Done = 3,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Creating => "creating",
            Phase::Finishing => "finishing",
            Phase::Done => "done",
        }
    }
}

#[derive(Default)]
struct Shared {
    phase: AtomicU8,
    cancel: AtomicBool,
    entries: AtomicU64,
    files: AtomicU64,
    dirs: AtomicU64,
    links: AtomicU64,
    bytes: AtomicU64,
    skipped: AtomicU64,
}

#[derive(Clone, Default)]
pub struct Progress(Arc<Shared>);

/// What has been done so far. `entries` counts every entry made or found complete (skipped).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub entries: u64,
    pub files: u64,
    pub dirs: u64,
    pub links: u64,
    pub bytes: u64,
    pub skipped: u64,
}

impl Counts {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0 && self.bytes == 0
    }
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop; entries already made stay, a file being written is left short.
    pub fn cancel(&self) {
        self.0.cancel.store(true, Relaxed);
    }

    pub fn cancelled(&self) -> bool {
        self.0.cancel.load(Relaxed)
    }

    pub fn phase(&self) -> Phase {
        match self.0.phase.load(Relaxed) {
            1 => Phase::Creating,
            2 => Phase::Finishing,
            3 => Phase::Done,
            _ => Phase::Idle,
        }
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        self.0.phase.store(phase as u8, Relaxed);
    }

    pub fn counts(&self) -> Counts {
        let s = &self.0;
        Counts {
            entries: s.entries.load(Relaxed),
            files: s.files.load(Relaxed),
            dirs: s.dirs.load(Relaxed),
            links: s.links.load(Relaxed),
            bytes: s.bytes.load(Relaxed),
            skipped: s.skipped.load(Relaxed),
        }
    }

    /// Adds a worker's batch, so the counters are not contended per entry.
    pub(crate) fn add(&self, c: &Counts) {
        let s = &self.0;
        s.entries.fetch_add(c.entries, Relaxed);
        s.files.fetch_add(c.files, Relaxed);
        s.dirs.fetch_add(c.dirs, Relaxed);
        s.links.fetch_add(c.links, Relaxed);
        s.bytes.fetch_add(c.bytes, Relaxed);
        s.skipped.fetch_add(c.skipped, Relaxed);
    }
}
