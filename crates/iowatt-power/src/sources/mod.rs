//! One module per interface.

mod child;
pub mod cmd;
pub mod emulated;
pub mod hwmon;
pub mod ipmi;
pub mod meter;
pub mod rapl;
mod sysfs;
pub mod wattsup;
