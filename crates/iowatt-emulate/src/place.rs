//! Where a file's bytes lie on the emulated disk: where the backing file system put them
//! (FIEMAP), folded onto the model's capacity, or — where the file system gives no extents
//! (tmpfs, or data not yet allocated) — in the order the disk first saw them, a chunk at a
//! time, as a fresh file system allocates.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

/// The unit of allocation order: a file's chunk is laid out contiguously.
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

/// Allocation order: (file key, chunk) to the disk chunk it got, and the next free chunk.
#[derive(Default)]
struct Chunks {
    placed: HashMap<(u64, u64), u64>,
    next: u64,
}

/// Disk offsets for file offsets, one model disk of `capacity` bytes.
pub struct Placement {
    capacity: u64,
    chunks: Mutex<Chunks>,
}

impl Placement {
    pub fn new(capacity: u64) -> Self {
        Placement {
            capacity: capacity.max(CHUNK),
            chunks: Mutex::new(Chunks::default()),
        }
    }

    /// Where byte `offset` of `file` (known by `key`, e.g. its inode) lies on the disk.
    pub fn disk_offset(&self, file: &File, key: u64, offset: u64) -> u64 {
        match physical(file, offset) {
            Some(p) => p % self.capacity,
            None => self.allocated(key, offset),
        }
    }

    fn allocated(&self, key: u64, offset: u64) -> u64 {
        let mut g = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let Chunks { placed, next } = &mut *g;
        let chunks = self.capacity / CHUNK;
        let chunk = *placed.entry((key, offset / CHUNK)).or_insert_with(|| {
            let c = *next % chunks;
            *next += 1;
            c
        });
        chunk * CHUNK + offset % CHUNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_order_lays_chunks_out_as_first_seen() {
        let p = Placement::new(4 * CHUNK);
        // tmpfs-like: no extents, so the order of first touch decides.
        assert_eq!(p.allocated(7, 10), 10);
        assert_eq!(p.allocated(9, 5), CHUNK + 5);
        assert_eq!(p.allocated(7, CHUNK + 1), 2 * CHUNK + 1);
        assert_eq!(
            p.allocated(7, 20),
            20,
            "the same chunk stays where it was put"
        );
        // Past the capacity, allocation wraps round.
        assert_eq!(p.allocated(1, 0), 3 * CHUNK);
        assert_eq!(p.allocated(2, 0), 0);
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
            // tmpfs and others: allocation order.
            None => assert_eq!(p.disk_offset(&f, 1, 4096), 4096),
        }
    }
}
