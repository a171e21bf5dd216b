//! The kernels of `scatter_rows`: whole rows of `updates` written (overwrite) or added (add) into
//! the rows of a copy of `x` that `index` names.
//!
//! Add: the update positions are counting-sorted by destination row, stably, so each row's
//! updates stay in increasing position order. Tasks then own whole destination rows: a task copies
//! its row of `x` and adds the row's updates in position order, while the row is in L1. The sums
//! are those of the plain sequential loop, bit for bit, whatever the thread count, and no two tasks
//! write one row (no atomics). Reading the updates in destination order jumps around memory, so
//! the rows a few positions ahead are prefetched.
//!
//! Overwrite: the last update of each row wins, so each output row is one row of `x` or one row of
//! `updates`: a row gather (`gather_blocks`), which moves bytes and so serves every dtype.

use super::pool::for_each_segment_with_work;
use super::prefetch_lines;
use super::rows::gather_blocks;
use crate::dtype::Scalar;
use crate::error::Result;
use crate::memory::lists;
use std::ops::Range;

/// The update positions grouped by destination row: `order[starts[r]..starts[r + 1]]` are the
/// positions `i` with `index[i] == r`, in increasing `i`.
pub struct ByRow {
    starts: Vec<usize>,
    order: Vec<usize>,
}

impl ByRow {
    /// Row r's positions are `order()[starts()[r]..starts()[r + 1]]`.
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }

    pub fn order(&self) -> &[usize] {
        &self.order
    }
}

/// Counting sort of the positions of `index` by value (stable). Every value must be in
/// `[0, rows)` (the caller checked).
pub fn sort_by_row(index: &[i64], rows: usize) -> Result<ByRow> {
    let mut starts = lists::with_capacity(rows + 1, "scatter_rows: row starts")?;
    starts.resize(rows + 1, 0usize);
    for &r in index {
        starts[r as usize + 1] += 1;
    }
    for r in 0..rows {
        starts[r + 1] += starts[r];
    }
    // `next[r]`: where the next position of row r goes; `starts` itself is kept for the tasks.
    let mut next = starts.clone();
    let mut order = lists::with_capacity(index.len(), "scatter_rows: sorted positions")?;
    order.resize(index.len(), 0usize);
    for (i, &r) in index.iter().enumerate() {
        let slot = &mut next[r as usize];
        order[*slot] = i;
        *slot += 1;
    }
    Ok(ByRow { starts, order })
}

/// Tasks are runs of consecutive destination rows with at least this many bytes of work (the row
/// of `x`, its updates, the output row): one task per row of a few hundred bytes costs more in
/// scheduling than the adds.
const TASK_BYTES: usize = 64 * 1024;

/// Update rows are prefetched this many bytes ahead of the one being added (counting at most
/// [`PREFETCH_ROW_BYTES`] per row), enough to keep the memory system busy across the jumps from
/// row to row: the scatter_add bench case took 47 ms with it, 63 ms without; 4 and 32 KiB ran
/// the same as 8 (benches/REPORT.md).
const PREFETCH_AHEAD_BYTES: usize = 8 * 1024;

/// Only the first bytes of a wide update row are prefetched; the hardware prefetcher follows a
/// row once it is being read in order.
const PREFETCH_ROW_BYTES: usize = 2048;

/// `out = x`, then `out[r] += updates[i]` for every position `i` of `by_row` (rows of `width`
/// elements; `out` and `x` have the same length, `updates` one row per sorted position). Each
/// row's updates are added in increasing `i`.
pub fn scatter_add_rows_sorted<T: Scalar>(
    x: &[T],
    width: usize,
    by_row: &ByRow,
    updates: &[T],
    out: &mut [T],
) -> Result<()> {
    if width == 0 || out.is_empty() {
        return Ok(()); // nothing to write
    }
    let rows = out.len() / width;
    let elem = std::mem::size_of::<T>();
    let row_bytes = width * elem;
    // Task t owns rows first_row[t]..first_row[t + 1], elements bounds[t]..bounds[t + 1] of out.
    let (mut first_row, mut bounds) = (vec![0usize], vec![0usize]);
    let mut work = 0usize;
    for r in 0..rows {
        work += (2 + by_row.starts[r + 1] - by_row.starts[r]) * row_bytes;
        if work >= TASK_BYTES || r + 1 == rows {
            first_row.push(r + 1);
            bounds.push((r + 1) * width);
            work = 0;
        }
    }
    let ahead = (PREFETCH_AHEAD_BYTES / row_bytes.min(PREFETCH_ROW_BYTES)).max(1);
    let order = &by_row.order[..];
    let prefetch = |k: usize| {
        if let Some(&i) = order.get(k) {
            prefetch_lines(updates[i * width..].as_ptr().cast::<u8>(), row_bytes.min(PREFETCH_ROW_BYTES));
        }
    };
    let work_bytes = std::mem::size_of_val(x) + std::mem::size_of_val(updates) + std::mem::size_of_val(out);
    for_each_segment_with_work(out, &bounds, work_bytes, |t, seg| {
        let rows = first_row[t]..first_row[t + 1];
        let first_update = by_row.starts[rows.start];
        for k in first_update..first_update + ahead {
            prefetch(k);
        }
        for (o, r) in seg.chunks_exact_mut(width).zip(rows) {
            o.copy_from_slice(&x[r * width..(r + 1) * width]);
            for k in by_row.starts[r]..by_row.starts[r + 1] {
                prefetch(k + ahead);
                let u = &updates[order[k] * width..(order[k] + 1) * width];
                for (a, &b) in o.iter_mut().zip(u) {
                    *a = a.add(b);
                }
            }
        }
    })
}

/// `out = x`, then `out[index[i]] = updates[i]` for `i` in increasing order (so the last
/// update of a row wins), as bytes: rows of `row_bytes`, any dtype. Every index is in
/// `[0, rows of x)` (the caller checked).
pub fn scatter_overwrite_rows(x: &[u8], updates: &[u8], row_bytes: usize, index: &[i64], out: &mut [u8]) -> Result<()> {
    if row_bytes == 0 {
        return Ok(()); // nothing to write
    }
    let blocks = overwrite_blocks(index, x.len() / row_bytes)?;
    gather_blocks(&[x, updates], row_bytes, &blocks, out)
}

/// The rows of an overwrite's output, as runs of source rows: `(0, run)` rows of x, `(1, run)`
/// rows of updates, in output order; row r comes from the last update naming it, else from x.
/// Every index is in `[0, rows)` (the caller checked).
pub fn overwrite_blocks(index: &[i64], rows: usize) -> Result<Vec<(usize, Range<usize>)>> {
    const NONE: usize = usize::MAX;
    let mut last = lists::with_capacity(rows, "scatter_rows: last update per row")?;
    last.resize(rows, NONE);
    for (i, &r) in index.iter().enumerate() {
        last[r as usize] = i;
    }
    // Runs of consecutive source rows become one block.
    let mut blocks: Vec<(usize, Range<usize>)> = Vec::new();
    for (r, &i) in last.iter().enumerate() {
        let (src, row) = if i == NONE { (0, r) } else { (1, i) };
        match blocks.last_mut() {
            Some((s, run)) if *s == src && run.end == row => run.end += 1,
            _ => blocks.push((src, row..row + 1)),
        }
    }
    Ok(blocks)
}
