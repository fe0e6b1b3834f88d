use std::path::PathBuf;

use thiserror::Error;

/// Why a source could not be opened. Failures once recording runs are events, not errors.
#[derive(Debug, Error)]
pub enum PowerError {
    /// A bad option value; the message names it.
    #[error("{message}")]
    Invalid { message: String, hint: String },
    /// The interface is absent, unreadable or unreachable (no powercap in a VM, energy_uj
    /// readable only by root, ipmitool missing, BMC not answering).
    #[error("{message}")]
    Unavailable { message: String, hint: String },
    /// A meter log that does not have the shape its options promise.
    #[error("{message}")]
    Format { message: String, hint: String },
    #[error("{op} `{path}`: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl PowerError {
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Self {
        PowerError::Invalid {
            message: message.into(),
            hint: hint.into(),
        }
    }
    pub fn unavailable(message: impl Into<String>, hint: impl Into<String>) -> Self {
        PowerError::Unavailable {
            message: message.into(),
            hint: hint.into(),
        }
    }
    pub fn format(message: impl Into<String>, hint: impl Into<String>) -> Self {
        PowerError::Format {
            message: message.into(),
            hint: hint.into(),
        }
    }
    pub fn hint(&self) -> Option<&str> {
        match self {
            PowerError::Invalid { hint, .. }
            | PowerError::Unavailable { hint, .. }
            | PowerError::Format { hint, .. } => Some(hint),
            PowerError::Io { .. } => None,
        }
    }
}
