//! A tensor filled with one value, made directly on a place: on a CUDA device the elements are
//! written there, without a host tensor and a copy.

use super::fill;
use crate::backend::cuda;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::Result;
use crate::lod_tensor::LoDTensor;
use crate::place::Place;

/// [`fill`] on `place`: a new tensor of `dtype` and `dims` on `place`, every element `value`,
/// without LoD. The value follows `fill`'s rules (exact for integers and bool, rounded to nearest
/// but not overflowing for floats); it is converted once on the host, and on a CUDA device one
/// kernel repeats it (queued on the device's stream). Any dtype.
///
/// Errors: those of `fill`; for a CUDA place, `Unsupported` in a build without CUDA, without a
/// driver or without a device, `InvalidArgument` for a device beyond the device count (both
/// checked first).
pub fn fill_on(place: Place, dtype: DType, dims: Dim, value: f64) -> Result<LoDTensor> {
    match place {
        Place::Cpu => fill(dtype, dims, value),
        Place::Cuda(n) => {
            place.ensure_usable()?;
            let element = fill(dtype, Dim::new(&[1])?, value)?;
            Ok(LoDTensor::dense(cuda::fill(n, dtype, dims, element.tensor().bytes()?)?))
        }
    }
}
