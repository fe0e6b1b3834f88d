//! Fixtures: temp dirs laid out like the real sysfs, configs from JSON, counters rewritten in
//! place.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iowatt_power::source::{LocalReading, Source};
use iowatt_power::{PowerError, SourceConfig};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "iowatt-power-it-{tag}-{}-{}",
            std::process::id(),
            iowatt_metrics::now_ns()
        ));
        fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Writes a file, creating its directories.
pub fn write(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Rewrites a sysfs-like value the way the kernel presents a new one to an open descriptor:
/// in place (the sampler keeps its fd), the value first, then the file cut to its length —
/// never a rename, which the open fd would not see.
pub fn rewrite(path: &Path, value: impl std::fmt::Display) {
    let text = format!("{value}\n");
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(text.as_bytes(), 0).unwrap();
    f.set_len(text.len() as u64).unwrap();
}

pub fn symlink(target: &Path, link: &Path) {
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A source config from its JSON, as Python sends it.
pub fn config(json: serde_json::Value) -> SourceConfig {
    serde_json::from_value(json).unwrap()
}

pub fn poll(source: &mut dyn Source) -> Vec<LocalReading> {
    let mut out = Vec::new();
    source.poll(&mut out).unwrap();
    out
}

/// (channel name, value) of a poll's readings.
pub fn named(source: &dyn Source, readings: &[LocalReading]) -> Vec<(String, f64)> {
    readings
        .iter()
        .map(|r| (source.channels()[r.channel].channel.clone(), r.value))
        .collect()
}

pub fn channel_names(source: &dyn Source) -> Vec<String> {
    source
        .channels()
        .iter()
        .map(|c| c.channel.clone())
        .collect()
}

pub fn expect_err<T>(result: Result<T, PowerError>) -> PowerError {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

/// Waits (up to 10 s) until `done` holds; behaviour tests never assert on speed.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

/// A powercap class directory as Linux lays it out: zones live in the device tree, nested
/// under their parents, and `/sys/class/powercap` holds a flat symlink to each.
pub struct Powercap {
    pub class: PathBuf,
    devices: PathBuf,
}

impl Powercap {
    pub fn new(dir: &Path) -> Self {
        let p = Powercap {
            class: dir.join("sys/class/powercap"),
            devices: dir.join("sys/devices/virtual/powercap/intel-rapl"),
        };
        write(&p.devices.join("enabled"), "1\n");
        symlink(&p.devices, &p.class.join("intel-rapl"));
        p
    }

    /// A zone `intel-rapl:0` or subzone `intel-rapl:0:1`; returns its energy_uj path.
    pub fn zone(&self, id: &str, name: &str, energy_uj: u64, max_uj: u64) -> PathBuf {
        let dir = match id.rsplit_once(':') {
            Some((parent, _)) if parent.contains(':') => self.devices.join(parent).join(id),
            _ => self.devices.join(id),
        };
        write(&dir.join("name"), &format!("{name}\n"));
        write(&dir.join("energy_uj"), &format!("{energy_uj}\n"));
        write(&dir.join("max_energy_range_uj"), &format!("{max_uj}\n"));
        write(&dir.join("enabled"), "1\n");
        write(&dir.join("constraint_0_name"), "long_term\n");
        symlink(&dir, &self.class.join(id));
        dir.join("energy_uj")
    }
}
