//! Owned host memory, and the cache that keeps freed large blocks for the next request of their
//! size class.
//!
//! Why a cache: an op's output is typically freed after use and asked for again by the next call
//! with the same shapes. Given back to the system, it returns as fresh pages, which the OS faults
//! in and zeroes on first write. On the project's machines that costs as much as the op's own
//! writes (benches/REPORT.md). A kept block is written at memory speed.
//!
//! Blocks that glibc serves from its heap get fresh pages too: the free memory at the top of the
//! heap goes back to the system once it passes glibc's trim threshold (128 KiB at first). A loop
//! that holds two outputs of 256 KiB at a time, or 1500 of 8 KiB (a TensorArray's steps), got
//! fresh pages on every call, at 1-2 GB/s against 12-80 when the blocks were reused
//! (benches/REPORT.md, tenth and eleventh rounds). Hence the cache keeps blocks from
//! [`CACHED_MIN`] (a page) up. Smaller blocks share pages in glibc's heap, and its bins serve them
//! as fast as the cache would.
//!
//! The cache is bounded. It holds at most `limit` bytes of freed blocks (default
//! [`DEFAULT_HOST_CACHE_LIMIT`], changed by [`set_host_cache_limit`]), and the longest-kept blocks
//! go back to the system first. One lock guards it; blocks under [`WAIT_MIN`] go to and from the
//! heap instead of waiting for it.

use super::block_cache::BlockCache;
use super::pages::{self, Guarded, HUGE_PAGE};
use super::size_class::size_class;
use super::ALIGNMENT;
use crate::error::{err, Result};
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

/// Freed blocks of at least this many bytes are kept for reuse.
pub const CACHED_MIN: usize = 4 << 10;

/// The default bound on the bytes of freed blocks kept.
pub const DEFAULT_HOST_CACHE_LIMIT: usize = 256 << 20;

/// Blocks of at least this many bytes get their own transparent-huge-page mapping. glibc's malloc
/// maps every block this large afresh (32 MiB is the most its adaptive mmap threshold grows to),
/// and 4 KiB pages faulted in one by one ran at ~2 GB/s on the project's VMs, slower than a copy;
/// huge pages fault at ~9 GB/s. Smaller blocks come from the heap (benches/REPORT.md).
pub const HUGE_PAGE_MIN: usize = 32 << 20;

/// Memory owned by a block: `size` bytes at `ptr`, from the heap or mapped for it alone.
struct Raw {
    ptr: NonNull<u8>,
    size: usize,
    backing: Backing,
}

#[derive(Clone, Copy)]
enum Backing {
    Heap,
    /// Its own huge-page mapping, `size` rounded up to [`HUGE_PAGE`].
    HugePages,
    /// A guarded block (`LODTENSOR_GUARD_PAGES=1`): never cached, unmapped when dropped.
    Guarded(Guarded),
}

// SAFETY: a plain byte buffer with one owner at a time (a block, or the cache's list).
unsafe impl Send for Raw {}

impl Raw {
    /// Gives the memory back to the system.
    fn free(self) {
        // SAFETY: `ptr` came from the heap with this layout (`new` checked it), or is the mapping
        // `backing` describes (a huge-page one's length recomputed here); each block is freed once,
        // as it is consumed.
        unsafe {
            match self.backing {
                Backing::Heap => {
                    std::alloc::dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.size, ALIGNMENT))
                }
                Backing::HugePages => pages::unmap(self.ptr, self.size.next_multiple_of(HUGE_PAGE)),
                Backing::Guarded(g) => pages::unmap(g.base, g.span),
            }
        }
    }
}

static CACHE: Mutex<BlockCache<Raw>> = Mutex::new(BlockCache::new(DEFAULT_HOST_CACHE_LIMIT));

fn cache() -> std::sync::MutexGuard<'static, BlockCache<Raw>> {
    // Nothing panics while the lock is held, and the state is consistent between statements.
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The cache for a block of `size` bytes: `None` when another thread holds it and the block is
/// small enough that the heap serves it faster than waiting (see [`WAIT_MIN`]).
fn cache_for(size: usize) -> Option<std::sync::MutexGuard<'static, BlockCache<Raw>>> {
    if size >= WAIT_MIN {
        return Some(cache());
    }
    match CACHE.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Blocks of at least this many bytes wait for the cache's lock; smaller ones skip the cache
/// while another thread holds it. Two threads doing nothing but allocate and free 8-11 KiB blocks
/// took 560-680 ns a pair waiting for the lock, 200-230 skipping it, and 91-95 with glibc alone
/// (benches/REPORT.md, eleventh round); a large block is worth the wait, fresh pages cost more.
const WAIT_MIN: usize = 64 << 10;

/// Sets the most bytes of freed host blocks kept for reuse; blocks over the new bound go back to
/// the system now (0 empties the cache and keeps nothing more).
pub fn set_host_cache_limit(bytes: usize) {
    let evicted = cache().set_limit(bytes);
    evicted.into_iter().for_each(Raw::free);
}

/// `(kept, limit)`: the bytes of freed host blocks kept now, and the bound on them.
pub fn host_cache_info() -> (usize, usize) {
    let c = cache();
    (c.bytes(), c.limit())
}

/// An owned host block of at least the requested length, 64-byte aligned; dropping it keeps it in
/// the cache or frees it.
pub(crate) struct HostBlock(Raw);

impl HostBlock {
    /// A block of at least `len` bytes; with `zeroed`, its first `len` bytes are zero. A zero
    /// length allocates nothing.
    pub(crate) fn new(len: usize, zeroed: bool) -> Result<HostBlock> {
        let too_large = || err!(OutOfMemory, "allocation of {len} bytes is too large");
        if len == 0 {
            // A well-aligned, never-dereferenced address.
            let ptr = NonNull::new(ALIGNMENT as *mut u8).expect("non-zero");
            return Ok(HostBlock(Raw { ptr, size: 0, backing: Backing::Heap }));
        }
        let size = if len >= CACHED_MIN { size_class(len).ok_or_else(too_large)? } else { len };
        if super::guard_pages() {
            // Exactly `len` bytes, against a guard page (fresh pages are zero); no cache.
            let g = pages::map_guarded(len, pages::alternate_guard())
                .ok_or_else(|| err!(OutOfMemory, "guarded allocation of {len} bytes failed"))?;
            return Ok(HostBlock(Raw { ptr: g.ptr, size: len, backing: Backing::Guarded(g) }));
        }
        if size >= CACHED_MIN {
            if let Some(raw) = cache_for(size).and_then(|mut c| c.take(size)) {
                if zeroed {
                    // SAFETY: the block holds `size` >= `len` bytes and has one owner.
                    unsafe { std::ptr::write_bytes(raw.ptr.as_ptr(), 0, len) };
                }
                return Ok(HostBlock(raw));
            }
        }
        if size >= HUGE_PAGE_MIN {
            let mapped = size.checked_next_multiple_of(HUGE_PAGE).and_then(|n| pages::map_aligned_huge(n, HUGE_PAGE));
            if let Some(ptr) = mapped {
                // Fresh anonymous pages are zero: nothing to clear.
                return Ok(HostBlock(Raw { ptr, size, backing: Backing::HugePages }));
            }
        }
        let layout = Layout::from_size_align(size, ALIGNMENT).map_err(|_| too_large())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe {
            if zeroed {
                std::alloc::alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        let ptr = NonNull::new(ptr).ok_or_else(|| err!(OutOfMemory, "allocation of {len} bytes failed"))?;
        Ok(HostBlock(Raw { ptr, size, backing: Backing::Heap }))
    }

    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.0.ptr
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        let raw = Raw { ptr: self.0.ptr, size: self.0.size, backing: self.0.backing };
        if raw.size == 0 {
            return;
        }
        if raw.size < CACHED_MIN || matches!(raw.backing, Backing::Guarded(_)) {
            return raw.free();
        }
        let evicted = match cache_for(raw.size) {
            Some(mut c) => c.keep(raw.size, raw),
            None => vec![raw],
        };
        evicted.into_iter().for_each(Raw::free);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn small_blocks_skip_a_cache_another_thread_holds() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let guard = cache();
            let kept = guard.bytes();
            s.spawn(move || {
                drop(HostBlock::new(CACHED_MIN, false).unwrap());
                let _ = done.send(());
            });
            let waited = finished.recv_timeout(std::time::Duration::from_secs(10));
            let now = guard.bytes();
            drop(guard); // lets a thread that waits for the lock finish, so the scope can end
            assert!(waited.is_ok(), "a block of CACHED_MIN bytes waited for the cache's lock");
            assert_eq!(now, kept, "a block freed while the cache was held was kept");
        });
    }

    #[test]
    fn impossible_sizes_are_out_of_memory() {
        // No size class (the next power of two overflows); no layout (over isize::MAX); and a
        // layout that neither a huge-page mapping nor the heap can serve.
        for (len, why) in [(usize::MAX - 5, "too large"), ((1 << 63) + 1, "too large"), (1 << 62, "failed")] {
            match HostBlock::new(len, false) {
                Err(Error::OutOfMemory(m)) => assert!(m.contains(&len.to_string()) && m.contains(why), "{m}"),
                other => panic!("{len} bytes: expected OutOfMemory, got {:?}", other.map(|b| b.ptr())),
            }
        }
    }
}
