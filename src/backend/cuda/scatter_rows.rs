//! Launchers of `scatter_rows` on the device, reusing the kernels of `rows.cu` and
//! `sequence_misc.cu`:
//! - OVERWRITE: the index stays on the device. One launch finds each row's last writer (atomic
//!   maxima over the update positions) and counts bad indices; a second gathers each output row
//!   from x or from its last update. No table, no plan on the host.
//! - ADD: the index is on the host (the op copies it there: it validates every value); out = a
//!   device copy of x; the update positions are counting-sorted by destination row (stably, as on
//!   the CPU), and the scatter-add kernel adds each row's updates in increasing position order,
//!   one thread per output element: bit for bit the CPU's sums.

use super::device::{copy_to_device, new_tensor, zeroed_tensor, BadCount};
use super::launch::{index_width, launch_1d, launch_unrolled, Args};
use super::seq_common::{device_of, word_for};
use super::sequence_misc::scatter_add_groups;
use crate::backend::cpu::scatter_rows::sort_by_row;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::tensor::Tensor;

/// `x` with row `index[i]` replaced by row `i` of `updates` (the last `i` wins), a new tensor on
/// `x`'s device; `index` (int32 or int64, one value per row of `updates`) is on that device too,
/// and the shapes agree (the op checked). `None` when an index is outside `[0, rows of x)` (the
/// caller reports which, from a host copy). Two launches and a scratch of 8 bytes per row of `x`;
/// the count of bad indices comes back to the host, so the call waits for the device once.
pub fn scatter_rows_overwrite(x: &Tensor, index: &Tensor, updates: &Tensor) -> Result<Option<Tensor>> {
    let d = device_of(x, "scatter_rows")?;
    let rows = x.rows()?;
    let suffix = match index.dtype() {
        DType::I32 => "i32",
        DType::I64 => "i64",
        other => return Err(err!(Internal, "scatter_rows: index dtype {other} reached the kernel")),
    };
    let winner = zeroed_tensor(&d, DType::I64, Dim::new(&[rows])?)?;
    let bad = BadCount::new(&d)?;
    let n = index.numel() as u64;
    let args = Args::new().ptr(index).arg(n).arg(rows as u64).ptr(&winner).ptr(bad.tensor());
    launch_1d(&d, "rows.cu", &format!("last_writers_{suffix}"), n, args)?;
    let mut out = new_tensor(&d, x.dtype(), *x.dims())?;
    if out.nbytes() > 0 {
        let row_bytes = x.row_bytes();
        let dst = out.as_mut_ptr() as u64;
        let word = word_for(row_bytes, [x.as_ptr() as u64, updates.as_ptr() as u64, dst]);
        let row_words = (row_bytes / word) as u64;
        let args = Args::new().arg(dst).ptr(x).ptr(updates).arg(row_words).ptr(&winner).arg(rows as u64);
        let items = rows as u64 * row_words;
        launch_unrolled(&d, "rows.cu", &format!("overwrite_rows_{word}{}", index_width(items)), items, args)?;
    }
    bad.unless_counted(out)
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
