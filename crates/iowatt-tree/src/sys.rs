//! The few system calls a recreation makes, each relative to an open directory. Directories are
//! opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from the destination's fd, and
//! entries are made by one name in such a directory with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW, so a
//! symlink planted in the destination cannot send a write anywhere else.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Opens `path` (relative, `/`-separated) beneath `root`, following no symlink on the way.
pub(crate) fn open_beneath(root: &OwnedFd, path: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstr(path)?;
    // SAFETY: open_how is plain data; zeroed is a valid value (and what the kernel wants of
    // fields it does not know).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    loop {
        // SAFETY: a valid C string and open_how of the size passed.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if ret >= 0 {
            // SAFETY: the kernel returned a new fd that nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) });
        }
        let e = io::Error::last_os_error();
        // EAGAIN: a concurrent rename elsewhere on the file system; the kernel asks to retry.
        if e.raw_os_error() != Some(libc::EAGAIN) {
            return Err(e);
        }
    }
}

/// Opens a directory given by the caller (the destination itself).
pub(crate) fn open_dir(path: &[u8]) -> io::Result<OwnedFd> {
    let c = cstr(path)?;
    // SAFETY: a valid C string.
    let fd = check(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the entry `name` of `dir` without following it if it is a symlink.
pub(crate) fn open_at(
    dir: &OwnedFd,
    name: &[u8],
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: a valid C string; the fd is open.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(crate) fn mkdir_at(dir: &OwnedFd, name: &[u8], mode: u32) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: a valid C string; the fd is open.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub(crate) fn symlink_at(target: &[u8], dir: &OwnedFd, name: &[u8]) -> io::Result<()> {
    let (t, c) = (cstr(target)?, cstr(name)?);
    // SAFETY: valid C strings; the fd is open.
    check(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), c.as_ptr()) }).map(drop)
}

pub(crate) fn unlink_at(dir: &OwnedFd, name: &[u8], is_dir: bool) -> io::Result<()> {
    let c = cstr(name)?;
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: a valid C string; the fd is open.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) }).map(drop)
}

/// What is at `name` in `dir`, not following a symlink; `None` if nothing is.
pub(crate) fn lstat_at(dir: &OwnedFd, name: &[u8]) -> io::Result<Option<libc::stat>> {
    let c = cstr(name)?;
    // SAFETY: stat is plain data; zeroed is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string, a stat buffer; the fd is open.
    let ret = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if ret == 0 {
        return Ok(Some(st));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(e)
    }
}

pub(crate) fn readlink_at(dir: &OwnedFd, name: &[u8]) -> io::Result<Vec<u8>> {
    let c = cstr(name)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: a valid C string and a buffer of the length passed.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            c.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn timespecs(atime_ns: i64, mtime_ns: i64) -> [libc::timespec; 2] {
    let ts = |ns: i64| libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000) as libc::time_t,
        tv_nsec: ns.rem_euclid(1_000_000_000) as libc::c_long,
    };
    [ts(atime_ns), ts(mtime_ns)]
}

/// Sets the times of `name` in `dir` itself (a symlink's own times).
pub(crate) fn set_times_at(
    dir: &OwnedFd,
    name: &[u8],
    atime_ns: i64,
    mtime_ns: i64,
) -> io::Result<()> {
    let c = cstr(name)?;
    let t = timespecs(atime_ns, mtime_ns);
    // SAFETY: a valid C string and two timespecs; the fd is open.
    check(unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            c.as_ptr(),
            t.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

pub(crate) fn set_times(fd: &OwnedFd, atime_ns: i64, mtime_ns: i64) -> io::Result<()> {
    let t = timespecs(atime_ns, mtime_ns);
    // SAFETY: two timespecs; the fd is open.
    check(unsafe { libc::futimens(fd.as_raw_fd(), t.as_ptr()) }).map(drop)
}

pub(crate) fn set_mode(fd: &OwnedFd, mode: u32) -> io::Result<()> {
    // SAFETY: the fd is open.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) }).map(drop)
}

pub(crate) fn truncate(fd: &OwnedFd, size: u64) -> io::Result<()> {
    // SAFETY: the fd is open.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) }).map(drop)
}

pub(crate) fn write_all(fd: &OwnedFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: a buffer of the length passed; the fd is open.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

pub(crate) fn mtime_ns(st: &libc::stat) -> i64 {
    st.st_mtime * 1_000_000_000 + st.st_mtime_nsec
}
