//! `sequence_expand` and `sequence_expand_as` (spec §2): repeat whole sequences (or rows) of `x`
//! as many times as a level of `y`'s LoD says. Both only move row blocks, so they work for every
//! dtype (Paddle's CPU kernels list float32/float64/int32/int64; the byte kernel needs no list).

use super::common_place;
use super::support::lod_of_built_level;
use crate::backend::cpu::rows::{expand_sequences, repeat_rows};
use crate::backend::cpu::sequence::ExpandOffsets;
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

fn check_rank(x: &LoDTensor, op: &str) -> Result<()> {
    ensure!(
        x.dims().ndim() >= 2,
        InvalidArgument,
        "x: has dims {:?} (rank {}); {op} needs rank >= 2 (rows x row shape)",
        x.dims(),
        x.dims().ndim()
    );
    Ok(())
}

/// Paddle's `sequence_expand`. Let `R` be level `ref_level` of `y`'s LoD (-1 = the last level)
/// and `repeat_i = R[i+1] - R[i]` (a count of entries of the level below, or of rows for the last
/// level). Sequence `i` of `x` (its level-0 sequences, or its rows when it has no LoD) is written
/// `repeat_i` times, in order; a count of 0 drops it. With a LoD, the result has one level: the
/// length of sequence `i` repeated `repeat_i` times (empty sequences give empty entries); without
/// one, the result has none (a dense `x` is the "lod_expand" of spec §1.9). `y`'s data is not
/// read, but `y` must be on `x`'s place, as every input of an op (else `InvalidArgument` naming
/// both places). A result of zero sequences has no LoD (`[0]` is not a valid top level).
pub fn sequence_expand(x: &LoDTensor, y: &LoDTensor, ref_level: i64) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor()), ("y", y.tensor())])?;
    check_rank(x, "sequence_expand")?;
    ensure!(
        x.lod().num_levels() <= 1,
        InvalidLod,
        "x: has {} LoD levels; sequence_expand takes x with at most 1",
        x.lod().num_levels()
    );
    let levels = y.lod().num_levels();
    ensure!(levels > 0, InvalidLod, "y: has no LoD; sequence_expand reads the repeat counts from y's LoD");
    let level = if ref_level == -1 {
        levels - 1
    } else {
        ensure!(
            ref_level >= 0 && (ref_level as u64) < levels as u64,
            OutOfRange,
            "ref_level: {ref_level} is out of range; y has {levels} LoD level(s), so it must be -1 (the last) or in [0, {levels})"
        );
        ref_level as usize
    };
    let r = y.lod().level(level)?;
    let n = r.len() - 1;
    let x_rows = x.dims().rows().expect("rank >= 2");
    let x_level = x.lod().levels().first();
    match x_level {
        Some(xl) => ensure!(
            xl.len() - 1 == n,
            InvalidLod,
            "x: has {} sequences, but level {level} of y's LoD has {n}; each x sequence needs one repeat count",
            xl.len() - 1
        ),
        None => ensure!(
            x_rows == n,
            InvalidArgument,
            "x: has {x_rows} rows and no LoD, but level {level} of y's LoD has {n} sequences; each row of x needs one repeat count"
        ),
    }
    place.ensure_usable()?;
    let Some(xl) = x_level else {
        // Row i of x fills output rows [r[i], r[i+1]): expand_as's repeat, with r as its table.
        return Ok(LoDTensor::dense(repeat(x.tensor(), y.lod().lod_level(level)?, place)?));
    };
    // Copy k of x's sequence i is its rows [xl[i], xl[i+1]); the output's one level lists the
    // copies' lengths.
    let mut offsets = ExpandOffsets::new(xl, r)?;
    let row_bytes = x.tensor().row_bytes();
    match place {
        // The device makes the output's offsets for itself, from the two levels (kept on the
        // device): none is uploaded, and the host writes its own while the device works. On
        // either place no range is listed per copy.
        Place::Cuda(_) => {
            let dims = x.dims().with_rows(offsets.rows()?)?;
            let (x_level, repeats) = (x.lod().lod_level(0)?, y.lod().lod_level(level)?);
            let (tensor, kept) = crate::backend::cuda::expand_rows(x.tensor(), row_bytes, x_level, repeats, dims)?;
            let lod = lod_of_built_level(offsets.write()?);
            if let Some(kept) = kept {
                lod.lod_level(0)?.copy_at(place, |_| Ok(kept))?;
            }
            LoDTensor::new(tensor, lod)
        }
        Place::Cpu => {
            let lod = lod_of_built_level(offsets.write()?);
            let mut out = Tensor::uninit(x.tensor().dtype(), x.dims().with_rows(lod.rows().unwrap_or(0))?)?;
            if let Some(offsets) = lod.levels().first() {
                expand_sequences(x.tensor().bytes()?, row_bytes, xl, r, offsets, out.bytes_mut()?)?;
            }
            LoDTensor::new(out, lod)
        }
    }
}

/// A new tensor on `place` (`x`'s) whose rows `[offsets[i], offsets[i+1])` are each row `i` of
/// `x`, the offsets being `level`'s (one more than `x` has rows).
fn repeat(x: &Tensor, level: LodLevel, place: Place) -> Result<Tensor> {
    let offsets = level.offsets();
    let dims = x.dims().with_rows(offsets[offsets.len() - 1])?;
    if let Place::Cuda(_) = place {
        return crate::backend::cuda::repeat_rows(x, x.row_bytes(), level, dims);
    }
    let mut out = Tensor::uninit(x.dtype(), dims)?;
    repeat_rows(x.bytes()?, x.row_bytes(), offsets, out.bytes_mut()?)?;
    Ok(out)
}

/// Paddle's `sequence_expand_as`: row `h` of `x` is written `L[h+1] - L[h]` times, where `L` is
/// `y`'s one-level LoD, so the result has `L.back()` rows and `y`'s LoD. `x`'s own LoD is ignored;
/// `y`'s data is not read, but `y` must be on `x`'s place (else `InvalidArgument` naming both).
pub fn sequence_expand_as(x: &LoDTensor, y: &LoDTensor) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor()), ("y", y.tensor())])?;
    check_rank(x, "sequence_expand_as")?;
    ensure!(
        y.lod().num_levels() == 1,
        InvalidLod,
        "y: has {} LoD levels; sequence_expand_as takes y with exactly 1",
        y.lod().num_levels()
    );
    let l = y.lod().level(0)?;
    let x_rows = x.dims().rows().expect("rank >= 2");
    ensure!(
        x_rows == l.len() - 1,
        InvalidArgument,
        "x: has {x_rows} rows, but y's LoD has {} sequences; each row of x needs one sequence of y",
        l.len() - 1
    );
    place.ensure_usable()?;
    LoDTensor::new(repeat(x.tensor(), y.lod().lod_level(0)?, place)?, y.lod().clone())
}
