//! The recreation itself. Directories become jobs as soon as they exist: a job is a slice of
//! one directory's entries (at most [`CHUNK`]), made relative to that directory's fd, opened
//! once per job beneath the destination. Any number of threads take jobs, so a wide tree keeps
//! them all busy and a huge directory is shared between them. Directories get their modes and
//! times last, deepest first, once nothing is made in them any more.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::plan::{Entry, Kind, Plan};
use crate::progress::{Counts, Phase};
use crate::sys;
use crate::{Output, Progress, Recreation, Status, TreeError};
use iowatt_metrics::Rng;

/// Entries per job: enough to pay for opening the directory, few enough to share a big one.
const CHUNK: usize = 256;
/// A file's content is generated and written in pieces of this size.
const WRITE_BUF: usize = 1 << 20;
/// Worker counters reach the shared progress at least this often (entries).
const PUBLISH: u64 = 64;
/// Mode directories are made with until they are finished: the owner must be able to fill
/// them whatever their final mode.
const DIR_MODE: u32 = 0o700;

#[derive(Clone, Copy)]
struct Job {
    node: u32,
    start: u32,
    end: u32,
}

struct Queue {
    jobs: Vec<Job>,
    /// Jobs queued or being done: the run's first phase ends when it reaches 0.
    pending: usize,
}

struct Ctx<'a> {
    rec: &'a Recreation,
    plan: &'a Plan,
    root: OwnedFd,
    progress: &'a Progress,
    queue: Mutex<Queue>,
    wake: Condvar,
    abort: AtomicBool,
    error: Mutex<Option<TreeError>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn run(rec: &Recreation, progress: &Progress) -> Result<Output, TreeError> {
    let started = Instant::now();
    let dest = rec.dest.as_os_str().as_encoded_bytes();
    let root = sys::open_dir(dest).map_err(|e| TreeError::io("open", dest, e))?;
    let plan = &rec.plan;
    let ctx = Ctx {
        rec,
        plan,
        root,
        progress,
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            pending: 0,
        }),
        wake: Condvar::new(),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    progress.set_phase(Phase::Creating);
    ctx.push_dir(0);
    let threads = rec.threads.max(1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| ctx.worker());
        }
    });
    if ctx.stopped() {
        return ctx.finish(started);
    }
    progress.set_phase(Phase::Finishing);
    for level in plan.dirs_by_depth.iter().rev() {
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads.min(level.len()) {
                s.spawn(|| {
                    while !ctx.stopped() {
                        let i = next.fetch_add(1, Relaxed);
                        let Some(&row) = level.get(i) else { break };
                        if let Err(e) = ctx.finish_dir(&plan.entries[row as usize]) {
                            ctx.fail(e);
                        }
                    }
                });
            }
        });
        if ctx.stopped() {
            break;
        }
    }
    ctx.finish(started)
}

impl Ctx<'_> {
    fn stopped(&self) -> bool {
        self.abort.load(Relaxed) || self.progress.cancelled()
    }

    fn fail(&self, e: TreeError) {
        lock(&self.error).get_or_insert(e);
        self.abort.store(true, Relaxed);
        self.wake.notify_all();
    }

    fn finish(self, started: Instant) -> Result<Output, TreeError> {
        if let Some(e) = lock(&self.error).take() {
            return Err(e);
        }
        let cancelled = self.progress.cancelled();
        if !cancelled {
            self.progress.set_phase(Phase::Done);
        }
        Ok(Output {
            status: if cancelled {
                Status::Cancelled
            } else {
                Status::Complete
            },
            counts: self.progress.counts(),
            elapsed_ns: started.elapsed().as_nanos() as u64,
        })
    }

    /// Queues the jobs that fill directory `node` (0: the destination).
    fn push_dir(&self, node: usize) {
        let n = self.plan.children[node].len();
        if n == 0 {
            return;
        }
        let mut q = lock(&self.queue);
        for start in (0..n).step_by(CHUNK).rev() {
            q.jobs.push(Job {
                node: node as u32,
                start: start as u32,
                end: (start + CHUNK).min(n) as u32,
            });
            q.pending += 1;
        }
        drop(q);
        self.wake.notify_all();
    }

    fn worker(&self) {
        let mut buf = Vec::new();
        loop {
            let job = {
                let mut q = lock(&self.queue);
                loop {
                    if self.stopped() {
                        return;
                    }
                    if let Some(job) = q.jobs.pop() {
                        break job;
                    }
                    if q.pending == 0 {
                        return;
                    }
                    // A timeout, so a cancel from outside is seen while waiting.
                    q = self
                        .wake
                        .wait_timeout(q, Duration::from_millis(50))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            };
            if let Err(e) = self.do_job(job, &mut buf) {
                self.fail(e);
            }
            let mut q = lock(&self.queue);
            q.pending -= 1;
            if q.pending == 0 {
                self.wake.notify_all();
            }
        }
    }

    fn do_job(&self, job: Job, buf: &mut Vec<u8>) -> Result<(), TreeError> {
        let node = job.node as usize;
        let opened;
        let dir = if node == 0 {
            &self.root
        } else {
            let path = self.plan.entries[node - 1].path.as_bytes();
            opened = sys::open_beneath(&self.root, path, libc::O_PATH | libc::O_DIRECTORY)
                .map_err(|e| TreeError::io("open the directory", path, e))?;
            &opened
        };
        let mut counts = Counts::default();
        let rows = &self.plan.children[node][job.start as usize..job.end as usize];
        for &row in rows {
            if self.stopped() {
                break;
            }
            let e = &self.plan.entries[row as usize];
            let name = name_of(&e.path);
            match e.kind {
                Kind::Dir => {
                    self.make_dir(dir, name, e)?;
                    counts.dirs += 1;
                    self.push_dir(row as usize + 1);
                }
                Kind::File => {
                    if self.make_file(dir, name, row, e, buf, &mut counts)? {
                        counts.files += 1;
                    } else {
                        counts.skipped += 1;
                    }
                }
                Kind::Symlink => {
                    if self.make_link(dir, name, e)? {
                        counts.links += 1;
                    } else {
                        counts.skipped += 1;
                    }
                }
            }
            counts.entries += 1;
            if counts.entries >= PUBLISH {
                self.progress.add(&counts);
                counts = Counts::default();
            }
        }
        if !counts.is_empty() {
            self.progress.add(&counts);
        }
        Ok(())
    }

    /// Removes what is at `name` when it is not what the manifest wants there (only with
    /// --resume: without it the destination started empty). A directory goes only if empty.
    fn clear(
        &self,
        dir: &OwnedFd,
        name: &[u8],
        e: &Entry,
        st: &libc::stat,
    ) -> Result<(), TreeError> {
        let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        sys::unlink_at(dir, name, is_dir).map_err(|err| {
            let what = if is_dir && err.raw_os_error() == Some(libc::ENOTEMPTY) {
                io::Error::other(format!(
                    "a non-empty directory is where the manifest has a {}",
                    e.kind.as_str()
                ))
            } else {
                err
            };
            TreeError::io("replace", e.path.as_bytes(), what)
        })
    }

    fn make_dir(&self, dir: &OwnedFd, name: &[u8], e: &Entry) -> Result<(), TreeError> {
        let path = e.path.as_bytes();
        match sys::mkdir_at(dir, name, DIR_MODE) {
            Ok(()) => return Ok(()),
            Err(err) if err.raw_os_error() == Some(libc::EEXIST) => {}
            Err(err) => return Err(TreeError::io("make the directory", path, err)),
        }
        let Some(st) = sys::lstat_at(dir, name).map_err(|err| TreeError::io("stat", path, err))?
        else {
            return self.make_dir(dir, name, e); // removed meanwhile
        };
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            // A directory a killed run finished already may be closed to its owner.
            if st.st_mode & 0o700 != 0o700 {
                let fd = sys::open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
                    .and_then(|fd| sys::set_mode(&fd, DIR_MODE))
                    .map_err(|err| TreeError::io("reopen", path, err));
                fd?;
            }
            return Ok(());
        }
        self.clear(dir, name, e, &st)?;
        sys::mkdir_at(dir, name, DIR_MODE)
            .map_err(|err| TreeError::io("make the directory", path, err))
    }

    /// Makes a file; false if --resume found it complete.
    fn make_file(
        &self,
        dir: &OwnedFd,
        name: &[u8],
        row: u32,
        e: &Entry,
        buf: &mut Vec<u8>,
        counts: &mut Counts,
    ) -> Result<bool, TreeError> {
        let path = e.path.as_bytes();
        let io = |op| move |err| TreeError::io(op, path, err);
        let mut flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        if self.rec.resume {
            if let Some(st) = sys::lstat_at(dir, name).map_err(io("stat"))? {
                let is_file = st.st_mode & libc::S_IFMT == libc::S_IFREG;
                if is_file && st.st_size as u64 == e.size && sys::mtime_ns(&st) == e.mtime_ns {
                    return Ok(false);
                }
                if is_file {
                    flags = libc::O_WRONLY | libc::O_TRUNC;
                } else {
                    self.clear(dir, name, e, &st)?;
                }
            }
        }
        let fd = match sys::open_at(dir, name, flags, 0o600) {
            // A resumed file whose final mode shuts its owner out: make it anew.
            Err(err) if err.raw_os_error() == Some(libc::EACCES) && flags & libc::O_TRUNC != 0 => {
                sys::unlink_at(dir, name, false).map_err(io("replace"))?;
                sys::open_at(
                    dir,
                    name,
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                    0o600,
                )
            }
            other => other,
        }
        .map_err(io("create"))?;
        if self.rec.sparse {
            sys::truncate(&fd, e.size).map_err(io("size"))?;
        } else if e.size > 0 {
            if buf.is_empty() {
                buf.resize(WRITE_BUF, 0);
            }
            let mut rng = Rng::stream(self.rec.seed, u64::from(row));
            let mut left = e.size;
            while left > 0 {
                if self.stopped() {
                    // Left short, with a fresh mtime: a resumed run writes it again.
                    return Ok(true);
                }
                let n = left.min(buf.len() as u64) as usize;
                rng.fill(&mut buf[..n]);
                sys::write_all(&fd, &buf[..n]).map_err(io("write"))?;
                left -= n as u64;
                counts.bytes += n as u64;
            }
        }
        sys::set_mode(&fd, e.mode & 0o7777).map_err(io("set the mode of"))?;
        sys::set_times(&fd, e.atime_ns, e.mtime_ns).map_err(io("set the times of"))?;
        Ok(true)
    }

    /// Makes a symlink; false if --resume found it complete.
    fn make_link(&self, dir: &OwnedFd, name: &[u8], e: &Entry) -> Result<bool, TreeError> {
        let path = e.path.as_bytes();
        let io = |op| move |err| TreeError::io(op, path, err);
        let target = e.target.as_deref().unwrap_or_default().as_bytes();
        if let Err(err) = sys::symlink_at(target, dir, name) {
            if err.raw_os_error() != Some(libc::EEXIST) {
                return Err(io("make the symlink")(err));
            }
            let Some(st) = sys::lstat_at(dir, name).map_err(io("stat"))? else {
                return self.make_link(dir, name, e);
            };
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK
                && sys::mtime_ns(&st) == e.mtime_ns
                && sys::readlink_at(dir, name).map_err(io("read"))? == target
            {
                return Ok(false);
            }
            self.clear(dir, name, e, &st)?;
            sys::symlink_at(target, dir, name).map_err(io("make the symlink"))?;
        }
        sys::set_times_at(dir, name, e.atime_ns, e.mtime_ns).map_err(io("set the times of"))?;
        Ok(true)
    }

    fn finish_dir(&self, e: &Entry) -> Result<(), TreeError> {
        let path = e.path.as_bytes();
        let fd = sys::open_beneath(&self.root, path, libc::O_RDONLY | libc::O_DIRECTORY)
            .map_err(|err| TreeError::io("open the directory", path, err))?;
        sys::set_mode(&fd, e.mode & 0o7777)
            .and_then(|()| sys::set_times(&fd, e.atime_ns, e.mtime_ns))
            .map_err(|err| TreeError::io("set the mode and times of", path, err))
    }
}

fn name_of(path: &str) -> &[u8] {
    let b = path.as_bytes();
    match path.rfind('/') {
        Some(cut) => &b[cut + 1..],
        None => b,
    }
}
