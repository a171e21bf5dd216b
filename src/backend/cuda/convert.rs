//! Launcher of `kernels/convert.cu`: `cast` between any two of the ten dtypes, one launch.

use super::device::new_tensor;
use super::launch::{launch_unrolled, Args};
use super::seq_common::device_of;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// A new device tensor with `x`'s dims and every element converted to `dtype` with the CPU's
/// rules (`backend::cpu::convert`), bit for bit.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let d = device_of(x, "cast")?;
    let mut out = new_tensor(&d, dtype, *x.dims())?;
    let n = x.numel() as u64;
    if n == 0 {
        return Ok(out);
    }
    let args = Args::new().ptr(x).arg(out.as_mut_ptr() as u64).arg(n);
    launch_unrolled(&d, "convert.cu", &format!("cast_{}_{}", x.dtype().name(), dtype.name()), n, args)?;
    Ok(out)
}
