//! Sleeping until an instant on CLOCK_MONOTONIC with nanosecond resolution: a timerfd armed
//! with an absolute expiry, read through tokio's reactor. tokio's own timer wheel rounds to
//! milliseconds, which at an 8× speed-up is most of a CLF second's spread.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

pub(crate) struct Timer {
    fd: AsyncFd<OwnedFd>,
}

impl Timer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned descriptor is owned below or the error returned.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd is moved in and owned by the AsyncFd for its whole life, so its
        // descriptor stays open and the same.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
        Ok(Self {
            fd: fd.map_err(|e| e.into_parts().1)?,
        })
    }

    /// Returns at or after `deadline_ns` (CLOCK_MONOTONIC); at once if it has passed (an
    /// absolute expiry in the past fires immediately).
    pub async fn sleep_until(&self, deadline_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        let fd = self.fd.get_ref().as_raw_fd();
        // SAFETY: `fd` is our timerfd and `spec` a valid itimerspec; the old value is not asked.
        let armed = unsafe {
            libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if armed < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            // SAFETY: reads at most 8 bytes into a buffer of 8.
            let n = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
            guard.clear_ready();
        }
    }
}
