use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReplayError {
    /// The plan or the configuration cannot be replayed (the user's input).
    #[error("{0}")]
    Plan(String),
    /// The target URL does not parse or names what the engine cannot reach.
    #[error("{0}")]
    Target(String),
    /// The target refused or dropped the probe connection made before the schedule starts.
    #[error("{addr} does not accept connections: {source}")]
    Unreachable {
        addr: String,
        source: std::io::Error,
    },
    /// The runtime or a timer could not be set up.
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        source: std::io::Error,
    },
}
