//! Rust errors become the Python exceptions of `iowatt.errors`, with a hint attached, so the
//! hierarchy is defined once, on the Python side.

use iowatt_metrics::UnitError;
use iowatt_power::PowerError;
use iowatt_workload::WorkloadError;
use pyo3::prelude::*;

pub fn raise(py: Python<'_>, class: &str, message: String, hint: Option<&str>) -> PyErr {
    match py
        .import("iowatt.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((message, hint)))
    {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

pub fn from_unit(py: Python<'_>, e: UnitError) -> PyErr {
    raise(py, "ConfigError", e.to_string(), Some(e.hint()))
}

pub fn from_workload(py: Python<'_>, e: &WorkloadError) -> PyErr {
    let (class, hint) = match e {
        WorkloadError::Invalid(_) => ("ConfigError", None),
        WorkloadError::UnknownPersonality(_) => (
            "ConfigError",
            Some("personalities are randomread, randomwrite, singlestreamread, singlestreamwrite, multistreamread, multistreamwrite"),
        ),
        WorkloadError::DirectIoUnsupported { .. } => (
            "TargetError",
            Some("this file system has no O_DIRECT (tmpfs before Linux 6.6, ramfs, some FUSE); pass --buffered to measure through the page cache"),
        ),
        WorkloadError::NoSpace { .. } => (
            "TargetError",
            Some("free some space or use a smaller --filesize"),
        ),
        WorkloadError::Io { .. } => ("TargetError", None),
        WorkloadError::Uring(_) => (
            "TargetError",
            Some("io_uring may be disabled here (/proc/sys/kernel/io_uring_disabled); use --engine psync"),
        ),
        WorkloadError::Cancelled => ("RunInterrupted", None),
    };
    raise(py, class, e.to_string(), hint)
}

pub fn from_power(py: Python<'_>, e: &PowerError) -> PyErr {
    let class = match e {
        PowerError::Invalid { .. } => "ConfigError",
        PowerError::Format { .. } => "MeterFormatError",
        PowerError::Unavailable { .. } | PowerError::Io { .. } => "SourceUnavailableError",
    };
    let hint = e.hint().filter(|h| !h.is_empty());
    raise(py, class, e.to_string(), hint)
}
