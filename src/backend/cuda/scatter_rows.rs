//! Launchers of `scatter_rows` on the device. The index is on the host (the op copies it there:
//! it validates every value anyway); the host plans, the device moves and adds, reusing the
//! kernels of `rows.cu` and `sequence_misc.cu`:
//! - OVERWRITE: each output row is one row of x or the last update naming it (planned on the host
//!   as on the CPU), so the output is one multi-source row gather.
//! - ADD: out = a device copy of x; the update positions are counting-sorted by destination row
//!   (stably, as on the CPU), and the scatter-add kernel adds each row's updates in increasing
//!   position order, one thread per output element: bit for bit the CPU's sums.

use super::device::{copy_to_device, new_tensor};
use super::rows::gather_ranges_from;
use super::seq_common::device_of;
use super::sequence_misc::scatter_add_groups;
use crate::backend::cpu::scatter_rows::{overwrite_blocks, sort_by_row};
use crate::error::Result;
use crate::tensor::Tensor;

/// `x` with row `index[i]` replaced by row `i` of `updates` (the last `i` wins), a new tensor on
/// `x`'s device. Index values are in `[0, rows of x)` and the shapes agree (the op checked).
pub fn scatter_rows_overwrite(x: &Tensor, index: &[i64], updates: &Tensor) -> Result<Tensor> {
    let d = device_of(x, "scatter_rows")?;
    let mut out = new_tensor(&d, x.dtype(), *x.dims())?;
    let row_bytes = x.row_bytes();
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let blocks = overwrite_blocks(index, x.rows()?)?;
    let bases = [x.as_ptr() as u64, updates.as_ptr() as u64];
    let table = blocks.iter().map(|(s, run)| (bases[*s] + (run.start * row_bytes) as u64, run.len()));
    gather_ranges_from(&d, &mut out, row_bytes, &bases, table, "scatter_rows")?;
    Ok(out)
}

/// `x` with row `i` of `updates` added to row `index[i]` for every `i` (each row's updates in
/// increasing `i`), a new tensor on `x`'s device; a numeric dtype (the op checked), rows of
/// `x.dims().row_width()` elements.
pub fn scatter_rows_add(x: &Tensor, index: &[i64], updates: &Tensor) -> Result<Tensor> {
    let d = device_of(x, "scatter_rows")?;
    let mut out = copy_to_device(x, d.ordinal)?;
    let width = x.dims().row_width();
    if out.numel() == 0 || index.is_empty() {
        return Ok(out);
    }
    let by_row = sort_by_row(index, x.rows()?)?;
    let starts = by_row.starts();
    let (mut targets, mut bounds) = (Vec::new(), Vec::new());
    for r in 0..starts.len() - 1 {
        if starts[r + 1] > starts[r] {
            targets.push(r as i64);
            bounds.push(starts[r] as i64);
        }
    }
    bounds.push(index.len() as i64);
    let order: Vec<i64> = by_row.order().iter().map(|&i| i as i64).collect();
    scatter_add_groups(&d, &mut out, updates, width, targets, &bounds, &order)?;
    Ok(out)
}
