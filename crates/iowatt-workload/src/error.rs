use std::path::PathBuf;

use thiserror::Error;

/// Why a workload could not start. Failures once it runs are data (see [`crate::Status`]).
#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("invalid workload: {0}")]
    Invalid(String),
    #[error("unknown personality `{0}`")]
    UnknownPersonality(String),
    #[error("O_DIRECT is not supported for `{path}`")]
    DirectIoUnsupported { path: PathBuf },
    #[error("no space left on the device holding `{path}`")]
    NoSpace { path: PathBuf },
    #[error("{op} `{path}`: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("io_uring setup failed: {0}")]
    Uring(std::io::Error),
    #[error("interrupted while preparing files")]
    Cancelled,
}

impl WorkloadError {
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => WorkloadError::NoSpace { path },
            _ => WorkloadError::Io { op, path, source },
        }
    }
}

/// errno as its symbolic name, for counting failed operations by kind.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EIO => "EIO",
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EINVAL => "EINVAL",
        libc::EAGAIN => "EAGAIN",
        libc::EINTR => "EINTR",
        libc::EBADF => "EBADF",
        libc::EFBIG => "EFBIG",
        libc::EROFS => "EROFS",
        libc::ENODEV => "ENODEV",
        libc::ENXIO => "ENXIO",
        libc::ECANCELED => "ECANCELED",
        libc::ETIMEDOUT => "ETIMEDOUT",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// Errors after which continuing would only repeat the failure: the run stops.
pub fn is_fatal(errno: i32) -> bool {
    matches!(
        errno,
        libc::ENOSPC | libc::EDQUOT | libc::EINVAL | libc::EBADF | libc::EROFS | libc::EFBIG
    )
}
