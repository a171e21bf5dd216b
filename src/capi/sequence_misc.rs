//! Exports of the smaller sequence operators (semantics spec §6): softmax, concat, slice, reverse,
//! mask, enumerate, erase, reshape, conv. Each checks its pointers, calls `crate::ops` and hands back a
//! new handle.
//!
//! Every op but softmax runs where its inputs are, on the CPU or on a CUDA device, and returns its
//! result there; inputs on different places are LODTENSOR_INVALID_ARGUMENT naming both places.

use super::args::{self, get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle, tensors_of};
use super::types::{lodtensor_dtype_t, lodtensor_status_t};
use crate::error::Result;
use crate::lod_tensor::LoDTensor;
use crate::ops;

/// `*out = f(x)` for a one-input operator.
unsafe fn unary(
    x: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
    f: impl FnOnce(&LoDTensor) -> Result<LoDTensor>,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        new_handle(out, f(&x.inner)?);
        Ok(())
    })
}

/// Softmax within each sequence of `x`'s last LoD level, with the sequence's maximum subtracted
/// (so large inputs do not overflow, unlike Paddle's CPU kernel). `x` holds one element per row
/// (`[N]` or `[N, 1]`) of float32, float64, float16 or bfloat16 (exponentials in float, or double
/// for float64; sums in double). On success
/// `*out` is a new tensor with `x`'s dims and LoD, on `x`'s place (on a CUDA device it is computed
/// there, equal to the host's to float rounding), destroyed by the caller.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (`x` has no LoD),
/// LODTENSOR_INVALID_ARGUMENT (`x` has more than one element per row),
/// LODTENSOR_UNSUPPORTED (dtype not a float, or a CUDA place in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_softmax(x: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    unary(x, out, ops::sequence_softmax)
}

/// Concatenates `count` (>= 2) tensors sequence by sequence: output sequence `i` holds the rows
/// of sequence `i` (LoD level 0) of `xs[0]`, then of `xs[1]`, ... Every input needs a LoD with
/// the same number of level-0 sequences, the same dtype (any) and the same row width (product of
/// `dims[1..]`); the output takes `xs[0]`'s trailing dims and has one LoD level whose sequence
/// lengths are the sums of the inputs' row counts. Level 0 is read as absolute rows, so
/// multi-level inputs work too (Paddle reads its offsets as rows). `*out` is a new tensor on the
/// inputs' place (the CPU or one CUDA device).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`xs`, any `xs[i]`, `out`), LODTENSOR_INVALID_ARGUMENT
/// (`count` < 2, dtype or row width differing from `xs[0]`'s, inputs on different places),
/// LODTENSOR_INVALID_LOD (an input without LoD, or with a different number of sequences),
/// LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_concat(
    xs: *const *const lodtensor_t,
    count: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let handles = args::slice(xs, count, "xs")?;
        let out = Out::new(out, "out")?;
        let inputs = tensors_of(handles, "xs")?;
        new_handle(out, ops::sequence_concat(&inputs)?);
        Ok(())
    })
}

/// Rows `[L[i] + offset[i], L[i] + offset[i] + length[i])` of each sequence `i` of `x`, whose LoD
/// `L` has exactly one level, concatenated; the output LoD is `[[0, cumsum(length)]]`. `offset`
/// and `length` are int64 (or int32) tensors of dims `[N, 1]` or `[N]`, `N` = the number of
/// sequences. `x` may be of any dtype. `*out` is a new tensor on the inputs' place; on a CUDA
/// device `offset` and `length` are copied to the host to be checked.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `offset`, `length`, `out`), LODTENSOR_INVALID_LOD (`x`
/// has no LoD or more than one level), LODTENSOR_INVALID_ARGUMENT (`offset`/`length` not `[N]` or
/// `[N, 1]`; a negative offset or length, naming the sequence), LODTENSOR_OUT_OF_RANGE (a slice
/// ending past its sequence: `L[i] + offset[i] + length[i] > L[i + 1]`, naming the sequence),
/// LODTENSOR_UNSUPPORTED (`offset`/`length` not int32/int64, a CUDA place this build cannot
/// use), LODTENSOR_INVALID_ARGUMENT also for inputs on different places, LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_slice(
    x: *const lodtensor_t,
    offset: *const lodtensor_t,
    length: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let offset = get(offset, "offset")?;
        let length = get(length, "length")?;
        let out = Out::new(out, "out")?;
        new_handle(out, ops::sequence_slice(&x.inner, &offset.inner, &length.inner)?);
        Ok(())
    })
}

/// The rows of each sequence of `x` in reverse order. `x` has rank >= 2, exactly one LoD level,
/// any dtype. `*out` is a new tensor with `x`'s dims, LoD and place.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (not exactly one LoD
/// level), LODTENSOR_INVALID_ARGUMENT (rank < 2), LODTENSOR_UNSUPPORTED (a CUDA place this build
/// cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_reverse(x: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    unary(x, out, ops::sequence_reverse)
}

/// The mask of lengths: `y[..., j] = (j < x[...]) ? 1 : 0` for `j` in `[0, maxlen)`. `y` has
/// `x`'s dims plus `[maxlen]`, dtype `out_dtype` (any of the ten, bool included) and no LoD.
/// `maxlen` < 0 means `max(0, max over x of trunc(x))`, and 0 when `x` is empty; `maxlen` 0 is
/// an error. `x` may be any numeric dtype (not bool). `*out` is a new tensor on `x`'s place; on a
/// CUDA device with `maxlen` < 0, `x` is copied to the host to find its maximum.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (`maxlen` 0, `x`
/// already has `LODTENSOR_MAX_DIMS` dims), LODTENSOR_UNSUPPORTED (`x` bool, an unknown
/// `out_dtype`, a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY (the mask is too large).
#[no_mangle]
pub unsafe extern "C" fn sequence_mask(
    x: *const lodtensor_t,
    maxlen: i64,
    out_dtype: lodtensor_dtype_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        let dtype = out_dtype.to_dtype().map_err(|e| crate::error::err!(Unsupported, "out_dtype: {e}"))?;
        new_handle(out, ops::sequence_mask(&x.inner, maxlen, dtype)?);
        Ok(())
    })
}

/// Sliding windows within sequences: `out[r][k] = x[r + k]` while row `r + k` belongs to the
/// same sequence of `x`'s last LoD level as row `r`, else `pad_value`. `x` is int32 or int64 with
/// one element per row (`[N]` or `[N, 1]`) and a LoD; `win_size` >= 2; `pad_value` must fit `x`'s
/// dtype. `*out` is a new `[N, win_size]` tensor with `x`'s LoD and place.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (`x` has no LoD),
/// LODTENSOR_INVALID_ARGUMENT (`x` not one element per row, `win_size` < 2, `pad_value` out of
/// the dtype's range), LODTENSOR_UNSUPPORTED (dtype not int32/int64, a CUDA place this build
/// cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_enumerate(
    x: *const lodtensor_t,
    win_size: i64,
    pad_value: i64,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    unary(x, out, |x| ops::sequence_enumerate(x, win_size, pad_value))
}

/// Removes every element of `x` equal to one of `tokens[0..tokens_len]` (NULL allowed when
/// `tokens_len` is 0, which copies `x`). `x` is int32 or int64 with one element per row (`[N]` or
/// `[N, 1]`) and a LoD. `*out` is a new tensor of `x`'s rank with the surviving rows; every LoD
/// level but the last is copied, the last is recomputed from the surviving counts. `*out` is on
/// `x`'s place; on a CUDA device `x` is copied to the host (the output's size depends on it)
/// and the surviving rows are gathered on the device.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`, `tokens` NULL with `tokens_len` > 0),
/// LODTENSOR_INVALID_LOD (`x` has no LoD), LODTENSOR_INVALID_ARGUMENT (`x` not one element per
/// row), LODTENSOR_UNSUPPORTED (dtype not int32/int64, a CUDA place this build cannot use),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_erase(
    x: *const lodtensor_t,
    tokens: *const i64,
    tokens_len: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let tokens = args::slice(tokens, tokens_len, "tokens")?;
        let out = Out::new(out, "out")?;
        new_handle(out, ops::sequence_erase(&x.inner, tokens)?);
        Ok(())
    })
}

/// The elements of `x` (`[N, M]`, exactly one LoD level, any dtype) as a new tensor of
/// `[N * M / new_dim, new_dim]` in the same row-major order. Every sequence's element count
/// `len * M` must be a multiple of `new_dim`; the output LoD has lengths `len * M / new_dim`.
/// `*out` is on `x`'s place.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (not exactly one LoD
/// level), LODTENSOR_INVALID_ARGUMENT (rank not 2, `new_dim` < 1, a sequence whose element
/// count is not a multiple of `new_dim`, naming it), LODTENSOR_UNSUPPORTED (a CUDA place this
/// build cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_reshape(
    x: *const lodtensor_t,
    new_dim: i64,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    unary(x, out, |x| ops::sequence_reshape(x, new_dim))
}

/// Paddle's `sequence_conv`: for each row `r` of `x` (`[T, N]`, exactly one LoD level), the
/// `context_length` rows `p = r + context_start + j` (j = 0 .. context_length-1) of r's own
/// sequence side by side, times `filter` (`[context_length * N, M]`); `*out` is a new `[T, M]`
/// tensor with `x`'s LoD. Context rows outside the sequence are zeros, or, with
/// `padding_trainable`, rows of `padding_data` (`[up_pad + down_pad, N]`, `up_pad =
/// max(0, -context_start)`, `down_pad = max(0, context_start + context_length - 1)`):
/// `padding_data[up_pad + p]` before the sequence, `padding_data[up_pad + p - len]` after it.
/// `padding_data` may be NULL, and is ignored, unless `padding_trainable`. float32 or float64
/// (`x`, `filter` and `padding_data` alike). `*out` is on the inputs' place; on a CUDA device
/// the sums run in the CPU's order without fused multiply-adds.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `filter`, `out`; `padding_data` when
/// `padding_trainable`), LODTENSOR_INVALID_LOD (`x` has not exactly one LoD level),
/// LODTENSOR_INVALID_ARGUMENT (`x` not rank 2, `context_length` < 1, `context_stride` not 1,
/// `padding_trainable` with `context_start` 0 and `context_length` 1, |`context_start`| or
/// `context_length` >= 2^62, `filter` or `padding_data` of the wrong dims or a dtype other than
/// `x`'s, inputs on different places), LODTENSOR_UNSUPPORTED (not float32/float64, a CUDA place
/// this build cannot use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_conv(
    x: *const lodtensor_t,
    filter: *const lodtensor_t,
    padding_data: *const lodtensor_t,
    context_length: i64,
    context_start: i64,
    context_stride: i64,
    padding_trainable: bool,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let filter = get(filter, "filter")?;
        let out = Out::new(out, "out")?;
        let padding = padding_data.as_ref().map(|p| &p.inner);
        new_handle(
            out,
            ops::sequence_conv(
                &x.inner,
                &filter.inner,
                padding,
                context_length,
                context_start,
                context_stride,
                padding_trainable,
            )?,
        );
        Ok(())
    })
}
