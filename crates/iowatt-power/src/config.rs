//! What Python asks for, as JSON: a list of sources, each with its kind, rate and options.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecorderConfig {
    pub sources: Vec<SourceConfig>,
    /// (CLOCK_REALTIME ns, CLOCK_MONOTONIC ns) read together: converts wall-clock timestamps
    /// (meter logs) to the monotonic axis. Taken when the recorder opens if not given.
    #[serde(default)]
    pub clock_anchor: Option<(i64, i64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SourceConfig {
    /// Instance name, unique within a recording (`rapl`, `meter`, `meter2` …).
    pub name: String,
    /// Polling rate; a slow source (IPMI) simply achieves less.
    pub hz: f64,
    #[serde(flatten)]
    pub kind: SourceKind,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceKind {
    Rapl {
        #[serde(default = "default_powercap")]
        root: PathBuf,
    },
    Hwmon {
        #[serde(default = "default_hwmon")]
        root: PathBuf,
    },
    Ipmi {
        #[serde(default = "default_ipmitool")]
        ipmitool: String,
        /// `open` (in-band, local BMC) or `lanplus` / `lan` (remote).
        #[serde(default = "default_interface")]
        interface: String,
        #[serde(default)]
        host: Option<String>,
        #[serde(default)]
        port: Option<u16>,
        #[serde(default)]
        user: Option<String>,
        /// Name of an environment variable holding the password (passed to ipmitool with -E).
        #[serde(default)]
        password_env: Option<String>,
        /// A file holding the password (passed to ipmitool with -f).
        #[serde(default)]
        password_file: Option<PathBuf>,
        /// Read `dcmi power reading`: "auto" (when the BMC supports it), "on", "off".
        #[serde(default = "default_auto")]
        dcmi: String,
        /// Read the SDR sensors (power, fan rpm, temperatures).
        #[serde(default = "default_true")]
        sdr: bool,
        #[serde(default = "default_ipmi_timeout")]
        timeout_s: f64,
        /// lanplus: the RMCP+ cipher suite (`-C N`). Naming one skips the "Get Channel Cipher
        /// Suites" request, which some BMCs never answer (ipmitool then waits ~10 s per call).
        #[serde(default)]
        cipher_suite: Option<u8>,
    },
    Meter {
        /// A CSV log (followed or read whole) or a serial device (Watts Up).
        path: PathBuf,
        /// "csv" or "wattsup".
        #[serde(default = "default_csv")]
        format: String,
        /// Follow the file as it grows (from its current end), like `tail -f`.
        #[serde(default = "default_true")]
        follow: bool,
        /// CSV: the timestamp column; the first column when not given.
        #[serde(default)]
        time_column: Option<String>,
        /// CSV: "auto", "epoch", "epoch_ms", "iso", "elapsed".
        #[serde(default = "default_auto")]
        time_format: String,
        /// CSV with `elapsed` times: wall-clock start of the log, ISO 8601.
        #[serde(default)]
        start: Option<String>,
        /// ISO times without a zone are in this offset (`+02:00`); local time when not given.
        #[serde(default)]
        utc_offset: Option<String>,
    },
    /// An emulated disk (`iowatt-emulate`): its mount point, whose `.iowatt/energy_uj` is read.
    Emulated { path: PathBuf },
    Cmd {
        argv: Vec<String>,
        #[serde(default = "default_cmd_timeout")]
        timeout_s: f64,
    },
}

fn default_powercap() -> PathBuf {
    PathBuf::from("/sys/class/powercap")
}
fn default_hwmon() -> PathBuf {
    PathBuf::from("/sys/class/hwmon")
}
fn default_ipmitool() -> String {
    "ipmitool".into()
}
fn default_interface() -> String {
    "open".into()
}
fn default_auto() -> String {
    "auto".into()
}
fn default_csv() -> String {
    "csv".into()
}
fn default_true() -> bool {
    true
}
fn default_ipmi_timeout() -> f64 {
    10.0
}
fn default_cmd_timeout() -> f64 {
    5.0
}
