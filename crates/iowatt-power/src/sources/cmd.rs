//! A command run at every poll that prints the power in watts (a vendor tool, a script reading
//! a smart plug). The first number in its output is the reading: `12.5`, `12.5 W`, `W=12.5`.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use iowatt_metrics::now_ns;

use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

/// Output past this is read (so the command never blocks on a full pipe) but not kept.
const MAX_OUTPUT: usize = 64 * 1024;

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
    fn watts(&self) -> Result<f64, PowerError> {
        let output = self.run()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let why = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(PowerError::unavailable(
                format!("command `{}` failed ({}): {why}", self.shown, output.status),
                "run the command by hand to see why it fails",
            ));
        }
        first_number(&stdout).ok_or_else(|| {
            PowerError::invalid(
                format!(
                    "command `{}` printed no number: `{}`",
                    self.shown,
                    excerpt(stdout.trim())
                ),
                "the command must print the power in watts, e.g. `12.5`, `12.5 W` or `W=12.5`",
            )
        })
    }

    /// Runs the command with its output captured, killed (with its process group) if it
    /// outlives the timeout.
    fn run(&self) -> Result<Output, PowerError> {
        let mut child = Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| self.spawn_error(e))?;
        let deadline = Instant::now() + self.timeout;
        let finished = collect(&mut child, deadline);
        let (stdout, stderr, status) = match finished {
            Ok(Some(done)) => done,
            Ok(None) => {
                kill(&mut child);
                return Err(PowerError::unavailable(
                    format!(
                        "command `{}` did not finish within {:.3} s",
                        self.shown,
                        self.timeout.as_secs_f64()
                    ),
                    "raise timeout_s or make the command faster",
                ));
            }
            Err(e) => {
                kill(&mut child);
                return Err(PowerError::unavailable(
                    format!("command `{}`: {e}", self.shown),
                    "",
                ));
            }
        };
        Ok(Output {
            stdout,
            stderr,
            status,
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

struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: ExitStatus,
}

type Finished = (Vec<u8>, Vec<u8>, ExitStatus);

/// Reads stdout and stderr together with poll(2) until both close, then reaps the child;
/// `None` when the deadline passes first.
fn collect(child: &mut Child, deadline: Instant) -> io::Result<Option<Finished>> {
    let mut pipes: [Option<File>; 2] = [
        child.stdout.take().map(|p| File::from(OwnedFd::from(p))),
        child.stderr.take().map(|p| File::from(OwnedFd::from(p))),
    ];
    let mut bufs = [Vec::new(), Vec::new()];
    let mut chunk = [0u8; 4096];
    while pipes.iter().any(Option::is_some) {
        // A negative fd is ignored by poll(2): a closed pipe keeps its slot.
        let mut fds = pipes.each_ref().map(|p| libc::pollfd {
            fd: p.as_ref().map_or(-1, |f| f.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        });
        let Some(left) = remaining_ms(deadline) else {
            return Ok(None);
        };
        // SAFETY: `fds` is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, left) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ((pipe, buf), pfd) in pipes.iter_mut().zip(bufs.iter_mut()).zip(&fds) {
            let Some(file) = pipe else { continue };
            if pfd.revents == 0 {
                continue;
            }
            match file.read(&mut chunk) {
                Ok(0) => *pipe = None,
                Ok(k) => {
                    let keep = k.min(MAX_OUTPUT.saturating_sub(buf.len()));
                    buf.extend_from_slice(&chunk[..keep]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    // Both pipes closed; the process is exiting or has exited.
    loop {
        if let Some(status) = child.try_wait()? {
            let [out, err] = bufs;
            return Ok(Some((out, err, status)));
        }
        if remaining_ms(deadline).is_none() {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn remaining_ms(deadline: Instant) -> Option<i32> {
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(left.as_millis().clamp(1, i32::MAX as u128) as i32)
}

/// Kills the command and anything it started (it leads its own process group), then reaps it.
fn kill(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling a process group we created; failure (already gone) is harmless.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
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
        let started = now_ns() as i64;
        let value = self.watts()?;
        let ended = now_ns() as i64;
        out.push(LocalReading {
            mono_ns: started + (ended - started) / 2,
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
