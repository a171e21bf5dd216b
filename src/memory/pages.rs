//! Anonymous page mappings: the huge-page blocks of `host_block`, and guarded blocks, which end
//! (or start) against a page that cannot be read or written (`LODTENSOR_GUARD_PAGES=1`, see
//! [`guard_pages`](super::guard_pages)), so that an access past a block's end (or before its
//! start) faults at once.
//! Linux on x86-64 and aarch64; elsewhere every mapping is refused and callers use the heap.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The page size these mappings assume (x86-64, and aarch64 with 4 KiB granules). On a system
/// with other pages, guarded blocks are refused (`map_guarded` gives `None`): a guard must be one
/// whole page, next to the block.
pub(crate) const PAGE: usize = 4 << 10;

/// The transparent huge page size of x86-64 and (4 KiB-granule) aarch64 Linux: huge-page mappings
/// are rounded up to and aligned at it.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod os {
    use std::ffi::c_void;
    extern "C" {
        fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> i32;
        fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
        fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
        fn sysconf(name: i32) -> i64;
    }
    const SC_PAGESIZE: i32 = 30;
    const PROT_NONE: i32 = 0;
    const PROT_READ: i32 = 1;
    const PROT_WRITE: i32 = 2;
    const MAP_PRIVATE: i32 = 2;
    const MAP_ANONYMOUS: i32 = 0x20;
    const MADV_HUGEPAGE: i32 = 14;

    pub(super) fn map(len: usize) -> Option<*mut u8> {
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let base =
            unsafe { mmap(std::ptr::null_mut(), len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) };
        (base as isize != -1).then_some(base.cast())
    }

    pub(super) unsafe fn unmap(ptr: *mut u8, len: usize) {
        munmap(ptr.cast(), len);
    }

    pub(super) unsafe fn advise_huge(ptr: *mut u8, len: usize) {
        madvise(ptr.cast(), len, MADV_HUGEPAGE);
    }

    pub(super) unsafe fn protect_none(ptr: *mut u8, len: usize) -> bool {
        mprotect(ptr.cast(), len, PROT_NONE) == 0
    }

    pub(super) fn page_size() -> usize {
        // SAFETY: a query with no side effects.
        usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).unwrap_or(0)
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod os {
    pub(super) fn map(_len: usize) -> Option<*mut u8> {
        None
    }
    pub(super) unsafe fn unmap(_ptr: *mut u8, _len: usize) {}
    pub(super) unsafe fn advise_huge(_ptr: *mut u8, _len: usize) {}
    pub(super) unsafe fn protect_none(_ptr: *mut u8, _len: usize) -> bool {
        false
    }
    pub(super) fn page_size() -> usize {
        0
    }
}

/// A zero-filled mapping of `len` bytes (a multiple of `align`, itself a multiple of the page)
/// aligned to `align`, advised to use huge pages; `None` when the system refuses (the caller falls
/// back to the heap). Unmapped with [`unmap`]`(ptr, len)`.
pub(crate) fn map_aligned_huge(len: usize, align: usize) -> Option<NonNull<u8>> {
    let span = len.checked_add(align)?;
    let base = os::map(span)?;
    let start = (base as usize).next_multiple_of(align);
    let (head, tail) = (start - base as usize, span - (start - base as usize) - len);
    // SAFETY: unmapping the unaligned head and tail of the mapping just made; advising its middle.
    // madvise failing (THP disabled) only loses the speed-up.
    unsafe {
        if head > 0 {
            os::unmap(base, head);
        }
        if tail > 0 {
            os::unmap((start + len) as *mut u8, tail);
        }
        os::advise_huge(start as *mut u8, len);
    }
    NonNull::new(start as *mut u8)
}

/// Advises the whole huge pages inside `len` bytes at `ptr`, a block of the heap that nothing has
/// written yet, to be backed by transparent huge pages: its first writes then fault it in 2 MiB at
/// a time instead of 4 KiB. Only advice: refused (THP disabled, another system), nothing changes.
pub(crate) fn advise_huge_inside(ptr: *mut u8, len: usize) {
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize).saturating_add(len) & !(HUGE_PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside the caller's block; the advice moves no data and frees
        // nothing.
        unsafe { os::advise_huge(start as *mut u8, end - start) };
    }
}

/// Unmaps `len` bytes at `ptr`.
///
/// # Safety
/// `ptr` and `len` are one mapping made here (or its whole span), unmapped once, and nothing uses
/// it after.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    os::unmap(ptr.as_ptr(), len);
}

/// A guarded block: its bytes at `ptr` end where a page that faults on any access begins, or begin
/// where one ends. `span` bytes mapped from `base` in all (the guard page included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Guarded {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) base: NonNull<u8>,
    pub(crate) span: usize,
}

// SAFETY: a description of a mapping (addresses and a length), owned by whoever holds it.
unsafe impl Send for Guarded {}

/// Which side of a guarded block its guard page is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    /// Right after the block's last byte: an access past the end faults.
    After,
    /// Right before its first byte: an access before the start (an index of -1) faults.
    Before,
}

/// `After` and `Before` in turn, call by call: the guarded blocks of a process alternate, so that
/// a run of tests checks most buffers' ends in some calls and their starts in others.
pub(crate) fn alternate_guard() -> Guard {
    static BLOCKS: AtomicUsize = AtomicUsize::new(0);
    if BLOCKS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        Guard::After
    } else {
        Guard::Before
    }
}

/// A zero-filled block of `len` bytes (1 for 0) against a guard page on the side `guard` says.
/// Guarded after, it ends exactly where the guard begins, so its address is aligned to the largest
/// power of two that divides the length (up to the page): a block of elements is aligned for them,
/// and a word that divides the length divides the address, so kernels choose the words they would
/// otherwise. Guarded before, it starts a page (so it is page-aligned), and the rest of its last
/// page is slack. `None` when the system refuses, its pages are not [`PAGE`] bytes, or the length
/// overflows.
pub(crate) fn map_guarded(len: usize, guard: Guard) -> Option<Guarded> {
    if os::page_size() != PAGE {
        return None;
    }
    let body = len.max(1);
    let span = body.checked_next_multiple_of(PAGE)?.checked_add(PAGE)?;
    let base = os::map(span)?;
    let guard_at = match guard {
        Guard::After => base as usize + span - PAGE,
        Guard::Before => base as usize,
    };
    // SAFETY: a page of the mapping just made.
    if !unsafe { os::protect_none(guard_at as *mut u8, PAGE) } {
        // SAFETY: the whole mapping just made, not handed out.
        unsafe { os::unmap(base, span) };
        return None;
    }
    // After: `guard_at` is page-aligned, so `guard_at - body` is aligned to every power of two
    // dividing `body`.
    let ptr = match guard {
        Guard::After => guard_at - body,
        Guard::Before => guard_at + PAGE,
    };
    Some(Guarded { ptr: NonNull::new(ptr as *mut u8)?, base: NonNull::new(base)?, span })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guarded block is writable from its start to its end, aligned as its length allows (guarded
    /// after) or to a page (guarded before), the byte after its end (or before its start) is the
    /// guard page's, and the mapping can be given back. (That the guard faults is the next test's.)
    #[test]
    fn guarded_blocks_touch_their_guard_page() {
        for (len, align) in [(1, 1), (12, 4), (24, 8), (48, 16), (4096, 4096), (5000, 8), (0, 1)] {
            for guard in [Guard::After, Guard::Before] {
                let Some(g) = map_guarded(len, guard) else { return };
                let (ptr, base) = (g.ptr.as_ptr() as usize, g.base.as_ptr() as usize);
                if guard == Guard::After {
                    let end = base + g.span - PAGE;
                    assert_eq!(ptr % align, 0, "len {len}");
                    assert_eq!(end - ptr, len.max(1), "len {len}");
                    assert_eq!(end % PAGE, 0);
                } else {
                    assert_eq!(ptr, base + PAGE, "len {len}");
                    assert!(base + g.span - ptr >= len.max(1), "len {len}");
                }
                // SAFETY: the block's own bytes.
                unsafe { std::ptr::write_bytes(g.ptr.as_ptr(), 7, len) };
                // SAFETY: the whole mapping, once.
                unsafe { unmap(g.base, g.span) };
            }
        }
        assert_ne!(alternate_guard(), alternate_guard());
    }

    /// Run in a child process by the test below: writes the byte after a block guarded after
    /// (LODTENSOR_TOUCH_GUARD=after) or the byte before one guarded before (=before).
    #[test]
    #[ignore = "faults on purpose; run by guard_pages_fault_on_access"]
    fn touch_a_guard_page() {
        let (guard, offset) = match std::env::var("LODTENSOR_TOUCH_GUARD").as_deref() {
            Ok("after") => (Guard::After, 48),
            Ok("before") => (Guard::Before, -1),
            _ => return,
        };
        let g = map_guarded(48, guard).expect("a guarded mapping");
        // SAFETY: none; this is the access the guard page must stop.
        unsafe { std::ptr::write_volatile(g.ptr.as_ptr().offset(offset), 1) };
    }

    /// The byte after a block guarded after, and the byte before one guarded before, fault: the
    /// child process that writes it dies of SIGSEGV.
    #[cfg(unix)]
    #[test]
    fn guard_pages_fault_on_access() {
        use std::os::unix::process::ExitStatusExt;
        let Some(g) = map_guarded(1, Guard::After) else {
            return; // no mappings on this system: blocks come from the heap instead
        };
        // SAFETY: the whole mapping, once.
        unsafe { unmap(g.base, g.span) };
        for side in ["after", "before"] {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "memory::pages::tests::touch_a_guard_page", "--ignored", "--test-threads=1"])
                .env("LODTENSOR_TOUCH_GUARD", side)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert_eq!(status.signal(), Some(11), "{side}: the child's status: {status}");
        }
    }
}
