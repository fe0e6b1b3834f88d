//! One field's value made private: request targets and URLs hashed component by component (so
//! a path still names the same hashed file a tree snapshot has), secrets replaced by a keyed
//! hash, client hosts by Crypto-PAn addresses or hashed names.

use std::net::IpAddr;

use crate::cryptopan::CryptoPan;
use crate::keys::hash_name;

/// What keeps distinct values distinct: a query and a file of the same text hash differently.
pub(super) const QUERY: &[u8] = b"?";
pub(super) const FRAGMENT: &[u8] = b"#";
pub(super) const USERINFO: &[u8] = b"@";
pub(super) const FIELD: &[u8] = b"field\0";

pub(super) struct Hasher {
    key: [u8; 32],
    keep_extensions: bool,
    pan: CryptoPan,
    // Reused between values: a log has millions of them.
    unescaped: Vec<u8>,
    decoded: Vec<u8>,
    salted: Vec<u8>,
}

/// What a host became.
pub(super) enum HostKind {
    Address,
    Name,
}

impl Hasher {
    pub(super) fn new(names: [u8; 32], addresses: &[u8; 32], keep_extensions: bool) -> Self {
        Self {
            key: names,
            keep_extensions,
            pan: CryptoPan::new(addresses),
            unescaped: Vec::new(),
            decoded: Vec::new(),
            salted: Vec::new(),
        }
    }

    /// A client host: an IPv4 or IPv6 address through Crypto-PAn (an IPv4-mapped IPv6 address
    /// as its IPv4 one, so a client has one address whichever socket took it), anything else
    /// as a name, hashed case-insensitively.
    pub(super) fn host(&mut self, raw: &str, out: &mut String) -> HostKind {
        match raw.parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) => out.push_str(&self.pan.ipv4(a).to_string()),
            Ok(IpAddr::V6(a)) => match a.to_ipv4_mapped() {
                Some(v4) => {
                    out.push_str("::ffff:");
                    out.push_str(&self.pan.ipv4(v4).to_string());
                }
                None => out.push_str(&self.pan.ipv6(a).to_string()),
            },
            Err(_) => {
                out.push_str(&hash_name(
                    &self.key,
                    raw.to_ascii_lowercase().as_bytes(),
                    false,
                ));
                return HostKind::Name;
            }
        }
        HostKind::Address
    }

    /// A value that only needs to stay distinct: its keyed hash, salted by what it is.
    pub(super) fn secret(&mut self, salt: &[u8], raw: &[u8], out: &mut String) {
        self.salted.clear();
        self.salted.extend_from_slice(salt);
        self.salted.extend_from_slice(raw);
        out.push_str(&hash_name(&self.key, &self.salted, false));
    }

    /// A request target or a URL, as written in the log.
    ///
    /// `/path?query#fragment`: each path component decoded (the log's `\xhh` escapes, then
    /// percent-encoding) and hashed like a file name, so it equals the tree snapshot's name
    /// for that file; the query and fragment replaced by their keyed hash. `*` stays.
    /// `scheme://user@host:port/path…`: scheme and port stay, host hashed as a name. `host:port`
    /// (CONNECT): the same. Anything else is taken as a relative path.
    pub(super) fn target(&mut self, raw: &str, out: &mut String) {
        if raw == "*" {
            out.push('*');
            return;
        }
        let (rest, fragment) = split(raw, '#');
        let (rest, query) = split(rest, '?');
        if let Some((scheme, after)) = absolute(rest) {
            out.push_str(scheme);
            out.push_str("://");
            let slash = after.find('/').unwrap_or(after.len());
            self.authority(&after[..slash], out);
            self.path(&after[slash..], out);
        } else if !rest.starts_with('/') && is_authority(rest) {
            self.authority(rest, out);
        } else {
            self.path(rest, out);
        }
        for (mark, salt, part) in [('?', QUERY, query), ('#', FRAGMENT, fragment)] {
            if let Some(part) = part {
                out.push(mark);
                if !part.is_empty() {
                    self.secret(salt, part.as_bytes(), out);
                }
            }
        }
    }

    /// A path, `/`s kept (leading, trailing, doubled), each component hashed as a name.
    pub(super) fn path(&mut self, raw: &str, out: &mut String) {
        for (i, part) in raw.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            if !part.is_empty() {
                unescape_log(part.as_bytes(), &mut self.unescaped);
                percent_decode(&self.unescaped, &mut self.decoded);
                out.push_str(&hash_name(&self.key, &self.decoded, self.keep_extensions));
            }
        }
    }

    /// A file path on the server (`%f`): components as the file system has them, no URL
    /// encoding to undo.
    pub(super) fn file(&mut self, raw: &str, out: &mut String) {
        for (i, part) in raw.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            if !part.is_empty() {
                unescape_log(part.as_bytes(), &mut self.unescaped);
                out.push_str(&hash_name(&self.key, &self.unescaped, self.keep_extensions));
            }
        }
    }

    /// `user@host:port`, `[v6]:port`: user and host hashed, port kept.
    fn authority(&mut self, raw: &str, out: &mut String) {
        let hostport = match raw.rfind('@') {
            Some(at) => {
                self.secret(USERINFO, &raw.as_bytes()[..at], out);
                out.push('@');
                &raw[at + 1..]
            }
            None => raw,
        };
        let (host, port) = split_port(hostport);
        if !host.is_empty() {
            let host = host.to_ascii_lowercase();
            out.push_str(&hash_name(&self.key, host.as_bytes(), false));
        }
        if let Some(port) = port {
            out.push(':');
            out.push_str(port);
        }
    }
}

fn split(raw: &str, mark: char) -> (&str, Option<&str>) {
    match raw.split_once(mark) {
        Some((before, after)) => (before, Some(after)),
        None => (raw, None),
    }
}

/// `scheme://rest` → (scheme, rest), for a scheme as RFC 3986 spells it.
pub(super) fn absolute(raw: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = raw.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let ok = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some((scheme, rest))
}

/// `host:port` as CONNECT writes it.
fn is_authority(raw: &str) -> bool {
    !raw.contains('/') && matches!(split_port(raw), (h, Some(_)) if !h.is_empty())
}

fn split_port(raw: &str) -> (&str, Option<&str>) {
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if raw.starts_with('[') {
        if let Some(close) = raw.find(']') {
            let port = raw[close + 1..].strip_prefix(':').filter(|p| digits(p));
            return (&raw[..=close], port);
        }
    }
    match raw.rsplit_once(':') {
        Some((host, port)) if digits(port) && !host.contains(':') => (host, Some(port)),
        _ => (raw, None),
    }
}

/// Apache's and nginx's escapes in a logged value (`\"`, `\\`, `\xhh`, `\n`, `\t`, `\r`)
/// undone, giving the bytes the client sent.
fn unescape_log(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            let (byte, len) = match raw[i + 1] {
                b'x' => match raw.get(i + 2..i + 4).and_then(hex_byte) {
                    Some(b) => (b, 4),
                    None => (b'\\', 1),
                },
                b'n' => (b'\n', 2),
                b't' => (b'\t', 2),
                b'r' => (b'\r', 2),
                b'"' | b'\\' => (raw[i + 1], 2),
                _ => (b'\\', 1),
            };
            out.push(byte);
            i += len;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
}

/// `%hh` decoded; a `%` not followed by two hex digits stays as it is (browsers send them).
fn percent_decode(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            if let Some(b) = raw.get(i + 1..i + 3).and_then(hex_byte) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some((digit(two[0])? * 16 + digit(two[1])?) as u8)
}
