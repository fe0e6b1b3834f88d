//! The FUSE file system: BACKING's tree served at the mount. Metadata operations pass straight
//! through; a read or write is done on the backing file at once (so nothing written waits in
//! memory) and handed to the [`Drive`], which answers it when the disk model has served it.
//! `.iowatt` at the mount's root is the control directory of counters, reachable by its path
//! and never listed.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use iowatt_sim::raid::Request as DeviceRequest;

use crate::control::{self, Control};
use crate::device::Device;
use crate::drive::{Answer, Pending, Reply, SetError};
use crate::meta::Layout;
use crate::place::Placement;

/// How long the kernel may keep a name or attributes: short, since BACKING may change beside
/// the mount.
pub(crate) const TTL: Duration = Duration::from_secs(1);

fn errno(e: std::io::Error) -> Errno {
    Errno::from(e)
}

fn last_errno() -> Errno {
    errno(std::io::Error::last_os_error())
}

fn cpath(p: &Path) -> Result<CString, Errno> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

/// Inode numbers of the mount: the root is FUSE's 1; every other file gets the next number the
/// first time it is seen, kept by its backing (device, inode) so hard links share one.
struct Nodes {
    paths: HashMap<u64, PathBuf>,
    by_key: HashMap<(u64, u64), u64>,
    next: u64,
}

struct Open {
    file: Arc<File>,
    /// The backing inode: the key allocation order lays chunks out by.
    key: u64,
}

pub struct EmulatedFs<D> {
    drive: Arc<D>,
    control: Control,
    /// `.iowatt/config.json`: the mount's settings, as given.
    settings: String,
    place: Placement,
    /// Where the file system keeps each file's metadata, when lookups and access times are
    /// charged (an array with a file system model).
    layout: Option<Mutex<Layout>>,
    direct_io: bool,
    nodes: Mutex<Nodes>,
    open: Mutex<HashMap<u64, Open>>,
    /// The next file handle, for a backing file or a counter file alike.
    next_fh: AtomicU64,
    /// A counter file's text as rendered for a reader at offset 0, by open handle: the rest of
    /// the same read comes from it, so no reader sees half of one rendering and half of the
    /// next.
    rendered: Mutex<HashMap<u64, Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn kind_of(m: &Metadata) -> FileType {
    FileType::from_std(m.file_type()).unwrap_or(FileType::RegularFile)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH
    }
}

pub fn attr(ino: u64, m: &Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: UNIX_EPOCH,
        kind: kind_of(m),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl<D: Device> EmulatedFs<D> {
    /// BACKING served from `drive`, its files laid out by `place`, with `layout` charging
    /// their metadata.
    pub fn new(
        backing: PathBuf,
        drive: Arc<D>,
        direct_io: bool,
        (place, layout): (Placement, Option<Layout>),
        settings: String,
    ) -> Self {
        let mut paths = HashMap::new();
        paths.insert(INodeNo::ROOT.0, backing);
        let mut files = drive.control_files();
        files.push(control::SETTINGS.into());
        EmulatedFs {
            control: Control::new(&files),
            settings,
            drive,
            place,
            layout: layout.map(Mutex::new),
            direct_io,
            nodes: Mutex::new(Nodes {
                paths,
                by_key: HashMap::new(),
                next: 2,
            }),
            open: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            rendered: Mutex::new(HashMap::new()),
        }
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        lock(&self.nodes)
            .paths
            .get(&ino.0)
            .cloned()
            .ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    /// The mount's inode for `path`, numbered on first sight.
    fn node(&self, path: &Path, m: &Metadata) -> u64 {
        let mut n = lock(&self.nodes);
        if n.paths.get(&INodeNo::ROOT.0).map(PathBuf::as_path) == Some(path) {
            return INodeNo::ROOT.0;
        }
        let key = (m.dev(), m.ino());
        let ino = match n.by_key.get(&key) {
            Some(&ino) => ino,
            None => {
                let ino = n.next;
                n.next += 1;
                n.by_key.insert(key, ino);
                ino
            }
        };
        n.paths.insert(ino, path.to_path_buf());
        ino
    }

    fn entry(&self, path: &Path) -> Result<FileAttr, Errno> {
        self.stat(path).map(|(a, _)| a)
    }

    /// The mount's attributes of `path`, with the backing file's own metadata.
    fn stat(&self, path: &Path) -> Result<(FileAttr, Metadata), Errno> {
        let m = std::fs::symlink_metadata(path).map_err(errno)?;
        Ok((attr(self.node(path, &m), &m), m))
    }

    fn open_flags(&self) -> FopenFlags {
        if self.direct_io {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            // The pages a file had cached stay across its next open, as a local file
            // system's do (a server reopening a file for each request reads them again).
            FopenFlags::FOPEN_KEEP_CACHE
        }
    }

    /// Opens the backing file; the kernel's O_DIRECT and O_APPEND stay with the kernel (the
    /// offsets it sends are final, and the backing file system may refuse direct I/O).
    fn open_backing(&self, path: &Path, flags: i32, create: Option<u32>) -> Result<u64, Errno> {
        let strip = libc::O_DIRECT | libc::O_APPEND | libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY;
        let mut o = OpenOptions::new();
        match flags & libc::O_ACCMODE {
            libc::O_WRONLY => o.write(true),
            libc::O_RDWR => o.read(true).write(true),
            _ => o.read(true),
        };
        o.custom_flags((flags & !strip) | libc::O_CLOEXEC);
        if let Some(mode) = create {
            o.mode(mode);
            if flags & libc::O_EXCL != 0 {
                o.create_new(true);
            } else {
                o.create(true);
            }
        }
        let file = o.open(path).map_err(errno)?;
        let key = file.metadata().map_err(errno)?.ino();
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let file = Arc::new(file);
        lock(&self.open).insert(fh, Open { file, key });
        Ok(fh)
    }

    fn opened(&self, fh: FileHandle) -> Result<(Arc<File>, u64), Errno> {
        lock(&self.open)
            .get(&fh.0)
            .map(|o| (o.file.clone(), o.key))
            .ok_or(Errno::EBADF)
    }
}

/// A read or write of `bytes` at device offset `at` (with its file's inode block, for its
/// access time, or u64::MAX).
fn data_request(at: u64, bytes: u64, write: bool, inode_at: u64) -> DeviceRequest {
    DeviceRequest {
        tag: 0,
        offset: at,
        bytes,
        write,
        dir_at: u64::MAX,
        inode_at,
    }
}

/// Answers a request that makes a name: its attributes, or the error.
fn entry(reply: ReplyEntry, made: Result<FileAttr, Errno>) {
    match made {
        Ok(a) => reply.entry(&TTL, &a, Generation(0)),
        Err(e) => reply.error(e),
    }
}

/// Answers a request with nothing to return but whether it worked.
fn done(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

impl<D: Device> EmulatedFs<D> {
    /// A counter file's text now.
    fn render(&self, ino: INodeNo) -> String {
        match self.control.path(ino) {
            Some(control::SETTINGS) => self.settings.clone(),
            Some(p) => self.drive.render(p),
            None => String::new(),
        }
    }

    /// A regular file's metadata blocks (its directory's, with `parent`; its inode's) and
    /// where its data start, when the layout charges them.
    fn metadata(&self, parent: Option<INodeNo>, m: &Metadata) -> Option<(u64, u64, u64)> {
        let layout = self.layout.as_ref()?;
        if !m.is_file() {
            return None;
        }
        // Directories are known by their backing inode, as the layout was given them.
        let dir = parent.and_then(|p| self.path(p).ok()?.symlink_metadata().ok());
        let data_at = self.place.first_byte(m.ino(), m.size());
        let mut l = lock(layout);
        let inode_at = l.inode(m.ino(), data_at);
        let dir_at = dir.map_or(u64::MAX, |d| l.dir(d.ino(), data_at));
        Some((dir_at, inode_at, data_at))
    }

    /// A lookup's or getattr's answer: once the file's metadata blocks (`parent`'s with a
    /// lookup, its inode's) are read where the layout charges them, else at once.
    fn answer_attr(&self, req: &Request, parent: Option<INodeNo>, m: &Metadata, reply: Reply) {
        let Some((dir_at, inode_at, data_at)) = self.metadata(parent, m) else {
            return reply.send();
        };
        let pending = Pending {
            reply,
            arrived_ns: self.drive.now_ns(),
            write: false,
            stream: req.pid(),
        };
        let request = DeviceRequest {
            tag: 0,
            offset: data_at,
            bytes: 0,
            write: false,
            dir_at,
            inode_at,
        };
        self.drive.submit(pending, request);
    }

    /// A value written to `.iowatt/stimulus`: ENODATA without a curve, EPERM while a BMC is
    /// followed, ERANGE outside the curve, EINVAL for what is no number.
    fn set_stimulus(&self, data: &[u8]) -> Result<(), Errno> {
        let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        let value: f64 = text.trim().parse().map_err(|_| Errno::EINVAL)?;
        self.drive
            .set_stimulus(value)
            .map(|_| ())
            .map_err(|e| match e {
                SetError::NoCurve => Errno::ENODATA,
                SetError::Locked => Errno::EPERM,
                SetError::OutOfRange { .. } => Errno::ERANGE,
            })
    }
}

impl<D: Device> Filesystem for EmulatedFs<D> {
    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if let Some(a) = self.control.lookup(parent, name) {
            return reply.entry(&TTL, &a, Generation(0));
        }
        match self.child(parent, name).and_then(|p| self.stat(&p)) {
            Ok((a, m)) => self.answer_attr(req, Some(parent), &m, Reply::Entry(reply, a)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if let Some(a) = self.control.getattr(ino) {
            return reply.attr(&TTL, &a);
        }
        match self.path(ino).and_then(|p| self.stat(&p)) {
            Ok((a, m)) => self.answer_attr(req, None, &m, Reply::Attr(reply, a)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(a) = self.control.getattr(ino) {
            // `echo 50 > .iowatt/stimulus` truncates first: nothing to truncate.
            return reply.attr(&TTL, &a);
        }
        let run = || -> Result<FileAttr, Errno> {
            let path = self.path(ino)?;
            let c = cpath(&path)?;
            // SAFETY: `c` is a NUL-terminated path; each call only reads it.
            let check = |res: i32| if res == 0 { Ok(()) } else { Err(last_errno()) };
            if let Some(mode) = mode {
                check(unsafe { libc::chmod(c.as_ptr(), mode & 0o7777) })?;
            }
            if uid.is_some() || gid.is_some() {
                let (u, g) = (uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX));
                check(unsafe { libc::lchown(c.as_ptr(), u, g) })?;
            }
            if let Some(size) = size {
                check(unsafe { libc::truncate(c.as_ptr(), size as libc::off_t) })?;
            }
            if atime.is_some() || mtime.is_some() {
                let spec = |t: Option<TimeOrNow>| match t {
                    None => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_OMIT,
                    },
                    Some(TimeOrNow::Now) => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_NOW,
                    },
                    Some(TimeOrNow::SpecificTime(t)) => {
                        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                        libc::timespec {
                            tv_sec: d.as_secs() as libc::time_t,
                            tv_nsec: d.subsec_nanos().into(),
                        }
                    }
                };
                let times = [spec(atime), spec(mtime)];
                check(unsafe {
                    libc::utimensat(
                        libc::AT_FDCWD,
                        c.as_ptr(),
                        times.as_ptr(),
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                })?;
            }
            self.entry(&path)
        };
        match run() {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .path(ino)
            .and_then(|p| std::fs::read_link(p).map_err(errno))
        {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let run = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, name)?;
            let c = cpath(&path)?;
            // SAFETY: a NUL-terminated path, only read.
            if unsafe { libc::mkdir(c.as_ptr(), mode & !umask & 0o7777) } != 0 {
                return Err(last_errno());
            }
            self.entry(&path)
        };
        entry(reply, run());
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = self.child(parent, name);
        done(
            reply,
            removed.and_then(|p| std::fs::remove_file(p).map_err(errno)),
        );
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = self.child(parent, name);
        done(
            reply,
            removed.and_then(|p| std::fs::remove_dir(p).map_err(errno)),
        );
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let run = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, link_name)?;
            std::os::unix::fs::symlink(target, &path).map_err(errno)?;
            self.entry(&path)
        };
        entry(reply, run());
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let run = || -> Result<(), Errno> {
            if flags.bits() != 0 {
                return Err(Errno::EINVAL);
            }
            let (from, to) = (self.child(parent, name)?, self.child(newparent, newname)?);
            std::fs::rename(&from, &to).map_err(errno)?;
            // Every name under the old path now lives under the new one.
            let mut n = lock(&self.nodes);
            for p in n.paths.values_mut() {
                if let Ok(rest) = p.strip_prefix(&from) {
                    *p = to.join(rest);
                }
            }
            Ok(())
        };
        done(reply, run());
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let run = || -> Result<FileAttr, Errno> {
            let (from, to) = (self.path(ino)?, self.child(newparent, newname)?);
            std::fs::hard_link(from, &to).map_err(errno)?;
            self.entry(&to)
        };
        entry(reply, run());
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if self.control.owns(ino) {
            // Counters are rendered afresh for each read from the start: never cached.
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            return reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
        }
        match self
            .path(ino)
            .and_then(|p| self.open_backing(&p, flags.0, None))
        {
            Ok(fh) => reply.opened(FileHandle(fh), self.open_flags()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let run = || -> Result<(FileAttr, u64), Errno> {
            let path = self.child(parent, name)?;
            let fh = self.open_backing(&path, flags, Some(mode & !umask & 0o7777))?;
            Ok((self.entry(&path)?, fh))
        };
        match run() {
            Ok((a, fh)) => {
                reply.created(&TTL, &a, Generation(0), FileHandle(fh), self.open_flags())
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrived_ns = self.drive.now_ns();
        if self.control.owns(ino) {
            let mut rendered = lock(&self.rendered);
            if offset == 0 || !rendered.contains_key(&fh.0) {
                rendered.insert(fh.0, self.render(ino).into_bytes());
            }
            let text = &rendered[&fh.0];
            let start = (offset as usize).min(text.len());
            let end = (start + size as usize).min(text.len());
            return reply.data(&text[start..end]);
        }
        let (file, key) = match self.opened(fh) {
            Ok(f) => f,
            Err(e) => return reply.error(e),
        };
        let mut buf = vec![0u8; size as usize];
        let mut n = 0;
        while n < buf.len() {
            match file.read_at(&mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return reply.error(errno(e)),
            }
        }
        buf.truncate(n);
        if n == 0 {
            // At or past the end: the kernel's answer, no disk access.
            return reply.data(&buf);
        }
        let at = self.place.disk_offset(&file, key, offset);
        // The file's access time, where the layout charges it.
        let inode_at = match &self.layout {
            Some(l) => lock(l).inode(key, self.place.disk_offset(&file, key, 0)),
            None => u64::MAX,
        };
        let pending = Pending {
            reply: Reply::Read(reply, buf),
            arrived_ns,
            write: false,
            stream: req.pid(),
        };
        self.drive
            .submit(pending, data_request(at, n as u64, false, inode_at));
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if self.control.path(ino) == Some(control::STIMULUS) {
            return match self.set_stimulus(data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            };
        }
        let arrived_ns = self.drive.now_ns();
        let (file, key) = match self.opened(fh) {
            Ok(f) => f,
            Err(e) => return reply.error(e),
        };
        if let Err(e) = file.write_all_at(data, offset) {
            return reply.error(errno(e));
        }
        let at = self.place.disk_offset(&file, key, offset);
        let pending = Pending {
            reply: Reply::Write(reply, data.len() as u32),
            arrived_ns,
            write: true,
            stream: req.pid(),
        };
        let request = data_request(at, data.len() as u64, true, u64::MAX);
        self.drive.submit(pending, request);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        lock(&self.open).remove(&fh.0);
        lock(&self.rendered).remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        // The model has no write cache: every write was on the disk when it was answered.
        let res = self.opened(fh).and_then(|(f, _)| {
            if datasync {
                f.sync_data()
            } else {
                f.sync_all()
            }
            .map_err(errno)
        });
        done(reply, res);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if self.control.owns(ino) {
            let listing = self.control.entries(ino);
            for (i, (ino, kind, name)) in listing.into_iter().enumerate().skip(offset as usize) {
                if reply.add(INodeNo(ino), i as u64 + 1, kind, name) {
                    break;
                }
            }
            return reply.ok();
        }
        let path = match self.path(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let listing = match std::fs::read_dir(&path) {
            Ok(l) => l,
            Err(e) => return reply.error(errno(e)),
        };
        let mut names: Vec<_> = listing.filter_map(Result::ok).collect();
        // A stable order, so that a listing read in several calls neither skips nor repeats.
        names.sort_by_key(|e| e.file_name());
        let dots = [
            (ino.0, FileType::Directory, OsStr::new(".")),
            (ino.0, FileType::Directory, OsStr::new("..")),
        ];
        let mut i = 0u64;
        for (n, kind, name) in dots {
            i += 1;
            if i > offset && reply.add(INodeNo(n), i, kind, name) {
                return reply.ok();
            }
        }
        for e in names {
            i += 1;
            if i <= offset {
                continue;
            }
            let Ok(m) = e.metadata() else { continue };
            let child = self.node(&e.path(), &m);
            if reply.add(INodeNo(child), i, kind_of(&m), e.file_name()) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let run = || -> Result<libc::statvfs, Errno> {
            let c = cpath(&self.path(INodeNo::ROOT)?)?;
            // SAFETY: `st` is written by statvfs, which only reads the path.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
                return Err(last_errno());
            }
            Ok(st)
        };
        match run() {
            Ok(st) => reply.statfs(
                st.f_blocks,
                st.f_bfree,
                st.f_bavail,
                st.f_files,
                st.f_ffree,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let res = self.opened(fh).and_then(|(f, _)| {
            // SAFETY: a file descriptor this file system holds open.
            let r = unsafe {
                libc::fallocate(
                    std::os::fd::AsRawFd::as_raw_fd(&*f),
                    mode,
                    offset as libc::off_t,
                    length as libc::off_t,
                )
            };
            if r == 0 {
                Ok(())
            } else {
                Err(last_errno())
            }
        });
        done(reply, res);
    }
}
