//! The Watts Up? PRO source on a pseudo-terminal: the test holds the master side and plays the
//! meter.

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use iowatt_power::source::Source;
use iowatt_power::sources::wattsup;
use iowatt_power::{PowerError, Recorder, RecorderConfig, Unit};
use serde_json::json;

use crate::support::{channel_names, config, expect_err, poll, wait_for, TempDir};

/// A pty pair: (master, the slave's path, the slave kept open so the pty never hangs up).
fn pty() -> (File, String, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors; name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `name` is a writable buffer of the given length.
    assert_eq!(
        unsafe { libc::ttyname_r(slave, name.as_mut_ptr(), name.len()) },
        0
    );
    // SAFETY: ttyname_r wrote a NUL-terminated string; both fds are ours from here on.
    unsafe {
        let path = CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_string();
        (File::from_raw_fd(master), path, OwnedFd::from_raw_fd(slave))
    }
}

fn source(path: &str, hz: f64) -> serde_json::Value {
    json!({"name": "wallplug", "hz": hz, "kind": "meter", "format": "wattsup", "path": path})
}

/// A record as the meter sends it: 18 fields, W and V in tenths, A in thousandths.
fn record(deciwatts: u32, decivolts: u32, milliamps: u32) -> String {
    format!(
        "#d,-,18,{deciwatts},{decivolts},{milliamps},52,0,0,0,0,0,0,0,0,0,88,100,0,600,1300;\r\n"
    )
}

/// Writes to the meter's side and waits until the bytes reach the port's input queue: a pty
/// hands them over asynchronously, so a read right after the write could find nothing yet.
fn feed(master: &mut File, slave: &OwnedFd, bytes: &[u8]) {
    master.write_all(bytes).unwrap();
    wait_for("the pty to deliver", || {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes the number of queued input bytes into `queued`.
        let rc = unsafe { libc::ioctl(slave.as_raw_fd(), libc::FIONREAD, &mut queued) };
        rc == 0 && queued as usize >= bytes.len()
    });
}

/// Reads from the master until `n` bytes came (what the source wrote to the meter).
fn read_command(master: &mut File, n: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    // SAFETY: setting O_NONBLOCK on our own descriptor.
    unsafe {
        let fd = master.as_raw_fd();
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        );
    }
    while got.len() < n && Instant::now() < deadline {
        match master.read(&mut buf) {
            Ok(k) => got.extend_from_slice(&buf[..k]),
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn records_split_across_reads_and_noise_between_them() {
    let (mut master, path, slave) = pty();
    let mut s = wattsup::open(&config(source(&path, 10.0)), (0, 0)).unwrap();
    assert_eq!(read_command(&mut master, 12), "#L,W,3,E,,1;");
    assert_eq!(channel_names(s.as_ref()), ["watts", "volts", "amps"]);
    let units: Vec<(Unit, &str)> = s
        .channels()
        .iter()
        .map(|c| (c.unit, c.scope.as_str()))
        .collect();
    assert_eq!(
        units,
        [
            (Unit::Watts, "wall"),
            (Unit::Volts, "wall"),
            (Unit::Amps, "wall")
        ]
    );
    assert!(poll(s.as_mut()).is_empty());

    let values = |s: &mut dyn Source| -> Vec<(usize, f64)> {
        poll(s).iter().map(|r| (r.channel, r.value)).collect()
    };
    feed(&mut master, &slave, record(1234, 1201, 105).as_bytes());
    assert_eq!(values(s.as_mut()), [(0, 123.4), (1, 120.1), (2, 0.105)]);

    // One record in three pieces.
    let r = record(500, 1199, 42);
    let (a, rest) = r.split_at(5);
    let (b, c) = rest.split_at(20);
    for piece in [a, b] {
        feed(&mut master, &slave, piece.as_bytes());
        assert!(values(s.as_mut()).is_empty());
    }
    feed(&mut master, &slave, c.as_bytes());
    assert_eq!(values(s.as_mut()), [(0, 50.0), (1, 119.9), (2, 0.042)]);

    // Line noise, a record cut off by the next one, a field the meter left blank, and a reply
    // to some other command (not data, not an error).
    feed(
        &mut master,
        &slave,
        b"garbage\r\n#d,-,18,99#d,-,18,_,1200,10,0;#h,-,3,W,V,A;",
    );
    assert_eq!(values(s.as_mut()), [(1, 120.0), (2, 0.010)]);
    let stats = s.stats();
    assert_eq!(
        (stats.malformed_lines, stats.missing_values),
        (2, 1),
        "{:?}",
        stats.examples
    );
    let texts: Vec<&str> = stats.examples.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(texts, ["garbage", "#d,-,18,99", "#d,-,18,_,1200,10,0;"]);
}

#[test]
fn a_meter_fed_by_a_thread_is_recorded() {
    let (mut master, path, _slave) = pty();
    let rec = Recorder::open(&RecorderConfig {
        sources: vec![config(source(&path, 50.0))],
        clock_anchor: None,
    })
    .unwrap();
    assert_eq!(read_command(&mut master, 12), "#L,W,3,E,,1;");
    rec.start();
    let meter = std::thread::spawn(move || {
        for i in 0..10 {
            let r = record(1000 + i, 1200, 500);
            let (a, b) = r.split_at(9);
            master.write_all(a.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(4));
            master.write_all(b.as_bytes()).unwrap();
        }
        master
    });
    let _master = meter.join().unwrap();
    // The pty delivers asynchronously: stop once the last record has been read.
    wait_for("30 readings", || rec.stats()[0].readings >= 30);
    rec.stop();
    let (readings, events) = rec.drain();
    assert!(events.is_empty(), "{events:?}");
    let watts: Vec<f64> = readings
        .iter()
        .filter(|r| r.channel == 0)
        .map(|r| r.value)
        .collect();
    let want: Vec<f64> = (0..10).map(|i| f64::from(1000 + i) / 10.0).collect();
    assert_eq!(watts, want);
    assert!(readings.windows(2).all(|w| w[1].mono_ns >= w[0].mono_ns));
    assert_eq!(rec.stats()[0].malformed_lines, 0);
}

#[test]
fn a_missing_device_is_unavailable() {
    let dir = TempDir::new("wattsup-missing");
    let path = dir.path().join("ttyUSB9");
    let err = expect_err(wattsup::open(
        &config(source(path.to_str().unwrap(), 1.0)),
        (0, 0),
    ));
    let PowerError::Unavailable { message, hint } = &err else {
        panic!("{err:?}");
    };
    assert!(message.contains("does not exist"), "{message}");
    assert!(hint.contains("/dev/ttyUSB0"), "{hint}");
}

#[test]
fn a_capture_file_is_read_as_a_stream() {
    let dir = TempDir::new("wattsup-capture");
    let path = dir.path().join("capture.raw");
    std::fs::write(
        &path,
        format!("{}{}", record(10, 2300, 1), record(20, 2310, 2)),
    )
    .unwrap();
    let mut s = wattsup::open(&config(source(path.to_str().unwrap(), 1.0)), (0, 0)).unwrap();
    let readings = poll(s.as_mut());
    assert_eq!(readings.len(), 6);
    assert_eq!(readings[3].value, 2.0);
}
