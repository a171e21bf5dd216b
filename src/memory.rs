//! Reference-counted memory: owned host allocations aligned to 64 bytes (large ones kept for reuse
//! when freed, up to a bound: `host_block`), or a caller's buffer that is handed back through a
//! release callback exactly once, when the last reference goes. Device memory comes from each
//! CUDA device's caching allocator (`backend::cuda`), which keeps freed blocks for reuse, up to
//! a bound of its own ([`set_device_cache_limit`], none by default), until
//! [`empty_device_cache`] or until the driver refuses an allocation.

pub(crate) mod block_cache;
mod host_block;
pub(crate) mod lists;
pub(crate) mod pages;
pub mod size_class;

/// Each CUDA device's caching allocator: what it holds, the bound on what it keeps, and giving its
/// kept blocks back; and the device's free and total memory as the driver reports them
/// (`Unsupported` without CUDA or without the device).
pub use crate::backend::cuda::{
    device_cache_limit, device_free_memory, device_memory_info, empty_device_cache, set_device_cache_limit,
};
pub use host_block::{host_cache_info, set_host_cache_limit, CACHED_MIN, DEFAULT_HOST_CACHE_LIMIT, HUGE_PAGE_MIN};

use crate::backend::cuda::DeviceBlock;
use crate::error::{err, Result};
use crate::place::Place;
use host_block::HostBlock;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// Alignment of owned allocations: a cache line, and enough for any SIMD load.
pub const ALIGNMENT: usize = 64;

/// Called once when the last reference to a borrowed allocation goes.
pub type Release = Box<dyn FnOnce() + Send + Sync>;

enum Origin {
    /// Owned host memory; its drop keeps it in the host block cache or frees it.
    Host(#[allow(dead_code)] HostBlock),
    Borrowed(Option<Release>),
    /// A block of the CUDA backend's caching allocator, handed back to it on drop (an uninhabited
    /// type in builds without CUDA). `None` for a zero-length device allocation.
    Device(#[allow(dead_code)] Option<DeviceBlock>),
}

/// The byte that fills uninitialised allocations under `LODTENSOR_POISON_UNINIT=1`: elements made
/// of it are unlikely results (as f32 -2.9e-16, as int32 -1515870811), unlike zeros.
pub const POISON: u8 = 0xA5;

pub(crate) fn poison_uninit() -> bool {
    env_flag("LODTENSOR_POISON_UNINIT", &POISON_UNINIT)
}
static POISON_UNINIT: OnceLock<bool> = OnceLock::new();

/// Whether owned allocations are guarded (`LODTENSOR_GUARD_PAGES=1`, read once; a checking mode
/// for tests): each host block, and each device block of the CUDA emulator, is mapped for itself
/// against a page that faults on any access, and no block is cached. Every other block ends
/// exactly where the bytes asked for do, at its guard page; the others start right after theirs.
/// A kernel that reads or writes past the end of a buffer, or before its start, then stops the
/// process at that access (in the calls where that buffer is guarded on that side), where
/// otherwise the rest of a size-class block, or a neighbour, would quietly serve it. A block
/// guarded at its end is aligned only to the largest power of two that divides its length (which
/// may be less than the 64 bytes of [`ALIGNMENT`]; enough for its elements). The caches' figures
/// (`host_cache_info`, `device_memory_info`) then say nothing is kept. Each block takes two of the
/// process's memory mappings, so a process that holds more than about 32 000 blocks at once meets
/// Linux's limit on them (`vm.max_map_count`) and gets `OutOfMemory`.
pub(crate) fn guard_pages() -> bool {
    env_flag("LODTENSOR_GUARD_PAGES", &GUARD_PAGES)
}
static GUARD_PAGES: OnceLock<bool> = OnceLock::new();

/// Whether environment variable `name` is "1", read once into `flag`.
pub(crate) fn env_flag(name: &str, flag: &OnceLock<bool>) -> bool {
    *flag.get_or_init(|| std::env::var_os(name).is_some_and(|v| v == "1"))
}

/// A block of memory on one place. Shared through `Arc`; never resized.
pub struct Allocation {
    ptr: NonNull<u8>,
    len: usize,
    place: Place,
    origin: Origin,
}

// SAFETY: the allocation is a plain byte buffer; synchronising writes to it is the job of its users
// (the Rust API hands out `&mut` only for uniquely held allocations).
unsafe impl Send for Allocation {}
unsafe impl Sync for Allocation {}

impl Allocation {
    /// A zero-filled host allocation of `len` bytes. A zero-length allocation allocates nothing.
    pub fn zeroed(len: usize) -> Result<Arc<Allocation>> {
        Allocation::host(len, true)
    }

    /// A host allocation of `len` bytes whose contents are unspecified until written: for outputs
    /// a kernel writes completely, which then skip the zero fill (on a block the heap reuses, a
    /// `memset` of the whole output: one more write pass than the kernel's own). Nothing may read
    /// a byte before it is written.
    ///
    /// With the environment variable `LODTENSOR_POISON_UNINIT=1` (read once) every such block is
    /// filled with the byte 0xA5 instead, so that a test reading an output byte no kernel wrote
    /// sees the same wrong value on every run (the test script sets it for the Rust tests).
    pub fn uninit(len: usize) -> Result<Arc<Allocation>> {
        Allocation::uninit_or_poisoned(len, poison_uninit())
    }

    fn uninit_or_poisoned(len: usize, poison: bool) -> Result<Arc<Allocation>> {
        let a = Allocation::host(len, false)?;
        if poison {
            // SAFETY: freshly allocated with `len` bytes, not shared yet.
            unsafe { std::ptr::write_bytes(a.ptr.as_ptr(), POISON, len) };
        }
        Ok(a)
    }

    fn host(len: usize, zeroed: bool) -> Result<Arc<Allocation>> {
        let block = HostBlock::new(len, zeroed)?;
        Ok(Arc::new(Allocation { ptr: block.ptr(), len, place: Place::Cpu, origin: Origin::Host(block) }))
    }

    /// A host allocation holding a copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> Result<Arc<Allocation>> {
        let a = Allocation::uninit(bytes.len())?;
        // SAFETY: freshly allocated with exactly `bytes.len()` bytes, not shared yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a.ptr.as_ptr(), bytes.len()) };
        Ok(a)
    }

    /// Wraps a caller's buffer without copying. `release` runs exactly once, on whichever thread
    /// drops the last reference. If this function fails, `release` is dropped without being called.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes on `place` until `release` runs.
    pub unsafe fn borrowed(
        ptr: *mut u8,
        len: usize,
        place: Place,
        release: Option<Release>,
    ) -> Result<Arc<Allocation>> {
        let ptr = match NonNull::new(ptr) {
            Some(p) => p,
            None if len == 0 => NonNull::new(ALIGNMENT as *mut u8).expect("non-zero"),
            None => return Err(err!(NullArgument, "data: NULL for a buffer of {len} bytes")),
        };
        Ok(Arc::new(Allocation { ptr, len, place, origin: Origin::Borrowed(release) }))
    }

    /// Device memory of `len` bytes on `place` (a CUDA place) from the CUDA backend's allocator;
    /// `block` is `None` only for `len` 0.
    pub fn device(block: Option<DeviceBlock>, len: usize, place: Place) -> Arc<Allocation> {
        let ptr = block
            .as_ref()
            .and_then(|b| NonNull::new(b.ptr()))
            .unwrap_or_else(|| NonNull::new(ALIGNMENT as *mut u8).expect("non-zero"));
        Arc::new(Allocation { ptr, len, place, origin: Origin::Device(block) })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn place(&self) -> Place {
        self.place
    }

    pub fn is_borrowed(&self) -> bool {
        matches!(self.origin, Origin::Borrowed(_))
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        match &mut self.origin {
            // The blocks' own drops keep them in their cache or free them.
            Origin::Host(_) | Origin::Device(_) => {}
            Origin::Borrowed(release) => {
                if let Some(release) = release.take() {
                    // Kernels queued on the device may still use the caller's buffer: let them finish
                    // before handing it back (a failure here has nobody to report to).
                    if let Place::Cuda(n) = self.place {
                        let _ = crate::backend::cuda::synchronize(n);
                    }
                    release();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The alignment an owned block of `len` bytes has: ALIGNMENT, or under guard pages the
    /// largest power of two dividing the length, up to ALIGNMENT (see `guard_pages`).
    fn alignment_of(len: usize) -> usize {
        if guard_pages() && len > 0 {
            (len & len.wrapping_neg()).min(ALIGNMENT)
        } else {
            ALIGNMENT
        }
    }

    #[test]
    fn owned_is_aligned_and_zeroed() {
        let a = Allocation::zeroed(100).unwrap();
        assert_eq!(a.as_ptr() as usize % alignment_of(100), 0);
        assert!(unsafe { std::slice::from_raw_parts(a.as_ptr(), 100) }.iter().all(|&b| b == 0));
        assert_eq!(Allocation::zeroed(0).unwrap().len(), 0);
        let big = Allocation::zeroed(HUGE_PAGE_MIN + 100).unwrap();
        assert_eq!(big.as_ptr() as usize % alignment_of(big.len()), 0);
        let bytes = unsafe { std::slice::from_raw_parts_mut(big.as_ptr(), big.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes.fill(7); // every byte is writable
        assert!(Allocation::zeroed(usize::MAX).is_err());
    }

    #[test]
    fn uninit_is_aligned_writable_and_poisoned_on_request() {
        for len in [0, 100, HUGE_PAGE_MIN + 100] {
            let a = Allocation::uninit_or_poisoned(len, true).unwrap();
            assert_eq!((a.len(), a.as_ptr() as usize % alignment_of(len)), (len, 0));
            let bytes = unsafe { std::slice::from_raw_parts_mut(a.as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == POISON));
            bytes.fill(7);
            let b = Allocation::uninit_or_poisoned(len, false).unwrap();
            unsafe { std::ptr::write_bytes(b.as_ptr(), 7, len) };
        }
        assert!(Allocation::uninit(usize::MAX).is_err());
    }

    #[test]
    fn release_runs_once_after_last_reference() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let mut buf = [1u8; 8];
        let a = unsafe {
            Allocation::borrowed(
                buf.as_mut_ptr(),
                8,
                Place::Cpu,
                Some(Box::new(|| {
                    CALLS.fetch_add(1, Ordering::SeqCst);
                })),
            )
        }
        .unwrap();
        let b = a.clone();
        drop(a);
        assert_eq!(CALLS.load(Ordering::SeqCst), 0);
        drop(b);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }
}
