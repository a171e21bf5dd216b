//! Launchers of `kernels/rows.cu`: the row gather behind every data-movement op.

use super::device::{device, new_tensor, Device};
use super::launch::{launch_tiles, upload, Args};
use super::seq_common::{count_u32, word_for};
use crate::dim::Dim;
use crate::error::{ensure, err, Result};
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

/// A new device tensor of `dims` (dtype of `src`) whose rows are `ranges` of `src` viewed as rows
/// of `row_bytes` bytes; `src` is on a CUDA device and the ranges fit in it (callers validate).
/// One launch for all ranges; the ranges are uploaded once.
pub fn gather_row_ranges(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return Err(err!(Internal, "gather_row_ranges: the CUDA kernel got a tensor on {}", src.place()));
    };
    let d = device(ordinal)?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    let base = src.as_ptr() as u64;
    let addrs = ranges.iter().map(|r| base + (r.start * row_bytes) as u64).collect();
    let lens: Vec<usize> = ranges.iter().map(Range::len).collect();
    gather_ranges_from(&d, &mut out, row_bytes, &[base], addrs, &lens, "gather_row_ranges")?;
    Ok(out)
}

/// Fills `out` (`rows` rows of `row_bytes` bytes, the sum of `lens`) with ranges of rows from
/// anywhere on its device: range k is `lens[k]` rows starting at device address `addrs[k]`, in
/// output order. `bases` are the source tensors' addresses (the word size must divide them: every
/// address is a base plus whole rows). One launch; one table upload.
pub(crate) fn gather_ranges_from(
    d: &Arc<Device>,
    out: &mut Tensor,
    row_bytes: usize,
    bases: &[u64],
    addrs: Vec<u64>,
    lens: &[usize],
    what: &str,
) -> Result<()> {
    let rows: usize = lens.iter().sum();
    ensure!(
        rows * row_bytes == out.nbytes(),
        Internal,
        "{what}: {rows} rows of {row_bytes} bytes do not fill {} bytes",
        out.nbytes()
    );
    if out.nbytes() == 0 {
        return Ok(());
    }
    let num_ranges = count_u32(lens.len(), what)?;
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(row_bytes, bases.iter().copied().chain([dst]));
    // One table: the source address of each range, then the ranges' output row offsets (one
    // more than the ranges).
    let mut table = addrs;
    table.reserve(lens.len() + 1);
    let mut at = 0u64;
    table.push(0);
    for &n in lens {
        at += n as u64;
        table.push(at);
    }
    let table = upload(d, &table)?;
    let table_ptr = table.as_ptr() as u64;
    let row_words = (row_bytes / word) as u64;
    let args = Args::new()
        .arg(dst)
        .arg(row_words)
        .arg(table_ptr)
        .arg(table_ptr + 8 * num_ranges as u64)
        .arg(num_ranges)
        .arg(rows as u64);
    launch_tiles(d, "rows.cu", &format!("gather_ranges_{word}"), rows as u64, row_words, args)
}
