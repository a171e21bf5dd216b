//! The kernels of `sequence_pool`: per sequence of rows, per column, a sum (scaled), a selected row,
//! or the row of the extreme value. Parallel over output rows (one per sequence). Columns are
//! taken in blocks of `BLOCK`, so the accumulators live on the stack and every input row is read
//! contiguously; nothing is allocated per sequence.

use super::pool::for_each_segment;
use crate::dtype::Scalar;
use crate::error::{err, Result};

const BLOCK: usize = 64;

/// Element offsets of the output rows: `i * width`.
fn row_bounds(sequences: usize, width: usize) -> Result<Vec<usize>> {
    let mut bounds = Vec::new();
    bounds.try_reserve_exact(sequences + 1).map_err(|_| err!(OutOfMemory, "sequence_pool: {sequences} row bounds"))?;
    bounds.extend((0..=sequences).map(|i| i * width));
    Ok(bounds)
}

/// `out[i][c] = (sum of x[r][c] over rows r of sequence i) / divisor(len)`, summed in f64 in row
/// order and rounded once; an empty sequence gives `pad`. `offsets` are row offsets into `x`.
pub fn pool_sum<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    divisor: impl Fn(usize) -> f64 + Sync + Send,
    pad: T,
    out: &mut [T],
) -> Result<()> {
    let bounds = row_bounds(offsets.len() - 1, width)?;
    for_each_segment(out, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(pad);
            return;
        }
        let d = divisor(end - start);
        for c0 in (0..width).step_by(BLOCK) {
            let c1 = (c0 + BLOCK).min(width);
            let mut acc = [0f64; BLOCK];
            for r in start..end {
                for (a, v) in acc.iter_mut().zip(&x[r * width + c0..r * width + c1]) {
                    *a += v.to_f64();
                }
            }
            for (o, a) in seg[c0..c1].iter_mut().zip(&acc) {
                *o = T::from_f64(a / d);
            }
        }
    })
}

/// `out[i]` = row `pick(start, end)` of `x` for sequence `i` (rows `start..end`, non-empty), or
/// `pad` in every column for an empty sequence.
pub fn pool_select<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    pick: impl Fn(usize, usize) -> usize + Sync + Send,
    pad: T,
    out: &mut [T],
) -> Result<()> {
    let bounds = row_bounds(offsets.len() - 1, width)?;
    for_each_segment(out, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(pad);
        } else {
            let r = pick(start, end);
            seg.copy_from_slice(&x[r * width..(r + 1) * width]);
        }
    })
}

/// `index[i][c]` = the row (absolute in `x`) of the first value of column `c` in sequence `i` that
/// no later value `beats`, i.e. a value replaces the current best only if `beats(value, best)`
/// (so with a strict comparison the first extreme wins and NaN never replaces); -1 for an empty
/// sequence. Rows must fit in i32 (the caller checks).
pub fn pool_arg_extreme<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    beats: impl Fn(T, T) -> bool + Sync + Send,
    index: &mut [i32],
) -> Result<()> {
    let bounds = row_bounds(offsets.len() - 1, width)?;
    for_each_segment(index, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(-1);
            return;
        }
        for c0 in (0..width).step_by(BLOCK) {
            let c1 = (c0 + BLOCK).min(width);
            let mut best = [T::ZERO; BLOCK];
            best[..c1 - c0].copy_from_slice(&x[start * width + c0..start * width + c1]);
            seg[c0..c1].fill(start as i32);
            for r in start + 1..end {
                let row = &x[r * width + c0..r * width + c1];
                // Selects instead of branches: the compiler turns them into blends, and data
                // dependent branches would mispredict on every other element.
                for ((b, at), &v) in best.iter_mut().zip(seg[c0..c1].iter_mut()).zip(row) {
                    let take = beats(v, *b);
                    *b = if take { v } else { *b };
                    *at = if take { r as i32 } else { *at };
                }
            }
        }
    })
}

/// `out[i][c] = x[index[i][c]][c]`, or `pad` where the index is -1.
pub fn gather_by_index<T: Scalar>(x: &[T], width: usize, index: &[i32], pad: T, out: &mut [T]) -> Result<()> {
    let rows = out.len().checked_div(width).unwrap_or(0);
    let bounds = row_bounds(rows, width)?;
    for_each_segment(out, &bounds, |i, seg| {
        for (c, (o, &r)) in seg.iter_mut().zip(&index[i * width..(i + 1) * width]).enumerate() {
            *o = if r < 0 { pad } else { x[r as usize * width + c] };
        }
    })
}
