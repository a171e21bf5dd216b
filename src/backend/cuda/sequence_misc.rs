//! Launchers of `kernels/sequence_misc.cu`: sequence_reverse, sequence_mask,
//! sequence_enumerate, sequence_conv and the scatter-add of sequence_scatter. The ops validate
//! (sequence_scatter's ids are checked on the device); these upload the host tables once per call,
//! use the LoD levels' device copies, and launch once (sequence_scatter: a few times).

use super::device::new_tensor;
use super::group::sort_by_key;
use super::kept_zero::BadCount;
use super::launch::{launch_1d, launch_tiles, Args};
use super::seq_common::{count_u32, device_of, dtype_suffix, index_suffix, level_on, word_for};
use crate::backend::cpu::sequence::ConvShape;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::tensor::Tensor;

const FILE: &str = "sequence_misc.cu";

/// sequence_reverse on the device: each sequence `[offsets[i], offsets[i+1])` (of `level`) of
/// `src`'s rows in reverse order, in a new tensor of `src`'s dims.
pub fn sequence_reverse_rows(src: &Tensor, level: LodLevel) -> Result<Tensor> {
    let d = device_of(src, "sequence_reverse")?;
    let offsets = level.offsets();
    let mut out = new_tensor(&d, src.dtype(), *src.dims())?;
    let rows = *offsets.last().expect("a LoD level");
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let num_seqs = count_u32(offsets.len() - 1, "x")?;
    let row_bytes = src.row_bytes();
    let (s, dst) = (src.as_ptr() as u64, out.as_mut_ptr() as u64);
    let word = word_for(row_bytes, [s, dst]);
    let table = level_on(&d, level)?;
    let row_words = (row_bytes / word) as u64;
    let args = Args::new().arg(s).arg(dst).arg(row_words).buf(&table).arg(num_seqs).arg(rows as u64);
    launch_tiles(&d, FILE, &format!("sequence_reverse_rows_{word}"), rows as u64, row_words, args)?;
    Ok(out)
}

/// sequence_mask on the device: `out[i * maxlen + j] = (j < x[i]) ? one : zero`, a new tensor of
/// `dims` and `out_dtype`; `one` and `zero` are `out_dtype`'s bit patterns (low bytes).
pub fn sequence_mask(x: &Tensor, maxlen: usize, out_dtype: DType, one: u64, zero: u64, dims: Dim) -> Result<Tensor> {
    let d = device_of(x, "sequence_mask")?;
    let mut out = new_tensor(&d, out_dtype, dims)?;
    let total = out.numel() as u64;
    if total == 0 {
        return Ok(out);
    }
    let name = format!("sequence_mask_{}_{}", dtype_suffix(x.dtype())?, out_dtype.size());
    let args = Args::new().ptr(x).arg(out.as_mut_ptr() as u64).arg(maxlen as u64).arg(total).arg(one).arg(zero);
    launch_1d(&d, FILE, &name, total, args)?;
    Ok(out)
}

/// sequence_enumerate on the device: `[rows, win]` windows of `x` (int32 or int64, one element
/// per row) within the sequences of `level` (of its rows), `pad` (fits the dtype) past their ends.
pub fn sequence_enumerate(x: &Tensor, level: LodLevel, win: usize, pad: i64) -> Result<Tensor> {
    let d = device_of(x, "sequence_enumerate")?;
    let rows = x.numel();
    let mut out = new_tensor(&d, x.dtype(), Dim::new(&[rows, win])?)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let num_seqs = count_u32(level.offsets().len() - 1, "x")?;
    let table = level_on(&d, level)?;
    let args = Args::new()
        .ptr(x)
        .arg(out.as_mut_ptr() as u64)
        .buf(&table)
        .arg(num_seqs)
        .arg(rows as u64)
        .arg(win as u64)
        .arg(pad);
    launch_tiles(&d, FILE, &format!("sequence_enumerate_{}", dtype_suffix(x.dtype())?), rows as u64, win as u64, args)?;
    Ok(out)
}

/// sequence_conv on the device: `[rows of x, out_width]`, x's rows split into sequences by
/// `level`; `padding` only when trainable (the op has checked every shape).
pub fn sequence_conv(
    x: &Tensor,
    level: LodLevel,
    filter: &Tensor,
    padding: Option<&Tensor>,
    s: &ConvShape,
) -> Result<Tensor> {
    let d = device_of(x, "sequence_conv")?;
    let offsets = level.offsets();
    let rows = *offsets.last().expect("a LoD level");
    let mut out = new_tensor(&d, x.dtype(), Dim::new(&[rows, s.out_width])?)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let num_seqs = count_u32(offsets.len() - 1, "x")?;
    // Rows of no columns contribute nothing, however long the context (as on the CPU).
    let context_length = if s.width == 0 { 0 } else { s.context_length };
    let table = level_on(&d, level)?;
    let args = Args::new()
        .ptr(x)
        .ptr(filter)
        .arg(padding.map_or(0, |p| p.as_ptr() as u64))
        .arg(out.as_mut_ptr() as u64)
        .buf(&table)
        .arg(num_seqs)
        .arg(rows as u64)
        .arg(s.width as u64)
        .arg(s.out_width as u64)
        .arg(context_length as u64)
        .arg(s.context_start)
        .arg(s.up_pad as u64);
    launch_tiles(
        &d,
        FILE,
        &format!("sequence_conv_{}", dtype_suffix(x.dtype())?),
        rows as u64,
        s.out_width as u64,
        args,
    )
    .map(|_| out)
}

/// The scatter-add of sequence_scatter into `out` (a device tensor, rows of `width` elements):
/// for every id `p` of sequence `i` (of `level`, ids' LoD), `out[i * width + ids[p]] +=
/// updates[p]`, duplicates in id order; `ids` (int32 or int64, `level`'s last offset of them) and
/// `updates` are on `out`'s device. `false`, with `out` untouched, when an id is outside `[0,
/// width)` (the caller names it from a host copy). The ids are keyed by target and sorted on the
/// device (group.rs), then one launch adds each target's updates; the count of bad ids comes back
/// to the host, so the call waits for the device once.
pub fn sequence_scatter_add(
    out: &mut Tensor,
    width: usize,
    level: LodLevel,
    ids: &Tensor,
    updates: &Tensor,
) -> Result<bool> {
    let d = device_of(out, "sequence_scatter")?;
    let offsets = level.offsets();
    let n = *offsets.last().expect("a LoD level") as u64;
    ensure!(n == ids.numel() as u64, Internal, "sequence_scatter: {n} ids listed, {} given", ids.numel());
    if n == 0 {
        return Ok(true);
    }
    let sequences = count_u32(offsets.len() - 1, "ids")?;
    let table = level_on(&d, level)?;
    let keys = d.allocation(n as usize * 8)?;
    let bad = BadCount::new(&d)?;
    let args = Args::new().ptr(ids).buf(&table).arg(sequences).arg(n).arg(width as u64).buf(&keys).arg(bad.address());
    launch_1d(&d, FILE, &format!("scatter_keys_{}", index_suffix(ids, "sequence_scatter")?), n, args)?;
    let sorted = sort_by_key(&d, &keys, n, sequences as u64 * width as u64)?;
    let args = Args::new()
        .arg(out.as_mut_ptr() as u64)
        .ptr(updates)
        .buf(&sorted.keys)
        .buf(&sorted.order)
        .arg(n)
        .arg(bad.address());
    launch_1d(&d, FILE, &format!("scatter_add_sorted_{}", dtype_suffix(out.dtype())?), n, args)?;
    Ok(bad.unless_counted(())?.is_some())
}
