//! A replay on a thread of its own ([`iowatt_metrics::Job`]), for callers that poll (the
//! Python bindings release the GIL and wait in short steps, so Ctrl-C is seen).

use std::sync::Arc;
use std::time::Duration;

use iowatt_metrics::Job;

use crate::run::Replay;
use crate::{run, Config, Output, Plan, Progress, ReplayError};

pub type Outcome = Result<Output, ReplayError>;

pub struct ReplayHandle {
    replay: Arc<Replay>,
    progress: Progress,
    job: Job<Outcome>,
}

impl ReplayHandle {
    /// Checks the plan and the configuration (the target URL parsed and resolved).
    pub fn new(plan: Plan, config: Config) -> Result<Self, ReplayError> {
        Ok(Self {
            replay: Arc::new(Replay::new(plan, config)?),
            progress: Progress::new(),
            job: Job::default(),
        })
    }

    pub fn plan(&self) -> &Plan {
        self.replay.plan()
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Starts the replay on its own thread; false if it was started before.
    pub fn start(&self) -> bool {
        let (replay, progress) = (self.replay.clone(), self.progress.clone());
        self.job.start(move || run(&replay, &progress))
    }

    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits up to `timeout` for the replay to end; true once it has.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.job.wait(timeout, || {
            Err(ReplayError::Io {
                op: "replay",
                source: std::io::Error::other("the replay thread panicked"),
            })
        })
    }

    /// What the ended replay produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&Outcome) -> R) -> Option<R> {
        self.job.with_outcome(read)
    }
}
