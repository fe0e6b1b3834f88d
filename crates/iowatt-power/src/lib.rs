//! Power samplers. Each source runs on its own thread at its own rate and stamps every reading
//! with CLOCK_MONOTONIC (the clock of the workload engine's interval rows), so power and
//! performance join on one time axis. Readings are raw — watts, cumulative joules, volts,
//! rpm, °C as each interface reports them, converted to SI units; energy integration, channel
//! maps and arithmetic live on the Python side (`iowatt.power`).

pub mod config;
pub mod error;
pub mod reading;
pub mod recorder;
pub mod source;
pub mod sources;

pub use config::{RecorderConfig, SourceConfig, SourceKind};
pub use error::PowerError;
pub use reading::{ChannelInfo, Event, EventKind, Reading, SourceStats, Unit};
pub use recorder::Recorder;
