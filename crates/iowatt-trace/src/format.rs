//! Log formats in Apache's `mod_log_config` syntax: literal text and `%` directives.
//!
//! Only the fields replay needs are kept (host, time, request, status, size, vhost, referer,
//! user agent); every other directive is parsed and its value skipped, so any format a server
//! writes can be read. Unknown directives are an error naming them.

use thiserror::Error;

/// The formats Apache and Debian name (`LogFormat ... common` and friends).
pub const NAMED: [(&str, &str); 3] = [
    ("common", "%h %l %u %t \"%r\" %>s %b"),
    (
        "combined",
        "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"",
    ),
    (
        "vhost_combined",
        "%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"",
    ),
];

/// What a directive's value is taken as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// `%h`, `%a`: the client.
    Host,
    /// `%t`: `[day/Mon/year:hh:mm:ss +zone]`.
    Time,
    /// `%r`: `METHOD target PROTOCOL`.
    Request,
    /// `%s`, `%>s`: the status code.
    Status,
    /// `%b`, `%B`, `%O`: bytes sent (`-` for none).
    Bytes,
    /// `%v`, `%V`: the virtual host; `%{Host}i`: the Host header the client sent.
    VHost,
    /// `%{Referer}i`.
    Referer,
    /// `%{User-Agent}i`.
    UserAgent,
    /// Any other known directive: read, not kept.
    Skip,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Literal(String),
    Field(Directive),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFormat {
    pub tokens: Vec<Token>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("unknown directive `%{0}` at character {1}")]
    Unknown(String, usize),
    #[error("`%` at the end of the format")]
    Dangling,
    #[error("`%{{` without its closing `}}` at character {0}")]
    Unclosed(usize),
    #[error("two fields with nothing between them at character {0}: the line cannot be split")]
    Adjacent(usize),
    #[error("the format has no %t (time) or no %r (request)")]
    Incomplete,
}

// Directives with a value that are read and skipped (mod_log_config's list).
const SKIPPED: &str = "ABDHIklLmpPqRTuUXf";

impl LogFormat {
    /// A named format (`combined`) or a format string.
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let text = NAMED
            .iter()
            .find(|(name, _)| *name == text)
            .map_or(text, |(_, f)| f);
        let mut tokens: Vec<Token> = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '%' {
                push_literal(&mut tokens, chars[i]);
                i += 1;
                continue;
            }
            let at = i;
            i += 1;
            // Conditions (`%400,501{...}i`) and `<`/`>` (original/final request) change which
            // value is logged, not its shape.
            while i < chars.len() && (chars[i] == '<' || chars[i] == '>' || chars[i] == '!') {
                i += 1;
            }
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ',') {
                i += 1;
            }
            let mut arg = String::new();
            if i < chars.len() && chars[i] == '{' {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or(FormatError::Unclosed(at + 1))?;
                arg = chars[i + 1..i + close].iter().collect();
                i += close + 1;
            }
            let Some(&letter) = chars.get(i) else {
                return Err(FormatError::Dangling);
            };
            i += 1;
            if letter == '%' {
                push_literal(&mut tokens, '%');
                continue;
            }
            let directive = directive(letter, &arg)
                .ok_or_else(|| FormatError::Unknown(name(letter, &arg), at + 1))?;
            if matches!(tokens.last(), Some(Token::Field(_))) {
                return Err(FormatError::Adjacent(at + 1));
            }
            tokens.push(Token::Field(directive));
        }
        let has = |d| tokens.contains(&Token::Field(d));
        if !has(Directive::Time) || !has(Directive::Request) {
            return Err(FormatError::Incomplete);
        }
        Ok(Self { tokens })
    }
}

fn push_literal(tokens: &mut Vec<Token>, c: char) {
    if let Some(Token::Literal(text)) = tokens.last_mut() {
        text.push(c);
    } else {
        tokens.push(Token::Literal(c.to_string()));
    }
}

fn directive(letter: char, arg: &str) -> Option<Directive> {
    Some(match letter {
        'h' | 'a' => Directive::Host,
        't' if arg.is_empty() => Directive::Time,
        'r' => Directive::Request,
        's' => Directive::Status,
        'b' | 'B' | 'O' => Directive::Bytes,
        'v' | 'V' => Directive::VHost,
        'i' if arg.eq_ignore_ascii_case("referer") => Directive::Referer,
        'i' if arg.eq_ignore_ascii_case("user-agent") => Directive::UserAgent,
        'i' if arg.eq_ignore_ascii_case("host") => Directive::VHost,
        'i' | 'o' | 'n' | 'e' | 'C' | 'c' | 'x' => Directive::Skip,
        c if SKIPPED.contains(c) => Directive::Skip,
        _ => return None,
    })
}

fn name(letter: char, arg: &str) -> String {
    if arg.is_empty() {
        letter.to_string()
    } else {
        format!("{{{arg}}}{letter}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_is_the_common_format_with_referer_and_agent() {
        let f = LogFormat::parse("combined").unwrap();
        let fields: Vec<_> = f
            .tokens
            .iter()
            .filter_map(|t| match t {
                Token::Field(d) => Some(*d),
                Token::Literal(_) => None,
            })
            .collect();
        use Directive::*;
        assert_eq!(
            fields,
            [Host, Skip, Skip, Time, Request, Status, Bytes, Referer, UserAgent]
        );
    }

    #[test]
    fn unknown_directives_are_named_with_their_place() {
        assert_eq!(
            LogFormat::parse("%h %Q %t \"%r\""),
            Err(FormatError::Unknown("Q".into(), 4))
        );
        assert_eq!(
            LogFormat::parse("%h %{foo}Z %t"),
            Err(FormatError::Unknown("{foo}Z".into(), 4))
        );
    }

    #[test]
    fn malformed_formats_are_refused() {
        assert_eq!(
            LogFormat::parse("%h %t \"%r\" %"),
            Err(FormatError::Dangling)
        );
        assert_eq!(
            LogFormat::parse("%h %{Referer i"),
            Err(FormatError::Unclosed(4))
        );
        assert_eq!(
            LogFormat::parse("%h%t \"%r\""),
            Err(FormatError::Adjacent(3))
        );
        assert_eq!(LogFormat::parse("%h %s"), Err(FormatError::Incomplete));
    }

    #[test]
    fn conditions_and_final_status_keep_the_field_and_percent_is_literal() {
        let f = LogFormat::parse("%h %t \"%r\" %>s %400,501{Referer}i 100%%").unwrap();
        assert!(f.tokens.contains(&Token::Field(Directive::Status)));
        assert!(f.tokens.contains(&Token::Field(Directive::Referer)));
        assert_eq!(f.tokens.last(), Some(&Token::Literal(" 100%".into())));
    }
}
