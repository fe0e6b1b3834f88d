//! The per-thread I/O loops. Each thread cycles through its flowops; psync keeps one operation
//! in flight, io_uring keeps `iodepth`. With a rate, operation i is due at start + i·period and
//! its latency counts from that due time (open loop), so a stalled device shows up as latency
//! instead of as fewer, faster samples — to the last operation: at the deadline the thread
//! stops issuing, counts the operations due that it never issued, and waits for those in
//! flight until the drain ends. A psync thread cannot abandon a system call: one blocked past
//! the drain ends the thread when it returns, and counts as outstanding at the drain's end.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::time::Duration;

use io_uring::{opcode, types, IoUring};
use iowatt_metrics::now_ns;

use crate::buffers::AlignedBuf;
use crate::error::{is_fatal, WorkloadError};
use crate::offsets::Offsets;
use crate::progress::Progress;
use crate::recorder::{Missed, Recorder};
use iowatt_metrics::Rng;

/// One flowop as a thread executes it: its own fd, offsets and buffer size.
pub struct BoundFlowop {
    pub write: bool,
    pub file: File,
    pub iosize: usize,
    pub offsets: Offsets,
    /// Buffered sequential reads drop the file's cached pages each time they wrap to offset 0,
    /// as fio does when a time-based job starts a new pass: otherwise every pass after the first
    /// would measure the page cache instead of the device.
    pub invalidate_on_wrap: bool,
}

impl BoundFlowop {
    #[inline]
    fn next_offset(&mut self) -> u64 {
        let off = self.offsets.next();
        if off == 0 && self.invalidate_on_wrap {
            // SAFETY: a valid fd; advice only affects caching.
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        off
    }
}

/// When each operation is due.
pub struct Schedule {
    next: u64,
    period: Option<u64>,
}

impl Schedule {
    pub fn new(start: u64, period: Option<u64>) -> Self {
        Self {
            next: start,
            period,
        }
    }

    /// The due time of the next operation, or `None` if it is not due yet at `now`.
    #[inline]
    fn take(&mut self, now: u64) -> Option<u64> {
        match self.period {
            None => Some(now),
            Some(p) if self.next <= now => {
                let due = self.next;
                self.next += p;
                Some(due)
            }
            Some(_) => None,
        }
    }

    fn wait_hint(&self, now: u64) -> u64 {
        self.next.saturating_sub(now)
    }

    /// The operations due before `cutoff` and not taken.
    fn backlog(&self, cutoff: u64) -> Option<Missed> {
        let p = self.period?;
        (self.next < cutoff).then(|| Missed {
            first: self.next,
            step: p,
            n: (cutoff - self.next - 1) / p + 1,
        })
    }
}

pub struct Worker {
    pub flowops: Vec<BoundFlowop>,
    pub recorder: Recorder,
    pub schedule: Schedule,
    pub progress: Progress,
    pub measure_start: u64,
    pub stop_at: u64,
    /// How long operations in flight at the deadline are waited for (with a rate).
    pub drain_ns: u64,
    /// Thread CPU time (user, system) when the measured phase began.
    pub cpu_start: Option<(u64, u64)>,
    /// Set when an error made the thread stop: the errno and what it was doing.
    pub fatal: Option<String>,
}

impl Worker {
    #[inline]
    fn should_stop(&mut self, now: u64) -> bool {
        if self.cpu_start.is_none() && now >= self.measure_start {
            self.cpu_start = Some(thread_cpu_ns());
        }
        now >= self.stop_at || self.progress.is_stopping()
    }

    /// Where this thread stopped issuing (the deadline, or when the run was stopped); with a
    /// rate, the operations due before then that it never issued are counted.
    fn stopped_issuing(&mut self, now: u64) -> u64 {
        let cutoff = now.min(self.stop_at).min(self.progress.stopped_at());
        if let Some(missed) = self.schedule.backlog(cutoff) {
            self.recorder.not_issued(missed, cutoff);
        }
        cutoff
    }

    fn fail(&mut self, flowop: usize, due: u64, now: u64, errno: i32) {
        self.recorder.failed(flowop, due, now, errno);
        if is_fatal(errno) {
            let op = if self.flowops[flowop].write {
                "write"
            } else {
                "read"
            };
            self.fatal = Some(format!(
                "{op} failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ));
            self.progress.abort();
        }
    }

    /// Sleeps until the schedule's next due time, spinning the last stretch for precision.
    fn pace(&self, now: u64) {
        let wait = self.schedule.wait_hint(now).min(50_000_000);
        if wait > 200_000 {
            std::thread::sleep(Duration::from_nanos(wait - 100_000));
        } else {
            std::hint::spin_loop();
        }
    }

    pub fn run_psync(&mut self, rng: &mut Rng) {
        let mut buf = AlignedBuf::new(self.max_iosize(), rng);
        let mut i = 0;
        let stopped = loop {
            let now = now_ns();
            if self.should_stop(now) {
                break now;
            }
            let Some(due) = self.schedule.take(now) else {
                self.pace(now);
                continue;
            };
            let f = &mut self.flowops[i];
            let off = f.next_offset();
            let fd = f.file.as_raw_fd();
            let ptr = buf.as_mut_ptr();
            // SAFETY: buf holds at least iosize bytes and outlives the call.
            let res = unsafe {
                if f.write {
                    libc::pwrite(fd, ptr.cast(), f.iosize, off as i64)
                } else {
                    libc::pread(fd, ptr.cast(), f.iosize, off as i64)
                }
            };
            let done = now_ns();
            if res < 0 {
                let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                self.fail(i, due, done, errno);
            } else {
                self.recorder.ok(i, due, done, res as u64);
            }
            i = (i + 1) % self.flowops.len();
        };
        self.stopped_issuing(stopped);
    }

    pub fn run_uring(&mut self, depth: u32, rng: &mut Rng) -> Result<(), WorkloadError> {
        let mut ring = new_ring(depth.next_power_of_two())?;
        let size = self.max_iosize();
        let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(size, rng)).collect();
        // Per slot: (flowop, due time) of the operation in it; a free slot is on `free`.
        let mut slots: Vec<Option<(usize, u64)>> = vec![None; depth as usize];
        let mut free: Vec<usize> = (0..depth as usize).rev().collect();
        let mut next_flowop = 0;
        let mut inflight = 0usize;
        let mut completed: Vec<(u64, i32)> = Vec::with_capacity(depth as usize);
        // Open loop: when the operations still in flight stop being waited for.
        let mut drain_end = None;
        let mut abandoned = false;
        let outcome = loop {
            let now = now_ns();
            let stopping = self.should_stop(now);
            if stopping && drain_end.is_none() && self.recorder.open_loop() {
                let cutoff = self.stopped_issuing(now);
                drain_end = Some(cutoff.saturating_add(self.drain_ns));
            }
            if stopping && inflight == 0 {
                break Ok(());
            }
            if let Some(end) = drain_end.filter(|&end| now >= end) {
                for &(_, due) in slots.iter().flatten() {
                    self.recorder.outstanding(due, end);
                }
                abandoned = true;
                break Ok(());
            }
            let mut submit_error = None;
            if !stopping {
                while let Some(&slot) = free.last() {
                    let Some(due) = self.schedule.take(now) else {
                        break;
                    };
                    free.pop();
                    let f = &mut self.flowops[next_flowop];
                    let off = f.next_offset();
                    let fd = types::Fd(f.file.as_raw_fd());
                    let ptr = bufs[slot].as_mut_ptr();
                    let len = f.iosize as u32;
                    let sqe = if f.write {
                        opcode::Write::new(fd, ptr, len).offset(off).build()
                    } else {
                        opcode::Read::new(fd, ptr, len).offset(off).build()
                    };
                    slots[slot] = Some((next_flowop, due));
                    // SAFETY: the buffer and fd stay alive until the completion is reaped
                    // (we drain every in-flight operation before returning).
                    unsafe {
                        ring.submission()
                            .push(&sqe.user_data(slot as u64))
                            .expect("ring has a free entry per free slot");
                    }
                    inflight += 1;
                    // One submission per I/O, as fio's default iodepth_batch_submit=1: a batch
                    // is plugged and dispatched together, which on virtio measured ~15% fewer
                    // IOPS at QD32 than keeping the device fed one request at a time.
                    next_flowop = (next_flowop + 1) % self.flowops.len();
                    if let Err(e) = ring.submit() {
                        submit_error = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = submit_error {
                break Err(WorkloadError::Uring(e));
            }
            if inflight == 0 {
                // Rate-limited and nothing due yet.
                self.pace(now);
                continue;
            }
            // Wake at least every 100 ms so cancellation is prompt even on a stalled device.
            let wait = match drain_end {
                Some(end) => end.saturating_sub(now).clamp(1, 100_000_000),
                None if stopping || self.schedule.period.is_none() => 100_000_000,
                None => self.schedule.wait_hint(now).clamp(1, 100_000_000),
            };
            let ts = types::Timespec::from(Duration::from_nanos(wait));
            let args = types::SubmitArgs::new().timespec(&ts);
            match ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                Err(e) => break Err(WorkloadError::Uring(e)),
            }
            let done = now_ns();
            completed.extend(ring.completion().map(|c| (c.user_data(), c.result())));
            for (slot, res) in completed.drain(..) {
                let slot = slot as usize;
                let (flowop, due) = slots[slot].take().expect("a completion is of a busy slot");
                free.push(slot);
                inflight -= 1;
                if res < 0 {
                    self.fail(flowop, due, done, -res);
                } else {
                    self.recorder.ok(flowop, due, done, res as u64);
                }
            }
        };
        if (outcome.is_err() || abandoned) && inflight > 0 {
            // The kernel may still write into buffers of I/O in flight: leaking them is the only
            // safe way out of a ring that stopped answering.
            std::mem::forget(bufs);
        }
        outcome
    }

    fn max_iosize(&self) -> usize {
        self.flowops.iter().map(|f| f.iosize).max().unwrap_or(4096)
    }
}

/// (user, system) CPU ns of the calling thread.
pub fn thread_cpu_ns() -> (u64, u64) {
    // SAFETY: rusage is plain data; RUSAGE_THREAD reports on the calling thread.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// A ring set up as fio sets up its own: completions are reaped only by this thread, so the
/// kernel need not interrupt it (COOP_TASKRUN) and can defer completion work until we ask for
/// events (SINGLE_ISSUER + DEFER_TASKRUN, Linux 6.1). Older kernels get a plain ring.
pub(crate) fn new_ring(entries: u32) -> Result<IoUring, WorkloadError> {
    IoUring::builder()
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
        .map_err(WorkloadError::Uring)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_is_every_due_time_before_the_cutoff_not_taken() {
        let mut s = Schedule::new(100, Some(10));
        assert_eq!(s.take(95), None);
        assert_eq!(s.take(125), Some(100));
        // Due at 110, 120 … 150 and not taken by 151.
        let missed = |n| {
            Some(Missed {
                first: 110,
                step: 10,
                n,
            })
        };
        assert_eq!(s.backlog(151), missed(5));
        assert_eq!(s.backlog(150), missed(4));
        assert_eq!(s.backlog(110), None);
        assert_eq!(Schedule::new(0, None).backlog(1_000), None);
    }
}
