//! Measurement primitives shared by every iowatt engine: one monotonic clock, one latency
//! histogram type, one interval series, one seeded random generator (so a seed means the same
//! bytes in every engine), the one handle through which callers run and poll an engine, and the
//! parsing of the size and duration strings users type. Engines record into these; the Python
//! side turns them into the run store.

pub mod calendar;
pub mod clock;
pub mod histogram;
pub mod interval;
pub mod job;
pub mod live;
pub mod rng;
pub mod units;

pub use clock::{now_ns, realtime_ns};
pub use histogram::{Bucket, LatencyHistogram, LatencySoFar};
pub use interval::{IntervalAccum, IntervalRow};
pub use job::{Handle, Work};
pub use live::LiveTally;
pub use rng::Rng;
pub use units::{parse_duration_ns, parse_size, UnitError};
