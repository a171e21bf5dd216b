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
    Borrowed(Option<Release>),
    /// A block of the CUDA backend's caching allocator, handed back to it on drop (an uninhabited
    /// type in builds without CUDA). `None` for a zero-length device allocation.
    Device(#[allow(dead_code)] Option<DeviceBlock>),
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
        let layout = Layout::from_size_align(len, ALIGNMENT)
            .map_err(|_| err!(OutOfMemory, "allocation of {len} bytes is too large"))?;
        let ptr = if len == 0 {
            // A well-aligned, never-dereferenced address: no allocation for empty tensors.
            NonNull::new(ALIGNMENT as *mut u8).expect("non-zero")
        } else {
            // SAFETY: the layout has a non-zero size.
            NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
                .ok_or_else(|| err!(OutOfMemory, "allocation of {len} bytes failed"))?
        };
        Ok(Arc::new(Allocation { ptr, len, place: Place::Cpu, origin: Origin::Owned(layout) }))
    }

    /// A host allocation holding a copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> Result<Arc<Allocation>> {
        let a = Allocation::zeroed(bytes.len())?;
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
                    // SAFETY: allocated in `zeroed` with this layout.
                    unsafe { std::alloc::dealloc(self.ptr.as_ptr(), *layout) }
                }
            }
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
        assert!(Allocation::zeroed(usize::MAX).is_err());
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
