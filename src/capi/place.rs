//! Exports for places: the CUDA device count, loading a device's kernels up front, copies between
//! places, waiting for a device, its stream, what has been asked of it (its counters), the memory
//! each device's cache holds, the bound on it, and the device's free memory.

use super::args::{get, slice, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::{lodtensor_place_t, lodtensor_status_t};
use crate::error::{ensure, err, Result};
use std::ffi::c_void;

/// The number of CUDA devices, in `*out`.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_UNSUPPORTED (a build without CUDA, no CUDA
/// driver found, or the driver reports no device; the message says which).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_device_count(out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        out.write(crate::ops::transfer::cuda_device_count()?);
        Ok(())
    })
}

/// Compiles and loads every kernel file for CUDA device `device` now, instead of each at the first
/// call that needs it. Compiling them all takes seconds, which the first call of each kind would
/// otherwise pay: a server can call this at start-up, before taking requests. The files compile
/// at once on threads of their own; compiled files are kept on disk for later processes (the
/// README's `LODTENSOR_KERNEL_CACHE`), which then load them in a fraction of that time. Calling it
/// again does nothing more. Any thread may call this at any time.
///
/// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
/// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver, no device, no CUDA runtime compiler
/// `libnvrtc.so.13`, or a GPU older than every architecture it targets), LODTENSOR_INTERNAL (a
/// kernel file that does not compile or load, or another CUDA driver failure, named in the
/// message).
#[no_mangle]
pub extern "C" fn lodtensor_cuda_load_kernels(device: i32) -> lodtensor_status_t {
    boundary(|| crate::ops::transfer::cuda_load_kernels(cuda_ordinal(device)?))
}

/// A new handle holding a copy of `t` (elements and LoD) on `place`. It is always a copy with its
/// own memory, also when `t` is already on `place` (`lodtensor_share` shares instead). A copy to
/// the CPU waits until the device's queued work is done; a copy to a device is queued on that
/// device's stream (later calls on the device see it; call `lodtensor_synchronize` before reading
/// device memory by other means). `t` and the memory under it may be changed, destroyed or
/// reused as soon as this returns: a copy of up to 1 MiB is made from a page-locked ring of the
/// library's; a larger one from page-locked host memory (a pinned buffer given to
/// `lodtensor_from_buffer`, a `kDLCUDAHost` DLPack tensor, an ARROW_DEVICE_CUDA_HOST array) or
/// managed memory, which the device reads by itself after the call, is waited for. The caller
/// destroys `*out` with `lodtensor_destroy`.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`), LODTENSOR_INVALID_ARGUMENT (a `place` that is not
/// CPU with device_id 0 or CUDA with device_id >= 0; a CUDA device_id beyond the device count),
/// LODTENSOR_UNSUPPORTED (`place` or `t` on a CUDA device in a build without CUDA, without a
/// driver or without a device), LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA driver
/// failure, named in the message).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_place(
    t: *const lodtensor_t,
    place: lodtensor_place_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out = Out::new(out, "out")?;
        let place = place.to_place()?;
        new_handle(out, crate::ops::transfer::to_place(&t.inner, place)?);
        Ok(())
    })
}

/// Waits until all work queued on `place` has finished. The CPU place returns at once (CPU calls
/// finish before they return).
///
/// Returns LODTENSOR_INVALID_ARGUMENT (a bad `place`, as in `lodtensor_to_place`),
/// LODTENSOR_UNSUPPORTED (a CUDA place in a build without CUDA, without a driver or without a
/// device), LODTENSOR_INTERNAL (a CUDA driver failure, for example a kernel fault).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_synchronize(place: lodtensor_place_t) -> lodtensor_status_t {
    boundary(|| crate::ops::transfer::synchronize(place.to_place()?))
}

/// The stream that all the library's work on CUDA device `device` goes to, in call order, in
/// `*out`: a `CUstream` (the runtime's `cudaStream_t`) of the device's primary context (the one
/// the CUDA runtime uses), non-blocking (it does not wait for the legacy default stream). Sets the
/// device up if the library has not used it yet. The handle stays valid, and the same, for the
/// life of the process; it belongs to the library: never destroy it.
///
/// Work of yours queued on this stream is ordered with the library's calls, with no wait: after
/// the work of the calls made before you queued it, before that of the calls made after. A model
/// that runs on this stream can hand the tensor its kernels write (`lodtensor_from_buffer`) to an
/// op, or return it from a `beam_search_tensor_step_fn` as log-probs, at once; a kernel of yours
/// queued here can read an op's result with no `lodtensor_synchronize`. Work on another stream
/// needs an event each way: recorded on your stream and waited for by this one
/// (`cuStreamWaitEvent`, `cudaStreamWaitEvent`) before an op reads what it wrote; recorded on this
/// one and waited for by yours before your stream reads an op's result. Destroying the last handle
/// of a tensor the library allocated gives its memory back to the library's cache, and the next op
/// on the device may write it, ordered on this stream only: work on another stream that still
/// uses that memory must have finished, or be waited for by this stream, first.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_INVALID_ARGUMENT (`device` negative or not
/// below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device),
/// LODTENSOR_OUT_OF_MEMORY or LODTENSOR_INTERNAL (a CUDA driver failure while setting the device
/// up). On failure `*out` is untouched.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_stream(device: i32, out: *mut *mut c_void) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        out.write(crate::ops::transfer::cuda_stream(cuda_ordinal(device)?)?);
        Ok(())
    })
}

/// Index of `lodtensor_cuda_counters`' kernels launched.
pub const LODTENSOR_CUDA_COUNTER_LAUNCHES: usize = 0;
/// Index of `lodtensor_cuda_counters`' fills of device memory with one byte value.
pub const LODTENSOR_CUDA_COUNTER_FILLS: usize = 1;
/// Index of `lodtensor_cuda_counters`' copies from device memory to device memory.
pub const LODTENSOR_CUDA_COUNTER_DEVICE_COPIES: usize = 2;
/// Index of `lodtensor_cuda_counters`' copies from host memory to the device.
pub const LODTENSOR_CUDA_COUNTER_UPLOADS: usize = 3;
/// Index of `lodtensor_cuda_counters`' bytes of those uploads.
pub const LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES: usize = 4;
/// Index of `lodtensor_cuda_counters`' copies from the device to host memory (each waits).
pub const LODTENSOR_CUDA_COUNTER_DOWNLOADS: usize = 5;
/// Index of `lodtensor_cuda_counters`' bytes of those downloads.
pub const LODTENSOR_CUDA_COUNTER_DOWNLOAD_BYTES: usize = 6;
/// Index of `lodtensor_cuda_counters`' waits of a calling thread for the device.
pub const LODTENSOR_CUDA_COUNTER_WAITS: usize = 7;
/// Index of `lodtensor_cuda_counters`' device blocks handed out.
pub const LODTENSOR_CUDA_COUNTER_ALLOCATIONS: usize = 8;
/// Index of `lodtensor_cuda_counters`' blocks the driver was asked for.
pub const LODTENSOR_CUDA_COUNTER_DRIVER_ALLOCATIONS: usize = 9;
/// The number of counters `lodtensor_cuda_counters` can write (later versions may add more, at
/// the end).
pub const LODTENSOR_CUDA_COUNTERS: usize = 10;
const _: () = assert!(LODTENSOR_CUDA_COUNTERS == crate::CUDA_COUNTERS);

/// What the library has asked of CUDA device `device` since the process started, as counts that
/// only grow: the first `len` counters, in the order of the LODTENSOR_CUDA_COUNTER_* indices, into
/// `out[0..len]`. LAUNCHES: kernels launched. FILLS: fills of device memory with one byte value
/// (counters zeroed before a kernel adds to them). DEVICE_COPIES: copies from device to device
/// memory. UPLOADS, UPLOAD_BYTES: copies from host memory to the device (tensors moved there, and
/// the tables, such as LoD offsets, that calls upload for their kernels) and their bytes.
/// DOWNLOADS, DOWNLOAD_BYTES: copies from the device to host memory (tensors moved to the host,
/// and what calls read back: sizes that decide an output's shape, counts of bad input values) and
/// their bytes. WAITS: times a calling thread waited for the device's queued work (each download,
/// each `lodtensor_synchronize`, each return of cached blocks to the driver, each upload of more
/// than 1 MiB from page-locked or managed memory, each wait of the upload ring for the copies of
/// its last lap). ALLOCATIONS: device
/// blocks handed out, from the cache or new; DRIVER_ALLOCATIONS: of those, blocks the driver was
/// asked for (the cache held none of their size class). Read the counters before and after a call
/// and subtract to see what the call asked of the device; the counters are the device's, so the
/// difference includes what other threads asked of it meanwhile (each counter is read once, not
/// all at one instant). A device the library has not used yet reads all zero (asking does not set
/// it up). `len` 0 writes nothing.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`, when `len` > 0), LODTENSOR_INVALID_ARGUMENT (`len`
/// above LODTENSOR_CUDA_COUNTERS; `out` not aligned to 8 bytes; `device` negative or not below the
/// device count),
/// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_counters(device: i32, out: *mut u64, len: usize) -> lodtensor_status_t {
    boundary(|| {
        ensure!(
            len <= LODTENSOR_CUDA_COUNTERS,
            InvalidArgument,
            "len: {len} counters asked for; this library has {LODTENSOR_CUDA_COUNTERS} (LODTENSOR_CUDA_COUNTERS)"
        );
        // The buffer's checks (NULL with a length, alignment) before any work.
        slice(out.cast_const(), len, "out")?;
        let values = crate::ops::transfer::cuda_counters(cuda_ordinal(device)?)?.values();
        if len > 0 {
            std::ptr::copy_nonoverlapping(values.as_ptr(), out, len);
        }
        Ok(())
    })
}

/// CUDA device `device` as the backend numbers it; negative ids are refused here, ids beyond the
/// device count by the backend.
fn cuda_ordinal(device: i32) -> Result<u32> {
    u32::try_from(device)
        .map_err(|_| err!(InvalidArgument, "device: {device} is negative; CUDA devices are numbered from 0"))
}

/// The device memory the library holds on CUDA device `device`: `*out_in_use`, the bytes of its
/// live allocations (tensors not destroyed yet, including the results of queued work, and two
/// small blocks the library keeps zeroed between calls for its counting kernels: bad-index counts,
/// 256 bytes once an index has been checked on the device, and the fused beam step's per-row
/// counts, 4 bytes a row), and `*out_kept`, the bytes of freed blocks that the device's cache
/// keeps for the next allocation of their size class, with any that the library could not give
/// back to the driver yet because a wait for the device's queued work failed (the next call that
/// gives blocks back, or `lodtensor_cuda_empty_cache`, frees them once a wait succeeds). Both
/// count whole blocks: a request is rounded up to the next power of two up to 4 KiB (512 bytes at
/// least), and by at most 1/8 above. A device the library has not used yet holds 0 and 0 (asking
/// does not set it up). Host memory is not counted: a device's first small copy to the host also
/// makes a 64 KiB page-locked host buffer, which its small copies to the host go through from
/// then on, and its first copy of 1 MiB or less to the device a 4 MiB page-locked ring, which
/// such copies go through from then on; both are kept for the life of the process, as the
/// device's context is.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out_in_use`, `out_kept`), LODTENSOR_INVALID_ARGUMENT
/// (`device` negative or not below the device count), LODTENSOR_UNSUPPORTED (a build without
/// CUDA, no driver or no device).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_memory_info(
    device: i32,
    out_in_use: *mut usize,
    out_kept: *mut usize,
) -> lodtensor_status_t {
    device_sizes(device, (out_in_use, "out_in_use"), (out_kept, "out_kept"), crate::memory::device_memory_info)
}

/// The memory of CUDA device `device` as the driver reports it: `*out_free`, the bytes it could
/// still hand out (to this program or any other; blocks that the library's cache keeps count as
/// used, see `lodtensor_cuda_memory_info`), and `*out_total`, the device's memory. Sets the device
/// up if the library has not used it yet (which takes some device memory for its context).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out_free`, `out_total`), LODTENSOR_INVALID_ARGUMENT (`device`
/// negative or not below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no
/// driver or no device), LODTENSOR_INTERNAL (a CUDA driver failure).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_free_memory(
    device: i32,
    out_free: *mut usize,
    out_total: *mut usize,
) -> lodtensor_status_t {
    device_sizes(device, (out_free, "out_free"), (out_total, "out_total"), crate::memory::device_free_memory)
}

/// The two sizes that `query` gives for CUDA device `device`, written to the two named outputs
/// (both checked first, and written only on success).
fn device_sizes(
    device: i32,
    (a, a_name): (*mut usize, &str),
    (b, b_name): (*mut usize, &str),
    query: fn(u32) -> Result<(usize, usize)>,
) -> lodtensor_status_t {
    boundary(|| {
        let (a_out, b_out) = (Out::new(a, a_name)?, Out::new(b, b_name)?);
        let (a, b) = query(cuda_ordinal(device)?)?;
        a_out.write(a);
        b_out.write(b);
        Ok(())
    })
}

/// Gives every freed block that the cache of CUDA device `device` keeps back to the driver, once
/// the work queued on the device is done, so that other programs and libraries can use the
/// memory, with the small blocks kept zeroed for counting kernels (see
/// `lodtensor_cuda_memory_info`) where no call is using them. Tensors are not affected. The cache keeps freed blocks for the next allocation of their
/// size class (so a decoder loop does not call the driver each step) up to its bound (see
/// `lodtensor_cuda_set_cache_limit`; none by default), and empties itself when the driver refuses
/// an allocation. Any thread may call this at any time.
///
/// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
/// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device), LODTENSOR_INTERNAL (a
/// CUDA driver failure, for example a fault of queued work).
#[no_mangle]
pub extern "C" fn lodtensor_cuda_empty_cache(device: i32) -> lodtensor_status_t {
    boundary(|| crate::memory::empty_device_cache(cuda_ordinal(device)?))
}

/// Sets the most bytes of freed blocks that the cache of CUDA device `device` keeps for reuse.
/// Initially there is no bound (SIZE_MAX): every freed block is kept for the next allocation of
/// its size class. A bound leaves the rest to other programs and libraries on a shared device:
/// when a freed block would take the kept bytes past it, the longest-kept blocks go back to the
/// driver first (which waits for the work queued on the device), and a block larger than the
/// bound is not kept. Lowering the bound frees what is over it at once; 0 keeps nothing. Does not
/// set the device up: a bound set before the device's first use applies from then on. Any thread
/// may call this at any time.
///
/// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
/// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device), LODTENSOR_INTERNAL (a
/// CUDA driver failure while freeing, for example a fault of queued work; the bound is set).
#[no_mangle]
pub extern "C" fn lodtensor_cuda_set_cache_limit(device: i32, bytes: usize) -> lodtensor_status_t {
    boundary(|| crate::memory::set_device_cache_limit(cuda_ordinal(device)?, bytes))
}

/// The bound on the freed blocks that the cache of CUDA device `device` keeps, in `*out` (SIZE_MAX
/// when there is none; see `lodtensor_cuda_set_cache_limit`).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_INVALID_ARGUMENT (`device` negative or not
/// below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cuda_cache_limit(device: i32, out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        out.write(crate::memory::device_cache_limit(cuda_ordinal(device)?)?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CudaCounters;

    /// Each LODTENSOR_CUDA_COUNTER_* index picks its own counter out of `CudaCounters::values`.
    #[test]
    fn counter_indices_name_their_counters() {
        let c = CudaCounters {
            launches: 1,
            fills: 2,
            device_copies: 3,
            uploads: 4,
            upload_bytes: 5,
            downloads: 6,
            download_bytes: 7,
            waits: 8,
            allocations: 9,
            driver_allocations: 10,
        };
        let v = c.values();
        for (index, want) in [
            (LODTENSOR_CUDA_COUNTER_LAUNCHES, c.launches),
            (LODTENSOR_CUDA_COUNTER_FILLS, c.fills),
            (LODTENSOR_CUDA_COUNTER_DEVICE_COPIES, c.device_copies),
            (LODTENSOR_CUDA_COUNTER_UPLOADS, c.uploads),
            (LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES, c.upload_bytes),
            (LODTENSOR_CUDA_COUNTER_DOWNLOADS, c.downloads),
            (LODTENSOR_CUDA_COUNTER_DOWNLOAD_BYTES, c.download_bytes),
            (LODTENSOR_CUDA_COUNTER_WAITS, c.waits),
            (LODTENSOR_CUDA_COUNTER_ALLOCATIONS, c.allocations),
            (LODTENSOR_CUDA_COUNTER_DRIVER_ALLOCATIONS, c.driver_allocations),
        ] {
            assert_eq!(v[index], want, "index {index}");
        }
        assert_eq!(v.len(), LODTENSOR_CUDA_COUNTERS);
    }
}
