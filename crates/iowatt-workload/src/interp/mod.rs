//! The FileMacro engine: each thread instance interprets its flowops in a loop, as FileBench's
//! `flowop_start` does — file picking, per-thread descriptor slots, whole-file reads and writes,
//! appends, syncs, directory operations, CPU work, waits, rate limits and semaphores. Every
//! flowop is timed around its system calls and recorded under its own name; only I/O flowops
//! (FileBench's IO and AIO types) count toward the run's ops/s and interval series.
//!
//! Differences from FileBench, on purpose: the implicit open a read or write does on an empty
//! slot is not counted as an extra operation of that flowop; `aiowait` waits for half the
//! writes in flight (FileBench's Linux build only polls); I/O buffers are sized to the largest
//! I/O rather than to `memsize`.

//! The flowops are grouped by family: `files` (picking, opening, closing, deleting), `data`
//! (reads, writes, appends), `dirs`, `sync` (fsync, semaphores, gates) and `limits` (rate
//! limits, delays, CPU work, finish conditions); `shared` is what all instances share.

use std::sync::atomic::Ordering::Relaxed;

use iowatt_metrics::now_ns;

use crate::buffers::AlignedBuf;
use crate::error::is_fatal;
use crate::progress::Progress;
use crate::recorder::Recorder;
use crate::run::{Frame, Seat};
use crate::spec::{Flowop, OpKind, Quit};
use iowatt_metrics::Rng;

mod aio;
mod data;
mod dirs;
mod files;
mod limits;
mod shared;
mod sync;

pub use shared::Shared;
use shared::Waiter;

/// FileBench's THREADFLOW_MAXFD: descriptor slots per thread (slot 0 is the default).
const SLOTS: usize = 128;
const MB: u64 = 1 << 20;

#[derive(Clone, Copy, Default)]
struct Slot {
    fd: Option<i32>,
    /// (fileset, entry) of the file the slot last held; kept after close, as FileBench does.
    entry: Option<(usize, u32)>,
    /// Where FileBench's lseek-and-read would have left the file position after a whole-file
    /// read, which reads with pread instead; set before the next I/O that uses the position.
    seek: Option<i64>,
}

/// State a limit flowop keeps between calls.
#[derive(Default, Clone, Copy)]
struct Bucket {
    last: Option<u64>,
    level: i64,
}

enum Step {
    Ok,
    /// No file (or directory) of the kind the flowop needs: the thread is done.
    NoFile(String),
    /// finishoncount / finishonbytes reached.
    Finished,
    /// The system call failed with this errno.
    Failed(i32),
    /// The workload asks for something impossible (closing a closed slot...): the run stops.
    Broken(String),
}

pub struct Interp<'s> {
    shared: &'s Shared,
    flowops: &'s [Flowop],
    /// Workload-wide id of this thread's first flowop.
    base: usize,
    tid: u64,
    /// Per flowop: the semaphore or gate this instance waits on (semblock, block).
    waiters: Vec<Option<Waiter>>,
    buckets: Vec<Bucket>,
    slots: Vec<Slot>,
    fd_rotor: usize,
    buf: AlignedBuf,
    buf_len: usize,
    rng: Rng,
    pub recorder: Recorder,
    progress: Progress,
    stop_at: u64,
    measure_start: u64,
    pub cpu_start: Option<(u64, u64)>,
    pub fatal: Option<String>,
    aio: Option<aio::Aio>,
}

impl<'s> Interp<'s> {
    /// The interpreter of one thread instance (its `seat` in the run), measuring from
    /// `frame.measure_start` until `frame.end`.
    pub(crate) fn new(
        shared: &'s Shared,
        seat: Seat<'s>,
        progress: Progress,
        frame: &Frame,
    ) -> Self {
        let Seat {
            worker,
            base,
            instance,
            thread,
            mut rng,
            recorder,
        } = seat;
        let biggest = thread
            .flowops
            .iter()
            .map(|f| f.iosize)
            .max()
            .unwrap_or(0)
            .max(64 << 10) as usize;
        let buf = AlignedBuf::new(biggest, &mut rng);
        Interp {
            shared,
            flowops: &thread.flowops,
            base,
            tid: worker as u64 + 1,
            waiters: (0..thread.flowops.len())
                .map(|i| shared.own.get(&(base + i, instance)).cloned())
                .collect(),
            buckets: vec![Bucket::default(); thread.flowops.len()],
            slots: vec![Slot::default(); SLOTS + 1],
            fd_rotor: 0,
            buf,
            buf_len: biggest,
            rng,
            recorder,
            progress,
            stop_at: frame.end,
            measure_start: frame.measure_start,
            cpu_start: None,
            fatal: None,
            aio: None,
        }
    }

    fn stopping(&self) -> bool {
        now_ns() >= self.stop_at || self.progress.is_stopping()
    }

    /// Loops over the flowops until the run ends or this thread is done.
    pub fn run(&mut self) {
        let n = self.flowops.len();
        // Composite flowops being run, innermost last: (its index, where its body ends,
        // passes left, when it began).
        let mut open: Vec<(usize, usize, u32, u64)> = Vec::new();
        let mut pc = 0;
        'outer: loop {
            while let Some(top) = open.last_mut() {
                if top.1 != pc {
                    break;
                }
                if top.2 > 1 {
                    top.2 -= 1;
                    pc = top.0 + 1;
                    break;
                }
                let (c, _, _, t0) = open.pop().expect("looked at above");
                self.record(c, t0, now_ns(), 0);
            }
            if pc == n {
                pc = 0;
            }
            let f = &self.flowops[pc];
            if f.kind == OpKind::Composite {
                open.push((pc, pc + 1 + f.value as usize, f.iters.max(1), now_ns()));
                pc += 1;
                continue;
            }
            for _ in 0..f.iters.max(1) {
                if !self.step(pc) {
                    break 'outer;
                }
            }
            pc += 1;
        }
        self.drain();
        for slot in &mut self.slots {
            if let Some(fd) = slot.fd.take() {
                // SAFETY: a descriptor this thread opened and still owns.
                unsafe { libc::close(fd) };
            }
        }
    }

    /// Runs flowop `i` once; false when the thread is done (the run ended, it failed, or it
    /// has nothing more to do).
    fn step(&mut self, i: usize) -> bool {
        let now = now_ns();
        if self.cpu_start.is_none() && now >= self.measure_start {
            self.cpu_start = Some(crate::worker::thread_cpu_ns());
        }
        if now >= self.stop_at || self.progress.is_stopping() {
            return false;
        }
        match self.exec(i) {
            Step::Ok => true,
            Step::Failed(errno) => {
                self.recorder.failed(i, now, now_ns(), errno);
                if is_fatal(errno) {
                    let f = &self.flowops[i];
                    self.stop_run(format!(
                        "{} `{}` failed: {}",
                        f.kind.as_str(),
                        f.name,
                        std::io::Error::from_raw_os_error(errno)
                    ));
                    return false;
                }
                true
            }
            Step::Broken(why) => {
                self.stop_run(format!("flowop `{}`: {why}", self.flowops[i].name));
                false
            }
            // Given up waiting for a busy file because the run is over.
            Step::NoFile(_) if self.stopping() => false,
            Step::NoFile(why) => {
                self.thread_done(Some(why));
                false
            }
            Step::Finished => {
                self.thread_done(None);
                false
            }
        }
    }

    fn stop_run(&mut self, why: String) {
        self.fatal = Some(why);
        self.progress.abort();
    }

    /// The thread has nothing more to do; whether the run ends depends on `set mode quit`.
    fn thread_done(&mut self, no_file: Option<String>) {
        let done = self.shared.done.fetch_add(1, Relaxed) + 1;
        match (self.shared.quit, no_file) {
            (Quit::Timeout, Some(why)) => self.stop_run(format!(
                "{why}; the run stopped early: shorten it, give the fileset more entries, \
                 or `set mode quit alldone`"
            )),
            (Quit::Timeout | Quit::FirstDone, _) => self.progress.abort(),
            (Quit::AllDone, _) if done >= self.shared.workers => self.progress.abort(),
            (Quit::AllDone, _) => {}
        }
    }

    fn record(&mut self, i: usize, t0: u64, t1: u64, bytes: u64) {
        let kind = self.flowops[i].kind;
        if kind.is_io() {
            self.recorder.ok(i, t0, t1, bytes);
        } else {
            self.recorder.ok_other(i, t0, t1, bytes);
        }
        if self.shared.track {
            let c = &self.shared.per_flowop[self.base + i];
            c.ops.fetch_add(1, Relaxed);
            c.bytes.fetch_add(bytes, Relaxed);
            if kind.is_io() {
                self.shared.io.ops.fetch_add(1, Relaxed);
                self.shared.io.bytes.fetch_add(bytes, Relaxed);
            }
            if kind.moves_data() {
                self.shared.rw.ops.fetch_add(1, Relaxed);
                self.shared.rw.bytes.fetch_add(bytes, Relaxed);
            }
        }
    }

    fn exec(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        match f.kind {
            OpKind::AioWrite if f.random => self.aio_write(i),
            OpKind::Read | OpKind::Write | OpKind::AioWrite => self.read_write(i),
            OpKind::CreateFile | OpKind::OpenFile => {
                let slot = self.slot_of(f);
                self.open_into(i, slot, f.kind == OpKind::CreateFile, true)
            }
            OpKind::CloseFile => self.close(i),
            OpKind::DeleteFile => self.delete(i),
            OpKind::StatFile => self.stat(i),
            OpKind::ReadWholeFile => self.read_whole(i),
            OpKind::WriteWholeFile => self.write_whole(i),
            OpKind::AppendFile | OpKind::AppendFileRand => self.append(i),
            OpKind::Fsync => self.fsync(i),
            OpKind::FsyncSet => self.fsync_set(i),
            OpKind::AioWait => self.aio_wait(i),
            OpKind::MakeDir | OpKind::RemoveDir => self.leafdir(i),
            OpKind::ListDir => self.list_dir(i),
            OpKind::Hog => self.hog(i),
            OpKind::Delay => self.delay(i),
            OpKind::EventLimit => self.take_events(i, 1),
            OpKind::OpsLimit | OpKind::IopsLimit | OpKind::BwLimit => self.limit(i),
            OpKind::SemBlock | OpKind::Block => self.wait_own(i),
            OpKind::SemPost => self.sem_post(i),
            OpKind::Wakeup => self.wakeup(i),
            OpKind::FinishOnCount | OpKind::FinishOnBytes => self.finish_on(i),
            OpKind::Composite => unreachable!("run() steps into a composite's body"),
        }
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
