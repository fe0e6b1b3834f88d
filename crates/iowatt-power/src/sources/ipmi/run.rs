//! Runs ipmitool with the BMC's connection options, a deadline and the password in its
//! environment (never on its command line, which `ps` shows).

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use iowatt_metrics::now_ns;

pub struct Ipmitool {
    pub program: PathBuf,
    /// `-I lanplus -H host -p port -U user -E` or `-f FILE`; `-I open` in-band.
    pub login: Vec<OsString>,
    /// Given to the child as `IPMI_PASSWORD` (read with `-E`).
    pub password: Option<String>,
    pub timeout: Duration,
}

/// A run that ended by itself, successfully or not.
pub struct Finished {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
    /// CLOCK_MONOTONIC halfway between the start and the end of the run: the reading's time.
    pub mid_ns: i64,
}

pub enum RunError {
    /// Killed at the deadline.
    TimedOut,
    /// ipmitool could not be started.
    Spawn(io::Error),
}

impl Ipmitool {
    pub fn run(&self, args: &[OsString]) -> Result<Finished, RunError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.login)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(password) = &self.password {
            cmd.env("IPMI_PASSWORD", password);
        }
        let start = Instant::now();
        let start_ns = now_ns() as i64;
        let mut child = cmd.spawn().map_err(RunError::Spawn)?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let status = wait(&mut child, start + self.timeout);
        let end_ns = now_ns() as i64;
        let (stdout, stderr) = (stdout.join(), stderr.join());
        let status = status.ok_or(RunError::TimedOut)?;
        Ok(Finished {
            stdout: String::from_utf8_lossy(&stdout.unwrap_or_default()).into_owned(),
            stderr: String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned(),
            status,
            mid_ns: start_ns + (end_ns - start_ns) / 2,
        })
    }
}

impl Finished {
    /// ipmitool's own error: its last non-empty line on stderr (its messages end with the
    /// cause), else the exit status.
    pub fn error_line(&self) -> String {
        self.stderr
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map_or_else(
                || format!("ipmitool exited with {}", self.status),
                str::to_string,
            )
    }
}

/// Reads a pipe to its end on a thread, so neither pipe can fill and block ipmitool.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        buf
    })
}

/// The exit status, or `None` when the deadline passed first (the child is then killed and
/// reaped, which also closes its pipes so the readers end).
fn wait(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(1)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
