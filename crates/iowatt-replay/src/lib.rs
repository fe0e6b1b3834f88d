//! Open-loop replay of a web trace against a real server (http or https).
//!
//! A [`Plan`] is the trace as the engine needs it: every request's due time (ns after the
//! replay's start, already divided by the speed-up), method, target and client. [`run`] issues
//! each request at its due time on an absolute schedule, whatever the server does: a timerfd
//! wakes the scheduler (tokio's timer has millisecond granularity), and at the connection cap
//! requests wait in order but stay timed from when they were due, so a server stall shows in
//! the latencies instead of hiding (no coordinated omission). Each request records when it was
//! sent, its first response byte, its last, its status, bytes and error kind in [`Records`].
//! A checked [`Replay`] is [`Work`] for [`iowatt_metrics::Handle`], which runs it on a thread
//! of its own for callers that poll.

mod client;
mod error;
mod plan;
mod progress;
mod records;
mod run;
mod target;
mod timer;
mod tls;

use std::sync::Arc;

use iowatt_metrics::Work;

pub use error::ReplayError;
pub use plan::{Config, Plan};
pub use progress::{Progress, ProgressSnapshot};
pub use records::{ErrorKind, Histograms, Records};
pub use run::{run, Output, Replay, Status};
pub use target::Target;
pub use tls::TlsOptions;

impl Work for Replay {
    type Progress = Progress;
    type Outcome = Result<Output, ReplayError>;

    fn run(self: Arc<Self>, progress: &Progress) -> Self::Outcome {
        run(&self, progress)
    }

    /// Requests in flight end (or time out); the ones not yet sent are marked never sent.
    fn cancel(progress: &Progress) {
        progress.cancel();
    }

    fn panicked() -> Self::Outcome {
        Err(ReplayError::Io {
            op: "replay",
            source: std::io::Error::other("the replay thread panicked"),
        })
    }
}
