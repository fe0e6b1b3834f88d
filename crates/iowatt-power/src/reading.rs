//! What sources produce: channels, readings stamped on CLOCK_MONOTONIC, events and counters.

use serde::Serialize;

/// SI units after conversion from each interface's own (µW, µJ, mV, mA, m°C …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Watts,
    /// A cumulative energy counter in joules since the source opened, wraparound removed.
    Joules,
    Volts,
    Amps,
    Rpm,
    Celsius,
    /// A fraction, 0..1 (a fan's PWM duty).
    Ratio,
    /// A meter column whose meaning only the channel map knows (shunt volts, watts …).
    Raw,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Watts => "W",
            Unit::Joules => "J",
            Unit::Volts => "V",
            Unit::Amps => "A",
            Unit::Rpm => "RPM",
            Unit::Celsius => "C",
            Unit::Ratio => "ratio",
            Unit::Raw => "raw",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ChannelInfo {
    pub source: String,
    /// Unique within the source, e.g. `package-0/dram`, `ina226-i2c-1-40/power1`, `CPU Temp`.
    pub channel: String,
    pub unit: Unit,
    /// What the channel covers: `package`, `core`, `uncore`, `dram`, `psys`, `node`, `disk`,
    /// `sensor`, `wall`, `meter` … Nested scopes must never be summed.
    pub scope: String,
    /// The channel this one is contained in (RAPL subzones), so sums skip it.
    pub parent: Option<String>,
    /// The interface's own label (`*_label`, SDR name) when there is one.
    pub label: Option<String>,
}

/// One value; `channel` indexes the recorder's channel table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub mono_ns: i64,
    pub channel: u32,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The source failed a poll (it keeps being retried).
    Error,
    /// Something the user should know that did not lose data (a counter reset, a zone skipped).
    Warning,
    /// The source answers again after errors.
    Recovered,
}

#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub mono_ns: i64,
    pub source: String,
    pub kind: EventKind,
    pub message: String,
}

/// Per-source counters. Lines or readings that could not be used are counted here and the
/// first few kept verbatim (with line numbers), never dropped silently.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceStats {
    pub source: String,
    pub polls: u64,
    pub readings: u64,
    pub errors: u64,
    /// Meter lines that do not parse (wrong field count, text where a number belongs).
    pub malformed_lines: u64,
    /// Meter fields left empty: that channel has no reading at that time.
    pub missing_values: u64,
    /// Meter lines whose timestamp is earlier than the line before (kept, flagged).
    pub out_of_order: u64,
    /// Readings the interface returned but that cannot be true (DCMI 0 W or 65535 W).
    pub invalid_readings: u64,
    /// Up to 10 examples: (line number, line) for meters, (0, text) otherwise.
    pub examples: Vec<(u64, String)>,
}
