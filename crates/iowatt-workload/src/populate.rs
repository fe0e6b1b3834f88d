//! Laying filesets out on disk before the clock starts: the directory tree, then the
//! preallocated share of the files, written with incompressible data (or data of the fileset's
//! entropy) on several threads, then flushed out of the page cache (as FileBench's FileMacro
//! profile flushes before measuring).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::entropy::DataSource;
use crate::error::WorkloadError;
use crate::fileset::{FilesetState, Layout};
use crate::progress::Progress;
use crate::spec::{FilesetSpec, Workload};
use iowatt_metrics::Rng;

const CHUNK: usize = 1 << 20;
/// FileBench's MAX_PARALLOC_THREADS is 32; beyond a few writers a disk gains nothing.
const MAX_WRITERS: usize = 8;

/// Lays out and creates every fileset of the workload.
pub fn populate(w: &Workload, progress: &Progress) -> Result<Vec<FilesetState>, WorkloadError> {
    let mut rng = Rng::stream(w.seed, u64::MAX - 1);
    let mut plans = Vec::new();
    for spec in &w.filesets {
        let layout = Layout::new(spec, &mut rng);
        let reused = spec.reuse && layout.root.exists();
        if !reused && !spec.single && layout.root.exists() {
            return Err(WorkloadError::Invalid(format!(
                "fileset `{}`: `{}` already exists and iowatt deletes only what it created; \
                 remove it or add `reuse`",
                spec.name,
                layout.root.display()
            )));
        }
        let prealloc: Vec<bool> = (0..layout.files.len())
            .map(|_| rng.below(100) < u64::from(spec.prealloc.min(100)))
            .collect();
        let leafdirs: Vec<bool> = (0..layout.leafdirs.len())
            .map(|_| rng.below(100) < u64::from(spec.prealloc.min(100)))
            .collect();
        plans.push((spec, layout, prealloc, leafdirs, reused));
    }
    let mut todo = Vec::new();
    let sources: Vec<Option<DataSource>> = w
        .filesets
        .iter()
        .map(|s| s.entropy.map(|e| DataSource::new(e, &mut rng)))
        .collect();
    for (set, (spec, layout, prealloc, leafdirs, reused)) in plans.iter().enumerate() {
        // A path the planner mapped under the work directory (`path=/tmp` is `$dir/tmp`) does
        // not exist yet.
        if let Some(parent) = layout.root.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WorkloadError::io("mkdir", parent, e))?;
        }
        for d in &layout.dirs {
            mkdir(d)?;
        }
        for (d, _) in layout.leafdirs.iter().zip(leafdirs).filter(|(_, &x)| x) {
            mkdir(d)?;
        }
        for (i, path) in layout.files.iter().enumerate() {
            let keep = *reused && path.exists();
            if prealloc[i] && !keep {
                todo.push((path.clone(), layout.sizes[i], sources[set].as_ref()));
            } else if !prealloc[i] && spec.single && !*reused && path.exists() {
                // A `define file` without prealloc starts absent; never remove a user's file.
                return Err(WorkloadError::Invalid(format!(
                    "file `{}` already exists; iowatt deletes only what it created",
                    path.display()
                )));
            }
        }
    }
    progress.set_prepare_total(todo.iter().map(|t| t.1).sum());
    write_files(&todo, w.seed, progress)?;
    drop_caches(&w.filesets, &todo);
    let mut states = Vec::new();
    for ((spec, layout, prealloc, leafdirs, reused), data) in plans.iter().zip(sources) {
        let exists: Vec<bool> = if *reused {
            layout.files.iter().map(|p| p.exists()).collect()
        } else {
            prealloc.clone()
        };
        states.push(FilesetState::new(spec, layout, &exists, leafdirs, data));
    }
    Ok(states)
}

fn mkdir(d: &Path) -> Result<(), WorkloadError> {
    match std::fs::create_dir(d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(WorkloadError::io("mkdir", d, e)),
    }
}

/// A file to lay out: its path, size and the data it is filled with (random bytes if none).
type ToWrite<'a> = (PathBuf, u64, Option<&'a DataSource>);

fn write_files(todo: &[ToWrite<'_>], seed: u64, progress: &Progress) -> Result<(), WorkloadError> {
    let next = AtomicUsize::new(0);
    let writers = std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .min(MAX_WRITERS)
        .min(todo.len().max(1));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|t| {
                let next = &next;
                s.spawn(move || {
                    let mut rng = Rng::stream(seed, 1 << 40 | t as u64);
                    let mut chunk = vec![0u8; CHUNK];
                    rng.fill(&mut chunk);
                    // Whether the chunk holds random bytes (not a fileset's chosen entropy).
                    let mut random = true;
                    loop {
                        if progress.is_cancelled() {
                            return Err(WorkloadError::Cancelled);
                        }
                        let i = next.fetch_add(1, Relaxed);
                        let Some((path, size, data)) = todo.get(i) else {
                            return Ok(());
                        };
                        match data {
                            Some(source) => source.fill(&mut chunk, &mut rng),
                            None if !random => rng.fill(&mut chunk),
                            None => {}
                        }
                        random = data.is_none();
                        write_file(path, *size, &mut chunk, &mut rng, data.is_none(), progress)?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("file writer panicked"))
    })
}

fn write_file(
    path: &Path,
    size: u64,
    chunk: &mut [u8],
    rng: &mut Rng,
    random: bool,
    progress: &Progress,
) -> Result<(), WorkloadError> {
    let io = |op, e| WorkloadError::io(op, path, e);
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io("create", e))?;
    let mut off = 0;
    while off < size {
        let n = (size - off).min(CHUNK as u64) as usize;
        // Fresh bytes at the start of each chunk keep files from deduplicating, at a fraction
        // of the cost of refilling the whole chunk (data of a chosen entropy is left as is).
        if random {
            rng.fill(&mut chunk[..n.min(64)]);
        }
        file.write_all_at(&chunk[..n], off)
            .map_err(|e| io("fill", e))?;
        off += n as u64;
        progress.add_prepared(n as u64);
    }
    Ok(())
}

/// Writes the new files back and drops them from the page cache, so the run starts cold.
fn drop_caches(filesets: &[FilesetSpec], written: &[ToWrite<'_>]) {
    for spec in filesets {
        if let Ok(dir) = File::open(&spec.path) {
            // SAFETY: a valid fd; syncfs only flushes.
            unsafe { libc::syncfs(dir.as_raw_fd()) };
        }
    }
    for (path, ..) in written {
        if let Ok(f) = File::open(path) {
            // SAFETY: a valid fd; advice only affects caching.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}
