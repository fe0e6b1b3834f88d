//! A command run at every poll that prints the power in watts (a vendor tool, a script reading
//! a smart plug). The first number in its output is the reading: `12.5`, `12.5 W`, `W=12.5`.

use std::io;
use std::process::Command;
use std::time::Duration;

use super::child::{self, Finished, RunError};
use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Cmd { argv, timeout_s } = &config.kind else {
        unreachable!("cmd::open called with another kind of source");
    };
    if argv.is_empty() || argv[0].is_empty() {
        return Err(PowerError::invalid(
            "the command is empty",
            "give the command and its arguments, e.g. [\"sh\", \"-c\", \"read-plug --watts\"]",
        ));
    }
    if !(timeout_s.is_finite() && *timeout_s > 0.0) {
        return Err(PowerError::invalid(
            format!("command timeout `{timeout_s}` s is not a positive number"),
            "give timeout_s in seconds, e.g. 5",
        ));
    }
    let cmd = Cmd {
        channels: vec![ChannelInfo {
            source: config.name.clone(),
            channel: config.name.clone(),
            unit: Unit::Watts,
            scope: "cmd".into(),
            parent: None,
            label: None,
        }],
        argv: argv.clone(),
        shown: shell_words(argv),
        timeout: Duration::from_secs_f64(*timeout_s),
    };
    // Run once, so a missing program or an output without a number is an error now rather
    // than an event after the work has started.
    cmd.watts()?;
    Ok(Box::new(cmd))
}

struct Cmd {
    channels: Vec<ChannelInfo>,
    argv: Vec<String>,
    /// The command as a user would type it, for messages.
    shown: String,
    timeout: Duration,
}

impl Cmd {
    /// The reading and when it was taken (the command's midpoint).
    fn watts(&self) -> Result<(f64, i64), PowerError> {
        let output = self.run()?;
        let stdout = &output.stdout;
        if !output.status.success() {
            let why = output
                .stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(PowerError::unavailable(
                format!("command `{}` failed ({}): {why}", self.shown, output.status),
                "run the command by hand to see why it fails",
            ));
        }
        let watts = first_number(stdout).ok_or_else(|| {
            PowerError::invalid(
                format!(
                    "command `{}` printed no number: `{}`",
                    self.shown,
                    excerpt(stdout.trim())
                ),
                "the command must print the power in watts, e.g. `12.5`, `12.5 W` or `W=12.5`",
            )
        })?;
        Ok((watts, output.mid_ns))
    }

    /// Runs the command, killed (with anything it started) if it outlives the timeout.
    fn run(&self) -> Result<Finished, PowerError> {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]);
        child::run(&mut cmd, self.timeout).map_err(|e| match e {
            RunError::Spawn(e) => self.spawn_error(e),
            RunError::TimedOut => PowerError::unavailable(
                format!(
                    "command `{}` did not finish within {:.3} s",
                    self.shown,
                    self.timeout.as_secs_f64()
                ),
                "raise timeout_s or make the command faster",
            ),
            RunError::Io(e) => {
                PowerError::unavailable(format!("command `{}`: {e}", self.shown), "")
            }
        })
    }

    fn spawn_error(&self, e: io::Error) -> PowerError {
        let program = &self.argv[0];
        match e.kind() {
            io::ErrorKind::NotFound => PowerError::unavailable(
                format!("command `{program}` not found"),
                "install it, or give its full path",
            ),
            io::ErrorKind::PermissionDenied => PowerError::unavailable(
                format!("command `{program}` cannot be run: {e}"),
                "make it executable (chmod +x) or give the interpreter first",
            ),
            _ => PowerError::unavailable(format!("command `{program}` cannot be run: {e}"), ""),
        }
    }
}

/// The first number that stands on its own: `12.5 W`, `W=12.5`, `-3e2`; the `1` of `power1`
/// is part of a word and skipped.
fn first_number(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            || (matches!(bytes[i], b'-' | b'+' | b'.')
                && bytes
                    .get(i + 1)
                    .is_some_and(|b| b.is_ascii_digit() || *b == b'.'));
        let in_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && !in_word {
            let end = number_end(bytes, i);
            if let Ok(v) = text[i..end].parse::<f64>() {
                return Some(v);
            }
            i = end.max(i + 1);
            continue;
        }
        // Skip the rest of a word so digits inside it are never taken.
        if bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    None
}

fn number_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    if matches!(bytes[i], b'-' | b'+') {
        i += 1;
    }
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        i += 1;
    }
    // An exponent only when digits follow it (`12e3`, not the `e` of `12 eggs`).
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < bytes.len() && matches!(bytes[j], b'-' | b'+') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

impl Source for Cmd {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        // The command measured somewhere between its start and its exit, which can be tens of
        // ms apart on a busy machine: the midpoint is the best stamp.
        let (value, mono_ns) = self.watts()?;
        out.push(LocalReading {
            mono_ns,
            channel: 0,
            value,
        });
        Ok(())
    }

    fn stats(&self) -> SourceStats {
        SourceStats::default()
    }
}

#[cfg(test)]
mod tests {
    use super::first_number;

    #[test]
    fn takes_the_first_standalone_number() {
        assert_eq!(first_number("12.5"), Some(12.5));
        assert_eq!(first_number("12.5 W\n"), Some(12.5));
        assert_eq!(first_number("W=12.5"), Some(12.5));
        assert_eq!(first_number("power1: 7"), Some(7.0));
        assert_eq!(first_number("-3e2 mW"), Some(-300.0));
        assert_eq!(first_number("12 eggs"), Some(12.0));
        assert_eq!(first_number(".5W"), Some(0.5));
        assert_eq!(first_number("ok"), None);
        assert_eq!(first_number("a1b2"), None);
        assert_eq!(first_number(""), None);
    }
}
