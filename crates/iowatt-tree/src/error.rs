use std::io;

/// Why a recreation could not be done, with the entry or path concerned.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A manifest entry that cannot be recreated safely (row numbers count from 0).
    #[error("row {row}: path `{path}` {reason}")]
    Manifest {
        row: usize,
        path: String,
        reason: String,
    },
    /// The destination is full (ENOSPC, EDQUOT).
    #[error("no space left to {op} `{path}`")]
    NoSpace { op: &'static str, path: String },
    #[error("cannot {op} `{path}`: {source}")]
    Io {
        op: &'static str,
        path: String,
        source: io::Error,
    },
}

impl TreeError {
    pub(crate) fn io(op: &'static str, path: &[u8], source: io::Error) -> Self {
        let path = String::from_utf8_lossy(path).into_owned();
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => TreeError::NoSpace { op, path },
            _ => TreeError::Io { op, path, source },
        }
    }
}
