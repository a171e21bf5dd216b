//! Launchers of `scatter_rows` on the device, reusing the kernels of `rows.cu`, `group.cu` and
//! `sequence_misc.cu`:
//! - OVERWRITE: the index stays on the device. One launch finds each row's last writer (atomic
//!   maxima over the update positions) and counts bad indices; a second gathers each output row
//!   from x or from its last update. No table, no plan on the host.
//! - ADD: the index stays on the device too. One launch checks it and keys each update by its
//!   row; group.rs sorts the update positions by row, stably (radix passes on the device); one
//!   launch then writes each output element, x's plus its row's updates in increasing position
//!   order: bit for bit the CPU's sums. No table, no plan on the host.

use super::device::{copy_to_device, new_tensor, zeroed_tensor};
use super::group::{key_starts, sort_by_key};
use super::kept_zero::BadCount;
use super::launch::{index_width, launch_1d, launch_unrolled, Args};
use super::seq_common::{device_of, dtype_suffix, index_suffix, word_for};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// `x` with row `index[i]` replaced by row `i` of `updates` (the last `i` wins), a new tensor on
/// `x`'s device; `index` (int32 or int64, one value per row of `updates`) is on that device too,
/// and the shapes agree (the op checked). `None` when an index is outside `[0, rows of x)` (the
/// caller reports which, from a host copy). Two launches and a scratch of 8 bytes per row of `x`;
/// the count of bad indices comes back to the host, so the call waits for the device once.
pub fn scatter_rows_overwrite(x: &Tensor, index: &Tensor, updates: &Tensor) -> Result<Option<Tensor>> {
    let d = device_of(x, "scatter_rows")?;
    let rows = x.rows()?;
    let suffix = index_suffix(index, "scatter_rows")?;
    let winner = zeroed_tensor(&d, DType::I64, Dim::new(&[rows])?)?;
    let bad = BadCount::new(&d)?;
    let n = index.numel() as u64;
    let args = Args::new().ptr(index).arg(n).arg(rows as u64).ptr(&winner).arg(bad.address());
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
/// increasing `i`), a new tensor on `x`'s device; a numeric dtype (the op checked); `index` (int32
/// or int64, one value per row of `updates`) is on that device too. `None` when an index is
/// outside `[0, rows of x)` (the caller reports which, from a host copy). The updates are sorted
/// by row on the device (group.rs), then one launch writes each output element: x's, plus its
/// row's updates in order. Scratch of about 42 bytes per update and 8 per row of `x`; the count of
/// bad indices comes back to the host, so the call waits for the device once.
pub fn scatter_rows_add(x: &Tensor, index: &Tensor, updates: &Tensor) -> Result<Option<Tensor>> {
    let d = device_of(x, "scatter_rows")?;
    let rows = x.rows()? as u64;
    let n = index.numel() as u64;
    if n == 0 {
        return copy_to_device(x, d.ordinal).map(Some);
    }
    let keys = d.allocation(n as usize * 8)?;
    let bad = BadCount::new(&d)?;
    let args = Args::new().ptr(index).arg(n).arg(rows).buf(&keys).arg(bad.address());
    launch_1d(&d, "rows.cu", &format!("row_keys_{}", index_suffix(index, "scatter_rows")?), n, args)?;
    let sorted = sort_by_key(&d, &keys, n, rows)?;
    let starts = key_starts(&d, &sorted.keys, n, rows)?;
    let mut out = new_tensor(&d, x.dtype(), *x.dims())?;
    let width = x.dims().row_width() as u64;
    if out.numel() > 0 {
        let args = Args::new()
            .arg(out.as_mut_ptr() as u64)
            .ptr(x)
            .ptr(updates)
            .buf(&starts)
            .buf(&sorted.order)
            .arg(rows)
            .arg(width);
        let items = rows * width;
        let kernel = format!("scatter_add_rows_{}{}", dtype_suffix(x.dtype())?, index_width(items));
        launch_1d(&d, "sequence_misc.cu", &kernel, items, args)?;
    }
    bad.unless_counted(out)
}
