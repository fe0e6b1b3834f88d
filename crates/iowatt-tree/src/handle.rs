//! A recreation on a thread of its own ([`iowatt_metrics::Job`]), for callers that poll (the
//! Python bindings release the GIL and wait in short steps, so Ctrl-C is seen): start,
//! progress, cancel, wait, outcome.

use std::sync::Arc;
use std::time::Duration;

use iowatt_metrics::Job;

use crate::{run, Output, Progress, Recreation, TreeError};

pub type Outcome = Result<Output, TreeError>;

pub struct RecreateHandle {
    recreation: Arc<Recreation>,
    progress: Progress,
    job: Job<Outcome>,
}

impl RecreateHandle {
    pub fn new(recreation: Recreation) -> Self {
        Self {
            recreation: Arc::new(recreation),
            progress: Progress::new(),
            job: Job::default(),
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
        let (rec, progress) = (self.recreation.clone(), self.progress.clone());
        self.job.start(move || run(&rec, &progress))
    }

    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits up to `timeout` for the run to end; true once it has. A run never started has
    /// not ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.job.wait(timeout, || {
            Err(TreeError::Io {
                op: "recreate",
                path: String::new(),
                source: std::io::Error::other("a recreation thread panicked"),
            })
        })
    }

    /// What the ended run produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&Outcome) -> R) -> Option<R> {
        self.job.with_outcome(read)
    }
}
