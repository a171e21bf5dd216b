//! Launchers of `kernels/sequence_misc.cu`: sequence_reverse, sequence_mask,
//! sequence_enumerate, sequence_conv and the scatter-add of sequence_scatter. The ops validate;
//! these upload the host tables (groups) once per call, use the LoD levels' device copies, and
//! launch once.

use super::device::{new_tensor, Device};
use super::launch::{launch_1d, launch_tiles, upload, Args};
use super::seq_common::{count_u32, device_of, dtype_suffix, level_on, word_for};
use crate::backend::cpu::sequence::ConvShape;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::tensor::Tensor;
use std::sync::Arc;

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
/// for every id `p` of sequence `i` (`ids_offsets`), `out[i * width + ids[p]] += updates[p]`,
/// duplicates in id order. The ids are on the host and checked against `[0, width)`.
pub fn sequence_scatter_add(
    out: &mut Tensor,
    width: usize,
    ids_offsets: &[usize],
    ids: &[i64],
    updates: &Tensor,
) -> Result<()> {
    let d = device_of(out, "sequence_scatter")?;
    let m = *ids_offsets.last().expect("a LoD level");
    ensure!(m <= ids.len(), Internal, "sequence_scatter: {m} ids listed, {} given", ids.len());
    if width == 0 || m == 0 {
        return Ok(());
    }
    // The ids grouped by target element, id order kept within a group (a stable sort within each
    // sequence): one table of the targets, the group bounds, then the order of the ids.
    let mut order: Vec<i64> = (0..m as i64).collect();
    for w in ids_offsets.windows(2) {
        order[w[0]..w[1]].sort_by_key(|&p| ids[p as usize]);
    }
    let mut targets = Vec::new();
    let mut bounds = Vec::new();
    let mut seq = 0usize;
    for (q, &p) in order.iter().enumerate() {
        let p = p as usize;
        while ids_offsets[seq + 1] <= p {
            seq += 1;
        }
        let target = (seq * width) as i64 + ids[p];
        if targets.last() != Some(&target) {
            targets.push(target);
            bounds.push(q as i64);
        }
    }
    bounds.push(m as i64);
    scatter_add_groups(&d, out, updates, 1, targets, &bounds, &order)
}

/// Adds rows of `updates` to rows of `out` (both of `width` elements, on `d`): group g adds
/// update rows `order[q]`, `q` in `bounds[g]..bounds[g + 1]`, in that order, to row `targets[g]`
/// (targets distinct). One launch, one thread per element of the target rows; one table upload.
fn scatter_add_groups(
    d: &Arc<Device>,
    out: &mut Tensor,
    updates: &Tensor,
    width: usize,
    targets: Vec<i64>,
    bounds: &[i64],
    order: &[i64],
) -> Result<()> {
    let groups = targets.len() as u64;
    ensure!(bounds.len() as u64 == groups + 1, Internal, "scatter-add: {groups} groups, {} bounds", bounds.len());
    if groups == 0 || width == 0 {
        return Ok(());
    }
    let mut table = targets;
    table.extend_from_slice(bounds);
    table.extend_from_slice(order);
    let table = upload(d, &table)?;
    let t = table.as_ptr() as u64;
    let args = Args::new()
        .arg(out.as_mut_ptr() as u64)
        .ptr(updates)
        .arg(t)
        .arg(t + 8 * groups)
        .arg(t + 8 * (2 * groups + 1))
        .arg(groups)
        .arg(width as u64);
    let name = format!("sequence_scatter_{}", dtype_suffix(out.dtype())?);
    launch_1d(d, FILE, &name, groups * width as u64, args)
}
