//! Exports of `sequence_scatter`, out of place and in place.

use super::args::{get, get_mut, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;

/// Paddle's `sequence_scatter` (spec §3): `*out` is a new tensor (own memory, `x`'s dims and
/// dtype, no LoD) equal to `x` plus the updates: for every id `p` in sequence `i` of `ids`,
/// `out[i][ids[p]] += updates[p]` (each row of `x` flattened; duplicates accumulate in id order,
/// integers wrap). `ids`: int64 or int32, exactly 1 LoD level, one id per row (`[M]` or `[M, 1]`).
/// `updates`: `x`'s dtype, exactly 1 LoD level (its offsets are not compared with `ids`', as in
/// Paddle), one value per id. An empty sequence leaves its row alone; rows past the last
/// sequence are copied unchanged. dtypes of `x`: every numeric type (not bool). Runs on the
/// inputs' place (the CPU or one CUDA device, which checks `ids` itself, copying them to the host
/// only to name one out of range, and sorts them by target with device scratch of about 42 bytes
/// per id); `*out` is on that place.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `ids`, `updates`, `out`), LODTENSOR_INVALID_ARGUMENT
/// (0-d `x`; `ids` or `updates` not one value per id; `updates` dtype != `x`'s; inputs on
/// different places),
/// LODTENSOR_INVALID_LOD (`ids` or `updates` without exactly 1 LoD level),
/// LODTENSOR_OUT_OF_RANGE (an id outside `[0, row width of x)`; more `ids` sequences than rows of
/// `x`), LODTENSOR_UNSUPPORTED (`ids` not int32/int64; `x` bool; a CUDA place this build cannot
/// use), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn sequence_scatter(
    x: *const lodtensor_t,
    ids: *const lodtensor_t,
    updates: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, ids, updates) = (get(x, "x")?, get(ids, "ids")?, get(updates, "updates")?);
        let out = Out::new(out, "out")?;
        new_handle(out, crate::ops::sequence_scatter(&x.inner, &ids.inner, &updates.inner)?);
        Ok(())
    })
}

/// `sequence_scatter` in place: adds the updates into `x`'s own memory (its dims and LoD stay).
/// The writes go through `x`'s memory, so every handle sharing it (`lodtensor_share`,
/// `lodtensor_slice`, split pieces, the caller's buffer of `lodtensor_from_buffer`) sees them; no
/// other thread may use that memory during the call. Arguments, rules and statuses as in
/// `sequence_scatter`, plus LODTENSOR_INVALID_ARGUMENT when `ids` or `updates` use `x`'s memory.
/// On failure `x` is unchanged (no write happens before every check has passed, on a device too).
#[no_mangle]
pub unsafe extern "C" fn sequence_scatter_inplace(
    x: *mut lodtensor_t,
    ids: *const lodtensor_t,
    updates: *const lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get_mut(x, "x")?;
        let (ids, updates) = (get(ids, "ids")?, get(updates, "updates")?);
        crate::ops::scatter::sequence_scatter_inplace_shared(&mut x.inner, &ids.inner, &updates.inner)
    })
}
