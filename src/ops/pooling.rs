//! `sequence_pool`, `sequence_first_step` and `sequence_last_step` (spec §6): one output row per
//! sequence of the last LoD level, pooled column by column.

use super::tensor_ops::exact;
use crate::backend::cpu::pooling::{pool_extreme, pool_select, pool_sum};
use crate::backend::cuda::{self, element_bits, SumDivisor};
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;

/// How `sequence_pool` reduces a sequence (per column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolType {
    /// The sum.
    Sum,
    /// The sum divided by the length.
    Average,
    /// The sum divided by the square root of the length.
    Sqrt,
    /// The largest value (strict `>`: the first maximum wins, NaN never replaces a value).
    Max,
    /// The smallest value (strict `<`; not in Paddle, the mirror of `Max`).
    Min,
    /// The first row.
    First,
    /// The last row.
    Last,
}

/// The result of [`sequence_pool`]: `out`, and for `Max`/`Min` the int32 row indices of the
/// chosen values (`max_index`, Paddle's `MaxIndex`).
#[derive(Debug)]
pub struct Pooled {
    pub out: LoDTensor,
    pub max_index: Option<LoDTensor>,
}

/// Paddle's `sequence_pool`. `x` has 1 or 2 LoD levels; each sequence of the last level (rows
/// `[L[-1][i], L[-1][i+1])`) becomes one output row, reduced column by column (trailing dims
/// flattened). `out` is `[sequences, x.dims[1..]...]`, with LoD `[L[0]]` for a 2-level `x` and
/// none for 1 level. An empty sequence gives `pad_value` in every column (and index -1), rounded
/// to the dtype; a finite `pad_value` that would round to infinity is `InvalidArgument`. `x` may
/// have fewer rows than sequences (empty sequences take none), which Paddle's kernel refuses.
/// `max_index` (Max/Min only) has `out`'s dims, no LoD, and holds absolute row indices of `x`.
///
/// dtypes: float32, float64, float16, bfloat16; others are `Unsupported`. Sums are accumulated
/// in f64 in row order and rounded to the dtype once (so f16/bf16 lose nothing in the sum, and
/// float32 may differ from Paddle's float32 sum in the last bit). On a CUDA device the outputs are
/// there, equal to the CPU's bit for bit (the device sums in the same order; only a NaN's payload
/// may differ).
pub fn sequence_pool(x: &LoDTensor, pool: PoolType, pad_value: f64) -> Result<Pooled> {
    let levels = x.lod().num_levels();
    ensure!(levels > 0, InvalidLod, "x: has no LoD; sequence_pool pools the sequences of x's last LoD level");
    ensure!(levels <= 2, InvalidLod, "x: has {levels} LoD levels; sequence_pool takes x with 1 or 2");
    let xt = x.tensor();
    let level = x.lod().lod_level(levels - 1)?;
    let offsets = level.offsets();
    let sequences = offsets.len() - 1;
    let width = x.dims().row_width();
    let rows = x.dims().rows().expect("a tensor with a LoD has rows");
    if matches!(pool, PoolType::Max | PoolType::Min) {
        ensure!(
            rows <= i32::MAX as usize,
            OutOfRange,
            "x: has {rows} rows; {pool:?} pooling reports int32 row indices, so x may have at most {} rows",
            i32::MAX
        );
    }
    // As fill does, a pad that the dtype would round to infinity is refused, not written.
    dispatch_dtype!(xt.dtype(), "x", [F32, F64, F16, BF16], |T| exact::<T>(pad_value, "pad_value").map(drop))?;
    let dims = x.dims().with_rows(sequences)?;
    let mut max_index = None;
    let out = match xt.place() {
        Place::Cpu => {
            let mut out = Tensor::uninit(xt.dtype(), dims)?;
            dispatch_dtype!(xt.dtype(), "x", [F32, F64, F16, BF16], |T| {
                let src = xt.as_slice::<T>()?;
                let pad = T::cast_f64(pad_value);
                let dst = out.as_mut_slice::<T>()?;
                match pool {
                    PoolType::Sum => pool_sum(src, width, offsets, |_| 1.0, pad, dst),
                    PoolType::Average => pool_sum(src, width, offsets, |n| n as f64, pad, dst),
                    PoolType::Sqrt => pool_sum(src, width, offsets, |n| (n as f64).sqrt(), pad, dst),
                    PoolType::First => pool_select(src, width, offsets, |start, _| start, pad, dst),
                    PoolType::Last => pool_select(src, width, offsets, |_, end| end - 1, pad, dst),
                    PoolType::Max | PoolType::Min => {
                        let mut index = Tensor::uninit(DType::I32, dims)?;
                        let idx = index.as_mut_slice::<i32>()?;
                        if pool == PoolType::Max {
                            pool_extreme(src, width, offsets, |v: T, best: T| v > best, pad, dst, idx)?;
                        } else {
                            pool_extreme(src, width, offsets, |v: T, best: T| v < best, pad, dst, idx)?;
                        }
                        max_index = Some(LoDTensor::dense(index));
                        Ok(())
                    }
                }
            })?;
            out
        }
        Place::Cuda(_) => {
            // The pad element is rounded on the host, as the CPU kernel rounds it.
            let pad =
                dispatch_dtype!(xt.dtype(), "x", [F32, F64, F16, BF16], |T| Ok(element_bits(T::cast_f64(pad_value))))?;
            match pool {
                PoolType::Sum => cuda::pool_sum(xt, width, level, SumDivisor::One, pad, dims)?,
                PoolType::Average => cuda::pool_sum(xt, width, level, SumDivisor::Length, pad, dims)?,
                PoolType::Sqrt => cuda::pool_sum(xt, width, level, SumDivisor::SqrtLength, pad, dims)?,
                PoolType::First => cuda::pool_select(xt, width, level, false, pad, dims)?,
                PoolType::Last => cuda::pool_select(xt, width, level, true, pad, dims)?,
                PoolType::Max | PoolType::Min => {
                    let (out, index) = cuda::pool_extreme(xt, width, level, pool == PoolType::Max, pad, dims)?;
                    max_index = Some(LoDTensor::dense(index));
                    out
                }
            }
        }
    };
    let lod = if levels == 2 {
        Lod::from_offsets(vec![lists::copy_of(x.lod().level(0)?, "sequence_pool: output LoD")?])?
    } else {
        Lod::empty()
    };
    Ok(Pooled { out: LoDTensor::new(out, lod)?, max_index })
}

/// Paddle's `sequence_first_step`: `sequence_pool` with `First` and pad value 0.
pub fn sequence_first_step(x: &LoDTensor) -> Result<LoDTensor> {
    Ok(sequence_pool(x, PoolType::First, 0.0)?.out)
}

/// Paddle's `sequence_last_step`: `sequence_pool` with `Last` and pad value 0.
pub fn sequence_last_step(x: &LoDTensor) -> Result<LoDTensor> {
    Ok(sequence_pool(x, PoolType::Last, 0.0)?.out)
}
