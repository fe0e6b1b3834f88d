//! I/O buffers aligned for O_DIRECT (4 KiB covers every logical block size in use) and filled
//! with random bytes so written data does not compress or deduplicate.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use iowatt_metrics::Rng;

const ALIGN: usize = 4096;

pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory; only one thread uses it at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize, rng: &mut Rng) -> Self {
        let layout = Layout::from_size_align(len.max(1).next_multiple_of(ALIGN), ALIGN)
            .expect("buffer size fits in memory");
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating an I/O buffer");
        let mut buf = Self { ptr, layout };
        rng.fill(buf.as_mut_slice());
        buf
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
