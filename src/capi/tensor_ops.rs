//! Exports of the dense tensor operations: fill, cast, gather_rows, log_softmax.

use super::args::{self, get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::{lodtensor_dtype_t, lodtensor_status_t};
use crate::ops;

/// A new host tensor of `dtype` and dims `dims[0..ndim]` (NULL allowed when `ndim` is 0), every
/// element `value`, without LoD (set one with `lodtensor_set_lod`); move it to a device with
/// `lodtensor_to_place`. Nothing is silently changed:
/// for integer dtypes `value` must be a whole number inside the dtype's range, for bool 0 or 1;
/// for float dtypes it is rounded to nearest but must not overflow to infinity (NaN and
/// ±infinity themselves are allowed). `*out` is a new tensor, destroyed by the caller.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`, `dims` NULL with `ndim` > 0),
/// LODTENSOR_INVALID_ARGUMENT (more than `LODTENSOR_MAX_DIMS` dims, a negative dim, `value` not
/// representable as described), LODTENSOR_UNSUPPORTED (unknown dtype), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_fill(
    dtype: lodtensor_dtype_t,
    dims: *const i64,
    ndim: usize,
    value: f64,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let dtype = dtype.to_dtype()?;
        let dims = args::dims(dims, ndim)?;
        new_handle(out, ops::fill(dtype, dims, value)?);
        Ok(())
    })
}

/// `x`'s elements converted to `dtype`, between any two of the ten dtypes, as a new tensor with
/// `x`'s dims and LoD (a copy even when the dtypes are equal). The rules are Rust's `as`:
/// integer to integer wraps (keeps the low bits, like C's conversion to unsigned), float to
/// integer truncates toward zero and saturates at the integer's range, NaN becoming 0; conversion
/// to a float rounds to nearest, ties to even (float16 and bfloat16 too, from the exact source
/// value), overflowing to ±infinity. bool converts to 0 or 1; a number converts to bool as
/// `value != 0` (NaN is true, -0.0 false); a NaN keeps its payload (quieted) between floats. The
/// result is on `x`'s place; on a CUDA device it is converted there, equal to the host's bit for
/// bit.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_UNSUPPORTED (unknown `dtype`, a CUDA
/// place in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_cast(
    x: *const lodtensor_t,
    dtype: lodtensor_dtype_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        let dtype = dtype.to_dtype()?;
        new_handle(out, ops::cast(&x.inner, dtype)?);
        Ok(())
    })
}

/// Rows `x[index[0]], x[index[1]], ...` as a new tensor of dims `[K, x.dims[1..]]` without LoD.
/// `index` is an int32 or int64 tensor of dims `[K]` or `[K, 1]`; `x` is any dtype, rank >= 1.
/// Runs on the inputs' place (the CPU or one CUDA device, where the device reads and checks
/// `index` itself; it is copied to the host only to name a value out of range); `*out` is on that
/// place.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `index`, `out`), LODTENSOR_INVALID_ARGUMENT (0-d `x`,
/// `index` not `[K]` or `[K, 1]`, `x` and `index` on different places), LODTENSOR_OUT_OF_RANGE
/// (an index < 0 or >= the rows of `x`; the message names its position), LODTENSOR_UNSUPPORTED
/// (`index` not int32/int64, a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_gather_rows(
    x: *const lodtensor_t,
    index: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let index = get(index, "index")?;
        let out = Out::new(out, "out")?;
        new_handle(out, ops::gather_rows(&x.inner, &index.inner)?);
        Ok(())
    })
}

/// Log-softmax over the last axis: `out = x - m - log(sum(exp(x - m)))`, `m` the maximum along
/// the axis (so nothing overflows; exponentials in float, or double for float64, sums in double),
/// for float32, float64, float16 and bfloat16. `*out` is a new tensor with `x`'s dims and LoD, on
/// `x`'s place (on a CUDA device it is computed there, equal to the host's to float rounding).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (0-d `x`),
/// LODTENSOR_UNSUPPORTED (dtype not a float, a CUDA place in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_log_softmax(
    x: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        new_handle(out, ops::log_softmax(&x.inner)?);
        Ok(())
    })
}
