//! Exports for places: the CUDA device count, loading a device's kernels up front, copies between
//! places, waiting for a device, the memory each device's cache holds, the bound on it, and the
//! device's free memory.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::{lodtensor_place_t, lodtensor_status_t};
use crate::error::{err, Result};

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
/// device memory by other means). The caller destroys `*out` with `lodtensor_destroy`.
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

/// CUDA device `device` as the backend numbers it; negative ids are refused here, ids beyond the
/// device count by the backend.
fn cuda_ordinal(device: i32) -> Result<u32> {
    u32::try_from(device)
        .map_err(|_| err!(InvalidArgument, "device: {device} is negative; CUDA devices are numbered from 0"))
}

/// The device memory the library holds on CUDA device `device`: `*out_in_use`, the bytes of its
/// live allocations (tensors not destroyed yet, including the results of queued work), and
/// `*out_kept`, the bytes of freed blocks that the device's cache keeps for the next allocation of
/// their size class. Both count whole blocks: a request is rounded up to the next power of two up
/// to 4 KiB (512 bytes at least), and by at most 1/8 above. A device the library has not used yet
/// holds 0 and 0 (asking does not set it up).
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
/// memory. Tensors are not affected. The cache keeps freed blocks for the next allocation of their
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
