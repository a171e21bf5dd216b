//! Reference-counted memory: owned host allocations aligned to 64 bytes, or a caller's buffer that
//! is handed back through a release callback exactly once, when the last reference goes.

use crate::backend::cuda::DeviceBlock;
use crate::error::{err, Result};
use crate::place::Place;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of owned allocations: a cache line, and enough for any SIMD load.
pub const ALIGNMENT: usize = 64;

/// Called once when the last reference to a borrowed allocation goes.
pub type Release = Box<dyn FnOnce() + Send + Sync>;

enum Origin {
    Owned(Layout),
    /// Pages mapped for this allocation alone (large owned allocations on Linux): `len` bytes
    /// from `ptr`, unmapped on drop.
    Mapped(usize),
    Borrowed(Option<Release>),
    /// A block of the CUDA backend's caching allocator, handed back to it on drop (an uninhabited
    /// type in builds without CUDA). `None` for a zero-length device allocation.
    Device(#[allow(dead_code)] Option<DeviceBlock>),
}

/// Owned allocations of at least this many bytes get their own transparent-huge-page mapping.
/// glibc's malloc maps every block this large afresh (32 MiB is the most its adaptive mmap
/// threshold grows to), so an op's output would be faulted in 4 KiB page by page on every call,
/// and on the project's VMs that ran at ~2 GB/s, slower than the copy itself; huge pages fault
/// at ~9 GB/s. Below this size glibc reuses freed heap blocks, which is faster still, so those
/// stay on the heap (benches/REPORT.md).
pub const HUGE_PAGE_MIN: usize = 32 << 20;

/// The transparent huge page size of x86-64 and (4 KiB-granule) aarch64 Linux: mappings are
/// rounded up to and aligned at it.
const HUGE_PAGE: usize = 2 << 20;

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod os {
    use std::ffi::c_void;
    extern "C" {
        fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> i32;
        fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
    }
    const PROT_READ: i32 = 1;
    const PROT_WRITE: i32 = 2;
    const MAP_PRIVATE: i32 = 2;
    const MAP_ANONYMOUS: i32 = 0x20;
    const MADV_HUGEPAGE: i32 = 14;
    use super::HUGE_PAGE as HUGE;

    /// A zero-filled mapping of `len` bytes (a multiple of 2 MiB) aligned to 2 MiB, advised to use
    /// huge pages; `None` when the system refuses (the caller falls back to the heap).
    pub(super) fn map_huge(len: usize) -> Option<*mut u8> {
        let span = len.checked_add(HUGE)?;
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let base =
            unsafe { mmap(std::ptr::null_mut(), span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) };
        if base as isize == -1 {
            return None;
        }
        let start = (base as usize).next_multiple_of(HUGE);
        let (head, tail) = (start - base as usize, span - (start - base as usize) - len);
        // SAFETY: unmapping the unaligned head and tail of the mapping just made; advising its
        // middle. madvise failing (THP disabled) only loses the speed-up.
        unsafe {
            if head > 0 {
                munmap(base, head);
            }
            if tail > 0 {
                munmap((start + len) as *mut c_void, tail);
            }
            madvise(start as *mut c_void, len, MADV_HUGEPAGE);
        }
        Some(start as *mut u8)
    }

    /// # Safety
    /// `ptr` and `len` come from one `map_huge` call, unmapped once.
    pub(super) unsafe fn unmap(ptr: *mut u8, len: usize) {
        munmap(ptr.cast(), len);
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod os {
    pub(super) fn map_huge(_len: usize) -> Option<*mut u8> {
        None
    }
    pub(super) unsafe fn unmap(_ptr: *mut u8, _len: usize) {}
}

/// The byte that fills uninitialised allocations under `LODTENSOR_POISON_UNINIT=1`: elements made
/// of it are unlikely results (as f32 -2.9e-16, as int32 -1515870811), unlike zeros.
pub const POISON: u8 = 0xA5;

fn poison_uninit() -> bool {
    static POISON_UNINIT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *POISON_UNINIT.get_or_init(|| std::env::var_os("LODTENSOR_POISON_UNINIT").is_some_and(|v| v == "1"))
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
        let layout = Layout::from_size_align(len, ALIGNMENT)
            .map_err(|_| err!(OutOfMemory, "allocation of {len} bytes is too large"))?;
        if len >= HUGE_PAGE_MIN {
            let mapped = len.checked_next_multiple_of(HUGE_PAGE).and_then(|m| Some((m, os::map_huge(m)?)));
            if let Some((mapped_len, ptr)) = mapped {
                // Fresh anonymous pages are zero: nothing to clear.
                let ptr = NonNull::new(ptr).expect("mmap does not return NULL on success");
                return Ok(Arc::new(Allocation { ptr, len, place: Place::Cpu, origin: Origin::Mapped(mapped_len) }));
            }
        }
        let ptr = if len == 0 {
            // A well-aligned, never-dereferenced address: no allocation for empty tensors.
            NonNull::new(ALIGNMENT as *mut u8).expect("non-zero")
        } else {
            // SAFETY: the layout has a non-zero size.
            let ptr = unsafe {
                if zeroed {
                    std::alloc::alloc_zeroed(layout)
                } else {
                    std::alloc::alloc(layout)
                }
            };
            NonNull::new(ptr).ok_or_else(|| err!(OutOfMemory, "allocation of {len} bytes failed"))?
        };
        Ok(Arc::new(Allocation { ptr, len, place: Place::Cpu, origin: Origin::Owned(layout) }))
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
            Origin::Owned(layout) => {
                if layout.size() != 0 {
                    // SAFETY: allocated in `host` with this layout.
                    unsafe { std::alloc::dealloc(self.ptr.as_ptr(), *layout) }
                }
            }
            // SAFETY: mapped in `host` with this length.
            Origin::Mapped(len) => unsafe { os::unmap(self.ptr.as_ptr(), *len) },
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
            // The block's own drop hands it back to its device's cache.
            Origin::Device(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn owned_is_aligned_and_zeroed() {
        let a = Allocation::zeroed(100).unwrap();
        assert_eq!(a.as_ptr() as usize % ALIGNMENT, 0);
        assert!(unsafe { std::slice::from_raw_parts(a.as_ptr(), 100) }.iter().all(|&b| b == 0));
        assert_eq!(Allocation::zeroed(0).unwrap().len(), 0);
        let big = Allocation::zeroed(HUGE_PAGE_MIN + 100).unwrap();
        assert_eq!(big.as_ptr() as usize % ALIGNMENT, 0);
        let bytes = unsafe { std::slice::from_raw_parts_mut(big.as_ptr(), big.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes.fill(7); // every byte is writable
        assert!(Allocation::zeroed(usize::MAX).is_err());
    }

    #[test]
    fn uninit_is_aligned_writable_and_poisoned_on_request() {
        for len in [0, 100, HUGE_PAGE_MIN + 100] {
            let a = Allocation::uninit_or_poisoned(len, true).unwrap();
            assert_eq!((a.len(), a.as_ptr() as usize % ALIGNMENT), (len, 0));
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
