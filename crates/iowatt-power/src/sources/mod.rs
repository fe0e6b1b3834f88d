//! One module per interface.

pub mod cmd;
pub mod hwmon;
pub mod ipmi;
pub mod meter;
pub mod rapl;
mod sysfs;
pub mod wattsup;
