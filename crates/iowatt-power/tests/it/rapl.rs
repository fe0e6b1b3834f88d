//! powercap RAPL on a fixture tree with the real layout.

use std::time::Duration;

use iowatt_power::sources::rapl;
use iowatt_power::{PowerError, Recorder, RecorderConfig, Unit};
use serde_json::json;

use crate::support::{
    assert_close, channel_names, config, expect_err, named, poll, rewrite, Powercap, TempDir,
};

/// A client-like machine: one package with core, uncore and dram subzones, and psys.
fn machine(dir: &TempDir) -> Powercap {
    let pc = Powercap::new(dir.path());
    pc.zone("intel-rapl:0", "package-0", 1_000_000, 262_143_328_850);
    pc.zone("intel-rapl:0:0", "core", 2_000_000, 262_143_328_850);
    pc.zone("intel-rapl:0:1", "uncore", 3_000_000, 262_143_328_850);
    pc.zone("intel-rapl:0:2", "dram", 4_000_000, 65_712_999_613);
    pc.zone("intel-rapl:1", "psys", 5_000_000, 262_143_328_850);
    pc
}

fn source(root: &std::path::Path) -> serde_json::Value {
    json!({"name": "rapl", "hz": 200.0, "kind": "rapl", "root": root})
}

#[test]
fn zones_are_channels_named_by_their_name_file() {
    let dir = TempDir::new("rapl-names");
    let pc = machine(&dir);
    let mut s = rapl::open(&config(source(&pc.class)), (0, 0)).unwrap();
    assert_eq!(
        channel_names(s.as_ref()),
        [
            "package-0",
            "package-0/core",
            "package-0/uncore",
            "package-0/dram",
            "psys"
        ]
    );
    let info: Vec<(&str, Option<&str>, Unit)> = s
        .channels()
        .iter()
        .map(|c| (c.scope.as_str(), c.parent.as_deref(), c.unit))
        .collect();
    assert_eq!(
        info,
        [
            ("package", None, Unit::Joules),
            ("core", Some("package-0"), Unit::Joules),
            ("uncore", Some("package-0"), Unit::Joules),
            ("dram", Some("package-0"), Unit::Joules),
            ("psys", None, Unit::Joules),
        ]
    );
    assert_eq!(s.channels()[3].label.as_deref(), Some("intel-rapl:0:2"));
    assert!(s.warnings().is_empty());
    // Joules since open: nothing yet, then what the counters moved.
    let first = poll(s.as_mut());
    assert!(first.iter().all(|r| r.value == 0.0));
    rewrite(
        &pc.class.join("intel-rapl:0:2/energy_uj"),
        4_000_000 + 1_500_000,
    );
    let readings = poll(s.as_mut());
    let got = named(s.as_ref(), &readings);
    assert_eq!(got[3], ("package-0/dram".to_string(), 1.5));
}

#[test]
fn zones_are_chosen_by_name_not_by_index() {
    // psys at index 0 and the package at 1 (as on some clients): names decide, not numbers.
    let dir = TempDir::new("rapl-index");
    let pc = Powercap::new(dir.path());
    pc.zone("intel-rapl:0", "psys", 0, 1000);
    pc.zone("intel-rapl:1", "package-0", 0, 1000);
    pc.zone("intel-rapl:1:0", "core", 0, 1000);
    let s = rapl::open(&config(source(&pc.class)), (0, 0)).unwrap();
    assert_eq!(
        channel_names(s.as_ref()),
        ["psys", "package-0", "package-0/core"]
    );
    assert_eq!(s.channels()[2].parent.as_deref(), Some("package-0"));
    assert_eq!(s.channels()[0].scope, "psys");
}

#[test]
fn a_counter_that_wraps_during_the_recording_still_sums_exactly() {
    let dir = TempDir::new("rapl-wrap");
    let pc = Powercap::new(dir.path());
    let max: u64 = 262_143_328_850;
    let start = max - 7_500_000;
    let energy = pc.zone("intel-rapl:0", "package-0", start, max);
    pc.zone("intel-rapl:1", "psys", 0, max);
    let rec = Recorder::open(&RecorderConfig {
        sources: vec![config(source(&pc.class))],
        clock_anchor: None,
    })
    .unwrap();
    rec.start();
    // 40 steps of 0.25 J cross the wrap after 30: 10 J in all.
    let writer = std::thread::spawn(move || {
        let mut counter = start;
        for _ in 0..40 {
            counter = (counter + 250_000) % max;
            rewrite(&energy, counter);
            std::thread::sleep(Duration::from_millis(3));
        }
        counter
    });
    let last = writer.join().unwrap();
    assert!(last < start, "the counter wrapped");
    rec.stop();
    let (readings, events) = rec.drain();
    assert!(events.is_empty(), "{events:?}");
    let package: Vec<f64> = readings
        .iter()
        .filter(|r| r.channel == 0)
        .map(|r| r.value)
        .collect();
    assert!(package.len() >= 2);
    assert!(package.windows(2).all(|w| w[1] >= w[0]), "{package:?}");
    assert_close(*package.last().unwrap(), 10.0);
}

#[test]
fn an_unreadable_zone_is_skipped_with_a_warning() {
    let dir = TempDir::new("rapl-skip");
    let pc = machine(&dir);
    // As root, file modes never refuse a read: a directory in place of the file does.
    let dram = pc.class.join("intel-rapl:0:2/energy_uj");
    std::fs::remove_file(&dram).unwrap();
    std::fs::create_dir(&dram).unwrap();
    let mut s = rapl::open(&config(source(&pc.class)), (0, 0)).unwrap();
    assert_eq!(
        channel_names(s.as_ref()),
        ["package-0", "package-0/core", "package-0/uncore", "psys"]
    );
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("`intel-rapl:0:2` (dram) skipped"),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("Is a directory"), "{}", warnings[0]);
    assert_eq!(poll(s.as_mut()).len(), 4);
}

#[test]
fn every_zone_unreadable_is_unavailable() {
    let dir = TempDir::new("rapl-none-readable");
    let pc = Powercap::new(dir.path());
    let e = pc.zone("intel-rapl:0", "package-0", 0, 1000);
    std::fs::remove_file(&e).unwrap();
    std::fs::create_dir(&e).unwrap();
    let err = expect_err(rapl::open(&config(source(&pc.class)), (0, 0)));
    assert!(matches!(err, PowerError::Unavailable { .. }));
    assert!(err.to_string().starts_with("no RAPL zone under"), "{err}");
    assert!(err.to_string().contains("energy_uj"), "{err}");
}

#[test]
fn absent_powercap_is_unavailable_with_a_hint() {
    let dir = TempDir::new("rapl-absent");
    for root in [dir.path().join("missing"), dir.path().to_path_buf()] {
        let err = expect_err(rapl::open(&config(source(&root)), (0, 0)));
        let PowerError::Unavailable { message, hint } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(
            *message,
            format!("no RAPL zones under `{}`", root.display())
        );
        assert!(hint.contains("virtual machines"), "{hint}");
    }
}

#[test]
fn the_recorder_names_the_source_that_failed_to_open() {
    let dir = TempDir::new("rapl-prefix");
    let err = expect_err(Recorder::open(&RecorderConfig {
        sources: vec![config(source(&dir.path().join("none")))],
        clock_anchor: Some((1, 2)),
    }));
    assert!(matches!(err, PowerError::Unavailable { .. }));
    assert!(
        err.to_string().starts_with("source `rapl`: no RAPL zones"),
        "{err}"
    );
}

#[test]
fn mmio_duplicate_of_the_package_is_not_counted_twice() {
    let dir = TempDir::new("rapl-mmio");
    let pc = machine(&dir);
    pc.zone("intel-rapl-mmio:0", "package-0", 1_000_000, 262_143_328_850);
    let s = rapl::open(&config(source(&pc.class)), (0, 0)).unwrap();
    let names = channel_names(s.as_ref());
    assert_eq!(names.iter().filter(|n| *n == "package-0").count(), 1);
    assert_eq!(names.len(), 5);
}
