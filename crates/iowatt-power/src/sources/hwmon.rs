//! hwmon: power, energy, voltage, current, temperature and fan sensors, and fan duty, under
//! `/sys/class/hwmon/hwmonN` (Documentation/hwmon/sysfs-interface.rst).
//!
//! Values come in the interface's units (µW, µJ, mV, mA, m°C, RPM, PWM duty 0..255) and leave
//! in SI units (duty as a ratio, 0..1).
//! `energy*_input` counters become joules since open; a counter that goes backwards was reset
//! (driver reload, module parameter), which is reported and counted from the new value.

use std::fs;
use std::path::{Path, PathBuf};

use iowatt_metrics::now_ns;

use super::sysfs::{self, SysfsValue};
use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Hwmon { root } = &config.kind else {
        unreachable!("hwmon::open called with another kind of source");
    };
    Ok(Box::new(Hwmon::open(&config.name, root)?))
}

/// What an attribute measures, in the order channels are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Power,
    PowerAverage,
    Energy,
    Voltage,
    Current,
    Temperature,
    Fan,
    /// `pwmN`: the duty the chip drives fan N with.
    Duty,
}

impl Kind {
    /// `power1_input` → (Power, "power1"); attributes of no interest → None.
    fn of(file_name: &str) -> Option<(Kind, &str)> {
        if file_name
            .strip_prefix("pwm")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some((Kind::Duty, file_name));
        }
        let (stem, suffix) = file_name.split_once('_')?;
        let prefix = stem.trim_end_matches(|c: char| c.is_ascii_digit());
        if prefix.len() == stem.len() {
            return None;
        }
        let kind = match (prefix, suffix) {
            ("power", "input") => Kind::Power,
            ("power", "average") => Kind::PowerAverage,
            ("energy", "input") => Kind::Energy,
            ("in", "input") => Kind::Voltage,
            ("curr", "input") => Kind::Current,
            ("temp", "input") => Kind::Temperature,
            ("fan", "input") => Kind::Fan,
            _ => return None,
        };
        Some((kind, stem))
    }

    fn unit(self) -> Unit {
        match self {
            Kind::Power | Kind::PowerAverage => Unit::Watts,
            Kind::Energy => Unit::Joules,
            Kind::Voltage => Unit::Volts,
            Kind::Current => Unit::Amps,
            Kind::Temperature => Unit::Celsius,
            Kind::Fan => Unit::Rpm,
            Kind::Duty => Unit::Ratio,
        }
    }

    /// From the interface's unit to the SI one. A division, not a multiplication by 1e-3: the
    /// quotient is the double nearest the decimal value (12040 mV → 12.04 V, not 12.040000…1).
    fn divisor(self) -> f64 {
        match self {
            Kind::Power | Kind::PowerAverage | Kind::Energy => 1e6,
            Kind::Voltage | Kind::Current | Kind::Temperature => 1e3,
            Kind::Fan => 1.0,
            Kind::Duty => 255.0,
        }
    }

    fn scope(self) -> &'static str {
        match self {
            Kind::Power | Kind::PowerAverage | Kind::Energy => "hwmon",
            _ => "sensor",
        }
    }
}

struct Hwmon {
    channels: Vec<ChannelInfo>,
    attrs: Vec<Attr>,
    warnings: Vec<String>,
}

struct Attr {
    value: SysfsValue,
    kind: Kind,
    /// Energy counters: the last raw value and the µJ counted since open.
    last: i64,
    total: i64,
}

/// One hwmon device: where its attributes are and what it calls itself.
struct Device {
    entry: String,
    dir: PathBuf,
    name: String,
}

impl Hwmon {
    fn open(source: &str, root: &Path) -> Result<Hwmon, PowerError> {
        let devices = find_devices(root);
        let mut hwmon = Hwmon {
            channels: Vec::new(),
            attrs: Vec::new(),
            warnings: Vec::new(),
        };
        let mut unreadable = Vec::new();
        for dev in &devices {
            // Two chips of one driver (two ina226 on one board) share a name.
            let shared = devices.iter().filter(|d| d.name == dev.name).count() > 1;
            let device_name = if shared {
                format!("{}@{}", dev.name, dev.entry)
            } else {
                dev.name.clone()
            };
            let mut found: Vec<(Kind, u32, String)> = fs::read_dir(&dev.dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let file = e.file_name().into_string().ok()?;
                    let (kind, stem) = Kind::of(&file)?;
                    let index = stem.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                    Some((kind, index.parse().ok()?, file))
                })
                .collect();
            found.sort();
            for (kind, _, file) in &found {
                let stem = file.split_once('_').map_or(file.as_str(), |(s, _)| s);
                let path = dev.dir.join(file);
                let (value, first) = match SysfsValue::open(path.clone()) {
                    Ok(v) => v,
                    Err(e) => {
                        unreadable.push(format!("{device_name}/{stem} ({e})"));
                        continue;
                    }
                };
                let label = sysfs::read_text(&dev.dir.join(format!("{stem}_label")))
                    .ok()
                    .filter(|l| !l.is_empty());
                let mut channel = format!("{device_name}/{}", label.as_deref().unwrap_or(stem));
                // power1_average beside power1_input: both are kept, told apart.
                if *kind == Kind::PowerAverage
                    && found.iter().any(|(k, _, f)| {
                        *k == Kind::Power && f.split_once('_').map(|p| p.0) == Some(stem)
                    })
                {
                    channel.push_str(" average");
                }
                // Labels need not be unique (two "AUXTIN"); the attribute stem always is.
                if hwmon.channels.iter().any(|c| c.channel == channel) {
                    channel = format!("{device_name}/{stem}");
                }
                hwmon.channels.push(ChannelInfo {
                    source: source.to_string(),
                    channel,
                    unit: kind.unit(),
                    scope: kind.scope().to_string(),
                    parent: None,
                    label,
                });
                hwmon.attrs.push(Attr {
                    value,
                    kind: *kind,
                    last: first,
                    total: 0,
                });
            }
        }
        if !unreadable.is_empty() {
            hwmon.warnings.push(format!(
                "{} hwmon attribute(s) cannot be read and are skipped: {}",
                unreadable.len(),
                unreadable.join(", ")
            ));
        }
        if hwmon.attrs.is_empty() {
            let what = if devices.is_empty() {
                format!("no hwmon devices under `{}`", root.display())
            } else {
                format!(
                    "no readable power, energy, voltage, current, temperature or fan sensor \
                     under `{}` (devices: {})",
                    root.display(),
                    devices
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(PowerError::unavailable(
                what,
                "load the sensor's driver (ina2xx, acpi_power_meter, coretemp, nct6775 …; \
                 `sensors-detect` finds them) or try --source rapl, ipmi or meter",
            ));
        }
        Ok(hwmon)
    }
}

/// `hwmonN` entries (symlinks into the device tree, followed), in index order.
fn find_devices(root: &Path) -> Vec<Device> {
    let mut devices: Vec<(u32, Device)> = fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let entry = e.file_name().into_string().ok()?;
            let index = entry.strip_prefix("hwmon")?.parse().ok()?;
            let mut dir = e.path();
            // Drivers of the old style keep their attributes under `device/`.
            if !dir.join("name").exists() && dir.join("device/name").exists() {
                dir.push("device");
            }
            let name = sysfs::read_text(&dir.join("name")).unwrap_or_else(|_| entry.clone());
            Some((index, Device { entry, dir, name }))
        })
        .collect();
    devices.sort_by_key(|(i, _)| *i);
    devices.into_iter().map(|(_, d)| d).collect()
}

impl Source for Hwmon {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let mut failed = None;
        for (channel, attr) in self.attrs.iter_mut().enumerate() {
            let raw = match attr.value.read() {
                Ok(v) => v,
                Err(e) => {
                    failed.get_or_insert_with(|| attr.value.error(e));
                    continue;
                }
            };
            let mono_ns = now_ns() as i64;
            let value = if attr.kind == Kind::Energy {
                if raw < attr.last {
                    self.warnings.push(format!(
                        "energy counter `{}` went back from {} to {raw} µJ: a reset, counted \
                         from the new value",
                        attr.value.path().display(),
                        attr.last
                    ));
                } else {
                    attr.total += raw - attr.last;
                }
                attr.last = raw;
                attr.total as f64 / 1e6
            } else {
                raw as f64 / attr.kind.divisor()
            };
            out.push(LocalReading {
                mono_ns,
                channel,
                value,
            });
        }
        failed.map_or(Ok(()), Err)
    }

    fn stats(&self) -> SourceStats {
        SourceStats::default()
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn attributes_map_to_kinds() {
        assert_eq!(Kind::of("power1_input"), Some((Kind::Power, "power1")));
        assert_eq!(
            Kind::of("power2_average"),
            Some((Kind::PowerAverage, "power2"))
        );
        assert_eq!(Kind::of("in0_input"), Some((Kind::Voltage, "in0")));
        assert_eq!(
            Kind::of("temp12_input"),
            Some((Kind::Temperature, "temp12"))
        );
        assert_eq!(Kind::of("temp1_label"), None);
        assert_eq!(Kind::of("temp1_max"), None);
        assert_eq!(Kind::of("power_input"), None);
        assert_eq!(Kind::of("name"), None);
        assert_eq!(Kind::of("pwm2"), Some((Kind::Duty, "pwm2")));
        assert_eq!(Kind::of("pwm2_enable"), None);
        assert_eq!(Kind::of("pwm"), None);
        assert_eq!(Kind::of("power1_average_interval"), None);
    }
}
