//! A run on a thread of its own ([`iowatt_metrics::Job`]), for callers that must stay
//! responsive while it runs (the Python bindings release the GIL and poll it): start it, read
//! its progress, cancel it, wait for it with a timeout, then take what it produced. An engine
//! thread that panics ends the run with an error instead of taking its caller down.

use std::time::Duration;

use iowatt_metrics::Job;

use crate::{Output, Progress, Workload, WorkloadError};

pub type Outcome = Result<Output, WorkloadError>;

pub struct RunHandle {
    workload: Workload,
    progress: Progress,
    job: Job<Outcome>,
}

impl RunHandle {
    /// A run of `workload`, not started yet.
    pub fn new(workload: Workload) -> Self {
        Self {
            workload,
            progress: Progress::new(),
            job: Job::default(),
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
        let (workload, progress) = (self.workload.clone(), self.progress.clone());
        self.job.start(move || crate::run(&workload, &progress))
    }

    /// Makes the run wait, once prepared, in phase `ready` until [`RunHandle::release`]d; call
    /// before [`RunHandle::start`].
    pub fn hold(&self) {
        self.progress.hold();
    }

    /// Starts a held run's measuring at `realtime_ns` (CLOCK_REALTIME).
    pub fn release(&self, realtime_ns: u64) {
        self.progress.release(realtime_ns);
    }

    /// Asks the run to stop; it ends within one operation, keeping what it measured.
    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits up to `timeout` for the run to end; true once it has (and its outcome is kept).
    /// A run never started has not ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.job.wait(timeout, || {
            Err(WorkloadError::Invalid("the engine thread panicked".into()))
        })
    }

    /// What the ended run produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&Outcome) -> R) -> Option<R> {
        self.job.with_outcome(read)
    }
}
