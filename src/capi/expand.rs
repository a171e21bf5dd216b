//! Exports of `sequence_expand` and `sequence_expand_as`.

use super::args::{get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;

/// Paddle's `sequence_expand` (spec §2.1): repeats whole sequences of `x` as a level of `y`'s LoD
/// says. With `R` = level `ref_level` of `y`'s LoD (-1 = the last level), sequence `i` of `x` (its
/// level-0 sequences, or each row when `x` has no LoD) is written `R[i+1] - R[i]` times, in order
/// (a count of entries of the level below, or of rows for the last level; 0 drops the sequence).
/// `x`: rank >= 2, at most 1 LoD level. `y`: at least 1 LoD level; its data is not read, but it
/// must be on `x`'s place (the CPU or a CUDA device, where the result is made).
/// `*out` is a new tensor with its own memory, `x`'s dtype and trailing dims; with `x` having a
/// LoD, its LoD is one level of `x`'s sequence lengths, each repeated; without, no LoD (also when
/// the result has zero sequences). Every dtype works.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `y`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank < 2;
/// `x` without LoD whose rows differ from the number of sequences of level `ref_level`),
/// LODTENSOR_INVALID_LOD (`x` with more than 1 LoD level; `y` without LoD; `x`'s sequence count
/// differs from level `ref_level`'s), LODTENSOR_OUT_OF_RANGE (`ref_level` not -1 and not a level
/// of `y`), LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
/// LODTENSOR_INVALID_ARGUMENT also when `x` and `y` are on different places (naming both).
#[no_mangle]
pub unsafe extern "C" fn sequence_expand(
    x: *const lodtensor_t,
    y: *const lodtensor_t,
    ref_level: i64,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, y) = (get(x, "x")?, get(y, "y")?);
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_expand(&x.inner, &y.inner, ref_level)?);
        Ok(())
    })
}

/// Paddle's `sequence_expand_as` (spec §2.2): row `h` of `x` is written `L[h+1] - L[h]` times,
/// where `L` is `y`'s one-level LoD. `x`: rank >= 2 (its LoD is ignored), as many rows as `y` has
/// sequences. `y`: exactly 1 LoD level; its data is not read, but it must be on `x`'s place (the
/// CPU or a CUDA device, where the result is made). `*out` is a new tensor with its own
/// memory, `L.back()` rows, `x`'s dtype and trailing dims, and `y`'s LoD. Every dtype works.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `y`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank < 2,
/// rows of `x` != sequences of `y`, `x` and `y` on different places), LODTENSOR_INVALID_LOD (`y`
/// without exactly 1 LoD level), LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_expand_as(
    x: *const lodtensor_t,
    y: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, y) = (get(x, "x")?, get(y, "y")?);
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_expand_as(&x.inner, &y.inner)?);
        Ok(())
    })
}
