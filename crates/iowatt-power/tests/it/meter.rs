//! Meter CSV logs: imported whole, and followed while a logger appends, truncates and rotates.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use iowatt_power::source::Source;
use iowatt_power::sources::meter;
use iowatt_power::{PowerError, Recorder, RecorderConfig, Unit};
use serde_json::json;

use crate::support::{channel_names, config, expect_err, poll, write, TempDir};

/// 2026-11-21T10:00:00Z.
const T0_NS: i64 = 1_795_255_200_000_000_000;
/// Wall time T0 is monotonic 1 s.
const ANCHOR: (i64, i64) = (T0_NS, 1_000_000_000);

fn open(path: &Path, follow: bool, extra: serde_json::Value) -> Box<dyn Source> {
    try_open(path, follow, extra).unwrap()
}

fn try_open(
    path: &Path,
    follow: bool,
    extra: serde_json::Value,
) -> Result<Box<dyn Source>, PowerError> {
    let mut cfg =
        json!({"name": "meter", "hz": 10.0, "kind": "meter", "path": path, "follow": follow});
    cfg.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    meter::open(&config(cfg), ANCHOR)
}

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// (monotonic ms after the anchor's, channel, value) of readings.
fn rows(readings: &[iowatt_power::source::LocalReading]) -> Vec<(i64, usize, f64)> {
    readings
        .iter()
        .map(|r| ((r.mono_ns - ANCHOR.1) / 1_000_000, r.channel, r.value))
        .collect()
}

const MESSY: &str = "\
# shunt rig, 2 rails
# columns: time, V over the 12 V shunt, 12 V drive, V over the 5 V shunt

time,V_shunt12,V_drive12,V_shunt5
1795255200.0,0.010,12.01,0.005
1795255200.5,0.011,12.02,

1795255201.0,0.012,12.00,0.006,9
1795255201.5,0.012,abc,0.006
1795255200.3,0.013,NaN,-
1795255202.0,0.014,12.03,0.007";

#[test]
fn an_imported_log_counts_every_quirk() {
    let dir = TempDir::new("meter-import");
    let path = dir.path().join("rig.csv");
    write(&path, MESSY);
    let mut s = open(&path, false, json!({}));
    assert_eq!(
        channel_names(s.as_ref()),
        ["V_shunt12", "V_drive12", "V_shunt5"]
    );
    assert!(s
        .channels()
        .iter()
        .all(|c| c.unit == Unit::Raw && c.scope == "meter" && c.source == "meter"));
    let readings = poll(s.as_mut());
    assert_eq!(
        rows(&readings),
        [
            (0, 0, 0.010),
            (0, 1, 12.01),
            (0, 2, 0.005),
            (500, 0, 0.011),
            (500, 1, 12.02),
            (300, 0, 0.013),
            (2000, 0, 0.014),
            (2000, 1, 12.03),
            (2000, 2, 0.007),
        ]
    );
    let stats = s.stats();
    assert_eq!(stats.malformed_lines, 2);
    assert_eq!(stats.missing_values, 3);
    assert_eq!(stats.out_of_order, 1);
    let lines: Vec<u64> = stats.examples.iter().map(|e| e.0).collect();
    assert_eq!(lines, [6, 8, 9, 10]);
    assert_eq!(stats.examples[1].1, "1795255201.0,0.012,12.00,0.006,9");
    // The log is read once: a second poll adds nothing.
    assert!(poll(s.as_mut()).is_empty());
}

#[test]
fn iso_times_semicolons_and_a_named_time_column() {
    let dir = TempDir::new("meter-iso");
    let path = dir.path().join("plug.csv");
    write(
        &path,
        "watts;when\r\n12.5;2026-11-21 11:00:00.250\r\n13;2026-11-21T10:00:01Z\r\n",
    );
    let mut s = open(
        &path,
        false,
        json!({"time_column": "when", "utc_offset": "+01:00"}),
    );
    assert_eq!(channel_names(s.as_ref()), ["watts"]);
    assert_eq!(rows(&poll(s.as_mut())), [(250, 0, 12.5), (1000, 0, 13.0)]);
    assert_eq!(s.stats().malformed_lines, 0);
}

#[test]
fn epoch_ms_and_elapsed_times() {
    let dir = TempDir::new("meter-times");
    let ms = dir.path().join("ms.csv");
    write(&ms, "t,w\n1795255200250,1\n");
    assert_eq!(
        rows(&poll(open(&ms, false, json!({})).as_mut())),
        [(250, 0, 1.0)]
    );
    let elapsed = dir.path().join("elapsed.csv");
    write(&elapsed, "s,w\n0,1\n1.5,2\n");
    let mut s = open(&elapsed, false, json!({"start": "2026-11-21T10:00:00Z"}));
    assert_eq!(rows(&poll(s.as_mut())), [(0, 0, 1.0), (1500, 0, 2.0)]);
    let err = expect_err(try_open(&elapsed, false, json!({})));
    assert!(matches!(err, PowerError::Format { .. }), "{err:?}");
    assert!(err.to_string().contains("which need a start time"), "{err}");
    let err = expect_err(try_open(&elapsed, false, json!({"time_format": "elapsed"})));
    assert!(matches!(err, PowerError::Invalid { .. }), "{err:?}");
}

#[test]
fn bad_options_and_shapes_are_errors() {
    let dir = TempDir::new("meter-errors");
    let path = dir.path().join("log.csv");
    write(&path, "t,a,b\n1795255200,1,2\n");
    let err = expect_err(try_open(&path, false, json!({"time_column": "time"})));
    assert!(matches!(err, PowerError::Format { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "meter log `{}`: no time column `time`; the header has `t`, `a`, `b`",
            path.display()
        )
    );
    let err = expect_err(try_open(&path, false, json!({"time_format": "unix"})));
    assert!(matches!(err, PowerError::Invalid { .. }));
    let err = expect_err(try_open(&path, false, json!({"utc_offset": "CET"})));
    assert!(matches!(err, PowerError::Invalid { .. }));
    let words = dir.path().join("words.csv");
    write(&words, "t,a\nnoon,1\n");
    let err = expect_err(try_open(&words, false, json!({})));
    assert!(
        err.to_string().contains("cannot tell the time format"),
        "{err}"
    );
    let empty = dir.path().join("empty.csv");
    write(&empty, "# nothing yet\n");
    let err = expect_err(try_open(&empty, true, json!({})));
    assert!(err.to_string().contains("has no header line"), "{err}");
}

#[test]
fn following_a_missing_log_says_to_start_the_logger() {
    let dir = TempDir::new("meter-missing");
    let err = expect_err(try_open(&dir.path().join("none.csv"), true, json!({})));
    let PowerError::Unavailable { hint, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(hint.starts_with("start the meter's logger first"), "{hint}");
}

#[test]
fn following_reads_only_new_lines_partial_truncated_and_rotated() {
    let dir = TempDir::new("meter-follow");
    let path = dir.path().join("rig.csv");
    // Logged before the recording, and a line still being written.
    write(&path, "t,a,b\n1795255190,1,1\n1795255191,2,2\n1795255192,3");
    let mut s = open(&path, true, json!({}));
    assert!(poll(s.as_mut()).is_empty());
    append(&path, ",3\n1795255200,4,4\n");
    assert_eq!(
        rows(&poll(s.as_mut())),
        [(-8000, 0, 3.0), (-8000, 1, 3.0), (0, 0, 4.0), (0, 1, 4.0)]
    );
    // A line split across writes is read once whole.
    append(&path, "1795255201,5");
    assert!(poll(s.as_mut()).is_empty());
    append(&path, ",");
    assert!(poll(s.as_mut()).is_empty());
    append(&path, "5\n1795255202,x,6\n");
    assert_eq!(rows(&poll(s.as_mut())), [(1000, 0, 5.0), (1000, 1, 5.0)]);
    assert_eq!(s.stats().malformed_lines, 1);
    assert_eq!(s.stats().examples, [(7, "1795255202,x,6".to_string())]);
    assert!(s.warnings().is_empty());

    // The logger truncates and starts over with its header.
    write(&path, "t,a,b\n1795255203,7,7\n");
    assert_eq!(rows(&poll(s.as_mut())), [(3000, 0, 7.0), (3000, 1, 7.0)]);
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("was truncated"), "{}", warnings[0]);

    // Rotated: the rest of the old file is read, then the new one from its start.
    append(&path, "1795255204,8,8\n");
    std::fs::rename(&path, dir.path().join("rig.csv.1")).unwrap();
    write(&path, "t,a,b\n1795255205,9,9\n");
    assert_eq!(
        rows(&poll(s.as_mut())),
        [
            (4000, 0, 8.0),
            (4000, 1, 8.0),
            (5000, 0, 9.0),
            (5000, 1, 9.0)
        ]
    );
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("rotated"), "{}", warnings[0]);
    let stats = s.stats();
    assert_eq!(
        (
            stats.malformed_lines,
            stats.missing_values,
            stats.out_of_order
        ),
        (1, 0, 0)
    );
}

#[test]
fn a_log_followed_while_a_logger_appends_loses_no_line() {
    let dir = TempDir::new("meter-follow-thread");
    let path = dir.path().join("rig.csv");
    write(&path, "time,a,b\n1795255100,0,0\n");
    let mut cfg =
        json!({"name": "rig", "hz": 100.0, "kind": "meter", "path": path, "follow": true});
    cfg["time_format"] = json!("epoch");
    let rec = Recorder::open(&RecorderConfig {
        sources: vec![config(cfg)],
        clock_anchor: Some(ANCHOR),
    })
    .unwrap();
    rec.start();
    let logger = {
        let path = path.clone();
        std::thread::spawn(move || {
            for i in 0..40 {
                let line = format!("{}.{:02},{i},{}\n", 1_795_255_200 + i / 4, (i % 4) * 25, -i);
                // Some lines arrive in two writes, as a logger's buffered output does.
                let (head, tail) = line.split_at(if i % 3 == 0 { 7 } else { line.len() });
                append(&path, head);
                if !tail.is_empty() {
                    std::thread::sleep(Duration::from_millis(3));
                    append(&path, tail);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    logger.join().unwrap();
    rec.stop();
    let (readings, events) = rec.drain();
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(readings.len(), 80);
    let a: Vec<f64> = readings
        .iter()
        .filter(|r| r.channel == 0)
        .map(|r| r.value)
        .collect();
    assert_eq!(a, (0..40).map(f64::from).collect::<Vec<_>>());
    let last = readings.last().unwrap();
    assert_eq!(last.mono_ns - ANCHOR.1, 9_750_000_000);
    let stats = &rec.stats()[0];
    assert_eq!((stats.malformed_lines, stats.readings), (0, 80));
}
