//! One module per interface.

pub mod cmd;
pub mod hwmon;
pub mod ipmi;
pub mod meter;
pub mod rapl;
pub mod wattsup;
