//! An emulated disk (`iowatt-emulate`): `MOUNT/.iowatt/energy_uj` is the disk's energy in µJ
//! since it was mounted, made afresh on each read like RAPL's `energy_uj`, and read the same
//! way (one channel `disk`, scope `disk`; an emulated array's total, with each of its disks
//! within it as `disk/<N>` from `.iowatt/disk<N>/energy_uj`), but opened for each read, so that recording never
//! keeps the disk from unmounting. It never wraps; a remount starts it again from 0, which is
//! counted as a reset, as RAPL's is.

use std::fs;
use std::path::{Path, PathBuf};

use super::rapl;
use super::sysfs::{self, SysfsValue};
use crate::reading::{ChannelInfo, Unit};
use crate::source::{ClockAnchor, Source};
use crate::{PowerError, SourceConfig, SourceKind};

const HINT: &str = "give the mount point of an emulated disk; mount one with \
                    `iowatt emulate mount BACKING MOUNT --disk-model NAME`";

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Emulated { path } = &config.kind else {
        unreachable!("emulated::open called with another kind of source");
    };
    let counter = counter_path(path)?;
    let first = |counter: &PathBuf| {
        SysfsValue::open(counter.clone())
            .map(|(_, v)| v)
            .map_err(|e| {
                PowerError::unavailable(
                    format!(
                        "`{}` is not an emulated disk's mount: {}",
                        path.display(),
                        sysfs::describe(counter, &e)
                    ),
                    HINT,
                )
            })
    };
    let total = first(&counter)?;
    let channel = |name: String, parent: Option<String>, label: String| ChannelInfo {
        source: config.name.clone(),
        channel: name,
        unit: Unit::Joules,
        scope: "disk".into(),
        parent,
        label: Some(label),
    };
    let mut found = vec![(
        channel("disk".into(), None, path.display().to_string()),
        counter,
        total,
    )];
    // An array: the disks too, each within the array's channel as RAPL's subzones are.
    let control = path.join(".iowatt");
    let disks = fs::read_to_string(control.join("disks"))
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or(0);
    for d in 0..disks {
        let counter = control.join(format!("disk{d}/energy_uj"));
        let label = format!("{} disk {d}", path.display());
        let info = channel(format!("disk/{d}"), Some("disk".into()), label);
        found.push((info, counter.clone(), first(&counter)?));
    }
    Ok(rapl::counters(found))
}

/// `MOUNT/.iowatt/energy_uj`, once MOUNT is known to be a directory.
fn counter_path(mount: &Path) -> Result<PathBuf, PowerError> {
    match fs::metadata(mount) {
        Ok(m) if m.is_dir() => Ok(mount.join(".iowatt/energy_uj")),
        Ok(_) => Err(PowerError::unavailable(
            format!("emulated disk `{}` is not a directory", mount.display()),
            HINT,
        )),
        Err(e) => Err(PowerError::unavailable(
            format!("no emulated disk at `{}`: {e}", mount.display()),
            HINT,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_directory_or_a_file_is_refused_with_the_mount_hint() {
        let dir = std::env::temp_dir().join(format!("iowatt-emulated-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        fs::write(&file, "x").unwrap();
        let config = |path: &Path| SourceConfig {
            name: "emulated".into(),
            hz: 10.0,
            kind: SourceKind::Emulated {
                path: path.to_path_buf(),
            },
        };
        for (path, fragment) in [
            (dir.clone(), "not an emulated disk's mount"),
            (file.clone(), "not a directory"),
            (dir.join("absent"), "no emulated disk at"),
        ] {
            let Err(e) = open(&config(&path), (0, 0)) else {
                panic!("{} opened", path.display());
            };
            assert!(e.to_string().contains(fragment), "{e}");
            assert!(e.hint().unwrap().contains("iowatt emulate mount"));
        }
        // A counter file under .iowatt is read, and grows into joules.
        fs::create_dir_all(dir.join(".iowatt")).unwrap();
        fs::write(dir.join(".iowatt/energy_uj"), "2500000\n").unwrap();
        let mut source = open(&config(&dir), (0, 0)).unwrap();
        assert_eq!(source.channels()[0].channel, "disk");
        assert_eq!(source.channels()[0].scope, "disk");
        fs::write(dir.join(".iowatt/energy_uj"), "4000000\n").unwrap();
        let mut out = Vec::new();
        source.poll(&mut out).unwrap();
        assert_eq!(out[0].value, 1.5);
        // An array's mount: the array's channel, and within it one per disk.
        fs::write(dir.join(".iowatt/disks"), "2\n").unwrap();
        for (d, uj) in [(0, "1000000\n"), (1, "3000000\n")] {
            fs::create_dir_all(dir.join(format!(".iowatt/disk{d}"))).unwrap();
            fs::write(dir.join(format!(".iowatt/disk{d}/energy_uj")), uj).unwrap();
        }
        let mut source = open(&config(&dir), (0, 0)).unwrap();
        let names: Vec<_> = source
            .channels()
            .iter()
            .map(|c| c.channel.clone())
            .collect();
        assert_eq!(names, ["disk", "disk/0", "disk/1"]);
        assert_eq!(source.channels()[2].parent.as_deref(), Some("disk"));
        fs::write(dir.join(".iowatt/disk1/energy_uj"), "3500000\n").unwrap();
        let mut out = Vec::new();
        source.poll(&mut out).unwrap();
        let grown: Vec<_> = out.iter().map(|r| r.value).collect();
        assert_eq!(grown, [0.0, 0.0, 0.5]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
