//! The export of `fill_on`: a tensor of one value made directly on a place.

use super::args::{self, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::{lodtensor_dtype_t, lodtensor_place_t, lodtensor_status_t};
use crate::ops;

/// `lodtensor_fill` on `place`: a new tensor of `dtype` and dims `dims[0..ndim]` (NULL allowed
/// when `ndim` is 0) on `place`, every element `value`, without LoD. `value` follows
/// `lodtensor_fill`'s rules (integer dtypes: a whole number inside the range; bool: 0 or 1;
/// floats: rounded to nearest, not overflowing to infinity). On a CUDA device the elements are
/// written there by one kernel queued on the device's stream (no host tensor, no copy); on the
/// CPU it is `lodtensor_fill`. `*out` is a new tensor, destroyed by the caller.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`, `dims` NULL with `ndim` > 0),
/// LODTENSOR_INVALID_ARGUMENT (a `place` that is not CPU with device_id 0 or CUDA with a
/// device_id >= 0; a CUDA device_id beyond the device count; more than `LODTENSOR_MAX_DIMS`
/// dims, a negative dim, `value` not representable as described), LODTENSOR_UNSUPPORTED
/// (unknown dtype; a CUDA place in a build without CUDA, without a driver or without a device),
/// LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA driver failure, named in the message).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_fill_on(
    place: lodtensor_place_t,
    dtype: lodtensor_dtype_t,
    dims: *const i64,
    ndim: usize,
    value: f64,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let place = place.to_place()?;
        let dtype = dtype.to_dtype()?;
        let dims = args::dims(dims, ndim)?;
        new_handle(out, ops::fill_on(place, dtype, dims, value)?);
        Ok(())
    })
}
