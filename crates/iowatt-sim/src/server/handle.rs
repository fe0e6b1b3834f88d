//! [`ServerHandle`]: a batch of server simulations on its own thread, for callers that poll
//! (the Python bindings), with its progress and a cancel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iowatt_metrics::Job;

use super::{run, Config, Progress, RunOutput, ServerError};

type Outcome = Result<Vec<RunOutput>, ServerError>;

pub struct ServerHandle {
    config: Arc<Config>,
    progress: Arc<Progress>,
    cancel: Arc<AtomicBool>,
    job: Job<Outcome>,
}

impl ServerHandle {
    /// Checks `config` now, so a bad input is refused before anything runs.
    pub fn new(config: Config) -> Result<Self, ServerError> {
        config.check()?;
        Ok(Self {
            config: Arc::new(config),
            progress: Arc::default(),
            cancel: Arc::default(),
            job: Job::default(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn start(&self) -> bool {
        let (config, progress, cancel) = (
            Arc::clone(&self.config),
            Arc::clone(&self.progress),
            Arc::clone(&self.cancel),
        );
        self.job.start(move || run(&config, &progress, &cancel))
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn wait(&self, timeout: Duration) -> bool {
        self.job.wait(timeout, || {
            Err(ServerError::Config(
                "the simulator failed (a bug: please report it)".into(),
            ))
        })
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    pub fn with_outcome<R>(&self, read: impl FnOnce(&Outcome) -> R) -> Option<R> {
        self.job.with_outcome(read)
    }
}
