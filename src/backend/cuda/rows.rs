//! Launchers of `kernels/rows.cu`: the row-range gather behind every data-movement op.

use super::device::{device, new_tensor};
use super::launch::{launch_1d, upload, Args};
use crate::dim::Dim;
use crate::error::{ensure, err, Result};
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;

/// A new device tensor of `dims` (dtype of `src`) whose rows are `ranges` of `src` viewed as rows
/// of `row_bytes` bytes; `src` is on a CUDA device and the ranges fit in it (callers validate).
/// One launch for all ranges; the ranges are uploaded once.
pub fn gather_row_ranges(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return Err(err!(Internal, "gather_row_ranges: the CUDA kernel got a tensor on {}", src.place()));
    };
    let d = device(ordinal)?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    let total_rows: usize = ranges.iter().map(|r| r.len()).sum();
    ensure!(
        total_rows * row_bytes == out.nbytes(),
        Internal,
        "gather_row_ranges: {total_rows} rows of {row_bytes} bytes do not fill {} bytes",
        out.nbytes()
    );
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let num_ranges = u32::try_from(ranges.len()).map_err(|_| {
        err!(Unsupported, "gather_row_ranges: {} ranges; the CUDA kernel takes up to 2^32 - 1", ranges.len())
    })?;
    // One table: the source start of each range, then the output offsets (ranges + 1 of them).
    let mut table = Vec::with_capacity(2 * ranges.len() + 1);
    table.extend(ranges.iter().map(|r| r.start as i64));
    table.push(0);
    let mut at = 0i64;
    for r in ranges {
        at += r.len() as i64;
        table.push(at);
    }
    let table = upload(&d, &table)?;
    let (src_ptr, dst_ptr) = (src.as_ptr() as u64, out.as_mut_ptr() as u64);
    let word = super::seq_common::word_for(row_bytes, [src_ptr, dst_ptr]);
    let row_words = (row_bytes / word) as u64;
    let starts = table.as_ptr() as u64;
    let args = Args::new()
        .arg(src_ptr)
        .arg(dst_ptr)
        .arg(row_words)
        .arg(starts)
        .arg(starts + 8 * ranges.len() as u64)
        .arg(num_ranges)
        .arg(total_rows as u64);
    launch_1d(&d, "rows.cu", &format!("gather_row_ranges_{word}"), total_rows as u64 * row_words, args)?;
    Ok(out)
}
