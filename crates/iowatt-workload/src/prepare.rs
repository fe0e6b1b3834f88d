//! Files exist, hold incompressible data and are out of the page cache before the clock starts,
//! so a read never hits a hole and the first measured reads come from the device, as with fio.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::WorkloadError;
use crate::progress::Progress;
use crate::spec::{FileSpec, Workload};
use iowatt_metrics::Rng;

const FILL_CHUNK: usize = 1 << 20;

/// Creates and fills every file of the workload that needs it.
pub fn prepare(workload: &Workload, progress: &Progress) -> Result<(), WorkloadError> {
    let todo: Vec<&FileSpec> = workload
        .files
        .iter()
        .filter(|f| !f.device && !reusable(f))
        .collect();
    progress.set_prepare_total(todo.iter().filter(|f| f.prealloc).map(|f| f.size).sum());
    let mut rng = Rng::stream(workload.seed, u64::MAX);
    for spec in todo {
        create(spec, &mut rng, progress)?;
    }
    for spec in workload.files.iter().filter(|f| !f.device) {
        drop_cache(&spec.path)?;
    }
    Ok(())
}

/// FileBench's `reuse`: an existing file of the right size is kept as it is.
fn reusable(spec: &FileSpec) -> bool {
    spec.reuse && std::fs::metadata(&spec.path).is_ok_and(|m| m.is_file() && m.len() == spec.size)
}

fn create(spec: &FileSpec, rng: &mut Rng, progress: &Progress) -> Result<(), WorkloadError> {
    let io = |op, e| WorkloadError::io(op, &spec.path, e);
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&spec.path)
        .map_err(|e| io("create", e))?;
    if !spec.prealloc || spec.size == 0 {
        return Ok(());
    }
    let mut chunk = vec![0u8; FILL_CHUNK];
    let mut off = 0;
    while off < spec.size {
        if progress.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        let n = (spec.size - off).min(FILL_CHUNK as u64) as usize;
        rng.fill(&mut chunk[..n]);
        file.write_all_at(&chunk[..n], off)
            .map_err(|e| io("fill", e))?;
        off += n as u64;
        progress.add_prepared(n as u64);
    }
    file.sync_all().map_err(|e| io("fsync", e))
}

fn drop_cache(path: &Path) -> Result<(), WorkloadError> {
    let file = File::open(path).map_err(|e| WorkloadError::io("open", path, e))?;
    file.sync_all()
        .map_err(|e| WorkloadError::io("fsync", path, e))?;
    // SAFETY: a valid fd; advice only affects caching.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// Opens a file for a flowop with the flags it asks for.
pub fn open_for(
    spec: &FileSpec,
    write: bool,
    directio: bool,
    dsync: bool,
) -> Result<File, WorkloadError> {
    let mut flags = 0;
    if directio {
        flags |= libc::O_DIRECT;
    }
    if dsync {
        flags |= libc::O_DSYNC;
    }
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(flags)
        .open(&spec.path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) if directio => WorkloadError::DirectIoUnsupported {
                path: spec.path.clone(),
            },
            _ => WorkloadError::io("open", &spec.path, e),
        })
}
