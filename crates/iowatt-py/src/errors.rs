//! Rust errors become the Python exceptions of `iowatt.errors`, so the hierarchy is defined
//! once, on the Python side.

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

/// The class and a kind that `iowatt._engine` turns into a hint: hints name iowatt's options,
/// which the bindings do not know.
pub fn from_workload(py: Python<'_>, e: &WorkloadError) -> PyErr {
    let (class, kind) = match e {
        WorkloadError::Invalid(_) => ("ConfigError", "invalid"),
        WorkloadError::UnknownPersonality(_) => ("ConfigError", "unknown_personality"),
        WorkloadError::DirectIoUnsupported { .. } => ("TargetError", "direct_io_unsupported"),
        WorkloadError::NoSpace { .. } => ("TargetError", "no_space"),
        WorkloadError::Io { .. } => ("TargetError", "io"),
        WorkloadError::Uring(_) => ("TargetError", "uring"),
        WorkloadError::Cancelled => ("RunInterrupted", "cancelled"),
    };
    let err = raise(py, class, e.to_string(), None);
    if let Err(set) = err.value(py).setattr("kind", kind) {
        return set;
    }
    err
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
