//! `top_k` (spec §4.1): the k largest (or smallest) entries of every row of the last axis, sorted,
//! with their int64 column indices.

use super::common_place;
use crate::backend::cpu::topk;
use crate::dtype::dispatch_dtype;
use crate::error::{ensure, err, Result};
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

/// Paddle's `topk` (v2, `axis = -1`, `sorted = true`) over the last axis of `x`.
///
/// Returns `(values, indices)`: `x`'s shape with the last dim replaced by `k`, values in `x`'s
/// dtype, indices int64; both keep `x`'s LoD. Values are in descending order (`largest`) or
/// ascending order; NaN ranks above every number (first when `largest`, last otherwise); equal
/// values come in index order (Our rule, spec §4.1).
///
/// On a CUDA device: one block per row (a sorted list per thread over a strided slice of the row,
/// then a block merge), the same result bit for bit; k above 64 costs one more read of the row per
/// further 64 (no upper bound).
///
/// Errors: `InvalidArgument` for a 0-d `x`, a 1-D `x` with a LoD, `k == 0` or `k` greater
/// than the last dim; `Unsupported` for bool (and for a CUDA place in a build without CUDA).
pub fn top_k(x: &LoDTensor, k: usize, largest: bool) -> Result<(LoDTensor, LoDTensor)> {
    let dims = x.dims();
    ensure!(dims.ndim() >= 1, InvalidArgument, "x: is 0-d; top_k works along the last axis, so x needs rank >= 1");
    ensure!(
        dims.ndim() >= 2 || x.lod().is_empty(),
        InvalidArgument,
        "x: is 1-D with a LoD; top_k works along the last axis, which for 1-D x holds the rows that \
         the LoD describes, so the k results could not keep it"
    );
    let width = dims.as_slice()[dims.ndim() - 1];
    ensure!(k >= 1, InvalidArgument, "k: is 0; top_k needs k >= 1");
    ensure!(
        k <= width,
        InvalidArgument,
        "k: {k} is greater than the last dim of x ({width}); x must have at least k columns"
    );
    let place = common_place(&[("x", x.tensor())])?;
    let rows = x.tensor().numel().checked_div(width).unwrap_or(0);
    let mut out_dims = dims.as_slice().to_vec();
    *out_dims.last_mut().expect("rank >= 1") = k;
    let out_dims = crate::dim::Dim::new(&out_dims)?;
    let (values, indices) = match place {
        Place::Cpu => top_k_host(x.tensor(), rows, width, k, largest, out_dims)?,
        Place::Cuda(_) => {
            // The same dtype check (and message) as the host path.
            dispatch_dtype!(x.tensor().dtype(), "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| Ok(()))?;
            crate::backend::cuda::top_k(x.tensor(), rows, width, k, largest, out_dims)?
        }
    };
    let lod = x.lod().clone();
    Ok((
        LoDTensor::new(values, lod.clone()).map_err(|e| err!(Internal, "top_k: values LoD: {e}"))?,
        LoDTensor::new(indices, lod).map_err(|e| err!(Internal, "top_k: indices LoD: {e}"))?,
    ))
}

fn top_k_host(
    x: &Tensor,
    rows: usize,
    width: usize,
    k: usize,
    largest: bool,
    out_dims: crate::dim::Dim,
) -> Result<(Tensor, Tensor)> {
    let mut indices = Tensor::zeros(crate::DType::I64, out_dims)?;
    let mut values = Tensor::zeros(x.dtype(), out_dims)?;
    dispatch_dtype!(x.dtype(), "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        let src = x.as_slice::<T>()?;
        let idx = indices.as_mut_slice::<i64>()?;
        debug_assert_eq!(idx.len(), rows * k);
        topk::top_k(src, width, k, largest, values.as_mut_slice::<T>()?, idx)
    })?;
    Ok((values, indices))
}
