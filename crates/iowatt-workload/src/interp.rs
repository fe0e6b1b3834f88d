//! The FileMacro engine: each thread instance interprets its flowops in a loop, as FileBench's
//! `flowop_start` does — file picking, per-thread descriptor slots, whole-file reads and writes,
//! appends, syncs, directory operations, CPU work, waits, rate limits and semaphores. Every
//! flowop is timed around its system calls and recorded under its own name; only I/O flowops
//! (FileBench's IO and AIO types) count toward the run's ops/s and interval series.
//!
//! Differences from FileBench, on purpose: the implicit open a read or write does on an empty
//! slot is not counted as an extra operation of that flowop; `aiowrite` completes before it
//! returns (so `aiowait` has nothing left to reap); I/O buffers are sized to the largest I/O
//! rather than to `memsize`.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use iowatt_metrics::now_ns;

use crate::buffers::AlignedBuf;
use crate::error::is_fatal;
use crate::fileset::FilesetState;
use crate::progress::Progress;
use crate::recorder::Recorder;
use crate::rng::Rng;
use crate::spec::{Flowop, OpKind, Quit, ThreadSpec, Workload};
use crate::sync::{sleep_until, EventGen, Gate, Sem};

/// FileBench's THREADFLOW_MAXFD: descriptor slots per thread (slot 0 is the default).
const SLOTS: usize = 128;
const MB: u64 = 1 << 20;

/// Counts a limit or finish flowop can watch.
#[derive(Default)]
struct Counts {
    ops: AtomicU64,
    bytes: AtomicU64,
}

/// What all thread instances share.
pub struct Shared {
    pub filesets: Vec<FilesetState>,
    events: Option<EventGen>,
    /// Per semblock/block flowop name, every instance: what sempost/wakeup signal.
    sems: HashMap<String, Vec<Arc<Sem>>>,
    gates: HashMap<String, Vec<Arc<Gate>>>,
    /// Per (flowop id, thread instance): the semaphore or gate that instance waits on.
    own: HashMap<(usize, usize), Waiter>,
    /// Per workload-wide flowop id.
    per_flowop: Vec<Counts>,
    ids: HashMap<String, Vec<usize>>,
    /// FileBench's controlstats: all I/O flowops, and those that move data (reads and writes).
    io: Counts,
    rw: Counts,
    /// Keep the counts at all: only when some flowop reads them.
    track: bool,
    quit: Quit,
    done: AtomicU32,
    workers: u32,
}

impl Shared {
    pub fn new(w: &Workload, filesets: Vec<FilesetState>, start_ns: u64) -> Self {
        let mut sems: HashMap<String, Vec<Arc<Sem>>> = HashMap::new();
        let mut gates: HashMap<String, Vec<Arc<Gate>>> = HashMap::new();
        let mut own = HashMap::new();
        let mut ids: HashMap<String, Vec<usize>> = HashMap::new();
        let mut id = 0;
        for t in &w.threads {
            for f in &t.flowops {
                ids.entry(f.name.clone()).or_default().push(id);
                for instance in 0..t.instances as usize {
                    let own_waiter = match f.kind {
                        OpKind::SemBlock => {
                            let sem = Arc::new(Sem::new(f.highwater));
                            sems.entry(f.name.clone()).or_default().push(sem.clone());
                            Waiter::Sem(sem)
                        }
                        OpKind::Block => {
                            let gate = Arc::new(Gate::default());
                            gates.entry(f.name.clone()).or_default().push(gate.clone());
                            Waiter::Gate(gate)
                        }
                        _ => continue,
                    };
                    own.insert((id, instance), own_waiter);
                }
                id += 1;
            }
        }
        let track = w.threads.iter().flat_map(|t| &t.flowops).any(|f| {
            matches!(
                f.kind,
                OpKind::OpsLimit
                    | OpKind::IopsLimit
                    | OpKind::BwLimit
                    | OpKind::FinishOnCount
                    | OpKind::FinishOnBytes
            )
        });
        Shared {
            filesets,
            events: w
                .eventgen_rate
                .filter(|r| *r > 0.0)
                .map(|r| EventGen::new(r, start_ns)),
            sems,
            gates,
            own,
            per_flowop: (0..id).map(|_| Counts::default()).collect(),
            ids,
            io: Counts::default(),
            rw: Counts::default(),
            track,
            quit: w.quit,
            done: AtomicU32::new(0),
            workers: w.total_threads(),
        }
    }
}

#[derive(Clone)]
enum Waiter {
    Sem(Arc<Sem>),
    Gate(Arc<Gate>),
}

#[derive(Clone, Copy, Default)]
struct Slot {
    fd: Option<i32>,
    /// (fileset, entry) of the file the slot last held; kept after close, as FileBench does.
    entry: Option<(usize, u32)>,
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
}

impl<'s> Interp<'s> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        shared: &'s Shared,
        thread: &'s ThreadSpec,
        base: usize,
        instance: usize,
        worker: usize,
        mut rng: Rng,
        recorder: Recorder,
        progress: Progress,
        measure_start: u64,
        stop_at: u64,
    ) -> Self {
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
            stop_at,
            measure_start,
            cpu_start: None,
            fatal: None,
        }
    }

    fn stopping(&self) -> bool {
        now_ns() >= self.stop_at || self.progress.is_stopping()
    }

    /// Loops over the flowops until the run ends or this thread is done.
    pub fn run(&mut self) {
        'outer: loop {
            for i in 0..self.flowops.len() {
                for _ in 0..self.flowops[i].iters.max(1) {
                    let now = now_ns();
                    if self.cpu_start.is_none() && now >= self.measure_start {
                        self.cpu_start = Some(crate::worker::thread_cpu_ns());
                    }
                    if now >= self.stop_at || self.progress.is_stopping() {
                        break 'outer;
                    }
                    match self.exec(i) {
                        Step::Ok => {}
                        Step::Failed(errno) => {
                            self.recorder.failed(i, now_ns(), errno);
                            if is_fatal(errno) {
                                let f = &self.flowops[i];
                                self.stop_run(format!(
                                    "{} `{}` failed: {}",
                                    f.kind.as_str(),
                                    f.name,
                                    std::io::Error::from_raw_os_error(errno)
                                ));
                                break 'outer;
                            }
                        }
                        Step::Broken(why) => {
                            self.stop_run(format!("flowop `{}`: {why}", self.flowops[i].name));
                            break 'outer;
                        }
                        // Given up waiting for a busy file because the run is over.
                        Step::NoFile(_) if self.stopping() => break 'outer,
                        Step::NoFile(why) => {
                            self.thread_done(Some(why));
                            break 'outer;
                        }
                        Step::Finished => {
                            self.thread_done(None);
                            break 'outer;
                        }
                    }
                }
            }
        }
        for slot in &mut self.slots {
            if let Some(fd) = slot.fd.take() {
                // SAFETY: a descriptor this thread opened and still owns.
                unsafe { libc::close(fd) };
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

    /// `flowoplib_fdnum`: the flowop's slot, or with `opennext` the next slot of the rotation.
    fn slot_of(&mut self, f: &Flowop) -> usize {
        if f.fd > 0 {
            return (f.fd as usize).min(SLOTS);
        }
        if !f.opennext {
            return 0;
        }
        if self.fd_rotor == 0 {
            self.fd_rotor = SLOTS;
        }
        self.fd_rotor -= 1;
        self.fd_rotor
    }

    fn open_flags(&self, f: &Flowop, fs: &FilesetState) -> i32 {
        let mut flags = if fs.readonly {
            libc::O_RDONLY
        } else if fs.writeonly {
            libc::O_WRONLY
        } else {
            libc::O_RDWR
        };
        if f.directio {
            flags |= libc::O_DIRECT;
        }
        if f.dsync {
            flags |= libc::O_DSYNC;
        }
        flags | libc::O_CLOEXEC
    }

    /// Picks a file and opens it in `slot` (creating it for createfile). `timed` records the
    /// open as an operation of flowop `i`.
    fn open_into(&mut self, i: usize, slot: usize, create: bool, timed: bool) -> Step {
        let f = &self.flowops[i];
        let Some(set) = f.fileset else {
            return Step::Broken(format!(
                "slot {slot} holds no file and the flowop names no fileset"
            ));
        };
        if self.slots[slot].fd.is_some() {
            let what = if create { "create" } else { "open" };
            return Step::Broken(format!(
                "tried to {what} a file on fd {slot} without closing it"
            ));
        }
        let fs = &self.shared.filesets[set];
        let tid = if f.opennext { self.tid } else { 0 };
        let Some(entry) = fs.pick_file(!create, tid, &|| self.stopping()) else {
            let which = if create { "absent" } else { "existing" };
            return Step::NoFile(format!(
                "flowop `{}` could not obtain an {which} file from fileset `{}`",
                f.name, fs.name
            ));
        };
        let mut flags = self.open_flags(f, fs);
        if create {
            flags |= libc::O_CREAT;
        }
        let t0 = now_ns();
        // SAFETY: a NUL-terminated path; the descriptor is owned by this slot until closed.
        let fd = unsafe { libc::open(fs.files[entry as usize].as_ptr(), flags, 0o666) };
        let t1 = now_ns();
        if fd < 0 {
            let errno = last_errno();
            fs.release_file(entry, None, 0);
            return Step::Failed(errno);
        }
        if f.noreadahead {
            // SAFETY: a valid fd; advice only affects caching.
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
        }
        fs.release_file(entry, create.then_some(true), 1);
        self.slots[slot] = Slot {
            fd: Some(fd),
            entry: Some((set, entry)),
        };
        if timed {
            self.record(i, t0, t1, 0);
        }
        Step::Ok
    }

    /// `flowoplib_filesetup`: the slot's descriptor, opening a file in it first if needed.
    fn ensure_open(&mut self, i: usize) -> Result<(usize, i32), Step> {
        let f = &self.flowops[i];
        let slot = self.slot_of(f);
        if self.slots[slot].fd.is_none() {
            match self.open_into(i, slot, false, false) {
                Step::Ok => {}
                other => return Err(other),
            }
        }
        Ok((slot, self.slots[slot].fd.expect("opened above")))
    }

    /// The bytes random offsets are drawn from: the working set, or the entry's size.
    fn span(&self, f: &Flowop, slot: usize) -> u64 {
        if f.workingset > 0 {
            return f.workingset;
        }
        match self.slots[slot].entry {
            Some((set, e)) => self.shared.filesets[set].sizes[e as usize],
            None => 0,
        }
    }

    fn iosize(&mut self, f: &Flowop) -> u64 {
        match &f.iosize_dist {
            Some(d) => d.sample(&mut self.rng).clamp(1, self.buf_len as u64),
            None => f.iosize,
        }
    }

    fn exec(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        match f.kind {
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
            OpKind::AioWait => {
                let t = now_ns();
                self.record(i, t, t, 0);
                Step::Ok
            }
            OpKind::MakeDir | OpKind::RemoveDir => self.leafdir(i),
            OpKind::ListDir => self.list_dir(i),
            OpKind::Hog => {
                let t0 = now_ns();
                let mem = self.buf.as_mut_slice();
                for _ in 0..f.value {
                    mem[0] = std::hint::black_box(1);
                }
                self.record(i, t0, now_ns(), 0);
                Step::Ok
            }
            OpKind::Delay => {
                let t0 = now_ns();
                let until = t0 + f.value.saturating_mul(1_000_000_000);
                sleep_until(until, &|| self.stopping());
                self.record(i, t0, now_ns(), 0);
                Step::Ok
            }
            OpKind::EventLimit => self.take_events(i, 1),
            OpKind::OpsLimit | OpKind::IopsLimit | OpKind::BwLimit => self.limit(i),
            OpKind::SemBlock | OpKind::Block => {
                let waiter = self.waiters[i]
                    .clone()
                    .expect("every semblock/block has one");
                let t0 = now_ns();
                let stopping = || self.stopping();
                let woken = match waiter {
                    Waiter::Sem(sem) => sem.block(f.value, &stopping),
                    Waiter::Gate(gate) => gate.wait(&stopping),
                };
                if woken {
                    self.record(i, t0, now_ns(), 0);
                }
                Step::Ok
            }
            OpKind::SemPost => self.sem_post(i),
            OpKind::Wakeup => {
                let t0 = now_ns();
                let target = f.target.as_deref().unwrap_or_default();
                for gate in self.shared.gates.get(target).into_iter().flatten() {
                    gate.wake();
                }
                self.record(i, t0, now_ns(), 0);
                Step::Ok
            }
            OpKind::FinishOnCount | OpKind::FinishOnBytes => self.finish_on(i),
        }
    }

    fn read_write(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.ensure_open(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let f = &self.flowops[i];
        let iosize = self.iosize(f).min(self.buf_len as u64) as usize;
        let write = f.kind != OpKind::Read;
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

    fn close(&mut self, i: usize) -> Step {
        let slot = self.slot_of(&self.flowops[i]);
        let Some(fd) = self.slots[slot].fd.take() else {
            return Step::Broken(format!("tried to close fd {slot}, which is not open"));
        };
        let t0 = now_ns();
        // SAFETY: the slot owned this descriptor; it is forgotten here.
        unsafe { libc::close(fd) };
        let t1 = now_ns();
        if let Some((set, e)) = self.slots[slot].entry {
            self.shared.filesets[set].closed(e);
        }
        self.record(i, t0, t1, 0);
        Step::Ok
    }

    fn delete(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let slot = self.slot_of(f);
        let held = if f.fd > 0 {
            self.slots[slot].entry
        } else {
            None
        };
        let (set, entry) = match held {
            Some((set, e)) => {
                self.slots[slot].entry = None;
                // Wait for a thread busy with this very file (a short critical section).
                while !self.shared.filesets[set].claim_file(e) {
                    std::thread::yield_now();
                }
                (set, e)
            }
            None => {
                let Some(set) = f.fileset else {
                    return Step::Broken("deletefile needs a fileset or an fd".into());
                };
                let fs = &self.shared.filesets[set];
                match fs.pick_closed_file(&|| self.stopping()) {
                    Some(e) => (set, e),
                    None => {
                        return Step::NoFile(format!(
                            "flowop `{}` could not obtain an existing file from fileset `{}`",
                            f.name, fs.name
                        ))
                    }
                }
            }
        };
        let fs = &self.shared.filesets[set];
        let mine = u32::from(held.is_some() && self.slots[slot].fd.is_some());
        if fs.open_count(entry) > mine {
            // A given file open elsewhere: FileBench leaves it, without counting an operation.
            fs.release_file(entry, None, 0);
            return Step::Ok;
        }
        let t0 = now_ns();
        // SAFETY: a NUL-terminated path.
        let res = unsafe { libc::unlink(fs.files[entry as usize].as_ptr()) };
        let t1 = now_ns();
        let errno = (res < 0).then(last_errno);
        fs.release_file(entry, Some(false), 0);
        match errno {
            Some(e) if e != libc::ENOENT => Step::Failed(e),
            _ => {
                self.record(i, t0, t1, 0);
                Step::Ok
            }
        }
    }

    fn stat(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let slot = self.slot_of(f);
        // SAFETY: stat buffers are plain data.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if f.fd > 0 {
            if let Some(fd) = self.slots[slot].fd {
                let t0 = now_ns();
                // SAFETY: a valid fd and buffer.
                let res = unsafe { libc::fstat(fd, &mut st) };
                let t1 = now_ns();
                if res < 0 {
                    return Step::Failed(last_errno());
                }
                self.record(i, t0, t1, 0);
                return Step::Ok;
            }
        }
        let Some(set) = f.fileset else {
            return Step::Broken("statfile needs a fileset or an open fd".into());
        };
        let fs = &self.shared.filesets[set];
        let Some(entry) = fs.pick_file(true, 0, &|| self.stopping()) else {
            return Step::NoFile(format!(
                "flowop `{}` could not obtain an existing file from fileset `{}`",
                f.name, fs.name
            ));
        };
        let t0 = now_ns();
        // SAFETY: a NUL-terminated path and a plain buffer.
        let res = unsafe { libc::stat(fs.files[entry as usize].as_ptr(), &mut st) };
        let t1 = now_ns();
        fs.release_file(entry, None, 0);
        if res < 0 {
            return Step::Failed(last_errno());
        }
        self.record(i, t0, t1, 0);
        Step::Ok
    }

    fn read_whole(&mut self, i: usize) -> Step {
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
        // SAFETY: a valid fd; buf holds `chunk` bytes.
        unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        loop {
            // SAFETY: as above.
            let n = unsafe { libc::read(fd, ptr.cast(), chunk) };
            if n < 0 {
                return Step::Failed(last_errno());
            }
            if n == 0 {
                break;
            }
            bytes += n as u64;
        }
        self.record(i, t0, now_ns(), bytes);
        Step::Ok
    }

    fn write_whole(&mut self, i: usize) -> Step {
        let (slot, fd) = match self.ensure_open(i) {
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

    fn append(&mut self, i: usize) -> Step {
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
        let (_, fd) = match self.ensure_open(i) {
            Ok(x) => x,
            Err(step) => return step,
        };
        let n = size.min(self.buf_len as u64) as usize;
        let ptr = self.buf.as_mut_ptr();
        let t0 = now_ns();
        // SAFETY: a valid fd; buf holds n bytes.
        let res = unsafe {
            libc::lseek(fd, 0, libc::SEEK_END);
            libc::write(fd, ptr.cast(), n)
        };
        let t1 = now_ns();
        if res < 0 {
            return Step::Failed(last_errno());
        }
        self.record(i, t0, t1, res as u64);
        Step::Ok
    }

    fn fsync(&mut self, i: usize) -> Step {
        let slot = self.slot_of(&self.flowops[i]);
        let Some(fd) = self.slots[slot].fd else {
            return Step::Broken(format!("tried to fsync fd {slot}, which is not open"));
        };
        let t0 = now_ns();
        // SAFETY: a valid fd.
        let res = unsafe { libc::fsync(fd) };
        let t1 = now_ns();
        if res < 0 {
            return Step::Failed(last_errno());
        }
        self.record(i, t0, t1, 0);
        Step::Ok
    }

    fn fsync_set(&mut self, i: usize) -> Step {
        let set = self.flowops[i].fileset;
        for s in 0..self.slots.len() {
            let slot = self.slots[s];
            let (Some(fd), Some((fs, _))) = (slot.fd, slot.entry) else {
                continue;
            };
            if Some(fs) != set {
                continue;
            }
            let t0 = now_ns();
            // SAFETY: a valid fd.
            let res = unsafe { libc::fsync(fd) };
            let t1 = now_ns();
            if res < 0 {
                return Step::Failed(last_errno());
            }
            self.record(i, t0, t1, 0);
        }
        Step::Ok
    }

    fn leafdir(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let make = f.kind == OpKind::MakeDir;
        let Some(set) = f.fileset else {
            return Step::Broken("needs a fileset".into());
        };
        let fs = &self.shared.filesets[set];
        let Some(d) = fs.pick_leafdir(!make, &|| self.stopping()) else {
            let which = if make { "absent" } else { "existing" };
            return Step::NoFile(format!(
                "flowop `{}` could not obtain an {which} leaf directory from fileset `{}`",
                f.name, fs.name
            ));
        };
        let path = fs.leafdirs[d as usize].as_ptr();
        let t0 = now_ns();
        // SAFETY: a NUL-terminated path.
        let res = unsafe {
            if make {
                libc::mkdir(path, 0o755)
            } else {
                libc::rmdir(path)
            }
        };
        let t1 = now_ns();
        let errno = (res < 0).then(last_errno);
        fs.release_leafdir(d, Some(make));
        match errno {
            Some(e) if e != libc::EEXIST && e != libc::ENOENT => Step::Failed(e),
            _ => {
                self.record(i, t0, t1, 0);
                Step::Ok
            }
        }
    }

    fn list_dir(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let Some(set) = f.fileset else {
            return Step::Broken("listdir needs a fileset".into());
        };
        let fs = &self.shared.filesets[set];
        let Some(d) = fs.next_dir() else {
            return Step::NoFile(format!("fileset `{}` has no directories", fs.name));
        };
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(fs.dirs[d].as_bytes()));
        let t0 = now_ns();
        let entries = match std::fs::read_dir(path) {
            Ok(rd) => rd.count(),
            Err(e) => return Step::Failed(e.raw_os_error().unwrap_or(libc::EIO)),
        };
        let _ = entries;
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }

    fn take_events(&mut self, i: usize, n: u64) -> Step {
        let Some(events) = &self.shared.events else {
            return Step::Ok; // without an event generator, limits are no-ops (as in FileBench)
        };
        let t0 = now_ns();
        if events.take(n, &|| self.stopping()) {
            self.record(i, t0, now_ns(), 0);
        }
        Step::Ok
    }

    /// The count a limit or finish flowop watches: its target's, or the whole run's.
    fn watched(&self, f: &Flowop, bytes: bool, rw_only: bool) -> u64 {
        let pick = |c: &Counts| {
            if bytes {
                c.bytes.load(Relaxed)
            } else {
                c.ops.load(Relaxed)
            }
        };
        match f.target.as_deref().and_then(|t| self.shared.ids.get(t)) {
            Some(ids) => ids
                .iter()
                .map(|&id| pick(&self.shared.per_flowop[id]))
                .sum(),
            None if rw_only => pick(&self.shared.rw),
            None => pick(&self.shared.io),
        }
    }

    /// opslimit / iopslimit / bwlimit: a token bucket drained by the watched count and refilled
    /// from the event generator (one event per op, or per MiB for bwlimit).
    fn limit(&mut self, i: usize) -> Step {
        if self.shared.events.is_none() {
            return Step::Ok;
        }
        let f = &self.flowops[i];
        let bw = f.kind == OpKind::BwLimit;
        let now = self.watched(f, bw, f.kind != OpKind::OpsLimit);
        let b = &mut self.buckets[i];
        let Some(last) = b.last.replace(now) else {
            return Step::Ok;
        };
        b.level -= (now - last) as i64;
        if b.level >= 0 {
            return Step::Ok;
        }
        let owed = (-b.level) as u64;
        let (events, refill) = if bw {
            (owed / MB + 1, (owed / MB + 1) * MB)
        } else {
            (owed, owed)
        };
        b.level += refill as i64;
        self.take_events(i, events)
    }

    fn sem_post(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let Some(targets) = f.target.as_deref().and_then(|t| self.shared.sems.get(t)) else {
            return Step::Broken(format!("sempost target `{:?}` is no semblock", f.target));
        };
        let t0 = now_ns();
        for sem in targets {
            if !sem.post(f.value, f.blocking, &|| self.stopping()) {
                return Step::Ok;
            }
        }
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }

    fn finish_on(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let t0 = now_ns();
        let reached = if f.kind == OpKind::FinishOnCount {
            self.watched(f, false, false) >= f.value
        } else {
            self.watched(f, true, false) > f.value
        };
        self.record(i, t0, now_ns(), 0);
        if reached {
            Step::Finished
        } else {
            Step::Ok
        }
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
