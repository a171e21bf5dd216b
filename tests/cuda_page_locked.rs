//! Host memory the CUDA driver holds page-locked (`register_host_memory`): the caller may release
//! or reuse it as soon as `to_place` returns. A copy larger than the upload ring takes, which the
//! device reads after the call that queued it returns, is waited for; a smaller one goes through
//! the ring, and one from pageable memory straight from it, neither waited for. The emulator makes
//! a copy from page-locked memory only at the device's next operation, so a missing wait shows
//! there as it would on a GPU. Device tensors over page-locked memory are read by the device's
//! kernels. One test function: the device's counters are per process.

mod common;
mod cuda_common;

use cuda_common::{bytes_of, gpu_or_skip, GPU};
use lodtensor::backend::cuda::{register_host_memory, unregister_host_memory};
use lodtensor::{cuda_counters, sequence_first_step, to_place, DType, Dim, Error, LoDTensor, Lod, Place, Tensor};
use std::alloc::{alloc, dealloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Large enough that a GPU's copy engine is still reading when the host starts to overwrite it.
const LEN: usize = 64 << 20;
/// What a released buffer holds: its owner has reused it.
const REUSED: u8 = 0xee;

/// Page-aligned host memory, freed on drop.
struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: plain host memory; the test hands its address to release closures on other threads.
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    fn new(len: usize) -> HostBuffer {
        let layout = Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: a non-zero size.
        let ptr = unsafe { alloc(layout) };
        assert!(!ptr.is_null());
        HostBuffer { ptr, layout }
    }

    /// Writes `bytes` over the whole buffer (through its pointer: the tensors over it hold the
    /// same pointer, none a reference).
    fn write(&self, bytes: &[u8]) {
        assert_eq!(bytes.len(), self.layout.size());
        // SAFETY: `layout.size()` bytes of this buffer's own memory.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr, bytes.len()) }
    }

    fn fill(&self, byte: u8) {
        // SAFETY: as in `write`.
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.layout.size()) }
    }

    fn read(&self) -> Vec<u8> {
        // SAFETY: as in `write`; the slice lives only for the copy.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }.to_vec()
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = common::Rng(seed | 1);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// A CPU tensor of `range` of `buffer`'s bytes, without a copy, whose release overwrites the whole
/// buffer (as its owner would reuse it) and counts the release in `released`.
fn lent(buffer: &Arc<HostBuffer>, range: std::ops::Range<usize>, released: &Arc<AtomicUsize>) -> LoDTensor {
    let (owner, released) = (buffer.clone(), released.clone());
    let release = Box::new(move || {
        owner.fill(REUSED);
        released.fetch_add(1, Ordering::SeqCst);
    });
    // SAFETY: `range` lies in the buffer, which the closure keeps alive until it runs.
    let t = unsafe {
        Tensor::borrowed(
            Place::Cpu,
            DType::U8,
            Dim::new(&[range.len()]).unwrap(),
            buffer.ptr.add(range.start),
            range.len(),
            Some(release),
        )
    };
    LoDTensor::dense(t.unwrap())
}

/// `to_place` of `host` to the device, with the device's waits and uploads during it.
fn upload_counted(host: &LoDTensor) -> (LoDTensor, u64, u64) {
    let before = cuda_counters(0).unwrap();
    let on_device = to_place(host, GPU).unwrap();
    let c = cuda_counters(0).unwrap().since(&before);
    (on_device, c.waits, c.uploads)
}

#[test]
fn copies_from_page_locked_memory_are_done_when_to_place_returns() {
    let buffer = Arc::new(HostBuffer::new(LEN));
    if !gpu_or_skip() {
        // SAFETY: never registered: the stand-in refuses first.
        let refused = unsafe { (register_host_memory(buffer.ptr, LEN), unregister_host_memory(buffer.ptr)) };
        match refused {
            (Err(Error::Unsupported(a)), Err(Error::Unsupported(b))) => {
                assert!(a.contains("cuda:0") && b.contains("cuda:0"), "{a} / {b}")
            }
            other => panic!("expected Unsupported twice, got {other:?}"),
        }
        return;
    }
    // The refusals, before anything is registered.
    // SAFETY: each call is refused before the driver is asked to lock anything.
    unsafe {
        assert!(
            matches!(register_host_memory(std::ptr::null_mut(), LEN), Err(Error::InvalidArgument(m)) if m.contains("ptr"))
        );
        assert!(matches!(register_host_memory(buffer.ptr, 0), Err(Error::InvalidArgument(m)) if m.contains("len")));
        let never = unregister_host_memory(buffer.ptr);
        assert!(matches!(&never, Err(Error::InvalidArgument(m)) if m.contains("NOT_REGISTERED")), "{never:?}");
    }

    // Pageable memory: the driver has read it when the copy returns; no wait.
    let released = Arc::new(AtomicUsize::new(0));
    let want = pattern(LEN, 1);
    buffer.write(&want);
    let host = lent(&buffer, 0..LEN, &released);
    let (on_device, waits, uploads) = upload_counted(&host);
    assert_eq!((waits, uploads), (0, 1), "a copy from pageable memory");
    drop(host);
    assert_eq!(released.load(Ordering::SeqCst), 1);
    assert!(bytes_of(&on_device) == want, "a copy from pageable memory");

    // SAFETY: the buffer lives until the end of the test, after the unregistration.
    unsafe { register_host_memory(buffer.ptr, LEN) }.unwrap();
    // SAFETY: registered just above.
    let again = unsafe { register_host_memory(buffer.ptr.add(4096), 4096) };
    assert!(matches!(&again, Err(Error::InvalidArgument(m)) if m.contains("ALREADY_REGISTERED")), "{again:?}");

    // Page-locked memory, all of it and slices: a copy too large for the ring is waited for, a
    // small one goes through the ring; either way the release that overwrites the buffer right
    // after `to_place` does not reach the device.
    let small = 4099..4099 + 50000;
    for (round, range) in [0..LEN, 4099..LEN - 12345, small.clone()].into_iter().enumerate() {
        let want = pattern(LEN, 2 + round as u64);
        buffer.write(&want);
        let host = lent(&buffer, range.clone(), &released);
        let (on_device, waits, uploads) = upload_counted(&host);
        let expected_waits = if range == small { 0 } else { 1 };
        assert_eq!((waits, uploads), (expected_waits, 1), "a copy from page-locked memory, bytes {range:?}");
        drop(host);
        assert_eq!(released.load(Ordering::SeqCst), 2 + round);
        assert!(buffer.read().iter().all(|&b| b == REUSED));
        assert!(bytes_of(&on_device) == want[range.clone()], "a copy from page-locked memory, bytes {range:?}");
    }

    // A tensor on the device over page-locked memory (pinned host memory, which kernels read):
    // accepted, and read by an op as the CPU reads the same bytes.
    let want = pattern(LEN, 9);
    buffer.write(&want);
    let lod = Lod::from_lengths(&[vec![3, 0, 70000, 1, LEN / 4 - 70004]]).unwrap();
    let rows = Dim::new(&[LEN / 4]).unwrap();
    // SAFETY: the buffer is kept until the tensor is gone (no release: the test owns it).
    let pinned = unsafe { Tensor::borrowed(GPU, DType::F32, rows, buffer.ptr, LEN, None) }.unwrap();
    let pinned = LoDTensor::new(pinned, lod.clone()).unwrap();
    let cpu = LoDTensor::new(Tensor::from_bytes(DType::F32, rows, &want).unwrap(), lod).unwrap();
    let (got, expected) = (sequence_first_step(&pinned).unwrap(), sequence_first_step(&cpu).unwrap());
    assert_eq!(got.tensor().place(), GPU);
    assert!(bytes_of(&got) == expected.tensor().bytes().unwrap(), "the first steps of page-locked rows");
    assert!(bytes_of(&pinned) == want);
    drop((got, pinned));

    // SAFETY: registered above; nothing of the library's reads it any more.
    unsafe { unregister_host_memory(buffer.ptr) }.unwrap();
    // Pageable again: no wait.
    buffer.write(&pattern(LEN, 10));
    let host = lent(&buffer, 0..LEN, &released);
    let (_on_device, waits, _) = upload_counted(&host);
    assert_eq!(waits, 0, "a copy from memory no longer page-locked");
}
