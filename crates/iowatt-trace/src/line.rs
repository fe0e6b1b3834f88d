//! One log line, split by its format: fields end at the literal text that follows them, quoted
//! fields at their unescaped closing quote (Apache writes `"` inside a value as `\"`), the time
//! at its `]`. Text after the last field (fields a server added to the format) is ignored.

use std::borrow::Cow;
use std::ops::Range;

use memchr::{memchr, memchr2};
use thiserror::Error;

use crate::format::{Directive, LogFormat, Token};
use crate::time::parse_clf_zoned;

/// The fields of one line that replay and the simulators use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record<'a> {
    /// Seconds since the epoch, UTC (the line's own zone offset applied).
    pub time: i64,
    /// The line's zone offset, seconds east of UTC (local time = time + zone).
    pub zone: i32,
    pub host: Cow<'a, str>,
    pub method: Cow<'a, str>,
    pub target: Cow<'a, str>,
    pub protocol: Cow<'a, str>,
    pub status: u16,
    /// Bytes sent; None for `-`.
    pub bytes: Option<u64>,
    pub vhost: Option<Cow<'a, str>>,
    pub referer: Option<Cow<'a, str>>,
    pub agent: Option<Cow<'a, str>>,
    /// Where the host and the request's target are in the line, as written (escapes and all):
    /// what an anonymiser replaces.
    pub host_span: Range<usize>,
    pub target_span: Range<usize>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LineError {
    #[error("expected `{expected}` at column {column}")]
    Literal { expected: String, column: usize },
    #[error("a quoted field from column {0} has no closing quote")]
    Unclosed(usize),
    #[error("the time at column {0} is not `[day/Mon/year:hh:mm:ss +zone]`")]
    Time(usize),
    #[error("the request at column {0} is not `METHOD target [PROTOCOL]`")]
    Request(usize),
    #[error("the status at column {0} is not a number from 100 to 999")]
    Status(usize),
    #[error("the size at column {0} is not a number of bytes or `-`")]
    Bytes(usize),
    #[error("the line has no time or no request")]
    Incomplete,
}

/// Splits `line` (without its newline) by `format`.
pub fn parse_line<'a>(format: &LogFormat, line: &'a str) -> Result<Record<'a>, LineError> {
    parse(format, line, None)
}

/// [`parse_line`], and where each of the format's fields is in the line, in the format's order
/// (quoted fields without their quotes, escapes as written): what an anonymiser rewrites
/// besides the host and the target. `spans` is cleared first.
pub fn parse_line_spans<'a>(
    format: &LogFormat,
    line: &'a str,
    spans: &mut Vec<Range<usize>>,
) -> Result<Record<'a>, LineError> {
    spans.clear();
    parse(format, line, Some(spans))
}

fn parse<'a>(
    format: &LogFormat,
    line: &'a str,
    mut spans: Option<&mut Vec<Range<usize>>>,
) -> Result<Record<'a>, LineError> {
    let mut record = Record::default();
    let (mut seen_time, mut seen_request) = (false, false);
    let mut pos = 0;
    let tokens = &format.tokens;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Literal(text) => {
                if !starts_with(&line.as_bytes()[pos..], text.as_bytes()) {
                    return Err(LineError::Literal {
                        expected: text.clone(),
                        column: pos + 1,
                    });
                }
                pos += text.len();
            }
            Token::Field(directive) => {
                let quoted = i > 0 && ends_with_quote(&tokens[i - 1]);
                let next = tokens.get(i + 1);
                let (value, end) = field(line, pos, *directive, quoted, next)?;
                match directive {
                    Directive::Time => seen_time = true,
                    Directive::Request => seen_request = true,
                    _ => {}
                }
                match directive {
                    Directive::Host => record.host_span = pos..end,
                    Directive::Request => record.target_span = target_span(&line[pos..end], pos),
                    _ => {}
                }
                store(&mut record, *directive, value, pos + 1)?;
                if let Some(spans) = spans.as_deref_mut() {
                    spans.push(pos..end);
                }
                pos = end;
            }
        }
    }
    if !(seen_time && seen_request) {
        return Err(LineError::Incomplete);
    }
    Ok(record)
}

/// `hay.starts_with(needle)` for the short literals of a format, without a call to memcmp.
fn starts_with(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay.iter().zip(needle).all(|(a, b)| a == b)
}

fn ends_with_quote(token: &Token) -> bool {
    matches!(token, Token::Literal(text) if text.ends_with('"'))
}

/// The field's text from `pos`, and where the field ends.
fn field<'a>(
    line: &'a str,
    pos: usize,
    directive: Directive,
    quoted: bool,
    next: Option<&Token>,
) -> Result<(Cow<'a, str>, usize), LineError> {
    let rest = &line[pos..];
    if quoted {
        return quoted_field(rest, pos);
    }
    if directive == Directive::Time {
        let close = memchr(b']', rest.as_bytes()).filter(|_| rest.starts_with('['));
        let close = close.ok_or(LineError::Time(pos + 1))?;
        return Ok((Cow::Borrowed(&rest[1..close]), pos + close + 1));
    }
    // A literal's first byte ends the field (a format's literals are ASCII in practice; a
    // multi-byte one is matched from its first byte, which never occurs inside a character).
    let stop = match next {
        Some(Token::Literal(text)) => text.as_bytes().first().copied().unwrap_or(b' '),
        _ => b' ',
    };
    let end = memchr(stop, rest.as_bytes()).unwrap_or(rest.len());
    Ok((Cow::Borrowed(&rest[..end]), pos + end))
}

/// A value up to its closing quote, with Apache's `\"` and `\\` escapes undone.
fn quoted_field(rest: &str, pos: usize) -> Result<(Cow<'_, str>, usize), LineError> {
    let bytes = rest.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    while let Some(at) = memchr2(b'\\', b'"', &bytes[i.min(bytes.len())..]) {
        i += at;
        match bytes[i] {
            b'\\' => {
                escaped = true;
                i += 2;
            }
            _ => {
                let raw = &rest[..i];
                let value = if escaped {
                    Cow::Owned(raw.replace("\\\"", "\"").replace("\\\\", "\\"))
                } else {
                    Cow::Borrowed(raw)
                };
                return Ok((value, pos + i));
            }
        }
    }
    Err(LineError::Unclosed(pos + 1))
}

fn store<'a>(
    record: &mut Record<'a>,
    directive: Directive,
    value: Cow<'a, str>,
    column: usize,
) -> Result<(), LineError> {
    match directive {
        Directive::Time => {
            (record.time, record.zone) = parse_clf_zoned(&value).ok_or(LineError::Time(column))?;
        }
        Directive::Request => request(record, value, column)?,
        Directive::Status => {
            record.status = value
                .parse::<u16>()
                .ok()
                .filter(|s| (100..=999).contains(s))
                .ok_or(LineError::Status(column))?;
        }
        Directive::Bytes => {
            record.bytes = match value.as_ref() {
                "-" => None,
                n => Some(n.parse().map_err(|_| LineError::Bytes(column))?),
            };
        }
        Directive::Host => record.host = value,
        Directive::VHost => record.vhost = Some(value),
        Directive::Referer => record.referer = Some(value),
        Directive::UserAgent => record.agent = Some(value),
        Directive::Skip => {}
    }
    Ok(())
}

fn request<'a>(
    record: &mut Record<'a>,
    value: Cow<'a, str>,
    column: usize,
) -> Result<(), LineError> {
    let bad = LineError::Request(column);
    match value {
        Cow::Borrowed(text) => {
            let (m, t, p) = split_request(text).ok_or(bad)?;
            (record.method, record.target, record.protocol) =
                (Cow::Borrowed(m), Cow::Borrowed(t), Cow::Borrowed(p));
        }
        Cow::Owned(text) => {
            let (m, t, p) = split_request(&text).ok_or(bad)?;
            (record.method, record.target, record.protocol) = (
                Cow::Owned(m.to_string()),
                Cow::Owned(t.to_string()),
                Cow::Owned(p.to_string()),
            );
        }
    }
    Ok(())
}

/// The raw target of a raw request line starting at `pos` (a target never holds a raw space).
fn target_span(raw: &str, pos: usize) -> Range<usize> {
    let bytes = raw.as_bytes();
    let start = memchr(b' ', bytes).map_or(raw.len(), |i| i + 1);
    let len = memchr(b' ', &bytes[start..]).unwrap_or(raw.len() - start);
    pos + start..pos + start + len
}

/// `METHOD target PROTOCOL`, or `METHOD target` (HTTP/0.9).
fn split_request(text: &str) -> Option<(&str, &str, &str)> {
    let space = memchr(b' ', text.as_bytes())?;
    let (method, rest) = (&text[..space], &text[space + 1..]);
    let (target, protocol) = match memchr(b' ', rest.as_bytes()) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let ok = is_method(method) && !target.is_empty() && !protocol.contains(' ');
    ok.then_some((method, target, protocol))
}

fn is_method(m: &str) -> bool {
    !m.is_empty() && m.len() <= 16 && m.bytes().all(|b| b.is_ascii_uppercase() || b == b'-')
}
