//! Flowops that move data: reads and writes (random within the working set, or sequential),
//! whole-file reads and writes, and appends.

use iowatt_metrics::now_ns;

use super::{last_errno, Interp, Step, SLOTS};
use crate::spec::{Flowop, OpKind};

impl Interp<'_> {
    /// The bytes random offsets are drawn from: the working set, or the entry's size.
    pub(super) fn span(&self, f: &Flowop, slot: usize) -> u64 {
        if f.workingset > 0 {
            return f.workingset;
        }
        match self.slots[slot].entry {
            Some((set, e)) => self.shared.filesets[set].sizes[e as usize],
            None => 0,
        }
    }

    /// Before a write of `n` bytes to the file in `slot`: the fileset's data of a chosen
    /// entropy, if it has one (outside the timed call, as the FSL fork fills its buffer).
    pub(super) fn fill_for(&mut self, slot: usize, n: usize) {
        let Some((set, _)) = self.slots[slot].entry else {
            return;
        };
        if let Some(data) = &self.shared.filesets[set].data {
            let n = n.min(self.buf_len);
            data.fill(&mut self.buf.as_mut_slice()[..n], &mut self.rng);
        }
    }

    pub(super) fn iosize(&mut self, f: &Flowop) -> u64 {
        match &f.iosize_dist {
            Some(d) => d.sample(&mut self.rng).clamp(1, self.buf_len as u64),
            None => f.iosize,
        }
    }

    /// The fd of the flowop's file, opened if need be, at the position FileBench's calls would
    /// have left it.
    fn positioned(&mut self, i: usize) -> Result<(usize, i32), Step> {
        let (slot, fd) = self.ensure_open(i)?;
        if let Some(at) = self.slots[slot].seek.take() {
            // SAFETY: a valid fd.
            unsafe { libc::lseek(fd, at, libc::SEEK_SET) };
        }
        Ok((slot, fd))
    }

    pub(super) fn read_write(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.positioned(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let f = &self.flowops[i];
        let iosize = self.iosize(f).min(self.buf_len as u64) as usize;
        let write = f.kind != OpKind::Read;
        if write {
            self.fill_for(slot, iosize);
        }
        let f = &self.flowops[i];
        let ptr = self.buf.as_mut_ptr();
        let (t0, res) = if f.random {
            let span = self.span(f, slot);
            if span < iosize as u64 {
                return Step::Broken(format!(
                    "the file ({span} bytes) is smaller than iosize {iosize}"
                ));
            }
            let off = (self.rng.below(span / iosize as u64) * iosize as u64) as i64;
            let t0 = now_ns();
            // SAFETY: buf holds at least iosize bytes; fd is open.
            let res = unsafe {
                if write {
                    libc::pwrite(fd, ptr.cast(), iosize, off)
                } else {
                    libc::pread(fd, ptr.cast(), iosize, off)
                }
            };
            (t0, res)
        } else {
            let t0 = now_ns();
            // SAFETY: as above; sequential I/O moves the descriptor's own position.
            let res = unsafe {
                if write {
                    libc::write(fd, ptr.cast(), iosize)
                } else {
                    libc::read(fd, ptr.cast(), iosize)
                }
            };
            (t0, res)
        };
        let t1 = now_ns();
        if res < 0 {
            return Step::Failed(last_errno());
        }
        if res == 0 && !write {
            // End of file: sequential reads start over, as FileBench's do.
            // SAFETY: a valid fd.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        }
        self.record(i, t0, t1, res as u64);
        Step::Ok
    }

    pub(super) fn read_whole(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.ensure_open(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let f = &self.flowops[i];
        let chunk = match f.iosize {
            0 => self.span(f, slot),
            n => n,
        }
        .clamp(1, self.buf_len as u64) as usize;
        let ptr = self.buf.as_mut_ptr();
        let mut bytes = 0u64;
        let t0 = now_ns();
        // pread, stopping at a short read (the end of a regular file): one call for a file
        // smaller than the chunk, where FileBench's lseek, read and read-to-EOF make three.
        loop {
            // SAFETY: a valid fd; buf holds `chunk` bytes.
            let n = unsafe { libc::pread(fd, ptr.cast(), chunk, bytes as i64) };
            if n < 0 {
                return Step::Failed(last_errno());
            }
            bytes += n as u64;
            if (n as usize) < chunk {
                break;
            }
        }
        self.slots[slot].seek = Some(bytes as i64);
        self.record(i, t0, now_ns(), bytes);
        Step::Ok
    }

    pub(super) fn write_whole(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.positioned(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let f = &self.flowops[i];
        let size = if f.srcfd > 0 {
            match self.slots[(f.srcfd as usize).min(SLOTS)].entry {
                Some((set, e)) => self.shared.filesets[set].sizes[e as usize],
                None => return Step::Broken(format!("srcfd {} holds no file", f.srcfd)),
            }
        } else {
            self.span(f, slot)
        };
        let chunk = match f.iosize {
            0 => size,
            n => n,
        }
        .clamp(1, self.buf_len as u64);
        self.fill_for(slot, chunk as usize);
        let ptr = self.buf.as_mut_ptr();
        let mut written = 0u64;
        let t0 = now_ns();
        while written < size {
            let n = (size - written).min(chunk) as usize;
            // SAFETY: a valid fd; buf holds at least `chunk` bytes.
            let res = unsafe { libc::write(fd, ptr.cast(), n) };
            if res < 0 {
                return Step::Failed(last_errno());
            }
            written += res as u64;
        }
        self.record(i, t0, now_ns(), written);
        Step::Ok
    }

    pub(super) fn append(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let size = if f.kind == OpKind::AppendFileRand {
            // FileBench draws uniformly in [0, iosize): the mean append is iosize/2, and a
            // zero-byte draw is an operation that writes nothing.
            let n = self.iosize(f);
            let size = self.rng.below(n.max(1));
            if size == 0 {
                let t = now_ns();
                self.record(i, t, t, 0);
                return Step::Ok;
            }
            size
        } else {
            self.iosize(f)
        };
        let (slot, fd) = match self.ensure_open(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let n = size.min(self.buf_len as u64) as usize;
        self.fill_for(slot, n);
        let ptr = self.buf.as_mut_ptr();
        let t0 = now_ns();
        let iov = libc::iovec {
            iov_base: ptr.cast(),
            iov_len: n,
        };
        // One call where FileBench makes two (lseek to the end, write); offset -1 leaves the
        // position at the new end, as theirs does.
        // SAFETY: a valid fd; buf holds n bytes.
        let res = unsafe { libc::pwritev2(fd, &iov, 1, -1, libc::RWF_APPEND) };
        self.slots[slot].seek = None;
        let t1 = now_ns();
        if res < 0 {
            return Step::Failed(last_errno());
        }
        self.record(i, t0, t1, res as u64);
        Step::Ok
    }
}
