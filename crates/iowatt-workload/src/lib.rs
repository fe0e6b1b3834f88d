//! iowatt's I/O workload engine, built on FileBench's model: a workload has files, threads
//! (each with a number of instances) and flowops that every thread loops over. FileIO
//! personalities are small builders over that model ([`personality`]); FileBench's macro
//! personalities and workload files extend it rather than replace it.
//!
//! Public surface: a [`Workload`] (or a [`FileIo`] personality that builds one), a shared
//! [`Progress`] handle, [`run`], and its [`Output`]. A workload is [`Work`] for
//! [`iowatt_metrics::Handle`], which runs it on a thread of its own for callers that poll.

mod buffers;
mod collector;
mod dist;
mod entropy;
mod error;
mod fileset;
mod interp;
mod offsets;
mod output;
pub mod personality;
mod populate;
mod prepare;
mod progress;
mod recorder;
mod run;
mod spec;
mod sync;
mod worker;

use std::sync::Arc;

use iowatt_metrics::Work;

pub use error::WorkloadError;
pub use output::{FlowopOutput, OpenLoop, Output, Status};
pub use personality::FileIo;
pub use progress::{Phase, Progress, ProgressSnapshot};
pub use run::{run, validate};
pub use spec::{
    Engine, FileSpec, FilesetSpec, Flowop, OpKind, Quit, SizeDist, ThreadSpec, Workload,
    DEFAULT_DRAIN_NS,
};

impl Work for Workload {
    type Progress = Progress;
    type Outcome = Result<Output, WorkloadError>;

    fn run(self: Arc<Self>, progress: &Progress) -> Self::Outcome {
        run(&self, progress)
    }

    /// The run ends within one operation, keeping what it measured.
    fn cancel(progress: &Progress) {
        progress.cancel();
    }

    fn panicked() -> Self::Outcome {
        Err(WorkloadError::Invalid("the engine thread panicked".into()))
    }
}
