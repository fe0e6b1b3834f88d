//! hwmon on a fixture tree: `hwmonN` symlinks into device directories, as in /sys/class/hwmon.

use std::path::{Path, PathBuf};

use iowatt_power::sources::hwmon;
use iowatt_power::{PowerError, Unit};
use serde_json::json;

use crate::support::{
    assert_close, channel_names, config, expect_err, named, poll, rewrite, symlink, write, TempDir,
};

/// Adds `hwmonN` for a device at `devices/<device>`, with (attribute, value) files.
fn device(root: &Path, n: u32, device: &str, name: &str, attrs: &[(&str, &str)]) -> PathBuf {
    let sys = root.parent().unwrap().parent().unwrap();
    let dir = sys
        .join("devices")
        .join(device)
        .join(format!("hwmon/hwmon{n}"));
    write(&dir.join("name"), &format!("{name}\n"));
    for (attr, value) in attrs {
        write(&dir.join(attr), &format!("{value}\n"));
    }
    symlink(&dir, &root.join(format!("hwmon{n}")));
    dir
}

fn board(dir: &TempDir) -> PathBuf {
    let root = dir.path().join("sys/class/hwmon");
    device(
        &root,
        0,
        "platform/coretemp.0",
        "coretemp",
        &[
            ("temp1_input", "45000"),
            ("temp1_label", "Package id 0"),
            ("temp1_crit", "100000"),
            ("temp2_input", "43500"),
            ("temp2_label", "Core 0"),
        ],
    );
    device(
        &root,
        1,
        "i2c-1/1-0040",
        "ina226",
        &[
            ("in0_input", "2"),
            ("in1_input", "12040"),
            ("curr1_input", "1500"),
            ("power1_input", "18000000"),
            ("shunt_resistor", "10000"),
        ],
    );
    device(
        &root,
        2,
        "i2c-1/1-0041",
        "ina226",
        &[("power1_input", "5000000"), ("power1_average", "4000000")],
    );
    device(
        &root,
        3,
        "platform/nct6775.656",
        "nct6775",
        &[("fan1_input", "1200"), ("fan2_input", "0"), ("pwm1", "128")],
    );
    device(
        &root,
        4,
        "platform/amd_energy.0",
        "amd_energy",
        &[("energy1_input", "1000000"), ("energy1_label", "Esocket0")],
    );
    device(
        &root,
        5,
        "platform/ACPI000D:00",
        "power_meter",
        &[
            ("power1_average", "95000000"),
            ("power1_average_interval", "1000"),
        ],
    );
    root
}

fn source(root: &Path) -> serde_json::Value {
    json!({"name": "hwmon", "hz": 10.0, "kind": "hwmon", "root": root})
}

#[test]
fn sensors_become_channels_in_si_units() {
    let dir = TempDir::new("hwmon");
    let root = board(&dir);
    let mut s = hwmon::open(&config(source(&root)), (0, 0)).unwrap();
    assert_eq!(
        channel_names(s.as_ref()),
        [
            "coretemp/Package id 0",
            "coretemp/Core 0",
            "ina226@hwmon1/power1",
            "ina226@hwmon1/in0",
            "ina226@hwmon1/in1",
            "ina226@hwmon1/curr1",
            "ina226@hwmon2/power1",
            "ina226@hwmon2/power1 average",
            "nct6775/fan1",
            "nct6775/fan2",
            "nct6775/pwm1",
            "amd_energy/Esocket0",
            "power_meter/power1",
        ]
    );
    let units: Vec<(Unit, &str)> = s
        .channels()
        .iter()
        .map(|c| (c.unit, c.scope.as_str()))
        .collect();
    assert_eq!(units[0], (Unit::Celsius, "sensor"));
    assert_eq!(units[2], (Unit::Watts, "hwmon"));
    assert_eq!(units[4], (Unit::Volts, "sensor"));
    assert_eq!(units[5], (Unit::Amps, "sensor"));
    assert_eq!(units[8], (Unit::Rpm, "sensor"));
    assert_eq!(units[10], (Unit::Ratio, "sensor"));
    assert_eq!(units[11], (Unit::Joules, "hwmon"));
    assert_eq!(s.channels()[0].label.as_deref(), Some("Package id 0"));
    assert_eq!(s.channels()[2].label, None);
    let readings = poll(s.as_mut());
    let got = named(s.as_ref(), &readings);
    let want = [
        45.0,
        43.5,
        18.0,
        0.002,
        12.04,
        1.5,
        5.0,
        4.0,
        1200.0,
        0.0,
        128.0 / 255.0,
        0.0,
        95.0,
    ];
    // Exactly the decimal values the files hold, not 12.040000000000001.
    let got: Vec<f64> = got.iter().map(|(_, v)| *v).collect();
    assert_eq!(got, want);
}

#[test]
fn energy_counts_from_open_and_survives_a_reset() {
    let dir = TempDir::new("hwmon-energy");
    let root = board(&dir);
    let energy = root.join("hwmon4/energy1_input");
    let mut s = hwmon::open(&config(source(&root)), (0, 0)).unwrap();
    let joules = |s: &mut dyn iowatt_power::source::Source| poll(s)[11].value;
    rewrite(&energy, 3_500_000);
    assert_close(joules(s.as_mut()), 2.5);
    assert!(s.warnings().is_empty());
    // The driver reloaded: the counter starts over. Counted on from the new base.
    rewrite(&energy, 100_000);
    assert_close(joules(s.as_mut()), 2.5);
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("a reset"), "{}", warnings[0]);
    rewrite(&energy, 1_100_000);
    assert_close(joules(s.as_mut()), 3.5);
}

#[test]
fn duplicate_labels_fall_back_to_the_attribute() {
    let dir = TempDir::new("hwmon-labels");
    let root = dir.path().join("class/hwmon");
    device(
        &root,
        7,
        "platform/nct6775.656",
        "nct6775",
        &[
            ("temp1_input", "30000"),
            ("temp1_label", "AUXTIN"),
            ("temp2_input", "31000"),
            ("temp2_label", "AUXTIN"),
        ],
    );
    let s = hwmon::open(&config(source(&root)), (0, 0)).unwrap();
    assert_eq!(
        channel_names(s.as_ref()),
        ["nct6775/AUXTIN", "nct6775/temp2"]
    );
}

#[test]
fn unreadable_attributes_are_skipped_with_one_warning() {
    let dir = TempDir::new("hwmon-unreadable");
    let root = board(&dir);
    let attr = root.join("hwmon3/fan2_input");
    std::fs::remove_file(&attr).unwrap();
    std::fs::create_dir(&attr).unwrap();
    let mut s = hwmon::open(&config(source(&root)), (0, 0)).unwrap();
    assert!(!channel_names(s.as_ref()).contains(&"nct6775/fan2".to_string()));
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("nct6775/fan2"), "{}", warnings[0]);
}

#[test]
fn no_sensors_is_unavailable() {
    let dir = TempDir::new("hwmon-none");
    let root = dir.path().join("class/hwmon");
    let err = expect_err(hwmon::open(&config(source(&root)), (0, 0)));
    assert!(matches!(err, PowerError::Unavailable { .. }));
    assert!(
        err.to_string().starts_with("no hwmon devices under"),
        "{err}"
    );
    assert!(err.hint().unwrap().contains("driver"));
    // Devices, but none with a sensor of interest.
    device(
        &root,
        0,
        "virtual/thermal/cooling_device0",
        "acpi_fan",
        &[("pwm1_enable", "2")],
    );
    let err = expect_err(hwmon::open(&config(source(&root)), (0, 0)));
    assert!(err.to_string().contains("(devices: acpi_fan)"), "{err}");
}
