//! Export of `scatter_rows` and its mode constants.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::error::{err, Result};
use crate::ops::ScatterMode;

/// `lodtensor_scatter_rows`: the update row replaces the output row; when an index repeats, the
/// last update wins (Paddle's `scatter` with `overwrite=True`).
pub const LODTENSOR_SCATTER_OVERWRITE: i32 = 0;
/// `lodtensor_scatter_rows`: the update row is added to the output row; repeated indices
/// accumulate (`index_add` along axis 0, Paddle's `scatter` with `overwrite=False` on a copy of x).
pub const LODTENSOR_SCATTER_ADD: i32 = 1;

fn scatter_mode(code: i32) -> Result<ScatterMode> {
    match code {
        LODTENSOR_SCATTER_OVERWRITE => Ok(ScatterMode::Overwrite),
        LODTENSOR_SCATTER_ADD => Ok(ScatterMode::Add),
        other => Err(err!(InvalidArgument, "mode: {other} is not a LODTENSOR_SCATTER_* value (OVERWRITE 0, ADD 1)")),
    }
}

/// Row scatter: `*out` is a new tensor (own memory) with `x`'s dims, dtype and LoD, equal to `x`
/// except that for every `i` in `0..M`, row `index[i]` of it is replaced by
/// (LODTENSOR_SCATTER_OVERWRITE; for a repeated index the last `i` wins) or increased by
/// (LODTENSOR_SCATTER_ADD; repeated indices accumulate) row `i` of `updates`. `x` is not modified.
/// `x`: rank >= 1, dims `[N, ...]`, any LoD. `index`: int32 or int64, dims `[M]` or `[M, 1]`
/// (M may be 0), every value in `[0, N)`; negative values are errors, not counted from the end.
/// `updates`: `x`'s dtype, dims `[M, x.dims[1..]...]` (`[M]` for a 1-d `x`). The LoDs of `index`
/// and `updates` are ignored. OVERWRITE moves bytes and takes every dtype; ADD takes every numeric
/// dtype (not bool). ADD adds each row's updates onto `x`'s row in increasing `i`, exactly as the
/// sequential loop, so the result is the same bit for bit whatever the thread count; integers
/// wrap on overflow; float16/bfloat16 compute each addition in float and round it to the dtype.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `index`, `updates`, `out`), LODTENSOR_INVALID_ARGUMENT
/// (`mode` not a LODTENSOR_SCATTER_* value; 0-d `x`; `index` not `[M]` or `[M, 1]`; `updates`
/// not `[M, x.dims[1..]...]` or of another dtype than `x`; inputs on different places),
/// LODTENSOR_OUT_OF_RANGE (an index < 0 or >= N; the message names its position and value),
/// LODTENSOR_UNSUPPORTED (`index` not int32/int64; bool `x` with ADD; inputs on a CUDA device in
/// a build without CUDA), LODTENSOR_OUT_OF_MEMORY. On a CUDA device the result is on that device
/// and equals the CPU's bit for bit; the device reads and checks `index` itself (it is copied to
/// the host only to name a value out of range), and with ADD sorts the updates by row there,
/// stably, so each row's adds keep the CPU's order (device scratch of about 42 bytes per update
/// and 8 per row of `x`, for the call).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_scatter_rows(
    x: *const lodtensor_t,
    index: *const lodtensor_t,
    updates: *const lodtensor_t,
    mode: i32,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, index, updates) = (get(x, "x")?, get(index, "index")?, get(updates, "updates")?);
        let out = Out::new(out, "out")?;
        let mode = scatter_mode(mode)?;
        new_handle(out, crate::ops::scatter_rows(&x.inner, &index.inner, &updates.inner, mode)?);
        Ok(())
    })
}
