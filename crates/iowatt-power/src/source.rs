//! The one trait every sampler implements. A source is opened (validating its options and the
//! interface, discovering its channels), then polled from its own thread until the recording
//! stops.

use crate::reading::{ChannelInfo, SourceStats};
use crate::PowerError;

/// A reading before the recorder maps it onto its global channel table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalReading {
    pub mono_ns: i64,
    /// Index into the source's own `channels()`.
    pub channel: usize,
    pub value: f64,
}

pub trait Source: Send {
    /// Channels the source produces, fixed once it is open.
    fn channels(&self) -> &[ChannelInfo];

    /// One poll: appends new readings. An `Err` is a failed poll (recorded as an event and
    /// retried at the next tick), never the end of the recording; readings appended before it
    /// (the zones or sensors that could be read) are kept.
    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError>;

    /// Counters of what was read and what could not be used. `polls`, `readings` and `errors`
    /// are counted by the recorder, which calls `poll`; a source leaves them at 0.
    fn stats(&self) -> SourceStats;

    /// Things the user should know that lost no data (a zone skipped, DCMI unsupported, a
    /// counter reset); the recorder drains them into warning events after open and each poll.
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// Every module in `sources` exposes `pub fn open(config: &SourceConfig, anchor: ClockAnchor)
/// -> Result<Box<dyn Source>, PowerError>`, called only with a config of its own kind.
/// (CLOCK_REALTIME ns, CLOCK_MONOTONIC ns) read at the same moment.
pub type ClockAnchor = (i64, i64);
