//! Where a file's bytes lie on the emulated disk: where the backing file system put them
//! (FIEMAP), folded onto the model's capacity, or — where the file system gives no extents
//! (tmpfs, holes, data not yet allocated) — in allocation order: each file gets a contiguous
//! run of the disk the size it has when first seen, the next file the run after it, and bytes
//! a file grows past its run a new run of their own, as a fresh file system allocates.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

/// The unit runs are rounded up to.
const CHUNK: u64 = 1 << 20;

// linux/fiemap.h
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_EXTENT_UNKNOWN: u32 = 0x0002;
const FIEMAP_EXTENT_DELALLOC: u32 = 0x0004;

#[repr(C)]
#[derive(Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
#[derive(Default)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extent: FiemapExtent,
}

/// The physical byte of `file` at `offset`, if the file system says where it is.
fn physical(file: &File, offset: u64) -> Option<u64> {
    let mut map = Fiemap {
        start: offset,
        length: 1,
        extent_count: 1,
        ..Fiemap::default()
    };
    // SAFETY: `map` is a `struct fiemap` with room for the one extent it asks for.
    let res = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut map) };
    let e = &map.extent;
    let unplaced = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC;
    (res == 0 && map.mapped_extents == 1 && e.flags & unplaced == 0 && e.logical <= offset)
        .then(|| e.physical + (offset - e.logical))
}

/// A run of the disk holding a file's bytes from `file` on: `len` bytes at `disk`.
#[derive(Clone, Copy)]
struct Run {
    file: u64,
    disk: u64,
    len: u64,
}

/// Allocation order: each file's runs, and the next free byte of the disk.
#[derive(Default)]
struct Runs {
    by_file: HashMap<u64, Vec<Run>>,
    next: u64,
}

/// Disk offsets for file offsets, over `capacity` bytes.
pub struct Placement {
    capacity: u64,
    /// Runs are rounded up to this; a file system's extents are followed only when set.
    unit: u64,
    fiemap: bool,
    runs: Mutex<Runs>,
}

impl Placement {
    /// One model disk: the file system's extents where it gives them.
    pub fn new(capacity: u64) -> Self {
        Placement {
            capacity: capacity.max(CHUNK),
            unit: CHUNK,
            fiemap: true,
            runs: Mutex::new(Runs::default()),
        }
    }

    /// An array of `capacity` bytes: every file in allocation order, in runs of `unit` bytes
    /// (a block), as the simulator lays a tree out from the array's start.
    pub fn allocation_order(capacity: u64, unit: u64) -> Self {
        Placement {
            capacity: capacity.max(unit),
            unit: unit.max(1),
            fiemap: false,
            runs: Mutex::new(Runs::default()),
        }
    }

    /// Where byte `offset` of `file` (known by `key`, e.g. its inode) lies on the disk.
    pub fn disk_offset(&self, file: &File, key: u64, offset: u64) -> u64 {
        match self.fiemap.then(|| physical(file, offset)).flatten() {
            Some(p) => p % self.capacity,
            // The file's size is asked for only when a run is laid out, not on every request.
            None => self.allocated(key, offset, || file.metadata().map_or(0, |m| m.len())),
        }
    }

    /// Where the first byte of a file of `size` bytes known by `key` lies, in allocation
    /// order (the file need not be open).
    pub fn first_byte(&self, key: u64, size: u64) -> u64 {
        self.allocated(key, 0, || size)
    }

    /// Byte `offset` of a file of `size()` bytes in allocation order.
    fn allocated(&self, key: u64, offset: u64, size: impl FnOnce() -> u64) -> u64 {
        let mut g = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let Runs { by_file, next } = &mut *g;
        let runs = by_file.entry(key).or_default();
        let run = match runs
            .iter()
            .find(|r| (r.file..r.file + r.len).contains(&offset))
        {
            Some(r) => *r,
            None => {
                // A file first seen: all of it; bytes it grew by: from their unit to its end.
                let unit = self.unit;
                let file = if runs.is_empty() {
                    0
                } else {
                    offset / unit * unit
                };
                let len = (size().max(offset + 1) - file).div_ceil(unit) * unit;
                let r = Run {
                    file,
                    disk: *next,
                    len,
                };
                *next += len;
                runs.push(r);
                r
            }
        };
        (run.disk + (offset - run.file)) % self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_order_lays_each_file_out_whole_in_the_order_first_seen() {
        let p = Placement::new(100 * CHUNK);
        // A file of 3 chunks, seen first at its end: its run starts at the disk's start.
        assert_eq!(p.allocated(7, 2 * CHUNK + 10, || 3 * CHUNK), 2 * CHUNK + 10);
        assert_eq!(
            p.allocated(7, 10, || 3 * CHUNK),
            10,
            "the whole file is one run"
        );
        // The next file goes after it.
        assert_eq!(p.allocated(9, 5, || 100), 3 * CHUNK + 5);
        // Bytes the first file grew by get a run of their own, after the second file's.
        assert_eq!(
            p.allocated(7, 3 * CHUNK + 1, || 3 * CHUNK + 2),
            4 * CHUNK + 1
        );
        // Past the capacity, offsets fold round.
        assert_eq!(p.allocated(1, 0, || 200 * CHUNK), 5 * CHUNK);
        assert_eq!(p.allocated(1, 99 * CHUNK, || 200 * CHUNK), 4 * CHUNK);
    }

    fn tempfile() -> File {
        let path = std::env::temp_dir().join(format!("iowatt-place-{}", std::process::id()));
        let f = File::create(&path).expect("temp file");
        std::fs::remove_file(&path).expect("removed");
        f
    }

    #[test]
    fn an_allocated_extent_is_found_where_the_file_system_put_it() {
        use std::io::Write;
        let mut f = tempfile();
        f.write_all(&[1u8; 8192]).expect("written");
        f.sync_all().expect("synced");
        let p = Placement::new(u64::MAX / 2);
        match physical(&f, 4096) {
            // Where the file system maps extents, the second block follows the first.
            Some(at) => {
                let first = physical(&f, 0).expect("mapped too");
                assert_eq!(p.disk_offset(&f, 1, 4096), at);
                assert!(at >= first);
            }
            // tmpfs and others: allocation order, the file at the disk's start.
            None => assert_eq!(p.disk_offset(&f, 1, 4096), 4096),
        }
    }
}
