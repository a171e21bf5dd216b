//! Exports of `sequence_pad` and `sequence_unpad`.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;

/// Paddle's `sequence_pad` (spec §6): `*out` is a new `[sequences, padded_length, x.dims[1..]...]`
/// tensor (no LoD) whose slot `i` holds sequence `i` of `x` followed by padding steps, and
/// `*out_length` (may be NULL when not wanted) a new int64 `[sequences]` tensor of the lengths.
/// `x`: rank >= 2, exactly 1 LoD level (our rule; Paddle's multi-level result is inconsistent).
/// `pad_value`: `x`'s dtype, either 1 element (every element of a padding step) or dims
/// `x.dims[1..]` (one whole step); its LoD is ignored. `padded_length`: -1 for the longest
/// sequence, else at least the longest sequence. Every dtype works. On a CUDA device (`x` and
/// `pad_value` both there) the padding runs there and both outputs are on that device. On failure
/// neither output is written.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `pad_value`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank
/// < 2 or of 9 dims; `pad_value` dtype or dims; `padded_length` < -1 or shorter than a sequence;
/// `x` and `pad_value` on different places), LODTENSOR_INVALID_LOD (`x` without exactly 1 LoD
/// level), LODTENSOR_UNSUPPORTED (a CUDA place in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_pad(
    x: *const lodtensor_t,
    pad_value: *const lodtensor_t,
    padded_length: i64,
    out: *mut *mut lodtensor_t,
    out_length: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, pad_value) = (get(x, "x")?, get(pad_value, "pad_value")?);
        let out = Out::new(out, "out")?;
        let (padded, length) = crate::ops::sequence_pad(&x.inner, &pad_value.inner, padded_length)?;
        new_handle(out, padded);
        if let Ok(out_length) = Out::new(out_length, "out_length") {
            new_handle(out_length, length);
        }
        Ok(())
    })
}

/// Paddle's `sequence_unpad` (spec §6): `*out` is a new tensor holding the first `length[i]` steps
/// of row `i` of `x`, concatenated: dims `[sum, x.dims[2..]...]` (`[sum, 1]` for a 2-D `x`), LoD
/// one level of `length` (no LoD when `x` has 0 rows). `x`: `[N, L, ...]`, rank >= 2, LoD ignored.
/// `length`: int64 or int32, dims `[N]`, each value in `[0, L]`. Every dtype of `x` works. On a
/// CUDA device (`x` and `length` both there) the copy runs there; `length` is copied to the host
/// to be checked (a small copy that waits for the device's queued work).
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `length`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank <
/// 2; `length` dims; a length negative or more than `L`; different places),
/// LODTENSOR_UNSUPPORTED (`length` not int32/int64; a CUDA place in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_unpad(
    x: *const lodtensor_t,
    length: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, length) = (get(x, "x")?, get(length, "length")?);
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_unpad(&x.inner, &length.inner)?);
        Ok(())
    })
}
