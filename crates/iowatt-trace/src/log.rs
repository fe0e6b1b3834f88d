//! A whole access log: plain or gzip, read line by line into columns, every bad line counted
//! with its number and reason (the first ones kept), and the requests put in time order — lines
//! a server wrote out of order are sorted, and counted.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::format::LogFormat;
use crate::line::parse_line;

/// Bad lines whose reasons are kept (all of them are counted).
pub const KEPT_BAD_LINES: usize = 100;

/// The requests of a log in time order, as columns.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Seconds since the epoch, UTC.
    pub time: Vec<i64>,
    /// The line each request came from (1-based).
    pub line: Vec<u64>,
    pub host: Vec<String>,
    pub method: Vec<String>,
    pub target: Vec<String>,
    pub status: Vec<u16>,
    /// Bytes sent; -1 where the log says `-`.
    pub bytes: Vec<i64>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub requests: Requests,
    pub lines: u64,
    pub bad: u64,
    /// (line, reason) of the first [`KEPT_BAD_LINES`] bad lines.
    pub bad_lines: Vec<(u64, String)>,
    /// Lines whose time is earlier than a line before them.
    pub out_of_order: u64,
}

/// Reads the log at `path` (gzip recognised by its magic bytes).
pub fn read_log(path: &Path, format: &LogFormat) -> io::Result<Parsed> {
    let mut file = BufReader::with_capacity(1 << 20, File::open(path)?);
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    if gzip {
        parse_log(
            BufReader::with_capacity(1 << 20, MultiGzDecoder::new(file)),
            format,
        )
    } else {
        parse_log(file, format)
    }
}

/// Parses every line of `input`.
pub fn parse_log<R: BufRead>(mut input: R, format: &LogFormat) -> io::Result<Parsed> {
    let mut parsed = Parsed::default();
    let mut rows: Vec<Row> = Vec::new();
    let mut latest = i64::MIN;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        parsed.lines += 1;
        let number = parsed.lines;
        let text = trim_newline(&buf);
        if text.is_empty() {
            continue; // a blank line (often the last) is not a request, nor an error
        }
        let result = std::str::from_utf8(text)
            .map_err(|e| format!("not UTF-8 text (byte {})", e.valid_up_to() + 1))
            .and_then(|line| {
                parse_line(format, line)
                    .map_err(|e| e.to_string())
                    .map(|r| (line, r))
            });
        match result {
            Ok((_, r)) => {
                if r.time < latest {
                    parsed.out_of_order += 1;
                }
                latest = latest.max(r.time);
                rows.push(Row {
                    time: r.time,
                    line: number,
                    host: r.host.into_owned(),
                    method: r.method.into_owned(),
                    target: r.target.into_owned(),
                    status: r.status,
                    bytes: r.bytes.map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX)),
                });
            }
            Err(reason) => {
                parsed.bad += 1;
                if parsed.bad_lines.len() < KEPT_BAD_LINES {
                    parsed.bad_lines.push((number, reason));
                }
            }
        }
    }
    // Stable: requests of one second keep their log order, which replay's spread relies on.
    rows.sort_by_key(|r| r.time);
    parsed.requests = columns(rows);
    Ok(parsed)
}

struct Row {
    time: i64,
    line: u64,
    host: String,
    method: String,
    target: String,
    status: u16,
    bytes: i64,
}

fn columns(rows: Vec<Row>) -> Requests {
    let mut out = Requests::default();
    for r in rows {
        out.time.push(r.time);
        out.line.push(r.line);
        out.host.push(r.host);
        out.method.push(r.method);
        out.target.push(r.target);
        out.status.push(r.status);
        out.bytes.push(r.bytes);
    }
    out
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Parses a log held in memory.
pub fn parse_text(text: &str, format: &LogFormat) -> Parsed {
    parse_log(text.as_bytes(), format).expect("reading from memory cannot fail")
}
