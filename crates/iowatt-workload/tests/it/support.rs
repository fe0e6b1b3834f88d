use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        Self::under(&std::env::temp_dir(), tag)
    }

    /// In memory (/dev/shm, where there is one): for tests of the engine's own timing, which
    /// a disk busy writing back someone else's files would slow down.
    pub fn in_memory(tag: &str) -> Self {
        let shm = Path::new("/dev/shm");
        Self::under(if shm.is_dir() { shm } else { Path::new("/tmp") }, tag)
    }

    fn under(root: &Path, tag: &str) -> Self {
        let path = root.join(format!(
            "iowatt-it-{tag}-{}-{}",
            std::process::id(),
            iowatt_metrics::now_ns()
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Which 4 KiB pages of a file are in the page cache.
pub fn mincore_pages(path: &Path) -> Vec<bool> {
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: a read-only shared mapping of the whole file, unmapped before returning.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
        libc::munmap(addr, len);
    }
    vec.into_iter().map(|b| b & 1 == 1).collect()
}

/// Held by every test that runs the engine: a run timed by its test (a rate limit) shares two
/// cores badly with another run going as fast as it can, so they run one at a time.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
