//! Flowops on files as a whole: descriptor slots, picking and opening a file of a fileset,
//! closing, deleting and stat-ing it, as FileBench's `flowoplib_openfile`, `_closefile`,
//! `_deletefile` and `_statfile` do.

use iowatt_metrics::now_ns;

use super::{last_errno, Interp, Slot, Step, SLOTS};
use crate::fileset::FilesetState;
use crate::spec::Flowop;

impl Interp<'_> {
    /// With `indexed`: a draw of the index, modulo the `n` entries (`flowoplib_pickfile`).
    pub(super) fn index_of(&mut self, f: &Flowop, n: usize) -> Option<u32> {
        let d = f.index.as_ref()?;
        Some((d.sample(&mut self.rng) % n.max(1) as u64) as u32)
    }

    /// `flowoplib_fdnum`: the flowop's slot, or with `opennext` the next slot of the rotation.
    pub(super) fn slot_of(&mut self, f: &Flowop) -> usize {
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

    pub(super) fn open_flags(&self, f: &Flowop, fs: &FilesetState) -> i32 {
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
    pub(super) fn open_into(&mut self, i: usize, slot: usize, create: bool, timed: bool) -> Step {
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
        let at = self.index_of(f, fs.files.len());
        let Some(entry) = fs.pick_file(!create, tid, at, &|| self.stopping()) else {
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
        let path = &fs.files[entry as usize];
        let t0 = now_ns();
        if create {
            // FileBench's fileset_openfile looks the parent directory up before creating (and
            // makes it if it is gone): a path walk the file system pays for, timed with the
            // create.
            parent_dir(path);
        }
        // SAFETY: a NUL-terminated path; the descriptor is owned by this slot until closed.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666) };
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
            seek: None,
        };
        if timed {
            self.record(i, t0, t1, 0);
        }
        Step::Ok
    }

    /// `flowoplib_filesetup`: the slot's descriptor, opening a file in it first if needed.
    pub(super) fn ensure_open(&mut self, i: usize) -> Result<(usize, i32), Step> {
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

    pub(super) fn close(&mut self, i: usize) -> Step {
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

    pub(super) fn delete(&mut self, i: usize) -> Step {
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
                let picked = match self.index_of(f, fs.files.len()) {
                    Some(at) => fs.pick_file(true, 0, Some(at), &|| self.stopping()),
                    None => fs.pick_closed_file(&|| self.stopping()),
                };
                match picked {
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

    pub(super) fn stat(&mut self, i: usize) -> Step {
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
        let at = self.index_of(f, fs.files.len());
        let Some(entry) = fs.pick_file(true, 0, at, &|| self.stopping()) else {
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
}

/// Stats the directory `path` is in, making it if it is missing, as FileBench does before a
/// create.
fn parent_dir(path: &std::ffi::CStr) {
    let bytes = path.to_bytes();
    let Some(slash) = bytes.iter().rposition(|&b| b == b'/').filter(|&i| i > 0) else {
        return;
    };
    let Ok(dir) = std::ffi::CString::new(&bytes[..slash]) else {
        return;
    };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a stat buffer, both owned here.
    if unsafe { libc::stat(dir.as_ptr(), &mut st) } != 0 {
        // SAFETY: as above; a failure shows in the create that follows.
        unsafe { libc::mkdir(dir.as_ptr(), 0o755) };
    }
}
