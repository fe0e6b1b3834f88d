//! The power samplers on fixtures: sysfs trees in temp dirs, logs written while they are
//! followed, a Watts Up on a pty, commands, and the recorder running them together.

mod cmd;
mod hwmon;
mod meter;
mod rapl;
mod recorder;
mod support;
mod wattsup;
