//! The recorder: several sources at once, events without floods, a prompt stop with a final
//! reading.

use std::path::Path;
use std::time::{Duration, Instant};

use iowatt_metrics::now_ns;
use iowatt_power::{EventKind, PowerError, Recorder, RecorderConfig, SourceConfig};
use serde_json::json;

use crate::support::{config, expect_err, wait_for, write, Powercap, TempDir};

fn recorder(sources: Vec<SourceConfig>) -> Result<Recorder, PowerError> {
    Recorder::open(&RecorderConfig {
        sources,
        clock_anchor: None,
    })
}

fn cmd(name: &str, hz: f64, script: &str) -> SourceConfig {
    config(json!({"name": name, "hz": hz, "kind": "cmd", "argv": ["sh", "-c", script]}))
}

fn hwmon(root: &Path, hz: f64) -> SourceConfig {
    config(json!({"name": "hwmon", "hz": hz, "kind": "hwmon", "root": root}))
}

#[test]
fn several_sources_share_one_channel_table() {
    let dir = TempDir::new("rec-many");
    let pc = Powercap::new(dir.path());
    pc.zone("intel-rapl:0", "package-0", 0, 1000);
    pc.zone("intel-rapl:0:0", "core", 0, 1000);
    let hw = dir.path().join("hwmon");
    write(&hw.join("hwmon0/name"), "ina226\n");
    write(&hw.join("hwmon0/power1_input"), "2500000\n");
    // A zone that cannot be read: its warning arrives as an event at the first drain.
    let dram = dir
        .path()
        .join("sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:1");
    write(&dram.join("name"), "dram\n");
    std::fs::create_dir_all(dram.join("energy_uj")).unwrap();
    crate::support::symlink(&dram, &pc.class.join("intel-rapl:0:1"));
    let rec = recorder(vec![
        config(json!({"name": "rapl", "hz": 100.0, "kind": "rapl", "root": pc.class})),
        hwmon(&hw, 50.0),
        cmd("plug", 20.0, "echo 4.5"),
    ])
    .unwrap();
    let table: Vec<(String, String, u32)> = rec
        .channels()
        .iter()
        .enumerate()
        .map(|(i, c)| (c.source.clone(), c.channel.clone(), i as u32))
        .collect();
    assert_eq!(
        table,
        [
            ("rapl".into(), "package-0".into(), 0),
            ("rapl".into(), "package-0/core".into(), 1),
            ("hwmon".into(), "ina226/power1".into(), 2),
            ("plug".into(), "plug".into(), 3),
        ]
    );
    rec.start();
    wait_for("every source to poll twice", || {
        rec.stats().iter().all(|s| s.polls >= 2)
    });
    rec.stop();
    let (readings, events) = rec.drain();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].source.as_str(), events[0].kind),
        ("rapl", EventKind::Warning)
    );
    assert!(events[0].message.contains("intel-rapl:0:1"));
    for (channel, value) in [(0, 0.0), (1, 0.0), (2, 2.5), (3, 4.5)] {
        let of: Vec<f64> = readings
            .iter()
            .filter(|r| r.channel == channel)
            .map(|r| r.value)
            .collect();
        assert!(of.len() >= 3, "channel {channel}: {of:?}");
        assert!(of.iter().all(|v| *v == value), "channel {channel}: {of:?}");
    }
    let stats = rec.stats();
    let names: Vec<&str> = stats.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(names, ["rapl", "hwmon", "plug"]);
    for s in &stats {
        let per_poll = rec
            .channels()
            .iter()
            .filter(|c| c.source == s.source)
            .count() as u64;
        assert_eq!(s.readings, s.polls * per_poll, "{s:?}");
        assert_eq!(s.errors, 0);
    }
    assert_eq!(
        readings.len() as u64,
        stats.iter().map(|s| s.readings).sum::<u64>()
    );
    // Drained: nothing twice.
    assert_eq!(rec.drain().0.len(), 0);
}

#[test]
fn a_failing_source_makes_one_event_each_way_not_a_flood() {
    let dir = TempDir::new("rec-events");
    let flag = dir.path().join("fail");
    let script = format!("[ -e '{}' ] && exit 3; echo 1", flag.display());
    let rec = recorder(vec![cmd("flaky", 100.0, &script)]).unwrap();
    rec.start();
    wait_for("some good polls", || rec.stats()[0].readings >= 3);
    write(&flag, "");
    wait_for("several failed polls", || rec.stats()[0].errors >= 5);
    let good = rec.stats()[0].readings;
    std::fs::remove_file(&flag).unwrap();
    wait_for("good polls again", || rec.stats()[0].readings >= good + 3);
    rec.stop();
    let (_, events) = rec.drain();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::Error, EventKind::Recovered],
        "{events:?}"
    );
    assert!(
        events[0].message.contains("exit status: 3"),
        "{}",
        events[0].message
    );
    let failed = rec.stats()[0].errors;
    assert!(failed >= 5);
    assert_eq!(
        events[1].message,
        format!("the source answers again after {failed} failed polls")
    );
    assert!(events[0].mono_ns <= events[1].mono_ns);
}

#[test]
fn stop_wakes_a_slow_source_at_once_for_a_final_reading() {
    let dir = TempDir::new("rec-stop");
    let hw = dir.path().join("hwmon");
    write(&hw.join("hwmon0/name"), "ina226\n");
    write(&hw.join("hwmon0/power1_input"), "1000000\n");
    // One poll every 5 s: only the first poll and the final one fall inside this recording.
    let rec = recorder(vec![hwmon(&hw, 0.2)]).unwrap();
    rec.start();
    wait_for("the first poll", || rec.stats()[0].polls == 1);
    let stop_called = now_ns() as i64;
    let t = Instant::now();
    rec.stop();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "stop took {:?}",
        t.elapsed()
    );
    let (readings, _) = rec.drain();
    assert_eq!(readings.len(), 2);
    assert!(readings[0].mono_ns < stop_called);
    assert!(readings[1].mono_ns >= stop_called);
    // Started again, it samples again.
    rec.start();
    rec.stop();
    assert_eq!(rec.drain().0.len(), 2);
}

#[test]
fn the_clock_anchor_pairs_realtime_with_monotonic() {
    let dir = TempDir::new("rec-anchor");
    let hw = dir.path().join("hwmon");
    write(&hw.join("hwmon0/name"), "x\n");
    write(&hw.join("hwmon0/temp1_input"), "1000\n");
    let given = Recorder::open(&RecorderConfig {
        sources: vec![hwmon(&hw, 1.0)],
        clock_anchor: Some((5, 7)),
    })
    .unwrap();
    assert_eq!(given.clock_anchor(), (5, 7));
    let before = now_ns() as i64;
    let (real, mono) = recorder(vec![hwmon(&hw, 1.0)]).unwrap().clock_anchor();
    assert!(mono >= before && mono <= now_ns() as i64);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    assert!((wall - real).abs() < 60_000_000_000, "{real} vs {wall}");
}

#[test]
fn bad_recorder_configs_are_invalid() {
    let dir = TempDir::new("rec-invalid");
    let hw = dir.path().join("hwmon");
    write(&hw.join("hwmon0/name"), "x\n");
    write(&hw.join("hwmon0/temp1_input"), "1000\n");
    let err = expect_err(recorder(vec![]));
    assert!(matches!(err, PowerError::Invalid { .. }));
    let err = expect_err(recorder(vec![hwmon(&hw, 1.0), hwmon(&hw, 2.0)]));
    assert_eq!(err.to_string(), "two sources are named `hwmon`");
    for hz in [0.0, -1.0, 1e9] {
        let err = expect_err(recorder(vec![hwmon(&hw, hz)]));
        assert!(matches!(err, PowerError::Invalid { .. }), "{hz}: {err:?}");
        assert!(err.to_string().contains("out of range"), "{err}");
    }
    let err = expect_err(recorder(vec![config(json!({
        "name": "m", "hz": 1.0, "kind": "meter", "path": "/dev/null", "format": "pzem"
    }))]));
    assert_eq!(err.to_string(), "source `m`: unknown meter format `pzem`");
}
