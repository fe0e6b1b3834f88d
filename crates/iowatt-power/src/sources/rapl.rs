//! powercap RAPL: cumulative energy counters per package, core, uncore, dram and psys zone.
//!
//! Zones are found under `/sys/class/powercap` as `intel-rapl:N`, `intel-rapl-mmio:N` and
//! subzones `intel-rapl:N:M`, and chosen by their `name` file, never by index (indexes differ
//! between machines; AMD exposes the same names through the same driver). `energy_uj` is a µJ
//! counter that wraps at `max_energy_range_uj` within minutes at full load, so each zone keeps
//! its last value and the running total since open.

use std::fs;
use std::path::{Path, PathBuf};

use iowatt_metrics::now_ns;

use super::sysfs::{self, SysfsValue};
use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Rapl { root } = &config.kind else {
        unreachable!("rapl::open called with another kind of source");
    };
    Ok(Box::new(Rapl::open(&config.name, root)?))
}

struct Rapl {
    channels: Vec<ChannelInfo>,
    zones: Vec<Zone>,
    warnings: Vec<String>,
}

struct Zone {
    /// The counter kept open and re-read (sysfs), or `None` when it is opened for each read: a
    /// file kept open on a FUSE mount would keep that mount from unmounting.
    energy: Option<SysfsValue>,
    path: PathBuf,
    max_range_uj: u64,
    last_uj: u64,
    total_uj: u64,
}

impl Zone {
    fn new(energy: Option<SysfsValue>, path: PathBuf, first: i64, max_range_uj: u64) -> Zone {
        Zone {
            energy,
            path,
            max_range_uj,
            last_uj: first.max(0) as u64,
            total_uj: 0,
        }
    }

    /// The counter, µJ, and when it was read (ns, CLOCK_MONOTONIC).
    fn read(&self) -> Result<(u64, u64), PowerError> {
        let (value, at) = match &self.energy {
            Some(file) => (file.read(), now_ns()),
            None => match SysfsValue::open(self.path.clone()) {
                // Timed before the close: through FUSE a close waits for a flush's round trip.
                Ok((file, v)) => {
                    let at = now_ns();
                    drop(file);
                    (Ok(v), at)
                }
                Err(e) => (Err(e), now_ns()),
            },
        };
        let value = value.map_err(|source| PowerError::Io {
            op: "read",
            path: self.path.clone(),
            source,
        })?;
        Ok((value.max(0) as u64, at))
    }
}

/// A source of µJ counters (the emulated disk's `.iowatt/energy_uj`, or each of an emulated
/// array's disks') that never wrap, read as RAPL zones are but opened for each read; each
/// with its value at open. A counter that goes backwards (a disk mounted again) is counted as
/// a reset.
pub(super) fn counters(found: Vec<(ChannelInfo, PathBuf, i64)>) -> Box<dyn Source> {
    let (channels, zones) = found
        .into_iter()
        .map(|(channel, path, first)| (channel, Zone::new(None, path, first, 0)))
        .unzip();
    Box::new(Rapl {
        channels,
        zones,
        warnings: Vec::new(),
    })
}

/// A zone directory: `intel-rapl:0:1` is (prefix `intel-rapl`, top 0, sub Some(1)).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ZoneId {
    mmio: bool,
    top: u32,
    sub: Option<u32>,
}

impl ZoneId {
    fn parse(dir_name: &str) -> Option<ZoneId> {
        let (mmio, rest) = if let Some(rest) = dir_name.strip_prefix("intel-rapl-mmio:") {
            (true, rest)
        } else {
            (false, dir_name.strip_prefix("intel-rapl:")?)
        };
        let mut parts = rest.split(':');
        let top = parts.next()?.parse().ok()?;
        let sub = match parts.next() {
            Some(s) => Some(s.parse().ok()?),
            None => None,
        };
        parts.next().is_none().then_some(ZoneId { mmio, top, sub })
    }

    fn parent(&self) -> ZoneId {
        ZoneId {
            sub: None,
            ..self.clone()
        }
    }

    fn dir_name(&self) -> String {
        let prefix = if self.mmio {
            "intel-rapl-mmio"
        } else {
            "intel-rapl"
        };
        match self.sub {
            Some(sub) => format!("{prefix}:{}:{sub}", self.top),
            None => format!("{prefix}:{}", self.top),
        }
    }
}

impl Rapl {
    fn open(name: &str, root: &Path) -> Result<Rapl, PowerError> {
        let found = find_zones(root);
        if found.is_empty() {
            return Err(PowerError::unavailable(
                format!("no RAPL zones under `{}`", root.display()),
                "RAPL is absent in virtual machines and on some CPUs (and needs the \
                 intel_rapl_msr module); try --source hwmon, ipmi or meter",
            ));
        }
        let mut rapl = Rapl {
            channels: Vec::new(),
            zones: Vec::new(),
            warnings: Vec::new(),
        };
        let mut denied = false;
        let mut first_error = None;
        for (id, dir) in &found {
            let zone_name = match sysfs::read_text(&dir.join("name")) {
                Ok(n) if !n.is_empty() => n,
                _ => {
                    rapl.warnings.push(format!(
                        "RAPL zone `{}` has no readable `name`: skipped",
                        id.dir_name()
                    ));
                    continue;
                }
            };
            let (channel, parent) = match id.sub {
                None => (zone_name.clone(), None),
                Some(_) => {
                    let parent = found
                        .iter()
                        .find(|(p, _)| *p == id.parent())
                        .and_then(|(_, d)| sysfs::read_text(&d.join("name")).ok());
                    match parent {
                        Some(p) => (format!("{p}/{zone_name}"), Some(p)),
                        None => (zone_name.clone(), None),
                    }
                }
            };
            if rapl.channels.iter().any(|c| c.channel == channel) {
                // `intel-rapl-mmio:0` is the package domain again through another interface
                // (newer Intel clients): the same counter, which must not be counted twice.
                continue;
            }
            let path = dir.join("energy_uj");
            let (energy, first) = match SysfsValue::open(path.clone()) {
                Ok(v) => v,
                Err(e) => {
                    denied |= sysfs::is_permission(&e);
                    let text = sysfs::describe(&path, &e);
                    rapl.warnings.push(format!(
                        "RAPL zone `{}` ({zone_name}) skipped: {text}",
                        id.dir_name()
                    ));
                    first_error.get_or_insert(text);
                    continue;
                }
            };
            let max_range_uj = sysfs::read_text(&dir.join("max_energy_range_uj"))
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            rapl.zones
                .push(Zone::new(Some(energy), path, first, max_range_uj));
            // A subzone whose parent could not be read has no parent channel to be nested in.
            let parent = parent.filter(|p| rapl.channels.iter().any(|c| &c.channel == p));
            rapl.channels.push(ChannelInfo {
                source: name.to_string(),
                channel,
                unit: Unit::Joules,
                scope: scope_of(&zone_name).to_string(),
                parent,
                label: Some(id.dir_name()),
            });
        }
        if rapl.zones.is_empty() {
            let what = first_error.unwrap_or_else(|| "no zone has a name".into());
            return Err(none_readable(root, &what, denied));
        }
        Ok(rapl)
    }
}

/// Every zone was skipped. Since Linux 5.10 the usual reason is permissions.
fn none_readable(root: &Path, what: &str, denied: bool) -> PowerError {
    let hint = if denied {
        "energy_uj has been readable only by root since Linux 5.10 (CVE-2020-8694, PLATYPUS): \
         run iowatt as root, or add a udev rule that gives a group read access to \
         /sys/class/powercap/*/energy_uj (chgrp + chmod g+r)"
    } else {
        "try --source hwmon, ipmi or meter"
    };
    PowerError::unavailable(
        format!(
            "no RAPL zone under `{}` can be read: {what}",
            root.display()
        ),
        hint,
    )
}

/// Zone directories under `root`, in index order. /sys/class/powercap lists subzones beside
/// their parents; the device tree nests them inside, so both places are looked at.
fn find_zones(root: &Path) -> Vec<(ZoneId, PathBuf)> {
    let mut zones: Vec<(ZoneId, PathBuf)> = Vec::new();
    let add = |dir: &Path, zones: &mut Vec<(ZoneId, PathBuf)>| {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(ZoneId::parse) else {
                continue;
            };
            if !zones.iter().any(|(z, _)| *z == id) {
                zones.push((id, entry.path()));
            }
        }
    };
    add(root, &mut zones);
    let tops: Vec<PathBuf> = zones
        .iter()
        .filter(|(id, _)| id.sub.is_none())
        .map(|(_, d)| d.clone())
        .collect();
    for top in tops {
        add(&top, &mut zones);
    }
    zones.sort();
    zones
}

/// `package-0` → `package`; `core`, `dram`, `psys` stay as they are.
fn scope_of(zone_name: &str) -> &str {
    match zone_name.rsplit_once('-') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => zone_name,
    }
}

impl Source for Rapl {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let mut failed = None;
        for (channel, zone) in self.zones.iter_mut().enumerate() {
            let (value, at) = match zone.read() {
                Ok(read) => read,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            let mono_ns = at as i64;
            match delta_uj(zone.last_uj, value, zone.max_range_uj) {
                Some(d) => zone.total_uj += d,
                None => self.warnings.push(format!(
                    "`{}` went from {} to {value} µJ without a known range: counted as a reset",
                    zone.path.display(),
                    zone.last_uj
                )),
            }
            zone.last_uj = value;
            out.push(LocalReading {
                mono_ns,
                channel,
                value: zone.total_uj as f64 / 1e6,
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

/// Energy between two counter values, wraparound removed: if `now < last` the counter passed
/// `max_range` (Kepler `energy_zone.go`, PowerJoular). `None` when it went backwards without a
/// range that explains it: a reset, counted from the new value.
fn delta_uj(last: u64, now: u64, max_range: u64) -> Option<u64> {
    if now >= last {
        Some(now - last)
    } else if max_range >= last {
        Some(now + (max_range - last))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_ids_parse_and_sort_by_index() {
        let id = |s| ZoneId::parse(s).unwrap();
        assert_eq!(
            id("intel-rapl:0:2"),
            ZoneId {
                mmio: false,
                top: 0,
                sub: Some(2)
            }
        );
        assert!(id("intel-rapl-mmio:0").mmio);
        assert_eq!(ZoneId::parse("intel-rapl"), None);
        assert_eq!(ZoneId::parse("intel-rapl:x"), None);
        assert_eq!(ZoneId::parse("intel-rapl:0:1:2"), None);
        assert!(id("intel-rapl:0") < id("intel-rapl:0:0"));
        assert!(id("intel-rapl:0:1") < id("intel-rapl:1"));
        assert_eq!(id("intel-rapl:10:1").dir_name(), "intel-rapl:10:1");
    }

    #[test]
    fn scope_drops_the_index_suffix() {
        assert_eq!(scope_of("package-0"), "package");
        assert_eq!(scope_of("package-12"), "package");
        assert_eq!(scope_of("dram"), "dram");
        assert_eq!(scope_of("psys"), "psys");
    }

    #[test]
    fn permission_denied_explains_the_root_only_counters() {
        // Tests run as root, where file modes never refuse a read: the hint is checked here.
        let e = none_readable(Path::new("/sys/class/powercap"), "denied", true);
        assert!(e.hint().unwrap().contains("CVE-2020-8694"));
        assert!(e.hint().unwrap().contains("udev rule"));
        let e = none_readable(Path::new("/sys/class/powercap"), "EISDIR", false);
        assert!(!e.hint().unwrap().contains("CVE"));
    }

    #[test]
    fn delta_removes_wraparound() {
        assert_eq!(delta_uj(100, 250, 1000), Some(150));
        assert_eq!(delta_uj(900, 100, 1000), Some(200));
        assert_eq!(delta_uj(900, 100, 0), None);
    }
}
