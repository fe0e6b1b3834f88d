//! Running a helper program (ipmitool, a user's power command) with a deadline: its output
//! read as it comes, so neither pipe can fill and block it, and at the deadline the program
//! and anything it started killed — it leads its own process group.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use iowatt_metrics::now_ns;

/// Output past this is read (so the program never blocks on a full pipe) but not kept.
const MAX_OUTPUT: usize = 64 * 1024;

/// A run that ended by itself, successfully or not.
pub struct Finished {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
    /// CLOCK_MONOTONIC halfway between the start and the exit: when the program measured.
    pub mid_ns: i64,
}

pub enum RunError {
    /// The program could not be started.
    Spawn(io::Error),
    /// Killed at the deadline.
    TimedOut,
    /// Reading its output failed (it was killed).
    Io(io::Error),
}

/// Runs `cmd` with stdin closed and its output captured.
pub fn run(cmd: &mut Command, timeout: Duration) -> Result<Finished, RunError> {
    let start_ns = now_ns() as i64;
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(RunError::Spawn)?;
    let (stdout, stderr, status) = match collect(&mut child, deadline) {
        Ok(Some(done)) => done,
        Ok(None) => {
            kill(&mut child);
            return Err(RunError::TimedOut);
        }
        Err(e) => {
            kill(&mut child);
            return Err(RunError::Io(e));
        }
    };
    let end_ns = now_ns() as i64;
    Ok(Finished {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        status,
        mid_ns: start_ns + (end_ns - start_ns) / 2,
    })
}

type Output = (Vec<u8>, Vec<u8>, ExitStatus);

/// Reads stdout and stderr together with poll(2) until both close, then reaps the child;
/// `None` when the deadline passes first.
fn collect(child: &mut Child, deadline: Instant) -> io::Result<Option<Output>> {
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

/// Kills the program and anything it started, then reaps it.
fn kill(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling a process group we created; failure (already gone) is harmless.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}
