//! `aiowrite` and `aiowait` with real asynchronous writes: each thread instance has its own
//! io_uring (made on its first `aiowrite`). `aiowrite` submits a write at a random offset and
//! is timed up to the submission, as FileBench times `aio_write`; `aiowait` waits for half the
//! writes in flight, or one, whichever is more — FileBench's documented `aiowait` (its Linux
//! build polls once without waiting, so writes pile up without bound; iowatt waits).

use io_uring::{opcode, types, IoUring};
use iowatt_metrics::now_ns;

use super::{Interp, Step};
use crate::error::is_fatal;
use crate::worker::new_ring;

/// Writes one thread keeps in flight at most: `aiowrite` waits for one to finish beyond this.
const RING_ENTRIES: u32 = 1024;

/// A thread's ring and how many of its writes are in flight.
pub(super) struct Aio {
    ring: IoUring,
    in_flight: u32,
}

impl Interp<'_> {
    pub(super) fn aio_write(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.ensure_open(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let f = &self.flowops[i];
        let iosize = self.iosize(f).min(self.buf_len as u64);
        let span = self.span(f, slot);
        if span < iosize {
            return Step::Broken(format!(
                "the file ({span} bytes) is smaller than iosize {iosize}"
            ));
        }
        let off = self.rng.below(span / iosize) * iosize;
        self.fill_for(slot, iosize as usize);
        if self.aio.is_none() {
            match new_ring(RING_ENTRIES) {
                Ok(ring) => self.aio = Some(Aio { ring, in_flight: 0 }),
                Err(e) => return Step::Broken(e.to_string()),
            }
        }
        if self
            .aio
            .as_ref()
            .is_some_and(|a| a.in_flight >= RING_ENTRIES)
        {
            self.reap(1);
        }
        let ptr = self.buf.as_mut_ptr();
        let aio = self.aio.as_mut().expect("made above");
        let sqe = opcode::Write::new(types::Fd(fd), ptr, iosize as u32)
            .offset(off)
            .build()
            .user_data(i as u64);
        let t0 = now_ns();
        // SAFETY: the buffer lives as long as the interpreter, which reaps every write in
        // flight before it ends (`drain`); the kernel only reads it.
        let pushed = unsafe { aio.ring.submission().push(&sqe) };
        let res = pushed.map_err(|_| libc::EBUSY).and_then(|()| {
            aio.ring
                .submit()
                .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
        });
        let t1 = now_ns();
        if let Err(errno) = res {
            return Step::Failed(errno);
        }
        aio.in_flight += 1;
        self.record(i, t0, t1, iosize);
        Step::Ok
    }

    pub(super) fn aio_wait(&mut self, i: usize) -> Step {
        // reap() takes no more than are in flight: none when nothing was written.
        let want = self.aio.as_ref().map_or(0, |a| (a.in_flight / 2).max(1));
        let t0 = now_ns();
        let failed = self.reap(want);
        let t1 = now_ns();
        self.record(i, t0, t1, 0);
        match failed {
            Some((flowop, errno)) if is_fatal(errno) => {
                let f = &self.flowops[flowop];
                Step::Broken(format!(
                    "{} `{}` failed: {}",
                    f.kind.as_str(),
                    f.name,
                    std::io::Error::from_raw_os_error(errno)
                ))
            }
            _ => Step::Ok,
        }
    }

    /// Waits for `want` writes to finish and takes every finished one; failed writes count
    /// as errors of their `aiowrite`. Returns the last failure (flowop, errno).
    pub(super) fn reap(&mut self, want: u32) -> Option<(usize, i32)> {
        let aio = self.aio.as_mut()?;
        let mut failed = None;
        // Fixed before reaping: every completion taken lowers `in_flight`.
        let target = want.min(aio.in_flight);
        let mut done = 0;
        while done < target {
            if let Err(e) = aio.ring.submit_and_wait((target - done) as usize) {
                if e.raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
            for cqe in aio.ring.completion() {
                done += 1;
                aio.in_flight -= 1;
                if cqe.result() < 0 {
                    failed = Some((cqe.user_data() as usize, -cqe.result()));
                }
            }
        }
        if let Some((flowop, errno)) = failed {
            let now = now_ns();
            self.recorder.failed(flowop, now, now, errno);
        }
        failed
    }

    /// Every write still in flight, waited for: the kernel reads their buffer.
    pub(super) fn drain(&mut self) {
        let left = self.aio.as_ref().map_or(0, |a| a.in_flight);
        if left > 0 {
            self.reap(left);
        }
    }
}
