//! Size and duration strings as users type them: `2k`, `8k`, `1m`, `10g` (powers of 1024,
//! FileBench style) and `500ms`, `3s`, `2m`, `1h` (a bare number is seconds, as in FileBench's
//! `runtime = 120`).

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UnitError {
    #[error("invalid size `{input}`")]
    Size { input: String },
    #[error("invalid duration `{input}`")]
    Duration { input: String },
}

impl UnitError {
    pub fn hint(&self) -> &'static str {
        match self {
            UnitError::Size { .. } => {
                "sizes are a number with an optional k, m, g or t suffix (powers of 1024), e.g. `8k`, `10g`"
            }
            UnitError::Duration { .. } => {
                "durations are a number with an optional unit ns, us, ms, s, m or h, e.g. `500ms`, `3s`, `2m`"
            }
        }
    }
}

/// Splits `"10.5gib"` into `(10.5, "gib")`; `None` when the number part is missing or not finite.
fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let value: f64 = s[..end].parse().ok()?;
    value
        .is_finite()
        .then(|| (value, s[end..].trim().to_ascii_lowercase()))
}

/// Parses a size in bytes. Suffixes k, m, g, t (optionally followed by `b` or `ib`) are powers
/// of 1024; a bare number or `b` is bytes. Fractions are allowed when they come out whole.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Size {
        input: input.to_string(),
    };
    let (value, unit) = split_number(input).ok_or_else(err)?;
    let shift = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(err()),
    };
    let bytes = value * (1u64 << shift) as f64;
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes as u64)
}

/// Parses a duration into nanoseconds. A bare number is seconds.
pub fn parse_duration_ns(input: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Duration {
        input: input.to_string(),
    };
    let (value, unit) = split_number(input).ok_or_else(err)?;
    let scale: f64 = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(err()),
    };
    let ns = value * scale;
    if ns > u64::MAX as f64 {
        return Err(err());
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_powers_of_1024() {
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("8K"), Ok(8192));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("10g"), Ok(10 << 30));
        assert_eq!(parse_size("1t"), Ok(1 << 40));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512b"), Ok(512));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size(" 16m "), Ok(16 << 20));
    }

    #[test]
    fn bad_sizes_name_the_input() {
        for bad in ["", "k", "10x", "-1k", "1.3b", "ten", "1e3", "99999999999t"] {
            let e = parse_size(bad).unwrap_err();
            assert_eq!(e, UnitError::Size { input: bad.into() }, "{bad}");
            assert!(e.to_string().contains(&format!("`{bad}`")));
        }
    }

    #[test]
    fn durations_default_to_seconds() {
        assert_eq!(parse_duration_ns("120"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("3s"), Ok(3_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
    }

    #[test]
    fn bad_durations_name_the_input() {
        for bad in ["", "s", "3 parsecs", "-2s", "1d"] {
            assert_eq!(
                parse_duration_ns(bad),
                Err(UnitError::Duration { input: bad.into() }),
                "{bad}"
            );
        }
    }
}
