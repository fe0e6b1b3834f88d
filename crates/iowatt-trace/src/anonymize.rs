//! An access log rewritten so it can be shared: each field that can name a person, a file or a
//! secret replaced in place, every other byte of the line kept.
//!
//! Client addresses go through Crypto-PAn (subnets stay subnets); host names, users, queries
//! and other secrets become keyed hashes; request paths are hashed component by component with
//! the names key, so they match the names of `iowatt tree snapshot`. Which field is which comes
//! from the log format: `%h %a` hosts, `%l %u` users, `%r` the request's target (method and
//! protocol kept), `%U` the path, `%q` the query, `%f` the file, `%{Referer}i` hashed like a
//! target, `%{User-Agent}i` kept (or hashed on request), `%{X-Forwarded-For}i` and friends as
//! lists of hosts, any other header, cookie, note or variable hashed. Lines that do not parse
//! are left out (they could hold anything), counted with their numbers.

mod values;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::ops::Range;
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::format::{FormatError, LogFormat, Token, NAMED};
use crate::line::{parse_line_spans, LineError};
use values::{Hasher, HostKind, FIELD};

/// Bad lines whose numbers and reasons are kept (all of them are counted).
pub const KEPT_BAD_LINES: usize = 100;

/// Distinct hosts and targets remembered: logs repeat them, and hashing is the costly part.
const CACHE_ENTRIES: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Config {
    /// A named format (`combined`) or a `mod_log_config` format string.
    pub format: String,
    pub names_key: [u8; 32],
    pub addresses_key: [u8; 32],
    /// Keep short file extensions after the hashed names (as `tree snapshot` does).
    pub keep_extensions: bool,
    /// Replace user agents by their keyed hash too.
    pub hash_agents: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Lines read, blank ones included.
    pub lines: u64,
    pub written: u64,
    pub blank: u64,
    /// Lines left out because they do not parse.
    pub bad: u64,
    /// (line, reason) of the first [`KEPT_BAD_LINES`] bad lines.
    pub bad_lines: Vec<(u64, String)>,
    /// Distinct client addresses anonymised, and host names hashed.
    pub addresses: u64,
    pub host_names: u64,
}

/// What a field of the format is, for the anonymiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Keep,
    Host,
    Hosts,
    Request,
    Path,
    Query,
    File,
    Referer,
    Agent,
    Secret,
}

/// Rewrites lines of one format with one pair of keys.
pub struct Anonymizer {
    format: LogFormat,
    roles: Vec<Role>,
    /// Bytes of the literal that ends the format (a closing quote), if it ends with one.
    closing: usize,
    hasher: Hasher,
    hash_agents: bool,
    spans: Vec<Range<usize>>,
    hosts: HashMap<String, String>,
    targets: HashMap<String, String>,
    value: String,
    pub stats: Stats,
}

impl Anonymizer {
    pub fn new(config: &Config) -> Result<Self, FormatError> {
        let format = LogFormat::parse(&config.format)?;
        let roles = roles(&config.format);
        let fields = format
            .tokens
            .iter()
            .filter(|t| matches!(t, Token::Field(_)));
        assert_eq!(
            roles.len(),
            fields.count(),
            "one role per field of the format"
        );
        let closing = match format.tokens.last() {
            Some(Token::Literal(text)) => text.len(),
            _ => 0,
        };
        Ok(Self {
            format,
            roles,
            closing,
            hasher: Hasher::new(
                config.names_key,
                &config.addresses_key,
                config.keep_extensions,
            ),
            hash_agents: config.hash_agents,
            spans: Vec::new(),
            hosts: HashMap::new(),
            targets: HashMap::new(),
            value: String::new(),
            stats: Stats::default(),
        })
    }

    /// Appends `line` (without its newline) to `out` with its private fields replaced.
    pub fn line(&mut self, line: &str, out: &mut Vec<u8>) -> Result<(), LineError> {
        let mut spans = std::mem::take(&mut self.spans);
        let parsed = parse_line_spans(&self.format, line, &mut spans);
        let record = match parsed {
            Ok(record) => record,
            Err(e) => {
                self.spans = spans;
                return Err(e);
            }
        };
        let mut value = std::mem::take(&mut self.value);
        let mut at = 0;
        for (i, span) in spans.iter().enumerate() {
            let role = self.roles[i];
            let span = match role {
                Role::Keep => continue,
                Role::Request => &record.target_span,
                _ => span,
            };
            out.extend_from_slice(&line.as_bytes()[at..span.start]);
            value.clear();
            self.rewrite(role, &line[span.clone()], &mut value);
            out.extend_from_slice(value.as_bytes());
            at = span.end;
        }
        // The format's closing literal (`"` of the agent) is the line's as the format says;
        // what follows it is fields the format does not name.
        let end = spans.last().map_or(0, |s| s.end) + self.closing;
        out.extend_from_slice(&line.as_bytes()[at..end]);
        value.clear();
        self.extra(&line[end..], &mut value);
        out.extend_from_slice(value.as_bytes());
        (self.spans, self.value) = (spans, value);
        Ok(())
    }

    fn rewrite(&mut self, role: Role, raw: &str, out: &mut String) {
        let unset = raw.is_empty() || raw == "-";
        match role {
            _ if unset && role != Role::Request => out.push_str(raw),
            Role::Keep => out.push_str(raw),
            Role::Agent if !self.hash_agents => out.push_str(raw),
            Role::Host => self.host(raw, out),
            Role::Hosts => {
                // `client, proxy1, proxy2`: each host rewritten, the separators kept.
                for (i, part) in raw.split(',').enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let host = part.trim_start();
                    out.push_str(&part[..part.len() - host.len()]);
                    self.host(host, out);
                }
            }
            Role::Request => self.target(raw, out),
            Role::Referer if values::absolute(raw).is_some() || raw.starts_with('/') => {
                self.target(raw, out);
            }
            Role::Path => self.hasher.path(raw, out),
            Role::Query => {
                let query = raw.strip_prefix('?').unwrap_or(raw);
                if query.len() < raw.len() {
                    out.push('?');
                }
                self.hasher.secret(values::QUERY, query.as_bytes(), out);
            }
            Role::File => self.hasher.file(raw, out),
            Role::Referer | Role::Agent | Role::Secret => {
                self.hasher.secret(FIELD, raw.as_bytes(), out);
            }
        }
    }

    /// Text after the format's last field (servers add fields; logstalgia's sample has a
    /// fourth quoted one): space-separated or quoted values kept where they are `-` or a number,
    /// hashed otherwise, since nothing says what they hold.
    fn extra(&mut self, rest: &str, out: &mut String) {
        let b = rest.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b' ' {
                out.push(' ');
                i += 1;
                continue;
            }
            let quoted = b[i] == b'"';
            let start = i + usize::from(quoted);
            let mut j = start;
            while j < b.len() && b[j] != if quoted { b'"' } else { b' ' } {
                j += if quoted && b[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(b.len());
            let value = &rest[start..end];
            if quoted {
                out.push('"');
            }
            if value.is_empty()
                || value == "-"
                || value.bytes().all(|c| c.is_ascii_digit() || c == b'.')
            {
                out.push_str(value);
            } else {
                self.hasher.secret(FIELD, value.as_bytes(), out);
            }
            if quoted && end < b.len() {
                out.push('"');
                i = end + 1;
            } else {
                i = end;
            }
        }
    }

    fn target(&mut self, raw: &str, out: &mut String) {
        match self.targets.get(raw) {
            Some(done) => out.push_str(done),
            None => {
                let start = out.len();
                self.hasher.target(raw, out);
                remember(&mut self.targets, raw, &out[start..]);
            }
        }
    }

    fn host(&mut self, raw: &str, out: &mut String) {
        if raw.is_empty() || raw == "-" {
            out.push_str(raw);
            return;
        }
        if let Some(done) = self.hosts.get(raw) {
            out.push_str(done);
            return;
        }
        let start = out.len();
        match self.hasher.host(raw, out) {
            HostKind::Address => self.stats.addresses += 1,
            HostKind::Name => self.stats.host_names += 1,
        }
        remember(&mut self.hosts, raw, &out[start..]);
    }
}

fn remember(cache: &mut HashMap<String, String>, raw: &str, done: &str) {
    if cache.len() >= CACHE_ENTRIES {
        cache.clear(); // a bound on memory; the next lines fill it again
    }
    cache.insert(raw.to_owned(), done.to_owned());
}

/// The role of each field of `format` (already checked by [`LogFormat::parse`]), read from the
/// format text: the parsed format keeps only what replay needs, not which field is `%u`.
fn roles(format: &str) -> Vec<Role> {
    let text = NAMED
        .iter()
        .find(|(name, _)| *name == format)
        .map_or(format, |(_, f)| f);
    let chars: Vec<char> = text.chars().collect();
    let mut roles = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            i += 1;
            continue;
        }
        i += 1;
        while i < chars.len() && matches!(chars[i], '<' | '>' | '!') {
            i += 1;
        }
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ',') {
            i += 1;
        }
        let mut arg = String::new();
        if chars.get(i) == Some(&'{') {
            let close = chars[i..].iter().position(|&c| c == '}').unwrap_or(0);
            arg = chars[i + 1..i + close].iter().collect::<String>();
            i += close + 1;
        }
        let Some(&letter) = chars.get(i) else { break };
        i += 1;
        if letter != '%' {
            roles.push(role(letter, &arg.to_ascii_lowercase()));
        }
    }
    roles
}

fn role(letter: char, arg: &str) -> Role {
    match letter {
        'h' | 'a' => Role::Host,
        'l' | 'u' => Role::Secret,
        'r' => Role::Request,
        'U' => Role::Path,
        'q' => Role::Query,
        'f' => Role::File,
        'i' if arg == "referer" => Role::Referer,
        'i' if arg == "user-agent" => Role::Agent,
        'i' if matches!(arg, "x-forwarded-for" | "x-real-ip" | "true-client-ip") => Role::Hosts,
        'i' | 'o' | 'e' | 'n' | 'C' | 'x' => Role::Secret,
        'c' if !arg.is_empty() => Role::Secret,
        _ => Role::Keep,
    }
}

/// A log being anonymised, read a chunk at a time.
pub struct LogAnonymizer {
    input: Box<dyn BufRead + Send>,
    anonymizer: Anonymizer,
    buf: Vec<u8>,
}

impl LogAnonymizer {
    /// The log at `path` (gzip recognised by its magic bytes).
    pub fn open(path: &Path, anonymizer: Anonymizer) -> io::Result<Self> {
        let mut file = BufReader::with_capacity(1 << 20, File::open(path)?);
        let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(1 << 20, MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        Ok(Self::new(input, anonymizer))
    }

    pub fn new(input: Box<dyn BufRead + Send>, anonymizer: Anonymizer) -> Self {
        Self {
            input,
            anonymizer,
            buf: Vec::new(),
        }
    }

    /// Appends anonymised lines to `out` until it holds at least `min_bytes` or the log ends;
    /// false once the log has ended.
    pub fn next_chunk(&mut self, out: &mut Vec<u8>, min_bytes: usize) -> io::Result<bool> {
        while out.len() < min_bytes.max(1) {
            self.buf.clear();
            if self.input.read_until(b'\n', &mut self.buf)? == 0 {
                return Ok(false);
            }
            let stats = &mut self.anonymizer.stats;
            stats.lines += 1;
            let number = stats.lines;
            let text = trim_newline(&self.buf);
            if text.is_empty() {
                stats.blank += 1;
                continue;
            }
            let end = &self.buf[text.len()..];
            let start = out.len();
            let result = std::str::from_utf8(text)
                .map_err(|e| format!("not UTF-8 text (byte {})", e.valid_up_to() + 1))
                .and_then(|line| self.anonymizer.line(line, out).map_err(|e| e.to_string()));
            let stats = &mut self.anonymizer.stats;
            match result {
                Ok(()) => {
                    out.extend_from_slice(end);
                    stats.written += 1;
                }
                Err(reason) => {
                    out.truncate(start);
                    stats.bad += 1;
                    if stats.bad_lines.len() < KEPT_BAD_LINES {
                        stats.bad_lines.push((number, reason));
                    }
                }
            }
        }
        Ok(true)
    }

    pub fn stats(&self) -> &Stats {
        &self.anonymizer.stats
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}
