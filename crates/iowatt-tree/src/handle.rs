//! A recreation on a thread of its own, for callers that poll (the Python bindings release the
//! GIL and wait in short steps, so Ctrl-C is seen): start, progress, cancel, wait, outcome.

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{run, Output, Progress, Recreation, TreeError};

pub type Outcome = Result<Output, TreeError>;

const POLL: Duration = Duration::from_millis(5);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct RecreateHandle {
    recreation: Arc<Recreation>,
    progress: Progress,
    thread: Mutex<Option<JoinHandle<Outcome>>>,
    outcome: Mutex<Option<Outcome>>,
}

impl RecreateHandle {
    pub fn new(recreation: Recreation) -> Self {
        Self {
            recreation: Arc::new(recreation),
            progress: Progress::new(),
            thread: Mutex::new(None),
            outcome: Mutex::new(None),
        }
    }

    pub fn recreation(&self) -> &Recreation {
        &self.recreation
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
        let (rec, progress) = (self.recreation.clone(), self.progress.clone());
        *thread = Some(std::thread::spawn(move || run(&rec, &progress)));
        true
    }

    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits up to `timeout` for the run to end; true once it has. A run never started has
    /// not ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let mut thread = lock(&self.thread);
            match thread.as_ref() {
                None => return lock(&self.outcome).is_some(),
                Some(t) if t.is_finished() => {
                    let outcome = thread.take().expect("checked above").join();
                    *lock(&self.outcome) = Some(outcome.unwrap_or_else(|_| {
                        Err(TreeError::Io {
                            op: "recreate",
                            path: String::new(),
                            source: std::io::Error::other("a recreation thread panicked"),
                        })
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
