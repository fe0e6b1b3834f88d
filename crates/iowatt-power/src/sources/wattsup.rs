//! A Watts Up? PRO wall meter on its FTDI serial port (kjordahl/Watts-Up--logger `wattsup.py`,
//! pyrovski/watts-up `wattsup_common.h`).
//!
//! The port is set to raw 115200 8N1 and the meter told to stream one record per second
//! (`#L,W,3,E,,1;`). Records look like `#d,-,18,f1,…,f18;` with W, V and A first, in tenths,
//! tenths and thousandths; they can arrive split across reads, so bytes are buffered until a
//! record's `;`. The meter has no clock of its own: a record is stamped when it arrives.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use iowatt_metrics::now_ns;

use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

/// Start external logging, watts and more, one record every second.
const START_LOGGING: &[u8] = b"#L,W,3,E,,1;";
/// A record is ~80 bytes; text this long without a `;` is not one.
const MAX_RECORD: usize = 512;
const MAX_EXAMPLES: usize = 10;

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Meter { path, .. } = &config.kind else {
        unreachable!("wattsup::open called with another kind of source");
    };
    let meta = fs::metadata(path).map_err(|e| open_error(path, e))?;
    // A serial device is written to (the logging command); a capture file is only read.
    let device = meta.file_type().is_char_device();
    let file = OpenOptions::new()
        .read(true)
        .write(device)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    // SAFETY: isatty only inspects the open descriptor.
    if unsafe { libc::isatty(file.as_raw_fd()) } == 1 {
        configure_tty(&file).map_err(|e| {
            PowerError::unavailable(
                format!("cannot set up the serial port `{}`: {e}", path.display()),
                "check that it is the meter's serial port (ftdi_sio, /dev/ttyUSB0)",
            )
        })?;
        (&file).write_all(START_LOGGING).map_err(|e| {
            PowerError::unavailable(
                format!("cannot write to the meter at `{}`: {e}", path.display()),
                "check the cable, and that no other program uses the port",
            )
        })?;
    }
    let channel = |name: &str, unit| ChannelInfo {
        source: config.name.clone(),
        channel: name.to_string(),
        unit,
        scope: "wall".into(),
        parent: None,
        label: None,
    };
    Ok(Box::new(WattsUp {
        channels: vec![
            channel("watts", Unit::Watts),
            channel("volts", Unit::Volts),
            channel("amps", Unit::Amps),
        ],
        path: path.clone(),
        file,
        pending: Vec::with_capacity(2 * MAX_RECORD),
        records: 0,
        stats: SourceStats::default(),
    }))
}

fn open_error(path: &Path, e: io::Error) -> PowerError {
    match e.kind() {
        io::ErrorKind::NotFound => PowerError::unavailable(
            format!("serial device `{}` does not exist", path.display()),
            "plug the meter in: with the ftdi_sio driver it shows up as /dev/ttyUSB0",
        ),
        io::ErrorKind::PermissionDenied => PowerError::unavailable(
            format!("cannot open `{}`: {e}", path.display()),
            "add your user to the `dialout` group (and log in again), or run as root",
        ),
        _ => PowerError::unavailable(format!("cannot open `{}`: {e}", path.display()), ""),
    }
}

/// Raw 115200 8N1, no flow control, reads that return at once.
fn configure_tty(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    let check = |rc: libc::c_int| {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    // SAFETY: `t` is a valid termios filled by tcgetattr before it is changed and written back.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        check(libc::tcgetattr(fd, &mut t))?;
        libc::cfmakeraw(&mut t);
        check(libc::cfsetispeed(&mut t, libc::B115200))?;
        check(libc::cfsetospeed(&mut t, libc::B115200))?;
        t.c_cflag |= libc::CLOCAL | libc::CREAD;
        t.c_cflag &= !(libc::CSTOPB | libc::PARENB | libc::CRTSCTS);
        t.c_cc[libc::VMIN] = 0;
        t.c_cc[libc::VTIME] = 0;
        check(libc::tcsetattr(fd, libc::TCSANOW, &t))?;
        // Records queued before this recording would be stamped now: drop them.
        check(libc::tcflush(fd, libc::TCIFLUSH))?;
    }
    Ok(())
}

struct WattsUp {
    channels: Vec<ChannelInfo>,
    path: PathBuf,
    file: File,
    /// Bytes after the last complete record.
    pending: Vec<u8>,
    records: u64,
    stats: SourceStats,
}

impl WattsUp {
    /// Parses every complete record in `pending`, keeping a record cut short for the next read.
    fn parse(&mut self, mono_ns: i64, out: &mut Vec<LocalReading>) {
        let mut start = 0;
        loop {
            let rest = &self.pending[start..];
            let Some(hash) = rest.iter().position(|&b| b == b'#') else {
                // Text with no record after it (yet): kept until a `#` shows where it ends.
                if rest.iter().all(u8::is_ascii_whitespace) {
                    start = self.pending.len();
                } else if rest.len() > MAX_RECORD {
                    self.malformed(start, self.pending.len());
                    start = self.pending.len();
                }
                break;
            };
            if !rest[..hash].iter().all(u8::is_ascii_whitespace) {
                self.malformed(start, start + hash);
            }
            start += hash;
            let rest = &self.pending[start..];
            let Some(end) = rest.iter().position(|&b| b == b';') else {
                if rest.len() > MAX_RECORD {
                    self.malformed(start, self.pending.len());
                    start = self.pending.len();
                }
                break;
            };
            // A `#` inside: the record before it was cut off (a byte lost, the meter reset).
            if let Some(next) = rest[1..end].iter().position(|&b| b == b'#') {
                self.malformed(start, start + 1 + next);
                start += 1 + next;
                continue;
            }
            self.record(start, start + end + 1, mono_ns, out);
            start += end + 1;
        }
        self.pending.drain(..start);
    }

    fn record(&mut self, from: usize, to: usize, mono_ns: i64, out: &mut Vec<LocalReading>) {
        self.records += 1;
        let Some(values) = parse_record(&self.pending[from..to]) else {
            self.malformed(from, to);
            return;
        };
        let Some([w, v, a]) = values else {
            // Another kind of record (a reply to a command): not data.
            return;
        };
        let mut missing = 0;
        for (channel, value) in [w, v, a].into_iter().enumerate() {
            match value {
                Some(value) => out.push(LocalReading {
                    mono_ns,
                    channel,
                    value,
                }),
                None => missing += 1,
            }
        }
        if missing > 0 {
            self.stats.missing_values += missing;
            self.example(from, to);
        }
    }

    fn malformed(&mut self, from: usize, to: usize) {
        self.stats.malformed_lines += 1;
        self.example(from, to);
    }

    /// Examples are numbered by record: the n-th record received, or the text before it.
    fn example(&mut self, from: usize, to: usize) {
        if self.stats.examples.len() < MAX_EXAMPLES {
            let text = String::from_utf8_lossy(&self.pending[from..to]);
            self.stats
                .examples
                .push((self.records.max(1), text.trim().chars().take(200).collect()));
        }
    }
}

/// `#d,-,18,W,V,A,…;` → Some(Some([watts, volts, amps])) with `None` for a field the meter left
/// blank (`_`); Some(None) for a record of another kind; None when it does not parse.
#[allow(clippy::type_complexity)]
fn parse_record(record: &[u8]) -> Option<Option<[Option<f64>; 3]>> {
    let text = std::str::from_utf8(record).ok()?;
    let body = text.strip_prefix('#')?.strip_suffix(';')?;
    let mut fields = body.split(',').map(str::trim);
    if fields.next()? != "d" {
        return Some(None);
    }
    let mut fields = fields.skip(2);
    let mut value = |divisor: f64| -> Option<Option<f64>> {
        match fields.next()? {
            "" | "_" | "-" => Some(None),
            f => {
                let v: f64 = f.parse().ok().filter(|v: &f64| v.is_finite())?;
                Some(Some(v / divisor))
            }
        }
    };
    Some(Some([value(10.0)?, value(10.0)?, value(1000.0)?]))
}

impl Source for WattsUp {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let mut chunk = [0u8; 1024];
        let mut got = false;
        loop {
            match (&self.file).read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    got = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                    return Err(PowerError::unavailable(
                        format!(
                            "the meter at `{}` was disconnected ({e})",
                            self.path.display()
                        ),
                        "plug it back in; it is read again as soon as it answers",
                    ));
                }
                Err(e) => {
                    return Err(PowerError::Io {
                        op: "read",
                        path: self.path.clone(),
                        source: e,
                    })
                }
            }
        }
        if got {
            self.parse(now_ns() as i64, out);
        }
        Ok(())
    }

    fn stats(&self) -> SourceStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_record;

    #[test]
    fn records_scale_watts_volts_amps() {
        let r = parse_record(b"#d,-,18,1234,1201,105,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_;");
        let [w, v, a] = r.unwrap().unwrap();
        assert!((w.unwrap() - 123.4).abs() < 1e-9);
        assert!((v.unwrap() - 120.1).abs() < 1e-9);
        assert!((a.unwrap() - 0.105).abs() < 1e-9);
        assert_eq!(
            parse_record(b"#d,-,18,_,1201,105;"),
            Some(Some([None, Some(120.1), Some(0.105)]))
        );
        assert_eq!(parse_record(b"#h,-,3,a,b,c;"), Some(None));
        assert_eq!(parse_record(b"#d,-,18,12x,1,1;"), None);
        assert_eq!(parse_record(b"#d,-,18,12;"), None);
    }
}
