//! A whole access log: plain or gzip, read in blocks that threads parse side by side into
//! columns (Arrow's layout, so Python takes them without a copy per value), every bad line
//! counted with its number and reason (the first ones kept), and the requests put in time
//! order — lines a server wrote out of order are sorted, and counted.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel};
use std::sync::{Arc, Mutex};

use flate2::read::MultiGzDecoder;
use iowatt_metrics::Work;

use crate::format::LogFormat;
use crate::line::parse_line;

/// Bad lines whose reasons are kept (all of them are counted).
pub const KEPT_BAD_LINES: usize = 100;

/// Bytes of log text a thread parses at a time.
const BLOCK: usize = 8 << 20;

/// Strings as one byte buffer and the offsets where each starts (Arrow's large string layout:
/// `offsets` has one more entry than there are strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strings {
    pub offsets: Vec<i64>,
    pub data: Vec<u8>,
}

impl Default for Strings {
    fn default() -> Self {
        Self {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
}

impl Strings {
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> &str {
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        std::str::from_utf8(&self.data[a..b]).expect("only str is pushed")
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }

    fn push(&mut self, s: &str) {
        self.data.extend_from_slice(s.as_bytes());
        self.offsets.push(self.data.len() as i64);
    }

    fn append(&mut self, other: &Strings) {
        let base = self.data.len() as i64;
        self.data.extend_from_slice(&other.data);
        self.offsets
            .extend(other.offsets[1..].iter().map(|o| o + base));
    }

    fn gather(&self, order: &[usize]) -> Strings {
        let mut out = Strings::default();
        for &i in order {
            out.push(self.get(i));
        }
        out
    }
}

/// The requests of a log in time order, as columns.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Requests {
    /// Seconds since the epoch, UTC.
    pub time: Vec<i64>,
    /// Each line's zone offset, seconds east of UTC.
    pub zone: Vec<i32>,
    /// The line each request came from (1-based).
    pub line: Vec<u64>,
    pub host: Strings,
    pub method: Strings,
    pub target: Strings,
    /// The virtual host (`%v`) or Host header (`%{Host}i`); empty when the format has none.
    pub vhost: Strings,
    pub status: Vec<u16>,
    /// Bytes sent; -1 where the log says `-`.
    pub bytes: Vec<i64>,
}

impl Requests {
    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// The blocks' columns joined, each copied once.
    pub fn join(blocks: &[Requests]) -> Requests {
        let mut out = Requests::default();
        out.reserve(blocks);
        for block in blocks {
            out.append(block);
        }
        out
    }

    fn reserve(&mut self, parts: &[Requests]) {
        let rows: usize = parts.iter().map(Requests::len).sum();
        self.time.reserve_exact(rows);
        self.zone.reserve_exact(rows);
        self.line.reserve_exact(rows);
        self.status.reserve_exact(rows);
        self.bytes.reserve_exact(rows);
        for (mine, of) in [
            (
                &mut self.host,
                (|r: &Requests| &r.host) as fn(&Requests) -> &Strings,
            ),
            (&mut self.method, |r| &r.method),
            (&mut self.target, |r| &r.target),
            (&mut self.vhost, |r| &r.vhost),
        ] {
            mine.offsets.reserve_exact(rows);
            mine.data
                .reserve_exact(parts.iter().map(|r| of(r).data.len()).sum());
        }
    }

    fn append(&mut self, other: &Requests) {
        self.time.extend_from_slice(&other.time);
        self.zone.extend_from_slice(&other.zone);
        self.line.extend_from_slice(&other.line);
        self.host.append(&other.host);
        self.method.append(&other.method);
        self.target.append(&other.target);
        self.vhost.append(&other.vhost);
        self.status.extend_from_slice(&other.status);
        self.bytes.extend_from_slice(&other.bytes);
    }

    fn gather(&self, order: &[usize]) -> Requests {
        let pick = |v: &[i64]| order.iter().map(|&i| v[i]).collect();
        Requests {
            time: pick(&self.time),
            bytes: pick(&self.bytes),
            zone: order.iter().map(|&i| self.zone[i]).collect(),
            line: order.iter().map(|&i| self.line[i]).collect(),
            status: order.iter().map(|&i| self.status[i]).collect(),
            host: self.host.gather(order),
            method: self.method.gather(order),
            target: self.target.gather(order),
            vhost: self.vhost.gather(order),
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The requests in time order, in the blocks they were parsed in (so they reach Python
    /// without being joined first); [`Parsed::requests`] joins them.
    pub blocks: Vec<Requests>,
    pub lines: u64,
    pub bad: u64,
    /// (line, reason) of the first [`KEPT_BAD_LINES`] bad lines.
    pub bad_lines: Vec<(u64, String)>,
    /// Lines whose time is earlier than a line before them.
    pub out_of_order: u64,
}

impl Parsed {
    /// All the requests, as one set of columns.
    pub fn requests(&self) -> Requests {
        Requests::join(&self.blocks)
    }
}

/// Reads the log at `path` (gzip recognised by its magic bytes).
pub fn read_log(path: &Path, format: &LogFormat) -> io::Result<Parsed> {
    read_log_until(path, format, &AtomicBool::new(false))
}

/// [`read_log`], given up (an `Interrupted` error) soon after `stop` is set.
pub fn read_log_until(path: &Path, format: &LogFormat, stop: &AtomicBool) -> io::Result<Parsed> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let mut file = BufReader::with_capacity(1 << 16, File::open(path)?);
    if file.fill_buf()?.starts_with(&[0x1f, 0x8b]) {
        parse_in_blocks(MultiGzDecoder::new(file), format, threads, BLOCK, stop)
    } else {
        parse_in_blocks(file, format, threads, BLOCK, stop)
    }
}

/// A log to read on a [`Handle`](iowatt_metrics::Handle), so a caller can do other work (or
/// stay responsive to Ctrl-C) while it is parsed.
pub struct LogFile {
    pub path: PathBuf,
    pub format: LogFormat,
}

impl Work for LogFile {
    /// A read counts nothing as it goes: what it shares is the flag that stops it.
    type Progress = AtomicBool;
    type Outcome = io::Result<Parsed>;

    fn run(self: Arc<Self>, stop: &AtomicBool) -> Self::Outcome {
        read_log_until(&self.path, &self.format, stop)
    }

    fn cancel(stop: &AtomicBool) {
        stop.store(true, Ordering::Relaxed);
    }

    fn panicked() -> Self::Outcome {
        Err(io::Error::other("the log reader panicked"))
    }
}

/// Parses a log held in memory.
pub fn parse_text(text: &str, format: &LogFormat) -> Parsed {
    parse_log(text.as_bytes(), format, 1).expect("reading from memory cannot fail")
}

/// Parses every line of `input`: this thread reads blocks of whole lines, `threads` others
/// parse them, and the blocks are kept in log order.
pub fn parse_log<R: Read>(input: R, format: &LogFormat, threads: usize) -> io::Result<Parsed> {
    parse_in_blocks(input, format, threads, BLOCK, &AtomicBool::new(false))
}

fn parse_in_blocks<R: Read>(
    mut input: R,
    format: &LogFormat,
    threads: usize,
    block: usize,
    stop: &AtomicBool,
) -> io::Result<Parsed> {
    let (work, queue) = sync_channel::<(usize, u64, Vec<u8>)>(threads);
    let queue = Mutex::new(queue);
    let (done, finished) = channel();
    let (recycle, recycled) = channel::<Vec<u8>>();
    let (blocks, read) = std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            let (queue, done, recycle) = (&queue, done.clone(), recycle.clone());
            s.spawn(move || loop {
                let job = queue.lock().expect("no parser panics").recv();
                let Ok((index, first_line, text)) = job else {
                    break;
                };
                let _ = done.send((index, parse_block(&text, first_line, format)));
                let _ = recycle.send(text);
            });
        }
        drop(done);
        drop(recycle);
        // Buffers the parsers are done with are read into again: fresh ones cost page faults.
        let buffer = || recycled.try_recv().unwrap_or_default();
        let read = split_blocks(
            &mut input,
            block,
            stop,
            buffer,
            |index, first_line, text| {
                work.send((index, first_line, text))
                    .expect("parsers live until the queue closes");
            },
        );
        drop(work);
        let mut blocks: Vec<(usize, Parsed)> = finished.iter().collect();
        blocks.sort_by_key(|(index, _)| *index);
        (blocks, read)
    });
    read?;
    let mut parsed = Parsed::default();
    for (_, block) in blocks {
        parsed.lines += block.lines;
        parsed.bad += block.bad;
        let room = KEPT_BAD_LINES - parsed.bad_lines.len();
        parsed
            .bad_lines
            .extend(block.bad_lines.into_iter().take(room));
        parsed
            .blocks
            .extend(block.blocks.into_iter().filter(|b| !b.is_empty()));
    }
    parsed.out_of_order = count_out_of_order(parsed.blocks.iter().flat_map(|b| &b.time));
    if parsed.out_of_order > 0 {
        // Stable: requests of one second keep their log order, which replay's spread relies on.
        let joined = parsed.requests();
        let mut order: Vec<usize> = (0..joined.len()).collect();
        order.sort_by_key(|&i| joined.time[i]);
        parsed.blocks = vec![joined.gather(&order)];
    }
    Ok(parsed)
}

/// Reads `input` in blocks of whole lines into buffers from `buffer`, handing each with its
/// index and first line number to `send`.
fn split_blocks<R: Read>(
    input: &mut R,
    block: usize,
    stop: &AtomicBool,
    mut buffer: impl FnMut() -> Vec<u8>,
    mut send: impl FnMut(usize, u64, Vec<u8>),
) -> io::Result<()> {
    let (mut carry, mut index, mut line) = (Vec::new(), 0, 1u64);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "stopped"));
        }
        let mut text = buffer();
        text.clear();
        text.append(&mut carry);
        let got = input.by_ref().take(block as u64).read_to_end(&mut text)?;
        let end = got < block;
        if !end {
            match memchr::memrchr(b'\n', &text) {
                Some(cut) => {
                    carry.extend_from_slice(&text[cut + 1..]);
                    text.truncate(cut + 1);
                }
                None => {
                    carry = text; // a line longer than a block: read on
                    continue;
                }
            }
        }
        if !text.is_empty() {
            let lines = memchr::memchr_iter(b'\n', &text).count() as u64
                + u64::from(!text.ends_with(b"\n"));
            send(index, line, text);
            (index, line) = (index + 1, line + lines);
        }
        if end {
            return Ok(());
        }
    }
}

/// The lines of one block, numbered from `first_line`, in log order.
fn parse_block(text: &[u8], first_line: u64, format: &LogFormat) -> Parsed {
    let mut parsed = Parsed::default();
    let mut r = Requests::default();
    // Room for every line up front: growing columns line by line copies them again and again.
    let lines = memchr::memchr_iter(b'\n', text).count() + 1;
    r.time.reserve(lines);
    r.zone.reserve(lines);
    r.line.reserve(lines);
    r.status.reserve(lines);
    r.bytes.reserve(lines);
    for strings in [&mut r.host, &mut r.method, &mut r.target] {
        strings.offsets.reserve(lines);
    }
    r.host.data.reserve(lines * 24);
    r.method.data.reserve(lines * 4);
    r.target.data.reserve(text.len() / 4);
    let mut number = first_line;
    let mut start = 0;
    while start < text.len() {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i + 1);
        let line = trim_newline(&text[start..end]);
        start = end;
        parsed.lines += 1;
        number += 1;
        if line.is_empty() {
            continue; // a blank line (often the last) is not a request, nor an error
        }
        let result = std::str::from_utf8(line)
            .map_err(|e| format!("not UTF-8 text (byte {})", e.valid_up_to() + 1))
            .and_then(|line| parse_line(format, line).map_err(|e| e.to_string()));
        match result {
            Ok(record) => {
                r.time.push(record.time);
                r.zone.push(record.zone);
                r.line.push(number - 1);
                r.host.push(&record.host);
                r.method.push(&record.method);
                r.target.push(&record.target);
                r.vhost.push(record.vhost.as_deref().unwrap_or(""));
                r.status.push(record.status);
                r.bytes.push(
                    record
                        .bytes
                        .map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX)),
                );
            }
            Err(reason) => {
                parsed.bad += 1;
                if parsed.bad_lines.len() < KEPT_BAD_LINES {
                    parsed.bad_lines.push((number - 1, reason));
                }
            }
        }
    }
    parsed.blocks.push(r);
    parsed
}

fn count_out_of_order<'a>(time: impl Iterator<Item = &'a i64>) -> u64 {
    let mut latest = i64::MIN;
    let mut count = 0;
    for &t in time {
        count += u64::from(t < latest);
        latest = latest.max(t);
    }
    count
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "a - - [01/Jan/2024:00:00:02 +0000] \"GET /2 HTTP/1.1\" 200 20\n\
        bad line\n\
        \n\
        b - - [01/Jan/2024:00:00:01 +0000] \"GET /a-much-longer-target-than-the-others HTTP/1.1\" 200 1\n\
        c - - [01/Jan/2024:00:00:03 +0000] \"GET /3 HTTP/1.1\" 404 -";

    #[test]
    fn an_ordered_log_stays_in_its_blocks_and_joins_in_order() {
        let format = LogFormat::parse("common").unwrap();
        let text: String = (0..50)
            .map(|i| {
                format!("h - - [01/Jan/2024:00:00:{i:02} +0000] \"GET /{i} HTTP/1.1\" 200 {i}\n")
            })
            .collect();
        let p = parse_in_blocks(text.as_bytes(), &format, 2, 256, &AtomicBool::new(false)).unwrap();
        assert!(p.blocks.len() > 1);
        assert_eq!(p.requests().bytes, (0..50).collect::<Vec<i64>>());
        assert_eq!(p.requests().line, (1..=50).collect::<Vec<u64>>());
    }

    #[test]
    fn any_block_size_and_thread_count_give_the_same_result() {
        let format = LogFormat::parse("common").unwrap();
        let whole =
            parse_in_blocks(LOG.as_bytes(), &format, 1, 1 << 20, &AtomicBool::new(false)).unwrap();
        assert_eq!((whole.lines, whole.bad, whole.out_of_order), (5, 1, 1));
        assert_eq!(whole.requests().line, [4, 1, 5]);
        // Blocks shorter than a line, of one line, and cutting lines anywhere.
        for block in [1, 7, 40, 64, 65, 100] {
            for threads in [1, 2, 3] {
                let p = parse_in_blocks(
                    LOG.as_bytes(),
                    &format,
                    threads,
                    block,
                    &AtomicBool::new(false),
                )
                .unwrap();
                let counts = |p: &Parsed| (p.lines, p.bad, p.bad_lines.clone(), p.out_of_order);
                assert_eq!(
                    counts(&p),
                    counts(&whole),
                    "block {block}, {threads} threads"
                );
                assert_eq!(
                    p.requests(),
                    whole.requests(),
                    "block {block}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn a_stopped_read_ends_with_interrupted() {
        let format = LogFormat::parse("common").unwrap();
        let stop = AtomicBool::new(true);
        let e = parse_in_blocks(&b"x\n"[..], &format, 1, 64, &stop).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted);
    }
}
