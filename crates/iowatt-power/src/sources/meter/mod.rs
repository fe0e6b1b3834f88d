//! An external meter's CSV log (a shunt rig's scanning multimeter, a smart plug's logger),
//! read after the fact or followed while it grows.
//!
//! Following works like `tail -F`: from the end of what is already there, a partial last line
//! buffered until its newline arrives, and a log that shrinks (truncated) or is replaced
//! (rotated) read again from its start. Each line's own timestamp, converted through the clock
//! anchor, stamps its readings: the logger's clock, not the arrival time, says when it measured.

mod csv;
mod time;

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::reading::{ChannelInfo, SourceStats};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

use csv::{is_skipped, Layout, LineParser};
use time::{Clock, TimeFormat, Zone};

const CHUNK: usize = 64 * 1024;
/// A "line" longer than this is not a meter's: it is counted as malformed and dropped.
const MAX_LINE: usize = 64 * 1024;
/// How many data lines an import looks at to recognize the time format.
const DETECT_LINES: usize = 1000;

pub fn open(config: &SourceConfig, anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Meter {
        path,
        format,
        follow,
        time_column,
        time_format,
        start,
        utc_offset,
    } = &config.kind
    else {
        unreachable!("meter::open called with another kind of source");
    };
    if format != "csv" {
        return Err(PowerError::invalid(
            format!("unknown meter format `{format}`"),
            "meter formats are csv (a log file) and wattsup (a Watts Up? PRO on a serial port)",
        ));
    }
    let clock = Clock::new(
        TimeFormat::from_option(time_format)?,
        start.as_deref(),
        Zone::from_option(utc_offset.as_deref())?,
    )?;
    let file = File::open(path).map_err(|e| open_error(path, *follow, e))?;
    let (header, mut pos, mut line_no) = read_header(&file, path, *follow)?;
    let layout =
        Layout::from_header(&header, time_column.as_deref()).map_err(|e| in_log(e, path))?;
    let channels = layout.channels(&config.name);
    let mut parser = LineParser::new(layout, clock, anchor);
    if *follow {
        // Data already there was logged before the recording: start after it, learning the
        // time format from its last line.
        let last;
        (pos, line_no, last) = skip_existing(&file, path, pos, line_no)?;
        if let Some(field) = std::str::from_utf8(&last)
            .ok()
            .and_then(|l| parser.layout.time_field(l.trim_end()))
        {
            parser.clock.detect(field).map_err(|e| in_log(e, path))?;
        }
    } else if parser.clock.format.is_none() {
        detect_format(&file, pos, &mut parser).map_err(|e| in_log(e, path))?;
    }
    let id = file
        .metadata()
        .map(|m| (m.dev(), m.ino()))
        .unwrap_or_default();
    Ok(Box::new(Meter {
        channels,
        parser,
        log: Log {
            path: path.clone(),
            file,
            id,
            pos,
            line_no,
            partial: Vec::new(),
            overlong: false,
            chunk: vec![0; CHUNK],
        },
        follow: *follow,
        imported: false,
        warnings: Vec::new(),
    }))
}

fn open_error(path: &Path, follow: bool, e: io::Error) -> PowerError {
    if e.kind() == io::ErrorKind::NotFound {
        PowerError::unavailable(
            format!("meter log `{}` does not exist", path.display()),
            if follow {
                "start the meter's logger first: the log is followed from its current end"
            } else {
                "check the path of the log to import"
            },
        )
    } else {
        PowerError::unavailable(
            format!("cannot open meter log `{}`: {e}", path.display()),
            "",
        )
    }
}

fn io_error(path: &Path, source: io::Error) -> PowerError {
    PowerError::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    }
}

fn in_log(e: PowerError, path: &Path) -> PowerError {
    match e {
        PowerError::Format { message, hint } => PowerError::Format {
            message: format!("meter log `{}`: {message}", path.display()),
            hint,
        },
        e => e,
    }
}

/// The first line that is neither blank nor a comment, and the (byte offset, line number)
/// after it.
fn read_header(file: &File, path: &Path, follow: bool) -> Result<(String, u64, u64), PowerError> {
    let mut reader = BufReader::with_capacity(CHUNK, file);
    let (mut pos, mut line_no) = (0u64, 0u64);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, e))?;
        if n == 0 || (follow && !line.ends_with(b"\n")) {
            return Err(PowerError::format(
                format!("meter log `{}` has no header line", path.display()),
                "the first line that is not blank or a `#` comment must name the columns; \
                 if the logger has just started, wait until it has written its header",
            ));
        }
        pos += n as u64;
        line_no += 1;
        let text = std::str::from_utf8(&line).map_err(|_| {
            PowerError::format(
                format!(
                    "meter log `{}` is not text (line {line_no})",
                    path.display()
                ),
                "give a CSV log (UTF-8 or ASCII)",
            )
        })?;
        if !is_skipped(text) {
            return Ok((text.trim_end().to_string(), pos, line_no));
        }
    }
}

/// The (byte offset, line number) after the last complete line, and that line if it holds
/// data. A line still being written is left to be read whole once its newline arrives.
fn skip_existing(
    file: &File,
    path: &Path,
    mut pos: u64,
    mut line_no: u64,
) -> Result<(u64, u64, Vec<u8>), PowerError> {
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(pos))
        .map_err(|e| io_error(path, e))?;
    let mut reader = BufReader::with_capacity(CHUNK, reader);
    let (mut line, mut last) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, e))?;
        if n == 0 || !line.ends_with(b"\n") {
            return Ok((pos, line_no, last));
        }
        pos += n as u64;
        line_no += 1;
        if !std::str::from_utf8(&line).is_ok_and(is_skipped) {
            std::mem::swap(&mut line, &mut last);
        }
    }
}

/// Settles an "auto" time format from the first data lines of a log to import.
fn detect_format(file: &File, pos: u64, parser: &mut LineParser) -> Result<(), PowerError> {
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(pos))
        .map_err(|e| PowerError::format(format!("cannot read the log: {e}"), ""))?;
    let reader = BufReader::with_capacity(CHUNK, reader);
    let mut first = None;
    for line in reader.lines().map_while(Result::ok).take(DETECT_LINES) {
        if is_skipped(&line) {
            continue;
        }
        let Some(field) = parser.layout.time_field(&line) else {
            continue;
        };
        if parser.clock.detect(field)? {
            return Ok(());
        }
        first.get_or_insert_with(|| field.to_string());
    }
    match first {
        // No data yet: nothing to read either.
        None => Ok(()),
        Some(field) => Err(PowerError::format(
            format!(
                "cannot tell the time format of column `{}` from `{field}`",
                parser.layout.columns[parser.layout.time_col]
            ),
            "set time_format to epoch, epoch_ms, iso or elapsed (with start), or time_column \
             to the column that holds the time",
        )),
    }
}

struct Meter {
    channels: Vec<ChannelInfo>,
    parser: LineParser,
    log: Log,
    follow: bool,
    imported: bool,
    warnings: Vec<String>,
}

/// The log file and how far it has been read.
struct Log {
    path: PathBuf,
    file: File,
    /// (device, inode): a different one at `path` means the log was rotated.
    id: (u64, u64),
    pos: u64,
    /// Lines before `pos`, so examples carry the line number an editor shows.
    line_no: u64,
    /// The start of a line whose newline has not arrived yet.
    partial: Vec<u8>,
    /// Dropping the rest of a line past MAX_LINE until its newline.
    overlong: bool,
    chunk: Vec<u8>,
}

impl Log {
    /// Reads what was appended since the last call and parses its complete lines.
    fn read_new(
        &mut self,
        parser: &mut LineParser,
        out: &mut Vec<LocalReading>,
    ) -> Result<(), PowerError> {
        loop {
            let n = match self.file.read_at(&mut self.chunk, self.pos) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(&self.path, e)),
            };
            if n == 0 {
                return Ok(());
            }
            self.pos += n as u64;
            let mut rest = &self.chunk[..n];
            while let Some(i) = rest.iter().position(|&b| b == b'\n') {
                self.line_no += 1;
                if self.overlong {
                    self.overlong = false;
                } else if self.partial.is_empty() {
                    parser.line(self.line_no, &rest[..i], out);
                } else {
                    self.partial.extend_from_slice(&rest[..i]);
                    parser.line(self.line_no, &self.partial, out);
                    self.partial.clear();
                }
                rest = &rest[i + 1..];
            }
            if !self.overlong {
                self.partial.extend_from_slice(rest);
                if self.partial.len() > MAX_LINE {
                    parser.malformed(self.line_no + 1, &String::from_utf8_lossy(&self.partial));
                    self.partial.clear();
                    self.overlong = true;
                }
            }
            if n < self.chunk.len() {
                return Ok(());
            }
        }
    }

    /// The last line of a log that will not grow any more, newline or not.
    fn finish(&mut self, parser: &mut LineParser, out: &mut Vec<LocalReading>) {
        if !self.partial.is_empty() && !self.overlong {
            self.line_no += 1;
            parser.line(self.line_no, &self.partial, out);
        }
        self.partial.clear();
        self.overlong = false;
    }

    /// The log starts over from byte 0 (truncated, or a new file at the path). A line cut
    /// short by it is counted as malformed.
    fn restart(&mut self, parser: &mut LineParser) {
        if !self.partial.is_empty() && !self.overlong {
            parser.malformed(self.line_no + 1, &String::from_utf8_lossy(&self.partial));
        }
        self.partial.clear();
        self.overlong = false;
        self.pos = 0;
        self.line_no = 0;
        parser.restart();
    }

    /// tail -F: a new file at the path, or this one shorter than what was read.
    fn follow(
        &mut self,
        parser: &mut LineParser,
        out: &mut Vec<LocalReading>,
        warnings: &mut Vec<String>,
    ) -> Result<(), PowerError> {
        if let Ok(meta) = fs::metadata(&self.path) {
            if (meta.dev(), meta.ino()) != self.id {
                // What the logger wrote to the old file before moving on is still read.
                self.read_new(parser, out)?;
                self.finish(parser, out);
                if let Ok(file) = File::open(&self.path) {
                    self.file = file;
                    self.id = (meta.dev(), meta.ino());
                    self.restart(parser);
                    warnings.push(format!(
                        "meter log `{}` was replaced (rotated): reading the new file from its \
                         start",
                        self.path.display()
                    ));
                }
            }
        }
        let len = self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, e))?
            .len();
        if len < self.pos {
            self.restart(parser);
            warnings.push(format!(
                "meter log `{}` was truncated: reading it again from its start",
                self.path.display()
            ));
        }
        if len != self.pos {
            self.read_new(parser, out)?;
        }
        Ok(())
    }
}

impl Source for Meter {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        if self.follow {
            self.log.follow(&mut self.parser, out, &mut self.warnings)?;
        } else if !self.imported {
            // An import reads the whole log at the first poll; it will not grow.
            self.imported = true;
            self.log.read_new(&mut self.parser, out)?;
            self.log.finish(&mut self.parser, out);
        }
        match self.parser.error.take() {
            Some(e) => Err(in_log(e, &self.log.path)),
            None => Ok(()),
        }
    }

    fn stats(&self) -> SourceStats {
        self.parser.stats.clone()
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.append(&mut self.parser.warnings);
        warnings
    }
}
