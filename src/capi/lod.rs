//! LoD exports: reading and replacing a tensor's LoD, and the sequence-level operations on whole
//! tensors (slice, split, merge, lod_reset).

use super::args::{self, copy_out, get, get_mut, Out};
use super::boundary;
use super::tensor::{into_handle, lodtensor_t, new_handle, read, tensors_of};
use super::types::lodtensor_status_t;
use crate::error::ensure;
use crate::lod_tensor::LoDTensor;

/// The number of LoD levels (0 for a plain dense tensor). Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_lod_num_levels(t: *const lodtensor_t, out: *mut usize) -> lodtensor_status_t {
    read(t, out, |t| t.lod().num_levels())
}

/// The offsets of LoD level `level` (top level is 0): `*out_len` values starting at 0, the last
/// level indexing rows and every other level indexing sequences of the level below. Borrowed:
/// valid until the handle's LoD is changed or the handle is destroyed.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` >= number of levels).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_lod_offsets(
    t: *const lodtensor_t,
    level: usize,
    out: *mut *const usize,
    out_len: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let (out, out_len) = (Out::new(out, "out")?, Out::new(out_len, "out_len")?);
        let offsets = t.inner.lod().level(level)?;
        out.write(offsets.as_ptr());
        out_len.write(offsets.len());
        Ok(())
    })
}

/// Copies the sequence lengths of LoD level `level` into `buf` and their count (the number of
/// sequences) into `*out_len`. With `buf` NULL only `*out_len` is written.
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_len`), LODTENSOR_OUT_OF_RANGE (`level`),
/// LODTENSOR_BUFFER_TOO_SMALL.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_lod_lengths(
    t: *const lodtensor_t,
    level: usize,
    buf: *mut usize,
    buf_len: usize,
    out_len: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out_len = Out::new(out_len, "out_len")?;
        let offsets = t.inner.lod().level(level)?;
        copy_out(offsets.windows(2).map(|w| w[1] - w[0]), buf, buf_len, out_len, "buf")
    })
}

/// Replaces the LoD (encoded as in `lodtensor_create`; `num_levels` 0 removes it). The new LoD is
/// validated against the rows first; on failure the old one stays.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (bad `lod_kind`, sizes not adding
/// up), LODTENSOR_INVALID_LOD (a rule broken, or not ending at the row count),
/// LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_set_lod(
    t: *mut lodtensor_t,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get_mut(t, "t")?;
        let lod = args::lod(lod_kind, level_sizes, num_levels, lod, lod_len)?;
        t.inner.set_lod(lod)
    })
}

/// Removes every LoD level, leaving a dense tensor. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_clear_lod(t: *mut lodtensor_t) -> lodtensor_status_t {
    boundary(|| {
        get_mut(t, "t")?.inner.clear_lod();
        Ok(())
    })
}

/// The rows `[*out_begin, *out_end)` of sequence `index` at LoD level `level`.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` or `index`).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_sequence_rows(
    t: *const lodtensor_t,
    level: usize,
    index: usize,
    out_begin: *mut usize,
    out_end: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let (out_begin, out_end) = (Out::new(out_begin, "out_begin")?, Out::new(out_end, "out_end")?);
        let rows = t.inner.sequence_rows(level, index)?;
        out_begin.write(rows.start);
        out_end.write(rows.end);
        Ok(())
    })
}

/// Sequences `[begin, end)` of LoD level `level` as a new handle sharing `t`'s memory (no copy).
/// Its LoD has levels `level..` of `t`'s LoD, re-based to start at 0; its rows are the rows of
/// those sequences. Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` >= number of
/// levels, `begin` >= `end`, or `end` > number of sequences at `level`), LODTENSOR_OUT_OF_MEMORY
/// (no memory for the new LoD).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_slice(
    t: *const lodtensor_t,
    level: usize,
    begin: usize,
    end: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out = Out::new(out, "out")?;
        new_handle(out, t.inner.slice(level, begin, end)?);
        Ok(())
    })
}

/// Splits the batch into at most `num_pieces` pieces of whole top-level sequences (whole rows
/// without a LoD), each `ceil(batch / num_pieces)` sequences but the last. Pieces share `t`'s
/// memory. `out_pieces` must hold `num_pieces` handles; the first `*out_count` are written, each
/// destroyed by the caller. An empty batch (0 rows, no LoD) gives `num_pieces` shares of `t`.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`num_pieces` 0, a 0-d tensor),
/// LODTENSOR_BUFFER_TOO_SMALL (`out_pieces_len` < `num_pieces`), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_split(
    t: *const lodtensor_t,
    num_pieces: usize,
    out_pieces: *mut *mut lodtensor_t,
    out_pieces_len: usize,
    out_count: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        ensure!(
            !out_pieces.is_null() || out_pieces_len == 0,
            NullArgument,
            "out_pieces: must not be NULL when out_pieces_len is {out_pieces_len}"
        );
        let out_count = Out::new(out_count, "out_count")?;
        ensure!(
            out_pieces_len >= num_pieces,
            BufferTooSmall,
            "out_pieces: holds {out_pieces_len} handle(s), num_pieces is {num_pieces}"
        );
        let pieces = t.inner.split(num_pieces)?;
        for (i, piece) in pieces.iter().enumerate() {
            out_pieces.add(i).write(into_handle(piece.clone()));
        }
        out_count.write(pieces.len());
        Ok(())
    })
}

/// Concatenates `count` tensors along rows into a new tensor with its own memory, on their place
/// (on a CUDA device, one gather there); LoD levels are appended level by level. All need the
/// same number of LoD levels; those with rows need the same dtype, row width (elements per row:
/// `[2, 6]` and `[3, 2, 3]` merge, as in Paddle) and place; 0-row tensors are not checked. The
/// output has the row shape of the first tensor with rows (with none, the dtype, row shape and
/// place of `tensors[0]`).
/// Returns LODTENSOR_NULL_ARGUMENT (`tensors`, any `tensors[i]`, `out`),
/// LODTENSOR_INVALID_ARGUMENT (`count` 0, mismatched dtype/row width/place, a 0-d tensor),
/// LODTENSOR_INVALID_LOD (different numbers of LoD levels), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_merge(
    tensors: *const *const lodtensor_t,
    count: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let handles = args::slice(tensors, count, "tensors")?;
        let out = Out::new(out, "out")?;
        let parts = tensors_of(handles, "tensors")?;
        new_handle(out, LoDTensor::merge(&parts)?);
        Ok(())
    })
}

/// Paddle's `lod_reset`: a new handle on `x`'s memory (shared, not copied) with a new LoD.
///
/// If `y` is not NULL and has a LoD, the result takes `y`'s LoD (its last level must end at `x`'s
/// row count). Otherwise the target level is `y`'s elements (int32 or int64) when `y` is given,
/// else `target_lod[0..target_len]` (offsets). The target needs at least 2 offsets, starts at 0,
/// never decreases and ends at `x`'s row count. With `append` false the target is the only level;
/// with `append` true it is added below `x`'s LoD, and the result must pass every LoD rule. `y`
/// must be on `x`'s place; on a CUDA device its elements are copied to the host to be checked.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (0-d `x`, `y` on another place),
/// LODTENSOR_UNSUPPORTED (`y` not int32/int64), LODTENSOR_INVALID_LOD (any rule above),
/// LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_lod_reset(
    x: *const lodtensor_t,
    y: *const lodtensor_t,
    target_lod: *const i64,
    target_len: usize,
    append: bool,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        let y = y.as_ref().map(|y| &y.inner);
        let target = args::slice(target_lod, target_len, "target_lod")?;
        new_handle(out, x.inner.lod_reset(y, target, append)?);
        Ok(())
    })
}
