//! Launchers of `kernels/pooling.cu`: `sequence_pool`'s sums, extremes and first/last rows, one
//! launch each, a thread per (sequence, column).

use super::device::new_tensor;
use super::launch::{launch_1d, Args};
use super::seq_args::SumDivisor;
use super::seq_common::{device_of, float_suffix, level_on};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::Result;
use crate::lod::LodLevel;
use crate::tensor::Tensor;

/// Runs `kernel` over the outputs of `dims` (one per sequence of `level` and column of `width`)
/// with `extra` arguments after the common ones; `index` also gets an int32 tensor of `dims`.
fn run(
    x: &Tensor,
    width: usize,
    level: LodLevel,
    dims: Dim,
    kernel: &str,
    index: bool,
    extra: impl FnOnce(Args) -> Args,
) -> Result<(Tensor, Option<Tensor>)> {
    let d = device_of(x, "sequence_pool")?;
    let mut out = new_tensor(&d, x.dtype(), dims)?;
    let mut idx = if index { Some(new_tensor(&d, DType::I32, dims)?) } else { None };
    let total = ((level.offsets().len() - 1) * width) as u64;
    if total == 0 {
        return Ok((out, idx));
    }
    let offsets = level_on(&d, level)?;
    let mut args = Args::new().ptr(x).arg(out.as_mut_ptr() as u64);
    if let Some(i) = idx.as_mut() {
        args = args.arg(i.as_mut_ptr() as u64);
    }
    let args = extra(args.buf(&offsets).arg(width as u64).arg(total));
    launch_1d(&d, "pooling.cu", kernel, total, args)?;
    Ok((out, idx))
}

/// `out[i][c]` = the f64 sum of column `c` over rows `offsets[i]..offsets[i+1]` (`level`'s) of `x`
/// (rows of `width` elements, float dtypes) in row order, divided by `divisor` and rounded once; `pad`
/// (an element's bits) for an empty sequence. `dims`: `[sequences, ...]`.
pub fn pool_sum(x: &Tensor, width: usize, level: LodLevel, divisor: SumDivisor, pad: u64, dims: Dim) -> Result<Tensor> {
    let kernel = format!("pool_sum_{}", float_suffix(x.dtype())?);
    Ok(run(x, width, level, dims, &kernel, false, |a| a.arg(divisor as i32).arg(pad))?.0)
}

/// The largest (`max`) or smallest value of each column of each sequence, the first one on ties,
/// NaN never replacing a value; and the int32 tensor of its absolute rows. Empty: `pad` and -1.
pub fn pool_extreme(
    x: &Tensor,
    width: usize,
    level: LodLevel,
    max: bool,
    pad: u64,
    dims: Dim,
) -> Result<(Tensor, Tensor)> {
    let kernel = format!("pool_extreme_{}", float_suffix(x.dtype())?);
    let (out, index) = run(x, width, level, dims, &kernel, true, |a| a.arg(max as i32).arg(pad))?;
    Ok((out, index.expect("asked for the index")))
}

/// The last (`last`) or first row of each sequence; `pad` in every column for an empty one.
pub fn pool_select(x: &Tensor, width: usize, level: LodLevel, last: bool, pad: u64, dims: Dim) -> Result<Tensor> {
    let kernel = format!("pool_select_{}", x.dtype().size());
    Ok(run(x, width, level, dims, &kernel, false, |a| a.arg(last as i32).arg(pad))?.0)
}
