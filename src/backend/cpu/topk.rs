//! Top-k along the last axis: one pass over each row with a sorted buffer of k entries (k is
//! small: a beam), never a sort of the row. Blocks of the row that cannot enter the buffer are
//! rejected with a branch-free comparison the compiler vectorizes, so the common case costs about
//! one read of the row.

use super::pool::for_each_segment_with_work;
use crate::dtype::Scalar;
use crate::error::Result;

/// Rows per parallel task: enough work to amortize the task's scratch buffer.
const ROWS_PER_TASK: usize = 64;
/// Elements checked at once before looking at any of them one by one.
const BLOCK: usize = 64;

/// Whether `a` ranks before `b` (equal values: the caller keeps scan order, so the smaller index
/// wins). NaN ranks above every number: first when `LARGEST`, last otherwise.
#[inline(always)]
#[allow(clippy::eq_op)]
fn beats<T: Scalar, const LARGEST: bool>(a: T, b: T) -> bool {
    let (a_nan, b_nan) = (a != a, b != b);
    if LARGEST {
        a > b || (a_nan && !b_nan)
    } else {
        a < b || (b_nan && !a_nan)
    }
}

/// A superset of `beats(v, worst)` without NaN branches (true for any NaN operand), cheap enough
/// to run over a whole block.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn may_beat<T: Scalar, const LARGEST: bool>(v: T, worst: T) -> bool {
    if LARGEST {
        !(v <= worst)
    } else {
        !(v >= worst)
    }
}

/// Inserts `(v, i)` into the sorted entries `0..n` of `vals`/`idx`, giving `n + 1` entries
/// (`n + 1 <= vals.len()`; with `n = len - 1` the old last entry is dropped). Equal values stay
/// behind the entries already there (they have smaller indices).
#[inline(always)]
fn insert<T: Scalar, const LARGEST: bool>(vals: &mut [T], idx: &mut [usize], n: usize, v: T, i: usize) {
    let mut pos = n;
    while pos > 0 && beats::<T, LARGEST>(v, vals[pos - 1]) {
        vals[pos] = vals[pos - 1];
        idx[pos] = idx[pos - 1];
        pos -= 1;
    }
    vals[pos] = v;
    idx[pos] = i;
}

/// The best `vals.len()` entries of `row` (which must have at least that many), best first, with
/// their column indices: descending (`LARGEST`) or ascending values, NaN above every number, equal
/// values by smaller index.
pub fn select_row<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    let k = vals.len();
    if k == 0 {
        return;
    }
    for (j, &v) in row[..k].iter().enumerate() {
        insert::<T, LARGEST>(vals, idx, j, v, j);
    }
    let mut worst = vals[k - 1];
    let mut visit = |start: usize, block: &[T], worst: &mut T| {
        if block.iter().fold(false, |any, &v| any | may_beat::<T, LARGEST>(v, *worst)) {
            for (o, &v) in block.iter().enumerate() {
                if beats::<T, LARGEST>(v, *worst) {
                    insert::<T, LARGEST>(vals, idx, k - 1, v, start + o);
                    *worst = vals[k - 1];
                }
            }
        }
    };
    let rest = &row[k..];
    let mut blocks = rest.chunks_exact(BLOCK);
    let mut start = k;
    for block in &mut blocks {
        visit(start, block, &mut worst);
        start += BLOCK;
    }
    visit(start, blocks.remainder(), &mut worst);
}

/// `select_row` with the direction chosen at run time.
pub fn select_row_dyn<T: Scalar>(row: &[T], largest: bool, vals: &mut [T], idx: &mut [usize]) {
    if largest {
        select_row::<T, true>(row, vals, idx)
    } else {
        select_row::<T, false>(row, vals, idx)
    }
}

/// Top-k of every row of `x` (rows of `width`, `1 <= k <= width`): writes the column indices
/// (`rows * k`, row-major) into `indices` and the values into `values`.
pub fn top_k<T: Scalar>(
    x: &[T],
    width: usize,
    k: usize,
    largest: bool,
    values: &mut [T],
    indices: &mut [i64],
) -> Result<()> {
    let rows = indices.len() / k.max(1);
    let bounds: Vec<usize> =
        (0..rows.div_ceil(ROWS_PER_TASK)).map(|t| t * ROWS_PER_TASK * k).chain(std::iter::once(rows * k)).collect();
    for_each_segment_with_work(indices, &bounds, std::mem::size_of_val(x), |t, seg| {
        let mut vals = vec![T::ZERO; k];
        let mut idx = vec![0usize; k];
        for (i, out) in seg.chunks_exact_mut(k).enumerate() {
            let r = t * ROWS_PER_TASK + i;
            select_row_dyn(&x[r * width..(r + 1) * width], largest, &mut vals, &mut idx);
            for (o, &j) in out.iter_mut().zip(&idx) {
                *o = j as i64;
            }
        }
    })?;
    for (r, (vals, idx)) in values.chunks_exact_mut(k).zip(indices.chunks_exact(k)).enumerate() {
        for (v, &j) in vals.iter_mut().zip(idx) {
            *v = x[r * width + j as usize];
        }
    }
    Ok(())
}
