//! Exports for places: the CUDA device count, copies between places, and waiting for a device.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::{lodtensor_place_t, lodtensor_status_t};

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
