//! Exports of `sequence_pool`, `sequence_first_step` and `sequence_last_step`.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::error::{err, Result};
use crate::ops::PoolType;

/// `sequence_pool`: the sum of each sequence.
pub const LODTENSOR_POOL_SUM: i32 = 0;
/// `sequence_pool`: the mean of each sequence (Paddle's default, AVERAGE).
pub const LODTENSOR_POOL_AVERAGE: i32 = 1;
/// `sequence_pool`: the sum divided by the square root of the length.
pub const LODTENSOR_POOL_SQRT: i32 = 2;
/// `sequence_pool`: the largest value (strict `>`: the first maximum wins; NaN never replaces a
/// value, so a NaN is chosen only when it is the first row).
pub const LODTENSOR_POOL_MAX: i32 = 3;
/// `sequence_pool`: the smallest value (strict `<`, NaN as for MAX). Not in Paddle.
pub const LODTENSOR_POOL_MIN: i32 = 4;
/// `sequence_pool`: the first row of each sequence.
pub const LODTENSOR_POOL_FIRST: i32 = 5;
/// `sequence_pool`: the last row of each sequence.
pub const LODTENSOR_POOL_LAST: i32 = 6;

fn pool_type(code: i32) -> Result<PoolType> {
    Ok(match code {
        LODTENSOR_POOL_SUM => PoolType::Sum,
        LODTENSOR_POOL_AVERAGE => PoolType::Average,
        LODTENSOR_POOL_SQRT => PoolType::Sqrt,
        LODTENSOR_POOL_MAX => PoolType::Max,
        LODTENSOR_POOL_MIN => PoolType::Min,
        LODTENSOR_POOL_FIRST => PoolType::First,
        LODTENSOR_POOL_LAST => PoolType::Last,
        other => {
            return Err(err!(
                InvalidArgument,
                "pool_type: {other} is not a LODTENSOR_POOL_* value (SUM 0, AVERAGE 1, SQRT 2, MAX 3, MIN 4, FIRST 5, LAST 6)"
            ))
        }
    })
}

/// Paddle's `sequence_pool` (spec §6): one output row per sequence of `x`'s last LoD level, reduced
/// column by column (trailing dims flattened) as `pool_type` (a `LODTENSOR_POOL_*` value) says.
/// `x`: 1 or 2 LoD levels; float32, float64, float16 or bfloat16 (sums are accumulated in double
/// and rounded once). An empty sequence gives `pad_value` (converted to `x`'s dtype) in every
/// column. `*out`: a new `[sequences, x.dims[1..]...]` tensor with LoD `[L[0]]` for a 2-level `x`,
/// none for 1 level. `out_max_index` may be NULL; otherwise `*out_max_index` is, for MAX and MIN,
/// a new int32 tensor of `*out`'s dims (no LoD) holding the absolute row of `x` each value came
/// from (-1 for an empty sequence), and NULL for the other pool types. With `x` on a CUDA device
/// the pooling runs there (results equal to the host's bit for bit, NaN payloads of sums aside) and
/// the outputs are on that device.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (unknown
/// `pool_type`; a finite `pad_value` that `x`'s dtype would round to infinity),
/// LODTENSOR_INVALID_LOD (`x` with no LoD or more than 2 levels), LODTENSOR_OUT_OF_RANGE
/// (MAX/MIN on more than 2^31-1 rows), LODTENSOR_UNSUPPORTED (another dtype; a CUDA place in a
/// build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_pool(
    x: *const lodtensor_t,
    pool_type: i32,
    pad_value: f64,
    out: *mut *mut lodtensor_t,
    out_max_index: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        let pool = self::pool_type(pool_type)?;
        let pooled = crate::ops::sequence_pool(&x.inner, pool, pad_value)?;
        new_handle(out, pooled.out);
        if let Ok(slot) = Out::new(out_max_index, "out_max_index") {
            match pooled.max_index {
                Some(index) => new_handle(slot, index),
                None => slot.write(std::ptr::null_mut()),
            }
        }
        Ok(())
    })
}

/// Paddle's `sequence_first_step`: `sequence_pool` with LODTENSOR_POOL_FIRST and pad value 0
/// (the first row of each last-level sequence; 0 for an empty one). Statuses as `sequence_pool`'s
/// except for `pool_type`.
#[no_mangle]
pub unsafe extern "C" fn sequence_first_step(x: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_first_step(&x.inner)?);
        Ok(())
    })
}

/// Paddle's `sequence_last_step`: `sequence_pool` with LODTENSOR_POOL_LAST and pad value 0 (the
/// last row of each last-level sequence; 0 for an empty one). Statuses as `sequence_pool`'s
/// except for `pool_type`.
#[no_mangle]
pub unsafe extern "C" fn sequence_last_step(x: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_last_step(&x.inner)?);
        Ok(())
    })
}
