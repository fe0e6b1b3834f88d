//! A run on a thread of its own, for callers that must stay responsive while it runs (the
//! Python bindings release the GIL and poll it): start it, read its progress, cancel it, wait
//! for it with a timeout, then take what it produced. An engine thread that panics ends the run
//! with an error instead of taking its caller down.

use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sync::lock;
use crate::{Output, Progress, Workload, WorkloadError};

pub type Outcome = Result<Output, WorkloadError>;

/// How often [`RunHandle::wait`] looks whether the run has ended.
const POLL: Duration = Duration::from_millis(5);

pub struct RunHandle {
    workload: Workload,
    progress: Progress,
    thread: Mutex<Option<JoinHandle<Outcome>>>,
    outcome: Mutex<Option<Outcome>>,
}

impl RunHandle {
    /// A run of `workload`, not started yet.
    pub fn new(workload: Workload) -> Self {
        Self {
            workload,
            progress: Progress::new(),
            thread: Mutex::new(None),
            outcome: Mutex::new(None),
        }
    }

    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Starts the run on its own thread; false if it was started before.
    pub fn start(&self) -> bool {
        let mut thread = lock(&self.thread);
        if thread.is_some() || lock(&self.outcome).is_some() {
            return false;
        }
        let (workload, progress) = (self.workload.clone(), self.progress.clone());
        *thread = Some(std::thread::spawn(move || crate::run(&workload, &progress)));
        true
    }

    /// Asks the run to stop; it ends within one operation, keeping what it measured.
    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits up to `timeout` for the run to end; true once it has (and its outcome is kept).
    /// A run never started has not ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let mut thread = lock(&self.thread);
            match thread.as_ref() {
                None => return lock(&self.outcome).is_some(),
                Some(t) if t.is_finished() => {
                    let outcome = thread.take().expect("checked above").join();
                    *lock(&self.outcome) = Some(outcome.unwrap_or_else(|_| {
                        Err(WorkloadError::Invalid("the engine thread panicked".into()))
                    }));
                    return true;
                }
                Some(_) => {}
            }
            drop(thread);
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            std::thread::sleep(POLL.min(deadline - now));
        }
    }

    /// What the ended run produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&Outcome) -> R) -> Option<R> {
        lock(&self.outcome).as_ref().map(read)
    }
}
